// Search as typed on the board's pages (rexrank.leaderboard.pages; loaded by the views with a search box; board.js
// starts it with what it needs of the page: `page`).
// A dataset table ranked by the board's metric (its count line has data-local) is filtered here, without a request:
// each row carries its search key and the search box the data of the search rule (data-fold), both computed on the
// server by the rule's one owner (board.search_terms, records.search_key); `terms` below reads a search the way
// search_terms does, with no folding of its own, and a test holds the two to the same rows on many hostile and
// look-alike searches. The server answers what that data cannot: a search with a character outside it or too long,
// one that leaves no row (its message names what to clear), and a table ranked by another metric (there a rank is a
// position among the rows shown). One request at a time: typed while one is out, the newest text goes when it is
// answered. History: typing replaces the address; a search that settled (a pause, leaving the box) keeps its own
// entry, so Back and Forward return to it.
window.rexrankSearch = (page) => {
  const {live, search} = page;
  const SETTLE_MS = 800;  // a pause this long ends a search: the next change is a new history entry
  const fold = JSON.parse(search.dataset.fold);
  let local = false;  // this view's rows may be filtered here (the server said so: data-local)
  let base = null;    // the view's rows without a search: what a search here filters

  function capture() {
    const count = live.querySelector("p.count[data-local]");
    local = local || count !== null;
    if (!count || count.dataset.local !== "complete") return null;
    const tbody = live.querySelector("tbody");
    const rows = [...tbody.rows], keys = rows.map(row => row.dataset.key);
    return {nodes: [...live.childNodes], tbody, rows, keys, count, generation: page.generation(),
            every: count.dataset.every !== undefined ? count.dataset.every : keys.join(fold.separator)};
  }

  // board.search_terms on fold's data: null where the server must answer.
  function terms(text, every) {
    if (text.length > fold.max || /[^\x00-\x7f]/.test(text)) return null;
    const out = [];
    let words = [], word = "";
    const endWord = () => { if (word) words.push(word); word = ""; };
    const endAlternative = () => {
      endWord();
      for (let at = 0; at < words.length;) {
        let term = words[at++];
        while (at < words.length && every.includes(term + words[at])) term += words[at++];
        out.push(term);
      }
      words = [];
    };
    for (const c of text.slice(0, fold.chars)) {
      if (fold.alternatives.includes(c)) endAlternative();
      else if (fold.spaces.includes(c)) endWord();
      else word += fold.keys[c.charCodeAt(0)];
    }
    endAlternative();
    return out;
  }

  function showHere(text) {
    const found = terms(text, base.every);
    if (found === null) return false;
    const shown = base.rows.filter((row, k) => !found.length || found.some(term => base.keys[k].includes(term)));
    if (!shown.length) return false;  // the server's message names what to clear
    const ticked = page.tickedValues();
    if (!live.contains(base.tbody)) live.replaceChildren(...base.nodes);
    base.tbody.replaceChildren(...shown);
    const count = base.count.dataset;
    base.count.textContent = shown.length === Number(count.total) ? count.all : count.some.replace("{n}", shown.length);
    page.keepTicked(ticked);
    return true;
  }

  // The page's query with the search set as the pages write it (links.query: tab and track, then the search,
  // the rest as they are; urlencode's escaping, which differs from the browser's in "*" and "~").
  function queryWith(text) {
    const now = new URLSearchParams(location.search), out = new URLSearchParams();
    const head = ([key]) => key === "tab" || key === "track";
    for (const [key, value] of now) if (head([key])) out.append(key, value);
    if (text) out.append(search.name, text);
    const dropped = [search.name, search.dataset.page];  // a new search shows its first page of rows
    for (const [key, value] of now) if (!head([key]) && !dropped.includes(key)) out.append(key, value);
    return out.toString().replace(/\*/g, "%2A").replace(/%7E/g, "~");
  }

  async function find(text) {
    if (local) {
      if (!base || base.generation !== page.generation()) await page.reload(queryWith(""));
      if (base && showHere(text)) { page.drop(); return; }  // an answer still on the way is older than these rows
    }
    await page.reload(queryWith(text));
  }

  let out = false, waiting = false, settled = true, timer = 0;
  const ask = () => {
    if (out) { waiting = true; return; }
    out = true;
    find(search.value).catch(() => {}).finally(() => {
      out = false;
      if (waiting) { waiting = false; ask(); }
    });
  };
  const settle = () => { clearTimeout(timer); settled = true; };
  search.addEventListener("input", () => {
    const query = queryWith(search.value), url = query ? "?" + query : "./";
    if (settled) history.pushState(null, "", url); else history.replaceState(null, "", url);
    settled = false;
    clearTimeout(timer);
    timer = setTimeout(settle, SETTLE_MS);
    ask();
  });
  search.addEventListener("blur", settle);
  base = capture();
  // Typed before this script was there (it comes after the rows): that search is shown now.
  if (search.value !== search.defaultValue) search.dispatchEvent(new Event("input"));
  return {
    searched() {  // Back or Forward to another search of this view
      settle();
      search.value = new URLSearchParams(location.search).get(search.name) || "";
      ask();
    },
    replaced() {  // the live part was replaced with the server's (a search it answered, a changed board)
      base = capture() || (base && base.generation === page.generation() ? base : null);
    },
    rowBoxes: () => base ? base.rows.map(row => row.querySelector("input.pick")) : [],
    refresh() {  // the board changed: its rows are asked for again
      base = null;
      return find(search.value);
    },
  };
};

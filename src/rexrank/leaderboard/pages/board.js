// The board's pages (rexrank.leaderboard.pages): enhancements; every page works without them.
// 1. Search as typed. A dataset table ranked by the board's metric (its count line has data-local) is filtered here,
//    without a request: each row carries its search key and the search box the data of the search rule
//    (data-fold), both computed on the server by the rule's one owner (board.search_terms, records.search_key);
//    `terms` below reads a search the way search_terms does, with no folding of its own, and a test holds the two
//    to the same rows on many hostile and look-alike searches. The server answers what that data cannot: a search
//    with a character outside it or too long, one that leaves no row (its message names what to clear), and a
//    table ranked by another metric (there a rank is a position among the rows shown). One request at a time:
//    typed while one is out, the newest text goes when it is answered.
// 2. History: typing replaces the address; a search that settled (a pause, leaving the box) keeps its own entry,
//    so Back and Forward return to it.
// 3. Freshness: every data-poll-s seconds the page asks for the store's generation (an ETag makes an unchanged
//    answer a 304) and, when it changed, fetches its live part, its controls (the filter choices, the models to
//    pick) and "Last updated" again, not the whole page.
// 4. Models ticked for Compare (the rows' boxes of the #compare-pick form) stay ticked when the rows change; one the
//    search hides stays in the form as a ticked box of its own, which the visitor may untick.
// 5. Views open in the page: a click on a link to another view (the same path, another query) fetches that page and
//    puts its body in place of this one, with a history entry (Back and Forward fetch the view they return to);
//    what fails, or answers from elsewhere (a redirect), is the browser's own navigation.
(() => {
  let page = null;  // the page shown: start()'s answer

  function start() {
    const main = document.getElementById("board");
    const live = document.getElementById("board-live");
    if (!main || !live) return null;
    const SETTLE_MS = 800;  // a pause this long ends a search: the next change is a new history entry
    let generation = main.dataset.generation;
    let asked = 0;  // the newest request: an older answer arriving later is dropped
    const search = document.getElementById("board-search");
    const fold = search && search.dataset.fold ? JSON.parse(search.dataset.fold) : null;
    let local = false;  // this view's rows may be filtered here (the server said so: data-local)
    let base = null;    // the view's rows without a search: what a search here filters

    function capture() {
      const count = live.querySelector("p.count[data-local]");
      local = local || count !== null;
      if (!count || count.dataset.local !== "complete") return null;
      const tbody = live.querySelector("tbody");
      const rows = [...tbody.rows], keys = rows.map(row => row.dataset.key);
      return {nodes: [...live.childNodes], tbody, rows, keys, count, generation,
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
      const ticked = tickedValues();
      if (!live.contains(base.tbody)) live.replaceChildren(...base.nodes);
      base.tbody.replaceChildren(...shown);
      const count = base.count.dataset;
      base.count.textContent = shown.length === Number(count.total) ? count.all : count.some.replace("{n}", shown.length);
      keepTicked(ticked);
      return true;
    }

    async function reload(query) {
      const mine = ++asked;
      const response = await fetch("live" + (query ? "?" + query : ""), {headers: {accept: "text/html"}});
      if (!response.ok || mine !== asked) return false;
      const html = await response.text();
      if (mine !== asked) return false;
      const ticked = tickedValues();
      live.innerHTML = html;  // the server's HTML: every stored text escaped there
      const now = response.headers.get("X-Board-Generation");
      if (now) { generation = now; main.dataset.generation = now; }
      base = capture() || (base && base.generation === generation ? base : null);
      keepTicked(ticked);
      return true;
    }

    function tickedValues() {
      return [...document.querySelectorAll("input[form=compare-pick]:checked, #compare-pick input:checked")]
        .map(box => box.value);
    }

    function keepTicked(ticked) {
      const form = document.getElementById("compare-pick");
      if (!form) return;
      const wanted = new Set(ticked);
      for (const label of form.querySelectorAll("label.kept")) label.remove();
      const boxes = [...document.querySelectorAll("input[form=compare-pick]")];
      for (const box of base ? [...boxes, ...base.rows.map(row => row.querySelector("input.pick"))] : boxes) {
        if (box) box.checked = wanted.has(box.value);
      }
      for (const value of wanted) {
        if (boxes.some(box => box.value === value)) continue;
        const label = Object.assign(document.createElement("label"), {className: "kept"});
        const box = Object.assign(document.createElement("input"),
                                  {type: "checkbox", name: "compare", value, checked: true});
        label.append(" ", box, " ", value);  // text nodes: a stored name is never parsed as HTML here
        form.append(label);
      }
    }

    // The page's query with the search set as the pages write it (links.query: tab and track, then the search,
    // the rest as they are; urlencode's escaping, which differs from the browser's in "*" and "~").
    function queryWith(text) {
      const now = new URLSearchParams(location.search), out = new URLSearchParams();
      const head = ([key]) => key === "tab" || key === "track";
      for (const [key, value] of now) if (head([key])) out.append(key, value);
      if (text) out.append(search.name, text);
      for (const [key, value] of now) if (!head([key]) && key !== search.name) out.append(key, value);
      return out.toString().replace(/\*/g, "%2A").replace(/%7E/g, "~");
    }

    async function find(text) {
      if (local && fold) {
        if (!base || base.generation !== generation) await reload(queryWith(""));
        if (base && showHere(text)) { ++asked; return; }  // an answer still on the way is older than these rows
      }
      await reload(queryWith(text));
    }

    let searched = () => {};
    if (search) {
      base = fold ? capture() : null;
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
      searched = () => {  // Back or Forward to another search of this view
        settle();
        search.value = new URLSearchParams(location.search).get(search.name) || "";
        ask();
      };
    }

    // Carry what the visitor set and has not applied (ticks, a list's choice, an open group) to the fresh controls.
    function carry(from, to) {
      if (from.tagName === "DETAILS") to.open = from.open;
      const boxes = [...to.querySelectorAll("input[type=checkbox], input[type=radio]")];
      for (const box of from.querySelectorAll("input[type=checkbox], input[type=radio]")) {
        const same = boxes.find(other => other.name === box.name && other.value === box.value);
        if (same) same.checked = box.checked;
      }
      const lists = from.tagName === "SELECT" ? [[from, to]]
        : [...from.querySelectorAll("select")].map((list, k) => [list, to.querySelectorAll("select")[k]]);
      for (const [mine, theirs] of lists) {
        if (theirs && [...theirs.options].some(option => option.value === mine.value)) theirs.value = mine.value;
      }
    }

    async function refreshControls() {
      const response = await fetch("controls" + location.search, {cache: "no-cache"});
      if (!response.ok) return;
      const fresh = await response.json();
      const updated = document.getElementById("board-updated");
      if (updated) updated.textContent = fresh.updated;
      const holder = document.getElementById("board-controls");
      const next = document.createElement("template");
      next.innerHTML = fresh.controls;  // the server's HTML
      // What derives from the board: the filter groups, the lists of models. The rest (the search box the visitor
      // may be typing in) stays as it is.
      for (const selector of ["details", "select:not(details select)"]) {
        const mine = [...holder.querySelectorAll(selector)], theirs = [...next.content.querySelectorAll(selector)];
        if (mine.length !== theirs.length) continue;
        mine.forEach((part, k) => { carry(part, theirs[k]); part.replaceWith(theirs[k]); });
      }
    }

    const every = 1000 * Number(main.dataset.pollS || 10);
    const poll = setInterval(async () => {
      if (document.hidden) return;
      try {
        const response = await fetch("version", {cache: "no-cache"});
        if (!response.ok) return;
        const now = (await response.json()).generation;
        if (now === generation) return;
        base = null;  // the live part's answer names the new generation
        await Promise.all([search ? find(search.value) : reload(location.search.slice(1)), refreshControls()]);
      } catch (e) { /* offline for a moment: ask again at the next tick */ }
    }, every);
    return {view: viewOf(location.search), searched, stop: () => clearInterval(poll)};
  }

  // A view's address without its search: two addresses of one view differ in the search alone.
  function viewOf(query) {
    const params = new URLSearchParams(query);
    params.delete("q");
    return params.toString();
  }

  async function open(url, push) {
    try {
      const response = await fetch(url, {headers: {accept: "text/html"}});
      if (!response.ok || response.redirected) throw new Error("not a view of these pages");
      const next = new DOMParser().parseFromString(await response.text(), "text/html");  // the server's HTML
      if (!next.getElementById("board")) throw new Error("not a view of these pages");
      if (push) history.pushState(null, "", url);
      if (page) page.stop();
      document.title = next.title;
      document.body.replaceWith(document.adoptNode(next.body));
      if (push) window.scrollTo(0, 0);
      page = start();
    } catch (e) {
      location.assign(url);
    }
  }

  document.addEventListener("click", (event) => {
    const link = event.target.closest("a[href]");
    if (!link || event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey
            || event.altKey || link.target || link.hasAttribute("download")) return;
    const url = new URL(link.href, location.href);
    if (url.origin !== location.origin || url.pathname !== location.pathname || url.hash) return;
    event.preventDefault();
    if (url.href !== location.href) open(url.href, true);
  });

  window.addEventListener("popstate", () => {
    if (page && viewOf(location.search) === page.view) page.searched();
    else open(location.href, false);
  });

  page = start();
})();

// The board's pages (rexrank.leaderboard.pages): two small enhancements; every page works without them.
// 1. Search as typed: the search box's text goes to the server (the one owner of the search rule) as the page's
//    own query; the live part of the page is replaced with the server's rows and the address follows. One request
//    at a time: typed while one is out, the newest text goes when it is answered (no fixed delay, no pile-up).
// 2. Freshness: every data-poll-s seconds the page asks for the store's generation (an ETag makes an unchanged
//    answer a 304) and, when it changed, fetches its live part again, not the whole page.
// 3. Models ticked for Compare (the rows' boxes of the #compare-pick form) stay ticked when the rows are replaced;
//    one a new search hides stays in the form as a ticked box of its own, which the visitor may untick.
(() => {
  const main = document.getElementById("board");
  const live = document.getElementById("board-live");
  if (!main || !live) return;
  let generation = main.dataset.generation;
  let asked = 0;  // the newest request: an older answer arriving later is dropped

  async function reload(query) {
    const mine = ++asked;
    const response = await fetch("live" + (query ? "?" + query : ""), {headers: {accept: "text/html"}});
    if (!response.ok || mine !== asked) return false;
    const html = await response.text();
    if (mine !== asked) return false;
    const ticked = [...document.querySelectorAll("input[form=compare-pick]:checked, #compare-pick input:checked")]
      .map(box => box.value);
    live.innerHTML = html;  // the server's HTML: every stored text escaped there
    keepTicked(ticked);
    const canonical = response.headers.get("X-Board-Query");
    if (canonical !== null) history.replaceState(history.state, "", canonical ? "?" + canonical : "./");
    const now = response.headers.get("X-Board-Generation");
    if (now) { generation = now; main.dataset.generation = now; }
    return true;
  }

  function keepTicked(ticked) {
    const form = document.getElementById("compare-pick");
    if (!form || !ticked.length) return;
    const boxes = [...document.querySelectorAll("input[form=compare-pick]")];
    for (const value of new Set(ticked)) {
      const row = boxes.find(box => box.value === value);
      if (row) { row.checked = true; continue; }
      const label = document.createElement("label");
      const box = Object.assign(document.createElement("input"), {type: "checkbox", name: "compare", value, checked: true});
      label.append(" ", box, " ", value);  // text nodes: a stored name is never parsed as HTML here
      form.append(label);
    }
  }

  const search = document.getElementById("board-search");
  if (search) {
    let out = false, waiting = false;
    const ask = () => {
      if (out) { waiting = true; return; }
      out = true;
      const query = new URLSearchParams(location.search);
      if (search.value.trim()) query.set(search.name, search.value); else query.delete(search.name);
      reload(query.toString()).catch(() => {}).finally(() => {
        out = false;
        if (waiting) { waiting = false; ask(); }
      });
    };
    search.addEventListener("input", ask);
  }

  const every = 1000 * Number(main.dataset.pollS || 10);
  setInterval(async () => {
    if (document.hidden) return;
    try {
      const response = await fetch("version", {cache: "no-cache"});
      if (!response.ok) return;
      const now = (await response.json()).generation;
      if (now !== generation) await reload(location.search.slice(1));
    } catch (e) { /* offline for a moment: ask again at the next tick */ }
  }, every);
})();

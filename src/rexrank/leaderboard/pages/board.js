// The board's pages (rexrank.leaderboard.pages): enhancements; every page works without them.
// 0. The page's last element asks for this script (and search.js before it, where there is a search box) once its
//    rows are parsed (assets.loader): until it has run, every link and form is the browser's own.
// 1. Search as typed and its history: search.js (asked for by a page with a search box, fetched when such a view
//    is opened here), started with what it needs of the page.
// 2. A search hides rows: the live part's replacement keeps what search.js holds (its rows, their ticks).
// 3. Freshness: every data-poll-s seconds the page asks for the store's generation (an ETag makes an unchanged
//    answer a 304) and, when it changed, fetches its live part, its controls (the filter choices, the models to
//    pick) and "Last updated" again, not the whole page.
// 4. Models ticked for Compare (the rows' boxes of the #compare-pick form) stay ticked when the rows change; one the
//    search hides stays in the form as a ticked box of its own, which the visitor may untick.
// 5. Views open in the page: a click on a link to another view (the same path, another query) fetches that page and
//    puts its body in place of this one, with a history entry (Back and Forward fetch the view they return to);
//    what fails, or answers from elsewhere (a redirect), is the browser's own navigation. The view is asked for when
//    the pointer comes over its link in a menu (nav: the views, the tracks; not the rows' many links), or the link is
//    pressed, and parsed; the click shows that page while it is fresh, in the click's own task when it is there: a
//    visitor's hover before a click hides the round trip and the parse. Once the page is idle, the tables the menus
//    link to (data-ahead, the server's choice) are read ahead the same way, kept while the board's generation is
//    theirs.
(() => {
  let page = null;  // the page shown: start()'s answer

  function start() {
    const main = document.getElementById("board");
    const live = document.getElementById("board-live");
    if (!main || !live) return null;
    let generation = main.dataset.generation;
    let asked = 0;  // the newest request: an older answer arriving later is dropped
    let alive = true;  // until another view is shown in its place
    const search = document.getElementById("board-search");
    let searching = null;  // search.js's part of this page, once it is there

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
      if (searching) searching.replaced();
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
      for (const box of searching ? [...boxes, ...searching.rowBoxes()] : boxes) {
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

    if (search) {  // search.js: in the page's head where it has a search box, fetched when such a view is opened here
      const begin = () => {
        if (alive) searching = window.rexrankSearch({live, search, reload, keepTicked, tickedValues,
                                                     generation: () => generation, drop: () => ++asked});
      };
      if (window.rexrankSearch) begin();
      else document.head.append(Object.assign(document.createElement("script"),
                                          {src: search.dataset.script, onload: begin}));
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
        await Promise.all([searching ? searching.refresh() : reload(location.search.slice(1)), refreshControls()]);
      } catch (e) { /* offline for a moment: ask again at the next tick */ }
    }, every);
    return {view: viewOf(location.search), searched: () => searching && searching.searched(),
            stop: () => { alive = false; clearInterval(poll); }};
  }

  // A view's address without its search: two addresses of one view differ in the search alone.
  function viewOf(query) {
    const params = new URLSearchParams(query);
    params.delete("q");
    return params.toString();
  }

  const FRESH_MS = 5000;  // a view asked for on hover longer ago than this is asked for again (a changed board)
  let early = null;  // the view whose menu link the pointer is over: read()'s answer
  const ahead = new Map();  // url -> read()'s answer: the menus' views, asked for once the page is idle
  const AHEAD_MAX = 8;  // the menus' tables: the overview, four datasets, two tracks

  // A view's page, asked for and parsed: {url, at, answer (a promise of the parsed page, or null where the answer
  // is not a view of these pages), done, next (that page, once done)}.
  function read(url) {
    const view = {url, at: performance.now(), done: false, next: null};
    view.answer = fetch(url, {headers: {accept: "text/html"}}).then(async (response) => {
      if (response.ok && !response.redirected) {
        const next = new DOMParser().parseFromString(await response.text(), "text/html");  // the server's HTML
        if (next.getElementById("board")) view.next = next;
        // Its search script, here before the view is shown (it only defines window.rexrankSearch): once shown,
        // the view starts its search in the click's task, with no script to fetch and run before its first frame.
        const search = next.getElementById("board-search");
        if (search && !window.rexrankSearch && !document.querySelector("script[data-search]")) {
          document.head.append(Object.assign(document.createElement("script"), {src: search.dataset.script}));
          document.head.lastChild.dataset.search = "";
        }
      }
      view.done = true;
      return view.next;
    });
    return view;
  }

  const fresh = (url) => early && early.url === url && performance.now() - early.at < FRESH_MS;
  // A view read ahead is shown while the board is at the generation it was read at (the poll learns of a change).
  const current = (view) => view && (!view.done || (view.next && view.next.getElementById("board").dataset.generation
                                                    === document.getElementById("board").dataset.generation));

  async function open(url, push) {
    const kept = ahead.get(url);
    ahead.delete(url);  // a parsed page is shown once (its body moves here)
    const view = fresh(url) ? early : current(kept) ? kept : read(url);
    early = null;
    try {
      // Parsed already (asked for on hover): shown in the click's own task, the frame it paints has the rows.
      const next = view.done ? view.next : await view.answer;
      if (!next) throw new Error("not a view of these pages");
      if (push) history.pushState(null, "", url);
      if (page) page.stop();
      document.title = next.title;
      document.body.replaceWith(document.adoptNode(next.body));
      if (push) window.scrollTo(0, 0);
      page = start();
      idle();
    } catch (e) {
      location.assign(url);
    }
  }

  // The address of another view of these pages that a link opens, or null.
  function viewLink(target) {
    const link = target instanceof Element && target.closest("a[href]");
    if (!link || link.target || link.hasAttribute("download") || link.hasAttribute("data-elsewhere")) return null;
    const url = new URL(link.href, location.href);
    if (url.origin !== location.origin || url.pathname !== location.pathname || url.hash) return null;
    return url.href;
  }

  const soon = (event) => {
    const url = event.target instanceof Element && event.target.closest("nav") && viewLink(event.target);
    if (!url || url === location.href || fresh(url) || current(ahead.get(url))) return;
    early = read(url);
    early.answer.catch(() => {});  // failed: the click's open() finds it so and navigates
  };
  for (const name of ["pointerover", "pointerdown"]) document.addEventListener(name, soon);

  // Once the page is idle, the views its menus link to are asked for and parsed (each rendered once per board
  // generation on the server: cheap there), so a click shows one in the click's own task, as a single page would.
  // Not on a connection that asks to save data.
  function readAhead() {
    if (navigator.connection && navigator.connection.saveData) return;
    for (const [url, view] of ahead) if (!current(view)) ahead.delete(url);
    for (const link of document.querySelectorAll("nav a[data-ahead]")) {
      const url = viewLink(link);
      if (!url || url === location.href || current(ahead.get(url)) || ahead.size >= AHEAD_MAX) continue;
      const view = read(url);
      view.answer.catch(() => {});  // failed: a click reads it again
      ahead.set(url, view);
    }
  }
  const idle = () => (window.requestIdleCallback || setTimeout)(readAhead);

  document.addEventListener("click", (event) => {
    const url = viewLink(event.target);
    if (!url || event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey
            || event.altKey) return;
    event.preventDefault();
    if (url !== location.href) open(url, true);
  });

  window.addEventListener("popstate", () => {
    if (page && viewOf(location.search) === page.view) page.searched();
    else open(location.href, false);
  });

  page = start();
  if (document.readyState === "complete") idle(); else window.addEventListener("load", idle, {once: true});
})();

"""Leaderboard Space performance: a store of 200 models x 4 datasets x 2 tracks.

Measures (medians of repeated runs, loopback only):
- side by side, in the same run, the two sides alternated: the Space and a minimal Gradio 6 app showing one
  gr.Dataframe of the same rows (the overview table) and, in a second tab, a Dataframe of the MIMIC-CXR rows, each in
  Chromium (Debian, Playwright):
  - first rows visible (navigation until the grid has its rows);
  - tab switch: a first opening of the MIMIC-CXR tab (the minimal app: its second tab) until the interactive table's
    rows are visible (both sides: a Dataframe built into the page; the Space has one table per view);
  - search: the Space's search box (answered in the browser, then the server's event: quick_search) and the
    minimal app's Dataframe's own client-side search, until the grid shows the narrowed count;
  each interaction is timed two ways: in the page, from the input event's timestamp to the first frame painted
  with the result (what a person sees; the targets), and by Playwright's wall clock around the action, which adds
  its own round trips and actionability checks and queues behind whatever the page does next;
- results API: p50/p95 latency of /results under 20 concurrent gradio_client clients (bounded request count),
  the clients in a separate process from the server;
- the board's table query itself (numeric_table + display_table), in-process.

Usage: .venv/bin/python bench/leaderboard.py [--models 200] [--requests 200] [--out bench/results/leaderboard.md]

``--weight`` (issue 36's targets): the page as the board grows. Three Spaces in this one process, on the published
board (seeded) and on that board grown to 1,000 and 10,000 results with synthetic ranked models: the bytes of a page
view (the HTML, which carries gradio's config) and the server's CPU per page view (process CPU time of this process
while a separate client process fetches the page, less this process's idle rate over the same wall time; the three
Spaces visited in alternating order, medians over rounds). Written to bench/results/leaderboard_weight.md (or --out).

``--pages`` (issue 48's targets): the board's pages (``rexrank.leaderboard.pages``) beside a static HTML file of the
same rows (``static_board``), on the published board and on that board grown to 1,000 results, in one run: compressed
bytes of every request of a fresh page until its rows show, server CPU per view, and in Chromium first rows, a view
switch and a search as typed (the two sides alternated, medians of --repeat visits). Written to
bench/results/leaderboard_pages.md (or --out).
"""

from __future__ import annotations

import os

# Both sides are served by this one process: the same thread pinning for each (set before numpy/torch load).
for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from leaderboard_helpers import running_space  # noqa: E402
from rexrank.data.catalog import leaderboard_split  # noqa: E402
from rexrank.data.tracks import DEFAULT_TRACK  # noqa: E402
from rexrank.leaderboard import board  # noqa: E402
from rexrank.leaderboard.records import DATASETS, TRACKS, MetricValue, ModelInfo, ResultRecord  # noqa: E402
from rexrank.leaderboard.store import Store  # noqa: E402
from rexrank.metrics import boards  # noqa: E402


def fill(store: Store, n_models: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    with store.transaction() as conn:
        for m in range(n_models):
            info = ModelInfo(name=f"model-{m:03d}", institution=f"inst-{m % 17}", year=2023 + m % 3,
                             model_type=rng.choice(["VLM", "encoder-decoder", "LLM"]),
                             trained_on=[rng.choice(DATASETS)])
            for dataset in DATASETS:
                for track in TRACKS:
                    metrics = {}
                    for name in boards.edition().metrics(track):
                        mean = rng.uniform(0.8, 3.0) if name in ("radcliq_v1", "fineradscore") else rng.uniform(0, 1)
                        high = mean * 1.05 if name in ("radcliq_v1", "fineradscore") else min(1.0, mean * 1.05)
                        metrics[name] = MetricValue(mean, mean * 0.95, high)  # inside each metric's range
                    store.add_result(ResultRecord(model=info, dataset=dataset, split=leaderboard_split(dataset),
                                                  track=track,
                                                  source="rexrank", metrics=metrics, n_studies=590), conn,
                                     # synthetic numbers carry no weight digests: labelled rows (a longer Model and
                                     # Source cell than a real row, so no lighter than the real board)
                                     allow_unofficial_weights=True)


def median_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update"]


def _rowcount_is(grid: str, n: int) -> str:
    return (f"() => {{ const g = document.querySelector('{grid}'); "
            f"return g && g.getAttribute('aria-rowcount') === '{n}'; }}")


# In-page latency of one interaction, as a person sees it: from the input event's own timestamp (a capture-phase
# listener, armed before the action) to the first animation frame after the one in which the condition first held,
# i.e. after that frame was painted (an upper bound: at most one frame, ~17 ms, late). Playwright's wall time around
# ``click()``/``fill()`` adds its own round trips and actionability checks (two stable animation frames, a hit test):
# ~120-200 ms on this machine even in a bare Gradio app, which the in-page figure leaves out.
_ARM = """([event, condition]) => {
  window.__latency = null;
  const holds = new Function('return (' + condition + ')();');
  window.addEventListener(event, (e) => {
    const t0 = e.timeStamp;
    window.__t0 = t0;
    const tick = () => holds() ? requestAnimationFrame((t) => { window.__latency = t - t0; })
                               : requestAnimationFrame(tick);
    requestAnimationFrame(tick);
  }, {capture: true, once: true});
}"""


def _visible_rows(selector: str) -> str:
    """A JS condition: some element matching ``selector`` is rendered with a non-zero box."""
    return (f"() => [...document.querySelectorAll({selector!r})].some("
            "(el) => el.checkVisibility() && el.getBoundingClientRect().height > 0)")


def _arm(page, event: str, condition: str) -> None:
    page.evaluate(_ARM, [event, condition])


def _in_page(page) -> float:
    """Seconds, once the armed interaction's condition has been painted."""
    page.wait_for_function("() => window.__latency !== null", timeout=60_000)
    return page.evaluate("() => window.__latency") / 1000


# The requests an armed interaction sent (resource timing, same clock as the event): when each left and when its
# answer had arrived, relative to the input event, so the in-page time splits into dispatch, round trip (server
# work + gradio's processing + transfer) and the grid's update after the last answer.
_REQUESTS = """() => performance.getEntriesByType('resource')
  .filter((r) => r.startTime >= window.__t0 && r.name.includes('/gradio_api/'))
  .map((r) => [r.name.split('/gradio_api/')[1], r.startTime - window.__t0, r.responseEnd - window.__t0])"""


_ANSWERED = """() => performance.getEntriesByType('resource')
  .some((r) => r.startTime >= window.__t0 && r.name.includes('/gradio_api/'))"""


def _split(page, total: float) -> dict[str, float]:
    """The armed interaction's in-page time split (seconds): dispatch (input -> first request sent), round trip
    (first request sent -> last answer in), update (last answer -> painted); and how many requests it sent."""
    sent = page.evaluate(_REQUESTS)
    if os.environ.get("BENCH_VERBOSE"):
        print("requests:", [(name[:40], round(s), round(e)) for name, s, e in sent], file=sys.stderr)
    if not sent:
        return {"requests": 0.0}
    first = min(s for _, s, _ in sent) / 1000
    last = max(e for _, _, e in sent) / 1000
    return {"requests": float(len(sent)), "dispatch": first, "round_trip": last - first, "update": total - last}


def space_times(browser, url: str, i: int) -> dict[str, float]:
    """One visit of the Space: first rows, a first tab switch, a filter (seconds)."""
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    start = time.perf_counter()
    page.goto(url, wait_until="commit")
    page.wait_for_selector("#overview-table tbody tr", state="attached", timeout=120_000)
    first = time.perf_counter() - start
    # One table per view: the tab's own Dataframe, built into the page like the minimal app's second tab.
    rows = "#table-mimic_cxr-findings div[role=row]"
    _arm(page, "click", _visible_rows(rows))
    start = time.perf_counter()
    page.get_by_role("tab", name="MIMIC-CXR", exact=True).click()
    page.wait_for_selector(f"{rows}:visible", state="visible", timeout=60_000)
    switch = time.perf_counter() - start
    page.wait_for_function("() => window.rexrankSwitch !== undefined")
    in_page = page.evaluate("window.rexrankSwitch") / 1000
    switch_page = _in_page(page)
    grid = "#table-mimic_cxr-findings [role=grid]"
    # The rest of the rows (and the base the browser searches) arrive once the tab is shown: a person reads the
    # first rows before typing, so the search starts once the table is whole (its label no longer says "first").
    page.wait_for_function("() => !document.querySelector('#table-mimic_cxr-findings').innerText.includes("
                           "'the rest is loading')", timeout=60_000)
    # The search box: answered in the browser (quick_search), the server's event after it.
    _arm(page, "input", _rowcount_is(grid, 2))
    start = time.perf_counter()
    page.locator("#search-mimic_cxr-findings input").first.fill(f"model-{i:03d}")
    page.wait_for_function(_rowcount_is(grid, 2), timeout=60_000)
    filtered = time.perf_counter() - start
    filter_page = _in_page(page)
    # The server's event leaves after the browser's rows are painted (quick_search.PAINT_FIRST_JS): its answer may
    # still be on the way, and a request is in resource timing only once answered.
    page.wait_for_function(_ANSWERED, timeout=60_000)
    split = {f"filter_{k}": v for k, v in _split(page, filter_page).items()}
    page.close()
    return {"first": first, "switch": switch, "filter": filtered,
            "switch_in_page": switch_page, "filter_in_page": filter_page, **split}


def minimal_times(browser, url: str, i: int) -> dict[str, float]:
    """One visit of the minimal app: first rows, a first switch to its second tab (until its Dataframe's rows are
    visible), and that Dataframe's own search (seconds)."""
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    start = time.perf_counter()
    page.goto(url, wait_until="commit")
    page.wait_for_selector("#minimal-table tbody tr", state="attached", timeout=120_000)
    first = time.perf_counter() - start
    _arm(page, "click", _visible_rows("#minimal-second div[role=row]"))
    start = time.perf_counter()
    page.get_by_role("tab", name="Second", exact=True).click()
    page.wait_for_selector("#minimal-second div[role=row]:visible", state="visible", timeout=60_000)
    switch = time.perf_counter() - start
    page.wait_for_function("() => window.rexrankSwitch !== undefined")
    in_page = page.evaluate("window.rexrankSwitch") / 1000
    switch_page = _in_page(page)
    # The search runs on the rows the Space's search runs on (its MIMIC-CXR table): the synthetic models carry no
    # weight digests, so they are unranked and not in the overview, where "model-NNN" found nothing (the bench
    # timed out waiting for one row).
    search = page.locator("#minimal-second input[type=text], #minimal-second textarea").first
    grid = "#minimal-second [role=grid]"
    page.wait_for_selector(f"{grid}", state="visible", timeout=60_000)
    _arm(page, "input", _rowcount_is(grid, 2))
    start = time.perf_counter()
    search.fill(f"model-{i:03d}")
    page.wait_for_function(_rowcount_is(grid, 2), timeout=60_000)
    filtered = time.perf_counter() - start
    filter_page = _in_page(page)
    page.close()
    return {"first": first, "switch": switch, "filter": filtered, "switch_in_page": switch_page,
            "filter_in_page": filter_page}


def minimal_app(rows, second_rows):
    """The yardstick: a Gradio 6 app with nothing but a Dataframe of the same rows and, in a second tab, a Dataframe
    of the rows the Space's MIMIC-CXR tab shows, with its built-in search (the tab-switch and search yardsticks)."""
    import gradio as gr

    with gr.Blocks(title="minimal") as demo:
        with gr.Tab("First"):
            gr.Dataframe(value=rows, interactive=False, elem_id="minimal-table", show_search="search")
        with gr.Tab("Second"):
            gr.Dataframe(value=second_rows, interactive=False, elem_id="minimal-second", show_search="search")
    return demo


def side_by_side(space_url: str, minimal_url: str, repeat: int) -> dict[str, list[float]]:
    """Both sides in one browser, alternating (which goes first alternates too), ``repeat`` visits each."""
    from playwright.sync_api import sync_playwright

    out: dict[str, list[float]] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=FLAGS)
        space_times(browser, space_url, 199)  # warm-up visits (browser caches, lazy imports): not counted
        minimal_times(browser, minimal_url, 199)
        for i in range(repeat):
            sides = [("space", space_times, space_url), ("minimal", minimal_times, minimal_url)]
            for side, measure, url in (sides if i % 2 == 0 else sides[::-1]):
                for key, value in measure(browser, url, i).items():
                    out.setdefault(f"{side}_{key}", []).append(value)
        browser.close()
    return out


def api_latencies(url: str, clients: int, requests: int) -> list[float]:
    from gradio_client import Client

    latencies: list[float] = []
    lock = threading.Lock()
    per_client = max(1, requests // clients)

    failures: list[str] = []
    # Clients connect first (each fetches the app config once); only the requests are timed.
    connected = [Client(url, verbose=False) for _ in range(clients)]

    def worker(k: int) -> None:
        client = connected[k]
        for j in range(per_client):
            dataset = DATASETS[(k + j) % len(DATASETS)]
            start = time.perf_counter()
            try:
                client.predict(dataset, "findings", api_name="/results")
            except Exception as exc:  # noqa: BLE001 - a failed request is counted, not fatal
                failures.append(type(exc).__name__)
                continue
            with lock:
                latencies.append(time.perf_counter() - start)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    return latencies, failures


WEIGHT_SIZES = (None, 1000, 10000)  # results: the published board as seeded, then grown to these


def _grown_store(path: Path, results: int | None) -> int:
    """A store seeded with the published tables and grown with synthetic published models to about ``results``."""
    from leaderboard_helpers import add_published_models
    from rexrank.leaderboard import published

    store = Store(path)
    published.seed_store(store)
    base = store.counts()["results"]
    if results:
        add_published_models(store, max(0, round((results - base) / (len(DATASETS) * len(TRACKS)))))
    n = store.counts()["results"]
    store.close()
    return n


def _fetch(url: str) -> bytes:
    import urllib.request

    with urllib.request.urlopen(url, timeout=600) as response:
        return response.read()


def _cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _serve_until_closed(path: str) -> None:
    """--serve: one Space on ``path``; prints its URL, serves until stdin closes."""
    with running_space(Path(path), worker=False) as (url, _, _):
        print(url, flush=True)
        sys.stdin.read()


def page_weight(repeat: int, views: int, out: Path) -> None:
    import subprocess

    client = "import sys, urllib.request\nfor _ in range(int(sys.argv[2])): urllib.request.urlopen(sys.argv[1], timeout=600).read()"
    with tempfile.TemporaryDirectory() as tmp:
        spaces = []
        try:
            for k, size in enumerate(WEIGHT_SIZES):
                path = Path(tmp) / f"board-{k}.sqlite"
                n = _grown_store(path, size)
                # Each Space in its own process: its CPU is read from /proc, and another Space's idle loop is not in it.
                proc = subprocess.Popen([sys.executable, __file__, "--serve", str(path)], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True)
                url = proc.stdout.readline().strip()
                spaces.append({"results": n, "url": url, "proc": proc, "bytes": len(_fetch(url)), "cpu": []})
            for r in range(repeat):
                for space in (spaces if r % 2 == 0 else spaces[::-1]):
                    pid = space["proc"].pid
                    idle, idle_wall = _cpu_seconds(pid), time.perf_counter()
                    time.sleep(2)
                    idle_rate = (_cpu_seconds(pid) - idle) / (time.perf_counter() - idle_wall)  # gradio's own loops
                    cpu, wall = _cpu_seconds(pid), time.perf_counter()
                    subprocess.run([sys.executable, "-c", client, space["url"], str(views)], check=True)
                    cpu, wall = _cpu_seconds(pid) - cpu, time.perf_counter() - wall
                    space["cpu"].append(max(0.0, cpu - idle_rate * wall) / views)
        finally:
            for space in spaces:
                space["proc"].stdin.close()
                space["proc"].wait(timeout=120)
    base = spaces[0]
    rows = []
    for space in spaces:
        cpu = statistics.median(space["cpu"])
        rows.append(f"| {space['results']:,} | {space['bytes']:,} ({space['bytes'] / base['bytes']:.2f}x) | "
                    f"{cpu * 1000:.0f} ms ({cpu / statistics.median(base['cpu']):.2f}x) |")
    text = ("# Leaderboard page weight as the board grows\n\n"
            f"Command: `.venv/bin/python bench/leaderboard.py --weight --repeat {repeat} --views {views}`. "
            "Each Space in its own process; CPU per page view is that process's CPU time (/proc) while a client "
            "process fetches the page, less the Space's idle rate measured just before (gradio's own loops); the "
            f"Spaces visited in alternating order; median of {repeat} rounds of {views} views.\n\n"
            "Targets (issue 36): bytes at 1,000 results <= 1.3x the published board's; CPU per page view at 10,000 "
            "results <= 1.5x.\n\n"
            "| results | page bytes (HTML with the config) | server CPU per page view |\n|---|---|---|\n"
            + "\n".join(rows) + "\n\nEvery round (ms per view):\n" + "\n".join(
                f"- {s['results']:,}: " + ", ".join(f"{c * 1000:.0f}" for c in s["cpu"]) for s in spaces) + "\n")
    out.write_text(text)
    print(text)


# -- the board's pages beside a static HTML file of the same rows (issue 48 part B) --------------------------------

STATIC_SCRIPT = """<script>
const q = document.getElementById('q');
q.addEventListener('input', () => { const t = q.value.toLowerCase();
  for (const tr of document.querySelectorAll('#mimic tbody tr'))
    tr.hidden = !tr.textContent.toLowerCase().includes(t); });
for (const a of document.querySelectorAll('nav a')) a.addEventListener('click', (e) => { e.preventDefault();
  for (const s of document.querySelectorAll('section')) s.hidden = s.id !== a.dataset.view; });
</script>"""


def static_board(views, track: str = DEFAULT_TRACK) -> str:
    """rexrank.ai's shape: one static HTML file holding the overview and the MIMIC-CXR table (the same rows and
    cells as the pages'), two links that switch between them in the page, and a search box that hides the rows
    whose text does not hold the search: the yardstick of bytes, first rows, view switch and search as typed."""
    import html as h

    def table(frame, ident: str) -> str:
        head = "".join(f"<th>{h.escape(str(c))}</th>" for c in frame.columns)
        body = "".join("<tr>" + "".join(f"<td>{h.escape(str(v))}</td>" for v in row) + "</tr>"
                       for row in frame.itertuples(index=False))
        return (f"<table id='{ident}'><caption>{ident}</caption><thead><tr>{head}</tr></thead>"
                f"<tbody>{body}</tbody></table>")

    mimic = views.page_table("mimic_cxr", track).frame
    return ("<!doctype html><html lang=en><head><meta charset=utf-8><title>ReXrank</title><style>"
            "table{border-collapse:collapse}td,th{padding:4px 8px;border-bottom:1px solid #ddd;white-space:nowrap}"
            "</style></head><body><h1>ReXrank</h1><nav><a href=#overview data-view=overview>Overview</a> "
            "<a href=#mimic data-view=mimic>MIMIC-CXR</a></nav>"
            f"<section id=overview>{table(views.overview_view(track), 'overview-table')}</section>"
            f"<section id=mimic hidden><input id=q type=search aria-label=Search>{table(mimic, 'mimic-table')}"
            f"</section>{STATIC_SCRIPT}</body></html>")


def _with_static(views, static: str):
    """The pages' app with the static file at ``/static.html`` (compressed by the same middleware)."""
    from starlette.responses import HTMLResponse
    from starlette.routing import Route

    from rexrank.leaderboard.pages.routes import board_app

    app = board_app(views)
    app.router.routes.insert(0, Route("/static.html", lambda request: HTMLResponse(static)))
    return app


def _pages_server(app):
    """``app`` on a loopback server, in a thread."""
    import uvicorn

    from leaderboard_helpers import free_port

    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=free_port(), log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.05)
    return server, thread, f"http://127.0.0.1:{server.config.port}/"


def _gzip_bytes(client, paths: list[str]) -> int:
    """Compressed bytes of these requests, as a fresh page sends them (the body as received, gzip accepted)."""
    total = 0
    for path in paths:
        with client.stream("GET", path, headers={"Accept-Encoding": "gzip"}) as response:
            total += sum(len(chunk) for chunk in response.iter_raw())
    return total


def _page_requests(client, query: str) -> tuple[list[str], list[str]]:
    """A fresh page's requests until its rows show (the page and what its head names: the stylesheet), and the
    scripts its last element asks for once the rows are parsed (assets.loader)."""
    import re

    page = client.get("/" + query).text
    until = ["/" + query] + ["/" + u.replace("&amp;", "&") for u in re.findall(r'(?:href|src)="(static/[^"]+)"', page)]
    loader = page.rsplit("<script>", 1)[1] if "<script>" in page else ""
    # After the rows: the scripts, then the tables the menus link to, which board.js reads ahead once idle
    menus = "".join(re.findall(r'<nav aria-label="(?:Board views|Tracks)".*?</nav>', page))
    ahead = [f"/{u.replace('&amp;', '&')}" for u in re.findall(r'<a href="([^"]*)" data-ahead>', menus)]
    return until, ["/" + u for u in re.findall(r'"(static/[^"]+)"', loader)] + [
        "/" if u == "/./" else u for u in ahead if u != "/" + query]


def _cpu_per_view(client, path: str, views_n: int = 20) -> float:
    start = time.process_time()
    for _ in range(views_n):
        client.get(path, headers={"Accept-Encoding": "gzip", "Cache-Control": "no-cache"})
    return (time.process_time() - start) / views_n


# A visitor's time on a view before acting: on the first rows before the click on another view, on that view before
# typing a search (both sides; the pages read the menus' tables ahead once idle: board.js). 0: each action as soon
# as the scripts have run (a read ahead still on its way).
READING_MS = 1000

IN_PAGE_SWITCH = """(rows) => document.addEventListener("click", () => {
  const start = performance.now();
  const tick = () => {
    const row = document.querySelector(rows);
    if (row && row.offsetParent !== null) window.rexrankSwitch = performance.now() - start;
    else requestAnimationFrame(tick);
  };
  requestAnimationFrame(tick);
}, {capture: true, once: true})"""


def pages_visit(browser, url: str, static: bool, i: int) -> dict[str, float]:
    """One fresh visit (seconds, Playwright's clock on both sides): first rows, switch to MIMIC-CXR, a search."""
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    start = time.perf_counter()
    page.goto(url + ("static.html" if static else ""), wait_until="commit")
    page.wait_for_selector("#overview-table tbody tr" if static else "#overview tbody tr", timeout=60_000)
    first = time.perf_counter() - start
    # (not timed) the page's scripts have run (the pages': asked for once the rows are parsed, before the load
    # event): a click sooner is the browser's own navigation, which mixed two kinds of switch in one median
    page.wait_for_function("() => document.readyState === 'complete'")
    page.wait_for_timeout(READING_MS)  # (not timed) a visitor reads the first rows before a click, both sides
    # The page's own clock too: from the click to the first frame whose rows are laid out (without Playwright's
    # polling and round trips, which both sides pay and which swamp a switch of tens of ms on a loaded machine).
    page.evaluate(IN_PAGE_SWITCH, "#mimic-table tbody tr" if static else "#table-mimic_cxr-findings tbody tr")
    start = time.perf_counter()
    if static:
        page.get_by_role("link", name="MIMIC-CXR", exact=True).click()
        page.wait_for_selector("#mimic-table tbody tr:visible", timeout=60_000)
    else:
        page.get_by_role("navigation", name="Board views").get_by_role("link", name="MIMIC-CXR").click()
        page.wait_for_selector("#table-mimic_cxr-findings tbody tr:visible", timeout=60_000)
    switch = time.perf_counter() - start
    page.wait_for_function("() => window.rexrankSwitch !== undefined")
    in_page = page.evaluate("window.rexrankSwitch") / 1000
    # (not timed) search.js has started (the pages': fetched by board.js when the view is opened in the page)
    page.wait_for_function("() => document.readyState === 'complete'" + ("" if static else " && window.rexrankSearch"))
    page.wait_for_timeout(READING_MS)  # (not timed) the visitor reads the table before typing, both sides
    rows = "#mimic-table tbody tr:not([hidden])" if static else "#table-mimic_cxr-findings tbody tr"
    search = page.locator("#q" if static else "#board-search")
    target = f"Grown-{i:05d}" if page.locator(rows).count() > 200 else "maira"
    start = time.perf_counter()
    search.fill(target)
    page.wait_for_function(f"() => document.querySelectorAll({rows!r}).length <= 3", timeout=60_000)
    filtered = time.perf_counter() - start
    want = page.locator(rows).count()
    context.close()
    return {"first": first, "switch": switch, "switch in page": in_page, "search": filtered,
            "rows_found": float(want)}


def pages_bench(repeat: int, out: Path) -> None:
    from playwright.sync_api import sync_playwright
    from starlette.testclient import TestClient

    from rexrank.leaderboard.views import Views

    sizes = (None, 1000)
    with tempfile.TemporaryDirectory() as tmp:
        boards_, servers = [], []
        try:
            for k, size in enumerate(sizes):
                n = _grown_store(Path(tmp) / f"board-{k}.sqlite", size)
                store = Store(Path(tmp) / f"board-{k}.sqlite")
                views = Views(store)
                static = static_board(views)
                app = _with_static(views, static)
                client = TestClient(app)
                row = {"results": n}
                for name, query in (("overview", ""), ("MIMIC-CXR", "?tab=mimic_cxr")):
                    until, after = _page_requests(client, query)
                    row[f"bytes {name}"] = _gzip_bytes(client, until)
                    row[f"bytes after {name}"] = _gzip_bytes(client, after)
                row["bytes static"] = _gzip_bytes(client, ["/static.html"])
                cpu = {"pages overview": [], "pages MIMIC-CXR": [], "static": []}
                for r in range(repeat):
                    for key, path in (("pages overview", "/"), ("pages MIMIC-CXR", "/?tab=mimic_cxr"),
                                      ("static", "/static.html"))[:: 1 if r % 2 == 0 else -1]:
                        cpu[key].append(_cpu_per_view(client, path))
                row.update({f"cpu {k}": statistics.median(v) for k, v in cpu.items()})
                server, thread, url = _pages_server(app)
                servers.append((server, thread, store))
                boards_.append((row, url))
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=FLAGS)
                for row, url in boards_:
                    pages_visit(browser, url, True, 0)
                    pages_visit(browser, url, False, 0)  # warm-up: not counted
                    times: dict[str, list[float]] = {}
                    for i in range(repeat):
                        for static in ((True, False) if i % 2 == 0 else (False, True)):
                            for key, value in pages_visit(browser, url, static, i + 1).items():
                                times.setdefault(f"{'static' if static else 'pages'} {key}", []).append(value)
                    row["times"] = times
                browser.close()
        finally:
            for server, thread, store in servers:
                server.should_exit = True
                thread.join(timeout=30)
                store.close()
    lines = ["# The board's pages beside a static HTML file of the same rows (issue 48 part B)", "",
             f"Command: `.venv/bin/python bench/leaderboard.py --pages --repeat {repeat}`. Load: "
             f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores (shared). The static file: the overview and the "
             "MIMIC-CXR table (the same rows and cells), two links switching them in the page, a search box hiding "
             "rows (`static_board`). Chromium (Debian), a fresh context per visit, the two sides alternated, "
             f"medians of {repeat} visits, Playwright's clock on both sides; first rows: navigation until the "
             "overview's rows are there; view switch: click on MIMIC-CXR until its rows are visible (the pages: "
             "board.js puts the view's page, read ahead once idle or fetched, in place of the body), after the page's "
             f"scripts have run and a visitor's {READING_MS} ms on the rows (not timed, both sides; before the "
             "scripts, a click was a whole navigation: two kinds of switch in one median), and "
             "by the page's clock from the click to the first frame with the rows laid out (`IN_PAGE_SWITCH`); "
             f"search: {READING_MS} ms on the view (not timed), then fill() until at most 3 rows are left. Bytes: "
             "every request of a fresh page until rows show (the page and its stylesheet; the scripts are asked for "
             "by the page's last element once the rows are parsed, and the tables the page reads ahead once idle, "
             "listed after the +), gzip as sent. Server CPU: this process's CPU per request through Starlette's "
             "TestClient (client side included on both sides).", "",
             "| results | bytes overview / static | bytes MIMIC-CXR / static | first rows | view switch | view switch, "
             "the page's clock | search as typed | server CPU overview / static | server CPU MIMIC-CXR / static |",
             "|---|---|---|---|---|---|---|---|---|"]
    for row, _ in boards_:
        med = {k: statistics.median(v) for k, v in row["times"].items()}

        def ratio(key: str) -> str:
            return (f"{med['pages ' + key] * 1000:.0f} / {med['static ' + key] * 1000:.0f} ms = "
                    f"**{med['pages ' + key] / med['static ' + key]:.2f}x**")
        lines.append(f"| {row['results']:,} | {row['bytes overview']:,} / {row['bytes static']:,} = "
                     f"**{row['bytes overview'] / row['bytes static']:.2f}x** (+{row['bytes after overview']:,}) | "
                     f"{row['bytes MIMIC-CXR']:,} / {row['bytes static']:,} = "
                     f"**{row['bytes MIMIC-CXR'] / row['bytes static']:.2f}x** (+{row['bytes after MIMIC-CXR']:,}) | "
                     f"{ratio('first')} | {ratio('switch')} | {ratio('switch in page')} | {ratio('search')} | "
                     f"{row['cpu pages overview'] * 1000:.1f} / {row['cpu static'] * 1000:.1f} ms | "
                     f"{row['cpu pages MIMIC-CXR'] * 1000:.1f} / {row['cpu static'] * 1000:.1f} ms |")
    (a, _), (b, _) = boards_
    lines += ["", f"Growth from the published board to {b['results']:,} results: overview bytes "
              f"**{b['bytes overview'] / a['bytes overview']:.2f}x**, MIMIC-CXR bytes "
              f"**{b['bytes MIMIC-CXR'] / a['bytes MIMIC-CXR']:.2f}x** (static file "
              f"{b['bytes static'] / a['bytes static']:.2f}x).", "", "Every visit (ms):"]
    for row, _ in boards_:
        for key, values in row["times"].items():
            lines.append(f"- {row['results']:,} {key}: " + ", ".join(
                f"{v:.0f}" if key.endswith("rows_found") else f"{v * 1000:.0f}" for v in values))
    text = "\n".join(lines) + "\n"
    out.write_text(text)
    print(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--models", type=int, default=200)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--out", default=None, help="default: bench/results/leaderboard.md (--weight: "
                        "leaderboard_weight.md)")
    parser.add_argument("--client-mode", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--weight", action="store_true", help="the page's bytes and CPU as the board grows")
    parser.add_argument("--views", type=int, default=20, help="--weight: page views per Space per round")
    parser.add_argument("--serve", default=None, help=argparse.SUPPRESS)
    parser.add_argument("--pages", action="store_true", help="the board's pages beside a static HTML file of the "
                        "same rows: bytes, server CPU, first rows, view switch, search (bench/results/"
                        "leaderboard_pages.md)")
    args = parser.parse_args()
    if args.serve:
        return _serve_until_closed(args.serve)
    results = Path(__file__).parent / "results"
    if args.pages:
        return pages_bench(args.repeat, Path(args.out or results / "leaderboard_pages.md"))
    if args.weight:
        return page_weight(args.repeat, args.views, Path(args.out or results / "leaderboard_weight.md"))
    args.out = args.out or str(results / "leaderboard.md")
    if args.client_mode:  # the load generator, in its own process so it does not share the server's GIL
        import json

        lat, failures = api_latencies(args.client_mode, args.clients, args.requests)
        print(json.dumps({"latencies": lat, "failures": failures}))
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "board.sqlite"
        store = Store(path)
        start = time.perf_counter()
        fill(store, args.models)
        fill_s = time.perf_counter() - start
        counts = store.counts()
        columns = board.board_metrics(store, "findings")
        query_s = median_time(lambda: board.display_table(board.numeric_table(store, "mimic_cxr", "findings"), columns), 5)
        store.close()
        with running_space(path, worker=False) as (url, store, _):
            from leaderboard_helpers import free_port

            minimal = minimal_app(board.overview(store, "findings"),
                                  board.display_table(board.numeric_table(store, "mimic_cxr", "findings"), columns))
            minimal.launch(server_name="127.0.0.1", server_port=free_port(), prevent_thread_lock=True, quiet=True)
            try:
                times = side_by_side(url, minimal.local_url, args.repeat)
            finally:
                minimal.close()
            import json
            import subprocess

            proc = subprocess.run([sys.executable, __file__, "--client-mode", url, "--clients", str(args.clients),
                                   "--requests", str(args.requests)], capture_output=True, text=True, timeout=900)
            if proc.returncode != 0:
                raise SystemExit(f"load generator failed:\n{proc.stderr[-3000:]}")
            loaded = json.loads(proc.stdout.strip().splitlines()[-1])
            lat, failures = sorted(loaded["latencies"]), loaded["failures"]
    p50 = lat[len(lat) // 2]
    p95 = lat[min(len(lat) - 1, int(round(0.95 * (len(lat) - 1))))]
    med = {k: statistics.median(v) for k, v in times.items()}
    n = args.repeat
    first_ratio = med["space_first"] / med["minimal_first"]
    rows = [
        ("store", f"{counts['models']} models, {counts['results']} results (filled in {fill_s:.1f} s)"),
        ("table query (numeric + display), in-process", f"{query_s * 1000:.0f} ms (median of 5)"),
        ("first rows visible (Chromium, navigation -> overview rows): Space / minimal app",
         f"{med['space_first']:.2f} s / {med['minimal_first']:.2f} s = **{first_ratio:.2f}x** (target <= 1.15x; "
         f"median of {n} each, alternated)"),
        ("tab switch to the interactive table, in the page (click -> first frame painted with its rows): Space "
         "(MIMIC-CXR tab) / minimal app (second tab, same rows)",
         f"{med['space_switch_in_page'] * 1000:.0f} ms / {med['minimal_switch_in_page'] * 1000:.0f} ms = "
         f"**{med['space_switch_in_page'] / med['minimal_switch_in_page']:.2f}x** (target <= 1.0x; median of {n})"),
        ("search, in the page (input -> first frame painted with the narrowed grid): Space (answered in the "
         "browser, quick_search; the server's event after) / minimal app (the Dataframe's client-side search)",
         f"{med['space_filter_in_page'] * 1000:.0f} ms / {med['minimal_filter_in_page'] * 1000:.0f} ms = "
         f"**{med['space_filter_in_page'] / med['minimal_filter_in_page']:.2f}x** (target <= 1.5x, issue 36; "
         f"median of {n})"),
        ("search in the page, its request (medians): sent (input -> request sent) / round trip (request sent -> "
         "answer in) / painted minus answer in (negative: the grid was painted before the server answered); "
         "requests sent",
         f"{med['space_filter_dispatch'] * 1000:.0f} ms / {med['space_filter_round_trip'] * 1000:.0f} ms / "
         f"{med['space_filter_update'] * 1000:.0f} ms; {med['space_filter_requests']:.0f} request(s)"),
        ("tab switch, Playwright wall clock (click() -> rows visible): Space / minimal app",
         f"{med['space_switch'] * 1000:.0f} ms / {med['minimal_switch'] * 1000:.0f} ms (median of {n})"),
        ("filter, Playwright wall clock (fill() -> narrowed grid): Space / minimal app",
         f"{med['space_filter'] * 1000:.0f} ms / {med['minimal_filter'] * 1000:.0f} ms (median of {n})"),
        (f"/results API, {args.clients} concurrent clients, {len(lat)} requests",
         f"p50 {p50 * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms, {len(failures)} failed"),
    ]
    table = "| measurement | value |\n|---|---|\n" + "\n".join(f"| {a} | {b} |" for a, b in rows)
    runs = "\n".join(f"- {k}: " + (", ".join(f"{v:.0f}" for v in vals) if k.endswith("_requests") else
                                    ", ".join(f"{v * 1000:.0f}" for v in vals) + " ms") for k, vals in times.items())
    text = (f"# Leaderboard Space performance\n\nMachine: 2 CPU cores (shared with other jobs), loopback only, "
            f"OMP/MKL threads pinned to 1 for both sides (one process serves both apps). "
            f"Command: `.venv/bin/python bench/leaderboard.py --models {args.models} --repeat {args.repeat} "
            f"--requests {args.requests}`.\n\n{table}\n\n"
            f"Every run (ms):\n{runs}\n")
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()

"""The board pages' scripts in Chromium (issue 48's bytes and view switch): a fresh page asks for its scripts only
once its rows are parsed (``assets.loader``, the body's last element), and they still make search as typed work
without a request; a view's link in the menu is asked for when the pointer comes over it, and the click shows that
answer in the page (no second request, no new document, the scripts not run again).
One server (uvicorn on 127.0.0.1, a thread of this process) and one browser for the module, stopped by it.
"""

from __future__ import annotations

import time

import pytest
from leaderboard_helpers import DESKTOP, LoopbackServer

pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROW_NAMES = ("() => [...document.querySelectorAll('#board-live tbody th[scope=row]')]"
             ".map(th => th.textContent.replace(/\\s+/g, ' ').trim())")
# When each script was asked for, and when the page's HTML had all arrived (ms from navigation start).
TIMES = """() => ({html: performance.getEntriesByType("navigation")[0].responseEnd,
  scripts: performance.getEntriesByType("resource").filter(e => e.initiatorType === "script")
    .map(e => [e.name.split("/").pop().split("?")[0], e.startTime])})"""


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """The pages' app on 127.0.0.1 over the published board."""

    from rexrank.leaderboard.pages.routes import board_app
    from rexrank.leaderboard.published import seed_store
    from rexrank.leaderboard.store import Store
    from rexrank.leaderboard.views import Views

    store = Store(tmp_path_factory.mktemp("pages-loader") / "board.sqlite")
    seed_store(store)
    server = LoopbackServer(board_app(Views(store)), "the pages' server to listen")
    try:
        yield server.base
    finally:
        server.stop()
        store.close()


def _poll(check, seconds: float = 10.0):
    deadline = time.monotonic() + seconds
    while not check() and time.monotonic() < deadline:
        time.sleep(0.05)
    return check()


def test_the_scripts_come_after_the_html_and_still_search_as_typed(browser, base):
    page = browser.new_page(viewport=DESKTOP)
    asked = []
    page.on("request", lambda request: asked.append(request.url.removeprefix(base)))
    try:
        page.goto(base + "?tab=iu_xray")  # until the load event, which the loader's scripts hold back
        times = page.evaluate(TIMES)
        assert [name for name, _ in times["scripts"]] == ["search.js", "board.js"], times
        assert all(start >= times["html"] for _, start in times["scripts"]), times
        assert page.evaluate("document.querySelectorAll('script[src]').length") == 2
        before = len(asked)
        page.locator("#board-search").press_sequentially("maira 2")
        assert _poll(lambda: [n.split(" ")[0] for n in page.evaluate(ROW_NAMES)] == ["MAIRA-2"])
        assert _poll(lambda: page.evaluate("location.search") == "?tab=iu_xray&q=maira+2")
        assert [url for url in asked[before:] if url.startswith("live")] == []  # read here, by search.js
    finally:
        page.close()


def test_a_hovered_view_is_asked_for_once_and_shown_by_the_click(browser, base):
    page = browser.new_page(viewport=DESKTOP)
    asked = []
    page.on("request", lambda request: asked.append(request.url.removeprefix(base)))
    try:
        page.goto(base)
        page.evaluate("window.sameDocument = true")
        link = page.get_by_role("navigation", name="Board views").get_by_role("link", name="MIMIC-CXR")
        link.hover()
        assert _poll(lambda: "?tab=mimic_cxr" in asked), asked
        link.click()
        assert _poll(lambda: page.evaluate("location.search") == "?tab=mimic_cxr")
        assert _poll(lambda: page.evaluate("document.querySelector('caption').textContent")
                     .startswith("MIMIC-CXR · Findings"))
        assert page.evaluate("window.sameDocument") is True
        assert asked.count("?tab=mimic_cxr") == 1, asked
        # the new body's loader is not run again (a parsed document's scripts never run): board.js once
        assert sum(url.startswith("static/board.js") for url in asked) == 1, asked
        # search.js, which the overview did not need, is fetched for the view's search box, and works
        page.locator("#board-search").press_sequentially("maira 2")
        assert _poll(lambda: [n.split(" ")[0] for n in page.evaluate(ROW_NAMES)] == ["MAIRA-2"])
        assert page.evaluate("document.querySelectorAll('script[src]').length") == 2
    finally:
        page.close()


def test_a_search_typed_before_the_script_came_is_shown_when_it_comes(browser, base):
    """The scripts come after the rows: what a visitor typed meanwhile is searched when search.js starts (held
    back here until the box has the text)."""
    page = browser.new_page(viewport=DESKTOP)
    held = []
    page.route("**/static/search.js*", lambda route: held.append(route))
    try:
        page.goto(base + "?tab=iu_xray", wait_until="domcontentloaded")
        assert _poll(lambda: page.evaluate("1") and len(held) == 1)  # evaluate: lets the route handler run
        page.locator("#board-search").fill("maira 2")  # no script reads it yet
        assert len(page.evaluate(ROW_NAMES)) > 1
        held[0].continue_()
        assert _poll(lambda: [n.split(" ")[0] for n in page.evaluate(ROW_NAMES)] == ["MAIRA-2"])
        assert _poll(lambda: page.evaluate("location.search") == "?tab=iu_xray&q=maira+2")
    finally:
        page.close()

"""The Compare tab in a real browser (issue 37 point 6) at 1440x900 and 390x844, light and dark: two models
picked in the multiselect -> their side-by-side table and paired tests visible, and on the phone no sideways scroll
of the page (each table scrolls in its own box). Screenshots go to REXRANK_SHOTS (default /tmp/shots), compare_*."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from leaderboard_helpers import DESKTOP, PHONE, STATE_CEILING_MS, free_port
from rexrank.leaderboard.assets import CSS, HEAD, theme
from rexrank.leaderboard.compare_tab import MODELS_ID, VIEW_ID
from rexrank.leaderboard.store import Store
from rexrank.leaderboard.views import Views
from rexrank.leaderboard.wiring import build_app
from test_compare_view import MODELS, _fill

SHOTS = Path(os.environ.get("REXRANK_SHOTS") or "/tmp/shots")
SIZES = {"desktop": DESKTOP, "phone": PHONE}
THEMES = {"light": "", "dark": "?__theme=dark"}

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def space(tmp_path_factory):
    store = Store(tmp_path_factory.mktemp("compare") / "board.sqlite")
    _fill(store)
    demo = build_app(store, views=Views(store))
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, css=CSS, head=HEAD, theme=theme())
    try:
        yield f"http://127.0.0.1:{port}/"
    finally:
        demo.close()
        store.close()


@pytest.mark.parametrize("theme", THEMES)
@pytest.mark.parametrize("size", SIZES)
def test_two_models_side_by_side(browser, space, size, theme):
    viewport = SIZES[size]
    page = browser.new_page(viewport=viewport)
    page.goto(space + THEMES[theme])
    page.get_by_role("tab", name="Compare", exact=True).click()
    box = page.locator(f"#{MODELS_ID} input")
    for model in MODELS[:2]:
        box.click()
        page.get_by_role("option", name=model, exact=True).click()
    page.keyboard.press("Escape")  # the list closed, as a reader leaves it
    page.wait_for_function(f"() => document.querySelectorAll('#{VIEW_ID} table.compare-table').length >= 2",
                           timeout=STATE_CEILING_MS)
    table = page.locator(f"#{VIEW_ID} table.compare-table").first
    assert table.is_visible()
    heads = table.locator("tr").first.inner_text()
    assert MODELS[0] in heads and MODELS[1] in heads and MODELS[2] not in heads
    assert "0.300 [0.280, 0.320]" in table.inner_text()  # Alpha's BLEU and CI beside Beta's
    assert "p" in page.locator(f"#{VIEW_ID}").inner_text() and "Paired tests on" in page.locator(
        f"#{VIEW_ID}").inner_text()
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"compare_{size}_{theme}.png"), full_page=False)
    assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]

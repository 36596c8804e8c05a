"""`rexrank explore` in Chromium at 1440x900 and 390x844 (issue 53): sort by the difference of two runs from the
form, open the worst study, step to the next one in that order; the page never scrolls sideways, the reports sit side
by side on a desktop and one above the other on a phone, and hostile report text is shown as text (no script runs).

Screenshots of the list and of a study go to ``$REXRANK_SHOTS`` (default /tmp/explore_shots) for a person to look at.
One server (uvicorn on 127.0.0.1, a thread of this process) for the module, stopped by it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from leaderboard_helpers import DESKTOP, PHONE, LoopbackServer
from test_explore import HOSTILE, runs  # noqa: F401 - runs: the two scored runs (a fixture)

pytestmark = [pytest.mark.browser, pytest.mark.slow]
SHOTS = Path(os.environ.get("REXRANK_SHOTS", "/tmp/explore_shots"))


@pytest.fixture(scope="module")
def base(runs):  # noqa: F811 - the fixture imported above

    from rexrank.explore.server import build

    root, _ = runs
    cwd = os.getcwd()
    os.chdir(root)  # the runs name their inputs relative to the folder they were scored in
    try:
        _, _, app = build([root / "shifted", root / "hostile"], cache_dir=root / "cache")
    finally:
        os.chdir(cwd)
    server = LoopbackServer(app, "the explorer to listen")
    try:
        yield server.base
    finally:
        server.stop()


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1440x900", "390x844"])
def test_sort_open_the_worst_study_and_step_to_the_next(browser, base, viewport):
    SHOTS.mkdir(parents=True, exist_ok=True)
    size = f"{viewport['width']}x{viewport['height']}"
    page = browser.new_page(viewport=viewport)
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    try:
        page.goto(base)
        page.select_option("select[name=sort]", "bleu2@1-0")
        page.select_option("select[name=dir]", "asc")
        page.click("form.explore-controls button[type=submit]")
        page.wait_for_url("**/?sort=bleu2%401-0&dir=asc*")
        assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
        page.screenshot(path=str(SHOTS / f"list-{size}.png"), full_page=False)
        rows = page.locator("#studies tbody th a")
        first, second = rows.nth(0).inner_text(), rows.nth(1).inner_text()
        rows.nth(0).click()
        page.wait_for_selector("h2:has-text('Study')")
        assert page.locator("h2").first.inner_text() == f"Study {first}"
        assert "1 of 31 in this order" in page.inner_text("nav.pager")
        assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
        tops = page.eval_on_selector_all(".report", "els => els.map(e => e.getBoundingClientRect().top)")
        assert len(tops) == 3
        if viewport is DESKTOP:
            assert max(tops) - min(tops) < 2, tops  # side by side
        else:
            assert tops == sorted(tops) and tops[1] - tops[0] > 40, tops  # one above the other
        shown = page.locator(".report").nth(2).inner_text()
        assert '<script>alert("x")</script>' in shown and "\uff1cscript\uff1e" in shown
        page.screenshot(path=str(SHOTS / f"study-{size}.png"), full_page=False)
        page.locator("a[rel=next]").first.click()
        page.wait_for_selector(f"h2:has-text('Study {second}')")
        assert "2 of 31 in this order" in page.inner_text("nav.pager")
    finally:
        page.close()
    assert dialogs == [], "a script of the report text ran"
    assert HOSTILE.startswith("<script>")

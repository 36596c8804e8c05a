"""The board pages (``rexrank.leaderboard.pages``) in Chromium: every view at 1440x900 and 390x844, light and dark
(issue 48 points 4 and 5).

- No word is broken inside: in every header and value cell (and caption), each word's text lies on one line (a
  DOM Range over the word gives client rects on one line only), and a value cell (a number with its interval) is
  one line.
- axe-core (the npm package, pinned in scripts/setup_browser.sh, installed in the gitignored .browser/) injected by
  Playwright finds no serious or critical violation on any view (the plots and a model's per-study view included);
  the plots' SVG text, whose contrast axe leaves undecided, is measured against what is drawn under it.
- Models ticked in a table's rows open Compare on them.

One server (uvicorn on 127.0.0.1, a thread of this process) and one browser for the module, stopped by it.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import REPO, skip_unless_ci
from leaderboard_helpers import (
    DESKTOP,
    PHONE,
    LoopbackServer,
    add_kept_results,
    wait_until,
)

from rexrank.leaderboard.records import DATASETS, TRACKS

pytestmark = [pytest.mark.browser, pytest.mark.slow]

AXE_SCRIPT = REPO / ".browser" / "node_modules" / "axe-core" / "axe.min.js"
COMPARED = ("Alpha", "Beta", "Gamma", "MAIRA-2")
VIEWS = ([("overview", "")] + [(f"{d} {t}", f"?tab={d}&track={t}") for d in DATASETS for t in TRACKS]
         + [("model", "?tab=models&model=MAIRA-2"),
            ("compare", "?tab=compare" + "".join(f"&compare={m}" for m in COMPARED)),
            ("about", "?tab=about"),
            ("plots overview", "plots"), ("plots iu_xray findings", "plots?tab=iu_xray"),
            ("studies", f"studies?model={COMPARED[0]}&dataset=iu_xray&track=findings")])

# For every word of every table cell and caption: the distinct lines its text lies on (rect tops more than 3 px
# apart), and for every value cell the lines of its whole text. A word in one text node is what is measured: the
# pages keep a word with a break inside in one span (html.words), so a word never spans two text nodes.
BROKEN_WORDS = """() => {
  const lines = (range) => {
    const tops = [...range.getClientRects()].filter(r => r.width > 0 && r.height > 0)
      .map(r => r.top).sort((a, b) => a - b);
    return tops.filter((top, k) => k === 0 || top - tops[k - 1] > 3).length;
  };
  const found = [];
  for (const cell of document.querySelectorAll("th, td, caption")) {
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const match of node.data.matchAll(/\\S+/g)) {
        const range = document.createRange();
        range.setStart(node, match.index);
        range.setEnd(node, match.index + match[0].length);
        if (lines(range) > 1) found.push(`${cell.tagName}: "${match[0]}" in "${cell.textContent.trim()}"`);
      }
    }
    if (cell.tagName === "TD" && cell.textContent.trim()) {
      const range = document.createRange();
      range.selectNodeContents(cell);
      if (lines(range) > 1) found.push(`TD on ${lines(range)} lines: "${cell.textContent.trim()}"`);
    }
  }
  return found;
}"""

SERIOUS = """async () => {
  const result = await axe.run(document, {resultTypes: ["violations"]});
  return result.violations.filter(v => v.impact === "serious" || v.impact === "critical")
    .map(v => ({id: v.id, impact: v.impact, help: v.help, nodes: v.nodes.slice(0, 3).map(n => n.target.join(" "))}));
}"""

# axe-core leaves the colour contrast of an SVG's text "incomplete" (needs review: the text is inside an image, its
# background undecided), never a violation: the plots' text is measured here, by axe's rule (WCAG's 4.5:1), against
# what is drawn under it (the page, and every rect whose box holds the text's centre, blended by its opacity).
SVG_TEXT_CONTRAST = """() => {
  const channels = (color) => (color.match(/[\\d.]+/g) || []).map(Number);
  const linear = (v) => (v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
  const luminance = ([r, g, b]) => 0.2126 * linear(r) + 0.7152 * linear(g) + 0.0722 * linear(b);
  const over = (top, alpha, under) => under.map((v, k) => top[k] * alpha + v * (1 - alpha));
  const page = channels(getComputedStyle(document.body).backgroundColor);
  const low = [];
  for (const svg of document.querySelectorAll("svg")) {
    const rects = [...svg.querySelectorAll("rect")].map(r => [r, r.getBBox()]);
    for (const text of svg.querySelectorAll("text")) {
      const box = text.getBBox(), x = box.x + box.width / 2, y = box.y + box.height / 2;
      let under = page;
      for (const [rect, r] of rects) {
        const style = getComputedStyle(rect), fill = channels(style.fill);
        if (fill.length >= 3 && r.x <= x && x <= r.x + r.width && r.y <= y && y <= r.y + r.height)
          under = over(fill, +style.fillOpacity * (fill[3] ?? 1), under);
      }
      const style = getComputedStyle(text);
      const ink = over(channels(style.fill), +style.fillOpacity, under);
      const [light, dark] = [luminance(ink), luminance(under)].sort((a, b) => b - a);
      const ratio = (light + 0.05) / (dark + 0.05);
      if (ratio < 4.5) low.push(`"${text.textContent}" ${ratio.toFixed(2)}:1`);
    }
  }
  return low;
}"""


def _pinned_axe_version() -> str:
    return re.search(r"^AXE_VERSION=(\S+)$", (REPO / "scripts" / "setup_browser.sh").read_text(), re.M).group(1)


@pytest.fixture(scope="module")
def axe_script() -> Path:
    """axe-core's script, the version setup_browser.sh pins; missing: a skip here, a failure in CI."""
    import json

    package = AXE_SCRIPT.parent / "package.json"
    if not AXE_SCRIPT.exists() or json.loads(package.read_text())["version"] != _pinned_axe_version():
        skip_unless_ci(f"axe-core {_pinned_axe_version()} is not installed in .browser/: `make setup-browser` "
                       "installs it (scripts/setup_browser.sh)")
    return AXE_SCRIPT



@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """The pages' app on 127.0.0.1 over the published board plus three models with kept per-study values."""

    from rexrank.leaderboard.pages.routes import board_app
    from rexrank.leaderboard.published import seed_store
    from rexrank.leaderboard.store import Store
    from rexrank.leaderboard.views import Views

    store = Store(tmp_path_factory.mktemp("pages-browser") / "board.sqlite")
    seed_store(store)
    add_kept_results(store, COMPARED[:3])
    server = LoopbackServer(board_app(Views(store)), "the pages' server to listen")
    try:
        yield server.base
    finally:
        server.stop()
        store.close()


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1440x900", "390x844"])
@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_every_view_has_no_word_broken_and_no_serious_axe_violation(browser, base, axe_script, viewport, scheme):
    """Points 4 and 5: every view (overview, each dataset x track, a model page, Compare with paired tests,
    About, the plots of the overview and of a table, a model's per-study view): no word of a header, value cell or
    caption on two lines, no value cell on two lines (the word check runs in light: the scheme changes no width),
    axe-core finds no serious or critical violation, and the plots' SVG text, which axe leaves undecided, has
    4.5:1 contrast against what is under it."""
    page = browser.new_page(viewport=viewport, color_scheme=scheme)
    broken, violations, faint = {}, {}, {}
    try:
        for name, query in VIEWS:
            assert page.goto(base + query).status == 200, name  # the view itself, not its one-line refusal
            assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"], name
            if scheme == "light":
                found = page.evaluate(BROKEN_WORDS)
                if found:
                    broken[name] = found[:5]
            page.add_script_tag(path=str(axe_script))
            found = page.evaluate(SERIOUS)
            if found:
                violations[name] = found
            found = page.evaluate(SVG_TEXT_CONTRAST)
            if found:
                faint[name] = found[:5]
    finally:
        page.close()
    assert broken == {}, broken
    assert violations == {}, violations
    assert faint == {}, faint


def test_models_ticked_in_a_tables_rows_open_compare(browser, base):
    """Point 4: tick two rows of a dataset table, press the form's button: Compare on those two, in that order.
    A search as typed that hides a ticked row keeps it ticked in the form (board.js), so models found by two
    searches can be compared."""
    page = browser.new_page(viewport=PHONE)
    try:
        page.goto(base + "?tab=iu_xray")
        page.get_by_label("Compare MAIRA-2", exact=True).check()
        page.locator("#board-search").press_sequentially("alpha")
        wait_until(lambda: page.locator("#board-live tbody tr").count() == 1, "the search's one row")
        assert page.locator("#compare-pick input:checked").evaluate_all("boxes => boxes.map(b => b.value)") == [
            "MAIRA-2"]  # hidden by the search, still ticked, in the form
        page.get_by_label("Compare Alpha", exact=True).check()
        page.get_by_role("button", name="Compare the ticked models").click()
        wait_until(lambda: page.evaluate("new URLSearchParams(location.search).get('tab')") == "compare",
                   "the Compare page")
        # The form sends the boxes in the page's order (the table's), which is the order shown.
        picked = page.evaluate("new URLSearchParams(location.search).getAll('compare')")
        assert sorted(picked) == ["Alpha", "MAIRA-2"]
        heads = page.locator("table").first.locator("thead th").all_inner_texts()
        assert [h.removesuffix(" (published)") for h in heads[1:]] == picked
    finally:
        page.close()


# -- what the gradio board's browser tests checked, on the pages (issue 48 point 5; docs/board-tests-map.md) -------

HEADS = "(n) => [...document.querySelectorAll('#board-live thead th')].slice(0, n).map(th => { const r = " \
        "th.getBoundingClientRect(); return [th.textContent.trim(), r.left, r.right]; })"


def test_the_ranking_is_on_the_first_screen_at_every_width(browser, base):
    """Issue 14 points 4, 6 and 7 on the pages: Rank, Model and 1/RadCliQ-v1 on screen without scrolling at
    1440x900 and 390x844, the first row on the first screen and the filters folded above the table; every view's link on screen (the pills wrap: no view behind a sideways scroll); at
    1920x1080 the overview's table fills its box; the model page's cells show their whole text (the Split column
    showed "validat")."""
    for viewport in (DESKTOP, PHONE):
        page = browser.new_page(viewport=viewport)
        try:
            page.goto(base + "?tab=iu_xray")
            heads = page.evaluate(HEADS, 3)
            assert [h.split()[0] for h, _, _ in heads] == ["Rank", "Model", "1/RadCliQ-v1"], heads
            assert all(left >= 0 and right <= viewport["width"] for _, left, right in heads), (viewport, heads)
            row = page.locator("#board-live tbody tr").first.bounding_box()
            assert row["y"] + row["height"] <= viewport["height"], (viewport, row)
            assert page.locator("form.controls details").evaluate("d => d.open") is False
            views = page.locator("nav.views a")
            assert views.count() >= 9 and all(
                0 <= box["x"] and box["x"] + box["width"] <= viewport["width"]
                for box in (views.nth(k).bounding_box() for k in range(views.count()))), viewport
            if viewport is DESKTOP:
                assert row["y"] < 500, row
        finally:
            page.close()
    page = browser.new_page(viewport={"width": 1920, "height": 1080})
    try:
        page.goto(base)
        table, box = page.evaluate("() => [document.querySelector('#board-live table'), "
                                   "document.querySelector('#board-live .table-box')].map(e => e.clientWidth)")
        assert table >= 0.95 * box, (table, box)
        page.goto(base + "?tab=models&model=MAIRA-2")
        cut = page.evaluate("() => [...document.querySelectorAll('#board-live td, #board-live th')]"
                            ".filter(c => c.scrollWidth > c.clientWidth + 1).map(c => c.textContent)")
        assert cut == [], cut
    finally:
        page.close()


def test_the_keyboard_reaches_and_opens_every_view(browser, base):
    """Issue 24 point 9 on the pages: every view is a link, reached with Tab in the page's order and opened with
    Enter (the gradio board added arrow keys to its tab buttons); Back returns to the view before."""
    page = browser.new_page(viewport=DESKTOP)
    try:
        page.goto(base)
        names = [a.strip() for a in page.locator("nav.views a").all_inner_texts()]
        reached = []
        for _ in range(40):
            page.keyboard.press("Tab")
            reached.append(page.evaluate("document.activeElement.closest('nav.views') ? "
                                         "document.activeElement.textContent.trim() : null"))
            if reached[-1] == "IU-Xray":
                break
        assert [n for n in reached if n] == names[:names.index("IU-Xray") + 1], reached
        page.keyboard.press("Enter")
        page.wait_for_url(base + "?tab=iu_xray")
        assert page.locator("caption").first.inner_text().startswith("IU-Xray · Findings")
        page.go_back()
        page.wait_for_url(base)
    finally:
        page.close()


def test_about_links_jump_to_the_meta_eval_rows_and_a_published_one_reaches_an_open_page(browser, tmp_path):
    """Issue 27 point 4 on the pages: a page opened before any meta-evaluation shows the empty state; one published
    while it is open appears at the page's poll; each metric's link points at its row, and following it brings the
    row on screen."""
    import json

    from test_leaderboard_log import _meta_eval_json

    from rexrank.leaderboard.pages.routes import board_app
    from rexrank.leaderboard.store import Store
    from rexrank.leaderboard.views import META_EVAL_EMPTY, Views

    store = Store(tmp_path / "board.sqlite")
    server = LoopbackServer(board_app(Views(store), poll_s=1), "the pages' server to listen")
    try:
        page = browser.new_page(viewport=DESKTOP)
        page.goto(server.base + "?tab=about")
        assert META_EVAL_EMPTY in page.locator("#board-live").inner_text()
        store.add_meta_eval(json.loads(_meta_eval_json(tmp_path / "meta_eval.json").read_text()))
        page.wait_for_selector("#board-live #meta-radgraph", state="attached")
        assert META_EVAL_EMPTY not in page.locator("#board-live").inner_text()
        ids = page.evaluate("() => [...document.querySelectorAll('#board-live [id^=meta-]')].map(e => e.id)")
        hrefs = page.evaluate("() => [...document.querySelectorAll('#board-live a[href^=\"#meta-\"]')]"
                              ".map(a => a.getAttribute('href'))")
        assert sorted(ids) == ["meta-bleu2", "meta-radgraph"] and sorted(hrefs) == ["#meta-bleu2", "#meta-radgraph"]
        page.locator('#board-live a[href="#meta-radgraph"]').click()
        page.wait_for_function("() => { const r = document.getElementById('meta-radgraph').parentElement"
                               ".getBoundingClientRect(); return r.top >= 0 && r.bottom <= innerHeight; }")
        assert page.url.endswith("#meta-radgraph")
        page.close()
    finally:
        server.stop()
        store.close()


# Searches a visitor may type, hostile and look-alike ones among them: each is read by board.js (ASCII: the
# rule's data, no request) or by the server (anything else), and must show the server's rows for it.
SEARCHES = ["maira 2", "MAIRA-2", "MAlRA2", "ma1ra_2", "m a i r a 2", "maira|medgemma", "maira, med;gemma",
            "0", "O", "1", "l", "I", "i", "|", ",,,", "   ", "\t maira", "a\x1cb", "al pha", "alpha beta",
            "ALPHA-beta gamma", "<script>alert(1)</script>", "%", "%25", "+", "a+b", "*", "~", "ma*ra", "x~y",
            "'\"&;", "inst 3", "example lab", "zzzz", "chex agent", "chexagent|", "| maira", "\\", "`id`",
            "MАIRA", "ＭAIRA", "maira\u20112", "maira\u22122", "Ꮇed", "ǀ", "méd", "x" * 201, "medgemma ",
            "  med  gemma  ", "rad;;;", "Med\u200bGemma", "\x7f", "a\x0bb", "mai\x1fra"]
# The rows shown: each row header's text, spaces collapsed.
ROW_NAMES = ("() => [...document.querySelectorAll('#board-live tbody th[scope=row]')]"
             ".map(th => th.textContent.replace(/\\s+/g, ' ').trim())")


def _poll(check, seconds: float = 10.0):
    import time

    deadline = time.monotonic() + seconds
    while not check() and time.monotonic() < deadline:
        time.sleep(0.05)
    return check()


def test_search_as_typed_shows_the_servers_rows_for_hostile_and_look_alike_searches(browser, base):
    """Point 1 (one owner of the search rule): for every search above, the rows board.js shows and the address it
    writes are the server's own answer for that search (/live: its rows, X-Board-Query); a search of ASCII
    characters that finds rows sends no request (board.js reads it with the rule's data)."""
    from urllib.parse import urlencode

    import httpx
    from test_board_pages import Page

    page = browser.new_page(viewport=DESKTOP)
    mismatched, requested = {}, []
    try:
        page.goto(base + "?tab=iu_xray")
        box = page.locator("#board-search")
        for text in SEARCHES:
            page.evaluate("performance.clearResourceTimings()")
            box.fill(text)
            typed = box.input_value()  # what the box holds (a search box drops line breaks)
            asked = urlencode([("tab", "iu_xray")] + [("q", typed)] * bool(typed))
            server = httpx.get(base + "live?" + asked, timeout=30)
            parsed = Page(server.text)
            want = ([" ".join(cell[2].split()) for row in parsed.tables[0]["rows"][1:] for cell in row
                     if cell[0] == "th"] if parsed.tables else [])
            # The address: the server's canonical query; a search too long for a link is kept as typed (the
            # page then says it was left out).
            address = "?" + (server.headers["x-board-query"] if len(typed) <= 200 else asked)
            if not _poll(lambda: page.evaluate(ROW_NAMES) == want and page.evaluate("location.search") == address):
                mismatched[text] = (page.evaluate(ROW_NAMES), want, page.evaluate("location.search"), address)
            sent = page.evaluate("performance.getEntriesByType('resource').map(r => r.name)"
                                 ".filter(n => n.includes('/live'))")
            if typed.isascii() and len(typed) <= 200 and want:
                requested += [(text, url) for url in sent]
    finally:
        page.close()
    assert len(SEARCHES) >= 50 and mismatched == {}, mismatched
    assert requested == []


def test_typed_searches_are_history_entries_that_back_and_forward_return_to(browser, base):
    """Point 3: typing replaces the address; a search that settled keeps its own entry, so Back returns to the
    search before and then to the table without one, and Forward again, each with its rows and the box's text."""
    page = browser.new_page(viewport=DESKTOP)
    try:
        page.goto(base + "?tab=iu_xray")
        every, entries = page.evaluate(ROW_NAMES), page.evaluate("history.length")
        box = page.locator("#board-search")
        box.press_sequentially("alpha")
        assert _poll(lambda: page.evaluate("location.search") == "?tab=iu_xray&q=alpha")
        alpha = page.evaluate(ROW_NAMES)
        page.wait_for_timeout(1200)  # the search settles (board.js SETTLE_MS)
        box.fill("")
        box.press_sequentially("maira")
        assert _poll(lambda: page.evaluate("location.search") == "?tab=iu_xray&q=maira")
        maira = page.evaluate(ROW_NAMES)
        assert len(every) > len(alpha) == 1 and 1 <= len(maira) < len(every) and maira != alpha
        assert page.evaluate("history.length") == entries + 2  # "alpha", "maira" (the typing between replaced)
        for step, text, rows in (("back", "alpha", alpha), ("back", "", every), ("forward", "alpha", alpha),
                                 ("forward", "maira", maira)):
            page.go_back() if step == "back" else page.go_forward()
            address = "?tab=iu_xray" + (f"&q={text}" if text else "")
            assert _poll(lambda: page.evaluate("location.search") == address and box.input_value() == text
                         and page.evaluate(ROW_NAMES) == rows), (step, text, page.evaluate("location.search"))
    finally:
        page.close()


def test_a_changed_board_refreshes_rows_filter_choices_and_last_updated_without_a_reload(browser, tmp_path):
    """Point 2: at its next poll (1 s here, 10 s served) an open page shows a new result in its rows (through the
    search being typed), the new institution among the filter choices and the board's new "Last updated", while
    the box keeps its text and focus and the page is not reloaded."""
    import time

    from leaderboard_helpers import add_scored_result

    from rexrank.leaderboard.pages import render
    from rexrank.leaderboard.pages.routes import board_app
    from rexrank.leaderboard.published import seed_store
    from rexrank.leaderboard.store import Store
    from rexrank.leaderboard.views import Views

    store = Store(tmp_path / "board.sqlite")
    seed_store(store)
    views = Views(store)
    server = LoopbackServer(board_app(views, poll_s=1), "the pages' server to listen")
    try:
        page = browser.new_page(viewport=DESKTOP)
        page.goto(server.base + "?tab=iu_xray")
        # marks: the page is not reloaded, and "Last updated" is written again (the same minute reads the same)
        page.evaluate("window.sameDocument = true; document.getElementById('board-updated').textContent = 'stale'")
        page.locator("#board-search").press_sequentially("fresh")
        assert "Fresh Institute" not in page.locator("#board-controls").inner_text()
        time.sleep(1.1)
        add_scored_result(store, "Fresh Model", bleu=0.4, institution="Fresh Institute")
        # (unranked: scored on BLEU-2 alone, its cell says so)
        assert _poll(lambda: [n.split(" (")[0] for n in page.evaluate(ROW_NAMES)] == ["Fresh Model"], 15), \
            page.evaluate(ROW_NAMES)
        wait_until(lambda: page.locator("#board-controls input[value='Fresh Institute']").count() == 1,
                   "the new institution among the filter choices")
        wait_until(lambda: page.locator("#board-updated").inner_text() == render.updated(views), "Last updated")
        assert page.evaluate("document.activeElement.id") == "board-search"
        assert page.locator("#board-search").input_value() == "fresh"
        assert page.evaluate("window.sameDocument === true")
        page.close()
    finally:
        server.stop()
        store.close()


def test_a_link_to_another_view_opens_it_in_the_page_and_back_and_forward_return(browser, base):
    """Point 5's view switch: a link to another view (the navigation's MIMIC-CXR) is fetched and shown in the page
    (board.js: no new document), at its own address, title and current link; its search works as on a page
    loaded whole; Back returns to that view before the search, then to the overview, Forward to MIMIC-CXR again."""
    page = browser.new_page(viewport=PHONE)
    caption = "() => document.querySelector('caption').textContent"
    try:
        page.goto(base)
        page.evaluate("window.sameDocument = true")
        page.get_by_role("navigation", name="Board views").get_by_role("link", name="MIMIC-CXR").click()
        assert _poll(lambda: page.evaluate("location.search") == "?tab=mimic_cxr")
        assert _poll(lambda: page.evaluate(caption).startswith("MIMIC-CXR · Findings"))
        assert page.title().startswith("MIMIC-CXR · Findings")
        assert page.locator("nav a[aria-current=page]").first.inner_text() == "MIMIC-CXR"
        page.locator("#board-search").press_sequentially("maira 2")
        assert _poll(lambda: [n.split(" ")[0] for n in page.evaluate(ROW_NAMES)] == ["MAIRA-2"])
        for step, address, first in (("back", "?tab=mimic_cxr", "MIMIC-CXR"), ("back", "", "Overview"),
                                     ("forward", "?tab=mimic_cxr", "MIMIC-CXR")):
            page.go_back() if step == "back" else page.go_forward()
            assert _poll(lambda: page.evaluate("location.search") == address
                         and page.evaluate(caption).startswith(first)), (step, page.evaluate("location.search"))
        assert page.locator("#board-search").input_value() == ""
        assert page.evaluate("window.sameDocument === true")
    finally:
        page.close()


# Row headers whose content is wider than the cell (it would spill over the next cell's values).
OVERFLOWING = """() => [...document.querySelectorAll("th[scope=row]")]
  .filter(th => th.scrollWidth > th.clientWidth + 1).map(th => th.textContent.trim())"""


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["1440x900", "390x844"])
def test_no_row_header_spills_over_the_values_beside_it(browser, base, viewport):
    """Point 7 (a phone): a long name kept whole ("CheXpertPlus-CheX-MIMIC") widens its column instead of being
    drawn over the next cell (the screenshots showed it over the values at 390 px)."""
    page = browser.new_page(viewport=viewport)
    spilled = {}
    try:
        for name, query in VIEWS:
            page.goto(base + query)
            found = page.evaluate(OVERFLOWING)
            if found:
                spilled[name] = found[:3]
    finally:
        page.close()
    assert spilled == {}, spilled


def test_the_menus_tables_are_read_ahead_and_one_of_an_older_board_is_asked_for_again(browser, tmp_path):
    """Point 5's view switch at a static page's speed: once the page is idle, the tables its menus link to (the
    overview, the datasets, the other track: not Models, Compare, About or gradio's pages) are fetched ahead, and a
    click on one shows it with no request of its own. After the board changed (the poll learnt of it), a table read
    ahead at the older generation is asked for again and shows the new row."""
    from leaderboard_helpers import add_scored_result

    from rexrank.leaderboard.pages.routes import board_app
    from rexrank.leaderboard.published import seed_store
    from rexrank.leaderboard.store import Store
    from rexrank.leaderboard.views import Views

    store = Store(tmp_path / "board.sqlite")
    seed_store(store)
    server = LoopbackServer(board_app(Views(store), poll_s=1), "the pages' server to listen")
    asked: list[str] = []
    try:
        page = browser.new_page(viewport=DESKTOP)
        page.on("request", lambda request: asked.append(request.url.removeprefix(server.base)))
        page.goto(server.base)
        tables = {f"?tab={d}" for d in DATASETS} | {f"?track={t}" for t in TRACKS[1:]}
        # (a Playwright call in the check: the sync API delivers the request events while it runs one)
        assert _poll(lambda: page.evaluate("1") and tables <= set(asked)), asked
        assert not [u for u in asked if re.search(r"tab=(models|compare|about|submit|arena)", u)], asked
        page.evaluate("window.sameDocument = true")
        asked.clear()
        page.get_by_role("navigation", name="Board views").get_by_role("link", name="MIMIC-CXR").click()
        assert _poll(lambda: page.evaluate("location.search") == "?tab=mimic_cxr")
        assert page.locator("caption").first.inner_text().startswith("MIMIC-CXR")
        page.evaluate("1")
        assert "?tab=mimic_cxr" not in asked, asked
        # The board changes; the open page learns it at its next poll (its "Last updated" is written again).
        page.evaluate("document.getElementById('board-updated').textContent = 'stale'")
        add_scored_result(store, "Fresh Model", bleu=0.4, dataset="iu_xray")
        assert _poll(lambda: page.locator("#board-updated").inner_text() != "stale", 15)
        asked.clear()
        # From the keyboard (no pointer over the link: the click's own rule, not the hover's, picks the page)
        page.get_by_role("navigation", name="Board views").get_by_role("link", name="IU-Xray").focus()
        page.keyboard.press("Enter")
        caption = "() => document.querySelector('caption').textContent"
        assert _poll(lambda: page.evaluate(caption).startswith("IU-Xray"))
        # shown as it is now, not as it was read ahead (the poll would put the row in a second later)
        assert any(n.startswith("Fresh Model") for n in page.evaluate(ROW_NAMES)), page.evaluate(ROW_NAMES)
        assert "?tab=iu_xray" in asked and page.evaluate("window.sameDocument === true")
        page.close()
    finally:
        server.stop()
        store.close()

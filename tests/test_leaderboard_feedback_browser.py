"""Issue 37 points 3 and 4 in both themes at both sizes: a rejected submission's message where the eye is (on
screen under the button, a live region, readable), and search as a person types ("maira 2" finds MAIRA-2; several
terms at once). Its own Space: the four rejections count against the anonymous quota of its store, not the other
browser tests' (test_leaderboard_browser.py checks the light pages)."""

from __future__ import annotations

import pytest

from leaderboard_helpers import (DESKTOP, PHONE, STATE_CEILING_MS, choose_predictions, iu_predictions, module_space,
                                 wait_until)
from rexrank.leaderboard import board

IU = "iu_xray-findings"

pytestmark = [pytest.mark.browser, pytest.mark.slow]


space = module_space("feedback", worker=False)


# WCAG's contrast ratio of two CSS rgb()/rgba() colours (alpha ignored: the colours read are opaque here).
_CONTRAST = """(el) => {
  const rgb = (c) => c.match(/[\\d.]+/g).slice(0, 3).map(Number);
  const lum = (c) => { const [r, g, b] = rgb(c).map((v) => { v /= 255;
    return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; }); return 0.2126 * r + 0.7152 * g + 0.0722 * b; };
  let bg = null;
  for (let e = el; e && !bg; e = e.parentElement) {
    const c = getComputedStyle(e).backgroundColor;
    if (c && !c.startsWith('rgba(0, 0, 0, 0)') && c !== 'transparent') bg = c;
  }
  bg = bg || getComputedStyle(document.body).backgroundColor;
  const [a, b] = [lum(getComputedStyle(el).color), lum(bg)].sort((x, y) => y - x);
  return (a + 0.05) / (b + 0.05);
}"""


def _row_count(page, elem_id: str) -> int:
    page.wait_for_selector(f"#{elem_id} [role=grid]", state="attached", timeout=STATE_CEILING_MS)
    return int(page.get_attribute(f"#{elem_id} [role=grid]", "aria-rowcount")) - 1  # the header row too


def _search(page, text: str) -> None:
    box = page.locator(f"#search-{IU} input, #search-{IU} textarea").first
    if box.input_value():
        box.select_text()
        box.press("Backspace")
    box.press_sequentially(text)


@pytest.mark.parametrize("theme", ["light", "dark"])
@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_feedback_and_search_in_both_themes(browser, space, tmp_path, viewport, theme):
    url, store, _ = space
    page = browser.new_page(viewport=viewport)
    try:
        page.goto(url + ("?__theme=dark" if theme == "dark" else ""), wait_until="load")
        page.wait_for_selector("#overview-table div[role=row]", state="attached", timeout=STATE_CEILING_MS)
        dark = page.evaluate("() => document.body.classList.contains('dark') || "
                             "!!document.querySelector('.dark')")
        assert dark == (theme == "dark")

        # Point 4: as a person types.
        page.get_by_role("tab", name="IU-Xray", exact=True).click()
        keys = {board.search_key(name) for name in board.numeric_table(store, "iu_xray", "findings")["model"]}
        for text, names in (("maira 2", {"MAIRA-2"}), ("MAIRA-2|cvt2distilgpt2 iu", {"MAIRA-2", "Cvt2distilgpt2-IU"})):
            assert {board.search_key(n) for n in names} <= keys  # the published board has them
            _search(page, text)
            wait_until(lambda: _row_count(page, f"table-{IU}") == len(names), f"{len(names)} rows for {text!r}")
            shown = page.locator(f"#table-{IU} div[role=row]").all_inner_texts()
            assert all(any(f"\n{n}\n" in f"\n{row}\n" for row in shown) for n in names), (text, shown)
            cell = page.locator(f"#table-{IU} div[role=row] a, #table-{IU} div[role=row] span").filter(
                has_text="MAIRA-2").first
            assert cell.evaluate(_CONTRAST) >= 4.5  # readable in this theme

        # Point 3: the rejection under the button, on screen, announced, readable.
        page.get_by_role("tab", name="Submit", exact=True).click()
        preds = iu_predictions(tmp_path / "bad.json", corrupt={"not-a-study": "x"})
        choose_predictions(page, preds)
        page.locator("#submit-name textarea, #submit-name input").first.fill(f"Feedback {theme} {viewport['width']}")
        page.locator("#submit-institution textarea, #submit-institution input").first.fill("QA")
        page.locator("#submit-button").click()
        status = page.locator("#submit-status")
        status.get_by_text("Submission rejected", exact=False).wait_for(timeout=STATE_CEILING_MS)
        box, height = status.bounding_box(), viewport["height"]
        assert box and 0 <= box["y"] and box["y"] + min(box["height"], 60) <= height, (box, height)
        assert status.get_attribute("role") == "status" and status.get_attribute("aria-live") == "polite"
        words = status.get_by_text("Submission rejected", exact=False).first
        assert words.evaluate(_CONTRAST) >= 4.5, theme
    finally:
        page.close()

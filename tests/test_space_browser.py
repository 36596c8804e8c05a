"""The Space as a visitor meets it, in Chromium (issue 48 point 2): the board's pages at the root URL, the Submit
form and the Arena on gradio's pages of their own, links between them both ways; the Submit form's feedback at
1440x900 and 390x844, light and dark (a rejection under the button, on screen, a live region, readable), an accepted
submission clearing the form and reaching the board, and a console without a message.

One Space (``serve``: gradio launched, the pages in front) and one browser for the module; the Arena's page has a
Space of its own. The board's views themselves: tests/test_board_pages.py and tests/test_board_pages_browser.py.
"""

from __future__ import annotations

import pytest

from leaderboard_helpers import (DESKTOP, PHONE, STATE_CEILING_MS, choose_predictions, iu_predictions, record_console,
                                 running_space, wait_until)

pytestmark = [pytest.mark.browser, pytest.mark.slow]

THEMES = {"light": "", "dark": "?__theme=dark"}  # gradio's own theme switch (the pages follow the system's)
# WCAG's contrast ratio of an element's text on the first opaque background behind it.
CONTRAST = """(el) => {
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


@pytest.fixture(scope="module")
def space(tmp_path_factory):
    # Every test here submits from one client: quotas above what the module sends (the quotas' own tests:
    # test_leaderboard_submissions.py).
    with running_space(tmp_path_factory.mktemp("space-browser") / "board.sqlite", rate_limit=100,
                       anonymous_limit=100) as running:
        yield running


def _field(page, elem_id: str):
    return page.locator(f"#{elem_id} textarea, #{elem_id} input").first


def _accepted(page) -> None:
    """Until the status says the submission was accepted ("Submission #N queued", or already "running"/"done": the
    status follows the job, and a quick worker may finish it before the page is read)."""
    import re

    from rexrank.leaderboard.views import QUEUED

    answer = re.compile(f"{re.escape(QUEUED)}|Submission rejected")  # either answer ends the wait
    page.locator("#submit-status").get_by_text(answer).first.wait_for(timeout=STATE_CEILING_MS)
    assert "rejected" not in page.locator("#submit-status").inner_text(), page.locator("#submit-status").inner_text()


def _submit(page, preds, name: str, institution: str) -> None:
    """Fill and send the Submit page's form as a person would (the file through its button's dialog)."""
    choose_predictions(page, preds)
    _field(page, "submit-name").fill(name)
    _field(page, "submit-institution").fill(institution)
    page.locator("#submit-button").click()


def test_the_root_url_is_the_board_and_links_reach_submit_and_back(browser, space):
    """The Space's root URL opens the board's overview (its rows in the page); the pages' Submit link opens gradio's
    Submit page, whose navigation bar and link lead back to the board; Back and Forward move between them; a link
    of the gradio board to its Submit tab (``/?tab=submit``) opens the Submit page."""
    url = space[0]
    page = browser.new_page(viewport=DESKTOP)

    def follow(link) -> str:
        with page.expect_navigation(url=lambda to: not to.endswith("?tab=submit")):
            link.click()
        return page.url

    try:
        page.goto(url)
        assert page.locator("#board-live table caption").inner_text().startswith("Overview · Findings")
        assert follow(page.get_by_role("link", name="Submit ↗")) == url + "submit"
        page.locator("#submit-button").wait_for()
        assert follow(page.get_by_role("link", name="Board", exact=True)) == url  # gradio's navigation bar
        page.locator("#board-live table").wait_for()
        with page.expect_navigation():
            page.go_back()
        assert page.url == url + "submit"
        page.locator("#submit-button").wait_for()
        page.goto(url + "?tab=submit")
        assert page.url == url + "submit"
        back = page.locator("#submit-back a", has_text="Back to the board")  # the page's own link, same tab
        assert back.get_attribute("href") == "/" and back.get_attribute("target") in (None, "_self")
        assert follow(back) == url
    finally:
        page.close()


@pytest.mark.parametrize("theme", THEMES)
@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_a_rejected_submission_is_seen_where_the_button_was_pressed(browser, space, tmp_path, viewport, theme):
    """Issue 37 point 3: the rejection shows under the Submit button, on screen without scrolling, as a live region
    (gradio_compat.LIVE_REGION_HEAD: role=status, aria-live=polite), readable in both themes (contrast 4.5:1); it
    lists each problem on its own line and names no CLI flag; Year starts empty (it was 0)."""
    page = browser.new_page(viewport=viewport)
    try:
        page.goto(space[0] + "submit" + THEMES[theme])
        assert _field(page, "submit-year").input_value() == ""
        bad = iu_predictions(tmp_path / "bad.json", corrupt={"not-a-study": "x", "CXR3030_IM-1405": ""})
        _submit(page, bad, f"Rejected {theme} {viewport['width']}", "QA")
        status = page.locator("#submit-status")
        status.get_by_text("Submission rejected", exact=False).wait_for(timeout=STATE_CEILING_MS)
        box, height = status.bounding_box(), viewport["height"]
        assert box and 0 <= box["y"] and box["y"] + min(box["height"], 60) <= height, (box, height)
        assert status.get_attribute("role") == "status" and status.get_attribute("aria-live") == "polite"
        assert status.locator("li").count() >= 2 and "--" not in status.inner_text()
        words = status.get_by_text("Submission rejected", exact=False).first
        assert words.evaluate(CONTRAST) >= 4.5, theme
    finally:
        page.close()


def test_a_submission_under_a_taken_name_is_refused_with_a_clear_message(browser, space, tmp_path):
    """An anonymous submission under a published model's name: a clear refusal, the model unchanged."""
    url, store, _ = space
    before = store.model("MedVersa")
    page = browser.new_page(viewport=DESKTOP)
    try:
        page.goto(url + "submit")
        _submit(page, iu_predictions(tmp_path / "taken.json", n_shift=9), "MedVersa", "Evil Corp")
        status = page.locator("#submit-status")
        status.get_by_text("already registered", exact=False).wait_for(timeout=STATE_CEILING_MS)
        text = status.inner_text()
        assert "Submission rejected" in text and "'MedVersa' is already registered by the leaderboard host" in text
        assert "Choose another name, or log in with Hugging Face as its owner" in text
    finally:
        page.close()
    after = store.model("MedVersa")
    assert (after["institution"], after["url"], after["owner"]) == (before["institution"], before["url"], "host")
    assert not any(j["model"].get("name") == "MedVersa" for j in store.submissions())


def test_an_accepted_submission_clears_the_form_and_reaches_the_board(browser, space, tmp_path):
    """Issue 14 point 9: an accepted file clears the form; the queue names the test set and follows the job until
    it is done; a crafted institution stays text; the board's page then shows the row. Issue 37 point 7: nothing in
    the console (the form's events are unqueued and the file is chosen with a button: gradio_compat)."""
    url, store, _ = space
    page = browser.new_page(viewport=DESKTOP)
    console = record_console(page)
    try:
        page.goto(url + "submit")
        _submit(page, iu_predictions(tmp_path / "browser.json", n_shift=5), "Browser", "QA <img src=x onerror=alert(1)>")
        _accepted(page)
        page.wait_for_function("() => { const e = document.querySelector('#submit-name textarea, #submit-name input');"
                               " return e && e.value === ''; }", timeout=STATE_CEILING_MS)
        page.wait_for_function("() => document.querySelector('#queue-table').innerText.includes('done')",
                               timeout=STATE_CEILING_MS)
        assert "IU-Xray" in page.locator("#queue-table").inner_text()
        assert console == [], console
        page.goto(url + "?tab=iu_xray&q=Browser")
        rows = page.locator("#board-live tbody tr")
        assert rows.count() == 1 and "submission" in rows.first.inner_text()
        assert page.evaluate("() => document.querySelectorAll('img[src=x]').length") == 0
    finally:
        page.close()


def test_a_phones_submit_form_gets_the_screens_width(browser, space):
    """gradio_compat.PHONE_HEAD: gradio pads its main column 32 px each side at every width; on a 390 px phone the
    Submit page's fields take the screen's width but 8 px each side (the rule names gradio's ``.main.fillable``:
    this fails when gradio renames it)."""
    page = browser.new_page(viewport=PHONE)
    try:
        page.goto(space[0] + "submit")
        box = page.locator("#submit-name").bounding_box()
        assert box["x"] <= 12 and box["x"] + box["width"] >= PHONE["width"] - 12, box
    finally:
        page.close()


def test_the_arena_opens_on_its_page_with_its_first_pair(browser, tmp_path):
    """The Arena is a gradio page of its own (``/arena``; ``/?tab=arena`` goes there): opened, it shows its first
    pair and its board at once (its tab's select never fires on a page opened on it: wiring asks as "Next pair"
    and "Refresh" do)."""
    from rexrank.leaderboard.store import Store
    from test_arena import _keep

    store = Store(tmp_path / "board.sqlite")
    _keep(store, n_studies=4)
    store.close()
    with running_space(tmp_path / "board.sqlite", worker=False, arena=True, arena_rater="hf:ann") as (url, *_):
        page = browser.new_page(viewport=PHONE)
        console = record_console(page)
        try:
            page.goto(url + "?tab=arena")
            page.wait_for_url(url + "arena")
            wait_until(lambda: page.locator("#arena-report-a .arena-text").count() == 1, "the first pair")
            page.wait_for_function("() => / votes? counted/.test(document.querySelector('#arena-board-note')"
                                   "?.innerText ?? '')", timeout=STATE_CEILING_MS)
            assert console == [], console
        finally:
            page.close()


# A file dragged onto an element and dropped, as a browser's drag and drop delivers it (a DataTransfer holding the
# file): whether the page took each event (a drop not taken is opened by the browser in place of the page).
DROP = """([selector, name, text]) => {
  const target = document.querySelector(selector);
  const data = new DataTransfer();
  data.items.add(new File([text], name, {type: "application/json"}));
  const events = ["dragenter", "dragover", "drop"].map((type) =>
    new DragEvent(type, {bubbles: true, cancelable: true, dataTransfer: data}));
  events.forEach((event) => target.dispatchEvent(event));
  return events.slice(1).map((event) => event.defaultPrevented);
}"""


def test_a_file_dropped_anywhere_on_the_submit_form_is_taken(browser, space, tmp_path):
    """Issue 48 point 2 (Submit gets drag and drop back, wiring.DROP_HEAD): a predictions file dropped on a field, the
    checkboxes, the status, the page's text or the queue is taken as the form's file (its name shown under the
    button; the browser's default, opening the file in place of the page, prevented), and the form submits it."""
    url = space[0]
    text = iu_predictions(tmp_path / "dropped.json", n_shift=7).read_text()
    page = browser.new_page(viewport=DESKTOP)
    console = record_console(page)
    try:
        page.goto(url + "submit")
        page.locator("#submit-button").wait_for()
        for k, selector in enumerate(("#submit-name textarea, #submit-name input", "#submit-trained",
                                      "#submit-status", "#submit-text", "#queue-table", "body")):
            name = f"dropped-{k}.json"
            assert page.evaluate(DROP, [selector, name, text]) == [True, True], selector
            page.wait_for_function("(name) => document.querySelector('#submit-chosen').innerText.includes(name)",
                                   arg=name, timeout=STATE_CEILING_MS)
        assert page.url == url + "submit"
        _field(page, "submit-name").fill("Dropped file")
        page.locator("#submit-button").click()
        _accepted(page)
        assert console == [], console
    finally:
        page.close()

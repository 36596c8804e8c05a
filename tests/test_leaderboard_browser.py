"""The Space in a real browser: Debian Chromium driven by Playwright. Screenshots go to artifacts/screenshots/."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from leaderboard_helpers import iu_predictions, running_space

CHROMIUM = Path("/usr/bin/chromium")
SHOTS = Path(__file__).resolve().parents[1] / "artifacts" / "screenshots"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--disable-sync"]

pytestmark = [pytest.mark.browser, pytest.mark.slow]


@pytest.fixture(scope="module")
def browser():
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            pytest.fail("Chromium is missing: `make test` installs it (scripts/setup_browser.sh)")
        pytest.skip("Chromium not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS, headless=True)
        yield b
        b.close()


@pytest.fixture(scope="module")
def space(tmp_path_factory):
    with running_space(tmp_path_factory.mktemp("browser") / "board.sqlite") as running:
        yield running


def _row_count(page, elem_id: str) -> int:
    """Gradio 6's Dataframe is virtualised: the grid's aria-rowcount (header included) counts every row."""
    page.wait_for_selector(f"#{elem_id} [role=grid]", state="attached", timeout=60_000)
    return int(page.get_attribute(f"#{elem_id} [role=grid]", "aria-rowcount")) - 1


def _table_rows(page, elem_id: str) -> list[str]:
    """Texts of the rendered body rows (all of them for short tables)."""
    page.wait_for_selector(f"#{elem_id} div[role=row]", state="attached", timeout=60_000)
    return [row.inner_text().replace("\n", " ") for row in page.query_selector_all(f"#{elem_id} div[role=row]")]


def _wait_rows(page, elem_id: str, n: int, timeout: float = 30) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline and _row_count(page, elem_id) != n:
        time.sleep(0.3)
    assert _row_count(page, elem_id) == n


def test_page_overview_filter_and_submission(browser, space, tmp_path):
    url, store, _ = space
    SHOTS.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(url, wait_until="load")
    _wait_rows(page, "overview-table", 25)
    page.wait_for_function("() => document.title.includes('ReXrank leaderboard')", timeout=30_000)
    assert _table_rows(page, "overview-table")[0].startswith("UniRG-CXR")
    page.screenshot(path=str(SHOTS / "overview.png"), full_page=True)

    # IU-Xray > Findings: typing in the search box narrows the table.
    page.get_by_role("tab", name="IU-Xray").click()
    table_id = "table-iu_xray-findings"
    _wait_rows(page, table_id, 25)
    page.locator("#search-iu_xray-findings textarea, #search-iu_xray-findings input").first.fill("CheXpertPlus")
    _wait_rows(page, table_id, 3)
    narrowed = _table_rows(page, table_id)
    assert len(narrowed) == 3 and all("CheXpertPlus" in r for r in narrowed)
    page.screenshot(path=str(SHOTS / "iu_xray_filtered.png"), full_page=True)

    # Submit an IU-Xray predictions file through the form; a crafted name must stay text.
    _submit(page, iu_predictions(tmp_path / "browser.json", n_shift=5), "<script>window.__pwned=1</script>Browser",
            "QA <img src=x onerror=alert(1)>")
    page.wait_for_selector("#submit-status :text('queued')", timeout=60_000)
    page.screenshot(path=str(SHOTS / "submitted.png"), full_page=True)

    deadline = time.time() + 120
    while time.time() < deadline and not any(j["status"] == "done" for j in store.submissions()):
        time.sleep(0.5)
    job = store.submissions()[0]
    assert job["status"] == "done", job["error"]

    page.reload(wait_until="load")
    page.get_by_role("tab", name="IU-Xray").click()
    _wait_rows(page, table_id, 26)
    page.locator("#search-iu_xray-findings textarea, #search-iu_xray-findings input").first.fill("Browser")
    _wait_rows(page, table_id, 1)
    mine = [r for r in _table_rows(page, table_id) if "Browser" in r]
    assert len(mine) == 1 and "‹script›window.__pwned=1‹/script›Browser" in mine[0] and "submission" in mine[0]
    assert page.evaluate("() => window.__pwned === undefined")
    assert page.evaluate("() => document.querySelectorAll('img[src=x]').length") == 0
    page.screenshot(path=str(SHOTS / "after_submission.png"), full_page=True)
    page.close()


def _submit(page, preds, name: str, institution: str) -> None:
    """Fill and send the Submit tab's form as a person would."""
    page.get_by_role("tab", name="Submit").click()
    page.locator("#submit-file input[type=file]").set_input_files(str(preds))
    page.locator("#submit-name textarea, #submit-name input").first.fill(name)
    page.locator("#submit-institution textarea, #submit-institution input").first.fill(institution)
    page.wait_for_timeout(500)
    page.locator("#submit-button").click()


def test_submission_under_a_taken_name_is_refused_with_a_clear_message(browser, space, tmp_path):
    """A desktop browser submits under a published model's name (anonymously): a clear refusal, nothing changed."""
    url, store, _ = space
    before = store.model("MedVersa")
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.goto(url, wait_until="load")
    _submit(page, iu_predictions(tmp_path / "taken.json", n_shift=9), "MedVersa", "Evil Corp")
    status = page.locator("#submit-status")
    status.get_by_text("already registered", exact=False).wait_for(timeout=60_000)
    text = status.inner_text()
    assert "Submission rejected" in text and "'MedVersa' is already registered by the leaderboard host" in text
    assert "Choose another name, or log in with Hugging Face as its owner" in text
    status.scroll_into_view_if_needed()
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path="/tmp/refused_name.png")
    page.screenshot(path=str(SHOTS / "refused_name.png"))
    after = store.model("MedVersa")
    assert (after["institution"], after["url"], after["owner"]) == (before["institution"], before["url"], "host")
    assert not any(j["model"].get("name") == "MedVersa" for j in store.submissions())
    page.close()

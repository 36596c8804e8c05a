"""The Space in a real browser: Debian Chromium driven by Playwright, at 1440x900 (a laptop) and 390x844 (a phone).

Each test pins what a person saw go wrong (issue 14's points 3-11): the layout at both sizes, the first table in the
page as built, filters, plots, the Models tab, sorting, the Submit form, links, citation and CSV. One server and one
browser for the module; screenshots go to artifacts/screenshots/.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from leaderboard_helpers import add_scored_result, iu_predictions, running_space

CHROMIUM = Path("/usr/bin/chromium")
SHOTS = Path(__file__).resolve().parents[1] / "artifacts" / "screenshots"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--no-first-run", "--disable-sync"]
DESKTOP = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}
IU = "iu_xray-findings"
# The published IU-Xray findings models that rexrank.ai marks as trained on IU-Xray (published_tables/trained_on.json).
IU_TRAINED = {"MoERad-IU", "VLCI-IU", "Cvt2distilgpt2-IU", "BiomedGPT-IU"}

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
        # A rexrank-scored IU-Xray result with CIs, BLEU-2 only and the best BLEU on the board, with subgroups.
        add_scored_result(running[1], "Scored-CI", bleu=0.9)
        yield running


def _open(browser, url: str, viewport: dict):
    page = browser.new_page(viewport=viewport)
    page.goto(url, wait_until="load")
    page.wait_for_selector("#overview-table div[role=row]", state="attached", timeout=60_000)
    return page


def _row_count(page, elem_id: str) -> int:
    """Gradio 6's Dataframe is virtualised: the grid's aria-rowcount (header included) counts every row."""
    page.wait_for_selector(f"#{elem_id} [role=grid]", state="attached", timeout=60_000)
    return int(page.get_attribute(f"#{elem_id} [role=grid]", "aria-rowcount")) - 1


def _table_rows(page, elem_id: str) -> list[str]:
    """Texts of the rendered body rows (all of them for short tables)."""
    page.wait_for_selector(f"#{elem_id} div[role=row]", state="attached", timeout=60_000)
    return [row.inner_text().replace("\n", " ") for row in page.query_selector_all(f"#{elem_id} div[role=row]")]


def _search(page, key: str, text: str) -> None:
    """Type into a dataset table's own search box."""
    page.locator(f"#table-{key} input[type=text], #table-{key} textarea").first.fill(text)


def _wait_rows(page, elem_id: str, n: int, timeout: float = 30) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline and _row_count(page, elem_id) != n:
        time.sleep(0.2)
    assert _row_count(page, elem_id) == n


def _headers(page, elem_id: str) -> list:
    """(text, bounding box) of each header cell of a table, in column order."""
    cells = page.locator(f"#{elem_id} thead th")
    return [(cells.nth(i).inner_text().strip(), cells.nth(i).bounding_box()) for i in range(cells.count())]


def _tab(page, name: str) -> None:
    page.get_by_role("tab", name=name, exact=True).click()


def _shot(page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"))


def test_first_table_is_in_the_page_and_other_tabs_fill_when_opened(browser, space):
    """Point 11: no request at all before the overview rows show (the table is built into the page); a dataset tab
    fills when opened, in one request."""
    url = space[0]
    page = browser.new_page(viewport=DESKTOP)
    calls: list[str] = []
    page.on("request", lambda r: calls.append(r.url) if "/gradio_api/" in r.url and r.method == "POST" else None)
    page.goto(url, wait_until="load")
    page.wait_for_selector("#overview-table div[role=row]", state="attached", timeout=60_000)
    assert _row_count(page, "overview-table") == 25
    assert calls == [], calls  # before: 12 queued requests computed every tab's table on load
    _tab(page, "IU-Xray")
    _wait_rows(page, f"table-{IU}", 26)
    assert len(calls) == 1 and calls[0].endswith("/run/predict")  # one direct call, no queue round trip
    page.close()


def test_desktop_layout_overview_and_dataset_table(browser, space):
    """Points 4 and 7 at 1440x900: Mean rank with two decimals on screen; the ranking column right after Model and on
    screen; filters collapsed so the table starts high; Rank and Model pinned while the table scrolls sideways."""
    page = _open(browser, space[0], DESKTOP)
    headers = _headers(page, "overview-table")
    assert [h for h, _ in headers[:4]] == ["Rank", "Model", "Mean rank", "Datasets"]
    assert headers[2][1]["x"] + headers[2][1]["width"] <= DESKTOP["width"]
    medversa = next(r for r in _table_rows(page, "overview-table") if " MedVersa " in f" {r} ")
    assert "4.25" in medversa.split()  # mean of ranks 3, 2, 3, 9: was shown as 4
    _shot(page, "desktop_overview")

    _tab(page, "IU-Xray")
    _wait_rows(page, f"table-{IU}", 26)
    headers = _headers(page, f"table-{IU}")
    assert [h.split()[0] for h, _ in headers[:3]] == ["Rank", "Model", "1/RadCliQ-v1"]
    assert headers[2][1]["x"] + headers[2][1]["width"] <= DESKTOP["width"]
    first_row = page.locator(f"#table-{IU} tbody tr").first.bounding_box()
    assert first_row["y"] < 450, first_row  # was y=690 below the filter chips
    assert not page.locator(f"#inst-{IU}").is_visible()  # filters collapsed
    _shot(page, "desktop_iu_xray")

    # Scrolled sideways, Rank and Model stay where they were.
    before = [box["x"] for _, box in headers[:2]]
    page.evaluate(f"""() => {{ const t = document.querySelector('#table-{IU} table');
        let e = t; while (e && e.scrollWidth <= e.clientWidth) e = e.parentElement; e.scrollLeft = 600; }}""")
    page.wait_for_timeout(200)
    after = _headers(page, f"table-{IU}")
    assert [box["x"] for _, box in after[:2]] == pytest.approx(before, abs=2)
    assert after[3][1]["x"] < headers[3][1]["x"] - 300  # the metric columns did move
    _check_links_and_csv(page, space[0], space[1])
    page.close()


def _check_links_and_csv(page, url: str, store) -> None:
    """Point 10: links to the paper and rexrank.ai, when the board last changed, model names linked to their URL,
    a CSV of the table (the BibTeX is checked on the phone in test_phone_layout)."""
    header = page.locator("#board-header")
    assert header.locator("a[href='https://arxiv.org/abs/2411.15122']").count() == 1
    assert header.locator("a[href='https://rexrank.ai']").count() == 1
    assert "Last updated: 20" in header.inner_text()
    moerad = page.locator(f"#table-{IU} a", has_text="MoERad-IU").first
    assert moerad.get_attribute("href") == store.model("MoERad-IU")["url"]
    href = page.locator(f"#csv-{IU} a").get_attribute("href")
    response = page.request.get(url + href)
    assert response.status == 200 and response.text().splitlines()[0].startswith("rank,model,")
    assert len(response.text().splitlines()) == 27  # header + every row


def test_phone_layout(browser, space):
    """Point 6 at 390x844: Rank, Model and 1/RadCliQ-v1 on screen without scrolling, every tab reachable, the
    filters collapsed above the table, the About text readable, the rank plot not squeezed by its legend."""
    page = _open(browser, space[0], PHONE)
    _tab(page, "IU-Xray")
    _wait_rows(page, f"table-{IU}", 26)
    headers = _headers(page, f"table-{IU}")
    assert [h.split()[0] for h, _ in headers[:3]] == ["Rank", "Model", "1/RadCliQ-v1"]
    assert all(box["x"] >= 0 and box["x"] + box["width"] <= PHONE["width"] for _, box in headers[:3]), headers[:3]
    first_row = page.locator(f"#table-{IU} tbody tr").first.bounding_box()
    assert first_row["y"] + first_row["height"] < PHONE["height"]  # the first row is on the first screen
    assert not page.locator(f"#inst-{IU}").is_visible()
    _shot(page, "phone_iu_xray")

    _tab(page, "About")
    about = page.locator("#about-text")
    assert about.locator("table").count() == 0  # a table there wrapped letter by letter
    assert min(li.bounding_box()["width"] for li in about.locator("li").all()) > 250
    assert "@article{zhang2024rexrank" in page.locator("#cite pre").inner_text()
    assert page.locator("#cite .copy_code_button").count() == 1  # the BibTeX is one click from the clipboard
    page.locator("#cite").scroll_into_view_if_needed()
    _shot(page, "phone_about_cite")

    _tab(page, "Overview")
    page.locator("#overview-plot").get_by_text("Rank across datasets").click()
    page.wait_for_selector("#overview-plot .nsewdrag", state="attached", timeout=60_000)
    plot_area = page.locator("#overview-plot .nsewdrag").first.bounding_box()
    assert plot_area["height"] > 200 and plot_area["width"] > 250, plot_area  # was squeezed to 40 px
    _shot(page, "phone_overview")
    page.close()


def test_overview_tracks_are_tabs_and_the_second_is_built_when_opened(browser, space):
    """The overview's tracks are sub-tabs like a dataset's: Findings + Impression's table and its plot are built when
    opened, with that track's rows (they differ from the findings ranking)."""
    page = _open(browser, space[0], DESKTOP)
    key = "overview-table-findings_impression"
    assert page.locator(f"#{key}").count() == 0  # not in the first page
    findings = _table_rows(page, "overview-table")[:5]
    page.locator("#overview-tracks").get_by_role("tab", name="Findings + Impression", exact=True).click()
    both = _table_rows(page, key)[:5]
    assert both and both != findings
    page.locator("#overview-plot-findings_impression").get_by_text("Rank across datasets").click()
    page.wait_for_selector("#overview-plot-findings_impression .nsewdrag", state="attached", timeout=60_000)
    _shot(page, "desktop_overview_findings_impression")
    page.close()


def test_filters_use_the_data_and_say_when_nothing_matches(browser, space):
    """Point 5: "trained on this dataset" selects the IU-trained published models; a filter with a single choice is
    hidden; choices are read when the tab opens (not at start-up); an empty result says so."""
    url, store, _ = space
    page = _open(browser, url, DESKTOP)
    add_scored_result(store, "Late-Model", bleu=0.1, dataset="mimic_cxr", institution="Late Lab")  # after start-up
    _tab(page, "IU-Xray")
    _wait_rows(page, f"table-{IU}", 26)
    page.locator(f"#filters-{IU}").get_by_text("Filters, columns and sorting").click()
    assert not page.locator(f"#type-{IU}").is_visible()  # no model type on these rows: nothing to choose
    page.locator(f"#trained-{IU}").get_by_text("Only models trained on this set").click()
    _wait_rows(page, f"table-{IU}", 4)
    assert {r.split()[1] for r in _table_rows(page, f"table-{IU}")} == IU_TRAINED
    page.locator(f"#trained-{IU}").get_by_text("All models").click()
    _wait_rows(page, f"table-{IU}", 26)
    _search(page, IU, "no such model")  # the table's own search: client-side, no request
    _wait_rows(page, f"table-{IU}", 0)
    _search(page, IU, "MAIRA-2")  # names match as written (no Markdown escapes in the cell text)
    _wait_rows(page, f"table-{IU}", 1)
    _search(page, IU, "")
    _wait_rows(page, f"table-{IU}", 26)
    _check_sorting(page)

    _tab(page, "MIMIC-CXR")
    key = "mimic_cxr-findings"
    _wait_rows(page, f"table-{key}", 26)
    page.locator(f"#filters-{key}").get_by_text("Filters, columns and sorting").click()
    page.locator(f"#inst-{key} input").first.click()
    page.get_by_role("option", name="Late Lab").wait_for(timeout=30_000)
    page.close()


def _check_sorting(page) -> None:
    """Point 9: the header menu (which sorted the shown strings, stacked sorts and put "–" first) is gone; "Sort by"
    orders by value in the metric's direction, rows without a value last (a filters section already open)."""
    page.locator(f"#table-{IU} thead th").nth(2).hover()
    assert page.locator(f"#table-{IU} .cell-menu-button:visible").count() == 0
    page.locator(f"#sort-{IU} input").first.click()
    page.get_by_role("option", name="1/FineRadScore ↑").click()
    page.wait_for_function(f"""() => {{ const r = document.querySelector('#table-{IU} tbody tr');
        return r && !r.innerText.includes('UniRG-CXR') && !r.innerText.includes('Scored-CI'); }}""", timeout=30_000)
    first = _table_rows(page, f"table-{IU}")[0].split()
    assert first[2] != "–"  # a row with the value comes first


def test_plots_follow_the_metric_and_show_cis_only_where_there_are_some(browser, space):
    """Point 3: one click draws both plots; the bars are the best rows by the chosen metric (a BLEU-only rexrank row
    appears for BLEU); only rows with a CI get error bars (published bars have none, not zero-width caps)."""
    page = _open(browser, space[0], DESKTOP)
    _tab(page, "IU-Xray")
    _wait_rows(page, f"table-{IU}", 26)
    page.locator(f"#plots-{IU}").get_by_text("Plots").first.click()
    page.wait_for_selector(f"#bars-{IU} .nsewdrag", state="attached", timeout=60_000)
    page.wait_for_selector(f"#heat-{IU} .nsewdrag", state="attached", timeout=60_000)
    assert "Scored-CI" not in page.locator(f"#bars-{IU}").inner_text()  # no 1/RadCliQ-v1 value: not in this chart
    page.locator(f"#metric-{IU} input").first.click()
    page.get_by_role("option", name="BLEU ↑").click()
    page.wait_for_function(f"() => document.querySelector('#bars-{IU}').textContent.includes('Scored-CI')",
                           timeout=30_000)
    bars = page.locator(f"#bars-{IU}")
    assert bars.locator("g.errorbar").count() == 1  # the one row with a CI; the published bars: none
    _shot(page, "desktop_iu_xray_plots")
    page.close()


def test_models_tab_opens_on_a_model_and_shows_subgroups(browser, space):
    """Point 8 on a phone: the tab opens on the top model (not an empty placeholder); choosing a rexrank-scored model
    shows its subgroup results as a table, not the scorer's cache counters."""
    page = _open(browser, space[0], PHONE)
    _tab(page, "Models")
    _wait_rows(page, "model-table", 8)  # UniRG-CXR: 4 datasets x 2 tracks
    assert page.locator("#model-pick input").first.input_value() == "UniRG-CXR"
    _shot(page, "phone_models")
    page.locator("#model-pick input").first.fill("Scored-CI")
    page.get_by_role("option", name="Scored-CI").click()
    _wait_rows(page, "model-table", 1)
    details = page.locator("#model-details")
    details.locator("table").first.wait_for(timeout=30_000)
    text = details.inner_text()
    assert "normal vs abnormal: abnormal" in text and "cache" not in text
    page.close()


def test_submit_form_clears_after_a_submission_and_lists_problems(browser, space, tmp_path):
    """Point 9 (Submit): Year starts empty; a rejected file lists each problem on its own line without CLI flags; an
    accepted one clears the form; the queue shows test set names and updates itself until the job is done; a crafted
    name stays text. Also the desktop screenshot of the Submit tab."""
    url, store, _ = space
    page = _open(browser, url, DESKTOP)
    _tab(page, "Submit")
    assert page.locator("#submit-year input").first.input_value() == ""  # was 0
    bad = iu_predictions(tmp_path / "bad.json", corrupt={"not-a-study": "x", "CXR3030_IM-1405": ""})
    _submit(page, bad, "Bad file", "QA")
    status = page.locator("#submit-status")
    status.get_by_text("Submission rejected", exact=False).wait_for(timeout=60_000)
    assert status.locator("li").count() >= 2 and "--" not in status.inner_text()

    _submit(page, iu_predictions(tmp_path / "browser.json", n_shift=5), "<script>window.__pwned=1</script>Browser",
            "QA <img src=x onerror=alert(1)>")
    status.get_by_text("queued", exact=False).wait_for(timeout=60_000)
    page.wait_for_function("() => { const e = document.querySelector('#submit-name textarea, #submit-name input');"
                           " return e && e.value === ''; }", timeout=30_000)  # the form clears itself
    _shot(page, "desktop_submit")
    queue = "#queue-table"
    page.wait_for_function(f"() => document.querySelector('{queue}').innerText.includes('done')", timeout=120_000)
    assert "IU-Xray" in page.locator(queue).inner_text()
    assert page.evaluate("() => window.__pwned === undefined")

    _tab(page, "IU-Xray")
    _search(page, IU, "Browser")
    _wait_rows(page, f"table-{IU}", 1)
    [mine] = _table_rows(page, f"table-{IU}")
    assert "‹script›window.__pwned=1‹/script›Browser" in mine and "submission" in mine
    assert page.evaluate("() => document.querySelectorAll('img[src=x]').length") == 0
    page.close()


def _submit(page, preds, name: str, institution: str) -> None:
    """Fill and send the Submit tab's form as a person would."""
    _tab(page, "Submit")
    page.locator("#submit-file input[type=file]").set_input_files(str(preds))
    page.locator("#submit-name textarea, #submit-name input").first.fill(name)
    page.locator("#submit-institution textarea, #submit-institution input").first.fill(institution)
    page.wait_for_timeout(500)
    page.locator("#submit-button").click()


def test_submission_under_a_taken_name_is_refused_with_a_clear_message(browser, space, tmp_path):
    """A desktop browser submits under a published model's name (anonymously): a clear refusal, nothing changed."""
    url, store, _ = space
    before = store.model("MedVersa")
    page = _open(browser, url, DESKTOP)
    _submit(page, iu_predictions(tmp_path / "taken.json", n_shift=9), "MedVersa", "Evil Corp")
    status = page.locator("#submit-status")
    status.get_by_text("already registered", exact=False).wait_for(timeout=60_000)
    text = status.inner_text()
    assert "Submission rejected" in text and "'MedVersa' is already registered by the leaderboard host" in text
    assert "Choose another name, or log in with Hugging Face as its owner" in text
    status.scroll_into_view_if_needed()
    _shot(page, "refused_name")
    after = store.model("MedVersa")
    assert (after["institution"], after["url"], after["owner"]) == (before["institution"], before["url"], "host")
    assert not any(j["model"].get("name") == "MedVersa" for j in store.submissions())
    page.close()


_ROWS = """(sel) => Array.from(document.querySelectorAll(sel)).map(row => [row.innerText.split(/\\s+/).join(' ').trim(),
    Array.from(row.querySelectorAll('a')).map(a => a.getAttribute('href'))])"""


def test_dataset_tab_shows_its_rows_at_once_then_builds_the_table_in_one_request(browser, space):
    """Issue 14's tab-switch target: a dataset tab's first rows show at once from the preview built into the page,
    before any request answers; the one request that builds the filters and the Dataframe follows; the preview goes
    once the Dataframe has its rows, and the two show the same rows, ranks, values and links."""
    page = _open(browser, space[0], DESKTOP)
    held: list = []
    page.route("**/gradio_api/run/predict", lambda route: held.append(route))  # hold the request building the view
    key = "chexpert_plus-findings"
    _tab(page, "CheXpert Plus")
    page.wait_for_selector(f"#preview-{key} tbody tr", state="visible", timeout=30_000)
    preview = page.evaluate(_ROWS, f"#preview-{key} tbody tr")
    assert len(held) == 1 and page.locator(f"#table-{key}").count() == 0  # not built yet: the preview is HTML
    assert preview[0][0].startswith("1 ") and preview[0][1][0].startswith("https://")  # rank 1, its name linked
    _shot(page, "desktop_chexpert_preview")
    held[0].continue_()
    page.unroute("**/gradio_api/run/predict")
    page.wait_for_selector(f"#table-{key} div[role=row]", state="attached", timeout=60_000)
    page.wait_for_selector(f"#preview-{key}", state="hidden", timeout=30_000)
    table = page.evaluate(_ROWS, f"#table-{key} div[role=row]")
    shown = min(len(table), len(preview))
    assert shown >= 10 and table[:shown] == preview[:shown]
    page.close()
    # On a phone the preview, like the table, shows Rank, Model and 1/RadCliQ-v1 and scrolls sideways for the rest.
    phone = _open(browser, space[0], PHONE)
    phone.route("**/gradio_api/run/predict", lambda route: None)  # never answered: the preview stays
    _tab(phone, "CheXpert Plus")
    phone.wait_for_selector(f"#preview-{key} tbody tr", state="visible", timeout=30_000)
    header = phone.locator(f"#preview-{key} th").nth(2).bounding_box()
    assert header is not None and header["x"] + header["width"] <= 390 + 1  # the ranking column fits the screen
    _shot(phone, "phone_chexpert_preview")
    phone.close()


# Armed before a click (a window capture listener runs before the page's own): what the first frame after the click
# shows, taken in that frame's animation callback (after the click's handlers, before gradio gets the click).
_FIRST_FRAME = """(key) => { window.__frame = null; window.addEventListener('click', () => requestAnimationFrame(() => {
    const [dataset, track] = key.split(/-(?=[^-]*$)/);
    const rows = document.querySelectorAll(`.board-instant-view[data-view="${dataset}"] tbody tr`);
    window.__frame = {mask: document.documentElement.dataset.boardInstant || null,
        mounted: !!document.getElementById('csv-' + key), visible: rows.length > 0 && rows[0].checkVisibility(),
        rects: Array.from(rows).slice(0, 3).map(r => {
            const b = r.getBoundingClientRect(); return [b.x, b.y, b.width]; }),
        rows: Array.from(rows).map(row => [row.innerText.split(/\\s+/).join(' ').trim(),
                                          Array.from(row.querySelectorAll('a')).map(a => a.getAttribute('href'))])};
    }), {capture: true, once: true}); }"""


def _first_frame(page, tab: str, key: str) -> dict:
    page.evaluate(_FIRST_FRAME, key)
    _tab(page, tab)
    page.wait_for_function("() => window.__frame !== null", timeout=30_000)
    return page.evaluate("() => window.__frame")


def test_a_dataset_tabs_first_opening_shows_its_rows_in_the_next_frame(browser, space):
    """Issue 14's tab-switch target (bench/leaderboard.py): on a dataset tab's first opening the page paints that
    tab's preview rows in the first frame after the click, before gradio mounts the tab (_INSTANT_JS), exactly where
    the mounted tab's own preview has them (desktop and phone), with the same rows, ranks and links; gradio then
    gets the click, builds the tab with its one request, and the page's copy is gone. A later opening, or a click
    on another tab, goes straight to gradio."""
    key = "iu_xray-findings"
    for viewport in (DESKTOP, PHONE):
        page = _open(browser, space[0], viewport)
        calls: list[str] = []
        page.on("request", lambda r: calls.append(r.url) if "/gradio_api/" in r.url and r.method == "POST" else None)
        held: list = []
        page.route("**/gradio_api/run/predict", lambda route: held.append(route))  # the panel's preview stays up
        frame = _first_frame(page, "IU-Xray", key)
        assert frame["mask"] == "iu_xray" and not frame["mounted"] and frame["visible"], frame
        page.wait_for_selector(f"#preview-{key} tbody tr", state="visible", timeout=30_000)
        page.wait_for_function("() => !document.documentElement.dataset.boardInstant", timeout=30_000)
        assert page.get_by_role("tab", name="IU-Xray", exact=True).get_attribute("aria-selected") == "true"
        assert not page.locator('.board-instant-view[data-view="iu_xray"]').is_visible()
        mounted = page.evaluate(_ROWS, f"#preview-{key} tbody tr")
        assert frame["rows"] == mounted and mounted[0][0].startswith("1 ")
        rects = page.evaluate("""(key) => Array.from(document.querySelectorAll(`#preview-${key} tbody tr`)).slice(0, 3)
            .map(r => { const b = r.getBoundingClientRect(); return [b.x, b.y, b.width]; })""", key)
        assert [x for r in frame["rects"] for x in r] == pytest.approx([x for r in rects for x in r], abs=1)
        deadline = time.time() + 30
        while not held and time.time() < deadline:
            page.wait_for_timeout(50)
        assert len(held) == 1
        held[0].continue_()
        page.unroute("**/gradio_api/run/predict")
        page.wait_for_selector(f"#table-{key} div[role=row]", state="attached", timeout=60_000)
        assert len(calls) == 1, calls  # the page's copy sends nothing: gradio's one request builds the tab
        # A later opening is gradio's own (its panel is there).
        _tab(page, "Overview")
        assert _first_frame(page, "IU-Xray", key)["mask"] is None
        page.close()


def test_the_first_frame_copy_never_leaves_the_page_masked(browser, space):
    """_INSTANT_JS's guards: if gradio never takes the held-back click (made a no-op here), the copy goes after 5 s
    and the page is as it was; a click on another tab ends it at once. Screenshots of the first frame."""
    for viewport, name in ((DESKTOP, "desktop"), (PHONE, "phone")):
        page = _open(browser, space[0], viewport)
        page.evaluate("() => { HTMLButtonElement.prototype.click = function () {}; }")  # the handover never lands
        frame = _first_frame(page, "MIMIC-CXR", "mimic_cxr-findings")
        assert frame["mask"] == "mimic_cxr" and frame["visible"]
        _shot(page, f"{name}_first_frame_mimic_cxr")
        page.wait_for_function("() => !document.documentElement.dataset.boardInstant", timeout=10_000)
        assert page.get_by_role("tab", name="Overview", exact=True).get_attribute("aria-selected") == "true"
        assert page.locator("#overview-table").is_visible()
        assert not page.locator('.board-instant-view[data-view="mimic_cxr"]').is_visible()
        assert _first_frame(page, "ReXGradient", "rexgradient-findings")["mask"] == "rexgradient"
        _tab(page, "About")  # gradio's own tab: handled at once, the copy gone
        page.wait_for_function("() => !document.documentElement.dataset.boardInstant", timeout=2_000)
        assert page.get_by_role("tab", name="About", exact=True).get_attribute("aria-selected") == "true"
        page.close()


def test_a_dataset_tab_opened_from_the_keyboard_takes_the_same_path(browser, space):
    """Enter on a focused tab button is a click: the copy shows in the next frame, then gradio opens the tab."""
    page = _open(browser, space[0], DESKTOP)
    page.evaluate(_FIRST_FRAME, "chexpert_plus-findings")
    page.get_by_role("tab", name="CheXpert Plus", exact=True).focus()
    page.keyboard.press("Enter")
    page.wait_for_function("() => window.__frame !== null", timeout=30_000)
    frame = page.evaluate("() => window.__frame")
    assert frame["mask"] == "chexpert_plus" and frame["visible"] and not frame["mounted"], frame
    page.wait_for_selector("#table-chexpert_plus-findings div[role=row]", state="attached", timeout=60_000)
    assert page.get_by_role("tab", name="CheXpert Plus", exact=True).get_attribute("aria-selected") == "true"
    assert page.evaluate("() => !document.documentElement.dataset.boardInstant")
    page.close()


def test_models_and_submit_tabs_are_built_when_opened_and_keep_what_was_chosen(browser, space):
    """Issue 14's first-rows target: the Models tab and the Submit form are built when opened (gr.render), not in
    the first page; a later opening rebuilds them but keeps the model chosen and what was typed in the form.
    Also the desktop Models and phone Submit screenshots."""
    page = _open(browser, space[0], DESKTOP)
    assert page.locator("#model-pick, #submit-name").count() == 0  # not in the first page
    _tab(page, "Models")
    _wait_rows(page, "model-table", 8)
    _shot(page, "desktop_models")
    page.locator("#model-pick input").first.fill("Scored-CI")
    page.get_by_role("option", name="Scored-CI").click()
    _wait_rows(page, "model-table", 1)
    _tab(page, "About")
    _tab(page, "Models")
    page.wait_for_timeout(1000)  # the second opening's rebuild
    _wait_rows(page, "model-table", 1)
    assert page.locator("#model-pick input").first.input_value() == "Scored-CI"
    page.close()

    phone = _open(browser, space[0], PHONE)
    _tab(phone, "Submit")
    name = phone.locator("#submit-name textarea, #submit-name input").first
    phone.locator("#queue-table").wait_for(timeout=30_000)
    _shot(phone, "phone_submit")
    name.fill("Kept name")
    _tab(phone, "About")
    _tab(phone, "Submit")
    phone.wait_for_timeout(1000)
    assert phone.locator("#submit-name textarea, #submit-name input").first.input_value() == "Kept name"
    phone.close()

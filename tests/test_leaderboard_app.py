"""The Space through its public API (gradio_client against a launched app) and the submission pipeline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

from leaderboard_helpers import iu_predictions, running_space
from rexrank.errors import InputError
from rexrank.leaderboard.store import Store
from rexrank.leaderboard.submissions import Submissions

pytestmark = pytest.mark.slow


def _wait_done(store: Store, n: int, timeout: float = 120) -> list[dict]:
    deadline = time.time() + timeout
    while time.time() < deadline:
        jobs = store.submissions(100)
        if len(jobs) >= n and all(j["status"] in ("done", "failed") for j in jobs):
            return jobs
        time.sleep(0.2)
    raise AssertionError(f"submissions not finished: {[(j['id'], j['status']) for j in store.submissions(100)]}")


@pytest.fixture(scope="module")
def space(tmp_path_factory):
    root = tmp_path_factory.mktemp("space")
    with running_space(root / "board.sqlite") as running:
        yield (*running, root)


@pytest.fixture(scope="module")
def client(space):
    from gradio_client import Client

    return Client(space[0], verbose=False)


PUBLIC = {"/leaderboard", "/overview", "/table", "/results", "/model", "/submit", "/queue"}


def test_api_lists_the_named_endpoints_and_nothing_else(client, space):
    """Issue 14 point 13: the API page listed ~100 auto-named callbacks (table_view_1..63, lambda_1..10). Only the
    endpoints a client should call are public; /info (what the API page and gradio_client read) says the same."""
    import httpx

    api = client.view_api(return_format="dict", print_info=False)
    assert set(api["named_endpoints"]) == PUBLIC and api["unnamed_endpoints"] == {}
    info = httpx.get(f"{space[0]}gradio_api/info", timeout=30).json()
    assert set(info["named_endpoints"]) == PUBLIC and not info["unnamed_endpoints"]
    board = client.predict(api_name="/leaderboard")
    assert {(b["dataset"], b["track"]) for b in board["boards"]} >= {("iu_xray", "findings"), ("mimic_cxr", "findings")}
    iu = next(b for b in board["boards"] if (b["dataset"], b["track"]) == ("iu_xray", "findings"))
    assert len(iu["results"]) == 25 and iu["results"][0]["rank"] == 1 and board["updated"] > 0


def test_every_endpoint_answers(client):
    overview = client.predict("findings", api_name="/overview")
    assert overview["headers"][:3] == ["Rank", "Model", "Mean rank"] and len(overview["data"]) == 25
    medversa = next(row for row in overview["data"] if row[1] == "MedVersa")
    assert medversa[2] == "4.25"  # ranks 3, 2, 3 and 9: a mean, not truncated to 4
    table = client.predict("mimic_cxr", "findings", "chexpert", api_name="/table")
    assert {row[1] for row in table["data"]} == {"CheXpertPlus-MIMIC", "CheXpertPlus-CheX", "CheXpertPlus-CheX-MIMIC"}
    assert table["headers"][:5] == ["Rank", "Model", "1/RadCliQ-v1 ↑", "BLEU ↑", "BertScore ↑"]
    only_bleu = client.predict("iu_xray", "findings", "", [], [], [], "all", [], ["bleu2"], "bleu2", api_name="/table")
    assert only_bleu["headers"] == ["Rank", "Model", "BLEU ↑", "Institution", "Year", "Source"]
    bleus = [float(r[2]) for r in only_bleu["data"]]
    assert bleus == sorted(bleus, reverse=True)
    # Sorted by a column not shown: still best first (it was ascending), rows without the value last.
    hidden = client.predict("iu_xray", "findings", "", [], [], [], "all", [], ["bleu2"], "fineradscore",
                            api_name="/table")
    assert hidden["data"][0][1] != "UniRG-CXR" and hidden["data"][-1][1] == "UniRG-CXR"  # it lacks 1/FineRadScore
    trained = client.predict("iu_xray", "findings", "", [], [], [], "only", [], [], "radcliq_v1", api_name="/table")
    assert {row[1] for row in trained["data"]} == {"MoERad-IU", "VLCI-IU", "Cvt2distilgpt2-IU", "BiomedGPT-IU"}
    model = client.predict("CheXpertPlus-MIMIC", api_name="/model")  # spelled CheXpertPlus_MIMIC in some tables
    assert len(model[0]["data"]) == 8  # 4 datasets x 2 tracks
    results = json.loads(client.predict("rexgradient", "findings", api_name="/results"))
    assert results["dataset"] == "rexgradient" and len(results["results"]) == 25
    assert all(set(r) >= {"model", "radcliq_v1", "radcliq_v1_low"} for r in results["results"])


def test_first_page_leaves_out_the_models_tab_and_the_submit_form(space):
    """Issue 14 (first rows <= 1.15x a minimal app): the browser loads one JS module per component type in the page,
    so the Models tab and the Submit form are built when opened (gr.render); /model, /submit and /queue still answer
    through the API (test_every_endpoint_answers, test_submission_is_validated_scored_and_ranked)."""
    from collections import Counter

    import httpx

    components = httpx.get(f"{space[0]}config", timeout=30).json()["components"]
    types = Counter(c["type"] for c in components)
    assert not {"file", "textbox", "checkboxgroup", "timer", "dropdown", "button"} & set(types), types
    # Nor the overview's rank plot, its track radio or a code editor (the BibTeX is Markdown).
    assert not {"plot", "radio", "code"} & set(types), types
    assert types["dataframe"] == 1  # the overview's first track
    ids = {c.get("props", {}).get("elem_id") for c in components}
    assert not {"model-pick", "model-table", "submit-file", "submit-name", "queue-table"} & ids
    tabs = {c.get("props", {}).get("label") for c in components if c["type"] == "tabitem"}
    assert {"Models", "Submit"} <= tabs  # the tabs themselves are in the page


def test_unknown_dataset_is_a_clear_api_error(client):
    from gradio_client.exceptions import AppError

    with pytest.raises(AppError, match="Unknown dataset 'nope'. Available: rexgradient"):
        client.predict("nope", "findings", api_name="/results")
    with pytest.raises(AppError, match="Unknown track 'impressions'. Available: findings, findings_impression"):
        client.predict("impressions", api_name="/overview")


def test_overview_api_takes_any_track_spelling(client):
    both = client.predict("Findings + Impression", api_name="/overview")
    assert both["headers"][:3] == ["Rank", "Model", "Mean rank"] and len(both["data"]) >= 5
    assert both != client.predict("findings", api_name="/overview")


def test_submission_is_validated_scored_and_ranked(client, space, tmp_path):
    """An IU-Xray predictions file goes through the harness; the board shows its BLEU-2 mean and CI."""
    from gradio_client import handle_file

    import rexrank
    from rexrank.data import references

    _, store, _, _ = space
    path = iu_predictions(tmp_path / "shifted.json", n_shift=3)
    status, _ = client.predict(handle_file(str(path)), "Shifted <refs>", "QA", "https://example.org", 2025,
                               "baseline", [], "iu_xray", "findings", api_name="/submit")
    assert "queued" in status
    jobs = _wait_done(store, 1)
    assert jobs[0]["status"] == "done", jobs[0]["error"]
    refs = references("iu_xray", split="test", track="findings")
    preds = json.loads(path.read_text())
    expected = rexrank.score([preds[i] for i in refs], list(refs.values()), metrics=["bleu2"])["bleu_score"].mean()
    row = next(r for r in client.predict("iu_xray", "findings", "Shifted", api_name="/table")["data"])
    # scored on BLEU-2 only (this host has no official weights): not ranked, and the row says what it has
    assert row[0] == "–" and row[1] == "Shifted ‹refs› (no 1/RadCliQ-v1: 1 of 8 metrics)"
    assert row[-1] == "submission · scored on BLEU"
    assert row[3].startswith(f"{expected:.3f} [")  # Rank, Model, 1/RadCliQ-v1 (none: BLEU-2 only), BLEU
    low, high = (float(x) for x in row[3].split("[")[1].rstrip("]").split(", "))
    assert low < expected < high
    again, _ = client.predict(handle_file(str(path)), "Again", "", "", None, "", [], "iu_xray", "findings",
                              api_name="/submit")
    assert "already submitted" in again
    queue = client.predict(api_name="/queue")
    assert queue["headers"][5] == "Status" and queue["data"][0][5] == "done" and queue["data"][0][3] == "IU-Xray"


def test_invalid_submission_lists_problems_and_queues_nothing(client, space, tmp_path):
    from gradio_client import handle_file

    _, store, _, _ = space
    before = store.counts()["submissions"]
    path = iu_predictions(tmp_path / "bad.json", corrupt={"not-a-study": "x", "CXR3030_IM-1405": ""})
    status, _ = client.predict(handle_file(str(path)), "Bad", "", "", None, "", [], "iu_xray", "findings",
                               api_name="/submit")
    assert status.startswith("**Submission rejected:**")
    assert "not-a-study" in status and "CXR3030_IM-1405" in status
    # one list item per problem, and no `rexrank score` flags the form does not have
    assert status.count("\n- ") >= 2 and "--allow-missing" not in status and "--" not in status
    assert store.counts()["submissions"] == before


def test_size_limit_and_rate_limit(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    service = Submissions(store, tmp_path / "up", max_bytes=1000, rate_limit=1)
    big = tmp_path / "big.json"
    big.write_text(json.dumps({"a": "x" * 2000}))
    with pytest.raises(InputError, match="over the 0 MB limit|over the"):
        service.submit(big, {"name": "m"}, "iu_xray", "findings")
    service.max_bytes = 10**9
    first = iu_predictions(tmp_path / "one.json", n_shift=1)
    second = iu_predictions(tmp_path / "two.json", n_shift=2)
    service.submit(first, {"name": "m1"}, "iu_xray", "findings", user="alice")
    with pytest.raises(InputError, match="quota reached: at most 1 submissions per user"):
        service.submit(second, {"name": "m2"}, "iu_xray", "findings", user="alice")
    service.submit(second, {"name": "m2"}, "iu_xray", "findings", user="bob")
    assert store.counts()["submissions"] == 2


def test_private_set_errors_reveal_no_ids(tmp_path, monkeypatch):
    """A mismatch on a private test set is reported as counts: no study id or text reaches the page."""
    from rexrank.evaluation import inputs
    from rexrank.evaluation.predictions import Problems, ValidationError

    def fake_load_inputs(*args, **kwargs):
        problems = Problems(max_listed=5)
        problems.add("missing_id", "predictions", "secret-study-0001")
        raise ValidationError("predictions lack study secret-study-0001 (report: 'secret text')", problems)

    monkeypatch.setattr(inputs, "load_inputs", fake_load_inputs)
    service = Submissions(Store(tmp_path / "s.sqlite"), tmp_path / "up", datasets=("rexgradient",))
    path = tmp_path / "p.json"
    path.write_text("{}")
    with pytest.raises(InputError) as err:
        service.submit(path, {"name": "m"}, "rexgradient", "findings", user="alice")  # private sets need a login
    assert "secret" not in str(err.value) and "1 problems" in str(err.value)


def test_twenty_concurrent_submissions_each_recorded_once(tmp_path):
    store_path = tmp_path / "c.sqlite"
    files = [iu_predictions(tmp_path / f"p{i}.json", n_shift=i + 1) for i in range(20)]
    store = Store(store_path)
    service = Submissions(store, tmp_path / "up")
    errors: list[Exception] = []

    def submit(i: int, name: str):
        try:
            service.submit(files[i], {"name": name}, "iu_xray", "findings")
        except InputError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=submit, args=(i, f"model-{i}")) for i in range(20)]
    threads += [threading.Thread(target=submit, args=(0, "dup"))]  # the same file again, at the same time
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    jobs = store.submissions(100)
    assert len(jobs) == 20 and len({j["content_hash"] for j in jobs}) == 20
    assert len(errors) == 1 and "already submitted" in str(errors[0])
    assert store.integrity_check() == "ok"


WORKER_SCRIPT = textwrap.dedent("""
    import os, sys
    from rexrank.leaderboard.store import Store
    from rexrank.leaderboard.submissions import Submissions
    store = Store(sys.argv[1])
    service = Submissions(store, sys.argv[2], lease_seconds=float(sys.argv[3]), n_resamples=50)
    if sys.argv[4] == "die":
        real = store.add_result
        def dying(record, conn=None, **provenance):
            real(record, conn, **provenance)  # the row is written inside the open transaction...
            os._exit(9)             # ...and the process dies before COMMIT
        store.add_result = dying
    print(service.work_once())
""")


def test_worker_killed_mid_write_leaves_store_intact_and_job_retried(tmp_path):
    store_path, uploads = tmp_path / "k.sqlite", tmp_path / "up"
    store = Store(store_path)
    service = Submissions(store, uploads)
    service.submit(iu_predictions(tmp_path / "p.json"), {"name": "victim"}, "iu_xray", "findings")
    script = tmp_path / "worker.py"
    script.write_text(WORKER_SCRIPT)
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    run = lambda mode: subprocess.run([sys.executable, str(script), str(store_path), str(uploads), "1", mode],  # noqa
                                      capture_output=True, text=True, env=env, timeout=300)
    died = run("die")
    assert died.returncode == 9, died.stderr[-2000:]
    assert store.integrity_check() == "ok"
    assert store.counts()["results"] == 0
    assert store.submissions()[0]["status"] == "running"
    time.sleep(1.2)  # the dead worker's lease expires
    done = run("ok")
    assert done.returncode == 0 and done.stdout.strip() == "True", done.stderr[-2000:]
    job = store.submissions()[0]
    assert job["status"] == "done" and job["attempts"] == 2
    assert store.counts()["results"] == 1 and store.integrity_check() == "ok"
    assert np.isfinite(store.results("iu_xray", "findings")[0]["metrics"]["bleu2"]["mean"])


def test_a_row_scored_on_fewer_metrics_says_so_and_ranks_where_it_can(tmp_path):
    """Issue 14, point 2: a submission without 1/RadCliQ-v1 is not silently last: it is labelled with what it was
    scored on, and a view sorted by a metric it has ranks it among the rows with that metric."""
    from leaderboard_helpers import add_scored_result
    from rexrank.leaderboard import board
    from rexrank.leaderboard.published import seed_store

    store = Store(tmp_path / "s.sqlite")
    seed_store(store)
    add_scored_result(store, "Only-BLEU", bleu=0.9)  # above every published BLEU
    df = board.numeric_table(store, "iu_xray", "findings")
    ranked = board.display_table(df)
    row = ranked[ranked["Model"].str.startswith("Only-BLEU")].iloc[0]
    assert row["Rank"] == "–"
    assert row["Model"] == "Only-BLEU (no 1/RadCliQ-v1: 1 of 8 metrics)"
    assert row["Source"].endswith("scored on BLEU")
    by_bleu = board.display_table(df, sort_by="bleu2")
    assert by_bleu.iloc[0]["Model"] == "Only-BLEU" and by_bleu.iloc[0]["Rank"] == "1"
    # the published rows keep their order by BLEU, each ranked among the rows with a BLEU value
    bleu_ranks = [int(r) for r in by_bleu["Rank"] if r != "–"]
    assert bleu_ranks == sorted(bleu_ranks) and bleu_ranks[:2] == [1, 2]
    # ranked rows carry no label
    assert not any("metrics)" in m for m in ranked["Model"] if not m.startswith("Only-BLEU"))


def test_page_tables_hold_every_row_and_say_when_filters_leave_nothing(tmp_path):
    """A dataset table holds every row of its test set and track, and a filter that leaves no row says so; names
    in the Model cell keep their characters (the table's client-side search matches the cell text as written)
    while Markdown stays inert."""
    from rexrank.leaderboard.app import _md_text, _Views
    from rexrank.leaderboard.published import seed_store

    store = Store(tmp_path / "s.sqlite")
    seed_store(store)
    views = _Views(store)
    out, types, widths, message, shown, full = views.page_parts("iu_xray", "findings")
    assert len(out) == len(full) > 20 and message == "" and types[1] == "markdown"
    assert any(cell == "MAIRA-2" or cell.startswith("[MAIRA-2](") for cell in out["Model"])
    out, _, _, message, shown, _ = views.page_parts("iu_xray", "findings", institutions=["No such lab"])
    assert out.empty and message.startswith("**No model matches these filters.**")
    assert _md_text("- [x](javascript:y) *b* | c") == "\\- \\[x\\](javascript:y) \\*b\\* \\| c"
    assert _md_text("12. <b>") == "12\\. &lt;b&gt;" and _md_text("RadPhi3.5-Vision") == "RadPhi3.5-Vision"


def _html_table(text: str) -> tuple[list[str], list[list[str]], list[list[str | None]]]:
    """(header texts, each row's cell texts, each row's link hrefs per cell) of an HTML table, read with the stdlib
    parser (not our code)."""
    from html.parser import HTMLParser

    class Reader(HTMLParser):
        def __init__(self):
            super().__init__()
            self.header, self.rows, self.links, self.cell = [], [], [], None

        def handle_starttag(self, tag, attrs):
            if tag == "tr":
                self.rows.append([]), self.links.append([])
            elif tag in ("td", "th"):
                self.cell, self.href = [], None
            elif tag == "a" and self.cell is not None:
                self.href = dict(attrs).get("href")

        def handle_endtag(self, tag):
            if tag in ("td", "th"):
                (self.header if tag == "th" else self.rows[-1]).append("".join(self.cell))
                if tag == "td":
                    self.links[-1].append(self.href)
                self.cell = None

        def handle_data(self, data):
            if self.cell is not None:
                self.cell.append(data)

    reader = Reader()
    reader.feed(text)
    rows = [(r, k) for r, k in zip(reader.rows, reader.links) if r]
    return reader.header, [r for r, _ in rows], [k for _, k in rows]


def test_dataset_tab_preview_shows_the_tables_first_rows_exactly(tmp_path):
    """The HTML preview a dataset tab shows before its Dataframe is built has the Dataframe's first rows: same
    headers, ranks, values, labels (a row ranked elsewhere says what it was scored on) and links, text escaped."""
    from leaderboard_helpers import add_scored_result
    from rexrank.leaderboard import board
    from rexrank.leaderboard.app import _PREVIEW_ROWS, _Views
    from rexrank.leaderboard.published import seed_store

    store = Store(tmp_path / "s.sqlite")
    seed_store(store)
    add_scored_result(store, "<b>Crafted</b> & co", bleu=0.9)
    views = _Views(store)
    headers, rows, links = _html_table(views.preview_html("iu_xray", "findings"))
    shown = board.numeric_table(store, "iu_xray", "findings")
    plain = board.display_table(shown)  # the Model cell as plain text (the page links it)
    assert headers == list(plain.columns)
    assert len(shown) > _PREVIEW_ROWS and rows == plain.head(_PREVIEW_ROWS).to_numpy().tolist()
    by_name = {m["name"]: m for m in store.models()}
    for row, hrefs in zip(rows, links):
        name = next(n for n in by_name if row[1] == n or row[1].startswith(n + " "))
        assert hrefs[1] == (by_name[name]["url"] or None)
    assert views.preview_html("iu_xray", "findings").count("<tr>") == _PREVIEW_ROWS + 1  # header + first rows
    # A board with only a submission scored on BLEU: its label is in the cell, its name stays text.
    small = Store(tmp_path / "small.sqlite")
    add_scored_result(small, "<b>Crafted</b> & co", bleu=0.9)
    text = _Views(small).preview_html("iu_xray", "findings")
    _, rows, links = _html_table(text)
    assert rows == board.display_table(board.numeric_table(small, "iu_xray", "findings")).to_numpy().tolist()
    assert "(no 1/RadCliQ-v1: 1 of 8 metrics)" in rows[0][1] and links == [[None] * len(rows[0])]
    assert "<b>" not in text
    assert _Views(small).preview_html("mimic_cxr", "findings") == ""  # no rows: no preview


def test_first_frame_copies_are_the_dataset_tabs_opening_previews(tmp_path):
    """The page's copy shown while gradio mounts a dataset tab (_INSTANT_JS) is that tab's opening preview (its
    first track's), keyed by the tab's id and naming the element gradio's mounted panel brings; a dataset with no
    rows has an empty copy, which the page never shows (the click goes straight to gradio)."""
    import re

    from leaderboard_helpers import add_scored_result
    from rexrank.leaderboard.app import _csv_id, _Views
    from rexrank.leaderboard.records import DATASETS, TRACKS

    store = Store(tmp_path / "s.sqlite")
    add_scored_result(store, "<b>Crafted</b> & co", bleu=0.9)  # IU-Xray only
    views = _Views(store)
    parts = re.findall(r'<div class="board-instant-view" data-view="([^"]+)" data-panel="([^"]+)">(.*?)</div>(?=<div '
                       r'class="board-instant-view"|$)', views.instant_html(), re.S)
    assert [p[0] for p in parts] == list(DATASETS)
    for dataset, panel, body in parts:
        assert panel == _csv_id(dataset, TRACKS[0])
        assert body == views.preview_html(dataset, TRACKS[0])
        assert bool(body) == (dataset == "iu_xray")
    assert "<b>" not in views.instant_html()

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
import pandas as pd
import pytest

from leaderboard_helpers import STATE_CEILING_MS, STATE_CEILING_S, iu_predictions, running_space, wait_until
from rexrank.errors import InputError
from rexrank.leaderboard import board
from rexrank.leaderboard.records import search_key
from rexrank.leaderboard.store import Store
from rexrank.leaderboard.submissions import Submissions

pytestmark = pytest.mark.slow


def _wait_done(store: Store, n: int) -> list[dict]:
    """Until n submissions are done or failed (a state; STATE_CEILING_S only against a hung worker)."""
    def finished():
        jobs = store.submissions(100)
        return jobs if len(jobs) >= n and all(j["status"] in ("done", "failed") for j in jobs) else None

    return wait_until(finished, f"{n} finished submissions (now: "
                      f"{[(j['id'], j['status']) for j in store.submissions(100)]})")


@pytest.fixture(scope="module")
def space(tmp_path_factory):
    root = tmp_path_factory.mktemp("space")
    with running_space(root / "board.sqlite") as running:
        yield (*running, root)


@pytest.fixture(scope="module")
def client(space):
    from gradio_client import Client

    return Client(space[0], verbose=False)


PUBLIC = {"/leaderboard", "/overview", "/table", "/results", "/model", "/compare", "/submit", "/queue"}


def test_compare_endpoint_answers_the_tabs_data_as_json(client, space):
    """Issue 37 point 6: /compare returns compare_view.compare's data (published rows labelled, no paired test
    without per-study values) and one line for a bad selection."""
    from rexrank.leaderboard import compare_view
    from rexrank.leaderboard.views import Views

    store = space[1]
    names = [m["name"] for m in store.models()][:2]
    out = client.predict(",".join(names), api_name="/compare")
    assert out == compare_view.compare(Views(store), names) and out["models"] == names and out["boards"]
    assert any(v.endswith("(published, no CI)") for b in out["boards"] for c in b["columns"]
               for v in c["values"].values())
    assert "compare needs 2 to 4" in client.predict(names[0], api_name="/compare")["error"]


def test_api_lists_the_named_endpoints_and_nothing_else(client, space):
    """Issue 14 point 13: the API page listed ~100 auto-named callbacks (table_view_1..63, lambda_1..10). Only the
    endpoints a client should call are public; /info (what the API page and gradio_client read) says the same."""
    import httpx

    api = client.view_api(return_format="dict", print_info=False)
    assert set(api["named_endpoints"]) == PUBLIC and api["unnamed_endpoints"] == {}
    info = httpx.get(f"{space[0]}gradio_api/info", timeout=STATE_CEILING_S).json()
    assert set(info["named_endpoints"]) == PUBLIC and not info["unnamed_endpoints"]
    board = client.predict(api_name="/leaderboard")
    assert {(b["dataset"], b["track"]) for b in board["boards"]} >= {("iu_xray", "findings"), ("mimic_cxr", "findings")}
    iu = next(b for b in board["boards"] if (b["dataset"], b["track"]) == ("iu_xray", "findings"))
    assert len(iu["results"]) == 31 and iu["results"][0]["rank"] == 1 and board["updated"] > 0


def test_every_endpoint_answers(client):
    overview = client.predict("findings", api_name="/overview")
    assert overview["headers"][:3] == ["Rank", "Model", "Mean rank"] and len(overview["data"]) == 31
    medversa = next(row for row in overview["data"] if row[1] == "MedVersa")
    assert medversa[2] == "8.25"  # ranks 8, 5, 7 and 13: a mean, not truncated to 8
    table = client.predict("mimic_cxr", "findings", "chexpert", api_name="/table")
    assert {row[1] for row in table["data"]} == {"CheXpertPlus-MIMIC", "CheXpertPlus-CheX", "CheXpertPlus-CheX-MIMIC"}
    assert table["headers"][:5] == ["Rank", "Model", "1/RadCliQ-v1 ↑", "BLEU ↑", "BertScore ↑"]
    only_bleu = client.predict("iu_xray", "findings", "", [], [], [], "all", [], ["bleu2"], "bleu2", api_name="/table")
    assert only_bleu["headers"] == ["Rank", "Model", "BLEU ↑", "Institution", "Year", "Source"]
    bleus = [float(r[2]) for r in only_bleu["data"]]
    assert bleus == sorted(bleus, reverse=True)
    # Sorted by a column not shown: still best first (it was ascending), rows without the value last.
    hidden = client.predict("iu_xray", "findings_impression", "", [], [], [], "all", [], ["bleu2"], "fineradscore",
                            api_name="/table")
    # it lacks 1/FineRadScore: last, unranked in this view, and says so (Rank follows the sort, shown or hidden)
    assert hidden["data"][0][1] != "UniRG-CXR" and hidden["data"][0][0] == "1"
    assert hidden["data"][-1][:2] == ["–", "UniRG-CXR (no 1/FineRadScore: 7 of 8 metrics)"]
    trained = client.predict("iu_xray", "findings", "", [], [], [], "only", [], [], "radcliq_v1", api_name="/table")
    assert {row[1] for row in trained["data"]} == {"MoERad-IU", "VLCI-IU", "Cvt2distilgpt2-IU", "BiomedGPT-IU"}
    model = client.predict("CheXpertPlus-MIMIC", api_name="/model")  # spelled CheXpertPlus_MIMIC in some tables
    assert len(model[0]["data"]) == 8  # 4 datasets x 2 tracks
    results = json.loads(client.predict("rexgradient", "findings", api_name="/results"))
    assert results["dataset"] == "rexgradient" and len(results["results"]) == 31
    assert all(set(r) >= {"model", "radcliq_v1", "radcliq_v1_low"} for r in results["results"])


def test_gradio_draws_no_board_and_the_root_url_is_the_boards_pages(space):
    """Issue 48: the board is the HTML pages rexrank renders (``pages``), answering the Space's root URL in front of
    gradio; gradio's own pages are the Submit form (``/submit``) and the Arena. Its config holds no gr.Dataframe
    board (the one table gradio draws is the submission queue) and its root page nothing to see but the navigation
    bar;
    ``/?tab=submit``, a link of the gradio board, opens the Submit page."""
    from collections import Counter

    import httpx

    config = httpx.get(f"{space[0]}config", timeout=STATE_CEILING_S).json()
    by_id = {c["id"]: c for c in config["components"]}
    frames = [c["props"].get("elem_id") for c in config["components"] if c["type"] == "dataframe"]
    assert frames == ["queue-table"], frames
    assert set(config["page"]) == {"", "submit"}  # no Arena: the host left it off
    root_types = Counter(by_id[i]["type"] for i in config["page"][""]["components"])
    assert root_types.pop("navbar") == 1 and set(root_types) <= {"api"}, root_types  # gr.api's own components
    submit_ids = {by_id[i]["props"].get("elem_id") for i in config["page"]["submit"]["components"]}
    assert {"submit-file", "submit-name", "submit-button", "submit-status", "queue-table"} <= submit_ids
    root = httpx.get(space[0], timeout=STATE_CEILING_S)
    assert root.status_code == 200 and '<main id="board"' in root.text and "gradio_config" not in root.text
    submit = httpx.get(f"{space[0]}?tab=submit", follow_redirects=True, timeout=STATE_CEILING_S)
    assert submit.url.path == "/submit" and "gradio_config" in submit.text


def test_a_submit_naming_a_server_path_gets_a_message(space, tmp_path):
    """Issue 24 point 15: a raw-HTTP /submit whose FileData names a file nobody uploaded was refused as
    {"error": null}; it gets a message saying why (and the file is neither read nor deleted)."""
    import httpx

    secret = tmp_path / "refs.json"
    secret.write_text(json.dumps({"secret-study": "PRIVATE"}))
    response = httpx.post(f"{space[0]}gradio_api/call/submit", timeout=STATE_CEILING_S, json={"data": [
        {"path": str(secret), "meta": {"_type": "gradio.FileData"}}, "Probe", "", "", None, "", [], "iu_xray",
        "findings"]})
    answer = httpx.get(f"{space[0]}gradio_api/call/submit/{response.json()['event_id']}", timeout=STATE_CEILING_S).text
    assert "event: error" in answer and "not uploaded by a user" in answer, answer
    assert "PRIVATE" not in answer and secret.exists()


def _raw_call(url: str, api: str, data: list) -> str:
    """The SSE answer of a raw HTTP call to a gr.api endpoint (what any client, not only gradio_client, may send)."""
    import httpx

    response = httpx.post(f"{url}gradio_api/call/{api}", timeout=STATE_CEILING_S, json={"data": data})
    return httpx.get(f"{url}gradio_api/call/{api}/{response.json()['event_id']}", timeout=STATE_CEILING_S).text


def test_table_api_refuses_wrong_types_with_a_message(space):
    """gr.api passes any JSON through: a number as the search, a string where a list goes, a year that is not a
    number or an unknown trained choice failed inside the view (the caller got the exception's text, or after
    point 5 the generic line). Each is now refused with one line naming the argument and what it takes."""
    base = ["iu_xray", "findings", "", None, None, None, "all", None, None, "radcliq_v1"]
    for index, value, expected in ((2, 5, "search must be text"),
                                   (3, "Stanford", "institutions must be a list of text or null"),
                                   (4, ["x"], "years must be a list of whole numbers or null"),
                                   (6, "maybe", "trained must be one of all, exclude, only")):
        data = list(base)
        data[index] = value
        answer = _raw_call(space[0], "table", data)
        assert "event: error" in answer and expected in answer, (value, answer)
    assert "event: complete" in _raw_call(space[0], "table", [*base[:4], [2024], *base[5:]])


def test_an_unexpected_error_reaches_the_client_as_a_generic_message(store, caplog):
    """Issue 24 point 5: the Space launches with show_error=True (for gradio's own refusals, above), which also sent
    the text of any exception our code did not expect. A view that fails unexpectedly (here a lock error naming a
    host path, raised by the board's own view) reaches a raw HTTP caller as the generic line; the traceback goes to
    the host's log."""
    import logging

    from leaderboard_helpers import free_port
    from rexrank.leaderboard.gradio_compat import UNEXPECTED
    from rexrank.leaderboard.views import Views
    from rexrank.leaderboard.wiring import build_app

    class LockedViews(Views):
        def leaderboard(self):
            raise RuntimeError("database /srv/private/references.sqlite is locked")

    caplog.set_level(logging.ERROR, logger="rexrank.leaderboard")
    demo = build_app(store, views=LockedViews(store))
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, show_error=True)
    try:
        answer = _raw_call(f"http://127.0.0.1:{port}/", "leaderboard", [])
    finally:
        demo.close()
    assert "event: error" in answer and json.dumps(UNEXPECTED)[1:-1] in answer, answer
    assert "/srv/private" not in answer and "RuntimeError" not in answer, answer
    assert any("leaderboard_api" in r.getMessage() and r.exc_info for r in caplog.records)


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
    status, _ = client.predict(handle_file(str(path)), "Shifted refs", "QA", "https://example.org", 2025,
                               "baseline", [], "iu_xray", "findings", api_name="/submit")
    assert "queued" in status
    jobs = _wait_done(store, 1)
    assert jobs[0]["status"] == "done", jobs[0]["error"]
    refs = references("iu_xray", split="test", track="findings")
    preds = json.loads(path.read_text())
    expected = rexrank.score([preds[i] for i in refs], list(refs.values()), metrics=["bleu2"])["bleu_score"].mean()
    row = next(r for r in client.predict("iu_xray", "findings", "Shifted", api_name="/table")["data"])
    # scored on BLEU-2 only (this host has no official weights): not ranked, and the row says what it has
    assert row[0] == "–" and row[1] == "Shifted refs (no 1/RadCliQ-v1: 1 of 8 metrics)"
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

    from rexrank.leaderboard.views import md_text

    _, store, _, _ = space
    before = store.counts()["submissions"]
    path = iu_predictions(tmp_path / "bad.json", corrupt={"not-a-study": "x", "CXR3030_IM-1405": ""})
    status, _ = client.predict(handle_file(str(path)), "Bad", "", "", None, "", [], "iu_xray", "findings",
                               api_name="/submit")
    assert status.startswith("Submission rejected:")  # the API answers plain text (issue 49 point 7)
    assert "not-a-study" in status and "CXR3030_IM-1405" in status and md_text("CXR3030_IM-1405") not in status
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
                                      capture_output=True, text=True, env=env, timeout=STATE_CEILING_S)
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
    ranked = board.display_table(df, board.board_metrics(store, "findings"))
    row = ranked[ranked["Model"].str.startswith("Only-BLEU")].iloc[0]
    assert row["Rank"] == "–"
    assert row["Model"] == "Only-BLEU (no 1/RadCliQ-v1: 1 of 8 metrics)"
    assert row["Source"].endswith("scored on BLEU")
    by_bleu = board.display_table(df, board.board_metrics(store, "findings"), sort_by="bleu2")
    assert by_bleu.iloc[0]["Model"] == "Only-BLEU" and by_bleu.iloc[0]["Rank"] == "1"
    # the published rows keep their order by BLEU, each ranked among the rows with a BLEU value
    bleu_ranks = [int(r) for r in by_bleu["Rank"] if r != "–"]
    assert bleu_ranks == sorted(bleu_ranks) and bleu_ranks[:2] == [1, 2]
    # ranked rows carry no label
    assert not any("metrics)" in m for m in ranked["Model"] if not m.startswith("Only-BLEU"))



# -- the views, without gradio (rexrank.leaderboard.views) ---------------------------------------------------------

@pytest.fixture(scope="module")
def seeded(tmp_path_factory):
    from rexrank.leaderboard.published import seed_store

    store = Store(tmp_path_factory.mktemp("views") / "s.sqlite")
    seed_store(store)
    return store


def _with(store_path, *names: tuple[str, str]) -> Store:
    """A store with one rexrank-scored IU-Xray row per (name, institution)."""
    from leaderboard_helpers import add_scored_result

    store = Store(store_path)
    for k, (name, institution) in enumerate(names):
        add_scored_result(store, name, bleu=0.5 + k / 100, institution=institution)
    return store


def test_page_tables_hold_every_row_and_an_empty_result_shows_none(seeded):
    """Point 3: a table is always its filters' and search's current result; nothing matching shows no rows (never
    the unfiltered table) and a message naming exactly what to clear."""
    from rexrank.leaderboard.views import Views, md_text

    views = Views(seeded)
    page = views.page_table("iu_xray", "findings")
    assert len(page.frame) == len(page.full) == 31 and page.empty == "" and page.datatypes[1] == "markdown"
    assert any(cell.startswith("[MAIRA-2](") for cell in page.frame["Model"])
    assert page.label.startswith("IU-Xray · Findings: ranked by 1/RadCliQ-v1")
    nothing = views.page_table("iu_xray", "findings", search="no such model", institutions=["Stanford"])
    assert nothing.frame.empty and list(nothing.frame.columns) == list(page.frame.columns)
    assert nothing.empty == ("**No model matches these filters.** Clear Search “no such model”, Institution to "
                             "see rows again.")
    trained = views.page_table("iu_xray", "findings", trained="only", years=[2019])
    assert trained.frame.empty and "Year, Trained on this dataset" in trained.empty
    assert md_text("- [x](javascript:y) *b* | c") == "\\- \\[x\\](javascript:y) \\*b\\* \\| c"
    assert md_text("12. <b>") == "12\\. &lt;b&gt;" and md_text("RadPhi3.5-Vision") == "RadPhi3.5-Vision"
    # A search is free text the visitor typed: quoted back in the message, a link in it stays text.
    hostile = views.page_table("iu_xray", "findings", search="[win](https://evil.example)\n# big")
    assert "Search “\\[win\\](https://evil.example) # big”" in hostile.empty


def test_search_matches_the_name_as_shown_not_its_markdown(tmp_path):
    """Point 7: the page's cell holds the escaped Markdown (h\\_space); search matches the name itself and the
    institution, case-insensitively, on the server."""
    from rexrank.leaderboard.views import Views

    views = Views(_with(tmp_path / "s.sqlite", ("h_space", "Lab *one*"), ("Other", "QA")))
    assert views.page_table("iu_xray", "findings").frame["Model"].str.contains("h\\_space", regex=False).any()
    assert [m for m in views.page_table("iu_xray", "findings", search="h_space").shown["model"]] == ["h_space"]
    assert list(views.page_table("iu_xray", "findings", search="LAB *ONE").shown["model"]) == ["h_space"]


# Names with digits, hyphens, dots and brackets as the board has them (issue 37 point 4).
_NAMES = ("MAIRA-2", "MedGemma", "MedVersa", "RadPhi3.5Vision", "Qwen2-VL (7B)", "CheXpertPlus-CheX-MIMIC",
          "GPT-4V", "LLaVA-Rad", "Cvt2distilgpt2-IU")


def _found(query: str, names=_NAMES) -> list[str]:
    """The names a search finds among ``names`` (each with institution "Lab"), by the board's own filter."""
    frame = pd.DataFrame({"model": list(names), "institution": ["Lab"] * len(names)})
    frame["search_key"] = [board.SEARCH_SEPARATOR.join(map(search_key, (n, "Lab"))) for n in names]
    return list(board.filter_table(frame, search=query)["model"])


@pytest.mark.parametrize("query, expected", [
    ("maira 2", ["MAIRA-2"]), ("MAIRA-2", ["MAIRA-2"]), ("maira2", ["MAIRA-2"]), ("Maira_2", ["MAIRA-2"]),
    ("medgemma", ["MedGemma"]), ("med gemma", ["MedGemma"]), ("MAIRA-2|MedGemma", ["MAIRA-2", "MedGemma"]),
    ("maira medgemma", ["MAIRA-2", "MedGemma"]), ("MAIRA-2, MedGemma", ["MAIRA-2", "MedGemma"]),
    ("radphi 3.5", ["RadPhi3.5Vision"]), ("radphi35", ["RadPhi3.5Vision"]), ("qwen2 vl 7b", ["Qwen2-VL (7B)"]),
    ("Qwen2-VL (7B)", ["Qwen2-VL (7B)"]), ("gpt 4v", ["GPT-4V"]), ("chexpert plus mimic", ["CheXpertPlus-CheX-MIMIC"]),
    ("cvt2 distilgpt2", ["Cvt2distilgpt2-IU"]), ("llava rad", ["LLaVA-Rad"]), ("  MEDVERSA  ", ["MedVersa"]),
    ("no such model", []), ("maira|", ["MAIRA-2"]),
])
def test_search_ignores_case_spaces_and_punctuation_and_takes_several_terms(query, expected):
    """Issue 37 point 4: search like a person types: case, spaces and punctuation ignored, several terms at once
    (``|``, ``,`` or words that are not one name together); words that read together in a name stay one term
    ("maira 2" is not "maira" or "2", which would find every name with a 2)."""
    assert _found(query) == expected


def test_search_terms_join_words_only_where_a_name_has_them_together():
    assert board.search_terms("maira 2", ["malra2\nlab"]) == ["malra2"]
    assert board.search_terms("maira 2", ["malra1\nlab"]) == ["malra", "2"]
    assert board.search_terms("maira medgemma", ["malra2", "medgemma"]) == ["malra", "medgemma"]
    assert board.search_terms(" - | ; ", ["malra2"]) == []  # nothing to search for: every row stays
    assert _found(" - ") == list(_NAMES)
    # hostile input: a huge query is read up to SEARCH_CHARS (one key scan per word, never a million)
    assert len(board.search_terms("a " * 1_000_000 + "medgemma", ["medgemma"])) == board.SEARCH_CHARS // 2
    # one owner of the folding: the key of a search and of a name come from records.search_key (name_key's rule)
    assert search_key("MAIRA\u20112") == search_key("maira 2") == search_key("MAIRA_2") == "malra2"


def test_the_views_memo_holds_one_generation_and_recomputes_when_it_changes(tmp_path):
    """Issue 36 point 2: one memo, keyed by the store's generation: a value is computed once per generation and key,
    only the current generation is kept, and a change to the store is seen at once."""
    from leaderboard_helpers import add_scored_result

    from rexrank.leaderboard.views import Views

    store = _with(tmp_path / "m.sqlite", ("First", "QA"))
    views = Views(store)
    calls = []
    compute = lambda: calls.append(1) or len(calls)  # noqa: E731
    assert views.memoized(("k",), compute) == views.memoized(("k",), compute) == 1
    assert list(views.page_table("iu_xray", "findings").shown["model"]) == ["First"]
    held = len(views._memo[1])
    views.page_table("iu_xray", "findings", search="fir")  # a search is not a key: the memo does not grow
    views.page_table("iu_xray", "findings", search="other")
    assert len(views._memo[1]) == held
    add_scored_result(store, "Second", bleu=0.9)
    assert views.memoized(("k",), compute) == 2 and len(views._memo[1]) == 1  # the old generation is dropped
    assert sorted(views.page_table("iu_xray", "findings").shown["model"]) == ["First", "Second"]
    assert json.loads(views.results_json("iu_xray", "findings"))["results"][0].keys().isdisjoint(
        board.INTERNAL_COLUMNS)
    # the frame handed out is a copy: changing it leaves the memo's
    views.numeric("iu_xray", "findings").drop(index=0, inplace=True)
    assert len(views.numeric("iu_xray", "findings")) == 2
    assert not hasattr(board, "_CACHE") and not hasattr(views, "_json_cache")


def test_csv_cells_a_spreadsheet_would_evaluate_are_prefixed(tmp_path):
    """Point 13 (OWASP CSV injection): text cells starting with = + - @ tab or CR get a leading '; numbers and
    other text are unchanged."""
    import csv
    import io

    from rexrank.leaderboard.views import Views, csv_safe

    names = [('=HYPERLINK("http://x.example","y")', "+cmd"), ("@SUM(A1)", "-2+3"), ("\tTabbed", "=1+1"),
             ("Plain-name", "QA")]
    rows = list(csv.DictReader(io.StringIO(Views(_with(tmp_path / "s.sqlite", *names)).csv_text("iu_xray",
                                                                                                 "findings"))))
    cells = {(r["model"], r["institution"]) for r in rows}
    assert cells == {("'" + m, "'" + i) if m != "Plain-name" else (m, i) for m, i in names}
    assert all(float(r["bleu2"]) > 0 for r in rows)  # numbers untouched
    assert csv_safe("\rx") == "'\rx" and csv_safe(-1.5) == -1.5 and csv_safe("a=b") == "a=b"


def test_rank_follows_the_chosen_sort_for_hidden_and_shown_columns(seeded):
    """Point 8: Rank is the position in the chosen sort, the same rule whether the sort column is shown or not."""
    from rexrank.leaderboard import board

    df = board.numeric_table(seeded, "iu_xray", "findings_impression")
    shown = board.display_table(df, ["bleu2", "fineradscore"], sort_by="fineradscore")
    hidden = board.display_table(df, ["bleu2"], sort_by="fineradscore")
    assert list(hidden["Rank"]) == list(shown["Rank"]) and list(hidden["Model"]) == list(shown["Model"])
    ranked = [int(r) for r in hidden["Rank"] if r != "–"]
    assert ranked == sorted(ranked) and ranked[0] == 1 and hidden["Rank"].iloc[-1] == "–"  # UniRG-CXR: no value
    best = df.loc[df["fineradscore"].idxmax(), "model"]
    assert hidden.iloc[0]["Model"] == best


def test_institutions_are_shown_as_published(seeded):
    """Issue 34 point 7: published metadata as published: "Microsoft Research" (UniRG-CXR, CARE-X, MAIRA-2) is not
    rewritten to "Microsoft" in the table, its filter or the model page (an alias used to do that)."""
    from rexrank.leaderboard import board
    from rexrank.leaderboard.views import Views

    views = Views(seeded)
    assert "Microsoft Research" in views.filter_choices("iu_xray", "findings").institutions
    research = views.page_table("iu_xray", "findings", institutions=["Microsoft Research"]).shown
    assert {"UniRG-CXR", "CARE-X"} <= set(research["model"]) and set(research["institution"]) == {
        "Microsoft Research"}
    assert seeded.model("UniRG-CXR")["institution"] == "Microsoft Research"
    assert "Microsoft Research" in views.model_view("UniRG-CXR")[1]
    assert board.institution_label(" Microsoft Research ") == "Microsoft Research"


def test_published_radcliq_that_its_components_contradict_is_marked(seeded):
    """Issue 34 point 6: a published 1/RadCliQ-v1 is checked, at import, against the interval its row's 3-decimal
    components allow (interval arithmetic through RadCliQ-v1's linear formula) widened by its own rounding: no row of
    today's Findings tables is marked (UniRG-CXR on IU-Xray, 4.804, lies in [4.779, 4.871]; the old fixed 0.004
    tolerance marked it and two others), the Findings + Impression rows outside their interval are, with both
    values, and rexrank-scored rows never are."""
    from rexrank.leaderboard import board
    from rexrank.leaderboard.published import radcliq_interval
    from rexrank.leaderboard.records import DATASETS
    from rexrank.metrics.radcliq import radcliq_v1

    low, high = radcliq_interval({"bleu2": 0.376, "bertscore": 0.636, "semb": 0.701, "radgraph": 0.398})
    assert (round(low, 3), round(high, 3)) == (4.780, 4.870) and low < 4.804 < high
    marked, total = [], 0
    for dataset in DATASETS:
        assert board.numeric_table(seeded, dataset, "findings")["radcliq_components"].isna().all()
        df = board.numeric_table(seeded, dataset, "findings_impression")
        total += len(df)
        for _, row in df.iterrows():
            parts = {m: row[m] for m in ("bleu2", "bertscore", "semb", "radgraph")}
            low, high = radcliq_interval(parts)
            outside = row["radcliq_v1"] + 0.0005 < low or row["radcliq_v1"] - 0.0005 > high
            assert pd.notna(row["radcliq_components"]) == outside, (dataset, row["model"])
            if outside:
                mine = 1 / radcliq_v1(row["radgraph"], row["bertscore"], row["semb"], row["bleu2"])
                assert row["radcliq_components"] == pytest.approx(mine)
                marked.append((dataset, row["model"]))
    assert total == 28 and len(marked) == 12 and ("rexgradient", "GPT4V") in marked
    shown = board.display_table(board.numeric_table(seeded, "rexgradient", "findings_impression"),
                                board.board_metrics(seeded, "findings_impression"))
    gpt = shown[shown["Model"] == "GPT4V"].iloc[0]
    assert gpt["1/RadCliQ-v1 ↑"] == "0.605 †"
    assert gpt["Source"] == "published · † 1/RadCliQ-v1 0.605 published, 0.659 from its components"
    assert not shown[shown["Model"] == "MedVersa"].iloc[0]["1/RadCliQ-v1 ↑"].endswith("†")
    iu = board.display_table(board.numeric_table(seeded, "iu_xray", "findings"),
                             board.board_metrics(seeded, "findings"))
    assert not iu["1/RadCliQ-v1 ↑"].str.contains("†").any()
    assert iu[iu["Model"] == "UniRG-CXR"].iloc[0]["1/RadCliQ-v1 ↑"] == "4.804"


def test_about_is_for_readers_and_lists_the_quirks(seeded):
    """About: no host instructions (seeding, flags); the known quirks include the RadCliQ disagreement; both papers
    are cited (the 2024 preprint and the PSB 2026 study, shared/reference/citations.bib); the default edition's
    columns, CRIMSON among them, are explained."""
    from rexrank.leaderboard import about
    from rexrank.leaderboard.published import KNOWN_QUIRKS

    text = about.markdown()
    assert "seed_store" not in text and "--no-seed" not in text and "``" not in text
    assert all(f"- {quirk}" in text for quirk in KNOWN_QUIRKS)
    assert "0.605 published, 0.659 from its components" in text and "shown as one" not in text
    assert "arXiv:2411.15122" in about.CITATION_BIBTEX
    assert "@inproceedings{zhang2025automated," in about.CITATION_BIBTEX
    assert "Biocomputing 2026: Proceedings of the Pacific Symposium" in about.CITATION_BIBTEX
    assert "- **CRIMSON** (higher is better ↑)" in text and "- **1/FineRadScore**" in text
    assert "- **1/FineRadScore**" in about.markdown(edition="2025") and "CRIMSON" not in about.markdown(edition="2025")


def test_model_page_orders_datasets_like_the_tabs(seeded):
    from rexrank.leaderboard import board
    from rexrank.leaderboard.records import DATASET_LABELS, DATASETS, TRACK_LABELS, TRACKS

    page = board.model_page(seeded, "MedVersa")
    assert list(zip(page["Dataset"], page["Track"])) == [(DATASET_LABELS[d], TRACK_LABELS[t]) for d in DATASETS
                                                         for t in TRACKS]


def test_the_queue_says_when_it_is_empty_and_a_status_follows_its_job(tmp_path):
    from rexrank.leaderboard.views import QUEUED, Views

    store = Store(tmp_path / "s.sqlite")
    service = Submissions(store, tmp_path / "up")
    views = Views(store, service)
    assert views.queue_note() == "The queue is empty: no submissions yet." and views.queue_view().empty
    job = service.submit(iu_predictions(tmp_path / "p.json"), {"name": "Queued"}, "iu_xray", "findings")
    assert views.submit_status(job).startswith(f"{QUEUED}{job} queued")
    assert views.queue_note().startswith("1 submission waiting")
    service.work_once()
    assert views.submit_status(job).startswith(f"{QUEUED}{job} done")


def test_a_board_with_no_rows_builds_its_app(store):
    """A store without results (a host's --no-seed, or a test set nobody submitted to) still builds the Space's
    gradio app (the pages' views on such a store: test_board_pages.py)."""
    from rexrank.leaderboard.wiring import build_app

    assert build_app(store) is not None


def test_the_gradio_workarounds_are_for_the_installed_gradio():
    """gradio_compat's workarounds were checked on the minor versions in ``TESTED``; pyproject pins their range. When
    gradio leaves it, this fails: re-check each workaround (and the tests that pin them) before widening it."""
    import tomllib
    from pathlib import Path

    from rexrank.leaderboard import gradio_compat

    assert gradio_compat.tested(), gradio_compat.gradio_version()
    assert len(gradio_compat.TESTED) >= 2  # issue 48: the range covers two minor versions the suite passed on
    assert gradio_compat.pin() == ">=6.30,<6.32"
    project = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    pins = [d for deps in project["project"]["optional-dependencies"].values() for d in deps
            if d.startswith("gradio>") or d.startswith("gradio[")]
    assert pins and all(p.endswith(gradio_compat.pin()) for p in pins), pins


def test_the_gradio_version_is_written_once_and_agrees_everywhere():
    """Issue 36 point 4: ``gradio_compat.TESTED`` owns the gradio versions; every other place that must name them (the
    Space's requirements and card, each metric card's ``sdk_version``, the lock in constraints.txt) agrees with it:
    the range where a range is written, the newest tested minor where one version is; a bump that misses one fails
    here, naming the file."""
    import re
    from pathlib import Path

    from rexrank.leaderboard import gradio_compat

    major, minor = max(gradio_compat.TESTED)
    root = Path(__file__).resolve().parents[1]
    cards = sorted(root.glob("metrics/*/README.md")) + [root / "spaces/leaderboard/README.md"]
    assert len(cards) > 10
    wrong = []
    for card in cards:
        found = re.findall(r"^sdk_version:\s*(\S+)\s*$", card.read_text(), re.M)
        if len(found) != 1 or not found[0].startswith(f"{major}.{minor}."):
            wrong.append(f"{card.relative_to(root)}: sdk_version {found}")
    requirement = re.findall(r"^gradio(?:\[[^]]*\])?(\S+)$", (root / "spaces/leaderboard/requirements.txt").read_text(), re.M)
    if requirement != [gradio_compat.pin()]:
        wrong.append(f"spaces/leaderboard/requirements.txt: gradio{requirement}")
    lock = re.findall(r"^gradio==(\S+)$", (root / "constraints.txt").read_text(), re.M)
    if len(lock) != 1 or not lock[0].startswith(f"{major}.{minor}."):
        wrong.append(f"constraints.txt: gradio=={lock}")
    assert not wrong, f"gradio {gradio_compat.pin()} (gradio_compat.TESTED) is not what these say: {wrong}"


def _fonts_of_bold_text(page_theme) -> dict[str, set[str]]:
    """The fonts Chromium drew each bold or semibold text of a small page with, launched with ``page_theme``
    (None: gradio's Default), as the platform reports them (CSS.getPlatformFontsForNode): {(family, a web font)}."""
    import gradio as gr

    from leaderboard_helpers import chromium, free_port

    texts = {"md-bold": "**BertScore BLEU CARE-X BiomedGPT-IU**", "md-heading": "## BertScore BLEU CARE-X"}
    with gr.Blocks() as demo:
        for elem_id, text in texts.items():
            gr.Markdown(text, elem_id=elem_id)
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, theme=page_theme)
    try:
        with chromium() as browser:
            page = browser.new_page()
            page.goto(f"http://127.0.0.1:{port}/", wait_until="load")
            page.wait_for_selector("#md-heading h2", timeout=STATE_CEILING_MS)
            page.evaluate("() => document.fonts.ready")
            cdp = page.context.new_cdp_session(page)
            cdp.send("DOM.enable")
            cdp.send("CSS.enable")
            root = cdp.send("DOM.getDocument", {"depth": -1})["root"]["nodeId"]
            drawn = {}
            for elem_id, selector in (("md-bold", "#md-bold strong"), ("md-heading", "#md-heading h2")):
                node = cdp.send("DOM.querySelector", {"nodeId": root, "selector": selector})["nodeId"]
                fonts = cdp.send("CSS.getPlatformFontsForNode", {"nodeId": node})["fonts"]
                drawn[elem_id] = {(f["familyName"], f["isCustomFont"]) for f in fonts if f["glyphCount"]}
            return drawn
    finally:
        demo.close()


@pytest.mark.browser
def test_bold_text_is_drawn_in_one_face():
    """gradio_compat.theme (issue 37 point 7): gradio 6.31's semibold font files hold a few glyphs, so bold text
    mixed Source Sans Pro with the system's sans. With the board's theme every letter is drawn in one web font; with
    gradio's Default some are in a system font (when that part fails, gradio fixed its files: drop the workaround)."""
    from rexrank.leaderboard.assets import theme

    ours, gradios = _fonts_of_bold_text(theme()), _fonts_of_bold_text(None)
    # One web font (the Bold file calls itself "Source Sans 3") for every letter; gradio's draws some in a system font.
    assert all(len(fonts) == 1 and all(web for _, web in fonts) for fonts in ours.values()), ours
    assert any(not web for fonts in gradios.values() for _, web in fonts), gradios

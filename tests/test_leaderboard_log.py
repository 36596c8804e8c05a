"""The store as one log (issue 24): every change the board shows is an event, one generation keys every view, the
Hub copy carries all of it, and nothing impossible gets in, whichever way it comes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from leaderboard_helpers import loopback_hub

from rexrank.errors import InputError
from rexrank.leaderboard import board
from rexrank.leaderboard.hub_sync import EVENTS_PREFIX, PREFIX, HubSync, request_entry
from rexrank.leaderboard.published import bundled_tables, import_published
from rexrank.leaderboard.records import (DATASETS, HOST, TRACKS, MetricValue, ModelInfo, Provenance, ResultRecord,
                                         from_results_json)
from rexrank.leaderboard.store import Store, StoreError, event_hash, make_event
from rexrank.leaderboard.views import Views
from rexrank.metrics.official import UnofficialWeightsError



def _record(name: str, bleu: float = 0.2, *, source: str = "rexrank", ci: float | None = 0.02, **metrics) -> ResultRecord:
    values = {"bleu2": MetricValue(bleu, None if ci is None else bleu - ci, None if ci is None else bleu + ci)}
    values.update(metrics)
    return ResultRecord(model=ModelInfo(name=name), dataset="iu_xray", split="test", track="findings", source=source,
                        metrics=values, n_studies=590)


def _results_json(path: Path, *, bleu=0.2, low=None, high=None, dataset="iu_xray", n_studies=590, **fields) -> Path:
    data = {"dataset": dataset, "split": "test" if dataset else None, "track": "findings", "n_studies": n_studies,
            "metrics": {"bleu2": {"mean": bleu, "ci_low": bleu - 0.02 if low is None else low,
                                  "ci_high": bleu + 0.02 if high is None else high}}, **fields}
    path.write_text(json.dumps(data))
    return path


@pytest.fixture
def hub(monkeypatch):
    with loopback_hub(monkeypatch) as pair:
        yield pair


# -- issue point 1: an edit or a hand-over reaches the board at once -----------------------------------------------
def test_edit_model_and_hand_over_show_at_once_through_the_cli(tmp_path, cli):
    """The board's views are cached by Store.version(); before the log, an edit did not change it, so the page kept
    the old institution (and, after a hand-over, the old owner's row) until some unrelated result arrived."""
    path = tmp_path / "board.sqlite"
    store = Store(path)
    store.add_result(_record("Team B", 0.3), provenance=Provenance("hf:bob", "space"))
    store.add_result(_record("Host model", 0.2))
    assert set(board.numeric_table(store, "iu_xray", "findings")["model"]) == {"Team B", "Host model"}
    versions = [store.version()]

    code, text = cli("leaderboard", "edit-model", "host model", "--institution", "New Lab", "--store", str(path))
    assert code == 0, text
    table = board.numeric_table(store, "iu_xray", "findings")
    assert table.set_index("model").loc["Host model", "institution"] == "New Lab"
    versions.append(store.version())

    # Hand Team B's name to alice: bob's row leaves the board at once (only the owner's and the host's rows show).
    code, text = cli("leaderboard", "edit-model", "Team B", "--owner", "hf:alice", "--store", str(path))
    assert code == 0, text
    assert set(board.numeric_table(store, "iu_xray", "findings")["model"]) == {"Host model"}
    versions.append(store.version())
    assert len(set(versions)) == 3
    # The header's "Last updated" dates the edit too, not only the newest result.
    assert board.last_updated(store) > max(item["created_at"] for item in store.results())
    # An edit that changes nothing records nothing (and so refreshes nothing).
    cli("leaderboard", "edit-model", "Host model", "--institution", "New Lab", "--store", str(path))
    assert store.version() == versions[-1]
    store.close()


def test_every_kind_of_change_bumps_the_generation_once(store):
    seen = [store.generation()]

    def changed():
        seen.append(store.generation())
        assert seen[-1] == seen[-2] + 1, seen

    store.add_result(_record("Host model"))
    changed()
    job = store.enqueue(content_hash="h1", user="alice", identity="hf:alice", model=ModelInfo(name="Team A"),
                        dataset="iu_xray", split="test", track="findings", predictions_path="p", metrics=["bleu2"])
    changed()
    assert store.claim()["id"] == job
    changed()
    store.finish(job, _record("Team A", 0.25, source="submission"))
    changed()
    store.edit_model("Team A", institution="Alice Lab")
    changed()
    store.edit_model("Team A", owner="hf:carol")
    changed()
    assert store.claim() is None and store.generation() == seen[-1]  # a poll of an empty queue changes nothing
    version = store.version()
    assert hash(version) is not None and version != Store(store.path.with_name("other.sqlite")).version()


# -- issue point 2 and the log: a restart from the Hub shows the same board ------------------------------------------
def _board_data(store: Store) -> dict:
    """Everything the board shows, from the store and from the page's functions."""
    data = {"models": store.models(), "all": store.results(latest=False, include_hidden=True)}
    for dataset in DATASETS:
        for track in TRACKS:
            data[dataset, track] = store.results(dataset, track)
            data["table", dataset, track] = board.numeric_table(store, dataset, track).to_json(orient="split")
    for track in TRACKS:  # (as JSON: a table's NaN cells compare equal there)
        data["overview", track] = board.overview(store, track).to_json(orient="split")
    for model in store.models():
        data["page", model["name"]] = board.model_page(store, model["name"]).to_json(orient="split")
    data["queue"] = [request_entry(job) for job in store.submissions(None)]
    data["/leaderboard"] = json.dumps(Views(store).leaderboard(), sort_keys=True)  # the Space's JSON API
    return data


@pytest.mark.slow  # 2.1 s of CPU of its own: over the fast tier's 2 s or near it (tests/README.md, "Tiers")
def test_every_change_survives_a_restart_from_the_hub(tmp_path, hub):
    api, server = hub
    origin = Store(tmp_path / "origin.sqlite")
    sync = HubSync(origin, "org/results", requests_repo="org/requests", api=api)
    sync.pull_with_retries()
    sync.start()
    versions = [origin.version()]
    import_published(origin, bundled_tables())  # published rows: registrations, details filled from later tables
    origin.add_result(_record("Host model", 0.21))  # a result under a new name
    job = origin.enqueue(content_hash="h1", user="alice", identity="hf:alice", model=ModelInfo(name="Team A"),
                         dataset="iu_xray", split="test", track="findings", predictions_path="p", metrics=["bleu2"])
    origin.claim()
    origin.finish(job, _record("Team A", 0.25, source="submission"))  # a submission scored
    origin.edit_model("Team A", institution="Alice Lab", url="https://alice.example", year=2025)  # details edited
    origin.edit_model("MedVersa", owner="hf:carol")  # a published name handed over to its team
    origin.add_result(_record("MedVersa", 0.3, source="submission"), provenance=Provenance("hf:carol", "space"))
    origin.edit_model("Host model", owner="hf:dave", trained_on=["mimic_cxr"])  # both at once
    versions.append(origin.version())
    assert sync.flush(60), sync.last_error
    sync.stop()
    before = _board_data(origin)
    assert versions[1] != versions[0]
    assert origin.model("MedVersa")["owner"] == "hf:carol" and origin.model("Team A")["institution"] == "Alice Lab"

    restored = Store(tmp_path / "restored.sqlite")  # an empty disk
    assert HubSync(restored, "org/results", requests_repo="org/requests", api=api).pull() > 0
    assert _board_data(restored) == before
    assert any(path.startswith(EVENTS_PREFIX) for path in server.repo("org/results").files)
    # Pulling again adds nothing and changes nothing.
    version = restored.version()
    assert HubSync(restored, "org/results", requests_repo="org/requests", api=api).pull() == 0
    assert restored.version() == version
    origin.close()
    restored.close()


def test_two_boards_on_one_repo_converge_and_never_rewrite_a_file(tmp_path, hub):
    api, server = hub
    one, two = Store(tmp_path / "one.sqlite"), Store(tmp_path / "two.sqlite")
    sync_one, sync_two = (HubSync(s, "org/results", api=api) for s in (one, two))
    one.add_result(_record("M"))
    sync_one.sync()
    sync_two.sync()
    one.edit_model("M", institution="Lab one", year=2024)  # concurrent edits, before either board syncs
    two.edit_model("M", institution="Lab two", url="https://m.example", owner="hf:alice")  # the later edit
    files = {}
    for sync in (sync_one, sync_two, sync_one, sync_two):
        sync.sync()
        repo = dict(server.repo("org/results").files)
        assert all(repo[path] == data for path, data in files.items())  # files are only ever added
        files = repo
    assert one.models() == two.models()
    assert [(m["institution"], m["year"], m["url"], m["owner"]) for m in one.models()] == [
        ("Lab two", 2024, "https://m.example", "hf:alice")]  # every edit, the later one winning where they meet
    assert len([p for p in files if p.startswith(EVENTS_PREFIX)]) == 4  # register, two edits, one hand-over
    one.close()
    two.close()


def test_events_apply_in_their_recorded_order_whatever_order_they_arrive_in(tmp_path, store):
    store.add_result(_record("M"))
    store.edit_model("M", institution="First")
    store.edit_model("M", institution="Second", owner="hf:alice")
    store.edit_model("M", url="https://m.example")
    events = [event for _, event in store.events()]
    assert [e["kind"] for e in events] == ["register", "edit", "edit", "owner", "edit"]
    for i, order in enumerate((events[::-1], events[2:] + events[:2])):
        other = Store(tmp_path / f"other{i}.sqlite")
        for event in order:  # one pull per event, the newest first: each older one is replayed into place
            other.add_events([event])
        assert [(m["name"], m["owner"], m["institution"], m["url"]) for m in other.models()] == [
            ("M", "hf:alice", "Second", "https://m.example")]
        assert other.add_events(events) == 0  # idempotent
        other.close()


def test_a_hostile_or_damaged_repo_file_changes_nothing(tmp_path, hub):
    api, server = hub
    good = make_event("register", "Good", 1.0, HOST, owner=HOST,
                      details={"institution": None, "url": None, "year": None, "model_type": None, "trained_on": []})

    forged = dict(good, owner="hf:mallory")  # content that does not hash to its name
    bad_result = {**_record("Bad").to_json(), "metrics": {"bleu2": {"mean": float("inf")}}}
    repo = server.repo("org/results")
    repo.files.update({
        f"{EVENTS_PREFIX}{event_hash(good)}.json": json.dumps(good).encode(),
        f"{EVENTS_PREFIX}{event_hash(good)[::-1]}.json": json.dumps(forged).encode(),
        f"{EVENTS_PREFIX}{'0' * 64}.json": b"not json",
        f"{PREFIX}{'1' * 64}.json": json.dumps(bad_result).encode(),
        f"{PREFIX}{'2' * 64}.json": json.dumps({"model": "x"}).encode()})
    store = Store(tmp_path / "board.sqlite")
    sync = HubSync(store, "org/results", api=api)
    assert sync.pull() == 1  # the good event only
    assert sorted(sync.refused) == sorted([f"{EVENTS_PREFIX}{event_hash(good)[::-1]}.json",
                                           f"{EVENTS_PREFIX}{'0' * 64}.json", f"{PREFIX}{'1' * 64}.json",
                                           f"{PREFIX}{'2' * 64}.json"])
    assert [(m["name"], m["owner"]) for m in store.models()] == [("Good", HOST)] and not store.results()
    store.close()


# -- issue point 14: nothing impossible is stored, whichever way it comes -------------------------------------------
@pytest.mark.parametrize("metrics, n_studies, message", [
    ({"bleu2": MetricValue(float("inf"))}, 590, "'bleu2': mean is inf, not a finite number"),
    ({"bleu2": MetricValue(float("nan"))}, 590, "'bleu2': mean is nan, not a finite number"),
    ({"bleu2": MetricValue(5.0, 4.9, 5.1)}, 590, "'bleu2': mean 5 is outside the metric's range [0, 1]"),
    ({"bleu2": MetricValue(0.5, 0.1, 0.2)}, 590, "'bleu2': mean 0.5 is outside its own CI"),
    ({"bleu2": MetricValue(0.5, 0.6, 0.4)}, 590, "'bleu2': ci_low 0.6 is above ci_high 0.4"),
    ({"semb": MetricValue(-1.5)}, 590, "'semb': mean -1.5 is outside the metric's range [-1, 1]"),
    ({"radcliq_v1": MetricValue(float("-inf"))}, 590, "'radcliq_v1': mean is -inf"),
    ({"bleu2": MetricValue("0.5")}, 590, "'bleu2': mean is '0.5', not a number"),
    ({"bleu2": MetricValue(0.5)}, -5, "n_studies is -5"),
    ({"bleu2": MetricValue(0.5)}, 0, "n_studies is 0"),
])
def test_impossible_numbers_are_refused_before_anything_is_stored(store, metrics, n_studies, message):
    record = ResultRecord(model=ModelInfo(name="X"), dataset="iu_xray", split="test", track="findings",
                          source="published", metrics=metrics, n_studies=n_studies)
    generation = store.generation()
    with pytest.raises(InputError) as error:
        store.add_result(record)
    assert message in str(error.value) and "\n" not in str(error.value)
    assert store.counts() == {"models": 0, "results": 0, "submissions": 0} and store.generation() == generation


def test_possible_numbers_pass(store):
    ok = {"bleu2": MetricValue(1.0, 0.99, 1.0), "radcliq_v1": MetricValue(-3.2, -3.5, -3.0),
          "bertscore": MetricValue(-0.05), "fineradscore": MetricValue(0.0)}
    store.add_result(ResultRecord(model=ModelInfo(name="X"), dataset="iu_xray", split="test", track="findings",
                                  source="published", metrics=ok, n_studies=1))
    assert store.counts()["results"] == 1


def test_every_path_in_checks_the_numbers(tmp_path, store, cli):
    # `leaderboard add`: JSON's Infinity, an impossible BLEU, a mean outside its CI, a string: one line each, exit 2.
    cases = {"inf.json": dict(bleu=float("inf")), "five.json": dict(bleu=5.0, low=4.9, high=5.1),
             "ci.json": dict(bleu=0.5, low=0.1, high=0.2), "negative.json": dict(n_studies=-5),
             "string.json": dict(bleu="0.2x", low=0.1, high=0.3)}
    for name, fields in cases.items():
        code, text = cli("leaderboard", "add", str(_results_json(tmp_path / name, **fields)), "--name", "X",
                         "--store", str(store.path), "--no-seed")
        errors = [line for line in text.splitlines() if line.startswith("error:")]
        assert code == 2 and "Traceback" not in text and len(errors) == 1, text
        assert name in errors[0] and ("bleu2" in errors[0] or "n_studies" in errors[0]), text
    assert "'0.2x', not a number" in text
    assert store.counts()["results"] == 0
    # The Python API: from_results_json and add_result.
    data = json.loads(_results_json(tmp_path / "api.json", bleu=5.0, low=4.9, high=5.1).read_text())
    with pytest.raises(InputError, match="outside the metric's range"):
        store.add_result(from_results_json(data, ModelInfo(name="X")))
    # A submission's finish: the job is not marked done, nothing is stored.
    job = store.enqueue(content_hash="h", user=None, model=ModelInfo(name="Anon"), dataset="iu_xray", split="test",
                        track="findings", predictions_path="p", metrics=["bleu2"])
    store.claim()
    with pytest.raises(InputError):
        store.finish(job, _record("Anon", 5.0, source="submission"))
    assert store.submissions()[0]["status"] == "running" and store.counts()["results"] == 0


def test_unofficial_weights_are_refused_through_the_python_api_too(store):
    """The official-weights check is the store's (records.check_weights), not only the CLI's."""
    data = {"dataset": "iu_xray", "split": "test", "track": "findings", "n_studies": 590,
            "metrics": {"semb": {"mean": 0.4, "ci_low": 0.38, "ci_high": 0.42}}, "configs": {"semb": {}}}
    record = from_results_json(data, ModelInfo(name="Standin"))
    with pytest.raises(UnofficialWeightsError, match="unofficial weights: semb.*allow_unofficial_weights=True"):
        store.add_result(record)
    hand_made = _record("Hand", semb=MetricValue(0.4))  # no verdict at all: nothing shows its weights
    with pytest.raises(UnofficialWeightsError):
        store.add_result(hand_made)
    assert store.counts()["results"] == 0
    store.add_result(hand_made, allow_unofficial_weights=True)
    [row] = store.results("iu_xray", "findings")
    assert row["extra"]["weights"]["label"] == "unofficial weights: semb"  # the board labels it
    # bleu2 needs no weights; a published row is the reference.
    store.add_result(_record("Plain"))
    assert len(store.results("iu_xray", "findings")) == 2


def test_a_damaged_store_file_is_one_line_through_the_cli(tmp_path, cli):
    results = _results_json(tmp_path / "r.json")
    not_sqlite = tmp_path / "not.sqlite"
    not_sqlite.write_bytes(b"this is not a database\n" * 200)
    truncated = tmp_path / "truncated.sqlite"
    store = Store(truncated)
    import_published(store, bundled_tables())
    store.close()
    truncated.write_bytes(truncated.read_bytes()[:8192])
    for path in (not_sqlite, truncated):
        for args in (("add", str(results), "--name", "X"), ("edit-model", "MedVersa", "--year", "2024")):
            code, text = cli("leaderboard", *args, "--store", str(path))
            assert code == 2 and "Traceback" not in text and text.count("\n") == 1, text
            assert f"{path} is not a readable rexrank store" in text and "rexrank leaderboard sync" in text, text
    with pytest.raises(StoreError, match="not a readable rexrank store"):
        Store(not_sqlite)


# -- issue point 17: many at once, --references results, the fixed cost -------------------------------------------
def test_bulk_add_checks_every_file_first_and_stores_all_in_one_transaction(tmp_path, cli):
    path = tmp_path / "board.sqlite"
    files = [str(_results_json(tmp_path / f"r{i}.json", bleu=0.1 + i / 100)) for i in range(5)]
    bad = str(_results_json(tmp_path / "bad.json", bleu=float("inf")))
    code, text = cli("leaderboard", "add", *files, bad, "--name", "X", "--store", str(path), "--no-seed")
    assert code == 2 and "bad.json" in text and "none of the 6 files was added" in text, text
    assert not path.exists()  # checked before the store was even opened
    code, text = cli("leaderboard", "add", files[0], "--name", "X", "--store", str(path), "--no-seed")
    store = Store(path)
    generation = store.generation()
    code, text = cli("leaderboard", "add", *files, "--name", "X", "--store", str(path))
    assert code == 0 and text.count("added: result") == 4 and "already stored as #1" in text, text
    assert store.generation() == generation + 1  # one transaction
    assert len(store.results("iu_xray", "findings", latest=False)) == 5
    store.close()


def test_bulk_add_names_each_model_from_its_own_results_json(tmp_path, cli):
    path = tmp_path / "board.sqlite"
    files = [str(_results_json(tmp_path / f"{name}.json", model=name)) for name in ("Alpha", "Beta")]
    code, text = cli("leaderboard", "add", *files, "--store", str(path), "--no-seed")
    assert code == 0 and "(Alpha, iu_xray" in text and "(Beta, iu_xray" in text, text
    code, text = cli("leaderboard", "add", str(_results_json(tmp_path / "anon.json")), "--store", str(path))
    assert code == 2 and "anon.json: names no model: pass --name" in text, text


def test_a_references_run_needs_dataset_and_is_added_under_it(tmp_path, cli):
    path = tmp_path / "board.sqlite"
    results = _results_json(tmp_path / "refs.json", dataset=None)
    code, text = cli("leaderboard", "add", str(results), "--name", "X", "--store", str(path), "--no-seed")
    assert code == 2 and "--dataset NAME" in text and "Unknown dataset" not in text, text
    code, text = cli("leaderboard", "add", str(results), "--name", "X", "--dataset", "iu", "--store", str(path))
    assert code == 0 and "(X, iu_xray test, findings)" in text, text
    code, text = cli("leaderboard", "add", str(_results_json(tmp_path / "mimic.json")), "--name", "Y",
                     "--dataset", "mimic_cxr", "--store", str(path))
    assert code == 2 and "scored on dataset 'iu_xray', not 'mimic_cxr'" in text, text


def test_add_imports_no_scoring_stack(tmp_path):
    """The fixed cost of `leaderboard add` was imports (the harness, pandas, numpy): it needs none of them."""
    import subprocess
    import sys

    code = ("import sys; from rexrank.cli import main; "
            f"rc = main(['leaderboard', 'add', {str(_results_json(tmp_path / 'r.json'))!r}, '--name', 'X', "
            f"'--store', {str(tmp_path / 's.sqlite')!r}, '--no-seed']); "
            "print(rc, sorted(m for m in ('numpy', 'pandas', 'torch', 'rexrank.evaluation.harness') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**__import__("os").environ, "HF_HUB_OFFLINE": "1"}).stdout
    assert out.strip().splitlines()[-1] == "0 []"


def test_an_impossible_published_cell_skips_its_row_with_a_note(tmp_path, store):
    """The published importer goes through Store.add_result too: a table with an impossible cell (a host's own
    folder of tables) loses that row, with a note naming it, and keeps the others."""
    source = bundled_tables() / "findings_result_iu_xray.csv"
    lines = source.read_text(encoding="utf-8").splitlines()
    header, first = lines[0].split(","), lines[1].split(",")
    first[header.index("BLEU")] = "5.0"
    (tmp_path / source.name).write_text("\n".join([lines[0], ",".join(first), *lines[2:]]), encoding="utf-8")
    report = import_published(store, tmp_path)
    assert report["added"] == report["rows"] - 1 == len(lines) - 2
    assert any(f"{first[header.index('Model Name')]} not imported" in note and "bleu2" in note
               for note in report["notes"]), report["notes"]


# -- issue 27 point 4: the host's meta-evaluation on the board ----------------------------------------------------
def _meta_eval_json(path: Path) -> Path:
    """A meta_eval.json as `rexrank meta-eval` writes it (meta_eval.agreement on a small synthetic expert set, then
    its output files), with two metrics, a note and the published-values block."""
    import numpy as np

    from rexrank.data.expert_sets import ExpertSet
    from rexrank.evaluation import meta_eval as me

    rng = np.random.default_rng(3)
    errors = rng.poisson(0.3, size=(40, 6, 6, 2)).astype(float)
    expert = ExpertSet("rexval", [str(i // 4) for i in range(40)], ["c"] * 40, ["ref"] * 40, ["hyp"] * 40,
                       [str(r) for r in range(6)], list(range(1, 7)), errors, "memory")
    total = errors.sum(axis=(1, 2, 3)) / 6
    report = me.agreement({"bleu2": -total + rng.normal(size=40), "radgraph": -total + 0.1 * rng.normal(size=40)},
                          expert, resamples=50, seed=4)
    report = {"dataset": "rexval", **report, "notes": ["2 raters scored a subset"],
              "published": {"values": me.PUBLISHED, "note": me.PUBLISHED_NOTE}}
    path.write_bytes(me.output_files(report)["meta_eval.json"])
    return path


def test_meta_eval_is_published_as_an_event_and_viewed_as_a_table(tmp_path, store, cli):
    """`leaderboard add-meta-eval` stores one meta_eval event (aggregates only: no settings text, no rater ids, no
    per-category targets), a second add of the same file adds nothing, the generation moves, and the pure view
    gives one row per metric with its taus, intervals, the raters' ceiling and the verdicts."""
    from rexrank.leaderboard.views import META_EVAL_EMPTY, meta_eval_markdown, meta_eval_table

    path = _meta_eval_json(tmp_path / "meta_eval.json")
    report = json.loads(path.read_text())
    assert meta_eval_table(None) == [] and META_EVAL_EMPTY in meta_eval_markdown(None)
    assert META_EVAL_EMPTY in Views(store).about_markdown() and "#meta-" not in Views(store).about_markdown()
    before = store.generation()
    code, text = cli("leaderboard", "add-meta-eval", str(path), "--store", str(store.path))
    assert code == 0 and text.startswith("published"), text
    code, text = cli("leaderboard", "add-meta-eval", str(path), "--store", str(store.path))
    assert code == 0 and "nothing added" in text, text
    (digest, event), = store.events(("meta_eval",))
    assert store.generation() == before + 1 and digest == event_hash(event)
    stored = json.dumps(event)
    for absent in ("per_rater", "category_", "statistic", report["published"]["note"][:30]):
        assert absent not in stored
    summary = store.meta_eval()
    rows = meta_eval_table(summary)
    assert [r["name"] for r in rows] == ["bleu2", "radgraph"]
    radgraph = report["metrics"]["radgraph"]["targets"]
    t, s = radgraph["total"], radgraph["significant"]
    assert rows[1]["tau vs all errors [CI]"] == f"{t['tau']:.2f} [{t['ci_low']:.2f}, {t['ci_high']:.2f}]"
    assert rows[1]["tau vs significant errors [CI]"] == f"{s['tau']:.2f} [{s['ci_low']:.2f}, {s['ci_high']:.2f}]"
    assert f"{report['raters']['total']['mean']:.2f}" in rows[0]["raters' ceiling"]
    verdicts = [test["verdict"] for test in report["pairwise"][0]["tests"].values() if test["significant"]]
    assert verdicts and all(any(v in line for line in rows[0]["verdicts"]) for v in verdicts)


def test_meta_eval_about_links_resolve_to_rows(tmp_path, store):
    """Each metric's About entry with a published row links to #meta-<metric>, and exactly one element of the About
    text carries that id; metrics without a row get no link; the section is titled "Metrics vs radiologists"."""
    import re

    from rexrank.leaderboard.views import META_EVAL_TITLE
    from rexrank.metrics import boards

    store.add_meta_eval(json.loads(_meta_eval_json(tmp_path / "m.json").read_text()))
    text = Views(store).about_markdown()
    assert f"## {META_EVAL_TITLE}" in text
    links = re.findall(r"\]\(#(meta-[a-z0-9_]+)\)", text)
    ids = re.findall(r'id="(meta-[a-z0-9_]+)"', text)
    assert sorted(links) == ["meta-bleu2", "meta-radgraph"] and sorted(ids) == sorted(set(ids)) == sorted(links)
    for link in links:  # the link is in its metric's entry, the row in the section below
        name = link[len("meta-"):]
        assert name in boards.edition().all_metrics()
        entry = next(line for line in text.splitlines() if f"(#{link})" in line)
        assert entry.index(f"(#{link})") > 0 and text.index(f"(#{link})") < text.index(f"## {META_EVAL_TITLE}")
        assert text.index(f'id="{link}"') > text.index(f"## {META_EVAL_TITLE}")


def _hostile(report: dict, case: str) -> dict:
    hostile = json.loads(json.dumps(report))
    if case == "report text":
        hostile["metrics"]["bleu2"]["hypothesis"] = "FINDINGS: a 3 cm mass in the right upper lobe."
    elif case == "report list":
        hostile["reports"] = ["FINDINGS: the lungs are clear."]
    elif case == "infinity":
        hostile["metrics"]["bleu2"]["targets"]["total"]["tau"] = float("inf")
    elif case == "huge note":
        hostile["notes"] = ["x" * 100_000]
    elif case == "huge label":
        hostile["metrics"]["bleu2"]["label"] = "BLEU " * 1000
    elif case == "multi-line verdict":
        hostile["pairwise"][0]["tests"]["total"]["verdict"] = "ok\nFINDINGS: heart size normal."
    elif case == "not a metric name":
        hostile["metrics"]["<img src=x onerror=alert(1)>"] = hostile["metrics"].pop("bleu2")
    elif case == "rater ids kept as a number field":
        hostile["raters"]["total"]["reader_1_report"] = 0.5
    return hostile


@pytest.mark.parametrize("case", ["report text", "report list", "infinity", "huge note", "huge label",
                                  "multi-line verdict", "not a metric name", "rater ids kept as a number field"])
def test_a_hostile_meta_eval_is_refused_with_one_line_and_stores_nothing(tmp_path, store, cli, case):
    from rexrank.evaluation.meta_eval_report import MetaEvalError

    report = json.loads(_meta_eval_json(tmp_path / "good.json").read_text())
    hostile = _hostile(report, case)
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(hostile))  # json writes float("inf") as Infinity, which json.loads reads back
    code, text = cli("leaderboard", "add-meta-eval", str(path), "--store", str(store.path))
    assert code == 2 and "Traceback" not in text and text.count("\n") == 1 and len(text) < 500, text
    assert f"{path}: meta-eval" in text and "meta_eval.json" in text, text
    with pytest.raises(MetaEvalError):
        store.add_meta_eval(hostile)
    assert store.events(("meta_eval",)) == [] and store.meta_eval() is None


def test_meta_eval_round_trips_through_the_hub_and_a_hostile_file_there_is_skipped(tmp_path, hub):
    """Pushed as events/<hash>.json like every event; a restart into an empty store shows the same About text. A
    repo file holding a meta_eval event with report text in it (its name its true hash) is refused on the pull."""
    api, server = hub
    report = json.loads(_meta_eval_json(tmp_path / "m.json").read_text())
    origin = Store(tmp_path / "origin.sqlite")
    digest, added = origin.add_meta_eval(report)
    assert added
    HubSync(origin, "org/results", api=api).push()
    repo = server.repo("org/results")
    assert f"{EVENTS_PREFIX}{digest}.json" in repo.files
    (_, event), = origin.events(("meta_eval",))
    hostile = json.loads(json.dumps(event))
    hostile["meta_eval"]["notes"].append("x" * 5000)
    hostile["meta_eval"]["metrics"]["bleu2"]["report"] = "FINDINGS: a 3 cm mass."
    repo.files[f"{EVENTS_PREFIX}{event_hash(hostile)}.json"] = json.dumps(hostile).encode()
    restored = Store(tmp_path / "restored.sqlite")
    sync = HubSync(restored, "org/results", api=api)
    assert sync.pull() == 1
    assert sync.refused == [f"{EVENTS_PREFIX}{event_hash(hostile)}.json"]
    assert restored.meta_eval() == origin.meta_eval()
    assert Views(restored).about_markdown() == Views(origin).about_markdown()
    origin.close()
    restored.close()

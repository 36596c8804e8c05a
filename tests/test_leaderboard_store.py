"""The leaderboard store, the published-table importer and the board views: what the Space shows comes from here."""

from __future__ import annotations

import json
import math
import sqlite3

import pytest

from rexrank.errors import InputError
from rexrank.leaderboard import board
from rexrank.leaderboard.published import bundled_tables, import_published, parse_table
from rexrank.leaderboard.records import MetricValue, ModelInfo, ResultRecord, from_results_json
from rexrank.leaderboard.store import SCHEMA_VERSION, Store, StoreError


@pytest.fixture
def seeded(store):
    import_published(store, bundled_tables())
    return store


# The verdict `from_results_json` gives a results.json scored with the official weights (RadCliQ-v1 needs them).
OFFICIAL = {"weights": {"official": ["radcliq_v1"], "unofficial": [], "unverified": [], "label": ""}}


def _record(name="M", mean=0.5, dataset="iu_xray", track="findings", **kw):
    return ResultRecord(model=ModelInfo(name=name), dataset=dataset, split="test", track=track, source="rexrank",
                        metrics={"bleu2": MetricValue(mean, mean - 0.1, mean + 0.1),
                                 "radcliq_v1": MetricValue(2.0, 1.6, 2.5)}, n_studies=590,
                        extra={**OFFICIAL, **kw.pop("extra", {})}, **kw)


def test_new_store_is_wal_and_current_schema(store):
    assert store.schema_version() == SCHEMA_VERSION
    assert store.connection().execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.integrity_check() == "ok"


def _store_of_schema(path, version: int) -> bytes:
    """A store as a development rexrank of schema ``version`` left it (a results table with one row, WAL as every
    rexrank store is); its bytes."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE models (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, created_at REAL NOT NULL)")
    conn.execute("CREATE TABLE results (id INTEGER PRIMARY KEY, model_id INTEGER NOT NULL, dataset TEXT NOT NULL,"
                 " metrics TEXT NOT NULL, content_hash TEXT NOT NULL UNIQUE, created_at REAL NOT NULL)")
    conn.execute("INSERT INTO models(name, created_at) VALUES ('Old', 0)")
    conn.execute("INSERT INTO results(model_id, dataset, metrics, content_hash, created_at)"
                 " VALUES (1, 'iu_xray', '{}', 'h', 0)")
    conn.execute(f"PRAGMA user_version = {version}")
    conn.commit()
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    return path.read_bytes()


@pytest.mark.parametrize("version", [1, 3, 5, SCHEMA_VERSION - 1])
def test_an_older_store_is_refused_untouched(tmp_path, version):
    """Development stores are not migrated (0.1.0 was never released): one line naming the file and the ways to
    build a store again, and the file keeps every byte (no migration, no journal mode change)."""
    path = tmp_path / "old.sqlite"
    before = _store_of_schema(path, version)
    with pytest.raises(StoreError) as refused:
        Store(path)
    message = str(refused.value)
    assert "\n" not in message and str(path) in message and f"schema {version}, older than" in message
    assert "leaderboard sync --repo ORG/NAME --store NEW_PATH" in message and "import-published" in message
    assert path.read_bytes() == before
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT name FROM models").fetchall() == [("Old",)]
    conn.close()


def test_a_sqlite_file_of_another_program_is_refused_untouched(tmp_path):
    path = tmp_path / "other.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)")
    conn.commit()
    conn.close()
    before = path.read_bytes()
    with pytest.raises(StoreError, match="not a rexrank store"):
        Store(path)
    assert path.read_bytes() == before


def test_newer_store_is_refused(tmp_path):
    path = tmp_path / "new.sqlite"
    before = _store_of_schema(path, SCHEMA_VERSION + 1)
    with pytest.raises(StoreError, match="newer than this rexrank") as refused:
        Store(path)
    assert "upgrade rexrank" in str(refused.value)
    assert path.read_bytes() == before


def test_same_result_stored_once_and_history_kept(store):
    first, new = store.add_result(_record(mean=0.5))
    again, new_again = store.add_result(_record(mean=0.5))
    assert new and not new_again and first == again
    store.add_result(_record(mean=0.6))
    assert [r["metrics"]["bleu2"]["mean"] for r in store.results("iu_xray", "findings")] == [0.6]
    assert len(store.results("iu_xray", "findings", latest=False)) == 2


def test_failed_write_leaves_store_unchanged(store):
    store.add_result(_record())
    with pytest.raises(RuntimeError):
        with store.transaction() as conn:
            store.add_result(_record(mean=0.9), conn)
            raise RuntimeError("crash mid-transaction")
    assert store.counts()["results"] == 1 and store.integrity_check() == "ok"


def test_published_import_counts_quirks_and_is_idempotent(store):
    report = import_published(store, bundled_tables())
    # The bundled seed: today's four Findings tables (31 models each) and the 2025 Findings + Impression ones (7 each).
    assert report["files"] == 8 and report["rows"] == report["added"] == 4 * 31 + 4 * 7
    # One summarising note for the UniRG-CXR rows without 1/FineRadScore (not one per table)...
    assert len(report["notes"]) == 1 and "UniRG-CXR 1/FineRadScore (4 of 8 tables)" in report["notes"][0]
    again = import_published(store, bundled_tables())
    assert again["added"] == 0 and again["notes"] == []  # ...and none when nothing new was stored
    assert again["unchanged"] == 4 * 31 + 4 * 7 and again["changed"] == again["withdrawn"] == 0
    assert store.counts()["models"] == 31  # CheXpertPlus_MIMIC and CheXpertPlus-MIMIC are one model


def test_board_shows_published_values_exactly(seeded, shared_dir):
    """Stored means are reciprocals for 1/RadCliQ-v1 and 1/FineRadScore; the board must show the published cells."""
    import csv

    with open(shared_dir / "data/leaderboard_published/gh-pages_result_iu_xray.csv") as fh:
        published = {row["Model Name"].replace("_", "-"): row for row in csv.DictReader(fh)}
    df = board.numeric_table(seeded, "iu_xray", "findings_impression")
    assert len(df) == 7
    for _, row in df.iterrows():
        cells = published[row["model"]]
        assert row["radcliq_v1"] == pytest.approx(float(cells["1/RadCliQ-v1"]), abs=1e-12)
        assert row["bleu2"] == pytest.approx(float(cells["BLEU"]), abs=1e-12)
        if (cells.get("1/FineRadScore") or "").strip():
            assert row["fineradscore"] == pytest.approx(float(cells["1/FineRadScore"]), abs=1e-12)
        else:
            assert math.isnan(row["fineradscore"])
    assert list(df["rank"][:2]) == [1, 2] and df["radcliq_v1"].is_monotonic_decreasing


def test_zero_fineradscore_cell_is_missing_not_infinite():
    text = "Rank,Date,Model Name,Institution,Model URL,BLEU,BertScore,SembScore,RadGraph,1/RadCliQ-v1,RaTEScore,GREEN,1/FineRadScore\n1,2025,X,I,https://x,0.1,0.2,0.3,0.4,1.0,0.5,0.6,0"
    records, notes = parse_table(text, "chexpert_plus", "validation", "findings")
    assert "fineradscore" not in records[0].metrics and "lacks 1/FineRadScore" in notes[0]


def test_reciprocal_ci_is_swapped(store):
    store.add_result(_record())
    row = board.numeric_table(store, "iu_xray", "findings").iloc[0]
    assert (row["radcliq_v1"], row["radcliq_v1_low"], row["radcliq_v1_high"]) == pytest.approx((0.5, 0.4, 0.625))
    shown = board.display_table(board.numeric_table(store, "iu_xray", "findings"),
                                board.board_metrics(store, "findings"))
    assert shown.loc[0, "1/RadCliQ-v1 ↑"] == "0.500 [0.400, 0.625]"
    assert shown.loc[0, "BLEU ↑"] == "0.500 [0.400, 0.600]"


def test_filters_narrow_the_table(seeded):
    df = board.numeric_table(seeded, "mimic_cxr", "findings")
    assert set(board.filter_table(df, search="chexpert")["model"]) == {
        "CheXpertPlus-MIMIC", "CheXpertPlus-CheX", "CheXpertPlus-CheX-MIMIC"}
    assert set(board.filter_table(df, institutions=["CSIRO"])["institution"]) == {"CSIRO"}
    assert set(board.filter_table(df, years=[2025])["year"]) == {2025}
    assert board.filter_table(df, trained="only").empty


def test_trained_on_filter_and_model_page(store):
    store.add_result(ResultRecord(model=ModelInfo(name="T", trained_on=["iu_xray"]), dataset="iu_xray", split="test",
                                  track="findings", source="rexrank", metrics={"radcliq_v1": MetricValue(1.0)},
                                  extra=OFFICIAL))
    store.add_result(_record(name="U"))
    df = board.numeric_table(store, "iu_xray", "findings")
    assert list(board.filter_table(df, trained="exclude")["model"]) == ["U"]
    assert list(board.filter_table(df, trained="only")["model"]) == ["T"]
    page = board.model_page(store, "U")
    assert page.loc[0, "Dataset"] == "IU-Xray" and page.loc[0, "Studies"] == "590"


def test_metadata_is_sanitised():
    with pytest.raises(InputError, match=r"markup characters \(< >\)"):  # a name is refused (issue 39)
        ModelInfo.from_dict({"name": "<script>alert(1)</script>Evil <b>Model</b>"})
    info = ModelInfo.from_dict({"name": "Evil Model", "institution": "A\x00B <b>Uni</b>", "year": "2025",
                                "trained_on": "iu_xray, mimic_cxr"})
    assert info.institution == "AB ‹b›Uni‹/b›"  # other fields: angle brackets become look-alikes
    assert info.year == 2025
    assert info.trained_on == ["iu_xray", "mimic_cxr"]
    for bad, message in (({"name": ""}, "name is required"), ({"name": "x", "url": "javascript:alert(1)"}, "url must"),
                         ({"name": "x", "year": 3000}, "out of range"), ({"name": "x", "trained_on": ["nope"]},
                                                                         "trained_on: Unknown dataset 'nope'")):
        with pytest.raises(InputError, match=message):
            ModelInfo.from_dict(bad)


def test_results_json_to_record_keeps_aggregates_only(store):
    results = {"dataset": "iu_xray", "split": "test", "track": "findings", "n_studies": 590,
               "metrics": {"bleu2": {"mean": 0.2, "ci_low": 0.18, "ci_high": 0.22, "higher_is_better": True}},
               "versions": {"rexrank": "0.1.0"}}
    record = from_results_json(results, ModelInfo(name="Mine"))
    assert record.metrics["bleu2"] == MetricValue(0.2, 0.18, 0.22) and record.extra["versions"]["rexrank"] == "0.1.0"
    with pytest.raises(InputError, match="lacks the field 'metrics'"):
        from_results_json({"dataset": "iu_xray", "split": "test", "track": "findings"}, ModelInfo(name="x"))


def test_agreement_and_ranks(seeded):
    matrix = board.metric_agreement(seeded, "iu_xray")
    assert matrix.shape == (8, 8) and matrix.iloc[0, 0] == pytest.approx(1.0)
    ranks = board.ranks_across_datasets(seeded)
    assert set(ranks["dataset"]) == {"ReXGradient", "MIMIC-CXR", "IU-Xray", "CheXpert Plus"}
    assert board.overview(seeded).loc[0, "Model"] == "UniRG-CXR"


def test_the_overview_and_model_page_follow_the_layouts_the_page_sizes(seeded, monkeypatch):
    """The page sizes the overview and the model page from board's layouts (views.overview_widths,
    views.model_page_widths): the tables hold the layouts' columns in their order, one width each. The ranking
    column's values are found as data, not by parsing their label back: renamed, they are still formatted."""
    from rexrank.leaderboard import views

    overview, layout = board.overview(seeded), board.overview_layout()
    assert set(overview.columns) <= set(layout) and list(overview.columns) == [c for c in layout if c in overview]
    assert len(views.overview_widths()) == len(layout)
    page = board.model_page(seeded, overview.loc[0, "Model"])
    assert list(page.columns) == board.model_page_layout() and len(views.model_page_widths()) == len(page.columns)
    monkeypatch.setattr(board, "metric_name", lambda metric: "1/RadCliQ-vX" if metric == board.PRIMARY else metric)
    renamed = board.overview(seeded)
    values = [c for c in renamed.columns if c.endswith(" 1/RadCliQ-vX")]
    assert len(values) == 4 and list(renamed.columns) == [c for c in board.overview_layout() if c in renamed]
    for column in values:
        assert renamed[column].str.fullmatch(r"\d+\.\d{3}|–").all(), column


class FakeHub:
    """A dataset repo in memory, speaking the HfApi calls HubSync uses."""

    def __init__(self, tmp_path):
        self.files: dict[str, bytes] = {}
        self.tmp = tmp_path
        self.commits = 0

    def list_repo_files(self, repo_id, repo_type):
        return list(self.files)

    def create_commit(self, repo_id, operations, repo_type, commit_message):
        self.commits += 1
        for op in operations:
            self.files[op.path_in_repo] = op.path_or_fileobj

    def hf_hub_download(self, repo_id, filename, repo_type, local_dir):
        target = self.tmp / filename.replace("/", "_")
        target.write_bytes(self.files[filename])
        return str(target)


def test_hub_sync_both_ways(tmp_path, seeded):
    from rexrank.leaderboard.hub_sync import HubSync

    hub = FakeHub(tmp_path)
    assert HubSync(seeded, "org/results", api=hub).push() == 152 + 31  # every result, every name's registration
    assert HubSync(seeded, "org/results", api=hub).push() == 0 and hub.commits == 1
    assert len([f for f in hub.files if f.startswith("events/")]) == 31
    other = Store(tmp_path / "other.sqlite")
    other.add_result(_record(name="Local"))
    assert HubSync(other, "org/results", api=hub).sync() == {"pulled": 152 + 31, "pushed": 2}
    assert other.counts()["results"] == 153 and other.counts()["models"] == 32
    assert json.loads(hub.files[next(iter(hub.files))])["source"] == "published"


def test_listeners_hear_each_committed_change_and_nothing_else(store):
    """The Hub sync pushes on these signals: every write that changed a row, never an empty poll or a rollback."""
    heard = []
    store.add_listener(lambda: heard.append(1))
    store.add_result(_record())
    assert len(heard) == 1
    assert store.claim() is None and len(heard) == 1  # the worker's poll of an empty queue changes nothing
    with pytest.raises(RuntimeError):
        with store.transaction() as conn:
            conn.execute("UPDATE models SET institution = 'x'")
            raise RuntimeError("rolled back")
    assert len(heard) == 1
    store.edit_model("M", institution="Lab")
    assert len(heard) == 2


def test_model_page_shows_every_metric_its_results_hold(store):
    """A model's other per-report metrics (RadEval-BERTScore, SRR-BERT, temporal F1, RadCliQ-v0) appear on its page
    after the ReXrank columns, named and directed by the registry, with CIs (a private set's rounded); a name this
    rexrank does not know is left out; the ranking table keeps only the ReXrank columns."""
    from rexrank.leaderboard.views import md_text, other_metrics_markdown
    from rexrank.metrics import REGISTRY

    others = {"radeval_bertscore": MetricValue(0.61234, 0.6, 0.62), "srrbert": MetricValue(0.41234, 0.4, 0.43),
              "temporal_f1": MetricValue(0.71234, 0.7, 0.73), "radcliq_v0": MetricValue(2.5, 2.4, 2.6),
              "mystery_metric": MetricValue(0.5, 0.4, 0.6)}
    verdict = {"weights": {"official": ["radcliq_v1", *others], "unofficial": [], "unverified": [], "label": ""}}
    for dataset in ("iu_xray", "rexgradient"):  # an open and a private set
        record = _record(name="W", dataset=dataset, extra=verdict)
        record.metrics.update(others)
        store.add_result(record)
    store.add_result(_record(name="Plain"))
    table = board.model_other_metrics(store, "W")
    order = [n for n in REGISTRY.names() if n in others]  # registry order, whatever order the results held
    assert list(table.columns) == ["Dataset", "Track", *(board.column_label(n) for n in order)]
    assert board.column_label("radcliq_v0").endswith("↓") and board.column_label("temporal_f1").endswith("↑")
    open_row = table[table["Dataset"] == board.DATASET_LABELS["iu_xray"]].iloc[0]
    assert open_row[board.column_label("temporal_f1")] == board.fmt(0.71234, 0.7, 0.73) == "0.712 [0.700, 0.730]"
    private_row = table[table["Dataset"] == board.DATASET_LABELS["rexgradient"]].iloc[0]
    assert private_row[board.column_label("srrbert")] == "0.412 [0.400, 0.430]"
    assert not any("mystery" in c for c in table.columns)
    assert not set(table.columns[2:]) & set(board.model_page(store, "W").columns)
    text = other_metrics_markdown(table)
    assert "Other metrics (not ReXrank columns)" in text
    assert md_text(board.column_label("temporal_f1")) in text and md_text("0.612 [0.600, 0.620]") in text
    assert board.model_other_metrics(store, "Plain").empty and other_metrics_markdown(
        board.model_other_metrics(store, "Plain")) == ""


def _package_problems(package) -> list[str]:
    """What breaks the store package's rule (issue 36 point 1): a module over 600 lines, or a name starting with
    "_" imported from another module of the package (what two parts share is a public name of its owner)."""
    import ast

    problems = []
    for path in sorted(package.glob("*.py")):
        text = path.read_text()
        if len(text.splitlines()) > 600:
            problems.append(f"{path.name}: over 600 lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("rexrank.leaderboard.store"):
                problems += [f"{path.name} imports {node.module}.{a.name}" for a in node.names if a.name.startswith("_")]
    return problems


def test_the_store_is_small_modules_sharing_no_private_name(tmp_path):
    import shutil
    from pathlib import Path

    import rexrank.leaderboard.store as package

    folder = Path(package.__file__).parent
    assert sorted(p.stem for p in folder.glob("*.py")) == ["__init__", "arena", "connection", "events", "log", "queue"]
    assert _package_problems(folder) == []
    copy = shutil.copytree(folder, tmp_path / "store")
    with open(copy / "queue.py", "a") as out:  # the check sees a private helper shared across modules
        out.write("from rexrank.leaderboard.store.log import _fold\n" + "\n" * 600)
    assert _package_problems(copy) == ["queue.py: over 600 lines", "queue.py imports rexrank.leaderboard.store.log._fold"]

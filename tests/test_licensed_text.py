"""Licensed reference text never leaves the machine that scored it (issue 49 point 1).

A canary is planted in the reference reports of every licensed set (MIMIC-CXR, CheXpert Plus, ReXGradient: the
catalog's ``licensed``); submissions to each are scored by the real worker, the store is pushed to a loopback Hub, and
the canary is looked for in every file the board wrote, the pushed repo and the logs. It may only be in owner-only
files of the scoring machine (the score cache); never in the store, the repo or a log line. IU-Xray's open text is
the positive control: the same scan finds it where it is meant to be.
"""

from __future__ import annotations

import json
import logging
import os
import stat
from pathlib import Path

import pytest

from leaderboard_helpers import iu_predictions, loopback_hub
from rexrank.data import catalog
from rexrank.leaderboard.store import Store

# (sentence the synthetic writers put in reports, the same with a canary). CheXpert Plus's text is all caps.
_SENTENCE = "No focal consolidation"
CANARIES = {"mimic_cxr": "zqcanarymimic", "chexpert_plus": "ZQCANARYCHEXPERT", "rexgradient": "zqcanarygradient"}


def test_the_licensed_sets_are_the_gated_and_private_ones():
    assert catalog.licensed_datasets() == frozenset(CANARIES)
    assert not catalog.licensed("iu_xray")


def _plant(root: Path, sentence: str, canary: str) -> int:
    """Add ``canary`` after every ``sentence`` in the text files of a synthetic tree; how many files changed."""
    changed = 0
    for path in root.rglob("*"):
        if path.suffix in (".txt", ".csv", ".json") and path.is_file():
            text = path.read_text(encoding="utf-8")
            if sentence in text:
                path.write_text(text.replace(sentence, f"{sentence} {canary}"), encoding="utf-8")
                changed += 1
    return changed


@pytest.fixture(scope="module")
def licensed_trees(tmp_path_factory):
    """DATA/<set>: synthetic copies of the three licensed sets (tiny images), a canary in their reports."""
    from rexrank.data import synthetic

    root = tmp_path_factory.mktemp("licensed-data")
    synthetic.write_mimic_cxr_tree(root / "mimic_cxr", compress_csv=False)
    synthetic.write_chexpert_plus_tree(root / "chexpert_plus")
    synthetic.write_rexgradient_tree(root / "rexgradient", n_studies=40)
    for name, canary in CANARIES.items():
        sentence = _SENTENCE.upper() if name == "chexpert_plus" else _SENTENCE
        assert _plant(root / name, sentence, canary), name
    return root


def _predictions(path: Path, name: str, data_dir: Path, cache: Path) -> Path:
    """A prediction for every study of the set's findings track: a fixed two-sentence report."""
    from rexrank.data import load

    studies = load(name, data_dir=data_dir / name, track="findings", cache_dir=cache)
    references = "".join(studies["reference"])
    assert CANARIES[name] in references  # the canary reached what the scorer reads
    path.write_text(json.dumps({sid: "The heart is normal. No pleural effusion." for sid in studies["study_id"]}))
    return path


def _holding(root: Path, needles: list[bytes]) -> dict[Path, int]:
    """{file: mode} of every file under ``root`` whose bytes hold one of ``needles`` (symbolic links not followed)."""
    found = {}
    for folder, _, files in os.walk(root):
        for name in files:
            path = Path(folder, name)
            if path.is_symlink():
                continue
            data = path.read_bytes()
            if any(needle in data for needle in needles):
                found[path] = stat.S_IMODE(path.stat().st_mode)
    return found


@pytest.mark.slow
def test_licensed_reference_text_stays_in_owner_only_files_of_the_scorer(licensed_trees, tmp_path, monkeypatch,
                                                                          caplog, capfd):
    """Scored submissions to every licensed set (and IU-Xray), pushed to a loopback Hub: the canaries are in no
    pushed file, no log, not the store; only in owner-only files (the score cache). Fails on the code before issue
    49: the worker kept MIMIC-CXR's references for the Arena and the push uploaded them."""
    from rexrank.leaderboard.hub_sync import HubSync
    from rexrank.leaderboard.submissions import Submissions

    os.umask(0o022)  # the usual umask: files a library creates with the default mode are world-readable
    caplog.set_level(logging.DEBUG)
    host = tmp_path / "host"
    arrow = host / "arrow"
    with loopback_hub(monkeypatch) as (api, server):
        store = Store(host / "board" / "board.sqlite")
        sync = HubSync(store, "org/results", api=api)
        service = Submissions(store, host / "queue", metrics=["bleu2"], n_resamples=20, data_dir=str(licensed_trees),
                              datasets=("iu_xray", *CANARIES))
        monkeypatch.setattr("datasets.config.HF_DATASETS_CACHE", str(arrow))
        for name in (*CANARIES, "iu_xray"):
            path = (iu_predictions(tmp_path / "iu.json", n_shift=3) if name == "iu_xray"
                    else _predictions(tmp_path / f"{name}.json", name, licensed_trees, arrow))
            service.submit(path, {"name": f"Team {name}"}, name, "findings", user="alice")
            assert service.work_once()
        assert [job["status"] for job in store.submissions(None)] == ["done"] * 4, store.submissions(None)
        assert sync.push() > 0
        pushed = server.repo("org/results").files
        # MIMIC-CXR's and CheXpert Plus's per-study values are pushed for Compare, with empty texts.
        kept = {json.loads(data)["dataset"]: json.loads(data) for path, data in pushed.items()
                if path.startswith("reports/")}
        assert set(kept) == {"iu_xray", "mimic_cxr", "chexpert_plus"}
        assert all(row[1] == row[2] == "" and row[3] for d in ("mimic_cxr", "chexpert_plus") for row in kept[d]["rows"])
        store.close()

    canaries = [c.encode() for c in CANARIES.values()]
    assert not [path for path, data in pushed.items() if any(c in data for c in canaries)]
    logged = caplog.text + "".join(capfd.readouterr())
    assert not [c for c in CANARIES.values() if c in logged]
    found = _holding(host, canaries)
    assert found, "the scan must see the score cache's owner-only copies (else it proves nothing)"
    assert not {p: oct(m) for p, m in found.items() if m & 0o077}, "licensed text in a file others can read"
    assert not [p for p in found if p.name.startswith("board.sqlite")], "licensed text in the store"
    assert stat.S_IMODE((host / "board" / "board.sqlite").stat().st_mode) == 0o600
    # The positive control: IU-Xray's open references are kept and pushed, so the scan above reads real text.
    reference = kept["iu_xray"]["rows"][0][2]
    assert reference and reference.encode() in (host / "board" / "board.sqlite").read_bytes()


def _old_store_with_licensed_text(path: Path) -> None:
    """A store as a rexrank before issue 49 left it: MIMIC-CXR rows with their report and reference text."""
    store = Store(path)
    store.keep_reports(dataset="iu_xray", split="test", track="findings", model="Open", result_hash="a",
                       rows=[("s1", "open report", "open reference", {"bleu2": 0.5})])
    with store.transaction() as conn:  # what keep_reports wrote before the rule (it no longer can)
        conn.executemany(
            "INSERT INTO arena_reports(dataset, split, track, model, study, report, reference, metrics, result_hash,"
            " created_at) VALUES ('mimic_cxr', 'test', 'findings', 'Old', ?, ?, ?, ?, 'b', 1.0)",
            [(f"5{i:07d}", f"report {i} zqcanaryreport", f"reference {i} zqcanarymimic", json.dumps({"bleu2": i / 10}))
             for i in range(5)])
    store.close()


def _file_bytes(path: Path) -> bytes:
    """The store file's bytes and its write-ahead log's, if one is left."""
    wal = Path(f"{path}-wal")
    return path.read_bytes() + (wal.read_bytes() if wal.exists() else b"")


def test_a_store_holding_licensed_text_is_cleaned_on_open_with_one_line(tmp_path, caplog):
    path = tmp_path / "old.sqlite"
    _old_store_with_licensed_text(path)
    assert b"zqcanarymimic" in _file_bytes(path)
    with caplog.at_level(logging.WARNING, logger="rexrank.leaderboard.store"):
        store = Store(path)
    lines = [r.getMessage() for r in caplog.records if "licensed" in r.getMessage()]
    assert len(lines) == 1 and "5 rows of mimic_cxr" in lines[0]
    rows = {r["study"]: r for r in store.arena_reports()}
    assert [(r["report"], r["reference"]) for s, r in rows.items() if s != "s1"] == [("", "")] * 5
    assert {s: r["metrics"]["bleu2"] for s, r in rows.items() if s != "s1"} == {f"5{i:07d}": i / 10 for i in range(5)}
    assert (rows["s1"]["report"], rows["s1"]["reference"]) == ("open report", "open reference")
    store.close()
    # The bytes are gone from the file and its write-ahead log, not just from the rows.
    data = _file_bytes(path)
    assert b"zqcanarymimic" not in data and b"zqcanaryreport" not in data
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="rexrank.leaderboard.store"):
        Store(path).close()
    assert not [r for r in caplog.records if "licensed" in r.getMessage()]  # said once, when it was done


def test_keep_reports_keeps_only_values_of_a_licensed_set(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    store.keep_reports(dataset="mimic", split="test", track="findings", model="M", result_hash="h",
                       rows=[("50000001", "a report", "a reference zqcanarymimic", {"bleu2": 0.25})])
    (row,) = store.arena_reports("mimic_cxr")
    assert (row["report"], row["reference"], row["metrics"]) == ("", "", {"bleu2": 0.25})
    store.close()
    assert b"zqcanarymimic" not in (tmp_path / "s.sqlite").read_bytes()


def test_a_pushed_report_file_holding_licensed_text_is_deleted_from_the_repo(tmp_path, monkeypatch, caplog):
    """A repo an earlier rexrank pushed MIMIC-CXR text to: the pull restores the values only, the push deletes it."""
    import hashlib

    from rexrank.leaderboard.hub_sync import HubSync

    payload = json.dumps({"dataset": "mimic_cxr", "split": "test", "track": "findings", "model": "Old",
                          "result_hash": "b", "provenance": {"recorded_at": 1.0},
                          "rows": [["50000001", "report zqcanaryreport", "reference zqcanarymimic", {"bleu2": 0.5}]]},
                         sort_keys=True).encode()
    name = f"reports/{hashlib.sha256(payload).hexdigest()}.json"
    with loopback_hub(monkeypatch) as (api, server):
        server.repo("org/results").files[name] = payload
        store = Store(tmp_path / "b.sqlite")
        sync = HubSync(store, "org/results", api=api)
        sync.pull()
        (row,) = store.arena_reports("mimic_cxr")
        assert (row["report"], row["reference"], row["metrics"]) == ("", "", {"bleu2": 0.5})
        with caplog.at_level(logging.WARNING, logger="rexrank.leaderboard.hub_sync"):
            sync.push()
        files = server.repo("org/results").files
        assert name not in files
        assert not [p for p, data in files.items() if b"zqcanary" in data]
        assert [p for p in files if p.startswith("reports/")]  # the values went back, text-free
        assert any("licensed text" in r.getMessage() for r in caplog.records)
        store.close()


def test_the_arena_serves_no_licensed_set(tmp_path):
    from rexrank.errors import InputError
    from rexrank.leaderboard.arena import Arena

    store = Store(tmp_path / "a.sqlite")
    for name in CANARIES:
        with pytest.raises(InputError, match="may not be shown in the Arena.*iu_xray"):
            Arena(store, dataset=name)
    Arena(store, dataset="iu_xray")
    store.close()


@pytest.mark.parametrize("existing", [False, True])
def test_the_store_file_is_owner_only_under_the_usual_umask(tmp_path, existing):
    old = os.umask(0o022)
    try:
        path = tmp_path / "new-folder" / "board.sqlite"
        if existing:
            path.parent.mkdir()
            path.touch(mode=0o644)
            Path(f"{path}-wal").touch(mode=0o644)
        store = Store(path)
        store.keep_reports(dataset="iu_xray", split="test", track="findings", model="M", result_hash="h",
                           rows=[("s", "r", "f", {})])
        modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in path.parent.iterdir()}
        assert modes and set(modes.values()) == {0o600}, modes
        if not existing:
            assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
        store.close()
    finally:
        os.umask(old)

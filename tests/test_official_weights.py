"""Official weights only on the board: the registry of official weight digests, what results.json reports, the
check in `rexrank leaderboard add` (refuse, or --allow-unofficial-weights and a label) and in the Space worker."""

from __future__ import annotations

import hashlib
import json
import logging
import re
from pathlib import Path

import pytest

from rexrank.leaderboard import board
from rexrank.metrics.boards import edition
from rexrank.leaderboard.store import Store
from rexrank.metrics import REGISTRY, official, weights
from rexrank.metrics.official import OFFICIAL, OfficialWeights, check_results

HEX64 = re.compile(r"[0-9a-f]{64}")


@pytest.fixture(autouse=True)
def no_host_file(tmp_path, monkeypatch):
    """No recorded official digests unless a test writes them (never the developer's own host file)."""
    monkeypatch.setenv("REXRANK_OFFICIAL_WEIGHTS", str(tmp_path / "host" / "official_weights.json"))


def _sha(path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


# -- the registry --------------------------------------------------------------------------------------------------
def test_every_weight_source_has_an_official_entry_with_its_source():
    assert set(OFFICIAL) == set(weights.SOURCES)
    for key, entry in OFFICIAL.items():
        assert entry.source, key
        for name, digest in entry.files.items():
            assert digest is None or HEX64.fullmatch(digest), (key, name)
        if not entry.files or None in entry.files.values():
            assert "--record-official" in entry.note, f"{key}: a missing digest must say how the host records it"
    assert OFFICIAL["chexbert"].files["chexbert.pth"].startswith("6550703c92d640e1")
    for metric, keys in official.METRIC_SOURCES.items():
        assert REGISTRY.spec(metric).needs_model and all(weights.source(k).metric in metric for k in keys)
    assert all("radgraph_xl" not in keys for keys in official.METRIC_SOURCES.values())  # not the leaderboard's


def test_hub_blob_name_is_the_digest_and_other_files_are_hashed(tmp_path):
    commit = "a" * 40
    blob = tmp_path / "models--org--name" / "blobs" / ("b" * 64)
    blob.parent.mkdir(parents=True)
    blob.write_bytes(b"weights")
    snap = tmp_path / "models--org--name" / "snapshots" / commit
    snap.mkdir(parents=True)
    (snap / "model.safetensors").symlink_to(blob)
    assert weights.file_sha256(snap / "model.safetensors") == "b" * 64  # the Hub's LFS oid: not re-hashed
    assert weights.hub_snapshot(snap / "model.safetensors") == ("org/name", commit)
    plain = tmp_path / "model.safetensors"
    plain.write_bytes(b"weights")
    assert weights.file_sha256(plain) == _sha(plain)
    assert weights.weight_digests("ratescore_ner", tmp_path) == {"model.safetensors": _sha(plain)}


# -- a stand-in run through `rexrank score` --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def standin_run(tmp_path_factory, standins, iu_xray_test):
    """results.json of `rexrank score` with BLEU-2, SembScore and BERTScore on random-weight stand-ins."""
    from rexrank.cli import main

    root = tmp_path_factory.mktemp("standin_run")
    semb, bert = standins("semb"), standins("bertscore")
    ids = [i for i in iu_xray_test if iu_xray_test[i]["section_findings"]][:4]
    refs, preds = root / "refs.json", root / "preds.json"
    refs.write_text(json.dumps({i: iu_xray_test[i] for i in ids}))
    preds.write_text(json.dumps({i: iu_xray_test[ids[(k + 1) % 4]]["section_findings"] for k, i in enumerate(ids)}))
    code = main(["score", "-p", str(preds), "-r", str(refs), "--dataset", "iu_xray", "--split", "test",
                 "-m", "bleu2,semb,bertscore", "--model-path", f"semb={semb['semb']}",
                 "--option", f"semb.backbone={semb['semb_backbone']}", "--model-path", f"bertscore={bert['bertscore']}",
                 "--no-cache", "--resamples", "50", "-q", "-o", str(root / "out")])
    assert code == 0
    return {"results": root / "out" / "results.json", "semb": semb, "bertscore": bert, "root": root}


def _patch_registry_to_standins(monkeypatch, run):
    """Pretend the stand-ins are the official weights (the registry's digests := the stand-ins' files)."""
    backbone = Path(run["semb"]["semb_backbone"])
    patched = {
        "chexbert": {"chexbert.pth": _sha(run["semb"]["semb"])},
        "chexbert_backbone": {"config.json": _sha(backbone / "config.json"), "vocab.txt": _sha(backbone / "vocab.txt")},
        "bertscore": {"model.safetensors": _sha(Path(run["bertscore"]["bertscore"]) / "model.safetensors")},
    }
    for key, files in patched.items():
        monkeypatch.setitem(OFFICIAL, key, OfficialWeights(key, files, "test: the stand-ins"))


def test_results_report_the_sha256_of_the_loaded_weight_files(standin_run):
    results = json.loads(standin_run["results"].read_text())
    bert_file = Path(standin_run["bertscore"]["bertscore"]) / "model.safetensors"
    assert results["configs"]["bertscore"]["weight_digests"] == {"bertscore": {"model.safetensors": _sha(bert_file)}}
    assert results["configs"]["semb"]["checkpoint_sha256"] == _sha(standin_run["semb"]["semb"])
    assert official.reported_digests("semb", results["configs"]["semb"])["chexbert"] == {
        "chexbert.pth": _sha(standin_run["semb"]["semb"])}


def test_add_refuses_a_standin_run_with_a_clear_message(cli, tmp_path, standin_run):
    store = tmp_path / "board.sqlite"
    code, text = cli("leaderboard", "add", str(standin_run["results"]), "--name", "Standin", "--store", str(store))
    assert code == 2 and "Traceback" not in text
    assert "not scored with the official metric weights" in text
    assert "semb (unofficial): chexbert.pth has sha256" in text and "official 6550703c92d6" in text
    assert "StanfordAIMI/RRG_scorers/chexbert.pth" in text
    assert "bertscore (unverified)" in text and "--record-official" in text
    assert "rexrank models download" in text and "--allow-unofficial-weights" in text
    assert "bleu2" not in text  # BLEU-2 has no weights to check
    assert not store.exists() or not Store(store).results()


def test_allow_unofficial_weights_stores_and_labels_the_row(cli, tmp_path, standin_run):
    store_path = tmp_path / "board.sqlite"
    code, text = cli("leaderboard", "add", str(standin_run["results"]), "--name", "Standin", "--store",
                     str(store_path), "--allow-unofficial-weights", "--no-seed")
    assert code == 0, text
    label = "unofficial weights: semb; unverified weights: bertscore"
    assert f"labelled '{label}'" in text
    store = Store(store_path)
    [item] = store.results("iu_xray", "findings")
    assert item["extra"]["weights"] == {"official": [], "unofficial": ["semb"], "unverified": ["bertscore"],
                                        "label": label}
    table = board.numeric_table(store, "iu_xray", "findings")
    assert table.loc[0, "weights"] == label
    shown = board.display_table(table, edition().metrics("findings"))
    # (the row has no 1/RadCliQ-v1: the board also says what it was scored on)
    assert shown.loc[0, "Model"] == "Standin ⚠ (no 1/RadCliQ-v1: 3 of 8 metrics)"
    assert shown.loc[0, "Source"] == f"rexrank · {label} · scored on BLEU, BertScore, SembScore"
    assert board.model_page(store, "Standin").loc[0, "Weights"] == label
    store.close()


def test_results_matching_the_registry_are_added_unlabelled(cli, tmp_path, monkeypatch, standin_run):
    _patch_registry_to_standins(monkeypatch, standin_run)
    store_path = tmp_path / "board.sqlite"
    code, text = cli("leaderboard", "add", str(standin_run["results"]), "--name", "Fine", "--store", str(store_path),
                     "--no-seed")
    assert code == 0, text
    assert "labelled" not in text
    store = Store(store_path)
    [item] = store.results("iu_xray", "findings")
    assert item["extra"]["weights"]["official"] == ["semb", "bertscore"] and item["extra"]["weights"]["label"] == ""
    shown = board.display_table(board.numeric_table(store, "iu_xray", "findings"), edition().metrics("findings"))
    assert shown.loc[0, "Model"] == "Fine (no 1/RadCliQ-v1: 3 of 8 metrics)"
    assert shown.loc[0, "Source"] == "rexrank · scored on BLEU, BertScore, SembScore"
    assert board.model_page(store, "Fine").loc[0, "Weights"] == "official"
    store.close()


def test_one_changed_weight_file_is_enough_to_refuse(monkeypatch, standin_run):
    _patch_registry_to_standins(monkeypatch, standin_run)
    results = json.loads(standin_run["results"].read_text())
    results["configs"]["semb"]["backbone"]["vocab.txt"] = "0" * 16  # another tokenizer, same checkpoint
    check = check_results(results)
    assert check.names("unofficial") == ["semb"] and "vocab.txt has sha256 000000000000…" in check.explain()
    del results["configs"]["bertscore"]["weight_digests"]  # no fingerprint at all: unofficial, not unverified
    assert check_results(results).names("unofficial") == ["semb", "bertscore"]


def test_bleu2_needs_no_check_and_composites_inherit(standin_run):
    assert check_results({"metrics": {"bleu2": {}}, "configs": {"bleu2": {}}}).metrics == {}
    assert check_results({"metrics": {"bleu2": {}}}).ok
    results = json.loads(standin_run["results"].read_text())
    results["metrics"]["radcliq_v1"] = {}  # its radgraph component has no config here
    check = check_results(results)
    assert check.metrics["radcliq_v1"].status == "unofficial"
    assert "radcliq_v1" in check.label and "computed from" in check.explain()


def test_host_recorded_digests_verify_unpublished_sources_but_never_override_published(tmp_path, standin_run):
    results = json.loads(standin_run["results"].read_text())
    bert_sha = _sha(Path(standin_run["bertscore"]["bertscore"]) / "model.safetensors")
    host = official.host_file()
    host.parent.mkdir(parents=True)
    host.write_text(json.dumps({"format": official.HOST_FORMAT, "version": 1, "sources": {
        "bertscore": {"repo_id": "distilroberta-base", "revision": "c" * 40, "files": {"model.safetensors": bert_sha}},
        "chexbert": {"repo_id": "x", "revision": None, "files": {"chexbert.pth": _sha(standin_run["semb"]["semb"])}},
        "radgraph": {"repo_id": "StanfordAIMI/RRG_scorers", "revision": "d" * 40, "files": {"weights.th": "e" * 64}},
    }}))
    check = check_results(results)
    assert check.metrics["bertscore"].status == "official"  # no published digest: the host's recorded one counts
    assert check.metrics["semb"].status == "unofficial"  # a published digest wins over anything recorded
    radgraph = {"metrics": {"radgraph": {}}, "configs": {"radgraph": {"weights_sha256": "e" * 64}}}
    assert check_results(radgraph).ok  # RadGraph's own weights_sha256 field, against the recorded digest
    radgraph["configs"]["radgraph"]["weights_sha256"] = "f" * 64
    assert check_results(radgraph).names("unofficial") == ["radgraph"]


def test_record_official_reads_hub_blobs_and_refuses_a_differing_download(tmp_path, monkeypatch):
    hub = tmp_path / "hub"

    def fake_hub(repo: str, files: dict[str, bytes], commit: str) -> Path:
        snap = hub / f"models--{repo.replace('/', '--')}" / "snapshots" / commit
        snap.mkdir(parents=True)
        for name, content in files.items():
            blob = snap.parents[1] / "blobs" / hashlib.sha256(content).hexdigest()
            blob.parent.mkdir(exist_ok=True)
            blob.write_bytes(content)
            (snap / name).symlink_to(blob)
        return snap

    bert = fake_hub("distilroberta-base", {"model.safetensors": b"roberta", "config.json": b"{}"}, "1" * 40)
    chexbert = fake_hub("StanfordAIMI/RRG_scorers", {"chexbert.pth": b"not the published checkpoint"}, "2" * 40)
    monkeypatch.setattr(official, "fetch", lambda key, **kw: {"bertscore": bert,
                                                               "chexbert": chexbert / "chexbert.pth"}[key])
    recorded = official.record_official(["bertscore"])
    assert recorded["bertscore"]["files"] == {"model.safetensors": hashlib.sha256(b"roberta").hexdigest()}
    assert recorded["bertscore"]["revision"] == "1" * 40 and recorded["bertscore"]["repo_id"] == "distilroberta-base"
    assert official.official_files("bertscore")["model.safetensors"][0] == hashlib.sha256(b"roberta").hexdigest()
    with pytest.raises(official.UnofficialWeightsError, match="published digest is 6550703c"):
        official.record_official(["chexbert"])
    assert "chexbert" not in official.host_recorded()


# -- the Space worker ----------------------------------------------------------------------------------------------
def _worker_run(tmp_path, monkeypatch, results: dict):
    """One submission through the worker, whose scoring returns ``results`` (what the host's weights gave)."""
    from leaderboard_helpers import iu_predictions
    from rexrank.leaderboard.submissions import Submissions

    store = Store(tmp_path / "board.sqlite")
    service = Submissions(store, tmp_path / "uploads", n_resamples=50)
    service.submit(iu_predictions(tmp_path / "p.json"), {"name": "Sub"}, "iu_xray", "findings", user="alice")
    monkeypatch.setattr(service, "_score", lambda job: (dict(results), None))  # (results, no Arena rows)
    assert service.work_once()
    return store


def test_worker_refuses_unofficial_host_weights(tmp_path, monkeypatch, caplog, standin_run, shared_dir):
    results = json.loads(standin_run["results"].read_text())
    with caplog.at_level(logging.ERROR, logger="rexrank.leaderboard.submissions"):
        store = _worker_run(tmp_path, monkeypatch, results)
    [job] = store.submissions()
    assert job["status"] == "failed" and "not verified official weights" in job["error"]
    assert "semb" in job["error"] and "host" in job["error"]
    assert not store.results("iu_xray", "findings")
    assert "chexbert.pth has sha256" in caplog.text and "--record-official" in caplog.text  # the host's log
    store.close()


def test_worker_stores_results_of_official_host_weights(tmp_path, monkeypatch, standin_run, shared_dir):
    _patch_registry_to_standins(monkeypatch, standin_run)
    store = _worker_run(tmp_path, monkeypatch, json.loads(standin_run["results"].read_text()))
    [job] = store.submissions()
    assert job["status"] == "done", job["error"]
    assert len(store.results("iu_xray", "findings")) == 1
    store.close()

"""Licensed text stays private: every cache that can hold report text is owner-only, a test set has one Arrow copy,
and `rexrank data purge NAME` removes every cached copy of its text (and nothing of other test sets).

CheXpert Plus (gated, licensed) is the synthetic licensed set here; IU-Xray (open, its text ships with rexrank) is
the other dataset whose entries a purge must leave alone.
"""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from pathlib import Path

import datasets
import pytest

from rexrank import data
from rexrank.data import synthetic
from rexrank.data.catalog import get_dataset_spec
from rexrank.data.loading import cached_copies
from rexrank.data.private_files import FILE_MODE, FOLDER_MODE
from rexrank.data.tracks import TRACKS
from rexrank.metrics.base import text_key

LICENSED = "chexpert_plus"
OPEN = "iu_xray"


@pytest.fixture
def roots(tmp_path, monkeypatch, fake_metrics):
    """Fresh cache roots (the `datasets` cache and rexrank's own) under the umask most systems use (022), so a
    file created with the default mode would be world-readable."""
    hf, own = tmp_path / "hf-datasets", tmp_path / "rexrank-cache"
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(hf))
    monkeypatch.setenv("REXRANK_CACHE", str(own))
    old = os.umask(0o022)
    yield {"hf": hf, "own": own, "scores": own / "scores", "tmp": tmp_path}
    os.umask(old)


@pytest.fixture
def chexpert_tree(tmp_path) -> Path:
    return synthetic.write_chexpert_plus_tree(tmp_path / "chexpert")


def _predictions(path: Path, refs: dict[str, str], tag: str) -> Path:
    """A prediction per study that no other run writes (its hypothesis artefacts belong to this run alone)."""
    path.write_text(json.dumps({study: f"{tag} prediction {i}: {text}" for i, (study, text) in enumerate(refs.items())}))
    return path


def _score(cli, predictions: Path, out: Path, *args: str) -> dict:
    code, text = cli("score", "-p", str(predictions), "-m", "fake_len", "--resamples", "20", "-o", str(out), "-q",
                     *args)
    assert code == 0, text
    return json.loads((out / "results.json").read_text())["analyses"]["cache"]["fake_len"]


def _modes(root: Path) -> dict[str, int]:
    found = {str(root): stat.S_IMODE(root.stat().st_mode)}
    for folder, folders, files in os.walk(root):
        for name in folders + files:
            path = Path(folder, name)
            found[str(path)] = stat.S_IMODE(path.lstat().st_mode)
    return found


def _rows(scores: Path) -> dict[str, set]:
    with sqlite3.connect(scores / "scores.sqlite") as conn:
        return {"pair_refs": {r for (r,) in conn.execute("SELECT ref FROM pairs")},
                "text_keys": {k for (k,) in conn.execute("SELECT key FROM texts")},
                "tags": {d for (d,) in conn.execute("SELECT dataset FROM origins")}}


def _all_reference_texts(name: str, data_dir) -> set[str]:
    return {text for track in TRACKS for text in data.references(name, data_dir, track=track).values()}


def test_every_cache_of_a_licensed_set_is_owner_only_with_one_arrow_copy(roots, chexpert_tree, cli):
    """load, references (both tracks), prepare and a score run: every folder 0700 and every file 0600 under both
    cache roots although the umask is 022, and one Arrow file per split (no second copy for references or a
    track)."""
    assert get_dataset_spec(LICENSED).gated
    data.load(LICENSED, chexpert_tree)  # images required (the default): the check prepare does
    refs = data.references(LICENSED, chexpert_tree)  # images not required: before, a second copy
    data.references(LICENSED, chexpert_tree, track="findings_impression")  # excludes no study
    data.load(LICENSED, chexpert_tree, track="findings")  # excludes studies: before, a flattened Arrow copy
    data.prepare(LICENSED, chexpert_tree, require_images=False)
    _score(cli, _predictions(roots["tmp"] / "p.json", refs, "A"), roots["tmp"] / "out", "--dataset", LICENSED,
           "--data-dir", str(chexpert_tree))

    modes = {**_modes(roots["hf"]), **_modes(roots["own"])}
    assert any(path.endswith("scores.sqlite") for path in modes) and any(p.endswith(".arrow") for p in modes)
    wrong = {path: oct(mode) for path, mode in modes.items()
             if mode != (FOLDER_MODE if Path(path).is_dir() else FILE_MODE)}
    assert not wrong, wrong
    arrows = sorted(p.name for p in (roots["hf"] / LICENSED).rglob("*.arrow"))
    assert arrows == [f"{LICENSED}-{split}.arrow" for split in get_dataset_spec(LICENSED).splits]
    assert cached_copies(LICENSED)["copies"] == 1


def test_one_copy_whatever_images_are_required_and_after_the_source_changes(roots, chexpert_tree, tmp_path):
    """References (images not required) and a load that requires them share one copy: a copy built while images
    were absent is checked, refused with the missing files named, and rebuilt in place once they are there. An
    edited source replaces the copy instead of adding a second one beside the stale text."""
    from rexrank.errors import DatasetNotAvailableError

    copy = tmp_path / "iu"
    assert len(data.references(OPEN, copy)) == 590
    with pytest.raises(DatasetNotAvailableError, match="first missing"):
        data.load(OPEN, copy, require_images=True)
    synthetic.write_iu_xray_images(copy / "images")  # R2Gen's images/ sub-folder: other paths than first guessed
    loaded = data.load(OPEN, copy, require_images=True)
    assert all(os.path.isfile(p) for paths in loaded["image_paths"] for p in paths)
    assert cached_copies(OPEN)["copies"] == 1

    from rexrank.data.loading import cached_reference_texts

    data.references(LICENSED, chexpert_tree)
    csv = next(chexpert_tree.rglob("*.csv"))
    old = sorted(cached_reference_texts(LICENSED))[0]
    csv.write_text(csv.read_text().replace(old.split(".")[0], "Edited sentence"))
    assert "Edited sentence" in " ".join(data.references(LICENSED, chexpert_tree).values())
    assert cached_copies(LICENSED)["copies"] == 1 and old not in cached_reference_texts(LICENSED)


def test_sqlite_side_files_are_owner_only_while_the_cache_is_open(roots):
    """The -wal and -shm files exist only while a connection is open: they must be 0600 then, too."""
    from rexrank.evaluation.cache import ScoreCache

    cache = ScoreCache(roots["scores"], dataset=LICENSED)
    cache.put_many("ns", {"k": "a licensed sentence"})
    side = [p for p in cache.sidecars() if p.exists()]
    assert {p.name for p in side} == {"scores.sqlite", "scores.sqlite-wal", "scores.sqlite-shm"}
    assert {stat.S_IMODE(p.stat().st_mode) for p in side} == {FILE_MODE}
    assert stat.S_IMODE(roots["scores"].stat().st_mode) == FOLDER_MODE
    cache.close()


def test_an_older_world_readable_cache_is_made_owner_only_when_opened(roots):
    """A cache written before this rule (0755 folder, 0644 file) is fixed the next time rexrank opens it."""
    from rexrank.evaluation.cache import ScoreCache

    ScoreCache(roots["scores"]).put_many("ns", {"k": 1})
    os.chmod(roots["scores"], 0o755)
    os.chmod(roots["scores"] / "scores.sqlite", 0o644)
    assert ScoreCache(roots["scores"]).get_many("ns", ["k"]) == {"k": 1}
    assert stat.S_IMODE(roots["scores"].stat().st_mode) == FOLDER_MODE
    assert stat.S_IMODE((roots["scores"] / "scores.sqlite").stat().st_mode) == FILE_MODE


@pytest.mark.slow  # 1.5 s of CPU of its own: over the fast tier's 2 s or near it (tests/README.md, "Tiers")
def test_purge_removes_every_cached_copy_and_only_that_datasets(roots, chexpert_tree, cli, monkeypatch):
    """After scoring a licensed and an open set into one cache (plus a --references run of the licensed texts,
    which carries no dataset tag), `purge chexpert` (an alias) asks first, then removes the licensed set's Arrow
    copy and every score-cache row derived from its references; the open set keeps its copy and rows, and a rerun
    of the licensed set recomputes everything."""
    import rexrank.cli.data as data_cli

    licensed = _all_reference_texts(LICENSED, chexpert_tree)
    licensed_keys = {text_key(t) for t in licensed}
    refs = data.references(LICENSED, chexpert_tree)
    open_refs = data.references(OPEN, roots["tmp"] / "no-images")
    p_licensed = _predictions(roots["tmp"] / "licensed.json", refs, "L")
    p_open = _predictions(roots["tmp"] / "open.json", open_refs, "O")
    first = _score(cli, p_licensed, roots["tmp"] / "r1", "--dataset", "chexpert", "--data-dir", str(chexpert_tree))
    _score(cli, p_open, roots["tmp"] / "r2", "--dataset", OPEN, "--data-dir", str(roots["tmp"] / "no-images"))
    file_refs = roots["tmp"] / "refs.json"
    file_refs.write_text(json.dumps(refs))
    file_preds = roots["tmp"] / "file-preds.json"
    file_preds.write_text(json.dumps({s: f"untagged {i}" for i, s in enumerate(refs)}))
    _score(cli, file_preds, roots["tmp"] / "r3", "-r", str(file_refs))
    assert first["computed"] == len(refs)
    before = _rows(roots["scores"])
    assert licensed_keys & before["pair_refs"] and licensed_keys & before["text_keys"]
    assert before["tags"] == {LICENSED, OPEN}
    open_keys = {text_key(t) for t in open_refs.values()}
    open_hyp_keys = {text_key(t) for t in json.loads(p_open.read_text()).values()}
    licensed_hyp_keys = {text_key(t) for t in json.loads(p_licensed.read_text()).values()}
    assert not open_keys & licensed_keys  # so "left alone" below is a real check
    open_copy = cached_copies(OPEN)
    assert open_copy["copies"] == 1 and cached_copies(LICENSED)["copies"] == 1

    # Not a terminal and no --yes: an error naming --yes, and nothing removed.
    code, text = cli("data", "purge", "chexpert")
    assert code == 2 and "--yes" in text and "Traceback" not in text, text
    assert cached_copies(LICENSED)["copies"] == 1 and _rows(roots["scores"]) == before
    # Asked and declined: nothing removed.
    monkeypatch.setattr(data_cli, "_interactive", lambda: True)
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO("n\n"))
    code, text = cli("data", "purge", "chexpert")
    assert code == 0 and "nothing removed" in text, text
    assert cached_copies(LICENSED)["copies"] == 1 and _rows(roots["scores"]) == before
    # Asked and confirmed.
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO("y\n"))
    code, text = cli("data", "purge", "chexpert")
    assert code == 0, text
    removed_pairs = len(refs) * 2  # the tagged run's pairs and the --references run's pairs
    assert f"{removed_pairs} pair rows" in text and "removed 1 Arrow copies" in text, text

    after = _rows(roots["scores"])
    assert cached_copies(LICENSED)["paths"] == [] and not (roots["hf"] / LICENSED).exists()
    assert not licensed_keys & (after["pair_refs"] | after["text_keys"])  # tagged or not, every reference is gone
    assert not licensed_hyp_keys & after["text_keys"]  # artefacts written by the licensed run alone
    assert after["tags"] == {OPEN}
    # The open set keeps its copy, its rows and its artefacts.
    assert cached_copies(OPEN)["copies"] == 1
    assert open_keys <= after["pair_refs"] and (open_keys | open_hyp_keys) <= after["text_keys"]
    # Nothing left to purge; the file is still owner-only and sound.
    code, text = cli("data", "purge", LICENSED, "--yes")
    assert code == 0 and "nothing to remove" in text, text
    assert stat.S_IMODE((roots["scores"] / "scores.sqlite").stat().st_mode) == FILE_MODE

    # Reruns: the licensed set recomputes every pair, the open set recomputes none.
    again = _score(cli, p_licensed, roots["tmp"] / "r4", "--dataset", LICENSED, "--data-dir", str(chexpert_tree))
    assert again["computed"] == len(refs) and again["cached"] == 0
    open_again = _score(cli, p_open, roots["tmp"] / "r5", "--dataset", OPEN, "--data-dir",
                        str(roots["tmp"] / "no-images"))
    assert open_again["computed"] == 0 and open_again["cached"] == len(open_refs)


def test_purge_without_arrow_copy_finds_the_texts_in_the_local_copy_and_leaves_no_copy(roots, chexpert_tree, cli):
    """With the Arrow copy already gone, the reference texts are read from the local copy through a throwaway
    cache: the untagged rows of a --references run are still found, and no Arrow copy is left behind."""
    refs = data.references(LICENSED, chexpert_tree)
    file_refs = roots["tmp"] / "refs.json"
    file_refs.write_text(json.dumps(refs))
    _score(cli, _predictions(roots["tmp"] / "p.json", refs, "F"), roots["tmp"] / "r", "-r", str(file_refs))
    from rexrank.data.loading import purge_cached_copies

    purge_cached_copies(LICENSED)
    code, text = cli("data", "purge", LICENSED, "--yes", "--data-dir", str(chexpert_tree))
    assert code == 0 and f"{len(refs)} pair rows" in text, text
    assert not {text_key(t) for t in refs.values()} & _rows(roots["scores"])["pair_refs"]
    assert not (roots["hf"] / LICENSED).exists()


def test_purge_of_an_unknown_dataset_is_a_clear_error(roots, cli):
    code, text = cli("data", "purge", "mimic-iv", "--yes")
    assert code == 2 and "Unknown dataset 'mimic-iv'" in text and "Traceback" not in text, text

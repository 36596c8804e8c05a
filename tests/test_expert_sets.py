"""Expert-rated sets (issue 27 point 1): ReXVal found as its download unpacks, read strictly, and refused with one
clear error for anything that is not the release; the Hub route keeps the licensed files owner-only."""

from __future__ import annotations

import csv
import stat
from pathlib import Path

import numpy as np
import pytest
from expert_helpers import write_rexval

from rexrank.data import expert_sets
from rexrank.data.builders import rexval
from rexrank.errors import ConfigError, DatasetNotAvailableError, UnknownNameError

SPEC = expert_sets.get_expert_set("rexval")
LAYOUT_FOLDERS = {"wget -r": "physionet.org/files/rexval-dataset/1.0.0", "project folder": "rexval-dataset/1.0.0",
                  "flat": ""}


@pytest.mark.parametrize("layout", list(LAYOUT_FOLDERS))
def test_every_layout_reads_the_pairs_and_counts_written(tmp_path, layout):
    _, written = write_rexval(tmp_path / LAYOUT_FOLDERS[layout], seed=3)
    expert = expert_sets.read("ReXVal", tmp_path)
    assert len(expert.references) == SPEC.n_pairs == 200
    assert expert.raters == [str(r) for r in range(6)] and expert.categories == [1, 2, 3, 4, 5, 6]
    assert np.array_equal(expert.errors, written)
    assert expert.candidates[:4] == list(SPEC.candidates)
    assert np.array_equal(expert.groups, np.repeat(np.arange(50), 4))
    with (tmp_path / LAYOUT_FOLDERS[layout] / SPEC.files[0]).open(newline="") as handle:
        first = next(csv.DictReader(handle))
    assert expert.references[0] == first["gt_report"] and expert.hypotheses[1] == first["bertscore"]


def test_a_copy_not_found_lists_every_layout(tmp_path):
    (tmp_path / "rexval-dataset" / "1.0.0").mkdir(parents=True)
    (tmp_path / "rexval-dataset" / "1.0.0" / SPEC.files[0]).write_text("study_id\n")  # half a copy
    with pytest.raises(DatasetNotAvailableError) as error:
        expert_sets.read("rexval", tmp_path)
    message = str(error.value)
    for layout in LAYOUT_FOLDERS:
        assert f"{layout}:" in message
    assert f"no {SPEC.files[1]}" in message and "physionet.org/content/rexval-dataset" in message


def test_repeated_rows_add_up_and_absent_rows_count_zero(tmp_path):
    extra = [{"study_number": 0, "candidate_type": "bleu", "rater_index": 2, "error_category": 4,
              "clinically_significant": "True", "num_errors": 2}] * 2
    _, written = write_rexval(tmp_path, seed=1, extra_rows=extra)
    expert = expert_sets.read("rexval", tmp_path)
    assert expert.errors[3, 2, 3, 1] == written[3, 2, 3, 1] + 4
    assert np.array_equal(np.delete(expert.errors.reshape(-1), np.ravel_multi_index((3, 2, 3, 1), written.shape)),
                          np.delete(written.reshape(-1), np.ravel_multi_index((3, 2, 3, 1), written.shape)))


def _rewrite(path: Path, edit) -> None:
    with path.open(newline="") as handle:
        rows = list(csv.reader(handle))
    rows = edit(rows)
    with path.open("w", newline="") as handle:
        csv.writer(handle).writerows(rows)


def _set_cell(column: str, value: str, row: int = 1):
    def edit(rows):
        rows[row][rows[0].index(column)] = value
        return rows
    return edit


@pytest.mark.parametrize("file, edit, expected", [
    (1, _set_cell("candidate_type", "gpt4"), "line 2: candidate_type 'gpt4' is not one of radgraph"),
    (1, _set_cell("error_category", "7"), "line 2: error_category 7 is not one of 1, 2, 3, 4, 5, 6"),
    (1, _set_cell("study_number", "50"), "line 2: study_number 50 is not a row of"),
    (1, _set_cell("clinically_significant", "maybe"), "clinically_significant 'maybe' is not True or False"),
    (1, _set_cell("num_errors", "-1"), "num_errors '-1' is not a count"),
    (1, _set_cell("num_errors", "many"), "num_errors 'many' is not a number"),
    (1, _set_cell("rater_index", "1.5"), "rater_index '1.5' is not a whole number"),
    (1, lambda rows: [r[:-1] for r in rows], "has no column num_errors"),
    (0, lambda rows: [[c for i, c in enumerate(r) if i != 3] for r in rows], "has no column bertscore"),
    (0, lambda rows: rows[:-1], "holds 49 studies, the release has 50"),
    (0, _set_cell("gt_report", " "), "line 2: empty gt_report"),
    (1, lambda rows: [rows[0]] + [r for r in rows[1:] if r[2] != "5"], "names 5 raters, the release has 6"),
])
def test_anything_but_the_release_is_one_clear_error(tmp_path, file, edit, expected):
    write_rexval(tmp_path, seed=2)
    _rewrite(tmp_path / SPEC.files[file], edit)
    with pytest.raises(DatasetNotAvailableError) as error:
        expert_sets.read("rexval", tmp_path)
    assert expected in str(error.value)
    assert SPEC.files[file] in str(error.value) and "PhysioNet" in str(error.value)


def test_names_and_routes_are_checked():
    with pytest.raises(UnknownNameError, match="Unknown expert set 'radevalx'. Available: rexval"):
        expert_sets.read("radevalx", "/nowhere")
    with pytest.raises(ConfigError, match="--data-dir DIR .* --from-hub"):
        expert_sets.read("rexval")
    with pytest.raises(ConfigError, match="not both"):
        expert_sets.read("rexval", "/nowhere", from_hub=True)
    # Not a leaderboard test set: the catalog does not know it.
    from rexrank.data.catalog import DATASET_ALIASES
    assert not set(expert_sets.EXPERT_SETS) & set(DATASET_ALIASES)


def test_the_hub_route_keeps_the_licensed_files_owner_only(tmp_path, monkeypatch):
    """The files come from <org>/rexval into an owner-only folder (0700, files 0600) and are read from there."""
    source, written = write_rexval(tmp_path / "hub_repo", seed=5)
    fetched = []

    def download_file(repo_id, filename, *, local_dir=None, token=None):  # a Hub that serves the repo's files
        fetched.append((repo_id, filename))
        target = Path(local_dir) / filename
        target.write_bytes((source / filename).read_bytes())
        target.chmod(0o644)  # what a library writing with the default umask leaves
        return str(target)

    import rexrank.data.hub
    monkeypatch.setattr(rexrank.data.hub, "download_file", download_file)
    monkeypatch.setenv("REXRANK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("REXRANK_HUB_ORG", "host-org")
    expert = expert_sets.read("rexval", from_hub=True)
    assert fetched == [("host-org/rexval", name) for name in SPEC.files]
    folder = tmp_path / "cache" / "expert_sets" / "rexval"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert {stat.S_IMODE((folder / name).stat().st_mode) for name in SPEC.files} == {0o600}
    assert np.array_equal(expert.errors, written) and expert.source.startswith("hub:")


def test_the_reader_never_writes_into_the_local_copy(tmp_path):
    write_rexval(tmp_path, seed=4)
    before = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*")}
    rexval.read_folder(tmp_path)
    assert {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*")} == before

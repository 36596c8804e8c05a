"""Expert-rated sets (issue 27 point 1): ReXVal found as its download unpacks, read strictly, and refused with one
clear error for anything that is not the release; the Hub route keeps the licensed files owner-only."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from expert_helpers import write_radevalx, write_rexval

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
    assert SPEC.files[file] in str(error.value) and "physionet.org/content/rexval-dataset/1.0.0/" in str(error.value)


def test_names_and_routes_are_checked():
    with pytest.raises(UnknownNameError, match="Unknown expert set 'mimic_cxr'. Available: rexval, radevalx"):
        expert_sets.read("mimic_cxr", "/nowhere")
    with pytest.raises(ConfigError, match="--data-dir DIR .* --from-hub"):
        expert_sets.read("rexval")
    with pytest.raises(ConfigError, match="not both"):
        expert_sets.read("rexval", "/nowhere", from_hub=True)
    # Not a leaderboard test set: the catalog does not know it.
    from rexrank.data.catalog import DATASET_ALIASES
    assert not set(expert_sets.EXPERT_SETS) & set(DATASET_ALIASES)


HUB_READ = """
import json, os, stat, sys
from rexrank.data import expert_sets
try:
    expert = expert_sets.read("rexval", from_hub=True)
except Exception as exc:
    print(json.dumps({"error": type(exc).__name__, "message": str(exc)}))
else:
    folder = expert_sets.hub_cache_dir("rexval")
    modes = {p.name: oct(stat.S_IMODE(p.stat().st_mode)) for p in folder.iterdir() if p.is_file()}
    print(json.dumps({"errors": expert.errors.tolist(), "source": expert.source,
                      "folder": oct(stat.S_IMODE(folder.stat().st_mode)), "modes": modes}))
"""


def _hub_read(hub, home: Path, token: str | None) -> dict:
    env = {key: value for key, value in os.environ.items() if key not in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")}
    env.update(HF_ENDPOINT=hub.endpoint, HF_HUB_OFFLINE="0", HF_HOME=str(home / "hf"), REXRANK_HUB_ORG="host-org",
               REXRANK_CACHE_DIR=str(home / "cache"), HF_HUB_DISABLE_PROGRESS_BARS="1")
    if token:
        env["HF_TOKEN"] = token
    result = subprocess.run([sys.executable, "-c", HUB_READ], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_the_hub_route_is_gated_and_keeps_the_licensed_files_owner_only(tmp_path):
    """<REXRANK_HUB_ORG>/rexval on a loopback Hub over real HTTP: a granted token gets the set (equal to the local
    read), in an owner-only folder (0700, files 0600); no token and an ungranted token get one clear error each."""
    from rexrank.testing.loopback_hub import LoopbackHub

    source, written = write_rexval(tmp_path / "release", seed=5)
    with LoopbackHub() as hub:
        hub.add_user("reader", "hf_reader_token_0001")
        hub.add_user("stranger", "hf_stranger_token_0002")
        hub.add_repo("host-org/rexval", files={name: (source / name).read_bytes() for name in SPEC.files},
                     gated="manual")
        hub.grant("host-org/rexval", "reader")
        granted = _hub_read(hub, tmp_path / "reader", "hf_reader_token_0001")
        stranger = _hub_read(hub, tmp_path / "stranger", "hf_stranger_token_0002")
        anonymous = _hub_read(hub, tmp_path / "anonymous", None)
    assert np.array_equal(np.asarray(granted["errors"]), written) and granted["source"].startswith("hub:")
    assert granted["folder"] == "0o700" and set(granted["modes"]) >= set(SPEC.files)
    assert {granted["modes"][name] for name in SPEC.files} == {"0o600"}
    assert stranger["error"] == "DatasetNotAvailableError" and "not been granted access" in stranger["message"]
    assert anonymous["error"] == "DatasetNotAvailableError" and "no Hugging Face token" in anonymous["message"]
    assert "hf_stranger_token_0002" not in stranger["message"]


def test_the_reader_never_writes_into_the_local_copy(tmp_path):
    write_rexval(tmp_path, seed=4)
    before = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*")}
    rexval.read_folder(tmp_path)
    assert {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*")} == before


RADEVALX = expert_sets.get_expert_set("radevalx")
RADEVALX_FOLDERS = {"wget -r": "physionet.org/files/rad-eval-x/1.0.0", "project folder": "rad-eval-x/1.0.0",
                    "flat": "", "zip": "radiology-report-generation-models-evaluation-dataset-for-chest-x-rays-radevalx-1.0.0"}


@pytest.mark.parametrize("layout", list(RADEVALX_FOLDERS))
def test_radevalx_every_layout_reads_the_pairs_and_counts_written(tmp_path, layout):
    """Blank count cells read as 0 and the report's notes say how many there were."""
    _, written, blank = write_radevalx(tmp_path / RADEVALX_FOLDERS[layout], seed=1)
    expert = expert_sets.read("RadEvalX", tmp_path)
    assert len(expert.references) == 100 and expert.raters == ["consensus"] and expert.categories == list(range(1, 9))
    assert np.array_equal(expert.errors, written)
    assert np.array_equal(expert.groups, np.arange(100))  # one candidate per study
    assert f"{blank:,} of 1,600 error-count cells are blank and were read as 0 errors" in expert.notes[0]
    with (tmp_path / RADEVALX_FOLDERS[layout] / RADEVALX.files[0]).open(newline="") as handle:
        first = next(csv.DictReader(handle))
    assert (expert.study_ids[0], expert.references[0], expert.hypotheses[0]) == (
        first["report_id"], first["ground_truth"], first["M2Tr-Generation"])


@pytest.mark.parametrize("file, edit, expected", [
    (0, _set_cell("3", "-1"), "line 2: category 3 '-1' is not a count"),
    (0, _set_cell("3", "1.5"), "line 2: category 3 '1.5' is not a whole number"),
    (1, _set_cell("8", "many"), "line 2: category 8 'many' is not a number"),
    (0, _set_cell("report_id", "CXR1001_IM-0001", row=1), "report_id 'CXR1001_IM-0001' appears twice"),
    (1, _set_cell("report_id", "CXR9999_IM-9999"), "report_id 'CXR9999_IM-9999' is not in"),
    (1, _set_cell("M2Tr-Generation", "Another text."), "has other texts than in"),
    (0, lambda rows: [r[:-1] for r in rows], "has no column 8"),
    (1, lambda rows: rows[:-1], "holds 99 studies, the release has 100"),
])
def test_radevalx_anything_but_the_release_is_one_clear_error(tmp_path, file, edit, expected):
    write_radevalx(tmp_path, seed=2)
    _rewrite(tmp_path / RADEVALX.files[file], edit)
    with pytest.raises(DatasetNotAvailableError) as error:
        expert_sets.read("radevalx", tmp_path)
    assert expected in str(error.value) and RADEVALX.files[file] in str(error.value)
    assert "physionet.org/content/rad-eval-x/1.0.0/" in str(error.value)

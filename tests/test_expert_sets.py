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
    with pytest.raises(UnknownNameError,
                       match="Unknown expert set 'mimic_cxr'. Available: rexval, radevalx, radeval_expert"):
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
name = sys.argv[1]
try:
    expert = expert_sets.read(name, from_hub=True)
except Exception as exc:
    print(json.dumps({"error": type(exc).__name__, "message": str(exc)}))
else:
    folder = expert_sets.hub_cache_dir(name)
    modes = {p.name: oct(stat.S_IMODE(p.stat().st_mode)) for p in folder.iterdir() if p.is_file()}
    print(json.dumps({"errors": expert.errors.tolist(), "source": expert.source,
                      "folder": oct(stat.S_IMODE(folder.stat().st_mode)), "modes": modes}))
"""


def _hub_read(hub, home: Path, token: str | None, name: str = "rexval") -> dict:
    env = {key: value for key, value in os.environ.items() if key not in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")}
    env.update(HF_ENDPOINT=hub.endpoint, HF_HUB_OFFLINE="0", HF_HOME=str(home / "hf"), REXRANK_HUB_ORG="host-org",
               REXRANK_CACHE_DIR=str(home / "cache"), HF_HUB_DISABLE_PROGRESS_BARS="1")
    if token:
        env["HF_TOKEN"] = token
    result = subprocess.run([sys.executable, "-c", HUB_READ, name], env=env, capture_output=True, text=True,
                            timeout=300)
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


# -- the RadEval expert dataset (Hub IAMJB/RadEvalExpertDataset) ---------------------------------------------------
RADEVAL = expert_sets.get_expert_set("radeval_expert")
RADEVAL_COLUMNS = ["annotator", "type", "ground_truth", "images_path", "prediction1", "prediction2", "prediction3",
                   "annotation1", "annotation2", "annotation3"]


def _annotation(counts: np.ndarray, style: int) -> str:
    """One annotation cell in the release's grammar: a header per section, then numbered category lines ending in
    the count, in one of the spellings the file uses (label and ':' / label and '=' / the count alone)."""
    labels = ["False report of a finding", "Missing a finding", "Misidentification of location",
              "Misassessment of severity", "Mentioning a comparison not in the reference",
              "Omitting a comparison", "Grammar or readability"]
    lines = []
    for s, header in ((1, "Clinically significant errors:"), (0, "Clinically insignificant errors:")):
        lines.append(header if style != 2 else header.lower().replace("clinically ", ""))
        for c, label in enumerate(labels):
            count = int(counts[c, s])
            lines.append([f"{c + 1}. {label}: {count}", f"{c + 1}) {label} = {count}.", f"{c + 1}. {count}"][style])
        lines.append("")
    return "\n".join(lines)


def write_radeval_expert(folder: Path, seed: int = 0, n_rows: int = 208) -> tuple[Path, np.ndarray, list[str]]:
    """A synthetic reader_study_final_with_annotationsv3.csv in the release's layout: 208 rows, each a reference and
    three candidates with their annotations; studies (images_path) shared by a findings and an impression row."""
    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    errors = rng.integers(0, 3, size=(n_rows, 3, 7, 2)).astype(float)
    studies = []
    with (folder / RADEVAL.files[0]).open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(RADEVAL_COLUMNS)
        for i in range(n_rows):
            study = f"files/p1{i // 2:04d}/s5{i // 2:07d}/view.jpg"
            studies.append(study)
            writer.writerow([f"reader{i % 2}", "findings" if i % 2 == 0 else "impression",
                             f"Reference {i}: no acute cardiopulmonary process.", study,
                             *(f"Candidate {i}.{k}: mild cardiomegaly, line 1.\nLine 2." for k in range(3)),
                             *(_annotation(errors[i, k], (i + k) % 3) for k in range(3))])
    return folder, errors, studies


@pytest.mark.parametrize("layout", ["flat", "git clone"])
def test_radeval_expert_reads_every_pair_and_its_counts(tmp_path, layout):
    folder, written, studies = write_radeval_expert(tmp_path / ("" if layout == "flat" else "RadEvalExpertDataset"))
    expert = expert_sets.read("RadEval", tmp_path)
    assert len(expert.references) == RADEVAL.n_pairs == 624 and expert.raters == ["reader"]
    assert expert.categories == list(range(1, 8)) and expert.errors.shape == (624, 1, 7, 2)
    assert np.array_equal(expert.errors[:, 0], written.reshape(624, 7, 2))
    assert expert.study_ids[:6] == [studies[0]] * 3 + [studies[1]] * 3
    assert np.array_equal(expert.groups, np.repeat(np.arange(104), 6))  # a study's findings and impression rows
    assert expert.candidates[:4] == ["findings:prediction1", "findings:prediction2", "findings:prediction3",
                                     "impression:prediction1"]
    with (folder / RADEVAL.files[0]).open(newline="") as handle:
        first = next(csv.DictReader(handle))
    assert (expert.references[0], expert.hypotheses[2]) == (first["ground_truth"], first["prediction3"])
    assert "no inter-rater ceiling" in expert.notes[0] and len(expert.notes) == 1


def test_radeval_expert_leaves_out_pairs_without_whole_counts_and_says_so(tmp_path):
    """A blank annotation, a count that is not a whole number, a missing category: the pair is left out (never read
    as 0 errors) and the notes count each reason; the other pairs are read as written."""
    folder, written, _ = write_radeval_expert(tmp_path)
    path = folder / RADEVAL.files[0]

    def edit(rows):
        rows[1][7] = " "
        rows[2][8] = rows[2][8].replace(": 1", ": one", 1).replace("= 1.", "= 1.5", 1).replace(". 1", ". 1/2", 1)
        rows[3][9] = "\n".join(line for line in rows[3][9].splitlines() if not line.startswith(("4", "4)")))
        return rows
    _rewrite(path, edit)
    with path.open(newline="") as handle:
        changed = list(csv.reader(handle))
    assert changed[2][8] != _annotation(written[1, 1], (1 + 1) % 3)  # the edit bit
    expert = expert_sets.read("radeval_expert", tmp_path)
    assert len(expert.references) == 621
    keep = np.ones((208, 3), bool)
    keep[0, 0] = keep[1, 1] = keep[2, 2] = False
    assert np.array_equal(expert.errors[:, 0], written[keep])
    assert ("3 of 624 pairs left out, not read as 0 errors (1 blank annotation; 1 category" in expert.notes[1]
            and "no whole-number count" in expert.notes[1] and "no count for some categories" in expert.notes[1])


@pytest.mark.parametrize("edit, expected", [
    (_set_cell("annotation1", "Clinically significant errors:\n1. False finding: 0\nThe rest looks fine."),
     "line 2: annotation1: unknown annotation line 'The rest looks fine.'"),
    (_set_cell("annotation2", "Clinically significant errors:\n8. Other: 1"),
     "annotation2: error category 8 is not one of 1-7"),
    (_set_cell("annotation3", "1. False finding: 0\nClinically significant errors:"),
     "annotation3: category 1's count comes before any"),
    (_set_cell("annotation1", "Significant errors:\n2. Missing: 0\n2. Missing: 1"),
     "annotation1: category 2 is given twice in the significant section"),
    (_set_cell("ground_truth", " "), "line 2: empty ground_truth"),
    (_set_cell("prediction2", ""), "line 2: empty prediction2"),
    (lambda rows: [r[:-1] for r in rows], "has no column annotation3"),
    (lambda rows: rows[:-1], "holds 207 rows, the release has 208"),
])
def test_radeval_expert_anything_but_the_release_is_one_clear_error(tmp_path, edit, expected):
    write_radeval_expert(tmp_path)
    _rewrite(tmp_path / RADEVAL.files[0], edit)
    with pytest.raises(DatasetNotAvailableError) as error:
        expert_sets.read("radeval_expert", tmp_path)
    assert expected in str(error.value) and RADEVAL.files[0] in str(error.value)
    assert "huggingface.co/datasets/IAMJB/RadEvalExpertDataset" in str(error.value)


def test_radeval_expert_line_numbers_follow_multi_line_records(tmp_path):
    """Records span several lines (multi-line reports and annotations): an error names the record's first line."""
    folder, _, _ = write_radeval_expert(tmp_path)
    path = folder / RADEVAL.files[0]
    _rewrite(path, _set_cell("annotation1", "Significant errors:\n9. x: 1", row=3))
    with path.open(newline="") as handle:
        text = handle.read()
    first_line = text[:text.index("Reference 2:")].count("\n") + 1
    with pytest.raises(DatasetNotAvailableError, match=f"line {first_line}: annotation1: error category 9"):
        expert_sets.read("radeval_expert", tmp_path)


def test_radeval_expert_hub_route_reads_the_authors_repo_into_an_owner_only_folder(tmp_path):
    """The Hub route reads the authors' own repo (IAMJB/RadEvalExpertDataset, public) over real HTTP into an
    owner-only folder (0700, files 0600), equal to the local read: its reports are MIMIC-CXR text."""
    from rexrank.testing.loopback_hub import LoopbackHub

    source, written, _ = write_radeval_expert(tmp_path / "release", seed=6)
    with LoopbackHub() as hub:
        hub.add_user("IAMJB", "hf_authors_token_0003")
        hub.add_repo("IAMJB/RadEvalExpertDataset", files={RADEVAL.files[0]: (source / RADEVAL.files[0]).read_bytes(),
                                                           "README.md": b"---\nlicense: mit\n---\n"})
        read = _hub_read(hub, tmp_path / "anyone", None, name="radeval_expert")
    assert "error" not in read, read
    assert np.array_equal(np.asarray(read["errors"])[:, 0], written.reshape(624, 7, 2))
    assert read["source"].startswith("hub:") and read["folder"] == "0o700"
    assert read["modes"] == {RADEVAL.files[0]: "0o600"}


@pytest.mark.slow  # 1.7 s of CPU of its own: over the fast tier's 2 s or near it (tests/README.md, "Tiers")
def test_meta_eval_runs_on_the_radeval_expert_set(tmp_path, cli):
    """`rexrank meta-eval --dataset radeval_expert`: 624 pairs over 104 studies (a study's rows resampled together),
    one reader per pair (no ceiling), the notes in the JSON, the seventh category among the targets."""
    write_radeval_expert(tmp_path / "data", seed=7)
    code, output = cli("meta-eval", "--dataset", "radeval_expert", "--data-dir", str(tmp_path / "data"), "--metrics",
                       "bleu2", "--resamples", "30", "--out", str(tmp_path / "out"))
    assert code == 0, output
    report = json.loads((tmp_path / "out" / "meta_eval.json").read_text())
    assert (report["dataset"], report["n_pairs"], report["n_studies"], report["n_raters"]) == (
        "radeval_expert", 624, 104, 1)
    assert report["raters"] == {"total": None, "significant": None}
    assert any("no inter-rater ceiling" in note for note in report["notes"])
    assert set(report["metrics"]["bleu2"]["targets"]) >= {"total", "significant", "category_7_significant"}

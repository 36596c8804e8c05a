"""What code under test receives from `rexrank generate`, relative paths, and one run per output folder.

Trust boundary (docs/architecture.md, "Trust boundaries"): a model under test gets a study's id, image paths, view positions and, only with
--context, its context; never findings, impression, the report or anything derived from them, nor any column it was
not explicitly allowed. Each adapter is fed studies whose reference text holds one canary and whose unknown extra
columns hold another, and everything it was handed is searched for both.
"""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from rexrank.data.study import STUDY_COLUMNS, make_study
from rexrank.errors import ConfigError
from rexrank.generate import GenerateOptions, GenerationSettings, generate, load_adapter
from rexrank.generate.adapters.hf import ImageTextToTextAdapter, VisionEncoderDecoderAdapter
from rexrank.generate.lock import RunLock
from rexrank.generate.studies import CONTEXT_FIELDS, MODEL_INPUT_FIELDS, build_inputs, model_view

GT_CANARY = "GTCANARY-7f3a91"  # in findings / impression (so also gt_*, report, section_*)
EXTRA_CANARY = "XCOLCANARY-5be2"  # in columns the allow-list does not name (unknown extras, patient id, site)
CONTEXT_MARK = "CTXMARK-40d7"  # in the context: seen with --context only
VIEWS = ("PA", "LATERAL")
N = 3


def _canary_records(root: Path) -> list[dict]:
    records = []
    for i in range(N):
        paths = []
        for j in range(2):
            path = root / "img" / f"s{i}" / f"view{j}.png"
            path.parent.mkdir(parents=True, exist_ok=True)
            pixels = np.random.RandomState(10 * i + j).randint(0, 255, (36, 36, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(path)
            paths.append(str(path))
        record = make_study(study_id=f"s{i}", dataset="iu_xray", split="test", image_paths=paths, key_image=paths[0],
                            view_positions=list(VIEWS), findings=f"Heart normal {GT_CANARY} f{i}.",
                            impression=f"No disease {GT_CANARY} i{i}.",
                            context=f"Indication: cough {CONTEXT_MARK}. Comparison: None.",
                            patient_id=f"{EXTRA_CANARY}-p{i}", site=EXTRA_CANARY, age=61, sex="F")
        # Columns a future Study record (or a user's dataset) might carry: hidden unless allow-listed.
        record |= {"report": f"Findings: {GT_CANARY}", "section_findings": GT_CANARY, "reference": GT_CANARY,
                   "gt_labels": [GT_CANARY], "secret_column": EXTRA_CANARY, "notes": {"x": EXTRA_CANARY}}
        records.append(record)
    return records


@pytest.fixture
def canary_records(tmp_path_factory) -> list[dict]:
    return _canary_records(tmp_path_factory.mktemp("canary_studies"))


def _assert_only_allowed(seen: str, records: list[dict], *, context: bool, all_images: bool = True) -> None:
    """No canary anywhere in what the model got; the allowed fields are there; context only when asked for."""
    assert seen, "the code under test recorded nothing"
    assert GT_CANARY not in seen, "reference text reached the code under test"
    assert EXTRA_CANARY not in seen, "a column outside the allow-list reached the code under test"
    assert (CONTEXT_MARK in seen) is context
    for record in records:  # image paths: absolute, or relative to the root an inference.py gets
        images = record["image_paths"] if all_images else [record["key_image"]]
        assert record["study_id"] in seen
        assert all(os.path.join(record["study_id"], os.path.basename(p)) in seen for p in images)


def _study_input_dump(study) -> str:
    values = {f.name: getattr(study, f.name) for f in dataclasses.fields(study)}
    values["record"] = dict(values["record"])
    return repr(study) + repr(values)


def test_the_allow_list_is_copied_not_filtered():
    """model_view copies exactly the allow-listed fields (context only on request); every Study column outside the
    list, and any column unknown today, is absent."""
    record = make_study(study_id="a", dataset="d", split="test", image_paths=["rel/a.png"], view_positions=["PA"],
                        findings="F", impression="I", context="C", patient_id="p") | {"brand_new_column": "x"}
    view = model_view(record, use_context=False)
    assert tuple(view) == MODEL_INPUT_FIELDS
    assert view["image_paths"] == (os.path.abspath("rel/a.png"),) and view["key_image"] == os.path.abspath("rel/a.png")
    assert tuple(model_view(record, use_context=True)) == MODEL_INPUT_FIELDS + CONTEXT_FIELDS
    hidden = set(STUDY_COLUMNS) - set(MODEL_INPUT_FIELDS) - set(CONTEXT_FIELDS) - {"images"}
    assert {"findings", "impression", "gt_findings", "gt_findings_impression"} <= hidden
    (study,) = build_inputs([record], image_mode="all", use_context=False, prompt_template="{context}")
    assert set(study.as_dict()["record"]) == set(MODEL_INPUT_FIELDS)


RECORDER = '''
import json

class Recorder:
    """Records everything it is given: constructor arguments, and each call's positional and keyword arguments."""
    def __init__(self, log, **kwargs):
        self.log = log
        self._write("init", repr(kwargs))
    def _write(self, kind, text):
        with open(self.log, "a") as handle:
            handle.write(kind + " " + text + "\\n")
    def __call__(self, *args, **kwargs):
        self._write("args", repr(args))
        self._write("kwargs", repr(kwargs))
        self._write("json", json.dumps(args, default=repr))
        return ["Findings: ok %s." % s["study_id"] for s in args[0]]

def recorder_function(studies, log, **kwargs):
    with open(log, "a") as handle:
        handle.write(repr(studies) + repr(kwargs) + "\\n")
    return ["ok"] * len(studies)
recorder_function.multi_image = False
'''


@pytest.mark.parametrize("context", [False, True])
def test_entry_point_receives_only_allowed_fields(canary_records, tmp_path, context):
    """A class entry point (all images) and a function entry point (key image) record repr of every argument."""
    module = tmp_path / "recorder.py"
    module.write_text(RECORDER)
    log = tmp_path / "seen.txt"
    adapter = load_adapter(f"{module}:Recorder", model_args={"log": str(log)})
    result = generate(canary_records, adapter, tmp_path / "out", GenerateOptions(context=context, batch_size=2,
                                                                                 progress=False))
    assert not result.errors
    seen = log.read_text()
    _assert_only_allowed(seen, canary_records, context=context)
    assert all(v in seen for v in VIEWS)
    # The harness's own output still carries the reference (written by rexrank, not given to the model).
    assert GT_CANARY in (tmp_path / "out" / "predictions.json").read_text()

    log2 = tmp_path / "seen2.txt"
    adapter = load_adapter(f"{module}:recorder_function", model_args={"log": str(log2)})
    generate(canary_records, adapter, tmp_path / "out2", GenerateOptions(context=context, progress=False))
    _assert_only_allowed(log2.read_text(), canary_records, context=context, all_images=False)


DUMPER = '''
import json, os, sys
DUMP = {dump!r}
input_json, output_json, root = sys.argv[1:4]
seen = {{"argv": sys.argv, "cwd": os.getcwd(), "files": {{}}, "root_listing": []}}
for folder in {{os.getcwd(), os.path.dirname(os.path.abspath(input_json))}}:
    for dirpath, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(dirpath, name)
            with open(path, errors="replace") as handle:
                seen["files"][path] = handle.read()
for dirpath, _, names in os.walk(root):
    seen["root_listing"] += [os.path.join(dirpath, name) for name in names]
studies = json.load(open(input_json))
for study_id, entry in studies.items():
    assert all(os.path.isfile(os.path.join(root, p)) for p in entry["image_path"]), entry
    entry["model_prediction"] = "Findings: %d views of %s." % (len(entry["image_path"]), study_id)
json.dump(studies, open(output_json, "w"))
with open(DUMP, "a") as handle:
    handle.write(json.dumps(seen) + "\\n")
'''


def _dumper(folder: Path, dump: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    script = folder / "inference.py"
    script.write_text(DUMPER.format(dump=str(dump)))
    return script


@pytest.mark.parametrize("context", [False, True])
def test_inference_script_receives_only_allowed_fields(canary_records, tmp_path, context):
    """The upstream inference.py route: its input.json and every file in its working folder and in the input
    JSON's folder hold no canary; the allowed fields (relative image paths, views, context if asked) are there."""
    dump = tmp_path / "dump.jsonl"
    adapter = load_adapter(str(_dumper(tmp_path / "submission", dump)))
    result = generate(canary_records, adapter, tmp_path / "out", GenerateOptions(context=context, batch_size=2,
                                                                                 progress=False))
    assert not result.errors, result.errors
    calls = [json.loads(line) for line in dump.read_text().splitlines()]
    assert len(calls) == 2  # batches of 2 and 1
    seen = dump.read_text()
    _assert_only_allowed(seen, canary_records, context=context)
    inputs = [json.loads(text) for call in calls for path, text in call["files"].items()
              if path.endswith("input.json")]
    entry = inputs[0]["s0"]
    assert set(entry) == {"image_path", "key_image_path", "frontal_lateral"} | ({"context"} if context else set())
    assert entry["frontal_lateral"] == list(VIEWS) and entry["image_path"] == ["s0/view0.png", "s0/view1.png"]


def test_hf_adapters_receive_only_allowed_fields(standins, canary_records, tmp_path, monkeypatch):
    """Both Hugging Face adapters (the stand-ins of test_generate_run.py): every StudyInput their prepare() gets, the
    chat texts the image-text-to-text adapter builds and the token ids its generate() gets hold no canary."""
    models = standins("generate")
    seen: list[str] = []
    for cls in (ImageTextToTextAdapter, VisionEncoderDecoderAdapter):
        original_prepare, original_generate = cls.prepare, cls.generate

        def prepare(self, batch, _original=original_prepare):
            seen.append(repr(batch) + "".join(_study_input_dump(s) for s in batch))
            if isinstance(self, ImageTextToTextAdapter):
                seen.append(repr([self._text(s) for s in batch]))
            return _original(self, batch)

        def generate_(self, prepared, _original=original_generate):
            seen.append(repr({k: getattr(v, "shape", v) for k, v in prepared.items()}))
            if "input_ids" in prepared:
                seen.append(repr(self.decoder.batch_decode(prepared["input_ids"], skip_special_tokens=False)))
            return _original(self, prepared)

        monkeypatch.setattr(cls, "prepare", prepare)
        monkeypatch.setattr(cls, "generate", generate_)
    settings = GenerationSettings(max_new_tokens=2)
    for context in (False, True):
        seen.clear()
        adapter = load_adapter(models["generate_itt"], settings=settings)
        result = generate(canary_records, adapter, tmp_path / f"itt{context}",
                          GenerateOptions(context=context, batch_size=2, progress=False))
        assert not result.errors, result.errors
        text = "\n".join(seen)
        _assert_only_allowed(text, canary_records, context=context)
        assert "Write the findings section" in text  # the prompt did reach the model
    seen.clear()
    result = generate(canary_records, load_adapter(models["generate_ved"], settings=settings), tmp_path / "ved",
                      GenerateOptions(batch_size=2, progress=False))
    assert not result.errors, result.errors
    _assert_only_allowed("\n".join(seen), canary_records, context=False)


def _rel_study_json(root: Path) -> None:
    from rexrank.testing.standin_generate import write_image_studies

    write_image_studies(root, N, lambda i, j: np.full((32, 32, 3), 10 * i + j, dtype=np.uint8),
                        lambda i: {"frontal_lateral": list(VIEWS), "report": f"Findings: {GT_CANARY}",
                                   "section_findings": f"{GT_CANARY} f{i}",
                                   "section_impression": f"{GT_CANARY} i{i}", "secret": EXTRA_CANARY})


def test_inference_script_with_relative_paths(cli, tmp_path, monkeypatch):
    """The documented form: relative --out, --input-json, --image-root and script path. The script runs in its own
    folder and still finds its input, output and images: every path it gets is absolute."""
    monkeypatch.chdir(tmp_path)
    _rel_study_json(tmp_path / "data")
    dump = tmp_path / "dump.jsonl"
    _dumper(tmp_path / "submission", dump)
    code, output = cli("generate", "--input-json", "data/studies.json", "--image-root", "data/img",
                       "--model", "submission/inference.py", "--out", "runs/rel", "--no-progress")
    assert code == 0, output
    reports = json.loads((tmp_path / "runs" / "rel" / "reports.json").read_text())
    assert reports == {f"s{i}": f"2 views of s{i}." for i in range(N)}
    (call,) = [json.loads(line) for line in dump.read_text().splitlines()]
    assert all(os.path.isabs(p) for p in call["argv"][1:4])
    assert GT_CANARY not in dump.read_text() and EXTRA_CANARY not in dump.read_text()


def test_dataset_with_relative_data_dir_and_out(cli, tmp_path, monkeypatch):
    """--dataset with a relative --data-dir and --out through inference.py: the real IU-Xray reference text of the
    studies never reaches the script."""
    from rexrank import data
    from rexrank.data.synthetic import write_iu_xray_images

    monkeypatch.chdir(tmp_path)
    write_iu_xray_images(tmp_path / "iu", splits=("test",))
    dump = tmp_path / "dump.jsonl"
    _dumper(tmp_path / "submission", dump)
    code, output = cli("generate", "--dataset", "iu_xray", "--data-dir", "iu", "--split", "test", "--limit", "3",
                       "--model", "submission/inference.py", "--out", "runs/iu", "--no-progress")
    assert code == 0, output
    assert len(json.loads((tmp_path / "runs" / "iu" / "reports.json").read_text())) == 3
    seen = dump.read_text()
    rows = data.load("iu_xray", data_dir=tmp_path / "iu", split="test", track="findings").select(range(3))
    for row in rows:
        assert row["study_id"] in seen
        assert row["findings"] not in seen and row["gt_findings_impression"] not in seen


def test_run_lock_is_exclusive_and_released(tmp_path):
    """The lock in one process: a second acquire names the holder's pid; a released lock can be taken again; an
    --out that cannot be a folder is a clear error."""
    lock = RunLock.acquire(tmp_path / "out")
    with pytest.raises(ConfigError, match=rf"running on .*out \(pid {os.getpid()}\); wait for it or use another"):
        RunLock.acquire(tmp_path / "out")
    lock.release()
    RunLock.acquire(tmp_path / "out").release()
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigError, match="cannot create the output folder"):
        RunLock.acquire(tmp_path / "file")


BLOCKER = '''
import os, time

class Blocker:
    """Says it started, then waits until the test releases it."""
    def __init__(self, started, release):
        self.started, self.release = started, release
    def __call__(self, studies):
        open(self.started, "w").close()
        deadline = time.time() + 120
        while not os.path.exists(self.release) and time.time() < deadline:
            time.sleep(0.05)
        return ["Findings: ok." for _ in studies]
'''


@pytest.mark.slow  # 2.8 s of CPU of its own: over the fast tier's 2 s or near it (tests/README.md, "Tiers")
def test_second_run_on_the_same_out_is_refused(cli, canary_records, tmp_path):
    """A run holds OUT/.lock: a second run on the same --out exits at once with a clear message naming the first
    run's pid, and leaves the first run's work alone; once the first finishes, the folder is free again (the lock
    dies with its process, so a killed run never blocks a later one)."""
    from rexrank.data.rexrank_json import write_rexrank_json

    study_json = write_rexrank_json(canary_records, tmp_path / "studies.json")
    module = tmp_path / "blocker.py"
    module.write_text(BLOCKER)
    started, release, out = tmp_path / "started", tmp_path / "release", tmp_path / "out"
    args = ["generate", "--input-json", str(study_json), "--out", str(out), "--no-progress",
            "--model", f"{module}:Blocker", "--model-arg", f"started={json.dumps(str(started))}",
            "--model-arg", f"release={json.dumps(str(release))}"]
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK")}
    first = subprocess.Popen([sys.executable, "-m", "rexrank", *args], env=env | {"OMP_NUM_THREADS": "1"},
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 120
        while not started.exists() and first.poll() is None and time.time() < deadline:
            time.sleep(0.05)
        assert started.exists(), first.communicate(timeout=30)[1][-3000:]

        code, output = cli(*args)
        assert code == 2, output
        assert f"another rexrank generate is running on {out} (pid {first.pid}); wait for it or use another --out" \
            in output and "Traceback" not in output
        code, output = cli(*args, "--overwrite")  # --overwrite does not get past the lock either
        assert code == 2 and "another rexrank generate is running" in output

        release.touch()
        stdout, stderr = first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert first.returncode == 0, stderr[-3000:]
    assert "3 of 3 reports" in stdout
    assert len(json.loads((out / "reports.json").read_text())) == N
    code, output = cli(*args)  # the lock went with the first process: a rerun resumes
    assert code == 0 and f"{N} from an earlier run, 0 generated now" in output

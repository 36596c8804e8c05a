"""End-to-end `rexrank generate` on the random-weight stand-ins (CPU): adapters, data parallel, resume, failures.

The stand-ins prove plumbing (order, sharding, resume, error handling), never a real model's reports.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from rexrank.errors import ConfigError
from rexrank.generate import GenerateOptions, GenerationSettings, generate, load_adapter
from rexrank.generate.adapters.hf import ImageTextToTextAdapter, VisionEncoderDecoderAdapter

REPO = Path(__file__).resolve().parents[1]
N_STUDIES = 10

# Entry points used by the tests (written to a file: exercises the file.py:target form).
HELPERS = '''
import os, time

class Echo:
    """A deterministic "model": the report names the study and its images; can fail on one study."""
    def __init__(self, fail_on=None):
        self.fail_on = fail_on
    def __call__(self, studies):
        if any(s["study_id"] == self.fail_on for s in studies):
            raise RuntimeError("cannot read " + self.fail_on)
        return ["Findings: %s has %d image(s). Impression: context=%s" % (s["study_id"], len(s["image_paths"]),
                s["context"] is not None) for s in studies]

class NamesItsImage:
    """Fails study s2 with an error naming its image's absolute path, as PIL's errors do."""
    def __call__(self, studies):
        for s in studies:
            if s["study_id"] == "s2":
                raise OSError("cannot identify image file %r" % s["image_paths"][0])
        return ["Findings: ok %s." % s["study_id"] for s in studies]

def one_line(studies, suffix="."):
    return ["Study " + s["study_id"] + suffix for s in studies]
one_line.multi_image = False

class SlowVed:
    """The VED stand-in through plain transformers calls (no rexrank adapter), slowed by $SLOW_VED_DELAY s/batch."""
    multi_image = False
    def __init__(self, model, device="cpu"):
        from transformers import AutoImageProcessor, AutoTokenizer, VisionEncoderDecoderModel
        self.tokenizer = AutoTokenizer.from_pretrained(model)
        self.processor = AutoImageProcessor.from_pretrained(model)
        self.model = VisionEncoderDecoderModel.from_pretrained(model).to(device).eval()
        self.delay = float(os.environ.get("SLOW_VED_DELAY", "0"))
    def __call__(self, studies):
        from PIL import Image
        time.sleep(self.delay)
        images = [Image.open(s["image_paths"][0]).convert("RGB") for s in studies]
        pixels = self.processor(images=images, return_tensors="pt").pixel_values
        out = self.model.generate(pixel_values=pixels, max_new_tokens=8, do_sample=False, num_beams=1)
        return self.tokenizer.batch_decode(out, skip_special_tokens=True)
'''

INFERENCE_SCRIPT = '''
import json, os, sys
input_json, output_json, root = sys.argv[1:4]
studies = json.load(open(input_json))
for study_id, entry in studies.items():
    paths = [os.path.join(root, p) for p in entry["image_path"]]
    assert all(os.path.isfile(p) for p in paths), paths          # relative to img_root_dir, as upstream
    assert os.path.isfile(os.path.join(root, entry["key_image_path"]))
    if study_id == "s5":
        continue                                                   # a study the script forgets
    entry["model_prediction"] = "Findings: %d views of %s. Impression: Normal." % (len(paths), study_id)
json.dump(studies, open(output_json, "w"))
'''


@pytest.fixture(scope="module")
def study_json(tmp_path_factory) -> Path:
    """A ReXrank-style JSON of N_STUDIES studies with 1-3 random PNGs each (relative paths, like the official
    files), every third with context."""
    root = tmp_path_factory.mktemp("studies")
    entries = {}
    for i in range(N_STUDIES):
        paths = []
        for j in range(1 + i % 3):
            rel = f"s{i}/view{j}.png"
            (root / "img" / f"s{i}").mkdir(parents=True, exist_ok=True)
            pixels = np.random.RandomState(100 * i + j).randint(0, 255, (40 + 4 * j, 36, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(root / "img" / rel)
            paths.append(rel)
        entries[f"s{i}"] = {"key_image_path": paths[-1], "image_path": paths, "split": "test",
                            "report": f"Findings: Finding {i}. Impression: Normal.",
                            "section_findings": f"Finding {i}.", "section_impression": "Normal.",
                            "context": "Indication: cough. Comparison: None." if i % 3 == 0 else None}
    path = root / "studies.json"
    path.write_text(json.dumps(entries))
    return path


@pytest.fixture(scope="module")
def records(study_json):
    from rexrank.data import read_rexrank_json

    return read_rexrank_json(study_json, image_root=study_json.parent / "img")


@pytest.fixture(scope="module")
def helpers(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("helpers") / "gen_helpers.py"
    path.write_text(HELPERS)
    return path


def _args(study_json: Path, out: Path, *extra: str) -> list[str]:
    return ["generate", "--input-json", str(study_json), "--image-root", str(study_json.parent / "img"),
            "--out", str(out), "--no-progress", *extra]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR",
                                                             "MASTER_PORT")}
    return env | {"OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


def _run_group(command: list[str], timeout: float) -> subprocess.CompletedProcess:
    """Run a launcher in its own process group and kill the whole group on timeout (workers included)."""
    proc = subprocess.Popen(command, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        stdout, stderr = proc.communicate()
        raise AssertionError(f"{command[:6]} timed out after {timeout}s:\n{stderr[-3000:]}") from None
    return subprocess.CompletedProcess(command, proc.returncode, stdout, stderr)


def test_vision_encoder_decoder_standin(standins, records, tmp_path):
    """The VED stand-in loads through AutoTokenizer/AutoImageProcessor/VisionEncoderDecoderModel, reads the key image
    only, and gives different greedy reports for different images (so order checks below can fail)."""
    model = standins("generate")["generate_ved"]
    adapter = load_adapter(model, settings=GenerationSettings(max_new_tokens=8))
    assert isinstance(adapter, VisionEncoderDecoderAdapter)
    result = generate(records, adapter, tmp_path, GenerateOptions(batch_size=4, progress=False))
    reports = json.loads(result.reports_path.read_text())
    assert list(reports) == [f"s{i}" for i in range(N_STUDIES)] and not result.errors
    assert len(set(reports.values())) >= N_STUDIES // 2
    predictions = json.loads(result.predictions_path.read_text())
    assert predictions["s4"]["model_prediction"] == reports["s4"]
    assert predictions["s4"]["section_findings"] == "Finding 4." and predictions["s4"]["image_path"][0].endswith(".png")


def test_harness_matches_a_bare_transformers_loop(standins, records, helpers, tmp_path):
    """The HF adapter's reports equal plain transformers calls on the same batches (the entry point SlowVed)."""
    model = standins("generate")["generate_ved"]
    options = GenerateOptions(batch_size=3, progress=False)
    ours = generate(records, load_adapter(model, settings=GenerationSettings(max_new_tokens=8)), tmp_path / "a",
                    options)
    bare = generate(records, load_adapter(f"{helpers}:SlowVed", model_args={"model": model}), tmp_path / "b", options)
    assert json.loads(ours.reports_path.read_text()) == json.loads(bare.reports_path.read_text())


def test_image_text_to_text_standin_with_context(standins, records, tmp_path):
    """The tiny LLaVA loads through AutoProcessor/AutoModelForImageTextToText; several images per study, context in
    the prompt, left-padded batches: batched reports equal one-study-at-a-time reports."""
    model = standins("generate")["generate_itt"]
    adapter = load_adapter(model, settings=GenerationSettings(max_new_tokens=8))
    assert isinstance(adapter, ImageTextToTextAdapter) and adapter.multi_image
    options = dict(track="findings_impression", context=True, progress=False)
    batched = generate(records, adapter, tmp_path / "b4", GenerateOptions(batch_size=4, **options))
    single = generate(records, adapter, tmp_path / "b1", GenerateOptions(batch_size=1, **options))
    assert adapter.processor.tokenizer.padding_side == "left"
    assert json.loads(batched.reports_path.read_text()) == json.loads(single.reports_path.read_text())
    with pytest.raises(ConfigError, match="different settings"):  # same folder, other prompt: never mixed
        generate(records, adapter, tmp_path / "b4", GenerateOptions(prompt="Describe.{context}", **options))


@pytest.mark.slow
@pytest.mark.parametrize("which", ["generate_itt", "generate_ved"])
def test_two_processes_match_one(standins, study_json, cli, tmp_path, which):
    """torchrun with 2 CPU processes (gloo) writes byte-identical predictions, in input order, to one process, and
    really splits the work (both processes' part files hold studies)."""
    model = standins("generate")[which]
    options = ["--model", model, "--batch-size", "3", "--max-new-tokens", "8", "--track", "findings_impression"]
    code, output = cli(*_args(study_json, tmp_path / "one", *options))
    assert code == 0, output
    two = tmp_path / "two"
    proc = _run_group([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                       "-m", "rexrank", *_args(study_json, two, *options)], timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert (tmp_path / "one" / "predictions.json").read_bytes() == (two / "predictions.json").read_bytes()
    assert (tmp_path / "one" / "reports.json").read_bytes() == (two / "reports.json").read_bytes()
    lines = [len((two / "parts" / f"process-0000{r}.jsonl").read_text().splitlines()) for r in (0, 1)]
    assert sum(lines) == N_STUDIES and min(lines) > 0
    assert proc.stdout.count("reports ->") == 1  # only the main process reports
    assert "2 processes took part" in proc.stdout and "1 process took part" in output


@pytest.mark.slow
def test_kill_and_resume_gives_the_uninterrupted_file(standins, study_json, helpers, cli, tmp_path):
    """SIGKILL a run mid-way, rerun the same command: the result is byte-identical to an uninterrupted run, and
    the studies finished before the kill are not generated again."""
    model = standins("generate")["generate_ved"]
    common = ["--model", f"{helpers}:SlowVed", "--model-arg", f"model={json.dumps(model)}", "--batch-size", "2"]
    code, output = cli(*_args(study_json, tmp_path / "whole", *common))
    assert code == 0, output

    out = tmp_path / "killed"
    part = out / "parts" / "process-00000.jsonl"
    proc = subprocess.Popen([sys.executable, "-m", "rexrank", *_args(study_json, out, *common)],
                            env=_env() | {"SLOW_VED_DELAY": "0.4"}, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None:
        if part.exists() and len(part.read_text().splitlines()) >= 4:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.read()[-2000:]
    done = len(part.read_text().splitlines())
    assert 4 <= done < N_STUDIES and not (out / "predictions.json").exists()

    code, output = cli(*_args(study_json, out, *common))
    assert code == 0, output
    assert f"{done} from an earlier run, {N_STUDIES - done} generated now" in output
    assert (out / "predictions.json").read_bytes() == (tmp_path / "whole" / "predictions.json").read_bytes()
    assert len(part.read_text().splitlines()) == N_STUDIES  # nothing generated twice


def test_failing_study_is_recorded_not_fatal(records, helpers, cli, study_json, tmp_path):
    """A model raising on one study of a batch fails only that study (the batch is rerun study by study); it is
    reported, left out of the predictions, exit code 3; --retry-errors retries it on resume and --allow-errors
    exits 0. (A missing image is no such failure: it stops the run before the model loads, tested below.)"""
    adapter = load_adapter(f"{helpers}:Echo", model_args={"fail_on": "s2"})
    result = generate(records, adapter, tmp_path / "run", GenerateOptions(batch_size=4, progress=False))
    assert set(result.errors) == {"s2"}
    assert "RuntimeError: cannot read s2" in result.errors["s2"]
    reports = json.loads(result.reports_path.read_text())
    assert list(reports) == [f"s{i}" for i in range(N_STUDIES) if i != 2]
    assert reports["s3"] == "s3 has 1 image(s)."  # findings track: the findings section of the answer
    assert json.loads((tmp_path / "run" / "errors.json").read_text()).keys() == {"s2"}

    args = _args(study_json, tmp_path / "cli", "--model", f"{helpers}:Echo", "--model-arg", 'fail_on="s2"')
    code, output = cli(*args)
    assert code == 3 and "1 studies failed" in output and "s2: RuntimeError: cannot read s2" in output
    code, output = cli(*args, "--allow-errors")
    assert code == 0 and f"{N_STUDIES} from an earlier run, 0 generated now" in output  # failures are final...
    code, output = cli(*args, "--retry-errors")  # ...unless retried
    assert code == 3 and f"{N_STUDIES - 1} from an earlier run, 1 generated now" in output


def test_entry_point_function_and_key_image(records, helpers, tmp_path):
    """A function entry point declaring multi_image = False gets the key image only, and its --model-arg options."""
    adapter = load_adapter(f"{helpers}:one_line", model_args={"suffix": "!"})
    result = generate(records, adapter, tmp_path, GenerateOptions(progress=False))
    assert json.loads(result.reports_path.read_text())["s1"] == "Study s1!"
    with pytest.raises(ConfigError, match="--images key"):
        generate(records, adapter, tmp_path / "x", GenerateOptions(images="all"))


def test_inference_script_contract(records, tmp_path):
    """An upstream-style inference.py runs per batch as a subprocess with <input_json> <output_json> <img_root_dir>
    (relative image paths resolve under the root); its model_prediction fields are read back, and a study it
    leaves without a prediction is an error, not a blank report."""
    script = tmp_path / "sub" / "inference.py"
    script.parent.mkdir()
    script.write_text(INFERENCE_SCRIPT)
    adapter = load_adapter(str(script))
    result = generate(records, adapter, tmp_path / "out",
                      GenerateOptions(batch_size=6, track="findings_impression", progress=False))
    reports = json.loads(result.reports_path.read_text())
    assert reports["s2"] == "Findings: 3 views of s2. Impression: Normal."
    assert set(result.errors) == {"s5"} and "no entry" not in result.errors["s5"]
    assert "model_prediction" in result.errors["s5"]


@pytest.mark.parametrize("extra, message", [
    (["--model", "MODEL_VED", "--images", "all"], "--images key"),
    (["--model", "MODEL_VED", "--prompt", "Describe."], "takes no text prompt"),
    (["--model", "MODEL_VED", "--context"], "--context does not apply"),
    (["--model", "MODEL_VED", "--dtype", "float8"], "Unknown --dtype"),
    (["--model", "MODEL_ITT", "--temperature", "0.7"], "only apply with --do-sample"),
    (["--model", "MODEL_ITT", "--prompt", "Describe {indication}"], "Unknown placeholder"),
    (["--model", "pkg_that_does_not_exist.mod:fn"], "Cannot import"),
    (["--model", "missing/inference.py"], "does not exist"),
    (["--model", "/no/such/model/dir"], "cannot load the model"),
    (["--model", "HELPERS:Echo", "--max-new-tokens", "5"], "does not apply to an entrypoint"),
    (["--model", "MODEL_VED", "--dataset", "iu_xray"], "exactly one of --dataset"),
])
def test_bad_options_give_clear_errors(standins, study_json, helpers, cli, tmp_path, extra, message):
    """Each user mistake is one line naming the option (exit 2), raised before any generation starts."""
    paths = standins("generate")
    swap = {"MODEL_VED": paths["generate_ved"], "MODEL_ITT": paths["generate_itt"], "HELPERS": str(helpers)}
    extra = [next((v + x[len(k):] for k, v in swap.items() if x.startswith(k)), x) for x in extra]
    code, output = cli(*_args(study_json, tmp_path / "o", *extra))
    assert code == 2, output
    assert message in output and "Traceback" not in output
    assert not (tmp_path / "o" / "parts").exists()


def test_dataset_to_score_chain(helpers, cli, tmp_path):
    """`rexrank generate --dataset ... && rexrank score --predictions OUT/predictions.json --dataset ...` works end to
    end on a synthetic IU-Xray image tree (official split file, tiny images): the documented chain."""
    from rexrank.data.synthetic import write_iu_xray_images

    data_dir = write_iu_xray_images(tmp_path / "iu", splits=("test",))
    out = tmp_path / "gen"
    code, output = cli("generate", "--dataset", "iu_xray", "--data-dir", str(data_dir), "--split", "test",
                       "--limit", "5", "--model", f"{helpers}:Echo", "--out", str(out), "--no-progress")
    assert code == 0, output
    predictions = json.loads((out / "predictions.json").read_text())
    assert len(predictions) == 5
    for entry in predictions.values():  # relative to the folder of the run's images (no host path in the file)
        assert not os.path.isabs(entry["key_image_path"]) and str(tmp_path) not in json.dumps(entry)
        assert any((folder / entry["key_image_path"]).is_file() for folder in (data_dir, *data_dir.iterdir()))
    code, output = cli("score", "--predictions", str(out / "predictions.json"), "--dataset", "iu_xray",
                       "--data-dir", str(data_dir), "--split", "test", "--metrics", "bleu2", "--allow-missing",
                       "--no-cache", "--resamples", "10", "--out", str(tmp_path / "scores"), "--quiet")
    assert code == 0, output
    results = json.loads((tmp_path / "scores" / "results.json").read_text())
    assert results["n_studies"] == 5


# ---- images: checked before the model loads, part of a run's settings -----------------------------------------------

MARKED = '''
import os

open(os.environ["REXRANK_TEST_MARKER"], "a").write("imported\\n")

class Marked:
    """Writes to the marker when its module is imported and when it is constructed."""
    def __init__(self):
        open(os.environ["REXRANK_TEST_MARKER"], "a").write("constructed\\n")
    def __call__(self, studies):
        return ["Findings: ok %s." % s["study_id"] for s in studies]

class Vanishing:
    """Deletes the images named in $REXRANK_TEST_VANISH on its first call (an image lost mid-run)."""
    def __init__(self):
        self.calls = 0
    def __call__(self, studies):
        self.calls += 1
        if self.calls == 1:
            for path in filter(None, os.environ["REXRANK_TEST_VANISH"].split(os.pathsep)):
                os.remove(path)
        return ["Findings: ok %s." % s["study_id"] for s in studies]
'''


@pytest.fixture
def marked(tmp_path, monkeypatch) -> tuple[Path, Path]:
    """(module file with Marked/Vanishing, marker file that exists once the module is imported)."""
    module = tmp_path / "marked_model.py"
    module.write_text(MARKED)
    marker = tmp_path / "marker.txt"
    monkeypatch.setenv("REXRANK_TEST_MARKER", str(marker))
    return module, marker


def _copy_images(study_json: Path, target: Path) -> Path:
    import shutil

    return Path(shutil.copytree(study_json.parent / "img", target))


def test_missing_images_stop_the_run_before_the_model_is_constructed(study_json, marked, cli, tmp_path):
    """A wrong --image-root (or --data-dir) is one error, exit 2: how many images are missing of how many, the first
    paths, the option to fix; the model's module is never imported, let alone constructed, and nothing is written."""
    module, marker = marked
    images = _copy_images(study_json, tmp_path / "img")
    (images / "s4" / "view0.png").unlink()
    (images / "s8" / "view1.png").unlink()
    out = tmp_path / "out"
    code, output = cli("generate", "--input-json", str(study_json), "--image-root", str(images), "--out", str(out),
                       "--model", f"{module}:Marked", "--no-progress")
    assert code == 2, output
    assert "2 of the 19 images of 10 studies are missing" in output  # 1, 2, 3, 1, 2, ... images per study
    assert str(images / "s4" / "view0.png") in output and str(images / "s8" / "view1.png") in output
    assert "--image-root" in output and "Traceback" not in output
    assert not marker.exists() and not out.exists()

    code, output = cli("generate", "--input-json", str(study_json), "--image-root", str(tmp_path / "nowhere"),
                       "--out", str(out), "--model", f"{module}:Marked", "--no-progress")
    assert code == 2 and "19 of the 19 images of 10 studies are missing" in output
    assert "... and 14 more" in output  # five paths shown, the rest counted
    assert not marker.exists() and not out.exists()


def test_missing_dataset_images_name_the_data_dir_and_its_layout(marked, cli, tmp_path):
    """--dataset with a --data-dir that holds no images: the error names --data-dir, the folder it looked in, the
    layout the catalog declares for the dataset and where the docs say to get the images."""
    from rexrank.data.catalog import get_dataset_spec

    module, marker = marked
    code, output = cli("generate", "--dataset", "iu_xray", "--data-dir", str(tmp_path / "empty"), "--split", "test",
                       "--limit", "4", "--model", f"{module}:Marked", "--out", str(tmp_path / "out"), "--no-progress")
    assert code == 2, output
    assert "8 of the 8 images of 4 studies are missing" in output
    assert f"--data-dir pointing at the folder that holds the IU-Xray images (now: {tmp_path / 'empty'})" in output
    assert get_dataset_spec("iu_xray").layout.splitlines()[0] in output
    assert "docs/generate.md" in output and not marker.exists()


def test_python_api_checks_images_before_loading_and_reads_the_first_as_an_image(records, tmp_path):
    """generate() itself refuses missing images before adapter.load, and a first image PIL cannot read (a folder
    of the wrong files) fails the same way."""
    from rexrank.errors import InputError
    from rexrank.generate.adapters.base import Adapter

    class Recording(Adapter):
        loaded = False

        def config(self):
            return {"adapter": "recording"}

        def load(self, device):
            Recording.loaded = True

    broken = [dict(r) for r in records]
    broken[7] = dict(broken[7], image_paths=["/nonexistent/x.png"], key_image="/nonexistent/x.png")
    missing = r"1 of the 18 images of 10 studies are missing, e\.g\.\n  /nonexistent/x\.png"
    with pytest.raises(InputError, match=missing):
        generate(broken, Recording(), tmp_path / "a", GenerateOptions(progress=False))
    not_png = tmp_path / "report.png"
    not_png.write_text("Findings: this is text, not an image.")
    broken[0] = dict(broken[0], image_paths=[str(not_png)], key_image=str(not_png))
    broken[7] = records[7]
    with pytest.raises(InputError, match="report.png is not an image PIL can read"):
        generate(broken, Recording(), tmp_path / "b", GenerateOptions(progress=False))
    assert not Recording.loaded and not (tmp_path / "a").exists()


def test_an_image_lost_mid_run_fails_only_its_study(study_json, marked, cli, tmp_path, monkeypatch):
    """The up-front check does not replace the per-study one: an image deleted while the run goes on fails its
    study only (recorded, exit 3); a rerun while it is still missing stops at the up-front check, and once the image
    is back the next run retries it without --retry-errors (its images changed since the failure)."""
    module, _ = marked
    images = _copy_images(study_json, tmp_path / "img")
    lost = images / "s9" / "view0.png"  # batch 3 of 3 (size 4): prepared after the first call returns
    monkeypatch.setenv("REXRANK_TEST_VANISH", str(lost))
    saved = lost.read_bytes()
    args = ["generate", "--input-json", str(study_json), "--image-root", str(images), "--out", str(tmp_path / "out"),
            "--model", f"{module}:Vanishing", "--batch-size", "4", "--no-progress"]
    code, output = cli(*args)
    assert code == 3 and "1 studies failed" in output and "s9: FileNotFoundError: image(s) not found: s9/view0.png" \
        in output  # relative to the image root: errors.json names no host path
    monkeypatch.setenv("REXRANK_TEST_VANISH", "")  # nothing to delete on the reruns
    code, output = cli(*args)  # still missing: the up-front check stops the rerun, the recorded failure stands
    assert code == 2 and "1 of the" in output and "images" in output and str(lost) in output
    lost.write_bytes(saved)
    code, output = cli(*args)
    assert code == 0 and f"{N_STUDIES - 1} from an earlier run, 1 generated now" in output


def test_a_rerun_with_other_images_is_refused_but_a_limit_trial_resumes(study_json, helpers, cli, tmp_path):
    """The images a study was generated from are part of the run's settings: rerunning into the same --out with
    another --image-root (identical copies, other files) is refused naming this run's files and the fix, before any
    model work; the same images resume (a --limit trial included) and --overwrite starts afresh."""
    first, other = _copy_images(study_json, tmp_path / "first"), _copy_images(study_json, tmp_path / "other")
    out = tmp_path / "out"

    def run(root: Path, *extra: str):
        return cli("generate", "--input-json", str(study_json), "--image-root", str(root), "--out", str(out),
                   "--model", f"{helpers}:Echo", "--no-progress", *extra)

    code, output = run(first, "--limit", "3")
    assert code == 0 and "0 from an earlier run, 3 generated now" in output
    code, output = run(other)
    assert code == 2, output
    assert f"{out} holds reports generated from other image files than this run's (3 of 3 finished studies" in output
    assert f"s0: now {other / 's0' / 'view0.png'} (" in output and "other files or sizes then" in output
    assert "--data-dir (or --image-root)" in output and "--overwrite" in output
    code, output = run(first)
    assert code == 0 and f"3 from an earlier run, {N_STUDIES - 3} generated now" in output
    whole = (out / "predictions.json").read_bytes()
    code, output = run(other, "--overwrite")
    assert code == 0 and f"0 from an earlier run, {N_STUDIES} generated now" in output
    code, output = run(other)
    assert code == 0 and f"{N_STUDIES} from an earlier run, 0 generated now" in output
    assert (out / "predictions.json").read_bytes() == whole  # image paths relative to each run's image root


def test_a_rerun_with_another_data_dir_is_refused(helpers, cli, tmp_path):
    """The issue's case through --dataset: a second complete copy of the IU-Xray images in another --data-dir does
    not silently resume the first copy's run."""
    from rexrank.data.synthetic import write_iu_xray_images

    out = tmp_path / "gen"
    for name, expected in (("a", 0), ("b", 2)):
        data_dir = write_iu_xray_images(tmp_path / name, splits=("test",))
        code, output = cli("generate", "--dataset", "iu_xray", "--data-dir", str(data_dir), "--split", "test",
                           "--limit", "2", "--model", f"{helpers}:Echo", "--out", str(out), "--no-progress")
        assert code == expected, output
    assert "holds reports generated from other image files" in output and str(tmp_path / "b") in output


@pytest.mark.parametrize("where", ["parts", "run"])
def test_resume_over_damaged_bytes_is_one_error_line(study_json, helpers, cli, tmp_path, where):
    """Bytes \\x00\\xff in a part file (or run.json) of the folder a rerun resumes: one error line naming the file and
    the fix, exit 2, no traceback, and the folder's files untouched."""
    args = _args(study_json, tmp_path / "out", "--model", f"{helpers}:Echo", "--limit", "3")
    code, output = cli(*args)
    assert code == 0, output
    damaged = tmp_path / "out" / ("parts/process-00000.jsonl" if where == "parts" else "run.json")
    with open(damaged, "ab") as handle:
        handle.write(b"\x00\xff\n")
    before = damaged.read_bytes()
    code, output = cli(*args)
    assert code == 2, output
    assert "Traceback" not in output and len(output.strip().splitlines()) == 1
    assert str(damaged) in output and "--overwrite" in output
    assert damaged.read_bytes() == before


@pytest.mark.slow  # 4.5 s of CPU of its own: over the fast tier's 2 s or near it (tests/README.md, "Tiers")
def test_accelerate_asked_for_two_but_started_one_is_said(study_json, helpers, tmp_path):
    """The issue's case: `accelerate launch --num_processes 2 -m rexrank generate ... --device cpu` on a machine
    without GPUs runs one process. generate says 1 process took part and warns that the launcher asked for more,
    naming the launcher that works on CPU."""
    proc = _run_group([sys.executable, "-m", "accelerate.commands.launch", "--num_processes", "2", "--num_machines",
                       "1", "--mixed_precision", "no", "--dynamo_backend", "no", "-m", "rexrank",
                       *_args(study_json, tmp_path / "out", "--model", f"{helpers}:Echo", "--device", "cpu")],
                      timeout=240)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "1 process took part" in proc.stdout
    assert "warning: accelerate launch was asked for several processes" in proc.stderr
    assert "torchrun --standalone --nproc_per_node N" in proc.stderr


def test_a_report_with_a_lone_surrogate_fails_only_its_study(records, tmp_path):
    """A string no UTF-8 file can hold (a lone surrogate, e.g. from a model's bad decode, or sent by a sandboxed
    model as a JSON escape) fails its study with a clear error instead of crashing the part-file writer."""
    from rexrank.generate.adapters.base import Adapter

    class Surrogate(Adapter):
        def config(self):
            return {"adapter": "surrogate"}

        def generate(self, prepared):
            return ["bad \ud800" if s.study_id == "s1" else "Findings: ok." for s in prepared]

    result = generate(records, Surrogate(), tmp_path, GenerateOptions(progress=False))
    assert set(result.errors) == {"s1"} and "not Unicode text (a lone surrogate)" in result.errors["s1"]
    assert len(json.loads(result.reports_path.read_text())) == N_STUDIES - 1


def test_the_run_folder_is_owner_only_and_names_no_host_path(records, helpers, study_json, cli, tmp_path):
    """Issue 35 point 3: a run's files may hold licensed text (context, reports, an open set's sections), so the run
    folder is owner-only like every other place rexrank keeps it (folders 0700, files 0600, an earlier run's files
    included), and they name no host path: image paths relative to the image root (predictions.json as upstream's
    JSON, error messages), images in the part files by a digest of their path. Before: 0755/0644 and absolute
    paths."""
    import stat

    out = tmp_path / "runs" / "x"
    out.mkdir(parents=True)
    (out / "notes.txt").write_text("an earlier run's file")
    for path in (out, out / "notes.txt"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    image_root = study_json.parent / "img"
    result = generate(records, load_adapter(f"{helpers}:NamesItsImage"), out,
                      GenerateOptions(batch_size=4, progress=False, image_root=image_root))
    assert list(result.errors) == ["s2"]
    predictions = json.loads(result.predictions_path.read_text())
    assert predictions["s1"]["image_path"] == ["s1/view0.png", "s1/view1.png"]
    assert predictions["s1"]["key_image_path"] == "s1/view1.png"
    errors = json.loads((out / "errors.json").read_text())
    assert errors == {"s2": "OSError: cannot identify image file 's2/view0.png'"}
    files = [p for p in out.rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {"predictions.json", "reports.json", "errors.json", "run.json", ".lock",
                                       "process-00000.jsonl", "notes.txt"}
    for path in files:
        assert str(image_root.parent) not in path.read_text(errors="replace"), path
    for path in [out, *out.rglob("*")]:
        assert stat.S_IMODE(path.stat().st_mode) == (0o700 if path.is_dir() else 0o600), path

    # Through the CLI: no host path in predictions.json either.
    code, output = cli("generate", "--input-json", str(study_json), "--image-root", str(image_root),
                       "--out", str(tmp_path / "cli"), "--model", f"{helpers}:Echo", "--no-progress")
    assert code == 0, output
    text = (tmp_path / "cli" / "predictions.json").read_text()
    assert str(image_root.parent) not in text and json.loads(text)["s1"]["image_path"] == ["s1/view0.png",
                                                                                           "s1/view1.png"]

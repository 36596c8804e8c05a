"""`rexrank generate --sandbox`: code under test runs under bubblewrap (rexrank.generate.adapters.sandbox; the threat
model is docs/threat_model.md).

A hostile entry point tries every route to the answers and to the host (walking up from its images, the metadata
file, the caches, the run folder, the parent's environment, the network) and reports what it found: under the
sandbox every route finds nothing, and the same model without the sandbox finds them (so the checks can fail). An
honest model gives byte-identical files with and without the sandbox, on one and two processes.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from rexrank.errors import ConfigError

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed "
                                "(make setup-bwrap)")

# The hostile model: every route it tries is a key of its report, with what it found there (empty: nothing).
# HOST holds the host's paths and the listener's port, filled in by the test.
HOSTILE = '''
import json, os, socket, sys

HOST = json.loads(%r)


def _listing(path):
    try:
        return sorted(os.listdir(path))
    except OSError:
        return []


def _read(path):
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _walk_up(image):
    """Every name in every folder above the image, up to /: looking for metadata/ or any JSON."""
    found, folder = [], os.path.dirname(image)
    while True:
        for name in _listing(folder):
            path = os.path.join(folder, name)
            if name == "metadata" or name.endswith(".json"):
                found.append(path)
            if name == "metadata":
                found += [os.path.join(path, n) for n in _listing(path)]
        parent = os.path.dirname(folder)
        if parent == folder:
            return found
        folder = parent


def _connect(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2):
            return ["connected"]
    except OSError:
        return []


_SEARCHED = None


def _every_file_under(root, limit=20000):
    """Any file it can see (outside the system and Python folders, which hold no references) whose text holds the
    marker the test put in every reference (joined here, so this file itself does not hold it). Once per process."""
    global _SEARCHED
    if _SEARCHED is not None:
        return _SEARCHED
    marker = "".join(HOST["marker"])
    skip = ("/proc", "/sys", "/dev", "/usr", sys.prefix, sys.base_prefix)
    hits, seen = [], 0
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if not os.path.join(folder, d).startswith(skip)]
        for name in files:
            seen += 1
            path = os.path.join(folder, name)
            try:
                if seen > limit or os.path.getsize(path) > 5_000_000:
                    continue
            except OSError:
                continue
            if marker in _read(path):
                hits.append(path)
    _SEARCHED = hits
    return hits


class Hostile:
    def __call__(self, studies):
        reports = []
        for study in studies:
            found = {
                "walk_up": sorted({p for image in study["image_paths"] for p in _walk_up(image)}),
                "metadata": [HOST["metadata"]] if _read(HOST["metadata"]) else [],
                "relative_metadata": [p for image in study["image_paths"]
                                      for p in [os.path.join(os.path.dirname(image), *[".."] * 8, "metadata",
                                                             os.path.basename(HOST["metadata"]))] if _read(p)],
                "home_cache": _listing(HOST["home_cache"]),
                "score_cache": _listing(HOST["score_cache"]),
                "datasets_cache": _listing(HOST["datasets_cache"]),
                "run_folder": _listing(HOST["run_folder"]),
                "parent_environ": ["readable"] if _read("/proc/%%d/environ" %% HOST["parent"]) else [],
                "pid1_environ": [_read("/proc/1/environ")[:200]] if _read("/proc/1/environ") else [],
                "own_environ": [HOST["canary"]] if HOST["canary"] in json.dumps(dict(os.environ)) else [],
                "socket": _connect(HOST["port"]),
                "reference_text": _every_file_under("/") if HOST["search"] else [],
                "env_keys": sorted(os.environ),
            }
            reports.append("Findings: " + json.dumps(found, sort_keys=True))
        return reports
'''

# An honest stand-in: its report depends only on what it is allowed to see (pixels, view count, prompt, context).
HONEST = '''
from PIL import Image
import numpy as np


class Honest:
    def __call__(self, studies):
        reports = []
        for study in studies:
            means = ["%.3f" % np.asarray(Image.open(p).convert("L"), dtype=np.float64).mean()
                     for p in study["image_paths"]]
            reports.append("Findings: %s, %d views, means %s, key %s. Impression: context=%s prompt=%d." % (
                study["study_id"], len(study["image_paths"]), ",".join(means),
                study["key_image"] in study["all_image_paths"], study["context"], len(study["prompt"])))
        return reports
'''

N_STUDIES = 8
MARKER = ("refmark", "-91c3-")  # in every reference of the private set; kept in two pieces everywhere else


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR",
                                                             "MASTER_PORT", "LOCAL_WORLD_SIZE")}
    return env | {"OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}


@pytest.fixture
def private_set(tmp_path):
    """A synthetic ReXGradient tree (the private set's layout: metadata/ beside deid_png/) and its reference texts."""
    from rexrank.data.synthetic import write_rexgradient_tree

    root = write_rexgradient_tree(tmp_path / "rg", n_studies=6)
    metadata = root / "metadata" / "test_metadata_view_position.json"
    entries = json.loads(metadata.read_text())
    for i, entry in enumerate(entries.values()):  # a marker in every reference, for the model's file search
        if entry["Findings"]:
            entry["Findings"] += f" {MARKER[0]}{MARKER[1]}{i}"
    metadata.write_text(json.dumps(entries, indent=1))
    references = [e["Findings"] for e in entries.values() if e["Findings"]]
    return root, metadata, references


@pytest.fixture
def listener():
    """A TCP listener on 127.0.0.1 the model tries to reach; the test checks nothing connected."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.setblocking(False)
    yield server
    server.close()


def _connections(server: socket.socket) -> int:
    count = 0
    while True:
        try:
            conn, _ = server.accept()
        except BlockingIOError:
            return count
        conn.close()
        count += 1


def _model_file(folder: Path, text: str, name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.py"
    path.write_text(text)
    return path


def _found(out: Path) -> dict[str, dict]:
    """study_id -> the routes the hostile model reported (from the raw answers in the part files)."""
    records = [json.loads(line) for part in sorted((out / "parts").glob("*.jsonl"))
               for line in part.read_text().splitlines()]
    assert records and all(r["error"] is None for r in records), records
    return {r["study_id"]: json.loads(r["raw"][len("Findings: "):]) for r in records}


def test_a_hostile_model_finds_nothing_and_is_still_scored(private_set, listener, cli, tmp_path, monkeypatch):
    """The issue's attack and every other route, on the private set's real layout: under the (default) sandbox
    each finds nothing and the reports are scored; without it the same model finds the answers."""
    from datasets import config as datasets_config

    root, metadata, references = private_set
    monkeypatch.setenv("REXRANK_CACHE", str(tmp_path / "rexrank-cache"))
    score_cache = tmp_path / "rexrank-cache" / "scores"
    score_cache.mkdir(parents=True)
    (score_cache / "pairs.sqlite").write_text("cached scores")
    canary = "canary-7d1f0c"
    monkeypatch.setenv("REXRANK_TEST_SECRET", canary)
    out = tmp_path / "runs" / "hostile"
    host = {"metadata": str(metadata), "home_cache": str(Path.home() / ".cache"), "score_cache": str(score_cache),
            "datasets_cache": str(datasets_config.HF_DATASETS_CACHE), "run_folder": str(out),
            "parent": os.getpid(), "canary": canary, "port": listener.getsockname()[1], "marker": MARKER,
            "search": True}
    model = _model_file(tmp_path / "model", HOSTILE % json.dumps(host), "hostile")
    common = ["generate", "--dataset", "rexgradient", "--data-dir", str(root), "--batch-size", "2", "--no-progress"]

    code, output = cli(*common, "--model", f"{model}:Hostile", "--out", str(out))
    assert code == 0, output
    found = _found(out)
    assert len(found) == 4  # the findings track's studies
    env_keys = {study_id: routes.pop("env_keys") for study_id, routes in found.items()}
    for study_id, routes in found.items():
        assert set(routes) == {"walk_up", "metadata", "relative_metadata", "home_cache", "score_cache",
                               "datasets_cache", "run_folder", "parent_environ", "pid1_environ", "own_environ",
                               "socket", "reference_text"}
        assert all(value == [] for value in routes.values()), (study_id, routes)
    assert _connections(listener) == 0
    from rexrank.generate.adapters.sandbox import FIXED_ENV, PASSED_ENV

    for keys in env_keys.values():  # only the documented ones (PWD: bwrap's --chdir; LC_CTYPE: Python's locale)
        assert set(keys) <= {*FIXED_ENV, *PASSED_ENV, "PATH", "PWD", "LC_CTYPE"}
    assert not any(ref in (out / "predictions.json").read_text() for ref in references)

    scores = tmp_path / "scores"
    code, output = cli("score", "--predictions", str(out / "predictions.json"), "--dataset", "rexgradient",
                       "--data-dir", str(root), "--metrics", "bleu2", "--no-cache", "--resamples", "10",
                       "--out", str(scores), "--quiet")
    assert code == 0, output
    assert json.loads((scores / "results.json").read_text())["n_studies"] == 4

    # The same model in this process (the host vouching for it) reaches the answers: the checks above can fail.
    # (Not searching the host's whole disk: the routes below already reach the answers.)
    model = _model_file(tmp_path / "model", HOSTILE % json.dumps(host | {"search": False}), "hostile_no_search")
    code, output = cli(*common, "--model", f"{model}:Hostile", "--out", str(tmp_path / "runs" / "open"),
                       "--no-sandbox", "--i-trust-this-model")
    assert code == 0, output
    leaked = next(iter(_found(tmp_path / "runs" / "open").values()))
    for route in ("walk_up", "metadata", "relative_metadata", "score_cache", "run_folder", "parent_environ",
                  "own_environ", "socket"):
        assert leaked[route], route
    assert _connections(listener) > 0


@pytest.fixture
def open_set(tmp_path):
    """A ReXrank-style JSON (an open set: not sandboxed unless asked) with 1-3 random images per study."""
    root = tmp_path / "studies"
    entries = {}
    for i in range(N_STUDIES):
        paths = []
        for j in range(1 + i % 3):
            (root / "img" / f"s{i}").mkdir(parents=True, exist_ok=True)
            pixels = np.random.RandomState(10 * i + j).randint(0, 255, (24 + 2 * j, 20, 3), dtype=np.uint8)
            Image.fromarray(pixels).save(root / "img" / f"s{i}" / f"{j}.png")
            paths.append(f"s{i}/{j}.png")
        entries[f"s{i}"] = {"key_image_path": paths[0], "image_path": paths, "section_findings": f"Finding {i}.",
                            "section_impression": "Normal.", "context": "Cough." if i % 2 else None}
    (root / "studies.json").write_text(json.dumps(entries))
    return root / "studies.json"


def _open_args(study_json: Path, out: Path, model: str, *extra: str) -> list[str]:
    return ["generate", "--input-json", str(study_json), "--image-root", str(study_json.parent / "img"),
            "--out", str(out), "--model", model, "--batch-size", "3", "--track", "findings_impression", "--context",
            "--no-progress", *extra]


@pytest.mark.slow
def test_an_honest_model_gives_the_same_files_with_and_without_the_sandbox(open_set, cli, tmp_path):
    """Byte-identical predictions.json and reports.json: unsandboxed on one process, sandboxed on one, sandboxed on
    two (torchrun, gloo; each process runs its own sandbox)."""
    model = f"{_model_file(tmp_path / 'model', HONEST, 'honest')}:Honest"
    code, output = cli(*_open_args(open_set, tmp_path / "plain", model))
    assert code == 0, output
    code, output = cli(*_open_args(open_set, tmp_path / "one", model, "--sandbox"))
    assert code == 0, output
    proc = subprocess.Popen([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                             "-m", "rexrank", *_open_args(open_set, tmp_path / "two", model, "--sandbox")],
                            env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        stdout, stderr = proc.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        raise
    assert proc.returncode == 0, stderr[-3000:]
    assert "2 processes took part" in stdout
    plain = tmp_path / "plain"
    assert "means" in json.loads((plain / "reports.json").read_text())["s1"]
    for run in ("one", "two"):
        for name in ("predictions.json", "reports.json", "errors.json"):
            assert (tmp_path / run / name).read_bytes() == (plain / name).read_bytes(), (run, name)
    parts = [len(p.read_text().splitlines()) for p in sorted((tmp_path / "two" / "parts").glob("*.jsonl"))]
    assert len(parts) == 2 and min(parts) > 0 and sum(parts) == N_STUDIES


INFERENCE_SCRIPT = '''
import json, os, sys
input_json, output_json, root = sys.argv[1:4]
studies = json.load(open(input_json))
for study_id, entry in studies.items():
    sizes = [os.path.getsize(os.path.join(root, p)) for p in entry["image_path"]]
    entry["model_prediction"] = "Findings: %d views, %d bytes. Impression: %s" % (len(sizes), sum(sizes),
                                                                                 entry.get("context"))
print("script ran on", len(studies), "studies")
json.dump(studies, open(output_json, "w"))
'''


@pytest.mark.slow
def test_inference_script_and_hf_model_run_the_same_in_the_sandbox(open_set, standins, cli, tmp_path):
    """The other adapters take the same path: an upstream inference.py (run by the child inside the sandbox, its
    log copied to stderr) and a local Hugging Face model give the same files with and without the sandbox."""
    script = _model_file(tmp_path / "script", INFERENCE_SCRIPT, "inference")
    ved = standins("generate")["generate_ved"]
    for name, model, extra in (("script", str(script), ["--context"]),
                               ("ved", ved, ["--max-new-tokens", "6", "--no-context"])):
        runs = {}
        for mode in ("--no-sandbox", "--sandbox"):
            out = tmp_path / f"{name}{mode}"
            args = [a for a in _open_args(open_set, out, model) if a != "--context"] + extra + [mode]
            code, output = cli(*args)
            assert code == 0, output
            runs[mode] = (out / "predictions.json").read_bytes()
            if name == "script" and mode == "--sandbox":  # its log, from the scratch folder to stderr
                assert "script ran on 3 studies" in output
        assert runs["--sandbox"] == runs["--no-sandbox"], name


def test_missing_bwrap_is_one_clear_line(open_set, cli, tmp_path, monkeypatch):
    """No `bwrap` on PATH: one error line naming the package to install, exit 2, nothing run or written."""
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    model = f"{_model_file(tmp_path / 'model', HONEST, 'honest')}:Honest"
    code, output = cli(*_open_args(open_set, tmp_path / "out", model, "--sandbox"))
    assert code == 2, output
    assert len(output.strip().splitlines()) == 1 and "Traceback" not in output
    assert "apt-get install bubblewrap" in output and "no `bwrap` on PATH" in output
    assert not (tmp_path / "out" / "parts").exists()


def test_unsandboxed_private_runs_need_the_hosts_word(private_set, cli, tmp_path):
    """--no-sandbox on a private set is refused unless the host adds --i-trust-this-model (which alone is refused);
    the Python API refuses an in-process adapter for private studies unless trust_model=True."""
    from rexrank import data
    from rexrank.generate import GenerateOptions, generate, load_adapter

    root = private_set[0]
    model = f"{_model_file(tmp_path / 'model', HONEST, 'honest')}:Honest"
    base = ["generate", "--dataset", "rexgradient", "--data-dir", str(root), "--model", model, "--no-progress",
            "--out", str(tmp_path / "out")]
    for extra, message in ((["--no-sandbox"], "this is a private test set: --no-sandbox"),
                           (["--i-trust-this-model"], "--i-trust-this-model only goes with --no-sandbox")):
        code, output = cli(*base, *extra)
        assert code == 2 and message in output and len(output.strip().splitlines()) <= 2, output
    assert not (tmp_path / "out").exists()
    records = list(data.load("rexgradient", data_dir=root, track="findings"))
    with pytest.raises(ConfigError, match="private test set"):
        generate(records, load_adapter(model), tmp_path / "api", GenerateOptions(progress=False))
    result = generate(records, load_adapter(model), tmp_path / "api",
                      GenerateOptions(progress=False, trust_model=True))
    assert not result.errors


def test_the_sandbox_never_mounts_a_folder_holding_the_run_or_the_references(private_set, cli, tmp_path):
    """A model file beside the run folder (or the data) would mount that folder: refused, naming both paths."""
    root = private_set[0]
    model = _model_file(tmp_path, HONEST, "honest")  # tmp_path also holds rg/ and out/
    code, output = cli("generate", "--dataset", "rexgradient", "--data-dir", str(root), "--model", f"{model}:Honest",
                       "--no-progress", "--out", str(tmp_path / "out"))
    assert code == 2, output
    assert f"the sandbox would mount {tmp_path}" in output and "a folder of their own" in output
    assert not (tmp_path / "out" / "parts").exists()


CRASHING = '''
import os


class Crashing:
    """Kills its own process on study s2 (a model that segfaults or calls os._exit)."""
    def __call__(self, studies):
        if any(s["study_id"] == "s2" for s in studies):
            os._exit(7)
        return ["Findings: ok %s." % s["study_id"] for s in studies]
'''


def test_a_model_that_kills_its_process_fails_only_its_studies(open_set, cli, tmp_path):
    """The child dies on one study: that study is recorded as failed (exit 3) and a fresh sandbox carries on with
    the rest."""
    model = f"{_model_file(tmp_path / 'model', CRASHING, 'crashing')}:Crashing"
    code, output = cli(*_open_args(open_set, tmp_path / "out", model, "--sandbox", "--no-context"))
    assert code == 3, output
    errors = json.loads((tmp_path / "out" / "errors.json").read_text())
    assert list(errors) == ["s2"] and "exited (status 7)" in errors["s2"]
    assert len(json.loads((tmp_path / "out" / "reports.json").read_text())) == N_STUDIES - 1


@pytest.mark.slow
def test_a_hub_model_id_is_read_from_its_cache_entry_in_the_sandbox(open_set, standins, tmp_path):
    """A Hub id (not a local folder): the sandbox mounts its one entry of the Hugging Face cache and reads it offline
    through HF_HUB_CACHE; the files equal an unsandboxed run's. A Hub id missing from the cache is one error line."""
    ved = Path(standins("generate")["generate_ved"])
    cache = tmp_path / "hub"
    entry = cache / "models--rexrank-test--tiny-ved"
    shutil.copytree(ved, entry / "snapshots" / "0123456789abcdef")
    (entry / "refs").mkdir()
    (entry / "refs" / "main").write_text("0123456789abcdef")
    env = _env() | {"HF_HUB_CACHE": str(cache)}
    outputs = {}
    for mode in ("--no-sandbox", "--sandbox"):
        args = [a for a in _open_args(open_set, tmp_path / mode, "rexrank-test/tiny-ved") if a != "--context"]
        proc = subprocess.run([sys.executable, "-m", "rexrank", *args, "--max-new-tokens", "6", mode], env=env,
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        outputs[mode] = (tmp_path / mode / "predictions.json").read_bytes()
    assert outputs["--sandbox"] == outputs["--no-sandbox"]
    args = [a for a in _open_args(open_set, tmp_path / "missing", "rexrank-test/not-cached") if a != "--context"]
    proc = subprocess.run([sys.executable, "-m", "rexrank", *args, "--sandbox"], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 2 and "not in the Hugging Face cache" in proc.stderr, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr


@pytest.mark.slow
def test_an_interpreter_reached_through_a_linked_folder_runs_in_the_sandbox(open_set, tmp_path):
    """The mounts are bound at real paths, so the child must be started by the real folder of the same interpreter:
    a checkout whose .venv is a link (or lies under a linked folder) failed with 'bwrap: execvp ... No such file'."""
    linked = tmp_path / "linked-env"
    linked.symlink_to(Path(sys.prefix).resolve(), target_is_directory=True)
    python = linked / "bin" / Path(sys.executable).name
    model = f"{_model_file(tmp_path / 'model', HONEST, 'honest')}:Honest"
    plain = subprocess.run([sys.executable, "-m", "rexrank", *_open_args(open_set, tmp_path / "plain", model)],
                           capture_output=True, text=True, timeout=600)
    assert plain.returncode == 0, plain.stdout + plain.stderr
    boxed = subprocess.run([str(python), "-m", "rexrank", *_open_args(open_set, tmp_path / "boxed", model, "--sandbox")],
                           capture_output=True, text=True, timeout=600)
    assert boxed.returncode == 0, boxed.stdout + boxed.stderr
    for name in ("predictions.json", "reports.json"):
        assert (tmp_path / "boxed" / name).read_bytes() == (tmp_path / "plain" / name).read_bytes(), name


def test_relative_paths_given_to_generate_name_the_same_files_in_the_sandbox(private_set, cli, tmp_path, monkeypatch):
    """Issue 35 point 1: `--model sub/model.py:Fn` (and a relative --data-dir and --out) from the user's working
    folder: the child starts in its scratch folder, so the host resolves every path before the sandbox starts
    (it failed with "Entry point file sub/model.py does not exist")."""
    root = private_set[0]
    work = tmp_path / "work"
    _model_file(work / "sub", HONEST, "model")
    monkeypatch.chdir(work)
    code, output = cli("generate", "--dataset", "rexgradient", "--data-dir", os.path.relpath(root, work),
                       "--model", "sub/model.py:Honest", "--out", "runs/x", "--no-progress")
    assert code == 0, output
    reports = json.loads((work / "runs" / "x" / "reports.json").read_text())
    assert len(reports) == 4 and all("means" in r for r in reports.values()), reports


def test_host_spec_resolves_every_path_the_child_is_given(tmp_path, monkeypatch):
    """The one place that turns the host's paths into the child's: an inference.py, an entry point's file, a local
    model folder and a --script-python, given relative to the working folder (or reached through a link), come out
    absolute and real; a package entry point, a Hub id and a bare interpreter name found on PATH as the host sees
    them."""
    from rexrank.generate.adapters.sandbox import AdapterSpec, host_spec

    real = tmp_path / "real"
    (real / "sub").mkdir(parents=True)
    (real / "sub" / "inference.py").write_text("")
    (real / "sub" / "model.py").write_text("")
    (real / "tiny-model").mkdir()
    (real / "env" / "bin").mkdir(parents=True)
    (real / "env" / "bin" / "python").symlink_to(sys.executable)
    (tmp_path / "linked").symlink_to(real, target_is_directory=True)
    monkeypatch.chdir(tmp_path / "linked")
    assert host_spec(AdapterSpec("sub/inference.py")).model == str(real / "sub" / "inference.py")
    assert host_spec(AdapterSpec("sub/model.py:Fn")).model == f"{real / 'sub' / 'model.py'}:Fn"
    assert host_spec(AdapterSpec("tiny-model")).model == str(real / "tiny-model")
    script = host_spec(AdapterSpec("sub/inference.py", script_python="env/bin/python"))
    assert script.script_python == str(real / "env" / "bin" / "python")  # the name kept, not the link's target
    assert host_spec(AdapterSpec("pkg.module:fn")).model == "pkg.module:fn"
    assert host_spec(AdapterSpec("org/hub-model")).model == "org/hub-model"
    bare = host_spec(AdapterSpec("sub/inference.py", script_python="python3")).script_python
    assert os.path.isabs(bare) and os.path.basename(bare) == "python3" and os.path.exists(bare)


LOUD = '''
import sys


def _shout():
    block = b"A" * 65536
    for _ in range(48):
        sys.stdout.buffer.write(block)
    sys.stdout.flush()


class Loud:
    """Writes 3 MiB without a newline on every call, then answers."""
    def __call__(self, studies):
        _shout()
        return ["Findings: ok %s." % s["study_id"] for s in studies]


class LoudLoader:
    """Writes 3 MiB while its model loads."""
    def __init__(self):
        _shout()

    def __call__(self, studies):
        return ["Findings: ok %s." % s["study_id"] for s in studies]
'''


def test_a_model_printing_past_the_output_cap_is_stopped_with_one_clear_error(open_set, cli, tmp_path, monkeypatch):
    """Issue 35 point 4: the model's output is copied in bounded chunks up to a cap for the whole run (lowered here
    to 1 MiB); past it the child is stopped, its studies and every later batch fail with an error naming the cap
    and the setting that raises it, and no more of its output reaches the host (before: everything was copied)."""
    from rexrank.generate.adapters.sandbox import OUTPUT_ENV

    monkeypatch.setenv(OUTPUT_ENV, "1")
    model = f"{_model_file(tmp_path / 'model', LOUD, 'loud')}:Loud"
    code, output = cli(*_open_args(open_set, tmp_path / "out", model, "--sandbox", "--no-context"))
    assert code == 3, output[-2000:]
    errors = json.loads((tmp_path / "out" / "errors.json").read_text())
    assert len(errors) == N_STUDIES
    assert all("printed over 1 MiB" in e and f"{OUTPUT_ENV}=<MiB>" in e for e in errors.values()), errors
    assert 2 ** 20 <= output.count("A") <= 2 ** 20 + 1000  # the cap's worth copied, nothing of later children
    assert f"{OUTPUT_ENV}=<MiB>" in output  # the CLI's summary line carries the fix
    code, output = cli(*_open_args(open_set, tmp_path / "load", model.replace(":Loud", ":LoudLoader"), "--sandbox",
                                   "--no-context"))
    assert code == 2 and output.rstrip().endswith(f"printed over 1 MiB (stdout and stderr) in this run; stopped it. "
                                                  f"Print less, or raise the cap: {OUTPUT_ENV}=<MiB>"), output[-500:]
    assert "Traceback" not in output
    monkeypatch.setenv(OUTPUT_ENV, "lots")
    code, output = cli(*_open_args(open_set, tmp_path / "bad", model, "--sandbox", "--no-context"))
    assert code == 2 and f"{OUTPUT_ENV}='lots' is not a positive number of MiB" in output, output


COPY_PEAK = '''
import collections, json, subprocess, sys
from rexrank.generate.adapters.sandbox import _OutputBudget, _copy_output
from rexrank.testing.memory import peak_rss_mib

before = peak_rss_mib()
writer = "import sys\\nfor _ in range(%d): sys.stdout.buffer.write(b'A' * 1048576)"
proc = subprocess.Popen([sys.executable, "-c", writer % 200], stdout=subprocess.PIPE)
tail = collections.deque(maxlen=20)
sys.stderr = open("/dev/null", "w")
_copy_output(proc, tail, _OutputBudget(1 << 30))
proc.wait()
print(json.dumps({"before": before, "after": peak_rss_mib(), "tail": [len(t) for t in tail]}))
'''


def test_copying_a_huge_output_without_newlines_keeps_the_parents_memory_flat(tmp_path):
    """200 MiB without a newline through the copier in a fresh process: its peak RSS grows by a few MiB (chunks of
    64 KiB), and the kept last line is cut (before: readline() held the whole line, ~3 times over with its
    decoded copy)."""
    proc = subprocess.run([sys.executable, "-c", COPY_PEAK], capture_output=True, text=True, timeout=300,
                          env=_env() | {"PYTHONPATH": os.pathsep.join(sys.path)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    figures = json.loads(proc.stdout)
    assert figures["after"] - figures["before"] < 32, figures
    assert figures["tail"] and max(figures["tail"]) <= 2000, figures


ESCAPING = '''
import sys


class Escaping:
    """Writes terminal escape sequences and other control characters on stdout and stderr, and fails one study
    with them in its message."""
    def __call__(self, studies):
        sys.stdout.write("title\\x1b]0;pwned\\x07 clear\\x1b[2J bell\\x07 csi\\u009b2J\\n")
        sys.stderr.write("back\\rover \\u202eevil\\n")
        sys.stdout.flush()
        sys.stderr.flush()
        if any(s["study_id"] == "s1" for s in studies):
            raise ValueError("red \\x1b[31malert")
        return ["Findings: ok %s." % s["study_id"] for s in studies]
'''


def test_escape_sequences_from_the_model_reach_the_host_escaped(open_set, cli, tmp_path):
    """Issue 35 point 4: what the model prints (and its error messages, which the CLI shows) reaches the host's
    stderr with every control character but newline and tab as a visible escape: no escape sequence, carriage
    return, C1 code or bidirectional override arrives as itself."""
    model = f"{_model_file(tmp_path / 'model', ESCAPING, 'escaping')}:Escaping"
    code, output = cli(*_open_args(open_set, tmp_path / "out", model, "--sandbox", "--no-context"))
    assert code == 3, output[-2000:]
    assert "title\\x1b]0;pwned\\x07 clear\\x1b[2J bell\\x07 csi\\x9b2J" in output
    assert "back\\x0dover \\u202eevil" in output
    assert not any(c in output for c in "\x1b\x07\r\x9b\u202e"), repr(output[-2000:])
    errors = json.loads((tmp_path / "out" / "errors.json").read_text())
    assert errors == {"s1": "ValueError: red \\x1b[31malert"}


def test_a_private_sets_run_folder_is_owner_only_and_names_no_host_path(private_set, cli, tmp_path):
    """Issue 35 point 3, the issue's case: generate on ReXGradient with --context keeps each study's indication and
    comparison in predictions.json, so the run folder is owner-only (0700 folders, 0600 files; it was 0755/0644),
    and no file names the data directory (image paths were absolute)."""
    import stat

    root = private_set[0]
    out = tmp_path / "runs" / "x"
    model = f"{_model_file(tmp_path / 'model', HONEST, 'honest')}:Honest"
    code, output = cli("generate", "--dataset", "rexgradient", "--data-dir", str(root), "--model", model, "--context",
                       "--out", str(out), "--no-progress")
    assert code == 0, output
    predictions = json.loads((out / "predictions.json").read_text())
    assert any(entry.get("context") for entry in predictions.values())  # the licensed text this folder guards
    assert all(not os.path.isabs(p) for entry in predictions.values() for p in entry["image_path"])
    for path in [out, *out.rglob("*")]:
        assert stat.S_IMODE(path.stat().st_mode) == (0o700 if path.is_dir() else 0o600), path
        assert path.is_dir() or str(root) not in path.read_text(errors="replace"), path

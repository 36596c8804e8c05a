"""Code under test in a bubblewrap sandbox: `rexrank generate --sandbox` (the default for a private test set).

The model's adapter (any kind: entry point, inference.py, Hugging Face) is built and called by this module's
``serve`` in a child process started under ``bwrap``. The parent keeps a ``SandboxedAdapter`` with the same
interface, so the runner (batches, resume, ordering, part files, predictions) is one code path with or without the
sandbox, and the child runs the very adapter code an unsandboxed run calls in-process.

What the child sees (docs/threat_model.md says what this does and does not guarantee):

* read-only: the Python environment (the interpreter's prefixes and what its site-packages add to ``sys.path``,
  asked of the interpreter itself with ``-I``), the model's own files (an entry point's folder, the folder of an
  inference.py and its ``--script-python`` environment, a local model folder or one Hub cache entry), ``/usr`` and
  a few files of ``/etc`` the dynamic loader and libc read, GPU device nodes when there are some;
* read-only at ``INPUT_DIR``: a fresh tree holding only the images of the batch being generated (hard links where
  the file system allows, else copies), removed when the batch is done; paths are ``INPUT_DIR/<call>/<k>/<j><ext>``;
* writable: ``SCRATCH_DIR`` (its HOME, a fresh temporary folder deleted at the end) and a private ``/tmp``;
* its own network, PID, IPC, UTS, cgroup and user namespaces (no network at all; no other process visible; uid
  65534, no capabilities), a new session (no terminal injection), and only the environment ``sandbox_env`` builds.

Nothing else of the host is mounted: not the run folder, not the reference files, not rexrank's or the datasets
caches. The parent refuses to start when a folder it would mount holds one of the host's paths it was told to hide
(the data dir, the run folder, the caches), since mounting it would show them.

Protocol: JSON lines over two pipes (file descriptors passed to the child, so the model's prints on stdout cannot
corrupt it); requests ``start`` (the adapter spec), ``load`` (device), ``generate`` (StudyInputs with staged
paths), ``close``; each answered by ``{"ok": ...}`` or ``{"error": ...}``. The child's stdout and stderr are copied
to the parent's stderr in bounded chunks, escaped (``terminal_safe``), up to a cap per run (``output_cap``). The
parent treats every reply as hostile input: size-capped, shape-checked, and a model can only ever change its own
reports.
"""

from __future__ import annotations

import collections
import codecs
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import weakref
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from rexrank.errors import ConfigError, RexrankError
from rexrank.generate.adapters.base import Adapter
from rexrank.generate.studies import StudyInput

BWRAP = "bwrap"
BWRAP_PACKAGE = "bubblewrap"  # Debian/Ubuntu/Fedora/Arch all call the package this
TRUST_FLAG = "--i-trust-this-model"  # the host's explicit "run this private set's model unsandboxed"
INPUT_DIR = "/rexrank/input"
SCRATCH_DIR = "/rexrank/scratch"
SANDBOX_UID = 65534  # nobody: no capabilities, owns nothing on the host
# The only host variables the model's process gets (when set), besides FIXED_ENV and PATH.
PASSED_ENV = ("LANG", "LC_ALL", "TZ", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
              "NUMEXPR_NUM_THREADS", "TOKENIZERS_PARALLELISM", "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES",
              "PYTORCH_CUDA_ALLOC_CONF")
FIXED_ENV = {"HOME": SCRATCH_DIR, "TMPDIR": "/tmp", "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
             "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1", "PYTHONDONTWRITEBYTECODE": "1"}
# What the dynamic loader, libc and Python read under /etc; the rest of /etc stays out.
ETC_FILES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "nsswitch.conf", "passwd", "group", "localtime",
             "alternatives")
MAX_REPLY_BYTES = 256 * 1024 * 1024  # a batch's reports; more is a model flooding the pipe
# What the model's processes may write to stdout and stderr in one run, all of them together (rexrank copies it to
# its own stderr): a training-style log fits many times over; a model flooding the host's terminal or log does not.
OUTPUT_ENV = "REXRANK_SANDBOX_OUTPUT_MIB"
DEFAULT_OUTPUT_MIB = 64
_OUTPUT_CHUNK = 64 * 1024  # read at most this much of the model's output at a time (no readline: lines are unbounded)
_LOG_LINES = 20  # the child's last output lines, quoted when it dies
_LOG_LINE_CHARS = 2000  # ... each cut to this many characters
# Control characters (C0 but tab and newline, DEL, C1) and the bidirectional overrides: written as escapes, so the
# model's output cannot move the cursor, retitle or clear the terminal, or reorder what the host reads.
_UNSAFE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def sandbox_required(requested: bool | None, private: bool, trusted: bool) -> bool:
    """Whether to sandbox: as asked, else for a private test set. ``--no-sandbox`` on a private set needs the
    host's explicit TRUST_FLAG: its references must stay out of reach of code the host has not vetted."""
    if trusted and requested is not False:
        raise ConfigError(f"{TRUST_FLAG} only goes with --no-sandbox (it says you vouch for code run unsandboxed)")
    if requested is False and private and not trusted:
        raise ConfigError(f"this is a private test set: --no-sandbox would let the model's code read its reference "
                          f"reports. Drop --no-sandbox (the model then runs under bubblewrap), or add {TRUST_FLAG} "
                          "if you have vetted the code")
    return private if requested is None else requested


def output_cap() -> int:
    """Bytes the model's processes may write to stdout and stderr in one run: $REXRANK_SANDBOX_OUTPUT_MIB (MiB),
    default DEFAULT_OUTPUT_MIB."""
    raw = os.environ.get(OUTPUT_ENV, "").strip()
    if not raw:
        return DEFAULT_OUTPUT_MIB * 1024 * 1024
    try:
        mib = float(raw)
    except ValueError:
        mib = math.nan
    if not math.isfinite(mib) or mib <= 0:
        raise ConfigError(f"{OUTPUT_ENV}={raw!r} is not a positive number of MiB (what the model may print in one "
                          f"run; default {DEFAULT_OUTPUT_MIB})")
    return max(1, int(mib * 1024 * 1024))


def terminal_safe(text: str) -> str:
    """``text`` with every control character but newline and tab (escape sequences, carriage returns, C1 codes)
    and every bidirectional override written as a visible escape (``\\x1b``, ``\\u202e``)."""
    return _UNSAFE.sub(lambda m: f"\\x{ord(m[0]):02x}" if ord(m[0]) < 0x100 else f"\\u{ord(m[0]):04x}", text)


class _OutputBudget:
    """What is left of the run's output cap, shared by every child the adapter starts (a model that floods its
    output and is restarted does not get a fresh allowance)."""

    def __init__(self, cap: int):
        self.cap, self.used, self.exceeded = cap, 0, False
        self._lock = threading.Lock()

    def take(self, n: int) -> int:
        """How many of ``n`` more bytes may be copied; marks the budget exceeded when not all of them."""
        with self._lock:
            allowed = max(0, min(n, self.cap - self.used))
            self.used += allowed
            if allowed < n:
                self.exceeded = True
            return allowed

    def error(self) -> str:
        # Short: the CLI shows the first 200 characters of a failed study's error, and the fix must be in them.
        return (f"the sandboxed model printed over {self.cap / 2 ** 20:g} MiB (stdout and stderr) in this run; "
                f"stopped it. Print less, or raise the cap: {OUTPUT_ENV}=<MiB>")


def find_bwrap() -> str:
    path = shutil.which(BWRAP)
    if path is None:
        raise ConfigError(f"--sandbox needs bubblewrap, and there is no `{BWRAP}` on PATH: install the "
                          f"{BWRAP_PACKAGE} package (Debian/Ubuntu: apt-get install {BWRAP_PACKAGE}; `make "
                          "setup-bwrap`), or, for an open test set and code you trust, pass --no-sandbox")
    return path


@dataclass
class AdapterSpec:
    """load_adapter's arguments: the child builds the adapter from these (the parent never imports the model)."""

    model: str
    kind: str = "auto"
    model_args: dict[str, Any] = field(default_factory=dict)
    settings: dict[str, Any] | None = None  # GenerationSettings as a dict
    dtype: str = "auto"
    trust_remote_code: bool = False
    chat_template: bool = True
    script_python: str | None = None


def interpreter() -> str:
    """This interpreter's path with its folders resolved and its own name kept: the mounts are bound at real paths,
    so a virtualenv reached through a linked folder must be started by its real folder (the name itself stays, as
    a virtualenv is found from where its python is started)."""
    return os.path.join(os.path.realpath(os.path.dirname(sys.executable)), os.path.basename(sys.executable))


def sandbox_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The model process's whole environment: FIXED_ENV, PASSED_ENV where set, PATH (the interpreter's folder and
    the system's), and ``extra`` (HF_HUB_CACHE for a Hub model)."""
    env = {name: os.environ[name] for name in PASSED_ENV if os.environ.get(name)}
    env.setdefault("LANG", "C.UTF-8")
    folders = dict.fromkeys([os.path.dirname(interpreter()), "/usr/local/bin", "/usr/bin", "/bin"])
    return env | FIXED_ENV | {"PATH": ":".join(folders)} | (extra or {})


def python_folders(python: str) -> list[str]:
    """The folders an interpreter imports from, as it reports them in isolated mode (-I: no cwd, no PYTHONPATH,
    no user site): its prefixes and sys.path, plus the folder of the executable and of what it links to."""
    code = ("import sys, json; print(json.dumps([sys.prefix, sys.base_prefix, sys.exec_prefix, "
            "sys.base_exec_prefix, *sys.path]))")
    try:
        out = subprocess.run([python, "-I", "-c", code], capture_output=True, text=True, timeout=120,
                             env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")}, check=True).stdout
        paths = json.loads(out.strip().splitlines()[-1])
    except (OSError, subprocess.SubprocessError, ValueError, IndexError) as exc:
        raise ConfigError(f"cannot ask the interpreter {python} where it imports from: {exc}") from None
    executable = shutil.which(python) or python
    paths += [os.path.dirname(os.path.abspath(executable)), os.path.dirname(os.path.realpath(executable))]
    return [p for p in dict.fromkeys(os.path.abspath(p) for p in paths if p) if os.path.isdir(p)]


def _outermost(paths: Iterable[str]) -> list[str]:
    """Paths without those inside another one of them (one bind covers its sub-folders)."""
    kept: list[str] = []
    for path in sorted(dict.fromkeys(os.path.realpath(p) for p in paths), key=len):
        if not any(_inside(path, k) for k in kept):
            kept.append(path)
    return kept


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def host_spec(spec: AdapterSpec) -> AdapterSpec:
    """``spec`` with every host path it names made absolute and real, as this process sees them: the model (an
    inference.py, an entry point's file, a local model folder) and ``script_python`` (a bare command name is looked
    up on this process's PATH: the child's PATH is another one). The child starts in its scratch folder, so a path
    relative to the host's working directory would name nothing there; the mounts are bound at real paths."""
    from rexrank.generate.adapters import adapter_kind
    from rexrank.generate.adapters.entrypoint import looks_like_entry_point

    kind = adapter_kind(spec.model) if spec.kind == "auto" else spec.kind
    model = spec.model
    if kind == "script":
        model = os.path.realpath(os.path.expanduser(model))
    elif kind == "entrypoint" or (kind == "auto" and looks_like_entry_point(model)):
        module, _, target = model.rpartition(":")
        if module.endswith(".py"):
            model = f"{os.path.realpath(os.path.expanduser(module))}:{target}"
    elif os.path.exists(os.path.expanduser(model)):
        model = os.path.realpath(os.path.expanduser(model))
    python = spec.script_python
    if python:
        found = shutil.which(os.path.expanduser(python)) or os.path.expanduser(python)
        # The folders resolved, the name kept (a virtualenv is found from where its python is started).
        python = os.path.join(os.path.realpath(os.path.dirname(os.path.abspath(found))), os.path.basename(found))
    return replace(spec, model=model, script_python=python)


def _model_files(spec: AdapterSpec) -> tuple[list[str], list[str], dict[str, str]]:
    """(folders of the model's own files to mount, folders the child adds to sys.path, extra environment), found
    without importing or running any of the model's code. ``spec`` names host paths as host_spec gives them."""
    from rexrank.generate.adapters import adapter_kind
    from rexrank.generate.adapters.entrypoint import looks_like_entry_point

    kind = adapter_kind(spec.model) if spec.kind == "auto" else spec.kind
    if kind == "script":
        folders = [os.path.dirname(spec.model)]
        if spec.script_python:
            folders += python_folders(spec.script_python)
        return folders, [], {}
    if kind == "entrypoint" or (kind == "auto" and looks_like_entry_point(spec.model)):
        module, _, _ = spec.model.rpartition(":")
        if module.endswith(".py"):
            return [os.path.dirname(module)], [], {}
        return _module_folders(module.split(".")[0])
    if os.path.isabs(spec.model) and os.path.exists(spec.model):
        return [spec.model], [], {}
    return _hub_cache_entry(spec.model)


def _module_folders(top: str) -> tuple[list[str], list[str], dict[str, str]]:
    """A ``package.module:function`` entry point: nothing to add when the environment provides the package, else
    its own folder (only it, never the folder it sits in), added to the child's sys.path. PathFinder locates it
    without executing anything (importlib.util.find_spec would run a parent package's __init__)."""
    from importlib.machinery import PathFinder

    found = PathFinder.find_spec(top, [p for p in sys.path if p])
    if found is None:
        return [], [], {}  # the child reports the import error
    # Absolute: a relative sys.path entry (PYTHONPATH=src) means nothing in the child's scratch folder.
    locations = [os.path.abspath(p) for p in list(found.submodule_search_locations or []) or [found.origin] if p]
    return locations, [os.path.dirname(p) for p in locations], {}


def _hub_cache_entry(repo_id: str) -> tuple[list[str], list[str], dict[str, str]]:
    """A Hub model id: its one entry of the Hub cache (models--org--name), mounted where it is; the child reads
    it offline through HF_HUB_CACHE."""
    from huggingface_hub import constants

    cache = constants.HF_HUB_CACHE
    entry = Path(cache) / f"models--{repo_id.replace('/', '--')}"
    if not entry.is_dir():
        raise ConfigError(f"{repo_id} is not in the Hugging Face cache ({cache}) and the sandbox has no network: "
                          f"download it first (huggingface-cli download {repo_id}), or pass a local folder")
    return [str(entry.resolve())], [], {"HF_HUB_CACHE": cache}


def bwrap_args(read_only: list[str], *, input_dir: str, scratch: str) -> list[str]:
    """bubblewrap's options for the child (documented in this module's docstring and docs/threat_model.md)."""
    args = ["--unshare-user", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID), "--unshare-net",
            "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--die-with-parent",
            "--new-session", "--cap-drop", "ALL", "--clearenv",
            "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",  # first: the binds below may lie under /tmp
            "--ro-bind", "/usr", "/usr"]
    for link in ("bin", "sbin", "lib", "lib64", "lib32"):
        target = os.readlink(f"/{link}") if os.path.islink(f"/{link}") else None
        if target is not None and not target.startswith("/"):
            args += ["--symlink", target, f"/{link}"]
        elif os.path.isdir(f"/{link}"):
            args += ["--ro-bind", f"/{link}", f"/{link}"]
    for name in ETC_FILES:
        args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
    for path in _outermost(read_only):
        if not path.startswith("/usr/"):
            args += ["--ro-bind", path, path]
    gpus = sorted(str(p) for p in Path("/dev").glob("nvidia*")) + (["/dev/dri"] if os.path.isdir("/dev/dri") else [])
    for device in gpus:  # CUDA needs its device nodes and reads /sys (NVML, NUMA)
        args += ["--dev-bind", device, device]
    if gpus:
        args += ["--ro-bind", "/sys", "/sys"]
    args += ["--ro-bind", input_dir, INPUT_DIR, "--bind", scratch, SCRATCH_DIR, "--chdir", SCRATCH_DIR]
    return args


class SandboxedAdapter(Adapter):
    """The adapter of ``spec`` running in a bwrap child; the child starts here (it reports the adapter's name,
    capabilities and config, which the runner checks options against) and lives until ``close``.

    ``hidden``: host paths the child must not see (the data dir, the run folder, the caches); a folder this would
    mount that holds one of them is refused with an error naming both.
    """

    sandboxed = True

    def __init__(self, spec: AdapterSpec, *, hidden: Iterable[str | os.PathLike] = ()):
        self.spec = spec = host_spec(spec)  # what the child gets: paths as the host sees them, never relative
        self._bwrap = find_bwrap()
        self._output = _OutputBudget(output_cap())
        model_folders, self._sys_path, self._env = _model_files(spec)
        self._mounts = [*python_folders(interpreter()), *model_folders]
        _check_hidden(self._mounts, hidden)
        self._root = Path(tempfile.mkdtemp(prefix="rexrank-sandbox-"))
        self._input, self._scratch = self._root / "input", self._root / "scratch"
        self._input.mkdir()
        self._scratch.mkdir()
        self._proc: subprocess.Popen | None = None
        self._device: str | None = None
        self._calls = 0
        self._finalizer = weakref.finalize(self, _cleanup, self._root, [])
        info = self._start()
        self.name = str(info.get("name") or spec.model)
        self.multi_image = bool(info.get("multi_image", True))
        self.uses_prompt = bool(info.get("uses_prompt", True))
        self.uses_context = bool(info.get("uses_context", self.uses_prompt))
        self.isolate_failures = bool(info.get("isolate_failures", True))
        if isinstance(info.get("default_batch_size"), int) and info["default_batch_size"] > 0:
            self.default_batch_size = info["default_batch_size"]
        self._config = info.get("config") if isinstance(info.get("config"), dict) else {"adapter": "sandboxed"}

    # ---- the Adapter interface ------------------------------------------------------------------------------
    def config(self) -> dict[str, Any]:
        return self._config

    def load(self, device: str) -> None:
        self._device = device
        self._request({"op": "load", "device": device})

    def generate(self, prepared: list[StudyInput]) -> list:
        if self._output.exceeded:  # no fresh child: its output would exceed the run's cap again
            raise RuntimeError(self._output.error())
        if self._proc is None or self._proc.poll() is not None:  # the model killed its process: start afresh
            self._start()
            if self._device is not None:
                self._request({"op": "load", "device": self._device})
        self._calls += 1
        folder = self._input / str(self._calls)
        try:
            studies = [_staged(study, folder / str(k), f"{INPUT_DIR}/{self._calls}/{k}")
                       for k, study in enumerate(prepared)]
            reply = self._request({"op": "generate", "studies": studies})
        finally:
            shutil.rmtree(folder, ignore_errors=True)  # the child only ever sees the batch in flight
        reports = reply.get("reports") if isinstance(reply, dict) else None
        if not isinstance(reports, list):
            raise RuntimeError("the sandboxed model sent no list of reports")
        return [_answer(item) for item in reports]

    def close(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            try:
                self._send(proc, {"op": "close"})
                proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                proc.kill()
                proc.wait()
        if proc is not None:
            proc.rexrank_copier.join(timeout=10)  # the model's last output lines reach stderr before we return
        self._finalizer()

    # ---- the child ----------------------------------------------------------------------------------------
    def _start(self) -> dict[str, Any]:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        command = [self._bwrap, *bwrap_args(self._mounts, input_dir=str(self._input), scratch=str(self._scratch))]
        for name, value in sandbox_env(self._env).items():
            command += ["--setenv", name, value]
        command += ["--", interpreter(), "-I", "-m", "rexrank.generate.adapters.sandbox", str(to_child_r),
                    str(from_child_w)]
        try:
            # bwrap itself gets an empty environment: the child can read its PID-1 parent's /proc/1/environ.
            proc = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.STDOUT, pass_fds=(to_child_r, from_child_w), env={})
        finally:
            os.close(to_child_r)
            os.close(from_child_w)
        proc.rexrank_writer = os.fdopen(to_child_w, "wb")  # type: ignore[attr-defined]
        proc.rexrank_reader = os.fdopen(from_child_r, "rb")  # type: ignore[attr-defined]
        proc.rexrank_log = collections.deque(maxlen=_LOG_LINES)  # type: ignore[attr-defined]
        proc.rexrank_copier = threading.Thread(  # type: ignore[attr-defined]
            target=_copy_output, args=(proc, proc.rexrank_log, self._output), daemon=True)
        proc.rexrank_copier.start()
        self._proc = proc
        self._finalizer.detach()
        self._finalizer = weakref.finalize(self, _cleanup, self._root, [proc])
        spec = asdict(self.spec)
        return self._request({"op": "start", "spec": spec, "sys_path": self._sys_path})

    def _request(self, message: dict[str, Any]) -> Any:
        proc = self._proc
        try:
            self._send(proc, message)
            line = proc.rexrank_reader.readline(MAX_REPLY_BYTES + 1)
        except OSError:
            line = b""
        if len(line) > MAX_REPLY_BYTES:
            proc.kill()
            raise RuntimeError(f"the sandboxed model sent a reply over {MAX_REPLY_BYTES} bytes; stopped it")
        if self._output.exceeded:  # whatever the dying child still answered (its prints now fail: a broken pipe)
            proc.kill()
            proc.wait()
            # One line from the CLI, unless a batch's studies record it.
            raise (RuntimeError if message["op"] == "generate" else ConfigError)(self._output.error())
        if not line:
            status = proc.wait()
            error = ConfigError if message["op"] == "start" else RuntimeError
            tail = "\n".join(proc.rexrank_log)
            raise error(f"the sandboxed model process exited (status {status}) during {message['op']}"
                        + (f"; its last output:\n{tail}" if tail else ""))
        try:
            reply = json.loads(line)
        except ValueError:
            raise RuntimeError("the sandboxed model sent a reply that is not JSON") from None
        if isinstance(reply, dict) and "error" in reply:
            raise _remote_error(reply["error"])
        if not isinstance(reply, dict) or "ok" not in reply:
            raise RuntimeError("the sandboxed model sent a reply without ok or error")
        return reply["ok"]

    @staticmethod
    def _send(proc: subprocess.Popen, message: dict[str, Any]) -> None:
        proc.rexrank_writer.write(json.dumps(message, ensure_ascii=True).encode("ascii") + b"\n")
        proc.rexrank_writer.flush()


def _check_hidden(mounts: list[str], hidden: Iterable[str | os.PathLike]) -> None:
    for secret in (os.path.realpath(os.fspath(h)) for h in hidden if h):
        for mount in mounts:
            if _inside(secret, os.path.realpath(mount)):
                raise ConfigError(f"the sandbox would mount {mount} (the model's files or its Python environment), "
                                  f"which holds {secret}, a path the model must not see: move the model's files "
                                  "(or the environment) to a folder of their own")


def _copy_output(proc: subprocess.Popen, tail: collections.deque, budget: _OutputBudget) -> None:
    """The child's stdout and stderr to this process's stderr, escaped (terminal_safe), read in chunks of at most
    _OUTPUT_CHUNK bytes: memory stays bounded whatever the model writes, with or without newlines. The last
    _LOG_LINES lines are kept (each cut to _LOG_LINE_CHARS) for the error when the child dies. Past the run's
    cap (``budget``) the child is killed and the rest of its output dropped."""
    stream = proc.stdout
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    line = ""
    while chunk := stream.read1(_OUTPUT_CHUNK):
        allowed = budget.take(len(chunk))
        text = terminal_safe(decoder.decode(chunk[:allowed], final=allowed < len(chunk)))
        *done, line = (line + text).split("\n")
        tail.extend(d[:_LOG_LINE_CHARS] for d in done)
        line = line[:_LOG_LINE_CHARS]
        _write_stderr(text)
        if allowed < len(chunk):
            _write_stderr("\n")
            proc.kill()  # the reply pipe closes with it: the request in flight fails with budget.error()
            break
    else:
        text = terminal_safe(decoder.decode(b"", final=True))
        line = (line + text)[:_LOG_LINE_CHARS]
        _write_stderr(text)
    if line:
        tail.append(line)
    stream.close()


def _write_stderr(text: str) -> None:
    if not text:
        return
    try:
        sys.stderr.write(text)
        sys.stderr.flush()
    except (OSError, ValueError):  # stderr closed (the CLI is exiting)
        pass


def _cleanup(root: Path, procs: list) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    shutil.rmtree(root, ignore_errors=True)


def _link_or_copy(source: str, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except OSError:  # another file system, or links refused (protected_hardlinks): a copy
        shutil.copyfile(source, target)


def _staged(study: StudyInput, host_folder: Path, inside_folder: str) -> dict[str, Any]:
    """The study as the child gets it: every image path (chosen, all, key; also inside ``record``) replaced by its
    staged copy's path inside the sandbox."""
    paths = list(dict.fromkeys([*study.all_images, *study.images, *([study.key_image] if study.key_image else [])]))
    mapping = {}
    for j, path in enumerate(paths):
        name = f"{j}{Path(path).suffix}"
        _link_or_copy(path, host_folder / name)
        mapping[path] = f"{inside_folder}/{name}"
    record = dict(study.record)
    record["image_paths"] = [mapping[p] for p in record.get("image_paths") or ()]
    if record.get("key_image"):
        record["key_image"] = mapping[record["key_image"]]
    data = {f.name: getattr(study, f.name) for f in fields(StudyInput)}
    return data | {"images": [mapping[p] for p in study.images], "all_images": [mapping[p] for p in study.all_images],
                   "key_image": mapping.get(study.key_image), "record": record}


_TYPE_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_")


def _type_name(value: Any, default: str) -> str:
    name = str(value)[:100] if value else ""
    return name if name and set(name) <= _TYPE_NAME_CHARS and not name[0].isdigit() else default


def _remote_error(error: Any) -> Exception:
    """The child's exception as the parent raises it: rexrank's own errors as themselves (one-line CLI errors),
    others under their own class name (the runner records 'Type: message' as an unsandboxed run does)."""
    import rexrank.errors as errors

    error = error if isinstance(error, dict) else {}
    # Escaped: the CLI prints failed studies' messages on the host's terminal.
    name, message = _type_name(error.get("type"), "RemoteError"), terminal_safe(str(error.get("message", ""))[:10000])
    cls = getattr(errors, name, None)
    if isinstance(cls, type) and issubclass(cls, RexrankError):
        return cls(message)
    return type(name, (RuntimeError,), {})(message)


def _answer(item: Any) -> Any:
    """One study's answer from the child: a report string, an exception, or a stand-in for a non-string answer
    that carries its type's name (the runner's TypeError names it)."""
    if isinstance(item, str):
        return item
    if isinstance(item, dict) and "exception" in item:
        return _remote_error(item["exception"])
    name = _type_name(item.get("not_a_string") if isinstance(item, dict) else None, "object")
    return type(name, (), {})()


# ---- the child's side ------------------------------------------------------------------------------------------

def _describe_adapter(adapter: Adapter) -> dict[str, Any]:
    info = {"name": adapter.name, "multi_image": adapter.multi_image, "uses_prompt": adapter.uses_prompt,
            "uses_context": getattr(adapter, "uses_context", adapter.uses_prompt),
            "isolate_failures": adapter.isolate_failures, "config": adapter.config()}
    if isinstance(getattr(adapter, "default_batch_size", None), int):
        info["default_batch_size"] = adapter.default_batch_size
    return json.loads(json.dumps(info, default=str))


def _encode_answer(answer: Any) -> Any:
    if isinstance(answer, str):
        return answer
    if isinstance(answer, BaseException):
        return {"exception": {"type": type(answer).__name__, "message": str(answer)}}
    return {"not_a_string": type(answer).__name__}


def serve(read_fd: int, write_fd: int) -> None:
    """The child's loop: build the adapter from the ``start`` spec, then answer ``load`` and ``generate``."""
    from rexrank.generate.adapters import GenerationSettings, load_adapter

    reader, writer = os.fdopen(read_fd, "rb"), os.fdopen(write_fd, "wb")
    os.set_inheritable(read_fd, False)
    os.set_inheritable(write_fd, False)  # an inference.py subprocess gets neither pipe

    def reply(payload: dict[str, Any]) -> None:
        writer.write(json.dumps(payload, ensure_ascii=True).encode("ascii") + b"\n")
        writer.flush()

    adapter: Adapter | None = None
    scratch = Path(os.environ.get("HOME", SCRATCH_DIR))
    log_seen = 0
    for line in reader:
        message = json.loads(line)
        op = message.get("op")
        if op == "close":
            break
        try:
            if op == "start":
                sys.path[:0] = [p for p in message.get("sys_path", []) if p not in sys.path]
                spec = dict(message["spec"])
                settings = spec.pop("settings")
                adapter = load_adapter(spec.pop("model"), spec.pop("kind"),
                                       settings=None if settings is None else GenerationSettings(**settings), **spec)
                reply({"ok": _describe_adapter(adapter)})
            elif op == "load":
                adapter.load(message["device"])
                if hasattr(adapter, "workdir"):  # an inference.py: its input/output JSON and log live in scratch
                    adapter.workdir = scratch / "work"
                reply({"ok": None})
            elif op == "generate":
                batch = [StudyInput(**{k: tuple(v) if isinstance(v, list) else v for k, v in study.items()})
                         for study in message["studies"]]
                outputs = adapter.generate(adapter.prepare(batch))
                reply({"ok": {"reports": [_encode_answer(o) for o in outputs]}})
                log_seen = _forward_script_log(adapter, log_seen)
            else:
                reply({"error": {"type": "RuntimeError", "message": f"unknown request {op!r}"}})
        except Exception as exc:  # noqa: BLE001 - every failure goes back to the parent, which decides
            log_seen = _forward_script_log(adapter, log_seen)
            reply({"error": {"type": type(exc).__name__, "message": str(exc)}})


def _forward_script_log(adapter: Adapter | None, seen: int) -> int:
    """An inference.py's log is in the scratch folder, deleted at the end: its new lines go to stderr (the
    parent copies them to its own)."""
    from rexrank.generate.adapters.script import LOG_FILE

    folder = getattr(adapter, "workdir", None)
    path = Path(folder) / LOG_FILE if folder else None
    if path is None or not path.is_file():
        return seen
    with open(path, "rb") as handle:
        handle.seek(seen)
        data = handle.read()
    sys.stderr.write(data.decode("utf-8", errors="replace"))
    sys.stderr.flush()
    return seen + len(data)


if __name__ == "__main__":
    serve(int(sys.argv[1]), int(sys.argv[2]))

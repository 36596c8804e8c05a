"""Publish the evaluate modules in ``metrics/<slug>/`` as Gradio Spaces ``ORG/<slug>`` on the Hugging Face Hub.

A Space named ``ORG/<slug>`` holding ``<slug>.py`` is exactly what ``evaluate.load("ORG/<slug>")`` fetches
(evaluate 0.4.x reads ``{HF_ENDPOINT}/spaces/ORG/<slug>/resolve/main/<slug>.py``), and its ``app.py`` serves the
metric's Gradio widget. ``plan`` decides what goes where without touching the network (``--dry-run`` prints it);
``publish`` uploads exactly the planned files, from a staging copy, through ``huggingface_hub.HfApi``.

Each Space's requirements.txt names ``rexrank``, which no package index serves, so publishing replaces that line
with an installable source chosen now: ``--rexrank-requirement SPEC`` (e.g. a git URL), or by default a wheel built
from this checkout (``--wheel PATH`` for one built already), uploaded into the Space as ``wheels/<file>`` and named
by its Hub URL. A URL, not ``./wheels/...``: the Space build installs requirements.txt before the repository's
other files are in place. A bare ``rexrank`` line is never published.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rexrank.errors import ConfigError, RexrankError, UnknownNameError
from rexrank.evaluate_modules import MODULE_FILES, modules_root

# What never goes into a Space: byte-code, editor and OS droppings, hidden files.
_SKIP_DIRS = {"__pycache__", ".ipynb_checkpoints"}
_SKIP_SUFFIXES = (".pyc", ".pyo", "~")
# Hub repo names: letters, digits, "-", "_", "."; no leading/trailing "-" or "." (huggingface_hub validators).
_NAME = re.compile(r"^(?![.-])[A-Za-z0-9._-]{1,96}(?<![.-])$")


class HubAuthError(RexrankError):
    """No Hugging Face token is available (or the Hub refused it)."""


class HubPublishError(RexrankError):
    """The Hub refused an upload; the message names the Space and the Hub's answer."""


@dataclass(frozen=True)
class PlannedFile:
    path_in_repo: str
    source: Path
    size: int


@dataclass(frozen=True)
class SpacePlan:
    slug: str
    repo_id: str
    folder: Path
    files: tuple[PlannedFile, ...]
    private: bool

    @property
    def size(self) -> int:
        return sum(f.size for f in self.files)


def default_metrics_dir() -> Path:
    """The evaluate modules of the installed rexrank (the checkout's metrics/ for an editable install), so the
    published modules match the rexrank the Spaces will install."""
    return modules_root()


def metric_folders(metrics_dir: Path | None = None) -> dict[str, Path]:
    """slug -> folder, for every ``metrics/<slug>/`` that holds ``<slug>.py`` (sorted by slug)."""
    root = Path(metrics_dir) if metrics_dir else default_metrics_dir()
    if not root.is_dir():
        raise ConfigError(f"metrics folder {root} does not exist")
    return {p.name: p for p in sorted(root.iterdir()) if p.is_dir() and (p / f"{p.name}.py").is_file()}


def _files_of(folder: Path) -> tuple[PlannedFile, ...]:
    files = []
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if not path.is_file() or path.is_symlink():
            continue
        if any(part in _SKIP_DIRS or part.startswith(".") for part in rel.parts) or path.name.endswith(_SKIP_SUFFIXES):
            continue
        files.append(PlannedFile(rel.as_posix(), path, path.stat().st_size))
    return tuple(files)


def plan(org: str, *, only: Sequence[str] | None = None, private: bool = False,
         metrics_dir: Path | None = None) -> list[SpacePlan]:
    """What ``publish`` would upload: one Space per metric folder (all, or the ``only`` slugs), no network."""
    org = (org or "").strip()
    if not _NAME.match(org):
        raise ConfigError(f"--org {org!r} is not a valid Hub user or organisation name")
    folders = metric_folders(metrics_dir)
    if not folders:
        raise ConfigError(f"no evaluate modules (metrics/<slug>/<slug>.py) found under {metrics_dir}")
    chosen = list(folders)
    if only:
        chosen = []
        for slug in only:
            slug = slug.strip()
            if slug not in folders:
                raise UnknownNameError(f"Unknown metric folder {slug!r}. Available: {', '.join(folders)}")
            if slug not in chosen:
                chosen.append(slug)
    plans = []
    for slug in chosen:
        files = _files_of(folders[slug])
        missing = [name.format(slug=slug) for name in MODULE_FILES
                   if name.format(slug=slug) not in {f.path_in_repo for f in files}]
        if missing:
            raise ConfigError(f"metrics/{slug} is not a complete Space: missing {', '.join(missing)}")
        plans.append(SpacePlan(slug, f"{org}/{slug}", folders[slug], files, private))
    return plans


# The leaderboard Space's files in a checkout (spaces/leaderboard/): what `rexrank hub publish-leaderboard` uploads.
LEADERBOARD_SPACE = "spaces/leaderboard"
LEADERBOARD_FILES = ("app.py", "README.md", "requirements.txt")
# The lock (the stack the suite last passed on, scripts/lock.sh) goes into the leaderboard Space beside its
# requirements, whose `-c constraints.txt` line names it by its Hub URL: a Space's build installs requirements.txt
# before the rest of the repository is there, so a relative path would not resolve.
LOCK_FILE = "constraints.txt"
_LOCK_LINE = re.compile(r"-c\s+" + re.escape(LOCK_FILE))


def leaderboard_plan(repo_id: str, *, private: bool = False, folder: Path | None = None) -> SpacePlan:
    """What ``publish`` would upload for the leaderboard Space ``repo_id`` (ORG/NAME), from ``folder`` (default: the
    checkout's spaces/leaderboard/). Its requirements' ``rexrank[space]`` line is rewritten like a module's."""
    org, sep, name = (repo_id or "").strip().partition("/")
    if not sep or not _NAME.match(org) or not _NAME.match(name):
        raise ConfigError(f"--repo {repo_id!r} is not a Hub repo id of the form ORG/NAME")
    folder = Path(folder) if folder else source_root() / LEADERBOARD_SPACE
    if not folder.is_dir():
        raise ConfigError(f"{folder} does not exist: publish the leaderboard Space from a rexrank checkout")
    files = _files_of(folder)
    missing = [f for f in LEADERBOARD_FILES if f not in {p.path_in_repo for p in files}]
    if missing:
        raise ConfigError(f"{folder} is not a complete Space: missing {', '.join(missing)}")
    lock = folder.resolve().parents[1] / LOCK_FILE
    if not lock.is_file():
        raise ConfigError(f"{lock} does not exist: publish the leaderboard Space from a rexrank checkout (the lock "
                          "pins the stack the Space installs)")
    files = (*(f for f in files if f.path_in_repo != LOCK_FILE), PlannedFile(LOCK_FILE, lock, lock.stat().st_size))
    return SpacePlan("leaderboard", f"{org}/{name}", folder, files, private)


def _human(size: int) -> str:
    return f"{size} B" if size < 1024 else f"{size / 1024:.1f} KiB"


# The requirements.txt line of rexrank itself: the name, optional extras, optional version specifiers. Such a line
# installs from a package index, which does not serve rexrank.
_BARE_REXRANK = re.compile(r"rexrank(\[[^\]]*\])?\s*([<>=!~].*)?")
WHEELS_DIR = "wheels"  # where the uploaded wheel sits in each Space


def check_requirement(requirement: str) -> str:
    """``requirement`` if it names an installable source of rexrank; a ConfigError for a bare ``rexrank`` line."""
    requirement = (requirement or "").strip()
    if not requirement or _BARE_REXRANK.fullmatch(requirement):
        raise ConfigError(f"--rexrank-requirement {requirement!r} would install rexrank from a package index, which "
                          "does not serve it: give a direct reference such as "
                          "'rexrank @ git+https://github.com/ORG/rexrank@v0.1.0', or leave the option out to upload "
                          "a wheel built from this checkout")
    return requirement


def space_file_url(repo_id: str, path: str) -> str:
    """Where the Space build downloads one of the Space repo's own files from (on HF_ENDPOINT)."""
    from huggingface_hub import constants

    return f"{constants.ENDPOINT}/spaces/{repo_id}/resolve/main/{path}"


def wheel_url(repo_id: str, wheel_name: str) -> str:
    """Where the Space build downloads the uploaded wheel from (the Space repo's own file, on HF_ENDPOINT)."""
    return space_file_url(repo_id, f"{WHEELS_DIR}/{wheel_name}")


def wheel_requirement(repo_id: str, wheel_name: str) -> str:
    return f"rexrank @ {wheel_url(repo_id, wheel_name)}"


def expected_wheel_name() -> str:
    """The file name ``build_wheel`` gives (for the dry run, which builds nothing)."""
    from importlib.metadata import version

    return f"rexrank-{version('rexrank')}-py3-none-any.whl"


def describe(plans: Sequence[SpacePlan], rexrank_requirement: str | None = None,
             wheel: str | Path | None = None) -> str:
    """The dry-run listing: every target Space, every file with its size, and what the `rexrank` line becomes."""
    rexrank_requirement, wheel = check_source(plans, rexrank_requirement, wheel)
    visibility = "private" if plans and plans[0].private else "public"
    wheel_name = Path(wheel).name if wheel else expected_wheel_name()
    wheel_size = f"{Path(wheel).stat().st_size:>8} B" if wheel else "built at publish time"
    lines = [f"Dry run: would publish {len(plans)} Gradio Space(s), {visibility}; nothing is sent."]
    for p in plans:
        lines.append(f"{p.repo_id} (space, sdk gradio) <- {p.folder}  [{len(p.files)} files, {_human(p.size)}]")
        width = max(len(f.path_in_repo) for f in p.files)
        line = rexrank_requirement or wheel_requirement(p.repo_id, wheel_name)
        for f in p.files:
            note = f"  (its `rexrank` line becomes {line!r})" if f.path_in_repo == "requirements.txt" else ""
            lines.append(f"    {f.path_in_repo:<{width}}  {f.size:>8} B{note}")
        if not rexrank_requirement:
            lines.append(f"    {WHEELS_DIR}/{wheel_name}  {wheel_size}")
    return "\n".join(lines)


def _requirements_with(text: str, requirement: str) -> str:
    """requirements.txt with its bare ``rexrank`` line (no index serves rexrank) replaced by ``requirement``.

    Extras of the replaced line carry over to a requirement that names none (``rexrank[space]`` becomes
    ``rexrank[space] @ URL``): the leaderboard Space needs gradio and plotly from the space extra."""
    lines = text.splitlines()
    hits = [i for i, line in enumerate(lines) if _BARE_REXRANK.fullmatch(line.strip())]
    if not hits:
        raise ConfigError("requirements.txt has no `rexrank` line to replace")
    for i in hits:
        extras = _BARE_REXRANK.fullmatch(lines[i].strip()).group(1)
        named = re.match(r"rexrank(?=\s*@)", requirement)
        lines[i] = f"rexrank{extras}{requirement[len('rexrank'):]}" if extras and named else requirement
    return "\n".join(lines) + "\n"


def stage(space: SpacePlan, into: Path, rexrank_requirement: str, wheel: Path | None = None) -> Path:
    """Copy exactly the planned files to ``into/<slug>`` (so the upload equals the dry-run listing), with the
    `rexrank` line of requirements.txt replaced by ``rexrank_requirement`` and ``wheel`` under wheels/."""
    check_requirement(rexrank_requirement)
    target = Path(into) / space.slug
    for f in space.files:
        dest = target / f.path_in_repo
        dest.parent.mkdir(parents=True, exist_ok=True)
        if f.path_in_repo == "requirements.txt":
            text = _requirements_with(f.source.read_text(encoding="utf-8"), rexrank_requirement)
            text = _LOCK_LINE.sub(f"-c {space_file_url(space.repo_id, LOCK_FILE)}", text)
            dest.write_text(text, encoding="utf-8")
        else:
            shutil.copyfile(f.source, dest)
    if wheel is not None:
        (target / WHEELS_DIR).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(wheel, target / WHEELS_DIR / Path(wheel).name)
    return target


def source_root() -> Path:
    """The checkout the installed rexrank runs from (an editable install), to build its wheel."""
    root = Path(__file__).resolve().parents[3]
    project = root / "pyproject.toml"
    if project.is_file() and re.search(r'(?m)^name\s*=\s*"rexrank"', project.read_text(encoding="utf-8")):
        return root
    raise ConfigError("rexrank is not installed from a checkout, so no wheel can be built here: pass --wheel "
                      "PATH (a rexrank wheel) or --rexrank-requirement SPEC (e.g. a git URL)")


# What a wheel build reads from the checkout (pyproject's readme, the package, the evaluate modules it links).
_BUILD_INPUTS = ("pyproject.toml", "README.md", "src", "metrics")


def build_wheel(out_dir: Path, root: Path | None = None) -> Path:
    """Build rexrank's wheel (``python -m build --wheel``) from a clean copy of the checkout into ``out_dir``.

    A copy, so stale files in the checkout's build/ never reach the wheel; no isolation, so it builds offline
    with the setuptools already installed.
    """
    root = Path(root) if root else source_root()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="rexrank-wheel-") as tmp:
        copy = Path(tmp) / "rexrank"
        copy.mkdir()
        skip = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", ".*")
        for name in _BUILD_INPUTS:
            source = root / name
            if source.is_dir():
                shutil.copytree(source, copy / name, symlinks=True, ignore=skip)
            elif source.is_file():
                shutil.copy2(source, copy / name)
        before = set(out_dir.glob("rexrank-*.whl"))
        proc = subprocess.run([sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir",
                               str(out_dir), str(copy)], capture_output=True, text=True)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        hint = " (pip install build)" if "No module named build" in (proc.stderr or "") else ""
        raise ConfigError(f"building the rexrank wheel failed{hint}: {' | '.join(tail)[:600]}")
    built = sorted(set(out_dir.glob("rexrank-*.whl")) - before) or sorted(out_dir.glob("rexrank-*.whl"))
    if not built:
        raise ConfigError(f"building the rexrank wheel produced no rexrank-*.whl in {out_dir}")
    return built[-1]


def check_source(plans: Sequence[SpacePlan], rexrank_requirement: str | None = None,
                 wheel: str | Path | None = None) -> tuple[str | None, Path | None]:
    """The (requirement, wheel) the Spaces will install rexrank from, checked before anything is built or sent."""
    if rexrank_requirement is not None:
        if wheel is not None:
            raise ConfigError("pass --rexrank-requirement or --wheel, not both")
        return check_requirement(rexrank_requirement), None
    if any(space.private for space in plans):
        # The Space build downloads the wheel from the Space itself, without a token: a private Space's file 404s.
        raise ConfigError("a private Space cannot install a wheel uploaded into it (its build has no token to "
                          "download it): pass --rexrank-requirement SPEC with a source the build can reach, e.g. "
                          "'rexrank @ git+https://github.com/ORG/rexrank@v0.1.0'")
    return None, (_checked_wheel(wheel) if wheel is not None else None)


def _checked_wheel(wheel: str | Path) -> Path:
    path = Path(wheel).expanduser()
    if not path.is_file() or not re.fullmatch(r"rexrank-[^-]+-.+\.whl", path.name):
        raise ConfigError(f"--wheel {str(wheel)!r} is not a rexrank wheel file (rexrank-<version>-...whl)")
    return path


def hub_token(token: str | None = None) -> str:
    """The token to publish with: ``token``, else HF_TOKEN, else the one saved by ``hf auth login``."""
    if token:
        return token
    from huggingface_hub import get_token

    found = get_token()
    if not found:
        raise HubAuthError("no Hugging Face token found: set the HF_TOKEN environment variable to a token with write "
                           "access, or run `hf auth login` (publishing needs write access to the organisation)")
    return found


def make_api(token: str):
    from huggingface_hub import HfApi

    return HfApi(token=token)


def publish(plans: Sequence[SpacePlan], *, token: str | None = None, rexrank_requirement: str | None = None,
            wheel: str | Path | None = None, api_factory: Callable[[str], Any] | None = None,
            wheel_builder: Callable[[Path], Path] = build_wheel, log: Callable[[str], None] = print) -> list[str]:
    """Create (or reuse) each Space and upload its folder. Returns the Space URLs. The token is never printed.

    The Spaces install rexrank from ``rexrank_requirement`` if given, else from ``wheel`` (built by
    ``wheel_builder`` from this checkout when not given), uploaded into each Space.
    """
    rexrank_requirement, wheel = check_source(plans, rexrank_requirement, wheel)
    token = hub_token(token)
    api = (api_factory or make_api)(token)
    urls = []
    with tempfile.TemporaryDirectory(prefix="rexrank-publish-") as tmp:
        if rexrank_requirement is None and wheel is None:
            wheel = wheel_builder(Path(tmp) / "dist")
            log(f"built {wheel.name}")
        for space in plans:
            requirement = rexrank_requirement or wheel_requirement(space.repo_id, wheel.name)
            staged = stage(space, Path(tmp) / "spaces", requirement, None if rexrank_requirement else wheel)
            try:
                api.create_repo(space.repo_id, repo_type="space", space_sdk="gradio", exist_ok=True,
                                private=space.private, token=token)
                api.upload_folder(repo_id=space.repo_id, folder_path=str(staged), repo_type="space", token=token,
                                  commit_message=f"Publish the rexrank {space.slug} Space")
            except Exception as exc:  # noqa: BLE001 - every Hub failure becomes one message naming the Space
                raise _hub_error(space, exc) from None
            url = f"https://huggingface.co/spaces/{space.repo_id}"
            urls.append(url)
            n_files = len(space.files) + (0 if rexrank_requirement else 1)
            log(f"published {space.repo_id}: {n_files} files (rexrank from {requirement}) -> {url}")
    return urls


def _hub_error(space: SpacePlan, exc: Exception) -> RexrankError:
    status = getattr(getattr(exc, "response", None), "status_code", None)
    detail = (str(exc).splitlines() or [type(exc).__name__])[0][:300]
    if status in (401, 403):
        return HubAuthError(f"the Hub refused to publish {space.repo_id} ({status}): {detail}. Check that your token "
                            f"(HF_TOKEN or `hf auth login`) has write access to {space.repo_id.split('/')[0]}")
    return HubPublishError(f"publishing {space.repo_id} failed ({type(exc).__name__}{f' {status}' if status else ''}):"
                           f" {detail}")

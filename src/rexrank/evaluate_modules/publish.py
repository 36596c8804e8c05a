"""Publish the evaluate modules in ``metrics/<slug>/`` as Gradio Spaces ``ORG/<slug>`` on the Hugging Face Hub.

A Space named ``ORG/<slug>`` holding ``<slug>.py`` is exactly what ``evaluate.load("ORG/<slug>")`` fetches
(evaluate 0.4.x reads ``{HF_ENDPOINT}/spaces/ORG/<slug>/resolve/main/<slug>.py``), and its ``app.py`` serves the
metric's Gradio widget. ``plan`` decides what goes where without touching the network (``--dry-run`` prints it);
``publish`` uploads exactly the planned files, from a staging copy, through ``huggingface_hub.HfApi``.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rexrank.errors import ConfigError, RexrankError, UnknownNameError

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
    """``./metrics`` when run from a checkout, else the metrics/ folder beside the installed (editable) package."""
    cwd = Path.cwd() / "metrics"
    if _is_metrics_dir(cwd):
        return cwd
    beside = Path(__file__).resolve().parents[2] / "metrics"
    if _is_metrics_dir(beside):
        return beside
    raise ConfigError("cannot find the metrics/ folder of evaluate modules: run from a rexrank checkout or pass "
                      "--metrics-dir PATH")


def _is_metrics_dir(path: Path) -> bool:
    return path.is_dir() and any((p / f"{p.name}.py").is_file() for p in path.iterdir() if p.is_dir())


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
        missing = [name for name in (f"{slug}.py", "README.md", "app.py", "requirements.txt")
                   if name not in {f.path_in_repo for f in files}]
        if missing:
            raise ConfigError(f"metrics/{slug} is not a complete Space: missing {', '.join(missing)}")
        plans.append(SpacePlan(slug, f"{org}/{slug}", folders[slug], files, private))
    return plans


def _human(size: int) -> str:
    return f"{size} B" if size < 1024 else f"{size / 1024:.1f} KiB"


def describe(plans: Sequence[SpacePlan], rexrank_requirement: str | None = None) -> str:
    """The dry-run listing: every target Space and every file with its size."""
    visibility = "private" if plans and plans[0].private else "public"
    lines = [f"Dry run: would publish {len(plans)} Gradio Space(s), {visibility}; nothing is sent."]
    for p in plans:
        lines.append(f"{p.repo_id} (space, sdk gradio) <- {p.folder}  [{len(p.files)} files, {_human(p.size)}]")
        width = max(len(f.path_in_repo) for f in p.files)
        for f in p.files:
            note = ""
            if rexrank_requirement and f.path_in_repo == "requirements.txt":
                note = f"  (its `rexrank` line becomes {rexrank_requirement!r})"
            lines.append(f"    {f.path_in_repo:<{width}}  {f.size:>8} B{note}")
    return "\n".join(lines)


def _requirements_with(text: str, requirement: str) -> str:
    """requirements.txt with its bare ``rexrank`` line (rexrank is not on PyPI yet) replaced by ``requirement``."""
    lines = text.splitlines()
    hits = [i for i, line in enumerate(lines) if re.fullmatch(r"rexrank(\[[^\]]*\])?\s*([<>=!~].*)?", line.strip())]
    if not hits:
        raise ConfigError("requirements.txt has no `rexrank` line to replace")
    for i in hits:
        lines[i] = requirement
    return "\n".join(lines) + "\n"


def stage(space: SpacePlan, into: Path, rexrank_requirement: str | None = None) -> Path:
    """Copy exactly the planned files to ``into/<slug>`` (so the upload equals the dry-run listing)."""
    target = Path(into) / space.slug
    for f in space.files:
        dest = target / f.path_in_repo
        dest.parent.mkdir(parents=True, exist_ok=True)
        if rexrank_requirement and f.path_in_repo == "requirements.txt":
            dest.write_text(_requirements_with(f.source.read_text(encoding="utf-8"), rexrank_requirement),
                            encoding="utf-8")
        else:
            shutil.copyfile(f.source, dest)
    return target


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
            api_factory: Callable[[str], Any] | None = None, log: Callable[[str], None] = print) -> list[str]:
    """Create (or reuse) each Space and upload its folder. Returns the Space URLs. The token is never printed."""
    token = hub_token(token)
    api = (api_factory or make_api)(token)
    urls = []
    with tempfile.TemporaryDirectory(prefix="rexrank-publish-") as tmp:
        for space in plans:
            staged = stage(space, Path(tmp), rexrank_requirement)
            try:
                api.create_repo(space.repo_id, repo_type="space", space_sdk="gradio", exist_ok=True,
                                private=space.private, token=token)
                api.upload_folder(repo_id=space.repo_id, folder_path=str(staged), repo_type="space", token=token,
                                  commit_message=f"Publish the rexrank {space.slug} evaluate module")
            except Exception as exc:  # noqa: BLE001 - every Hub failure becomes one message naming the Space
                raise _hub_error(space, exc) from None
            url = f"https://huggingface.co/spaces/{space.repo_id}"
            urls.append(url)
            log(f"published {space.repo_id}: {len(space.files)} files -> {url}")
    return urls


def _hub_error(space: SpacePlan, exc: Exception) -> RexrankError:
    status = getattr(getattr(exc, "response", None), "status_code", None)
    detail = (str(exc).splitlines() or [type(exc).__name__])[0][:300]
    if status in (401, 403):
        return HubAuthError(f"the Hub refused to publish {space.repo_id} ({status}): {detail}. Check that your token "
                            f"(HF_TOKEN or `hf auth login`) has write access to {space.repo_id.split('/')[0]}")
    return HubPublishError(f"publishing {space.repo_id} failed ({type(exc).__name__}{f' {status}' if status else ''}):"
                           f" {detail}")

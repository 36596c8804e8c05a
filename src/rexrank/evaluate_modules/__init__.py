"""The evaluate modules of ``metrics/<slug>/`` and their Spaces: their base class (``metric``), the helpers each
thin module file reads (``citations``, ``common``, ``conventions``), the Gradio app every metric Space runs (``app``)
and publishing them to the Hub (``publish``).

``module_path(slug)`` is where a module's folder is on this machine, for ``evaluate.load(module_path("radcliq"))``.
The folders live once, in the checkout's ``metrics/``; ``hub_modules`` here is a link to it, so an editable install
reads them in place and a built wheel carries them as ``rexrank/evaluate_modules/hub_modules/<slug>/``.
"""

from __future__ import annotations

from pathlib import Path

from rexrank.errors import ConfigError, UnknownNameError

# Each folder is a complete Space: the module, its card, its Gradio app and the Space's requirements.
MODULE_FILES = ("{slug}.py", "README.md", "app.py", "requirements.txt")
# What a folder may hold besides: the Debian packages its Space needs (Hugging Face Spaces install packages.txt with
# apt; METEOR's Java).
OPTIONAL_MODULE_FILES = ("packages.txt",)


def modules_root() -> Path:
    """The folder holding one sub-folder per evaluate module (installed wheel or checkout)."""
    packaged = Path(__file__).resolve().parent / "hub_modules"
    # A checkout without symlink support (git core.symlinks=false) has a text file here instead of the link.
    checkout = Path(__file__).resolve().parents[3] / "metrics"
    for candidate in (packaged, checkout):
        if candidate.is_dir() and _module_folders(candidate):
            return candidate.resolve()
    raise ConfigError(f"the evaluate modules are missing: neither {packaged} nor {checkout} holds metrics/<slug>/"
                      "<slug>.py folders; reinstall rexrank (pip install rexrank-*.whl, or pip install -e . in a "
                      "checkout)")


def _module_folders(root: Path) -> dict[str, Path]:
    return {p.name: p for p in sorted(root.iterdir()) if p.is_dir() and (p / f"{p.name}.py").is_file()}


def module_paths() -> dict[str, Path]:
    """slug -> folder of every evaluate module, sorted by slug (``evaluate.load(str(folder))`` loads it)."""
    return _module_folders(modules_root())


def module_path(slug: str) -> Path:
    """The local folder of the evaluate module ``slug`` ("bleu2", "radcliq", ...), for ``evaluate.load``."""
    folders = module_paths()
    if slug not in folders:
        raise UnknownNameError(f"Unknown evaluate module {slug!r}. Available: {', '.join(folders)}")
    return folders[slug]


__all__ = ["MODULE_FILES", "OPTIONAL_MODULE_FILES", "module_path", "module_paths", "modules_root"]

"""`python -m rexrank.testing.standins OUT_DIR [--size small|real] [--only a,b]`: write every stand-in model.

Each builder lives in the module of its metric family and has the signature
``build(out_dir: Path, size: str, seed: int) -> dict[str, str]`` returning {metric/model key: path}.
Builders are deterministic for a given (size, seed) so goldens computed by a reference package stay valid.

``cached(root, name, size, seed)`` builds a stand-in once per machine (the test suite's ``standins`` fixture; a
family costs ~20 s to build): under ``cache_root()`` (``$REXRANK_STANDIN_CACHE``, default
``$REXRANK_CACHE/standins``, i.e. ``~/.cache/rexrank/standins``; ``off`` builds afresh), keyed by ``cache_key``:
the source of the builder's module and of the rexrank modules it imports, and the versions of the packages that
write the files. A stand-in is built in a folder of its own and published by one atomic step (its manifest linked
into place), so a process never sees half of one; the folder is never moved afterwards, since some layouts hold
absolute paths to their own files (RadGraph's archive names its encoder's folder). Old entries stay until removed
(``rm -r ~/.cache/rexrank/standins``).
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import importlib
import importlib.metadata
import importlib.util
import json
import os
import secrets
import shutil
import stat
import sys
import tempfile
from pathlib import Path

from rexrank.errors import ConfigError

# name -> "module:function". Keys are what `--only` takes.
BUILDERS: dict[str, str] = {
    "bertscore": "rexrank.testing.standin_text:build_bertscore",
    "semb": "rexrank.testing.standin_text:build_chexbert",
    "radgraph": "rexrank.testing.standin_radgraph:build",
    "ratescore": "rexrank.testing.standin_ratescore:build",
    "green": "rexrank.testing.standin_green:build",
    "generate": "rexrank.testing.standin_generate:build",
    "radeval_bertscore": "rexrank.testing.standin_modernbert:build",
    "srrbert": "rexrank.testing.standin_srrbert:build",
    "crimson": "rexrank.testing.standin_gemma3:build",
    "temporal_f1": "rexrank.testing.standin_temporal:build",
}
SIZES = ("small", "real")


def build(out_dir: str | Path, size: str = "small", only: list[str] | None = None, seed: int = 0) -> dict[str, str]:
    if size not in SIZES:
        raise ValueError(f"Unknown size {size!r}. Available: {', '.join(SIZES)}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths: dict[str, str] = {}
    for name in only or list(BUILDERS):
        if name not in BUILDERS:
            raise ValueError(f"Unknown stand-in {name!r}. Available: {', '.join(BUILDERS)}")
        module_name, _, func = BUILDERS[name].partition(":")
        paths.update(getattr(importlib.import_module(module_name), func)(out, size, seed))
    return paths


# -- built once per machine -------------------------------------------------------------------------------------------
CACHE_ENV = "REXRANK_STANDIN_CACHE"
# The packages whose versions decide the files a builder writes (serialisation, tokenizer formats, random draws).
VERSIONED = ("torch", "transformers", "tokenizers", "safetensors", "numpy")


def cache_root() -> Path | None:
    """Where stand-ins are kept between runs, or None when ``$REXRANK_STANDIN_CACHE`` is ``off``."""
    value = os.environ.get(CACHE_ENV)
    if value is not None and value.strip().lower() in ("0", "off", "no", "false"):
        return None
    if value:
        return Path(value).expanduser()
    from rexrank.metrics.weights import cache_dir

    return cache_dir() / "standins"


def _module_file(module: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError):
        return None
    return Path(spec.origin) if spec is not None and spec.origin and spec.origin.endswith(".py") else None


def _imported_modules(path: Path) -> set[str]:
    """Absolute module names a file imports (``from a import b`` gives a.b, which may be a module, and a)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def builder_sources(name: str) -> list[Path]:
    """The files whose text decides what builder ``name`` writes: its module, the modules of its own package that it
    imports (followed), and the other modules of its top-level package that those import (a metric's label list;
    not followed further: their facts are theirs, their imports rarely change what a builder writes)."""
    module = BUILDERS[name].partition(":")[0]
    package, top = module.rpartition(".")[0] + ".", module.partition(".")[0] + "."
    files: dict[str, Path] = {}
    todo = [module]
    while todo:
        current = todo.pop()
        path = _module_file(current)
        if current in files or path is None:
            continue
        files[current] = path
        if current == module or current.startswith(package):
            todo.extend(m for m in _imported_modules(path) if m.startswith(top) and m not in files)
    return sorted(set(files.values()))


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def cache_key(name: str, size: str = "small", seed: int = 0) -> str:
    """sha256 of what decides the stand-in's files: name, size, seed, builder sources, package versions."""
    if name not in BUILDERS:
        raise ValueError(f"Unknown stand-in {name!r}. Available: {', '.join(BUILDERS)}")
    sources = {"/".join(p.parts[-3:]): hashlib.sha256(p.read_bytes()).hexdigest() for p in builder_sources(name)}
    facts = {"name": name, "builder": BUILDERS[name], "size": size, "seed": seed, "sources": sources,
             "versions": {p: _version(p) for p in VERSIONED}, "python": list(sys.version_info[:2])}
    return hashlib.sha256(json.dumps(facts, sort_keys=True).encode()).hexdigest()


def _check_root(root: Path) -> None:
    """The cache holds files that tests load (torch checkpoints among them: pickles), so only its owner may write
    there: create it 0700, refuse a folder of another user or one its group or others can write."""
    root.mkdir(parents=True, exist_ok=True, mode=0o700)
    info = root.stat()
    if hasattr(os, "geteuid") and info.st_uid != os.geteuid():
        raise ConfigError(f"the stand-in cache {root} belongs to another user (uid {info.st_uid}), who could "
                              f"have written what the tests load: set {CACHE_ENV} to a folder of your own (or off)")
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise ConfigError(f"the stand-in cache {root} can be written by others (mode {stat.S_IMODE(info.st_mode):o}),"
                              f" who could change what the tests load: `chmod 700 {root}` if only you wrote there, or "
                              f"set {CACHE_ENV} to another folder (or off)")


def _files(folder: Path) -> dict[str, str]:
    """Every file's sha256: a stand-in changed in place (a test that edits it instead of a copy, a full disk) is
    rebuilt, not used. Reading them costs ~0.1 s per 100 MB, once per session and family."""
    return {p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def _read_manifest(root: Path, manifest: Path, key: str) -> dict[str, str] | None:
    """The published stand-in's paths, or None when there is none or it is not as built (a file missing or changed)."""
    try:
        record = json.loads(manifest.read_text(encoding="utf-8"))
        folder = root / record["dir"]
        if record["key"] != key or Path(record["dir"]).name != record["dir"] or _files(folder) != record["files"]:
            return None
        paths = {k: folder / rel for k, rel in record["paths"].items()}
        return {k: str(p) for k, p in paths.items()} if all(p.exists() for p in paths.values()) else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def cached(root: str | Path, name: str, size: str = "small", seed: int = 0) -> dict[str, str]:
    """``build(..., [name])`` once per ``cache_key``: the paths of the published stand-in, built first if needed.
    Processes building the same key at once each build; the first to publish wins and the others use its copy."""
    root = Path(root)
    _check_root(root)
    key = cache_key(name, size, seed)
    entry = f"{name}-{size}-seed{seed}-{key[:24]}"
    manifest = root / f"{entry}.json"
    found = _read_manifest(root, manifest, key)
    if found is not None:
        return found
    work = Path(tempfile.mkdtemp(prefix=f"{entry}.", dir=root))
    try:
        paths = build(work, size, [name], seed)
        relative = {}
        for k, p in paths.items():
            resolved = Path(p).resolve()
            if not resolved.is_relative_to(work.resolve()):
                raise ValueError(f"stand-in {name!r} wrote {k} outside its folder ({p}): it cannot be cached")
            relative[k] = resolved.relative_to(work.resolve()).as_posix()
        record = {"key": key, "dir": work.name, "paths": relative, "files": _files(work)}
        pending = root / f".{entry}.{secrets.token_hex(8)}.json"
        pending.write_text(json.dumps(record, indent=1), encoding="utf-8")
        try:
            os.link(pending, manifest)  # atomic and exclusive: the first complete build is the published one
        except FileExistsError:
            winner = _read_manifest(root, manifest, key)
            if winner is not None:
                shutil.rmtree(work, ignore_errors=True)
                return winner
            os.replace(pending, manifest)  # the manifest there was not whole: this build replaces it
        except OSError:  # a filesystem without hard links: last complete build wins, atomically all the same
            os.replace(pending, manifest)
        finally:
            pending.unlink(missing_ok=True)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return {k: str(work / rel) for k, rel in relative.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rexrank.testing.standins", description=__doc__)
    parser.add_argument("out_dir")
    parser.add_argument("--size", default="small", choices=SIZES)
    parser.add_argument("--only", default=None, help="comma-separated subset of: " + ", ".join(BUILDERS))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    only = [s.strip() for s in args.only.split(",")] if args.only else None
    print(json.dumps(build(args.out_dir, args.size, only, args.seed), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

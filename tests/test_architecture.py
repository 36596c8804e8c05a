"""The layers are a checked contract: `lint-imports` (pyproject's [tool.importlinter]) passes on the tree and fails
on a tree that breaks a layer or adds a cycle, so the contract cannot silently stop checking anything."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).with_name("lint-imports")


def _lint(src: Path, tmp_path: Path) -> subprocess.CompletedProcess:
    if not LINT.exists():
        pytest.fail("lint-imports is missing from the virtualenv: `make test` installs it (pyproject dev extra)")
    config = tmp_path / "importlinter.toml"
    shutil.copy(REPO / "pyproject.toml", config)
    env = dict(os.environ, PYTHONPATH=str(src))
    return subprocess.run([str(LINT), "--no-cache", str(config)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)


def _copy(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    shutil.copytree(REPO / "src" / "rexrank", src / "rexrank", ignore=shutil.ignore_patterns("__pycache__"))
    return src


def test_the_tree_keeps_every_contract(tmp_path):
    proc = _lint(REPO / "src", tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert "0 broken" in proc.stdout


@pytest.mark.parametrize("module, line, contract", [
    ("metrics/base.py", "import rexrank.evaluation.harness", "Metrics are pure scoring"),
    ("data/catalog.py", "import rexrank.leaderboard", "Stages import only earlier stages"),
    ("leaderboard/__init__.py", "import rexrank.generate", "The leaderboard never runs code under test"),
    ("evaluation/plan.py", "import rexrank.evaluation.harness", "No import cycles"),
])
def test_a_broken_layer_fails_the_check(tmp_path, module, line, contract):
    src = _copy(tmp_path)
    target = src / "rexrank" / module
    target.write_text(target.read_text() + f"\n{line}  # injected by the test\n")
    proc = _lint(src, tmp_path)
    assert proc.returncode != 0
    details = proc.stdout.split("Broken contracts", 1)[-1]
    assert contract in details, proc.stdout[-3000:]

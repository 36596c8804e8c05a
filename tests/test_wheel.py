"""The built wheel carries every evaluate module, and an installed rexrank finds them (module_path).

Once, a pip-installed rexrank had no local module path: metrics/ sat beside the package and never reached the
wheel. This builds the wheel the way `rexrank hub publish-metrics` does (publish.build_wheel: a clean copy of the
checkout, `python -m build --wheel`), checks it with `twine check`, opens it, installs it with pip into a folder
of its own and loads a module from there with evaluate.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from rexrank.evaluate_modules import MODULE_FILES, OPTIONAL_MODULE_FILES, module_paths
from rexrank.evaluate_modules.publish import build_wheel

PACKAGED = "rexrank/evaluate_modules/hub_modules"

_RESOLVE_INSTALLED = """
import json
import rexrank
from rexrank.evaluate_modules import module_path, module_paths
print(json.dumps({"rexrank": rexrank.__file__, "folder": str(module_path("bleu2")), "slugs": sorted(module_paths())}))
"""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    for tool in ("build", "twine"):
        if importlib.util.find_spec(tool) is None:
            pytest.fail(f"{tool} is not installed: pip install build twine (both in rexrank's dev extra)")
    return build_wheel(tmp_path_factory.mktemp("dist"))


@pytest.mark.slow
def test_wheel_passes_twine_check(wheel):
    """The metadata PyPI would render (README as the long description) is valid."""
    proc = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", str(wheel)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "PASSED" in proc.stdout


@pytest.mark.slow
def test_wheel_carries_every_module_folder(wheel):
    """Each metrics/<slug>/ lands in the wheel with its four Space files, byte for byte, and nothing else."""
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        for slug, folder in module_paths().items():
            for pattern in MODULE_FILES:
                name = pattern.format(slug=slug)
                member = f"{PACKAGED}/{slug}/{name}"
                assert member in names, f"{member} missing from {wheel.name}"
                assert archive.read(member) == (folder / name).read_bytes(), member
        packaged = {n for n in names if n.startswith(f"{PACKAGED}/")}
        optional = {f"{PACKAGED}/{slug}/{name}" for slug, folder in module_paths().items()
                    for name in OPTIONAL_MODULE_FILES if (folder / name).is_file()}
        assert optional <= names and any("meteor/packages.txt" in n for n in optional)
        assert len(packaged) == len(module_paths()) * len(MODULE_FILES) + len(optional), sorted(packaged)
        assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)


@pytest.mark.slow
def test_installed_wheel_resolves_module_paths(wheel, tmp_path):
    """pip-installed (into a folder of its own, --no-deps), rexrank's module_path points inside that install, and
    evaluate.load of the installed folder scores."""
    import evaluate

    target = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
                           "--target", str(target), str(wheel)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    # PYTHONPATH comes before the editable install's .pth entry: this interpreter imports the installed copy
    # (module_path needs nothing beyond rexrank itself, so no dependency is installed there).
    proc = subprocess.run([sys.executable, "-c", _RESOLVE_INSTALLED], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(target)}, cwd=tmp_path, timeout=120)
    assert proc.returncode == 0, proc.stderr[-4000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert Path(out["rexrank"]).is_relative_to(target)
    installed = (target / PACKAGED / "bleu2").resolve()
    assert Path(out["folder"]) == installed
    assert out["slugs"] == sorted(module_paths())
    # The installed folder is a complete evaluate module (loaded here, where rexrank's dependencies are).
    module = evaluate.load(str(installed), cache_dir=str(tmp_path / "cache"))
    result = module.compute(predictions=["Heart size is normal."], references=["Heart size is normal."])
    assert result["bleu2"] == 1.0 and result["bleu"] == 1.0

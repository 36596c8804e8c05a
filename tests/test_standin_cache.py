"""Stand-ins built once per machine (issue 51 point 3): ``rexrank.testing.standins.cached`` keeps each family under
a key of its builder's code and package versions, publishes it whole or not at all, and refuses a cache folder others
can write. A tiny builder package written here stands in for the real ones (a real family costs seconds to build)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rexrank.errors import ConfigError
from rexrank.testing import standins

BUILDER = '''
import os
import time
from pathlib import Path

from fakestandin.helper import WEIGHT


def build(out, size="small", seed=0):
    folder = Path(out) / "model"
    folder.mkdir(parents=True)
    (folder / "weights.txt").write_text(f"{WEIGHT} {size} {seed}")
    (Path(out) / "archive.json").write_text(f'{{"encoder": "{folder.resolve()}"}}')  # an absolute path inside
    with open(os.environ["FAKE_STANDIN_LOG"], "a") as log:
        log.write("built\\n")
    time.sleep(float(os.environ.get("FAKE_STANDIN_SLEEP", "0")))
    return {"fake": str(folder), "fake_archive": str(Path(out) / "archive.json")}
'''


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """A builder package ``fakestandin`` (builder + helper) registered as the stand-in "fake"; returns its folder."""
    package = tmp_path / "src" / "fakestandin"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "builder.py").write_text(BUILDER)
    (package / "helper.py").write_text("WEIGHT = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    monkeypatch.setitem(standins.BUILDERS, "fake", "fakestandin.builder:build")
    monkeypatch.setenv("FAKE_STANDIN_LOG", str(tmp_path / "builds.log"))
    _forget_fake()  # each test's package is its own (find_spec would follow an earlier test's package)
    yield package
    _forget_fake()


def _forget_fake() -> None:
    import importlib

    for name in [n for n in sys.modules if n == "fakestandin" or n.startswith("fakestandin.")]:
        del sys.modules[name]
    importlib.invalidate_caches()


def _builds(tmp_path) -> int:
    log = tmp_path / "builds.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


def test_the_key_follows_the_builders_code_and_versions(fake, monkeypatch):
    """A change to the builder, to a module of its package that it imports, to the size or seed, or to a package
    version that writes the files gives another key; nothing else does."""
    key = standins.cache_key("fake")
    assert standins.cache_key("fake") == key and len(key) == 64
    assert {p.name for p in standins.builder_sources("fake")} == {"builder.py", "helper.py"}
    (fake / "builder.py").write_text(BUILDER + "# another line\n")
    changed = standins.cache_key("fake")
    assert changed != key
    (fake / "helper.py").write_text("WEIGHT = 2\n")
    assert standins.cache_key("fake") != changed
    assert len({standins.cache_key("fake", "small", 0), standins.cache_key("fake", "real", 0),
                standins.cache_key("fake", "small", 1)}) == 3
    before = standins.cache_key("fake")
    real_version = standins._version
    monkeypatch.setattr(standins, "_version", lambda p: "0.0-other" if p == "transformers" else real_version(p))
    assert standins.cache_key("fake") != before


def test_the_real_builders_key_their_own_sources():
    """Each real family's key covers its builder module and the rexrank modules it reads facts from."""
    sources = {p.name for p in standins.builder_sources("srrbert")}
    assert {"standin_srrbert.py", "standin_text.py", "tokenizers_offline.py", "srrbert_labels.py"} <= sources
    assert "standins.py" not in sources  # the cache's own code does not change what a builder writes


def test_built_once_then_read(fake, tmp_path):
    root = tmp_path / "cache"
    first = standins.cached(root, "fake")
    second = standins.cached(root, "fake")
    assert first == second and _builds(tmp_path) == 1
    assert Path(first["fake"], "weights.txt").read_text() == "1 small 0"
    encoder = json.loads(Path(first["fake_archive"]).read_text())["encoder"]
    assert encoder == str(Path(first["fake"]).resolve())  # the folder was never moved: its absolute paths hold
    assert os.stat(root).st_mode & 0o777 == 0o700
    (fake / "helper.py").write_text("WEIGHT = 3\n")  # new code (a new process would import it): built again
    _forget_fake()
    third = standins.cached(root, "fake")
    assert _builds(tmp_path) == 2 and Path(third["fake"], "weights.txt").read_text() == "3 small 0"
    assert Path(first["fake"], "weights.txt").read_text() == "1 small 0"  # the old one untouched (another checkout's)


def test_a_half_built_or_changed_stand_in_is_never_used(fake, tmp_path):
    """A build that died leaves a folder but no manifest: not used. A published stand-in whose file was changed in
    place (a test that edited it instead of a copy) is rebuilt, not used."""
    root = tmp_path / "cache"
    root.mkdir(mode=0o700)
    entry = f"fake-small-seed0-{standins.cache_key('fake')[:24]}"
    (root / f"{entry}.dead" / "model").mkdir(parents=True)  # what a killed build leaves
    paths = standins.cached(root, "fake")
    assert ".dead" not in paths["fake"] and _builds(tmp_path) == 1
    Path(paths["fake"], "weights.txt").write_text("9 small 0")  # same size, other content
    again = standins.cached(root, "fake")
    assert _builds(tmp_path) == 2 and Path(again["fake"], "weights.txt").read_text() == "1 small 0"


def test_a_cache_folder_others_can_write_is_refused(fake, tmp_path):
    root = tmp_path / "cache"
    root.mkdir()
    os.chmod(root, 0o777)
    with pytest.raises(ConfigError, match=r"can be written by others \(mode 777\).*chmod 700") as info:
        standins.cached(root, "fake")
    assert "\n" not in str(info.value) and _builds(tmp_path) == 0


def test_the_cache_can_be_turned_off_or_moved(monkeypatch, tmp_path):
    monkeypatch.setenv(standins.CACHE_ENV, "off")
    assert standins.cache_root() is None
    monkeypatch.setenv(standins.CACHE_ENV, str(tmp_path / "elsewhere"))
    assert standins.cache_root() == tmp_path / "elsewhere"
    monkeypatch.delenv(standins.CACHE_ENV)
    monkeypatch.setenv("REXRANK_CACHE", str(tmp_path / "rexrank"))
    assert standins.cache_root() == tmp_path / "rexrank" / "standins"  # rexrank's cache folder (metrics.weights)


def test_processes_building_at_once_agree_on_one_whole_stand_in(fake, tmp_path):
    """Two processes ask for the same missing stand-in together: both build (the first to publish wins), both get
    the published folder, whole, and the loser's folder is removed."""
    root = tmp_path / "cache"
    script = textwrap.dedent(f"""
        import json, sys
        sys.path.insert(0, {str(tmp_path / "src")!r})
        from rexrank.testing import standins
        standins.BUILDERS["fake"] = "fakestandin.builder:build"
        print(json.dumps(standins.cached({str(root)!r}, "fake")))
    """)
    env = {**os.environ, "FAKE_STANDIN_SLEEP": "0.5"}
    procs = [subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=env)
             for _ in range(2)]
    results = [json.loads(p.communicate(timeout=60)[0]) for p in procs]
    assert all(p.returncode == 0 for p in procs)
    assert results[0] == results[1] and Path(results[0]["fake"], "weights.txt").read_text() == "1 small 0"
    assert _builds(tmp_path) == 2
    folders = [p for p in root.iterdir() if p.is_dir()]
    assert len(folders) == 1 and str(folders[0]) in results[0]["fake"]

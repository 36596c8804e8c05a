"""run_reference's worker (tests/reference/worker.py): a test module's runs of one script share one .venv-ref
process, each run sees what a process of its own would, and a failed run is its own failure, not the worker's."""

from __future__ import annotations

import pytest

PROBE = """import json, os, sys
payload = json.load(sys.stdin)
print("a line before the result")
print(json.dumps({"pid": os.getpid(), "cwd": os.getcwd(), "probe": os.environ.get("PROBE"), "path": sys.path,
                  "argv": sys.argv, "x": payload["x"]}))
os.chdir("/")
os.environ["PROBE"] = "left behind"
sys.path.insert(0, "/nowhere")
"""


def test_runs_of_one_script_share_a_process_and_leave_nothing_behind(run_reference, tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    first, second = run_reference(str(probe), {"x": 1}), run_reference(str(probe), {"x": 2})
    assert first["pid"] == second["pid"] and (first["x"], second["x"]) == (1, 2)
    assert second["cwd"] == first["cwd"] != "/" and second["probe"] is None and "/nowhere" not in second["path"]
    assert second["argv"] == [str(probe)]
    failing = tmp_path / "failing.py"
    failing.write_text("import sys\nsys.stdin.read()\nraise SystemExit('stopped on purpose')\n")
    with pytest.raises(AssertionError, match="(?s)reference script .*failing.py failed.*stopped on purpose"):
        run_reference(str(failing), {})
    assert run_reference(str(probe), {"x": 3})["pid"] == first["pid"]  # the worker outlives a failed run

"""bench/gpu.py, the GPU check of issue 25 point 5, runs end to end: here on CPU with --smoke (tiny configs, six
reports), so the script a lent device runs is the script the suite runs (docs/gpu.md)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_smoke_prints_both_sides_of_both_checks(tmp_path, ref_python):
    rows_file = tmp_path / "rows.json"
    done = subprocess.run([sys.executable, str(REPO / "bench" / "gpu.py"), "--smoke", "--device", "cpu",
                           "--reference-python", str(ref_python), "--json", str(rows_file)],
                          capture_output=True, text=True, timeout=900,
                          env={**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    side = r"\d+ {unit} in [\d.]+ s = [\d.]+ {unit}/s.*peak memory [\d.]+ (MiB|GiB|KiB)"
    for name, unit in (("reference", "reports"), ("rexrank", "reports"), ("official settings", "pairs"),
                       ("rexrank batched", "pairs")):
        assert re.search(rf"^  {name} +{side.format(unit=unit)}", out, re.MULTILINE), out
    assert "radgraph 0.1.18 on transformers 4." in out and out.count("speed-up") == 2, out
    rows = json.loads(rows_file.read_text())
    assert {(r["check"], r["side"]) for r in rows} == {("radgraph", "reference"), ("radgraph", "rexrank"),
                                                      ("green", "official settings"), ("green", "rexrank batched")}
    radgraph = {r["side"]: r for r in rows if r["check"] == "radgraph"}
    # Same archive, same reports: both sides find entities in them (random weights, but the same network).
    assert radgraph["reference"]["items"] == radgraph["rexrank"]["items"] == 6
    assert all(r["seconds"] > 0 and r["peak_bytes"] > 0 for r in rows)

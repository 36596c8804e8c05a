"""Benchmark: prepare the 2,347-study ReXrank MIMIC-CXR test set from a synthetic tree in the real layout.

Each measured step runs in a fresh process (what a user's second `rexrank data prepare` is), reporting wall time
and that process's peak resident memory. The second prepare must hit the Arrow cache: the child counts calls of
the record builder, and the benchmark fails if a warm prepare rebuilt anything.

    .venv/bin/python bench/prepare_mimic.py [--repeats 3] [--out bench/results/prepare_mimic.md]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from rexrank.testing.memory import peak_rss_mib


def child(root: str, cache: str, track: str | None) -> None:
    start = time.perf_counter()
    from rexrank.data.builders import mimic_cxr

    calls = {"n": 0}
    original = mimic_cxr.build_records

    def counted(*args, **kwargs):
        calls["n"] += 1
        return original(*args, **kwargs)

    mimic_cxr.build_records = counted
    import_done = time.perf_counter()
    from rexrank import data

    dataset = data.load("mimic_cxr", root, track=track, cache_dir=cache)
    elapsed = time.perf_counter() - start
    print(json.dumps({"seconds": elapsed, "import_seconds": import_done - start, "peak_rss_mib": peak_rss_mib(),
                      "rebuilt": calls["n"] > 0, "rows": len(dataset)}))


def run_child(root: Path, cache: Path, track: str | None = None) -> dict:
    args = [sys.executable, __file__, "--child", str(root), str(cache)] + ([track] if track else [])
    env = dict(os.environ, HF_DATASETS_DISABLE_PROGRESS_BARS="1")
    proc = subprocess.run(args, capture_output=True, text=True, env=env, check=True)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "prepare_mimic.md"))
    args = parser.parse_args()
    from rexrank.data import synthetic

    rows = {"tree": [], "cold": [], "warm": [], "warm+track": []}
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            start = time.perf_counter()
            # Real-size CSVs: 377,110 images in MIMIC-CXR-JPG, 3,858 of them in the ReXrank test studies.
            synthetic.write_mimic_cxr_tree(tmp / "mimic", other_rows=377_110 - 3_858)
            rows["tree"].append({"seconds": time.perf_counter() - start})
            cold = run_child(tmp / "mimic", tmp / "cache")
            warm = run_child(tmp / "mimic", tmp / "cache")
            tracked = run_child(tmp / "mimic", tmp / "cache", "findings")
            assert cold["rebuilt"] and cold["rows"] == 2347, cold
            assert not warm["rebuilt"] and not tracked["rebuilt"], (warm, tracked)
            rows["cold"].append(cold)
            rows["warm"].append(warm)
            rows["warm+track"].append(tracked)
    med = {k: {m: statistics.median(r[m] for r in v) for m in v[0] if m not in ("rebuilt", "rows")}
           for k, v in rows.items()}
    lines = [
        "# Preparing the ReXrank MIMIC-CXR test set (2,347 studies, synthetic tree)\n\nProduced by `bench/prepare_mimic.py`.",
        "",
        f"Median of {args.repeats} runs; each prepare in a fresh process (`rexrank.data.load('mimic_cxr', ...)`).",
        "Machine: 2 shared CPU cores (other jobs running), CPython "
        f"{sys.version.split()[0]}; tree = 2,347 reports + 3,858 hard-linked 4x4 JPEGs "
        "+ real-size gzip split/metadata CSVs (377,110 rows each).",
        "",
        "| step | wall s | of which imports s | peak RSS MiB | records rebuilt |",
        "|---|---|---|---|---|",
        f"| write synthetic tree | {med['tree']['seconds']:.2f} | | | |",
    ]
    for key, label in (("cold", "first prepare (cold cache)"), ("warm", "second prepare (same copy)"),
                       ("warm+track", "second prepare + findings track")):
        m = med[key]
        lines.append(f"| {label} | {m['seconds']:.2f} | {m['import_seconds']:.2f} | {m['peak_rss_mib']:.0f} | "
                     f"{'yes' if key == 'cold' else 'no (cache hit)'} |")
    ratio = med["cold"]["seconds"] / med["warm"]["seconds"]
    lines += ["", f"Cold / warm wall-time ratio: {ratio:.1f}x. The cache key is the builder version, the shipped "
              "manifest, the data directory and the size+mtime of the metadata/split CSVs and every report file, so "
              "an edited report triggers a rebuild (tests/test_data_builders.py checks both).",
              "Images are referenced by path, never read or copied, so image size does not change these numbers "
              "(existence is checked with one stat per image).",
              "History: reading the two CSVs whole (pandas, 4 string columns x 377,110 rows) peaked at 389 MiB cold; "
              "reading them in 50,000-row chunks and keeping only the manifest's DICOMs brought that to the figure "
              "above. Warm peaks are the imports (datasets, pyarrow, pandas).",
              "Wall times on this shared machine vary by about 2x between runs; the cache-hit check does not."]
    Path(args.out).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        child(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) > 4 else None)
    else:
        sys.exit(main())

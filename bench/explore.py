#!/usr/bin/env python
"""`rexrank explore` at PSB scale (issue 53): 10,000 studies x 2 runs open, sort, filter and page in under a second.

Synthetic runs (no model): 10,000 references built from IU-Xray's test findings (study i: report i mod 590, with
its views), two predictions files (another study's findings, and a shortened one), and for each run a
``per_study.parquet`` holding the digests of those texts and four metrics' values (BLEU-2, RadGraph, SembScore,
RaTEScore columns; random but fixed) with ``ref_normal``, plus the results.json that names the files. Timed, each
the median of ``--repeats`` (wall seconds, with CPU seconds beside):

- open: ``explore.data.load`` (both parquet files, both predictions files and the references read and every text's
  digest checked) plus the app built;
- the first list page (file order), a sort by one run's metric, a sort by the difference of the two runs, a
  subgroup filter with a sort, the 150th page of a sorted view (each sort and filter cold: a fresh ``Orders``);
- a study page (BLEU's n-grams; the model-backed views say they cannot be built here, which is what they cost
  without weights).

Also the sizes of what per_study.parquet is at this scale, for the "stored or recomputed" choice (docs/explore.md).

Usage: .venv/bin/python bench/explore.py [--n 10000] [--repeats 5]
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("REXRANK_PROGRESS", "0")

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
IU_TEST = REPO.parent / "shared" / "data" / "iu_xray" / "ReXRank_IUXray_test.json"
METRICS = ("bleu2", "radgraph", "semb", "ratescore")


def build(root: Path, n: int) -> list[Path]:
    import pandas as pd

    from rexrank.metrics import REGISTRY
    from rexrank.metrics.base import text_key

    source = json.loads(IU_TEST.read_text())
    base = [v for v in source.values() if v.get("section_findings")]
    ids = [f"S{i:06d}" for i in range(n)]
    refs = {sid: {"section_findings": base[i % len(base)]["section_findings"],
                  "frontal_lateral": base[i % len(base)].get("frontal_lateral")} for i, sid in enumerate(ids)}
    (root / "refs.json").write_text(json.dumps(refs))
    rng = np.random.default_rng(0)
    runs = []
    for k, name in enumerate(("model_a", "model_b")):
        hyps = {sid: (base[(i + 1) % len(base)]["section_findings"] if k == 0
                      else refs[sid]["section_findings"][: 40 + i % 80]) for i, sid in enumerate(ids)}
        (root / f"{name}.json").write_text(json.dumps(hyps))
        frame = pd.DataFrame({"study_id": ids, "hyp_sha256": [text_key(hyps[s]) for s in ids],
                              "ref_sha256": [text_key(refs[s]["section_findings"]) for s in ids]})
        for metric in METRICS:
            frame[REGISTRY.spec(metric).column] = rng.uniform(0, 1, n)
        frame["ref_normal"] = rng.uniform(0, 1, n) < 0.4
        out = root / name
        out.mkdir()
        frame.to_parquet(out / "per_study.parquet")
        results = {"model": name, "dataset": "iu_xray", "split": "test", "track": "findings", "metrics": {},
                   "fingerprints": {}, "inputs": {"predictions": str(root / f"{name}.json"),
                                                  "references": str(root / "refs.json")}}
        (out / "results.json").write_text(json.dumps(results))
        runs.append(out)
    return runs


def _timed(action, repeats: int) -> tuple[float, float]:
    walls, cpus = [], []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        action()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
    return statistics.median(walls), statistics.median(cpus)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[1])
    parser.add_argument("--n", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    from starlette.testclient import TestClient

    from rexrank.explore import pages
    from rexrank.explore.data import load
    from rexrank.explore.detail import Details
    from rexrank.explore.server import explore_app
    from rexrank.explore.table import Orders, View

    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        runs = build(root, args.n)
        rows = []
        sizes = {p.parent.name: p.stat().st_size for p in root.glob("*/per_study.parquet")}

        def open_runs():
            explorer = load(runs)
            explore_app(explorer)
            return explorer

        rows.append(("open (2 runs read, every text's digest checked, app built)", *_timed(open_runs, args.repeats)))
        explorer = load(runs)
        client = TestClient(explore_app(explorer, Details(explorer, cache_dir=root / "no-cache")))
        views = {
            "first list page (file order, 50 rows)": View(),
            "sort by model_a's RadGraph": View(sort="radgraph@0"),
            "sort by RadGraph, model_a - model_b": View(sort="radgraph@0-1", desc=False),
            "filter abnormal + long, sort by the difference": View(sort="semb@0-1",
                                                                   filters=(("normal", "abnormal"),
                                                                            ("length", "long"))),
            "page 150 of a sorted view": View(sort="bleu2@1", page=150),
        }
        for label, view in views.items():
            def render(view=view):
                pages.list_page(explorer, Orders(explorer), view, [])  # a fresh Orders: the sort is cold
            rows.append((label, *_timed(render, args.repeats)))
        http = "/?sort=radgraph%400-1&dir=asc&per=50&page=3"
        rows.append(("the same over HTTP (TestClient, gzip off)", *_timed(lambda: client.get(http), args.repeats)))
        sid = explorer.study_ids[1234]
        client.get("/study", params={"id": sid})  # the model-backed views try their builds once
        rows.append(("study page (warm: BLEU n-grams, notes for models not given)",
                     *_timed(lambda: client.get("/study", params={"id": sid, "sort": "bleu2@0"}), args.repeats)))
    print(f"{args.n:,} studies x 2 runs, {len(METRICS)} metrics; Python {sys.version.split()[0]}; medians of "
          f"{args.repeats}\n")
    print("| step | wall s | CPU s |\n|---|---:|---:|")
    for label, wall, cpu in rows:
        print(f"| {label} | {wall:.3f} | {cpu:.3f} |")
    print("\nper_study.parquet: " + ", ".join(f"{k} {v / 1e6:.2f} MB" for k, v in sorted(sizes.items())))


if __name__ == "__main__":
    main()

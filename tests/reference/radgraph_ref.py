"""Run radgraph 0.1.18 (reference venv) on a stand-in or real archive.

stdin JSON: {"archive": dir, "model_type": "radgraph", "reports": [...], "pairs": {"hyps": [...], "refs": [...]},
             "threads": int|null, "timing": bool}
stdout (last line) JSON: {"annotations": [annotation per report, or {"error": "..."}],
                          "rewards": {"simple": [...], "partial": [...], "complete": [...]} (if pairs given),
                          "seconds": wall time of the annotation loop, "peak_rss_mb": ...}
The archive folder is linked as <tmp>/<model_type> because RadGraph(model_cache_dir=D) reads D/<model_type>/.
Each report is annotated by its own RadGraph call (batch 1, as the package always runs), so one failing report
(e.g. whitespace only) is reported instead of aborting the run.
"""

import contextlib
import io
import json
import os
import resource
import sys
import tempfile
import time
import warnings


def main():
    payload = json.load(sys.stdin)
    if payload.get("threads"):
        import torch

        torch.set_num_threads(int(payload["threads"]))
    warnings.simplefilter("ignore")
    from radgraph import F1RadGraph, RadGraph

    model_type = payload.get("model_type", "radgraph")
    with tempfile.TemporaryDirectory() as tmp:
        os.symlink(os.path.abspath(payload["archive"]), os.path.join(tmp, model_type))
        with contextlib.redirect_stdout(io.StringIO()):
            radgraph = RadGraph(model_type=model_type, model_cache_dir=tmp, cuda=-1)
        annotations = []
        start = time.perf_counter()
        for report in payload.get("reports", []):
            try:
                with contextlib.redirect_stdout(io.StringIO()):
                    out = radgraph([report])["0"]
                annotations.append({"text": out["text"], "entities": out["entities"]})
            except Exception as exc:  # noqa: BLE001 - recorded, compared by the test
                annotations.append({"error": f"{type(exc).__name__}: {exc}"[:300]})
        seconds = time.perf_counter() - start
        result = {"annotations": annotations, "seconds": seconds}
        pairs = payload.get("pairs")
        if pairs:
            scorer = F1RadGraph(reward_level="all", model_type=model_type, model_cache_dir=tmp, cuda=-1)
            scorer.radgraph = radgraph  # same loaded model; F1RadGraph would otherwise load a second copy
            with contextlib.redirect_stdout(io.StringIO()):
                _, rewards, _, _ = scorer(refs=pairs["refs"], hyps=pairs["hyps"])
            result["rewards"] = {"simple": rewards[0], "partial": rewards[1], "complete": rewards[2]}
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(result))


if __name__ == "__main__":
    main()

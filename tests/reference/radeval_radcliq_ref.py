"""radeval 2.2.1's RadGraph-RadCliQ column and RadCliQ-v1 composite, on features given from outside.

radeval ships both as code independent of rexrank and of CXR-Report-Metric's pickles:
- ``radeval.metrics.radgraph_radcliq.RadGraphRadCliQ.forward``: per pair (entity F1 + relation F1) / 2 from two
  RadGraph outputs ({"0": annotation, ...}); its ``_radgraph`` is given the annotations passed in (the model run is
  not what is compared, the formula on the same annotations is);
- ``radeval.metrics.RadCliQv1.radcliq.CompositeMetric.predict``: its own StandardScaler and coefficients, on the
  feature table passed in (``_compute_sub_metrics`` returns it; the models its constructor would load are not built).

radeval's vendored RadGraph (``radeval.metrics.radgraph``) does not import in 2.2.1 (it imports ``RadEval``, a
package name that does not exist); neither code path above calls it, so a placeholder module stands in for it.

stdin: {"pairs": [[hyp_annotation, ref_annotation], ...],   (annotations as rexrank/radgraph write them; optional)
        "features": [[radgraph, bertscore, semb_score, bleu_score], ...]}   (optional)
stdout (last line): {"versions": {"radeval": str}, "radgraph_radcliq": [...] (with pairs),
                     "radcliq_v1": [...], "inverse_mean": float (with features)}
"""

import contextlib
import io
import json
import sys
import types
from importlib.metadata import version


def main():
    payload = json.loads(sys.stdin.read())
    placeholder = types.ModuleType("radeval.metrics.radgraph")
    placeholder.RadGraph = placeholder.F1RadGraph = None
    sys.modules["radeval.metrics.radgraph"] = placeholder
    with contextlib.redirect_stdout(io.StringIO()):  # nltk's download notices
        from radeval.metrics.radgraph_radcliq.radgraph_radcliq import RadGraphRadCliQ
        from radeval.metrics.RadCliQv1 import radcliq

    result = {"versions": {"radeval": version("radeval")}}
    pairs = payload.get("pairs") or []
    if pairs:
        result["radgraph_radcliq"] = radgraph_column(RadGraphRadCliQ, pairs)
    features = payload.get("features") or []
    if features:
        result["radcliq_v1"], result["inverse_mean"] = composite_v1(radcliq, features)
    print(json.dumps(result))


def radgraph_column(RadGraphRadCliQ, pairs):
    hyps = [f"hyp {i}" for i in range(len(pairs))]
    refs = [f"ref {i}" for i in range(len(pairs))]
    annotations = {**{h: p[0] for h, p in zip(hyps, pairs)}, **{r: p[1] for r, p in zip(refs, pairs)}}
    column = RadGraphRadCliQ.__new__(RadGraphRadCliQ)
    column._radgraph = lambda texts: {str(i): annotations[t] for i, t in enumerate(texts)}
    _, per_pair = column.forward(hyps=hyps, refs=refs)
    return [float(x) for x in per_pair]


def composite_v1(radcliq, features):
    import numpy as np

    for name in ("RadGraph", "F1CheXbert", "Bleu"):  # models the constructor would load: not needed here
        setattr(radcliq, name, lambda *args, **kwargs: None)
    composite = radcliq.CompositeMetric()
    composite._compute_sub_metrics = lambda refs, hyps: {
        col: np.array([row[i] for row in features], dtype=np.float64) for i, col in enumerate(composite.cols)}
    names = [str(i) for i in range(len(features))]
    inverse_mean, scores = composite.predict(names, names)
    return [float(x) for x in scores], float(inverse_mean)


if __name__ == "__main__":
    main()

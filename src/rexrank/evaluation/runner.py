"""The scoring core shared by ``rexrank.score`` (in memory) and ``rexrank score`` (cached, chunked, sharded).

Planning (which base metrics to run, which composites to combine) is ``rexrank.evaluation.plan``. Each base metric
scores every distinct (hypothesis, reference) pair once; finished chunks go to the pair cache as they complete,
so a killed run loses at most the chunk in flight. Metrics keep their per-text artefacts in the same cache
(``Metric.use_text_cache``), which is how a second model reuses every reference-side result.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from rexrank import parallel
from rexrank.evaluation.plan import metric_config
from rexrank.metrics import REGISTRY, get
from rexrank.metrics.base import Metric, text_keys
from rexrank.progress import enabled as progress_enabled, switched as progress_switched, task as progress_task

if TYPE_CHECKING:
    import pandas as pd

log = logging.getLogger("rexrank.evaluation")

# Pairs per chunk when the caller does not say: big enough to keep model batches full, small enough that a
# killed run loses little.
DEFAULT_CHUNK_PAIRS = 256
# Prefix of the reference-side CheXbert label columns in the per-study table.
LABEL_PREFIX = "ref_chexbert_"


@dataclass
class ScoredPairs:
    """Per-pair values of every base metric (and its detail columns), aligned with the input pairs."""

    columns: dict[str, np.ndarray]  # spec.column -> values
    details: dict[str, list[Any]]  # extra per-pair columns (GREEN error counts, ...)
    info: dict[str, dict[str, Any]]  # registry name -> {spec, config, fingerprint}
    values_by_name: dict[str, np.ndarray]  # registry name -> values
    labels: pd.DataFrame | None = None  # reference CheXbert labels (when semb ran and exposes labels)
    stats: dict[str, dict[str, int]] = field(default_factory=dict)  # name -> {pairs, cached, computed}


def _spec_dict(spec) -> dict[str, Any]:
    return {"name": spec.name, "column": spec.column, "higher_is_better": spec.higher_is_better,
            "version": spec.version, "leaderboard_column": spec.leaderboard_column}


def describe(metric: Metric) -> dict[str, Any]:
    return {"spec": _spec_dict(metric.spec), "config": metric.config(), "fingerprint": metric.fingerprint}


def build_metrics(base: Sequence[str], *, model_paths: Mapping[str, Any] | None = None,
                  metric_configs: Mapping[str, Mapping[str, Any]] | None = None, device: str | None = None,
                  batch_size: int | None = None) -> dict[str, Metric]:
    """Build every base metric, locating all their weights first: a run with several missing models reports them all
    at once (``report_all_missing``), before any model loads."""
    from rexrank.errors import RexrankError
    from rexrank.metrics.weights import report_all_missing

    shared = {"device": device, "batch_size": batch_size}
    built: dict[str, Metric] = {}
    with report_all_missing() as missing:
        for name in base:
            before = len(missing)
            try:
                metric = get(name, **metric_config(name, model_paths=model_paths, metric_configs=metric_configs,
                                                   shared=shared))
                metric.locate_weights()
            except RexrankError:
                if len(missing) == before:
                    raise
                continue  # it failed on a missing model's placeholder: that model is already reported
            built[name] = metric
    return built


def _plain(value: Any) -> Any:
    # numpy scalars -> Python scalars: smaller cache rows, and identical values whether fresh or from the cache.
    return value.item() if isinstance(value, np.generic) else value


def _rows(metric: Metric, hyps: list[str], refs: list[str]) -> list[dict[str, Any]]:
    """score_details as row dicts: the metric's value under its column name, then any detail columns."""
    frame = metric.score_details(hyps, refs)
    if len(frame) != len(hyps):
        raise RuntimeError(f"{metric.spec.name}.score_details returned {len(frame)} rows for {len(hyps)} pairs")
    values = frame.iloc[:, 0].to_numpy(dtype=np.float64)
    extra = frame.iloc[:, 1:]
    rows = [{metric.spec.column: float(v)} for v in values]
    for name in extra.columns:
        for row, value in zip(rows, extra[name].tolist()):
            row[str(name)] = _plain(value)
    return rows


def _column(values: list[Any]):
    """A detail column from cached Python values: float64 for floats, else pandas' nullable inference (Int64,
    boolean, string), so fresh and cached runs give the same dtypes."""
    import pandas as pd  # here, not at the top: a run served whole from the cache never builds a frame

    present = [v for v in values if v is not None and v is not pd.NA and not (isinstance(v, float) and np.isnan(v))]
    if present and all(isinstance(v, float) for v in present):
        return np.array([np.nan if v is None or v is pd.NA else v for v in values], dtype=np.float64)
    try:
        return pd.array([None if v is pd.NA else v for v in values])
    except (TypeError, ValueError):
        return pd.array(values, dtype=object)


def score_pairs(hyps: Sequence[str], refs: Sequence[str], metrics: Mapping[str, Metric], *, cache=None,
                chunk_size: int | None = None, progress: bool | None = False, reference_labels: bool = False,
                label: str = "", corpus: Sequence[str] | None = None,
                keys: Sequence[tuple[str, str]] | None = None) -> ScoredPairs:
    """Score aligned pairs with already built base metrics.

    ``cache``: a ScoreCache/MemoryPairCache (pair rows + per-text artefacts), or None for a throwaway in-memory one.
    ``chunk_size``: pairs per call to a metric (None: all missing pairs in one call, as ``rexrank.score`` does).
    ``progress``: show each metric's progress (None: rexrank.progress's default), moved by the metric's batches
    within a chunk; only the main process of a launched job shows it.
    ``corpus``: the whole run's references, one per study, when these pairs are one process's shard of it (CIDEr-D
    counts document frequencies over the whole run, ``Metric.use_corpus``); None: ``refs`` is the whole run.
    ``keys``: each pair's (hyp, ref) ``text_key``s when the caller has them (``Inputs.hyp_keys``/``ref_keys``), so a
    run hashes each text once; None: computed here.
    """
    from rexrank.evaluation.cache import MemoryPairCache

    store = cache if cache is not None else MemoryPairCache()
    hyps, refs = list(hyps), list(refs)
    if keys is None:
        keys = list(zip(text_keys(hyps), text_keys(refs)))
    elif len(keys) != len(hyps) or len(hyps) != len(refs):
        raise ValueError(f"score_pairs: {len(keys)} keys for {len(hyps)} hypotheses and {len(refs)} references")
    else:
        keys = list(keys)
    unique: dict[tuple[str, str], tuple[str, str]] = {}
    for key, hyp, ref in zip(keys, hyps, refs):
        unique.setdefault(key, (hyp, ref))
    columns: dict[str, np.ndarray] = {}
    details: dict[str, list[Any]] = {}
    info: dict[str, dict[str, Any]] = {}
    by_name: dict[str, np.ndarray] = {}
    stats: dict[str, dict[str, int]] = {}
    labels = None
    shown = progress_enabled(progress) and parallel.context().is_main
    # What the metrics show themselves (a line before a model load) follows the run's switch and rank.
    with progress_switched(shown):
        for name, metric in metrics.items():
            metric.use_text_cache(store)
            # Before the fingerprint: a corpus-dependent metric's fingerprint names its corpus.
            metric.use_corpus(refs if corpus is None else list(corpus))
            fingerprint = metric.fingerprint
            found = store.get_pairs(fingerprint, list(unique)) if unique else {}
            missing = [k for k in unique if k not in found]
            stats[name] = {"pairs": len(unique), "cached": len(unique) - len(missing), "computed": len(missing)}
            if missing:
                log.info("%s: %d distinct pairs, %d from the cache, %d to compute", name, len(unique),
                         len(unique) - len(missing), len(missing))
            step = chunk_size or len(missing) or 1
            with progress_task(len(missing), f"{name}{label}", unit="pair", enabled=shown) as task:
                for start in range(0, len(missing), step):
                    chunk = missing[start : start + step]
                    if shown:
                        metric.progress_hook = task.span(len(chunk))
                    try:
                        rows = _rows(metric, [unique[k][0] for k in chunk], [unique[k][1] for k in chunk])
                    finally:
                        metric.progress_hook = None
                    new = dict(zip(chunk, rows))
                    store.put_pairs(fingerprint, new)  # committed: a restart will not compute these again
                    found.update(new)
                    task.update(len(chunk))
            column = metric.spec.column
            values = np.array([found[k][column] for k in keys], dtype=np.float64)
            columns[column] = values
            by_name[name] = values
            detail_names = list(dict.fromkeys(c for k in unique for c in found[k] if c != column))
            for detail in detail_names:
                details[detail] = _column([found[k].get(detail) for k in keys])
            info[name] = describe(metric)
            if reference_labels and labels is None:
                # The first metric with a labels API labels the references (SembScore: CheXbert's 14 conditions).
                labels = reference_label_frame(metric, refs)
    return ScoredPairs(columns, details, info, by_name, labels, stats)


def combine_composites(composites: Sequence[str], scored: ScoredPairs) -> None:
    """Add composite metrics (RadCliQ) computed from their already scored components."""
    for name in composites:
        spec = REGISTRY.spec(name)
        cls = REGISTRY.cls(name)
        values = np.asarray(cls.combine({c: scored.values_by_name[c] for c in spec.components}), dtype=np.float64)
        scored.columns[spec.column] = values
        scored.values_by_name[name] = values
        scored.info[name] = {
            "spec": _spec_dict(spec),
            "config": {"components": {c: scored.info[c]["fingerprint"] for c in spec.components}},
            "fingerprint": "+".join(scored.info[c]["fingerprint"] for c in spec.components),
        }


def reference_label_frame(metric: Metric, refs: list[str]) -> pd.DataFrame | None:
    """CheXbert labels of the references, when this metric offers them (SembScore's labels API).

    Accepts what a labels method may return: a DataFrame, a list of {condition: value} dicts, or an (n, 14) array
    with the condition names in ``metric.LABELS``/``metric.CONDITIONS``. Columns are prefixed ``ref_chexbert_``.
    """
    method = getattr(metric, "labels", None)
    if not callable(method) or not refs:
        return None
    import pandas as pd

    unique = list(dict.fromkeys(refs))
    raw = method(unique)
    if isinstance(raw, pd.DataFrame):
        frame = raw.reset_index(drop=True)
    elif isinstance(raw, (list, tuple)) and raw and isinstance(raw[0], Mapping):
        frame = pd.DataFrame(list(raw))
    else:
        array = np.asarray(raw)
        names = getattr(metric, "LABELS", None) or getattr(metric, "CONDITIONS", None)
        if names is None or array.ndim != 2 or array.shape[1] != len(names):
            return None
        frame = pd.DataFrame(array, columns=list(names))
    if len(frame) != len(unique):
        raise RuntimeError(f"{metric.spec.name}.labels returned {len(frame)} rows for {len(unique)} reports")
    position = {text: i for i, text in enumerate(unique)}
    frame = frame.iloc[[position[t] for t in refs]].reset_index(drop=True)
    frame.columns = [LABEL_PREFIX + _label_column(c) for c in frame.columns]
    return frame


def _label_column(name: Any) -> str:
    return str(name).strip().lower().replace(" ", "_").replace("-", "_")


def to_frame(scored: ScoredPairs, order: Sequence[str]) -> pd.DataFrame:
    """Metric columns in ``order`` (registry names), then detail columns."""
    import pandas as pd

    data: dict[str, Any] = {}
    for name in order:
        column = REGISTRY.spec(name).column
        if column in scored.columns:
            data[column] = scored.columns[column]
    for column, values in scored.columns.items():
        data.setdefault(column, values)
    for column, values in scored.details.items():
        data.setdefault(column, values)
    return pd.DataFrame(data)

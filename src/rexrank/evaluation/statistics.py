"""Paired tests and rank intervals of many models in one pass: one draw of the random streams for every pair.

Every metric is a function of the column sums of its per-study table (``rexrank.metrics.aggregation.SumRule``: a
per-report metric sums its one column, a corpus metric its statistics), and both statistics are linear in that
table before the function:

- a bootstrap resample with count vector c gives model m the sums ``c @ X_m``, so one product of a block of count
  vectors with every model's columns gives every model's resampled values; a pair's resampled difference is the
  difference of two models' values (rank CIs come from the same values);
- a randomization with swap vector w moves pair (a, b)'s sums by ``w @ (X_b - X_a) = w @ X_b - w @ X_a``, so one
  product of a block of swap vectors with every model's columns gives every pair's permuted sums.

The streams (``bootstrap.count_blocks``, ``bootstrap.swap_blocks``) depend only on (studies, draws, seed), so the
numbers are those of testing each pair on its own with the same seed, which is how the tests check them. A study is
usable for a model when every column of its row is finite (``usable_studies``): NaN (no value, e.g. an unparsable
GREEN answer) and +-inf (which no metric gives: a damaged or edited table) alike are left out, never summed. A test
of A and B uses the studies usable for both (``n_excluded`` counts the others); a ranking uses those usable for
every model. Work over the same number of usable studies shares one draw (when all are usable: every metric, pair
and ranking of a comparison).

Memory, in 8-byte cells, whatever the number of models M and of studies n:
- one draw block of about ``bootstrap._BLOCK_CELLS`` cells (its shape is part of the stream: a function of n);
- at most ``_BLOCK_CELLS`` cells (as many; plus one row of columns) for each product and pair block evaluated from
  it, by the same rule (``bootstrap.block_rows``): rows x columns of a product, rows x pairs x statistics of a pair
  block (``_block_rows``, ``_pair_block``);
- the stored resampled values the percentile CIs need, resamples x models x outputs per metric: work is batched so
  that these and the studies' columns stay under ``_STORE_CELLS``, or one metric of one study set at a time when
  that alone is larger (``_batches``). Nothing is held per resample x study or per resample x pair beyond a block.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rexrank import progress
from rexrank.evaluation import bootstrap
from rexrank.evaluation.bootstrap import (
    DEFAULT_CONFIDENCE,
    DEFAULT_RESAMPLES,
    DEFAULT_SEED,
    block_rows,
    count_blocks,
    percentile_interval,
    rows_per_block,
    swap_blocks,
)
from rexrank.evaluation.defaults import DEFAULT_PERMUTATIONS
from rexrank.metrics.aggregation import SumRule

# Cells of one evaluated block (products, pair differences): as many as a draw block. Its own name so that a test
# can shrink the evaluated blocks alone (the draw blocks are part of the streams).
_BLOCK_CELLS = bootstrap._BLOCK_CELLS
# Cells of stored resampled values and study columns held for one pass over the streams (256 MB).
_STORE_CELLS = 32_000_000


@dataclass
class _Unit:
    """One metric on one set of usable studies: the models it needs, the pairs it tests, whether it ranks."""

    name: str
    rule: SumRule
    table: np.ndarray  # (models, studies, statistics): every run's table, not copied
    mask: np.ndarray  # usable studies (n,)
    models: list[int]  # indices into the runs, sorted
    pairs: list[tuple[int, int]] = field(default_factory=list)
    rank: bool = False
    sums: np.ndarray | None = None  # (models, statistics) over the usable studies
    boot: np.ndarray | None = None  # (resamples, models, width)
    k_perm: np.ndarray | None = None  # (pairs, width)

    @property
    def n(self) -> int:
        return int(self.mask.sum())

    @property
    def k(self) -> int:
        return len(self.rule.columns)

    def local(self) -> tuple[np.ndarray, np.ndarray]:
        """Each pair's two models as positions in ``models``."""
        where = {m: p for p, m in enumerate(self.models)}
        return (np.array([where[i] for i, _ in self.pairs], dtype=np.int64),
                np.array([where[j] for _, j in self.pairs], dtype=np.int64))

    def store_cells(self, resamples: int) -> int:
        """Cells held while the streams run: resampled values, and the usable studies' columns."""
        return len(self.models) * (resamples * self.rule.width + self.n * self.k)


def _block_rows(columns: int) -> int:
    """Rows of a draw block multiplied at once against ``columns`` columns: rows x columns <= _BLOCK_CELLS."""
    return block_rows(columns, _BLOCK_CELLS)


def _pair_block(rows: int, statistics: int) -> int:
    """Pairs evaluated at once on ``rows`` draws: rows x pairs x statistics <= _BLOCK_CELLS."""
    return block_rows(rows * statistics, _BLOCK_CELLS)


def usable_studies(table: np.ndarray) -> np.ndarray:
    """(models, studies) mask of a (models, studies, columns) table: True where every column is a finite number.
    The one rule for which per-study values the statistics use (``compare`` reads its subgroups by it too)."""
    return np.isfinite(table).all(axis=2)


def _units(tables: Mapping[str, np.ndarray], rules: Mapping[str, SumRule], pairs: Sequence[tuple[int, int]],
           rank: bool) -> list[_Unit]:
    """Group each metric's work by its usable studies (one unit per metric when every value is usable)."""
    units = []
    for name, table in tables.items():
        usable = usable_studies(table)
        by_mask: dict[bytes, _Unit] = {}

        def unit_for(mask: np.ndarray) -> _Unit:
            key = np.packbits(mask).tobytes()
            if key not in by_mask:
                by_mask[key] = _Unit(name, rules[name], table, mask, [])
            return by_mask[key]

        if rank:
            unit = unit_for(usable.all(axis=0))
            unit.rank, unit.models = True, list(range(table.shape[0]))
        for i, j in pairs:
            unit = unit_for(usable[i] & usable[j])
            unit.pairs.append((i, j))
            unit.models = sorted(set(unit.models) | {i, j})
        for unit in by_mask.values():
            # Per model and contiguous, the sums ``values.mean()`` and ``table.sum(axis=0)`` of one model give.
            unit.sums = np.stack([table[m][unit.mask].sum(axis=0) for m in unit.models])
            units.append(unit)
    return units


def _batches(units: list[_Unit], resamples: int) -> list[list[_Unit]]:
    """Units sharing a study count share the draws; each batch holds at most _STORE_CELLS (or one unit)."""
    batches = []
    by_n: dict[int, list[_Unit]] = {}
    for unit in units:
        if unit.n:
            by_n.setdefault(unit.n, []).append(unit)
    for group in by_n.values():
        batch, cells = [], 0
        for unit in group:
            need = unit.store_cells(resamples)
            if batch and cells + need > _STORE_CELLS:
                batches.append(batch)
                batch, cells = [], 0
            batch.append(unit)
            cells += need
        batches.append(batch)
    return batches


def _same_studies(batch: list[_Unit]) -> list[list[_Unit]]:
    """The units of a batch grouped by their usable studies: one product per group and draw block."""
    groups: dict[bytes, list[_Unit]] = {}
    for unit in batch:
        groups.setdefault(np.packbits(unit.mask).tobytes(), []).append(unit)
    return list(groups.values())


def _side_by_side(members: list[_Unit]) -> tuple[np.ndarray, list[tuple[_Unit, int]]]:
    """The members' usable studies' columns as one (studies, columns) matrix, model by model, with each member's
    first column: filled in place, one model at a time, so the batch holds one copy of its columns."""
    widths = [len(u.models) * u.k for u in members]
    offsets = np.cumsum([0] + widths)[:-1].tolist()
    matrix = np.empty((members[0].n, sum(widths)))
    for unit, offset in zip(members, offsets):
        for p, m in enumerate(unit.models):
            matrix[:, offset + p * unit.k:offset + (p + 1) * unit.k] = unit.table[m][unit.mask]
    return matrix, list(zip(members, offsets))


def _draws(batch: list[_Unit], resamples: int, permutations: int) -> int:
    """Progress units of a batch: each draw counted once per group of units it is multiplied against."""
    groups = _same_studies(batch)
    return len(groups) * resamples + sum(permutations for g in groups if any(u.pairs for u in g))


def memory_bound(models: int, studies: int, columns: int, width: int, resamples: int) -> int:
    """Bytes ``compare_tables`` holds at most beyond its inputs and results, when its largest metric has
    ``columns`` per-study columns and ``width`` values (for ``models`` runs on ``studies`` studies).

    A draw block of ``bootstrap._BLOCK_CELLS`` cells while it is drawn (indices, numpy's int64 copy of them for
    bincount, the int64 counts and the float64 block: at most four 8-byte copies; swaps: int8 and float64), at most
    ten ``_BLOCK_CELLS`` blocks of products, pair differences and the value function's temporaries, and one batch
    of stored values and columns (``_STORE_CELLS``, or the largest metric's own need when larger). Linear in models
    and studies through that one metric's columns only: never in pairs, nor in resamples x studies.
    """
    draw = max(1, rows_per_block(studies)) * max(studies, 1)
    one_metric = models * (resamples * width + studies * columns)
    return 8 * (4 * draw + 10 * (_BLOCK_CELLS + models * max(columns, width)) + max(_STORE_CELLS, one_metric))


def _per_model(block: np.ndarray, unit: _Unit, offset: int) -> np.ndarray:
    """A unit's (rows, models, statistics) slice of a product block."""
    return block[:, offset:offset + len(unit.models) * unit.k].reshape(block.shape[0], len(unit.models), unit.k)


def _run_batch(batch: list[_Unit], task, *, resamples: int, permutations: int, seed: int) -> None:
    """Both streams, drawn once for the batch; every unit's resampled values and permutation counts."""
    n = batch[0].n
    masks = [_side_by_side(group) for group in _same_studies(batch)]
    for unit in batch:
        unit.boot = np.empty((resamples, len(unit.models), unit.rule.width))
        unit.k_perm = np.zeros((len(unit.pairs), unit.rule.width), dtype=np.int64)
    done = 0
    for counts in count_blocks(n, resamples, seed):
        for matrix, members in masks:
            step = _block_rows(matrix.shape[1])
            for start in range(0, counts.shape[0], step):
                sums = counts[start:start + step] @ matrix
                rows = slice(done + start, done + start + sums.shape[0])
                for unit, offset in members:
                    unit.boot[rows] = unit.rule.values(_per_model(sums, unit, offset), n)
                task.update(sums.shape[0])
        done += counts.shape[0]
        del counts  # not held while the next block is drawn
    tested = [(matrix, [(u, o) for u, o in members if u.pairs]) for matrix, members in masks]
    tested = [(matrix, members) for matrix, members in tested if members]
    if not tested:
        return
    thresholds = {id(unit): _thresholds(unit) for _, members in tested for unit, _ in members}
    for swaps in swap_blocks(n, permutations, seed):
        for matrix, members in tested:
            step = _block_rows(matrix.shape[1])
            for start in range(0, swaps.shape[0], step):
                moved = swaps[start:start + step] @ matrix
                for unit, offset in members:
                    _count_permutations(unit, _per_model(moved, unit, offset), thresholds[id(unit)])
                task.update(moved.shape[0])
        del swaps


def _observed(unit: _Unit) -> tuple[np.ndarray, np.ndarray]:
    """(models, width) values over the usable studies and (pairs, width) differences A - B."""
    values = unit.rule.values(unit.sums, unit.n)
    a, b = unit.local()
    return values, values[a] - values[b]


def _tolerance(observed: np.ndarray) -> np.ndarray:
    # Ties with the observed value count as "at least as extreme": tolerate float rounding of the matrix products.
    return 1e-12 * np.maximum(1.0, np.abs(observed))


def _thresholds(unit: _Unit) -> np.ndarray:
    observed = _observed(unit)[1]
    return np.abs(observed) - _tolerance(observed)


def _count_permutations(unit: _Unit, moved: np.ndarray, thresholds: np.ndarray) -> None:
    """Add the permutations of this block whose |difference| reaches each pair's observed one."""
    a, b = unit.local()
    rows, k = moved.shape[0], moved.shape[2]
    chunk = _pair_block(rows, max(k, unit.rule.width))
    for start in range(0, len(a), chunk):
        ia, ib = a[start:start + chunk], b[start:start + chunk]
        shift = moved[:, ib] - moved[:, ia]  # (rows, pairs, statistics): A's sums gain it, B's lose it
        perm = unit.rule.values(unit.sums[ia] + shift, unit.n) - unit.rule.values(unit.sums[ib] - shift, unit.n)
        unit.k_perm[start:start + chunk] += np.sum(np.abs(perm) >= thresholds[start:start + chunk], axis=0)


def _empty_test(n_excluded: int) -> dict[str, Any]:
    return {"n": 0, "n_excluded": n_excluded, "value_a": None, "value_b": None, "difference": None, "ci_low": None,
            "ci_high": None, "p_bootstrap": None, "p_randomization": None}


def _tests(unit: _Unit, studies: int, *, resamples: int, permutations: int,
           confidence: float) -> dict[tuple[int, int], dict[str, Any]]:
    """Each pair's test entry: difference, percentile CI, both p-values; every named output for a corpus metric."""
    if not unit.n:
        return {pair: _empty_test(studies) for pair in unit.pairs}
    values, observed = _observed(unit)
    a, b = unit.local()
    out = {}
    chunk = _pair_block(max(resamples, 1), unit.rule.width)
    for start in range(0, len(a), chunk):
        ia, ib = a[start:start + chunk], b[start:start + chunk]
        boot = unit.boot[:, ia] - unit.boot[:, ib]  # (resamples, pairs, width)
        obs = observed[start:start + chunk]
        low, high = percentile_interval(boot, confidence)
        k_boot = np.sum(np.abs(boot - obs) >= np.abs(obs) - _tolerance(obs), axis=0)
        p_boot = (k_boot + 1) / (resamples + 1)
        p_perm = (unit.k_perm[start:start + chunk] + 1) / (permutations + 1)
        for p, (x, y) in enumerate(zip(ia.tolist(), ib.tolist())):
            entry: dict[str, Any] = {
                "n": unit.n, "n_excluded": studies - unit.n, "value_a": float(values[x, 0]),
                "value_b": float(values[y, 0]), "flags_a": list(unit.rule.flags(unit.sums[x], unit.n)),
                "flags_b": list(unit.rule.flags(unit.sums[y], unit.n)), "difference": float(obs[p, 0]),
                "ci_low": float(low[p, 0]), "ci_high": float(high[p, 0]), "p_bootstrap": float(p_boot[p, 0]),
                "p_randomization": float(p_perm[p, 0])}
            if unit.rule.outputs:  # a corpus metric: every output's figures, the first (headline) also above
                entry["headline"] = unit.rule.outputs[0]
                entry["outputs"] = {
                    name: {"value_a": float(values[x, j]), "value_b": float(values[y, j]),
                           "difference": float(obs[p, j]), "ci_low": float(low[p, j]), "ci_high": float(high[p, j]),
                           "p_bootstrap": float(p_boot[p, j]), "p_randomization": float(p_perm[p, j])}
                    for j, name in enumerate(unit.rule.outputs)}
            entry.update(resamples=resamples, permutations=permutations)
            out[unit.pairs[start + p]] = entry
    return out


def ranks(point: np.ndarray, higher_is_better: bool) -> np.ndarray:
    """Rank 1 = best along the last axis; a NaN value ranks last (ties share the better rank)."""
    from scipy.stats import rankdata

    sign = -1.0 if higher_is_better else 1.0
    return rankdata(sign * np.where(np.isnan(point), np.inf * sign, point), method="min", axis=-1)


def _ranking(unit: _Unit, confidence: float) -> dict[str, Any]:
    """Each model's headline value and rank (1 = best) with the bootstrap CI of the rank."""
    from scipy.stats import rankdata

    m = len(unit.models)
    if not unit.n:
        nan = np.full(m, np.nan)
        return {"value": nan, "rank": nan, "rank_ci_low": nan, "rank_ci_high": nan, "n": 0}
    point = _observed(unit)[0][:, 0]
    order = rankdata((-1.0 if unit.rule.higher_is_better else 1.0) * point, method="min")
    boot = ranks(unit.boot[:, :, 0], unit.rule.higher_is_better)
    alpha = (1.0 - confidence) / 2.0
    return {"value": point, "rank": order, "rank_ci_low": np.quantile(boot, alpha, axis=0, method="lower"),
            "rank_ci_high": np.quantile(boot, 1.0 - alpha, axis=0, method="higher"), "n": unit.n}


def compare_tables(tables: Mapping[str, np.ndarray | Sequence[np.ndarray]], rules: Mapping[str, SumRule], *,
                   pairs: Sequence[tuple[int, int]] | None = None, rank: bool = True,
                   resamples: int = DEFAULT_RESAMPLES, permutations: int = DEFAULT_PERMUTATIONS,
                   seed: int = DEFAULT_SEED, confidence: float = DEFAULT_CONFIDENCE,
                   desc: str = "compare: paired tests") -> dict[str, dict[str, Any]]:
    """Rank intervals and paired tests of M models on every metric, from one draw of the streams per study count.

    ``tables[name]``: the models' per-study tables of metric ``name`` on the same studies, (M, n, len(columns)) (or
    a sequence of (n, len(columns)) arrays); ``rules[name]`` its ``SumRule``. ``pairs``: (i, j) model indices to
    test, A = i and B = j (default: every pair i < j); ``rank``: also rank the models.

    Returns ``{name: {"ranking": {value, rank, rank_ci_low, rank_ci_high, n} or None, "tests": {(i, j): test}}}``.
    A test holds n (studies used), n_excluded (left out: NaN or +-inf for either model, ``usable_studies``),
    value_a/value_b and their flags, the difference A - B of the headline value, its percentile CI, p_bootstrap
    (resamples with ``|d* - d| >= |d|``) and p_randomization (permutations with ``|d'| >= |d|``), both
    (k + 1) / (draws + 1); a metric with named outputs (a corpus metric) also ``headline`` and ``outputs`` with each
    output's figures.
    Memory: see the module docstring. Progress: one task, moving with every block of draws.
    """
    stacked = {name: np.asarray(np.stack(t) if not isinstance(t, np.ndarray) else t, dtype=np.float64)
               for name, t in tables.items()}
    if not stacked:
        return {}
    models, studies = next(iter(stacked.values())).shape[:2]
    for name, table in stacked.items():
        width = len(rules[name].columns)
        if table.ndim != 3 or table.shape != (models, studies, width):
            raise ValueError(f"{name}: expected a ({models}, {studies}, {width}) table of per-study columns, "
                             f"got {table.shape}")
    pairs = list(itertools.combinations(range(models), 2)) if pairs is None else [tuple(p) for p in pairs]
    units = _units(stacked, rules, pairs, rank)
    batches = _batches(units, resamples)
    total = sum(_draws(batch, resamples, permutations) for batch in batches)
    with progress.task(total, desc, unit="draw") as task:
        for batch in batches:
            _run_batch(batch, task, resamples=resamples, permutations=permutations, seed=seed)
    out: dict[str, dict[str, Any]] = {name: {"ranking": None, "tests": {}} for name in stacked}
    for unit in units:
        if unit.rank:
            out[unit.name]["ranking"] = _ranking(unit, confidence)
        out[unit.name]["tests"].update(_tests(unit, studies, resamples=resamples, permutations=permutations,
                                              confidence=confidence))
        unit.boot = None
    return out

"""The meta-evaluation report's shape, and what the board publishes of it (``meta_eval_summary``).

``evaluation/meta_eval.py`` writes the report (``rexrank meta-eval``'s meta_eval.json) and reads its goals' names from
here; the store checks what it publishes with ``meta_eval_summary`` (``leaderboard add-meta-eval``, a Hub pull). This
module imports no numpy, scipy or pandas: `leaderboard add` must not load the scoring stack
(test_add_imports_no_scoring_stack), and meta_eval.py does.

What a meta_eval.json holds at its top level: ``META_EVAL_KEYS`` (less ``confidence``, which sits among its
``settings``) and ``REPORT_ONLY_KEYS``. The board keeps aggregates only: ``META_EVAL_KEYS``; left out are the settings
but their confidence (text describing the method), the published comparison values, the count of dropped pairs; per
metric its direction and the per-category targets; per rater ceiling the raters' ids.
"""

from __future__ import annotations

import math
import re
from typing import Any

from rexrank.errors import InputError

# The goals a metric's agreement is measured against: all errors, clinically significant ones.
TOTAL, SIGNIFICANT = "total", "significant"
GOALS = (TOTAL, SIGNIFICANT)
# A report's top level as the board publishes it, and what the file holds besides and the board leaves out.
META_EVAL_KEYS = ("dataset", "n_pairs", "n_studies", "n_raters", "confidence", "metrics", "raters", "pairwise",
                  "notes")
REPORT_ONLY_KEYS = ("settings", "published", "n_pairs_dropped")
SETTINGS_KEYS = ("resamples", "seed", "confidence", "alpha", "statistic", "resampling", "paired_test")
_INTERVAL = ("ci_low", "ci_high")
_TEST_KEYS = ("difference", "ci_low", "ci_high", "p", "significant", "better", "verdict")
_METRIC_NAME = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
_MAX_LABEL, _MAX_VERDICT, _MAX_NOTE, _MAX_NOTES, _MAX_META_METRICS = 60, 160, 400, 20, 40


class MetaEvalError(InputError):
    """A meta_eval.json (or a Hub event holding one) that is not a meta-evaluation's aggregates."""


def _meta_fail(where: str, problem: str) -> MetaEvalError:
    return MetaEvalError(f"meta-eval {where}: {problem}; give the meta_eval.json that `rexrank meta-eval` wrote, "
                         "unedited (aggregates only)")


def _only(value: Any, keys: set[str], where: str, dropped: set[str] = frozenset()) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _meta_fail(where, "must be an object")
    extra = set(value) - keys - dropped
    if extra:
        raise _meta_fail(where, f"unexpected field {sorted(map(str, extra))[0][:40]!r} (a meta-evaluation holds "
                                f"{', '.join(sorted(keys))})")
    missing = keys - set(value)
    if missing:
        raise _meta_fail(where, f"missing {', '.join(sorted(missing))}")
    return {key: value[key] for key in keys}


def _number(value: Any, where: str, low: float, high: float, *, optional: bool = True) -> float | None:
    """A finite number in [low, high] (None: undefined, as meta_eval writes a NaN)."""
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not low <= value <= high:
        raise _meta_fail(where, f"must be a finite number in [{low:g}, {high:g}] (got {str(value)[:20]})")
    return float(value)


def _count(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 10_000_000:
        raise _meta_fail(where, f"must be a count (got {str(value)[:20]})")
    return value


def _label(value: Any, where: str, limit: int) -> str:
    if not isinstance(value, str) or not value.strip() or len(value) > limit or "\n" in value or "\r" in value:
        raise _meta_fail(where, f"must be one line of text of at most {limit} characters")
    return value


def _metric_name(value: Any, where: str) -> str:
    if not isinstance(value, str) or not _METRIC_NAME.match(value):
        raise _meta_fail(where, f"{str(value)[:40]!r} is not a metric name (lowercase letters, digits, _)")
    return value


def _estimate(value: Any, where: str, point: str, dropped: set[str] = frozenset()) -> dict[str, float | None]:
    entry = _only(value, {point, *_INTERVAL}, where, dropped)
    return {key: _number(entry[key], f"{where}.{key}", -1.0, 1.0) for key in (point, *_INTERVAL)}


def meta_eval_summary(report: Any) -> dict[str, Any]:
    """What the board publishes of a meta-evaluation (``evaluation/meta_eval.py``'s report, or a stored summary):
    per metric its label and Kendall tau-b vs all and vs clinically significant errors with intervals, the raters'
    ceiling (mean and interval, no rater ids), each pair's paired tests with their verdict lines, the notes, and the
    counts. Anything else is refused (``MetaEvalError``, one line): an unknown field anywhere (a report's text has no
    place to go), a number that is not finite or outside its range, a text over its bound or on several lines."""
    if isinstance(report, dict) and "settings" in report and "confidence" not in report:
        # A meta_eval.json: its confidence level is among the settings, the rest of which stays out.
        settings = _only(report["settings"], {"confidence"}, "settings", set(SETTINGS_KEYS) - {"confidence"})
        report = {**{k: v for k, v in report.items() if k != "settings"}, "confidence": settings["confidence"]}
    goals = GOALS
    top = _only(report, set(META_EVAL_KEYS), "file", set(REPORT_ONLY_KEYS) - {"settings"})
    out: dict[str, Any] = {"dataset": _label(top["dataset"], "dataset", _MAX_LABEL)}
    for key in ("n_pairs", "n_studies", "n_raters"):
        out[key] = _count(top[key], key)
    out["confidence"] = _number(top["confidence"], "confidence", 0.5, 0.999, optional=False)
    metrics = top["metrics"]
    if not isinstance(metrics, dict) or not 0 < len(metrics) <= _MAX_META_METRICS:
        raise _meta_fail("metrics", f"must map 1 to {_MAX_META_METRICS} metric names to their agreement")
    out["metrics"] = {}
    for name, entry in metrics.items():
        where = f"metrics.{_metric_name(name, 'metric')}"
        fields = _only(entry, {"label", "targets"}, where, {"higher_is_better"})
        targets = fields["targets"]
        extra = {k for k in targets if isinstance(k, str) and k.startswith("category_")} \
            if isinstance(targets, dict) else set()
        targets = _only(targets, set(goals), f"{where}.targets", extra)
        out["metrics"][name] = {"label": _label(fields["label"], f"{where}.label", _MAX_LABEL),
                                "targets": {goal: _estimate(targets[goal], f"{where}.targets.{goal}", "tau")
                                            for goal in goals}}
    raters = _only(top["raters"], set(goals), "raters")
    out["raters"] = {goal: None if raters[goal] is None else
                     _estimate(raters[goal], f"raters.{goal}", "mean", {"per_rater"}) for goal in goals}
    pairwise = top["pairwise"]
    if not isinstance(pairwise, list) or len(pairwise) > _MAX_META_METRICS ** 2:
        raise _meta_fail("pairwise", "must be a list of the metrics' paired tests")
    out["pairwise"] = []
    for k, pair in enumerate(pairwise):
        where = f"pairwise[{k}]"
        fields = _only(pair, {"a", "b", "tests"}, where)
        a, b = (_metric_name(fields[side], f"{where}.{side}") for side in ("a", "b"))
        if a == b or a not in out["metrics"] or b not in out["metrics"]:
            raise _meta_fail(where, "must compare two different metrics of the file")
        tests = _only(fields["tests"], set(goals), f"{where}.tests")
        checked = {}
        for goal in goals:
            at = f"{where}.tests.{goal}"
            test = _only(tests[goal], set(_TEST_KEYS), at)
            if test["significant"] not in (None, True, False) or test["better"] not in (None, a, b):
                raise _meta_fail(at, "significant is true, false or null and better one of the pair or null")
            checked[goal] = {"difference": _number(test["difference"], f"{at}.difference", -2.0, 2.0),
                             **{key: _number(test[key], f"{at}.{key}", -2.0, 2.0) for key in _INTERVAL},
                             "p": _number(test["p"], f"{at}.p", 0.0, 1.0), "significant": test["significant"],
                             "better": test["better"], "verdict": _label(test["verdict"], f"{at}.verdict",
                                                                         _MAX_VERDICT)}
        out["pairwise"].append({"a": a, "b": b, "tests": checked})
    notes = top["notes"]
    if not isinstance(notes, list) or len(notes) > _MAX_NOTES:
        raise _meta_fail("notes", f"must be a list of at most {_MAX_NOTES} notes")
    out["notes"] = [_label(note, f"notes[{k}]", _MAX_NOTE) for k, note in enumerate(notes)]
    return out

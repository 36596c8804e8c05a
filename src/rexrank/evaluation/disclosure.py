"""What may leave the scorer for a private test set: the one disclosure policy, applied by every output path.

docs/architecture.md, "Trust boundaries": from a private test set only aggregates leave the scorer, rounded as
published; per-study outputs never carry reference text, labels or unkeyed hashes of it. Which sets are private is the
catalog's fact (``rexrank.data.catalog.is_private``); this module only reads it. Open sets pass through unchanged.

The policy, each constant declared here once (docs/leaderboard.md, "Threat model", says what it protects):

- ``PRIVATE_DECIMALS``: every number of a private set's result (means, CIs, leaderboard values, subgroup values,
  rates, correlations) is rounded to 3 decimals, the resolution of the published ReXrank tables. What is rounded is
  what is shown: a reciprocal metric's mean and CI (1/RadCliQ-v1) are kept as the reciprocal of the rounded shown
  value (``_shown_bounded``), never rounded before the reciprocal is taken (a published 1.622 would show 1.621).
- ``DEFAULT_MIN_GROUP_SIZE`` (host setting: ``$REXRANK_MIN_GROUP_SIZE``): a subgroup (a site, normal/abnormal, the
  GREEN rate on abnormal studies) of fewer studies is replaced by ``{"suppressed": "fewer than N studies"}``; and
  since the whole set's value is always shown, the suppressed groups of one breakdown together always hold at least
  N studies (more groups are suppressed until they do), so no small group is the difference of shown ones.
- ``PRIVATE_COUNT_STEP``: a count of per-report values that depends on the submission, ``n_nan`` (values left out
  of a mean: a judge that could not parse its answer, which can depend on the reference) and with it ``n`` (the
  values in the mean), under ``metrics.<name>`` and ``subgroups.green``, is shown to the nearest 10 (halves up):
  exact, it would say for one changed study whether its value became NaN, one bit per study per submission. This
  is the means' rule at the set's scale: a mean at 3 decimals over ReXGradient's 10,000 studies also moves one
  step only when about 10 studies change. ``n`` is the entry's studies less the shown ``n_nan``, so
  ``n + n_nan`` is still the number of studies; ``n_nan`` is never all of them while a value remains, and an
  entry without any value (``n`` = 0, its mean null and flagged) is shown as it is, the null mean saying so
  anyway. Counts that are the same for every submission (``n_studies``, a site's or the normal studies' ``n``)
  are properties of the host's set, carry no bit of a submission's outcome and stay exact; the suppression rules
  below read only those (a GREEN rate's group is its ``n + n_nan`` studies), so no submission moves them.
- ``HOST_SECRET_ENV``: per-study reference keys of a private set are HMAC-SHA256 under the host's secret; without
  the secret there is no reference key at all (``reference_key``, used by the harness).
- Host operational details that depend on other people's submissions (cache hits) and drop counts are withheld.

``disclose_results`` (results.json), ``disclose_record`` (a store row / ``ResultRecord.to_json()``) and
``bounded`` (one number) are what the harness, the report, the store, the board, the Space and the Hub sync call.
Every function here is idempotent: disclosing twice gives what disclosing once gave.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import numbers
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from rexrank.data import catalog
from rexrank.errors import ConfigError, UnknownNameError

# Resolution of every number a private set's result shows (the published tables' 3 decimals).
PRIVATE_DECIMALS = 3
# Resolution of a private set's submission-dependent counts (n_nan, and n with it): see the module docstring.
PRIVATE_COUNT_STEP = 10
# Smallest subgroup of a private set whose results are shown; the host changes it with $REXRANK_MIN_GROUP_SIZE.
DEFAULT_MIN_GROUP_SIZE = 100
MIN_GROUP_SIZE_ENV = "REXRANK_MIN_GROUP_SIZE"
# The host's secret keying per-study reference hashes of private sets; never stored, logged or shown.
HOST_SECRET_ENV = "REXRANK_HOST_SECRET"
MIN_SECRET_CHARS = 16
# Per-study reference key columns: an open set's plain hash, a private set's keyed one.
REFERENCE_HASH_COLUMN = "ref_sha256"
REFERENCE_HMAC_COLUMN = "ref_hmac_sha256"
REFERENCE_KEY_COLUMNS = (REFERENCE_HASH_COLUMN, REFERENCE_HMAC_COLUMN)
SUPPRESSED = "suppressed"
# analyses entries that describe the host's cache (hits reveal what other submissions held): withheld.
_HOST_ANALYSES = ("cache",)


def is_private(dataset: str | None) -> bool:
    """The catalog's private flag; False for no dataset or a name the catalog does not know (a custom file)."""
    if dataset is None:
        return False
    try:
        return catalog.is_private(dataset)
    except UnknownNameError:
        return False


def min_group_size() -> int:
    """The host's minimum group size ($REXRANK_MIN_GROUP_SIZE, default DEFAULT_MIN_GROUP_SIZE)."""
    raw = os.environ.get(MIN_GROUP_SIZE_ENV, "").strip()
    if not raw:
        return DEFAULT_MIN_GROUP_SIZE
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise ConfigError(f"${MIN_GROUP_SIZE_ENV} must be a whole number of at least 1 (got {raw!r})")
    return value


def suppressed(min_group: int) -> dict[str, str]:
    """The marker that replaces a group too small to show."""
    return {SUPPRESSED: f"fewer than {min_group} studies"}


def bounded(value: Any) -> Any:
    """A number as a private set shows it: rounded to PRIVATE_DECIMALS. None, NaN, infinities, integers (counts)
    and booleans are returned unchanged."""
    if value is None or isinstance(value, (bool, numbers.Integral)) or not isinstance(value, numbers.Real):
        return value
    value = float(value)
    return round(value, PRIVATE_DECIMALS) if math.isfinite(value) else value


def _json_bounded(value: Any) -> Any:
    value = bounded(value)
    return None if isinstance(value, float) and not math.isfinite(value) else value


def _shown_bounded(name: str, value: Any) -> Any:
    """A metric's mean (or CI bound) rounded where it is shown: the board's value of it (the mean, or for a
    reciprocal metric 1/mean) rounded to PRIVATE_DECIMALS, then taken back through the same rule (its own
    inverse). A value without a finite shown value, or of a metric this rexrank lacks, is rounded as it is."""
    from rexrank.metrics.aggregation import leaderboard_values

    spec = _spec(name)
    if spec is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return _json_bounded(value)
    shown = float(leaderboard_values(value, spec))
    if not math.isfinite(shown):
        return _json_bounded(value)
    return float(leaderboard_values(bounded(shown), spec))


def bounded_tree(value: Any) -> Any:
    """Every float inside dicts/lists rounded (``bounded``); everything else as it is."""
    if isinstance(value, Mapping):
        return {k: bounded_tree(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [bounded_tree(v) for v in value]
    return bounded(value)


def _count(value: Any) -> int | None:
    return int(value) if isinstance(value, numbers.Integral) and not isinstance(value, bool) else None


def bounded_counts(entry: Mapping[str, Any]) -> dict[str, Any]:
    """An entry with ``n`` and ``n_nan`` as a private set shows them: ``n_nan`` to the nearest PRIVATE_COUNT_STEP
    (halves up, at most the studies less one while a value remains), ``n`` the entry's studies less that. Other
    entries, and one without any value (n = 0), are returned as they are. Idempotent."""
    out = dict(entry)
    n, n_nan = _count(entry.get("n")), _count(entry.get("n_nan"))
    if n is None or n_nan is None or n <= 0 or n_nan < 0:
        return out
    studies = n + n_nan
    shown = min((n_nan + PRIVATE_COUNT_STEP // 2) // PRIVATE_COUNT_STEP * PRIVATE_COUNT_STEP, studies - 1)
    out["n"], out["n_nan"] = studies - shown, shown
    return out


# -- per-study reference keys --------------------------------------------------------------------------------------
def host_secret() -> bytes | None:
    """The host's secret ($REXRANK_HOST_SECRET) as bytes; None when unset. A short secret is refused."""
    raw = os.environ.get(HOST_SECRET_ENV)
    if raw is None or raw == "":
        return None
    if len(raw) < MIN_SECRET_CHARS:
        raise ConfigError(f"${HOST_SECRET_ENV} must be at least {MIN_SECRET_CHARS} characters (e.g. the output of "
                          "`python -c \"import secrets; print(secrets.token_hex(32))\"`)")
    return raw.encode("utf-8")


def reference_key(text: str, secret: bytes) -> str:
    """HMAC-SHA256 of a reference text under the host's secret: equal texts give equal keys for that host, and
    nobody without the secret can test a guessed text against it."""
    return hmac.new(secret, text.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()


def references_digest(ids: Sequence[str], texts: Sequence[str], secret: bytes) -> str:
    """One keyed digest of all (id, reference) pairs: results.json's ``references_hmac_sha256``."""
    mac = hmac.new(secret, digestmod=hashlib.sha256)
    for study_id, text in zip(ids, texts):
        mac.update(study_id.encode("utf-8", "surrogatepass") + b"\0" + reference_key(text, secret).encode() + b"\n")
    return mac.hexdigest()


# -- subgroups -----------------------------------------------------------------------------------------------------
def _size(group: Any) -> int | None:
    if not isinstance(group, Mapping):
        return None
    n = group.get("n")
    return int(n) if isinstance(n, numbers.Integral) and not isinstance(n, bool) else None


def _partition(groups: Mapping[str, Any], min_group: int) -> dict[str, Any]:
    """Groups that split one set (sites; normal/abnormal): those under ``min_group`` studies suppressed, then the
    smallest shown ones too until the suppressed groups together hold at least ``min_group`` studies (otherwise the
    total minus the shown groups would give the hidden ones). Empty groups (n = 0) show nothing and stay."""
    sizes = {k: n for k, g in groups.items() if (n := _size(g)) is not None}
    hidden = {k for k, n in sizes.items() if 0 < n < min_group}
    total = sum(sizes[k] for k in hidden)
    if hidden:
        for key in sorted((k for k, n in sizes.items() if k not in hidden and n > 0), key=lambda k: (sizes[k], k)):
            if total >= min_group:
                break
            hidden.add(key)
            total += sizes[key]
    return {k: suppressed(min_group) if k in hidden else bounded_tree(g) for k, g in groups.items()}


def disclose_subgroups(subgroups: Mapping[str, Any], min_group: int | None = None) -> dict[str, Any]:
    """``results["subgroups"]`` of a private set: groups under the minimum size suppressed, numbers rounded."""
    min_group = min_group_size() if min_group is None else min_group
    out: dict[str, Any] = {}
    for key, value in subgroups.items():
        if not isinstance(value, Mapping):
            out[key] = bounded_tree(value)
        elif key == "green":
            out[key] = _disclose_green(value, min_group)
        else:  # normal_vs_abnormal, sites, and any later breakdown: each splits the set
            groups = {k: v for k, v in value.items() if _size(v) is not None or _is_marker(v)}
            rest = {k: bounded_tree(v) for k, v in value.items() if k not in groups}
            out[key] = {**rest, **_partition(groups, min_group)} if groups else rest
            out[key] = {k: out[key][k] for k in value}  # the order results.json had
    return out


def _is_marker(value: Any) -> bool:
    return isinstance(value, Mapping) and SUPPRESSED in value


def _studies(entry: Any) -> int | None:
    """The studies a rate is over: its values and its NaN (``n + n_nan``), the same for every submission."""
    n = _size(entry)
    n_nan = _count(entry.get("n_nan")) if n is not None else None
    return n if n_nan is None else n + n_nan


def _disclose_green(green: Mapping[str, Any], min_group: int) -> dict[str, Any]:
    """GREEN's error-free rate on all studies (shown, like every whole-set value) and on abnormal ones (suppressed
    when the abnormal studies, or the normal ones it leaves, are fewer than the minimum); counts as
    ``bounded_counts`` shows them."""
    total = _studies(green.get("error_free_rate"))
    out = {}
    for key, entry in green.items():
        n = _studies(entry)
        if key != "error_free_rate" and n is not None and (
                0 < n < min_group or (total is not None and 0 < total - n < min_group)):
            out[key] = suppressed(min_group)
        else:
            out[key] = bounded_tree(bounded_counts(entry) if isinstance(entry, Mapping) else entry)
    return out


# -- results.json and store records ---------------------------------------------------------------------------------
def _spec(name: str):
    from rexrank.metrics import REGISTRY

    try:
        return REGISTRY.spec(name)
    except (KeyError, ValueError, UnknownNameError):
        return None


def _disclose_metric_entry(name: str, entry: Mapping[str, Any]) -> dict[str, Any]:
    """One metric of results.json: mean and CI rounded; the leaderboard value, its CI and flags recomputed from
    the rounded ones (so results.json, the store and the board show the same numbers), then rounded."""
    from rexrank.metrics.aggregation import leaderboard_flags, leaderboard_interval, leaderboard_values

    out = bounded_counts(entry)
    if isinstance(out.get("values"), Mapping):  # a corpus metric's named values (CE F1): rounded like the rest
        out["values"] = {k: {f: _json_bounded(v) for f, v in d.items()} for k, d in out["values"].items()}
    for key in ("mean", "ci_low", "ci_high"):
        if key in out:
            out[key] = _shown_bounded(name, out[key])
    spec = _spec(name)
    if spec is None or out.get("mean") is None:
        for key in ("leaderboard_value", "leaderboard_ci_low", "leaderboard_ci_high"):
            if key in out:
                out[key] = _json_bounded(out[key])
        return out
    out["leaderboard_value"] = _json_bounded(float(leaderboard_values(out["mean"], spec)))
    if "leaderboard_flags" in out:
        out["leaderboard_flags"] = list(leaderboard_flags(out["mean"], spec))
    if "ci_low" in out or "leaderboard_ci_low" in out:
        low, high = (math.nan if out.get(k) is None else out[k] for k in ("ci_low", "ci_high"))
        lb_low, lb_high = leaderboard_interval(low, high, spec)
        out["leaderboard_ci_low"], out["leaderboard_ci_high"] = _json_bounded(lb_low), _json_bounded(lb_high)
    return out


def _leaderboard_map(shown: Mapping[str, Any], metrics: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    """{"BLEU": value, "1/RadCliQ-v1": value}: each from its disclosed metric where one matches, else rounded."""
    by_column = {}
    for name, entry in metrics.items():
        spec = _spec(name)
        if spec is not None and spec.leaderboard_column and isinstance(entry, Mapping):
            by_column[spec.leaderboard_column] = (name, entry)
    out = {}
    for column, value in shown.items():
        if column in by_column and by_column[column][1].get("mean") is not None:
            name, entry = by_column[column]
            out[column] = _disclose_metric_entry(name, {"mean": entry["mean"]})["leaderboard_value"]
        else:
            out[column] = _json_bounded(value)
    return out


def _disclose_common(data: Mapping[str, Any], metrics: Mapping[str, Mapping[str, Any]],
                     min_group: int) -> dict[str, Any]:
    """The keys results.json and a record's ``extra`` share: leaderboard, subgroups, analyses, n_dropped, inputs."""
    out = dict(data)
    if isinstance(out.get("leaderboard"), Mapping):
        out["leaderboard"] = _leaderboard_map(out["leaderboard"], metrics)
    if isinstance(out.get("subgroups"), Mapping):
        out["subgroups"] = disclose_subgroups(out["subgroups"], min_group)
    if isinstance(out.get("analyses"), Mapping):
        out["analyses"] = bounded_tree({k: v for k, v in out["analyses"].items() if k not in _HOST_ANALYSES})
    if "n_dropped" in out:  # how many predictions were dropped would say which ids are (not) in the set
        out["n_dropped"] = {}
    if isinstance(out.get("inputs"), Mapping):  # an unkeyed hash of the references could confirm a guess of them
        out["inputs"] = {k: v for k, v in out["inputs"].items() if k != "references_sha256"}
    return out


def policy(min_group: int | None = None) -> dict[str, Any]:
    """What results.json says about the policy applied to it."""
    min_group = min_group_size() if min_group is None else min_group
    return {"private": True, "decimals": PRIVATE_DECIMALS, "min_group_size": min_group,
            "count_step": PRIVATE_COUNT_STEP,
            "note": f"private test set: aggregates only, rounded to {PRIVATE_DECIMALS} decimals; NaN counts to the "
                    f"nearest {PRIVATE_COUNT_STEP}; subgroups of fewer than {min_group} studies suppressed"}


def disclose_results(results: Mapping[str, Any], min_group: int | None = None, *,
                     private: bool | None = None) -> dict[str, Any]:
    """results.json as it may leave the scorer: unchanged for an open set; for a private set (its ``dataset``, or
    ``private=True``) every number rounded, small subgroups suppressed, drop counts, cache hits and the unkeyed
    references digest withheld, and a ``disclosure`` entry naming the policy."""
    if not (is_private(results.get("dataset")) if private is None else private):
        return dict(results)
    if isinstance(results.get("disclosure"), Mapping) and min_group is None:
        min_group = results["disclosure"].get("min_group_size")
    min_group = min_group_size() if min_group is None else int(min_group)
    metrics = {name: _disclose_metric_entry(name, entry) if isinstance(entry, Mapping) else entry
               for name, entry in (results.get("metrics") or {}).items()}
    out = _disclose_common(results, metrics, min_group)
    out["metrics"] = metrics
    out["disclosure"] = policy(min_group)
    return out


def disclose_record(record: Mapping[str, Any], min_group: int | None = None) -> dict[str, Any]:
    """A leaderboard result as the store holds it — ``ResultRecord.to_json()`` or a ``Store.results()`` row
    (``metrics`` = {name: {mean, ci_low, ci_high}}, ``extra`` = subgroups, analyses, leaderboard ...; a row's
    ``record`` holds the same again) — disclosed like ``disclose_results``. Unchanged for an open set."""
    if not is_private(record.get("dataset")):
        return dict(record)
    min_group = min_group_size() if min_group is None else min_group
    out = dict(record)
    metrics = {name: {k: _shown_bounded(name, v) if k in ("mean", "ci_low", "ci_high") else _json_bounded(v)
                      for k, v in entry.items()} if isinstance(entry, Mapping) else entry
               for name, entry in (record.get("metrics") or {}).items()}
    if "metrics" in out:
        out["metrics"] = metrics
    if isinstance(out.get("extra"), Mapping):
        out["extra"] = _disclose_common(out["extra"], metrics, min_group)
    if isinstance(out.get("record"), Mapping) and out["record"]:
        out["record"] = disclose_record(out["record"], min_group)
    return out


def disclose_records(records: Iterable[Mapping[str, Any]], min_group: int | None = None) -> list[dict[str, Any]]:
    return [disclose_record(r, min_group) for r in records]


__all__ = ["DEFAULT_MIN_GROUP_SIZE", "HOST_SECRET_ENV", "MIN_GROUP_SIZE_ENV", "PRIVATE_COUNT_STEP",
           "PRIVATE_DECIMALS", "REFERENCE_HASH_COLUMN", "REFERENCE_HMAC_COLUMN", "REFERENCE_KEY_COLUMNS", "SUPPRESSED",
           "bounded", "bounded_counts", "bounded_tree", "disclose_record", "disclose_records", "disclose_results",
           "disclose_subgroups", "host_secret", "is_private", "min_group_size", "policy", "reference_key",
           "references_digest", "suppressed"]

"""What a scoring run computes: requested names -> base metrics and composites, each metric's config, and the
per-study budget of the model-backed ones.

Composite metrics (RadCliQ) declare their components in the registry; the components are scored once and
shared, so asking for ``["radcliq_v1", "bertscore"]`` runs BERTScore a single time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rexrank.errors import ConfigError, InputError
from rexrank.evaluation.predictions import count_words
from rexrank.metrics import REGISTRY

# The per-study budget of model-backed metrics on the board's submissions (issue 35 point 6): a prediction over this
# many tokens is refused before any model runs. Tokens are the per-report length limit's words (runs of letters or
# digits, and each punctuation mark: predictions.count_words), a count of the text alone, so the same file always
# gets the same answer on any machine (a time budget would not). Real reports have tens to a few hundred (IU-Xray's
# longest reference: 177); RadGraph's cost grows with the square of a report (docs/radgraph.md, "Memory"), and a
# 4,900-token study cost seconds of CPU per model-backed metric where a real one costs milliseconds.
SUBMISSION_MAX_MODEL_TOKENS = 1_000
_LISTED = 10  # studies named in the refusal


def plan(metrics: Sequence[str]) -> tuple[list[str], list[str]]:
    """Split requested names into (base metrics to compute, composites to combine), canonical and de-duplicated."""
    requested = [REGISTRY.canonical(m) for m in metrics]
    base: list[str] = []
    composites: list[str] = []
    for name in requested:
        spec = REGISTRY.spec(name)
        if spec.components:
            if name not in composites:
                composites.append(name)
            for comp in spec.components:
                if comp not in base:
                    base.append(comp)
        elif name not in base:
            base.append(name)
    return base, composites


def metric_config(name: str, *, model_paths: Mapping[str, Any] | None, metric_configs: Mapping[str, Mapping] | None,
                  shared: Mapping[str, Any]) -> dict[str, Any]:
    spec = REGISTRY.spec(name)
    config: dict[str, Any] = {}
    if spec.needs_model:
        config.update({k: v for k, v in shared.items() if v is not None})
    if model_paths:
        for key, value in model_paths.items():
            if REGISTRY.canonical(key) == name:
                config["model"] = value
    if metric_configs:
        for key, value in metric_configs.items():
            if REGISTRY.canonical(key) == name:
                config.update(value)
    for other in spec.shares:
        # CE F1's labeller is built exactly as the run's SembScore (same weights, so the same cache entries).
        config.setdefault(other, metric_config(other, model_paths=model_paths, metric_configs=metric_configs,
                                               shared=shared))
    return config


def check_model_budget(study_ids: Sequence[str], hyps: Sequence[str], metrics: Sequence[str],
                       max_tokens: int | None) -> None:
    """Refuse predictions over ``max_tokens`` tokens (``count_words``) when any of ``metrics`` is model-backed
    (``MetricSpec.needs_model``): one InputError line naming the first studies, their counts and the fix. Only the
    predictions are counted: they are what a submitter controls, and a reference's length (a private test set's)
    must not show in a message. None: no budget."""
    if max_tokens is None:
        return
    models = [name for name in metrics if REGISTRY.spec(name).needs_model]
    if not models:
        return
    # A token is at least one character: a text no longer than the budget is never counted.
    over = [(study, n) for study, hyp in zip(study_ids, hyps)
            if len(hyp) > max_tokens and (n := count_words(hyp)) > max_tokens]
    if over:
        shown = ", ".join(f"{study!r} ({n:,} tokens)" for study, n in over[:_LISTED])
        more = f" and {len(over) - _LISTED} more" if len(over) > _LISTED else ""
        raise InputError(f"{len(over)} prediction{'s are' if len(over) > 1 else ' is'} over the per-study budget of "
                         f"the model-backed metrics ({', '.join(models)}): {max_tokens:,} tokens, each run of "
                         f"letters or digits and each punctuation mark counting one: {shown}{more}. Shorten "
                         f"{'them' if len(over) > 1 else 'it'}, or score without the model-backed metrics; "
                         "`rexrank score --max-model-tokens N` sets the budget")


def settings_readers(metrics: Sequence[str]) -> set[str]:
    """The metrics whose ``--model-path`` / ``--option`` settings a run of ``metrics`` reads: its base metrics and
    those they share settings with (``MetricSpec.shares``: CE F1 builds SembScore's labeller from semb's)."""
    readers: set[str] = set()
    pending = list(plan(metrics)[0])
    while pending:
        name = pending.pop()
        if name not in readers:
            readers.add(name)
            pending.extend(REGISTRY.spec(name).shares)
    return readers


def check_settings_read(metrics: Sequence[str], settings: Mapping[str, str]) -> None:
    """Refuse a setting no metric of the run reads (``settings``: metric -> the option that gave it), so that
    ``--model-path bertscore=DIR -m bleu2`` is not silently ignored."""
    readers = settings_readers(metrics)
    unread = {name: flag for name, flag in settings.items() if REGISTRY.canonical(name) not in readers}
    if unread:
        given = ", ".join(f"{flag} {name}" for name, flag in unread.items())
        raise ConfigError(f"{given}: no metric of this run reads it (computed: {', '.join(sorted(readers))}); "
                          "add the metric to --metrics or drop the setting")

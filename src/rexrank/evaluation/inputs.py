"""Predictions + references -> the aligned pairs to score, after validating both sides together."""

from __future__ import annotations

import numbers
import os
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from rexrank.errors import ConfigError, InputError
from rexrank.evaluation import references as refs_mod
from rexrank.evaluation.predictions import (
    DEFAULT_MAX_FILE_SIZE_MB,
    DEFAULT_MAX_LISTED,
    DEFAULT_MAX_REPORT_CHARS,
    DEFAULT_MAX_REPORT_WORDS,
    PREDICTION_FIELDS,
    Problems,
    check_ids,
    check_lengths,
    check_values,
    read_report_file,
)
from rexrank.metrics.base import text_keys


@dataclass
class Inputs:
    """Validated, aligned inputs: ``hyps[i]`` and ``refs[i]`` belong to ``study_ids[i]`` (reference order)."""

    study_ids: list[str]
    hyps: list[str]
    refs: list[str]
    attributes: dict[str, dict[str, Any]] = field(default_factory=dict)  # per-study extras (site)
    dropped: dict[str, int] = field(default_factory=dict)
    predictions_source: str = ""
    references_source: str = ""
    private: bool = False  # the references are a private test set (rexrank.evaluation.disclosure applies)

    def __len__(self) -> int:
        return len(self.study_ids)

    # Each text's cache key (rexrank.metrics.base.text_key), hashed once per run and read by everything that needs
    # it: the scorer's pair keys, the per-study table's hash columns and the inputs' digests in results.json.
    @cached_property
    def hyp_keys(self) -> list[str]:
        return text_keys(self.hyps)

    @cached_property
    def ref_keys(self) -> list[str]:
        return text_keys(self.refs)

    def drop_note(self) -> str | None:
        templates = (("missing_prediction", "reference study without a prediction",
                      "reference studies without a prediction"),
                     ("extra_prediction", "prediction without a reference study", "predictions without a reference study"),
                     ("excluded_by_track", "prediction for a study this track excludes",
                      "predictions for studies this track excludes"))
        parts = [f"{self.dropped[key]} {one if self.dropped[key] == 1 else many}"
                 for key, one, many in templates if self.dropped.get(key)]
        if not parts:
            return None
        return f"scoring {len(self)} studies; dropped " + " and ".join(parts)


def load_inputs(predictions: str | os.PathLike, *, track: str, references: str | os.PathLike | None = None,
                dataset: str | None = None, split: str | None = None, data_dir: str | os.PathLike | None = None,
                allow_missing: bool = False, max_file_size_mb: float = DEFAULT_MAX_FILE_SIZE_MB,
                max_listed: int = DEFAULT_MAX_LISTED, max_report_words: int = DEFAULT_MAX_REPORT_WORDS,
                max_report_chars: int = DEFAULT_MAX_REPORT_CHARS) -> Inputs:
    """Read and validate both sides; raise one ``ValidationError`` listing every problem, or return the pairs.

    ``max_report_words`` / ``max_report_chars``: the per-report length limit (whichever is hit first), applied to
    predictions and references alike before anything is scored (``predictions.check_lengths``).
    """
    track = refs_mod.check_track(track)
    for name, limit in (("max_report_words", max_report_words), ("max_report_chars", max_report_chars)):
        if isinstance(limit, bool) or not isinstance(limit, numbers.Integral) or limit < 1:
            raise ConfigError(f"{name} must be a whole number of at least 1, got {limit!r}")
    if not 0 < max_file_size_mb < float("inf"):  # NaN too; inf is no byte count (megabytes() would overflow)
        raise ConfigError(f"max_file_size_mb (--max-file-size-mb) must be a finite number more than 0, got "
                          f"{max_file_size_mb!r}")
    limits = {"max_words": max_report_words, "max_chars": max_report_chars}
    from rexrank.evaluation.disclosure import is_private

    # A private test set (the catalog's flag; also when its references come from a file): validation names no id of
    # it, tells neither its size nor which studies the track excludes, and only its own sites make subgroups
    # (docs/architecture.md, "Trust boundaries"; Problems(private=True)).
    private = is_private(dataset)
    problems = Problems(max_listed=max_listed, private=private)
    pred_file = read_report_file(predictions, "predictions", problems, pick=refs_mod.prediction_picker(),
                                 text_fields=PREDICTION_FIELDS, max_file_size_mb=max_file_size_mb)
    hyps = check_values(pred_file, "predictions", problems)
    check_lengths(hyps, "predictions", problems, **limits)
    if references is not None:
        ref_set = refs_mod.from_file(references, track, problems, max_file_size_mb=max_file_size_mb)
    else:
        ref_set = refs_mod.from_dataset(dataset, split, track, data_dir, problems)
    # A private test set's study ids and reference lengths are not named (docs/architecture.md, "Trust boundaries").
    check_lengths(ref_set.texts, "references", problems, **limits, show_ids=not private)
    keep: list[str] = []
    dropped: dict[str, int] = {}
    if pred_file.ok and ref_set.ok:
        predicted_ids = list(dict.fromkeys(r.study_id for r in pred_file.records))
        keep, dropped = check_ids(predicted_ids, ref_set.ids, problems, allow_missing=allow_missing,
                                  ignored=frozenset() if private else ref_set.excluded)
    problems.raise_if_any()
    if not keep:
        raise InputError("no study has both a prediction and a reference: nothing to score")
    attributes: dict[str, dict[str, Any]] = {}
    # A submitter's own `site` field would let them choose subgroups of a private set (one study each): ignored.
    for record in () if private else pred_file.records:
        if record.extra:
            attributes.setdefault(record.study_id, {}).update(record.extra)
    for study_id, extra in ref_set.attributes.items():  # the reference's site wins over a prediction's
        attributes.setdefault(study_id, {}).update(extra)
    return Inputs(study_ids=keep, hyps=[hyps[i] for i in keep], refs=[ref_set.texts[i] for i in keep],
                  attributes={i: attributes[i] for i in keep if i in attributes}, dropped=dropped,
                  predictions_source=str(predictions), references_source=ref_set.source, private=private)

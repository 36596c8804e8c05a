"""Scored runs read back for the explorer: values from ``per_study.parquet``, texts from where each run read them.

A run's ``results.json`` names its inputs (``inputs.predictions``, ``inputs.references``: a file, or
``dataset:split`` for references loaded by the dataset builders). The texts are read again from there, by the same
readers `rexrank score` used, and each study's text is checked against the digest the per-study table holds
(``hyp_sha256``, ``ref_sha256``), so the explorer never shows a text the run did not score. A file that moved or
changed is one error line naming it.
"""

from __future__ import annotations

import ast
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from rexrank.errors import InputError

# The subgroups the list filters on, in the order its controls show them.
NORMAL, SITE, VIEW, LENGTH = "normal", "site", "view", "length"
GROUPS = (NORMAL, SITE, VIEW, LENGTH)
GROUP_LABELS = {NORMAL: "Reference normal / abnormal", SITE: "Site", VIEW: "Views", LENGTH: "Reference length"}
# Reference length in words (the length limit's count, predictions.count_words), in thirds of the set.
LENGTH_BINS = ("short", "medium", "long")


@dataclass
class Run:
    """One scored run: its name, its results, each metric's per-study values and its predictions, both aligned with
    ``Explorer.study_ids`` (NaN / None where the run has no such study)."""

    name: str
    source: str
    results: dict[str, Any]
    frame: Any  # the per-study table, aligned with the explorer's studies (pandas)
    values: dict[str, np.ndarray]
    hyps: list[str | None]
    predictions_path: str


@dataclass
class Explorer:
    study_ids: list[str]
    refs: list[str]
    runs: list[Run]
    metrics: list[str]  # registry names, in the first run's order, those every run has first
    dataset: str | None
    track: str | None
    groups: dict[str, np.ndarray] = field(default_factory=dict)  # subgroup -> label per study (str, "" unknown)
    references_source: str = ""
    index: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.index = {sid: k for k, sid in enumerate(self.study_ids)}

    def __len__(self) -> int:
        return len(self.study_ids)


def _text_keys(texts: list[str]) -> list[str]:
    from rexrank.metrics.base import text_keys

    return text_keys(texts)


def _missing(run_source: str, role: str, path: str) -> InputError:
    return InputError(f"{run_source}: its {role} were read from {path}, which is not there now; put that file back "
                      "(a relative path counts from the folder `rexrank score` ran in: run explore from there)")


def _changed(run_source: str, role: str, path: str, differ: int, total: int) -> InputError:
    return InputError(f"{run_source}: {path} changed since the run scored it ({differ} of {total} studies' {role} "
                      "differ); explore needs the file as it was scored")


def _read_predictions(run_source: str, path: str, max_file_size_mb: float) -> dict[str, str]:
    from rexrank.evaluation.predictions import PREDICTION_FIELDS, Problems, check_values, read_report_file
    from rexrank.evaluation.references import prediction_picker

    if not Path(path).is_file():
        raise _missing(run_source, "predictions", path)
    problems = Problems()
    file = read_report_file(path, "predictions", problems, pick=prediction_picker(), text_fields=PREDICTION_FIELDS,
                            max_file_size_mb=max_file_size_mb)
    texts = check_values(file, "predictions", problems)
    if not file.ok:
        raise InputError(f"{run_source}: its predictions file {path} cannot be read now: "
                         + problems.render().splitlines()[-1].lstrip("- "))
    return texts


def _read_references(run_source: str, results: dict[str, Any], data_dir: str | os.PathLike | None,
                     max_file_size_mb: float):
    """(texts by id, site by id, where): the references as the run read them."""
    from rexrank.evaluation import references as refs_mod
    from rexrank.evaluation.predictions import Problems

    source = str(results.get("inputs", {}).get("references") or "")
    track = results.get("track")
    dataset, split = results.get("dataset"), results.get("split")
    problems = Problems()
    if dataset and source == f"{dataset}:{split}" and not Path(source).is_file():
        try:
            ref_set = refs_mod.from_dataset(dataset, split, track, data_dir, problems)
        except InputError as exc:
            first = str(exc).splitlines()[0]
            raise InputError(f"{run_source}: its references are {dataset} ({split}) on this disk, which cannot be "
                             f"loaded now ({first}); pass --data-dir with the folder the run read") from None
        where = f"{dataset} {split} (--data-dir {data_dir})" if data_dir else f"{dataset} {split}"
    else:
        if not source:
            raise InputError(f"{run_source}: results.json names no references file (inputs.references); "
                             "explore reads the texts from where the run read them")
        if not Path(source).is_file():
            raise _missing(run_source, "references", source)
        ref_set = refs_mod.from_file(source, track, problems, max_file_size_mb=max_file_size_mb)
        if not ref_set.ok:
            raise InputError(f"{run_source}: its references file {source} cannot be read now: "
                             + problems.render().splitlines()[-1].lstrip("- "))
        where = source
    sites = {sid: str(extra["site"]) for sid, extra in ref_set.attributes.items() if extra.get("site")}
    return ref_set.texts, sites, where


def _views_of(results: dict[str, Any], data_dir, ids: list[str]) -> dict[str, str]:
    """Each study's views ("frontal+lateral"), where the references say: a ReXrank JSON file's ``frontal_lateral``
    or the dataset's ``view_positions``. Empty when they do not."""
    source = str(results.get("inputs", {}).get("references") or "")
    raw: dict[str, Any] = {}
    if Path(source).is_file() and source.lower().endswith(".json"):
        from rexrank.evaluation.predictions import parse_json

        data, problem = parse_json(Path(source).read_text(encoding="utf-8", errors="replace"), position=False)
        if not problem and isinstance(data, dict):
            raw = {str(k): v.get("frontal_lateral") for k, v in data.items() if isinstance(v, dict)}
    views = {}
    for sid in ids:
        value = raw.get(sid)
        if isinstance(value, str):  # IU-Xray writes the list as its Python repr
            try:
                value = ast.literal_eval(value)
            except (ValueError, SyntaxError):
                value = [value]
        if isinstance(value, (list, tuple)) and value:
            names = sorted({str(v).strip().lower() for v in value if v not in (None, "")})
            views[sid] = "+".join(names)
    return views


def _length_bins(refs: list[str]) -> np.ndarray:
    from rexrank.evaluation.predictions import count_words

    words = np.array([count_words(t) for t in refs], dtype=float)
    if not len(words):
        return np.array([], dtype=object)
    low, high = np.quantile(words, np.linspace(0, 1, len(LENGTH_BINS) + 1)[1:-1])  # the thirds' edges
    out = np.where(words <= low, LENGTH_BINS[0], np.where(words <= high, LENGTH_BINS[1], LENGTH_BINS[2]))
    return out.astype(object)


def load(paths: list[str | os.PathLike], *, data_dir: str | os.PathLike | None = None,
         max_file_size_mb: float | None = None) -> Explorer:
    """Every run of ``paths`` (results folders or per_study.parquet files) with its texts; the studies are the
    first run's, then any other run's not yet listed."""
    import pandas as pd

    from rexrank.evaluation.aggregate import metric_columns
    from rexrank.evaluation.compare import load_run
    from rexrank.evaluation.disclosure import REFERENCE_HASH_COLUMN
    from rexrank.evaluation.predictions import DEFAULT_MAX_FILE_SIZE_MB
    from rexrank.evaluation.subgroups import NORMAL_COLUMN

    limit = DEFAULT_MAX_FILE_SIZE_MB if max_file_size_mb is None else max_file_size_mb
    if not paths:
        raise InputError("explore needs at least one `rexrank score` results folder")
    loaded = [load_run(p) for p in paths]
    for run in loaded:
        if run.results is None:
            raise InputError(f"{run.source}: no results.json beside the per-study table; explore needs it (it names "
                             "the files the run read)")
    for key in ("dataset", "split", "track"):
        values = {str(r.results.get(key)) for r in loaded}
        if len(values) > 1:
            raise InputError(f"the runs differ in {key} ({', '.join(sorted(values))}): explore runs scored on the "
                             "same test set and track")
    names: dict[str, int] = {}
    ids: list[str] = []
    seen: set[str] = set()
    for run in loaded:
        for sid in run.frame["study_id"].astype(str).tolist():
            if sid not in seen:
                seen.add(sid)
                ids.append(sid)
    first = loaded[0].results
    ref_texts, sites, where = _read_references(loaded[0].source, first, data_dir, limit)
    missing = [sid for sid in ids if sid not in ref_texts]
    if missing:
        raise InputError(f"{loaded[0].source}: {len(missing)} scored studies are not in its references ({where}), "
                         f"e.g. {missing[0]!r}; explore needs the references the run read")
    refs = [ref_texts[sid] for sid in ids]
    runs: list[Run] = []
    order: list[str] = []
    ref_keys = dict(zip(ids, _text_keys(refs)))  # each distinct text hashed once (metrics.base.text_keys)
    for run in loaded:
        frame = run.frame.copy()
        # Plain lists: iterating an Arrow-backed column element by element costs most of a 10,000-study load.
        own_ids = [str(s) for s in frame["study_id"].tolist()]
        frame["study_id"] = own_ids
        if REFERENCE_HASH_COLUMN in frame.columns:
            differ = sum(ref_keys[s] != k for s, k in zip(own_ids, frame[REFERENCE_HASH_COLUMN].tolist()))
            if differ:
                raise _changed(run.source, "references", where, differ, len(frame))
        pred_path = str(run.results.get("inputs", {}).get("predictions") or "")
        if not pred_path:
            raise InputError(f"{run.source}: results.json names no predictions file (inputs.predictions)")
        texts = _read_predictions(run.source, pred_path, limit)
        absent = [s for s in own_ids if s not in texts]
        if absent:
            raise _changed(run.source, "predictions", pred_path, len(absent), len(frame))
        if "hyp_sha256" in frame.columns:
            keys = _text_keys([texts[s] for s in own_ids])
            differ = sum(a != b for a, b in zip(keys, frame["hyp_sha256"].tolist()))
            if differ:
                raise _changed(run.source, "predictions", pred_path, differ, len(frame))
        aligned = frame.set_index("study_id").reindex(ids)
        columns = metric_columns(frame)
        values = {name: pd.to_numeric(aligned[column], errors="coerce").to_numpy(dtype=float)
                  for name, column in columns.items()}
        for name in columns:
            if name not in order:
                order.append(name)
        name = str(run.name)
        names[name] = names.get(name, 0) + 1
        if names[name] > 1:
            name = f"{name} ({names[name]})"
        present = set(own_ids)
        hyps = [texts[sid] if sid in present else None for sid in ids]
        runs.append(Run(name, run.source, run.results, aligned.reset_index(), values, hyps, pred_path))
    shared = [m for m in order if all(m in r.values for r in runs)]
    metrics = shared + [m for m in order if m not in shared]
    groups: dict[str, np.ndarray] = {}
    base = runs[0].frame
    if NORMAL_COLUMN in base.columns:
        normal = base[NORMAL_COLUMN]
        groups[NORMAL] = np.array(["" if pd.isna(v) else ("normal" if bool(v) else "abnormal") for v in normal],
                                  dtype=object)
    site_column = [sites.get(sid, "") for sid in ids]
    if "site" in base.columns:
        site_column = [s or ("" if pd.isna(v) else str(v)) for s, v in zip(site_column, base["site"])]
    if any(site_column):
        groups[SITE] = np.array(site_column, dtype=object)
    views = _views_of(first, data_dir, ids)
    if views:
        groups[VIEW] = np.array([views.get(sid, "") for sid in ids], dtype=object)
    groups[LENGTH] = _length_bins(refs)
    return Explorer(ids, refs, runs, metrics, first.get("dataset"), first.get("track"), groups, where)

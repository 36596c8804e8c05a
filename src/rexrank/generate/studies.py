"""What a model sees of one study: the chosen images, the context, the prompt. Built from any Study records.

Study records come from `rexrank.data.load` (a datasets.Dataset) or `rexrank.data.read_rexrank_json`; any iterable
of dicts with the Study columns works (only study_id and image_paths/images are required).

Trust boundary (docs/threat_model.md, layer 1): code under test is handed only what MODEL_INPUT_FIELDS (and, with
--context, CONTEXT_FIELDS) name. `model_view` is the one place that reads a Study record for a model: it *copies*
those keys, so findings, impression, the ground truth columns and any column added to the Study record later never
reach an adapter unless they are added to the list here. What the model's code can reach beyond what it is handed
is layer 2, the sandbox (adapters/sandbox.py).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rexrank.errors import ConfigError, InputError

IMAGE_MODES = ("auto", "all", "key")

# The allow-list: every field of a study that a model under test may receive. Declared once, here.
MODEL_INPUT_FIELDS = ("study_id", "image_paths", "key_image", "view_positions")
# Given to the model only when the user asks for it (--context): the study's indication/comparison text.
CONTEXT_FIELDS = ("context",)


@dataclass(frozen=True)
class StudyInput:
    index: int  # position in the input order: outputs are written in this order
    study_id: str
    images: tuple[str, ...]  # the images the model gets (all, or the key image), absolute paths
    all_images: tuple[str, ...]
    key_image: str | None
    views: tuple[str | None, ...]  # view positions of `images`
    context: str | None  # None when absent or when context is disabled
    prompt: str
    # The study as the model may see it: model_view() of the Study record (allow-listed fields only).
    record: Mapping[str, Any] = field(repr=False, compare=False)

    def missing_images(self) -> list[str]:
        return [p for p in self.images if not os.path.isfile(p)]

    def as_dict(self) -> dict[str, Any]:
        """The plain-dict form handed to entry-point models (allow-listed fields only)."""
        return {"study_id": self.study_id, "image_paths": list(self.images), "all_image_paths": list(self.all_images),
                "key_image": self.key_image, "view_positions": list(self.views), "context": self.context,
                "prompt": self.prompt, "record": _plain(self.record)}


def _plain(view: Mapping[str, Any]) -> dict[str, Any]:
    return {k: list(v) if isinstance(v, tuple) else v for k, v in view.items()}


def model_view(record: Mapping[str, Any], *, use_context: bool) -> dict[str, Any]:
    """The allow-listed fields of a Study record, copied one by one from MODEL_INPUT_FIELDS (+ CONTEXT_FIELDS when
    use_context), never the record minus some keys: a new dict sharing nothing with `record`. study_id as a string;
    image_paths and key_image absolute (key_image: the first image when the study names none); view_positions one
    per image (None if unknown); context None when absent or blank."""
    fields = MODEL_INPUT_FIELDS + (CONTEXT_FIELDS if use_context else ())
    return {name: _READERS[name](record) for name in fields}


def _study_id(record: Mapping[str, Any]) -> str | None:
    value = record.get("study_id")
    return None if value is None else str(value)


def _image_paths(record: Mapping[str, Any]) -> tuple[str, ...]:
    return tuple(os.path.abspath(p) for p in image_paths_of(record))


def _key_image(record: Mapping[str, Any]) -> str | None:
    key = record.get("key_image")
    if key:
        return os.path.abspath(os.fspath(key))
    paths = _image_paths(record)
    return paths[0] if paths else None


def _view_positions(record: Mapping[str, Any]) -> tuple[str | None, ...]:
    n = len(image_paths_of(record))
    views = [None if v is None else str(v) for v in (record.get("view_positions") or [])][:n]
    return tuple(views + [None] * (n - len(views)))


def _context(record: Mapping[str, Any]) -> str | None:
    context = record.get("context")
    return context if isinstance(context, str) and context.strip() else None


# How each allowed field is read. A field missing here cannot be allowed (KeyError): widening the allow-list is a
# deliberate, reviewed change to this module.
_READERS = {"study_id": _study_id, "image_paths": _image_paths, "key_image": _key_image,
            "view_positions": _view_positions, "context": _context}


def image_paths_of(record: Mapping[str, Any]) -> list[str]:
    """Image paths of a Study record: `image_paths`, else the `images` column (paths, or datasets
    Image(decode=False) dicts with a "path")."""
    paths = record.get("image_paths")
    if paths is None:
        paths = []
        for image in record.get("images") or []:
            path = image.get("path") if isinstance(image, Mapping) else image
            if not isinstance(path, str | os.PathLike):
                raise InputError(f"study {record.get('study_id')!r}: image {image!r} has no file path "
                                 "(rexrank generate reads images from disk)")
            paths.append(os.fspath(path))
    return [os.fspath(p) for p in paths]


def resolve_image_mode(requested: str, multi_image: bool, model_name: str) -> str:
    """'all' or 'key'. 'auto' follows the model's capability; 'all' on a single-image model is an error."""
    if requested not in IMAGE_MODES:
        raise ConfigError(f"Unknown --images {requested!r}. Available: {', '.join(IMAGE_MODES)}")
    if requested == "auto":
        return "all" if multi_image else "key"
    if requested == "all" and not multi_image:
        raise ConfigError(f"{model_name} takes one image per study; use --images key (or auto).")
    return requested


def build_inputs(records: Iterable[Mapping[str, Any]], *, image_mode: str, use_context: bool,
                 prompt_template: str) -> list[StudyInput]:
    """StudyInputs in input order, built from model_view() only. Duplicate or empty study ids are an error (outputs
    are keyed by id)."""
    from rexrank.generate.prompts import render_prompt

    inputs: list[StudyInput] = []
    seen: set[str] = set()
    for index, record in enumerate(records):
        view = model_view(record, use_context=use_context)
        study_id = view["study_id"]
        if study_id is None or study_id == "":
            raise InputError(f"study #{index} has no study_id")
        if study_id in seen:
            raise InputError(f"study id {study_id!r} appears twice in the input; ids must be unique")
        seen.add(study_id)
        all_images, views, key = list(view["image_paths"]), list(view["view_positions"]), view["key_image"]
        if image_mode == "key":
            images = [key] if key else []
            chosen_views = [views[all_images.index(key)]] if key in all_images else [None] * len(images)
        else:
            images, chosen_views = all_images, views
        context = view.get("context")
        prompt = render_prompt(prompt_template, context=context, n_images=len(images), views=chosen_views)
        inputs.append(StudyInput(index, study_id, tuple(images), tuple(all_images), key, tuple(chosen_views),
                                 context, prompt, view))
    return inputs


def rexrank_record(record: Mapping[str, Any], image_root: str) -> dict[str, Any]:
    """The ReXrank-JSON entry of a Study record (the shape of data/IU-Xray/ReXRank_IUXray_*.json), image paths
    relative to ``image_root`` as upstream's are (never the host's absolute paths: the file may be shared).

    Holds the reference sections of open test sets: written to the run's predictions.json by the harness, never
    given to a model. A private set's sections are left out: the run folder is where code under test works, so a
    resumed run's script could otherwise read an earlier pass's file (score against the dataset instead).
    """
    from rexrank.data.study import findings_impression_text

    findings, impression = record.get("findings"), record.get("impression")
    key = record.get("key_image")
    entry: dict[str, Any] = {
        "key_image_path": relative_path(key, image_root) if key else key,
        "image_path": [relative_path(p, image_root) for p in image_paths_of(record)],
    }
    if not private_dataset(record.get("dataset")):
        if findings is not None or impression is not None:
            entry["report"] = findings_impression_text(findings, impression)
        entry.update({"section_findings": findings, "section_impression": impression})
    for source, target in (("split", "split"), ("view_positions", "frontal_lateral"), ("context", "context")):
        if record.get(source) is not None:
            entry[target] = record[source]
    return entry


def image_root_of(records: Iterable[Mapping[str, Any]]) -> str:
    """The deepest folder holding every image of ``records`` (absolute; the working folder when they have none):
    what the run's files name images relative to when the caller names no image root."""
    folders = [os.path.dirname(os.path.abspath(p)) for record in records
               for p in [*image_paths_of(record), *([record["key_image"]] if record.get("key_image") else [])]]
    return os.path.commonpath(folders) if folders else os.getcwd()


def relative_path(path: str | os.PathLike, root: str) -> str:
    """``path`` relative to ``root``, in the forward-slash form of upstream's JSON files."""
    return os.path.relpath(os.path.abspath(os.fspath(path)), root).replace(os.sep, "/")


def private_dataset(dataset: Any) -> bool:
    """Whether a Study record's ``dataset`` names a private catalog test set (a user's own name: no)."""
    from rexrank.data.catalog import canonical_dataset, is_private
    from rexrank.errors import UnknownNameError

    try:
        return dataset is not None and is_private(canonical_dataset(str(dataset)))
    except UnknownNameError:  # a user's own input JSON names no catalog dataset
        return False


def script_entry(study: StudyInput, root: str) -> dict[str, Any]:
    """The upstream inference.py input entry of one study, from the allow-listed fields only: image_path and
    key_image_path relative to `root` (absolute), frontal_lateral (views of image_path), context with --context."""
    entry: dict[str, Any] = {
        "image_path": [os.path.relpath(p, root) for p in study.images],
        "key_image_path": os.path.relpath(study.key_image, root) if study.key_image else None,
        "frontal_lateral": list(study.views),
    }
    if study.context is not None:
        entry["context"] = study.context
    return entry

"""What a model sees of one study: the chosen images, the context, the prompt. Built from any Study records.

Study records come from `rexrank.data.load` (a datasets.Dataset) or `rexrank.data.read_rexrank_json`; any iterable
of dicts with the Study columns works (only study_id and image_paths/images are required).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rexrank.errors import ConfigError, InputError

IMAGE_MODES = ("auto", "all", "key")


@dataclass(frozen=True)
class StudyInput:
    index: int  # position in the input order: outputs are written in this order
    study_id: str
    images: tuple[str, ...]  # the images the model gets (all, or the key image)
    all_images: tuple[str, ...]
    key_image: str | None
    views: tuple[str | None, ...]  # view positions of `images`
    context: str | None  # None when absent or when context is disabled
    prompt: str
    record: Mapping[str, Any] = field(repr=False, compare=False)

    def missing_images(self) -> list[str]:
        return [p for p in self.images if not os.path.isfile(p)]

    def as_dict(self) -> dict[str, Any]:
        """The plain-dict form handed to entry-point models."""
        return {"study_id": self.study_id, "image_paths": list(self.images), "all_image_paths": list(self.all_images),
                "key_image": self.key_image, "view_positions": list(self.views), "context": self.context,
                "prompt": self.prompt, "record": dict(self.record)}


def image_paths_of(record: Mapping[str, Any]) -> list[str]:
    """Absolute image paths of a Study record: `image_paths`, else the `images` column (paths, or
    datasets Image(decode=False) dicts with a "path")."""
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
    """StudyInputs in input order. Duplicate or empty study ids are an error (outputs are keyed by id)."""
    from rexrank.generate.prompts import render_prompt

    inputs: list[StudyInput] = []
    seen: set[str] = set()
    for index, record in enumerate(records):
        study_id = record.get("study_id")
        if study_id is None or str(study_id) == "":
            raise InputError(f"study #{index} has no study_id")
        study_id = str(study_id)
        if study_id in seen:
            raise InputError(f"study id {study_id!r} appears twice in the input; ids must be unique")
        seen.add(study_id)
        all_images = image_paths_of(record)
        views = list(record.get("view_positions") or [])
        views += [None] * (len(all_images) - len(views))
        key = record.get("key_image")
        key = os.fspath(key) if key else (all_images[0] if all_images else None)
        if image_mode == "key":
            images = [key] if key else []
            chosen_views = [views[all_images.index(key)]] if key in all_images else [None] * len(images)
        else:
            images, chosen_views = all_images, views[: len(all_images)]
        context = record.get("context") if use_context else None
        context = context if isinstance(context, str) and context.strip() else None
        prompt = render_prompt(prompt_template, context=context, n_images=len(images), views=chosen_views)
        inputs.append(StudyInput(index, study_id, tuple(images), tuple(all_images), key, tuple(chosen_views),
                                 context, prompt, record))
    return inputs


def rexrank_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """The ReXrank-JSON entry of a Study record (the shape of data/IU-Xray/ReXRank_IUXray_*.json), absolute paths."""
    from rexrank.data.study import findings_impression_text

    findings, impression = record.get("findings"), record.get("impression")
    entry: dict[str, Any] = {
        "key_image_path": record.get("key_image"),
        "image_path": image_paths_of(record),
    }
    if findings is not None or impression is not None:
        entry["report"] = findings_impression_text(findings, impression)
    entry.update({"section_findings": findings, "section_impression": impression})
    for source, target in (("split", "split"), ("view_positions", "frontal_lateral"), ("context", "context")):
        if record.get(source) is not None:
            entry[target] = record[source]
    return entry

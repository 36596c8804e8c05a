"""A Python entry point as the model: `package.module:function` (or `path/to/file.py:function`).

The target gets a batch of studies as plain dicts (StudyInput.as_dict: study_id, image_paths, all_image_paths,
key_image, view_positions, context, prompt, record) built from the allow-listed fields only (studies.MODEL_INPUT_FIELDS;
`record` is that allow-listed view, never the Study record with its findings/impression), and returns one report
string per study, in order.
A class target is instantiated once per process with the --model-arg options (and device=, if it takes one), and the
instance is called with each batch; a function target is called as function(studies, **model_args).
Optional attributes on the target: multi_image (default True), uses_prompt (default True), uses_context
(default: uses_prompt), version.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import re
import sys
from pathlib import Path
from typing import Any

from rexrank.errors import ConfigError
from rexrank.generate.adapters.base import Adapter
from rexrank.generate.studies import StudyInput

_MODULE_TARGET = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


def looks_like_entry_point(spec: str) -> bool:
    module, _, attr = spec.rpartition(":")
    return bool(_MODULE_TARGET.match(spec)) or (module.endswith(".py") and bool(attr))


def resolve_target(spec: str) -> Any:
    module_name, _, attr = spec.rpartition(":")
    if not module_name or not attr:
        raise ConfigError(f"Entry point {spec!r} must look like package.module:function or file.py:function")
    if module_name.endswith(".py"):
        path = Path(module_name).expanduser()
        if not path.is_file():
            raise ConfigError(f"Entry point file {path} does not exist")
        name = f"rexrank_entry_{abs(hash(str(path.resolve())))}"
        module_spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module
        try:
            module_spec.loader.exec_module(module)
        except Exception as exc:  # noqa: BLE001 - the user's module failed to import: say which and why
            raise ConfigError(f"Importing {path} failed: {type(exc).__name__}: {exc}") from None
    else:
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise ConfigError(f"Cannot import {module_name!r} for entry point {spec!r}: {exc}") from None
    target: Any = module
    for part in attr.split("."):
        if not hasattr(target, part):
            raise ConfigError(f"{module_name} has no attribute {attr!r} (entry point {spec!r})")
        target = getattr(target, part)
    if not callable(target):
        raise ConfigError(f"Entry point {spec!r} is not callable")
    return target


class EntryPointAdapter(Adapter):
    def __init__(self, spec: str, model_args: dict[str, Any] | None = None):
        self.spec = spec
        self.name = spec
        self.model_args = dict(model_args or {})
        self.target = resolve_target(spec)
        self.multi_image = bool(getattr(self.target, "multi_image", True))
        self.uses_prompt = bool(getattr(self.target, "uses_prompt", True))
        self.uses_context = bool(getattr(self.target, "uses_context", self.uses_prompt))
        self._call = None

    def config(self) -> dict[str, Any]:
        return {"adapter": "entrypoint", "target": self.spec, "args": self.model_args,
                "version": getattr(self.target, "version", None)}

    def load(self, device: str) -> None:
        if inspect.isclass(self.target):
            kwargs = dict(self.model_args)
            if _accepts(self.target, "device"):
                kwargs.setdefault("device", device)
            try:
                self._call = self.target(**kwargs)
            except TypeError as exc:
                raise ConfigError(f"Cannot create {self.spec} with --model-arg {kwargs}: {exc}") from None
        else:
            args = dict(self.model_args)
            if _accepts(self.target, "device"):
                args.setdefault("device", device)
            self._call = lambda studies: self.target(studies, **args)

    def prepare(self, batch: list[StudyInput]) -> list[dict]:
        return [study.as_dict() for study in batch]

    def generate(self, prepared: list[dict]) -> list[str]:
        reports = self._call(prepared)
        if isinstance(reports, str | bytes) or not hasattr(reports, "__len__"):
            raise TypeError(f"{self.spec} must return a list of report strings, got {type(reports).__name__}")
        reports = list(reports)
        if len(reports) != len(prepared):
            raise ValueError(f"{self.spec} returned {len(reports)} reports for {len(prepared)} studies")
        return reports


def _accepts(func: Any, name: str) -> bool:
    try:
        parameters = inspect.signature(func).parameters
    except (TypeError, ValueError):
        return False
    return name in parameters or any(p.kind is p.VAR_KEYWORD for p in parameters.values())

"""``RexrankMetric``: the ``evaluate.Metric`` every module in ``metrics/<slug>/<slug>.py`` subclasses.

It holds what every module did alike, so a module file declares only its own facts as class attributes
(``slug``, ``own_options``, ``description``, ``inputs_description`` with the runnable examples, ``citation``,
``codebase_urls``, ``reference_urls``; ``configs``/``hints`` where it has them) and its explicit
``_compute(self, predictions, references, ...)`` (evaluate's module check forbids ``**kwargs`` there):

- ``__init__`` takes the module's own options (``own_options``) and evaluate's constructor options
  (``common.init_kwargs``); any other name is a ConfigError naming the module's options, never silently ignored.
  The own options become the ``rexrank.metrics.get`` config (``configure``; a module with a different mapping
  overrides it).
- ``_info`` is built from the class attributes; every module takes string ``predictions`` and ``references``.
- ``_download_and_prepare`` loads the metric once (``rexrank.metrics.get``, looked up at call time so evaluate's
  CI-style patchers see it) and keeps its fingerprint; ``compute`` reuses both.
- ``score`` shapes a result with ``common.compute`` from the loaded metric.

The class is abstract (``_compute`` is an abstract method): ``evaluate.loading.import_main_class`` takes the first
non-abstract ``EvaluationModule`` subclass in a module's namespace, so a module that imports this class by name
still has its own class picked. What it reads: only the keyword arguments of ``evaluate.load``; what it changes:
nothing outside the instance.
"""

from __future__ import annotations

import abc
from typing import Any, ClassVar

import datasets
import evaluate

import rexrank.metrics
from rexrank.errors import ConfigError
from rexrank.evaluate_modules import common


# What every module's inputs and shared result keys mean, said once; a module's inputs_description is
# `describe(...)` of its own parts around these.
ARGS = ("    predictions (`list` of `str`): generated reports, one per study.\n"
        "    references (`list` of `str`): reference reports, same length and order as `predictions`.\n")
SHARED_RETURNS = {
    "{warning}": ("    warning (`str` or None): the flags and any pairs without a score, in words; None when all is "
                  "well.\n"),
    "{n_nan}": "    n_nan (`int`): pairs without a score.\n",
}


def describe(options: str, returns: str, examples: str, args: str = "") -> str:
    """A module's inputs_description: its ``options`` (of evaluate.load), ``Args:`` (ARGS, then its own ``args``),
    ``Returns:`` (its ``returns``, where a line ``{warning}`` or ``{n_nan}`` stands for the shared one) and
    ``Examples:`` (runnable: doctest and evaluate's module check run them)."""
    for mark, line in SHARED_RETURNS.items():
        returns = returns.replace(mark + "\n", line)
    return f"\n{options}Args:\n{ARGS}{args}Returns:\n{returns}Examples:\n{examples}"


class RexrankMetric(evaluate.Metric, metaclass=abc.ABCMeta):
    """Base of rexrank's evaluate modules (see the module docstring); a subclass declares its facts."""

    slug: ClassVar[str]  # the folder name: evaluate.load("rexrank/<slug>"), and the registry name by default
    own_options: ClassVar[tuple[str, ...]] = ()  # the module's keyword options of evaluate.load, in order
    description: ClassVar[str]
    inputs_description: ClassVar[str]
    citation: ClassVar[str]
    codebase_urls: ClassVar[tuple[str, ...]] = ()
    reference_urls: ClassVar[tuple[str, ...]] = ()
    # config_name -> registry name, for a module with named variants that are separate metrics; None: one metric.
    configs: ClassVar[dict[str, str] | None] = None
    # What `evaluate.load("rexrank/<slug>", ...)` lists as the valid config names in its error.
    config_choices: ClassVar[tuple[str, ...] | None] = None
    hints: ClassVar[dict[str, str] | None] = None  # a tempting wrong option -> what to pass instead

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "description" in vars(cls):
            # evaluate's convention: the class docstring carries the description and the runnable examples
            # (doctest.testmod of the module runs them).
            evaluate.utils.file_utils.add_start_docstrings(cls.description, cls.inputs_description)(cls)

    def __init__(self, **options: Any) -> None:
        # evaluate.load forwards its extra keyword arguments here; evaluate's own options go to the base class,
        # the module's own to its metric, and anything else is refused rather than silently ignored.
        own = {name: options.pop(name) for name in self.own_options if name in options}
        super().__init__(**common.init_kwargs(self.module_name, options, owner=type(self), hints=self.hints))
        if self.configs is not None and self.config_name not in self.configs:
            choices = self.config_choices or tuple(self.configs)
            raise ConfigError(f"{self.module_name}: unknown config_name {self.config_name!r}. "
                              f"Available: {', '.join(choices)}")
        self.metric_config = self.configure(**{name: own.get(name) for name in self.own_options})

    @property
    def module_name(self) -> str:
        return f"rexrank/{self.slug}"

    def configure(self, options: dict[str, Any] | None = None, **named: Any) -> dict[str, Any]:
        """The ``rexrank.metrics.get`` config: the named options left at None are omitted; ``options`` (a dict of
        any other option of the metric) is merged in (naming one twice is Python's TypeError, as a call would)."""
        return common.metric_config(**named, **(options or {}))

    def registry_name(self) -> str:
        """The rexrank metric this module loads (its config's, for a module with named variants)."""
        return self.configs[self.config_name] if self.configs is not None else self.slug

    def _info(self) -> evaluate.MetricInfo:
        return evaluate.MetricInfo(
            description=self.description,
            citation=self.citation,
            inputs_description=self.inputs_description,
            features=datasets.Features({"predictions": datasets.Value("string"),
                                        "references": datasets.Value("string")}),
            codebase_urls=list(self.codebase_urls),
            reference_urls=list(self.reference_urls),
        )

    def _download_and_prepare(self, dl_manager) -> None:
        # Weights (or the metric's other resources) load here, once; every compute call reuses them.
        self.metric = rexrank.metrics.get(self.registry_name(), **self.metric_config)
        self.prepare(self.metric)
        self.fingerprint = self.metric.fingerprint

    def prepare(self, metric) -> None:
        """Check the loaded metric's resources before the first compute (METEOR finds its jar and Java)."""

    def score(self, predictions, references, **shape: Any) -> dict[str, Any]:
        """``common.compute`` with the loaded metric, its fingerprint and evaluate's process count."""
        return common.compute(self.metric, predictions, references, fingerprint=self.fingerprint,
                              processes=self.num_process, **shape)

    @abc.abstractmethod
    def _compute(self, predictions, references):
        """Each module names its own keywords here (evaluate's check refuses ``**kwargs``)."""

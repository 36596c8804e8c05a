"""Hugging Face evaluate's own module check, run over every folder in metrics/ as evaluate's CI runs it.

``LocalModuleTest.test_load`` of huggingface/evaluate (tests/test_metric_common.py, evaluate 0.4.x), reproduced step
by step from the repository root:

1. ``evaluate.loading.evaluation_module_factory("metrics/<slug>", module_type="metric")`` and
   ``importlib.import_module`` of the ``module_path`` it returns (the module copied into evaluate's modules cache);
2. ``evaluate.loading.import_main_class``; its ``_compute`` takes no ``**kwargs``;
3. inside its ``patch_intensive_calls(<slug>)`` and ``use_local_metrics("metric")`` (``evaluate.load`` replaced by
   ``load(os.path.join("metrics", name), ...)``: evaluate's mapping, unchanged), with ``doctest.ELLIPSIS_MARKER``
   set to ``"[...]"``: ``doctest.testmod(module, raise_on_error=True)`` with 0 failed and more than 1 attempted.

The examples load each module by its local folder (``rexrank.evaluate_modules.module_path``, absolute, which
``os.path.join("metrics", ...)`` keeps as it is), so they run unchanged under that mapping and for a user.

evaluate's CI registers an intensive-calls patcher for each module that would download or run a large model
(bertscore, bleurt, comet: it patches the library's model loader). Ours do the same for the model-backed modules:
the patcher replaces ``rexrank.metrics.get`` (the one call through which every module loads its metric) with one
that adds the random-weight stand-ins (``rexrank.testing.standins``) and, for the LLM judges, a short generation
budget to the configuration the example built. Everything else runs as written; nothing here proves real numbers.
"""

from __future__ import annotations

import doctest
import importlib
import inspect
import os
from contextlib import contextmanager
from pathlib import Path
from unittest.mock import patch

import pytest

from test_evaluate_modules import SLUGS, _require, standin_options

REPO = Path(__file__).resolve().parents[1]


def local_module_names() -> list[str]:
    """Every module folder, found as evaluate's get_local_module_names finds them (``./metrics/*/``)."""
    return sorted(p.name for p in (REPO / "metrics").glob("*/") if p.is_dir() and not p.name.startswith((".", "_")))


def standin_config(slug: str, standins) -> dict:
    """The configuration entries that point module ``slug``'s metric at its stand-ins: the module options
    test_evaluate_modules.standin_options gives (one owner), as the module hands them to rexrank.metrics.get."""
    options = dict(standin_options(slug, standins))
    options.update(options.pop("options", {}))  # a module's `options` dict is flattened into the metric config
    if slug == "ce_f1":  # CE F1 reads SembScore's CheXbert labels: its weights sit in the `semb` entry
        return {"semb": options}
    return options


@contextmanager
def patch_intensive_calls(slug: str, standins):
    """evaluate's patch_intensive_calls for our modules: stand-ins in place of the official weights (the model-free
    modules run as they are)."""
    config = standin_config(slug, standins)
    if not config:
        yield
        return
    import rexrank.metrics

    real_get = rexrank.metrics.get

    def get(name, **example_config):
        # The module's own metric is named after it (radcliq -> radcliq_v1/v0, radgraph -> radgraph_partial); a
        # composite's later calls for its components (RadCliQ's radgraph, CE F1's semb) pass through as they are.
        if name == slug or name.startswith(slug + "_"):
            example_config = {**example_config, **config}
        return real_get(name, **example_config)

    with patch("rexrank.metrics.get", side_effect=get):
        yield


@contextmanager
def use_local_metrics(evaluation_module_type: str):
    """evaluate's own mapping: evaluate.load(name, ...) -> load(os.path.join("metrics", name), ...)."""
    from evaluate import load

    def load_local_metric(evaluation_module_name, *args, **kwargs):
        return load(os.path.join(evaluation_module_type + "s", evaluation_module_name), *args, **kwargs)

    with patch("evaluate.load") as mock_load:
        mock_load.side_effect = load_local_metric
        yield


def test_every_folder_is_checked():
    """The check runs over every module folder (as evaluate's glob finds them), not a list that could fall behind."""
    assert local_module_names() == sorted(SLUGS)


@pytest.mark.parametrize("slug", local_module_names())
def test_evaluate_module_check(slug, standins, monkeypatch):
    """evaluate's LocalModuleTest.test_load for metrics/<slug> (steps in the module docstring)."""
    import evaluate

    _require(slug)  # a missing optional extra (medspacy, Java) skips locally and fails in CI
    monkeypatch.chdir(REPO)  # evaluate's CI runs from its repository root
    monkeypatch.setattr(doctest, "ELLIPSIS_MARKER", "[...]")
    evaluation_module = importlib.import_module(
        evaluate.loading.evaluation_module_factory(os.path.join("metrics", slug), module_type="metric").module_path)
    evaluation_instance = evaluate.loading.import_main_class(evaluation_module.__name__)
    parameters = inspect.signature(evaluation_instance._compute).parameters
    assert all(p.kind != p.VAR_KEYWORD for p in parameters.values()), f"{slug}._compute takes **kwargs"
    with patch_intensive_calls(slug, standins), use_local_metrics("metric"):
        try:
            results = doctest.testmod(evaluation_module, verbose=False, raise_on_error=True)
        except doctest.UnexpectedException as exc:
            raise exc.exc_info[1]  # the exception the example raised, as evaluate's test re-raises it
    assert results.failed == 0
    assert results.attempted > 1

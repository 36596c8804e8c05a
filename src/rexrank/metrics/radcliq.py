"""RadCliQ-v1 and RadCliQ-v0: the linear composites of RadGraph, BERTScore, SembScore and BLEU-2.

Official definition (rajpurkarlab/CXR-Report-Metric @9c9ecad39be6cb2be8e75be1d1c50ef8888a3e40,
CXRMetric/run_eval.py and the pickles beside it):

- RadCliQ-v1 (``radcliq-v1.pkl``, a ``CompositeMetric``): standardise the four per-report features
  [radgraph_combined, bertscore, semb_score, bleu_score] with its own StandardScaler, append a constant 1, and
  take the dot product with [coefs..., intercept].
- RadCliQ-v0 (``normalizer.pkl`` + ``composite_metric_model.pkl``): a StandardScaler followed by an sklearn
  LinearRegression, i.e. ``scaled @ coef_ + intercept_``.

Both are the same affine map with different constants, so one functional core serves both. Lower is better.
The leaderboard shows ``1 / mean(per-report RadCliQ-v1)`` — never a mean of reciprocals: per-report values can
be negative (a perfect report scores -1.4407).

The constants below are copied digit for digit from those pickles (as extracted into the project's
reference/radcliq_constants.json); tests/test_radcliq.py checks them against that file when it is present.
The package never reads that file at run time.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from rexrank.errors import ConfigError, InputError
from rexrank.metrics import REGISTRY
from rexrank.metrics.aggregation import RECIPROCAL_OF_MEAN, aggregate
from rexrank.metrics.base import Metric

# Feature order of both pickles (CXR-Report-Metric's CompositeMetric input columns).
FEATURE_ORDER = ("radgraph_combined", "bertscore", "semb_score", "bleu_score")
# Registry names of those features, same order (the metric spec's `components`).
COMPONENTS = ("radgraph", "bertscore", "semb", "bleu2")


@dataclass(frozen=True)
class LinearComposite:
    """A StandardScaler followed by a linear model: value = ((x - mean) / scale) @ coefs + intercept."""

    name: str
    scaler_mean: tuple[float, float, float, float]
    scaler_scale: tuple[float, float, float, float]
    coefs: tuple[float, float, float, float]
    intercept: float

    def __call__(self, features: np.ndarray) -> np.ndarray:
        scaled = (features - np.asarray(self.scaler_mean)) / np.asarray(self.scaler_scale)
        return scaled @ np.asarray(self.coefs) + self.intercept


# rajpurkarlab/CXR-Report-Metric @9c9ecad, CXRMetric/radcliq-v1.pkl: CompositeMetric.scaler (StandardScaler,
# n_samples_seen 160) and CompositeMetric.coefs (5 values: 4 feature weights, then the intercept). The BLEU weight
# is ~4e-12: RadCliQ-v1 effectively ignores BLEU.
RADCLIQ_V1 = LinearComposite(
    name="radcliq_v1",
    scaler_mean=(0.5379231241355762, 0.6175725628125001, 0.7647942121140658, 0.44738335396242174),
    scaler_scale=(0.3028258411486429, 0.22430938459304575, 0.2539439110169773, 0.2989271671041838),
    coefs=(-0.37708368261038905, -0.37030009974480316, -0.25261621789593225, 4.315048405024756e-12),
    intercept=2.466552561323256e-10,
)

# rajpurkarlab/CXR-Report-Metric @9c9ecad, CXRMetric/normalizer.pkl (StandardScaler, n_samples_seen 200) and
# CXRMetric/composite_metric_model.pkl (LinearRegression coef_ and intercept_).
RADCLIQ_V0 = LinearComposite(
    name="radcliq_v0",
    scaler_mean=(0.5398376019082272, 0.6312549595000001, 0.7716797866672277, 0.4607372064809605),
    scaler_scale=(0.3018344440559102, 0.22466950746141123, 0.24750333805236252, 0.30336670936092264),
    coefs=(-0.4796252644863446, -0.6762170542369337, -0.46366575161751994, 0.2165861905287535),
    intercept=1.641666666666666,
)


def _features(radgraph, bertscore, semb, bleu) -> tuple[np.ndarray, tuple[int, ...]]:
    """Stack the four components into an (n, 4) float array; all must have the same shape."""
    arrays = [np.asarray(a, dtype=np.float64) for a in (radgraph, bertscore, semb, bleu)]
    shape = arrays[0].shape
    for name, array in zip(FEATURE_ORDER, arrays):
        if array.shape != shape:
            shapes = ", ".join(f"{n}={a.shape}" for n, a in zip(FEATURE_ORDER, arrays))
            raise InputError(f"RadCliQ components differ in shape ({shapes}); {name} does not match radgraph")
    return np.stack([a.reshape(-1) for a in arrays], axis=1), shape


def _apply(model: LinearComposite, radgraph, bertscore, semb, bleu) -> np.ndarray | float:
    features, shape = _features(radgraph, bertscore, semb, bleu)
    values = model(features)
    # A NaN in any component makes that report's RadCliQ NaN (the matmul already does; this states it).
    values[np.isnan(features).any(axis=1)] = np.nan
    values = values.reshape(shape)
    return float(values) if shape == () else values


def radcliq_v1(radgraph, bertscore, semb, bleu) -> np.ndarray | float:
    """Per-report RadCliQ-v1 from the four component arrays (RadGraph combined F1, BERTScore F1, SembScore, BLEU-2).

    Scalars in -> a float out; arrays in -> an array of the same shape. Lower is better.
    """
    return _apply(RADCLIQ_V1, radgraph, bertscore, semb, bleu)


def radcliq_v0(radgraph, bertscore, semb, bleu) -> np.ndarray | float:
    """Per-report RadCliQ-v0 (the 2023 composite: its own scaler + linear regression). Lower is better."""
    return _apply(RADCLIQ_V0, radgraph, bertscore, semb, bleu)


def leaderboard_value(values) -> float:
    """What the ReXrank leaderboard shows: 1 / mean(per-report RadCliQ-v1), never the mean of reciprocals.

    The value and its NaN rule are ``rexrank.metrics.aggregation.aggregate``'s (the one every rexrank output
    uses): NaN values are left out of the mean; a mean of 0 gives NaN; a negative mean's reciprocal is returned.
    A float cannot carry the NaN count or the flag, so both are reported as a RuntimeWarning; call ``aggregate``
    for them as data.
    """
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    if values.size == 0:
        raise InputError("leaderboard_value needs at least one RadCliQ value")
    summary = aggregate(values, RECIPROCAL_OF_MEAN)
    notes = ([f"{summary.n_nan} NaN value(s) of {values.size} left out of the mean"] if summary.n_nan else []) + list(
        summary.flags)
    if notes:
        # The caller asked for one number: say what it hides instead of hiding it.
        warnings.warn(f"RadCliQ leaderboard value: {'; '.join(notes)}", RuntimeWarning, stacklevel=2)
    return summary.leaderboard_value


class _RadCliQ(Metric):
    """Computes the four components through the registry, then applies the composite.

    ``RadCliQv1(radgraph={...}, bertscore={...}, semb={...}, bleu2={...}, device=..., batch_size=...)``: each
    component takes its own config (``model=`` etc.); ``device`` and ``batch_size`` are shared defaults for the
    model-backed components, overridden by a component's own value.
    """

    composite: LinearComposite

    def __init__(self, *, radgraph: Mapping[str, Any] | None = None, bertscore: Mapping[str, Any] | None = None,
                 semb: Mapping[str, Any] | None = None, bleu2: Mapping[str, Any] | None = None,
                 device: str | None = None, batch_size: int | None = None):
        given = {"radgraph": radgraph, "bertscore": bertscore, "semb": semb, "bleu2": bleu2}
        self.component_configs: dict[str, dict[str, Any]] = {}
        for name in COMPONENTS:
            value = given[name]
            if value is not None and not isinstance(value, Mapping):
                raise ConfigError(f"{self.spec.name}: {name}= takes a dict of that metric's options "
                                  f"(e.g. {{'model': PATH}}), not {type(value).__name__}")
            config = dict(value or {})
            if REGISTRY.spec(name).needs_model:
                for key, shared in (("device", device), ("batch_size", batch_size)):
                    if shared is not None:
                        config.setdefault(key, shared)
            self.component_configs[name] = config
        self._components: dict[str, Metric] | None = None

    @property
    def components(self) -> dict[str, Metric]:
        """The component metric objects, built on first use (building may load models)."""
        if self._components is None:
            from rexrank.metrics import get

            self._components = {name: get(name, **cfg) for name, cfg in self.component_configs.items()}
            if self.text_cache is not None:
                for metric in self._components.values():
                    metric.use_text_cache(self.text_cache)
        return self._components

    def use_text_cache(self, cache):
        super().use_text_cache(cache)
        if self._components is not None:
            for metric in self._components.values():
                metric.use_text_cache(cache)
        return self

    def config(self) -> dict[str, Any]:
        return {"composite": self.composite.name,
                "components": {name: metric.fingerprint for name, metric in self.components.items()},
                "component_configs": {name: metric.config() for name, metric in self.components.items()}}

    @classmethod
    def combine(cls, arrays: Mapping[str, np.ndarray]) -> np.ndarray:
        """Per-report values from already computed component arrays keyed by registry name (rexrank.score)."""
        missing = [name for name in COMPONENTS if name not in arrays]
        if missing:
            raise InputError(f"{cls.spec.name} needs the component arrays {', '.join(COMPONENTS)}; "
                             f"missing: {', '.join(missing)}")
        values = _apply(cls.composite, *(arrays[name] for name in COMPONENTS))
        return np.atleast_1d(np.asarray(values, dtype=np.float64))

    def component_scores(self, hyps: list[str], refs: list[str]) -> dict[str, np.ndarray]:
        return {name: metric.score(hyps, refs) for name, metric in self.components.items()}

    def _score(self, hyps, refs):
        return self.combine(self.component_scores(hyps, refs))

    def _score_details(self, hyps, refs):
        """The composite first, then the four component columns it was computed from."""
        import pandas as pd

        from rexrank.metrics.base import check_pairs

        hyps, refs = check_pairs(hyps, refs)
        parts = self.component_scores(hyps, refs) if hyps else {name: np.zeros(0) for name in COMPONENTS}
        frame = {self.spec.name: self.combine(parts) if hyps else np.zeros(0)}
        frame.update({REGISTRY.spec(name).column: values for name, values in parts.items()})
        return pd.DataFrame(frame)


class RadCliQv1(_RadCliQ):
    spec = REGISTRY.spec("radcliq_v1")
    composite = RADCLIQ_V1


class RadCliQv0(_RadCliQ):
    spec = REGISTRY.spec("radcliq_v0")
    composite = RADCLIQ_V0

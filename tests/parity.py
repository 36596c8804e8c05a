"""One parity tester for every metric: rexrank's metric and its reference on the same inputs and weights.

torchmetrics' ``MetricTester`` is the model: one harness, and each metric's parity test a short subclass that names
its reference. A subclass (a ``Test...`` class in the metric's test module) declares

- ``metric`` (the registry name), ``reference_script`` (``tests/reference/<script>``, run in .venv-ref by the
  ``run_reference`` fixture) and ``versions`` (package -> the version its reference output must report; a prefix
  such as "4." pins a major version);
- ``compared``: (our name, the reference's key) pairs, and ``atol``, the one tolerance they are compared with;
- ``make_pairs`` (the texts), ``reference_payload`` (what the reference script is sent) and, for model-backed
  metrics, an ``options`` fixture (the keyword options of ``rexrank.metrics.get``: stand-in weights, device).

The harness runs the reference once per class (class-scoped ``reference``), computes ours on the same pairs
(``ours``: ``score`` and the ``score_details`` columns named in ``compared``, or ``compute`` for a corpus metric)
and checks every compared name within ``atol``, the reference's versions, and that the inputs make the comparison
meaningful (our first compared values vary over the natural pairs by more than ``min_spread``). A metric's other
parity checks (labels, sentences, resamples) are extra test methods of its subclass and compare with
``assert_close``, so they use the same declared tolerance. A metric run under another configuration (idf, raw
scores, a convention) is another subclass, overriding what differs.

A parity test of something that is not a registry metric scoring text pairs (the PTB tokenizer, RadCliQ-v1's formula
on features, the ReXrank RadGraph column on annotations, the Arena's Bradley-Terry fit on votes) is a subclass too:
its ``make_pairs`` returns its own inputs (texts, features, votes), ``function`` names the function under test (the
class's scorer) and ``compute_ours`` applies it; its script reports "versions" as the others do. Compared texts
(token strings, prompts) are compared exactly (``assert_close`` on strings; ``atol`` is 0 there). A BERTScore-style
metric subclasses ``FPRParityTester``, which owns its F/P/R column pairs and their tolerance.

Each comparison must still fail when a constant of rexrank's metric changes: the tolerances are those the tests
had before this harness (tests/README.md lists each with the mutations it was seen to catch).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np
import pytest


@dataclass(frozen=True)
class Pairs:
    """Hypotheses and references, scored pair by pair; the last ``n_edge`` pairs are built edge cases (empty,
    whitespace, non-ASCII, long...), the others texts whose scores vary naturally."""

    hyps: list[str]
    refs: list[str]
    n_edge: int = 0

    def __post_init__(self):
        assert len(self.hyps) == len(self.refs), (len(self.hyps), len(self.refs))

    @classmethod
    def with_edges(cls, hyps, refs, edge_pairs=()) -> Pairs:
        edge_pairs = list(edge_pairs)
        return cls(list(hyps) + [h for h, _ in edge_pairs], list(refs) + [r for _, r in edge_pairs], len(edge_pairs))

    @property
    def natural(self) -> slice:
        return slice(0, len(self.hyps) - self.n_edge)

    def head(self, n: int) -> Pairs:
        """The first ``n`` natural pairs and every edge case."""
        tail = slice(len(self.hyps) - self.n_edge, None) if self.n_edge else slice(0, 0)
        return Pairs(self.hyps[:n] + self.hyps[tail], self.refs[:n] + self.refs[tail], self.n_edge)


def iu_reports(iu_xray_test: dict, field: str = "report", n: int | None = None) -> list[str]:
    """The IU-Xray test split's texts of one field, in file order (../shared), the first ``n``."""
    texts = [study[field] for study in iu_xray_test.values()]
    return texts if n is None else texts[:n]


def shifted(refs: list[str], by: int = 1) -> list[str]:
    """Each reference's hypothesis is another study's report (the next ``by``-th, wrapping)."""
    return refs[by:] + refs[:by]


class ParityTester:
    """Base of every metric's parity test class (not collected itself: its name does not start with "Test")."""

    metric: ClassVar[str]
    reference_script: ClassVar[str]
    versions: ClassVar[dict[str, str]] = {}
    compared: ClassVar[tuple[tuple[str, str], ...]]
    atol: ClassVar[float]
    # Our first compared values must vary this much (std) over the natural pairs, or the stand-in does not separate
    # reports and equal numbers would prove little; None where the subclass checks its inputs otherwise.
    min_spread: ClassVar[float | None] = 0.01
    corpus: ClassVar[bool] = False  # compare compute()'s outputs instead of per-pair values
    # The function under test where it is not a registry metric (set as staticmethod(f)); the scorer is then f.
    function: ClassVar[Any] = None

    # -- what a subclass declares -----------------------------------------------------------------------------------
    def make_pairs(self, iu_xray_test: dict) -> Pairs:  # pragma: no cover - every subclass declares its inputs
        raise NotImplementedError

    def reference_payload(self, pairs: Pairs, options: dict) -> dict:
        return {"hyps": pairs.hyps, "refs": pairs.refs}

    def theirs(self, reference: dict) -> dict[str, Any]:
        """The reference's output as {key: values}; a subclass reshapes it where its script nests the numbers."""
        return reference

    def compute_ours(self, metric, pairs: Pairs, options: dict) -> dict[str, Any]:
        """Our values by the names in ``compared``, from the class's scorer (``metrics.get(metric, **options)``)."""
        names = {ours for ours, _ in self.compared}
        if self.corpus:
            return metric.compute(pairs.hyps, pairs.refs)
        out: dict[str, Any] = {}
        if "score" in names:
            out["score"] = metric.score(pairs.hyps, pairs.refs)
        if names - {"score"}:
            details = metric.score_details(pairs.hyps, pairs.refs)
            out.update({name: details[name].to_numpy() for name in names - {"score"}})
        return out

    # -- fixtures ---------------------------------------------------------------------------------------------------
    @pytest.fixture(scope="class")
    def pairs(self, iu_xray_test) -> Pairs:
        return self.make_pairs(iu_xray_test)

    @pytest.fixture(scope="class")
    def options(self) -> dict:
        """Keyword options of ``rexrank.metrics.get`` (a model-backed metric's subclass overrides this fixture)."""
        return {}

    @pytest.fixture(scope="class")
    def reference(self, run_reference, pairs, options) -> dict:
        return run_reference(self.reference_script, self.reference_payload(pairs, options))

    @pytest.fixture(scope="class")
    def scorer(self, options):
        if self.function is not None:
            return self.function
        from rexrank import metrics

        return metrics.get(self.metric, **options)

    @pytest.fixture(scope="class")
    def ours(self, scorer, pairs, options) -> dict[str, Any]:
        return self.compute_ours(scorer, pairs, options)

    # -- the comparison ---------------------------------------------------------------------------------------------
    def assert_close(self, ours, theirs, what: str, atol: float | None = None) -> None:
        """Every value within the declared tolerance (or ``atol``); shapes equal; NaN only where the reference has
        NaN."""
        atol = self.atol if atol is None else atol
        if isinstance(ours, str) or isinstance(theirs, str) or any(
                isinstance(v, str) for v in [*np.ravel(np.asarray(ours, dtype=object)),
                                             *np.ravel(np.asarray(theirs, dtype=object))]):
            # Texts (tokens, prompts): equal, or the first differences named.
            ours, theirs = list(ours), list(theirs)
            assert len(ours) == len(theirs), f"{self.metric} {what}: {len(ours)} texts, reference {len(theirs)}"
            differing = [i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b]
            shown = "\n".join(f"  #{i}: reference {theirs[i]!r}\n       ours {ours[i]!r}" for i in differing[:10])
            assert not differing, (f"{self.metric} {what}: {len(ours) - len(differing)}/{len(ours)} texts equal "
                                   f"{self.reference_script}'s; first differences:\n{shown}")
            return
        ours, theirs = np.asarray(ours, dtype=np.float64), np.asarray(theirs, dtype=np.float64)
        assert ours.shape == theirs.shape, f"{self.metric} {what}: shape {ours.shape}, reference {theirs.shape}"
        np.testing.assert_allclose(ours, theirs, rtol=0, atol=atol,
                                   err_msg=f"{self.metric} {what} vs {self.reference_script} (tolerance {atol})")

    def test_reference_is_the_declared_version(self, reference):
        found = reference.get("versions", {})
        for package, version in self.versions.items():
            assert str(found.get(package, "")).startswith(version), (package, found)

    def test_values_equal_the_reference(self, ours, reference):
        theirs = self.theirs(reference)
        for our_name, their_name in self.compared:
            self.assert_close(ours[our_name], theirs[their_name], f"{our_name} / {their_name}")

    def test_inputs_make_the_comparison_meaningful(self, ours, pairs):
        assert self.min_spread is not None, "declare min_spread, or override this test with the metric's own check"
        first = np.asarray(ours[self.compared[0][0]], dtype=np.float64)
        natural = getattr(pairs, "natural", slice(None))  # inputs that are not Pairs are all natural
        assert np.std(first[natural]) > self.min_spread, "the inputs do not separate reports"


# -- stand-ins the parity tests share ---------------------------------------------------------------------------------
def centred_chexbert(files: dict, texts: list[str], folder) -> dict:
    """The CheXbert stand-in with each head's bias set to -W @ mean([CLS]) over ``texts`` (weights untouched), saved
    under ``folder``; {"semb": checkpoint, "semb_backbone": the stand-in's backbone}.

    On the random stand-in the [CLS] vectors of all reports are close, so most heads give one class for every report
    and a swap of two condition names (or of two codes, or of the uncertain convention) would be invisible; centred,
    every head splits the reports over its classes and any two heads disagree on many of them. Any bias is a valid
    checkpoint: both sides load this same file, and the embeddings (and so the cosines) are the plain stand-in's.
    """
    import torch

    from rexrank import metrics
    from rexrank.metrics.chexbert import CONDITIONS

    semb = metrics.get("semb", model=files["semb"], backbone=files["semb_backbone"], device="cpu")
    mean = torch.from_numpy(semb.embeddings(list(dict.fromkeys(texts))).mean(axis=0)).double()
    state = torch.load(files["semb"], map_location="cpu", weights_only=True)["model_state_dict"]
    for k in range(len(CONDITIONS)):
        weight = state[f"module.linear_heads.{k}.weight"].double()
        state[f"module.linear_heads.{k}.bias"] = (-(weight @ mean)).float()
    path = folder / "chexbert.pth"
    torch.save({"model_state_dict": state}, path)
    return {"semb": str(path), "semb_backbone": files["semb_backbone"]}


class FPRParityTester(ParityTester):
    """A BERTScore-style metric (bertscore, radeval_bertscore): our F1 (``f1_column``: "score", or the metric's own
    column where it is not rescaled) and the ``<metric>_precision`` / ``_recall`` detail columns against the
    reference's F, P and R, within 1e-5 (float32 embeddings, summed in another order)."""

    atol = 1e-5
    f1_column: ClassVar[str] = "score"

    @property
    def compared(self) -> tuple[tuple[str, str], ...]:
        return ((self.f1_column, "F"), (f"{self.metric}_precision", "P"), (f"{self.metric}_recall", "R"))

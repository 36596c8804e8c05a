"""RadCliQ-v1 end to end through rexrank.score once RadGraph exists (issue 3 item 5): all four components
computed from stand-in models, and the composite equals the formula applied to those component columns."""

from __future__ import annotations

import numpy as np
import pytest
from parity import Pairs, ParityTester, iu_reports

import rexrank
from rexrank.metrics.radcliq import radcliq_v1


def test_radcliq_v1_computes_all_four_components(standins, iu_xray_test):
    radgraph = standins("radgraph")["radgraph"]
    bertscore = standins("bertscore")["bertscore"]
    semb = standins("semb")
    reports = [study["report"] for study in iu_xray_test.values()]
    hyps, refs = reports[:6] + [""], reports[1:7] + ["No acute disease."]
    df = rexrank.score(hyps, refs, metrics=["radcliq_v1"], device="cpu",
                       model_paths={"radgraph": radgraph, "bertscore": bertscore, "semb": semb["semb"]},
                       metric_configs={"semb": {"backbone": semb["semb_backbone"]}})
    for column in ("radgraph_combined", "bertscore", "semb_score", "bleu_score", "radcliq_v1"):
        assert column in df.columns and df[column].notna().all(), column
    expected = radcliq_v1(df["radgraph_combined"].to_numpy(), df["bertscore"].to_numpy(),
                          df["semb_score"].to_numpy(), df["bleu_score"].to_numpy())
    np.testing.assert_allclose(df["radcliq_v1"].to_numpy(), expected, rtol=0, atol=1e-12)
    alone = rexrank.metrics.get("radgraph", model=radgraph, device="cpu").score(hyps, refs)
    np.testing.assert_array_equal(df["radgraph_combined"].to_numpy(), alone)
    assert df["radgraph_combined"].iloc[-1] == 0.0
    assert df["radgraph_combined"].iloc[:6].mean() > 0  # neighbouring IU reports share findings


def _annotation(*entities):
    """An annotation from (tokens, label, [(relation, object number)]) triples, numbered from "1"."""
    return {"text": "", "entities": {str(i): {"tokens": t, "label": lab, "start_ix": i, "end_ix": i,
                                              "relations": [list(r) for r in rels]}
                                     for i, (t, lab, rels) in enumerate(entities, start=1)}}


_EFFUSION = ("effusion", "OBS-DP", [("located_at", "2")])
# Annotations that differ only where a set rule could slip: an object's label, the relation type or direction, an
# entity's label, no relations on either side, all equal, nothing on either side.
SET_EDGES = [
    [_annotation(_EFFUSION, ("pleural", "ANAT-DP", [])), _annotation(_EFFUSION, ("pleural", "OBS-DP", []))],
    [_annotation(_EFFUSION, ("pleural", "ANAT-DP", [])),
     _annotation(("effusion", "OBS-DP", [("modify", "2")]), ("pleural", "ANAT-DP", []))],
    [_annotation(_EFFUSION, ("pleural", "ANAT-DP", [])),
     _annotation(("effusion", "OBS-DP", []), ("pleural", "ANAT-DP", [("located_at", "1")]))],
    [_annotation(("effusion", "OBS-U", []), ("pleural", "ANAT-DP", [])),
     _annotation(("effusion", "OBS-DP", []), ("pleural", "ANAT-DP", []))],
    [_annotation(("effusion", "OBS-DP", [])), _annotation(("effusion", "OBS-DP", []))],
    [_annotation(_EFFUSION, ("pleural", "ANAT-DP", [])), _annotation(_EFFUSION, ("pleural", "ANAT-DP", []))],
    [_annotation(), _annotation()],
]


class TestRadGraphColumnParity(ParityTester):
    """ReXrank's RadGraph column ((entity F1 + relation F1) / 2) equals radeval 2.2.1's RadGraphRadCliQ on the same
    annotations (tests/reference/radeval_radcliq_ref.py): the stand-in's, for neighbouring IU-Xray reports that share
    findings, a report's opening sentences against the whole report, an empty report, a report against itself and a
    report with no relation; then the hand-built SET_EDGES."""

    metric = "radgraph"
    reference_script = "radeval_radcliq_ref.py"
    versions = {"radeval": "2.2.1"}
    compared = (("score", "radgraph_radcliq"),)
    atol = 1e-12
    min_spread = None  # test_inputs_make_the_comparison_meaningful below checks overlaps and relations

    @pytest.fixture(scope="class")
    def options(self, standins):
        return {"model": standins("radgraph")["radgraph"], "device": "cpu"}

    @pytest.fixture(scope="class")
    def pairs(self, scorer, iu_xray_test):
        reports = iu_reports(iu_xray_test)
        openings = [". ".join(r.split(". ")[:2]) for r in reports[30:40]]
        related = next(r for r, a in zip(reports, scorer.annotate(reports[:40]))
                       if any(e["relations"] for e in a["entities"].values()))
        return Pairs(reports[:24] + openings + ["", related, "Normal."],
                     reports[1:25] + reports[30:40] + ["No acute disease.", related, "No acute disease."])

    @pytest.fixture(scope="class")
    def annotations(self, scorer, pairs):
        return [list(p) for p in zip(scorer.annotate(pairs.hyps), scorer.annotate(pairs.refs))]

    @pytest.fixture(scope="class")
    def reference(self, run_reference, annotations):
        return run_reference(self.reference_script, {"pairs": annotations + SET_EDGES, "features": []})


    def theirs(self, reference):
        values = reference["radgraph_radcliq"]
        return {"radgraph_radcliq": values[:-len(SET_EDGES)], "set_edges": values[-len(SET_EDGES):]}

    def test_set_edges_equal_radeval(self, reference):
        from rexrank.metrics.radgraph import combined_scores

        edges = [combined_scores(h, r)[2] for h, r in SET_EDGES]
        self.assert_close(edges, self.theirs(reference)["set_edges"], "SET_EDGES")
        assert len(set(edges)) >= 4

    def test_inputs_make_the_comparison_meaningful(self, scorer, ours, pairs, annotations):
        # Partial overlaps, entity and relation F1 apart, relations on both sides.
        score = ours["score"]
        assert ((0 < score) & (score < 1)).sum() >= 8 and score[-2] == pytest.approx(1.0)
        details = scorer.score_details(pairs.hyps, pairs.refs)
        assert (details["radgraph_entity_f1"] != details["radgraph_relation_f1"]).sum() >= 8
        assert sum(bool(e["relations"]) for h, r in annotations for a in (h, r) for e in a["entities"].values()) > 10

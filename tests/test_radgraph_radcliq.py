"""RadCliQ-v1 end to end through rexrank.score once RadGraph exists (issue 3 item 5): all four components
computed from stand-in models, and the composite equals the formula applied to those component columns."""

from __future__ import annotations

import numpy as np

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

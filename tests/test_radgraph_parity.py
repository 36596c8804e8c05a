"""Parity with radgraph 0.1.18 (run in .venv-ref on transformers 4.57) on the same random-weight archive.

One reference run (module fixture) annotates IU-Xray test reports (the "report" field: findings + impression),
odd inputs and reports longer than the encoder's 512 positions, under both pre-tokenisations (radgraph and
radgraph-xl archives), and scores pairs with F1RadGraph and with CXR-Report-Metric's combined formula.
"""

from __future__ import annotations

import pytest


ODD = ["", "   \n ", "\u200b \u200b \u200b", "no acute\u200b disease .", "(((( ))))", "x" * 300, "effusion",
       "Café — naïve “quotes” 10% ±2 mm; 日本語 ☃", "Heart size normal/. Lungs clear/? 3.5cm, left-sided 10%)."]


@pytest.fixture(scope="module")
def cases(standins, iu_xray_test, tmp_path_factory):
    from rexrank.testing import standin_radgraph

    reports = [study["report"] for study in iu_xray_test.values()]
    xl_archive = standin_radgraph.build(tmp_path_factory.mktemp("radgraph_xl"), "small", 0,
                                        model_type="radgraph-xl")["radgraph_xl"]
    main = reports[:36] + ODD + [" ".join(reports[40:52]), " ".join(reports[52:72])]  # 2 and 3 encoder segments
    hyps = reports[100:124] + [reports[130], reports[131], "", "No acute disease.", "   "]
    refs = reports[101:125] + [reports[130], reports[131].lower(), "Lungs clear.", "", "Heart normal."]
    return {
        "radgraph": {"archive": standins("radgraph")["radgraph"], "model_type": "radgraph", "reports": main,
                     "pairs": {"hyps": hyps[:-1], "refs": refs[:-1]}},  # the package crashes on blank reports
        "radgraph-xl": {"archive": xl_archive, "model_type": "radgraph-xl", "reports": reports[200:212] + ODD[2:]},
    }


@pytest.fixture(scope="module")
def reference(cases, run_reference):
    out = run_reference("radgraph_ref.py", {"jobs": list(cases.values()), "threads": 1})
    return dict(zip(cases, out["results"]))


@pytest.mark.parametrize("model_type", ["radgraph", "radgraph-xl"])
def test_annotations_identical_to_radgraph_0_1_18(cases, reference, model_type):
    """Same words, entities (overlapping spans included), labels and relations (self-relations included), in the
    same order and numbering, for every report the package can annotate; batch 32 vs the package's batch 1."""
    from rexrank.metrics.radgraph.inference import Annotator

    job = cases[model_type]
    ours = Annotator(job["archive"], device="cpu").annotate(job["reports"], batch_size=32)
    compared = 0
    for i, (theirs, mine) in enumerate(zip(reference[model_type]["annotations"], ours)):
        if job["reports"][i] == "":  # the package annotates the word "None" instead (see the last test)
            assert theirs["text"] == "None" and mine == {"text": "", "entities": {}}
            continue
        if "error" in theirs:  # only blank reports crash the package; ours gives no entities
            assert not job["reports"][i].strip() and mine == {"text": "", "entities": {}}, theirs
            continue
        assert mine == theirs, f"report {i}: {job['reports'][i][:80]!r}"
        compared += 1
    assert compared >= len(job["reports"]) - 2
    entities = [len(a["entities"]) for a in ours]
    relations = [sum(len(e["relations"]) for e in a["entities"].values()) for a in ours]
    assert sum(entities) > 5 * len(ours) and sum(relations) > len(ours)  # the stand-in exercises decoding


def test_stand_in_reproduces_package_quirks(cases, reference):
    """The parity set really contains the quirks: overlapping entity spans and entity self-relations."""
    annotations = [a for a in reference["radgraph"]["annotations"] if "entities" in a]
    overlapping = self_relations = 0
    for a in annotations:
        spans = [(e["start_ix"], e["end_ix"]) for e in a["entities"].values()]
        overlapping += any(s1 != s2 and s1[0] <= s2[1] and s2[0] <= s1[1] for s1 in spans for s2 in spans)
        self_relations += sum(rel[1] == key for key, e in a["entities"].items() for rel in e["relations"])
    assert overlapping > 0 and self_relations > 0


def test_reward_levels_identical_to_f1radgraph(cases, reference):
    """F1RadGraph(reward_level=simple/partial/complete) per pair, bit for bit, empty reports included."""
    from rexrank.metrics.radgraph import RadGraphRewardComplete, RadGraphRewardPartial, RadGraphRewardSimple

    job = cases["radgraph"]
    hyps, refs = job["pairs"]["hyps"], job["pairs"]["refs"]
    for cls in (RadGraphRewardSimple, RadGraphRewardPartial, RadGraphRewardComplete):
        ours = cls(model=job["archive"], device="cpu").score(hyps, refs).tolist()
        assert ours == reference["radgraph"]["rewards"][cls.level], cls.level


def test_combined_identical_to_cxr_report_metric_on_package_annotations(cases, reference):
    """ReXrank's radgraph_combined computed by the reference script from the package's own annotations."""
    from rexrank.metrics.radgraph import RadGraphCombined

    job = cases["radgraph"]
    ours = RadGraphCombined(model=job["archive"], device="cpu").score(job["pairs"]["hyps"], job["pairs"]["refs"])
    assert ours.tolist() == reference["radgraph"]["combined"]
    assert 0 < ours.mean() < 1


def test_empty_report_differs_from_the_package_annotation_on_purpose(cases, reference):
    """The package annotates "" as the word "None"; we give no entities, like CXR-Report-Metric, which skips
    empty (NaN) reports. Scores agree either way: F1RadGraph scores empty pairs 0 before annotating."""
    from rexrank.metrics.radgraph.inference import Annotator

    job = cases["radgraph"]
    package = reference["radgraph"]["annotations"][job["reports"].index("")]
    assert package["text"] == "None"
    assert Annotator(job["archive"], device="cpu").annotate([""]) == [{"text": "", "entities": {}}]
    empty_pairs = [i for i, (h, r) in enumerate(zip(job["pairs"]["hyps"], job["pairs"]["refs"])) if not h or not r]
    assert empty_pairs and all(reference["radgraph"]["rewards"]["partial"][i] == 0.0 for i in empty_pairs)

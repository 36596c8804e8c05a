"""Parity with radgraph 0.1.18 (run in .venv-ref on transformers 4.57) on the same random-weight archive.

One reference run (the parity class's) annotates IU-Xray test reports (the "report" field: findings + impression),
odd inputs and reports longer than the encoder's 512 positions, under both pre-tokenisations (radgraph and
radgraph-xl archives), and scores pairs with F1RadGraph and with CXR-Report-Metric's combined formula.
"""

from __future__ import annotations

import pytest
from parity import Pairs, ParityTester, iu_reports

from rexrank import metrics


ODD = ["", "   \n ", "\u200b \u200b \u200b", "no acute\u200b disease .", "(((( ))))", "x" * 300, "effusion",
       "Café — naïve “quotes” 10% ±2 mm; 日本語 ☃", "Heart size normal/. Lungs clear/? 3.5cm, left-sided 10%)."]


LEVELS = ("simple", "partial", "complete")


class TestRadGraphParity(ParityTester):
    """F1RadGraph's reward levels and ReXrank's combined RadGraph score per pair, bit for bit, empty reports
    included (the package crashes on blank ones: not sent), and every annotation identical, under both
    pre-tokenisations (radgraph and radgraph-xl archives)."""

    metric = "radgraph"
    reference_script = "radgraph_ref.py"
    versions = {"radgraph": "0.1.18", "transformers": "4."}
    compared = (("radgraph", "combined"),) + tuple((f"radgraph_{level}", level) for level in LEVELS)
    atol = 0.0

    @pytest.fixture(scope="class")
    def cases(self, standins, iu_xray_test, tmp_path_factory):
        from rexrank.testing import standin_radgraph

        reports = iu_reports(iu_xray_test)
        xl_archive = standin_radgraph.build(tmp_path_factory.mktemp("radgraph_xl"), "small", 0,
                                            model_type="radgraph-xl")["radgraph_xl"]
        main = reports[:36] + ODD + [" ".join(reports[40:52]), " ".join(reports[52:72])]  # 2 and 3 encoder segments
        pairs = self.make_pairs(iu_xray_test)
        return {
            "radgraph": {"archive": standins("radgraph")["radgraph"], "model_type": "radgraph", "reports": main,
                         "pairs": {"hyps": pairs.hyps, "refs": pairs.refs}},
            "radgraph-xl": {"archive": xl_archive, "model_type": "radgraph-xl", "reports": reports[200:212] + ODD[2:]},
        }

    def make_pairs(self, iu_xray_test):
        reports = iu_reports(iu_xray_test)
        # The last four: a report with itself, with its lower-cased self, and an empty side each; the package
        # crashes on a blank report, so none is sent.
        return Pairs.with_edges(reports[100:124], reports[101:125],
                                [(reports[130], reports[130]), (reports[131], reports[131].lower()),
                                 ("", "Lungs clear."), ("No acute disease.", "")])

    @pytest.fixture(scope="class")
    def options(self, cases):
        return {"model": cases["radgraph"]["archive"], "device": "cpu"}

    @pytest.fixture(scope="class")
    def reference(self, cases, run_reference):
        out = run_reference(self.reference_script, {"jobs": list(cases.values()), "threads": 1})
        return {"versions": out["versions"], **dict(zip(cases, out["results"]))}

    def compute_ours(self, metric, pairs, options):
        out = {"radgraph": metric.score(pairs.hyps, pairs.refs)}
        for level in LEVELS:
            out[f"radgraph_{level}"] = metrics.get(f"radgraph_{level}", **options).score(pairs.hyps, pairs.refs)
        return out

    def theirs(self, reference):
        return {"combined": reference["radgraph"]["combined"], **reference["radgraph"]["rewards"]}

    def test_inputs_make_the_comparison_meaningful(self, ours, reference):
        """The parity set really contains the package's quirks (overlapping entity spans, entity self-relations),
        and the combined score is neither 0 nor 1 throughout."""
        annotations = [a for a in reference["radgraph"]["annotations"] if "entities" in a]
        overlapping = self_relations = 0
        for a in annotations:
            spans = [(e["start_ix"], e["end_ix"]) for e in a["entities"].values()]
            overlapping += any(s1 != s2 and s1[0] <= s2[1] and s2[0] <= s1[1] for s1 in spans for s2 in spans)
            self_relations += sum(rel[1] == key for key, e in a["entities"].items() for rel in e["relations"])
        assert overlapping > 0 and self_relations > 0
        assert 0 < ours["radgraph"].mean() < 1

    @pytest.mark.parametrize("model_type", ["radgraph", "radgraph-xl"])
    def test_annotations_identical_to_radgraph_0_1_18(self, cases, reference, model_type):
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

    def test_empty_report_differs_from_the_package_annotation_on_purpose(self, cases, reference, pairs):
        """The package annotates "" as the word "None"; we give no entities, like CXR-Report-Metric, which skips
        empty (NaN) reports. Scores agree either way: F1RadGraph scores empty pairs 0 before annotating."""
        from rexrank.metrics.radgraph.inference import Annotator

        job = cases["radgraph"]
        package = reference["radgraph"]["annotations"][job["reports"].index("")]
        assert package["text"] == "None"
        assert Annotator(job["archive"], device="cpu").annotate([""]) == [{"text": "", "entities": {}}]
        empty_pairs = [i for i, (h, r) in enumerate(zip(pairs.hyps, pairs.refs)) if not h or not r]
        assert empty_pairs and all(reference["radgraph"]["rewards"]["partial"][i] == 0.0 for i in empty_pairs)

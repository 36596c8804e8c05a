"""Corpus BLEU-1..4, ROUGE-L and CIDEr-D (rexrank.metrics.nlg) against pycocoevalcap 1.2 itself, in .venv-ref.

Reference: tests/reference/nlg_ref.py runs pycocoevalcap's Bleu(4), Rouge() and Cider() scorers, after its Java
PTBTokenizer when "tokenize" is true. The texts: IU-Xray test reports (../shared), each scored against another
study's report, plus identical, empty-ish and repeated pairs.
"""

from __future__ import annotations

import random

import numpy as np
import pytest
from parity import Pairs, ParityTester

from rexrank.errors import ConfigError
from rexrank.metrics import get, nlg

N_PAIRS = 150


class TestNLGParity(ParityTester):
    """Corpus BLEU-1..4, ROUGE-L and CIDEr-D of rexrank's pure-Python PTB tokenisation and scorers on raw IU-Xray
    reports equal pycocoevalcap's (its Java PTBTokenizer, then its scorers) to 1e-12; the tokens, the scores on
    pycocoevalcap's own tokens (per study too) and the BLEU of bootstrap resamples as well."""

    metric = "nlg"
    reference_script = "nlg_ref.py"
    versions = {"pycocoevalcap": "1.2"}
    compared = tuple((name, name) for name in ("bleu_1", "bleu_2", "bleu_3", "bleu_4", "rouge_l", "cider"))
    atol = 1e-12
    corpus = True

    def make_pairs(self, iu_xray_test):
        reports = [s["report"] for s in iu_xray_test.values() if s.get("report")]
        refs = reports[:N_PAIRS]
        hyps = [reports[(i + 7) % len(reports)] for i in range(N_PAIRS)]
        hyps[3], hyps[4] = refs[3], refs[4].upper()  # identical; identical up to case (PTB lower-cases)
        hyps[5] = "No acute cardiopulmonary abnormality."
        refs[6] = refs[5]  # a repeated reference: CIDEr-D counts it as two documents, as pycocoevalcap does
        return Pairs(hyps, refs)

    @staticmethod
    def subsets(n: int) -> list[list[int]]:
        """Two bootstrap resamples of the pairs (duplicates included)."""
        rng = random.Random(3)
        return [[rng.randrange(n) for _ in range(n)] for _ in range(2)]

    def reference_payload(self, pairs, options):
        return {"hyps": pairs.hyps, "refs": pairs.refs, "tokenize": True, "subsets": self.subsets(len(pairs.refs))}

    def theirs(self, reference):
        return {**{f"bleu_{k}": reference["bleu"][k - 1] for k in range(1, 5)},
                "rouge_l": reference["rouge_l"], "cider": reference["cider"]}

    def test_inputs_make_the_comparison_meaningful(self, reference):
        assert np.std(reference["rouge_l_each"]) > 0.01 and np.std(reference["cider_each"]) > 0.01

    def test_ptb_tokens_equal_pycocoevalcap(self, pairs, reference):
        """rexrank's pure-Python PTB tokenisation gives the Java PTBTokenizer's tokens, report by report."""
        assert nlg.tokenize(pairs.hyps) == reference["tokens"]["hyps"]
        assert nlg.tokenize(pairs.refs) == reference["tokens"]["refs"]

    def test_scores_equal_pycocoevalcap_on_its_own_tokens(self, reference):
        """The scoring alone: pycocoevalcap's PTB tokens in, every number equal (tokenizer=none scores them as
        given), per study too."""
        hyps, refs = reference["tokens"]["hyps"], reference["tokens"]["refs"]
        stats = get("nlg", tokenizer="none").statistics(hyps, refs)
        values = dict(zip(nlg.OUTPUTS, nlg.corpus_values(stats.sum(axis=0), len(stats))))
        theirs = self.theirs(reference)
        for name, _ in self.compared:
            self.assert_close(values[name], theirs[name], name)
        self.assert_close(stats[:, nlg.STATISTICS.index("nlg_rouge_l")], reference["rouge_l_each"],
                          "per-study ROUGE-L")
        self.assert_close(stats[:, nlg.STATISTICS.index("nlg_cider")], reference["cider_each"], "per-study CIDEr-D")

    def test_bleu_resamples_are_pycocoevalcap_on_the_resampled_corpus(self, pairs, reference):
        """A bootstrap resample's BLEU from summed count vectors is exactly pycocoevalcap's BLEU of that corpus
        (duplicates included); ROUGE-L is its mean. CIDEr-D keeps the full set's document frequencies by design."""
        hyps, refs = reference["tokens"]["hyps"], reference["tokens"]["refs"]
        stats = get("nlg", tokenizer="none").statistics(hyps, refs)
        for subset, theirs in zip(self.subsets(len(pairs.refs)), reference["subsets"]):
            counts = np.bincount(subset, minlength=len(refs)).astype(float)
            values = dict(zip(nlg.OUTPUTS, nlg.corpus_values(counts @ stats, len(subset))))
            self.assert_close([values[f"bleu_{k}"] for k in range(1, 5)], theirs["bleu"], "resampled corpus BLEU")
            self.assert_close(values["rouge_l"], theirs["rouge_l"], "resampled ROUGE-L")


def test_lcs_matches_the_dynamic_programme():
    rng = random.Random(0)
    for _ in range(300):
        a = [rng.choice("abcde") for _ in range(rng.randrange(0, 30))]
        b = [rng.choice("abcde") for _ in range(rng.randrange(0, 30))]
        table = [[0] * (len(b) + 1) for _ in range(len(a) + 1)]
        for i in range(1, len(a) + 1):
            for j in range(1, len(b) + 1):
                table[i][j] = (table[i - 1][j - 1] + 1 if a[i - 1] == b[j - 1]
                               else max(table[i - 1][j], table[i][j - 1]))
        assert nlg._lcs(a, b) == table[len(a)][len(b)]


def test_rouge_l_and_cider_d_constants_by_hand(monkeypatch):
    """pycocoevalcap's ROUGE-L beta (1.2) and CIDEr-D's length penalty exp(-delta^2 / (2 sigma^2)), sigma 6, on
    values worked by hand (the parity class compares everything else, refvenv)."""
    lcs, prec, rec = 2, 2 / 4, 2 / 3  # "a b c d" against "a c e": the common subsequence "a c"
    assert nlg.rouge_l("a b c d", "a c e") == pytest.approx((1 + 1.44) * prec * rec / (rec + 1.44 * prec), abs=1e-12)
    corpus = nlg.CiderCorpus(["the heart is normal", "small left effusion", "no acute disease here today"])
    hyp, ref = "the heart is normal size today", "the heart is normal"  # 5 bigrams against 3: delta 2
    penalised = corpus.score(hyp, ref)
    monkeypatch.setattr(nlg, "CIDER_SIGMA", float("inf"))  # no length penalty
    assert penalised / corpus.score(hyp, ref) == pytest.approx(np.exp(-4 / (2 * 36)), abs=1e-12)


def test_cider_depends_on_the_corpus_and_its_fingerprint_says_so():
    hyps, refs = ["the heart is normal", "no effusion"], ["heart size is normal", "no pleural effusion"]
    metric = get("nlg", tokenizer="none")
    alone = metric.statistics(hyps, refs)[:, 1]
    before = metric.fingerprint
    metric.use_corpus(refs + ["the heart is enlarged", "no pneumothorax", "no effusion is seen"])
    assert metric.fingerprint != before
    assert not np.allclose(metric.statistics(hyps, refs)[:, 1], alone)
    # Order does not matter, the multiset does.
    other = get("nlg", tokenizer="none").use_corpus(list(reversed(refs + ["the heart is enlarged", "no pneumothorax",
                                                                           "no effusion is seen"])))
    assert other.fingerprint == metric.fingerprint


def test_empty_corpus_is_nan_and_bad_tokenizer_is_a_clear_error():
    assert np.isnan(nlg.corpus_values(np.zeros(len(nlg.STATISTICS)), 0)).all()
    with pytest.raises(ConfigError, match="tokenizer=ptb"):
        get("nlg", tokenizer="spacy")


def test_score_harness_in_chunks_equals_one_call(cli, tmp_path, iu_xray_test):
    """`rexrank score -m nlg --chunk-size 2`: pairs scored two at a time, yet CIDEr-D's document frequencies come from
    all references, so results.json equals one NLG.compute over the corpus; every output has a CI."""
    import json

    import pandas as pd

    ids = [i for i in iu_xray_test if iu_xray_test[i]["section_findings"]][:12]
    (tmp_path / "refs.json").write_text(json.dumps({i: iu_xray_test[i] for i in ids}))
    hyps = {i: iu_xray_test[ids[(k + 1) % 12]]["section_findings"] for k, i in enumerate(ids)}
    (tmp_path / "preds.json").write_text(json.dumps(hyps))
    code, text = cli("score", "-p", str(tmp_path / "preds.json"), "-r", str(tmp_path / "refs.json"), "-m", "nlg",
                     "--chunk-size", "2", "--cache-dir", str(tmp_path / "cache"), "-o", str(tmp_path / "out"), "-q",
                     "--resamples", "50")
    assert code == 0, text
    results = json.loads((tmp_path / "out" / "results.json").read_text())
    expected = get("nlg").compute(list(hyps.values()), [iu_xray_test[i]["section_findings"] for i in ids])
    entry = results["metrics"]["nlg"]
    for output, value in expected.items():
        assert entry["values"][output]["value"] == pytest.approx(value, abs=1e-12), output
        assert entry["values"][output]["ci_low"] <= value <= entry["values"][output]["ci_high"], output
    assert entry["leaderboard_column"] is None
    table = pd.read_parquet(tmp_path / "out" / "per_study.parquet")
    assert set(nlg.STATISTICS) <= set(table.columns)
    assert "corpus BLEU-4" in (tmp_path / "out" / "results.md").read_text()


def test_corpus_metrics_in_subgroups_single_run_and_compare():
    """Per-site and normal/abnormal groups carry a corpus metric's outputs from the group's summed statistics,
    in one run's subgroups (with CIs) and in `compare` (with ranks)."""
    import pandas as pd

    from rexrank.evaluation.compare import Run, compare_runs
    from rexrank.evaluation.subgroups import subgroup_summary

    rng = random.Random(5)
    words = "the heart size is normal no effusion or pneumothorax lungs are clear mild atelectasis".split()
    n = 40
    refs = [" ".join(rng.choice(words) for _ in range(rng.randrange(4, 12))) for _ in range(n)]
    site = np.where(np.arange(n) % 2 == 0, "A", "B")
    normal = np.arange(n) % 3 == 0
    runs, tables = [], []
    metric = get("nlg", tokenizer="none").use_corpus(refs)
    for k in range(2):
        hyps = [" ".join(rng.choice(words) for _ in range(rng.randrange(3, 12))) for _ in range(n)]
        stats = metric.statistics(hyps, refs)
        tables.append(stats)
        frame = pd.DataFrame(stats, columns=list(nlg.STATISTICS))
        frame.insert(0, "study_id", [f"s{i}" for i in range(n)])
        frame.insert(1, "hyp_sha256", [f"h{k}{i}" for i in range(n)])
        frame.insert(2, "ref_sha256", [f"r{i}" for i in range(n)])
        frame["site"], frame["ref_normal"] = site, normal
        runs.append(Run(f"m{k}", frame, {"dataset": "iu_xray", "split": "test", "track": "findings"}, "mem"))
    one = subgroup_summary(runs[0].frame, ["nlg"], resamples=50)
    group = one["sites"]["A"]["metrics"]["nlg"]
    expected = nlg.corpus_values(tables[0][site == "A"].sum(axis=0), int((site == "A").sum()))
    for output, value in zip(nlg.OUTPUTS, expected):
        assert group["values"][output]["value"] == pytest.approx(value, abs=1e-12), output
    report = compare_runs(runs, resamples=50, permutations=50)
    for k, model in enumerate(("m0", "m1")):
        entry = report["subgroups"]["sites"]["B"]["metrics"]["nlg"][model]
        expected = nlg.corpus_values(tables[k][site == "B"].sum(axis=0), int((site == "B").sum()))
        assert entry["values"]["cider"] == pytest.approx(expected[nlg.OUTPUTS.index("cider")], abs=1e-12)
        assert entry["value"] == pytest.approx(expected[0], abs=1e-12) and entry["rank"] in (1, 2)
        abnormal = report["subgroups"]["normal_vs_abnormal"]["abnormal"]["metrics"]["nlg"][model]["values"]
        expected = nlg.corpus_values(tables[k][~normal].sum(axis=0), int((~normal).sum()))
        assert abnormal["bleu_2"] == pytest.approx(expected[nlg.OUTPUTS.index("bleu_2")], abs=1e-12)


def test_model_page_shows_each_corpus_metric_in_its_own_section(tmp_path):
    """A model's stored CE F1 and NLG values: one titled section each on its model page, never a ranking column."""
    import pandas as pd

    from rexrank.evaluation.aggregate import metric_summary
    from rexrank.leaderboard import board
    from rexrank.metrics.boards import edition
    from rexrank.leaderboard.views import corpus_markdown as _corpus_markdown, md_text as _md_text
    from rexrank.leaderboard.records import ModelInfo, from_results_json
    from rexrank.leaderboard.store import Store
    from rexrank.metrics import ce_f1

    rng = np.random.default_rng(2)
    refs = ["heart size is normal", "no effusion", "mild atelectasis", "lungs are clear"] * 5
    hyps = ["heart is normal", "no pleural effusion", "atelectasis", "clear lungs"] * 5
    frame = pd.DataFrame(get("nlg", tokenizer="none").statistics(hyps, refs), columns=list(nlg.STATISTICS))
    counts = rng.integers(0, 2, size=(20, len(ce_f1.STATISTICS))).astype(float)
    frame = pd.concat([frame, pd.DataFrame(counts, columns=list(ce_f1.STATISTICS))], axis=1)
    summary = metric_summary(frame, resamples=50)
    assert set(summary) == {"nlg", "ce_f1"}
    store = Store(tmp_path / "board.sqlite")
    try:
        store.add_result(from_results_json(
            {"dataset": "iu_xray", "split": "test", "track": "findings", "metrics": summary, "n_studies": 20,
             "configs": {"ce_f1": {"uncertain": "positive"}, "nlg": {"tokenizer": "none"}}}, ModelInfo(name="M")),
            allow_unofficial_weights=True)  # CE F1 counts made up here: no SembScore weights behind them
        table = board.model_corpus_metrics(store, "M")
        text = _corpus_markdown(table)
        assert "### NLG metrics" in text and "### Clinical efficacy" in text
        nlg_section = text.split("### NLG metrics", 1)[1].split("###", 1)[0]
        assert "corpus BLEU-4" in nlg_section and "CIDEr" in nlg_section and "tokenizer=none" in nlg_section
        assert "CE micro F1" not in nlg_section and "nan" not in nlg_section
        bleu4 = summary["nlg"]["values"]["bleu_4"]
        cell = board.fmt(bleu4["value"], bleu4["ci_low"], bleu4["ci_high"])
        assert table[table["Metric"] == "nlg"].iloc[0]["corpus BLEU-4"] == cell
        assert _md_text(cell) in nlg_section
        assert not any("BLEU-4" in c or "CIDEr" in c for c in board.display_columns(edition().all_metrics()))
    finally:
        store.close()


def test_a_reports_tokens_never_depend_on_its_neighbours():
    """A Windows line ending in one hypothesis shifts every later caption in pycocoevalcap's tokenizer; here each
    report is tokenised alone, so a study's statistics are the same in any chunk, shard or order."""
    metric = get("nlg")
    hyps = ["Heart normal.\r\nLungs clear.", "No effusion.", "Grade I. The end here"]
    refs = ["Heart normal. Lungs clear.", "No effusion.", "Grade I. The end here"]
    metric.use_corpus(refs)  # CIDEr-D's document frequencies: the same corpus for every call below
    together = metric.statistics(hyps, refs)
    for i in range(len(hyps)):
        np.testing.assert_array_equal(metric.statistics([hyps[i]], [refs[i]])[0], together[i])
    assert together[0, 0] == 1.0  # "\r\n" is a space: the first report equals its reference
    from rexrank.metrics.nlg import tokenize

    for brk in ("\r", "\v", "\f", "\u2028", "\u2029"):  # each one shifts pycocoevalcap's output
        texts = [f"Heart normal{brk}lungs clear.", "No effusion."]
        assert tokenize(texts) == ["heart normal lungs clear", "no effusion"]

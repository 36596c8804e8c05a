"""SembScore and the CheXbert labeller against the upstream package f1chexbert 0.0.2 run on transformers 4.57.

tests/reference/semb_f1chexbert_ref.py runs f1chexbert's own model class, tokenisation, condition list and label
mapping on the stand-in chexbert.pth (loaded strictly); this file compares rexrank with it, condition by NAME.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from parity import Pairs, ParityTester, centred_chexbert, iu_reports, shifted

from rexrank import metrics
from rexrank.errors import InputError, ModelNotAvailableError
from rexrank.metrics.chexbert import CONDITIONS, clean_report
from rexrank.metrics.semb import SembScore, chexbert_labels

N_IU = 200  # IU-Xray pairs in the parity run (plus edge cases); every text is embedded once per side


def _edge_pairs(long_report: str) -> list[tuple[str, str]]:
    return [
        ("", "The heart size is normal."),
        ("   ", ""),
        ("\n\n", "No pleural effusion."),
        (long_report, long_report[: len(long_report) // 3]),  # > 512 wordpieces: clipped like upstream
        ("Héart size nörmal — no effusion ✓ 心脏", "Heart size normal, no effusion."),  # non-ASCII
        ("No  effusion.\n\nLungs \t  clear.", "No effusion. Lungs clear."),  # repeated whitespace, newlines
    ]


@pytest.fixture(scope="module")
def chexbert_files(standins):
    return standins("semb")


@pytest.fixture(scope="module")
def metric(chexbert_files):
    return metrics.get("semb", model=chexbert_files["semb"], backbone=chexbert_files["semb_backbone"], device="cpu")


@pytest.fixture(scope="module")
def long_report(iu_xray_test) -> str:
    """Twelve IU-Xray reports in one: past 512 wordpieces."""
    return " ".join(iu_reports(iu_xray_test, n=12))


def _decided(reference) -> np.ndarray:
    """(texts, 14) mask of heads whose top-2 logits differ by > 1e-4: only near-ties may differ by float noise."""
    logits = [[np.array([x for x in head if x is not None]) for head in per_text] for per_text in reference["logits"]]
    return np.array([[np.sort(h)[-1] - np.sort(h)[-2] > 1e-4 for h in per_text] for per_text in logits])


class TestSembParity(ParityTester):
    """SembScore per-pair cosines on 200 IU-Xray pairs + 6 edge cases equal f1chexbert 0.0.2's (its bert_labeler on
    the same chexbert.pth, one report per forward pass, vs rexrank's padded batches; 1e-6), and so do the [CLS]
    embeddings (1e-6 of their norm), every condition's head class and code looked up by NAME, and CXR-Report-Metric's
    batched procedure. The checkpoint's head biases are centred on the parity texts (parity.centred_chexbert)."""

    metric = "semb"
    reference_script = "semb_f1chexbert_ref.py"
    versions = {"f1chexbert": "0.0.2"}
    compared = (("score", "cosine"),)
    atol = 1e-6

    def make_pairs(self, iu_xray_test):
        refs = iu_reports(iu_xray_test, n=N_IU)
        return Pairs.with_edges(shifted(refs), refs, _edge_pairs(" ".join(refs[:12])))

    @pytest.fixture(scope="class")
    def options(self, chexbert_files, pairs, tmp_path_factory):
        files = centred_chexbert(chexbert_files, pairs.refs + pairs.hyps, tmp_path_factory.mktemp("semb_parity"))
        return {"model": files["semb"], "backbone": files["semb_backbone"], "device": "cpu"}

    def reference_payload(self, pairs, options):
        return {"model": options["model"], "backbone": options["backbone"], "hyps": pairs.hyps, "refs": pairs.refs}

    def test_embeddings_equal_f1chexbert(self, scorer, reference):
        """[CLS] embeddings of the distinct texts within the tolerance times their norm."""
        ours = scorer.embeddings(reference["texts"])
        theirs = np.asarray(reference["embeddings"], dtype=np.float64)
        assert ours.shape == theirs.shape
        assert (np.abs(ours - theirs).max(axis=1) / np.linalg.norm(theirs, axis=1)).max() < self.atol
        assert np.std(reference["cosine"]) > 0.01  # the stand-in separates reports

    def test_labels_by_condition_name_equal_f1chexbert(self, scorer, reference):
        """Every condition, looked up by its NAME in f1chexbert's target_names, has f1chexbert's head class and its
        CheXpert code (get_label mode="classification": blank "", 1, 0, -1). A swapped condition name or class ->
        code mapping in rexrank fails here: the checks below make sure the data can show either."""
        names = reference["target_names"]
        assert sorted(names) == sorted(CONDITIONS)
        texts = reference["texts"]
        decided = _decided(reference)
        assert decided.mean() > 0.99
        theirs = np.asarray(reference["classes"])
        codes = np.array([[np.nan if c is None else float(c) for c in row] for row in reference["codes"]])

        ours_classes = scorer.labels(texts, codes=False)
        ours_codes = scorer.labels(texts)
        for k, name in enumerate(names):
            ok = decided[:, k]
            assert (ours_classes[name].to_numpy()[ok] == theirs[ok, k]).all(), name
            np.testing.assert_array_equal(ours_codes[name].to_numpy()[ok], codes[ok, k], err_msg=name)
        assert tuple(names) == CONDITIONS  # and so the frame's columns are in head order too

        # Sensitivity: any two conditions' columns differ on some decided text (a name swap cannot go unseen), and
        # the 4-class heads use all four classes (a code swap cannot go unseen).
        for a in range(len(names)):
            for b in range(a + 1, len(names)):
                both = decided[:, a] & decided[:, b]
                assert (theirs[both, a] != theirs[both, b]).any(), (names[a], names[b])
        assert set(theirs[:, :13][decided[:, :13]].tolist()) == {0, 1, 2, 3}
        assert len({tuple(row) for row in theirs}) > 5  # labels vary between reports

    def test_label_frame_columns_and_codes_follow_f1chexbert(self, scorer, reference):
        """The label frame's columns are f1chexbert's target_names in its head order, and each column holds the
        codes f1chexbert gives that condition (No Finding, a 2-class head: blank or positive only)."""
        names = reference["target_names"]
        frame = scorer.labels(reference["texts"])
        assert list(frame.columns) == names
        decided = _decided(reference)
        codes = np.array([[np.nan if c is None else float(c) for c in row] for row in reference["codes"]])
        for k, name in enumerate(names):
            ours, theirs = frame[name].to_numpy()[decided[:, k]], codes[decided[:, k], k]
            assert set(np.nan_to_num(ours, nan=9).tolist()) == set(np.nan_to_num(theirs, nan=9).tolist()), name
        assert set(np.nan_to_num(codes[:, names.index("No Finding")], nan=9).tolist()) <= {9.0, 1.0}

    def test_cxr_report_metric_batches_give_the_same_values(self, scorer, options, pairs, reference, ours,
                                                             run_reference):
        """CXR-Report-Metric's own batching (CheXbert encode.py: batches of 18 in file order, PAD 0 with an
        attention mask; tests/reference/semb_ref.py) gives the same cosines and head classes as rexrank, where
        f1chexbert's one-report passes (the reference above) cannot show padding effects."""
        batched = run_reference("semb_ref.py", {"model": options["model"], "backbone": options["backbone"],
                                                "hyps": pairs.hyps, "refs": pairs.refs})
        self.assert_close(ours["score"], batched["cosine"], "cosine / CXR-Report-Metric batches")
        classes = scorer.labels(batched["texts"], codes=False)
        decided = _decided(reference)
        index = {t: i for i, t in enumerate(reference["texts"])}
        rows = [index[t] for t in batched["texts"]]
        theirs = np.asarray(batched["classes"])
        for k, name in enumerate(CONDITIONS):
            ok = decided[rows, k]
            assert (classes[name].to_numpy()[ok] == theirs[ok, k]).all(), name


def test_each_unique_text_runs_once(chexbert_files, monkeypatch):
    """Embeddings and labels come from one forward pass per unique text and are cached together."""
    metric = SembScore(model=chexbert_files["semb"], backbone=chexbert_files["semb_backbone"], device="cpu")
    seen: list[str] = []
    original = metric._compute
    monkeypatch.setattr(metric, "_compute", lambda texts: seen.extend(texts) or original(texts))
    metric.score(["A", "B", "A"], ["B", "C", "B"])
    assert sorted(seen) == ["A", "B", "C"]
    metric.labels(["C", "A"])
    assert len(seen) == 3  # labels came from the same pass


def test_text_rules_and_empty_input(metric):
    """Official cleaning; an empty report is [CLS] [SEP] and gets a defined score, equal to any whitespace-only one."""
    assert clean_report("  Heart\n\nnormal. \t Lungs  clear. ") == "Heart normal. Lungs clear."
    values = metric.score(["", " \n ", "Heart normal."], ["Heart normal.", "Heart normal.", "Heart  normal.\n"])
    assert np.isfinite(values).all()
    assert values[0] == pytest.approx(values[1], abs=1e-7)
    assert values[2] == pytest.approx(1.0, abs=1e-6)


def test_long_report_is_clipped_to_512_tokens(metric, long_report):
    """Text beyond 512 wordpieces ([CLS] + 510 + [SEP]) never changes the embedding, as upstream clips it."""
    _, tokenizer = metric._load()
    assert len(tokenizer.tokenize(clean_report(long_report))) > 600
    extended = long_report + " Large right pleural effusion." * 40
    np.testing.assert_array_equal(metric.embeddings([long_report]), metric.embeddings([extended]))


def test_module_level_labeller_and_bad_input(chexbert_files):
    frame = chexbert_labels(["No acute disease."], model=chexbert_files["semb"],
                            backbone=chexbert_files["semb_backbone"], device="cpu")
    assert frame.shape == (1, 14)
    metric = SembScore(model=chexbert_files["semb"], backbone=chexbert_files["semb_backbone"], device="cpu")
    with pytest.raises(InputError, match=r"texts\[1\] is missing"):
        metric.labels(["ok", None])
    with pytest.raises(InputError, match="differ in length"):
        metric.score(["a"], ["a", "b"])


def test_checkpoint_problems_are_clear_errors(chexbert_files, tmp_path):
    """Missing files and wrong checkpoints raise ModelNotAvailableError naming semb, not a torch traceback."""
    import torch

    backbone = chexbert_files["semb_backbone"]
    with pytest.raises(ModelNotAvailableError, match="semb"):
        SembScore(model=tmp_path / "nope" / "chexbert.pth", backbone=backbone)
    bad = tmp_path / "bad.pth"
    torch.save({"state_dict": {}}, bad)
    with pytest.raises(ModelNotAvailableError, match="model_state_dict"):
        SembScore(model=bad, backbone=backbone, device="cpu").score(["a"], ["b"])
    truncated = tmp_path / "truncated.pth"
    truncated.write_bytes(b"not a checkpoint")
    with pytest.raises(ModelNotAvailableError, match="semb: .* not a tensors-only checkpoint"):
        SembScore(model=truncated, backbone=backbone, device="cpu").score(["a"], ["b"])


def test_checkpoint_without_module_prefix_or_with_position_ids_loads(chexbert_files, metric, tmp_path):
    """Checkpoints saved without DataParallel, or by older transformers (position_ids buffer), give the same values."""
    import torch

    state = torch.load(chexbert_files["semb"], map_location="cpu", weights_only=True)["model_state_dict"]
    plain = {k[len("module."):]: v for k, v in state.items()}
    plain["bert.embeddings.position_ids"] = torch.arange(512).unsqueeze(0)
    path = tmp_path / "chexbert.pth"
    torch.save({"model_state_dict": plain}, path)
    other = SembScore(model=path, backbone=chexbert_files["semb_backbone"], device="cpu")
    texts = ["Heart size normal.", "Small left effusion."]
    np.testing.assert_allclose(other.embeddings(texts), metric.embeddings(texts), rtol=0, atol=0)


def test_standin_is_deterministic(tmp_path):
    import torch

    from rexrank.testing.standin_text import build_chexbert

    a = build_chexbert(tmp_path / "a", "small", 0)
    b = build_chexbert(tmp_path / "b", "small", 0)
    state_a = torch.load(a["semb"], weights_only=True)["model_state_dict"]
    state_b = torch.load(b["semb"], weights_only=True)["model_state_dict"]
    assert list(state_a) == list(state_b) and all(torch.equal(state_a[k], state_b[k]) for k in state_a)
    assert all(k.startswith(("module.bert.", "module.linear_heads.")) for k in state_a)
    assert {f"module.linear_heads.{i}.weight" for i in range(14)} <= set(state_a)
    for name in ("config.json", "vocab.txt"):
        digest = [hashlib.sha256((p / name).read_bytes()).hexdigest() for p in
                  (tmp_path / "a" / "bert-base-uncased", tmp_path / "b" / "bert-base-uncased")]
        assert digest[0] == digest[1]

"""CRIMSON, both variants: the board's ``crimson`` against the authors' package crimson-score 0.2.2 (prompts, decoding
settings, its reader and formula on written judge answers; .venv-ref), and ``crimson_radeval`` against radeval
2.2.1's own CRIMSON (transformers 4.57, .venv-ref) on the same random-weight Gemma-3 judge
(rexrank.testing.standin_gemma3) and on the same written answers."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from parity import Pairs, ParityTester, iu_reports, shifted

from rexrank.errors import ConfigError, ModelNotAvailableError
from rexrank.metrics.crimson import DEFAULT_MAX_NEW_TOKENS, HTTP_REQUEST, Crimson, CrimsonRadeval, is_default_judge
from rexrank.metrics.crimson_prompt import (
    SYSTEM_MESSAGE, build_prompt, chat_messages, evaluate_output, evaluate_output_radeval,
)


@pytest.fixture(scope="module")
def paths(standins) -> dict[str, str]:
    return standins("crimson")


def _finding(i, kind, significance):
    return {"id": f"{kind}{i}", "finding": f"finding {i}", "clinical_significance": significance}


def _answer(refs=(), preds=(), matched=(), false=(), missing=(), attributes=(), **extra):
    return {"reference_findings": list(refs), "predicted_findings": list(preds),
            "matched_findings": [{"ref_id": r, "pred_id": p} for r, p in matched],
            "errors": {"false_findings": list(false), "missing_findings": list(missing),
                       "attribute_errors": list(attributes)}, **extra}


_FULL = _answer(
    refs=[_finding(1, "R", "urgent"), _finding(2, "R", "actionable_not_urgent"), _finding(3, "R", "benign_expected"),
          _finding(4, "R", "not_actionable_not_urgent"), _finding(5, "R", "something else")],
    preds=[_finding(1, "P", "urgent"), _finding(2, "P", "actionable_not_urgent"), _finding(3, "P", "urgent"),
           _finding(4, "P", "made up")],
    matched=[("R1", "P1"), ("R1", "P2"), ("R2", "P2"), ("R4", "P4")], false=["P3"], missing=["R3", "R5"],
    attributes=[{"ref_id": "R1", "pred_id": "P1", "severity": "significant", "error_types": ["location", "severity"],
                 "explanation": "left vs right"},
                {"ref_id": "R1", "pred_id": "P2", "severity": "negligible", "error_types": ["descriptor"]},
                {"ref_id": "R2", "pred_id": "P2", "severity": "odd", "error_types": ["measurement", "temporal"]},
                {"ref_id": "R4", "pred_id": "P4", "error_types": ["certainty", "unspecific", "overinterpretation"]},
                {"pred_id": "P9", "severity": "significant", "error_types": ["location"]}])
_FULL_TEXT = json.dumps(_FULL, indent=2)
# _FULL without its attribute error that has no ref_id (crimson-score's formula indexes ["ref_id"]: it fails on it)
_FULL_IDS = {**_FULL, "errors": {**_FULL["errors"], "attribute_errors": _FULL["errors"]["attribute_errors"][:-1]}}
_FULL_IDS_TEXT = json.dumps(_FULL_IDS, indent=2)

def _stray_quote(spaces: int) -> str:
    """_FULL_IDS with a quote of prose followed by ``spaces`` spaces: json fails at the first character after them,
    spaces + 1 characters past the quote, so the repair's window (5 characters back) reaches it with 4, not 5."""
    return json.dumps(_FULL_IDS).replace("left vs right", 'left lobe 3"' + " " * spaces + "wide")


_VALID_OBJ = _answer(refs=[_finding(1, "R", "urgent")], preds=[_finding(1, "P", "urgent")], matched=[("R1", "P1")])
_VALID = json.dumps(_VALID_OBJ)
_MINIMAL = json.dumps(_answer())
_BAD_ONE = _answer(refs=[_finding(1, "R", "urgent"), _finding(2, "R", "urgent")], preds=[_finding(1, "P", "urgent")],
                   matched=[("R1", "P1")], missing=["R2"])

# Written judge answers: one or more per rule of radeval's reading (extraction, each repair, closing a cut-off object,
# the key check, the formula's branches, types that make radeval's code fail).
JUDGE_OUTPUTS = [
    _FULL_TEXT,  # plain JSON: every count, weight and branch of the credit rule
    _VALID, _MINIMAL,  # a perfect match; no findings at all (N_G 0, no errors: 1.0)
    f"```json\n{_FULL_TEXT}\n```",  # fenced, tagged
    f"Here is my evaluation:\n```\n{_VALID}\n```\nDone.",  # fenced, untagged, text around
    f"```json\n{_VALID}\n``` and again ```json\n{_MINIMAL}\n```",  # the first fence wins
    f"```json\nnot json\n```\n{_VALID}",  # a fence with junk wins over JSON outside it
    f"Sure! {_VALID} Hope this helps.",  # text around, no fence: first '{' to last '}'
    _VALID.replace("]", ", ]").replace("}", " ,}", 1),  # trailing commas
    _VALID[:-1] + ',}',  # a trailing comma before the final brace
    json.dumps(_FULL).replace('"left vs right"', '"the \u201cleft\u201d vs \u2018right\u2019"'),  # curly quotes
    json.dumps(_BAD_ONE).replace('"missing_findings": ["R2"]', '"missing_findings": ["":["R2"]'),  # array/object
    json.dumps(_BAD_ONE).replace(', "missing_findings"', ', missing_findings"'),  # key without opening quote
    json.dumps(_FULL).replace('"pred_id": "P1", "severity"', '"pred_id": "P1", "pred_old", "severity"'),  # orphan
    json.dumps(_FULL).replace('{"ref_id": "R2", "pred_id": "P2"}', '{"pred_o", "ref_id": "R2", "pred_id": "P2"}'),
    json.dumps(_FULL).replace("left vs right", "left\\_lung vs R\\L"),  # invalid escapes
    json.dumps(_FULL).replace("left vs right", 'says "mass" not "opacity"'),  # unescaped quotes in prose
    json.dumps(_FULL).replace("left vs right", 'called "mass", "nodule" and "lesion"'),  # quotes next to commas
    _FULL_TEXT[: _FULL_TEXT.index('"severity": "odd"') + 12],  # cut off inside a string: closed
    _FULL_TEXT[: _FULL_TEXT.index('"ref_id": "R4",') + 15],  # cut off after a comma: closed
    json.dumps(_BAD_ONE)[:-1] + ', "errors": {"false_findings": ["P1"]}}',  # duplicate key: the first wins
    json.dumps(_BAD_ONE)[:-2] + '}, "errors": {"false_findings": ["P1"]',  # duplicate key, cut off: the last wins
    json.dumps({k: v for k, v in _FULL.items() if k != "errors"}),  # a required key missing
    json.dumps({k: v for k, v in _FULL.items() if k != "matched_findings"}),
    json.dumps({**_FULL, "errors": ["P3"]}),  # errors not an object
    json.dumps([_FULL]),  # not an object
    "", "   ", "I cannot evaluate these reports.", "{", "}{", "{}",  # nothing readable
    json.dumps(_answer(refs=[{"finding": "no id"}])),  # a finding without an id
    json.dumps(_answer(refs=[{"id": "R1", "clinical_significance": ["urgent"]}])),  # an unhashable significance
    json.dumps(_answer(refs=["R1"])),  # a finding that is not an object
    json.dumps(_answer(refs=[_finding(1, "R", "urgent")], matched=[("R1", "P1")],
                       attributes=[{"ref_id": "R1", "severity": "significant", "error_types": "location|severity"}])),
    json.dumps(_answer(preds=[_finding(1, "P", "urgent")], false=["P1"])),  # N_G 0, a false finding: negative
    json.dumps(_answer(refs=[_finding(1, "R", "benign_expected")], missing=["R1"])),  # N_G 0 with references: 0
    json.dumps(_answer(refs=[_finding(1, "R", "benign_expected")], preds=[_finding(1, "P", "urgent")],
                       false=["P1"])),  # N_G 0 with references, a false finding
    json.dumps(_answer(matched=[("R7", "P1")], missing=["R8"])),  # matched ids with no reference finding
    json.dumps(_answer(refs=[_finding(1, "R", "urgent"), _finding(2, "R", "urgent"), _finding(3, "R", "urgent")],
                       preds=[_finding(1, "P", "urgent")], matched=[("R1", "P1")], missing=["R2", "R3"])),  # 1/3
    json.dumps(_answer(refs=[_finding(1, "R", "not_actionable_not_urgent")],
                       preds=[_finding(i, "P", "urgent") for i in range(1, 9)], false=[f"P{i}" for i in range(1, 9)])),
    json.dumps(_answer(refs=[{"id": 1, "clinical_significance": "urgent"}, {"id": None}], matched=[(1, "P1")])),
    '{"reference_findings": [], "predicted_findings": [], "matched_findings": [], "errors": {}, "x": NaN}',
    "[" * 5000 + "]" * 5000,  # nesting deeper than the json module takes
    "{" + '"a": {' * 3000 + "}" * 3000 + "}",
    # Written for crimson-score 0.2.2's reader (and run through radeval's too):
    _FULL_IDS_TEXT,  # every branch of the formula, every attribute error with its ref_id: both read it
    f"\n  {_VALID}\n",  # whitespace around: json reads it as it is
    f"{_VALID}\nDone.",  # trailing text: crimson-score has no extraction
    json.dumps(_FULL_IDS).replace("left vs right", 'called "mass", then nodule'),  # a stray quote 3 before the error
    _stray_quote(4), _stray_quote(5),  # a stray quote 5 before the error (escaped) and 6 (not: no JSON)
    json.dumps(_answer(refs=[_finding(1, "R", "benign_expected")], preds=[_finding(1, "P", "benign_expected")],
                       matched=[("R1", "P1")])),  # benign-only references, matched: N_G 0 with references: 1.0
    json.dumps(_answer(refs=[_finding(1, "R", "benign_expected"), _finding(2, "R", "benign_expected")],
                       preds=[_finding(1, "P", "benign_expected"), _finding(2, "P", "urgent")],
                       matched=[("R1", "P1")], missing=["R2"], false=["P2"])),  # benign-only, matched, a false one
    json.dumps({k: v for k, v in _FULL_IDS.items() if k != "errors"}),  # findings, no errors key
    json.dumps({k: v for k, v in _VALID_OBJ.items() if k != "predicted_findings"}),  # no predicted findings key
    '{"errors": {}}',  # only the errors object
    json.dumps(_answer(refs=[_finding(1, "R", "urgent")], matched=[("R1", "P1")],
                       attributes=[{"pred_id": "P1", "severity": "significant", "error_types": ["location"]}])),
    json.dumps({**_answer(refs=[_finding(1, "R", "urgent")]), "matched_findings": [{"pred_id": "P1"}]}),
]
# The answers crimson-score 0.2.2 scores and rexrank's crimson reads as NaN (an object without all four top-level
# keys), each marked as a deviation: by their text, so that adding answers above cannot shift them.
DEVIATING = {json.dumps({k: v for k, v in _FULL.items() if k != "errors"}), "{}",
             json.dumps({k: v for k, v in _FULL_IDS.items() if k != "errors"}),
             json.dumps({k: v for k, v in _VALID_OBJ.items() if k != "predicted_findings"}), '{"errors": {}}'}
CONTEXTS = [{"Age": "82", "Indication": "Routine preoperative evaluation"}, {}, {"Sex": "F", "Indication": "{x}"}]


EDGE_PAIRS = [("", "No acute process."), ("  Mild cardiomegaly.  \n\n Small effusion. ", "Cardiomegaly."),
              ("No {r} braces {0} here.", "Normal."), ("\u00c9panchement \u201c\u00e0\u201d", "Effusion.")]


class TestCrimsonRadevalParity(ParityTester):
    """radeval 2.2.1's CRIMSONScore(provider="hf") on transformers 4.57 (tests/reference/crimson_radeval_ref.py) and
    rexrank's crimson_radeval on transformers 5, on the same Gemma-3 judge stand-in: prompts, prompt token ids,
    answers, scores and aggregates identical; the parser against radeval's on written answers (every stand-in answer
    is gibberish)."""

    metric = "crimson_radeval"
    reference_script = "crimson_radeval_ref.py"
    versions = {"radeval": "2.2.1", "transformers": "4."}
    compared = (("crimson_radeval", "scores"),)  # NaN exactly where radeval's is NaN, equal elsewhere
    atol = 0.0
    min_spread = None  # every stand-in score is NaN: the answers must differ instead (below)

    def make_pairs(self, iu_xray_test):
        refs = iu_reports(iu_xray_test, n=6)
        return Pairs.with_edges(shifted(refs), refs, EDGE_PAIRS)

    @pytest.fixture(scope="class")
    def options(self, paths):
        # One pair at a time, as radeval runs them: in bfloat16 a padded batch can flip a near-tie
        # (docs/radeval_metrics.md). A local path is not radeval's default judge: it adds the guidelines.
        return {"model": paths["crimson"], "device": "cpu", "batch_size": 1, "guidelines": True}

    def reference_payload(self, pairs, options):
        return {"model_dir": options["model"], "refs": pairs.refs, "hyps": pairs.hyps, "outputs": JUDGE_OUTPUTS,
                "contexts": CONTEXTS}

    def compute_ours(self, metric, pairs, options):
        details = metric.score_details(pairs.hyps, pairs.refs)
        return {"crimson_radeval": details["crimson_radeval"].to_numpy(),
                "answers": list(details["crimson_radeval_analysis"]),
                "parse_errors": int(details["crimson_radeval_parse_error"].notna().sum()), "summary": metric.summary()}

    def test_inputs_make_the_comparison_meaningful(self, reference):
        assert reference["has_generation_config"]  # radeval's branch that uses the model's generation_config.json
        assert len(set(reference["answers"])) > 1  # the stand-in's answers depend on the pair

    def test_prompts_are_radevals_byte_for_byte(self, pairs, reference):
        """Every prompt branch radeval has (a local judge: guidelines in; its default judge: out; OpenAI: in;
        patient contexts with and without guidelines), the system message and the HTTP request equal radeval's."""
        refs, hyps = pairs.refs, pairs.hyps
        prompts = reference["prompts"]
        assert [build_prompt(r, h, guidelines=True) for r, h in zip(refs, hyps)] == prompts["local"] == prompts["openai"]
        assert [build_prompt(r, h, guidelines=False) for r, h in zip(refs, hyps)] == prompts["default"]
        assert [build_prompt(refs[0], hyps[0], guidelines=True, context=c) for c in CONTEXTS] == prompts["context"]
        assert ([build_prompt(refs[0], hyps[0], guidelines=False, context=c) for c in CONTEXTS]
                == prompts["context_default"])
        assert prompts["local"][0] != prompts["default"][0] and prompts["context"][0] != prompts["local"][0]
        request = reference["request"]
        assert request["messages"] == chat_messages(prompts["openai"][0])
        assert request["messages"][0] == {"role": "system", "content": SYSTEM_MESSAGE}
        assert {k: v for k, v in request.items() if k != "messages"} == {"temperature": 0, **HTTP_REQUEST}

    def test_prompt_ids_answers_and_aggregates_equal_radevals(self, scorer, pairs, ours, reference):
        """The token ids radeval's pipeline feeds generate, the answers it decodes (greedy, repetition penalty, the
        generation config's limit and stop tokens), its crimson / crimson_std and its failure count."""
        prompts = [build_prompt(r, h, guidelines=True) for r, h in zip(pairs.refs, pairs.hyps)]
        assert scorer.prompt_ids(prompts) == reference["input_ids"]
        assert ours["answers"] == reference["answers"]
        summary = ours["summary"]
        assert (summary["crimson_radeval"], summary["crimson_radeval_std"]) == (reference["mean"], reference["std"])
        assert summary["n_parse_failures"] == ours["parse_errors"] == sum(s is None for s in reference["scores"])

    def test_parser_parity_with_radeval(self, reference):
        """Each written answer: radeval's reader fails exactly where ours gives NaN; elsewhere the same score,
        counts, weighted errors and formula terms."""
        assert len(reference["parsed"]) == len(JUDGE_OUTPUTS)
        read = 0
        for text, theirs in zip(JUDGE_OUTPUTS, reference["parsed"]):
            ours = evaluate_output_radeval(text)
            if "error" in theirs:
                assert math.isnan(ours["score"]) and ours["parse_error"], (text[:80], theirs)
                continue
            read += 1
            assert ours["parse_error"] is None, (text[:80], ours["parse_error"])
            assert ours["score"] == theirs["score"] and type(ours["score"]) is type(theirs["score"]), text[:80]
            assert ours["error_counts"] == theirs["error_counts"], text[:80]
            assert ours["weighted_error_counts"] == theirs["weighted"], text[:80]
            assert ours["terms"] == theirs["terms"], text[:80]
        assert 25 < read < len(JUDGE_OUTPUTS) - 10  # both kinds well represented
        # The answers exercise every branch: negative, zero, fractional and perfect scores.
        scores = {p.get("score") for p in reference["parsed"]}
        assert {1.0, 0.0, 0.3333} <= scores and any(s is not None and s < 0 for s in scores)

    def test_scripted_judge_runs_the_whole_pipeline_to_radevals_scores(self, paths, reference):
        """Written answers go through the real decoding path (token ids -> text) and parser to radeval's scores;
        the second call is answered from the cache without the judge."""
        texts = [_FULL_TEXT, _VALID, "I cannot evaluate these reports.", f"```json\n{_FULL_TEXT}\n```"]
        expected = [reference["parsed"][JUDGE_OUTPUTS.index(t)] for t in texts]
        judge = _ScriptedGenerator(CrimsonRadeval(model=paths["crimson"]).tokenizer, texts)
        metric = CrimsonRadeval(model=paths["crimson"], device="cpu", generator=judge)
        hyps, refs = ["a", "b", "c", "d"], ["w", "x", "y", "z"]
        details = metric.score_details(hyps, refs)
        assert list(details["crimson_radeval_analysis"]) == texts
        for value, theirs in zip(details["crimson_radeval"], expected):
            assert (math.isnan(value) and "error" in theirs) or value == theirs["score"]
        assert metric.n_parse_failures == 1 and metric.n_deviations == 0
        assert details["crimson_radeval_parse_error"].notna().tolist() == [False, False, True, False]
        assert (int(details["crimson_radeval_false_findings"][0]) == 1
                and int(details["crimson_radeval_missing_findings"][0]) == 2)
        assert details["crimson_radeval_false_findings"].isna().tolist() == [False, False, True, False]
        calls = judge.calls
        np.testing.assert_array_equal(metric.score(hyps, refs), details["crimson_radeval"].to_numpy())
        assert judge.calls == calls  # cached


class TestCrimsonScoreParity(ParityTester):
    """The board's ``crimson`` against the authors' package crimson-score 0.2.2 (tests/reference/crimson_score_ref.py,
    .venv-ref): every prompt word for word, the system message and OpenAI request, the decoding its own calls ask
    for, and its reader and formula on the written answers: the same failures, scores, counts and terms everywhere
    except the declared deviations (DEVIATING), where crimson-score gives a number and rexrank a counted NaN."""

    metric = "crimson"
    reference_script = "crimson_score_ref.py"
    versions = {"crimson-score": "0.2.2"}
    compared = (("scores", "expected"),)  # NaN where crimson-score fails or rexrank deviates, equal elsewhere
    atol = 0.0
    min_spread = None  # the compared values are written answers' scores: their range is checked below
    function = staticmethod(evaluate_output)

    def make_pairs(self, iu_xray_test):
        refs = iu_reports(iu_xray_test, n=6)
        return Pairs.with_edges(shifted(refs), refs, EDGE_PAIRS)

    def reference_payload(self, pairs, options):
        return {"model_dir": "/models/judge", "refs": pairs.refs, "hyps": pairs.hyps, "outputs": JUDGE_OUTPUTS,
                "answer": _VALID, "contexts": CONTEXTS}

    def compute_ours(self, evaluate, pairs, options):
        results = [evaluate(text) for text in JUDGE_OUTPUTS]
        return {"scores": [r["score"] for r in results], "results": results}

    def theirs(self, reference):
        # The package's score per answer; NaN where it fails, and where rexrank declares a deviation.
        return {"expected": [math.nan if "error" in p or text in DEVIATING else p["score"]
                             for text, p in zip(JUDGE_OUTPUTS, reference["parsed"])]}

    def test_inputs_make_the_comparison_meaningful(self, ours, reference):
        """Both outcomes well represented, every branch of the formula, and the package's own batch loop agreeing
        with its reader (an answer it cannot score: None)."""
        parsed = reference["parsed"]
        assert len(parsed) == len(JUDGE_OUTPUTS) and 20 < sum("error" not in p for p in parsed) < len(parsed) - 20
        scores = {p.get("score") for p in parsed}
        assert {1.0, 0.0, 0.3333} <= scores and any(s is not None and s < 0 for s in scores)
        assert reference["batch"] == [None if "error" in p else p["score"] for p in parsed]
        # The two readers differ: the radeval variant scores differently on many of these answers.
        radeval = [evaluate_output_radeval(t)["score"] for t in JUDGE_OUTPUTS]
        assert sum(not (math.isnan(a) and math.isnan(b)) and a != b
                   for a, b in zip(ours["scores"], radeval)) >= 15

    def test_deviations_are_exactly_the_declared_ones(self, ours, reference):
        """Where rexrank's crimson departs from crimson-score: the answers without all four top-level keys that the
        package scores ({} as 1.0), each marked and named with the package's number; nowhere else."""
        marked = set()
        for text, mine, theirs in zip(JUDGE_OUTPUTS, ours["results"], reference["parsed"]):
            if mine["deviation"] is not None:
                marked.add(text)
                assert mine["deviation"] == "missing_keys" and math.isnan(mine["score"])
                assert "error" not in theirs and f"crimson-score 0.2.2 scores it {theirs['score']}" in mine["parse_error"]
        assert marked == DEVIATING
        assert reference["parsed"][JUDGE_OUTPUTS.index("{}")]["score"] == 1.0

    def test_reader_and_formula_equal_the_packages_elsewhere(self, ours, reference):
        """Each answer the package reads and rexrank does not declare: the same score, counts, weighted errors and
        formula terms; each it fails on: a NaN with its reason."""
        for text, mine, theirs in zip(JUDGE_OUTPUTS, ours["results"], reference["parsed"]):
            if text in DEVIATING:
                continue
            if "error" in theirs:
                assert math.isnan(mine["score"]) and mine["parse_error"], (text[:80], theirs)
                continue
            assert mine["parse_error"] is None, (text[:80], mine["parse_error"])
            assert mine["score"] == theirs["score"] and type(mine["score"]) is type(theirs["score"]), text[:80]
            assert mine["error_counts"] == theirs["error_counts"], text[:80]
            assert mine["weighted_error_counts"] == theirs["weighted"], text[:80]
            assert mine["terms"] == theirs["terms"], text[:80]

    def test_prompts_and_request_are_the_packages_word_for_word(self, pairs, reference):
        """Every prompt branch: a local judge (guidelines in), the package's default judge through transformers and
        vLLM (out), OpenAI (in), patient contexts; the system message; the OpenAI request but its model name."""
        refs, hyps = pairs.refs, pairs.hyps
        prompts = reference["prompts"]
        ours_in = [build_prompt(r, h, guidelines=True) for r, h in zip(refs, hyps)]
        ours_out = [build_prompt(r, h, guidelines=False) for r, h in zip(refs, hyps)]
        self.assert_close(ours_in, prompts["local"], "prompts (guidelines)")
        self.assert_close(ours_in, prompts["openai"], "OpenAI prompts")
        self.assert_close(ours_out, prompts["default"], "prompts (default judge)")
        self.assert_close(ours_out, prompts["vllm_default"], "vLLM prompts (default judge)")
        self.assert_close([build_prompt(refs[0], hyps[0], guidelines=True, context=c) for c in CONTEXTS],
                          prompts["context"], "context prompts")
        self.assert_close([build_prompt(refs[0], hyps[0], guidelines=False, context=c) for c in CONTEXTS],
                          prompts["context_default"], "context prompts (default judge)")
        assert ours_in[0] != ours_out[0]
        assert reference["system"] == {"role": "system", "content": SYSTEM_MESSAGE}
        request = reference["request"]
        assert request["messages"] == chat_messages(prompts["openai"][0])
        assert {k: v for k, v in request.items() if k not in ("messages", "model")} == {"temperature": 0.0,
                                                                                       **HTTP_REQUEST}

    def test_decoding_is_the_packages(self, paths, reference, tmp_path):
        """What the package's calls ask for, and what rexrank's crimson sends its generators: no repetition penalty,
        greedy, 8,192 new tokens without the model's own generation config (its config otherwise); vLLM with an
        8,192-token context and temperature 0, the answer cut where prompt and answer fill the context."""
        import shutil
        from types import SimpleNamespace

        decoding = reference["decoding"]
        assert decoding["hf_no_generation_config"] == {"max_new_tokens": DEFAULT_MAX_NEW_TOKENS, "max_length": None,
                                                      "do_sample": False}
        assert decoding["hf_generation_config"] == {"generation_config": "model's own", "batch_size": 1}
        assert decoding["vllm_sampling"] == {"temperature": 0.0, "max_tokens": DEFAULT_MAX_NEW_TOKENS}
        assert decoding["vllm_engine"]["max_model_len"] == Crimson.vllm_context == 8192
        bare = tmp_path / "judge"
        shutil.copytree(paths["crimson"], bare)
        (bare / "generation_config.json").unlink()
        metric = Crimson(model=bare, device="cpu")
        generator = metric._local_generator()
        assert generator.limits == {"max_new_tokens": DEFAULT_MAX_NEW_TOKENS}
        assert "repetition_penalty" not in generator.generate_kwargs and metric.config()["repetition_penalty"] is None
        with_config = Crimson(model=paths["crimson"], device="cpu")._local_generator()
        config = json.loads((Path(paths["crimson"]) / "generation_config.json").read_text())
        assert with_config.limits == {"max_new_tokens": config["max_new_tokens"]}
        assert "repetition_penalty" not in with_config.generate_kwargs
        seen = {}

        class Engine:
            def generate(self, inputs, params, use_tqdm=False):
                seen["inputs"], seen["params"] = inputs, params
                return [SimpleNamespace(outputs=[SimpleNamespace(token_ids=[1])]) for _ in inputs]

        vllm = Crimson(model=paths["crimson"], backend="vllm", engine=Engine(), sampling_params_cls=dict)
        vllm.score(["Small effusion."], ["Large effusion."])
        prompt = vllm.prompt_ids([build_prompt("Large effusion.", "Small effusion.", guidelines=vllm.guidelines)])[0]
        assert vllm._local_generator().max_length == 8192
        assert seen["params"] == [{"temperature": 0.0, "max_tokens": 8192 - len(prompt), "skip_special_tokens": True,
                                   "stop_token_ids": config["eos_token_id"]}]

    def test_deviations_are_counted_per_study_and_per_batch(self, paths):
        """A judge that answers {} is a NaN in the scores, marked in crimson_deviation, counted in n_deviations and
        the summary; an answer crimson-score cannot read is a parse failure but no deviation."""
        texts = [_VALID, "{}", "Sure! " + _VALID]
        judge = _ScriptedGenerator(Crimson(model=paths["crimson"]).tokenizer, texts)
        metric = Crimson(model=paths["crimson"], device="cpu", generator=judge)
        details = metric.score_details(["a", "b", "c"], ["x", "y", "z"])
        assert details["crimson"].iloc[0] == 1.0 and details["crimson"].iloc[1:].isna().all()
        assert details["crimson_deviation"].tolist()[1] == "missing_keys"
        assert details["crimson_deviation"].isna().tolist() == [True, False, True]
        summary = metric.summary()
        assert (metric.n_parse_failures, metric.n_deviations) == (2, 1)
        assert (summary["n_parse_failures"], summary["n_deviations"], summary["crimson"]) == (2, 1, 1.0)


class _ScriptedGenerator:
    """Answers each prompt with a written judge answer (token ids of the stand-in's tokenizer, then <end_of_turn>)."""

    def __init__(self, tokenizer, texts):
        self.tokenizer, self.texts, self.calls = tokenizer, list(texts), 0

    def generate(self, prompts):
        self.calls += 1
        out = []
        for _ in prompts:
            text = self.texts.pop(0)
            out.append(self.tokenizer(text, add_special_tokens=False)["input_ids"]
                       + [self.tokenizer.convert_tokens_to_ids("<end_of_turn>")])
        return out




def test_http_backend_sends_radevals_request_and_retries_unparsable_answers(monkeypatch):
    """backend="openai": the system message and prompt, temperature 0, seed 42, a JSON-object response format; an
    unparsable answer or a failed request is asked again (radeval: 3 attempts); a failed request is not cached."""
    import httpx

    monkeypatch.setenv("CRIMSON_TEST_KEY", "secret-key")
    bodies, script = [], {"a": ["not json", _VALID], "b": ["not json", "still not", "never"], "c": [None, _MINIMAL]}

    def handler(request):
        body = json.loads(request.content)
        bodies.append(body)
        key = "a" if "Predicted Findings (Candidate):\nA" in body["messages"][1]["content"] else (
            "b" if "Predicted Findings (Candidate):\nB" in body["messages"][1]["content"] else "c")
        text = script[key].pop(0)
        if text is None:
            return httpx.Response(400, json={"error": "bad"})
        return httpx.Response(200, json={"choices": [{"message": {"content": text}}]})

    metric = CrimsonRadeval(model="served-judge", backend="openai", base_url="http://127.0.0.1:9/v1",
                            api_key_env="CRIMSON_TEST_KEY", transport=httpx.MockTransport(handler))
    assert metric.guidelines  # not the fine-tuned judge: radeval's OpenAI prompt
    values = metric.score(["A", "B", "C"], ["r", "r", "r"])
    assert values[0] == 1.0 and math.isnan(values[1]) and values[2] == 1.0
    assert len(bodies) == 2 + 3 + 2 and metric.n_parse_failures == 1
    body = bodies[0]
    assert body["model"] == "served-judge" and body["temperature"] == 0.0 and "max_tokens" not in body
    assert {k: body[k] for k in HTTP_REQUEST} == HTTP_REQUEST
    assert body["messages"] == chat_messages(build_prompt("r", "A", guidelines=True))
    assert "secret-key" not in json.dumps(metric.config())
    crimson_judge = Crimson(model="rajpurkarlab/medgemma-4b-it-crimson", backend="openai",
                            base_url="http://127.0.0.1:9/v1", api_key_env=None, transport=httpx.MockTransport(handler))
    assert not crimson_judge.guidelines  # the fine-tuned judge behind a server: trained without them
    # The board's variant asks once, as crimson-score's _chat_completion does: its unparsable answers stay NaN.
    bodies.clear()
    script.update({"a": ["not json", _VALID], "b": ["never"], "c": [_MINIMAL]})
    board = Crimson(model="served-judge", backend="openai", base_url="http://127.0.0.1:9/v1",
                    api_key_env="CRIMSON_TEST_KEY", transport=httpx.MockTransport(handler))
    values = board.score(["A", "B", "C"], ["r", "r", "r"])
    assert math.isnan(values[0]) and math.isnan(values[1]) and values[2] == 1.0 and len(bodies) == 3


def test_http_failures_are_not_cached():
    """A request that failed on every attempt is NaN now and asked again on the next call."""
    answers = {"n": 0}

    class Flaky:
        name = "flaky"

        def complete(self, conversations):
            answers["n"] += len(conversations)
            return [None if answers["n"] <= 3 else _VALID for _ in conversations]

    metric = CrimsonRadeval(model="judge", backend="openai", client=Flaky())
    assert math.isnan(metric.score(["A"], ["r"])[0]) and answers["n"] == 3
    assert metric.score(["A"], ["r"])[0] == 1.0


def test_a_stray_quote_is_escaped_up_to_five_characters_before_the_error():
    """Both readers escape a quote of prose found within 5 characters before where json fails (crimson-score 0.2.2 and
    radeval 2.2.1 do: both answers are in JUDGE_OUTPUTS, held to the packages by the parity classes). Followed by 4
    spaces the quote is 5 back: escaped, the answer scores as without it; by 5 spaces it is 6 back: no JSON, NaN.
    (Issue 51 point 5: a window of 4 or 6 passed every test.)"""
    for spaces in (4, 5):
        text = _stray_quote(spaces)
        with pytest.raises(json.JSONDecodeError) as failed:
            json.loads(text)
        assert failed.value.pos - text.index('lobe 3"') - len("lobe 3") == spaces + 1  # json fails here, from the quote
    for evaluate in (evaluate_output, evaluate_output_radeval):
        clean = evaluate(json.dumps(_FULL_IDS))
        assert clean["parse_error"] is None and not math.isnan(clean["score"])
        four, five = evaluate(_stray_quote(4)), evaluate(_stray_quote(5))
        assert four["parse_error"] is None and four["score"] == clean["score"], four
        assert math.isnan(five["score"]) and "no JSON object" in five["parse_error"], five


# sha256 of json.dumps(chat_messages(build_prompt("REF", "CAND", guidelines=..., context=_PINNED_CONTEXT))): the
# conversations the parity classes compare with radeval's and crimson-score's word for word (refvenv), pinned so the
# fast tier sees a changed word too.
_PINNED_CONTEXT = {"Age": "82", "Indication": "cough"}
_PINNED_MESSAGES = {False: "b3e6cd54ad333be867ef45eda5cbbe9829578e30c1dd863c5e3c46dc6f886141",
                    True: "67cd40cb66761609e91135313d93933f12a837c98f0966ddcea35ab0853d448e"}


def test_the_prompts_are_pinned_to_the_compared_text():
    import hashlib

    for guidelines, digest in _PINNED_MESSAGES.items():
        messages = chat_messages(build_prompt("REF", "CAND", guidelines=guidelines, context=_PINNED_CONTEXT))
        assert messages[0] == {"role": "system", "content": SYSTEM_MESSAGE}
        assert hashlib.sha256(json.dumps(messages).encode()).hexdigest() == digest, (
            f"the CRIMSON conversation (guidelines={guidelines}) changed: if on purpose, rerun the parity classes "
            "(refvenv) and pin the new digest")


def test_guidelines_follow_radevals_default_judge_rule():
    assert is_default_judge(None) and is_default_judge("rajpurkarlab/medgemma-4b-it-crimson")
    assert is_default_judge("/models/medgemma-4b-it-crimson/") and not is_default_judge("/models/medgemma-4b-it")
    assert not is_default_judge("gpt-5.2")


def test_bad_options_are_one_line_config_errors(paths, tmp_path):
    for options, word in (({"backend": "gemini"}, "backend"), ({"dtype": "int8"}, "dtype"),
                          ({"max_new_tokens": 0}, "max_new_tokens"), ({"base_url": "http://x"}, "base_url")):
        with pytest.raises(ConfigError, match=word) as info:
            Crimson(model=paths["crimson"], **options)
        assert "\n" not in str(info.value)
    with pytest.raises(ConfigError, match="the package's request"):
        Crimson(model="judge", backend="openai", api_key_env=None, temperature=0.7)
    # A judge folder's generation_config.json is outside input: unreadable, one line naming it.
    import shutil

    for bad in ("{not json", '{"max_new_tokens": "many"}', '{"max_new_tokens": 4, "eos_token_id": ["x"]}',
                '{"max_new_tokens": 4, "repetition_penalty": "high"}'):
        folder = tmp_path / f"judge{len(bad)}"
        shutil.copytree(paths["crimson"], folder)
        (folder / "generation_config.json").write_text(bad)
        with pytest.raises(ModelNotAvailableError, match="generation_config.json") as info:
            Crimson(model=folder)
        assert "\n" not in str(info.value)
    # The official-weights check reads a local judge's shard digests from the config (rexrank.metrics.official).
    from rexrank.metrics.official import reported_digests

    assert set(reported_digests("crimson", Crimson(model=paths["crimson"]).config())) == {"crimson"}


@pytest.mark.slow  # 19.3 s of CPU of its own: over the fast tier's 2 s or near it (tests/README.md, "Tiers")
def test_two_launched_processes_equal_one(paths, tmp_path):
    """The spec shards a launched job's distinct pairs (torchrun, 2 gloo processes): every rank gets the
    single-process values and answers."""
    from test_parallel import HYPS, REFS, assert_two_processes_equal_one

    assert_two_processes_equal_one(tmp_path, "crimson", {"model": paths["crimson"], "device": "cpu", "batch_size": 2,
                                                         "max_new_tokens": 8}, HYPS[:4], REFS[:4])


def test_stand_in_has_medgemmas_chat_template(paths):
    """The stand-in's template is Gemma 3's as published (trl keeps a copy of google/gemma-3's for identity checks)."""
    from importlib.util import find_spec

    from rexrank.testing.standin_gemma3 import CHAT_TEMPLATE

    trl = Path(find_spec("trl").submodule_search_locations[0])  # located, not imported
    published = (trl / "chat_templates" / "gemma3.jinja").read_text()
    assert CHAT_TEMPLATE.rstrip("\n") == published.rstrip("\n")
    stored = json.loads((Path(paths["crimson"]) / "tokenizer_config.json").read_text())
    assert stored["chat_template"] == CHAT_TEMPLATE


def test_vllm_backend_gets_radevals_decoding_for_crimson_radeval(paths):
    """backend="vllm" (vLLM is not installed here: a fake engine): the same prompt token ids as the transformers
    path, greedy, the generation config's answer cap, repetition penalty 1.1, the config's stop tokens."""
    from types import SimpleNamespace

    seen = {}

    class Engine:
        def generate(self, inputs, params, use_tqdm=False):
            seen["inputs"], seen["params"] = inputs, params
            return [SimpleNamespace(outputs=[SimpleNamespace(token_ids=[1])]) for _ in inputs]

    metric = CrimsonRadeval(model=paths["crimson"], backend="vllm", engine=Engine(), sampling_params_cls=dict)
    values = metric.score(["Small effusion."], ["Large effusion."])
    assert math.isnan(values[0])  # an empty answer: a counted NaN
    prompt = build_prompt("Large effusion.", "Small effusion.", guidelines=metric.guidelines)
    assert seen["inputs"] == [{"prompt_token_ids": metric.prompt_ids([prompt])[0]}]
    config = json.loads((Path(paths["crimson"]) / "generation_config.json").read_text())
    assert seen["params"] == [{"temperature": 0.0, "max_tokens": config["max_new_tokens"], "skip_special_tokens": True,
                               "repetition_penalty": 1.1, "stop_token_ids": config["eos_token_id"]}]


def test_is_a_grpo_reward(paths):
    """rexrank.rewards takes it like any per-report metric: one value per completion, equal to score()."""
    from rexrank.rewards import reward

    tokenizer = Crimson(model=paths["crimson"]).tokenizer
    fn = reward("crimson", model=paths["crimson"], generator=_ScriptedGenerator(tokenizer, [_VALID, "no json"]))
    values = fn(prompts=["", ""], completions=["Small effusion.", "Normal."], reference=["Effusion.", "Effusion."])
    assert values == [1.0, None]  # an unparsable answer: None, TRL's "not applicable", never a silent 0
    assert fn.__name__ == "rexrank_crimson"

"""GREEN prompt, response cleaning and parser: identical to the official code where it reads a count, robust elsewhere.

Expected "official" values below were obtained by running Stanford-AIMI/GREEN @d72c195 GREEN.parse_error_counts /
compute_green on each text (see docs/green.md); the five model outputs are the official tests/test_repro.py ones.
"""

from __future__ import annotations

import hashlib
import json
import math
import random

import pytest
from parity import ParityTester

from rexrank.metrics import green
from rexrank.metrics.green import clean_response, make_prompt, parse_output, summarize


@pytest.fixture(scope="module")
def fx(shared_dir) -> dict:
    """The official outputs (../shared/reference/green_fixtures.json; not redistributed: upstream has no licence)."""
    return json.loads((shared_dir / "reference" / "green_fixtures.json").read_text())


SIG_ZERO = "\n".join(f"({c}) {text}: 0." for c, _, text in green.CATEGORIES)


def _output(sig: str = SIG_ZERO, insig: str = SIG_ZERO, matched: str = "1. Heart size normal.") -> str:
    return (f"\nSome explanation.\n\n[Clinically Significant Errors]:\n{sig}\n\n"
            f"[Clinically Insignificant Errors]:\n{insig}\n\n[Matched Findings]:\n{matched}")


def test_five_official_outputs_parse_to_the_official_scores(fx):
    """The contract of the issue: same counts and scores as the official parser on tests/test_repro.py outputs."""
    assert len(fx["cases"]) == 5
    for case, expected in zip(fx["cases"], fx["official_parse"]):
        parsed = parse_output(case["model_output"])
        assert parsed["significant_errors"] == expected["significant_errors"]
        assert parsed["matched_findings"] == expected["matched_findings"]
        assert parsed["score"] == pytest.approx(expected["green"], abs=1e-12)
        assert parsed["insignificant_errors"] == [0] * 6
        assert parsed["error_free"] is False and parsed["parse_error"] is None
    assert [round(parse_output(c["model_output"])["score"], 4) for c in fx["cases"]] == [0.0, 0.1667, 0.3333, 0.5, 0.25]


@pytest.mark.parametrize("text, official_sig, official_matched, official_score", [
    # numbered (1)-(6) lines instead of (a)-(f): upstream's fallback
    (_output(sig="\n".join(f"({i}) Error: {i - 1}." for i in range(1, 7)), matched="3. A; B; C."),
     [0, 1, 2, 3, 4, 5], 3, 3 / 18),
    # duplicate (a) lines: the last one in sorted order wins
    (_output(sig="(a) False report: 2. X; Y.\n(a) False report: 1. X.\n" + SIG_ZERO.split("\n", 1)[1]),
     [2, 0, 0, 0, 0, 0], 1, 1 / 3),
    # extra text before, between and after sections changes nothing
    ("Preamble (z) junk: 9.\n" + _output(matched="2. A; B.\n\nNote: (a) something: 7.") + "\nTrailing words.",
     [0] * 6, 2, 1.0),
    # a section that starts with "No" has no errors
    (_output(sig="None.", matched="1. A."), [0] * 6, 1, 1.0),
    (_output(matched="No matched findings."), [0] * 6, 0, 0),
    # matched == 0 scores 0 whatever the errors
    (_output(sig=SIG_ZERO.replace("(b) Missing a finding present in the reference: 0.", "(b) Missing: 4. W; X; Y; Z."),
             matched="0."), [0, 4, 0, 0, 0, 0], 0, 0),
])
def test_outputs_the_official_parser_reads_give_the_same_numbers(text, official_sig, official_matched, official_score):
    """Wherever upstream finds a count, ours is the same (including its sorted/last-wins and "No" rules)."""
    parsed = parse_output(text)
    assert parsed["significant_errors"] == official_sig
    assert parsed["matched_findings"] == official_matched
    assert parsed["score"] == pytest.approx(official_score)


@pytest.mark.parametrize("text, sig, matched, score, official_score", [
    # count without its period: upstream reads 0 silently
    (_output(sig=SIG_ZERO.replace("candidate: 0.", "candidate: 2"), matched="2. A; B."), [2, 0, 0, 0, 0, 0], 2,
     0.5, 1.0),
    # numbers in words
    (_output(sig=SIG_ZERO.replace("candidate: 0.", "candidate: Two. X; Y."), matched="One. A."),
     [2, 0, 0, 0, 0, 0], 1, 1 / 3, 0),
    # a blank line inside the list: upstream stops reading at it
    (_output(sig=SIG_ZERO.replace("(d)", "\n(d)").replace("severity of a finding: 0.", "severity of a finding: 3."),
             matched="1. A."), [0, 0, 0, 3, 0, 0], 1, 0.25, 1.0),
    # header without its colon
    (_output(matched="1. A.").replace("[Matched Findings]:", "[Matched Findings]"), [0] * 6, 1, 1.0, 0),
])
def test_where_upstream_reads_a_silent_zero_we_read_the_number(text, sig, matched, score, official_score):
    """Documented differences: each of these upstream scores as shown in official_score (a silent misread)."""
    parsed = parse_output(text)
    assert parsed["significant_errors"] == sig
    assert parsed["matched_findings"] == matched
    assert parsed["score"] == pytest.approx(score)
    assert parsed["score"] != pytest.approx(official_score)


@pytest.mark.parametrize("text, fragment", [
    ("", "empty output"),
    ("   \n", "empty output"),
    (None, "empty output"),
    ("The model rambled without any sections at all.", "[Matched Findings] missing"),
    (_output().split("[Matched Findings]")[0], "[Matched Findings] missing"),  # truncated before the last section
    (_output()[: _output().index("(d)") + 12], "[Matched Findings] missing"),  # cut in the middle of a line
    (_output(matched="Heart size normal."), "count unreadable"),
    (_output(sig="(a) False report of a finding in the candidate: several. X.", matched="1. A."),
     "(a) count unreadable"),
    ("[Matched Findings]:\n2. A; B.", "[Clinically Significant Errors] section missing"),
])
def test_unparseable_outputs_are_nan_with_a_reason_never_zero(text, fragment):
    """A parse failure is a NaN with a reason (upstream scores most of these 0, one of them 1.0)."""
    parsed = parse_output(text)
    assert math.isnan(parsed["score"])
    assert fragment in parsed["parse_error"]


def test_matched_zero_with_missing_errors_is_zero_but_error_free_unknown():
    parsed = parse_output("[Matched Findings]:\n0.")
    assert parsed["score"] == 0.0 and parsed["error_free"] is None


def test_parser_never_raises_on_random_text(fx):
    """Fuzz with shuffled fragments of real outputs, digits, words, brackets: always a dict, score in [0, 1] or NaN."""
    pieces = " ".join(c["model_output"] for c in fx["cases"]).replace("\n", " \n ").split(" ")
    pieces += ["[", "]", ":", "(a)", "(7)", "0.", "12.", "two", "No", "[Matched Findings]:", "\n\n", "\u00e9", "\x00"]
    rng = random.Random(0)
    for _ in range(400):
        text = " ".join(rng.choice(pieces) for _ in range(rng.randint(0, 120)))
        parsed = parse_output(text)
        assert math.isnan(parsed["score"]) or 0.0 <= parsed["score"] <= 1.0
        assert len(parsed["significant_errors"]) == 6 and len(parsed["insignificant_errors"]) == 6


def test_prompt_is_pinned_to_the_official_text():
    """make_prompt equals upstream make_prompt (checked once against green_score/utils.py @d72c195); pinned here."""
    digest = hashlib.sha256(make_prompt("REF", "CAND").encode()).hexdigest()
    assert digest == "4e621f21f3a8802263136333c20f59e6b103d87179c675cea196e36e81cf6eb0"
    assert make_prompt("a  b\n\tc", "x").count("a b c") == 1  # whitespace collapsed as " ".join(split())
    long = " ".join(f"w{i}" for i in range(400))
    prompt = make_prompt(long, "cand")
    assert "w299" in prompt and "w300" not in prompt  # first 300 words only


def test_chat_template_renders_like_the_official_tokenizer_call():
    """The rendered chat text (what gets tokenized), using transformers' own chat-template renderer."""
    from transformers.utils.chat_template_utils import render_jinja_template

    rendered, _ = render_jinja_template(conversations=[green.chat_messages("P")], chat_template=green.CHAT_TEMPLATE,
                                        add_generation_prompt=True, eos_token="</s>")
    assert rendered[0] == "<|user|>\nP</s>\n<|assistant|>\n</s>\n<|assistant|>\n"


@pytest.mark.parametrize("decoded, expected", [
    ("<|user|>\nprompt [Explanation]:\n<Explanation>\n</s> <|assistant|>\n</s> <|assistant|>\n"
     "[Explanation]:\nThe analysis.", "\nThe analysis."),
    ("prompt [Explanation]: stuff <|assistant|>\nno explanation header here</s>", "\nno explanation header here"),
    ("no markers at all <unk>", "no markers at all "),
])
def test_clean_response_keeps_the_analysis(decoded, expected):
    assert clean_response(decoded) == expected


def test_summary_mean_and_error_free_rates(fx):
    parsed = [parse_output(c["model_output"]) for c in fx["cases"]] + [parse_output("junk"), parse_output(_output())]
    summary = summarize(parsed)
    assert summary["n"] == 7 and summary["n_parse_failures"] == 1 and summary["n_scored"] == 6
    assert summary["mean"] == pytest.approx((0 + 1 / 6 + 1 / 3 + 1 / 2 + 1 / 4 + 1.0) / 6)
    assert summary["error_free_rate"] == pytest.approx(1 / 6)
    rates = summary["error_free_rate_by_category"]
    assert rates["(a) false_finding"] == pytest.approx(2 / 6)  # (a) is 0 only in official case 3 and the clean one
    assert rates["(e) extra_comparison"] == 1.0


# One sentence per rule of transformers 4's clean_up_tokenization, then texts where rules meet: a rule's output
# that another rule (applied later in its order) reads again, and chains of the same pattern.
SPACE_CLEANUP_TEXTS = [
    "Heart size is normal .", "Is there an effusion ?", "Large effusion !", "Lungs , heart and mediastinum",
    "the patient ' s film", "There is n't any effusion", "I 'm sure", "The heart 's size", "We 've compared",
    "They 're clear",
    "It is n't . Is n't it ? They 're n't , we 've ! I 'm 's",
    "a ' 's b", "a ' ' s", "x  .  . ?", "don 't", "n't n't  n't", " 's 's", "' ve ' re", "a ' n't",
    "(a) Missing findings : 0 . (b) None , 1 .", "", " .", "tab\t.\tnewline\n.",
]


class TestSpaceCleanupParity(ParityTester):
    """cleanup_spaces equals transformers 4.57's PreTrainedTokenizerBase.clean_up_tokenization
    (tests/reference/tokenizer_cleanup_ref.py) on text holding every pattern, alone and where patterns meet (the
    rules and their order)."""

    metric = "green"
    reference_script = "tokenizer_cleanup_ref.py"
    versions = {"transformers": "4."}
    compared = (("cleaned", "cleaned"),)
    atol = 0  # texts: equal
    function = staticmethod(green.cleanup_spaces)
    min_spread = None

    @pytest.fixture(scope="class")
    def pairs(self):
        return SPACE_CLEANUP_TEXTS  # the inputs are texts

    def reference_payload(self, texts, options):
        return {"texts": texts}



    def compute_ours(self, cleanup_spaces, texts, options):
        return {"cleaned": [cleanup_spaces(t) for t in texts]}

    def test_inputs_make_the_comparison_meaningful(self, pairs, reference):
        assert sum(a != b for a, b in zip(pairs, reference["cleaned"])) >= 18  # the rules fire

"""rexrank.metrics.ptb: byte-identical to pycocoevalcap 1.2's PTBTokenizer (CoreNLP 3.4.1 jar, run in .venv-ref).

Every comparison is one PTBTokenizer().tokenize call on the same list, in the same order (a caption's tokens can
depend on the next caption, so the list is compared as a whole, as tokenize_all promises).
"""

from __future__ import annotations

import json
from typing import ClassVar

import pytest
from parity import ParityTester

from rexrank.errors import InputError
from rexrank.metrics import ptb

# Strings chosen to reach the lexer's rules and pycocoevalcap's post-processing (numbers and measurements,
# abbreviations, contractions, quotes, brackets, dashes, symbols, Unicode, blanks, lists, URLs).
HARD_STRINGS = [
    "The lesion measures 1.5x2.0 cm.", "A 3 x 4 cm mass.", "10mm nodule", "4-5mm and 2-3 mm", "1.5-cm nodule",
    "T11-T12 and L1-L2.", "C5-6, C5-C6, L4/5", "5/6 ribs, 3:1 ratio, 10:30 a.m.", "50% stenosis, 100 %",
    "1,000 and 1.000.000 and .5 and 5. and -5 and +5", "2/3/2014 and 12-05-99 and 1 1/2 and 3 \u00bd",
    "\u00bc \u00be \u2153 and 100\u00b0F", "e.g. this, i.e. that", "Dr. Smith vs. Dr Jones", "approx. 3 cm",
    "Mr. and Mrs. Smith Jr. and Sr.", "Jan. 5 and Feb. The", "sq. ft. and tel. 555-1234 and (555) 555-5555",
    "Fig. 3 and ca. 5 and No. 7 and fig.3", "Smith Co. Ltd. and Pty. Limited", "et al. The", "etc. The next",
    "U.S. He went", "The U.S. and the U.K. The end.", "I. A. B. Smith", "non-U.S. and U.S.-U.K.",
    "ABC-1.2.3 and a.b.c. and A.B.", "Ph.D. Ed.D. The",
    "It isn't. Can't. Cannot. Gonna wanna gotta lemme gimme. Won't, don't, I'm, we're, they've, she'll, it'd.",
    "o'clock, rock'n'roll, y'all, 'tis, 'twas, '90s, cont'd", "the patient\u2019s heart, the patients' hearts",
    "\"Quoted\" text 'single' and \u201ccurly\u201d \u2018single curly\u2019", "He said, \"no.\"",
    "'Quoted single' and ''double single'' and ``latex''", "\u201ealow\u201c \u00abguillemets\u00bb \u2039one\u203a",
    "(parens) [square] {curly} <angle>", "Calcified granuloma (XXXX) in the RUL.", "( )", "[ ] { }",
    "Wait... and \u2026 and . . . end", "a - b -- c --- d ---- e ----- f", "en\u2013dash em\u2014dash \u2015bar",
    "R&D, AT&T, S&P-500 & more", "$5 and US$10 and \u00a35 and \u20ac5 and \u00a2 and \u00a5",
    "# 5, #tag, @home, @ sign, * star, ** two, + plus", "<5 mm, > 3 cm, = 4, ~5 mm, >= 2, << >>",
    "|pipe| \\backslash ^caret", ":) :-( ;) =D (see below:)", "C++ and C# and f#", "5cm/s and/or w/o s/p CABG 2/2",
    "left-sided, post-operative, anti-inflammatory, pro-", "mid-to-lower and x-ray and X-ray",
    "caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u00c9PANCHEMENT Stra\u00dfe",
    "\u03b1-blocker \u0436 \u0416 \u4e2d\u6587 \ud55c\uad6d\uc5b4 \u0627\u0644\u0639\u0631\u0628\u064a\u0629",
    "\u0526 \u0529 \u13a0 \u017feq \u212a \u0131t \u0130nc. x",  # Unicode 6.2 tables, caseless variants
    "\U0001f600 emoji \U0001d400 math", "\u00b0 \u00b1 \u00d7 \u00f7 \u00b2 \u00b3 \u2192 \u2264",
    "a\u00adb soft hyphen",
    "XXXX-year-old XXXX. The XXXX are normal. XXXX XXXX", "Dr. XXXX on XXXX at XXXX p.m.",
    "multiple   spaces\tand\ttabs", "  leading and trailing  ", "weird\u00a0nbsp and\u2009thin \u3000ideo",
    " \u00a0.com and \u00a0.com", "\u200bzero\ufeffwidth\x7fdel\x00nul",
    "", " ", "\t", "...!?,;:", ".", "-", "--", "''", "''``", "&amp; &lt; &gt; &quot;x&quot; &apos;s &nbsp;",
    "line one\nline two", "Impression:\n1. No acute disease.\n2. Stable.", "1. First item. 2. Second item. 3. Third.",
    "see http://example.com/path?x=1. or www.nih.gov, mail john.doe@example.org.", "report.pdf, a.txt, x.jpg.",
    "PA and lateral views.", "No acute cardiopulmonary abnormality.", "Heart size normal. ", "Mild cardiomegaly;",
    "NG tube tip in the stomach.\tET tube 5 cm above the carina.", "The heart is  NORMAL . ", "pneumothorax?",
    "Is there?! Yes!!", "3rd, 4th, 1st and 2nd ribs", "x2 x 3.0 and 2.5-3.0 cm", "Grade I.", "The end here",
    "Ref No.", "5 cm", "ends with etc.", "Grade I.",
]

# Captions holding a newline character other than '\n': the jar starts a new line, pycocoevalcap zips ids with lines.
SHIFTING = ["first caption", "carriage\rreturn", "third", "vertical\x0btab", "fifth", "line\u2028separator",
            "seventh", "paragraph\u2029separator", "ninth", "form\x0cfeed", "eleventh", "next\x85line", "thirteenth",
            "crlf\r\nend", "fifteenth", "sixteenth", "seventeenth", "eighteenth", "nineteenth", "twentieth"]


class _PtbParity(ParityTester):
    """ptb.tokenize_all on a list equals pycocoevalcap 1.2's PTBTokenizer().tokenize on that list, text for text
    (tests/reference/ptb_ref.py); each list below is a subclass (a list is one call: neighbours matter)."""

    metric = "ptb"
    reference_script = "ptb_ref.py"
    versions = {"pycocoevalcap": "1.2"}
    compared = (("tokens", "tokens"),)
    atol = 0  # byte-identical texts
    function = staticmethod(ptb.tokenize_all)
    min_spread = None
    texts: ClassVar[list[str]]

    def make_pairs(self, iu_xray_test):
        return self.texts  # the inputs are one list of texts

    def reference_payload(self, texts, options):
        return {"texts": texts}


    def compute_ours(self, tokenize_all, texts, options):
        return {"tokens": tokenize_all(texts)}

    def theirs(self, reference):
        # In key order; a caption pycocoevalcap dropped makes the list shorter, which the comparison reports.
        tokenized = reference["tokenized"]
        return {"tokens": [tokenized[key] for key in sorted(tokenized, key=int)]}

    def test_inputs_make_the_comparison_meaningful(self, ours, pairs):
        # Most non-blank texts change (lower case, punctuation gone): equal lists are the tokenizer's work.
        changed = [t != o for t, o in zip(pairs, ours["tokens"]) if t.strip()]
        assert sum(changed) > len(changed) / 2, "the texts pass through unchanged: nothing is compared"


class TestPtbIuXrayParity(_PtbParity):
    """Every findings and impression text of the IU-Xray test and validation splits, one call each way."""

    @pytest.fixture(scope="class")
    def pairs(self, shared_dir):
        texts = []
        paths = sorted((shared_dir / "data" / "iu_xray").glob("*.json"))
        assert len(paths) >= 2, f"expected the IU-Xray test and validation files in {shared_dir / 'data' / 'iu_xray'}"
        for path in paths:
            for study in json.loads(path.read_text()).values():
                texts += [study[field] for field in ("section_findings", "section_impression") if study.get(field)]
        assert len(texts) > 1000
        return texts


class TestPtbHardStringsParity(_PtbParity):
    """The curated hard strings as one list (neighbours matter: "Grade I." before "The end here" and at the end)."""

    texts = HARD_STRINGS


class TestPtbAloneParity(_PtbParity):
    """tokenize(text) is pycocoevalcap on that text as the only caption (no next caption to look at)."""

    @pytest.fixture(scope="class", params=["Grade I.", "Ref No.", "Smith co."])
    def pairs(self, request):
        return [request.param]

    def compute_ours(self, tokenize_all, texts, options):
        return {"tokens": [ptb.tokenize(text) for text in texts]}


class TestPtbNewlineShiftParity(_PtbParity):
    """The OUTPUT SHIFT quirk: reproduced because it is pycocoevalcap 1.2's real output (see the module docstring)."""

    texts = SHIFTING

    def test_inputs_make_the_comparison_meaningful(self, ours, pairs):
        # Most captions here are plain lower-case words: the shift itself is what the comparison must see.
        ours = ours["tokens"]
        assert ours[1] == "carriage" and ours[2] == "return", "the \\r should split caption 1 and shift caption 2"
        assert ours[-1] != "twentieth", "the last caption should have been pushed out"


class TestPtbBlankTextsParity(_PtbParity):
    """Empty captions give "" and shift nothing (an empty line is still a line)."""

    texts = ["", "Heart normal.", "", " ", "\t", "Lungs clear.", ""]

    def test_blank_texts_keep_their_place(self, ours):
        ours = ours["tokens"]
        assert [ours[i] for i, text in enumerate(self.texts) if not text.strip()] == [""] * 5
        assert (ours[1], ours[5]) == (ptb.tokenize("Heart normal."), ptb.tokenize("Lungs clear.")) != ("", "")
        assert ptb.tokenize_all([]) == []


def test_brackets_survive_and_punctuation_goes():
    """pycocoevalcap's list has "-LRB-" etc. upper-case while -lowerCase emits "-lrb-": brackets survive."""
    assert ptb.tokenize("A (small) [left] {x} effusion, e.g. here.") == \
        "a -lrb- small -rrb- -lsb- left -rsb- -lcb- x -rcb- effusion e.g. here"


def test_non_string_text_is_an_input_error():
    with pytest.raises(InputError, match=r"text #1 is NoneType, not str"):
        ptb.tokenize_all(["fine", None])

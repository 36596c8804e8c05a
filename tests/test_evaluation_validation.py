"""Input validation of `rexrank score`: every bad-input case has its exact message, and nothing is written.

Each test pins the full message a user sees, because the message is the interface for fixing a file: it must
name the file, the kind of problem, the study ids, and the option that helps.
"""

from __future__ import annotations

import json

import pytest

HEAD = "error: input validation failed ({n} {noun}); nothing was scored:\n"

REFS = {"s1": "Lungs are clear.", "s2": "Small left effusion.", "s3": "No pneumothorax."}


def head(n: int) -> str:
    return HEAD.format(n=n, noun="problem" if n == 1 else "problems")


@pytest.fixture
def refs(tmp_path):
    path = tmp_path / "refs.json"
    path.write_text(json.dumps(REFS))
    return path


def score(cli, tmp_path, predictions, refs, *extra):
    out = tmp_path / "out"
    code, text = cli("score", "-p", str(predictions), "-r", str(refs), "-m", "bleu2", "-o", str(out),
                     "--no-cache", *extra)
    return code, text, out


def write(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode("utf-8"))
    return path


def assert_failed(code, text, out, expected):
    assert code == 2
    assert text == expected
    assert not out.exists(), "a failed validation must not leave any result file"


def test_missing_ids(cli, tmp_path, refs):
    """A prediction file that skips studies would silently inflate the score if the rest were averaged."""
    preds = write(tmp_path, "p.json", json.dumps({"s1": "Clear lungs."}))
    assert_failed(*score(cli, tmp_path, preds, refs), head(2) +
                  "- 2 reference studies have no prediction (score the rest with --allow-missing): 's2'; 's3'\n")


def test_extra_ids(cli, tmp_path, refs):
    preds = write(tmp_path, "p.json", json.dumps({**{k: "x" for k in REFS}, "zz": "extra"}))
    assert_failed(*score(cli, tmp_path, preds, refs), head(1) +
                  "- 1 prediction has no reference study (check --dataset/--split/--track, or use --allow-missing): "
                  "'zz'\n")


def test_duplicate_ids_in_json_keys(cli, tmp_path, refs):
    """json.loads keeps the last duplicate key silently; we read the pairs so the user learns about it."""
    preds = write(tmp_path, "p.json", '{"s1": "a", "s2": "b", "s3": "c", "s1": "d"}')
    assert_failed(*score(cli, tmp_path, preds, refs), head(1) +
                  "- 1 study id appears more than once in predictions: 's1' (key 's1', key 's1')\n")


def test_duplicate_ids_in_csv_name_lines(cli, tmp_path, refs):
    preds = write(tmp_path, "p.csv", "study_id,report\ns1,a\ns2,b\ns3,c\ns2,d\n")
    assert_failed(*score(cli, tmp_path, preds, refs), head(1) +
                  "- 1 study id appears more than once in predictions: 's2' (line 3, line 5)\n")


def test_empty_null_nan_and_non_string_reports(cli, tmp_path, refs):
    preds = write(tmp_path, "p.json", '{"s1": "  ", "s2": null, "s3": NaN, "s4": ["x"]}')
    refs.write_text(json.dumps({**REFS, "s4": "Normal."}))
    assert_failed(*score(cli, tmp_path, preds, refs), head(4) +
                  "- 2 predictions are null or NaN: 's2'; 's3'\n"
                  "- 1 prediction is not a string: 's4' (list [\"x\"])\n"
                  "- 1 prediction is empty: 's1'\n")


def test_empty_csv_cell_is_empty(cli, tmp_path, refs):
    """pandas writes NaN as an empty CSV cell: it must not become the report "" silently."""
    preds = write(tmp_path, "p.csv", "study_id,report\ns1,a\ns2,\ns3,c\n")
    assert_failed(*score(cli, tmp_path, preds, refs), head(1) + "- 1 prediction is empty: 's2'\n")


def test_undecodable_bytes_are_traced_to_the_study(cli, tmp_path, refs):
    preds = write(tmp_path, "p.jsonl", b'{"study_id": "s1", "report": "a"}\n'
                                       b'{"study_id": "s2", "report": "caf\xe9 bad"}\n'
                                       b'{"study_id": "s3", "report": "c"}\n')
    assert_failed(*score(cli, tmp_path, preds, refs), head(1) +
                  "- 1 prediction contains bytes that are not UTF-8 (save the file as UTF-8): "
                  "'s2' (byte 0xe9 at character 3)\n")


def test_file_over_the_size_limit_is_not_read(cli, tmp_path, refs):
    preds = write(tmp_path, "p.json", json.dumps({k: "x" * 400 for k in REFS}))
    code, text, out = score(cli, tmp_path, preds, refs, "--max-file-size-mb", "0.001")
    assert_failed(code, text, out, head(1) +
                  "- predictions file p.json cannot be used: it is 0.00123 MB, over the 0.001 MB limit "
                  "(raise it with --max-file-size-mb)\n")


def test_default_size_limit_is_200_mb():
    from rexrank.evaluation.predictions import DEFAULT_MAX_FILE_SIZE_MB

    assert DEFAULT_MAX_FILE_SIZE_MB == 200


def test_wrong_csv_columns(cli, tmp_path, refs):
    preds = write(tmp_path, "p.csv", "id,text\ns1,a\n")
    assert_failed(*score(cli, tmp_path, preds, refs), head(1) +
                  "- predictions file p.csv lacks required fields: needs the columns 'study_id' and "
                  "'model_prediction' or 'report'; found: 'id', 'text'\n")


def test_rexrank_json_without_model_prediction_is_refused(cli, tmp_path, refs):
    """A ReXrank study object carries the ground truth in "report": scoring it as the prediction would be 1.0."""
    preds = write(tmp_path, "p.json", json.dumps({k: {"report": v} for k, v in REFS.items()}))
    code, text, out = score(cli, tmp_path, preds, refs)
    assert_failed(code, text, out, head(3) +
                  "- predictions file p.json lacks required fields: study 's1' has no 'model_prediction' field; "
                  "study 's2' has no 'model_prediction' field; study 's3' has no 'model_prediction' field\n")


def test_jsonl_bad_line_and_missing_field(cli, tmp_path, refs):
    preds = write(tmp_path, "p.jsonl", '{"study_id": "s1", "report": "a"}\n{"study_id": "s2"}\nnot json\n')
    assert_failed(*score(cli, tmp_path, preds, refs), head(2) +
                  "- predictions file p.jsonl is not in an accepted format: line 3: invalid JSON (Expecting value)\n"
                  "- predictions file p.jsonl lacks required fields: line 2 has no 'model_prediction' or 'report' "
                  "field\n")


def test_invalid_json_and_missing_reference_file_reported_together(cli, tmp_path):
    preds = write(tmp_path, "p.json", '{"s1": "a",}')
    missing = tmp_path / "nope.json"
    code, text, out = score(cli, tmp_path, preds, missing)
    assert_failed(code, text, out, head(2) +
                  f"- references file nope.json cannot be used: {missing} does not exist\n"
                  "- predictions file p.json is not in an accepted format: invalid JSON at line 1, column 12: "
                  "Expecting property name enclosed in double quotes\n")


def test_problems_of_both_files_in_one_report_first_n_per_kind(cli, tmp_path):
    """One report for everything, so a user fixes the files once; long lists are cut at the first 10."""
    refs = write(tmp_path, "r.json", json.dumps({f"s{i:02d}": "ref" for i in range(15)} | {"e": ""}))
    preds = write(tmp_path, "p.json", json.dumps({"s00": "x"}))
    code, text, out = score(cli, tmp_path, preds, refs)
    listed = "; ".join(f"'s{i:02d}'" for i in range(1, 11))
    assert_failed(code, text, out, head(16) +
                  "- 1 reference is empty: 'e'\n"
                  f"- 15 reference studies have no prediction (score the rest with --allow-missing): {listed}"
                  " ... and 5 more\n")


def test_allow_missing_scores_the_intersection_and_says_so(cli, tmp_path, refs):
    preds = write(tmp_path, "p.json", json.dumps({"s1": "Lungs are clear.", "s2": "Effusion.", "zz": "x"}))
    code, text, out = score(cli, tmp_path, preds, refs, "--allow-missing", "-q")
    assert code == 0, text
    assert "note: scoring 2 studies; dropped 1 reference study without a prediction and " \
           "1 prediction without a reference study\n" in text
    results = json.loads((out / "results.json").read_text())
    assert results["n_studies"] == 2
    assert results["n_dropped"] == {"missing_prediction": 1, "extra_prediction": 1, "excluded_by_track": 0}


def test_allow_missing_does_not_excuse_bad_reports(cli, tmp_path, refs):
    preds = write(tmp_path, "p.json", json.dumps({"s1": "", "s2": "b"}))
    code, text, out = score(cli, tmp_path, preds, refs, "--allow-missing")
    assert_failed(code, text, out, head(1) + "- 1 prediction is empty: 's1'\n")


def test_findings_track_excludes_studies_without_findings(cli, tmp_path):
    """On the findings track a study without a findings section is not part of the set: its prediction is
    dropped and counted, never reported as an extra id nor scored against an empty reference."""
    refs = write(tmp_path, "r.json", json.dumps({
        "a": {"section_findings": "Heart normal.", "section_impression": "Normal."},
        "b": {"section_findings": None, "section_impression": "No acute disease."}}))
    preds = write(tmp_path, "p.json", json.dumps({"a": {"model_prediction": "Heart normal."},
                                                  "b": {"model_prediction": "x"}}))
    code, text, out = score(cli, tmp_path, preds, refs, "-q")
    assert code == 0, text
    assert "dropped 1 prediction for a study this track excludes" in text
    assert json.loads((out / "results.json").read_text())["n_studies"] == 1
    code, text, out2 = score(cli, tmp_path / "fi", preds, refs, "--track", "findings_impression", "-q")
    assert code == 0, text
    assert json.loads((out2 / "results.json").read_text())["n_studies"] == 2


def test_reference_text_by_track(tmp_path):
    """ReXrank JSON references: section_findings for findings, the official "Findings: .. Impression: .." text
    (None for a missing section) for findings_impression."""
    from rexrank.evaluation.predictions import Problems
    from rexrank.evaluation.references import from_file

    path = write(tmp_path, "r.json", json.dumps({
        "a": {"report": "ignored", "section_findings": "F.", "section_impression": "I."},
        "b": {"section_findings": "G.", "section_impression": None}}))
    problems = Problems()
    assert from_file(path, "findings", problems).texts == {"a": "F.", "b": "G."}
    assert from_file(path, "findings_impression", problems).texts == {
        "a": "Findings: F. Impression: I.", "b": "Findings: G. Impression: None"}
    assert not problems


def test_a_prediction_file_with_both_fields_is_read_by_the_model_prediction_in_every_format(tmp_path, refs):
    """A ReXrank study carries its ground truth in "report" and the model's text in "model_prediction": a CSV with
    both columns is read like the JSON and JSONL forms, by ``PREDICTION_FIELDS``' order (it used to score the
    ground truth against itself)."""
    import csv

    from rexrank.evaluation.inputs import load_inputs

    rows = [{"study_id": i, "report": text, "model_prediction": f"model: {text}"} for i, text in REFS.items()]
    with open(tmp_path / "p.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, ["study_id", "report", "model_prediction"])
        writer.writeheader()
        writer.writerows(rows)
    write(tmp_path, "p.jsonl", "".join(json.dumps(row) + "\n" for row in rows))
    write(tmp_path, "p.json", json.dumps({row["study_id"]: row for row in rows}))
    for name in ("p.csv", "p.jsonl", "p.json"):
        inputs = load_inputs(tmp_path / name, references=refs, track="findings")
        assert inputs.hyps == [f"model: {REFS[i]}" for i in inputs.study_ids], name


def test_unknown_track_and_missing_ground_truth(cli, tmp_path, refs):
    preds = write(tmp_path, "p.json", json.dumps({k: "x" for k in REFS}))
    code, text, _ = score(cli, tmp_path, preds, refs, "--track", "impression")
    assert (code, text) == (2, "error: Unknown track 'impression'. Available: findings, findings_impression\n")
    code, text = cli("score", "-p", str(preds), "-m", "bleu2")
    assert (code, text) == (2, "error: give the ground truth: --references FILE, or --dataset NAME [--split SPLIT]\n")


def test_bad_model_path_option(cli, tmp_path, refs):
    preds = write(tmp_path, "p.json", json.dumps({k: "x" for k in REFS}))
    code, text, _ = score(cli, tmp_path, preds, refs, "--model-path", "semb")
    assert (code, text) == (2, "error: --model-path takes METRIC=PATH (e.g. semb=/models/chexbert.pth), got 'semb'\n")


def test_metric_selection_keywords():
    """Default: the columns every track of the default board edition shows (CRIMSON, on Findings only, and
    FineRadScore, on Findings + Impression only, are opt-in); "leaderboard": every column of that edition."""
    from rexrank.evaluation.harness import expand_metrics
    from rexrank.metrics import REGISTRY

    classic = ["bleu2", "bertscore", "semb", "radgraph", "radcliq_v1", "ratescore", "green"]
    assert expand_metrics(None) == classic
    assert expand_metrics("leaderboard") == [*classic, "crimson", "fineradscore"]
    assert expand_metrics("all") == REGISTRY.names()
    assert expand_metrics("bleu, BLEU-2 ,radcliq") == ["bleu2", "radcliq_v1"]


# -- per-report length limit and hostile text ---------------------------------------------------------------------
TOO_LONG = ("over the per-report length limit (punctuation marks count as words; raise the limit with "
            "--max-report-words / --max-report-chars)")


def test_report_over_the_length_limit_names_study_length_limit_and_option(cli, tmp_path):
    """One huge report can take a model-backed metric down (RadGraph's memory grows with its length): reports over
    the limit are refused before anything is scored, on both sides, and the options that raise the limit work."""
    refs = write(tmp_path, "r.json", json.dumps({**REFS, "s1": "Lungs: clear; heart: normal."}))
    preds = write(tmp_path, "p.json", json.dumps({"s1": "Clear.", "s2": "a b c d e f", "s3": "x" * 45}))
    code, text, out = score(cli, tmp_path, preds, refs, "--max-report-words", "5", "--max-report-chars", "40")
    # s1's reference has 4 whitespace-separated words but 8 words as counted: each punctuation mark is one.
    assert_failed(code, text, out, head(3) +
                  f"- 2 predictions are {TOO_LONG}: 's2' (6 words, limit 5); 's3' (45 characters, limit 40)\n"
                  f"- 1 reference is {TOO_LONG}: 's1' (8 words, limit 5)\n")
    code, text, out = score(cli, tmp_path, preds, refs, "-q")  # the defaults are far above these reports
    assert code == 0, text


def test_default_report_limits_and_how_words_are_counted():
    from rexrank.evaluation.predictions import (
        DEFAULT_MAX_REPORT_CHARS,
        DEFAULT_MAX_REPORT_WORDS,
        Problems,
        check_lengths,
        count_words,
    )

    assert (DEFAULT_MAX_REPORT_WORDS, DEFAULT_MAX_REPORT_CHARS) == (5_000, 50_000)
    assert count_words("Left-sided effusion, 3.5 cm.") == 10  # Left - sided effusion , 3 . 5 cm .
    problems = Problems()
    check_lengths({"ok": "word " * 5_000, "words": "word " * 5_001, "commas": "," * 5_001, "chars": "x" * 50_001,
                   "both": "a " * 30_000}, "predictions", problems)
    assert problems.items == {("too_long", "predictions"): [
        "'words' (5,001 words, limit 5,000)", "'commas' (5,001 words, limit 5,000)",
        "'chars' (50,001 characters, limit 50,000)", "'both' (60,000 characters, limit 50,000)"]}


def test_length_limit_on_a_private_reference_names_no_study_and_no_length():
    from rexrank.evaluation.predictions import Problems, check_lengths

    problems = Problems()
    check_lengths({"secret-id": "word " * 10}, "references", problems, max_words=5, show_ids=False)
    assert problems.render().endswith(
        f"- 1 reference is {TOO_LONG}: a study of the private test set (id and length withheld)")
    assert "secret-id" not in problems.render() and "10" not in problems.render()


def test_length_limit_in_the_python_api(tmp_path, refs):
    from rexrank.errors import ConfigError
    from rexrank.evaluation.inputs import load_inputs
    from rexrank.evaluation.predictions import ValidationError

    preds = write(tmp_path, "p.json", json.dumps({"s1": "a b c", "s2": "a", "s3": "a"}))
    with pytest.raises(ValidationError) as failed:
        load_inputs(preds, track="findings", references=refs, max_report_words=2)
    assert failed.value.problems.kinds() == {"too_long"}
    assert len(load_inputs(preds, track="findings", references=refs, max_report_words=4)) == 3
    with pytest.raises(ConfigError, match="max_report_chars must be a whole number of at least 1, got 0"):
        load_inputs(preds, track="findings", references=refs, max_report_chars=0)


def test_report_limit_options_must_be_positive(cli, tmp_path, refs):
    preds = write(tmp_path, "p.json", json.dumps({k: "x" for k in REFS}))
    code, text, _ = score(cli, tmp_path, preds, refs, "--max-report-words", "0")
    assert (code, text) == (2, "error: --max-report-words and --max-report-chars must be at least 1\n")


def test_lone_surrogate_is_refused_naming_the_study(cli, tmp_path):
    """json.loads turns "\\ud800" into a str no encoder can tokenize (every model-backed metric crashed on it);
    validation refuses it with the study and the position, on both sides. A surrogate pair is one character: fine."""
    preds = write(tmp_path, "p.json", '{"s1": "Lungs \\ud800 clear.", "s2": "Smile \\ud83d\\ude00.", "s3": "c"}')
    refs = write(tmp_path, "r.json", '{"s1": "a", "s2": "b", "s3": "No pneumothorax \\udc00"}')
    code, text, out = score(cli, tmp_path, preds, refs)
    lone = ("contains a lone UTF-16 surrogate, an escape that encodes no character (remove it or write the whole "
            "character)")
    assert "Traceback" not in text
    assert_failed(code, text, out, head(2) +
                  f"- 1 prediction {lone}: 's1' (\\ud800 at character 6)\n"
                  f"- 1 reference {lone}: 's3' (\\udc00 at character 16)\n")


def test_lone_surrogate_in_a_study_id_is_refused(cli, tmp_path, refs):
    """No per-study table or results file could hold such an id (UTF-8 cannot encode it)."""
    preds = write(tmp_path, "p.json", '{"s1": "a", "s2": "b", "s3": "c", "x\\udbff": "d"}')
    code, text, out = score(cli, tmp_path, preds, refs)
    assert_failed(code, text, out, head(2) +
                  "- 1 prediction contains a lone UTF-16 surrogate, an escape that encodes no character (remove it "
                  "or write the whole character): 'x\\udbff' (\\udbff in the study id)\n"
                  "- 1 prediction has no reference study (check --dataset/--split/--track, or use --allow-missing): "
                  "'x\\udbff'\n")


def test_report_of_only_invisible_characters_is_empty(cli, tmp_path, refs):
    """Zero-width space/joiners, word joiner, BOM (and other default-ignorable characters) show nothing: a report
    made only of them and whitespace is empty, as a blank one is. Visible text around them is kept as is."""
    preds = write(tmp_path, "p.json", json.dumps({"s1": "\u200b\u200c\u200d", "s2": " \u2060\ufeff \n\u00ad",
                                                  "s3": "\u200bClear.\u200b"}))
    assert_failed(*score(cli, tmp_path, preds, refs), head(2) + "- 2 predictions are empty: 's1'; 's2'\n")


# -- the fast paths of reading and checking (issue 25, point 3): same records, same problems, less work ------------
JSONL_LINES = [
    '{"study_id": "a", "report": "Lungs clear."}',
    '  {"study_id": "b", "report": "Padded line."}  ',  # whitespace around: the slow path, same result
    '{"study_id": "c", "report": "Two values."} {"x": 1}',  # extra data
    '{"study_id": "d", "report": "No close"',
    '{"study_id": 7.0, "report": "Integer-valued float id.", "site": "north"}',
    '{"study_id": "e", "report": NaN}',
    '{"study_id": "f", "report": "\\ud800 lone escape"}',
    '{"study_id": "g", "report": "line\u2028separator inside"}',  # splitlines splits it: both halves are bad
    '{"study_id": "h", "section_findings": "Findings here.", "section_impression": "Impr."}',
    '{"study_id": "i", "text": "no report field"}',
    '{"report": "no id"}',
    '[1, 2]',
    '{"study_id": "j", "report": {"nested": [1, {"deep": true}]}}',
    '{"study_id": "k", "report": "' + "[" * 5 + '"}',
    '{' * 3000 + '}' * 3000,  # nested too deeply for the parser
    '{"study_id": "l", "report": 1' + "0" * 5000 + '}',  # an integer over Python's digit limit
    "",
    '{"study_id": "a", "report": "Duplicate id."}',
]


@pytest.mark.parametrize("role,picker", [("predictions", "prediction_picker"), ("references", "reference_picker")])
def test_jsonl_fast_path_reads_as_json_loads_line_by_line(tmp_path, monkeypatch, role, picker):
    """A line that is one object is read with json's scanner directly; every line gives the records and problems
    that parse_json on that line gives (the reader with the scanner switched off is the oracle)."""
    from rexrank.evaluation import predictions, references

    pick = getattr(references, picker)(*(("findings",) if picker == "reference_picker" else ()))
    path = write(tmp_path, "mixed.jsonl", "\n".join(JSONL_LINES) + "\n")

    def read():
        problems = predictions.Problems(max_listed=100)
        file = predictions.read_report_file(path, role, problems, pick=pick, text_fields=("report",))
        good = predictions.check_values(file, role, problems)
        return file.records, file.ok, problems.render(), good

    fast = read()
    assert [r.study_id for r in fast[0]][:2] == ["a", "b"] and fast[0][2].extra == {"site": "north"}

    def refuse(line, index):
        raise StopIteration(index)

    monkeypatch.setattr(predictions, "_SCAN_JSON", refuse)
    assert read() == fast


def test_clean_jsonl_lines_are_not_parsed_twice(tmp_path, monkeypatch):
    """The error-reporting parser (parse_json) only sees lines the scanner could not read as one object: none in a
    clean file (before: every line went through it, ~30% of reading 59,000 lines)."""
    from rexrank.evaluation import predictions, references

    calls = []
    real = predictions.parse_json
    monkeypatch.setattr(predictions, "parse_json", lambda text, **kw: calls.append(text) or real(text, **kw))
    path = write(tmp_path, "p.jsonl", "".join(json.dumps({"study_id": f"s{i}", "report": f"Report {i}."}) + "\n"
                                              for i in range(50)) + "not json\n")
    problems = predictions.Problems()
    file = predictions.read_report_file(path, "predictions", problems, pick=references.prediction_picker(),
                                        text_fields=("report",))
    assert len(file.records) == 50 and not file.ok and calls == ["not json"]


class _CountingPattern:
    def __init__(self, pattern):
        self.pattern, self.texts = pattern, []

    def search(self, text):
        self.texts.append(text)
        return self.pattern.search(text)


def test_surrogates_are_searched_once_unless_one_is_there(monkeypatch):
    """check_values looks for lone surrogates in every id and text with one scan; only when one is found is each id
    and text searched on its own, to name the study and place (same problems either way)."""
    from rexrank.evaluation import predictions

    counting = _CountingPattern(predictions._ANY_SURROGATE)
    monkeypatch.setattr(predictions, "_ANY_SURROGATE", counting)
    clean = predictions.ReportFile(None, [predictions.Record(f"s{i}", f"text {i}", f"line {i}") for i in range(20)],
                                   True)
    problems = predictions.Problems()
    assert len(predictions.check_values(clean, "predictions", problems)) == 20 and not problems
    assert len(counting.texts) == 1
    dirty = predictions.ReportFile(None, clean.records + [predictions.Record("s\udc81", "x", "line 20"),
                                                          predictions.Record("s21", "a\ud801b", "line 21")], True)
    counting.texts.clear()
    problems = predictions.Problems()
    assert len(predictions.check_values(dirty, "predictions", problems)) == 20
    assert len(counting.texts) > 1 and problems.kinds() == {"undecodable", "surrogate"}
    assert "in the study id" in problems.render() and "at character 1" in problems.render()

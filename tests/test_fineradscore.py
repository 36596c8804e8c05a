"""FineRadScore: published prompt and sentence split, our aggregation, and the OpenAI-compatible HTTP judge against a
loopback server (good answers, malformed JSON, 429 with Retry-After, 5xx, timeouts, exhausted retries, bad keys).

Waits between retries go through an injected sleep that records the requested delay, so no test sleeps for them.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from rexrank.errors import ConfigError
from rexrank.llm.openai_http import EndpointError, parse_retry_after
from rexrank.metrics import get
from rexrank.metrics.fineradscore import (FineRadScore, build_messages, check_answer, number_sentences,
                                          split_sentences)

KEY = "sk-test-0123456789abcdef"
REF = "Small left pleural effusion. No pneumothorax."

GOOD = {"0": {"corrections": "[delete]", "clinical severity": "Urgent error", "comments": "c",
              "error category": ["False prediction of finding"]},
        "None": {"corrections": "Small left pleural effusion.", "clinical severity": "Actionable nonurgent error",
                 "comments": "c", "error category": ["Omission of finding"]},
        "1": {"corrections": "No pneumothorax.", "clinical severity": "Not actionable", "comments": "c",
              "error category": ["Incorrect severity of finding"]}}
GOOD_SUM = 3 + 2 + 1  # default weights: Urgent 3, Actionable nonurgent 2, Not actionable 1
CLEAN = {}  # no errors: score 0


class Judge(BaseHTTPRequestHandler):
    """Answers /v1/chat/completions; the behaviour is chosen by a CASE=... marker in the candidate text."""

    def log_message(self, *args):  # keep test output quiet
        pass

    def do_POST(self):
        server = self.server
        with server.lock:
            server.in_flight += 1
            server.max_in_flight = max(server.max_in_flight, server.in_flight)
        try:
            self._answer()
        finally:
            with server.lock:
                server.in_flight -= 1

    def _send(self, status, body, headers=()):
        data = json.dumps(body).encode() if not isinstance(body, bytes) else body
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _reply(self, content):
        self._send(200, {"id": "x", "object": "chat.completion",
                         "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                                      "finish_reason": "stop"}]})

    def _answer(self):
        server = self.server
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        server.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
        if self.path.split("?")[0] != "/v1/chat/completions":
            return self._send(404, {"error": "no such route"})
        if self.headers.get("Authorization") != f"Bearer {KEY}":
            echoed = self.headers.get("Authorization")
            return self._send(401, {"error": {"message": f"Incorrect API key provided: {echoed}"}})
        last = body["messages"][-1]["content"]
        case = last.split("CASE=")[1].split(".")[0] if "CASE=" in last else "good"
        with server.lock:
            n = server.counts.get(case, 0)
            server.counts[case] = n + 1
        if case == "good":
            return self._reply(json.dumps(GOOD))
        if case == "clean":
            return self._reply("```json\n{}\n```")
        if case == "fenced":
            return self._reply("Here you go:\n```json\n" + json.dumps(GOOD) + "\n```")
        if case == "malformedthengood":
            return self._reply("{not json" if n == 0 else json.dumps(GOOD))
        if case == "unknownseveritythengood":
            bad = {"0": dict(GOOD["0"], **{"clinical severity": "[delete]"})}
            return self._reply(json.dumps(bad) if n == 0 else json.dumps(GOOD))
        if case == "ratelimited":
            if n == 0:
                return self._send(429, {"error": "slow down"}, [("Retry-After", "7")])
            return self._reply(json.dumps(GOOD))
        if case == "flaky":
            if n < 2:
                return self._send(503, {"error": "overloaded"})
            return self._reply(json.dumps(GOOD))
        if case == "slow":
            if n == 0:
                time.sleep(1.0)
            return self._reply(json.dumps(GOOD))
        if case == "down":
            return self._send(500, {"error": "internal"})
        if case == "junk":
            return self._reply(f"I cannot answer that ({n}).")  # a different invalid reply each time
        if case == "samejunk":
            return self._reply("I cannot answer that.")
        if case == "toolong":
            return self._send(400, {"error": "context length exceeded"})
        if case == "busy":
            time.sleep(0.15)
            return self._reply(json.dumps(CLEAN))
        return self._reply(json.dumps(GOOD))


@pytest.fixture
def server():
    """A loopback OpenAI-compatible server on a random port, started and stopped by the test."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Judge)
    httpd.daemon_threads = True
    httpd.lock = threading.Lock()
    httpd.requests, httpd.counts, httpd.in_flight, httpd.max_in_flight = [], {}, 0, 0
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    httpd.base_url = f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    yield httpd
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def key(monkeypatch):
    monkeypatch.setenv("FINERAD_TEST_KEY", KEY)
    return "FINERAD_TEST_KEY"


class RecordedSleep:
    def __init__(self):
        self.delays = []

    async def __call__(self, seconds):
        self.delays.append(seconds)


def metric(server, key, **options) -> tuple[FineRadScore, RecordedSleep]:
    sleep = RecordedSleep()
    options = {"timeout": 0.4, "backoff_base": 0.5, "sleep": sleep, **options}
    return FineRadScore(model="judge-1", base_url=server.base_url, api_key_env=key, **options), sleep


def test_good_answers_and_our_aggregation(server, key):
    m, _ = metric(server, key)
    details = m.score_details(["Cardiomegaly. Lungs clear.", "CASE=clean. Fine."], [REF, REF])
    np.testing.assert_allclose(details["fineradscore"], [GOOD_SUM, 0.0])
    assert details["fineradscore_n_errors"].tolist() == [3, 0]
    assert details["fineradscore_urgent"].tolist() == [1, 0]
    assert details["fineradscore_error"].isna().all() and details["fineradscore_attempts"].tolist() == [1, 1]
    sent = next(r for r in server.requests if "Cardiomegaly" in r["body"]["messages"][-1]["content"])
    assert sent["body"]["model"] == "judge-1" and sent["body"]["temperature"] == 0.0
    assert sent["body"]["messages"] == build_messages("Cardiomegaly. Lungs clear.", REF)
    assert sent["path"] == "/v1/chat/completions" and sent["auth"] == f"Bearer {KEY}"
    m_max, _ = metric(server, key, aggregation="max")
    assert m_max.score(["Cardiomegaly."], [REF])[0] == 3.0
    m_w, _ = metric(server, key, severity_weights={"Urgent": 10, "not actionable error": 0})
    assert m_w.score(["Cardiomegaly."], [REF])[0] == 10 + 2 + 0
    assert len({m.fingerprint, m_max.fingerprint, m_w.fingerprint}) == 3


def test_leaderboard_column_is_reciprocal_of_mean(server, key):
    import rexrank

    df = rexrank.score(["Cardiomegaly.", "CASE=clean. x"], [REF, REF], ["fineradscore"],
                       metric_configs={"fineradscore": {"model": "judge-1", "base_url": server.base_url,
                                                        "api_key_env": key}})
    summary = df.attrs["summary"]["fineradscore"]
    assert summary["mean"] == pytest.approx(GOOD_SUM / 2)
    assert summary["leaderboard_value"] == pytest.approx(2 / GOOD_SUM)
    assert summary["leaderboard_column"] == "1/FineRadScore"


def test_malformed_json_is_regenerated(server, key):
    m, _ = metric(server, key)
    details = m.score_details(["CASE=malformedthengood. x", "CASE=unknownseveritythengood. y", "CASE=fenced. z"],
                              [REF] * 3)
    np.testing.assert_allclose(details["fineradscore"], [GOOD_SUM] * 3)
    assert details["fineradscore_attempts"].tolist() == [2, 2, 1]


def test_429_honours_retry_after_and_5xx_backs_off(server, key):
    m, sleep = metric(server, key)
    scores = m.score(["CASE=ratelimited. x"], [REF])
    assert scores[0] == GOOD_SUM and sleep.delays == [7.0]
    m2, sleep2 = metric(server, key)
    assert m2.score(["CASE=flaky. x"], [REF])[0] == GOOD_SUM
    assert len(sleep2.delays) == 2 and 0.5 <= sleep2.delays[0] <= 0.55 and 1.0 <= sleep2.delays[1] <= 1.1


def test_timeout_is_retried(server, key):
    m, sleep = metric(server, key, timeout=0.3)
    assert m.score(["CASE=slow. x"], [REF])[0] == GOOD_SUM
    assert server.counts["slow"] == 2 and len(sleep.delays) == 1


def test_exhausted_retries_are_counted_nans_never_a_crash(server, key):
    m, sleep = metric(server, key, max_retries=5)
    details = m.score_details(["CASE=down. x", "CASE=junk. y", "CASE=samejunk. z", "CASE=toolong. w", "Good. v"],
                              [REF] * 5)
    scores = details["fineradscore"].to_numpy()
    assert np.isnan(scores[:4]).all() and scores[4] == GOOD_SUM
    assert m.n_failures == 4
    errors = details["fineradscore_error"].tolist()
    assert "HTTP 500" in errors[0] and "gave up after 7 attempts" in errors[0]  # 1 + 6 HTTP retries
    assert server.counts["down"] == 7
    assert "no JSON object" in errors[1] and details["fineradscore_attempts"][1] == 6  # 1 + 5 judge retries
    assert server.counts["junk"] == 6
    assert details["fineradscore_attempts"][2] == 2  # the same invalid reply twice: no point asking again
    assert "HTTP 400" in errors[3] and server.counts["toolong"] == 1  # not retryable


def test_valid_answers_are_cached_failures_are_not(server, key):
    m, _ = metric(server, key)
    m.score(["Good. a", "CASE=down. b"], [REF, REF])
    before = len(server.requests)
    m.score(["Good. a", "CASE=down. b"], [REF, REF])
    new = server.requests[before:]
    assert new and all("CASE=down" in r["body"]["messages"][-1]["content"] for r in new)


def test_concurrency_limit(server, key):
    m, _ = metric(server, key, max_concurrency=2, timeout=5)
    m.score([f"CASE=busy. {i}" for i in range(6)], [REF] * 6)
    assert server.max_in_flight <= 2 and server.counts["busy"] == 6


def test_missing_api_key_names_the_variable(monkeypatch, server):
    monkeypatch.delenv("MY_JUDGE_KEY", raising=False)
    with pytest.raises(ConfigError, match="MY_JUDGE_KEY is not set"):
        FineRadScore(model="judge-1", base_url=server.base_url, api_key_env="MY_JUDGE_KEY")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        get("fineradscore", model="gpt-4")


def test_missing_local_judge_is_a_clear_error(tmp_path, monkeypatch):
    from rexrank.errors import ModelNotAvailableError

    with pytest.raises(ModelNotAvailableError, match="does not exist"):
        FineRadScore(model=str(tmp_path / "nope"), backend="transformers")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    with pytest.raises(ModelNotAvailableError, match="some-org/judge"):
        FineRadScore(model="some-org/judge", backend="transformers")


def test_rejected_key_stops_with_a_clear_error_without_the_key(server, monkeypatch):
    monkeypatch.setenv("WRONG_KEY", "sk-wrong-secret-value")
    m = FineRadScore(model="judge-1", base_url=server.base_url, api_key_env="WRONG_KEY")
    with pytest.raises(EndpointError) as err:
        m.score(["x."], [REF])
    assert "WRONG_KEY" in str(err.value) and "HTTP 401" in str(err.value)
    assert "sk-wrong-secret-value" not in str(err.value)  # the server echoed it; we mask it


def test_key_never_in_config_repr_or_fingerprint(server, key):
    m, _ = metric(server, key)
    blob = json.dumps(m.config(), default=str) + repr(m) + repr(m.client) + m.fingerprint
    assert KEY not in blob
    assert server.base_url in json.dumps(m.config()) and "judge-1" in json.dumps(m.config())
    assert m.config()["published_numbers_reproducible"] is False


def test_retry_after_formats():
    assert parse_retry_after("3") == 3.0 and parse_retry_after("0.5") == 0.5
    assert parse_retry_after(None) is None and parse_retry_after("soon") is None
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:10 GMT", now=1445412480.0) == pytest.approx(10.0)


def test_sentence_split_as_published():
    """run_rexval_experiments.py: split on '. ' except around digits; quotes dropped; one period each."""
    assert split_sentences('Heart size 2.5 cm. "Lungs" clear. No effusion.') == [
        "Heart size 2.5 cm.", "Lungs clear.", "No effusion."]
    assert split_sentences("Tube 3. Line in place.") == ["Tube 3. Line in place."]  # no split after a digit
    assert number_sentences("A. B.") == "[0] A. [1] B."
    assert number_sentences("") == ""


def test_prompt_is_pinned_to_the_published_text():
    """Few-shot layout of gpt4_generations.py with PROMPT_LONG as system message (checked once against
    rajpurkarlab/FineRadScore @3f5e1dc few_shot_prompt.py / gpt4_generations.py; pinned here)."""
    fewshot = build_messages("Heart normal. Lungs clear.", "GT")
    assert [m["role"] for m in fewshot] == ["system"] + ["user", "assistant"] * 5 + ["user"]
    assert fewshot[-1]["content"] == "Generated Text: [0] Heart normal. [1] Lungs clear. \n \n Ground Truth Text: GT"
    assert "Emergent error" in fewshot[0]["content"] and "6. Omission of comparison" in fewshot[0]["content"]
    digest = hashlib.sha256(json.dumps(fewshot).encode()).hexdigest()
    assert digest == PINNED_FEWSHOT
    zeroshot = build_messages("Heart normal.", "GT", "zeroshot")
    assert len(zeroshot) == 1 and '"None": {' in zeroshot[0]["content"]


PINNED_FEWSHOT = "667419006045e6bcd7e8dd7e4443b1f6a877e4705123d8be932d8b49ddc1afa7"


def test_answer_validation_rules():
    assert check_answer(json.dumps(GOOD))[0] == GOOD
    assert check_answer("{}")[0] == {}
    assert "not a sentence id" in check_answer(json.dumps({"first": GOOD["0"]}))[1]
    assert "lacks" in check_answer(json.dumps({"0": {"corrections": "x"}}))[1]
    assert "unknown severity" in check_answer(json.dumps({"0": dict(GOOD["0"], **{"clinical severity": "bad"})}))[1]
    no_error = {"0": dict(GOOD["0"], **{"clinical severity": "None"})}
    assert check_answer(json.dumps(no_error))[0] == no_error  # a judge listing an error-free line


def test_local_transformers_judge_runs_and_counts_failures(standins):
    """The local backend on the GREEN stand-in (a role/content chat template supplied): gibberish replies are
    regenerated, a deterministic repeat stops early, and the pair ends as a counted NaN."""
    path = standins("green")["green"]
    template = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}assistant:"
    m = FineRadScore(model=path, backend="transformers", chat_template=template, max_tokens=8, device="cpu",
                     prompt="zeroshot")
    details = m.score_details(["Heart normal."], ["Heart normal."])
    assert math.isnan(details["fineradscore"][0]) and m.n_failures == 1
    assert details["fineradscore_attempts"][0] == 2
    assert m.config()["judge"]["decoding"] == "greedy"

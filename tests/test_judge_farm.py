"""A judge farm: one OpenAIChatClient spreads its requests over several OpenAI-compatible endpoints.

Fake servers on 127.0.0.1 (rexrank.testing.fake_openai, threads, stopped at the end of each test) answer from the
messages alone, as replicas of one model at temperature 0 would, so a farm must return exactly what one endpoint
returns, in input order, also when an endpoint dies mid-run. No test waits on time: retries go through an injected
sleep that only records the delay.
"""

from __future__ import annotations

import contextlib
import json

import pytest

from rexrank.errors import ConfigError
from rexrank.llm.openai_http import SET_ASIDE_AFTER, OpenAIChatClient
from rexrank.testing.fake_openai import FakeJudgeServer, answer_for

CONVERSATIONS = [[{"role": "user", "content": f"judge pair {i}"}] for i in range(40)]
EXPECTED = [answer_for(c) for c in CONVERSATIONS]


async def _no_wait(seconds: float) -> None:
    return None


def _client(urls, **options) -> OpenAIChatClient:
    options = {"api_key_env": None, "timeout": 30, "sleep": _no_wait, **options}
    return OpenAIChatClient(urls, "judge-1", **options)


@contextlib.contextmanager
def _servers(*specs: dict):
    started = []
    try:
        for spec in specs:
            started.append(FakeJudgeServer(**spec))
        yield started
    finally:
        for server in started:
            server.stop()


def test_a_farm_answers_what_one_endpoint_answers_in_input_order():
    with _servers({}, {"latency": 0.01}, {"latency": 0.01}, {"latency": 0.01}) as (alone, *farm):
        single = _client(alone.base_url, max_concurrency=3).complete_results(CONVERSATIONS)
        client = _client([s.base_url for s in farm], max_concurrency=3)
        spread = client.complete_results(CONVERSATIONS)
    assert [r.text for r in single] == EXPECTED
    assert [r.text for r in spread] == EXPECTED and all(r.error is None and r.attempts == 1 for r in spread)
    # Every endpoint took a share, none ever had more than its own limit in flight.
    assert sum(s.served for s in farm) == len(CONVERSATIONS) and all(s.served > 0 for s in farm)
    assert all(s.max_in_flight <= 3 for s in farm)
    assert client.last_answered == {s.base_url: s.served for s in farm}


def test_a_call_smaller_than_the_farm_is_dealt_round_the_endpoints():
    """Fewer requests than the farm's slots: each endpoint gets its share rather than the first taking them all."""
    with _servers({}, {}, {}) as farm:
        results = _client([s.base_url for s in farm], max_concurrency=8).complete_results(CONVERSATIONS[:6])
    assert [r.text for r in results] == EXPECTED[:6]
    assert [s.served for s in farm] == [2, 2, 2]


def test_the_cli_option_names_a_farm(tmp_path, cli):
    """`--option 'crimson.base_url=[...]'` (a JSON list) reaches the judge: both servers answer, results.json
    records the list; a comma-joined string is one clear error line, before any input is read."""
    preds = {f"s{i}": f"Small left effusion, {i} cm." for i in range(6)}
    (tmp_path / "p.json").write_text(json.dumps(preds))
    (tmp_path / "r.json").write_text(json.dumps({k: "No effusion." for k in preds}))
    common = ["score", "-p", str(tmp_path / "p.json"), "-r", str(tmp_path / "r.json"), "-m", "crimson", "--option",
              "crimson.backend=openai", "--option", "crimson.api_key_env=null", "--no-cache", "--resamples", "10",
              "-q"]
    with _servers({}, {}) as farm:
        urls = [s.base_url for s in farm]
        code, output = cli(*common, "--option", f"crimson.base_url={json.dumps(urls)}", "-o", str(tmp_path / "out"))
        assert code == 0, output
        assert all(s.served > 0 for s in farm)  # the fake's answers are no CRIMSON JSON: NaN, retried, counted
    assert json.loads((tmp_path / "out" / "results.json").read_text())["configs"]["crimson"]["judge"]["base_url"] \
        == urls
    code, output = cli(*common, "--option", f"crimson.base_url={','.join(urls)}", "-o", str(tmp_path / "bad"))
    assert code == 2 and "not one URL; give several endpoints as a list" in output
    assert "Traceback" not in output and not (tmp_path / "bad").exists()


def test_an_endpoint_that_dies_mid_run_leaves_the_others_to_finish(caplog):
    with _servers({"die_after": 5}, {"latency": 0.01}, {"latency": 0.01}) as (dying, *healthy):
        client = _client([dying.base_url] + [s.base_url for s in healthy], max_concurrency=2, max_retries=2)
        results = client.complete_results(CONVERSATIONS)
        second = client.complete_results(CONVERSATIONS[:6])  # the next call tries the dead one again, then finishes
    assert [r.text for r in results] == EXPECTED and all(r.error is None for r in results)
    assert [r.text for r in second] == EXPECTED[:6]
    assert dying.served == 5 and sum(s.served for s in healthy) == len(CONVERSATIONS) - 5 + 6
    # Set aside after SET_ASIDE_AFTER failures in a row (give or take the requests its workers had in flight).
    assert SET_ASIDE_AFTER <= dying.dropped <= 2 * (SET_ASIDE_AFTER + 2)
    assert f"{dying.base_url} failed {SET_ASIDE_AFTER} requests in a row" in caplog.text


def test_the_last_endpoint_standing_is_never_set_aside_and_nothing_hangs():
    with _servers({"die_after": 0}, {"die_after": 0}) as dead:
        results = _client([s.base_url for s in dead], max_concurrency=2, max_retries=2).complete_results(
            CONVERSATIONS[:5])
    assert all(r.text is None and "gave up after 3 attempts" in r.error for r in results)
    assert sum(s.dropped for s in dead) == 5 * 3  # every attempt of every request reached a server


def test_a_farm_is_recorded_in_the_metric_config_and_bad_lists_are_one_clear_line(monkeypatch):
    from rexrank.metrics.fineradscore import FineRadScore

    urls = ["http://127.0.0.1:1/v1", "http://127.0.0.1:2/v1/"]
    metric = FineRadScore(model="judge-1", base_url=urls, api_key_env=None)
    assert metric.config()["judge"]["base_url"] == ["http://127.0.0.1:1/v1", "http://127.0.0.1:2/v1"]
    one = FineRadScore(model="judge-1", base_url=urls[0], api_key_env=None)
    assert one.config()["judge"]["base_url"] == urls[0]  # one endpoint is named as before: old caches still hit
    with pytest.raises(ConfigError, match="lists http://127.0.0.1:1/v1 more than once"):
        OpenAIChatClient([urls[0], urls[0] + "/"], "m", api_key_env=None)
    with pytest.raises(ConfigError, match="not one URL; give several endpoints as a list"):
        OpenAIChatClient(",".join(urls), "m", api_key_env=None, metric="crimson")
    with pytest.raises(ConfigError, match="base_url is required"):
        OpenAIChatClient([], "m", api_key_env=None)

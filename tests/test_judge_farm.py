"""A judge farm: one OpenAIChatClient spreads its requests over several OpenAI-compatible endpoints.

Fake servers on 127.0.0.1 (rexrank.testing.fake_openai, threads, stopped at the end of each test) answer from the
messages alone, as replicas of one model at temperature 0 would, so a farm must return exactly what one endpoint
returns, in input order, also when an endpoint dies mid-run. Retries go through an injected sleep that only records
the delay; the farm's timing (issue 49: a slow endpoint's tail is hedged) is checked with latencies scaled down to
tenths of a second. Issue 49 also: an endpoint that answers HTML or an oversized answer fails, is retried elsewhere
and set aside; the client never holds more of an answer than its cap.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
import tracemalloc

import pytest

from rexrank.errors import ConfigError
from rexrank.llm.openai_http import SET_ASIDE_AFTER, SET_ASIDE_S, OpenAIChatClient
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
    # Every endpoint took a share, none ever had more than its own limit in flight. Replicas of one speed send a
    # request twice only when it straggles far past their usual time (a stall of this busy machine): counted.
    hedged = client.last_hedged
    assert len(CONVERSATIONS) <= sum(s.served for s in farm) <= len(CONVERSATIONS) + hedged
    assert all(s.served > 0 for s in farm) and all(s.max_in_flight <= 3 + hedged for s in farm)
    assert sum(client.last_answered.values()) == len(CONVERSATIONS)
    assert all(client.last_answered[s.base_url] <= s.served for s in farm)


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
        second = client.complete_results(CONVERSATIONS[:6])  # the dead one is still set aside: the others answer
    assert [r.text for r in results] == EXPECTED and all(r.error is None for r in results)
    assert [r.text for r in second] == EXPECTED[:6]
    assert dying.served == 5 and sum(s.served for s in healthy) >= len(CONVERSATIONS) - 5 + 6
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


# -- issue 49 point 5: a farm trusts nothing it reads ----------------------------------------------------------------
def test_an_html_answer_is_the_endpoints_failure_retried_elsewhere_and_set_aside(caplog):
    """Before: `200 <html>` ended as a failed request ("response is not a chat completion"), never retried on the
    healthy endpoint (12 of 24 failed) and the endpoint kept its share. Now every request is answered by the
    healthy one, the HTML endpoint is set aside after SET_ASIDE_AFTER failures in a row, for SET_ASIDE_S, also in
    the next call (the client remembers)."""
    with _servers({"mode": "html"}, {"latency": 0.005}) as (html, healthy):
        client = _client([html.base_url, healthy.base_url], max_concurrency=2, max_retries=2)
        results = client.complete_results(CONVERSATIONS[:24])
        served = html.served
        second = client.complete_results(CONVERSATIONS[24:])
    assert [r.text for r in results] == EXPECTED[:24] and all(r.error is None for r in results)
    assert [r.text for r in second] == EXPECTED[24:]
    assert SET_ASIDE_AFTER <= served <= SET_ASIDE_AFTER + 2  # its two slots' requests when the third failed
    assert html.served == served  # still set aside in the next call
    assert client.last_answered == {html.base_url: 0, healthy.base_url: 16}
    assert (f"{html.base_url} failed {SET_ASIDE_AFTER} requests in a row (the answer is not a chat completion "
            f"('<html><body><h1>502 Bad Gateway") in caplog.text and f"set aside for {SET_ASIDE_S:g} s" in caplog.text


def test_one_endpoint_answering_html_fails_each_request_clearly_never_as_judge_text():
    with _servers({"mode": "html"}) as (html,):
        results = _client(html.base_url, max_retries=1).complete_results(CONVERSATIONS[:3])
    assert all(r.text is None and r.error.startswith("the answer is not a chat completion ('<html>")
               and r.error.endswith("(gave up after 2 attempts)") for r in results)


@pytest.mark.parametrize("declare_length, gzip", [(True, False), (False, False), (False, True)],
                         ids=["content-length", "until-close", "gzip"])
def test_an_oversized_answer_is_never_read_whole(declare_length, gzip):
    """Before: two 300 MiB answers were taken as judge text (client 1.84 GB RSS). A chat completion of 24 MiB, with
    its length declared, sent until the connection closes, or gzip-compressed (24 MiB inflated from ~25 kB), is
    refused as over the cap; the client's Python allocations never reach the answer's size (tracemalloc's peak
    stays within the cap plus a few read pieces and httpx's buffers)."""
    cap = 256 * 1024
    answer = 24 * 1024 * 1024
    with _servers({"mode": "huge", "huge_bytes": answer, "declare_length": declare_length, "gzip": gzip}) as (big,):
        client = _client(big.base_url, max_retries=1, max_answer_bytes=cap)
        tracemalloc.start()
        try:
            results = client.complete_results(CONVERSATIONS[:2])
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert all(r.text is None and "262,144-byte cap (max_answer_bytes)" in r.error for r in results), results
    assert peak < cap + 3 * 1024 * 1024 < answer // 4, peak


@pytest.mark.slow  # 2.1 s of CPU of its own in the fast tier's run (23:30, load 1-4): at the edge
def test_a_slow_endpoint_does_not_slow_the_farm():
    """The issue's bench case, scaled down: 3 fast endpoints (0.1 s a request, 2 in flight each) against the same 3
    plus a slow one (3 s), 24 requests, each client warmed by one call (as `rexrank score`'s chunks after the
    first). Before, the slow one's two requests set the finish: never under 3 s. Now its first ones are sent again to
    the fast ones once those are idle, and once measured it takes no request the fast ones would answer before it
    answered it: every run ends well before the slow one could answer, with the same answers in the same order."""
    conversations = [[{"role": "user", "content": f"pair {i}"}] for i in range(24)]
    expected = [answer_for(c) for c in conversations]
    slow_latency = 3.0
    # The servers in a child process, as bench/judge_farm.py runs them: in this one they would share the client's
    # interpreter and the timing would measure that contention.
    servers = subprocess.Popen([sys.executable, "-m", "rexrank.testing.fake_openai", "4", "0.1", "0.1", "0.1",
                                str(slow_latency)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        urls = [servers.stdout.readline().strip() for _ in range(4)]
        three, four = _client(urls[:3], max_concurrency=2), _client(urls, max_concurrency=2)
        times: dict[int, list[float]] = {3: [], 4: []}
        for run in range(4):
            for count, client in ((3, three), (4, four)):
                started = time.perf_counter()
                results = client.complete_results(conversations)
                if run:
                    times[count].append(time.perf_counter() - started)
                assert [r.text for r in results] == expected
    finally:
        servers.stdin.close()
        servers.wait(timeout=30)
    # Before: never under 3 s (the slow one's requests set the finish). The bound is structural, not a speed
    # target: a run that waited for the slow endpoint even once could not end before it answers, and the 0.4 s of
    # serving leaves a busy machine almost 4x slack. How the four compare with the three is a measurement, and lives
    # in bench/judge_farm.py --slow (bench/results/judge_farm.md), not in a timed unit test.
    assert max(times[4]) < slow_latency / 2, times


def test_an_answer_over_the_default_cap_is_never_cached_as_the_judges():
    """CRIMSON keeps every answer the judge gave, parsable or not. Before: a 2 MiB answer was that answer, cached.
    Now it is over the default cap (MAX_ANSWER_BYTES, 1 MiB): a failed request, asked again next time."""
    from rexrank.metrics import get

    with _servers({"mode": "huge", "huge_bytes": 2 * 1024 * 1024}) as (big,):
        metric = get("crimson", backend="openai", base_url=big.base_url, api_key_env=None, max_retries=0,
                     sleep=_no_wait)
        assert metric.analyses(["Small left effusion."], ["No effusion."]) == [None]
    assert big.served == 7  # the client's own retries (max_retries 6), every one refused
    assert not any(metric.text_cache._data.values())


def test_the_new_options_are_checked_and_hedging_can_be_turned_off():
    for bad in ({"max_answer_bytes": 0}, {"max_answer_bytes": "1MB"}, {"hedge": "false"}):
        with pytest.raises(ConfigError, match="max_answer_bytes must be a positive whole number|hedge must be true"):
            OpenAIChatClient("http://127.0.0.1:1/v1", "m", api_key_env=None, **bad)
    with _servers({"latency": 0.05}, {"latency": 0.3}) as (fast, slow):
        client = _client([fast.base_url, slow.base_url], max_concurrency=2, hedge=False)
        for _ in range(2):  # the second call knows both speeds: a hedging client would send the slow one's again
            assert [r.text for r in client.complete_results(CONVERSATIONS[:12])] == EXPECTED[:12]
            assert client.last_hedged == 0
    assert fast.served + slow.served == 24

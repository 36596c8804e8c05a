"""An OpenAI-compatible chat-completions client on httpx (OpenAI, Azure OpenAI, a local vLLM server, ...).

- ``POST {base_url}/chat/completions`` with ``{"model", "messages", "temperature", "max_tokens", ...}``.
- The API key is read from an environment variable (``api_key_env``) when the client is built; it is sent only in
  the auth header, never logged, never part of a repr, config, fingerprint or error (any echo of it in a server
  message is masked).
- ``base_url`` is one endpoint or a list of them (a judge farm: several servers of the same model, e.g. one vLLM
  server per GPU). Every endpoint takes requests from one shared list, so a faster server answers more of them.
- At most ``max_concurrency`` requests in flight per endpoint; each has a ``timeout`` (the whole request, reading
  its answer included). Timeouts, connection errors, 408, 409, 429 and 5xx are retried up to ``max_retries`` times
  with exponential backoff (``backoff_base * 2**attempt``, capped at ``backoff_max``, plus up to 10 % jitter); a
  ``Retry-After`` header (seconds or an HTTP date) sets the wait instead.
- Nothing an endpoint sends is trusted: an answer is read in pieces, at most ``max_answer_bytes`` (default
  ``MAX_ANSWER_BYTES``, 1 MiB: a judge's answer is a few kB), asked uncompressed (gzip or deflate sent anyway is
  inflated under the same cap); a larger one is dropped unread. A 200 that is not a chat completion (an HTML error
  page, other JSON, text that is not UTF-8) or that is too large is that endpoint's failure, like a timeout: retried,
  never returned as the judge's text (so never cached by a metric).
- The endpoint's failures (timeouts, connection errors, 5xx, answers that are not chat completions or too large) send
  the request at once to an endpoint that has not failed it, where there is one; otherwise after the backoff. An
  endpoint that fails ``SET_ASIDE_AFTER`` requests in a row is set aside for ``SET_ASIDE_S`` seconds (one warning
  line; this client remembers it across calls, so ``rexrank score``'s next chunk does not try it again at once),
  then gets requests again; the last endpoint standing is never set aside (its requests retry and then fail as they
  would with one endpoint).
- Work goes where it finishes soonest: each endpoint's answer time is measured (a moving average, kept across
  calls; a copy that lost the race raises it to at least the time it ran). An endpoint HEDGE_RATIO times slower
  than others takes a new request only while the waiting ones would last the others longer than it needs; once no request is waiting, an idle endpoint measured at least ``HEDGE_RATIO`` times faster than the one
  holding a request sends that request too (a hedge) when it would answer at least ``HEDGE_MIN_GAIN_S`` sooner;
  the first answer wins and the other copy is cancelled. So a slow endpoint's tail never sets the finish: adding an
  endpoint does not make a run slower. ``hedge=False`` never sends a request twice (a paid API bills both).
- Answers come back in input order whichever endpoint gave them, so a farm returns what one endpoint would.
- 401/403 (key rejected) and 404 (wrong base_url or model) stop the run with a clear error; other failures end as a
  per-request error (the caller counts it as a NaN), never an exception.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import json
import logging
import os
import random
import time
import zlib
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rexrank.errors import ConfigError, RexrankError

log = logging.getLogger("rexrank.llm")

RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504}) | frozenset(range(505, 600))


# The endpoint's failures in a row (timeouts, connection errors, 5xx, answers that are not chat completions or too
# large) after which a farm stops sending to it for SET_ASIDE_S seconds: a server that died or answers a proxy's
# error page answers none; one slow answer or a dropped connection is not enough. A minute is long enough that the
# next chunks of a run do not pay for a dead server again, short enough that a restarted one soon helps again.
SET_ASIDE_AFTER = 3
SET_ASIDE_S = 60.0
# The largest answer read (bytes, as sent or inflated): a judge's answer is a few kB (CRIMSON's JSON, FineRadScore's
# corrections); far above that is a broken or hostile endpoint, and must not fill the client's memory.
MAX_ANSWER_BYTES = 1 << 20
# A hedge is sent from an idle endpoint measured at least this many times faster than the one holding the request,
# or for a request held this many times longer than its endpoint's usual answer time (a server that hangs; among
# replicas of one speed only such stragglers are sent twice, since a long answer is as long on any of them), and
# only when it would answer at least HEDGE_MIN_GAIN_S sooner (below that, timing noise).
HEDGE_RATIO = 1.5
HEDGE_MIN_GAIN_S = 0.05
# Weight of the newest answer time in an endpoint's measured speed (a moving average).
SPEED_WEIGHT = 0.3
# What is read of a failed request's answer for its error message.
ERROR_DETAIL_BYTES = 2048


class EndpointError(RexrankError):
    """The endpoint refused every request (bad key, wrong URL or model): scoring cannot continue."""


@dataclass
class ChatResult:
    text: str | None  # the assistant message; None when the request failed
    error: str | None = None
    attempts: int = 0


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or HTTP-date); None when absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def run_sync(coro_factory: Callable[[], Awaitable[Any]]) -> Any:
    """Run a coroutine from synchronous code, also when an event loop is already running (Jupyter, Gradio)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro_factory())
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(coro_factory())).result()


class OpenAIChatClient:
    """``complete(conversations) -> list[ChatResult]`` in input order.

    auth: "bearer" (``Authorization: Bearer KEY``, OpenAI and most servers) or "api-key" (Azure's ``api-key``
    header). api_key_env=None sends no key (a local server without auth). query: extra URL parameters (Azure's
    ``api-version``). transport/sleep: injectable for tests.
    """

    def __init__(self, base_url: str | Sequence[str], model: str, *, api_key_env: str | None = "OPENAI_API_KEY",
                 auth: str = "bearer", timeout: float = 120.0, max_concurrency: int = 8, max_retries: int = 6,
                 backoff_base: float = 1.0, backoff_max: float = 60.0, temperature: float | None = 0.0,
                 max_tokens: int | None = 1024, extra_body: dict[str, Any] | None = None,
                 query: dict[str, str] | None = None, transport: Any = None,
                 sleep: Callable[[float], Awaitable[None]] | None = None, metric: str = "llm",
                 max_answer_bytes: int = MAX_ANSWER_BYTES, hedge: bool = True):
        self.base_urls = _endpoints(base_url, metric)
        if auth not in ("bearer", "api-key"):
            raise ConfigError(f"{metric}: unknown auth {auth!r}. Available: bearer, api-key")
        self.metric = metric
        # One endpoint is named as before (configs and fingerprints of existing caches stay the same); a farm by its list.
        self.base_url: str | list[str] = self.base_urls[0] if len(self.base_urls) == 1 else list(self.base_urls)
        self.last_answered: dict[str, int] = {}  # requests each endpoint answered in the last call (display only)
        self.last_hedged = 0  # requests sent to a second endpoint in the last call
        # What this client learnt of its endpoints, kept across calls: answer time (s), set aside until (monotonic).
        self._speed: dict[str, float] = {}
        self._aside_until: dict[str, float] = {}
        self.model = model
        self.api_key_env = api_key_env
        self._key: str | None = None
        if api_key_env:
            key = os.environ.get(api_key_env, "")
            if not key.strip():
                raise ConfigError(f"{metric}: the API key environment variable {api_key_env} is not set or empty. "
                                  f"Export it (export {api_key_env}=...), or pass api_key_env=None for an endpoint "
                                  f"without authentication.")
            self._key = key.strip()
        self.auth = auth
        self.timeout = float(timeout)
        self.max_concurrency = max(1, int(max_concurrency))
        self.max_retries = max(0, int(max_retries))
        self.backoff_base = float(backoff_base)
        self.backoff_max = float(backoff_max)
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.extra_body = dict(extra_body or {})
        self.query = dict(query or {})
        self.transport = transport
        self.sleep = sleep or asyncio.sleep
        if isinstance(max_answer_bytes, bool) or not isinstance(max_answer_bytes, int) or max_answer_bytes < 1:
            raise ConfigError(f"{metric}: max_answer_bytes must be a positive whole number of bytes (got "
                              f"{max_answer_bytes!r}; default {MAX_ANSWER_BYTES})")
        if not isinstance(hedge, bool):
            raise ConfigError(f"{metric}: hedge must be true or false (got {hedge!r})")
        self.max_answer_bytes = max_answer_bytes
        self.hedge = hedge
        self.name = f"openai:{self.model}"

    def __repr__(self) -> str:  # never shows the key
        return f"OpenAIChatClient(base_url={self.base_url!r}, model={self.model!r}, api_key_env={self.api_key_env!r})"

    def describe(self) -> dict[str, Any]:
        """What goes into a metric config: endpoint, model and decoding, never the key."""
        return {"base_url": self.base_url, "model": self.model, "temperature": self.temperature,
                "max_tokens": self.max_tokens, **({"extra_body": self.extra_body} if self.extra_body else {})}

    def _mask(self, text: str) -> str:
        if self._key and self._key in text:
            text = text.replace(self._key, "***")
        return text

    def _headers(self) -> dict[str, str]:
        # Uncompressed answers: their size on the wire is their size in memory (the cap reads what it counts).
        headers = {"Content-Type": "application/json", "Accept-Encoding": "identity"}
        if self._key:
            if self.auth == "bearer":
                headers["Authorization"] = f"Bearer {self._key}"
            else:
                headers["api-key"] = self._key
        return headers

    def _body(self, messages: list[dict[str, str]]) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "messages": messages}
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        body.update(self.extra_body)
        return body

    def _backoff(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            return min(retry_after, max(self.backoff_max, 300.0))
        delay = min(self.backoff_max, self.backoff_base * (2 ** attempt))
        return delay + random.uniform(0, 0.1 * delay)

    async def _read_capped(self, response, limit: int, *, head: bool = False) -> tuple[bytes | None, str | None]:
        """(the body, None), or (None, why) when it is over ``limit`` bytes (as sent, or inflated from gzip or
        deflate) or compressed otherwise; ``head``: its first ``limit`` bytes instead (an error's message). Reads
        in pieces and stops at the limit: never more than ``limit`` bytes plus one piece in memory."""
        declared = response.headers.get("content-length", "")
        if not head and declared.isdigit() and int(declared) > limit:
            return None, f"answer of {int(declared):,} bytes, over the {limit:,}-byte cap (max_answer_bytes)"
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity", "gzip", "x-gzip", "deflate"):
            return None, f"answer compressed as {encoding!r} although identity was asked"
        inflate = None if encoding in ("", "identity") else zlib.decompressobj(zlib.MAX_WBITS | 32)
        if response.is_stream_consumed:  # a transport that handed over the whole body (a mock): already decoded
            inflate, raw = None, _pieces(response.content)
        else:
            raw = response.aiter_raw()
        body = bytearray()
        try:
            async for piece in raw:
                if inflate is not None:  # at most what the cap has room for, one byte more to know it overflowed
                    piece = inflate.decompress(piece, limit + 1 - len(body))
                body += piece
                if len(body) > limit:
                    if head:
                        return bytes(body[:limit]), None
                    return None, f"answer over the {limit:,}-byte cap (max_answer_bytes)"
        except zlib.error:
            return None, f"answer not readable as {encoding}"
        return bytes(body), None

    async def _attempt(self, client, url: str, messages: list[dict[str, str]]) -> tuple[str, Any, float | None]:
        """One request: ("done", ChatResult-without-attempts), ("retry", error, retry_after) for a retryable answer
        that is no fault of the endpoint (408, 409, 429), or ("fail", error, retry_after) for the endpoint's own
        failure (timeout, connection error, 5xx, an answer that is not a chat completion or over the cap)."""
        import httpx

        try:  # the whole exchange within the timeout: an endpoint that trickles its answer times out too
            return await asyncio.wait_for(self._exchange(client, url, messages), self.timeout)
        except (httpx.TimeoutException, asyncio.TimeoutError):
            return "fail", f"timed out after {self.timeout:g} s", None
        except httpx.TransportError as exc:
            return "fail", f"connection error ({type(exc).__name__})", None

    async def _exchange(self, client, url: str, messages: list[dict[str, str]]) -> tuple[str, Any, float | None]:
        async with client.stream("POST", "/chat/completions", json=self._body(messages),
                                 params=self.query or None) as response:
            status = response.status_code
            if status == 200:
                body, why = await self._read_capped(response, self.max_answer_bytes)
                return ("fail", why, None) if body is None else self._completion(body)
            detail, _ = await self._read_capped(response, ERROR_DETAIL_BYTES, head=True)
        detail = self._mask((detail or b"").decode("utf-8", "replace")[:200].replace("\n", " "))
        if status in (401, 403):
            raise EndpointError(f"{self.metric}: {url} rejected the API key from "
                                f"{self.api_key_env or '(none)'} (HTTP {status}): {detail}")
        if status == 404:
            raise EndpointError(f"{self.metric}: {url}/chat/completions or model {self.model!r} "
                                f"not found (HTTP 404): {detail}")
        if status not in RETRY_STATUS:
            return "done", ChatResult(None, f"HTTP {status}: {detail}"), None
        return ("fail" if status >= 500 else "retry"), f"HTTP {status}: {detail}", \
            parse_retry_after(response.headers.get("retry-after"))

    @staticmethod
    def _completion(body: bytes) -> tuple[str, Any, None]:
        """A 200's body as ("done", ChatResult) when it is a chat completion, else ("fail", why, None)."""
        try:
            message = json.loads(body)["choices"][0]["message"]
        except (ValueError, KeyError, IndexError, TypeError):
            message = None
        if not isinstance(message, dict):
            return "fail", f"the answer is not a chat completion ({_glimpse(body)})", None
        text = message.get("content")
        if text is None:  # a chat completion without text (a refusal, a tool call): the model's answer
            return "done", ChatResult(None, "empty message"), None
        if not isinstance(text, str):
            return "fail", f"the answer is not a chat completion (content is {type(text).__name__})", None
        return "done", ChatResult(text), None

    def _hedge_time(self, url: str, holder: str, started: float, now: float) -> float | None:
        """When ``url`` (idle) should also send a request ``holder`` has held since ``started``: a time <= now is
        now; None: not in this call as far as the measured speeds tell."""
        mine, theirs = self._speed.get(url), self._speed.get(holder)
        if not self.hedge or mine is None:
            return None
        elapsed = now - started
        if theirs is not None and theirs >= HEDGE_RATIO * mine:  # held by a slower endpoint
            # The rest of its usual time; past that, as long again (its time may be a lower bound, see `send`).
            remaining = theirs - elapsed if elapsed < theirs else elapsed
            if remaining - mine >= HEDGE_MIN_GAIN_S:
                return now
            return started + max(theirs, mine + HEDGE_MIN_GAIN_S)
        # Held by an endpoint as fast, or not measured yet: only a straggler (well past that endpoint's usual time,
        # or past this one's) is sent here too: it may take as long again, clearly longer than this one needs.
        return started + max(HEDGE_RATIO * (theirs or 0.0), HEDGE_RATIO * mine, mine + HEDGE_MIN_GAIN_S)

    def _set_aside(self, url: str) -> bool:
        return self._aside_until.get(url, 0.0) > time.monotonic()

    async def acomplete(self, conversations: Sequence[list[dict[str, str]]]) -> list[ChatResult]:
        """Every conversation answered (or failed) once, results in input order, spread over the endpoints."""
        import httpx

        n = len(conversations)
        if n == 0:
            return []
        results: list[ChatResult | None] = [None] * n
        attempts = [0] * n
        waiting_list: deque[int] = deque(range(n))  # requests no endpoint holds, in the order they are sent
        failed_on: list[set[str]] = [set() for _ in range(n)]  # endpoints that failed each request
        held: dict[int, dict[str, tuple[asyncio.Task, float]]] = {}  # request -> endpoint -> (its copy, sent at)
        copies: set[asyncio.Task] = set()
        backoffs: set[asyncio.Task] = set()
        finished = asyncio.Event()
        fatal: list[BaseException] = []
        in_a_row = dict.fromkeys(self.base_urls, 0)
        answered = dict.fromkeys(self.base_urls, 0)
        hedged = [0]
        left = [n]
        change = [asyncio.Event()]

        def changed() -> None:  # wakes every idle worker: a request to take, or one to hedge, may be there
            change[0].set()
            change[0] = asyncio.Event()

        def settle(index: int, result: ChatResult) -> None:
            result.attempts = attempts[index]
            results[index] = result
            for task, _ in held.get(index, {}).values():  # the other copy lost the race
                task.cancel()
            left[0] -= 1
            if not left[0]:
                finished.set()

        def standing() -> list[str]:
            return [u for u in self.base_urls if not self._set_aside(u)]

        def take(url: str) -> tuple[int, bool] | None:
            """The next request for ``url``: a waiting one it has not failed (or that every endpoint standing has
            failed), else one worth hedging, else None."""
            others = [u for u in standing() if u != url]
            worth = worth_taking(url, others)
            for index in waiting_list:
                if failed_on[index] and url not in failed_on[index] or not failed_on[index] and worth \
                        or failed_on[index] and all(u in failed_on[index] for u in others):
                    waiting_list.remove(index)
                    return index, False
            if waiting_list:
                return None
            now = time.monotonic()
            best = None
            for index, holders in held.items():
                if len(holders) != 1 or url in holders or url in failed_on[index] or results[index] is not None:
                    continue
                (holder, (_, started)), = holders.items()
                when = self._hedge_time(url, holder, started, now)
                if when is not None and when <= now and (best is None or started < best[1]):
                    best = index, started
            return None if best is None else (best[0], True)

        def worth_taking(url: str, others: list[str]) -> bool:
            """Whether ``url`` should take a new request now: not when it is measured HEDGE_RATIO times slower
            than endpoints that would take every waiting request and answer it before ``url`` answered one (the
            list lasts (its length / their throughput) + their answer time); a request that failed somewhere goes
            by ``take``'s own rule."""
            mine = self._speed.get(url)
            faster = [speed for u in others if (speed := self._speed.get(u)) is not None
                      and mine is not None and speed * HEDGE_RATIO <= mine]
            if not faster:
                return True
            throughput = sum(self.max_concurrency / speed for speed in faster)
            return len(waiting_list) >= (mine - min(faster)) * throughput

        def next_hedge(url: str) -> float | None:
            now = time.monotonic()
            times = [when for index, holders in held.items() if len(holders) == 1 and url not in holders
                     and url not in failed_on[index]
                     for holder, (_, started) in holders.items()
                     if (when := self._hedge_time(url, holder, started, now)) is not None]
            return None if not times else max(0.001, min(times) - now)

        async def again(index: int, delay: float) -> None:
            await self.sleep(delay)
            waiting_list.append(index)
            changed()

        def failed(url: str, index: int, kind: str, error: str, retry_after: float | None) -> None:
            if kind == "fail":
                in_a_row[url] += 1
                if in_a_row[url] >= SET_ASIDE_AFTER and not self._set_aside(url) and len(standing()) > 1:
                    self._aside_until[url] = time.monotonic() + SET_ASIDE_S
                    log.warning("%s: %s failed %d requests in a row (%s); set aside for %g s, the other %d "
                                "endpoint(s) take its requests", self.metric, url, in_a_row[url], error,
                                SET_ASIDE_S, len(standing()))
                    in_a_row[url] = 0
            failed_on[index].add(url)
            if results[index] is not None or held.get(index):  # answered, or another copy still carries it
                return
            if attempts[index] > self.max_retries:
                settle(index, ChatResult(None, f"{error} (gave up after {attempts[index]} attempts)"))
            elif kind == "fail" and any(u not in failed_on[index] for u in standing()):
                waiting_list.appendleft(index)  # at once, to an endpoint that has not failed it
            else:
                task = asyncio.create_task(again(index, self._backoff(attempts[index] - 1, retry_after)))
                backoffs.add(task)
                task.add_done_callback(backoffs.discard)

        async def send(url: str, client, index: int) -> None:
            sent = time.monotonic()
            task = asyncio.create_task(self._attempt(client, url, conversations[index]))
            copies.add(task)
            task.add_done_callback(copies.discard)
            held.setdefault(index, {})[url] = (task, sent)
            try:
                await asyncio.wait({task})
            finally:
                task.cancel()  # a no-op once done; the worker's own cancellation takes its copy with it
                held[index].pop(url, None)
                if not held[index]:
                    del held[index]
            if task.cancelled():  # the other copy answered first: this endpoint needs at least this long
                took = time.monotonic() - sent
                if self._speed.get(url, 0.0) < took:  # (else a slow endpoint whose copies always lose stays unknown)
                    self._speed[url] = took
                return
            kind, value, retry_after = task.result()  # EndpointError propagates: it stops the run
            attempts[index] += 1
            if kind == "done":
                in_a_row[url] = 0
                if value.text is not None:  # an answer's time measures the endpoint (not a quick refusal's)
                    took = time.monotonic() - sent
                    before = self._speed.get(url)
                    self._speed[url] = took if before is None else before + SPEED_WEIGHT * (took - before)
                if results[index] is None:
                    answered[url] += 1
                    settle(index, value)
            else:
                failed(url, index, kind, value, retry_after)

        async def serve(url: str, client) -> None:
            try:
                # Not `while True`: asyncio.wait_for can swallow a cancellation that meets its own wake-up
                # (CPython gh-86296), so a worker also stops when the call is over.
                while not finished.is_set():
                    rest = self._aside_until.get(url, 0.0) - time.monotonic()
                    if rest > 0:  # set aside: the real clock (the injected sleep is the retries' backoff)
                        await asyncio.sleep(rest)
                        continue
                    job = take(url)
                    if job is None:
                        wake = change[0]
                        with contextlib.suppress(asyncio.TimeoutError):
                            await asyncio.wait_for(wake.wait(), next_hedge(url))
                        continue
                    index, hedge = job
                    hedged[0] += hedge
                    await send(url, client, index)
                    changed()
            except Exception as exc:  # noqa: BLE001 - EndpointError (or a bug) ends the call for every worker
                fatal.append(exc)
                finished.set()

        async with contextlib.AsyncExitStack() as stack:
            clients = []
            for url in self.base_urls:
                limits = httpx.Limits(max_connections=self.max_concurrency,
                                      max_keepalive_connections=self.max_concurrency)
                clients.append(await stack.enter_async_context(httpx.AsyncClient(
                    base_url=url, headers=self._headers(), timeout=self.timeout, limits=limits,
                    transport=self.transport)))
            # Slot k of every endpoint before slot k+1 of any: a call smaller than the farm is dealt round the
            # endpoints instead of filling the first one (workers take requests in start order).
            workers = [asyncio.create_task(serve(url, client))
                       for _ in range(self.max_concurrency) for url, client in zip(self.base_urls, clients)]
            try:
                await finished.wait()
            finally:
                finished.set()
                for task in [*workers, *copies, *backoffs]:
                    task.cancel()
                await asyncio.gather(*workers, *copies, *backoffs, return_exceptions=True)
        self.last_answered = answered
        self.last_hedged = hedged[0]
        if fatal:
            raise fatal[0]
        return [r for r in results if r is not None]

    def complete_results(self, conversations: Sequence[list[dict[str, str]]]) -> list[ChatResult]:
        if not conversations:
            return []
        return run_sync(lambda: self.acomplete(conversations))

    def complete(self, conversations: Sequence[list[dict[str, str]]]) -> list[str | None]:
        """Assistant texts in order; None where a request failed (see ``complete_results`` for why)."""
        return [r.text for r in self.complete_results(conversations)]


async def _pieces(content: bytes):
    yield content


def _glimpse(body: bytes) -> str:
    """A few printable characters of an answer, for an error line (never the whole of it)."""
    text = body[:60].decode("utf-8", "replace")
    return repr("".join(c if c.isprintable() else " " for c in text)) + ("..." if len(body) > 60 else "")


def _endpoints(base_url: str | Sequence[str] | None, metric: str) -> tuple[str, ...]:
    """The endpoint list, checked: one URL or a list of distinct ones (a farm of servers of the same model)."""
    example = "(e.g. https://api.openai.com/v1 or http://localhost:8000/v1)"
    urls = [base_url] if isinstance(base_url, str) or base_url is None else list(base_url)
    if not urls or any(not isinstance(u, str) or not u.strip() for u in urls):
        raise ConfigError(f"{metric}: base_url is required for the OpenAI-compatible backend {example}: one URL, or "
                          "a list of them for several servers of the same model")
    cleaned = tuple(u.strip().rstrip("/") for u in urls)
    for url in cleaned:
        if "," in url or any(c.isspace() for c in url):
            raise ConfigError(f"{metric}: base_url {url!r} is not one URL; give several endpoints as a list "
                              """(on the command line a JSON list: --option '%s.base_url=["http://a:8000/v1","""
                              """"http://b:8000/v1"]')""" % metric)
    if len(set(cleaned)) != len(cleaned):
        twice = next(u for u in cleaned if cleaned.count(u) > 1)
        raise ConfigError(f"{metric}: base_url lists {twice} more than once; list each endpoint once (its "
                          "concurrency is max_concurrency)")
    return cleaned

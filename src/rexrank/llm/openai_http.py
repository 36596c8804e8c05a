"""An OpenAI-compatible chat-completions client on httpx (OpenAI, Azure OpenAI, a local vLLM server, ...).

- ``POST {base_url}/chat/completions`` with ``{"model", "messages", "temperature", "max_tokens", ...}``.
- The API key is read from an environment variable (``api_key_env``) when the client is built; it is sent only in
  the auth header, never logged, never part of a repr, config, fingerprint or error (any echo of it in a server
  message is masked).
- ``base_url`` is one endpoint or a list of them (a judge farm: several servers of the same model, e.g. one vLLM
  server per GPU). Every endpoint takes requests from one shared queue, so a faster server answers more of them.
- At most ``max_concurrency`` requests in flight per endpoint; each has a ``timeout``. Timeouts, connection errors,
  408, 409, 429 and 5xx are retried up to ``max_retries`` times with exponential backoff (``backoff_base *
  2**attempt``, capped at ``backoff_max``, plus up to 10 % jitter); a ``Retry-After`` header (seconds or an HTTP date)
  sets the wait instead. A retry goes back to the queue, so in a farm any endpoint may take it.
- In a farm, an endpoint that fails ``SET_ASIDE_AFTER`` requests in a row with a timeout or connection error is set
  aside for the rest of the call (one warning line) and the others finish its work; the last endpoint standing is
  never set aside (its requests retry and then fail as they would with one endpoint). The next call tries every
  endpoint again.
- Answers come back in input order whichever endpoint gave them, so a farm returns what one endpoint would.
- 401/403 (key rejected) and 404 (wrong base_url or model) stop the run with a clear error; other failures end as a
  per-request error (the caller counts it as a NaN), never an exception.
"""

from __future__ import annotations

import asyncio
import contextlib
import email.utils
import logging
import os
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rexrank.errors import ConfigError, RexrankError

log = logging.getLogger("rexrank.llm")

RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504}) | frozenset(range(505, 600))


# Timeouts or connection errors in a row after which a farm stops sending to an endpoint (for the rest of the call):
# a server that died answers none; one slow answer or a dropped connection is not enough.
SET_ASIDE_AFTER = 3


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
                 sleep: Callable[[float], Awaitable[None]] | None = None, metric: str = "llm"):
        self.base_urls = _endpoints(base_url, metric)
        if auth not in ("bearer", "api-key"):
            raise ConfigError(f"{metric}: unknown auth {auth!r}. Available: bearer, api-key")
        self.metric = metric
        # One endpoint is named as before (configs and fingerprints of existing caches stay the same); a farm by its list.
        self.base_url: str | list[str] = self.base_urls[0] if len(self.base_urls) == 1 else list(self.base_urls)
        self.last_answered: dict[str, int] = {}  # requests each endpoint answered in the last call (display only)
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
        headers = {"Content-Type": "application/json"}
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

    async def _attempt(self, client, url: str, messages: list[dict[str, str]]) -> tuple[str, Any, float | None]:
        """One request: ("done", ChatResult-without-attempts), or ("retry", error, retry_after) for a retryable
        failure, or ("down", error, None) for a timeout or connection error (also retryable)."""
        import httpx

        try:
            response = await client.post("/chat/completions", json=self._body(messages), params=self.query or None)
        except httpx.TimeoutException:
            return "down", f"timed out after {self.timeout:g} s", None
        except httpx.TransportError as exc:
            return "down", f"connection error ({type(exc).__name__})", None
        status = response.status_code
        if status == 200:
            try:
                text = response.json()["choices"][0]["message"]["content"]
            except (ValueError, KeyError, IndexError, TypeError):
                return "done", ChatResult(None, "response is not a chat completion"), None
            return "done", ChatResult(text if isinstance(text, str) else None,
                                      None if isinstance(text, str) else "empty message"), None
        detail = self._mask(response.text[:200].replace("\n", " "))
        if status in (401, 403):
            raise EndpointError(f"{self.metric}: {url} rejected the API key from "
                                f"{self.api_key_env or '(none)'} (HTTP {status}): {detail}")
        if status == 404:
            raise EndpointError(f"{self.metric}: {url}/chat/completions or model {self.model!r} "
                                f"not found (HTTP 404): {detail}")
        if status not in RETRY_STATUS:
            return "done", ChatResult(None, f"HTTP {status}: {detail}"), None
        return "retry", f"HTTP {status}: {detail}", parse_retry_after(response.headers.get("retry-after"))

    async def acomplete(self, conversations: Sequence[list[dict[str, str]]]) -> list[ChatResult]:
        """Every conversation answered (or failed) once, results in input order, spread over the endpoints."""
        import httpx

        n = len(conversations)
        results: list[ChatResult | None] = [None] * n
        attempts = [0] * n
        queue: asyncio.Queue[int] = asyncio.Queue()
        for index in range(n):
            queue.put_nowait(index)
        finished = asyncio.Event()
        fatal: list[BaseException] = []
        alive = {url: True for url in self.base_urls}
        down_in_a_row = dict.fromkeys(self.base_urls, 0)
        answered = dict.fromkeys(self.base_urls, 0)
        waiting: set[asyncio.Task] = set()
        left = [n]

        def settle(index: int, result: ChatResult) -> None:
            result.attempts = attempts[index]
            results[index] = result
            left[0] -= 1
            if not left[0]:
                finished.set()

        async def again(index: int, delay: float) -> None:
            await self.sleep(delay)
            queue.put_nowait(index)

        async def serve(url: str, client) -> None:
            try:
                while alive[url]:
                    index = await queue.get()
                    if not alive[url]:  # set aside while this worker waited: leave the request to the others
                        queue.put_nowait(index)
                        return
                    kind, value, retry_after = await self._attempt(client, url, conversations[index])
                    attempts[index] += 1
                    if kind == "down":
                        down_in_a_row[url] += 1
                        if down_in_a_row[url] >= SET_ASIDE_AFTER and alive[url] \
                                and sum(alive.values()) > 1:
                            alive[url] = False
                            log.warning("%s: %s failed %d requests in a row (%s); the other %d endpoint(s) take "
                                        "its requests for the rest of this call", self.metric, url,
                                        down_in_a_row[url], value, sum(alive.values()))
                    else:
                        down_in_a_row[url] = 0
                    if kind == "done":
                        answered[url] += 1
                        settle(index, value)
                    elif attempts[index] > self.max_retries:
                        settle(index, ChatResult(None, f"{value} (gave up after {attempts[index]} attempts)"))
                    else:
                        task = asyncio.create_task(again(index, self._backoff(attempts[index] - 1, retry_after)))
                        waiting.add(task)
                        task.add_done_callback(waiting.discard)
            except Exception as exc:  # noqa: BLE001 - EndpointError (or a bug) ends the call for every worker
                fatal.append(exc)
                finished.set()

        if n == 0:
            return []
        async with contextlib.AsyncExitStack() as stack:
            clients = []
            for url in self.base_urls:
                limits = httpx.Limits(max_connections=self.max_concurrency,
                                      max_keepalive_connections=self.max_concurrency)
                clients.append(await stack.enter_async_context(httpx.AsyncClient(
                    base_url=url, headers=self._headers(), timeout=self.timeout, limits=limits,
                    transport=self.transport)))
            # Slot k of every endpoint before slot k+1 of any: a call smaller than the farm is dealt round the
            # endpoints instead of filling the first one (the queue hands requests to workers in start order).
            workers = [asyncio.create_task(serve(url, client))
                       for _ in range(self.max_concurrency) for url, client in zip(self.base_urls, clients)]
            try:
                await finished.wait()
            finally:
                for task in [*workers, *waiting]:
                    task.cancel()
                await asyncio.gather(*workers, *waiting, return_exceptions=True)
        self.last_answered = answered
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

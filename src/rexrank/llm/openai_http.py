"""An OpenAI-compatible chat-completions client on httpx (OpenAI, Azure OpenAI, a local vLLM server, ...).

- ``POST {base_url}/chat/completions`` with ``{"model", "messages", "temperature", "max_tokens", ...}``.
- The API key is read from an environment variable (``api_key_env``) when the client is built; it is sent only in
  the auth header, never logged, never part of a repr, config, fingerprint or error (any echo of it in a server
  message is masked).
- At most ``max_concurrency`` requests in flight; each has a ``timeout``. Timeouts, connection errors, 408, 409, 429
  and 5xx are retried up to ``max_retries`` times with exponential backoff (``backoff_base * 2**attempt``, capped at
  ``backoff_max``, plus up to 10 % jitter); a ``Retry-After`` header (seconds or an HTTP date) sets the wait instead.
- 401/403 (key rejected) and 404 (wrong base_url or model) stop the run with a clear error; other failures end as a
  per-request error (the caller counts it as a NaN), never an exception.
"""

from __future__ import annotations

import asyncio
import email.utils
import os
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from rexrank.errors import ConfigError, RexrankError

RETRY_STATUS = frozenset({408, 409, 429, 500, 502, 503, 504}) | frozenset(range(505, 600))


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

    def __init__(self, base_url: str, model: str, *, api_key_env: str | None = "OPENAI_API_KEY",
                 auth: str = "bearer", timeout: float = 120.0, max_concurrency: int = 8, max_retries: int = 6,
                 backoff_base: float = 1.0, backoff_max: float = 60.0, temperature: float | None = 0.0,
                 max_tokens: int | None = 1024, extra_body: dict[str, Any] | None = None,
                 query: dict[str, str] | None = None, transport: Any = None,
                 sleep: Callable[[float], Awaitable[None]] | None = None, metric: str = "llm"):
        if not base_url:
            raise ConfigError(f"{metric}: base_url is required for the OpenAI-compatible backend "
                              f"(e.g. https://api.openai.com/v1 or http://localhost:8000/v1)")
        if auth not in ("bearer", "api-key"):
            raise ConfigError(f"{metric}: unknown auth {auth!r}. Available: bearer, api-key")
        self.metric = metric
        self.base_url = base_url.rstrip("/")
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

    async def _one(self, client, semaphore, messages: list[dict[str, str]]) -> ChatResult:
        import httpx

        last_error = "no attempt"
        for attempt in range(self.max_retries + 1):
            retry_after = None
            async with semaphore:
                try:
                    response = await client.post("/chat/completions", json=self._body(messages),
                                                 params=self.query or None)
                except httpx.TimeoutException:
                    last_error = f"timed out after {self.timeout:g} s"
                    response = None
                except httpx.TransportError as exc:
                    last_error = f"connection error ({type(exc).__name__})"
                    response = None
            if response is not None:
                status = response.status_code
                if status == 200:
                    try:
                        text = response.json()["choices"][0]["message"]["content"]
                    except (ValueError, KeyError, IndexError, TypeError):
                        return ChatResult(None, "response is not a chat completion", attempt + 1)
                    return ChatResult(text if isinstance(text, str) else None,
                                      None if isinstance(text, str) else "empty message", attempt + 1)
                detail = self._mask(response.text[:200].replace("\n", " "))
                if status in (401, 403):
                    raise EndpointError(f"{self.metric}: {self.base_url} rejected the API key from "
                                        f"{self.api_key_env or '(none)'} (HTTP {status}): {detail}")
                if status == 404:
                    raise EndpointError(f"{self.metric}: {self.base_url}/chat/completions or model {self.model!r} "
                                        f"not found (HTTP 404): {detail}")
                last_error = f"HTTP {status}: {detail}"
                if status not in RETRY_STATUS:
                    return ChatResult(None, last_error, attempt + 1)
                retry_after = parse_retry_after(response.headers.get("retry-after"))
            if attempt < self.max_retries:
                await self.sleep(self._backoff(attempt, retry_after))
        return ChatResult(None, f"{last_error} (gave up after {self.max_retries + 1} attempts)", self.max_retries + 1)

    async def acomplete(self, conversations: Sequence[list[dict[str, str]]]) -> list[ChatResult]:
        import httpx

        semaphore = asyncio.Semaphore(self.max_concurrency)
        limits = httpx.Limits(max_connections=self.max_concurrency, max_keepalive_connections=self.max_concurrency)
        async with httpx.AsyncClient(base_url=self.base_url, headers=self._headers(), timeout=self.timeout,
                                     limits=limits, transport=self.transport) as client:
            return list(await asyncio.gather(*(self._one(client, semaphore, m) for m in conversations)))

    def complete_results(self, conversations: Sequence[list[dict[str, str]]]) -> list[ChatResult]:
        if not conversations:
            return []
        return run_sync(lambda: self.acomplete(conversations))

    def complete(self, conversations: Sequence[list[dict[str, str]]]) -> list[str | None]:
        """Assistant texts in order; None where a request failed (see ``complete_results`` for why)."""
        return [r.text for r in self.complete_results(conversations)]

"""Fake OpenAI-compatible judge servers on 127.0.0.1, for the judge-farm tests and bench/judge_farm.py.

Each server answers ``POST /v1/chat/completions`` with a text derived from the request's messages only (the same
request gets the same answer on every server, as replicas of one model at temperature 0 would), after a fixed
``latency``. ``die_after=N`` makes it answer N requests and then drop every later connection without a reply (a
server that crashed mid-run). Hostile or broken endpoints for the judge-farm tests: ``mode="html"`` answers
``200 <html>`` (a proxy's error page), ``mode="huge"`` a chat completion of ``huge_bytes`` (written in 64 KiB
pieces from one buffer, so the server itself holds little; with ``Content-Length`` when ``declare_length``, else
until the connection closes; gzip-compressed when ``gzip``). Threads only; ``stop()`` (or leaving the ``with``
block) shuts it down.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


def answer_for(messages: list[dict]) -> str:
    """What every fake server answers to ``messages``."""
    digest = hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()[:12]
    return f"answer {digest}"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as vLLM serves

    def log_message(self, *args):  # quiet
        pass

    def do_POST(self):
        server: FakeJudgeServer = self.server.owner  # type: ignore[attr-defined]
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", "0"))) or b"{}")
        with server.lock:
            dead = server.die_after is not None and server.served >= server.die_after
            if not dead:
                server.served += 1
                server.in_flight += 1
                server.max_in_flight = max(server.max_in_flight, server.in_flight)
        if dead:  # a crashed server: the connection closes without a response
            server.dropped += 1
            self.close_connection = True
            return
        try:
            if server.latency:
                time.sleep(server.latency)
            if server.mode == "huge":
                self._send_huge(server)
                return
            if server.mode == "html":
                data, kind = b"<html><body><h1>502 Bad Gateway</h1></body></html>", "text/html"
            else:
                data, kind = json.dumps({"object": "chat.completion", "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": answer_for(body.get("messages", []))},
                     "finish_reason": "stop"}]}).encode(), "application/json"
            self.send_response(200)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):  # the client hung up (a hedge's loser, a refused answer)
            self.close_connection = True
        finally:
            with server.lock:
                server.in_flight -= 1

    def _send_huge(self, server: "FakeJudgeServer") -> None:
        head = b'{"object": "chat.completion", "choices": [{"index": 0, "message": {"role": "assistant", "content": "'
        tail = b'"}, "finish_reason": "stop"}]}'
        piece = b"x" * 65536
        pieces, rest = divmod(server.huge_bytes, len(piece))
        compress = zlib.compressobj(6, zlib.DEFLATED, 16 + zlib.MAX_WBITS) if server.gzip else None
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        if compress is not None:
            self.send_header("Content-Encoding", "gzip")
        if server.declare_length and compress is None:
            self.send_header("Content-Length", str(len(head) + server.huge_bytes + len(tail)))
        else:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        for chunk in (head, *([piece] * pieces), piece[:rest], tail):
            out = compress.compress(chunk) if compress is not None else chunk
            if out:
                self.wfile.write(out)
                with server.lock:
                    server.sent_bytes += len(out)
        if compress is not None:
            self.wfile.write(compress.flush())


class FakeJudgeServer:
    """One fake endpoint; ``base_url`` is ``http://127.0.0.1:<port>/v1``."""

    def __init__(self, latency: float = 0.0, die_after: int | None = None, mode: str = "chat",
                 huge_bytes: int = 0, declare_length: bool = True, gzip: bool = False):
        self.latency = latency
        self.die_after = die_after
        self.mode = mode
        self.huge_bytes = huge_bytes
        self.declare_length = declare_length
        self.gzip = gzip
        self.lock = threading.Lock()
        self.served = self.dropped = self.in_flight = self.max_in_flight = self.sent_bytes = 0
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._httpd.daemon_threads = True
        self._httpd.request_queue_size = 128
        self._httpd.owner = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self._thread.start()
        self.base_url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=10)

    def __enter__(self) -> "FakeJudgeServer":
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> None:
    """``python -m rexrank.testing.fake_openai N LATENCY [LATENCY ...]``: N servers in this process (the last
    latency given serves the rest), their base URLs printed one a line, until stdin closes (bench/judge_farm.py
    runs them here so they do not share the client's interpreter)."""
    import sys

    count, *latencies = argv or sys.argv[1:]
    latencies += [latencies[-1]] * (int(count) - len(latencies))
    servers = [FakeJudgeServer(latency=float(latency)) for latency in latencies[:int(count)]]
    try:
        print("\n".join(s.base_url for s in servers), flush=True)
        sys.stdin.read()
    finally:
        for server in servers:
            server.stop()


if __name__ == "__main__":
    main()

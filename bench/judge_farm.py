#!/usr/bin/env python
"""Judge-farm throughput: one OpenAIChatClient over 1, 2 and 4 fake OpenAI-compatible endpoints.

Each fake server (rexrank.testing.fake_openai, threads on 127.0.0.1, all in one child process so that they do
not compete with the client for its interpreter) answers after a fixed --latency, as a GPU server at its batch
limit would; the client keeps --concurrency requests in flight per endpoint (the default 8).
Throughput is requests / wall seconds of one complete_results() call; the ideal with E endpoints is
E * concurrency / latency. Target (issue 38): 4 endpoints >= 3.5x one. The answers of every farm are checked
to equal the single endpoint's, in order.

Usage: .venv/bin/python bench/judge_farm.py [--requests 256] [--latency 1.0] [--concurrency 8] [--repeat 2]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from rexrank.llm.openai_http import OpenAIChatClient


def _run(urls: list[str], conversations: list, concurrency: int) -> tuple[float, list]:
    client = OpenAIChatClient(urls, "judge", api_key_env=None,
                              max_concurrency=concurrency, timeout=60)
    started = time.perf_counter()
    results = client.complete_results(conversations)
    return time.perf_counter() - started, [r.text for r in results]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=256)
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--endpoints", default="1,2,4")
    args = parser.parse_args()
    conversations = [[{"role": "user", "content": f"pair {i}"}] for i in range(args.requests)]
    counts = [int(x) for x in args.endpoints.split(",")]
    servers = subprocess.Popen([sys.executable, "-m", "rexrank.testing.fake_openai", str(max(counts)),
                                str(args.latency)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        urls = [servers.stdout.readline().strip() for _ in range(max(counts))]
        reference = None
        rows = []
        for count in counts:
            times = []
            for _ in range(args.repeat):
                seconds, texts = _run(urls[:count], conversations, args.concurrency)
                reference = reference or texts
                assert texts == reference, f"{count} endpoints answered differently from one"
                times.append(seconds)
            rows.append((count, statistics.median(times)))
    finally:
        servers.stdin.close()
        servers.wait(timeout=60)
    base = rows[0][1]
    print(f"{args.requests} requests, latency {args.latency:g} s per request, {args.concurrency} in flight per "
          f"endpoint, median of {args.repeat}")
    print("| endpoints | seconds | requests/s | vs 1 endpoint | ideal |")
    print("|---|---|---|---|---|")
    for count, seconds in rows:
        print(f"| {count} | {seconds:.2f} | {args.requests / seconds:.1f} | {base / seconds:.2f}x | "
              f"{count * args.concurrency / args.latency:.0f}/s |")


if __name__ == "__main__":
    main()

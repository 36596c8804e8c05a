#!/usr/bin/env python
"""Judge-farm throughput: one OpenAIChatClient over 1, 2 and 4 fake OpenAI-compatible endpoints.

Each fake server (rexrank.testing.fake_openai, threads on 127.0.0.1, all in one child process so that they do
not compete with the client for its interpreter) answers after a fixed --latency, as a GPU server at its batch
limit would; the client keeps --concurrency requests in flight per endpoint (the default 8).
Throughput is requests / wall seconds of one complete_results() call; the ideal with E endpoints is
E * concurrency / latency. Target (issue 38): 4 endpoints >= 3.5x one. The answers of every farm are checked
to equal the single endpoint's, in order.

``--slow FACTOR`` (issue 49): the case of 3 endpoints against the same 3 plus a fourth FACTOR times slower, runs
alternated, medians of --repeat; target: the four no slower than the three (a slow endpoint's tail is hedged).
The client is kept across the runs of a case, as `rexrank score` keeps it across its chunks.

Usage: .venv/bin/python bench/judge_farm.py [--requests 256] [--latency 1.0] [--concurrency 8] [--repeat 2]
       .venv/bin/python bench/judge_farm.py --slow 4 --requests 128 --latency 2 --repeat 5
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

from rexrank.llm.openai_http import OpenAIChatClient


def _run(urls: list[str], conversations: list, concurrency: int,
         client: OpenAIChatClient | None = None) -> tuple[float, list]:
    client = client or OpenAIChatClient(urls, "judge", api_key_env=None, max_concurrency=concurrency, timeout=60)
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
    parser.add_argument("--slow", type=float, default=None,
                        help="3 endpoints against 3 + one this many times slower (issue 49)")
    args = parser.parse_args()
    conversations = [[{"role": "user", "content": f"pair {i}"}] for i in range(args.requests)]
    if args.slow:
        _slow_case(args, conversations)
        return
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


def _slow_case(args, conversations: list) -> None:
    latencies = [args.latency] * 3 + [args.latency * args.slow]
    servers = subprocess.Popen([sys.executable, "-m", "rexrank.testing.fake_openai", "4", *map(str, latencies)],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        urls = [servers.stdout.readline().strip() for _ in range(4)]
        clients = {count: OpenAIChatClient(urls[:count], "judge", api_key_env=None, max_concurrency=args.concurrency,
                                           timeout=60) for count in (3, 4)}
        times: dict[int, list[float]] = {3: [], 4: []}
        reference = None
        for _ in range(args.repeat):  # alternated, so a busier moment of the machine hits both
            for count, client in clients.items():
                seconds, texts = _run(urls[:count], conversations, args.concurrency, client)
                reference = reference or texts
                assert texts == reference, f"{count} endpoints answered differently"
                times[count].append(seconds)
    finally:
        servers.stdin.close()
        servers.wait(timeout=60)
    print(f"{args.requests} requests, 3 endpoints at {args.latency:g} s a request, the fourth at "
          f"{args.latency * args.slow:g} s, {args.concurrency} in flight per endpoint, {args.repeat} alternated runs")
    print("| endpoints | median s | runs (s) | hedged in the last run |")
    print("|---|---|---|---|")
    for count, client in clients.items():
        print(f"| {'3 fast' if count == 3 else '3 fast + 1 slow'} | {statistics.median(times[count]):.2f} | "
              f"{', '.join(f'{t:.2f}' for t in times[count])} | {getattr(client, 'last_hedged', '-')} |")


if __name__ == "__main__":
    main()

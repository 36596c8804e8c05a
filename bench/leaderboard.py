"""Leaderboard Space performance: a store of 200 models x 4 datasets x 2 tracks.

Measures (medians of repeated runs, loopback only):
- page load: Chromium (Debian, Playwright) from navigation until the overview grid has its rows;
- filter response: typing in a dataset tab's search box until the grid shows the narrowed count;
- results API: p50/p95 latency of /results under 20 concurrent gradio_client clients (bounded request count),
  the clients in a separate process from the server;
- the board's table query itself (numeric_table + display_table), in-process.

Usage: .venv/bin/python bench/leaderboard.py [--models 200] [--requests 200] [--out bench/results/leaderboard.md]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from leaderboard_helpers import running_space  # noqa: E402
from rexrank.leaderboard import board  # noqa: E402
from rexrank.leaderboard.records import DATASETS, TRACKS, MetricValue, ModelInfo, ResultRecord  # noqa: E402
from rexrank.leaderboard.store import Store  # noqa: E402
from rexrank.metrics import LEADERBOARD_METRICS  # noqa: E402


def fill(store: Store, n_models: int, seed: int = 0) -> None:
    rng = random.Random(seed)
    with store.transaction() as conn:
        for m in range(n_models):
            info = ModelInfo(name=f"model-{m:03d}", institution=f"inst-{m % 17}", year=2023 + m % 3,
                             model_type=rng.choice(["VLM", "encoder-decoder", "LLM"]),
                             trained_on=[rng.choice(DATASETS)])
            for dataset in DATASETS:
                for track in TRACKS:
                    metrics = {}
                    for name in LEADERBOARD_METRICS:
                        mean = rng.uniform(0.8, 3.0) if name in ("radcliq_v1", "fineradscore") else rng.uniform(0, 1)
                        metrics[name] = MetricValue(mean, mean * 0.95, mean * 1.05)
                    store.add_result(ResultRecord(model=info, dataset=dataset, split="test", track=track,
                                                  source="rexrank", metrics=metrics, n_studies=590), conn)


def median_time(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def browser_times(url: str, repeat: int) -> tuple[float, float]:
    from playwright.sync_api import sync_playwright

    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
             "--disable-component-update"]
    loads, filters = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=flags)
        for i in range(repeat):
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            start = time.perf_counter()
            page.goto(url, wait_until="load")
            page.wait_for_selector("#overview-table div[role=row]", state="attached", timeout=120_000)
            loads.append(time.perf_counter() - start)
            page.get_by_role("tab", name="MIMIC-CXR").click()
            grid = "#table-mimic_cxr-findings [role=grid]"
            page.wait_for_selector(grid, state="attached")
            start = time.perf_counter()
            page.locator("#search-mimic_cxr-findings textarea, #search-mimic_cxr-findings input").first.fill(
                f"model-{i:03d}")
            page.wait_for_function(f"() => document.querySelector('{grid}').getAttribute('aria-rowcount') === '2'",
                                   timeout=60_000)
            filters.append(time.perf_counter() - start)
            page.close()
        browser.close()
    return statistics.median(loads), statistics.median(filters)


def api_latencies(url: str, clients: int, requests: int) -> list[float]:
    from gradio_client import Client

    latencies: list[float] = []
    lock = threading.Lock()
    per_client = max(1, requests // clients)

    failures: list[str] = []
    # Clients connect first (each fetches the app config once); only the requests are timed.
    connected = [Client(url, verbose=False) for _ in range(clients)]

    def worker(k: int) -> None:
        client = connected[k]
        for j in range(per_client):
            dataset = DATASETS[(k + j) % len(DATASETS)]
            start = time.perf_counter()
            try:
                client.predict(dataset, "findings", api_name="/results")
            except Exception as exc:  # noqa: BLE001 - a failed request is counted, not fatal
                failures.append(type(exc).__name__)
                continue
            with lock:
                latencies.append(time.perf_counter() - start)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(600)
    return latencies, failures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--models", type=int, default=200)
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "leaderboard.md"))
    parser.add_argument("--client-mode", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client_mode:  # the load generator, in its own process so it does not share the server's GIL
        import json

        lat, failures = api_latencies(args.client_mode, args.clients, args.requests)
        print(json.dumps({"latencies": lat, "failures": failures}))
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "board.sqlite"
        store = Store(path)
        start = time.perf_counter()
        fill(store, args.models)
        fill_s = time.perf_counter() - start
        counts = store.counts()
        query_s = median_time(lambda: board.display_table(board.numeric_table(store, "mimic_cxr", "findings")), 5)
        store.close()
        with running_space(path, worker=False) as (url, _, _):
            load_s, filter_s = browser_times(url, args.repeat)
            import json
            import subprocess

            proc = subprocess.run([sys.executable, __file__, "--client-mode", url, "--clients", str(args.clients),
                                   "--requests", str(args.requests)], capture_output=True, text=True, timeout=900)
            if proc.returncode != 0:
                raise SystemExit(f"load generator failed:\n{proc.stderr[-3000:]}")
            loaded = json.loads(proc.stdout.strip().splitlines()[-1])
            lat, failures = sorted(loaded["latencies"]), loaded["failures"]
    p50 = lat[len(lat) // 2]
    p95 = lat[min(len(lat) - 1, int(round(0.95 * (len(lat) - 1))))]
    rows = [
        ("store", f"{counts['models']} models, {counts['results']} results (filled in {fill_s:.1f} s)"),
        ("table query (numeric + display), in-process", f"{query_s * 1000:.0f} ms (median of 5)"),
        ("page load to overview rows (Chromium)", f"{load_s:.2f} s (median of {args.repeat})"),
        ("filter response (search -> narrowed grid)", f"{filter_s:.2f} s (median of {args.repeat})"),
        (f"/results API, {args.clients} concurrent clients, {len(lat)} requests",
         f"p50 {p50 * 1000:.0f} ms, p95 {p95 * 1000:.0f} ms, {len(failures)} failed"),
    ]
    table = "| measurement | value |\n|---|---|\n" + "\n".join(f"| {a} | {b} |" for a, b in rows)
    text = (f"# Leaderboard Space performance\n\nMachine: 2 CPU cores (shared), loopback only. "
            f"Command: `.venv/bin/python bench/leaderboard.py --models {args.models}`.\n\n{table}\n")
    Path(args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()

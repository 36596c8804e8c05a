"""Screenshots of the board pages (``rexrank.leaderboard.pages``) for a person to look at: the overview, a dataset
table and its second page, another track's table, a searched table, a model page, Compare (three models with paired
tests and a published one), About, the plots of a table and of the overview, and a model's per-study view, at
1440x900 and 390x844, light and dark, as PNGs of the screen a visitor first sees (``--full`` adds the whole page).

    .venv/bin/python bench/board_shots.py [--out /tmp/board_shots] [--full]

The store is a fresh one in a temporary folder: the bundled published tables, 12 synthetic published models (so the
findings tables come in pages) and three models scored by rexrank with per-study BLEU-2 kept (what Compare's paired tests need). The pages' app listens on 127.0.0.1 only, in a thread
of this process, stopped at the end; Chromium is Debian's (/usr/bin/chromium, scripts/setup_browser.sh).
"""

from __future__ import annotations

import argparse
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

from rexrank.data.catalog import leaderboard_split
from rexrank.leaderboard.pages.routes import board_app
from rexrank.leaderboard.published import seed_store
from rexrank.leaderboard.records import MetricValue, ModelInfo, ResultRecord
from rexrank.leaderboard.store import Store
from rexrank.leaderboard.views import Views

VIEWPORTS = {"1440x900": {"width": 1440, "height": 900}, "390x844": {"width": 390, "height": 844}}
KEPT = ("Alpha-RG", "Beta-RG", "Gamma-RG")
GROWN = 12  # synthetic published models beside the published ones: 43 rows a findings table, so a table in pages
VIEWS = {"overview": "", "dataset": "?tab=mimic_cxr&track=findings", "page-2": "?tab=mimic_cxr&page=2",
         "track": "?tab=iu_xray&track=findings_impression", "search": "?tab=iu_xray&q=maira%7Cmedgemma",
         "model": "?tab=models&model=MAIRA-2",
         "compare": "?tab=compare" + "".join(f"&compare={m}" for m in (*KEPT, "MAIRA-2")), "about": "?tab=about",
         "plots": "plots?tab=iu_xray", "plots-overview": "plots",
         "studies": f"studies?model={KEPT[0]}&dataset=iu_xray&track=findings"}
CHROMIUM = "/usr/bin/chromium"


def _store(folder: Path) -> Store:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from leaderboard_helpers import add_published_models

    store = Store(folder / "board.sqlite")
    seed_store(store)
    add_published_models(store, GROWN)
    for index, model in enumerate(KEPT):
        values = 0.2 + 0.05 * index + np.random.default_rng(index).normal(0, 0.05, 40)
        mean = float(values.mean())
        store.add_result(ResultRecord(model=ModelInfo(name=model, institution="Example Lab"), dataset="iu_xray",
                                      split=leaderboard_split("iu_xray"), track="findings", source="rexrank",
                                      n_studies=40, metrics={"bleu2": MetricValue(mean, mean - 0.02, mean + 0.02)}))
        store.keep_reports(dataset="iu_xray", split="test", track="findings", model=model, result_hash=f"h-{model}",
                           rows=[(f"s{k:03d}", f"report {k}", f"reference {k}", {"bleu2": float(v)})
                                 for k, v in enumerate(values)])
    return store


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def main(argv: list[str] | None = None) -> int:
    import uvicorn
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("/tmp/board_shots"))
    parser.add_argument("--full", action="store_true", help="also a PNG of each whole page")
    args = parser.parse_args(argv)
    if not Path(CHROMIUM).exists():
        print(f"{CHROMIUM} is missing: scripts/setup_browser.sh installs it", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as folder:
        store = _store(Path(folder))
        server = uvicorn.Server(uvicorn.Config(board_app(Views(store)), host="127.0.0.1", port=_port(),
                                               log_level="warning"))
        thread = threading.Thread(target=server.run, daemon=True)
        thread.start()
        try:
            while not server.started:
                time.sleep(0.1)
            base = f"http://127.0.0.1:{server.config.port}/"
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"], headless=True)
                for size, viewport in VIEWPORTS.items():
                    for scheme in ("light", "dark"):
                        page = browser.new_page(viewport=viewport, color_scheme=scheme)
                        for name, query in VIEWS.items():
                            page.goto(base + query)
                            page.screenshot(path=str(args.out / f"{name}_{size}_{scheme}.png"))
                            if args.full:
                                page.screenshot(path=str(args.out / f"{name}_{size}_{scheme}_full.png"),
                                                full_page=True)
                        page.close()
                browser.close()
        finally:
            server.should_exit = True
            thread.join(timeout=30)
            store.close()
    print(f"{len(VIEWPORTS) * 2 * len(VIEWS) * (2 if args.full else 1)} PNGs in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

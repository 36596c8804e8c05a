"""Screenshots of the Arena page (``/arena``) through a session of votes, for a person to look at (issue 50): what a
radiologist sees after 1, 10 and 100 votes, at 1440x900 and 390x844, light and dark.

    .venv/bin/python bench/arena_shots.py [--out /tmp/arena_shots]

The Space is started as a host starts it (``serve`` with the Arena on and a rater named, no login) on 127.0.0.1, on a
fresh store holding stand-in reports of 6 models on 60 studies, each study with one grey stand-in film. Votes:

- vote 1 is cast in the page under the served pace: clicked at once (refused as too quick, the countdown shown), then
  again when the page says it counts;
- votes 2-10 in the page with the pace lifted (``NO_PACE`` on the served Arena: 4 pairs a minute would take minutes);
- votes 11-99 through the Arena's Python API (``next_pair``/``vote``) from six other raters, then vote 100 in the page.

Each size and theme is a session of its own (a fresh Space and store, one page opened at that size and theme: a
resized page keeps the layout gradio measured at its first size). Shots before the first vote and after votes 1, 10
and 100: ``{N}votes_{size}_{theme}_top.png`` (the first screen), ``..._bar.png`` (scrolled to report A, the vote bar
below it), ``..._board.png`` (scrolled to the Arena board) and ``..._full.png`` (the whole page); and
``000votes_{size}_{theme}_tooquick.png``, the first screen after a vote clicked at once (refused, counting down).
Chromium is Debian's (/usr/bin/chromium, scripts/setup_browser.sh).
"""

from __future__ import annotations

import argparse
import socket
import sys
import tempfile
import time
from pathlib import Path

VIEWPORTS = {"1440x900": {"width": 1440, "height": 900}, "390x844": {"width": 390, "height": 844}}
CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update"]
MODELS = ("alpha-rad", "beta-cxr", "gamma-gen", "delta-vlm", "epsilon-rg", "zeta-mm")
N_STUDIES = 60
RATER = "hf:ann"
SEEDERS = tuple(f"hf:rater{k}" for k in range(1, 7))
CHECKPOINTS = (1, 10, 100)
WAIT_MS = 30_000


def _store(folder: Path):
    from PIL import Image, ImageDraw

    from rexrank.leaderboard.store import Store

    store = Store(folder / "board.sqlite")
    for index, model in enumerate(MODELS):
        rows = [(f"s{k:03d}", f"Report {index}.{k}: heart size normal. No focal consolidation, effusion or "
                 "pneumothorax. Degenerative change of the thoracic spine.",
                 f"Reference {k}: the lungs are clear. Cardiomediastinal silhouette within normal limits.",
                 {"bleu2": index / 10 + k * 1e-4}) for k in range(N_STUDIES)]
        store.keep_reports(dataset="iu_xray", split="test", track="findings", model=model, result_hash=f"h-{model}",
                           rows=rows)
    store.close()
    images = folder / "images"
    images.mkdir()
    for k in range(N_STUDIES):  # a chest film's proportions; two lung fields and a frame show a crop or a stretch
        film = Image.new("L", (800, 960), color=30 + k)
        draw = ImageDraw.Draw(film)
        draw.rectangle((4, 4, 795, 955), outline=230, width=8)
        for left in (110, 430):
            draw.ellipse((left, 160, left + 260, 760), fill=70 + k, outline=200, width=4)
        film.save(images / f"s{k:03d}.png")
    return folder / "board.sqlite", images


def _port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _pair_shown(page) -> None:
    page.wait_for_function("() => (document.querySelector('#arena-report-a .arena-text')?.textContent ?? '')"
                           ".length > 0 && document.querySelector('#arena-reveal textarea')?.value === '' && "
                           "[...document.querySelectorAll('[id^=arena-vote-]')].filter(b => b.tagName === 'BUTTON')"
                           ".every(b => !b.disabled)", timeout=WAIT_MS)


def _vote(page, counted: int, key: str = "a") -> None:
    """Vote on the shown pair with a click and wait until the board counts ``counted`` votes."""
    page.locator(f"#arena-vote-{key}").click()
    page.wait_for_function("() => document.querySelector('#arena-reveal textarea').value.includes('A was')",
                           timeout=WAIT_MS)
    page.wait_for_function("n => document.querySelector('#arena-board-note').innerText.startsWith(n + ' vote')",
                           arg=str(counted), timeout=WAIT_MS)
    page.wait_for_function("() => !document.querySelector('#arena-board .progress-text')", timeout=WAIT_MS)


def _shots(page, out: Path, stem: str) -> None:
    """The first screen, the reports with the vote bar below them, the Arena board, and the whole page."""
    page.evaluate("() => window.scrollTo(0, 0)")
    page.wait_for_timeout(200)
    page.screenshot(path=str(out / f"{stem}_top.png"))
    for name, selector in (("bar", "#arena-report-a"), ("board", "#arena-board-note")):
        page.locator(selector).evaluate("el => el.scrollIntoView({block: 'start'})")
        page.wait_for_timeout(200)
        page.screenshot(path=str(out / f"{stem}_{name}.png"))
    page.screenshot(path=str(out / f"{stem}_full.png"), full_page=True)


def _seed(arena, n: int) -> None:
    """``n`` votes through the Arena's Python API, spread over the seeding raters (random choices, seeded)."""
    import random

    pick = random.Random(0)
    for cast in range(n):
        rater = SEEDERS[cast % len(SEEDERS)]
        pair = arena.next_pair(rater)
        arena.vote(rater, pair.ticket, pick.choices(["a", "b", "tie", "both_bad"], weights=[4, 4, 1, 1])[0])


def _session(browser, out: Path, size: str, viewport: dict, theme: str) -> None:
    """One rater's session on a Space of its own, in one page at ``viewport`` and ``theme``: shots after votes 1, 10
    and 100 (the module docstring says how the votes are cast)."""
    from rexrank.leaderboard.arena import NO_PACE
    from rexrank.leaderboard.serve import serve

    with tempfile.TemporaryDirectory() as folder:
        store_path, images = _store(Path(folder))
        port = _port()
        app, store, service = serve(str(store_path), "127.0.0.1", port, worker=False, prevent_thread_lock=True,
                                    arena=True, arena_images=str(images), arena_rater=RATER)
        arena = app.arena
        page = browser.new_page(viewport=viewport)
        try:
            page.goto(f"http://127.0.0.1:{port}/arena" + ("?__theme=dark" if theme == "dark" else ""),
                      wait_until="load")
            _pair_shown(page)
            page.wait_for_selector("#arena-images img", state="visible", timeout=WAIT_MS)
            _shots(page, out, f"000votes_{size}_{theme}")
            page.locator("#arena-tags-b input").first.check()
            page.locator("#arena-vote-b").click()  # too quick under the served pace: refused, counted down
            page.wait_for_function("() => document.querySelector('#arena-reveal textarea').value"
                                   ".includes('vote again in')", timeout=WAIT_MS)
            page.evaluate("() => window.scrollTo(0, 0)")
            page.wait_for_timeout(1500)  # the countdown moves
            page.screenshot(path=str(out / f"000votes_{size}_{theme}_tooquick.png"))
            page.wait_for_function("() => document.querySelector('#arena-reveal textarea').value"
                                   ".includes('counts now')", timeout=WAIT_MS)
            _vote(page, 1, "b")
            _shots(page, out, f"001votes_{size}_{theme}")
            arena.pace = NO_PACE  # votes 2-10 at once (the module docstring says why)
            for n in range(2, 11):
                page.locator("#arena-next").click()
                _pair_shown(page)
                _vote(page, n, "a" if n % 3 else "tie")
            _shots(page, out, f"010votes_{size}_{theme}")
            _seed(arena, 89)
            page.locator("#arena-next").click()
            _pair_shown(page)
            _vote(page, 100, "b")
            _shots(page, out, f"100votes_{size}_{theme}")
        finally:
            page.close()
            app.close()
            store.close()


def main(argv: list[str] | None = None) -> int:
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("/tmp/arena_shots"))
    args = parser.parse_args(argv)
    if not Path(CHROMIUM).exists():
        print(f"{CHROMIUM} is missing: scripts/setup_browser.sh installs it", file=sys.stderr)
        return 2
    args.out.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        try:
            for size, viewport in VIEWPORTS.items():
                for theme in ("light", "dark"):
                    _session(browser, args.out, size, viewport, theme)
        finally:
            browser.close()
    print(f"{((len(CHECKPOINTS) + 1) * 4 + 1) * len(VIEWPORTS) * 2} PNGs in {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

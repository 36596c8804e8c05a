#!/usr/bin/env python
"""The Arena's fit at scale (issue 28): Bradley-Terry and 1,000 bootstrap refits for 50 models and 100,000 votes.

Votes simulated from known strengths (normal, sd 1): each vote a uniform pair with random sides, the outcome drawn
so that P(A wins) + P(tie)/2 = sigmoid(s_A - s_B) with ties 30% of the closer side's chance. Timed: ``arena.fit``
(the ML fit plus ``--boot`` refits on resampled votes, strengths and rank intervals), CPU seconds
(time.process_time) with threads pinned to 1, median of ``--repeats``. Also printed: the correlation of the fitted
strengths with the truth and the share of strength intervals covering it (one draw: about 0.95 expected).

Second table (``--serve``): a store holding ``--models`` models' reports on the 590 IU-Xray-sized studies and the
simulated votes as vote events of its log; timed (wall, the page's wait): a fresh Arena reading the log, then
``next_pair`` and ``vote`` for one rater, medians of 50.

Third table (``--page``): the next pair in the page. The Arena tab (``arena_tab.arena_demo``) served on 127.0.0.1 with
``--page-models`` models' reports on ``--page-studies`` studies of IU-Xray-like length and two 512x512 PNG views per
study from a local folder, driven by Debian's Chromium (Playwright): a click on "Next pair", then the time until the
new report is in the page (the page's own clock, polled every animation frame), and the request's own time (sent to
answered, the browser's timing). Alternated click by click with a minimal gradio page on the same server settings
(one button filling one textbox from the server: the floor of a gradio round trip), medians of ``--clicks``.
``--baseline FILE``: also alternate with the tab built by another copy of arena_tab.py (e.g. an older commit's).

Fourth table (``--coverage``, issue 50): the fit's calibration at every vote count. 6 models whose strengths are a
fixed spread (-0.75..0.75), far apart (-2..2: wider than the prior expects) or drawn from N(0, 1); ``--reps`` boards
of 10, 50, 200 and 2,000 votes each; the share of true ranks inside their 95% rank interval and of centred true
strengths inside their interval, and the mean rank interval's width (tests/test_arena_uncertainty.py runs 40 boards).

Fifth table (``--rigging``, issue 50): the rigging simulation of tests/test_arena_rigging.py (the real Arena, a test
clock, 6 models, the target at true rank 4) over ``--seeds`` seeds per setup: the target's shown rank against the
low end of the rank interval the honest votes alone give it, and the accounts' one-sided z.

Sixth table (``--redraw REV [REV ...]``, issue 50 point 4): the page's redraw after one new vote, CPU seconds, for
each git revision's tree in a process of its own on copies of one store (``--votes`` simulated votes, 400 raters),
the processes alternated vote by vote, medians of ``--rounds``. Target: <= 0.25 s at 100,000 votes.

Usage: .venv/bin/python bench/arena.py [--models 50] [--votes 100000] [--boot 1000] [--repeats 3] [--serve] [--page]
       [--coverage [--reps 300]] [--rigging [--seeds 10]] [--redraw REV [REV ...] [--rounds 9]]
Prints Markdown tables (recorded in bench/results/arena.md). Targets: <= 5 s CPU; the next pair <= 150 ms in the page.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS"):
    os.environ[_var] = "1"  # before numpy loads

import argparse  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402

from rexrank.evaluation.defaults import DEFAULT_RESAMPLES  # noqa: E402
from rexrank.leaderboard.arena import Votes, fit  # noqa: E402


def votes_for(truth: np.ndarray, n: int, rng: np.random.Generator) -> Votes:
    """``n`` votes between random pairs of models of true strengths ``truth`` (Bradley-Terry, ties near even)."""
    m = len(truth)
    a = rng.integers(0, m, n)
    b = (a + rng.integers(1, m, n)) % m
    p = 1 / (1 + np.exp(-(truth[a] - truth[b])))
    tie = 0.3 * np.minimum(p, 1 - p)
    u = rng.random(n)
    score = np.where(u < p - tie / 2, 1.0, np.where(u < p + tie / 2, 0.5, 0.0))
    return Votes([f"m{i}" for i in range(m)], a, b, score)


def simulate(m: int, n: int, seed: int = 1) -> tuple[Votes, np.ndarray]:
    rng = np.random.default_rng(seed)
    truth = rng.normal(0.0, 1.0, m)
    return votes_for(truth, n, rng), truth - truth.mean()


def _vote_store(path: str, votes: Votes, n_studies: int = 590):
    """A store holding the models' reports on ``n_studies`` studies and ``votes`` as vote events of 400 raters.
    Returns (the store, seconds to add the events)."""
    from rexrank.leaderboard.store import Store, make_vote

    choices = {1.0: "a", 0.0: "b", 0.5: "tie"}
    store = Store(path)
    for name in votes.models:
        store.keep_reports(dataset="iu_xray", split="test", track="findings", model=name, result_hash=name,
                           rows=[(f"s{k}", f"{name} report {k}", f"reference {k}", {"bleu2": 0.1})
                                 for k in range(n_studies)])
    events = [make_vote(at=1e9 + i, rater=f"hf:r{i % 400}", expert=False, dataset="iu_xray", split="test",
                        track="findings", study=f"s{i % n_studies}",
                        models=[votes.models[votes.a[i]], votes.models[votes.b[i]]],
                        choice=choices[float(votes.score_a[i])], tags={"a": [], "b": []}, version="bench")
              for i in range(len(votes.a))]
    start = time.perf_counter()
    store.add_events(events)
    return store, time.perf_counter() - start


def serve_table(votes: Votes, m: int, n_studies: int = 590) -> None:
    import tempfile

    from rexrank.leaderboard.arena import NO_PACE, Arena

    with tempfile.TemporaryDirectory() as tmp:
        store, loaded = _vote_store(f"{tmp}/board.sqlite", votes, n_studies)
        start = time.perf_counter()
        arena = Arena(store, n_boot=0, pace=NO_PACE)  # the mechanics' cost: one rater votes back to back
        counted = len(arena.votes())
        first = time.perf_counter() - start
        arena.next_pair("hf:warm")  # reads the kept reports once (the pool), as a served Arena has
        start = time.perf_counter()
        arena.integrity()
        integrity = time.perf_counter() - start
        start = time.perf_counter()
        arena.board()
        board = time.perf_counter() - start
        from rexrank.leaderboard import arena_tab
        from rexrank.leaderboard.arena import N_BOOT

        arena.n_boot = N_BOOT  # the redraw as served: the board's intervals at their default draws
        arena_tab._board(arena)  # drawn once, as a served page has: the one-off imports (scipy.stats) not timed
        redraw = {}
        for label in ("after a vote", "no new vote"):
            if label == "after a vote":
                arena.vote("hf:redraw", arena.next_pair("hf:redraw").ticket, "a")
            start = time.process_time()
            arena_tab._board(arena)
            redraw[label] = time.process_time() - start
        arena.n_boot = 0
        served, voted = [], []
        for _ in range(50):
            start = time.perf_counter()
            pair = arena.next_pair("hf:bench")
            served.append(time.perf_counter() - start)
            start = time.perf_counter()
            arena.vote("hf:bench", pair.ticket, "tie")
            voted.append(time.perf_counter() - start)
        store.close()
    print(f"\n| log votes (counted) | store load s | first read of the log s | rater integrity s (400 raters) | "
          "board fit s (no bootstrap) | next pair ms (median of 50) | vote ms (median) |")
    print("|---|---|---|---|---|---|---|")
    print(f"| {len(votes.a):,} ({counted:,}) | {loaded:.1f} | {first:.2f} | {integrity:.2f} | {board:.2f} | "
          f"{1000 * statistics.median(served):.1f} | {1000 * statistics.median(voted):.1f} |")
    print(f"\nThe page's redraw (arena_tab._board: board, humans vs metrics, agreement, the note), CPU s: after a vote "
          f"{redraw['after a vote']:.2f}, with no new vote {redraw['no new vote']:.2f}")


def redraw_table(votes: Votes, trees: list[str], rounds: int) -> None:
    """The page's redraw (``arena_tab._board``) after one new vote, CPU seconds, for each of ``trees`` (git revisions
    of this repository, e.g. before and after a change): each tree's ``src`` from ``git archive``, served in a process
    of its own on a copy of one store of the simulated votes (an Arena with the served 1,000 posterior draws, the log
    read and the board drawn once before timing, as a Space's is), and the processes alternated vote by vote,
    ``rounds`` each. Also a redraw with no new vote."""
    import json
    import shutil
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as tmp:
        store, _ = _vote_store(f"{tmp}/board.sqlite", votes)
        store.close()
        children = []
        for k, rev in enumerate(trees):
            tree = Path(tmp) / f"tree{k}"
            tree.mkdir()
            archive = subprocess.run(["git", "-C", str(root), "archive", rev, "src"], check=True, capture_output=True)
            subprocess.run(["tar", "-x", "-C", str(tree)], input=archive.stdout, check=True)
            shutil.copy(f"{tmp}/board.sqlite", tree / "board.sqlite")
            env = {**os.environ, "PYTHONPATH": str(tree / "src")}
            child = subprocess.Popen([sys.executable, __file__, "--redraw-child", str(tree / "board.sqlite")],
                                     env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            ready = json.loads(child.stdout.readline())
            assert ready["src"].startswith(str(tree)), ready  # this tree's code, not the installed one
            children.append(child)
        after = {rev: [] for rev in trees}
        still = {rev: [] for rev in trees}
        for _ in range(rounds):
            for rev, child in zip(trees, children):  # alternated vote by vote
                child.stdin.write("go\n")
                child.stdin.flush()
                answer = json.loads(child.stdout.readline())
                after[rev].append(answer["after a vote"])
                still[rev].append(answer["no new vote"])
        for child in children:
            child.stdin.close()
            child.wait()
    print(f"\n| tree | redraw after a vote, CPU s (median of {rounds}) | runs | with no new vote (median) |")
    print("|---|---|---|---|")
    for rev in trees:
        print(f"| {rev} | {statistics.median(after[rev]):.3f} | {', '.join(f'{t:.2f}' for t in after[rev])} | "
              f"{statistics.median(still[rev]):.3f} |")
    print(f"\n({len(votes.a):,} votes, {len(votes.models)} models, 400 raters; alternated; load average "
          f"{os.getloadavg()[0]:.1f})")


def _redraw_child(path: str) -> None:
    """One side of ``redraw_table``: answers each "go" on stdin with one vote's redraw and a redraw without one."""
    import json
    import sys

    import rexrank
    from rexrank.leaderboard import arena_tab
    from rexrank.leaderboard.arena import N_BOOT, NO_PACE, Arena
    from rexrank.leaderboard.store import Store

    arena = Arena(Store(path), n_boot=N_BOOT, pace=NO_PACE)
    arena.votes()
    arena_tab._board(arena)
    print(json.dumps({"src": rexrank.__file__}), flush=True)
    for _ in sys.stdin:
        arena.vote("hf:redraw", arena.next_pair("hf:redraw").ticket, "a")
        start = time.process_time()
        arena_tab._board(arena)
        voted = time.process_time() - start
        start = time.process_time()
        arena_tab._board(arena)
        print(json.dumps({"after a vote": voted, "no new vote": time.process_time() - start}), flush=True)


REPORT = ("The cardiomediastinal silhouette is within normal limits for size and contour. The lungs are normally "
          "inflated without evidence of focal airspace disease, pleural effusion, or pneumothorax. Stable calcified "
          "granuloma in the right upper lobe. No acute bone abnormality. Report {model} of study {study}.")


def _page_store(root, models: int, studies: int):
    from PIL import Image

    from rexrank.leaderboard.store import Store

    store = Store(root / "board.sqlite")
    for m in range(models):
        store.keep_reports(dataset="iu_xray", split="test", track="findings", model=f"model-{m}", result_hash=f"h{m}",
                           rows=[(f"CXR{k}_IM-{k}", REPORT.format(model=m, study=k),
                                  REPORT.format(model="ref", study=k), {"bleu2": 0.1 + m / 100})
                                 for k in range(studies)])
    images = root / "images"
    images.mkdir()
    rng = np.random.default_rng(0)
    for k in range(studies):
        for view in ("1001", "2001"):
            Image.fromarray(rng.integers(0, 255, (512, 512), dtype=np.uint8)).save(images / f"CXR{k}_IM-{k}-{view}.png")
    return store, images


def _minimal_page(gr):
    with gr.Blocks() as demo:
        button = gr.Button("Next", elem_id="arena-next")
        text = gr.Textbox(elem_id="arena-report-a", interactive=False, lines=4)
        counter = iter(range(10 ** 9))
        button.click(lambda: REPORT.format(model="x", study=next(counter)), None, text, queue=False)
    return demo


# The time from the click to the new report in the page, and (when the page shows images) to every image of the new
# study loaded: an <img> under #arena-images whose source names the study (the files are named after it).
_CLICK = """() => new Promise(resolve => {
    const text = () => document.querySelector('#arena-report-a textarea').value;
    const study = () => (document.querySelector('#arena-message')?.innerText.match(/Study (\\S+):/) || [])[1];
    const old = text(), t0 = performance.now();
    let shown = null;
    const loaded = s => { const imgs = [...document.querySelectorAll('#arena-images img')];
        return imgs.length > 0 && imgs.every(i => i.complete && i.naturalWidth > 0 &&
                                             decodeURIComponent(i.src).includes(s + '-')); };
    const check = () => {
        const now = performance.now();
        if (shown === null && text() !== old && text() !== '') shown = now - t0;
        if (shown !== null && (!document.querySelector('#arena-images') || loaded(study())))
            return resolve([shown, now - t0]);
        if (now - t0 > 10000) return resolve([shown, NaN]);
        requestAnimationFrame(check);
    };
    document.querySelector('#arena-next').click();
    requestAnimationFrame(check);
})"""


def page_table(models: int, studies: int, clicks: int, baseline: str | None) -> None:
    import importlib.util
    import sys
    import tempfile
    from pathlib import Path

    import gradio as gr
    from playwright.sync_api import sync_playwright

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from leaderboard_helpers import BROWSER_FLAGS, CHROMIUM, DESKTOP, free_port

    from rexrank.leaderboard.arena import NO_PACE, Arena, images_from_folder
    from rexrank.leaderboard.arena_tab import arena_demo

    with tempfile.TemporaryDirectory() as tmp:
        store, images = _page_store(Path(tmp), models, studies)
        pages = {"arena": arena_demo}
        if baseline:
            spec = importlib.util.spec_from_file_location("arena_tab_baseline", baseline)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            pages["baseline"] = module.arena_demo
        servers, urls = [], {}
        for side, build in pages.items():
            arena = Arena(store, n_boot=0, pace=NO_PACE, images=images_from_folder(images))
            demo = build(arena, rater=f"hf:bench-{side}")
            servers.append(demo)
        servers.append(_minimal_page(gr))
        for side, demo in zip([*pages, "minimal"], servers):
            port = free_port()
            demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
                        allowed_paths=[str(images)])
            urls[side] = f"http://127.0.0.1:{port}/"
        shown: dict[str, list[float]] = {side: [] for side in urls}
        pictured: dict[str, list[float]] = {side: [] for side in urls}
        served: dict[str, list[float]] = {side: [] for side in urls}
        try:
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path=str(CHROMIUM), args=BROWSER_FLAGS, headless=True)
                tabs = {}
                for side, url in urls.items():
                    page = browser.new_page(viewport=DESKTOP)
                    page.goto(url, wait_until="load")
                    if side != "minimal":
                        page.get_by_role("tab", name="Arena", exact=True).click()
                    page.wait_for_selector("#arena-next", state="visible", timeout=60_000)
                    page.evaluate(_CLICK)  # warm: the first pair, the gallery's first images
                    tabs[side] = page
                for _ in range(clicks):
                    for side, page in tabs.items():  # alternate the sides click by click
                        page.bring_to_front()
                        with page.expect_request_finished(lambda r: "/run/predict" in r.url) as done:
                            text_ms, images_ms = page.evaluate(_CLICK)
                        shown[side].append(text_ms)
                        pictured[side].append(images_ms)
                        timing = done.value.timing
                        served[side].append(timing["responseEnd"] - timing["requestStart"])
                browser.close()
        finally:
            for demo in servers:
                demo.close()
            store.close()
    floor = statistics.median(shown["minimal"])
    print(f"\n| page | next pair's text on screen ms (median of {clicks}) | its images loaded ms | first request ms | "
          "text / minimal page |")
    print("|---|---|---|---|---|")
    for side in urls:
        images = "-" if side == "minimal" else f"{statistics.median(pictured[side]):.0f}"
        print(f"| {side} | {statistics.median(shown[side]):.0f} | {images} | {statistics.median(served[side]):.0f} | "
              f"{statistics.median(shown[side]) / floor:.2f} |")
    print(f"\n({models} models x {studies} studies, 2 images per study; load average {os.getloadavg()[0]:.1f})")


def coverage_table(reps: int, n_boot: int) -> None:
    from rexrank.leaderboard.arena import CONFIDENCE, PRIOR_SD, ranks_of

    truths = {"spread -0.75..0.75": lambda rng: np.linspace(-0.75, 0.75, 6),
              "far apart -2..2": lambda rng: np.linspace(-2.0, 2.0, 6),
              "drawn N(0, 1)": lambda rng: rng.normal(0.0, 1.0, 6)}
    print(f"\n| truth (6 models) | votes | boards | rank coverage | strength coverage | mean rank interval width |")
    print("|---|---|---|---|---|---|")
    for label, truth_of in truths.items():
        for n in (10, 50, 200, 2000):
            rng = np.random.default_rng(n)
            ranks = strengths = width = total = 0
            for rep in range(reps):
                truth = truth_of(rng)
                result = fit(votes_for(truth, n, rng), n_boot=n_boot, seed=rep, min_votes=0, min_raters=0)
                true_rank, centred = ranks_of(truth), truth - truth.mean()
                ranks += int(((result.rank_low <= true_rank) & (true_rank <= result.rank_high)).sum())
                strengths += int(((result.low <= centred) & (centred <= result.high)).sum())
                width += int((result.rank_high - result.rank_low).sum())
                total += len(truth)
            print(f"| {label} | {n:,} | {reps} | {ranks / total:.3f} | {strengths / total:.3f} | "
                  f"{width / total:.2f} |")
    print(f"\n(nominal {CONFIDENCE:.0%}; prior sd {PRIOR_SD:g}; {n_boot} posterior draws per board)")


def rigging_table(seeds: int) -> None:
    import sys
    import tempfile
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    import test_arena_rigging as sim  # the simulation the tests run, one owner

    setups = [(10, 10, 1, False), (10, 20, 2, False), (10, 10, 3, False), (10, 10, 1, True), (10, 20, 3, True),
              (40, 20, 1, True), (40, 20, 3, True), (40, 20, 3, False)]
    print("\n| minutes | honest raters | accounts | rigger | rigger votes | target shown (seeds) | honest interval's "
          "top (seeds) | shown above it | accounts' z (max) | flagged |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for minutes, honest, riggers, z_aware in setups:
        shown_all, low_all, above, zs, flagged, votes = [], [], 0, [], 0, 0
        for seed in range(seeds):
            arena, clock = sim._arena(Path(tempfile.mkdtemp()), seed)
            cast = sim.run(arena, clock, np.random.default_rng(seed + 100), minutes=minutes, honest=honest,
                           riggers=riggers, z_aware=z_aware)
            shown, low, _ = sim._target(arena)
            shown_all.append(str(shown)[:4])
            low_all.append(str(low))
            above += not sim._never_above(shown, low)
            rows = {r["rater"]: r for r in arena.integrity()}
            accounts = [rows[f"hf:rigger{k}"] for k in range(riggers) if f"hf:rigger{k}" in rows]
            zs.append(max(r["one-sided z"] for r in accounts))
            flagged += sum(r["flagged"] for r in accounts)
            votes = cast["rigger"]
        print(f"| {minutes} | {honest} | {riggers} | {'z-aware' if z_aware else 'naive'} | {votes} | "
              f"{' '.join(shown_all)} | {' '.join(low_all)} | {above} of {seeds} | {max(zs):.2f} | "
              f"{flagged} of {riggers * seeds} |")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", type=int, default=50)
    parser.add_argument("--votes", type=int, default=100_000)
    parser.add_argument("--boot", type=int, default=DEFAULT_RESAMPLES)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--serve", action="store_true")
    parser.add_argument("--page", action="store_true", help="only the in-page table (--page-* settings)")
    parser.add_argument("--page-models", type=int, default=10)
    parser.add_argument("--page-studies", type=int, default=100)
    parser.add_argument("--clicks", type=int, default=15)
    parser.add_argument("--baseline", help="another arena_tab.py to alternate with")
    parser.add_argument("--coverage", action="store_true", help="only the calibration table")
    parser.add_argument("--reps", type=int, default=300)
    parser.add_argument("--rigging", action="store_true", help="only the rigging table")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--redraw", nargs="+", metavar="REV",
                        help="only the redraw table: these git revisions' trees alternated (e.g. HEAD~1 HEAD)")
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--redraw-child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.redraw_child:
        _redraw_child(args.redraw_child)
        return
    if args.redraw:
        redraw_table(simulate(args.models, args.votes)[0], args.redraw, args.rounds)
        return
    if args.coverage:
        coverage_table(args.reps, min(args.boot, 400))
        return
    if args.rigging:
        rigging_table(args.seeds)
        return
    if args.page:
        page_table(args.page_models, args.page_studies, args.clicks, args.baseline)
        return
    votes, truth = simulate(args.models, args.votes)
    times, result = [], None
    for _ in range(args.repeats):
        start = time.process_time()
        result = fit(votes, n_boot=args.boot)
        times.append(time.process_time() - start)
    covered = float(np.mean((result.low <= truth) & (truth <= result.high)))
    corr = float(np.corrcoef(result.strength, truth)[0, 1])
    print(f"| models | votes | posterior draws | CPU s (median of {args.repeats}) | runs | corr(fit, truth) | "
          "interval coverage |")
    print("|---|---|---|---|---|---|---|")
    print(f"| {args.models} | {args.votes:,} | {args.boot:,} | {statistics.median(times):.2f} | "
          f"{', '.join(f'{t:.2f}' for t in times)} | {corr:.4f} | {covered:.2f} |")
    if args.serve:
        serve_table(votes, args.models)
    print(f"\n{platform.processor() or platform.machine()}, Python {platform.python_version()}, numpy {np.__version__}, "
          "one thread")


if __name__ == "__main__":
    main()

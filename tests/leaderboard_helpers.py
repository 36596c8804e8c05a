"""Shared pieces of the leaderboard tests: a launched Space on a free loopback port, and IU-Xray predictions."""

from __future__ import annotations

import json
import os
import socket
import time
from contextlib import contextmanager
from pathlib import Path

# The browser every page test drives: Debian's Chromium through Playwright (never `playwright install`), with the
# launch flags that work on these machines, at a laptop's and a phone's viewport.
CHROMIUM = Path("/usr/bin/chromium")
BROWSER_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync"]
DESKTOP = {"width": 1440, "height": 900}
PHONE = {"width": 390, "height": 844}


# The longest a test waits for a state of a server or a page (an answer shown, rows painted, a job done): a ceiling
# against a hung server only, never a speed target. Tests wait on the state itself; on a 2-core machine at load
# 10-19 a submission's "queued" took over a minute (issue 35 point 10), so the ceiling is ten times that.
STATE_CEILING_S = 600
STATE_CEILING_MS = STATE_CEILING_S * 1000


def wait_until(check, what: str, poll_s: float = 0.2):
    """Poll ``check()`` until it gives a true value, and return it; past STATE_CEILING_S fail naming ``what`` and the
    last value seen (a hung server, not a slow machine)."""
    deadline = time.monotonic() + STATE_CEILING_S
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"still waiting for {what} after {STATE_CEILING_S} s (last seen: {value!r}); "
                                 "the server or page never reached that state")
        time.sleep(poll_s)


class _PatientBrowser:
    """The browser, whose pages wait up to STATE_CEILING_MS wherever Playwright waits (a click on a control that
    a busy server has not drawn yet, a locator's text) instead of its 30 s default."""

    def __init__(self, browser):
        self._browser = browser

    def new_page(self, *args, **kwargs):
        page = self._browser.new_page(*args, **kwargs)
        page.set_default_timeout(STATE_CEILING_MS)
        return page

    def __getattr__(self, name):
        return getattr(self._browser, name)


# Paint first (gradio_compat.paint_first): armed before an interaction, ``_FRAME_ARM`` finds the first animation
# frame after ``event`` in which ``condition`` (a JS function's text) holds, i.e. the frame that draws it, and notes
# the time of the first task after that frame was rendered (a timer set in its animation frame callback, the first
# such callback of the frame: armed before the page's own handlers see the event); ``_SENT_SINCE`` reads that time
# and when each request to gradio's API since the event left. A request sent before that frame was rendered (while
# gradio prepares it, the frame waits) is earlier.
_FRAME_ARM = """([event, condition]) => {
  window.__frame = null; window.__event = null;
  const holds = new Function('return (' + condition + ')();');
  addEventListener(event, (e) => {
    window.__event = e.timeStamp;
    const tick = () => {
      if (holds()) setTimeout(() => { window.__frame = performance.now(); }, 0); else requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  }, {capture: true, once: true});
}"""
_SENT_SINCE = """() => [window.__frame, performance.getEntriesByType('resource')
  .filter((r) => r.name.includes('/gradio_api/') && r.startTime >= window.__event).map((r) => r.startTime)]"""


def arm_paint_first(page, event: str, condition: str) -> None:
    """Before an interaction (``event``: its DOM event, e.g. "click", "input"): note the frame that first draws
    ``condition`` (JS: ``() => bool``). Then ``painted_before_sent``."""
    page.evaluate(_FRAME_ARM, [event, condition])


def painted_before_sent(page) -> None:
    """Assert that the armed condition was drawn and that every request of the interaction left after that frame was
    rendered (a request is listed once answered: it waits for one; wait for all of them first)."""
    page.wait_for_function(f"() => ({_SENT_SINCE})()[1].length > 0", timeout=STATE_CEILING_MS)
    frame, sent = page.evaluate(_SENT_SINCE)
    assert frame is not None and sent, ("the frame and the requests", frame, sent)
    assert min(sent) > frame, ("a request left before the frame that draws the change", frame, sent)


def choose_predictions(page, path) -> None:
    """Pick ``path`` with the Submit form's file button, as a person does (the button opens the file chooser), and
    wait until the upload is in: the form names the file under the button."""
    with page.expect_file_chooser() as chooser:
        page.locator("#submit-file").click()
    chooser.value.set_files(str(path))
    page.wait_for_function("(name) => document.querySelector('#submit-chosen').innerText.includes(name)",
                           arg=Path(path).name, timeout=STATE_CEILING_MS)


def record_console(page) -> list:
    """Every console message and uncaught error of ``page`` from now on, as (type, text): issue 37 wants none."""
    seen: list = []
    page.on("console", lambda message: seen.append((message.type, message.text)))
    page.on("pageerror", lambda error: seen.append(("pageerror", str(error))))
    return seen


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LoopbackServer:
    """An ASGI app served by uvicorn on 127.0.0.1 in a thread, listening when constructed; ``stop()`` ends it (the
    board pages', the plots' and the explorer's browser tests share it)."""

    def __init__(self, app, what: str = "the server to listen") -> None:
        import threading

        import uvicorn

        self.port = free_port()
        self._server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning"))
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        try:
            wait_until(lambda: self._server.started, what)
        except BaseException:
            self.stop()
            raise
        self.base = f"http://127.0.0.1:{self.port}/"

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=30)


# The host's token on the loopback Hub (rexrank.testing.loopback_hub): never a real token.
TOKEN = "hf_loopback_host"


@contextmanager
def loopback_hub(monkeypatch):
    """(HfApi of the host's token, the loopback Hub) with the org's empty, private results and requests dataset repos,
    as a host keeps them; the suite runs offline, so offline mode is lifted for this loopback server only."""
    from huggingface_hub import HfApi, constants

    from rexrank.testing.loopback_hub import LoopbackHub

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    with LoopbackHub() as server:
        server.add_user("host", TOKEN, orgs=["org"])
        for repo_id in ("org/results", "org/requests"):
            server.add_repo(repo_id, private=True)
        yield HfApi(endpoint=server.endpoint, token=TOKEN), server


@contextmanager
def chromium():
    """A headless Chromium, closed afterwards. Missing Chromium fails the test in CI, and skips it elsewhere."""
    import pytest

    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            pytest.fail("Chromium is missing: `make test` installs it (scripts/setup_browser.sh)")
        pytest.skip("Chromium not installed (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=BROWSER_FLAGS, headless=True)
        try:
            yield _PatientBrowser(browser)
        finally:
            browser.close()


@contextmanager
def running_space(store_path: Path, *, worker: bool = True, **options):
    """Launch the Space (seeded store, BLEU-2 worker) on 127.0.0.1 and close everything afterwards."""
    from rexrank.leaderboard.app import serve

    options.setdefault("metrics", ["bleu2"])
    options.setdefault("n_resamples", 200)
    options.setdefault("poll_seconds", 0.2)
    for attempt in range(5):  # another process may take the free port between our probe and the bind
        port = free_port()
        try:
            app, store, service = serve(str(store_path), "127.0.0.1", port, worker=worker,
                                         prevent_thread_lock=True, **options)
            break
        except OSError:
            if attempt == 4:
                raise
    try:
        yield f"http://127.0.0.1:{port}/", store, service
    finally:
        if service is not None:
            service.stop_worker()
        app.close()
        store.close()


def module_space(name: str, **options):
    """A test module's own Space (``running_space`` with ``options``, on a fresh store in a folder named ``name``),
    as a module-scoped fixture: ``space = module_space("links", worker=False)``."""
    import pytest

    @pytest.fixture(scope="module")
    def space(tmp_path_factory):
        with running_space(tmp_path_factory.mktemp(name) / "board.sqlite", **options) as running:
            yield running

    return space


def iu_predictions(path: Path, n_shift: int = 1, corrupt: dict | None = None) -> Path:
    """A {study_id: report} file for the IU-Xray test split: each study gets another study's findings."""
    from rexrank.data import references

    refs = references("iu_xray", split="test", track="findings")
    ids = list(refs)
    texts = [refs[i] for i in ids]
    preds = {sid: texts[(k + n_shift) % len(texts)] for k, sid in enumerate(ids)}
    preds.update(corrupt or {})
    path.write_text(json.dumps(preds))
    return path


def add_scored_result(store, name: str, *, bleu: float, dataset: str = "iu_xray", institution: str = "QA"):
    """Store a rexrank-scored result with BLEU-2 only (mean and 95% CI) and normal/abnormal subgroups, as
    `rexrank leaderboard add` would: a row with a CI and no 1/RadCliQ-v1."""
    from rexrank.data.catalog import leaderboard_split
    from rexrank.leaderboard.records import MetricValue, ModelInfo, ResultRecord

    def group(n: int, mean: float) -> dict:
        return {"n": n, "metrics": {"bleu2": {"mean": mean, "ci_low": mean - 0.02, "ci_high": mean + 0.02}}}

    breakdown = {"definition": "CheXbert No Finding", "normal": group(300, bleu + 0.01),
                 "abnormal": group(290, bleu - 0.01)}
    extra = {"subgroups": {"normal_vs_abnormal": breakdown},
             "analyses": {"processes": 1, "cache": {"bleu2": {"hits": 0, "misses": 590}}}}
    record = ResultRecord(model=ModelInfo(name=name, institution=institution), dataset=dataset,
                          split=leaderboard_split(dataset),
                          track="findings", source="rexrank", n_studies=590, extra=extra,
                          metrics={"bleu2": MetricValue(bleu, bleu - 0.02, bleu + 0.02)})
    return store.add_result(record)


def add_kept_results(store, models: list[str], n: int = 40) -> None:
    """``models`` scored by rexrank on IU-Xray findings with their per-study BLEU-2 kept (as a submission does), so
    Compare shows paired tests: each further model 0.05 higher, the first and the last apart beyond every
    permutation."""
    import numpy as np

    for index, model in enumerate(models):
        add_scored_result(store, model, bleu=0.3 + index / 100)
        values = 0.2 + 0.05 * index + np.random.default_rng(index).normal(0, 0.05, n)
        store.keep_reports(dataset="iu_xray", split="test", track="findings", model=model, result_hash=f"h-{model}",
                           rows=[(f"s{k:03d}", f"report {k}", f"reference {k}", {"bleu2": float(v)})
                                 for k, v in enumerate(values)])


def add_published_models(store, n_models: int, *, seed: int = 0, prefix: str = "Grown") -> int:
    """Add ``n_models`` synthetic published results on every dataset and track (ranked rows: a board larger than
    the published one, for the page's weight as the board grows). Returns how many results were added. The store
    should be seeded first: seeding withdraws published rows that are not in the bundled tables."""
    import random

    from rexrank.data.catalog import leaderboard_split
    from rexrank.leaderboard.records import (
        DATASETS,
        TRACKS,
        MetricValue,
        ModelInfo,
        ResultRecord,
    )
    from rexrank.metrics import boards

    rng, added = random.Random(seed), 0
    with store.transaction() as conn:
        for m in range(n_models):
            info = ModelInfo(name=f"{prefix}-{m:05d}", institution=f"Institute {m % 17}", year=2023 + m % 3)
            for dataset in DATASETS:
                for track in TRACKS:
                    metrics = {name: MetricValue(rng.uniform(0.8, 3.0) if name == "radcliq_v1" else rng.uniform(0, 1),
                                                 None, None) for name in boards.edition().metrics(track)}
                    store.add_result(ResultRecord(model=info, dataset=dataset, split=leaderboard_split(dataset),
                                                  track=track, source="published", metrics=metrics, n_studies=590),
                                     conn)
                    added += 1
    return added

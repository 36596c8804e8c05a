"""Launch the leaderboard Space: open (pull, seed) the store, start the scoring worker, build and launch the page.

``serve`` is what `rexrank leaderboard serve` and spaces/leaderboard/app.py run (both import it from
``rexrank.leaderboard.app``); it returns a ``BoardApp``, which holds the launched gradio Blocks with what runs beside
it (the Hub sync, the Arena), so nothing is hung on gradio's own object.

gradio launches the app (the Space is a Gradio Space). The board is the HTML pages rexrank renders
(``rexrank.leaderboard.pages``), put in front of gradio's routes (``pages.routes.PagesFirst``, a middleware gradio
takes through ``launch(app_kwargs=...)``): they answer the root URL ``/`` (every view, in the links' query language,
so a link of the gradio board the Space had before opens the same view) and their files beside it (``/live``,
``/version``, ``/static/board.css``, ``/csv/...``, ``/json/...``). gradio serves everything else at the root, as
before: the Submit form at ``/submit``, the Arena at ``/arena`` (``wiring``; ``/?tab=submit`` and ``/?tab=arena``
are redirected there), Hugging Face login (``/login/...``, where a Space's OAuth expects it) and the API that
gradio_client reads (``/config``, ``/gradio_api/...``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rexrank.leaderboard import links
from rexrank.leaderboard.assets import CSS, HEAD, theme
from rexrank.leaderboard.pages.routes import PagesFirst, board_app
from rexrank.leaderboard.store import Store
from rexrank.leaderboard.views import Views
from rexrank.leaderboard.wiring import PAGES, build_app, oauth_configured


@dataclass
class BoardApp:
    """The launched board: ``demo`` (the gradio Blocks), the ``views`` its API and the board's pages read, the Hub
    ``sync`` (None without a results repo) and the ``arena`` (None when off)."""

    demo: Any
    views: Views
    sync: Any = None
    arena: Any = None

    def block_thread(self) -> None:
        """Serve until interrupted (gradio's own wait)."""
        self.demo.block_thread()

    def close(self) -> None:
        """Stop the Hub sync (its last push finished or abandoned after its timeout) and the server."""
        if self.sync is not None:
            self.sync.stop()
        self.demo.close()


def serve(store_path: str, host: str = "127.0.0.1", port: int = 7860, *, seed: bool = True, worker: bool = True,
          submissions_dir: str | None = None, prevent_thread_lock: bool = False, oauth: bool | None = None,
          upload_ttl: int = 3600, results_repo: str | None = None, requests_repo: str | None = None,
          hub_token: str | None = None, hub_api: Any = None, arena: bool = False, arena_images: str | None = None,
          arena_experts_only: bool = False, arena_rater: str | None = None, trusted_proxies: int | None = None,
          edition: str | None = None,
          **submission_options: Any):
    """Open the store (pulled from the Hub and seeded as ``published.seed_store`` says), start the scoring worker,
    launch the Space; returns (``BoardApp``, store, service).

    ``oauth``: Hugging Face login (None: on when the Space card sets ``hf_oauth``). ``trusted_proxies``: how many
    proxies in front append to X-Forwarded-For (who an anonymous submission comes from: ``clients``; None: the
    ``REXRANK_TRUSTED_PROXIES`` environment variable, else 1 in a Space and 0 elsewhere). ``submission_options`` go to
    ``Submissions`` (``max_bytes``: the largest predictions file, also gradio's upload limit; quotas; ``metrics``,
    default every leaderboard metric this host has official weights for ...). ``results_repo``/``requests_repo``:
    Hub dataset repos the store is pulled from now and pushed to after every write (``hub_sync``; token
    ``hub_token``, else HF_TOKEN); the sync is the app's ``sync``.

    ``edition``: the board edition the store shows from now on (``editions.choose_edition``; None: the one it
    has, else the default).

    ``arena``: add the radiologist Arena page (``/arena``, docs/arena.md; off by default). ``arena_images``: a folder of the public set's images shown with each study, or a Hub dataset
    of them, ``hub:ORG/NAME[@REVISION]`` (fetched into the Hugging Face cache: ``arena.image_source``); gradio may
    serve files from that folder and nothing else of the disk; ``arena_experts_only``: only raters on the host's allow-list vote;
    ``arena_rater``: who votes on a server without login (a host trying it out; with ``oauth`` the signed-in user).
    The Arena's vote log is read once before the page opens. The Arena is the app's ``arena`` (None when off).

    Errors: launched with ``show_error=True`` so that gradio's own refusals reach an API caller as a message (a
    /submit naming a file nobody uploaded: "... was not uploaded by a user"), not as ``{"error": null}``; the
    board's own errors are gr.Error messages written for the caller, and an unexpected exception in any callback is
    logged here and answered with one generic line (``gradio_compat.guarded``), never its text.
    """
    from rexrank.errors import ConfigError
    from rexrank.leaderboard.editions import choose_edition
    from rexrank.leaderboard.published import seed_store
    from rexrank.metrics.boards import edition as board_edition
    from rexrank.leaderboard.limits import DEFAULT_MAX_UPLOAD_MB, upload_bytes

    if requests_repo and not results_repo:
        raise ConfigError("a requests repo needs a results repo too (REXRANK_RESULTS_REPO / results_repo): "
                          "finished submissions are results")
    if not arena and (arena_images or arena_experts_only or arena_rater):
        raise ConfigError("the Arena's settings (images, experts only, rater) need the Arena on: add --arena "
                          "(REXRANK_ARENA=1)")
    if edition is not None:
        board_edition(edition)  # an unknown name: one error before the store opens
    store = Store(store_path)
    sync = None
    if results_repo:
        from rexrank.leaderboard.hub_sync import HubSync

        sync = HubSync(store, results_repo, requests_repo=requests_repo, token=hub_token, api=hub_api)
        sync.pull_with_retries()  # before anything writes: the repos hold the board
    seed_store(store, seed=seed, edition=choose_edition(store, edition))
    if sync is not None:
        sync.start()
    service = None
    try:
        from rexrank.leaderboard.submissions import Submissions

        service = Submissions(store, Path(submissions_dir or Path(store_path).with_suffix(".uploads")),
                              **submission_options)
        if worker:
            service.start_worker()
    except ImportError:  # the harness is optional for a read-only board
        service = None
    views = Views(store, service)
    board_arena = None
    allowed_paths = []
    if arena:
        import rexrank
        from rexrank.leaderboard.arena import Arena, image_source

        images = None
        if arena_images:  # a folder, or hub:ORG/NAME[@REVISION]; a missing one is a one-line error
            images, folder = image_source(arena_images)
            allowed_paths.append(str(folder))
        board_arena = Arena(store, app_version=rexrank.__version__, experts_only=arena_experts_only, images=images)
        board_arena.votes()  # read the vote log once, before the page opens
    demo = build_app(store, service, oauth=oauth_configured() if oauth is None else oauth, upload_ttl=upload_ttl,
                     views=views, arena=board_arena, arena_rater=arena_rater, trusted_proxies=trusted_proxies)
    demo.queue(default_concurrency_limit=8)
    # Gradio refuses a larger upload while it streams in (HTTP 413) and deletes what it had written of it.
    max_bytes = service.max_bytes if service is not None else upload_bytes(DEFAULT_MAX_UPLOAD_MB)
    # Uploads never submitted are capped per client and in total (``uploads.UploadCap``; limits.py owns the caps).
    from starlette.middleware import Middleware

    from rexrank.leaderboard.clients import trusted_proxies as proxies_of
    from rexrank.leaderboard.uploads import UploadCap

    # The board's pages in front of gradio's routes (see the module docstring); the gradio pages a link may name.
    served = {links.SUBMIT_TAB: service is not None, links.ARENA_TAB: board_arena is not None}
    gradio_pages = {tab: f"/{path}" for tab, path in PAGES.items() if served[tab]}
    middleware = [Middleware(PagesFirst, pages=board_app(views), elsewhere=gradio_pages, gradio_tabs=tuple(PAGES)),
                  Middleware(UploadCap, proxies=proxies_of(trusted_proxies))]
    demo.launch(server_name=host, server_port=port, prevent_thread_lock=True, show_error=True,
                quiet=True, max_file_size=int(max_bytes), css=CSS, head=HEAD, theme=theme(),
                allowed_paths=allowed_paths or None, app_kwargs={"middleware": middleware})
    app = BoardApp(demo, views, sync, board_arena)
    if not prevent_thread_lock:
        app.block_thread()
    return app, store, service

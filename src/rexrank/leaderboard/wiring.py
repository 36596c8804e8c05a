"""What gradio serves in the Space (``build_app``): the Submit form and the Arena, each a page of its own, Hugging
Face login, and the JSON API that gradio_client users call.

The board itself is not here: it is HTML pages rexrank renders (``rexrank.leaderboard.pages``), which answer the
Space's root URL in front of gradio (``serve``). gradio keeps what needs it:

- ``/submit`` (``Blocks.route``): the form, its status, the queue and the login button; a file dropped anywhere on
  the page is taken as the predictions file (``DROP_HEAD``), never opened by the browser in place of the page;
- ``/arena`` (when the host has it on): the Arena tab (``arena_tab``), opened with the page;
- the API: ``/leaderboard``, ``/overview``, ``/table``, ``/results``, ``/model``, ``/compare``, ``/submit``,
  ``/queue`` (``gr.api``), answering as they did when the board was gradio's; every other event is private
  (``api_visibility="private"``). The functions gr.api types are defined here with real annotations (no
  ``from __future__ import annotations`` in this module): gradio reads them.

gradio's navigation bar (``gr.Navbar``) names the pages: Board (the root, the pages'), Submit and Arena.
"""

import os
import time
from pathlib import Path
from typing import Optional

from rexrank.data.tracks import DEFAULT_TRACK
from rexrank.errors import InputError, RexrankError
from rexrank.leaderboard import clients, compare_view, links
from rexrank.leaderboard.gradio_compat import guarded
from rexrank.leaderboard.records import DATASET_LABELS, DATASETS, TRACK_LABELS, TRACKS
from rexrank.leaderboard.store import Store
from rexrank.leaderboard.submissions import ALLOWED_SUFFIXES
from rexrank.leaderboard.uploads import ReceivedUploads, upload_root
from rexrank.leaderboard.views import (NO_FILE_CHOSEN, PRIMARY, SERVER_PATH_TEXT, TITLE, TRAINED_CHOICES, Views,
                                       chosen_file, form_message)

FRESH_SECONDS = 5  # how often an open Arena page redraws its board when the votes changed
QUEUE_SECONDS = 3  # the queue's own poll while a submission waits or is scored
# The gradio pages' paths (``Blocks.route``), by the tab a board link names: ``/?tab=submit`` goes there.
PAGES = {links.SUBMIT_TAB: "submit", links.ARENA_TAB: "arena"}
_PRIVATE = {"api_visibility": "private", "queue": False, "show_progress": "hidden"}
# A file dragged over the Submit page is taken wherever it is dropped (issue 48 point 2): into the form's file
# button's own input (a change event, as when the file is chosen in the dialog), so gradio uploads it; the browser
# never opens it in place of the page. While a file is over the page the form is outlined (``submit-dropping``).
# Only a drag that carries files, and only on a page with the form (#submit-file-box): the Arena page is left alone.
DROP_HEAD = """<script>
(() => {
  const input = () => document.querySelector("#submit-file-box input[type=file]");
  const files = (event) => event.dataTransfer && [...event.dataTransfer.types].includes("Files");
  const mark = (on) => document.getElementById("submit-form")?.classList.toggle("submit-dropping", on);
  addEventListener("dragover", (event) => {
    if (!files(event) || !input()) return;
    event.preventDefault();
    event.dataTransfer.dropEffect = "copy";
    mark(true);
  }, true);
  addEventListener("dragleave", (event) => { if (!event.relatedTarget) mark(false); }, true);
  addEventListener("drop", (event) => {
    const target = input();
    if (!files(event) || !target) return;
    event.preventDefault();
    event.stopPropagation();
    mark(false);
    const [file] = event.dataTransfer.files;
    if (!file) return;
    const chosen = new DataTransfer();
    chosen.items.add(file);
    target.files = chosen.files;
    target.dispatchEvent(new Event("change", {bubbles: true}));
  }, true);
})();
</script>"""
DROP_CSS = "#submit-form.submit-dropping { outline: 3px dashed var(--color-accent); outline-offset: 4px; }\n"


def check(dataset: str, track: str) -> tuple[str, str]:
    """The canonical (dataset, track) of what an API caller typed: any alias the catalog knows ("gradienthealth",
    "MIMIC-CXR", "chexpert", "Findings") resolves; an unknown name is a gr.Error listing the choices."""
    import gradio as gr

    from rexrank.data import catalog
    from rexrank.errors import UnknownNameError

    try:
        canonical_dataset = catalog.canonical_dataset(dataset)
    except UnknownNameError:
        canonical_dataset = None
    if canonical_dataset not in DATASETS:  # gr.Error reaches the client as a message, never a traceback
        raise gr.Error(f"Unknown dataset {str(dataset)[:40]!r}. Available: {', '.join(DATASETS)} "
                       "(or any of their aliases)")
    return canonical_dataset, check_track(track)


def check_track(track: str) -> str:
    """The canonical track of what an API caller typed; an unknown name is a gr.Error listing the choices."""
    import gradio as gr

    from rexrank.data import tracks
    from rexrank.errors import UnknownNameError

    try:
        canonical_track = tracks.canonical_track(track)
    except UnknownNameError:
        canonical_track = None
    if canonical_track not in TRACKS:
        raise gr.Error(f"Unknown track {str(track)[:40]!r}. Available: {', '.join(TRACKS)}")
    return canonical_track


def oauth_configured() -> bool:
    """Hugging Face login is available: running in a Space whose card sets ``hf_oauth`` (which sets these)."""
    from gradio.utils import get_space

    return get_space() is not None and bool(os.environ.get("OAUTH_CLIENT_ID"))


def build_app(store: Store, submissions=None, *, oauth: bool = False, upload_ttl: int = 3600,
              views: Optional[Views] = None, arena=None, arena_rater: Optional[str] = None,
              trusted_proxies: Optional[int] = None):
    """The gradio Blocks of the Space. ``submissions``: a ``Submissions`` service (None: no Submit page).

    ``oauth``: the Space has Hugging Face login (``hf_oauth`` in its card): the Submit page gets a login button and
    submissions carry the user's identity. ``upload_ttl``: uploads never submitted (and gradio's own temporary files)
    are deleted by gradio's ``delete_cache`` after this many seconds; a handled upload leaves gradio's folder at
    once, its kept copy (``uploads.ReceivedUploads``) the service's folder after this many seconds.
    ``trusted_proxies``: how many proxies in front of the server append to X-Forwarded-For, which tells who an
    anonymous submission comes from (None: ``clients.trusted_proxies``'s default: the environment, else 1 in a Space,
    0 elsewhere). ``views``: the API's ``Views`` (``serve`` passes the one its pages read too). ``arena``: an
    ``Arena`` (the host's opt-in; None: no Arena page); ``arena_rater``: who votes there on a server without login
    (``arena_tab``).

    The root page of these Blocks holds no component: the board's pages answer ``/`` in front of gradio (``serve``).
    """
    import gradio as gr

    views = views or Views(store, submissions)
    with gr.Blocks(title=TITLE, delete_cache=(upload_ttl, upload_ttl), fill_width=True) as demo:
        _navbar(gr)
        _api_endpoints(gr, views)
    if submissions is not None:
        with demo.route("Submit", PAGES[links.SUBMIT_TAB]):
            _navbar(gr)
            _submit_page(gr, demo, views, submissions, oauth=oauth, upload_ttl=upload_ttl,
                         proxies=clients.trusted_proxies(trusted_proxies))
    if arena is not None:
        from rexrank.leaderboard.arena_tab import arena_tab

        with demo.route("Arena", PAGES[links.ARENA_TAB]):
            _navbar(gr)
            with gr.Tabs():
                arena_tab(gr, arena, oauth=oauth, rater=arena_rater, refresh_s=FRESH_SECONDS)
            # The Arena's first pair and board come with its tab's select, which a page opened on the tab never
            # fires (gradio fires it on a click of another tab only): the page asks for them as "Next pair" and
            # "Refresh" do, once it has loaded.
            demo.load(None, None, None, js="() => { for (const id of ['arena-next', 'arena-refresh']) "
                                           "document.getElementById(id)?.click(); }", **_PRIVATE)
    return demo


def _navbar(gr) -> None:
    """gradio's navigation bar of a page: the board (the root URL, the pages') and the gradio pages."""
    gr.Navbar(main_page_name="Board")


def _api_endpoints(gr, views: Views) -> None:
    """API-only endpoints: the whole board, aggregates as JSON, the filtered table of any dataset/track, the
    overview, a model and a comparison.

    Read-only and fast: no concurrency cap (the store gives each worker thread its own connection). gradio builds
    each endpoint's API description from the function's signature, type hints and docstring, hence plain functions.
    """
    payload = _frame_payload(gr)

    def leaderboard_api() -> dict:
        """The whole board: every dataset and track, each model's shown values and CIs, ranked by 1/RadCliQ-v1,
        and when the board last changed (epoch seconds)."""
        return views.leaderboard()

    def results_api(dataset: str, track: str) -> str:
        """JSON aggregates (means, CIs) of every model on one dataset and track (aliases accepted)."""
        dataset, track = check(dataset, track)
        return views.results_json(dataset, track)

    def table_api(dataset: str, track: str, search: str = "", institutions: Optional[list[str]] = None,
                  years: Optional[list[int]] = None, model_types: Optional[list[str]] = None, trained: str = "all",
                  sources: Optional[list[str]] = None, columns: Optional[list[str]] = None,
                  sort_by: str = PRIMARY) -> dict:
        """The dataset/track table as shown on the page, filtered and sorted: {headers, data} (aliases accepted)."""
        dataset, track = check(dataset, track)
        search = "" if search is None else search
        if not isinstance(search, str):
            raise gr.Error(f"search must be text (got {type(search).__name__}): send \"\" for no search")
        choices = {"institutions": (institutions, str), "years": (years, int), "model_types": (model_types, str),
                   "sources": (sources, str), "columns": (columns, str)}
        for name, (value, kind) in choices.items():
            # gr.api passes any JSON through unchecked: a wrong type would fail inside the view.
            if value is not None and (not isinstance(value, list) or not all(
                    isinstance(v, kind) and not isinstance(v, bool) for v in value)):
                raise gr.Error(f"{name} must be a list of {'whole numbers' if kind is int else 'text'} or null "
                               f"(got {str(value)[:40]!r})")
        trained_values = [value for _, value in TRAINED_CHOICES]
        if trained not in trained_values:
            raise gr.Error(f"trained must be one of {', '.join(trained_values)} (got {str(trained)[:40]!r})")
        if not isinstance(sort_by, str):
            raise gr.Error(f"sort_by must be a metric name (got {str(sort_by)[:40]!r})")
        df = views.table_view(dataset, track, search, institutions, years, model_types, trained, sources, columns,
                              sort_by)
        return {"headers": list(df.columns), "data": df.to_numpy().tolist()}

    def overview_api(track: str) -> dict:
        """The overview table of one track ({headers, data}): rank by mean rank over the datasets."""
        return payload(views.overview_view(check_track(track)))

    def model_api(model: str) -> tuple[dict, str]:
        """One model's results on every dataset and track ({headers, data}) and its details and subgroup results
        (Markdown)."""
        table, text = views.model_view(model)
        return payload(table), text

    def compare_api(models: str) -> dict:
        """2-4 models (comma-separated names) on every board: values with CIs, ranks, and the paired tests and rank
        intervals where per-study values are kept; {"error": one line} for a bad selection."""
        return compare_view.compare(views, models if isinstance(models, (str, list)) else "")

    gr.api(guarded(leaderboard_api), api_name="leaderboard", concurrency_limit=None)
    gr.api(guarded(results_api), api_name="results", concurrency_limit=None)
    gr.api(guarded(table_api), api_name="table", concurrency_limit=None)
    gr.api(guarded(overview_api), api_name="overview", queue=False)
    gr.api(guarded(model_api), api_name="model", concurrency_limit=None)
    gr.api(guarded(compare_api), api_name="compare", concurrency_limit=None)


def _frame_payload(gr):
    """The JSON a gr.Dataframe output sends ({headers, data, metadata}): what the API endpoints that return a table
    answer (``gr.api``; no component on a page)."""
    frame = gr.Dataframe(render=False)
    return lambda df: frame.postprocess(df).model_dump()


def _submit_page(gr, demo, views: Views, submissions, *, oauth: bool = False, upload_ttl: float = 3600,
                 proxies: int = 0) -> None:
    """The Submit page: its text (and login button), the form, its status and the queue; /submit and /queue are
    API endpoints of their own.

    Each request is handled from its own copy of its upload (``ReceivedUploads.take``): gradio stores identical
    uploads as one file, which several requests may name at once. An anonymous request counts against its client's
    quota (``clients.request_client`` behind ``proxies`` trusted proxies)."""
    from gradio.data_classes import FileData

    received = ReceivedUploads(Path(submissions.upload_dir) / "received", ttl=upload_ttl)

    def send(file, name, institution, url, year, model_type, trained_on, dataset, track, profile, request):
        """(the refusal or None, job id or None, note): the submission handled, its upload deleted. The form words
        the answer as Markdown, the API as plain text."""
        # profile: gradio injects the logged-in user's gr.OAuthProfile (None when logged out or without OAuth);
        # request: the gr.Request (who an anonymous submission comes from).
        user = getattr(profile, "username", None) if oauth else None
        client = None if user else clients.request_client(request, proxies)
        if isinstance(file, dict):  # the API's FileData, as sent (gr.api does not preprocess)
            file = file.get("path")
        path = file if isinstance(file, str) or file is None else getattr(file, "path", None) or getattr(
            file, "name", None)
        if path is not None and upload_root() not in Path(path).resolve().parents:
            # Hostile input: the API takes any string, and a server-side path would make the host read its own file
            # (a private reference set, say). Only what a user uploaded through gradio may be submitted.
            return InputError(SERVER_PATH_TEXT), None, None
        own = None
        try:
            own = received.take(path) if path is not None else None  # gradio's file is gone from here on
            job_id, note = submissions.submit_with_note(
                own, {"name": name, "institution": institution, "url": url, "year": year or None,
                      "model_type": model_type, "trained_on": trained_on or []}, dataset, track, user=user,
                client=client)
        except RexrankError as exc:
            return exc, None, None
        finally:
            received.release(own)  # accepted (copied into the queue) or rejected: this request's copy is gone
        return None, job_id, note

    payload = _frame_payload(gr)

    def submit(file: Optional[FileData], name: str, institution: str, url: str, year: Optional[int | str],
               model_type: str, trained_on: Optional[list[str]], dataset: str, track: str,
               profile: Optional[gr.OAuthProfile] = None, request: Optional[gr.Request] = None) -> tuple[str, dict]:
        """Submit a predictions file ({study_id: report} .json, .jsonl or .csv) for one test set and track: the
        status message (plain text) and the queue ({headers, data})."""
        refused, job_id, note = send(file, name, institution, url, year, model_type, trained_on, dataset, track,
                                     profile, request)
        message = form_message(refused, plain=True) if refused else views.submit_status(job_id, note, plain=True)
        return message, payload(views.queue_view())

    def queue_api() -> dict:
        """The latest submissions and their status ({headers, data})."""
        return payload(views.queue_view())

    # HTML, not Markdown: gradio's Markdown opens every link in a new tab.
    gr.HTML('<a href="/">← Back to the board</a>', elem_id="submit-back", padding=False)
    gr.Markdown(submissions.instructions(), elem_id="submit-text")
    if oauth:
        with gr.Row():
            gr.LoginButton(elem_id="login-button")
            gr.Markdown(f"Logged in, you own the model names you register and have your own quota ("
                        f"{submissions.private_quota}/day per private test set, {submissions.rate_limit}/day on "
                        "the public ones; rejected submissions count). Anonymous submissions may only register "
                        "new names.")
    else:
        gr.Markdown("This server runs without Hugging Face login (the hosted Space has it: `hf_oauth` in its "
                    "card): submissions are anonymous and may only register new model names (never submit "
                    "under an existing one); private test sets need a login.")
    _submit_form(gr, demo, views, submissions, send)
    gr.api(guarded(submit), api_name="submit")
    gr.api(guarded(queue_api), api_name="queue")


def _submit_form(gr, demo, views: Views, submissions, send) -> None:
    """The Submit page's form, status and queue (``_submit_page``); the queue is read again when the page loads."""
    job = gr.State(None)  # (job id, note) of this page's last accepted submission: its status follows the queue
    with gr.Row(elem_id="submit-form"):
        with gr.Column(elem_id="submit-file-box"):  # the button and its hidden file input (gradio's), nothing else
            # A button, not gr.File: gr.File's upload progress display opens an event stream whose close prints
            # gradio 6.31's "Method not implemented." twice per file (issue 37 point 7: the console clean). A file
            # dropped on the page goes to its input too (``DROP_HEAD``).
            sub_file = gr.UploadButton(f"Choose the predictions file ({', '.join(ALLOWED_SUFFIXES)}) or drop it "
                                       "here", type="filepath", file_types=list(ALLOWED_SUFFIXES),
                                       elem_id="submit-file", variant="secondary")
            sub_chosen = gr.Markdown(NO_FILE_CHOSEN, elem_id="submit-chosen", elem_classes=["board-live"])
        with gr.Column():
            sub_name = gr.Textbox(label="Model name", elem_id="submit-name", interactive=True)
            sub_inst = gr.Textbox(label="Institution", elem_id="submit-institution", interactive=True)
            sub_url = gr.Textbox(label="Model URL", placeholder="https://...", elem_id="submit-url", interactive=True)
            this_year = time.gmtime().tm_year
            sub_year = gr.Dropdown(list(range(this_year, 2014, -1)), value=None, label="Year (optional)",
                                   allow_custom_value=True, elem_id="submit-year", interactive=True)
            sub_type = gr.Textbox(label="Model type (e.g. VLM, encoder-decoder)", elem_id="submit-type",
                                  interactive=True)
            sub_trained = gr.CheckboxGroup([(DATASET_LABELS[d], d) for d in DATASETS], label="Trained on",
                                           elem_id="submit-trained", interactive=True)
        with gr.Column():
            sub_dataset = gr.Dropdown([(DATASET_LABELS[d], d) for d in submissions.public_datasets()],
                                      value=submissions.public_datasets()[0], label="Test set", interactive=True)
            sub_track = gr.Radio([(TRACK_LABELS[t], t) for t in TRACKS], value=DEFAULT_TRACK, label="Track",
                                 interactive=True)
            sub_button = gr.Button("Submit", variant="primary", elem_id="submit-button")
            # Under the button, where the eye is after a click (issue 37 point 3), and a live region for screen
            # readers (gradio_compat.LIVE_REGION_HEAD gives ``board-live`` elements role=status).
            sub_status = gr.Markdown("", elem_id="submit-status", elem_classes=["board-live"])
    queue_note = gr.Markdown(views.queue_note(), elem_id="queue-note")
    queue_table = gr.Dataframe(value=views.queue_view(), interactive=False, elem_id="queue-table", wrap=True,
                               label="Submission queue", show_label=True)
    refresh = gr.Button("Refresh queue", size="sm")
    # Polls the queue only while a job is waiting or running (checked when the page loads, after a submission and
    # on each tick): an idle board sends no requests.
    timer = gr.Timer(QUEUE_SECONDS, active=False)
    form = [sub_file, sub_name, sub_inst, sub_url, sub_year, sub_type, sub_trained]

    def submit_form(file, name, institution, url, year, model_type, trained_on, dataset, track,
                    profile: Optional[gr.OAuthProfile] = None, request: Optional[gr.Request] = None):
        refused, job_id, note = send(file, name, institution, url, year, model_type, trained_on, dataset, track,
                                     profile, request)
        message = form_message(refused) if refused else views.submit_status(job_id, note)
        accepted = job_id is not None
        # The upload was used (and deleted) either way: its field is cleared; an accepted entry clears the form.
        cleared = [None, "", "", "", None, "", []] if accepted else [None] + [gr.skip()] * (len(form) - 1)
        return [message, views.queue_note(), views.queue_view(), (job_id, note) if accepted else None,
                *cleared, NO_FILE_CHOSEN, gr.Timer(active=views.queue_pending())]

    def poll(last):
        status = views.submit_status(*last) if last else gr.skip()
        return status, views.queue_note(), views.queue_view(), gr.Timer(active=views.queue_pending())

    sub_button.click(guarded(submit_form), [*form, sub_dataset, sub_track],
                     [sub_status, queue_note, queue_table, job, *form, sub_chosen, timer], api_visibility="private",
                     queue=False)
    # The file's name under its button once the upload is in (the button itself does not show it).
    sub_file.upload(guarded(chosen_file), sub_file, sub_chosen, **_PRIVATE)
    # Unqueued (a queued event leaves gradio 6.31's client warning "Method not implemented." in the console, issue
    # 37): the service bounds how many files it reads at once (``limits.SUBMISSIONS_AT_ONCE``), not the queue.
    outputs = [sub_status, queue_note, queue_table, timer]
    for trigger in (demo.load, refresh.click, timer.tick):  # the queue as it is when the page opens, and after
        trigger(guarded(poll), job, outputs, **_PRIVATE)


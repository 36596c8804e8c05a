"""The ReXrank leaderboard Space (Gradio 6, native components).

``build_app(store)`` returns the Blocks; ``serve`` launches it. Every view reads the store through
``rexrank.leaderboard.board``; submissions go through ``rexrank.leaderboard.submissions``. User-supplied
text reaches the page only inside Dataframe cells and Markdown that we escape, never as raw HTML.
"""

from __future__ import annotations

import html
import json
import os
from pathlib import Path
from typing import Any, Optional

import pandas as pd

from rexrank.errors import RexrankError
from rexrank.leaderboard import about, board, plots
from rexrank.leaderboard.records import DATASET_LABELS, DATASETS, TRACK_LABELS, TRACKS
from rexrank.leaderboard.store import Store
from rexrank.metrics import LEADERBOARD_METRICS

TITLE = "ReXrank leaderboard"
METRIC_CHOICES = [(board.column_label(m), m) for m in LEADERBOARD_METRICS]


def _check(dataset: str, track: str) -> tuple[str, str]:
    """The canonical (dataset, track) of what an API caller typed: any alias the catalog knows ("gradienthealth",
    "MIMIC-CXR", "chexpert", "Findings") resolves; an unknown name is a gr.Error listing the choices."""
    import gradio as gr

    from rexrank.data import catalog, tracks
    from rexrank.errors import UnknownNameError

    try:
        canonical_dataset = catalog.canonical_dataset(dataset)
    except UnknownNameError:
        canonical_dataset = None
    if canonical_dataset not in DATASETS:  # gr.Error reaches the client as a message, never a traceback
        raise gr.Error(f"Unknown dataset {str(dataset)[:40]!r}. Available: {', '.join(DATASETS)} "
                       "(or any of their aliases)")
    try:
        canonical_track = tracks.canonical_track(track)
    except UnknownNameError:
        canonical_track = None
    if canonical_track not in TRACKS:
        raise gr.Error(f"Unknown track {str(track)[:40]!r}. Available: {', '.join(TRACKS)}")
    return canonical_dataset, canonical_track


def _escape_md(text: str) -> str:
    return html.escape(str(text)).replace("|", "&#124;").replace("\n", " ")


def build_app(store: Store, submissions=None, *, oauth: bool = False, upload_ttl: int = 3600):
    """Build the Space. ``submissions``: a ``Submissions`` service (None hides the Submit tab).

    ``oauth``: the Space has Hugging Face login (``hf_oauth`` in its card): the Submit tab gets a login button and
    submissions carry the user's identity. ``upload_ttl``: uploads never submitted are deleted after this many
    seconds (handled ones are deleted at once). One function per tab builds its components and wires its events;
    the views they call read the store through ``board`` (see ``_Views``).
    """
    import gradio as gr

    views = _Views(store, submissions)
    delete_cache = (upload_ttl, upload_ttl) if submissions is not None else None
    with gr.Blocks(title=TITLE, delete_cache=delete_cache) as demo:
        gr.Markdown(f"# {TITLE}\nAI-written chest X-ray reports ranked by the eight ReXrank metrics, with 95% "
                    "confidence intervals for results scored by rexrank.")
        _overview_tab(gr, views)
        _dataset_tabs(gr, views)
        _models_tab(gr, demo, views)
        if submissions is not None:
            _submit_tab(gr, demo, views, submissions, oauth=oauth)
        _about_tab(gr)
        _api_endpoints(gr, views)
    return demo


class _Views:
    """What the page and the API show, computed from the store (and the submission queue) on each call."""

    def __init__(self, store: Store, submissions=None):
        self.store = store
        self.submissions = submissions
        self._json_cache: dict[tuple, str] = {}

    # Methods end in "_view": gradio names an event's endpoint after its function, and a bare "table" or "queue"
    # would take the public API names /table and /queue (which would then become /table_64...).

    def table_view(self, dataset: str, track: str, search: str = "", institutions=None, years=None,
                   model_types=None, trained: str = "all", sources=None, columns=None,
                   sort_by: str = "radcliq_v1") -> pd.DataFrame:
        df = board.numeric_table(self.store, dataset, track)
        df = board.filter_table(df, search=search or "", institutions=institutions or None, years=years or None,
                                model_types=model_types or None, trained=trained or "all", sources=sources or None)
        shown = [m for m in LEADERBOARD_METRICS if not columns or m in columns]
        return board.display_table(df, shown, sort_by=sort_by or "radcliq_v1")

    def results_json(self, dataset: str, track: str) -> str:
        """Aggregates only (means and CIs), never per-study data. A private test set's values come from
        ``board.numeric_table``, which discloses them (3 decimals: the JSON shows no more digits than that).

        The serialised text is cached per store version: under load the API's cost is mostly this JSON.
        """
        key = (self.store.version(), dataset, track)
        if key not in self._json_cache:
            df = board.numeric_table(self.store, dataset, track)
            records = [] if df.empty else json.loads(df.drop(columns=["url", "note"]).to_json(orient="records"))
            if len(self._json_cache) > 64:
                self._json_cache.clear()
            self._json_cache[key] = json.dumps({"dataset": dataset, "track": track, "results": records})
        return self._json_cache[key]

    def overview_view(self, track: str = "findings") -> pd.DataFrame:
        return board.overview(self.store, track)

    def model_view(self, model: str) -> tuple[pd.DataFrame, str]:
        if not model:
            return pd.DataFrame(), ""
        return board.model_page(self.store, model), _analyses_markdown(board.model_analyses(self.store, model))

    def bars_view(self, dataset: str, track: str, metric: str):
        df = board.numeric_table(self.store, dataset, track)
        return plots.metric_bars(df, metric, board.column_label(metric))

    def agreement_view(self, dataset: str, track: str):
        return plots.agreement_heatmap(board.metric_agreement(self.store, dataset, track),
                                       f"Kendall tau between metric rankings, {DATASET_LABELS[dataset]}")

    def ranks_view(self, track: str):
        return plots.rank_lines(board.ranks_across_datasets(self.store, track), "Rank by 1/RadCliQ-v1 across datasets")

    def models_list(self) -> list[str]:
        return [m["name"] for m in self.store.models()]

    def queue_view(self) -> pd.DataFrame:
        rows = []
        for job in (self.submissions.queue() if self.submissions else []):
            rows.append({"#": job["id"], "Model": job["model"].get("name"), "Dataset": job["dataset"],
                         "Track": job["track"], "Status": job["status"], "Error": job.get("error") or ""})
        return pd.DataFrame(rows, columns=["#", "Model", "Dataset", "Track", "Status", "Error"])


def _analyses_markdown(analyses: list[dict[str, Any]]) -> str:
    """The subgroup analyses ``board.model_analyses`` returns, one JSON block per dataset and track."""
    blocks = [f"**{DATASET_LABELS.get(a['dataset'], a['dataset'])} / {a['track']}**\n\n```json\n"
              f"{json.dumps({k: v for k, v in a.items() if k not in ('dataset', 'track')}, indent=1)}\n```"
              for a in analyses]
    return "\n\n".join(blocks) or "No subgroup analyses stored for this model (published rows have none)."


def _overview_tab(gr, views: _Views) -> None:
    with gr.Tab("Overview"):
        ov_track = gr.Radio([(TRACK_LABELS[t], t) for t in TRACKS], value="findings", label="Track")
        # Callable values are recomputed on every page load, so new results show without a restart.
        ov_table = gr.Dataframe(value=lambda: views.overview_view("findings"), interactive=False,
                                elem_id="overview-table")
        ov_plot = gr.Plot(value=lambda: views.ranks_view("findings"))
        ov_track.change(views.overview_view, ov_track, ov_table, api_name="overview",
                        concurrency_limit=None)
        ov_track.change(views.ranks_view, ov_track, ov_plot, api_visibility="private")


def _dataset_tabs(gr, views: _Views) -> None:
    """One tab per dataset, one sub-tab per track: the filterable table and its plots."""
    for dataset in DATASETS:
        with gr.Tab(DATASET_LABELS[dataset]):
            for track in TRACKS:
                with gr.Tab(TRACK_LABELS[track]):
                    _dataset_tab(gr, dataset, track, views)


def _dataset_tab(gr, dataset: str, track: str, views: _Views) -> None:
    # Filter choices come from the rows present when the page is built.
    df = board.numeric_table(views.store, dataset, track)
    institutions = sorted(x for x in df.get("institution", pd.Series(dtype=str)).unique() if x)
    years = sorted({int(y) for y in df.get("year", pd.Series(dtype=float)).dropna()})
    types = sorted(x for x in df.get("model_type", pd.Series(dtype=str)).unique() if x)
    key = f"{dataset}-{track}"
    with gr.Row():
        search = gr.Textbox(label="Search model or institution", elem_id=f"search-{key}")
        inst = gr.Dropdown(institutions, multiselect=True, label="Institution", allow_custom_value=True)
        year = gr.Dropdown(years, multiselect=True, label="Year", allow_custom_value=True)
        mtype = gr.Dropdown(types, multiselect=True, label="Model type", allow_custom_value=True)
    with gr.Row():
        trained = gr.Radio([("All models", "all"), ("Exclude models trained on this set", "exclude"),
                            ("Only models trained on this set", "only")], value="all", label="Trained on this dataset")
        source = gr.Dropdown(["published", "rexrank", "submission"], multiselect=True, label="Source")
        columns = gr.Dropdown(METRIC_CHOICES, value=list(LEADERBOARD_METRICS), multiselect=True, label="Columns")
        sort = gr.Dropdown(METRIC_CHOICES, value="radcliq_v1", label="Sort by")
    table = gr.Dataframe(value=lambda: views.table_view(dataset, track), interactive=False, elem_id=f"table-{key}")
    ds, tr = gr.State(dataset), gr.State(track)
    inputs = [ds, tr, search, inst, year, mtype, trained, source, columns, sort]
    for control in (search, inst, year, mtype, trained, source, columns, sort):
        control.change(views.table_view, inputs, table, api_visibility="private")
    _plots_accordion(gr, ds, tr, views)


def _plots_accordion(gr, ds, tr, views: _Views) -> None:
    """Bar chart of one metric and the metric-agreement heatmap of a dataset/track, drawn on demand."""
    with gr.Accordion("Plots", open=False):
        metric = gr.Dropdown(METRIC_CHOICES, value="radcliq_v1", label="Metric")
        bars = gr.Plot()
        heat = gr.Plot()
        metric.change(views.bars_view, [ds, tr, metric], bars, api_visibility="private")
        show = gr.Button("Show plots")
        show.click(views.bars_view, [ds, tr, metric], bars, api_visibility="private")
        show.click(views.agreement_view, [ds, tr], heat, api_visibility="private")


def _models_tab(gr, demo, views: _Views) -> None:
    with gr.Tab("Models"):
        model_pick = gr.Dropdown(views.models_list(), label="Model", elem_id="model-pick")
        # Models registered after start-up appear on the next page load.
        demo.load(lambda: gr.Dropdown(choices=views.models_list()), None, model_pick, api_visibility="private")
        model_table = gr.Dataframe(interactive=False)
        model_text = gr.Markdown()
        model_pick.change(views.model_view, model_pick, [model_table, model_text], api_name="model",
                          concurrency_limit=None)


def _submit_tab(gr, demo, views: _Views, submissions, *, oauth: bool = False) -> None:
    def submit(file, name, institution, url, year, model_type, trained_on, dataset, track, profile=None):
        # profile: gradio injects the logged-in user's gr.OAuthProfile (None when logged out or without OAuth).
        user = getattr(profile, "username", None) if oauth else None
        path = file if isinstance(file, str) or file is None else getattr(file, "name", None)
        try:
            job_id, note = submissions.submit_with_note(
                path, {"name": name, "institution": institution, "url": url, "year": year or None,
                       "model_type": model_type, "trained_on": trained_on or []}, dataset, track, user=user)
        except RexrankError as exc:
            return f"**Submission rejected.**\n\n{_escape_md(exc)}", views.queue_view()
        finally:
            _discard_upload(demo, path)  # accepted (copied into the queue) or rejected: the upload is gone
        message = f"Submission #{job_id} queued: it will appear on the board once scored."
        return message + (f"\n\n{_escape_md(note)}" if note else ""), views.queue_view()

    # Real objects, not the module's postponed (string) annotations: gradio resolves the hints to inject the profile.
    submit.__annotations__ = {"profile": Optional[gr.OAuthProfile]}

    with gr.Tab("Submit"):
        gr.Markdown(submissions.instructions())
        if oauth:
            with gr.Row():
                gr.LoginButton(elem_id="login-button")
                gr.Markdown(f"Logged in, you own the model names you register and have your own quota ("
                            f"{submissions.private_quota}/day per private test set, {submissions.rate_limit}/day on "
                            "the public ones; rejected submissions count). Anonymous submissions may only register "
                            "new names.")
        else:
            gr.Markdown("This board has no Hugging Face login: submissions are anonymous and may only register new "
                        "model names (never submit under an existing one); private test sets need a login.")
        with gr.Row():
            sub_file = _single_use_file(gr, label="Predictions file (.json, .jsonl or .csv)", type="filepath",
                                        elem_id="submit-file")
            with gr.Column():
                sub_name = gr.Textbox(label="Model name", elem_id="submit-name")
                sub_inst = gr.Textbox(label="Institution", elem_id="submit-institution")
                sub_url = gr.Textbox(label="Model URL")
                sub_year = gr.Number(label="Year", precision=0)
                sub_type = gr.Textbox(label="Model type (e.g. VLM, encoder-decoder)")
                sub_trained = gr.CheckboxGroup([(DATASET_LABELS[d], d) for d in DATASETS], label="Trained on")
            with gr.Column():
                sub_dataset = gr.Dropdown([(DATASET_LABELS[d], d) for d in submissions.public_datasets()],
                                          value=submissions.public_datasets()[0], label="Test set")
                sub_track = gr.Radio([(TRACK_LABELS[t], t) for t in TRACKS], value="findings", label="Track")
                sub_button = gr.Button("Submit", variant="primary", elem_id="submit-button")
        sub_status = gr.Markdown(elem_id="submit-status")
        queue_table = gr.Dataframe(value=views.queue_view, interactive=False, elem_id="queue-table")
        refresh = gr.Button("Refresh queue")
        sub_button.click(submit, [sub_file, sub_name, sub_inst, sub_url, sub_year, sub_type, sub_trained,
                                  sub_dataset, sub_track], [sub_status, queue_table], api_name="submit").then(
            lambda: None, None, sub_file, api_visibility="private")  # the upload was used (and deleted): clear it
        refresh.click(views.queue_view, None, queue_table, api_name="queue")


def _single_use_file(gr, **kwargs):
    """A gr.File whose filepath input is the uploaded file itself. gradio's File leaves an empty temporary file in
    its cache on every event (``tempfile.NamedTemporaryFile(delete=False)`` in ``_process_single_file``); this one
    makes no copy, so deleting the upload after the submission (``_discard_upload``) leaves nothing behind.

    The instance's method is replaced rather than subclassing: gradio writes a ``.pyi`` stub next to the module of
    every component subclass. (If gradio renames the method, the upload-cleanup test fails.)
    """
    import types

    from gradio.utils import NamedString

    component = gr.File(**kwargs)
    component._process_single_file = types.MethodType(lambda self, f: NamedString(f.path), component)
    return component


def _discard_upload(demo, path: str | None) -> None:
    """Delete an uploaded file and its folder, if (and only if) they are inside gradio's upload folder."""
    if not path:
        return
    from gradio.utils import get_upload_folder

    root = Path(get_upload_folder()).resolve()
    target = Path(path).resolve()
    if root not in target.parents:  # not an upload (e.g. a host-side path): never delete it
        return
    target.unlink(missing_ok=True)
    for name in (str(path), str(target)):
        demo.upload_file_set.discard(name)
    folder = target.parent  # gradio keeps each upload in a folder named after its hash
    while folder != root and root in folder.parents:
        try:
            folder.rmdir()  # only if empty: the same file uploaded by someone else at the same moment stays
        except OSError:
            break
        folder = folder.parent


def oauth_configured() -> bool:
    """Hugging Face login is available: running in a Space whose card sets ``hf_oauth`` (which sets these)."""
    from gradio.utils import get_space

    return get_space() is not None and bool(os.environ.get("OAUTH_CLIENT_ID"))


def _about_tab(gr) -> None:
    with gr.Tab("About"):
        gr.Markdown(about.markdown())


def _api_endpoints(gr, views: _Views) -> None:
    """API-only endpoints: aggregates as JSON, and the filtered table of any dataset/track.

    Read-only and fast: no concurrency cap (the store gives each worker thread its own connection). gradio builds
    each endpoint's API description from the function's signature, type hints and docstring, hence plain functions.
    """

    def results_api(dataset: str, track: str) -> str:
        """JSON aggregates (means, CIs) of every model on one dataset and track (aliases accepted)."""
        dataset, track = _check(dataset, track)
        return views.results_json(dataset, track)

    def table_api(dataset: str, track: str, search: str = "", institutions: list[str] | None = None,
                  years: list[int] | None = None, model_types: list[str] | None = None, trained: str = "all",
                  sources: list[str] | None = None, columns: list[str] | None = None,
                  sort_by: str = "radcliq_v1") -> dict:
        """The dataset/track table as shown on the page, filtered and sorted: {headers, data} (aliases accepted)."""
        dataset, track = _check(dataset, track)
        df = views.table_view(dataset, track, search, institutions, years, model_types, trained, sources, columns,
                              sort_by)
        return {"headers": list(df.columns), "data": df.to_numpy().tolist()}

    gr.api(results_api, api_name="results", concurrency_limit=None)
    gr.api(table_api, api_name="table", concurrency_limit=None)


def serve(store_path: str, host: str = "127.0.0.1", port: int = 7860, *, seed: bool = True, worker: bool = True,
          submissions_dir: str | None = None, prevent_thread_lock: bool = False, oauth: bool | None = None,
          upload_ttl: int = 3600, **submission_options: Any):
    """Open (and seed) the store, start the scoring worker, launch the Space.

    ``oauth``: Hugging Face login (None: on when the Space card sets ``hf_oauth``). ``submission_options`` go to
    ``Submissions`` (``max_bytes``: the largest predictions file, also gradio's upload limit; quotas ...).
    """
    from rexrank.leaderboard.published import bundled_tables, import_published
    from rexrank.leaderboard.submissions import DEFAULT_MAX_UPLOAD_MB

    store = Store(store_path)
    if seed and store.counts()["results"] == 0:
        import_published(store, bundled_tables())
    service = None
    try:
        from rexrank.leaderboard.submissions import Submissions

        service = Submissions(store, Path(submissions_dir or Path(store_path).with_suffix(".uploads")),
                              **submission_options)
        if worker:
            service.start_worker()
    except ImportError:  # the harness is optional for a read-only board
        service = None
    demo = build_app(store, service, oauth=oauth_configured() if oauth is None else oauth, upload_ttl=upload_ttl)
    demo.queue(default_concurrency_limit=8)
    # Gradio refuses a larger upload while it streams in (HTTP 413) and deletes what it had written of it.
    max_bytes = service.max_bytes if service is not None else DEFAULT_MAX_UPLOAD_MB * 1_000_000
    demo.launch(server_name=host, server_port=port, prevent_thread_lock=prevent_thread_lock, show_error=False,
                quiet=True, max_file_size=int(max_bytes))
    return demo, store, service

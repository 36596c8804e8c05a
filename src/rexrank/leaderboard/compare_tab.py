"""The Compare tab of the Space: 2-4 models side by side on every board, their paired tests, and ``/compare``.

``compare_tab(gr, views)`` builds one ``gr.Tab("Compare", id="compare")`` inside the app's ``gr.Tabs``: a
multiselect of model names (``MODELS_ID``, at most ``compare_view.MAX_MODELS``) and the comparison as HTML tables,
one per board, each in its own sideways-scrolling box (a phone's page never scrolls sideways). The model list is
built (``gr.render``) when the tab is opened, so the first page holds none of its components.
``restore(selection)`` takes a selection as text (comma-separated names, as a URL's ``compare=`` carries it) and
returns the values of the tab's two states (``CompareTab``): setting them rebuilds the tab on that selection. The
coordinator's URL state calls it; this module builds no URL mechanism.

What is shown is ``compare_view.compare``'s data; every name and cell goes through ``html.escape`` (model names are
submitters' text), and the HTML holds only our own tags.
"""

# No ``from __future__ import annotations``: gradio reads the event functions' real annotations.
import html
from typing import Any, NamedTuple, Optional

from rexrank.leaderboard import board, compare_view, links
from rexrank.leaderboard.gradio_compat import guarded

MODELS_ID = "compare-models"
VIEW_ID = "compare-view"
PICK_NOTE = f"Choose {compare_view.MIN_MODELS} to {compare_view.MAX_MODELS} models to compare them on every board."
_BOX = 'style="overflow-x:auto;max-width:100%"'
_CELL = 'style="padding:4px 8px;text-align:left;white-space:nowrap;border-bottom:1px solid currentColor"'


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def _values_table(entry: dict[str, Any]) -> str:
    heads = "".join(f"<th {_CELL}>{_e(c['model'])}{' (published)' if c['source'] == 'published' else ''}</th>"
                    for c in entry["columns"])
    rows = [f"<tr><th {_CELL}>Rank ({_e(board.metric_name(board.PRIMARY))})</th>"
            + "".join(f"<td {_CELL}>{_e(c['rank'] if c['rank'] is not None else '–')}</td>" for c in entry["columns"])
            + "</tr>"]
    for metric in entry["metrics"]:
        name = metric["metric"]
        if all(c["values"][name] == "–" for c in entry["columns"]):
            continue  # none of these models has it here: a row of dashes says nothing
        cells = "".join(f"<td {_CELL}>{_e(c['values'][name])}"
                        f"{'' if c['ranks'][name] is None else ' · #' + str(c['ranks'][name])}</td>"
                        for c in entry["columns"])
        rows.append(f"<tr><th {_CELL}>{_e(metric['label'])}</th>{cells}</tr>")
    return f"<div {_BOX}><table class='compare-table'><tr><th {_CELL}>Metric</th>{heads}</tr>{''.join(rows)}</table></div>"


def _fmt(value: Any, digits: int = 4) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _paired_table(paired: dict[str, Any], labels: dict[str, str]) -> str:
    if not paired.get("pairwise"):
        return f"<p>{_e(paired.get('note'))}</p>"
    rows = []
    for pair in paired["pairwise"]:
        for metric, test in pair["tests"].items():
            rows.append("".join(f"<td {_CELL}>{_e(v)}</td>" for v in (
                f"{pair['a']} − {pair['b']}", labels.get(metric, metric), _fmt(test.get("difference")),
                f"[{_fmt(test.get('ci_low'))}, {_fmt(test.get('ci_high'))}]", test.get("p_bootstrap_text", "–"),
                test.get("p_randomization_text", "–"), test.get("verdict", ""))))
    heads = "".join(f"<th {_CELL}>{h}</th>" for h in compare_view.PAIRED_HEADERS)
    note = "".join(f"<p>{_e(paired[k])}</p>" for k in ("note", "multiple_comparisons") if paired.get(k))
    ranks = []
    for metric, ranking in paired["ranking"].items():
        for model, r in ranking["models"].items():
            ranks.append(f"{_e(model)} {_e(labels.get(metric, metric))}: rank {_e(_fmt(r['rank'], 0))} "
                         f"[{_e(_fmt(r['rank_ci_low'], 0))}, {_e(_fmt(r['rank_ci_high'], 0))}]")
    return (f"<p>Paired tests on {paired['n_studies']} shared studies (per-study values kept by the board):</p>"
            f"{note}<div {_BOX}><table class='compare-table'><tr>{heads}</tr>"
            + "".join(f"<tr>{r}</tr>" for r in rows) + "</table></div>"
            + f"<details><summary>Rank intervals</summary><p>{'<br>'.join(ranks)}</p></details>")


def comparison_html(result: dict[str, Any]) -> str:
    """The tab's HTML of ``compare_view.compare``'s result (or its one-line error)."""
    if "error" in result:
        return f"<p>{_e(result['error'])}</p>"
    if not result["boards"]:
        return "<p>None of these models has a result on a board yet.</p>"
    parts = []
    for entry in result["boards"]:
        labels = {m["metric"]: m["label"] for m in entry["metrics"]}
        parts.append(f"<h3>{_e(entry['label'])}</h3>{_values_table(entry)}{_paired_table(entry['paired'], labels)}")
    return "".join(parts)


class CompareTab(NamedTuple):
    """What the coordinator's URL state needs of the tab: ``restore``'s outputs are ``(requested, chosen)``."""

    tab: Any
    requested: Any  # a selection from outside the tab (a URL): setting it rebuilds the tab on it
    chosen: Any  # the selection the tab shows and reopens on


def restore(selection: str | list[str] | None) -> tuple[list[str], list[str]]:
    """The values of ``CompareTab.requested`` and ``CompareTab.chosen`` for a selection given as text (``"A,B"``,
    what a URL's ``compare=`` carries): the tab is rebuilt on it (``MODELS_ID`` holds the names)."""
    names = compare_view.parse_selection(selection)
    return names, names


def _view_html(views, models: list[str]) -> str:
    return comparison_html(compare_view.compare(views, models)) if models else f"<p>{PICK_NOTE}</p>"


def compare_tab(gr, views) -> CompareTab:
    """The Compare tab, built by ``gr.render`` when opened or when a selection is restored (the first page holds
    none of its components), and the public ``/compare`` endpoint (the same data as JSON)."""

    def compare_api(models: str) -> dict:
        """2-4 models (comma-separated names) on every board: values with CIs, ranks, and the paired tests and rank
        intervals where per-study values are kept; {"error": one line} for a bad selection."""
        return compare_view.compare(views, models if isinstance(models, (str, list)) else "")

    with gr.Tab("Compare", id=links.COMPARE_TAB) as tab:
        requested, chosen = gr.State([]), gr.State([])

        @gr.render(inputs=chosen, triggers=[tab.select, requested.change], queue=False, show_progress="hidden")
        @guarded
        def view(current: Optional[list]):
            current = list(current or [])
            pick = gr.Dropdown(views.models_list(), value=current[:compare_view.MAX_MODELS], multiselect=True,
                               max_choices=compare_view.MAX_MODELS, label="Models", elem_id=MODELS_ID,
                               allow_custom_value=False, interactive=True)
            out = gr.HTML(_view_html(views, current), elem_id=VIEW_ID)

            def picked(models: Optional[list]):
                models = list(models or [])
                return _view_html(views, models), models

            # .input: the user's choice (the value set when the tab is built fires no second request).
            pick.input(guarded(picked), pick, [out, chosen], api_visibility="private", show_progress="minimal")
            pick.input(None, pick, None, js=links.COMPARE_JS, api_visibility="private", queue=False)  # the URL
        gr.api(guarded(compare_api), api_name="compare", concurrency_limit=None)
    return CompareTab(tab, requested, chosen)

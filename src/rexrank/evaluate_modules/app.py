"""The Gradio app of every metric Space (``metrics/<slug>/app.py`` is three lines that call this).

evaluate's own ``launch_gradio_widget`` breaks on Gradio >= 4 (it uses removed component arguments), so the
Spaces use this small Blocks app instead: a table of (prediction, reference) pairs in, the module's result and a
per-pair score table out, and the metric card below.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rexrank.errors import InputError, RexrankError

COLUMNS = ("predictions", "references")

# Shown pre-filled so a visitor can press "Score" at once (IU-Xray-style wording, written for this app).
DEFAULT_EXAMPLES = [
    ["No acute cardiopulmonary process.", "No acute cardiopulmonary abnormality."],
    ["Small left pleural effusion with adjacent atelectasis.", "Large right pleural effusion."],
    ["The heart size is normal. The lungs are clear.", "Heart size is normal. Lungs are clear."],
]


def read_card(folder: Path) -> tuple[dict[str, Any], str]:
    """(front-matter fields, markdown body) of the folder's README.md metric card."""
    path = Path(folder) / "README.md"
    if not path.exists():
        return {}, ""
    text = path.read_text(encoding="utf-8")
    match = re.match(r"^---\n(.*?)\n---\n?", text, flags=re.S)
    if not match:
        return {}, text
    import yaml

    fields = yaml.safe_load(match.group(1)) or {}
    return fields, text[match.end():]


def rows_of(table: Any) -> tuple[list[str], list[str]]:
    """Prediction and reference lists from the UI table (a DataFrame, or a list of [prediction, reference] rows).

    Rows with both cells blank are the editor's empty trailing rows and are ignored; a row with only one cell
    filled is scored as written (an empty report is a report: each metric's card says what it scores).
    """
    if isinstance(table, pd.DataFrame):
        rows = table.iloc[:, :2].values.tolist() if table.shape[1] >= 2 else []
    else:
        rows = [list(r) for r in (table or [])]
    preds, refs = [], []
    for i, row in enumerate(rows):
        if len(row) < 2:
            raise InputError(f"row {i + 1} needs two cells: prediction and reference")
        cells = ["" if c is None or (isinstance(c, float) and np.isnan(c)) else str(c) for c in row[:2]]
        if not cells[0].strip() and not cells[1].strip():
            continue
        preds.append(cells[0])
        refs.append(cells[1])
    if not preds:
        raise InputError("the table is empty: enter at least one prediction/reference pair")
    return preds, refs


class MetricApp:
    """One metric Space: loads the evaluate module in ``folder`` (with ``init_kwargs``) once, on first use."""

    def __init__(self, folder: str | Path, examples: list[list[str]] | None = None, **init_kwargs: Any):
        self.folder = Path(folder).resolve()
        self.slug = self.folder.name
        self.examples = examples or DEFAULT_EXAMPLES
        self.init_kwargs = init_kwargs
        self.fields, self.card = read_card(self.folder)
        self._module = None

    @property
    def module(self):
        if self._module is None:
            import evaluate

            self._module = evaluate.load(str(self.folder), **self.init_kwargs)
        return self._module

    def score(self, table: Any) -> tuple[dict[str, Any], pd.DataFrame]:
        """(the module's result without the per-report list, a per-pair table) for the UI's table of pairs."""
        preds, refs = rows_of(table)
        result = self.module.compute(predictions=preds, references=refs)
        per_pair = pd.DataFrame({"prediction": preds, "reference": refs, "score": result.get("scores")})
        summary = {key: value for key, value in result.items() if key != "scores" and not isinstance(value, list)}
        return summary, per_pair

    def _score_for_ui(self, table):
        import gradio as gr

        try:
            return self.score(table)
        except RexrankError as exc:  # a user mistake: show the message, not a traceback
            raise gr.Error(str(exc)) from None

    def blocks(self):
        """The gr.Blocks app (call ``.launch()`` on it)."""
        import gradio as gr

        title = self.fields.get("title") or self.slug
        with gr.Blocks(title=title) as demo:
            gr.Markdown(f"# {self.fields.get('emoji', '')} {title}".strip())
            if self.fields.get("description"):
                gr.Markdown(self.fields["description"])
            table = gr.Dataframe(value=[list(r) for r in self.examples], headers=list(COLUMNS), column_count=2,
                                 datatype="str", interactive=True, wrap=True, label="One pair per row")
            button = gr.Button("Score", variant="primary")
            summary = gr.JSON(label="Result")
            per_pair = gr.Dataframe(label="Per pair", wrap=True, interactive=False)
            button.click(self._score_for_ui, inputs=table, outputs=[summary, per_pair], api_name="score")
            if self.card:
                with gr.Accordion("Metric card", open=False):
                    gr.Markdown(self.card)
        return demo

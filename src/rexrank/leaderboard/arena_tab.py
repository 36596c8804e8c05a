"""The Arena tab of the Space: one study, two anonymised reports, a vote, then the names; and the Arena board.

``arena_tab(gr, arena, oauth=...)`` builds one ``gr.Tab("Arena", id="arena")`` inside the app's ``gr.Tabs``.

What the page and its API see: before a vote, the study's reference, its images (when the host has them; shown by
an event chained after the texts, the previous pair's hidden meanwhile) and the two reports, never a model name
(the ticket that binds the pair to the rater stays on the server in a ``gr.State``: a client sends only its clicks,
i.e. its choice and its tags). After the vote, the two names. Every text is shown as plain text (read-only
textboxes, the revealed names and every answer to a vote included), never as Markdown or HTML; the Markdown
message above the pair holds only our own words and a study id of the public set. Who votes: the signed-in Hugging Face
user (``oauth``: gradio injects the profile), or, on a host's own server without login, the ``rater`` the host
named (``None``: voting is off). Refusals (not signed in, excluded, quota, a used ticket) are one-line messages.
"""

# No ``from __future__ import annotations``: gradio reads the event functions' real annotations (the injected
# gr.OAuthProfile).
from typing import Any, Optional

from rexrank.errors import RexrankError
from rexrank.leaderboard import board
from rexrank.leaderboard.arena import CHOICE_LABELS, Arena, rater_identity
from rexrank.leaderboard.gradio_compat import guarded, one_line_input_count, pass_values_through
from rexrank.leaderboard.store import error_categories

BOARD_HEADERS = ["rank", "model", "strength", "interval", "rank interval", "votes", "raters"]
METRIC_HEADERS = ["metric", "decisive votes", "agreement", "95% interval", "Kendall tau"]
INTEGRITY_HEADERS = ["rater", "votes", "ties", "median s between votes", "agreement with raters",
                     "agreement with metrics", "one-sided model", "votes on it", "one-sided z", "flagged"]
VOTE_API_NAMES = tuple(f"arena_vote_{choice}" for choice in CHOICE_LABELS)


def _board(arena: Arena, *, include_flagged: bool = False) -> tuple[list[list], list[list], str]:
    rows = [[r[h] for h in BOARD_HEADERS] for r in arena.board_rows(include_flagged=include_flagged)]
    # Shown by the name every other view uses (BLEU, not bleu2); the API keeps the registry's name.
    metrics = [[board.metric_name(m["metric"]) if board.is_metric(m["metric"]) else m["metric"], m["decisive votes"], _pct(m["agreement"]), f"{_pct(m['low'])} to {_pct(m['high'])}",
                "n/a" if m["kendall tau"] != m["kendall tau"] else f"{m['kendall tau']:.2f}"]
               for m in arena.humans_vs_metrics()]
    agreement = arena.agreement()
    kappa = agreement["fleiss kappa"]
    n = len(arena.counted(include_flagged=include_flagged))
    flagged = [r for r in arena.integrity() if r["flagged"]]
    left_out = "" if include_flagged or not flagged else (
        f" {len(flagged)} flagged rater{'' if len(flagged) == 1 else 's'} left out ({sum(r['votes'] for r in flagged)} "
        "votes).")
    note = (f"{n} vote{'' if n == 1 else 's'} counted.{left_out} Inter-rater agreement: Fleiss' kappa "
            f"{'n/a' if kappa != kappa else f'{kappa:.2f}'} on {agreement['items']} study-pairs voted by two raters "
            "or more. Strengths: Bradley-Terry log-odds against the average model (ties and 'both unacceptable' "
            "count as half a win each), 95% bootstrap intervals over votes.")
    return rows, metrics, note


def _integrity(arena: Arena) -> list[list]:
    return [[_fmt(r[h]) for h in INTEGRITY_HEADERS] for r in arena.integrity()]


def _fmt(value: Any) -> Any:
    if isinstance(value, float):
        return "n/a" if value != value else round(value, 2)
    return "yes" if value is True else ("" if value is False else value)


def _codes(values: Any) -> Any:
    """A CheckboxGroup's values as category numbers (the API may send them as digit strings); anything else is
    passed on for ``Arena.vote`` to refuse."""
    if not isinstance(values, list):
        return values if values else []
    return [int(v) if isinstance(v, str) and v.isdigit() and len(v) < 3 else v for v in values]


def _pct(value: float) -> str:
    return "n/a" if value != value else f"{100 * value:.0f}%"


def arena_tab(gr, arena: Arena, *, oauth: bool, rater: Optional[str] = None) -> None:
    """The Arena tab (see the module docstring). ``rater``: who votes on a server without login."""
    categories = [(f"{code}. {text}", code) for code, text in sorted(error_categories().items())]
    if rater is not None:  # the host's --arena-rater: a Hub username too (one line otherwise)
        rater = rater_identity(rater[3:] if rater.startswith("hf:") else rater)

    def who(profile) -> Optional[str]:
        if oauth:
            name = getattr(profile, "username", None)
            return rater_identity(name) if name else None
        return rater

    def load(profile: Optional[gr.OAuthProfile] = None):
        """A new pair: (ticket state, message, reference, report A, report B, its images' paths (state), the gallery
        hidden, tags A, tags B, reveal). The gallery is filled by the event chained after this one (``show``)."""
        hidden = gr.Gallery(visible=False)
        try:
            pair = arena.next_pair(who(profile))
        except RexrankError as exc:
            return (None, f"**{exc}**", "", "", "", [], hidden, [], [], "")
        return (pair.ticket, f"Study {pair.study}: which report is better? Vote to see the models' names.",
                pair.reference, pair.report_a, pair.report_b, list(pair.images), hidden, [], [], "")

    def show(paths: list[str]):
        """The new pair's images, once its texts are on screen."""
        return gr.Gallery(value=paths or None, visible=bool(paths))

    def vote(choice: str, ticket: Optional[str], tags_a: list[int], tags_b: list[int],
             profile: Optional[gr.OAuthProfile] = None):
        if not ticket:
            return ticket, "Load a pair first (Next pair)."
        try:
            revealed = arena.vote(who(profile), ticket, choice, _codes(tags_a), _codes(tags_b))
        except RexrankError as exc:
            # a refusal before the ticket was used (too quick) keeps the pair: the same click works later
            return (ticket if arena.ticket(ticket) is not None else None), str(exc)
        # Plain text (the reveal is a Textbox): a model's name is shown as written, never as Markdown or HTML.
        return None, (f"Thank you: your vote ({CHOICE_LABELS[choice]}) is recorded. A was: {revealed['a']}\n"
                      f"B was: {revealed['b']}\nNext pair: press Next pair.")

    def refresh(include_flagged: bool = False):
        rows, metrics, note = _board(arena, include_flagged=bool(include_flagged))
        return rows, metrics, note, _integrity(arena)

    with gr.Tab("Arena", id="arena") as tab:
        gr.Markdown("Compare two models' reports of one study against the reference, as ReXVal's radiologists "
                    "did. The models stay anonymous until you vote; sides are random. One vote per study and pair.",
                    elem_id="arena-intro")
        if oauth:
            gr.LoginButton(elem_id="arena-login")
        ticket = gr.State(None)  # server-side: the page never holds the ticket's pair or names
        next_button = gr.Button("Next pair", variant="primary", elem_id="arena-next")
        message = gr.Markdown(elem_id="arena-message")
        images = gr.Gallery(label="Images", visible=False, elem_id="arena-images", height=260)
        reference = gr.Textbox(label="Reference report", interactive=False, lines=3, elem_id="arena-reference")
        with gr.Row(equal_height=True):
            with gr.Column(min_width=300):
                report_a = gr.Textbox(label="Report A", interactive=False, lines=4, elem_id="arena-report-a")
                tags_a = gr.CheckboxGroup(categories, label="Clinically significant errors in A (optional)",
                                          elem_id="arena-tags-a")
            with gr.Column(min_width=300):
                report_b = gr.Textbox(label="Report B", interactive=False, lines=4, elem_id="arena-report-b")
                tags_b = gr.CheckboxGroup(categories, label="Clinically significant errors in B (optional)",
                                          elem_id="arena-tags-b")
        with gr.Row():
            buttons = {choice: gr.Button(label, elem_id=f"arena-vote-{choice.replace('_', '-')}", min_width=140)
                       for choice, label in CHOICE_LABELS.items()}
        reveal = gr.Textbox(label="Result", interactive=False, lines=3, elem_id="arena-reveal")
        gr.Markdown("### Arena board")
        board_note = gr.Markdown(elem_id="arena-board-note")
        board = gr.Dataframe(headers=BOARD_HEADERS, interactive=False, elem_id="arena-board")
        metrics = gr.Dataframe(headers=METRIC_HEADERS, interactive=False, elem_id="arena-metrics",
                               label="Humans vs metrics: share of decisive votes where the metric prefers the "
                                     "same report")
        with gr.Row():
            include_flagged = gr.Checkbox(False, label="Count flagged raters' votes", elem_id="arena-flagged")
            refresh_button = gr.Button("Refresh the Arena board", elem_id="arena-refresh", size="sm")
        with gr.Accordion("Rater integrity (for the host)", open=False):
            integrity = gr.Dataframe(headers=INTEGRITY_HEADERS, interactive=False, elem_id="arena-integrity",
                                     label="Per rater: signals of rigging (docs/arena.md, Integrity)")
        # The vote endpoints' raw API in one line (issue 39 point 6; gradio_compat says why and how).
        pass_values_through([tags_a, tags_b], {"type": "array", "title": "Error categories",
                                               "items": {"type": "integer", "enum": sorted(error_categories())}})
        one_line_input_count(VOTE_API_NAMES, lambda expected, got: (
            f"the Arena's vote takes {expected} values (null for the pair, which the server holds, then the error "
            f"categories of A and of B as lists of numbers); got {got}"))

        shown_images = gr.State([])  # the pair's image paths, between the two events below
        pair_outputs = [ticket, message, reference, report_a, report_b, shown_images, images, tags_a, tags_b, reveal]
        # The next pair in the page (bench/results/arena.md): no queue (its round trips would triple the latency), no
        # progress overlay on the outputs (drawing and removing it cost more than the answer), and the texts first:
        # filling the gallery in the same update held the new texts back until its images were laid out. The old
        # pair's images are hidden by the first event, so a study's text is never shown beside another's images.
        next_button.click(guarded(load), None, pair_outputs, api_name="arena_next", queue=False,
                          show_progress="hidden").then(guarded(show), shown_images, images, api_name=False,
                                                       queue=False, show_progress="hidden")
        def caster(choice: str):
            def cast(ticket_id: Optional[str], chosen_a: list[int], chosen_b: list[int],
                     profile: Optional[gr.OAuthProfile] = None):
                return vote(choice, ticket_id, chosen_a, chosen_b, profile)
            return cast

        for choice, button in buttons.items():
            button.click(guarded(caster(choice)), [ticket, tags_a, tags_b], [ticket, reveal],
                         api_name=f"arena_vote_{choice}")
        for trigger in (refresh_button.click, tab.select, include_flagged.change):
            trigger(guarded(refresh), include_flagged, [board, metrics, board_note, integrity], api_name=False)


def arena_demo(arena: Arena, *, rater: Optional[str] = None, oauth: bool = False) -> Any:
    """A page of its own holding the Arena tab (tests; a host trying the Arena out)."""
    import gradio as gr

    with gr.Blocks(title="ReXrank Arena") as demo:
        with gr.Tabs():
            with gr.Tab("Board", id="board"):
                gr.Markdown("The board's other tabs go here.")
            arena_tab(gr, arena, oauth=oauth, rater=rater)
    return demo

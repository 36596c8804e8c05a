"""The Arena tab of the Space: one study, two anonymised reports, a vote, then the names; and the Arena board.

``arena_tab(gr, arena, oauth=...)`` builds one ``gr.Tab("Arena", id=links.ARENA_TAB)`` inside the app's ``gr.Tabs``.

What the page and its API see: before a vote, the study's reference, its images (when the host has them; shown by
an event chained after the texts, the previous pair's hidden meanwhile) and the two reports, never a model name
(the ticket that binds the pair to the rater stays on the server in a ``gr.State``: a client sends only its clicks,
i.e. its choice and its tags). After the vote, the two names. Every text is shown as plain text, never as
Markdown or markup: the reference and the reports escaped into readable text under a heading (``readable``), the
revealed names and every answer to a vote in a read-only textbox; the Markdown message above the pair holds only our
own words and a study id of the public set. Who votes: the signed-in Hugging Face
user (``oauth``: gradio injects the profile), or, on a host's own server without login, the ``rater`` the host
named (``None``: voting is off). Refusals (not signed in, excluded, quota, a used ticket) are one-line messages.
"""

# No ``from __future__ import annotations``: gradio reads the event functions' real annotations (the injected
# gr.OAuthProfile).
import html
import json
import os
from typing import Any, Optional

from rexrank.errors import RexrankError
from rexrank.leaderboard.arena import (CHOICE_LABELS, HVM_MIN_DECISIVE, HVM_MIN_MODELS, INTEGRITY_COLUMNS,
                                      MIN_RANK_RATERS, MIN_RANK_VOTES, PRELIMINARY, PRIOR_SD, RATER_FLOOR,
                                      RATER_MULTIPLE, Arena, rater_identity, strength_text)
from rexrank.leaderboard.gradio_compat import guarded, one_line_input_count, pass_values_through
from rexrank.leaderboard.links import ARENA_TAB
from rexrank.leaderboard.pages.html import el, table
from rexrank.leaderboard.store import error_categories

BOARD_HEADERS = ["rank", "model", "strength", "interval", "rank interval", "votes", "raters"]
METRIC_HEADERS = ["metric", "decisive votes", "agreement", "95% interval", "Kendall tau", "ranked models"]
BOARD_CAPTION = "Arena board: the ranked models strongest first, then the preliminary ones"
METRICS_CAPTION = "Humans vs metrics: share of decisive votes where the metric prefers the same report"
# A preliminary row's rank interval: none until the model has the evidence a rank needs (what the title says).
NO_RANK_INTERVAL = el("abbr", "n/a", title=f"none yet: preliminary until {MIN_RANK_VOTES} votes from "
                                           f"{MIN_RANK_RATERS} raters or more")
# The rater integrity table is the host's (``rexrank leaderboard arena-integrity``; here only for the Space's owner,
# signed in): on a public page it named which model a named rater preferred, and showed a rigger how far the flag was.
INTEGRITY_HEADERS = list(INTEGRITY_COLUMNS)
# What the page's countdown waits for (its ``waiting`` state): a new pair (the pace) or a vote to count.
PAIR, VOTE = "pair", "vote"
VOTE_API_NAMES = tuple(f"arena_vote_{choice}" for choice in CHOICE_LABELS)
# The page's keys (ARENA_HEAD), each naming its button's elem_id: a vote per choice, n for the next pair.
KEYS = {"a": "arena-vote-a", "b": "arena-vote-b", "t": "arena-vote-tie", "u": "arena-vote-both-bad",
        "n": "arena-next"}
assert set(KEYS.values()) >= {f"arena-vote-{c.replace('_', '-')}" for c in CHOICE_LABELS}
# The images' box: a chest film's lines and tubes need a few hundred pixels of height to be read (a phone shows the
# views one per row, ARENA_HEAD, so each takes the screen's width).
IMAGE_HEIGHT_PX = 560
FILM_MIN_PX = 400  # the film's column and the texts' beside it: a phone's screen takes one of them
# The vote bar stays at the bottom of the screen while the pair above it is read (issue 37: on a phone the buttons
# sat ~1,330 px below the first report; it sticks thanks to gradio_compat.STICKY_CSS). Rules on the Arena's own ids
# only (``arena-*``); assets.CSS includes them. z-index: above gradio's block labels (they showed through the bar),
# below its toasts.
# Touch targets of at least 44 px (issue 50: the vote buttons were about 80x26 px on a phone); the vote buttons carry
# the bar's weight (primary), "Next pair" is secondary. The board's Refresh too (it was 26 px high, size="sm").
TOUCH_PX = 44
ARENA_CSS = """
#arena-vote-bar { position: sticky; bottom: 0; z-index: 60; background: var(--background-fill-primary);
  border-top: 1px solid var(--border-color-primary); padding: 4px 0; gap: 4px; }
#arena-vote-bar textarea { min-height: 0; }
.arena-text-label { font-size: var(--text-sm); color: var(--block-label-text-color); margin-bottom: 4px; }
.arena-text { white-space: pre-wrap; overflow-wrap: anywhere; margin: 0; }
#arena-announce { position: absolute; width: 1px; height: 1px; overflow: hidden; clip-path: inset(50%); }
""" + (
    # The board's two tables (``_tables``) as the board pages draw theirs (pages/board.css): each scrolls sideways in
    # its own box with the model (or metric) column pinned, the page never does (issue 48: at 390 px gradio's
    # Dataframes showed 3 of 7 columns, the models' unpinned); headers and names wrap between words only, values
    # never wrap. gradio's theme colours.
    ".arena-table .table-box { overflow-x: auto; max-width: 100%; border: 1px solid var(--border-color-primary); "
    "border-radius: var(--radius-sm); }\n"
    ".arena-table table { border-collapse: separate; border-spacing: 0; width: max-content; min-width: 100%; "
    "margin: 0; border: 0; padding: 0; font-size: var(--text-md); }\n"  # gradio's prose pads a table
    ".arena-table caption { text-align: left; padding: 6px 8px; font-weight: 600; caption-side: top; "
    "position: sticky; left: 0; max-width: calc(100vw - 40px); color: var(--body-text-color); }\n"
    ".arena-table th, .arena-table td { padding: 4px 8px; text-align: left; vertical-align: top; border: 0; "
    "border-bottom: 1px solid var(--border-color-primary); background: var(--background-fill-primary); "
    "color: var(--body-text-color); overflow-wrap: normal; word-break: keep-all; }\n"
    ".arena-table td { white-space: nowrap; font-variant-numeric: tabular-nums; }\n"
    ".arena-table thead th { background: var(--background-fill-secondary); white-space: normal; min-width: 4.5em; "
    "max-width: 10em; }\n"
    ".arena-table th[scope=row] { font-weight: 500; white-space: normal; min-width: 7em; }\n"
    ".arena-table .sticky { position: sticky; left: 0; z-index: 1; "
    "border-right: 1px solid var(--border-color-primary); }\n"
    ".arena-table thead .sticky { z-index: 2; }\n"
    ".arena-table .w { white-space: nowrap; }\n"
    ".arena-table abbr { text-decoration: underline dotted; cursor: help; }\n"
) + f"#arena-vote-bar button, #arena-refresh {{ min-height: {TOUCH_PX}px; min-width: {TOUCH_PX}px; }}\n" + (
    # The Arena's page of its own (wiring: /arena under the navbar) holds its tab alone: a strip with one tab named
    # "Arena" under the navbar's "Arena" said nothing (issue 50, seen in every screenshot). Beside other tabs it stays.
    f'.tab-wrapper:has([role=tablist] > [role=tab][data-tab-id="{ARENA_TAB}"]:only-of-type) {{ display: none; }}\n')
# In <head> (gradio scopes css='s @media rules, gradio_compat.PHONE_HEAD says why): a phone's gallery one view per
# row; and the keys, which act only while the Arena is on screen and never while text is being typed (a checkbox
# keeps them: a rater ticks an error type, then votes).
# A phone's vote bar is one row of five buttons (issue 50, seen at 390x844: "Next pair" wrapped to a row of its own
# and the sticky bar took 190 px of the screen before a vote, 245 after); "Both unacceptable", wider, in two lines of
# 12 px (a fifth of the row broke "unacceptable" inside the word).
ARENA_HEAD = """<style>@media (max-width: 640px) {
  #arena-images .grid-container { grid-template-columns: 1fr !important; }
  #arena-vote-bar .arena-vote-buttons { flex-wrap: nowrap; gap: 4px; }
  #arena-vote-bar button { flex: 1 1 0 !important; min-width: %dpx !important; font-size: 12px; padding-left: 2px;
    padding-right: 2px; overflow-wrap: anywhere; }
  #arena-vote-bar #arena-vote-both-bad { flex-grow: 1.5 !important; }
}</style>
<script>
document.addEventListener("keydown", (event) => {
  const keys = %s;
  const target = event.target instanceof Element ? event.target : null;
  if (event.altKey || event.ctrlKey || event.metaKey || !(event.key in keys)) return;
  if (target && (target.isContentEditable || target.closest("textarea, select") ||
      (target.matches("input") && !["checkbox", "radio", "button"].includes(target.type)))) return;
  const button = document.getElementById(keys[event.key]);
  if (!button || button.disabled || !button.checkVisibility()) return;
  event.preventDefault();
  button.click();
});
// Live regions (issue 50: "too quick" and the reveal were not announced): the message above the pair is one
// (class board-live: gradio_compat.LIVE_REGION_HEAD marks it); the vote bar's answer is a read-only textbox, whose
// value changes are no DOM change, so its text is copied, as text, into a visually hidden live region.
setInterval(() => {
  const reveal = document.querySelector("#arena-reveal textarea");
  if (!reveal) return;
  let live = document.getElementById("arena-announce");
  if (!live) {
    live = document.createElement("div");
    live.id = "arena-announce";
    live.className = "board-live";
    document.body.appendChild(live);
  }
  if (live.textContent !== reveal.value) live.textContent = reveal.value;
}, 500);
</script>""" % (TOUCH_PX, json.dumps(KEYS))


# A new page of a rater whose pairs of the minute were all served (to their other pages or tabs): what it says.
OTHER_PAGES = ("No pair on this page yet: the pace counts the pairs served to all your pages and tabs. Vote on a "
               "pair another page of yours shows, or wait here: the countdown below brings a pair.")


def _board(arena: Arena, *, include_flagged: bool = False) -> tuple[list[list], list[list], str]:
    rows = [[r[h] for h in BOARD_HEADERS] for r in arena.board_rows(include_flagged=include_flagged)]
    metrics = [[m["label"], m["decisive votes"], _pct(m["agreement"]), f"{_pct(m['low'])} to {_pct(m['high'])}",
                "n/a" if m["kendall tau"] != m["kendall tau"] else f"{m['kendall tau']:.2f}", m["models"]]
               for m in arena.humans_vs_metrics()]
    agreement = arena.agreement()
    kappa = agreement["fleiss kappa"]
    flagged = arena.flagged()  # not the host's whole table: a redraw after a vote needs only this (issue 50)
    n = len(arena.votes()) - (0 if include_flagged else sum(flagged.values()))
    left_out = "" if include_flagged or not flagged else (
        f" {len(flagged)} flagged rater{'' if len(flagged) == 1 else 's'} left out ({sum(flagged.values())} "
        "votes).")
    note = (f"{n} vote{'' if n == 1 else 's'} counted.{left_out} Inter-rater agreement: Fleiss' kappa "
            f"{'n/a' if kappa != kappa else f'{kappa:.2f}'} on {agreement['items']} study-pairs voted by two raters "
            "or more. Strengths: Bradley-Terry log-odds against the average model (ties and 'both unacceptable' "
            f"count as half a win each), 95% intervals of a Bayesian fit (a prior spread of {PRIOR_SD:g}: few "
            f"votes give wide intervals). A model is ranked once it has {MIN_RANK_VOTES} votes from "
            f"{MIN_RANK_RATERS} raters or more ({PRELIMINARY} until then); one rater's votes on a model count for "
            f"at most {RATER_FLOOR:g} votes or {RATER_MULTIPLE:g} times the median rater's on it. Humans vs metrics: a "
            f"metric is shown from {HVM_MIN_DECISIVE} decisive votes, Kendall tau from {HVM_MIN_MODELS} ranked "
            "models.")
    return rows, metrics, note


def _tables(rows: list[list], metrics: list[list]) -> tuple[str, str]:
    """The board's rows and the humans-vs-metrics rows (``_board``) as the page shows them: real tables
    (``pages.html.table``: a caption, header cells, the model or metric a sticky row header, a box that scrolls
    sideways on its own, every text escaped), ``$`` escaped too (gradio's HTML template reads ``${...}``). A
    strength is written as its interval is (``strength_text``); a preliminary row's missing rank interval says
    so."""
    shown = []
    for row in rows:
        cells = dict(zip(BOARD_HEADERS, row))
        cells["strength"] = strength_text(cells["strength"])
        cells["rank interval"] = cells["rank interval"] or NO_RANK_INTERVAL
        shown.append([cells[h] for h in BOARD_HEADERS])
    board = table(BOARD_CAPTION, BOARD_HEADERS, shown, row_header=BOARD_HEADERS.index("model"))
    against = table(METRICS_CAPTION, METRIC_HEADERS, metrics, row_header=0)
    return board.replace("$", "&#36;"), against.replace("$", "&#36;")


def readable(label: str, text: str) -> str:
    """A text of the pair as the page shows it: plain text a screen reader reads as text (issue 50: the reports were
    disabled textboxes), under a heading naming it. Every character of ``text`` is escaped (a submitter wrote it):
    ``<``, ``&``, quotes, and ``$`` (gradio's HTML template reads ``${...}``), so nothing in it is markup."""
    if not text:
        return ""
    escaped = html.escape(text, quote=True).replace("$", "&#36;")
    return (f'<div class="arena-readable"><div class="arena-text-label" role="heading" aria-level="3">'
            f'{html.escape(label)}</div><p class="arena-text">{escaped}</p></div>')


def _integrity(arena: Arena) -> list[list]:
    return [[_fmt(r[h]) for h in INTEGRITY_HEADERS] for r in arena.integrity()]


def space_owner() -> Optional[str]:
    """The Space's owner as a rater id (the platform's SPACE_AUTHOR_NAME), or None off a Space: the one signed-in
    account the tab shows the rater integrity table to."""
    name = os.environ.get("SPACE_AUTHOR_NAME", "").strip()
    try:
        return rater_identity(name) if name else None
    except RexrankError:
        return None


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


def arena_tab(gr, arena: Arena, *, oauth: bool, rater: Optional[str] = None, refresh_s: Optional[float] = None):
    """The Arena tab (see the module docstring), returned. ``rater``: who votes on a server without login.
    ``refresh_s``: how often an open page redraws the board when the store changed (the page's freshness period;
    None: on its events only)."""
    categories = [(f"{code}. {text}", code) for code, text in sorted(error_categories().items())]
    if rater is not None:  # the host's --arena-rater: a Hub username too (one line otherwise)
        rater = rater_identity(rater[3:] if rater.startswith("hf:") else rater)

    def who(profile) -> Optional[str]:
        if oauth:
            name = getattr(profile, "username", None)
            return rater_identity(name) if name else None
        return rater

    def locked(live: bool) -> list:
        """The vote buttons' state: live only while the page holds a pair that is not voted yet."""
        return [gr.Button(interactive=live) for _ in buttons]

    def load(profile: Optional[gr.OAuthProfile] = None):
        """A new pair: (ticket state, message, reference, report A, report B, its images' paths (state), the gallery
        hidden, tags A, tags B, reveal, waiting (state), countdown timer). The gallery and the vote buttons follow in
        the event chained after this one (``show``). A refusal (pace, sign-in) goes to the reveal, in the vote bar
        where the eye is when "Next pair" was pressed, and leaves the pair on screen as it was (issue 50: the pair
        being read was emptied though still valid); the pace's refusal starts the countdown (``tick``)."""
        hidden = gr.Gallery(visible=False)
        try:
            pair = arena.next_pair(who(profile))
        except RexrankError as exc:
            pacing = arena.pace_wait(who(profile)) > 0
            return (*[gr.skip()] * 9, str(exc), PAIR if pacing else None, gr.Timer(active=pacing))
        return (pair.ticket, f"Study {pair.study}: which report is better? Vote to see the models' names.",
                readable("Reference report", pair.reference), readable("Report A", pair.report_a),
                readable("Report B", pair.report_b), list(pair.images), hidden, [], [], "", None,
                gr.Timer(active=False))

    def tick(waiting: Optional[str], ticket_id: Optional[str], profile: Optional[gr.OAuthProfile] = None):
        """The countdown (each second while the page waits on the pace): the reveal says how long is left; at 0 the
        next pair is loaded (``PAIR``: the rater had asked for it) or the vote bar says the vote counts now
        (``VOTE``: a vote refused as too quick). Outputs: ``load``'s and a flag for ``show_new``."""
        rater = who(profile)
        if waiting == PAIR:
            left = arena.pace_wait(rater)
            if left <= 0:
                return (*load(profile), True)
            return (*[gr.skip()] * 9, arena.slow_down(left), gr.skip(), gr.skip(), False)
        if waiting == VOTE and ticket_id:
            left = arena.vote_wait(rater, ticket_id)
            if left > 0:
                return (*[gr.skip()] * 9, arena.too_quick(left), gr.skip(), gr.skip(), False)
            return (*[gr.skip()] * 9, "Your vote counts now.", None, gr.Timer(active=False), False)
        return (*[gr.skip()] * 10, None, gr.Timer(active=False), False)

    def show_new(fresh: bool, paths: list[str], ticket_id: Optional[str]):
        """``show`` after a countdown's tick that loaded a new pair; nothing otherwise (the gallery kept as is)."""
        return show(paths, ticket_id) if fresh else [gr.skip()] * len(shown_outputs)

    def after_vote(ticket_id: Optional[str], profile: Optional[gr.OAuthProfile] = None):
        """After a vote refused as too quick (the pair still on offer): the countdown to when it counts."""
        waiting = bool(ticket_id) and arena.vote_wait(who(profile), ticket_id) > 0
        return (VOTE if waiting else gr.skip()), (gr.Timer(active=True) if waiting else gr.skip())

    def first(started: bool, profile: Optional[gr.OAuthProfile] = None):
        """The tab opened: its first pair, unless this page already has one (a vote's reveal stays until "Next
        pair"). A page opened while the pace refuses (the rater's other pages or tabs took the minute's pairs) says
        so above its empty pair, where a pair's question would be (issue 50: it showed only "slow down" over empty
        boxes); its countdown brings a pair when the pace allows."""
        if started:
            return [gr.skip()] * len(pair_outputs)
        answer = load(profile)
        if answer[10] == PAIR:
            answer = (answer[0], OTHER_PAGES, *answer[2:])
        return answer

    def show(paths: list[str], ticket_id: Optional[str]):
        """The new pair's images, once its texts are on screen; the vote buttons live while it is there, and the page
        marked as started (opening the tab again keeps the pair)."""
        return (gr.Gallery(value=paths or None, visible=bool(paths)), True if ticket_id else gr.skip(),
                *locked(bool(ticket_id)))

    def voted(ticket_id: Optional[str]):
        """After a vote: the buttons locked unless the pair is still on offer (a vote refused as too quick). Its own
        quick event, before the board's: were it answered with the board (a bootstrap fit), a next pair asked for
        meanwhile would be shown first and then get its buttons locked."""
        return locked(bool(ticket_id))

    def vote(choice: str, ticket: Optional[str], tags_a: list[int], tags_b: list[int],
             profile: Optional[gr.OAuthProfile] = None):
        """(ticket state, reveal). The ticket is gone once used, so the event chained after it (``voted``) locks the
        buttons; a refusal that keeps the pair (too quick) keeps the ticket: the same click works a little later."""
        if not ticket:
            return ticket, "No pair to vote on: press Next pair (or the n key)."
        try:
            revealed = arena.vote(who(profile), ticket, choice, _codes(tags_a), _codes(tags_b))
        except RexrankError as exc:
            return (ticket if arena.ticket(ticket) is not None else None), str(exc)
        # Plain text (the reveal is a Textbox): a model's name is shown as written, never as Markdown or HTML.
        return None, (f"Thank you: your vote ({CHOICE_LABELS[choice]}) is recorded. A was: {revealed['a']}\n"
                      f"B was: {revealed['b']}\nNext pair: press Next pair (or the n key).")

    def refresh(include_flagged: bool = False):
        rows, metrics, note = _board(arena, include_flagged=bool(include_flagged))
        return (*_tables(rows, metrics), note, arena.views_key())

    def host_signals(profile: Optional[gr.OAuthProfile] = None):
        """The integrity table, to the Space's owner only (checked here, on the server: the event is callable by
        anyone who finds it)."""
        owner = space_owner()
        if owner is None or not oauth or who(profile) != owner:
            return gr.Dataframe(value=None, visible=False), ("Only the Space's owner, signed in, sees the raters' "
                                                             "signals (or the host: `rexrank leaderboard "
                                                             "arena-integrity`).")
        return gr.Dataframe(value=_integrity(arena), visible=True), ""

    def follow(shown_version: Optional[str], include_flagged: bool = False):
        """The page's periodic check (``refresh_s``): the board again only when the votes changed since it was
        drawn (another visitor's vote, a host's decision), nothing sent otherwise."""
        if shown_version == arena.views_key():
            return [gr.skip()] * 4
        return refresh(include_flagged)

    with gr.Tab("Arena", id=ARENA_TAB) as tab:
        gr.Markdown("Compare two models' reports of one study against the reference, as ReXVal's radiologists "
                    "did. The models stay anonymous until you vote; sides are random. One vote per study and pair. "
                    f"A vote counts after {arena.pace.min_view_s:g} s with its pair; at most "
                    f"{arena.pace.pairs_per_minute} pairs per {arena.pace.window_s:g} s, skipped ones included. "
                    "Keys: a, b, t (tie), u (both unacceptable), n (next pair).",
                    elem_id="arena-intro")
        if oauth:
            gr.LoginButton(elem_id="arena-login")
        ticket = gr.State(None)  # server-side: the page never holds the ticket's pair or names
        started = gr.State(False)  # this page has been given a pair (opening the tab again keeps what is shown)
        message = gr.Markdown(elem_id="arena-message", elem_classes=["board-live"])  # a live region
        # The study's images first and large: what a radiologist reads before the reports (columns=1 on a phone
        # through ARENA_CSS's rules would need gradio's grid classes: one view per row at every width instead).
        # Beside the texts on a wide screen (issue 50, seen at 1440x900: the film above them filled the first screen,
        # no text on it), above them on a phone (the row wraps below two FILM_MIN_PX columns).
        with gr.Row(elem_id="arena-pair"):
            # Drawn only when the host has images (else the texts take the width); kept between pairs (the gallery
            # is hidden while the next pair's images come: the texts beside it do not move).
            with gr.Column(scale=2, min_width=FILM_MIN_PX, visible=arena.images is not None):
                images = gr.Gallery(label="Images", visible=False, elem_id="arena-images", height=IMAGE_HEIGHT_PX,
                                    object_fit="contain", preview=True, allow_preview=True)
            with gr.Column(scale=3, min_width=FILM_MIN_PX):
                # The texts as readable text (``readable``: escaped, never markup), each under its heading.
                reference = gr.HTML(elem_id="arena-reference", padding=True, js_on_load=None)
                with gr.Row(equal_height=True):
                    with gr.Column(min_width=300):
                        report_a = gr.HTML(elem_id="arena-report-a", padding=True, js_on_load=None)
                        tags_a = gr.CheckboxGroup(categories, label="Clinically significant errors in A (optional)",
                                                  elem_id="arena-tags-a")
                    with gr.Column(min_width=300):
                        report_b = gr.HTML(elem_id="arena-report-b", padding=True, js_on_load=None)
                        tags_b = gr.CheckboxGroup(categories, label="Clinically significant errors in B (optional)",
                                                  elem_id="arena-tags-b")
        # The vote bar: sticky at the bottom of the screen (ARENA_CSS) while the pair is read, so the buttons, the
        # answer to a vote (pace messages included) and the next pair stay in reach of both reports on a phone.
        with gr.Column(elem_id="arena-vote-bar", elem_classes=["arena-vote-bar"]):
            reveal = gr.Textbox(label="Result", show_label=False, interactive=False, lines=1, max_lines=4,
                                placeholder="Keys: a, b, t (tie), u (both unacceptable); n: next pair",
                                elem_id="arena-reveal")
            with gr.Row(elem_classes=["arena-vote-buttons"]):
                buttons = {choice: gr.Button(label, elem_id=f"arena-vote-{choice.replace('_', '-')}", min_width=80,
                                             interactive=False, variant="primary")
                           for choice, label in CHOICE_LABELS.items()}
                next_button = gr.Button("Next pair", variant="secondary", elem_id="arena-next", min_width=80)
        gr.Markdown("### Arena board")
        board_note = gr.Markdown(elem_id="arena-board-note")
        # Real tables (``_tables``), each scrolling in its own box with its names' column pinned (ARENA_CSS).
        board = gr.HTML(elem_id="arena-board", elem_classes=["arena-table"], js_on_load=None, container=False,
                        padding=False)
        metrics = gr.HTML(elem_id="arena-metrics", elem_classes=["arena-table"], js_on_load=None, container=False,
                          padding=False)
        with gr.Row():
            include_flagged = gr.Checkbox(False, label="Count flagged raters' votes", elem_id="arena-flagged")
            refresh_button = gr.Button("Refresh the Arena board", elem_id="arena-refresh", size="sm")
        if oauth and space_owner() is not None:  # the host's view of the signals, on the owner's own sign-in
            with gr.Accordion("For the Space's owner", open=False):
                host_button = gr.Button("Show the raters' signals", elem_id="arena-host-signals", size="sm")
                host_note = gr.Markdown(elem_id="arena-host-note")
                integrity = gr.Dataframe(headers=INTEGRITY_HEADERS, interactive=False, visible=False,
                                         elem_id="arena-integrity",
                                         label="Per rater: signals of rigging (docs/arena.md, Integrity)")
            host_button.click(guarded(host_signals), None, [integrity, host_note], api_name=False, queue=False)
        board_version = gr.State(None)  # the Arena's views_key the board was drawn from
        # The vote endpoints' raw API in one line (issue 39 point 6; gradio_compat says why and how).
        pass_values_through([tags_a, tags_b], {"type": "array", "title": "Error categories",
                                               "items": {"type": "integer", "enum": sorted(error_categories())}})
        one_line_input_count(VOTE_API_NAMES, lambda expected, got: (
            f"the Arena's vote takes {expected} values (null for the pair, which the server holds, then the error "
            f"categories of A and of B as lists of numbers); got {got}"))

        shown_images = gr.State([])  # the pair's image paths, between the two events below
        waiting = gr.State(None)  # what the countdown waits for: PAIR (the pace), VOTE (too quick) or None
        fresh = gr.State(False)  # a countdown's tick loaded a new pair (its images and buttons follow)
        countdown = gr.Timer(1.0, active=False)
        pair_outputs = [ticket, message, reference, report_a, report_b, shown_images, images, tags_a, tags_b, reveal,
                        waiting, countdown]
        shown_outputs = [images, started, *buttons.values()]
        board_outputs = [board, metrics, board_note, board_version]
        # The next pair in the page (bench/results/arena.md): no queue (its round trips would triple the latency), no
        # progress overlay on the outputs (drawing and removing it cost more than the answer), and the texts first:
        # filling the gallery in the same update held the new texts back until its images were laid out. The old
        # pair's images are hidden by the first event, so a study's text is never shown beside another's images.
        next_button.click(guarded(load), None, pair_outputs, api_name="arena_next", queue=False,
                          show_progress="hidden").then(guarded(show), [shown_images, ticket], shown_outputs,
                                                       api_name=False, queue=False, show_progress="hidden")
        # Opening the tab: the first pair (the same two steps) and the board as of now.
        tab.select(guarded(first), started, pair_outputs, api_name=False, queue=False, show_progress="hidden").then(
            guarded(show), [shown_images, ticket], shown_outputs, api_name=False, queue=False, show_progress="hidden")
        # The countdown: each second while the page waits on the pace; at its end the next pair (or "vote now").
        countdown.tick(guarded(tick), [waiting, ticket], [*pair_outputs, fresh], api_name=False, queue=False,
                       show_progress="hidden").then(guarded(show_new), [fresh, shown_images, ticket], shown_outputs,
                                                    api_name=False, queue=False, show_progress="hidden")

        def caster(choice: str):
            def cast(ticket_id: Optional[str], chosen_a: list[int], chosen_b: list[int],
                     profile: Optional[gr.OAuthProfile] = None):
                return vote(choice, ticket_id, chosen_a, chosen_b, profile)
            return cast

        # Unqueued like the rest of the page: a queued event leaves gradio 6.31's client warning "Method not
        # implemented." in the console as it closes the event stream (issue 37); none of these streams or reports
        # progress, and the store, not the queue, keeps a ticket to one vote.
        for choice, button in buttons.items():
            # the board follows the vote at once: this page's vote is counted in what it shows next
            button.click(guarded(caster(choice)), [ticket, tags_a, tags_b], [ticket, reveal],
                         api_name=f"arena_vote_{choice}", queue=False).then(
                guarded(voted), ticket, list(buttons.values()), api_name=False, queue=False,
                show_progress="hidden").then(guarded(refresh), include_flagged, board_outputs, api_name=False,
                                             queue=False).then(guarded(after_vote), ticket, [waiting, countdown],
                                                               api_name=False, queue=False, show_progress="hidden")
        for trigger in (refresh_button.click, tab.select, include_flagged.change):
            trigger(guarded(refresh), include_flagged, board_outputs, api_name=False, queue=False)
        if refresh_s:  # other visitors' votes: within the page's own refresh period
            gr.Timer(refresh_s).tick(guarded(follow), [board_version, include_flagged], board_outputs,
                                     api_name=False, queue=False, show_progress="hidden")
    return tab


def arena_demo(arena: Arena, *, rater: Optional[str] = None, oauth: bool = False,
               refresh_s: Optional[float] = None) -> Any:
    """A page of its own holding the Arena tab (tests; a host trying the Arena out). Launch it with
    ``assets.CSS``/``assets.HEAD`` for the vote bar and the keys."""
    import gradio as gr

    with gr.Blocks(title="ReXrank Arena") as demo:
        with gr.Tabs():
            with gr.Tab("Board", id="board"):
                gr.Markdown("The board's other tabs go here.")
            arena_tab(gr, arena, oauth=oauth, rater=rater, refresh_s=refresh_s)
    return demo

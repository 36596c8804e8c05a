"""A flow that respects the rater (issue 50 point 5): a refused "Next pair" keeps the pair being read on screen; the
pace's wait is a countdown that moves and loads the next pair when it ends (and a vote refused as too quick is told
when it counts); the rules (the Arena's own pace) are stated before the first pair; the vote buttons are the bar's
primary actions, at least 44 px high, and what the page answers is in live regions. Time comes from a clock the
test moves."""

from __future__ import annotations

import numpy as np

from rexrank.leaderboard.arena import PACE, Arena
from rexrank.leaderboard.arena_tab import ARENA_CSS, ARENA_HEAD, PAIR, TOUCH_PX, VOTE, arena_demo
from test_arena import store  # noqa: F401 - the fixture


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def _by_name(demo, name: str):
    found = [f for f in demo.fns.values() if f.fn is not None and f.fn.__name__ == name]
    assert found and all(f.fn.__wrapped__ is found[0].fn.__wrapped__ for f in found), name  # one function
    return found[0]


def _page(store):  # noqa: F811
    clock = Clock()
    arena = Arena(store, n_boot=0, rng=np.random.default_rng(0), clock=clock)
    demo = arena_demo(arena, rater="hf:ann")
    fns = {f.api_name: f for f in demo.fns.values() if f.api_name}
    return arena, clock, demo, fns


def test_a_refused_next_pair_keeps_the_pair_and_counts_down_to_the_next(store):  # noqa: F811
    """Before: the fifth "Next pair" within a minute emptied the reference and both reports and dropped the ticket,
    and "the next pair in N s" never moved."""
    import gradio as gr

    arena, clock, demo, fns = _page(store)
    skip = type(gr.skip())
    for _ in range(PACE.pairs_per_minute):
        shown = fns["arena_next"].fn()
        clock.now += 1
    ticket, reference, report_a = shown[0], shown[2], shown[3]
    assert ticket and reference and report_a
    refused = fns["arena_next"].fn()
    assert all(isinstance(v, skip) for v in refused[:9]), refused  # the ticket, texts, images and tags stay
    assert refused[9].startswith("slow down") and refused[9].endswith("the next pair in 56 s")
    assert refused[10] == PAIR and refused[11].constructor_args == {"active": True}
    tick = _by_name(demo, "tick")
    assert list(tick.outputs)[:12] == list(fns["arena_next"].outputs)
    clock.now += 30
    counting = tick.fn(PAIR, ticket)
    assert counting[9].endswith("the next pair in 26 s") and all(isinstance(v, skip) for v in counting[:9])
    assert counting[12] is False
    show_new = _by_name(demo, "show_new")
    assert all(isinstance(v, skip) for v in show_new.fn(False, [], ticket))  # no redraw while counting
    clock.now += 27
    loaded = tick.fn(PAIR, ticket)
    assert isinstance(loaded[0], str) and loaded[0] != ticket and loaded[2] and loaded[9] == ""
    assert loaded[10] is None and loaded[11].constructor_args == {"active": False} and loaded[12] is True
    assert show_new.fn(True, [], loaded[0])[2].constructor_args == {"interactive": True}  # its buttons live
    assert arena.ticket(loaded[0]) is not None and arena.ticket(ticket) is not None  # both pairs still on offer


def test_a_vote_refused_as_too_quick_is_told_when_it_counts(store):  # noqa: F811
    arena, clock, demo, fns = _page(store)
    ticket = fns["arena_next"].fn()[0]
    clock.now += 3
    state, message = fns["arena_vote_a"].fn(ticket, [], [])
    assert state == ticket and "vote again in 5 s" in message
    waiting, timer = _by_name(demo, "after_vote").fn(ticket)
    assert waiting == VOTE and timer.constructor_args == {"active": True}
    tick = _by_name(demo, "tick")
    clock.now += 2
    assert tick.fn(VOTE, ticket)[9].endswith("vote again in 3 s")
    clock.now += 3
    done = tick.fn(VOTE, ticket)
    assert done[9] == "Your vote counts now." and done[10] is None and done[11].constructor_args == {"active": False}
    state, message = fns["arena_vote_a"].fn(ticket, [], [])
    assert state is None and "A was" in message
    import gradio as gr

    assert all(isinstance(v, type(gr.skip())) for v in _by_name(demo, "after_vote").fn(None))  # voted: no countdown


def test_the_rules_come_before_the_first_pair_and_the_bar_is_for_voting(store):  # noqa: F811
    import gradio as gr

    arena, clock, demo, fns = _page(store)
    blocks = {getattr(b, "elem_id", None): b for b in demo.blocks.values()}
    intro = blocks["arena-intro"].value
    assert f"{PACE.min_view_s:g} s" in intro and f"{PACE.pairs_per_minute} pairs per {PACE.window_s:g} s" in intro
    votes = [b for b in demo.blocks.values()
             if isinstance(b, gr.Button) and (b.elem_id or "").startswith("arena-vote-")]
    assert len(votes) == 4 and all(b.variant == "primary" for b in votes)
    assert blocks["arena-next"].variant == "secondary"  # it was the bar's one primary button
    assert TOUCH_PX >= 44
    touch = f"#arena-vote-bar button, #arena-refresh {{ min-height: {TOUCH_PX}px; min-width: {TOUCH_PX}px; }}"
    assert touch in ARENA_CSS
    assert "board-live" in blocks["arena-message"].elem_classes  # a live region (gradio_compat.LIVE_REGION_HEAD)
    assert 'live.className = "board-live"' in ARENA_HEAD and "live.textContent = reveal.value" in ARENA_HEAD


def test_a_second_page_of_the_rater_says_where_the_pairs_are(store):  # noqa: F811
    """Before: a page opened while the rater's other page had taken the minute's pairs showed only "slow down" over
    empty boxes. Now it says why it has no pair and what to do, above the empty pair, and counts down to one; a page
    that already shows a pair is left as it is."""
    import gradio as gr

    from rexrank.leaderboard.arena_tab import OTHER_PAGES

    arena, clock, demo, fns = _page(store)
    first = _by_name(demo, "first")
    shown = first.fn(False)  # the first page opens the tab
    assert shown[0] and shown[1].startswith("Study ")
    for _ in range(PACE.pairs_per_minute - 1):
        clock.now += 1
        fns["arena_next"].fn()
    second = first.fn(False)  # a second page (or tab) of the same rater opens the tab
    assert second[1] == OTHER_PAGES and "another page" in second[1] and second[9].startswith("slow down")
    assert isinstance(second[0], type(gr.skip())) and second[10] == PAIR
    assert second[11].constructor_args == {"active": True}
    assert all(isinstance(v, type(gr.skip())) for v in first.fn(True))  # a page with a pair keeps it
    clock.now += PACE.window_s
    loaded = _by_name(demo, "tick").fn(PAIR, None)
    assert loaded[0] and loaded[1].startswith("Study ") and loaded[12] is True  # the countdown brought a pair

"""The Arena tab's wiring (issue 28 point 2): with OAuth the signed-in profile is the rater (gradio injects it), a
login button is shown, the pair's answer holds no model name, a vote reveals both, and a signed-out user is told
to sign in."""

from __future__ import annotations

import re
from typing import get_type_hints

import pytest

import numpy as np

from rexrank.leaderboard.arena import NO_PACE, Arena
from rexrank.leaderboard.arena_tab import arena_demo
from test_arena import MODELS, _keep, store  # noqa: F401 - the fixture


def test_oauth_profile_is_the_rater(store, monkeypatch):  # noqa: F811
    import gradio as gr

    monkeypatch.setattr("gradio.routes.attach_oauth", lambda app: None)  # the routes need a Space; not tested here
    arena = Arena(store, n_boot=20, rng=np.random.default_rng(0), pace=NO_PACE)
    demo = arena_demo(arena, oauth=True)
    assert any(isinstance(block, gr.LoginButton) for block in demo.blocks.values())
    fns = {f.api_name: f.fn for f in demo.fns.values() if f.api_name}
    assert get_type_hints(fns["arena_next"])["profile"] == gr.OAuthProfile | None
    assert get_type_hints(fns["arena_vote_a"])["profile"] == gr.OAuthProfile | None

    def profile(user):
        return gr.OAuthProfile({"name": user, "preferred_username": user, "profile": "", "picture": ""})

    out = fns["arena_next"](None)
    assert not isinstance(out[0], str) and "sign in" in out[9]  # no ticket; the refusal in the vote bar
    out = fns["arena_next"](profile("Alice"))
    ticket, shown = out[0], repr(out[1:])
    assert ticket and not any(m in shown for m in MODELS)
    # bob cannot use alice's ticket; alice can, once; the tags arrive as the API sends them (digit strings)
    assert "not shown to you" in fns["arena_vote_b"](ticket, [], [], profile("bob"))[1]
    state, message = fns["arena_vote_b"](ticket, ["2"], [], profile("alice"))
    assert state is None and sum(m in message for m in MODELS) == 2
    (vote,) = arena.votes()
    assert vote["rater"] == "hf:alice" and vote["tags"] == {"a": [2], "b": []} and vote["choice"] == "b"
    assert "not shown to you" in fns["arena_vote_b"](ticket, [], [], profile("alice"))[1]
    assert "No pair to vote on" in fns["arena_vote_a"](None, [], [], profile("alice"))[1]


def test_next_pair_sends_texts_first_and_images_after(store, tmp_path):  # noqa: F811
    """The page path of the next pair (bench/results/arena.md): its event carries no progress overlay and no image, it
    hides the old pair's gallery, and an event chained after it shows the new pair's images, only those."""
    import gradio as gr

    from rexrank.leaderboard.arena import images_from_folder

    for k in range(12):
        (tmp_path / f"s{k:03d}-1001.png").write_bytes(b"\x89PNG")
    arena = Arena(store, n_boot=0, rng=np.random.default_rng(0), images=images_from_folder(tmp_path))
    demo = arena_demo(arena, rater="hf:ann")
    fns = list(demo.fns.values())
    (first,) = [f for f in fns if f.api_name == "arena_next"]
    (then,) = [f for f in fns if f.trigger_after == first._id]
    gallery = [b for b in demo.blocks.values() if isinstance(b, gr.Gallery)]
    assert first.show_progress == "hidden" and then.show_progress == "hidden" and not first.queue
    assert gallery and list(then.outputs)[0] == gallery[0] and gallery[0] in first.outputs
    out = first.fn()
    index = list(first.outputs).index(gallery[0])
    assert out[index].constructor_args == {"visible": False}  # what the update sends: hidden, no image
    (paths,) = [v for v in out if isinstance(v, list) and v and str(v[0]).endswith(".png")]
    study = out[1].split("Study ")[1].split(":")[0]
    assert paths == [str(tmp_path / f"{study}-1001.png")]
    shown = then.fn(paths, out[0])
    assert shown[0].constructor_args == {"value": paths, "visible": True}


EVIL = "Evil [claim your prize](https://evil.example/x) **B was MedVersa** <b>x</b>"


def _fns(demo):
    return {f.api_name: f for f in demo.fns.values() if f.api_name}


def test_revealed_names_are_plain_text(tmp_path):
    """Issue 39 point 4: the reveal was Markdown built with f"A was **{name}**": a model named with a link and a fake
    "B was MedVersa" showed as both. Now the answer to a vote goes to a read-only Textbox, the name as written."""
    import gradio as gr

    from rexrank.leaderboard.store import Store

    s = Store(tmp_path / "b.sqlite")
    _keep(s, models=(EVIL, "plain-model"), n_studies=2, quality={EVIL: 0.1, "plain-model": 0.2})
    arena = Arena(s, n_boot=0, rng=np.random.default_rng(0), pace=NO_PACE)
    demo = arena_demo(arena, rater="hf:ann")
    fn = _fns(demo)["arena_vote_a"]
    (reveal,) = [b for b in demo.blocks.values() if getattr(b, "elem_id", None) == "arena-reveal"]
    assert isinstance(reveal, gr.Textbox) and not reveal.interactive and list(fn.outputs)[1] is reveal
    ticket = _fns(demo)["arena_next"].fn()[0]
    _, message = fn.fn(ticket, [], [])
    assert EVIL in message and "**" not in message.replace(EVIL, "")
    assert not any(isinstance(b, gr.Markdown) and b in fn.outputs for b in demo.blocks.values())
    s.close()


def test_the_vote_api_answers_in_one_line_and_says_what_it_accepts(store):  # noqa: F811
    """Issue 39 point 6, through gradio's own request path (``Blocks.process_api``): a tag outside the six (even
    one spanning lines) gets Arena.vote's one line, not gradio's multi-line echo of the input; two values instead of
    three get one line, not the components' object addresses; /gradio_api/info types the tags as integers."""
    import asyncio

    import gradio as gr
    from gradio.state_holder import SessionState

    arena = Arena(store, n_boot=0, rng=np.random.default_rng(0), pace=NO_PACE)
    demo = arena_demo(arena, rater="hf:ann")
    fns = _fns(demo)
    vote = fns["arena_vote_a"]
    tags = [b for b in vote.inputs if isinstance(b, gr.CheckboxGroup)]
    assert len(tags) == 2
    for box in tags:
        info = box.api_info_as_input()
        assert info["type"] == "array" and info["items"]["type"] == "integer"
        assert info["items"]["enum"] == [1, 2, 3, 4, 5, 6]

    state = SessionState(demo)

    def call(inputs, fn=vote):
        return asyncio.run(demo.process_api(block_fn=fn, inputs=inputs, state=state))

    call([], fns["arena_next"])  # the session's pair, held by the server
    message = call([None, ["9\nDROP TABLE votes", 1], []])["data"][1]
    assert message.startswith("error tags are category numbers") and "\n" not in message and "DROP" not in message
    assert arena.votes() == []
    with pytest.raises(gr.Error) as refused:
        call([None, []])
    text = str(refused.value)
    assert "\n" not in text and "object at 0x" not in text and "takes 3 values" in text and "got 2" in text


def test_humans_vs_metrics_shows_display_names(store):  # noqa: F811
    """Issue 37 point 7: the table said ``bleu2`` where every other view says BLEU (the MetricSpec's leaderboard
    column)."""
    arena = Arena(store, n_boot=0, rng=np.random.default_rng(0), pace=NO_PACE)
    demo = arena_demo(arena, rater="hf:ann")
    fns = _fns(demo)
    for _ in range(24):  # a metric is shown from HVM_MIN_DECISIVE decisive votes
        ticket = fns["arena_next"].fn()[0]
        fns["arena_vote_a"].fn(ticket, [], [])
    for other in ("hf:bob", "hf:cy"):
        for vote in arena.votes()[:24]:
            store.add_vote({**vote, "rater": other, "by": other})
    (refresh,) = [f for f in demo.fns.values() if f.trigger_after == fns["arena_vote_a"]._id]
    (board,) = [f for f in demo.fns.values() if f.trigger_after == refresh._id]
    shown = board.fn(False)[1]  # the humans-vs-metrics table (HTML): a row header per metric, its display name
    assert re.findall(r'<th scope="row"[^>]*>([^<]*)</th>', shown) == ["BLEU"]
    assert [m["label"] for m in arena.humans_vs_metrics()] == ["BLEU"]


def test_a_vote_locks_the_buttons_and_the_board_counts_it(store):  # noqa: F811
    """Issue 37 point 1: after a vote the buttons lock (until the next pair's images event makes them live) and the
    board, redrawn by the events chained after the vote, counts it; a vote refused as too quick keeps them live.
    Opening the tab loads the first pair once: opening it again keeps what is shown."""
    import gradio as gr

    clock = [1000.0]
    arena = Arena(store, n_boot=0, rng=np.random.default_rng(0), clock=lambda: clock[0])
    demo = arena_demo(arena, rater="hf:ann")
    fns = _fns(demo)
    buttons = [b for b in demo.blocks.values() if isinstance(b, gr.Button)
               and (b.elem_id or "").startswith("arena-vote-")]
    assert len(buttons) == 4 and all(isinstance(b, gr.Button) and not b.interactive for b in buttons)
    (lock,) = [f for f in demo.fns.values() if f.trigger_after == fns["arena_vote_a"]._id]
    (board,) = [f for f in demo.fns.values() if f.trigger_after == lock._id]
    assert list(lock.outputs) == buttons
    (first,) = [f for f in demo.fns.values() if f.fn is not None and f.fn.__name__ == "first"]
    out = first.fn(False)
    ticket = out[0]
    assert ticket and out[1].startswith("Study ")
    assert all(isinstance(v, type(gr.skip())) for v in first.fn(True))  # opened again: nothing replaced
    (show,) = [f for f in demo.fns.values() if f.trigger_after == first._id]
    assert all(b.constructor_args == {"interactive": True} for b in show.fn([], ticket)[2:])
    state, message = fns["arena_vote_a"].fn(ticket, [], [])  # too quick: refused, pair kept
    assert state == ticket and "too quick" in message
    assert all(b.constructor_args == {"interactive": True} for b in lock.fn(state))
    clock[0] += 10
    state, message = fns["arena_vote_a"].fn(ticket, [], [])
    assert state is None and "A was" in message
    assert all(b.constructor_args == {"interactive": False} for b in lock.fn(state))
    assert board.fn(False)[2].startswith("1 vote counted.")


def test_reports_are_readable_text_never_markup(tmp_path):
    """Issue 50 point 5: the reference and reports were disabled textboxes (a screen reader reads a disabled field);
    now text under a heading, every character of a submitter's report escaped: no tag, no template, no Markdown."""
    import html
    import re

    import gradio as gr

    from rexrank.leaderboard.arena_tab import readable
    from rexrank.leaderboard.store import Store

    evil = 'no acute disease.\n<img src=x onerror="alert(1)"> ${1+1} **bold** & </p><script>x()</script>'
    s = Store(tmp_path / "b.sqlite")
    s.keep_reports(dataset="iu_xray", split="test", track="findings", model="m-evil", result_hash="h1",
                   rows=[("s000", evil, "reference <b>clear</b>", {"bleu2": 0.1})])
    s.keep_reports(dataset="iu_xray", split="test", track="findings", model="m-plain", result_hash="h2",
                   rows=[("s000", "plain report", "reference <b>clear</b>", {"bleu2": 0.2})])
    arena = Arena(s, n_boot=0, rng=np.random.default_rng(0), pace=NO_PACE)
    demo = arena_demo(arena, rater="hf:ann")
    out = _fns(demo)["arena_next"].fn()
    texts = [out[3], out[4]]
    shown = next(t for t in texts if "onerror" in t)
    assert "<img" not in shown and "<script" not in shown and "${" not in shown and shown.count("</p>") == 1
    (body,) = re.findall(r'<p class="arena-text">(.*)</p></div>$', shown, flags=re.S)
    assert html.unescape(body) == evil  # the text itself, exactly
    assert 'aria-level="3">Report ' in shown and "&lt;b&gt;clear" in out[2]
    for elem_id in ("arena-reference", "arena-report-a", "arena-report-b"):
        (block,) = [b for b in demo.blocks.values() if getattr(b, "elem_id", None) == elem_id]
        assert isinstance(block, gr.HTML) and not isinstance(block, gr.Textbox)
    assert readable("Report A", "") == ""
    s.close()

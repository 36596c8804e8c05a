"""Signals for the host only (issue 50 point 3): the rater integrity table (each rater's id, votes, one-sided model
and z) left the public page. After one vote, nothing the page or its API sends a visitor names a rater or holds
per-rater data; the host reads the table with `rexrank leaderboard arena-integrity`, or on the Space signed in as its
owner."""

from __future__ import annotations

import json

import numpy as np

from rexrank.leaderboard.arena import INTEGRITY_COLUMNS, NO_PACE, Arena
from rexrank.leaderboard.arena_tab import arena_demo
from test_arena import _keep, store  # noqa: F401 - the fixture

# what a per-rater row would hold: the rater's name and the integrity table's own columns
PER_RATER = ("ann", "one-sided", "agreement with raters", "tandem", "median s between")


def _public_answers(demo, arena: Arena) -> str:
    """Everything the page sends a visitor after one vote by hf:ann: its config (every component's initial value,
    the API's description) and the answers of every event a visitor can call, as text."""
    sent = [json.dumps(demo.config, default=str)]
    fns = list(demo.fns.values())
    for f in fns:
        if f.fn is None:
            continue
        name = f.fn.__name__
        if name in ("refresh", "follow"):
            sent.append(repr(f.fn(None, False) if name == "follow" else f.fn(False)))
            sent.append(repr(f.fn(None, True) if name == "follow" else f.fn(True)))
    return "\n".join(sent)


def test_after_one_vote_the_public_page_names_no_rater(store):  # noqa: F811
    """Before: the accordion "Rater integrity (for the host)" sent every visitor hf:ann's row (their one-sided
    model: the model they preferred) with the board."""
    arena = Arena(store, n_boot=50, rng=np.random.default_rng(0), pace=NO_PACE)
    demo = arena_demo(arena, rater="hf:ann")
    fns = {f.api_name: f.fn for f in demo.fns.values() if f.api_name}
    ticket = fns["arena_next"]()[0]
    state, message = fns["arena_vote_a"](ticket, [], [])
    assert state is None and "A was" in message  # the voter's own answer names the models, not others' votes
    assert len(arena.integrity()) == 1  # the host's table has ann's row
    sent = _public_answers(demo, arena)
    assert "refresh" in {f.fn.__name__ for f in demo.fns.values() if f.fn is not None}
    for word in PER_RATER:
        assert word not in sent.lower(), word
    assert "arena-integrity" not in sent  # no such component on a visitor's page


def test_the_space_owner_signed_in_sees_the_table_and_no_one_else(store, monkeypatch):  # noqa: F811
    import gradio as gr

    monkeypatch.setattr("gradio.routes.attach_oauth", lambda app: None)
    monkeypatch.setenv("SPACE_AUTHOR_NAME", "Host")
    arena = Arena(store, n_boot=0, rng=np.random.default_rng(0), pace=NO_PACE)
    arena.vote("hf:ann", arena.next_pair("hf:ann").ticket, "a")
    demo = arena_demo(arena, oauth=True)
    (signals,) = [f.fn for f in demo.fns.values() if f.fn is not None and f.fn.__name__ == "host_signals"]

    def profile(user):
        return gr.OAuthProfile({"name": user, "preferred_username": user, "profile": "", "picture": ""})

    for visitor in (None, profile("ann"), profile("hostile")):
        table, note = signals(visitor)
        assert table.constructor_args.get("value") is None and not table.constructor_args["visible"]
        assert "Only the Space's owner" in note and "hf:ann" not in note
    table, note = signals(profile("host"))
    assert table.constructor_args["visible"] and table.constructor_args["value"][0][0] == "hf:ann"
    assert note == ""


def test_no_owner_no_signals_on_the_page(store, monkeypatch):  # noqa: F811
    """Off a Space (no SPACE_AUTHOR_NAME) or without sign-in, the page has no owner's view at all."""
    monkeypatch.delenv("SPACE_AUTHOR_NAME", raising=False)
    arena = Arena(store, n_boot=0, pace=NO_PACE)
    demo = arena_demo(arena, rater="hf:ann")
    assert not any(f.fn is not None and f.fn.__name__ == "host_signals" for f in demo.fns.values())


def test_the_host_reads_the_signals_with_the_cli(store, cli, tmp_path):  # noqa: F811
    arena = Arena(store, n_boot=0, rng=np.random.default_rng(0), pace=NO_PACE)
    for rater in ("hf:ann", "hf:bob"):
        arena.vote(rater, arena.next_pair(rater).ticket, "a")
    code, out = cli("leaderboard", "arena-integrity", "--store", str(store.path))
    assert code == 0, out
    lines = out.strip().splitlines()
    assert lines[0].split("  ")[0] == "rater" and "one-sided z" in lines[0]
    assert {line.split()[0] for line in lines[1:]} == {"hf:ann", "hf:bob"}
    code, out = cli("leaderboard", "arena-integrity", "--store", str(store.path), "--json")
    rows = [json.loads(line) for line in out.strip().splitlines()]
    assert code == 0 and {r["rater"] for r in rows} == {"hf:ann", "hf:bob"} and set(rows[0]) == set(INTEGRITY_COLUMNS)
    code, out = cli("leaderboard", "arena-integrity", "--store", str(tmp_path / "nowhere.sqlite"))
    assert code != 0 and "no store at" in out and "Traceback" not in out
    assert not (tmp_path / "nowhere.sqlite").exists()
    code, out = cli("leaderboard", "arena-integrity", "--store", str(store.path), "--dataset", "mimic_cxr")
    assert code != 0 and "may not be shown in the Arena" in out and "Traceback" not in out

"""The Arena's views follow the log vote by vote (issue 50 point 4: a redraw after a vote rebuilt everything from
every event, 2.67 s of CPU at 100,000 votes): what an Arena that drew its views after every event holds equals, byte
for byte, what a fresh Arena computes from the whole log at once, over random streams of votes that move raters'
caps (a fan voting for one model until flagged), tandem votes, a model scored late, the host's decisions
(expert, excluded: a rater's votes withdrawn, then back) and votes pulled from the Hub that sort before ones read."""

from __future__ import annotations

import time

import numpy as np
import pytest

from rexrank.leaderboard.arena import NO_PACE, Arena, Votes, _sigmoid, fit, fit_wins, rater_weights
from rexrank.leaderboard.store import DuplicateVote, Store, make_vote
from test_arena import MODELS, _keep, store  # noqa: F401 - the fixture

LATE = "epsilon-late"  # scored mid-stream: its reports kept (the metrics move), then its votes
ALL = (*MODELS, LATE)
STUDIES = 30


def _vote(arena: Arena, at: float, rater: str, study: int, a: str, b: str, choice: str) -> dict:
    return make_vote(at=at, rater=rater, expert=False, dataset=arena.dataset, split=arena.split, track=arena.track,
                     study=f"s{study:03d}", models=(a, b), choice=choice, tags={}, version=arena.app_version)


def _stream(store: Store, arena: Arena, rng: np.random.Generator, n: int):
    """Yield after each event added to ``store``'s log: votes of 8 raters, a fan of the first model (flagged once
    it has 15 votes on it: its cap and everyone's median move), a rater voting in tandem (0.3 s apart), the host's
    decisions, and now and then a vote from the Hub timed before the last one read (the follower reads the log
    again)."""
    now = time.time()
    for step in range(n):
        now += float(rng.uniform(0.2, 30.0))
        kind = rng.random()
        if step in (n // 3, 2 * n // 3):
            store.add_rater_event("hf:r1", "excluded" if step == n // 3 else "rater")  # withdrawn, then back
        elif step == n // 2:
            store.add_rater_event("hf:r2", "expert")
        elif step == n // 2 + 10:  # no host's decision here: the log is followed on, the metrics change
            _keep(store, models=(LATE,), n_studies=STUDIES, quality={LATE: 0.35})
            _keep(store, models=(MODELS[0],), n_studies=STUDIES, quality={MODELS[0]: 0.9})  # rescored: worst to best
        else:
            models = ALL if step > n // 2 + 10 else MODELS
            a, b = (str(m) for m in rng.choice(models, 2, replace=False))
            if kind < 0.15:
                rater, a, b, choice = "hf:fan", MODELS[0], b if b != MODELS[0] else a, "a"
            elif kind < 0.25:
                rater, choice = "hf:tandem", str(rng.choice(["a", "b", "tie", "both_bad"]))
                now -= float(rng.uniform(0.0, 29.0))  # within TANDEM_S of its previous vote, often
            else:
                rater, choice = f"hf:r{int(rng.integers(0, 8))}", str(rng.choice(["a", "b", "tie"], p=[.45, .45, .1]))
            event = _vote(arena, now, rater, int(rng.integers(0, STUDIES)), a, b, choice)
            try:
                if kind > 0.97:  # from the Hub: an earlier time, kept as it is
                    store.add_events([{**event, "at": now - 400.0}])
                else:
                    store.add_vote(event)
            except DuplicateVote:
                continue
        yield step


def _views(arena: Arena) -> dict:
    """Everything a page or the host reads, as bytes or repr (NaN cells compare)."""
    out = {}
    for include in (False, True):
        board = arena.board(include_flagged=include)
        out[f"board {include}"] = (board.models, [np.asarray(getattr(board, f)).tobytes() for f in
                                                  ("strength", "low", "high", "rank", "rank_low", "rank_high",
                                                   "n_votes", "ranked", "raters")])
        out[f"rows {include}"] = repr(arena.board_rows(include_flagged=include))
    raters, models, wins = arena._sums()
    out["sums"] = (raters, models, wins.tobytes())
    out["flagged"] = arena.flagged()
    out["integrity"] = repr(arena.integrity())
    out["humans vs metrics"] = repr(arena.humans_vs_metrics())
    out["agreement"] = repr(arena.agreement())
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_views_followed_vote_by_vote_equal_a_full_recompute(tmp_path, seed):
    store = Store(tmp_path / "b.sqlite")
    _keep(store, n_studies=STUDIES)
    arena = Arena(store, n_boot=50, pace=NO_PACE)
    flagged_seen, resets = set(), 0
    for step in _stream(store, arena, np.random.default_rng(seed), 240):
        counted = arena._counted
        incremental = _views(arena)  # drawn after every event: each view follows from the last
        resets += arena._counted is not counted
        flagged_seen |= set(incremental["flagged"])
        if step % 40 == 39:
            assert _views(Arena(store, n_boot=50, pace=NO_PACE)) == incremental, step
    assert _views(Arena(store, n_boot=50, pace=NO_PACE)) == _views(arena)
    # the stream did what it says
    assert "hf:fan" in flagged_seen and resets >= 3, (flagged_seen, resets)
    assert LATE in arena.board().models and arena.roles() == {"hf:r1": "rater", "hf:r2": "expert"}
    rows = {r["rater"]: r for r in arena.integrity()}
    assert rows["hf:tandem"]["tandem votes"] > 0 and rows["hf:fan"]["flagged"]
    assert len(arena.humans_vs_metrics()) == 1 and arena.agreement()["items"] > 0
    store.close()


def test_the_sums_give_the_per_vote_definitions(tmp_path):
    """The views now read sums per (rater, model, model) cell; they agree (to rounding) with the definitions per
    vote: the board with ``Votes.of``'s weights (``rater_weights``) and ``fit``, the one-sided z with a
    leave-one-rater-out fit and a sum over each rater's votes, the agreement with ``Votes``-free counting."""
    store = Store(tmp_path / "b.sqlite")
    _keep(store, n_studies=STUDIES)
    arena = Arena(store, n_boot=0, pace=NO_PACE)
    for _ in _stream(store, arena, np.random.default_rng(7), 200):
        pass
    votes, flagged, roles = arena.votes(), arena.flagged(), arena.roles()
    assert flagged  # the fan: the board below leaves it out
    counted = [v for v in votes if v["rater"] not in flagged]
    models = sorted({m for v in counted for m in v["models"]})
    experts = frozenset(r for r, role in roles.items() if role == "expert")
    by_vote = fit(Votes.of(models, counted, exempt=experts), n_boot=0)
    board = arena.board()
    assert board.models == models
    np.testing.assert_allclose(board.strength, by_vote.strength, atol=1e-9)
    np.testing.assert_array_equal(board.n_votes, by_vote.n_votes)
    np.testing.assert_array_equal(board.raters, by_vote.raters)
    np.testing.assert_array_equal(board.ranked, by_vote.ranked)
    # the one-sided z of each rater, vote by vote
    raters, names, z, count = arena._one_sided()
    table = Votes.of(names, votes)
    who = np.array([raters.index(v["rater"]) for v in votes])
    per = np.zeros((len(raters), len(names), len(names)))
    np.add.at(per, (who, table.a, table.b), table.score_a)
    np.add.at(per, (who, table.b, table.a), 1 - table.score_a)
    others = fit_wins(per.sum(0) - per, start=fit_wins(per.sum(0)))
    p = _sigmoid(others[who, table.a] - others[who, table.b])
    sums = np.zeros((3, len(raters), len(names)))
    for side, score, p_side in ((table.a, table.score_a, p), (table.b, 1 - table.score_a, 1 - p)):
        np.add.at(sums, (0, who, side), score - p_side)
        np.add.at(sums, (1, who, side), p_side * (1 - p_side))
        np.add.at(sums, (2, who, side), 1)
    np.testing.assert_allclose(z, np.where(sums[1] > 0, sums[0] / np.sqrt(np.maximum(sums[1], 1e-12)), 0), atol=1e-9)
    np.testing.assert_array_equal(count, sums[2])
    assert rater_weights(who, table.a, table.b, len(names)).min() < 1  # the cap bit somewhere in the stream
    store.close()


def test_a_redraw_after_a_vote_walks_no_event_and_a_page_fetches_only_a_change(store, monkeypatch):  # noqa: F811
    """Before: the redraw after a vote built the weighted votes (``Votes.of``) and the host's integrity table from
    every event (2.67 s at 100,000 votes; bench/arena.py --redraw). Now the page's redraw reads the ``Tally`` followed
    by one vote, and an open page's periodic check sends nothing while the votes are unchanged."""
    import gradio as gr

    import rexrank.leaderboard.arena as arena_module
    from rexrank.leaderboard import arena_tab

    arena = Arena(store, n_boot=50, rng=np.random.default_rng(0), pace=NO_PACE)
    demo = arena_tab.arena_demo(arena, rater="hf:ann", refresh_s=5)
    follow = next(f.fn for f in demo.fns.values() if f.fn is not None and f.fn.__name__ == "follow")
    for rater in ("hf:ann", "hf:bob", "hf:ann"):
        arena.vote(rater, arena.next_pair(rater).ticket, "a")
    arena_tab._board(arena)
    shown = arena.views_key()
    tally = arena._tally
    walked = []
    monkeypatch.setattr(arena_module.Votes, "of", lambda *a, **k: walked.append("Votes.of"))
    monkeypatch.setattr(Arena, "_integrity_rows", lambda self: walked.append("integrity"))
    assert follow(shown, False) == [gr.skip()] * 4  # nothing changed: nothing sent
    arena.vote("hf:cy", arena.next_pair("hf:cy").ticket, "b")
    rows, _, note, version = arena_tab._board(arena) + (arena.views_key(),)
    assert walked == [] and arena._tally is tally and tally.upto == 4, walked
    assert note.startswith("4 votes counted.") and sum(r[-2] for r in rows) == 8  # each vote counts for two models
    assert follow(shown, False)[3] == version != shown  # changed: the board is sent, with its version

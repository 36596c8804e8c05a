"""A young Arena nobody can take (issue 50 point 2): the issue's rigging simulation with the real ``Arena``, a test
clock, 6 models (the target at true rank 4), honest raters voting once a minute and 1-3 rigging accounts voting as
fast as the pace allows, naive or z-aware (backing its model only while its own one-sided z stays under 3, under the
flag). The target is never shown above the rank interval the honest votes alone give it, young (10 minutes) or
mature (40); honest raters' boards still find the true order. Time comes from a clock the tests move."""

from __future__ import annotations

import time

import numpy as np
import pytest

from rexrank.errors import InputError
from rexrank.leaderboard.arena import PACE, PRELIMINARY, Arena, Votes, fit
from rexrank.leaderboard.store import Store

SIX = ("m1-best", "m2-good", "m3-fair", "m4-target", "m5-weak", "m6-worst")
TRUE = dict(zip(SIX, (0.75, 0.45, 0.15, -0.15, -0.45, -0.75)))  # true ranks 1..6
TARGET = "m4-target"
STUDIES = 100


def _text(model: str, k: int) -> str:
    return f"report {model} {k}: no acute disease."


def _arena(tmp_path, seed: int) -> tuple[Arena, "Clock"]:
    s = Store(tmp_path / f"rig{seed}.sqlite")
    for model in SIX:
        s.keep_reports(dataset="iu_xray", split="test", track="findings", model=model, result_hash=f"h-{model}",
                       rows=[(f"s{k:03d}", _text(model, k), f"reference {k}", {"bleu2": TRUE[model]})
                             for k in range(STUDIES)])
    clock = Clock()
    return Arena(s, n_boot=400, clock=clock, rng=np.random.default_rng(seed)), clock


class Clock:
    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


def _honest(rng, a: str, b: str) -> str:
    p = 1 / (1 + np.exp(-(TRUE[a] - TRUE[b])))
    tie = 0.2 * min(p, 1 - p)
    u = rng.random()
    return "a" if u < p - tie / 2 else ("tie" if u < p + tie / 2 else "b")


def run(arena: Arena, clock: Clock, rng, *, minutes: int, honest: int, riggers: int, z_aware: bool,
        tandem: bool = False) -> dict:
    """Honest raters read a pair for 20 s once a minute; each rigging account asks for a pair as soon as the pace
    allows, waits the minimum time and votes for the target whenever one side is its text (a submitter knows its
    reports word for word), else a tie. A z-aware account backs the target only while its one-sided z (the flag's
    own statistic, which the docs define) is under 3, and otherwise votes as the honest do. ``tandem``: each account
    holds its pairs in several tabs and votes them together, 0.03 s apart."""
    own = {_text(TARGET, k) for k in range(STUDIES)}
    held: dict[str, list] = {}
    cast = {"honest": 0, "rigger": 0}
    backing = {f"hf:rigger{k}": True for k in range(riggers)}
    start, step = clock.now, 5.0
    for tick in range(int(minutes * 60 / step)):
        clock.now = start + tick * step
        for r in range(honest):
            rater, phase = f"hf:honest{r}", (tick - r) % 12
            if phase == 0:
                held[rater] = [(arena.next_pair(rater), clock.now)]
            elif phase == 4 and held.get(rater):
                pair, _ = held.pop(rater)[0]
                arena.vote(rater, pair.ticket, _honest(rng, *arena.ticket(pair.ticket).models))
                cast["honest"] += 1
        if z_aware and tick % 12 == 0 and riggers:  # once a minute: where the flag stands for each account
            rows = {row["rater"]: row for row in arena.integrity()}
            for rater in backing:
                row = rows.get(rater)
                backing[rater] = row is None or row["one-sided model"] != TARGET or row["one-sided z"] < 3.0
        for k in range(riggers):
            rater = f"hf:rigger{k}"
            pairs = held.setdefault(rater, [])
            while len(pairs) < (PACE.pairs_per_minute if tandem else 1):
                try:
                    pairs.append((arena.next_pair(rater), clock.now))
                except InputError:
                    break
            ready = [(pair, since) for pair, since in pairs if clock.now - since >= arena.pace.min_view_s]
            if tandem and len(ready) < len(pairs):
                continue  # the tabs vote together
            for n, (pair, since) in enumerate(ready):
                pairs.remove((pair, since))
                if backing[rater] and (pair.report_a in own or pair.report_b in own):
                    choice = "a" if pair.report_a in own else "b"
                elif backing[rater]:
                    choice = "tie"
                else:
                    choice = _honest(rng, *arena.ticket(pair.ticket).models)
                clock.now += 0.03 * (n > 0)
                arena.vote(rater, pair.ticket, choice)
                cast["rigger"] += 1
    return cast


def _target(arena: Arena) -> tuple[object, int, int]:
    """(the target's shown rank: an int or PRELIMINARY, the low and high end of its rank interval from the honest
    votes alone, fitted as the board fits)."""
    shown = {row["model"]: row["rank"] for row in arena.board_rows()}[TARGET]
    honest = [v for v in arena.votes() if v["rater"].startswith("hf:honest")]
    models = sorted({m for v in honest for m in v["models"]})
    alone = fit(Votes.of(models, honest), n_boot=arena.n_boot, min_votes=0, min_raters=0)
    i = alone.models.index(TARGET)
    return shown, int(alone.rank_low[i]), int(alone.rank_high[i])


def _never_above(shown, low: int) -> bool:
    return shown == PRELIMINARY or shown >= low


@pytest.mark.parametrize("riggers,z_aware,honest", [(1, False, 10), (2, False, 20), (3, False, 10), (1, True, 10),
                                                    (3, True, 20)])
def test_a_young_arena_is_not_taken(tmp_path, riggers, z_aware, honest):
    """The issue's table, first two rows (10 minutes: the target went to rank 1 [1-3] with one account, 1 [1-2] with
    two): with 1-3 accounts, naive or z-aware, the target is shown at or below its honest rank interval's top."""
    arena, clock = _arena(tmp_path, riggers * 10 + z_aware)
    run(arena, clock, np.random.default_rng(riggers + 7 * z_aware), minutes=10, honest=honest, riggers=riggers,
        z_aware=z_aware)
    shown, low, high = _target(arena)
    assert _never_above(shown, low), (shown, low, high)


@pytest.mark.slow
@pytest.mark.parametrize("riggers,z_aware", [(1, True), (3, True), (3, False)])
def test_a_mature_arena_is_not_taken(tmp_path, riggers, z_aware):
    """The issue's third row (40 minutes, 20 honest raters, an account that stops backing its model at z >= 3: never
    flagged, 128 votes): with 1 or 3 such accounts the target stays within its honest rank interval; 3 naive
    accounts are flagged and left out."""
    arena, clock = _arena(tmp_path, 40 + riggers + z_aware)
    run(arena, clock, np.random.default_rng(riggers), minutes=40, honest=20, riggers=riggers, z_aware=z_aware)
    shown, low, high = _target(arena)
    assert _never_above(shown, low), (shown, low, high)
    flagged = {row["rater"] for row in arena.integrity() if row["flagged"]}
    assert not any(r.startswith("hf:honest") for r in flagged)
    if not z_aware:
        assert flagged == {f"hf:rigger{k}" for k in range(riggers)}


@pytest.mark.slow
def test_honest_raters_boards_converge_as_before(tmp_path):
    """No rigger, 20 honest raters, 40 minutes: every model ranked, each rank interval holds its true rank, and the
    order is the true one up to one swap of neighbours (Kendall tau >= 0.86)."""
    from rexrank.leaderboard.arena import kendall_tau

    arena, clock = _arena(tmp_path, 5)
    run(arena, clock, np.random.default_rng(5), minutes=40, honest=20, riggers=0, z_aware=False)
    rows = arena.board_rows()
    assert len(rows) == 6 and all(r["rank"] != PRELIMINARY for r in rows)
    for row in rows:
        low, high = (int(x) for x in row["rank interval"].split("-"))
        assert low <= SIX.index(row["model"]) + 1 <= high, row
    assert kendall_tau(np.array([TRUE[r["model"]] for r in rows]), -np.array([r["rank"] for r in rows])) >= 0.86


def test_tandem_votes_are_a_signal(tmp_path):
    """Several tabs of one account voting together (0.03 s apart) were computed as a small median gap and used for
    nothing; now each vote within TANDEM_S of the rater's previous one is counted in the integrity table."""
    from rexrank.leaderboard.arena import TANDEM_S

    arena, clock = _arena(tmp_path, 99)
    run(arena, clock, np.random.default_rng(9), minutes=6, honest=5, riggers=1, z_aware=False, tandem=True)
    rows = {row["rater"]: row for row in arena.integrity()}
    assert TANDEM_S >= 0.5
    assert rows["hf:rigger0"]["tandem votes"] >= 10, rows["hf:rigger0"]
    assert all(row["tandem votes"] == 0 for rater, row in rows.items() if rater.startswith("hf:honest"))


def test_one_account_weighs_what_one_rater_does(tmp_path):
    """The young Arena of the issue's first row (10 honest raters, one naive account, 10 minutes): the account's
    votes, counted as an unflagged rater's (the flag may or may not have caught it yet), lift the target's strength
    by under 0.45 logits over the honest votes' fit (its weight is a median rater's: about 3 of its votes on the
    target count); the previous board weighed every vote and lifted it 0.85 here (0.35-1.11 over eight seeds; the
    new 0.14-0.39)."""
    arena, clock = _arena(tmp_path, 0)
    run(arena, clock, np.random.default_rng(100), minutes=10, honest=10, riggers=1, z_aware=False)
    everyone = arena.votes()  # the account's votes counted as the board counts an unflagged rater's
    board = fit(Votes.of(sorted({m for v in everyone for m in v["models"]}), everyone), n_boot=0)
    honest = [v for v in everyone if v["rater"].startswith("hf:honest")]
    alone = fit(Votes.of(sorted({m for v in honest for m in v["models"]}), honest), n_boot=0)
    gain = board.strength[board.models.index(TARGET)] - alone.strength[alone.models.index(TARGET)]
    assert 0 < gain < 0.45, gain

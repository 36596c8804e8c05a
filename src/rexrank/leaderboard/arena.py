"""The radiologist Arena: blind pairwise votes on two models' reports of one study, and the ranking they give.

What is compared: the reports a scored submission produced for a public test set (``Store.keep_reports``: never
a private set's) and the set's reference report, on one (test set, split, track). A signed-in rater is served one
study and two anonymised candidates (sides chosen by the server) under a ticket; the vote names only the ticket
and a choice, and the model names are revealed only in the answer to the vote.

Tickets (server-side, in the store: ``Store.issue_ticket``, ``TICKET_TTL_S``): a random id bound to the rater it
was issued to, the study, the two models and their sides; the store keeps only the id's sha256. A vote is accepted
only with a live ticket issued to the same rater, once (``Store.claim_ticket`` deletes it in one statement), so a
client can neither choose the pair, nor swap the sides, nor replay a vote, nor vote on a pair never shown to it; the
log's one-vote rule (``Store.add_vote``: one vote per rater per study and pair) holds across tickets. Being in the
store file, tickets outlive a restart and are shared by every server process on that file (a ticket issued by one
is honoured, once, by another; the pairing counts every process's live tickets). They are not events: never synced
to the Hub (a ticket names the pair before the vote), so a board rebuilt from the Hub starts with none.

Votes are events of the store's log (``store.make_vote``), synced to the Hub like results. The host's decisions
about raters are events too (``store.make_rater_event``): an ``expert`` is on the allow-list (their votes are
labelled expert; with ``experts_only`` only they may vote), an ``excluded`` rater's votes leave every view, which
recomputes from the log (``votes``).

The model (docs/arena.md "Uncertainty"): Bradley-Terry, P(i beats j) = sigmoid(s_i - s_j), ties (and "both
unacceptable") counted as half a win for each side, fitted as a Bayesian model: each strength a priori N(0,
``PRIOR_SD``^2), the posterior's mode the strength (centred, sum 0) and ``N_BOOT`` draws from its Laplace
approximation the intervals, for strengths and for ranks (a bootstrap over one vote gave a zero-width interval). Each
rater's votes on a model weigh at most ``max(RATER_FLOOR, RATER_MULTIPLE x the median rater's)`` (``rater_caps``;
experts in full), and a model is ranked only from ``MIN_RANK_VOTES`` weighted votes by ``MIN_RANK_RATERS`` raters
(``PRELIMINARY`` before).

Pairing (``next_pair``): among the pairs of models with reports on a common study that this rater has not voted on
there, pairs whose rank intervals overlap weigh 1 and others ``SEPARATED_WEIGHT``, divided by sqrt(1 + votes on the
pair) so far; a pair is drawn by weight, then a study of it with the fewest votes (ties at random), never a study
where a model of the pair was revealed to this rater. Sides: a fair coin per ticket from a seed derived from its
secret id (``side_seed``, ``sides``), logged with the vote for audit. The strengths the pairing reads are the last
board fitted (``board``), which a vote does not wait for.

Integrity (docs/arena.md, issue 39): the pace (``Pace``: a minimum time with a pair before its vote counts, pairs
per minute with skipped ones counted) on the Arena's clock; per-rater signals and the rigging flag (``integrity``);
boards without flagged raters' votes unless asked (``counted``). The signals are the host's (``rexrank leaderboard
arena-integrity``, or the Space's owner signed in): never on the public page, where they named a rater's preference.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import secrets
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from rexrank.data import catalog, tracks
from rexrank.errors import InputError
from rexrank.evaluation.bootstrap import DEFAULT_CONFIDENCE, DEFAULT_RESAMPLES, DEFAULT_SEED, percentile_interval
from rexrank.leaderboard.records import canonical_names, hf_identity
from rexrank.leaderboard.store import VOTE_CHOICES, Store, error_categories, make_vote, vote_key

RIDGE = 1e-6  # ``fit_wins``'s default: the plain maximum-likelihood fit (parity with scikit-learn)
N_BOOT = DEFAULT_RESAMPLES  # posterior draws of the fit's intervals: every statistic's resample count
# The board's evidence rules (docs/arena.md "Uncertainty" and "A young Arena"): the prior's spread of strengths, what a
# model needs to be ranked, and how much one rater's votes on one model may count.
PRIOR_SD = 1.5
MIN_RANK_VOTES = 20
MIN_RANK_RATERS = 3
RATER_FLOOR = 3.0
RATER_MULTIPLE = 1.0
# Humans vs metrics claims nothing below these: a metric's agreement needs this many decisive votes, Kendall's tau
# this many ranked models (with 4, tau takes 7 values and a perfect 1 happens by chance 1 time in 24).
HVM_MIN_DECISIVE = 30
HVM_MIN_MODELS = 5
CONFIDENCE = DEFAULT_CONFIDENCE
SEPARATED_WEIGHT = 0.2
TICKET_TTL_S = 3600.0
MAX_TICKETS_PER_RATER = 5
MAX_TICKET_CHARS = 64  # ours are 24; anything longer is not one of ours and is refused before it is hashed
DEFAULT_QUOTA = 500  # votes per rater per day


@dataclass(frozen=True)
class Pace:
    """The pace a person can keep (docs/arena.md "Pace"): the Arena's rate limits, owned here.

    ``min_view_s``: a vote on a pair is refused (the pair kept) until the pair has been on offer this long: reading a
    reference and two reports takes longer. ``pairs_per_minute``: pairs served to one rater in any rolling
    ``window_s``, voted or skipped (a pair requested and not voted counts: skipping to a wanted pair is not free);
    a vote counts from its time, a pair on offer from its issue. At most ``MAX_TICKETS_PER_RATER`` so that a pair
    served within the window is never dropped to make room for another (the count would lose it)."""

    min_view_s: float = 8.0
    pairs_per_minute: int = 4
    window_s: float = 60.0


PACE = Pace()
NO_PACE = Pace(min_view_s=0.0, pairs_per_minute=10 ** 9)  # tests of other rules; never the served default
# The rigging flag (``Arena.integrity``): a rater whose preference for one model is this many standard deviations
# above what the other raters' votes predict, over at least this many of their votes on that model.
FLAG_Z = 4.0
FLAG_MIN_VOTES = 15
# Votes of one rater this close together were cast from several pages at once (a person reads one pair at a time).
TANDEM_S = 1.0
INTEGRITY_COLUMNS = ("rater", "votes", "ties", "median s between votes", "tandem votes", "agreement with raters",
                     "agreement with metrics", "one-sided model", "votes on it", "one-sided z", "flagged")
PRELIMINARY = "preliminary"  # a board row's rank below the evidence a rank needs
APP_VERSION_KEY = "arena"
CHOICE_LABELS = {"a": "A is better", "b": "B is better", "tie": "Tie", "both_bad": "Both unacceptable"}
# The score of the model shown on side A for each choice: ties and "both unacceptable" are half a win each.
SCORE_A = {"a": 1.0, "b": 0.0, "tie": 0.5, "both_bad": 0.5}
assert set(SCORE_A) == set(VOTE_CHOICES) == set(CHOICE_LABELS)
assert PACE.pairs_per_minute <= MAX_TICKETS_PER_RATER


# -- Bradley-Terry ---------------------------------------------------------------------------------------------------
def _sigmoid(x: np.ndarray) -> np.ndarray:
    return 0.5 * (1.0 + np.tanh(0.5 * x))  # exact and overflow-free


def fit_wins(wins: np.ndarray, *, ridge: float = RIDGE, tol: float = 1e-10, max_iter: int = 200,
             start: np.ndarray | None = None) -> np.ndarray:
    """Strengths from win matrices: ``wins[..., i, j]`` = i's score against j summed over votes (a tie: 0.5 each).

    Maximises sum_ij wins_ij log sigmoid(s_i - s_j) - ridge/2 |s|^2 by Newton's method (the objective is strictly
    concave; steps are capped at 2 per coordinate so a model that never lost climbs to its finite optimum without
    overshooting). Any leading axes are independent fits (the bootstrap's resamples), solved together. With
    ridge > 0 the optimum sums to 0 (the likelihood does not change under a common shift), so the iterates stay
    centred and the Hessian gets -1/m along the all-ones direction, where it would otherwise only hold -ridge
    (a condition number of 1e10, whose rounding noise stalls the steps near 1e-9). ``start``: a centred first
    guess (the bootstrap starts from the full fit)."""
    wins = np.asarray(wins, dtype=np.float64)
    m = wins.shape[-1]
    games = wins + np.swapaxes(wins, -1, -2)
    won = wins.sum(-1)
    s = np.zeros(wins.shape[:-1]) if start is None else np.broadcast_to(start, wins.shape[:-1]).copy()
    diagonal = np.arange(m)
    for _ in range(max_iter):
        # In place, few passes: the leave-one-rater-out fit (integrity) runs this on (raters, m, m) at every vote.
        p = np.subtract(s[..., :, None], s[..., None, :])
        p *= 0.5
        np.tanh(p, out=p)
        p += 1.0
        p *= 0.5  # _sigmoid
        gp = games * p
        grad = won - gp.sum(-1) - ridge * s
        np.subtract(1.0, p, out=p)
        hess = np.multiply(gp, p, out=p)  # the weights games p (1 - p); zero on the diagonal (no self-games)
        total = hess.sum(-1)
        hess -= 1.0 / m  # the all-ones term (see above)
        hess[..., diagonal, diagonal] = -total - ridge - 1.0 / m  # negative definite, well conditioned
        step = np.linalg.solve(hess, -grad[..., None])[..., 0]
        step = np.clip(step, -2.0, 2.0)
        s = s + step
        if np.max(np.abs(step)) < tol:
            break
    return s


@dataclass
class Votes:
    """Votes as indices: ``a``, ``b`` (the models shown on sides A and B), ``score_a`` (1, 0 or 0.5); ``rater`` (an
    index per vote; None: every vote its own rater) and ``weight`` (what each vote counts for in the fit,
    ``rater_weights``; None: 1 each)."""

    models: list[str]
    a: np.ndarray
    b: np.ndarray
    score_a: np.ndarray
    rater: np.ndarray | None = None
    weight: np.ndarray | None = None

    @classmethod
    def of(cls, models: list[str], events: list[dict[str, Any]], *, exempt: frozenset[str] = frozenset()) -> "Votes":
        """The votes of ``events`` with each rater's weight bounded (``rater_weights``), except the raters in
        ``exempt`` (the host's experts)."""
        index = {name: i for i, name in enumerate(models)}
        a = np.array([index[e["models"][0]] for e in events], dtype=np.int64)
        b = np.array([index[e["models"][1]] for e in events], dtype=np.int64)
        raters: dict[str, int] = {}
        rater = np.array([raters.setdefault(e["rater"], len(raters)) for e in events], dtype=np.int64)
        free = np.array([e["rater"] in exempt for e in events], dtype=bool)
        votes = cls(models, a, b, np.array([SCORE_A[e["choice"]] for e in events], dtype=np.float64), rater)
        votes.weight = rater_weights(rater, a, b, len(models), exempt=free)
        return votes

    def weights(self) -> np.ndarray:
        return np.ones(len(self.a)) if self.weight is None else self.weight

    def wins(self) -> np.ndarray:
        m = len(self.models)
        w = self.weights()
        wins = np.zeros((m, m))
        np.add.at(wins, (self.a, self.b), w * self.score_a)
        np.add.at(wins, (self.b, self.a), w * (1.0 - self.score_a))
        return wins

    def evidence(self) -> tuple[np.ndarray, np.ndarray]:
        """Per model: (the votes it counts for, weighted; its distinct raters)."""
        m = len(self.models)
        w = self.weights()
        counted = np.bincount(self.a, w, minlength=m) + np.bincount(self.b, w, minlength=m)
        if self.rater is None:
            return counted, np.bincount(np.concatenate([self.a, self.b]), minlength=m)
        seen = np.unique(np.concatenate([self.rater * m + self.a, self.rater * m + self.b]))
        return counted, np.bincount(seen % m, minlength=m)


def rater_caps(on: np.ndarray, exempt: np.ndarray | None = None) -> np.ndarray:
    """``per[r, i]``: what each of rater r's votes on model i weighs (docs/arena.md "A young Arena"), from ``on[r, i]``,
    the rater's votes on the model (every model with a vote): their votes on a model count for at most
    ``max(RATER_FLOOR, RATER_MULTIPLE x the median rater's votes on it)`` votes, so one account, or a few, voting at
    the fastest pace the rules allow weigh no more than a couple of the raters they would need to convince, and a
    rank rests on several raters. ``exempt[r]``: a rater the host vouches for (an expert), counted in full. A vote's
    weight is the smaller of its two models' (a vote informs both)."""
    median = np.nanmedian(np.where(on > 0, on, np.nan), axis=0)  # every model here has a vote
    cap = np.maximum(RATER_FLOOR, RATER_MULTIPLE * median)
    per = np.minimum(1.0, cap[None, :] / np.maximum(on, 1.0))
    if exempt is not None:
        per[exempt] = 1.0
    return per


def rater_weights(rater: np.ndarray, a: np.ndarray, b: np.ndarray, m: int, *,
                  exempt: np.ndarray | None = None) -> np.ndarray:
    """Each vote's weight in the fit: ``rater_caps`` of its rater on its two models, the smaller. ``exempt``: per
    vote, its rater's votes count in full."""
    if not len(rater):
        return np.zeros(0)
    n_raters = int(rater.max()) + 1
    on = np.zeros((n_raters, m))
    np.add.at(on, (rater, a), 1.0)
    np.add.at(on, (rater, b), 1.0)
    free = None
    if exempt is not None:
        free = np.zeros(n_raters, dtype=bool)
        free[rater[exempt]] = True
    per = rater_caps(on, free)
    return np.minimum(per[rater, a], per[rater, b])


def ranks_of(strengths: np.ndarray) -> np.ndarray:
    """Rank 1 = strongest; a model's rank is 1 + the number of models strictly stronger (ties share a rank)."""
    return 1 + (strengths[..., None, :] > strengths[..., :, None]).sum(-1)


@dataclass
class Fit:
    models: list[str]
    strength: np.ndarray
    low: np.ndarray
    high: np.ndarray
    rank: np.ndarray  # among the ranked models; 0 for a preliminary one
    rank_low: np.ndarray
    rank_high: np.ndarray
    n_votes: np.ndarray  # per model
    ranked: np.ndarray | None = None  # per model: evidence enough to rank it (MIN_RANK_VOTES, MIN_RANK_RATERS)
    raters: np.ndarray | None = None  # per model: distinct raters


def posterior_draws(wins: np.ndarray, strength: np.ndarray, ridge: float, n: int,
                    rng: np.random.Generator) -> np.ndarray:
    """``n`` draws of the strengths from the Laplace approximation of their posterior (a Gaussian at the MAP
    ``strength`` whose precision is the log-likelihood's curvature there plus the prior's ``ridge``), each centred as
    the strengths are."""
    m = len(strength)
    games = wins + wins.T
    p = _sigmoid(strength[:, None] - strength[None, :])
    w = games * p * (1.0 - p)
    precision = np.diag(w.sum(1)) - w + ridge * np.eye(m)
    # draws with covariance precision^-1: solve L^T x = z where precision = L L^T
    chol = np.linalg.cholesky(precision)
    z = rng.standard_normal((m, n))
    draws = strength[:, None] + np.linalg.solve(chol.T, z)
    draws = draws.T
    return draws - draws.mean(1, keepdims=True)


def fit(votes: Votes, *, n_boot: int = N_BOOT, confidence: float = CONFIDENCE, seed: int | None = DEFAULT_SEED,
        prior_sd: float | None = None, min_votes: float | None = None, min_raters: int | None = None) -> Fit:
    """The Bayesian Bradley-Terry fit (docs/arena.md "Uncertainty"): strengths a priori independent N(0, ``PRIOR_SD``^2)
    (a model's log-odds against the average model), the votes' (weighted) likelihood, the posterior's mode as the
    strength and ``n_boot`` draws from its Laplace approximation for the strengths' and ranks' intervals (equal
    tails, ``confidence``). With few votes the prior dominates and the intervals are wide (one vote cannot settle a
    rank); with many the likelihood does and they shrink as the bootstrap's did. A model with fewer than
    ``MIN_RANK_VOTES`` (weighted) votes or ``MIN_RANK_RATERS`` distinct raters is preliminary: rank 0, and the others
    are ranked among themselves."""
    counted, raters = votes.evidence()
    n_votes = np.bincount(np.concatenate([votes.a, votes.b]), minlength=len(votes.models))
    return fit_counts(votes.models, votes.wins(), counted, raters, n_votes, n_boot=n_boot, confidence=confidence,
                      seed=seed, prior_sd=prior_sd, min_votes=min_votes, min_raters=min_raters)


def fit_counts(models: list[str], wins: np.ndarray, counted: np.ndarray, raters: np.ndarray, n_votes: np.ndarray, *,
               n_boot: int = N_BOOT, confidence: float = CONFIDENCE, seed: int | None = DEFAULT_SEED,
               prior_sd: float | None = None, min_votes: float | None = None, min_raters: int | None = None) -> Fit:
    """``fit`` from the votes' sums (the Arena keeps them per vote, issue 50 point 4): ``wins`` (weighted, as
    ``Votes.wins``), per model the weighted votes ``counted``, distinct ``raters`` and votes ``n_votes``."""
    prior_sd = PRIOR_SD if prior_sd is None else prior_sd
    min_votes = MIN_RANK_VOTES if min_votes is None else min_votes
    min_raters = MIN_RANK_RATERS if min_raters is None else min_raters
    m = len(models)
    ridge = 1.0 / prior_sd ** 2
    strength = fit_wins(wins, ridge=ridge) if m else np.zeros(0)
    ranked = (counted >= min_votes) & (raters >= min_raters)
    keep = np.flatnonzero(ranked)
    rank = np.zeros(m, dtype=int)
    rank_low, rank_high = np.zeros(m, dtype=int), np.zeros(m, dtype=int)
    rank[keep] = ranks_of(strength[keep])
    if n_votes.sum() and n_boot and m:
        samples = posterior_draws(wins, strength, ridge, n_boot, np.random.default_rng(seed))
        low, high = percentile_interval(samples, confidence)
        if len(keep):
            r_low, r_high = percentile_interval(ranks_of(samples[:, keep]).astype(float), confidence)
            rank_low[keep], rank_high[keep] = np.floor(r_low).astype(int), np.ceil(r_high).astype(int)
    else:
        low = high = np.full(m, np.nan)
        rank_low[keep], rank_high[keep] = 1, len(keep)
    return Fit(models, strength, low, high, rank, rank_low, rank_high, np.asarray(n_votes, dtype=np.int64), ranked,
               raters)


# -- humans vs metrics, agreement --------------------------------------------------------------------------------------
def wilson(k: int, n: int, z: float = 1.959963984540054) -> tuple[float, float]:
    if n == 0:
        return float("nan"), float("nan")
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def fleiss_kappa(table: np.ndarray) -> float:
    """Fleiss' kappa of ``table[item, category]`` = raters who chose the category; every item rated equally often."""
    table = np.asarray(table, dtype=np.float64)
    if len(table) == 0:
        return float("nan")
    n = table[0].sum()
    p_cat = table.sum(0) / table.sum()
    p_item = ((table * table).sum(1) - n) / (n * (n - 1))
    expected = float((p_cat ** 2).sum())
    return float("nan") if expected == 1.0 else float((p_item.mean() - expected) / (1 - expected))


def kendall_tau(x: np.ndarray, y: np.ndarray) -> float:
    """Kendall's tau-b (ties in either ranking counted as scipy does)."""
    from scipy.stats import kendalltau

    return float(kendalltau(x, y).statistic) if len(x) > 1 else float("nan")


# -- what the views read, followed vote by vote ------------------------------------------------------------------------
class Tally:
    """The sums every view of the votes reads, added to vote by vote (issue 50 point 4: a redraw after a vote rebuilt
    them from every event and cost 2.67 s at 100,000 votes): ``wins[r, i, j]``, model i's score against model j in
    rater r's votes (a tie: 0.5 each way; every sum is a multiple of 0.5, so exact in any order); the agreement's
    (study, pair) items (the first two votes of each); and per metric, decisive votes and agreements with the rater
    (``hvm``, read against the kept reports of one ``pool_key``, counted again when they change). Raters and models
    are numbered by first vote (the log's order); the views put models in name order. ``follow`` adds the votes of
    ``source`` (the Arena's counted list) not yet added; a new list (the log read again) needs a new Tally."""

    def __init__(self, source: list[dict[str, Any]]) -> None:
        self.source, self.upto = source, 0
        self.models: list[str] = []
        self.raters: list[str] = []
        self._model: dict[str, int] = {}
        self._rater: dict[str, int] = {}
        self._wins = np.zeros((0, 0, 0))  # with room to grow; ``wins`` is the filled part
        self.items: dict[tuple[str, str, str], list[int]] = {}
        self.pairs_of_two = np.zeros(6, dtype=np.int64)  # items with two votes, per ITEM_ROWS row
        self.hvm_key: Any = None
        self.hvm_upto = 0
        self.hvm: dict[str, list[int]] = {}  # metric -> [decisive votes, agreements]

    ITEM_ROWS = np.array([[2, 0, 0], [0, 2, 0], [0, 0, 2], [1, 1, 0], [1, 0, 1], [0, 1, 1]])

    @property
    def wins(self) -> np.ndarray:
        return self._wins[:len(self.raters), :len(self.models), :len(self.models)]

    def _index(self, names: list[str], index: dict[str, int], name: str) -> int:
        if name not in index:
            index[name] = len(names)
            names.append(name)
            (room_r, room_m), r, m = self._wins.shape[:2], len(self.raters), len(self.models)
            if r > room_r or m > room_m:  # the room that ran out doubles: amortised O(1) per vote
                room_r, room_m = (max(r, 2 * room_r) if r > room_r else room_r,
                                  max(m, 2 * room_m) if m > room_m else room_m)
                grown = np.zeros((room_r, room_m, room_m))
                old = self._wins.shape
                grown[:old[0], :old[1], :old[2]] = self._wins
                self._wins = grown
        return index[name]

    def follow(self) -> None:
        for v in self.source[self.upto:]:
            r = self._index(self.raters, self._rater, v["rater"])
            a = self._index(self.models, self._model, v["models"][0])
            b = self._index(self.models, self._model, v["models"][1])
            score = SCORE_A[v["choice"]]
            self._wins[r, a, b] += score
            self._wins[r, b, a] += 1.0 - score
            first = min(v["models"])
            score_first = score if v["models"][0] == first else 1.0 - score
            item = self.items.setdefault((v["study"], first, max(v["models"])), [])
            if len(item) < 2:
                item.append(0 if score_first == 1 else (1 if score_first == 0 else 2))
                if len(item) == 2:
                    self.pairs_of_two[self._row(item)] += 1
        self.upto = len(self.source)

    @classmethod
    def _row(cls, item: list[int]) -> int:
        counts = np.bincount(item, minlength=3)
        return int(np.flatnonzero((cls.ITEM_ROWS == counts).all(1))[0])

    def agreement(self) -> dict[str, Any]:
        """Fleiss' kappa over the (study, pair) items voted by two raters or more (``Arena.agreement``)."""
        table = np.repeat(self.ITEM_ROWS, self.pairs_of_two, axis=0)
        return {"items": len(table), "fleiss kappa": fleiss_kappa(table) if len(table) else float("nan")}

    def humans_vs_metrics(self, pool_key: Any, pool: dict[str, Any]) -> dict[str, list[int]]:
        """Per metric of the kept reports: [decisive votes it has values for, those where it prefers the chosen
        report] (directions from each metric's ``MetricSpec``; a metric tie is a disagreement)."""
        from rexrank.metrics import REGISTRY

        if pool_key != self.hvm_key:
            names = sorted({k for values in pool["metrics"].values() for k in values})
            self.hvm_key, self.hvm_upto, self.hvm = pool_key, 0, {name: [0, 0] for name in names}
        higher = {name: REGISTRY.spec(name).higher_is_better if name in REGISTRY else True for name in self.hvm}
        metrics = pool["metrics"]
        for v in self.source[self.hvm_upto:self.upto]:
            if v["choice"] not in ("a", "b"):
                continue
            values_a = metrics.get((v["models"][0], v["study"]), {})
            values_b = metrics.get((v["models"][1], v["study"]), {})
            for name, counts in self.hvm.items():
                a, b = values_a.get(name), values_b.get(name)
                if a is None or b is None:
                    continue
                counts[0] += 1
                prefers = "a" if (a > b) == higher[name] and a != b else ("b" if a != b else None)
                counts[1] += prefers == v["choice"]
        self.hvm_upto = self.upto
        return self.hvm


# -- the Arena ---------------------------------------------------------------------------------------------------------
@dataclass
class Ticket:
    id: str
    rater: str
    study: str
    models: tuple[str, str]  # (side A, side B)
    issued: float


@dataclass
class Pair:
    """What the page may show before the vote: never the model names."""

    ticket: str
    study: str
    reference: str
    report_a: str
    report_b: str
    images: list[str] = field(default_factory=list)


IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg")


def images_from_folder(folder: str | Path) -> Callable[[str], list[str]]:
    """``Arena(images=...)`` for a local folder of a public set's images (e.g. the open IU-Xray images, or a Hub
    dataset copy downloaded with ``huggingface_hub.snapshot_download``): a study's images are the files whose name
    is the study id, or starts with it followed by ``_`` or ``-`` (one study, several views: IU-Xray's
    ``CXR3030_IM-1405`` has ``CXR3030_IM-1405-1001.png`` and ``-2001.png``), in name order. The
    folder is indexed once; a study id is only ever compared with names found there, never joined into a path."""
    root = Path(folder)
    if not root.is_dir():
        raise InputError(f"the Arena's images folder {root} does not exist: give a folder of the set's images")
    index: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*")):
        if path.suffix.lower() in IMAGE_SUFFIXES and path.is_file():
            stem = path.stem
            cuts = [i for i, char in enumerate(stem) if char in "_-"]
            for key in {stem, *(stem[:i] for i in cuts)}:
                index.setdefault(key, []).append(str(path))
    return lambda study: list(index.get(str(study), []))


HUB_IMAGES_PREFIX = "hub:"  # ``image_source("hub:ORG/NAME[@REVISION]")``: a Hub dataset of the set's images


def images_from_hub(repo_id: str, *, revision: str | None = None, token: str | bool | None = None,
                    cache_dir: str | Path | None = None, endpoint: str | None = None,
                    id_column: str | None = None) -> tuple[Callable[[str], list[str]], Path]:
    """``Arena(images=...)`` for a Hub dataset repo of a public set's images (e.g. the open IU-Xray PNGs): its image
    files (``IMAGE_SUFFIXES``, any folder of the repo) are fetched with ``huggingface_hub.snapshot_download`` into the
    Hugging Face cache (``cache_dir``, else HF_HUB_CACHE), so a later start, or one offline (HF_HUB_OFFLINE=1), reads
    the cached copy; ``revision`` pins a commit. Then the files are matched to studies as ``images_from_folder`` does.
    Returns (that function, the repo's cache folder): gradio must be allowed to serve that folder (its snapshot
    files are links into it). Only image files are fetched (never code or other files of the repo), and their names
    are only compared with study ids.

    A repo without image files whose Parquet files hold the images as a column (``datasets.Image``, or a list of
    them) is read with ``id_column`` naming the study: its Parquet files are fetched the same way, read with
    ``datasets.Dataset.from_parquet`` and each image's bytes written once, unchanged, as ``<study>-<k>.png|jpg``
    into ``<cache>/PARQUET_IMAGES/<repo>/<commit>/<column>`` (a later start reuses them), the folder then returned.
    A study id that is not a plain name (``_PLAIN_ID``) is skipped, never made a path, and so is an image that is not
    PNG or JPEG. A missing, private or gated repo, a missing revision, no network with nothing cached, a repo with
    neither image nor Parquet files, or a Parquet repo without ``id_column`` (or without that column or an image
    column) is one InputError naming the repo and the fix."""
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import (GatedRepoError, HfHubHTTPError, LocalEntryNotFoundError,
                                        RepositoryNotFoundError, RevisionNotFoundError)

    where = f"the Hub dataset {repo_id}" + (f" at revision {revision}" if revision else "")

    def fetch(patterns: list[str]) -> Path:
        try:
            return Path(snapshot_download(repo_id, repo_type="dataset", revision=revision, cache_dir=cache_dir,
                                          allow_patterns=patterns, token=token, endpoint=endpoint))
        except GatedRepoError:
            raise InputError(f"{where} is gated: accept its conditions on the Hub with the account whose token "
                             "the Space uses (HF_TOKEN)") from None
        except RepositoryNotFoundError:
            raise InputError(f"{where} was not found, or is private to another account: check the name, or give a "
                             "token that may read it (HF_TOKEN)") from None
        except RevisionNotFoundError:
            raise InputError(f"{where}: no such revision; give a branch, tag or commit of the repo") from None
        except LocalEntryNotFoundError:
            raise InputError(f"{where} is not in the Hugging Face cache and the Hub cannot be reached (offline?): "
                             "start once with network access, or give a local folder of the images") from None
        except (HfHubHTTPError, OSError) as exc:
            raise InputError(f"{where} could not be fetched ({type(exc).__name__}): try again, or give a local "
                             "folder of the images") from None

    folder = fetch([f"*{suffix}" for s in IMAGE_SUFFIXES for suffix in (s, s.upper())])
    if any(p.suffix.lower() in IMAGE_SUFFIXES for p in folder.rglob("*")):
        # snapshots/<commit>/ holds links into blobs/: the folder gradio may serve is the repo's whole cache folder
        return images_from_folder(folder), folder.parent.parent
    folder = fetch(["*.parquet"])
    files = sorted(str(p) for p in folder.rglob("*.parquet"))
    if not files:
        raise InputError(f"{where} holds neither image files ({', '.join(IMAGE_SUFFIXES)}) nor Parquet files: the "
                         "Arena reads image files named after the studies, or a Parquet dataset with an image column")
    out = Path(cache_dir or _hub_cache()) / PARQUET_IMAGES / repo_id.replace("/", "--") / folder.name / str(id_column)
    if not (out / _COMPLETE).is_file():
        _export_parquet_images(files, id_column, out, where)
    return images_from_folder(out), out


PARQUET_IMAGES = "rexrank-arena-images"  # under the Hugging Face cache: images exported from a Parquet dataset
_COMPLETE = ".complete"  # written last: a folder without it was interrupted and is written again
# A study id that may name a file: no separator, no leading dot (what a Parquet cell holds is not trusted).
_PLAIN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")


def _hub_cache() -> str:
    from huggingface_hub import constants

    return constants.HF_HUB_CACHE


def _export_parquet_images(files: list[str], id_column: str | None, out: Path, where: str) -> None:
    """Write each image of the Parquet ``files`` as ``<study>-<k>.<png|jpg>`` into ``out`` (see ``images_from_hub``)."""
    import shutil

    import datasets

    table = datasets.Dataset.from_parquet(files, cache_dir=str(out.parent / ".arrow"))
    columns = [name for name, feature in table.features.items()
               if isinstance(feature, datasets.Image) or isinstance(getattr(feature, "feature", None), datasets.Image)]
    if id_column is None or id_column not in table.column_names or not columns:
        raise InputError(f"{where} holds its images in Parquet files: name the column holding the study id "
                         f"(images_from_hub(..., id_column=NAME); columns: {', '.join(table.column_names)[:300]})"
                         + ("" if columns else "; and it has no image column (datasets.Image) to read"))
    for name in columns:  # the stored bytes, never decoded and re-encoded
        feature = table.features[name]
        table = table.cast_column(name, datasets.Image(decode=False) if isinstance(feature, datasets.Image)
                                  else datasets.List(datasets.Image(decode=False)))
    if out.exists():
        shutil.rmtree(out)  # an interrupted export: written again from the start
    out.mkdir(parents=True)
    written: dict[str, int] = {}
    for row in table:
        study = row[id_column]
        if not isinstance(study, str) or not _PLAIN_ID.fullmatch(study):
            continue
        for name in columns:
            for image in (row[name] if isinstance(row[name], list) else [row[name]]):
                data = (image or {}).get("bytes") or b""
                suffix = ".png" if data.startswith(b"\x89PNG") else ".jpg" if data.startswith(b"\xff\xd8\xff") else None
                if suffix is None:
                    continue
                k = written.get(study, 0) + 1
                written[study] = k
                (out / f"{study}-{k}{suffix}").write_bytes(data)
    (out / _COMPLETE).write_text(f"{sum(written.values())} images of {len(written)} studies\n")


def image_source(spec: str) -> tuple[Callable[[str], list[str]], Path]:
    """The Arena's images from the host's setting (``--arena-images``, REXRANK_ARENA_IMAGES):
    ``hub:ORG/NAME[@REVISION][#ID_COLUMN]`` (``images_from_hub``; the column naming the study for a Parquet dataset
    of images), else a local folder (``images_from_folder``). Returns (the function from study to images, the
    folder gradio must be allowed to serve)."""
    spec = str(spec)
    if spec.startswith(HUB_IMAGES_PREFIX):
        rest, _, id_column = spec[len(HUB_IMAGES_PREFIX):].partition("#")
        repo_id, _, revision = rest.partition("@")
        if repo_id.count("/") != 1 or not all(repo_id.split("/")):
            raise InputError(f"{spec!r:.80} is not a Hub dataset: write hub:ORG/NAME, with @REVISION and "
                             "#ID_COLUMN (a Parquet dataset's study column) if needed")
        return images_from_hub(repo_id, revision=revision or None, id_column=id_column or None)
    return images_from_folder(spec), Path(spec).resolve()


def rater_identity(username: str) -> str:
    """A rater is a Hugging Face account (``hf:name``), as a submitter is (``records.hf_identity``), named as the Hub
    names one: ``huggingface_hub.utils.validate_repo_id``'s rule for a namespace (ASCII letters, digits, ``-``, ``_``,
    ``.``; not starting or ending with ``-`` or ``.``; no ``--`` or ``..``; at most 96), which the CLI's
    ``arena-rater`` and a server's ``--arena-rater`` meet too. Anything else is one InputError."""
    from huggingface_hub.utils import HFValidationError, validate_repo_id

    name = str(username).strip()
    try:
        if "/" in name:
            raise HFValidationError("a username has no slash")
        validate_repo_id(name)
    except HFValidationError:
        raise InputError(f"{name[:40]!r} is not a Hugging Face username (letters, digits, '-', '_' and '.', at most "
                         "96, not starting or ending with '-' or '.'): give the rater's Hub username") from None
    return hf_identity(name)


SIDE_SEED_CHARS = 32  # hex digits of a ticket's side seed (128 bits)


def side_seed(ticket_id: str) -> str:
    """The seed of a ticket's sides, derived from its secret id: unknown to anyone before the vote (the id is never
    logged), written into the vote for audit (``sides``)."""
    return hashlib.sha256(f"rexrank arena sides\n{ticket_id}".encode()).hexdigest()[:SIDE_SEED_CHARS]


def sides(seed: str, pair: tuple[str, str] | list[str]) -> tuple[str, str]:
    """(side A, side B) of ``pair`` under ``seed``: a fair coin per ticket. An auditor recomputes every logged vote's
    sides from its ``seed`` and its models; the balance of sides over many votes is then a coin's, not a rule's."""
    first, second = sorted(pair)
    coin = hashlib.sha256(f"{seed}\n{first}\n{second}".encode()).digest()[0] & 1
    return (first, second) if coin == 0 else (second, first)


def strength_text(value: float) -> str:
    """A strength or an end of its interval as the board shows it: log-odds to 2 decimals (a 95% interval is
    tenths wide even at hundreds of votes), one format for both."""
    return f"{value:.2f}"


class Arena:
    """One Arena: votes on (``dataset``, its leaderboard split, ``track``) of ``store``. Thread-safe."""

    def __init__(self, store: Store, dataset: str = "iu_xray", track: str = tracks.DEFAULT_TRACK, *,
                 experts_only: bool = False, quota: int | None = DEFAULT_QUOTA, images: Any = None,
                 app_version: str = "dev", pace: Pace | None = None, clock: Callable[[], float] = time.time,
                 n_boot: int = N_BOOT, rng: np.random.Generator | None = None):
        dataset = catalog.canonical_dataset(dataset)
        self.dataset, self.split, self.track = canonical_names(dataset, catalog.leaderboard_split(dataset),
                                                               tracks.canonical_track(track))
        if catalog.licensed(self.dataset):
            kind = "a private test set" if catalog.is_private(self.dataset) else "licensed data"
            open_sets = ", ".join(sorted(set(catalog.dataset_names()) - catalog.licensed_datasets()))
            raise InputError(f"{self.dataset}'s reports are {kind}: they may not be shown in the Arena; choose a set "
                             f"whose text is open ({open_sets})")
        self.store, self.experts_only, self.quota, self.app_version = store, experts_only, quota, app_version
        self.images = images  # callable(study) -> list of image paths or URLs, or None
        self.n_boot = n_boot
        self._rng = rng  # tests: reproducible draws; None: the OS's randomness (sides are not guessable)
        self.pace = PACE if pace is None else pace
        self._clock = clock  # tests: a clock they move; every time the Arena reads comes from it
        self._views_lock = threading.RLock()  # one computation per change, however many pages refresh at once
        self._lock = threading.Lock()
        self._key = json.dumps([self.dataset, self.split, self.track])  # the store's name for this Arena's tickets
        self._pool_key: tuple[int, int] | None = None
        self._pool: dict[str, Any] = {}
        self._views: dict[str, tuple[Any, Any]] = {}  # the votes' views: name -> (views_key, value)
        self._board: Fit | None = None
        self._tally: Tally | None = None  # the views' sums, followed vote by vote
        self._means: tuple[Any, dict[str, dict[str, float]]] = (None, {})  # per kept reports: metric means
        self._reset_log()

    # -- randomness: a secret source unless a test gives a seeded one
    def _random(self) -> float:
        return float(self._rng.random()) if self._rng is not None else secrets.randbelow(2 ** 53) / 2 ** 53

    def _token(self) -> str:
        """A new ticket id (144 bits): secret, unless a test gave a seeded generator."""
        if self._rng is None:
            return secrets.token_urlsafe(18)
        import base64

        return base64.urlsafe_b64encode(self._rng.bytes(18)).decode()

    # -- what is on offer
    def _reports(self) -> dict[str, Any]:
        """{reports: {study: {model: text}}, references, metrics: {(model, study): {metric: value}}, pairs: {(m1, m2):
        shared studies}}, read again only when the kept reports change."""
        key = self.store.reports_version()
        if key != self._pool_key:
            reports: dict[str, dict[str, str]] = {}
            references: dict[str, str] = {}
            metrics: dict[tuple[str, str], dict[str, float]] = {}
            studies_of: dict[str, set[str]] = {}
            for row in self.store.arena_reports(self.dataset):
                if (row["split"], row["track"]) != (self.split, self.track):
                    continue
                reports.setdefault(row["study"], {})[row["model"]] = row["report"]
                references[row["study"]] = row["reference"]
                metrics[(row["model"], row["study"])] = row["metrics"]
                studies_of.setdefault(row["model"], set()).add(row["study"])
            names = sorted(studies_of)
            pairs = {}
            for i, first in enumerate(names):
                for second in names[i + 1:]:
                    shared = studies_of[first] & studies_of[second]
                    if shared:
                        pairs[(first, second)] = sorted(shared)
            self._pool = {"reports": reports, "references": references, "metrics": metrics, "pairs": pairs,
                          "shared": {p: set(shared) for p, shared in pairs.items()}}
            self._pool_key = key
        return self._pool

    # -- the log, followed incrementally: a vote appended after the last one read is added to the counts; anything
    # else (a rater decision, an event pulled from the Hub that sorts before one already read) rebuilds them
    def _reset_log(self) -> None:
        self._last_id = 0
        self._last_order: tuple[float, str] = (float("-inf"), "")
        self._roles: dict[str, str] = {}
        self._counted: list[dict[str, Any]] = []
        self._seen: set[str] = set()
        self._pair_votes: dict[tuple[str, str], int] = {}
        self._study_votes: dict[str, int] = {}
        self._on_a: dict[tuple[tuple[str, str], str], int] = {}
        self._rater_pairs: dict[str, dict[tuple[str, str], set[str]]] = {}
        # per rater, per model: the studies where that model's report was revealed to the rater (never shown again)
        self._revealed: dict[str, dict[str, set[str]]] = {}
        self._vote_times: dict[str, list[float]] = {}

    def _follow(self) -> None:
        rows = self.store.log_rows(("vote", "rater"), self._last_id)
        if not rows:
            return
        if any(e["kind"] == "rater" or (e["at"], h) < self._last_order for _, h, e in rows):
            self._reset_log()
            rows = self.store.log_rows(("vote", "rater"))
            self._roles = {}
            for _, _, event in sorted(rows, key=lambda r: (r[2]["at"], r[1])):
                if event["kind"] == "rater":
                    self._roles[event["rater"]] = event["role"]
        rows.sort(key=lambda r: (r[2]["at"], r[1]))
        for row_id, digest, event in rows:
            self._last_id = max(self._last_id, row_id)
            self._last_order = max(self._last_order, (event["at"], digest))
            if event["kind"] == "vote":
                self._count(event)

    def _count(self, event: dict[str, Any]) -> None:
        if (event["dataset"], event["split"], event["track"]) != (self.dataset, self.split, self.track):
            return
        key = vote_key(event)
        if self._roles.get(event["rater"]) == "excluded" or key in self._seen:
            return
        self._seen.add(key)
        self._counted.append(event)
        pair = tuple(sorted(event["models"]))
        self._pair_votes[pair] = self._pair_votes.get(pair, 0) + 1
        self._study_votes[event["study"]] = self._study_votes.get(event["study"], 0) + 1
        self._on_a[(pair, event["models"][0])] = self._on_a.get((pair, event["models"][0]), 0) + 1
        self._rater_pairs.setdefault(event["rater"], {}).setdefault(pair, set()).add(event["study"])
        for model in pair:
            self._revealed.setdefault(event["rater"], {}).setdefault(model, set()).add(event["study"])
        self._vote_times.setdefault(event["rater"], []).append(event["at"])

    def roles(self) -> dict[str, str]:
        """Each rater's role by the host's latest decision (``expert``, ``excluded``, ``rater``)."""
        with self._lock:
            self._follow()
            return dict(self._roles)

    def votes(self) -> list[dict[str, Any]]:
        """The votes every view counts: this Arena's, of raters not excluded, the first per rater, study and pair, in
        the log's order."""
        with self._lock:
            self._follow()
            return list(self._counted)

    def check_rater(self, rater: str | None) -> str:
        if not rater:
            raise InputError("sign in with Hugging Face to vote in the Arena")
        role = self.roles().get(rater, "rater")
        if role == "excluded":
            raise InputError("your votes are no longer counted in this Arena (the host excluded this account); "
                             "contact the host if this is a mistake")
        if self.experts_only and role != "expert":
            raise InputError("voting here is open to the host's allow-list of raters only; ask the host to add "
                             "your account (`rexrank leaderboard arena-rater NAME --role expert`)")
        return rater

    # -- pairing
    def _pace_check(self, rater: str, now: float, live: list[Ticket]) -> None:
        """Refuse a new pair past ``pace.pairs_per_minute`` in the window: votes (from their time) and pairs on offer
        (from their issue) of this rater, i.e. every pair served in the window, voted or skipped."""
        wait = self._pace_wait(rater, now, live)
        if wait > 0:
            raise InputError(self.slow_down(wait))

    def slow_down(self, wait: float) -> str:
        """The pace's refusal of a new pair, ``wait`` seconds before one may be served (the page's countdown too)."""
        return (f"slow down: at most {self.pace.pairs_per_minute} pairs per {self.pace.window_s:g} s, voted or "
                f"skipped; the next pair in {max(1, math.ceil(wait))} s")

    def too_quick(self, wait: float) -> str:
        """The pace's refusal of a vote, ``wait`` seconds before it counts (the page's countdown too)."""
        return (f"too quick: a vote counts after {self.pace.min_view_s:g} s with the pair (read the reference and "
                f"both reports); vote again in {max(1, math.ceil(wait))} s")

    def _pace_wait(self, rater: str, now: float, live: list[Ticket]) -> float:
        """Seconds until this rater may be served a new pair (0: now)."""
        since = now - self.pace.window_s
        times = [t for t in self._vote_times.get(rater, ()) if t > since]
        times += [t.issued for t in live if t.rater == rater and t.issued > since]
        if len(times) < self.pace.pairs_per_minute:
            return 0.0
        return max(0.0, sorted(times)[len(times) - self.pace.pairs_per_minute] + self.pace.window_s - now)

    def pace_wait(self, rater: str | None) -> float:
        """Seconds until ``rater`` may be served a new pair by the pace (0: now; the page's countdown reads it)."""
        if not rater:
            return 0.0
        with self._lock:
            self._follow()
            now = self._clock()
            return self._pace_wait(rater, now, self._live(now))

    def vote_wait(self, rater: str | None, ticket_id: Any) -> float:
        """Seconds until a vote on ``ticket_id`` by ``rater`` counts (``Pace.min_view_s``; 0: now, or no such pair)."""
        held = self.ticket(ticket_id) if rater else None
        if held is None or held.rater != rater:
            return 0.0
        return max(0.0, held.issued + self.pace.min_view_s - self._clock())

    def next_pair(self, rater: str | None) -> Pair:
        """The most informative (study, pair) this rater may still see, under a new ticket (module docstring): never a
        study with a model whose report of it was revealed to this rater (a known text would name its side)."""
        rater = self.check_rater(rater)
        pool = self._reports()
        with self._lock:
            self._follow()
            board = self._board
            now = self._clock()
            live = self._live(now)
            self._pace_check(rater, now, live)
            mine = {pair: set(studies) for pair, studies in self._rater_pairs.get(rater, {}).items()}
            revealed = self._revealed.get(rater, {})
            pair_votes, study_votes = dict(self._pair_votes), dict(self._study_votes)
            for t in live:  # a pair on offer counts as shown
                pair = tuple(sorted(t.models))
                pair_votes[pair] = pair_votes.get(pair, 0) + 1
                study_votes[t.study] = study_votes.get(t.study, 0) + 1
                if t.rater == rater:
                    mine.setdefault(pair, set()).add(t.study)

            def blocked(p: tuple[str, str]) -> set[str]:
                shown = revealed.get(p[0], set()) | revealed.get(p[1], set())
                return mine.get(p, set()) | (pool["shared"][p] & shown if shown else set())

            pairs = [p for p, shared in pool["pairs"].items() if len(blocked(p)) < len(shared)]
            if not pairs:
                raise InputError("no pair left for you to rate in this Arena: thank you! Come back when new "
                                 "models have been scored")
            index = {name: i for i, name in enumerate(board.models)} if board is not None else {}
            weights = np.array([self._overlap(board, index, p) / math.sqrt(1 + pair_votes.get(p, 0)) for p in pairs])
            drawn = int(np.searchsorted(np.cumsum(weights), self._random() * weights.sum(), side="right"))
            pick = pairs[min(drawn, len(pairs) - 1)]
            done = blocked(pick)
            studies = [s for s in pool["pairs"][pick] if s not in done]
            fewest = min(study_votes.get(s, 0) for s in studies)
            studies = [s for s in studies if study_votes.get(s, 0) == fewest]
            study = studies[min(int(self._random() * len(studies)), len(studies) - 1)]
            ticket_id = self._token()
            models = sides(side_seed(ticket_id), pick)  # a coin per ticket: no rule to learn from the log
            ticket = Ticket(ticket_id, rater, study, models, now)
            self.store.issue_ticket(ticket.id, arena=self._key, rater=rater, study=study, models=models,
                                    issued=ticket.issued, ttl=TICKET_TTL_S, keep=MAX_TICKETS_PER_RATER)
        reports = pool["reports"][study]
        images = list(self.images(study)) if self.images is not None else []
        return Pair(ticket.id, study, pool["references"][study], reports[models[0]], reports[models[1]], images)

    @staticmethod
    def _overlap(board: Fit | None, index: dict[str, int], pair: tuple[str, str]) -> float:
        if board is None or pair[0] not in index or pair[1] not in index:
            return 1.0  # unrated models: as informative as can be
        i, j = index[pair[0]], index[pair[1]]
        if board.ranked is not None and not (board.ranked[i] and board.ranked[j]):
            return 1.0  # a preliminary model has no rank interval yet: its votes are the most needed
        apart = board.rank_high[i] < board.rank_low[j] or board.rank_high[j] < board.rank_low[i]
        return SEPARATED_WEIGHT if apart else 1.0

    def _live(self, now: float) -> list[Ticket]:
        """Every process's live tickets of this Arena (their ids are not stored: ``id`` is empty)."""
        return [Ticket("", t["rater"], t["study"], t["models"], t["issued"])
                for t in self.store.live_tickets(self._key, now)]

    def ticket(self, ticket_id: str) -> Ticket | None:
        """The live ticket ``ticket_id`` (its pair and sides): for the host's code and tests, never sent to a page."""
        found = self.store.ticket(ticket_id, arena=self._key, now=self._clock()) \
            if isinstance(ticket_id, str) and len(ticket_id) <= MAX_TICKET_CHARS else None
        return None if found is None else Ticket(ticket_id, found["rater"], found["study"], found["models"],
                                                 found["issued"])

    # -- voting
    def vote(self, rater: str | None, ticket_id: Any, choice: Any, tags_a: Any = (), tags_b: Any = ()) -> dict:
        """Record a vote on the pair of ``ticket_id``; returns what is revealed: the models on sides A and B.

        Refused with a one-line InputError: no rater or one not allowed, an unknown, expired, used or other rater's
        ticket (one message for all: the client learns nothing about tickets that are not its own), a choice
        outside ``VOTE_CHOICES``, a tag outside ``error_categories``, a second vote on the pair, the quota."""
        rater = self.check_rater(rater)
        if choice not in VOTE_CHOICES:
            raise InputError(f"unknown choice {str(choice)[:40]!r}: choose one of {', '.join(VOTE_CHOICES)}")
        codes = error_categories()
        tags = {}
        for side, given in (("a", tags_a), ("b", tags_b)):
            if given is None:
                given = ()
            if not isinstance(given, (list, tuple)) or not all(isinstance(c, int) and not isinstance(c, bool)
                                                          and c in codes for c in given):
                raise InputError(f"error tags are category numbers among {sorted(codes)}")
            tags[side] = list(given)
        now = self._clock()
        held = self.ticket(ticket_id)
        if held is not None and held.rater == rater and now - held.issued < self.pace.min_view_s:
            # Refused before it is claimed: the pair stays on offer and the same click works a little later.
            raise InputError(self.too_quick(held.issued + self.pace.min_view_s - now))
        # Consumed here, whatever happens next: a ticket is used once.
        ticket = self.store.claim_ticket(ticket_id, arena=self._key, rater=rater, now=now) \
            if isinstance(ticket_id, str) and len(ticket_id) <= MAX_TICKET_CHARS else None
        if ticket is None:
            if len([t for t in self._live(now) if t.rater == rater]) >= MAX_TICKETS_PER_RATER:
                raise InputError(f"this pair was replaced: a rater holds at most {MAX_TICKETS_PER_RATER} pairs at a "
                                 f"time, and {MAX_TICKETS_PER_RATER} newer ones were loaded for {rater} (on a server "
                                 "without sign-in every page votes as that one rater); load the next pair")
            raise InputError("this pair was not shown to you, was already voted on, or has expired: load the "
                             "next pair")
        models = tuple(ticket["models"])
        event = make_vote(at=now, rater=rater, expert=self.roles().get(rater) == "expert",
                          dataset=self.dataset, split=self.split, track=self.track, study=ticket["study"],
                          models=models, choice=choice, tags=tags, version=self.app_version,
                          seed=side_seed(ticket_id))
        self.store.add_vote(event, quota=self.quota, now=now)
        return {"a": models[0], "b": models[1], "study": ticket["study"], "choice": choice}

    # -- views
    def counted(self, *, include_flagged: bool = False) -> list[dict[str, Any]]:
        """The votes a board counts: ``votes()``, less those of flagged raters (``flagged``) unless asked."""
        votes = self.votes()
        if include_flagged:
            return votes
        flagged = self.flagged()
        return [v for v in votes if v["rater"] not in flagged] if flagged else votes

    def _sums(self) -> tuple[list[str], list[str], np.ndarray]:
        """(raters, models, ``Tally.wins``) as of now: a copy, so a vote arriving meanwhile changes nothing read."""
        with self._lock:
            self._follow()
            tally = self._tally_locked()
            return list(tally.raters), list(tally.models), tally.wins.copy()

    def _tally_locked(self) -> Tally:
        if self._tally is None or self._tally.source is not self._counted:  # the log was read again
            self._tally = Tally(self._counted)
        self._tally.follow()
        return self._tally

    def board(self, *, include_flagged: bool = False) -> Fit:
        """The fit of the votes counted now (cached per ``views_key``), by default without flagged raters' votes; each
        rater's weight bounded (``rater_caps``) unless the host made them an expert. ``include_flagged``: the flagged
        raters' votes counted too, under the same bound as anyone's (issue 50: a rank needs several raters, flagged or
        not): the board the flag kept off, for the host and the curious to compare."""
        result = self._cached(f"board {include_flagged} {self.n_boot}", lambda: self._fit(include_flagged))
        if not include_flagged:  # the board the pairing reads
            with self._lock:
                self._board = result
        return result

    def _fit(self, include_flagged: bool) -> Fit:
        raters, models, wins = self._sums()
        flagged = {} if include_flagged else self.flagged()
        roles = self.roles()
        keep = [r for r, name in enumerate(raters) if name not in flagged]
        wins = wins[keep]
        games = wins + wins.transpose(0, 2, 1)
        on = games.sum(-1)  # [rater, model]: their votes on it
        present = np.flatnonzero(on.sum(0) > 0)
        order = present[np.argsort([models[i] for i in present], kind="stable")]  # models in name order
        wins, games, on = wins[:, order][:, :, order], games[:, order][:, :, order], on[:, order]
        per = rater_caps(on, np.array([roles.get(raters[r]) == "expert" for r in keep], dtype=bool))
        weight = np.minimum(per[:, :, None], per[:, None, :])  # a vote's weight: the smaller of its models'
        return fit_counts([models[i] for i in order], (weight * wins).sum(0), (weight * games).sum((0, 2)),
                          (on > 0).sum(0), on.sum(0), n_boot=self.n_boot)

    def board_rows(self, *, include_flagged: bool = False) -> list[dict[str, Any]]:
        """The Arena board: one row per model, the ranked ones strongest first, then the preliminary ones (below the
        evidence a rank needs: ``MIN_RANK_VOTES`` weighted votes from ``MIN_RANK_RATERS`` raters), whose rank is
        ``PRELIMINARY``; votes and raters counted."""
        result = self.board(include_flagged=include_flagged)
        ranked = result.ranked if result.ranked is not None else np.ones(len(result.models), dtype=bool)
        order = sorted(range(len(result.models)), key=lambda i: (not ranked[i], -result.strength[i]))
        return [{"rank": int(result.rank[i]) if ranked[i] else PRELIMINARY, "model": result.models[i],
                 "strength": round(float(result.strength[i]), 3),
                 "interval": f"{strength_text(result.low[i])} to {strength_text(result.high[i])}",
                 "rank interval": f"{result.rank_low[i]}-{result.rank_high[i]}" if ranked[i] else "",
                 "votes": int(result.n_votes[i]),
                 "raters": int(result.raters[i]) if result.raters is not None else 0}
                for i in order]

    def _one_sided(self) -> tuple[list[str], list[str], np.ndarray, np.ndarray]:
        """(raters, models, z, count), both in name order: ``z[r, i]`` rater r's one-sidedness toward model i
        (``integrity``) over their ``count[r, i]`` votes on it. Once per change of the votes, from the ``Tally``'s
        sums: one batched fit (each rater left out in turn) and sums over (rater, model, model) cells, never over
        every vote (issue 50 point 4)."""
        def compute():
            raters, models, wins = self._sums()
            rows, cols = np.argsort(raters, kind="stable"), np.argsort(models, kind="stable")
            wins = wins[rows][:, cols][:, :, cols]
            games = wins + wins.transpose(0, 2, 1)
            count = games.sum(-1)
            total = wins.sum(0)
            others = fit_wins(total - wins, start=fit_wins(total)) if len(raters) else np.zeros((0, len(models)))
            p = _sigmoid(others[:, :, None] - others[:, None, :])  # P(i beats j) by everyone else's votes
            observed, expected = wins.sum(-1), (games * p).sum(-1)
            variance = (games * p * (1 - p)).sum(-1)
            z = np.where(variance > 0, (observed - expected) / np.sqrt(np.maximum(variance, 1e-12)), 0.0)
            return sorted(raters), sorted(models), np.where(count > 0, z, 0.0), count
        return self._cached("one_sided", compute)

    def flagged(self) -> dict[str, int]:
        """The flagged raters (``integrity``'s rule, ``_flag_rule``) and their votes: what a board leaves out. Once per
        change of the votes, without the rest of the host's table (the board's redraw needs only this)."""
        return {rater: votes for rater, (_, votes, flagged) in self._cached("flags", self._flag_rule).items()
                if flagged}

    def _flag_rule(self) -> dict[str, tuple[int, int, bool]]:
        """Per rater (name order): (their one-sided model's index in ``_one_sided``'s models, their votes, flagged)."""
        raters, _, z, count = self._one_sided()
        roles = self.roles()
        out = {}
        for r, rater in enumerate(raters):
            top = int(np.argmax(np.where(count[r] > 0, z[r], -np.inf)))  # toward only: see ``integrity``
            flagged = (roles.get(rater) != "expert" and count[r, top] >= FLAG_MIN_VOTES
                       and z[r, top] >= FLAG_Z)
            out[rater] = (top, int(round(count[r].sum() / 2)), bool(flagged))
        return out

    def integrity(self) -> list[dict[str, Any]]:
        """Per rater, what the host judges rigging by (docs/arena.md "Integrity"), most suspicious first: votes, share
        of ties, median seconds between their votes, agreement with the other raters on the same (study, pair) and
        with the metrics, and one-sidedness: for each model, the rater's score for it against what the Bradley-Terry
        fit of everyone else's votes predicts, as a z-score (positive: toward it); the model with the highest is the
        ``one-sided model``. ``tandem votes``: votes cast within ``TANDEM_S`` of the rater's previous one (several
        pages voting together: a person reads one pair at a time). ``flagged``: that z is at least ``FLAG_Z`` over at
        least ``FLAG_MIN_VOTES`` of their votes on the model (the loop that votes for one model whenever it
        recognises its text), experts (the host's allow-list) excepted (``flagged``). Only toward: a rigged model
        makes the honest raters' votes look one-sided against it (their expectation includes the rigged votes), so
        flagging "against" would let a rigger get honest raters flagged. Once per change of what it reads
        (``views_key``); the host's (a board's redraw reads only ``flagged``)."""
        return [dict(row) for row in self._cached("integrity", self._integrity_rows)]

    def views_key(self) -> tuple[int, tuple[int, int]]:
        """What the votes' views (board, integrity, humans vs metrics) read, as a key for caches and pages: the last
        vote or rater event of the log followed (a new vote, a host's decision, an event pulled from the Hub: each a
        new row) and the kept reports' version (the metrics). Unlike ``store.version()`` it stays put when a result,
        a submission or the queue changes the store."""
        with self._lock:
            self._follow()
            last = self._last_id
        return last, self.store.reports_version()

    def _integrity_rows(self) -> list[dict[str, Any]]:
        votes, pool, rule = self.votes(), self._reports(), self._cached("flags", self._flag_rule)
        raters, models = self._one_sided()[:2]
        n_raters = len(raters)
        rater_index = {r: i for i, r in enumerate(raters)}
        table = Votes.of(models, votes)
        who = np.array([rater_index[v["rater"]] for v in votes], dtype=np.int64)
        a, b, score = table.a, table.b, table.score_a
        z, count = self._one_sided()[2:]
        # agreement with the others on the same (study, pair): the direction of their mean score for the pair's
        # first model (by name)
        item_of: dict[tuple, int] = {}
        item = np.array([item_of.setdefault((v["study"], *sorted(v["models"])), len(item_of)) for v in votes],
                        dtype=np.int64)
        first_score = np.where(a < b, score, 1 - score)
        item_sum = np.bincount(item, first_score, minlength=len(item_of))
        item_n = np.bincount(item, minlength=len(item_of))
        rest_n = item_n[item] - 1
        rest_mean = np.divide(item_sum[item] - first_score, rest_n, out=np.full(len(votes), 0.5), where=rest_n > 0)
        agrees = np.sign(first_score - 0.5) == np.sign(rest_mean - 0.5)
        n_others = np.bincount(who, rest_n > 0, minlength=n_raters)
        agree_others = np.bincount(who, agrees & (rest_n > 0), minlength=n_raters)
        prefers = self._metrics_prefer(pool, votes)  # +1: side A, -1: side B, 0: no preference
        decisive = (score != 0.5) & (prefers != 0)
        n_metrics = np.bincount(who, decisive, minlength=n_raters)
        agree_metrics = np.bincount(who, decisive & (prefers == np.where(score == 1.0, 1, -1)), minlength=n_raters)
        n_votes = np.bincount(who, minlength=n_raters)
        ties = np.bincount(who, score == 0.5, minlength=n_raters)
        times: dict[int, list[float]] = {}
        for r, v in zip(who.tolist(), votes):
            times.setdefault(r, []).append(v["at"])
        rows = []
        for r, rater in enumerate(raters):
            top, _, flagged = rule[rater]
            gaps = np.diff(sorted(times[r]))
            rows.append({"rater": rater, "votes": int(n_votes[r]), "ties": float(ties[r] / n_votes[r]),
                         "median s between votes": float(np.median(gaps)) if len(gaps) else float("nan"),
                         "tandem votes": int((gaps < TANDEM_S).sum()),
                         "agreement with raters": float(agree_others[r] / n_others[r]) if n_others[r] else float("nan"),
                         "agreement with metrics": float(agree_metrics[r] / n_metrics[r]) if n_metrics[r]
                         else float("nan"),
                         "one-sided model": models[top], "votes on it": int(count[r, top]),
                         "one-sided z": round(float(z[r, top]), 2), "flagged": bool(flagged)})
        rows.sort(key=lambda row: (not row["flagged"], -row["one-sided z"], row["rater"]))
        return rows

    @staticmethod
    def _metrics_prefer(pool: dict[str, Any], votes: list[dict[str, Any]]) -> np.ndarray:
        """Per vote, the side most of the study's metrics prefer: +1 side A, -1 side B, 0 none (no metrics, or as many
        each way). Metric directions from each metric's ``MetricSpec``."""
        from rexrank.metrics import REGISTRY

        names = sorted({k for values in pool["metrics"].values() for k in values})
        if not names or not votes:
            return np.zeros(len(votes), dtype=np.int64)
        direction = np.array([1.0 if (REGISTRY.spec(n).higher_is_better if n in REGISTRY else True) else -1.0
                              for n in names])
        rows = {key: k for k, key in enumerate(pool["metrics"])}
        values = np.array([[vals.get(n, np.nan) for n in names] for vals in pool["metrics"].values()] +
                          [[np.nan] * len(names)])  # the last row: no metrics for that report
        missing = len(rows)
        ka = np.array([rows.get((v["models"][0], v["study"]), missing) for v in votes])
        kb = np.array([rows.get((v["models"][1], v["study"]), missing) for v in votes])
        balance = np.nan_to_num(np.sign((values[ka] - values[kb]) * direction)).sum(1)
        return np.sign(balance).astype(np.int64)

    def _cached(self, name: str, compute: Callable[[], Any]) -> Any:
        """``compute()`` once per ``views_key`` (a page's redraw without a new vote recomputed them: issue 50)."""
        with self._views_lock:
            key = self.views_key()
            held = self._views.get(name)
            if held is None or held[0] != key:
                held = (key, compute())
                self._views[name] = held
            return held[1]

    def humans_vs_metrics(self) -> list[dict[str, Any]]:
        """``_humans_vs_metrics``, once per change of the votes or the kept reports (copies: callers may edit)."""
        return [dict(row) for row in self._cached("humans_vs_metrics", self._humans_vs_metrics)]

    def agreement(self) -> dict[str, Any]:
        """Inter-rater agreement (``Tally.agreement``): Fleiss' kappa over (study, pair) items voted by at least two
        raters, using the first two votes of each (categories: the alphabetically first model better, the other, no
        preference)."""
        def compute():
            with self._lock:
                self._follow()
                return self._tally_locked().agreement()
        return dict(self._cached("agreement", compute))

    def _humans_vs_metrics(self) -> list[dict[str, Any]]:
        """Per automatic metric: the share of decisive votes where the metric prefers the report the rater chose
        (Wilson 95% interval; a metric tie counts as disagreement), and Kendall's tau between the Arena's strengths
        and the metric's mean over the Arena's studies, per ranked model of the board. ``label``: the name every view
        shows (the MetricSpec's leaderboard column, e.g. BLEU for bleu2), ``metric`` the registry's. What each rests on
        is in the row (``decisive votes``, ``models``); below the evidence they need nothing is claimed: a metric with
        fewer than ``HVM_MIN_DECISIVE`` decisive votes has no row, and tau needs ``HVM_MIN_MODELS`` ranked models
        (NaN otherwise; issue 50: tau 1.00 from two models and one vote read as a finding). The counts are the
        ``Tally``'s, added to vote by vote; the metrics' means are computed once per change of the kept reports."""
        from rexrank.metrics import REGISTRY

        pool = self._reports()
        with self._lock:
            self._follow()
            counts = {name: list(c) for name, c in self._tally_locked().humans_vs_metrics(self._pool_key, pool).items()}
            pool_key = self._pool_key
        if self._means[0] != pool_key:
            per_model: dict[str, dict[str, list[float]]] = {}  # metric -> model -> its values over the studies
            for (model, _), values in pool["metrics"].items():
                for metric, value in values.items():
                    per_model.setdefault(metric, {}).setdefault(model, []).append(value)
            self._means = (pool_key, {metric: {model: float(np.mean(v)) for model, v in by_model.items()}
                                      for metric, by_model in per_model.items()})
        means_of = self._means[1]
        fit_now = self.board()
        ranked = fit_now.ranked if fit_now.ranked is not None else np.ones(len(fit_now.models), dtype=bool)
        out = []
        for name, (n, agree) in counts.items():
            if n < HVM_MIN_DECISIVE:
                continue
            higher = REGISTRY.spec(name).higher_is_better if name in REGISTRY else True
            sums = means_of.get(name, {})
            means = np.array([sums[model] * (1 if higher else -1) if model in sums else np.nan
                              for model in fit_now.models])
            ok = ~np.isnan(means) & ranked
            low, high = wilson(agree, n)
            spec = REGISTRY.spec(name) if name in REGISTRY else None
            out.append({"metric": name, "label": (spec.leaderboard_column if spec else None) or name,
                        "decisive votes": n, "agreement": agree / n, "low": low, "high": high,
                        "models": int(ok.sum()),
                        "kendall tau": kendall_tau(fit_now.strength[ok], means[ok]) if ok.sum() >= HVM_MIN_MODELS
                        else float("nan")})
        return out

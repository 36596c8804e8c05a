#!/usr/bin/env python
"""The mutation check (issue 51 point 4): does the suite still catch each mutation it caught before?

Each entry of ``MUTATIONS`` names a file, a snippet of it, the mutated snippet, and the tests expected to catch it.
The check copies the tree (tracked files and untracked ones git does not ignore: the working tree as it is, with
others' edits) into a temporary folder, runs each mutation's tests there unmutated (they must pass, or the entry says
nothing), applies the mutation, runs them again (caught: a test fails; survived: all pass), and restores the file.
The working tree is never written: other engineers edit it while this runs. The tests run as the fast tier
(`make test-fast`'s marker expression), so each mutation is one a contributor's run catches in minutes; a named test
the fast tier leaves out makes its entry "broken", and a failure of the time rule alone is not a catch. Each list of
tests runs once unmutated (every file is restored between mutations).

The copy imports its own ``src`` (PYTHONPATH ahead of the editable install; checked before the first run), and reads
the reference virtualenv and ../shared of this checkout (REXRANK_REF_PYTHON, REXRANK_SHARED).

Usage: .venv/bin/python bench/mutations.py [--only NAME,...] [--list] [--timeout 600] [--json OUT]
Exit status: 0 when every mutation run was caught, 1 when one survived or its tests failed unmutated.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Mutation:
    name: str
    file: str  # relative to the repository root
    original: str  # must occur exactly once in the file
    mutated: str
    tests: tuple[str, ...]  # pytest node ids expected to catch it (at least one fails)


_ARENA = "src/rexrank/leaderboard/arena.py"
_ARENA_FLAG = "count[r, top] >= FLAG_MIN_VOTES\n                       and z[r, top] >= FLAG_Z)"
_ARENA_TESTS = "tests/test_arena_integrity.py"
_CRIMSON = "src/rexrank/metrics/crimson_prompt.py"
_CRIMSON_WINDOW = "for i in range(exc.pos, max(0, exc.pos - 5) - 1, -1):"
_PARALLEL = "src/rexrank/parallel.py"
_RANKS = "tests/test_parallel.py::test_a_process_rank_is_the_jobs_rank_not_the_nodes"
_STATISTICS = "src/rexrank/evaluation/statistics.py"
_STATS_TESTS = "tests/test_evaluation_stats.py"
_GREEN = "src/rexrank/metrics/green.py"
_TIES_AND_CI = ("tests/test_evaluation_stats.py::"
                "test_tied_models_share_the_better_rank_and_a_ci_touching_zero_decides_nothing")
_NLG_BY_HAND = "tests/test_nlg.py::test_rouge_l_and_cider_d_constants_by_hand"

MUTATIONS: tuple[Mutation, ...] = (
    # Issue 51 point 5: the survivors of last turn's audit, caught since.
    Mutation("arena: FLAG_MIN_VOTES 15 -> 14", _ARENA, "FLAG_MIN_VOTES = 15", "FLAG_MIN_VOTES = 14",
             (f"{_ARENA_TESTS}::test_the_flag_needs_fifteen_votes_on_the_model",)),
    Mutation("arena: FLAG_MIN_VOTES 15 -> 16", _ARENA, "FLAG_MIN_VOTES = 15", "FLAG_MIN_VOTES = 16",
             (f"{_ARENA_TESTS}::test_the_flag_needs_fifteen_votes_on_the_model",)),
    Mutation("arena: votes on the model >= -> >", _ARENA, _ARENA_FLAG,
             _ARENA_FLAG.replace("count[r, top] >=", "count[r, top] >"),
             (f"{_ARENA_TESTS}::test_the_flag_needs_fifteen_votes_on_the_model",)),
    Mutation("arena: z >= FLAG_Z -> >", _ARENA, _ARENA_FLAG, _ARENA_FLAG.replace("z[r, top] >=", "z[r, top] >"),
             (f"{_ARENA_TESTS}::test_a_z_of_exactly_flag_z_is_flagged",)),
    Mutation("arena: a two-sided z (the largest |z| names the model and flags)", _ARENA,
             "top = int(np.argmax(np.where(count[r] > 0, z[r], -np.inf)))",
             "top = int(np.argmax(np.where(count[r] > 0, np.abs(z[r]), -np.inf)))",
             (f"{_ARENA_TESTS}::test_voting_against_a_model_is_not_one_sided_toward_it",)),
    Mutation("arena: a fixed variance of 0.25 per vote", _ARENA,
             "variance = (games * p * (1 - p)).sum(-1)", "variance = (games * 0.25).sum(-1)",
             (f"{_ARENA_TESTS}::test_the_z_weighs_each_vote_by_its_own_variance",)),
    Mutation("crimson: the stray-quote window - 5 -> - 4", _CRIMSON, _CRIMSON_WINDOW,
             _CRIMSON_WINDOW.replace("- 5", "- 4"),
             ("tests/test_crimson.py::test_a_stray_quote_is_escaped_up_to_five_characters_before_the_error",)),
    Mutation("crimson: the stray-quote window - 5 -> - 6", _CRIMSON, _CRIMSON_WINDOW,
             _CRIMSON_WINDOW.replace("- 5", "- 6"),
             ("tests/test_crimson.py::test_a_stray_quote_is_escaped_up_to_five_characters_before_the_error",)),
    # Caught before issue 51 (kept caught): the Arena's pace and flag, CRIMSON's reader, aggregation flags, disclosure.
    Mutation("arena: FLAG_Z 4.0 -> 3.5", _ARENA, "FLAG_Z = 4.0", "FLAG_Z = 3.5",
             (f"{_ARENA_TESTS}::test_a_z_of_exactly_flag_z_is_flagged",)),
    Mutation("arena: a vote counts after 7 s with its pair, not 8", _ARENA, "min_view_s: float = 8.0",
             "min_view_s: float = 7.0",
             (f"{_ARENA_TESTS}::test_a_vote_counts_only_after_the_minimum_time_with_its_pair",)),
    Mutation("arena: 5 pairs a minute, not 4", _ARENA, "pairs_per_minute: int = 4", "pairs_per_minute: int = 5",
             (f"{_ARENA_TESTS}::test_pairs_per_minute_count_skipped_pairs",)),
    Mutation("crimson: the stray-quote window - 5 -> - 2", _CRIMSON, _CRIMSON_WINDOW,
             _CRIMSON_WINDOW.replace("- 5", "- 2"),
             ("tests/test_crimson.py::test_a_stray_quote_is_escaped_up_to_five_characters_before_the_error",)),
    Mutation("aggregation: a negative mean's 1/mean not flagged", "src/rexrank/metrics/aggregation.py",
             "    if mean < 0:\n        return (NEGATIVE_MEAN,)",
             "    if mean < -1e300:\n        return (NEGATIVE_MEAN,)",
             ("tests/test_aggregation.py::test_rule_reciprocal_of_mean",
              "tests/test_aggregation.py::test_negative_mean_flag_reaches_the_printed_results")),
    Mutation("disclosure: private counts to the nearest 5, not 10", "src/rexrank/evaluation/disclosure.py",
             "PRIVATE_COUNT_STEP = 10", "PRIVATE_COUNT_STEP = 5", ("tests/test_private_sets.py",)),
    # Issue 51 point 4, toward 40: a sharding decision, a statistic, a tie rule, a rule word, a prompt word, a
    # constant, an escape, the store and the sandbox, each what a plausible edit would do.
    Mutation("parallel: a process's rank read from LOCAL_RANK (two nodes share ranks: a hang before issue 51)",
             _PARALLEL, 'return Context(int(os.environ.get("RANK", "0") or 0), world, local_rank)',
             'return Context(int(os.environ.get("LOCAL_RANK", "0") or 0), world, local_rank)', (_RANKS,)),
    Mutation("parallel: the group joined with the node's local rank", _PARALLEL,
             'init_method="env://", rank=ctx.rank,', 'init_method="env://", rank=ctx.local_rank,', (_RANKS,)),
    Mutation("parallel: a bare cuda device indexed by the job's rank, not the node's", _PARALLEL,
             'return f"cuda:{ctx.local_rank}"', 'return f"cuda:{ctx.rank}"', (_RANKS,)),
    Mutation("parallel: contiguous shards instead of every world_size-th item", _PARALLEL,
             "return list(range(ctx.rank, n, ctx.world_size))",
             "return list(range(ctx.rank * n // ctx.world_size, (ctx.rank + 1) * n // ctx.world_size))",
             ("tests/test_parallel.py::test_shard_covers_every_item_once_and_unshard_restores_order",)),
    Mutation("statistics: a bootstrap p-value k / n (can be 0)", _STATISTICS,
             "p_boot = (k_boot + 1) / (resamples + 1)", "p_boot = k_boot / resamples", (_STATS_TESTS,)),
    Mutation("statistics: a randomization p-value k / n (can be 0)", _STATISTICS,
             "p_perm = (unit.k_perm[start:start + chunk] + 1) / (permutations + 1)",
             "p_perm = unit.k_perm[start:start + chunk] / permutations", (_STATS_TESTS,)),
    Mutation("statistics: tied models share the worse rank", _STATISTICS,
             'np.inf * sign, point), method="min", axis=-1)', 'np.inf * sign, point), method="max", axis=-1)',
             (_TIES_AND_CI,)),
    Mutation("bootstrap: a one-sided percentile interval", "src/rexrank/evaluation/bootstrap.py",
             "    alpha = (1.0 - confidence) / 2.0\n    samples =", "    alpha = 1.0 - confidence\n    samples =",
             (_STATS_TESTS,)),
    Mutation("compare: a CI touching 0 counts as excluding it", "src/rexrank/evaluation/compare.py",
             "(low > 0 or high < 0)", "(low >= 0 or high <= 0)",
             (_TIES_AND_CI,)),
    Mutation("bleu2: the brevity penalty's ratio inverted", "src/rexrank/metrics/bleu.py",
             "math.exp(1 - ref_len / hyp_len)", "math.exp(1 - hyp_len / ref_len)",
             ("tests/test_bleu.py::test_brevity_penalty_of_a_short_hypothesis",)),
    Mutation("temporal_f1: a keyword dropped (unaltered)", "src/rexrank/metrics/temporal_f1.py",
             '"worsening", "unaltered",', '"worsening",', ("tests/test_temporal_f1.py::test_the_keywords_are_pinned",)),
    Mutation("temporal_f1: both sets empty scores epsilon, not 1", "src/rexrank/metrics/temporal_f1.py",
             "return 1.0 if not hyp else epsilon", "return epsilon", ("tests/test_temporal_f1.py",)),
    Mutation("green: 'none' no longer reads as zero errors", _GREEN, "(?:no|none|nothing|n/a)", "(?:no|nothing|n/a)",
             ("tests/test_green_parse.py",)),
    Mutation("green: reports cut at 250 words, not 300", _GREEN, "MAX_WORDS = 300", "MAX_WORDS = 250",
             ("tests/test_green_parse.py", "tests/test_green.py")),
    Mutation("green: a prompt word (expert radiologists -> radiologists)", _GREEN,
             "report composed by expert radiologists.", "report composed by radiologists.",
             ("tests/test_green_parse.py",)),
    Mutation("fineradscore: an urgent error weighs 2.5, not 3", "src/rexrank/metrics/fineradscore.py",
             '"Urgent error": 3.0,', '"Urgent error": 2.5,', ("tests/test_fineradscore.py",)),
    Mutation("crimson: a prompt word in the system message", _CRIMSON,
             "You are an expert radiology evaluator", "You are a radiology evaluator",
             ("tests/test_crimson.py::test_the_prompts_are_pinned_to_the_compared_text",)),
    Mutation("nlg: ROUGE-L's beta 1.2 -> 1.0", "src/rexrank/metrics/nlg.py", "ROUGE_BETA = 1.2", "ROUGE_BETA = 1.0",
             (_NLG_BY_HAND,)),
    Mutation("nlg: CIDEr's length penalty width 6 -> 5", "src/rexrank/metrics/nlg.py", "CIDER_SIGMA = 6.0",
             "CIDER_SIGMA = 5.0", (_NLG_BY_HAND,)),
    Mutation("arena: '$' left unescaped in a shown report", "src/rexrank/leaderboard/arena_tab.py",
             '.replace("$", "&#36;")', "", ("tests/test_arena_tab.py::test_reports_are_readable_text_never_markup",)),
    Mutation("catalog: a private set no longer licensed", "src/rexrank/data/catalog.py",
             "return spec.gated or spec.private", "return spec.gated",
             ("tests/test_data_access.py::test_a_private_set_is_licensed_even_when_its_source_is_open",)),
    Mutation("names: i no longer folded into l", "src/rexrank/leaderboard/records.py",
             '.casefold()).replace("i", "l")', ".casefold())", ("tests/test_leaderboard_names.py",)),
    Mutation("clients: an IPv6 client is its /56", "src/rexrank/leaderboard/clients.py", "IPV6_CLIENT_PREFIX = 48",
             "IPV6_CLIENT_PREFIX = 56",
             ("tests/test_leaderboard_submissions.py::test_who_an_anonymous_request_comes_from",)),
    Mutation("store: freed pages no longer overwritten", "src/rexrank/leaderboard/store/connection.py",
             'conn.execute("PRAGMA secure_delete=ON")', 'conn.execute("PRAGMA secure_delete=OFF")',
             ("tests/test_licensed_text.py", "tests/test_leaderboard_store.py")),
    Mutation("disclosure: private values to 4 decimals, not 3", "src/rexrank/evaluation/disclosure.py",
             "PRIVATE_DECIMALS = 3", "PRIVATE_DECIMALS = 4", ("tests/test_private_sets.py",)),
    Mutation("sandbox: the model's network no longer unshared", "src/rexrank/generate/adapters/sandbox.py",
             'str(SANDBOX_UID), "--unshare-net",', "str(SANDBOX_UID),", ("tests/test_generate_sandbox.py",)),
    # Issue 52: a pass padded to its longest text, not to its bucket's width (a text's bytes then depend on its
    # neighbours)
    Mutation("batching: a pass padded to its longest text", "src/rexrank/metrics/batching.py",
             "            input_ids = np.full((rows, width), pad_id, dtype=np.int64)",
             "            width = max(len(encoded[i]) for i in chunk)\n"
             "            input_ids = np.full((rows, width), pad_id, dtype=np.int64)",
             ("tests/test_batch_invariance.py::test_every_pass_has_the_shape_of_its_bucket",)),
)


def _copy_tree(dest: Path) -> None:
    """The working tree as it is now: tracked files and untracked ones git does not ignore (no .venv, no caches)."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        source = REPO / rel
        if source.is_file():  # a tracked file deleted in the working tree is left out, as it is here
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / rel)


def _environment(tree: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env.update(PYTHONPATH=str(tree / "src"), HF_HUB_OFFLINE="1", HF_EVALUATE_OFFLINE="1")
    ref_python = REPO / ".venv-ref" / "bin" / "python"
    if "REXRANK_REF_PYTHON" not in env and ref_python.exists():
        env["REXRANK_REF_PYTHON"] = str(ref_python)
    for shared in (REPO.parent / "shared", REPO / "shared"):
        if "REXRANK_SHARED" not in env and (shared / "data").is_dir():
            env["REXRANK_SHARED"] = str(shared)
    return env


def _check_imports_the_copy(tree: Path, env: dict[str, str]) -> None:
    found = subprocess.run([sys.executable, "-c", "import rexrank; print(rexrank.__file__)"], cwd=tree, env=env,
                           capture_output=True, text=True, check=True).stdout.strip()
    if not Path(found).resolve().is_relative_to(tree.resolve()):
        raise SystemExit(f"the copy imports rexrank from {found}, not from its own src: a mutation would not be seen")


# The fast tier's marker expression, read from the Makefile (its one owner): a mutation counts as caught only by
# tests `make test-fast` runs, so a named test that is slow, browser or refvenv is deselected and the entry "broken".
FAST_TIER = re.search(r"^FAST = (.+)$", (REPO / "Makefile").read_text(), re.M).group(1).strip()
# What the fast tier's time rule says when it fails a test (tests/conftest.py, _time_rule): a failure for time alone
# says nothing about the mutation (a busy machine), so it does not count as caught.
_TIME_RULE = "over the fast tier's"


def _run_tests(tree: Path, env: dict[str, str], tests: tuple[str, ...], timeout: float) -> tuple[str, float, str]:
    """('passed' | 'failed' | 'timeout' | 'error' | 'time rule', seconds, the output's tail) of the fast tier's
    pytest on ``tests`` in ``tree``."""
    start = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "-m", FAST_TIER,
                               *tests], cwd=tree, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", time.perf_counter() - start, ""
    out = proc.stdout + proc.stderr
    outcome = {0: "passed", 1: "failed"}.get(proc.returncode, "error")  # 2-5: interrupted, usage, no tests
    failures = re.findall(r"^(?:FAILED|ERROR) .*$", out, re.M)
    if outcome == "failed" and failures and all(_TIME_RULE in line for line in failures):
        outcome = "time rule"
    return outcome, time.perf_counter() - start, out[-2000:]


def check(mutations: tuple[Mutation, ...], timeout: float) -> list[dict]:
    results = []
    with tempfile.TemporaryDirectory(prefix="rexrank-mutations-") as tmp:
        tree = Path(tmp) / "tree"
        _copy_tree(tree)
        env = _environment(tree)
        _check_imports_the_copy(tree, env)
        unmutated: dict[tuple[str, ...], tuple[str, float, str]] = {}  # tests -> their run on the unmutated tree
        for mutation in mutations:
            path = tree / mutation.file
            source = path.read_text()
            count = source.count(mutation.original)
            if count != 1:
                results.append({"name": mutation.name, "verdict": "stale",
                                "why": f"the original snippet occurs {count} times in {mutation.file}"})
                continue
            if mutation.tests not in unmutated:  # every file is restored after each mutation: one run per test list
                unmutated[mutation.tests] = _run_tests(tree, env, mutation.tests, timeout)
            before, before_s, before_tail = unmutated[mutation.tests]
            if before != "passed":
                results.append({"name": mutation.name, "verdict": "broken", "why": f"unmutated: {before}",
                                "output": before_tail})
                continue
            path.write_text(source.replace(mutation.original, mutation.mutated))
            try:
                after, after_s, _ = _run_tests(tree, env, mutation.tests, timeout)
            finally:
                path.write_text(source)
            verdict = {"failed": "caught", "timeout": "caught (timeout)", "time rule": "time rule only"}.get(
                after, "survived")
            results.append({"name": mutation.name, "verdict": verdict, "mutated_run": after,
                            "seconds": round(after_s, 1), "unmutated_seconds": round(before_s, 1)})
            print(f"{verdict:17s} {after_s:6.1f} s  {mutation.name}", flush=True)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench/mutations.py", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", help="comma-separated names (or parts of names) of the mutations to run")
    parser.add_argument("--list", action="store_true", help="list the mutations and their tests, run nothing")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per pytest run (default 600)")
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    args = parser.parse_args(argv)
    chosen = MUTATIONS
    if args.only:
        parts = [p.strip() for p in args.only.split(",") if p.strip()]
        chosen = tuple(m for m in MUTATIONS if any(p in m.name for p in parts))
        if not chosen:
            parser.error(f"no mutation name contains any of {parts}; --list shows them")
    if args.list:
        for m in chosen:
            print(f"{m.name}\n    {m.file}: {m.original!r} -> {m.mutated!r}\n    caught by: {', '.join(m.tests)}")
        return 0
    results = check(chosen, args.timeout)
    caught = [r for r in results if r["verdict"].startswith("caught")]
    print(f"{len(caught)} of {len(results)} caught")
    for r in results:
        if not r["verdict"].startswith("caught"):
            print(f"NOT CAUGHT ({r['verdict']}): {r['name']} {r.get('why', '')}\n{r.get('output', '')}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0 if len(caught) == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python
"""The mutation check (issue 51 point 4): does the suite still catch each mutation it caught before?

Each entry of ``MUTATIONS`` names a file, a snippet of it, the mutated snippet, and the tests expected to catch it.
The check copies the tree (tracked files and untracked ones git does not ignore: the working tree as it is, with
others' edits) into a temporary folder, runs each mutation's tests there unmutated (they must pass, or the entry says
nothing), applies the mutation, runs them again (caught: a test fails; survived: all pass), and restores the file.
The working tree is never written: other engineers edit it while this runs.

The copy imports its own ``src`` (PYTHONPATH ahead of the editable install; checked before the first run), and reads
the reference virtualenv and ../shared of this checkout (REXRANK_REF_PYTHON, REXRANK_SHARED).

Usage: .venv/bin/python bench/mutations.py [--only NAME,...] [--list] [--timeout 600] [--json OUT]
Exit status: 0 when every mutation run was caught, 1 when one survived or its tests failed unmutated.
"""

from __future__ import annotations

import argparse
import json
import os
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


def _run_tests(tree: Path, env: dict[str, str], tests: tuple[str, ...], timeout: float) -> tuple[str, float, str]:
    """('passed' | 'failed' | 'timeout' | 'error', seconds, the output's tail) of pytest on ``tests`` in ``tree``."""
    start = time.perf_counter()
    try:
        proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *tests],
                              cwd=tree, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", time.perf_counter() - start, ""
    outcome = {0: "passed", 1: "failed"}.get(proc.returncode, "error")  # 2-5: interrupted, usage, no tests
    return outcome, time.perf_counter() - start, (proc.stdout + proc.stderr)[-2000:]


def check(mutations: tuple[Mutation, ...], timeout: float) -> list[dict]:
    results = []
    with tempfile.TemporaryDirectory(prefix="rexrank-mutations-") as tmp:
        tree = Path(tmp) / "tree"
        _copy_tree(tree)
        env = _environment(tree)
        _check_imports_the_copy(tree, env)
        for mutation in mutations:
            path = tree / mutation.file
            source = path.read_text()
            count = source.count(mutation.original)
            if count != 1:
                results.append({"name": mutation.name, "verdict": "stale",
                                "why": f"the original snippet occurs {count} times in {mutation.file}"})
                continue
            before, before_s, before_tail = _run_tests(tree, env, mutation.tests, timeout)
            if before != "passed":
                results.append({"name": mutation.name, "verdict": "broken", "why": f"unmutated: {before}",
                                "output": before_tail})
                continue
            path.write_text(source.replace(mutation.original, mutation.mutated))
            try:
                after, after_s, _ = _run_tests(tree, env, mutation.tests, timeout)
            finally:
                path.write_text(source)
            verdict = {"failed": "caught", "timeout": "caught (timeout)"}.get(after, "survived")
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

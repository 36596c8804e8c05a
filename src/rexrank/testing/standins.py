"""`python -m rexrank.testing.standins OUT_DIR [--size small|real] [--only a,b]`: write every stand-in model.

Each builder lives in the module of its metric family and has the signature
``build(out_dir: Path, size: str, seed: int) -> dict[str, str]`` returning {metric/model key: path}.
Builders are deterministic for a given (size, seed) so goldens computed by a reference package stay valid.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
from pathlib import Path

# name -> "module:function". Keys are what `--only` takes.
BUILDERS: dict[str, str] = {
    "bertscore": "rexrank.testing.standin_text:build_bertscore",
    "semb": "rexrank.testing.standin_text:build_chexbert",
    "radgraph": "rexrank.testing.standin_radgraph:build",
    "ratescore": "rexrank.testing.standin_ratescore:build",
    "green": "rexrank.testing.standin_green:build",
    "generate": "rexrank.testing.standin_generate:build",
    "radeval_bertscore": "rexrank.testing.standin_modernbert:build",
    "srrbert": "rexrank.testing.standin_srrbert:build",
    "crimson": "rexrank.testing.standin_gemma3:build",
    "temporal_f1": "rexrank.testing.standin_temporal:build",
}
SIZES = ("small", "real")


def build(out_dir: str | Path, size: str = "small", only: list[str] | None = None, seed: int = 0) -> dict[str, str]:
    if size not in SIZES:
        raise ValueError(f"Unknown size {size!r}. Available: {', '.join(SIZES)}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths: dict[str, str] = {}
    for name in only or list(BUILDERS):
        if name not in BUILDERS:
            raise ValueError(f"Unknown stand-in {name!r}. Available: {', '.join(BUILDERS)}")
        module_name, _, func = BUILDERS[name].partition(":")
        paths.update(getattr(importlib.import_module(module_name), func)(out, size, seed))
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rexrank.testing.standins", description=__doc__)
    parser.add_argument("out_dir")
    parser.add_argument("--size", default="small", choices=SIZES)
    parser.add_argument("--only", default=None, help="comma-separated subset of: " + ", ".join(BUILDERS))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    only = [s.strip() for s in args.only.split(",")] if args.only else None
    print(json.dumps(build(args.out_dir, args.size, only, args.seed), indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

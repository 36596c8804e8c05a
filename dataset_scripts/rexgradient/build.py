"""Build the ReXrank rexgradient test set as Parquet and push it to a private, gated Hub repo of your organisation.

    python dataset_scripts/rexgradient/build.py --data-dir DATA_DIR --dry-run --out ./rexgradient-hub
    python dataset_scripts/rexgradient/build.py --data-dir DATA_DIR --repo MY_ORG/rexrank-rexgradient

The card beside this script (README.md) is copied into the repo; the work is done by rexrank.data.publish.
"""

import sys
from pathlib import Path

from rexrank.data import publish

if __name__ == "__main__":
    argv = sys.argv[1:]
    if "--card" not in argv:
        argv += ["--card", str(Path(__file__).with_name("README.md"))]
    sys.exit(publish.main("rexgradient", argv))

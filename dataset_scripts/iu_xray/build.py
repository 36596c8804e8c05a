"""Build the ReXrank iu_xray test set as Parquet and push it to a gated Hub dataset repo (private by default).

    python dataset_scripts/iu_xray/build.py --data-dir DATA_DIR --dry-run --out ./iu_xray-hub
    python dataset_scripts/iu_xray/build.py --data-dir DATA_DIR   # -> rexrank/iu_xray
    python dataset_scripts/iu_xray/build.py --data-dir DATA_DIR --repo MY_ORG/NAME   # any other repo

The card beside this script (README.md) is copied into the repo; the work is done by rexrank.data.publish.
Images are embedded unless --no-images (where they are optional and absent, the build is text-only and says
so); a failed build leaves no folder or cache entry behind.
"""

import sys
from pathlib import Path

from rexrank.data import publish

if __name__ == "__main__":
    argv = sys.argv[1:]
    if "--card" not in argv:
        argv += ["--card", str(Path(__file__).with_name("README.md"))]
    sys.exit(publish.main("iu_xray", argv))

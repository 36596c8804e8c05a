"""The README's main job: score an IU-Xray example with `rexrank score`, add it to a leaderboard store seeded with
the published ReXrank tables, and serve the leaderboard Space on http://127.0.0.1:7860.

The example: every IU-Xray test study (findings track) "predicted" with the findings of the next study in the
split, a shuffled-reference baseline. It is scored with BLEU-2, which needs no model weights, so its number is
real. `--with-standins` also runs every classic metric with offline random-weight stand-ins to show the whole
pipeline; those numbers mean nothing and are printed only, never added to the board.

Run again, it changes nothing on the board: the published rows and the re-scored baseline (same numbers, only
its time and cache hits differ) are already stored, and `leaderboard add` says so (docs/leaderboard.md#store).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CACHE = REPO / ".cache"
RUN = [sys.executable, "-m", "rexrank"]


def sh(*args: str) -> None:
    print("+ rexrank", " ".join(args), flush=True)
    subprocess.run(RUN + list(args), check=True, cwd=REPO)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--no-serve", action="store_true", help="stop after scoring and adding the result")
    parser.add_argument("--with-standins", action="store_true", help="also run the classic metrics on stand-ins")
    # The port: --port, else PORT (`make demo PORT=8080`), else gradio's own GRADIO_SERVER_PORT, else 7860.
    parser.add_argument("--port", default=os.environ.get("PORT") or os.environ.get("GRADIO_SERVER_PORT") or "7860",
                        help="port of the leaderboard Space (default: $PORT, $GRADIO_SERVER_PORT or 7860)")
    args = parser.parse_args()

    from rexrank.data import references

    CACHE.mkdir(exist_ok=True)
    refs = references("iu_xray", split="test", track="findings")
    ids = list(refs)
    predictions = {sid: refs[ids[(k + 1) % len(ids)]] for k, sid in enumerate(ids)}
    pred_path = CACHE / "demo_iu_xray_shifted.json"
    pred_path.write_text(json.dumps(predictions, indent=1))
    out = CACHE / "demo_results" / "shifted_reference"
    sh("score", "--predictions", str(pred_path), "--dataset", "iu_xray", "--track", "findings", "--metrics", "bleu2",
       "--model-name", "Shuffled-reference baseline", "--out", str(out))
    store = CACHE / "leaderboard.sqlite"
    sh("leaderboard", "import-published", "--store", str(store))
    sh("leaderboard", "add", str(out / "results.json"), "--name", "Shuffled-reference baseline (rexrank demo)",
       "--institution", "rexrank", "--model-type", "baseline", "--store", str(store))
    if args.with_standins:
        from rexrank.testing.standins import build

        paths = build(CACHE / "standins", "small", ["bertscore", "semb", "radgraph"])
        sh("score", "--predictions", str(pred_path), "--dataset", "iu_xray", "--track", "findings",
           "--metrics", "bleu2,bertscore,semb,radgraph,radcliq_v1",
           "--model-path", f"bertscore={paths['bertscore']}", "--model-path", f"semb={paths['semb']}",
           "--option", f"semb.backbone={paths['semb_backbone']}", "--model-path", f"radgraph={paths['radgraph']}",
           "--model-name", "stand-in plumbing check (numbers meaningless)", "--out", str(CACHE / "demo_standins"))
    if args.no_serve:
        return 0
    sh("leaderboard", "serve", "--store", str(store), "--port", args.port)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:  # Ctrl-C while serving (or scoring): the server has stopped; no traceback
        print("\nstopped", flush=True)
        sys.exit(130)
    except subprocess.CalledProcessError as exc:  # the step printed its own one-line error
        sys.exit(exc.returncode)

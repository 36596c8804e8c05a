"""`python tests/multinode_driver.py score ...`: the rexrank CLI with the test fakes, and a lost-node switch.

With REXRANK_TEST_LOSE_RANK=R and REXRANK_TEST_LOSE_AT_CALL=K set, the process of global rank R ends at once
(os._exit, as a node that loses power: no cleanup, no cache commit) when fake_slow is called for the K-th time,
after computing that call's pairs and before the harness commits them. Every other process runs as usual.
"""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import evaluation_fakes  # noqa: E402

from rexrank.cli import main  # noqa: E402

LOSE_RANK, LOSE_AT_CALL = "REXRANK_TEST_LOSE_RANK", "REXRANK_TEST_LOSE_AT_CALL"


def _arm() -> None:
    if os.environ.get(LOSE_RANK) != os.environ.get("RANK", "0"):
        return
    at, calls = int(os.environ[LOSE_AT_CALL]), [0]
    original = evaluation_fakes.FakeSlow._score

    def score(self, hyps, refs):
        values = original(self, hyps, refs)
        calls[0] += 1
        if calls[0] == at:
            os._exit(17)
        return values

    evaluation_fakes.FakeSlow._score = score


if __name__ == "__main__":
    evaluation_fakes.register()
    _arm()
    sys.exit(main(sys.argv[1:]))

"""`python tests/evaluation_driver.py score ...`: the rexrank CLI with the test fake metrics registered.

Used by tests that need a real separate process (kill/restart, torchrun with two ranks).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import evaluation_fakes  # noqa: E402

from rexrank.cli import main  # noqa: E402

if __name__ == "__main__":
    evaluation_fakes.register()
    sys.exit(main(sys.argv[1:]))

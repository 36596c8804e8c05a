"""Hugging Face Space entry point: the ReXrank leaderboard (all logic lives in rexrank.leaderboard)."""

import os

from rexrank.leaderboard.app import serve

if __name__ == "__main__":
    demo, _, _ = serve(os.environ.get("REXRANK_STORE", "data/leaderboard.sqlite"), host="0.0.0.0",
                       port=int(os.environ.get("PORT", "7860")), prevent_thread_lock=True)
    demo.block_thread()

"""The submission service's default limits: the largest predictions file and the quotas.

Declared once here and read by ``submissions.Submissions``, `rexrank leaderboard serve` (its options' defaults and
``--help``) and the Space (spaces/leaderboard/app.py, whose variables override them). Apart from submissions.py,
which loads the harness and the metrics, so that the command line shows them without loading either.
"""

# Decimal MB, as rexrank.evaluation.predictions counts them; also gradio's upload limit on the Space.
DEFAULT_MAX_UPLOAD_MB = 50
# Per logged-in user per private test set, per rolling window, rejected attempts included.
DEFAULT_PRIVATE_QUOTA = 3
# Per logged-in user, and per anonymous client (leaderboard/clients.py), over the public test sets, per rolling
# window, rejected attempts included.
DEFAULT_RATE_LIMIT = 5
# All anonymous clients together (public test sets only), per rolling window.
DEFAULT_ANONYMOUS_LIMIT = 100
# The rolling window the quotas count in (seconds).
DEFAULT_RATE_WINDOW_S = 24 * 3600.0
# Uploads never submitted (gradio's /gradio_api/upload keeps each for the upload TTL, an hour by default): each client
# (leaderboard/clients.py) keeps at most this many, its oldest unsubmitted ones deleted beyond it (the page needs one
# at a time; a few allow a retry or a second tab) ...
UNSUBMITTED_UPLOADS_PER_CLIENT = 3
# ... and all clients together at most this many (decimal) MB: an upload that would go over it is refused (HTTP 503)
# before it is read. 20 files of the largest size.
UNSUBMITTED_UPLOADS_MB = 20 * DEFAULT_MAX_UPLOAD_MB
# Predictions files one submission service reads at once (each up to the upload limit; ``Submissions``), whoever
# submits (the Space's form, which is unqueued, its API, the command line); more wait their turn.
SUBMISSIONS_AT_ONCE = 8


def upload_bytes(size_mb: float) -> int:
    """A size in (decimal) MB as bytes: the unit of ``max_bytes``, by the harness's own rule."""
    from rexrank.evaluation.predictions import megabytes

    return megabytes(size_mb)

"""`rexrank explore`: a per-study explorer of scored runs, served on the user's own machine (127.0.0.1 only).

- ``data``: one or more `rexrank score` results folders read back with the texts each run scored, from where the
  run read them (its predictions file, its references file or the dataset on this disk), checked against the digests
  ``per_study.parquet`` holds; nothing is copied anywhere.
- ``table``: the list's order, filters and pages as index arrays (10,000 studies sort in milliseconds).
- ``detail``: what each metric saw of one study, recomputed on demand from the metrics' public functions and the
  score cache (read only).
- ``pages``: the HTML, through the board pages' escaping helpers (``leaderboard.pages.html``); ``server``: the
  Starlette app and its launch.

The explorer writes no file: licensed text stays where the user keeps it (docs/explore.md).
"""

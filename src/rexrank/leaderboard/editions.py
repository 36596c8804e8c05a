"""Which board edition (``rexrank.metrics.boards``) a store's board shows: the host's choice, kept in the store.

One owner: the store's meta entry ``EDITION_KEY``, written by ``choose_edition`` (`leaderboard serve --edition`,
the Space's ``REXRANK_BOARD_EDITION``) and read by everything that builds the board or seeds the store (the views,
the worker, `leaderboard add`, `import-published`). A store whose host never chose shows ``boards.DEFAULT_EDITION``.
"""

from __future__ import annotations

from rexrank.leaderboard.store import Store
from rexrank.metrics import boards

EDITION_KEY = "board_edition"


def edition_of(store: Store) -> str:
    """The name of the edition ``store``'s board shows (a name this rexrank lacks falls back to the default)."""
    name = store.meta(EDITION_KEY)
    return name if isinstance(name, str) and name in boards.EDITIONS else boards.DEFAULT_EDITION


def choose_edition(store: Store, name: str | None) -> str:
    """Record the host's edition for ``store`` (None: keep what it has); an unknown name is one error, before any
    write."""
    if name is None:
        return edition_of(store)
    chosen = boards.edition(name).name
    if store.meta(EDITION_KEY) != chosen:
        store.set_meta(EDITION_KEY, chosen)
    return chosen

"""The search box answered in the browser: ``board.search_terms``'s rule in JavaScript, and what the server checks.

Why: a search that goes to the server and back took ~4x the time of gradio's own in-browser table search
(bench/results/leaderboard.md), and gradio's own search cannot be used: it matches raw substrings ("maira 2" finds
nothing for MAIRA-2; ``test_gradios_own_table_search_misses_what_a_person_types``).

How (``wiring._DatasetView``):

- A table shown whole gets its **base** with the server's answer: its rows for the controls as set but with no
  search (a hidden ``gr.JSON``: the Dataframe payload, each row's ``search_key`` and every row's key of the
  dataset/track, which ``search_terms`` reads to join words), and an **answer number** that counts the table's answers
  to this page. ``base_payload`` builds it; it is never in the first page (issue 36: pages stay light).
- On a change of the search box, ``FAST_JS`` (a gradio event with no server function) filters the base in the browser
  and shows the rows at once. It does so only for what it can match exactly like ``board.search_terms``: printable
  ASCII (whose ``search_key`` is a key per character, ``ASCII_KEYS``, checked by a test against ``search_key``), a
  result that is not empty, and no "nothing matches" message showing (that message's words are the server's).
  Otherwise it leaves the table as it is. Either way it writes a **claim**: what it showed (base digest, answer
  number, search), or nothing.
- Then ``gradio_compat.paint_first``'s step waits for that frame to be painted, so that gradio's own work of
  dispatching the server's event (below) does not hold the rows off the screen.
- The server's search event still runs (the plots, the page's ``sent`` state). When the claim ``holds`` (the page's
  last answer is the one the claim was made on, and the base is still the one for these controls), the page already
  shows the rows the server would send, and the table is not sent again; otherwise the server answers as before.
  So a slow answer to an earlier filter, or a store that changed meanwhile, can never leave the page on rows the
  browser guessed.

What the browser may do: read the base the server sent this page, show a subset of its rows, and tell the server
what it showed. The server never trusts the claim for anything but skipping a resend of rows it computes itself:
a false claim costs the lying page its own table, nothing else.
"""

from __future__ import annotations

import hashlib
import json
from typing import Callable

from rexrank.leaderboard import board
from rexrank.leaderboard.records import search_key

# Every printable ASCII character's search_key: for such text the key is the characters' keys joined (a test holds
# this against ``search_key`` for every pair and for random strings). Other text goes to the server.
ASCII_KEYS = {chr(c): search_key(chr(c)) for c in range(0x20, 0x7F)}

# ``board.search_terms`` and ``board.filter_table``'s search, for printable ASCII; null for anything else. The
# constants are board's own (``SEARCH_CHARS``, ``ALTERNATIVES``, ``SEARCH_SEPARATOR`` inside ``base.every``).
MATCH_JS = """(query, base) => {
  if (!base || typeof query !== 'string') return null;
  const text = query.slice(0, %(chars)d);
  if (!/^[\\x20-\\x7e]*$/.test(text)) return null;
  const keys = %(keys)s;
  const key = (word) => Array.from(word, (c) => keys[c]).join('');
  const terms = [];
  for (const alternative of text.split(/%(alternatives)s/)) {
    const words = alternative.split(' ').map(key).filter((w) => w.length > 0);
    let at = 0;
    while (at < words.length) {
      let term = words[at++];
      while (at < words.length && base.every.includes(term + words[at])) term += words[at++];
      terms.push(term);
    }
  }
  if (!terms.length) return base.table.data;
  return base.table.data.filter((_, i) => terms.some((t) => base.keys[i].includes(t)));
}""" % {"chars": board.SEARCH_CHARS, "keys": json.dumps(ASCII_KEYS), "alternatives": board.ALTERNATIVES.pattern}

# The search box's change, answered in the browser: [table, claim]. Registered before the server's event, which
# gradio runs after this one's outputs are applied, so the claim it reads is this one. When it leaves the search to
# the server, the table is left untouched (undefined: gradio skips that output; the table's value read with the
# search may be older than an answer being applied, e.g. a link's restore), and the claim is emptied.
FAST_JS = """(query, base, message, answer) => {
  const rows = (%s)(query, base);
  if (rows === null || rows.length === 0 || message) return [undefined, ''];
  return [{...base.table, data: rows}, JSON.stringify([base.v, answer, query])];
}""" % MATCH_JS


def base_payload(table: dict, shown_keys, every_keys) -> dict:
    """The base a page filters in the browser: ``table`` (the Dataframe payload of the rows with no search), each
    row's search key and every key of the dataset/track, under the digest ``v`` of them all."""
    body = {"table": table, "keys": list(shown_keys), "every": board.SEARCH_SEPARATOR.join(every_keys)}
    text = json.dumps(body, sort_keys=True, default=str)
    return {"v": hashlib.blake2b(text.encode(), digest_size=16).hexdigest(), **body}


def holds(claim, *, base_v: str | None, answer: str, search: str) -> bool:
    """Whether a page's ``claim`` says it shows the rows of ``search`` filtered from base ``base_v`` and nothing has
    been sent to its table since (``answer``: the number of the table's last answer to the page). Any other value,
    malformed ones included, is no claim."""
    if not claim or base_v is None or not isinstance(claim, str) or len(claim) > 4096:
        return False
    try:
        v, claimed_answer, claimed_search = json.loads(claim)
    except (ValueError, TypeError):
        return False
    return v == base_v and claimed_answer == answer and claimed_search == search


def base_of(page, payload: Callable) -> dict:
    """The base of a table with no search (``page``: ``Views.page_table``'s answer), its frame as ``payload``
    sends it."""
    return base_payload(payload(page.frame), page.shown["search_key"] if "search_key" in page.shown else (),
                        page.full["search_key"] if "search_key" in page.full else ())

"""The search box answered in the browser (``rexrank.leaderboard.quick_search``; issue 36's search target).

- The browser's rule is ``board.search_terms``'s: the JavaScript, run in Chromium, gives the very rows the server's
  ``page_table`` gives for ~300 queries on a board of the published models and synthetic ones (digits, hyphens,
  spaces, separators, case, look-alikes), and gives up (the server answers) on text outside printable ASCII.
- Its key table is ``search_key``'s: every printable pair and 20,000 random strings.
- The server trusts a claim only when the page's last answer and base are the ones it was made on, for the same
  search, and otherwise sends the table as before: a stale answer number, another search, a changed store or other
  filters, a malformed claim.
- In the page: with every request to the server held back, typing narrows the table; gradio runs the browser's
  answer before the server's event reads the claim, so the server's answer to a search does not resend the table.
"""

from __future__ import annotations

import json
import random

import pytest

from leaderboard_helpers import (DESKTOP, STATE_CEILING_MS, add_published_models, arm_paint_first,
                                 painted_before_sent, running_space, wait_until)
from rexrank.leaderboard import board, published, quick_search
from rexrank.leaderboard.records import search_key
from rexrank.leaderboard.store import Store

MIMIC = ("mimic_cxr", "findings")
GROWN = 60  # synthetic models beyond the published board: longer than the first rows (the base comes when shown)
# Queries a person types, and ones written to find a difference: separators, digits, look-alikes (0/O, 1/l/I/|),
# spacing that joins or splits words, nothing but punctuation, text past SEARCH_CHARS.
QUERIES = ["", " ", "maira 2", "MAIRA-2", "maira2", "maira_2", "MAIRA-2|MedGemma", "maira medgemma",
           "MAIRA-2|cvt2distilgpt2 iu", "maira;medgemma,chexagent", "|||", ",;,", "-", "stanford", "Stan ford",
           "rad phi", "radphi3.5", "RadPhi3.5Vision", "chexpertplus chex mimic", "CheXpertPlus-CheX-MIMIC", "2",
           "0", "o", "l1", "I", "|", "11", "grown 0001", "grown-00012", "GROWN 000", "institute 1", "institute1 7",
           "microsoft", "google", "xyz", "medversa", "med versa", "gpt4", "gpt 4", "Lingshu 7B", "m", "rn",
           "x" * 300, "maira " * 60, "   maira   2   ", "MAIRA 2 medgemma 4b", "a|b|c|d|e"]


@pytest.fixture(scope="module")
def grown_path(tmp_path_factory):
    path = tmp_path_factory.mktemp("quick") / "board.sqlite"
    store = Store(path)
    published.seed_store(store)
    add_published_models(store, GROWN)
    store.close()
    return path


def _queries(names: list[str]) -> list[str]:
    """QUERIES and pieces of the board's own names, cut, re-spaced and re-cased at random (seeded)."""
    rng = random.Random(7)
    out = list(QUERIES)
    for name in rng.sample(names, min(len(names), 60)):
        start = rng.randrange(len(name))
        piece = name[start:start + rng.randint(1, 8)]
        out.append(rng.choice([piece, piece.lower(), piece.upper(), " ".join(piece), piece.replace("-", " ")]))
        out.append(f"{piece}|{rng.choice(names)[:4]}")
    return out


def test_the_ascii_key_table_is_search_keys_own():
    chars = [chr(c) for c in range(0x20, 0x7F)]
    assert set(quick_search.ASCII_KEYS) == set(chars)
    for a in chars:
        for b in chars:
            assert search_key(a + b) == quick_search.ASCII_KEYS[a] + quick_search.ASCII_KEYS[b], repr(a + b)
    rng = random.Random(3)
    for _ in range(20_000):
        text = "".join(rng.choice(chars) for _ in range(rng.randint(1, 16)))
        assert search_key(text) == "".join(quick_search.ASCII_KEYS[c] for c in text), repr(text)


def _payload():
    import gradio as gr

    from rexrank.leaderboard.wiring import _frame_payload

    payload = _frame_payload(gr)
    return lambda df: json.loads(json.dumps(payload(df), default=str))  # as the wire carries it


@pytest.mark.browser
def test_the_browser_matches_the_rows_the_server_gives(browser, grown_path):
    """For each query, the JavaScript on the base gives the rows of the server's page_table for that search, in
    its order; and with a filter set too (the base is then that filter's rows, the words still joined over every
    row of the test set, as the server joins them)."""
    from rexrank.leaderboard.views import Views

    store = Store(grown_path)
    views = Views(store)
    payload = _payload()
    names = list(board.numeric_table(store, *MIMIC)["model"])
    page = browser.new_page()
    try:
        for filters in ([None, None, None, "all", None], [["Institute 3", "Microsoft"], None, None, "all", None]):
            base = json.loads(json.dumps(quick_search.base_of(
                views.page_table(*MIMIC, "", *filters, None, "1/radcliq_v1"), payload)))
            queries = _queries(names)
            browser_rows = page.evaluate(f"([queries, base]) => queries.map((q) => ({quick_search.MATCH_JS})(q, base))",
                                         [queries, base])
            compared = 0
            for query, rows in zip(queries, browser_rows):
                server = payload(views.page_table(*MIMIC, query, *filters, None, "1/radcliq_v1").frame)["data"]
                assert rows == server, (query, filters, len(rows), len(server))
                compared += bool(server) and len(server) < len(base["table"]["data"])
            assert compared > 40, compared  # most queries narrow the table to some rows, not none or all
        # Text the key table does not cover goes to the server, which answers it the same way as ever.
        for query in ("maïra 2", "ＭＡＩＲＡ-2", "maira\t2", "мaira"):
            assert page.evaluate(f"([q, base]) => ({quick_search.MATCH_JS})(q, base)", [query, base]) is None, query
    finally:
        page.close()
        store.close()


def _view(store, built: dict):
    import gradio as gr

    from rexrank.leaderboard.views import Views
    from rexrank.leaderboard.wiring import _DatasetView

    views = Views(store)
    with gr.Blocks():
        view = _DatasetView(gr, views, *MIMIC, built)
    return views, view


def test_the_server_skips_the_table_only_for_a_claim_that_holds(grown_path, tmp_path):
    import shutil

    import gradio as gr

    path = tmp_path / "board.sqlite"
    shutil.copy(grown_path, path)
    store = Store(path)
    built: dict = {}
    views, view = _view(store, built)
    page = dict(built)
    defaults = [c.value for c in view.controls]
    searched = ["maira 2", *defaults[1:]]

    first = view.table_update(gr, views, defaults, page)  # the table shown whole: its base comes with it
    table, _, base, answer = first
    assert table != gr.skip() and base["keys"] and answer == "1"
    assert len(base["table"]["data"]) == len(views.page_table(*MIMIC).frame)

    def claim(v=base["v"], n=answer, search="maira 2"):
        return json.dumps([v, n, search])

    held = view.table_update(gr, views, searched, page, claim=claim())
    assert held == [gr.skip()] * 4  # the page shows these rows already
    assert page[f"rows-{view.key}"] and page[f"answer-{view.key}"] == "1"
    # Anything else is no claim: the table is sent as before, and a new answer number voids older claims.
    for bad in (claim(n="0"), claim(search="maira"), claim(v="0" * 32), "not json", json.dumps([1, 2]), "[]",
                json.dumps([base["v"], "1", "maira 2"]) + " " * 5000):
        out = view.table_update(gr, views, searched, page, claim=bad)
        assert out[0] != gr.skip() and out[3] != gr.skip(), bad
    assert view.table_update(gr, views, searched, page, claim=claim())[0] != gr.skip()  # answer 1 is old now
    # Other filters: the base of the claim is not theirs.
    n = page[f"answer-{view.key}"]
    filtered = ["maira 2", ["Institute 3"], *defaults[2:]]
    out = view.table_update(gr, views, filtered, page, claim=claim(n=n))
    assert out[0] != gr.skip() and out[2] != gr.skip() and out[2]["v"] != base["v"]
    # The store changed: a model that the search finds came in; a claim on the old base is not trusted.
    current = out[2]
    add_published_models(store, 1, seed=5, prefix="Maira 2 Plus")
    out = view.table_update(gr, views, filtered, page, claim=claim(v=current["v"], n=page[f"answer-{view.key}"]))
    assert out[0] != gr.skip() and out[2] != gr.skip() and out[2]["v"] != current["v"]
    assert search_key("Maira 2 Plus") in out[2]["every"]  # filtered out here, its words still join a search (as on the server)
    # A search that finds nothing: the server's message, never a claim.
    nothing = ["zzzz", *defaults[1:]]
    out = view.table_update(gr, views, nothing, page,
                            claim=claim(v=page[f"base-{view.key}"], n=page[f"answer-{view.key}"], search="zzzz"))
    assert out[0] != gr.skip() and out[1].visible
    store.close()


def _grid_rows(page, elem_id: str) -> int:
    return int(page.get_attribute(f"#{elem_id} [role=grid]", "aria-rowcount")) - 1


@pytest.mark.browser
@pytest.mark.slow
def test_typing_narrows_the_table_in_the_browser_and_the_server_does_not_resend_it(browser, grown_path):
    from rexrank.leaderboard.views import Views

    with running_space(grown_path, worker=False) as (url, store, _):
        views = Views(store)
        elem = f"table-{'-'.join(MIMIC)}"
        page = browser.new_page(viewport=DESKTOP)
        try:
            page.goto(url, wait_until="load")
            page.get_by_role("tab", name="MIMIC-CXR", exact=True).click()
            whole = len(views.page_table(*MIMIC).frame)
            wait_until(lambda: _grid_rows(page, elem) == whole, f"{whole} MIMIC-CXR rows once its tab is opened")
            wait_until(lambda: page.evaluate(f"() => !!document.querySelector('#{elem}')"), "the table")
            box = page.locator(f"#search-{'-'.join(MIMIC)} input, #search-{'-'.join(MIMIC)} textarea").first

            # The server's answer to the search, as the page gets it.
            expected = len(views.page_table(*MIMIC, "grown 0001").frame)
            assert 0 < expected < whole
            grid = f"#{elem} [role=grid]"
            arm_paint_first(page, "input", f"() => document.querySelector('{grid}')"
                                           f".getAttribute('aria-rowcount') === '{expected + 1}'")
            with page.expect_response(lambda r: "/gradio_api/" in r.url and r.request.method == "POST",
                                      timeout=STATE_CEILING_MS) as answer:
                box.fill("grown 0001")
            wait_until(lambda: _grid_rows(page, elem) == expected, f"{expected} rows for 'grown 0001'")
            # The browser's rows reach the screen before the server's event is sent (gradio_compat.paint_first).
            painted_before_sent(page)
            body = answer.value.json()
            outputs = body.get("data", body)
            assert answer.value.ok and outputs, body
            # The claim held: no output carries the table's rows again (a skip is an update with no value).
            assert not [o for o in outputs if isinstance(o, dict) and "headers" in json.dumps(o)], body

            # Every request held back: the browser alone narrows the table.
            held = []  # held, not failed: gradio stops sending events after a request that failed
            page.route("**/gradio_api/**", lambda route: held.append(route))
            expected = len(views.page_table(*MIMIC, "maira 2|medgemma").frame)
            assert 0 < expected < whole
            box.fill("maira 2|medgemma")
            wait_until(lambda: _grid_rows(page, elem) == expected, f"{expected} rows for 'maira 2|medgemma'")
            names = page.locator(f"#{elem} [role=row]").all_inner_texts()
            assert any("MAIRA-2" in n for n in names) and any("MedGemma" in n for n in names), names[:5]
            assert held  # the server's event was sent, and is only answered now
            with page.expect_response(lambda r: "/gradio_api/" in r.url and r.request.method == "POST",
                                      timeout=STATE_CEILING_MS):
                for route in held:
                    route.continue_()
            page.unroute("**/gradio_api/**")
            page.evaluate("() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))")
            assert _grid_rows(page, elem) == expected  # the server's answer left the rows as they were
            # A search the browser leaves to the server (no row): the server's message, as before.
            box.fill("zzzz")
            page.locator(f"#empty-{'-'.join(MIMIC)}").get_by_text("No model matches").wait_for(
                timeout=STATE_CEILING_MS)
        finally:
            page.close()

"""The board as server-rendered HTML pages (issue 48, phase 1: ``rexrank.leaderboard.pages``), at the HTTP level.

The pages' app runs in-process (Starlette's TestClient, no server, no browser) on a store seeded from the bundled
published tables; the HTML is parsed (``html.parser``) and held against the views it renders: every view renders
with real tables; cells are the views' values; text from the store and from a query comes out escaped; a query's
unknown values are left out and named, never echoed; the generation answers with an ETag and a 304; responses are
gzip-compressed; ``compare=A,B`` and repeated ``compare=`` give one page; the pages are mounted on gradio's app.
"""

from __future__ import annotations

import gzip
import re
from html.parser import HTMLParser

import pytest
from leaderboard_helpers import add_kept_results, add_scored_result

from rexrank.leaderboard import links
from rexrank.leaderboard.records import DATASETS, TRACKS
from rexrank.leaderboard.store import Store

HOSTILE_NAME = 'Evil" onmouseover="alert(1)'  # quotes and parentheses are allowed in a name: only attributes hurt
HOSTILE_INSTITUTION = "<script>alert('inst')</script> R&D"  # the Store keeps it as given (forms clean it first)
HOSTILE_URL = "https://evil.example/model?a=1&b=%22x%22"


class Page(HTMLParser):
    """What a test reads of a page: its tables (caption, header cells, rows of (tag, attributes, text)), every
    element's attributes, and its text."""

    def __init__(self, source: str):
        super().__init__(convert_charrefs=True)
        self.tables: list[dict] = []
        self.elements: list[tuple[str, dict]] = []
        self._open: list[list] = []  # cells being read: [tag, attrs, text]
        self._in_caption = False
        self.text = []
        self.feed(source)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.elements.append((tag, attrs))
        if tag == "table":
            self.tables.append({"caption": "", "head": [], "rows": [], "attrs": attrs})
        elif tag == "caption":
            self._in_caption = True
        elif tag == "tr" and self.tables:
            self.tables[-1]["rows"].append([])
        elif tag in ("th", "td") and self.tables:
            self._open.append([tag, attrs, ""])

    def handle_endtag(self, tag):
        if tag == "caption":
            self._in_caption = False
        elif tag in ("th", "td") and self._open:
            cell = self._open.pop()
            cell[2] = cell[2].strip()
            self.tables[-1]["rows"][-1].append(tuple(cell))

    def handle_data(self, data):
        self.text.append(data)
        if self._in_caption:
            self.tables[-1]["caption"] += data
        if self._open:
            self._open[-1][2] += data

    def table(self, n: int = 0) -> tuple[str, list, list]:
        """(caption, header texts, body rows as texts) of the n-th table."""
        found = self.tables[n]
        head, *body = found["rows"]
        return found["caption"], [c[2] for c in head], [[c[2] for c in row] for row in body]


@pytest.fixture(scope="module")
def views(tmp_path_factory):
    """A store seeded from the bundled published tables, plus a rexrank-scored row with a hostile name,
    institution and URL, and a result added with unofficial weights (the ⚠ mark)."""
    from rexrank.leaderboard.published import seed_store
    from rexrank.leaderboard.records import MetricValue, ModelInfo, ResultRecord
    from rexrank.leaderboard.views import Views

    store = Store(tmp_path_factory.mktemp("pages") / "board.sqlite")
    seed_store(store)
    store.add_result(ResultRecord(model=ModelInfo(name=HOSTILE_NAME, institution=HOSTILE_INSTITUTION,
                                                  url=HOSTILE_URL),
                                  dataset="iu_xray", split="test", track="findings", source="rexrank", n_studies=590,
                                  metrics={"bleu2": MetricValue(0.3, 0.29, 0.31)}))
    store.add_result(ResultRecord(model=ModelInfo(name="Unofficial"), dataset="iu_xray", split="test",
                                  track="findings", source="rexrank", n_studies=590,
                                  metrics={"bleu2": MetricValue(0.9, 0.89, 0.91),
                                           "radcliq_v1": MetricValue(0.5, 0.45, 0.55)}),
                     allow_unofficial_weights=True)
    yield Views(store)
    store.close()


@pytest.fixture(scope="module")
def client(views):
    from starlette.testclient import TestClient

    from rexrank.leaderboard.pages.routes import board_app

    with TestClient(board_app(views)) as test_client:
        yield test_client


def _get(client, query: str = "", **kwargs):
    response = client.get("/" + (f"?{query}" if query else ""), **kwargs)
    assert response.status_code == 200, (query, response.status_code, response.text[:300])
    return response


def _model_cell(text: str) -> str:
    """A Model cell's text as the views give it: the page adds a "↗" link to the model's own site."""
    return text.removesuffix(" ↗")


VIEWS = ([("", "overview")] + [(f"track={t}", "overview") for t in TRACKS if t != TRACKS[0]]
         + [(f"tab={d}&track={t}", "table") for d in DATASETS for t in TRACKS]
         + [("tab=models", "model"), ("tab=models&model=MAIRA-2", "model"),
            ("tab=compare&compare=MAIRA-2&compare=MedGemma", "compare"), ("tab=compare", "pick"),
            ("tab=about", "about"), ("tab=submit", "gradio"), ("tab=arena", "gradio")])


@pytest.mark.parametrize("query,kind", VIEWS)
def test_every_view_renders_with_real_tables(client, query, kind):
    """Point 1: each view is a URL; its tables have a caption, column headers (scope col) and the model's cell as
    the row's header (scope row); the page names its generation; nothing in it is a gradio component."""
    response = _get(client, query)
    assert response.headers["content-type"].startswith("text/html")
    page = Page(response.text)
    main = next(attrs for tag, attrs in page.elements if tag == "main")
    assert main["id"] == "board" and len(main["data-generation"]) == 20 and main["data-poll-s"] == "10"
    if kind in ("overview", "table", "model", "compare"):
        assert page.tables, query
        for found in page.tables:
            head, *body = found["rows"]
            assert found["caption"].strip() and all(c[0] == "th" and c[1]["scope"] == "col" for c in head)
            assert body and all(sum(c[0] == "th" and c[1].get("scope") == "row" for c in row) == 1 for row in body)
    if kind == "about":
        from rexrank.leaderboard.about import CITATION_BIBTEX

        assert CITATION_BIBTEX.strip() in "".join(page.text)
        assert ("section", {"id": "cite"}) in page.elements and "Known quirks of the published tables" in page.text
    if kind == "pick":
        assert "Choose 2 to 4 models" in response.text and not page.tables
    if kind == "gradio":
        assert any(tag == "a" and a.get("href", "").startswith("../?tab=") for tag, a in page.elements)
    assert "gradio-app" not in response.text and "gr.Dataframe" not in response.text


@pytest.mark.parametrize("query,expected", [
    ("tab=iu_xray", {}),
    ("tab=iu_xray&q=maira%202", {"search": "maira 2"}),
    ("tab=mimic_cxr&track=findings_impression&sort=green", {"sort_by": "green"}),
    ("tab=iu_xray&source=rexrank&cols=bleu2&cols=radcliq_v1", {"sources": ["rexrank"],
                                                                "columns": ["bleu2", "radcliq_v1"]}),
    ("tab=rexgradient&track=findings_impression", {}),  # the published 1/RadCliQ-v1 marked †
])
def test_table_cells_are_the_views_values(client, views, query, expected):
    """Point 1: the table's caption, headers and every cell are what the views give the gradio board (the /table
    API's cells: intervals, ranks, marks ⚠ and †), in its order; the search is the server's (board.search_terms)."""
    link = links.parse(query, links.TABS, DATASETS)
    frame = views.table_view(link.tab, link.track, **expected)
    caption, head, body = Page(_get(client, query).text).table()
    assert caption == views.page_table(link.tab, link.track, **expected).label
    assert head == list(frame.columns)
    at = head.index("Model")
    assert [row[:at] + [_model_cell(row[at])] + row[at + 1:] for row in body] == frame.astype(str).values.tolist()
    if link.tab == "rexgradient":
        assert any("†" in cell for row in body for cell in row)
    if link.tab == "iu_xray" and not expected:
        assert ["Unofficial ⚠"] == [_model_cell(row[at]) for row in body if row[at].startswith("Unofficial")]
        assert any("[" in cell and "]" in cell for row in body for cell in row)  # an interval


def test_overview_cells_are_the_views_values(client, views):
    for track in TRACKS:
        frame = views.overview_view(track)
        caption, head, body = Page(_get(client, f"track={track}" if track != TRACKS[0] else "").text).table()
        assert head == list(frame.columns) and body == frame.astype(str).values.tolist()


def test_model_page_shows_every_result_and_its_details(client, views):
    frame, details = views.model_view("MAIRA-2")
    page = Page(_get(client, "tab=models&model=MAIRA-2").text)
    caption, head, body = page.table()
    assert head == list(frame.columns) and body == frame.astype(str).values.tolist()
    assert "No subgroup results stored for this model" in "".join(page.text)
    # Without a model, the page opens on the overview's first, as the gradio board's Models tab does.
    default = Page(_get(client, "tab=models").text)
    assert default.table()[2] == views.model_view(views.default_model())[0].astype(str).values.tolist()


def test_store_text_comes_out_escaped(client):
    """Trust boundary: a hostile name, institution and URL from the store are text in the page, in attributes
    too (no attribute of the page is an event handler; the only script is the page's own)."""
    for query in ("tab=iu_xray", f"tab=models&model={HOSTILE_NAME}", f"tab=compare&compare={HOSTILE_NAME},MAIRA-2"):
        response = _get(client, query, params=None)
        page = Page(response.text)
        assert not [(tag, name) for tag, attrs in page.elements for name in attrs if name.startswith("on")], query
        assert [a for tag, a in page.elements if tag == "script"] == [{}]  # the loader (assets.loader) alone
        assert _scripts(response.text) in (["static/board.js"], ["static/search.js", "static/board.js"]), query
        assert HOSTILE_NAME in "".join(page.text), query
        assert "<script>alert" not in response.text and 'Evil" onmouseover' not in response.text
    rows = Page(_get(client, "tab=iu_xray").text).tables[0]["rows"]
    cell = next(row for row in rows if row[1][2].startswith("Evil"))
    assert HOSTILE_INSTITUTION in [c[2] for c in cell], cell  # stored as given (the Store takes it), shown as text
    links_to = [a["href"] for tag, a in Page(_get(client, "tab=iu_xray").text).elements if tag == "a"]
    assert HOSTILE_URL in links_to  # the parser unescaped &amp;: the attribute held the URL, escaped


def test_a_hostile_search_is_quoted_back_as_text(client):
    response = _get(client, "tab=iu_xray&q=%3Cscript%3Ealert(1)%3C/script%3E")
    page = Page(response.text)
    assert not page.tables and "No model matches these filters." in "".join(page.text)
    assert "<script>alert(1)" not in response.text and "&lt;script&gt;alert(1)&lt;/script&gt;" in response.text


def test_unknown_query_values_are_left_out_and_named_never_echoed(client):
    """Trust boundary: every value is checked against the board's names (links.parse/checked); what is not
    understood is named by rexrank's parameter names in one note, and the rest of the view is shown."""
    response = _get(client, "tab=iu_xray&sort=%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E&inst=Nowhere%20Institute"
                            "&zzz=secret-value&year=19x9")
    page = Page(response.text)
    note = [t for t in page.text if "not understood" in t]
    assert note == [links.notice(links.Link(ignored=("other", "year", "inst", "sort")))], note
    assert "onerror" not in response.text and "Nowhere" not in response.text and "secret-value" not in response.text
    assert page.tables and page.table()[0].startswith("IU-Xray · Findings: ranked by 1/RadCliQ-v1")
    unknown_tab = Page(_get(client, "tab=%3Cb%3E").text)
    assert any("(tab)" in t for t in unknown_tab.text) and unknown_tab.table()[0].startswith("Overview")
    nobody = _get(client, "tab=models&model=Nobody%20Here")
    assert links.notice(links.Link(ignored=("model",))) in nobody.text and "Nobody" not in nobody.text
    too_long = _get(client, "q=" + "x" * 5000)
    assert "the whole link (too long)" in too_long.text and "xxxxxxxxxx" not in too_long.text


def test_compare_takes_a_comma_list_and_repeated_names_alike(client):
    comma = _get(client, "tab=compare&compare=MAIRA-2,MedGemma")
    repeated = _get(client, "tab=compare&compare=MAIRA-2&compare=MedGemma")
    assert comma.text == repeated.text and str(comma.url) == str(repeated.url)
    assert str(comma.url).endswith("?tab=compare&compare=MAIRA-2&compare=MedGemma")  # one URL per view
    page = Page(comma.text)
    assert page.tables and page.table()[1][1:] == ["MAIRA-2 (published)", "MedGemma (published)"]
    other_order = Page(_get(client, "tab=compare&compare=MedGemma,MAIRA-2").text)
    assert other_order.table()[1][1:] == ["MedGemma (published)", "MAIRA-2 (published)"]  # the order picked
    five = _get(client, "tab=compare&compare=MAIRA-2,MedGemma,CheXagent,CARE-X,CX-Mind")
    # At most four, as links bounds repeated names: the rest is left out and named.
    assert Page(five.text).table()[1][1:] == [f"{m} (published)" for m in ("MAIRA-2", "MedGemma", "CheXagent",
                                                                           "CARE-X")]
    assert links.notice(links.Link(ignored=("compare",))) in five.text


def test_a_form_submission_is_redirected_to_the_views_one_url(client):
    """The filter form sends every control (all columns, the default sort): the page answers with the same view
    at its canonical URL, defaults left out."""
    response = client.get("/?tab=iu_xray&track=findings&q=maira&cols=bleu2&cols=bertscore&cols=semb&cols=radgraph"
                          "&cols=radcliq_v1&cols=ratescore&cols=green&cols=crimson&sort=radcliq_v1",
                          follow_redirects=False)
    assert response.status_code == 303 and response.headers["location"] == "./?tab=iu_xray&q=maira"


def test_the_live_part_is_the_pages_and_names_its_query(client):
    """Search as typed: the script fetches /live with the page's query and the search; the server filters (one
    owner of the search rule) and sends the table alone, the same as in the page, with the canonical query."""
    response = client.get("/live?tab=iu_xray&q=maira+2")
    assert response.status_code == 200 and response.headers["x-board-query"] == "tab=iu_xray&q=maira+2"
    # the table and its row-pick form, not the view's controls (the search and filter form)
    assert "<html" not in response.text and 'role="search"' not in response.text and "board-search" not in response.text
    assert response.text in _get(client, "tab=iu_xray&q=maira+2").text
    assert [_model_cell(r[1]) for r in Page(response.text).table()[2]] == ["MAIRA-2"]


@pytest.mark.parametrize("query", ["", "tab=mimic_cxr&track=findings_impression", "tab=models", "tab=about",
                                   "tab=compare&compare=MAIRA-2&compare=MedGemma", "tab=submit"])
def test_every_views_live_part_is_the_one_in_its_page(client, query):
    """What a changed board replaces is the part of the page it stands for (the page's div#board-live)."""
    live = client.get("/live" + (f"?{query}" if query else ""))
    assert live.status_code == 200 and live.text
    assert f'<div id="board-live" aria-live="polite">{live.text}</div>' in _get(client, query).text


def test_static_files_are_served_and_cached_by_their_digest(client):
    page = Page(_get(client).text)
    css = next(a["href"] for t, a in page.elements if t == "link" and "static/" in a.get("href", ""))
    for url in (css, *re.findall(r'"(static/[^"]+)"', _get(client).text.rsplit("<script>", 1)[1])):
        response = client.get("/" + url)
        assert response.status_code == 200 and "immutable" in response.headers["cache-control"]
    css = client.get("/static/board.css").text
    assert "prefers-color-scheme: dark" in css and "position: sticky" in css and "break-all" not in css
    assert client.get("/static/nope.css").status_code == 404


def test_csv_and_json_of_a_table(client, views):
    response = client.get("/csv/iu_xray/findings")
    assert response.status_code == 200 and response.text == views.csv_text("iu_xray", "findings")
    assert client.get("/json/iu_xray/findings").text == views.results_json("iu_xray", "findings")
    missing = client.get("/csv/%3Cb%3E/findings")
    assert missing.status_code == 404 and "<b>" not in missing.text and "iu_xray" in missing.text


def test_the_csv_names_each_column_for_what_it_holds(client, views):
    """Issue 48 point 4: the board's 1/RadCliQ-v1 is the CSV's inv_radcliq_v1 (before: radcliq_v1, which an
    analyst reads as the lower-is-better mean); every reciprocal metric of the registry is named so, its CI bounds
    too; the other metrics keep their names; the values are the board's."""
    import csv
    import io

    from rexrank.metrics import REGISTRY
    from rexrank.metrics.aggregation import RECIPROCAL_OF_MEAN

    for dataset, track in (("iu_xray", "findings"), ("mimic_cxr", "findings_impression")):
        text = client.get(f"/csv/{dataset}/{track}").text
        rows = list(csv.DictReader(io.StringIO(text)))
        header = text.splitlines()[0].split(",")
        numeric = views.numeric(dataset, track)
        for metric in views.metrics(track):
            reciprocal = REGISTRY.spec(metric).leaderboard_aggregation == RECIPROCAL_OF_MEAN
            name = f"inv_{metric}" if reciprocal else metric
            assert [name, f"{name}_low", f"{name}_high"] == header[header.index(name):header.index(name) + 3]
            if reciprocal:
                assert metric not in header and f"{metric}_low" not in header, (metric, header)
            shown = [float(r[name]) if r[name] else None for r in rows]
            assert shown == [None if v != v else float(f"{v:.6g}") for v in numeric[metric]]
        assert "inv_radcliq_v1" in header and "radcliq_v1" not in header
        assert "inv_radcliq_v1_from_components" in header and "radcliq_components" not in header
    first = next(r for r in csv.DictReader(io.StringIO(client.get("/csv/iu_xray/findings").text))
                 if r["source"] == "published")
    assert float(first["inv_radcliq_v1"]) > 1  # 1/RadCliQ-v1 of a published row (its mean is below 1)


def test_responses_are_gzip_compressed(client):
    response = client.get("/?tab=iu_xray", headers={"Accept-Encoding": "gzip"})
    assert response.headers["content-encoding"] == "gzip"
    raw = client.get("/?tab=iu_xray", headers={"Accept-Encoding": "identity"})
    assert "content-encoding" not in raw.headers and raw.text == response.text
    assert len(gzip.compress(raw.content)) < len(raw.content) / 3


def test_the_generation_answers_with_an_etag_and_a_304_until_the_board_changes(tmp_path):
    """Freshness: /version's ETag is the store's generation; asked again with it, the answer is a 304 (no body);
    after a change of the board it is a new generation, and the page says the same one."""
    from starlette.testclient import TestClient

    from rexrank.leaderboard.pages.routes import board_app
    from rexrank.leaderboard.views import Views

    store = Store(tmp_path / "board.sqlite")
    add_scored_result(store, "First", bleu=0.5)
    client = TestClient(board_app(Views(store)))
    first = client.get("/version")
    etag, generation = first.headers["etag"], first.json()["generation"]
    assert first.status_code == 200 and "no-cache" in first.headers["cache-control"]
    assert etag.startswith('W/"')  # weak: one tag for the compressed and the plain answer
    again = client.get("/version", headers={"If-None-Match": etag})
    assert again.status_code == 304 and again.content == b"" and again.headers["etag"] == etag
    page = client.get("/?tab=iu_xray")
    assert f'data-generation="{generation}"' in page.text
    assert client.get("/?tab=iu_xray", headers={"If-None-Match": page.headers["etag"]}).status_code == 304
    add_scored_result(store, "Second", bleu=0.6)
    changed = client.get("/version", headers={"If-None-Match": etag})
    assert changed.status_code == 200 and changed.json()["generation"] != generation
    assert changed.headers["etag"] != etag
    live = client.get("/live?tab=iu_xray")
    assert live.headers["x-board-generation"] == changed.json()["generation"] and "Second" in live.text
    assert client.get("/?tab=iu_xray", headers={"If-None-Match": page.headers["etag"]}).status_code == 200
    store.close()


def _front(views, elsewhere=None):
    """The pages in front of a stand-in for gradio's app (``routes.PagesFirst``, as ``serve`` launches them): a
    FastAPI app with a root page of its own, its config, a file under /static/ and a /submit page."""
    from fastapi import FastAPI
    from fastapi.responses import PlainTextResponse
    from starlette.middleware import Middleware

    from rexrank.leaderboard.pages.routes import PagesFirst, board_app

    behind = [Middleware(PagesFirst, pages=board_app(views), elsewhere=elsewhere or {"submit": "/submit"},
                         gradio_tabs=("submit", "arena"))]
    app = FastAPI(middleware=behind)
    for path in ("/", "/config", "/static/fonts/font.woff2", "/submit", "/gradio_api/info"):
        app.add_api_route(path, lambda path=path: PlainTextResponse(f"gradio {path}"))
    return app


def test_the_pages_answer_the_root_in_front_of_the_app_behind(views):
    """Issue 48 point 2: the pages answer the Space's root URL and their files beside it, in front of gradio's app
    (``PagesFirst``); every other path is gradio's (its config, API and files); a link to a view gradio serves
    (``?tab=submit``) goes there, one the host left off (the Arena) is one line; a link of the pages' old /board/
    prefix goes to the same view at the root."""
    from starlette.testclient import TestClient

    client = TestClient(_front(views))
    root = client.get("/?tab=iu_xray")
    assert root.status_code == 200 and Page(root.text).table()[0].startswith("IU-Xray")
    assert client.get("/").text.startswith("<!doctype html>")
    for path in ("/version", "/static/board.js", "/static/board.css", "/csv/iu_xray/findings",
                 "/json/iu_xray/findings", "/live?tab=iu_xray"):
        assert client.get(path).status_code == 200, path
    for path in ("/config", "/static/fonts/font.woff2", "/gradio_api/info", "/submit"):
        assert client.get(path).text == f"gradio {path}", path
    moved = client.get("/?tab=submit&__theme=dark", follow_redirects=False)
    assert moved.status_code == 303 and moved.headers["location"] == "/submit?__theme=dark"
    off = client.get("/?tab=arena", follow_redirects=False)
    assert off.status_code == 404 and off.text == "This board has no arena page: its host has it off."
    old = client.get("/board/?tab=iu_xray&q=maira", follow_redirects=False)
    assert old.status_code == 308 and old.headers["location"] == "/?tab=iu_xray&q=maira"
    assert client.get("/board", follow_redirects=False).headers["location"] == "/"
    assert client.post("/").status_code == 405  # a method the pages do not take goes on to the app (GET only)


@pytest.mark.slow
def test_the_launched_space_serves_the_pages_at_its_root(tmp_path):
    """Point 2, on the real app: ``serve`` launches gradio with the pages in front; / answers the overview
    (compressed), /board/ links go to the root, gradio's Submit page, config and API keep answering."""
    import httpx
    from leaderboard_helpers import running_space

    with running_space(tmp_path / "board.sqlite", worker=False) as (url, store, _):
        page = httpx.get(url, headers={"Accept-Encoding": "gzip"}, timeout=60)
        assert page.status_code == 200 and page.headers["content-encoding"] == "gzip"
        assert Page(page.text).table()[0].startswith("Overview · Findings")
        assert httpx.get(f"{url}board/?tab=iu_xray", follow_redirects=True, timeout=60).url.query == b"tab=iu_xray"
        assert httpx.get(f"{url}version", timeout=60).json()["generation"]
        submit = httpx.get(f"{url}?tab=submit", follow_redirects=True, timeout=60)
        assert submit.url.path == "/submit" and "gradio_config" in submit.text
        assert httpx.get(f"{url}config", timeout=60).json()["version"]
        assert httpx.get(f"{url}csv/iu_xray/findings", timeout=60).text.startswith("rank,model,")


# Links of the gradio board the Space had before (its own URL writer wrote them at /): each opens the same view.
OLD_LINK = "tab=mimic_cxr&track=findings_impression"


def test_links_of_the_gradio_board_open_the_same_view(views):
    """Issue 48 point 1: a link written by the gradio board (``/?tab=...``: tab, track, search, filters, sort,
    model, compare; gradio's own ``__theme``) opens the same view on the pages: the rows the board gives it, in its
    ranking's order, the filters it set shown ticked (a visitor sees, and can clear, them); a link that spells a
    default out is redirected to the view's one URL; a broken one shows the rest and says what was left out."""
    import re

    from starlette.testclient import TestClient

    client = TestClient(_front(views))

    def names(response) -> list[str]:
        return [_model_cell(row[1]).removesuffix(" ⚠") for row in Page(response.text).table()[2]]

    def expected(**controls) -> list[str]:
        frame = views.page_table("mimic_cxr", "findings_impression", **controls).frame
        return [re.sub(r"^\[(.*?)\]\(.*\)$", r"\1", cell) for cell in frame["Model"]]

    term = next(t for t in ("ch", "ra", "me", "ma", "gpt", *"aeiou") if len(expected(search=t, sort_by="green")) >= 3
                and expected(search=t, sort_by="green") != expected(search=t))  # the rankings order them apart
    searched = client.get(f"/?{OLD_LINK}&q={term}&sort=green")  # as links.query wrote it: the page's own URL
    assert searched.history == [] and "ranked by GREEN" in Page(searched.text).table()[0]
    assert names(searched) == expected(search=term, sort_by="green")
    institution = views.filter_choices("mimic_cxr", "findings_impression").institutions[0]
    year = int(views.page_table("mimic_cxr", "findings_impression", institutions=[institution]).shown["year"].iloc[0])
    filtered = client.get(f"/?{OLD_LINK}&inst={institution}&year={year}")
    assert names(filtered) == expected(institutions=[institution], years=[year])
    assert len(names(filtered)) < len(expected())
    ticked = {(a["name"], a["value"]) for tag, a in Page(filtered.text).elements
              if tag == "input" and "checked" in a and a.get("name") in ("inst", "year")}
    assert ticked == {("inst", institution), ("year", str(year))}
    model = client.get("/?tab=models&model=MedGemma")
    assert Page(model.text).table()[0].startswith("MedGemma")
    compared = client.get("/?tab=compare&compare=MAIRA-2&compare=MedGemma")
    assert Page(compared.text).table()[1][1:] == ["MAIRA-2 (published)", "MedGemma (published)"]
    spelled = client.get("/?tab=iu_xray&track=findings&sort=radcliq_v1&__theme=dark", follow_redirects=False)
    assert spelled.status_code == 303 and spelled.headers["location"] == "./?tab=iu_xray"
    broken = client.get("/?tab=nowhere&model=%3Cimg%20src%3Dx%3E&%3Cb%3Eoops%3C%2Fb%3E=1&track=findings_impression")
    page = Page(broken.text)
    assert links.notice(links.Link(ignored=("other", "tab", "model"))) in page.text
    assert "<img" not in broken.text and "oops" not in broken.text
    assert page.table()[0].startswith("Overview · Findings + Impression")  # what was understood: the track


def test_filters_search_and_sort_as_a_visitor_uses_them(client, views):
    """What the gradio board's browser tests checked of its controls, on the pages (tests/test_leaderboard_browser.py
    before issue 48): "trained on this dataset" selects the IU-trained published models; a filter with one choice
    is not offered; a search matching nothing shows no rows and names what to clear; a sort by a metric puts a row
    with a value first; a column hidden ranks as shown; the header links the paper, rexrank.ai and says when the
    board last changed; a model's name links its own site; the CSV holds every row."""
    from rexrank.leaderboard import about

    trained = Page(_get(client, "tab=iu_xray&trained=only").text).table()[2]
    assert {_model_cell(row[1]) for row in trained} == {"MoERad-IU", "VLCI-IU", "Cvt2distilgpt2-IU", "BiomedGPT-IU"}
    page = Page(_get(client, "tab=iu_xray").text)
    legends = [text.strip() for text in page.text if text.strip() in ("Institution", "Year", "Model type", "Source")]
    assert "Model type" not in legends and {"Institution", "Source"} <= set(legends)  # no model type on these rows
    assert len(views.filter_choices("iu_xray", "findings").model_types) <= 1
    nothing = _get(client, "tab=iu_xray&q=zzzz%20qqqq")
    assert not Page(nothing.text).tables and "Clear Search “zzzz qqqq” to see rows again" in nothing.text
    crimson = Page(_get(client, "tab=iu_xray&sort=crimson").text).table()
    assert crimson[0].startswith("IU-Xray · Findings: ranked by CRIMSON")
    assert crimson[2][0][crimson[1].index("CRIMSON ↑")] != "–"
    shown = Page(_get(client, "tab=iu_xray&cols=bleu2&sort=bleu2").text).table()[2]
    hidden = Page(_get(client, "tab=iu_xray&cols=bertscore&sort=bleu2").text).table()[2]
    assert [row[:2] for row in shown] == [row[:2] for row in hidden] and shown[0][0] == "1"
    hrefs = {a.get("href") for tag, a in page.elements if tag == "a"}
    assert {about.PAPER_URL, about.SITE_URL} <= hrefs and "Last updated: 20" in "".join(page.text)
    site = views.numeric("iu_xray", "findings").set_index("model")["url"]["MoERad-IU"]
    assert site and site in hrefs
    csv = client.get("/csv/iu_xray/findings").text.splitlines()
    assert csv[0].startswith("rank,model,") and len(csv) == 1 + len(views.numeric("iu_xray", "findings"))


def test_search_finds_a_name_as_a_person_types_it(tmp_path):
    """Issue 24 point 7 and issue 37 point 4 on the pages: h_space is found by "h_space", "H SPACE",
    "zzz|h-space" and its institution; "zzz" finds nothing."""
    from urllib.parse import urlencode

    from starlette.testclient import TestClient

    from rexrank.leaderboard.pages.routes import board_app
    from rexrank.leaderboard.views import Views

    store = Store(tmp_path / "board.sqlite")
    add_scored_result(store, "h_space", bleu=0.2, institution="Underscore Lab")
    add_scored_result(store, "Other", bleu=0.3, institution="QA")
    client = TestClient(board_app(Views(store)))
    for search, found in (("h_space", ["h_space"]), ("H SPACE", ["h_space"]), ("zzz|h-space", ["h_space"]),
                          ("underscore lab", ["h_space"]), ("zzz", [])):
        page = Page(_get(client, "tab=iu_xray&" + urlencode({"q": search})).text)
        shown = [_model_cell(row[1]).split(" (no ")[0] for row in (page.table()[2] if page.tables else [])]
        assert shown == found, search
    store.close()


def test_what_the_store_gains_reaches_the_pages_choices_and_rows(tmp_path):
    """Choices are read per request, not at start-up (issue 14 point 5): an institution added after the app was
    built is offered; an edited model's institution and a new result show in the rows (issue 24 point 6; an open
    page learns of it by its poll: test_board_pages_browser.py)."""
    from starlette.testclient import TestClient

    from rexrank.leaderboard.pages.routes import board_app
    from rexrank.leaderboard.views import Views

    store = Store(tmp_path / "board.sqlite")
    add_scored_result(store, "First", bleu=0.5)
    client = TestClient(board_app(Views(store)))
    assert "Late Lab" not in _get(client, "tab=iu_xray").text
    add_scored_result(store, "Late model", bleu=0.1, institution="Late Lab")
    store.edit_model("First", institution="Edited Lab")
    page = Page(_get(client, "tab=iu_xray").text)
    offered = {a["value"] for tag, a in page.elements if tag == "input" and a.get("name") == "inst"}
    assert {"Late Lab", "Edited Lab"} <= offered
    rows = page.table()[2]
    assert {"Late model", "First"} == {_model_cell(row[1]).split(" (no ")[0] for row in rows}
    assert any("Edited Lab" in row for row in rows)
    store.close()


def test_an_empty_board_renders_every_view(tmp_path):
    """A store without results (a host's --no-seed) renders every view: empty tables say so, nothing fails."""
    from starlette.testclient import TestClient

    from rexrank.leaderboard.pages.routes import board_app
    from rexrank.leaderboard.views import Views

    store = Store(tmp_path / "board.sqlite")
    client = TestClient(board_app(Views(store)))
    for query, _ in VIEWS:
        _get(client, query)
    assert "No ranked results on this track yet." in _get(client).text
    store.close()


@pytest.mark.slow  # a board of 50 extra models on every test set
def _rows_of(source: str) -> list[str]:
    """The model names of a page's first table, in its order."""
    _, head, rows = Page(source).table()
    return [_model_cell(row[head.index("Model")]) for row in rows]


def _pager_links(source: str) -> dict[str, str]:
    """The pager's links of a page: rel (prev, next) or text -> its query."""
    found, inside = {}, False
    for tag, attrs in Page(source).elements:
        if tag == "nav":
            inside = attrs.get("class") == "pager"
        elif tag == "a" and inside:
            found[attrs.get("rel") or "other"] = attrs["href"].lstrip("?")
    return found


def test_a_long_table_comes_in_pages_that_together_hold_every_row_in_order(tmp_path, monkeypatch):
    """A table longer than ``PAGE_ROWS`` (the overview and a dataset table) shows its first rows with links to the
    next and previous pages and to every row; the pages, followed by their links, are the whole table in its order
    (the published board's tables fit one page); a page past the last shows the last; a page number that is not
    one, or on a view without pages, is left out and named; a header's sort link starts again at the first page; a
    paged table's search is the server's (no search key data: its rows may be on another page) and finds a model
    of the last page."""
    from leaderboard_helpers import add_published_models
    from starlette.testclient import TestClient

    from rexrank.leaderboard.pages import render
    from rexrank.leaderboard.pages.routes import board_app
    from rexrank.leaderboard.published import seed_store
    from rexrank.leaderboard.views import Views

    store = Store(tmp_path / "board.sqlite")
    seed_store(store)
    views = Views(store)
    assert max(len(views.page_table(d, t).full) for d in DATASETS for t in TRACKS) <= render.PAGE_ROWS
    PAGE_ROWS = 10  # pages of 10 rows: the published board's 31 and 12 more come in 5 (a cheaper test, same rule)
    monkeypatch.setattr(render, "PAGE_ROWS", PAGE_ROWS)
    add_published_models(store, 12)
    views = Views(store)
    client = TestClient(board_app(views))
    for query, frame in (("", views.overview_view("findings")), ("tab=iu_xray", views.numeric("iu_xray", "findings"))):
        want = [str(m) for m in frame["Model" if "Model" in frame else "model"]]
        assert len(want) > 2 * PAGE_ROWS
        got, at, pages = [], query, 0
        while at is not None:
            source = _get(client, at).text
            names = _rows_of(source)
            assert 0 < len(names) <= PAGE_ROWS, at
            got += names
            pages += 1
            at = _pager_links(source).get("next")
        assert pages == -(-len(want) // PAGE_ROWS) and [_model_cell(n) for n in got] == [
            _model_cell(n) for n in _rows_of(_get(client, f"{query}&page=all".lstrip("&")).text)], query
        assert len(got) == len(want) and set(got) == {_model_cell(n) for n in want}, query
        last = _get(client, f"{query}&page={pages}".lstrip("&")).text
        assert f"Rows {(pages - 1) * PAGE_ROWS + 1}–{len(want)} of {len(want)}" in "".join(Page(last).text)
        assert _rows_of(_get(client, f"{query}&page=99999".lstrip("&")).text) == _rows_of(last)
        assert "prev" in _pager_links(last) and "next" not in _pager_links(last)
        for bad in ("0", "-1", "two", "100001"):
            response = _get(client, f"{query}&page={bad}".lstrip("&"))
            assert _rows_of(response.text) == got[:PAGE_ROWS] and "(page)" in response.text, bad
    assert "(page)" in _get(client, "tab=about&page=2").text
    # Sorting from page 2 starts again at page 1.
    source = _get(client, "tab=iu_xray&page=2").text
    sorts = [a["href"] for tag, a in Page(source).elements if tag == "a" and "sort=" in a.get("href", "")]
    assert sorts and not any("page=" in href for href in sorts)
    # The search of a table in pages is the server's, and reaches a row of the last page.
    count = [a for tag, a in Page(source).elements if tag == "p" and a.get("class") == "count"]
    assert count and "data-local" not in count[0]
    last_model = got[-1]
    assert _rows_of(_get(client, "tab=iu_xray&q=" + last_model).text) == [last_model]
    store.close()


def test_a_model_page_shows_a_scored_models_subgroups_not_its_cache(tmp_path):
    """Issue 14 point 8 on the pages: a rexrank-scored model's page shows its subgroup results as a table, not the
    scorer's cache counters."""
    from starlette.testclient import TestClient

    from rexrank.leaderboard.pages.routes import board_app
    from rexrank.leaderboard.views import Views

    store = Store(tmp_path / "board.sqlite")
    add_scored_result(store, "Scored-CI", bleu=0.9)
    page = Page(_get(TestClient(board_app(Views(store))), "tab=models&model=Scored-CI").text)
    text = " ".join(page.text)
    assert len(page.tables) >= 2 and "abnormal" in text and "cache" not in text
    store.close()


@pytest.mark.browser
@pytest.mark.slow
def test_in_chromium_a_phone_in_dark_scrolls_the_table_in_its_box_and_searches_as_typed(tmp_path):
    """At 390x844, dark: the page never scrolls sideways, the table does inside its box with the model column
    pinned, the theme is dark; a sort link, Back and Forward each show their view; typing a search replaces the
    rows with the server's and the address follows; a result added to the store reaches the open page's table at its next poll (1 s here, 10 s served); no console
    error."""
    import time

    from leaderboard_helpers import (
        PHONE,
        LoopbackServer,
        chromium,
        record_console,
        wait_until,
    )

    from rexrank.leaderboard.pages.routes import board_app
    from rexrank.leaderboard.published import seed_store
    from rexrank.leaderboard.views import Views

    store = Store(tmp_path / "board.sqlite")
    seed_store(store)
    app = board_app(Views(store), poll_s=1)
    server = LoopbackServer(app, "the pages' server to listen")
    try:
        base = server.base
        with chromium() as browser:
            page = browser.new_page(viewport=PHONE, color_scheme="dark")
            seen = record_console(page)
            page.goto(base + "?tab=mimic_cxr&track=findings_impression")
            assert page.evaluate("document.documentElement.scrollWidth") == PHONE["width"]
            assert page.evaluate("getComputedStyle(document.body).backgroundColor") == "rgb(13, 17, 23)"
            box = page.locator(".table-box").first
            name = page.locator("tbody th[scope=row]").first
            box.evaluate("b => { b.scrollLeft = 300; }")
            assert box.evaluate("b => b.scrollLeft") == 300
            # pinned to the box's left edge (inside its 1 px border) while the values scroll under it
            assert 0 <= name.bounding_box()["x"] - box.bounding_box()["x"] <= 2
            # A link round trip: a header sorts (a new history entry), Back returns to the view before, Forward
            # to the sorted one, each at its own URL.
            page.goto(base + "?tab=iu_xray")
            page.locator("thead a", has_text="BLEU").click()
            wait_until(lambda: page.evaluate("location.search") == "?tab=iu_xray&sort=bleu2", "the sorted view")
            assert page.locator("caption").first.inner_text().startswith("IU-Xray · Findings: ranked by BLEU")
            page.go_back()
            # (the view Back returns to is fetched into the page: its rows follow the address)
            wait_until(lambda: page.evaluate("location.search") == "?tab=iu_xray"
                       and "ranked by 1/RadCliQ-v1" in page.locator("caption").first.inner_text(),
                       "Back to the view before")
            page.go_forward()
            wait_until(lambda: "ranked by BLEU" in page.locator("caption").first.inner_text(), "Forward again")
            page.goto(base + "?tab=iu_xray")
            page.locator("#board-search").press_sequentially("maira 2")
            # replaceState: read the address from the page (Playwright's page.url follows navigations only)
            wait_until(lambda: page.evaluate("location.search") == "?tab=iu_xray&q=maira+2",
                       "the address to follow the search")
            wait_until(lambda: page.locator("#board-live tbody tr").count() == 1, "the search's one row")
            assert page.locator("#board-live tbody th[scope=row] a").first.inner_text() == "MAIRA-2"
            page.evaluate("window.sameDocument = true")
            add_scored_result(store, "MAIRA-2 Fresh", bleu=0.5)  # matches the search: a second row
            wait_until(lambda: page.locator("#board-live tbody tr").count() == 2, "the new result on the open page")
            assert page.evaluate("window.sameDocument === true")  # the rows were replaced, the page not reloaded
            time.sleep(0.2)
            assert seen == [], seen
            page.close()
    finally:
        server.stop()
        store.close()



def test_compare_page_shows_the_views_p_bounds_notes_and_the_order_picked(tmp_path):
    """Issue 48 point 4 on the page: columns in the order picked, the board all share first, both p-values as
    compare_view words them ("p < 0.001 (1,000 permutations)" at the floor, never "0.0010"), the note on multiple
    comparisons with three models, and the reason a model is left out of the paired tests."""
    from starlette.testclient import TestClient

    from rexrank.leaderboard import compare_view
    from rexrank.leaderboard.pages.routes import board_app
    from rexrank.leaderboard.views import Views

    store = Store(tmp_path / "board.sqlite")
    add_kept_results(store, ["Alpha", "Beta", "Gamma"])
    add_scored_result(store, "Delta", bleu=0.2)  # scored, per-study values not kept
    add_scored_result(store, "Gamma", bleu=0.2, dataset="rexgradient")  # a board only Gamma is on, listed first
    client = TestClient(board_app(Views(store)))
    page = Page(_get(client, "tab=compare&compare=Gamma&compare=Alpha&compare=Beta&compare=Delta").text)
    caption, head, _ = page.table()
    assert caption.startswith("IU-Xray · Findings") and head == ["Metric", "Gamma", "Alpha", "Beta", "Delta"]
    text = " ".join(page.text)
    assert "0.0010" not in text
    paired = next(t for t in page.tables if t["caption"].endswith("paired tests"))
    heads = [c[2] for c in paired["rows"][0]]
    assert heads == list(compare_view.PAIRED_HEADERS)
    gamma_alpha = next([c[2] for c in row] for row in paired["rows"][1:] if row[0][2] == "Alpha − Gamma")
    assert gamma_alpha[4:6] == ["p < 0.001 (1,000 resamples)", "p < 0.001 (1,000 permutations)"]
    assert "3 paired tests on this board, and no correction for multiple comparisons is applied" in text
    assert f"Delta ({compare_view.NO_VALUES_NOT_KEPT})" in text
    assert f"every model here ({compare_view.NO_VALUES_PRIVATE})" in text
    store.close()


@pytest.mark.parametrize("query", ["", "tab=iu_xray", "tab=mimic_cxr&track=findings_impression&q=mimic"])
def test_models_are_picked_for_compare_from_a_tables_rows(client, query):
    """Issue 48 point 4: each row's model cell holds a checkbox of the pick form (name compare, the model's name as
    its value, labelled); the form sends tab=compare and the ticked names: the Compare page of those models."""
    from rexrank.leaderboard.pages.render import PICK_FORM

    page = Page(_get(client, query).text)
    form = next(a for tag, a in page.elements if tag == "form" and a.get("id") == PICK_FORM)
    assert form["method"] == "get" and form["action"] == "./"
    assert ("input", {"type": "hidden", "name": "tab", "value": "compare"}) in page.elements
    rows = page.tables[0]["rows"][1:]
    boxes = [a for tag, a in page.elements if tag == "input" and a.get("form") == PICK_FORM]
    assert len(boxes) == len(rows) and all(b["type"] == "checkbox" and b["name"] == "compare" for b in boxes)
    names = [b["value"] for b in boxes]
    assert all(b["aria-label"] == f"Compare {b['value']}" for b in boxes)
    for row, name in zip(rows, names):  # the box is in its row's model cell
        assert any(c[0] == "th" and _model_cell(c[2]).removesuffix(" ⚠").startswith(name) for c in row), (row, name)
    if query == "tab=iu_xray":
        assert HOSTILE_NAME in names  # an attribute value, escaped (test_store_text_comes_out_escaped holds it)
    picked = [n for n in dict.fromkeys(names) if n != HOSTILE_NAME][:2]
    submitted = client.get("/", params=[("tab", "compare")] + [("compare", n) for n in picked])
    assert Page(submitted.text).table()[1][1:] == [f"{n} (published)" for n in picked]


def test_words_with_a_break_inside_are_kept_whole(client):
    """Issue 48 point 4: "1/RadCliQ-v1", "MAIRA-2", "IU-Xray" may be broken at their hyphen or slash by a browser;
    in headers, model names and captions each is one span.w (nowrap); other words are plain text."""
    from rexrank.leaderboard.pages.html import words

    assert words("1/RadCliQ-v1 ↓") == '<span class="w">1/RadCliQ-v1</span> ↓'
    assert words("<b>-x</b> plain") == '<span class="w">&lt;b&gt;-x&lt;/b&gt;</span> plain'
    text = _get(client, "tab=iu_xray").text
    assert '<span class="w">1/RadCliQ-v1</span> ↑' in text and '<span class="w">MAIRA-2</span>' in text
    assert '<caption><span class="w">IU-Xray</span> ·' in text
    css = client.get("/static/board.css").text
    assert ".w { white-space: nowrap; }" in css and "overflow-wrap: normal" in css


def test_the_search_rules_data_in_the_page_is_the_rules_own(client, views):
    """Point 1 (search as typed in the browser, one owner of the rule): the data board.js reads a search with is
    generated from board.search_terms' rule: each ASCII character's search_key, and for ASCII text the key is its
    characters' keys joined (every pair, and random strings), so the browser folds as the server does; each row
    carries its server-computed key; rows are filtered in the browser only where that gives the server's answer
    (ranked by the board's metric: by another, a rank is a position among the rows shown)."""
    import json
    import random

    from rexrank.leaderboard import board
    from rexrank.leaderboard.records import search_key

    page = Page(_get(client, "tab=iu_xray").text)
    box = next(attrs for tag, attrs in page.elements if attrs.get("id") == "board-search")
    fold = json.loads(box["data-fold"])
    keys = fold["keys"]
    assert keys == [search_key(chr(c)) for c in range(128)] and keys[ord("I")] == keys[ord("1")] == "l"
    assert fold["separator"] == board.SEARCH_SEPARATOR and fold["chars"] == board.SEARCH_CHARS
    assert set(fold["alternatives"]) == {"|", ",", ";"} and set(fold["spaces"]) >= {" ", "\t", "\x1c"}
    ascii_chars = [chr(c) for c in range(128)]
    assert [a + b for a in ascii_chars for b in ascii_chars
            if search_key(a + b) != keys[ord(a)] + keys[ord(b)]] == []
    rng = random.Random(48)
    texts = ["".join(rng.choice(ascii_chars) for _ in range(rng.randrange(1, 16))) for _ in range(500)]
    assert [t for t in texts if search_key(t) != "".join(keys[ord(c)] for c in t)] == []
    count = next(attrs for tag, attrs in page.elements if tag == "p" and attrs.get("class") == "count")
    assert count["data-local"] == "complete" and count["data-some"] == "{n} of %s rows" % count["data-total"]
    rows = [attrs for tag, attrs in page.elements if tag == "tr" and "data-key" in attrs]
    assert [r["data-key"] for r in rows] == list(views.page_table("iu_xray", "findings").shown["search_key"])
    assert "data-every" not in count  # every row is here
    filtered = Page(_get(client, "tab=iu_xray&source=rexrank").text)
    count = next(attrs for tag, attrs in filtered.elements if tag == "p" and attrs.get("class") == "count")
    assert count["data-every"].split(board.SEARCH_SEPARATOR) == list(views.numeric("iu_xray", "findings")["search_key"]
                                                                     .str.split(board.SEARCH_SEPARATOR).sum())
    searched = Page(_get(client, "tab=iu_xray&q=maira").text)
    assert [a.get("data-local") for t, a in searched.elements if t == "p" and a.get("class") == "count"] == ["partial"]
    assert not [a for t, a in searched.elements if "data-key" in a]
    by_bleu = Page(_get(client, "tab=iu_xray&sort=bleu2").text)
    assert not [a for t, a in by_bleu.elements if "data-local" in a or "data-key" in a]


def test_controls_and_last_updated_answer_alone_for_the_poll(tmp_path):
    """Point 2: after a change of the board the page's script fetches /controls (the filter choices, the models to
    pick, "Last updated") beside the live part: a new institution is a new choice, with an ETag like the rest."""
    import time

    from starlette.testclient import TestClient

    from rexrank.leaderboard.pages.routes import board_app
    from rexrank.leaderboard.published import seed_store
    from rexrank.leaderboard.views import Views

    store = Store(tmp_path / "board.sqlite")
    seed_store(store)
    views = Views(store)
    try:
        with TestClient(board_app(views)) as client:
            before = client.get("/controls?tab=iu_xray")
            assert before.status_code == 200 and "Fresh Institute" not in before.json()["controls"]
            assert client.get("/controls?tab=iu_xray", headers={"If-None-Match": before.headers["etag"]}
                              ).status_code == 304
            page = _get(client, "tab=iu_xray").text
            assert f'<div id="board-controls">{before.json()["controls"]}</div>' in page
            assert f'<span id="board-updated" class="nowrap">{before.json()["updated"]}</span>' in page
            time.sleep(0.01)
            add_scored_result(store, "Fresh Model", bleu=0.4, institution="Fresh Institute")
            after = client.get("/controls?tab=iu_xray", headers={"If-None-Match": before.headers["etag"]})
            assert after.status_code == 200
            assert 'value="Fresh Institute"' in after.json()["controls"]
            assert "Fresh Model" in client.get("/controls?tab=compare").json()["controls"]
    finally:
        store.close()


def _scripts(source: str) -> list[str]:
    """The scripts a page's loader asks for (assets.loader: the body's last element), without their digests."""
    loader = re.search(r"<script>([^<]*)</script></body></html>$", source)
    assert loader and source.count("<script") == 1, source[-300:]
    return [url.split("?v=")[0] for url in re.findall(r'"(static/[^"]+)"', loader.group(1))]


def test_only_the_views_with_a_search_box_load_the_search_script(client):
    """Point 4 (bytes): the page names no script for the preload scanner: its last element, an inline loader, asks
    for search.js (a dataset view's, before board.js, which starts it) and board.js once the rows are parsed, so
    the HTML and stylesheet have the connection to themselves until then; the search box names search.js too
    (board.js fetches it when such a view is opened in the page); the other views' fresh visits do not load it."""
    for query in ("", "tab=models", "tab=compare", "tab=about"):
        text = _get(client, query).text
        assert "search.js" not in text and _scripts(text) == ["static/board.js"], query
    text = _get(client, "tab=iu_xray").text
    assert _scripts(text) == ["static/search.js", "static/board.js"]
    assert "<script src=" not in text and "defer" not in text
    box = next(attrs for tag, attrs in Page(text).elements if attrs.get("id") == "board-search")
    assert f'"{box["data-script"]}"' in text.rsplit("<script>", 1)[1]
    for url in re.findall(r'"(static/[^"]+)"', text.rsplit("<script>", 1)[1]):
        assert client.get("/" + url).status_code == 200, url


def test_a_view_is_rendered_once_per_generation_of_the_board(tmp_path, monkeypatch):
    """routes' once: the same page (or live part) at the same generation is the same HTML for every visitor, so it
    is rendered once; a change of the board renders it again, with the change in it."""
    from starlette.testclient import TestClient

    from rexrank.leaderboard.pages import render, routes
    from rexrank.leaderboard.views import Views

    made = []
    for name in ("page", "live"):
        real = getattr(render, name)
        monkeypatch.setattr(render, name, lambda *a, real=real, name=name, **k: made.append(name) or real(*a, **k))
    store = Store(tmp_path / "board.sqlite")
    add_scored_result(store, "First", bleu=0.5)
    client = TestClient(routes.board_app(Views(store)))
    pages, lives = [_get(client, "tab=iu_xray").text], [client.get("/live?tab=iu_xray").text]
    first = list(made)
    assert first.count("page") == 1 and "live" in first  # (a page renders its live part too)
    pages += [_get(client, "tab=iu_xray").text for _ in range(2)]
    lives += [client.get("/live?tab=iu_xray").text for _ in range(2)]
    assert made == first and len(set(pages)) == 1 and len(set(lives)) == 1
    add_scored_result(store, "Late model", bleu=0.1)
    assert "Late model" in _get(client, "tab=iu_xray").text and "Late model" in client.get("/live?tab=iu_xray").text
    assert made.count("page") == 2 and len(made) == 2 * len(first)
    store.close()

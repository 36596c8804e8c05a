"""The board's plots (``rexrank.leaderboard.pages.figures``, issue 48 point 4) over HTTP: server-drawn SVG of the
views' data, linked from the tables and the overview with their filters and sort; and once in Chromium at
1440x900 and 390x844, light and dark."""

from __future__ import annotations

import os
import re
from html import unescape
from pathlib import Path

import pytest
from leaderboard_helpers import DESKTOP, PHONE, LoopbackServer

from rexrank.leaderboard.store import Store

N_MODELS = 28  # more than TOP_BARS: the bars are the table's first 25
SCRIPT_NAME = "<script>alert('bar')</script>"
HOSTILE_NAME = 'Evil" onmouseover="alert(1)'  # a name may hold quotes: only attributes would hurt


def _add(store, name: str, bleu: float, radcliq: float | None, source: str = "rexrank") -> None:
    from rexrank.leaderboard.records import MetricValue, ModelInfo, ResultRecord

    metrics = {"bleu2": MetricValue(bleu, bleu - 0.02, bleu + 0.03) if source == "rexrank" else MetricValue(bleu)}
    if radcliq is not None:
        metrics["radcliq_v1"] = (MetricValue(radcliq, radcliq - 0.1, radcliq + 0.1) if source == "rexrank"
                                 else MetricValue(radcliq))
    store.add_result(ResultRecord(model=ModelInfo(name=name), dataset="iu_xray", split="test", track="findings",
                                  source=source, n_studies=590, metrics=metrics,
                                  extra={"weights": {"official": ["radcliq_v1"]}} if source == "rexrank" else {}))


@pytest.fixture(scope="module")
def views(tmp_path_factory):
    """IU-Xray findings: ``N_MODELS`` rexrank-scored models (BLEU-2 and RadCliQ-v1 with CIs, the two rankings
    nearly agreeing), a published row (point estimates) and two hostile names."""
    from rexrank.leaderboard.views import Views

    store = Store(tmp_path_factory.mktemp("plots") / "board.sqlite")
    for k in range(N_MODELS):
        _add(store, f"M{k:02d}", 0.10 + 0.01 * k, 3.0 - 0.05 * k + (0.2 if k % 7 == 0 else 0))
    _add(store, "Published One", 0.255, 2.0, source="published")
    _add(store, HOSTILE_NAME, 0.5, 1.0)
    _add(store, SCRIPT_NAME, 0.6, 0.9)
    yield Views(store)
    store.close()


@pytest.fixture(scope="module")
def client(views):
    from starlette.testclient import TestClient

    from rexrank.leaderboard.pages.routes import board_app

    with TestClient(board_app(views)) as test_client:
        yield test_client


def _plots(client, query: str, status: int = 200) -> str:
    response = client.get("/plots" + (f"?{query}" if query else ""))
    assert response.status_code == status, (query, response.status_code, response.text[:300])
    return response.text


def _svg(page: str, svg_id: str) -> str:
    found = re.search(rf'<svg [^>]*id="{svg_id}"[^>]*>.*?</svg>', page, re.S)
    assert found, svg_id
    return found.group(0)


def _bars(svg: str) -> list[tuple[str, float]]:
    """(the row's <title>, the bar's value) per row, top to bottom."""
    rows = re.findall(r'<g class="row"><title>(.*?)</title>.*?<rect class="bar [a-z]+"[^>]*data-value="([^"]+)"',
                      svg, re.S)
    return [(unescape(title), float(value)) for title, value in rows]


def test_the_bars_are_the_tables_top_rows_best_first_with_their_intervals(client, views):
    from rexrank.leaderboard.views import TOP_BARS

    svg = _svg(_plots(client, "tab=iu_xray&sort=bleu2"), "bars")
    drawn = _bars(svg)
    expected = views.bars_view(views.page_table("iu_xray", "findings", sort_by="bleu2").shown, "bleu2")
    assert len(drawn) == TOP_BARS == len(expected) < N_MODELS + 3
    assert [title.split(": ")[0] for title, _ in drawn] == list(expected["model"])
    values = [value for _, value in drawn]
    assert values == sorted(values, reverse=True) and values[0] == pytest.approx(0.6)
    # Error bars: one per rexrank-scored row, at its interval; the published row has none.
    whiskers = [(float(a), float(b)) for a, b in re.findall(r'class="ci"[^>]*data-low="([^"]+)" data-high="([^"]+)"',
                                                            svg)]
    scored = expected[expected["source"] != "published"]
    assert whiskers == [pytest.approx((low, high)) for low, high in zip(scored["bleu2_low"], scored["bleu2_high"])]
    assert len(whiskers) == TOP_BARS - 1 and 'class="bar published"' in svg
    # The numbers as text too: the <details> table holds every drawn value.
    assert all(f"{value:.3f}" in re.sub(r"<svg.*?</svg>", "", _plots(client, "tab=iu_xray&sort=bleu2"), flags=re.S)
               for value in values)


def test_the_tables_filters_and_sort_carry_over_to_its_plots(client):
    page = client.get("/?tab=iu_xray&q=M1&sort=bleu2").text
    link = unescape(re.search(r'<a href="([^"]+)">Plots of this table</a>', page).group(1))
    assert link == "plots?tab=iu_xray&q=M1&sort=bleu2"
    drawn = _bars(_svg(_plots(client, link.split("?", 1)[1]), "bars"))
    assert [t.split(":")[0] for t, _ in drawn] == [f"M{k}" for k in range(19, 9, -1)]
    overview = client.get("/").text
    assert '<a href="plots">Plots: ranks across datasets, metric agreement</a>' in overview


def test_hostile_model_names_are_text_in_the_figures(client):
    for query in ("tab=iu_xray&sort=bleu2", ""):
        page = _plots(client, query)
        assert "<script>alert" not in page and 'Evil" onmouseover' not in page, query
        assert "&lt;script&gt;alert(&#x27;bar&#x27;)&lt;/script&gt;" in page, query
        assert not [name for name in _attribute_names(page) if name.startswith("on")], query
        assert "Evil&quot; onmouseover=&quot;alert(1)" in page, query  # there, escaped (quotes too)


def _attribute_names(page: str) -> list[str]:
    from html.parser import HTMLParser

    names: list[str] = []

    class Parser(HTMLParser):
        def handle_starttag(self, tag, attrs):
            names.extend(name for name, _ in attrs)
    Parser().feed(page)
    return names


def test_the_agreement_heatmap_and_the_rank_lines_are_the_views_values(client, views):
    from rexrank.leaderboard.views import RANK_LINES

    matrix = views.agreement_view("iu_xray", "findings")
    page = _plots(client, "tab=iu_xray")
    taus = re.findall(r'data-tau="([^"]+)"', page)
    assert len(taus) == matrix.size
    names = list(matrix.columns)
    i, j = names.index(next(n for n in names if n.startswith("BLEU"))), names.index(
        next(n for n in names if n.startswith("1/RadCliQ")))
    assert taus[i * len(names) + j] == f"{matrix.iloc[i, j]:.2f}" and 0.5 < matrix.iloc[i, j] < 1
    top, _ = views.ranks_view("findings")
    lines = re.findall(r'<g class="s\d" data-model="([^"]*)">', _svg(_plots(client, ""), "ranks"))
    assert [unescape(m) for m in lines] == top and len(top) == RANK_LINES


def test_an_empty_board_says_so_in_one_line(tmp_path):
    from starlette.testclient import TestClient

    from rexrank.leaderboard.pages.routes import board_app
    from rexrank.leaderboard.views import Views

    store = Store(tmp_path / "empty.sqlite")
    try:
        with TestClient(board_app(Views(store))) as client:
            table = _plots(client, "tab=iu_xray")
            assert "<svg" not in table
            assert re.findall(r'<p class="empty">([^<]*)</p>', table)[0] == (
                "No model in this table has a value of 1/RadCliQ-v1 ↑: no bars to draw.")
            overview = _plots(client, "")
            assert '<p class="empty">No ranked results on this track yet: no ranks to draw.</p>' in overview
            assert "<svg" not in overview
    finally:
        store.close()


def test_bad_query_values_are_named_in_one_line(client):
    text = _plots(client, "tab=iu_xray&sort=%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E&zzz=secret", status=400)
    assert "\n" not in text and "sort" in text and "other" in text
    assert "onerror" not in text and "secret" not in text
    assert _plots(client, "tab=models", status=404).startswith("Plots are of the overview")


def test_the_plots_carry_an_etag_and_answer_304_unrendered_until_the_board_changes(tmp_path, monkeypatch):
    """Issue 48 point 1: a page of plots is revalidated like the board's pages: an ETag on the store's generation
    and the canonical query (a link written otherwise has the same tag), a matching If-None-Match answered 304 with
    no body and no drawing, the same page drawn once per generation, a changed board a new tag and the new rows."""
    from starlette.testclient import TestClient

    from rexrank.leaderboard.pages import figures
    from rexrank.leaderboard.pages.routes import board_app
    from rexrank.leaderboard.views import PRIMARY, Views

    store = Store(tmp_path / "board.sqlite")
    _add(store, "M00", 0.1, 3.0)
    _add(store, "M01", 0.2, 2.5)
    try:
        with TestClient(board_app(Views(store))) as client:
            tags = {}
            for query in ("tab=iu_xray&sort=bleu2", ""):
                first = client.get(f"/plots?{query}")
                tags[query] = first.headers["etag"]
                assert first.status_code == 200 and tags[query].startswith('W/"'), query
                assert first.headers["cache-control"] == "no-cache", query
            assert tags["tab=iu_xray&sort=bleu2"] != tags[""]
            same = client.get(f"/plots?track=findings&sort={PRIMARY}&tab=iu_xray").headers["etag"]
            assert same == client.get("/plots?tab=iu_xray").headers["etag"] != tags["tab=iu_xray&sort=bleu2"]

            def drawn(*args):
                raise AssertionError("a 304 draws nothing")
            monkeypatch.setattr(figures, "page", drawn)
            for query, tag in tags.items():
                again = client.get(f"/plots?{query}", headers={"If-None-Match": f'"x", {tag}'})
                assert (again.status_code, again.content, again.headers["etag"]) == (304, b"", tag), query
                kept = client.get(f"/plots?{query}")  # drawn once per generation: another visitor's is kept
                assert kept.status_code == 200 and kept.headers["etag"] == tag and "M01" in kept.text, query
            monkeypatch.undo()
            _add(store, "M02", 0.3, 2.0)
            for query, tag in tags.items():
                changed = client.get(f"/plots?{query}", headers={"If-None-Match": tag})
                assert changed.status_code == 200 and changed.headers["etag"] not in tags.values(), query
                assert "M02" in changed.text, query
            assert client.get("/plots?tab=models").headers.get("etag") is None  # a one-line answer has none
    finally:
        store.close()


@pytest.mark.browser
@pytest.mark.slow
def test_the_plots_read_at_every_width_in_light_and_dark(tmp_path):
    """The seeded board's IU-Xray plots and the overview's in Chromium: no sideways scroll, every SVG inside the
    screen, its 12-unit type drawn at 9 px or more; screenshots to ``REXRANK_SHOTS`` (or this test's folder)."""

    from leaderboard_helpers import chromium

    from rexrank.leaderboard.pages.routes import board_app
    from rexrank.leaderboard.published import seed_store
    from rexrank.leaderboard.views import Views

    shots = Path(os.environ.get("REXRANK_SHOTS") or tmp_path)
    store = Store(tmp_path / "board.sqlite")
    seed_store(store)
    server = LoopbackServer(board_app(Views(store)), "the pages' server to listen")
    try:
        base = server.base
        with chromium() as browser:
            for viewport, size in ((DESKTOP, "1440x900"), (PHONE, "390x844")):
                for scheme in ("light", "dark"):
                    page = browser.new_page(viewport=viewport, color_scheme=scheme)
                    try:
                        for name, query in (("table", "plots?tab=iu_xray"), ("overview", "plots")):
                            page.goto(base + query)
                            assert page.evaluate("document.documentElement.scrollWidth") <= viewport["width"]
                            boxes = page.evaluate("""() => [...document.querySelectorAll('svg.fig')].map(s => {
                                const r = s.getBoundingClientRect();
                                return {left: r.left, right: r.right, scale: r.width / s.viewBox.baseVal.width};
                            })""")
                            assert boxes, name
                            for box in boxes:
                                assert 0 <= box["left"] and box["right"] <= viewport["width"], (name, size, box)
                                assert 12 * box["scale"] >= 9, (name, size, box)
                            page.screenshot(path=str(shots / f"plots-{name}-{size}-{scheme}.png"), full_page=True)
                    finally:
                        page.close()
    finally:
        server.stop()
        store.close()

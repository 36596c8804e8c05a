"""The per-study view on the Space (issue 53 point 2): a model page on an open set (IU-Xray) links to every study's
reference, report and per-study values from what the board kept; a licensed set (the catalog's ``licensed``) has no
such link or page and never a line of its text, even when its rows are in the store. Hostile kept text is escaped."""

from __future__ import annotations

import re

import pytest

from leaderboard_helpers import add_scored_result

CANARY = "zqcanaryexplore"
HOSTILE = '<script>alert("r")</script> \'q\' \uff1cb\uff1e'


@pytest.fixture
def client(store):
    from starlette.testclient import TestClient

    from rexrank.leaderboard.pages.routes import board_app
    from rexrank.leaderboard.views import Views

    add_scored_result(store, "Open Model", bleu=0.3)
    store.keep_reports(dataset="iu_xray", split="test", track="findings", model="Open Model", result_hash="h-open",
                       rows=[(f"s{k:03d}", f"report {k} {HOSTILE}", f"reference {k}", {"bleu2": k / 100})
                             for k in range(60)])
    add_scored_result(store, "Licensed Model", bleu=0.3, dataset="mimic_cxr")
    store.keep_reports(dataset="mimic_cxr", split="test", track="findings", model="Licensed Model",
                       result_hash="h-lic", rows=[(f"5{k:07d}", f"report {CANARY}", f"reference {k} {CANARY}",
                                                   {"bleu2": 0.5}) for k in range(5)])
    with TestClient(board_app(Views(store))) as c:
        yield c


def test_an_open_sets_model_page_links_to_every_study(client):
    model = client.get("/", params={"tab": "models", "model": "Open Model"}).text
    links = re.findall(r'href="(studies\?[^"]*)"', model)
    assert len(links) == 1 and "dataset=iu_xray" in links[0]
    first = client.get("/" + links[0].replace("&amp;", "&"))
    assert first.status_code == 200
    assert "60 studies · page 1 of 2" in first.text
    assert "reference 0" in first.text and "0.0100" in first.text
    second = client.get("/studies", params={"model": "Open Model", "dataset": "iu_xray", "track": "findings",
                                            "page": "2"}).text
    shown = re.findall(r'<th scope="row"[^>]*>(s\d{3})</th>', first.text + second)
    assert shown == [f"s{k:03d}" for k in range(60)]  # every kept study, once, in order
    for page in (first.text, second):
        assert "<script>alert" not in page and "&lt;script&gt;alert(&quot;r&quot;)&lt;/script&gt;" in page
        assert "&#x27;q&#x27;" in page and "\uff1cb\uff1e" in page


def test_a_licensed_set_shows_no_text_anywhere(client, store):
    model = client.get("/", params={"tab": "models", "model": "Licensed Model"}).text
    assert "studies?" not in model
    answer = client.get("/studies", params={"model": "Licensed Model", "dataset": "mimic_cxr", "track": "findings"})
    assert answer.status_code == 404 and "licensed" in answer.text and len(answer.text.splitlines()) == 1
    pages = [client.get("/", params=params).text for params in
             ({"tab": "models", "model": "Licensed Model"}, {"tab": "mimic_cxr"}, {"tab": "compare",
              "compare": ["Licensed Model", "Open Model"]}, {})]
    assert not [p for p in [answer.text, *pages] if CANARY in p]
    assert CANARY.encode() not in store.path.read_bytes()  # keep_reports kept the values alone


def test_bad_queries_are_one_line(client):
    for params in ({}, {"model": "Open Model", "dataset": "nope", "track": "findings"},
                   {"model": "Nobody", "dataset": "iu_xray", "track": "findings"},
                   {"model": "<b>x</b>", "dataset": "iu_xray", "track": "findings"}):
        answer = client.get("/studies", params=params)
        assert answer.status_code == 404 and len(answer.text.splitlines()) == 1 and "<b>" not in answer.text


def test_the_view_carries_an_etag_and_answers_304_unrendered_until_the_board_changes(client, store, monkeypatch):
    """Issue 48 point 1: the per-study view is revalidated like the board's pages: an ETag on the store's generation
    and the canonical query (the model's name as another case, a page past the last: the same view, the same tag),
    a matching If-None-Match answered 304 with no body and no rendering, a changed board a new tag."""
    from rexrank.leaderboard.pages import studies

    params = {"model": "Open Model", "dataset": "iu_xray", "track": "findings", "page": "2"}
    first = client.get("/studies", params=params)
    tag = first.headers["etag"]
    assert first.status_code == 200 and tag.startswith('W/"') and first.headers["cache-control"] == "no-cache"
    assert client.get("/studies", params={**params, "model": "open model", "page": "9"}).headers["etag"] == tag
    assert client.get("/studies", params={**params, "page": "1"}).headers["etag"] != tag

    def rendered(*args):
        raise AssertionError("a 304 renders nothing")
    monkeypatch.setattr(studies, "page", rendered)
    again = client.get("/studies", params=params, headers={"If-None-Match": tag})
    assert (again.status_code, again.content, again.headers["etag"]) == (304, b"", tag)
    monkeypatch.undo()
    add_scored_result(store, "Another Model", bleu=0.4)
    changed = client.get("/studies", params=params, headers={"If-None-Match": tag})
    assert changed.status_code == 200 and changed.headers["etag"] != tag and "page 2 of 2" in changed.text
    missing = client.get("/studies", params={**params, "model": "Nobody"}, headers={"If-None-Match": tag})
    assert missing.status_code == 404 and "etag" not in missing.headers

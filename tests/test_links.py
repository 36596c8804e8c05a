"""Shareable links (``rexrank.leaderboard.links``, issue 37 point 5): reading a query as hostile input, checking it
against the board, and writing it back. The board's pages are URLs in this language (tests/test_board_pages.py: a
link opens its view, a link of the gradio board the Space had before opens the same view)."""

from __future__ import annotations

import pytest

from rexrank.leaderboard import links
from rexrank.leaderboard.links import Link, ViewLink

TABS = ["overview", "iu_xray", "mimic_cxr", "models", "about", "compare"]
DATASETS = ["iu_xray", "mimic_cxr"]


def parse(query: str) -> Link:
    return links.parse(query, TABS, DATASETS)


def test_a_full_link_round_trips():
    link = parse("tab=mimic_cxr&track=findings_impression&q=maira+2&inst=Microsoft&inst=Stanford&year=2024"
                 "&type=VLM&trained=exclude&source=published&cols=bleu2&cols=green&sort=green")
    assert link == Link("mimic_cxr", "findings_impression",
                        ViewLink("maira 2", ("Microsoft", "Stanford"), (2024,), ("VLM",), "exclude", ("published",),
                                 ("bleu2", "green"), "green"))
    assert parse(links.query(link)) == link
    assert parse("?" + links.query(link)) == link
    assert parse("__theme=dark&tab=iu_xray") == Link("iu_xray")  # gradio's own parameter: not the link's


def test_defaults_are_left_out_of_a_written_link():
    defaults = ViewLink(columns=("radcliq", "bleu2"), sort="radcliq")
    link = Link("iu_xray", "findings", ViewLink(columns=("radcliq", "bleu2"), sort="radcliq"))
    assert links.query(link, defaults) == "tab=iu_xray"
    assert links.query(Link()) == ""
    assert links.query(link._replace(view=ViewLink(sort="bleu2")), defaults) == "tab=iu_xray&sort=bleu2"


@pytest.mark.parametrize("query, ignored", [
    ("tab=nope", ("tab",)),
    ("track=impression_only", ("track",)),
    ("tab=iu_xray&year=24", ("year",)),
    ("tab=iu_xray&year=2024abc", ("year",)),
    ("tab=iu_xray&source=everything", ("source",)),
    ("tab=iu_xray&sort=a&sort=b", ("sort",)),
    ("tab=overview&q=maira", ("q",)),  # a table's controls belong to a dataset tab
    ("tab=iu_xray&model=MAIRA-2", ("model",)),  # a model belongs to the Models tab
    ("tab=iu_xray&compare=A", ("compare",)),
    ("utm_source=x&<script>=1", ("other",)),  # unknown names are counted, never echoed
])
def test_what_is_not_understood_is_left_out_and_named_by_our_names(query, ignored):
    link = parse(query)
    assert link.ignored == ignored
    notice = links.notice(link)
    assert all(name in notice for name in ignored) and "<script>" not in notice and "\n" not in notice


def test_hostile_sizes_are_bounded():
    assert parse("q=" + "a" * (links.MAX_QUERY + 10)).ignored == ("the whole link (too long)",)
    assert parse("&".join(f"tab=x{i}" for i in range(links.MAX_VALUES + 1))).ignored == (
        "the whole link (too many parameters)",)
    long_value = parse("tab=iu_xray&q=" + "m" * (links.MAX_VALUE + 1))
    assert long_value.view.search == "" and long_value.ignored == ("q",)
    many = parse("tab=compare&" + "&".join(f"compare=M{i}" for i in range(6)))
    assert many.compare == ("M0", "M1", "M2", "M3") and many.ignored == ("compare",)


def test_checked_keeps_only_what_the_board_knows():
    link = parse("tab=iu_xray&inst=Stanford&inst=Nowhere&year=2024&year=1999&type=VLM&cols=bleu2&cols=nope"
                 "&sort=nope")
    checked = links.checked(link, institutions=["Stanford"], years=[2024], model_types=["VLM"],
                            metrics=["radcliq", "bleu2"])
    assert checked.view == ViewLink(institutions=("Stanford",), years=(2024,), model_types=("VLM",),
                                    columns=("bleu2",), sort=None)
    assert checked.ignored == ("inst", "year", "cols", "sort")
    models = links.checked(parse("tab=models&model=Ghost"), models=["MAIRA-2"])
    assert models.model is None and models.ignored == ("model",)
    assert links.checked(parse("tab=models&model=MAIRA-2"), models=["MAIRA-2"]).model == "MAIRA-2"
    compared = links.checked(parse("tab=compare&compare=MAIRA-2&compare=Ghost"), models=["MAIRA-2"])
    assert compared.compare == ("MAIRA-2",) and compared.ignored == ("compare",)


def test_the_link_and_the_views_agree_on_names_and_order():
    """ViewLink's fields are the links' parameters in order, and every trained value the views offer is one a link
    carries (the pages' forms send these names: test_board_pages.py)."""
    from rexrank.leaderboard import views

    trained = [v for _, v in views.TRAINED_CHOICES]  # the views' trained values, read from their owner
    assert [links.checked(parse(f"tab=iu_xray&trained={v}"), trained=trained).view.trained for v in trained] == trained
    maybe = links.checked(parse("tab=iu_xray&trained=maybe"), trained=trained)  # a value the views lack
    assert maybe.view.trained == ViewLink().trained and maybe.ignored == ("trained",)
    assert list(links.PARAMS) == list(ViewLink._fields)

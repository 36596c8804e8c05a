"""What a page's query may say: a link in ``links``' language, read and checked by ``links`` (``parse``,
``checked``) against the names the board knows for the view the link names. Nothing is restated here: the only
addition is Compare's comma form (``compare=A,B``, what ``/compare`` takes), split by ``compare_view``'s own rule
before the names are checked, so that it and repeated ``compare=`` give the same link.
"""

from __future__ import annotations

from urllib.parse import urlencode

from rexrank.leaderboard import compare_view, links
from rexrank.leaderboard.records import DATASETS
from rexrank.leaderboard.views import PRIMARY, TRAINED_CHOICES, Views


def page_link(views: Views, query: str) -> links.Link:
    """The checked link of ``query`` (the raw query string, without "?"): what was not understood is left out and
    named in ``Link.ignored`` by ``links``' parameter names, never echoed."""
    link = links.parse(query, links.TABS, DATASETS)
    if any("," in name for name in link.compare):
        # Split by compare_view's rule, then bounded by links' own (at most MAX_COMPARED, the rest left out and
        # named), as the same names repeated would be.
        names = compare_view.parse_selection(",".join(link.compare))
        again = links.parse(urlencode([(links.TAB, links.COMPARE_TAB), *((links.COMPARE, n) for n in names)]),
                            links.TABS, DATASETS)
        link = link._replace(compare=again.compare, ignored=tuple(dict.fromkeys(link.ignored + again.ignored)))
    choices = views.filter_choices(link.tab, link.track) if link.tab in DATASETS else None
    return links.checked(link, institutions=choices.institutions if choices else (),
                         years=choices.years if choices else (),
                         model_types=choices.model_types if choices else (),
                         trained=[value for _, value in TRAINED_CHOICES],
                         metrics=views.metrics(link.track),
                         models=views.memoized(("page-model-names",), views.models_list))


def view_defaults(views: Views, link: links.Link) -> links.ViewLink:
    """What a link leaves out for its dataset table: the track's columns, ranked by the board's metric (as
    ``wiring._DatasetView.link_defaults``)."""
    return links.ViewLink(columns=tuple(views.metrics(link.track)), sort=PRIMARY)

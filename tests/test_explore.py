"""`rexrank explore` at the HTTP level (issue 53): every study listed, sorting by a metric and by the difference of
two runs, the subgroup filters, paging, a study's page (reports, values, what BLEU saw, previous/next in the current
order), hostile report text shown as text, inputs that moved or changed named in one line, and no file written.

The runs are IU-Xray findings scored with BLEU-2 (no model); the stand-in run of every model-backed view is the slow
test at the end."""

from __future__ import annotations

import json
import os
import re
import shutil
from html import unescape
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rexrank.cli import main

N = 30
HOSTILE = ('<script>alert("x")</script> "double" \'single\' &lt;b&gt; </pre><img src=x onerror=alert(1)> '
           "\uff1cscript\uff1e look-alike \u0430dmin")
HOSTILE_ID = 'CXR"><i>id'
SITES = ("Site North", "Site South")


def _score(preds: Path, refs: Path, out: Path, cache: Path, *extra: str) -> None:
    code = main(["score", "-p", str(preds), "-r", str(refs), "-m", "bleu2", "-o", str(out), "-q", "--resamples",
                 "20", "--cache-dir", str(cache), *extra])
    assert code == 0


@pytest.fixture(scope="module")
def runs(tmp_path_factory, iu_xray_test):
    """Two runs of IU-Xray findings (N studies + one with a hostile id): "shifted" reports another study's findings,
    "hostile" starts every report with markup and look-alikes."""
    root = tmp_path_factory.mktemp("explore")
    ids = [i for i in iu_xray_test if iu_xray_test[i]["section_findings"]][:N]
    refs = {i: iu_xray_test[i] for i in ids}
    refs[HOSTILE_ID] = dict(iu_xray_test[ids[0]])
    ids.append(HOSTILE_ID)
    # IU-Xray has one site; a multi-site set (ReXGradient) names each study's: two sites here, for the site filter
    refs = {i: {**entry, "site": SITES[k % 3 == 0]} for k, (i, entry) in enumerate(refs.items())}
    (root / "refs.json").write_text(json.dumps(refs))
    shifted = {i: refs[ids[(k + 1) % len(ids)]]["section_findings"] for k, i in enumerate(ids)}
    hostile = {i: HOSTILE + " " + refs[i]["section_findings"][: 20 + 5 * k] for k, i in enumerate(ids)}
    for name, texts in (("shifted", shifted), ("hostile", hostile)):
        (root / f"{name}.json").write_text(json.dumps(texts))
    cwd = os.getcwd()
    os.chdir(root)  # relative input paths, as a user types them: explore reads them from the same folder
    try:
        for name in ("shifted", "hostile"):
            _score(Path(f"{name}.json"), Path("refs.json"), root / name, root / "cache")
    finally:
        os.chdir(cwd)
    return root, ids


@pytest.fixture(scope="module")
def client(runs):
    from starlette.testclient import TestClient

    from rexrank.explore.server import build

    root, _ = runs
    cwd = os.getcwd()
    os.chdir(root)
    try:
        explorer, details, app = build([root / "shifted", root / "hostile"], cache_dir=root / "cache")
    finally:
        os.chdir(cwd)
    with TestClient(app) as c:
        c.explorer = explorer
        yield c


def _listed(page: str) -> list[str]:
    found = re.findall(r'<th scope="row"[^>]*><a href="study\?[^"]*">(.*?)</a>', page)
    return [unescape(re.sub(r"<[^>]*>", "", m)) for m in found]  # an id with a hyphen is in a span (html.words)


def _values(root: Path, name: str) -> dict[str, float]:
    frame = pd.read_parquet(root / name / "per_study.parquet")
    return dict(zip(frame["study_id"], frame["bleu_score"]))


def test_every_study_is_listed_once(client, runs):
    _, ids = runs
    page = client.get("/", params={"per": "500"})
    assert page.status_code == 200
    assert sorted(_listed(page.text)) == sorted(ids)
    assert f"{len(ids)} studies · page 1 of 1" in page.text
    assert page.headers["cache-control"] == "no-store"


def test_sorting_by_a_metric_and_by_the_difference_of_two_runs(client, runs):
    root, ids = runs
    a, b = _values(root, "shifted"), _values(root, "hostile")
    shown = _listed(client.get("/", params={"per": "500", "sort": "bleu2@1", "dir": "desc"}).text)
    assert [b[i] for i in shown] == sorted(b.values(), reverse=True)
    shown = _listed(client.get("/", params={"per": "500", "sort": "bleu2@0-1", "dir": "asc"}).text)
    differences = [a[i] - b[i] for i in shown]
    assert differences == sorted(differences) and len(shown) == len(ids)
    assert differences[0] < 0 < differences[-1]  # both signs present: the order is not trivially the file's
    page = client.get("/", params={"sort": "bleu2@0-1"}).text
    assert "bleu_score · shifted − hostile" in page  # the difference is a column of its own while sorted by it


def test_filters_by_the_subgroups(client, runs):
    explorer = client.explorer
    assert {"length", "view"} <= set(explorer.groups)
    for value in ("short", "long"):
        shown = _listed(client.get("/", params={"per": "500", "length": value}).text)
        expected = [sid for sid, g in zip(explorer.study_ids, explorer.groups["length"]) if g == value]
        assert sorted(shown) == sorted(expected) and 0 < len(shown) < len(explorer)
    assert set(explorer.groups["site"]) == set(SITES)
    for site in SITES:
        shown = _listed(client.get("/", params={"per": "500", "site": site}).text)
        expected = [sid for sid, g in zip(explorer.study_ids, explorer.groups["site"]) if g == site]
        assert sorted(shown) == sorted(expected) and 0 < len(shown) < len(explorer)
    view = explorer.groups["view"][0]
    shown = _listed(client.get("/", params={"per": "500", "view": view}).text)
    assert shown and all(explorer.groups["view"][explorer.index[s]] == view for s in shown)
    # A value the subgroup does not have is left out and named by its parameter, never echoed.
    page = client.get("/", params={"length": "<b>huge</b>", "per": "500"}).text
    assert "Left out of this link" in page and "length" in page and "huge" not in page
    assert len(_listed(page)) == len(explorer)


def test_pages_cover_the_order_once(client, runs):
    _, ids = runs
    seen = []
    for page in range(1, 6):
        text = client.get("/", params={"per": "7", "page": str(page), "sort": "bleu2@0", "dir": "asc"}).text
        assert f"page {page} of 5" in text
        seen += _listed(text)
    assert sorted(seen) == sorted(ids) and len(seen) == len(set(seen))
    whole = _listed(client.get("/", params={"per": "500", "sort": "bleu2@0", "dir": "asc"}).text)
    assert seen == whole
    past = client.get("/", params={"per": "7", "page": "99"}).text  # past the end: the last page
    assert "page 5 of 5" in past


def test_a_study_page_shows_reports_values_ngrams_and_its_neighbours(client, runs):
    root, _ = runs
    explorer = client.explorer
    order = _listed(client.get("/", params={"per": "500", "sort": "bleu2@0", "dir": "desc"}).text)
    sid = order[3]
    page = client.get("/study", params={"id": sid, "sort": "bleu2@0", "dir": "desc"})
    assert page.status_code == 200
    text = page.text
    k = explorer.index[sid]
    assert f"4 of {len(order)} in this order" in text
    prev_href, next_href = (re.search(rf'<a href="([^"]*)" rel="{rel}">', text)[1] for rel in ("prev", "next"))
    assert f"id={order[2]}" in unescape(prev_href) and f"id={order[4]}" in unescape(next_href)
    assert "sort=bleu2%400" in unescape(next_href)  # the neighbours keep the order
    reference = explorer.refs[k]
    assert f'<pre class="report-text">{reference}</pre>' in text
    assert f"{_values(root, 'shifted')[sid]:.4f}" in text and f"{_values(root, 'hostile')[sid]:.4f}" in text
    assert "1-grams of the report found in the reference" in text and "2-grams" in text
    # The first study has no previous one; the last no next.
    first = client.get("/study", params={"id": order[0], "sort": "bleu2@0", "dir": "desc"}).text
    assert 'rel="prev"' not in first and "Previous study" in first
    assert client.get("/study", params={"id": "nope"}).status_code == 404


def test_hostile_report_text_and_ids_are_shown_as_text(client, runs):
    sid = client.explorer.study_ids[0]
    for page in (client.get("/", params={"per": "500"}).text, client.get("/study", params={"id": sid}).text,
                 client.get("/study", params={"id": HOSTILE_ID}).text):
        assert "<script>alert" not in page and "<img src=x" not in page and "</pre><img" not in page
        assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
        assert "&#x27;single&#x27;" in page and "&amp;lt;b&amp;gt;" in page
        assert "\uff1cscript\uff1e" in page and "\u0430dmin" in page  # look-alikes are shown as they are
        assert "<i>id" not in page
    listing = client.get("/", params={"per": "500"}).text
    assert "id=CXR%22%3E%3Ci%3Eid" in listing  # the hostile id reaches a link percent-encoded
    assert "CXR&quot;&gt;&lt;i&gt;id" in listing


def test_a_run_page_names_its_files(client):
    page = client.get("/run/1").text
    assert "hostile.json" in page and "bleu_score" in page
    assert client.get("/run/7").status_code == 404


def _cli_error(args: list[str], capsys) -> str:
    code = main(args)
    err = capsys.readouterr().err
    assert code == 2, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("error:"), err
    return lines[0]


def test_inputs_that_moved_or_changed_are_named_in_one_line(runs, tmp_path, capsys, monkeypatch):
    root, _ = runs
    for name in ("refs.json", "shifted.json", "hostile.json"):
        shutil.copy(root / name, tmp_path / name)
    for name in ("shifted", "hostile"):
        shutil.copytree(root / name, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "hostile.json").unlink()
    line = _cli_error(["explore", "shifted", "hostile"], capsys)
    assert "hostile.json" in line and "not there" in line
    texts = json.loads((root / "hostile.json").read_text())
    texts[next(iter(texts))] = "an edited report"
    (tmp_path / "hostile.json").write_text(json.dumps(texts))
    line = _cli_error(["explore", "shifted", "hostile"], capsys)
    assert "hostile.json changed since the run scored it (1 of" in line
    (tmp_path / "refs.json").unlink()
    assert "refs.json" in _cli_error(["explore", "shifted"], capsys)
    assert "--port" in _cli_error(["explore", "shifted", "--port", "70000"], capsys)
    import socket

    with socket.socket() as busy:  # a port in use is one line, before any run is read
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        line = _cli_error(["explore", "no-such-run", "--port", str(busy.getsockname()[1])], capsys)
    assert "--port" in line and "cannot be used" in line and "no-such-run" not in line


def test_the_explorer_writes_no_file(runs, client):
    """Every page served, and the tree (results, inputs, score cache) holds the same files with the same bytes."""
    root, _ = runs

    def snapshot():
        return {p: p.read_bytes() for p in root.rglob("*") if p.is_file() and not p.name.startswith("scores.sqlite")}

    before = snapshot()
    for sid in client.explorer.study_ids[:5]:
        assert client.get("/study", params={"id": sid}).status_code == 200
    client.get("/", params={"sort": "bleu2@0-1"})
    client.get("/run/0")
    assert snapshot() == before


def test_orders_are_index_arrays_with_nan_last():
    from rexrank.explore.data import Explorer, Run
    from rexrank.explore.table import Orders, View

    values = np.array([0.5, np.nan, 0.1, 0.9])
    run = Run("m", "m", {}, None, {"bleu2": values}, ["a"] * 4, "p.json")
    explorer = Explorer(["s0", "s1", "s2", "s3"], ["r"] * 4, [run], ["bleu2"], "iu_xray", "findings",
                        {"length": np.array(["short", "long", "short", "long"], dtype=object)})
    orders = Orders(explorer)
    assert orders.order(View(sort="bleu2@0", desc=True)).tolist() == [3, 0, 2, 1]
    assert orders.order(View(sort="bleu2@0", desc=False)).tolist() == [2, 0, 3, 1]
    assert orders.order(View(sort="bleu2@0", filters=(("length", "long"),))).tolist() == [3, 1]
    assert orders.neighbours(View(sort="bleu2@0"), 0) == (3, 2, 1)


@pytest.mark.slow
def test_two_standin_runs_show_every_metrics_view(tmp_path, standins, iu_xray_test, monkeypatch):
    """The issue's run: two IU-Xray runs scored with bleu2, radgraph, semb and ratescore on random-weight stand-ins
    (plumbing, not real numbers). Every study is listed and a study page shows RadGraph's entities and relations,
    both reports' CheXbert labels and RaTEScore's entities, read from the score cache, which stays unchanged."""
    from starlette.testclient import TestClient

    from rexrank.cli.evaluation import _metric_options, _model_paths
    from rexrank.explore.server import build

    paths = {name: standins(name) for name in ("radgraph", "semb", "ratescore")}
    model_paths = [f"radgraph={paths['radgraph']['radgraph']}", f"semb={paths['semb']['semb']}",
                   f"ratescore={Path(paths['ratescore']['ratescore_ner']).parent}"]
    options = [f"semb.backbone={paths['semb']['semb_backbone']}"]
    ids = [i for i in iu_xray_test if iu_xray_test[i]["section_findings"]][:6]
    refs = {i: iu_xray_test[i] for i in ids}
    (tmp_path / "refs.json").write_text(json.dumps(refs))
    (tmp_path / "a.json").write_text(json.dumps({i: refs[ids[(k + 1) % 6]]["section_findings"]
                                                 for k, i in enumerate(ids)}))
    (tmp_path / "b.json").write_text(json.dumps({i: "No acute disease. " + refs[i]["section_findings"][:60]
                                                 for i in ids}))
    monkeypatch.chdir(tmp_path)
    settings = [a for p in model_paths for a in ("--model-path", p)] + [a for o in options for a in ("--option", o)]
    for name in ("a", "b"):
        code = main(["score", "-p", f"{name}.json", "-r", "refs.json", "-m", "bleu2,radgraph,semb,ratescore",
                     *settings, "--cache-dir", "cache", "-o", name, "-q", "--resamples", "20", "--batch-size", "4"])
        assert code == 0
    cache_bytes = (tmp_path / "cache" / "scores.sqlite").read_bytes()
    explorer, _, app = build(["a", "b"], model_paths=_model_paths(model_paths),
                             metric_configs=_metric_options(options), cache_dir="cache", batch_size=4)
    normal = dict(zip(pd.read_parquet("a/per_study.parquet")["study_id"],
                      pd.read_parquet("a/per_study.parquet")["ref_normal"]))
    with TestClient(app) as client:
        assert sorted(_listed(client.get("/", params={"per": "500"}).text)) == sorted(ids)
        for value, flag in (("normal", True), ("abnormal", False)):  # SembScore ran: CheXbert's No Finding
            if flag in normal.values():
                shown = _listed(client.get("/", params={"per": "500", "normal": value}).text)
                assert sorted(shown) == sorted(s for s, v in normal.items() if v == flag)
        page = client.get("/study", params={"id": ids[0]}).text
    for column in ("bleu_score", "radgraph_combined", "semb_score", "ratescore"):
        assert f"<h4>{column}</h4>" in page
    assert "cannot be built" not in page and "is not the run" not in page and "not available" not in page
    assert page.count("<caption>CheXbert labels: reference and") == 2 and "No Finding" in page
    assert page.count("Entities in the reference, missed") == 4  # RadGraph and RaTEScore, both runs
    assert page.count("Relations matched") == 2
    assert (tmp_path / "cache" / "scores.sqlite").read_bytes() == cache_bytes
    # Another batch shape is another fingerprint: the view says so rather than show another model's annotations.
    _, _, app = build(["a", "b"], model_paths=_model_paths(model_paths), metric_configs=_metric_options(options),
                      cache_dir="cache")
    with TestClient(app) as client:
        assert "is not the run" in client.get("/study", params={"id": ids[0]}).text


@pytest.mark.slow
def test_licensed_reference_text_reaches_no_file(tmp_path, monkeypatch):
    """A canary planted in MIMIC-CXR's reference reports (a synthetic tree; the catalog calls the set licensed):
    the explorer shows the user their own text on 127.0.0.1 (the positive control), and afterwards no file under
    the tree holds a byte more than before: not the results folder, the score cache or anything new."""
    from starlette.testclient import TestClient

    from rexrank.data import catalog, load, synthetic
    from rexrank.explore.server import build
    from test_licensed_text import _SENTENCE, _plant

    canary = "zqcanaryexplore"
    assert catalog.licensed("mimic_cxr")
    data = tmp_path / "data" / "mimic_cxr"
    synthetic.write_mimic_cxr_tree(data, compress_csv=False, images=False)
    assert _plant(data, _SENTENCE, canary)
    arrow = tmp_path / "arrow"
    monkeypatch.setattr("datasets.config.HF_DATASETS_CACHE", str(arrow))
    monkeypatch.setenv("REXRANK_CACHE", str(tmp_path / "rexrank-cache"))
    studies = load("mimic_cxr", data_dir=data, split=catalog.leaderboard_split("mimic_cxr"), track="findings",
                   cache_dir=arrow, require_images=False)
    preds = tmp_path / "preds.json"
    preds.write_text(json.dumps({sid: "The heart is normal. No pleural effusion." for sid in studies["study_id"]}))
    assert main(["score", "-p", str(preds), "--dataset", "mimic_cxr", "--data-dir", str(data), "-m", "bleu2",
                 "-o", str(tmp_path / "run"), "-q", "--resamples", "20", "--cache-dir", str(tmp_path / "cache")]) == 0

    def files():
        return {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file() and data not in p.parents}

    before = files()
    _, _, app = build([tmp_path / "run"], data_dir=data, cache_dir=tmp_path / "cache")
    with TestClient(app) as client:
        pages = [client.get("/", params={"per": "500", "page": str(k)}).text for k in range(1, 6)]
        ids = [sid for page in pages for sid in _listed(page)]
        assert sorted(ids) == sorted(str(s) for s in studies["study_id"])
        pages += [client.get("/study", params={"id": sid}).text for sid in ids[:200]]
    assert any(canary in page for page in pages)  # the scan below looks for text the explorer did read
    after = files()
    assert after == before
    assert not [p for p, data_ in after.items() if canary.encode() in data_ and (tmp_path / "run") in p.parents]


def test_a_judges_errors_and_text_come_from_the_score_cache(tmp_path, monkeypatch):
    """A GREEN-like judge (score, error count, free-text analysis): the analysis never reaches per_study.parquet
    (the harness keeps it in the cache only); the study page shows it, and the count, from the run's cached pair
    row, escaped."""
    from starlette.testclient import TestClient

    from rexrank.explore.server import build
    from rexrank.metrics import REGISTRY
    from rexrank.metrics.base import Metric
    from rexrank.metrics.registry import MetricSpec

    class Judge(Metric):
        spec = MetricSpec("explore_judge", "explore_judge", True, "1", "test judge with an analysis")

        def __init__(self, **_):
            pass

        def _score(self, hyps, refs):
            return self.score_details(hyps, refs)["explore_judge"].to_numpy()

        def _score_details(self, hyps, refs):
            errors = [sum(w not in r for w in h.split()) for h, r in zip(hyps, refs)]
            return pd.DataFrame({"explore_judge": [1 / (1 + e) for e in errors],
                                 "explore_judge_significant_errors": errors,
                                 "explore_judge_analysis": [f"<b>judge</b> found {e} errors" for e in errors]})

    refs = {f"s{k}": f"no effusion {k}" for k in range(4)}
    (tmp_path / "refs.json").write_text(json.dumps(refs))
    (tmp_path / "p.json").write_text(json.dumps({s: f"small effusion {k}" for k, s in enumerate(refs)}))
    monkeypatch.chdir(tmp_path)
    with REGISTRY.scoped():
        REGISTRY.register(Judge.spec, Judge)
        assert main(["score", "-p", "p.json", "-r", "refs.json", "-m", "explore_judge", "-o", "run", "-q",
                     "--resamples", "20", "--cache-dir", "cache"]) == 0
        assert not [c for c in pd.read_parquet("run/per_study.parquet").columns if c.endswith("_analysis")]
        _, _, app = build(["run"], cache_dir="cache")
        with TestClient(app) as client:
            page = client.get("/study", params={"id": "s1"}).text
    assert '<pre class="judge">&lt;b&gt;judge&lt;/b&gt; found 1 errors</pre>' in page
    assert "explore_judge_significant_errors: 1" in page

"""Issue 34: the board rexrank.ai shows today, and every board after it.

The board's definition is data (``rexrank.metrics.boards``: editions, their columns per track, the ranking metric,
the bundled tables that seed them); ``import-published`` reads the tables as upstream publishes them and re-import
is a sync; the host's import is authoritative; a published private-set value shows as published; unofficial results
are never ranked.
"""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

from rexrank.errors import UnknownNameError
from rexrank.leaderboard import board
from rexrank.leaderboard.editions import EDITION_KEY, choose_edition, edition_of
from rexrank.leaderboard.published import SEED_KEY, bundled_tables, seed_store, table_of
from rexrank.leaderboard.records import DATASETS, MetricValue, ModelInfo, ResultRecord
from rexrank.leaderboard.store import LISTING_KIND, Store, check_event, make_listing_event
from rexrank.leaderboard.views import Views
from rexrank.metrics import REGISTRY, boards

TODAY = ("findings_result_chexpertplus.csv", "findings_result_gradienthealth.csv", "findings_result_iu_xray.csv",
         "findings_result_mimiccxr.csv")
# The published columns, in rexrank.ai's order (shared/data/leaderboard_published/2026).
TODAY_COLUMNS = ("BLEU", "BertScore", "SembScore", "RadGraph", "1/RadCliQ-v1", "RaTEScore", "GREEN", "CRIMSON")


def _today(shared_dir: Path) -> Path:
    return shared_dir / "data" / "leaderboard_published" / "2026"


def _csv(path: Path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as fh:
        return [{k.strip(): (v or "").strip() for k, v in row.items()} for row in csv.DictReader(fh)]


def _serve_open(store_path: Path, edition: str | None = None) -> Views:
    """What `leaderboard serve` (and the Space) do before building the page (leaderboard/serve.py): record the
    host's edition, apply the seeding rule, then build every view from the store."""
    store = Store(store_path)
    seed_store(store, edition=choose_edition(store, edition))
    return Views(store)


# -- the editions ----------------------------------------------------------------------------------------------------
def test_editions_are_data_over_the_tracks_with_one_ranking_metric():
    """Every edition names every track of data/tracks.py (metrics/ may not import it, so it spells their names) in
    its order; every edition ranks by the metric the board ranks by; every column is a registered metric whose
    header and aggregation its spec owns; the current edition is the default."""
    from rexrank.data.tracks import TRACKS

    assert boards.DEFAULT_EDITION == "2026" and boards.edition() is boards.EDITIONS["2026"]
    for edition in boards.EDITIONS.values():
        assert [track for track, _ in edition.columns] == list(TRACKS)
        assert edition.ranking == board.PRIMARY
        for metric in edition.all_metrics():
            assert REGISTRY.spec(metric).leaderboard_column, metric
        assert edition.seed_tables and all(list(bundled_tables().glob(p)) for p in edition.seed_tables)
    today = boards.edition("2026")
    assert [REGISTRY.spec(m).leaderboard_column for m in today.metrics("findings")] == list(TODAY_COLUMNS)
    assert today.metrics("findings_impression")[-1] == "fineradscore"
    assert boards.edition("2025").metrics("findings")[-1] == "fineradscore"


def test_an_unknown_edition_is_one_error_naming_the_choices(tmp_path, cli):
    with pytest.raises(UnknownNameError) as caught:
        boards.edition("2024")
    assert str(caught.value) == "Unknown board edition '2024'. Available: 2026, 2025"
    store_path = tmp_path / "board.sqlite"
    code, text = cli("leaderboard", "serve", "--store", str(store_path), "--edition", "2024", "--no-worker")
    assert code == 2 and text == "error: Unknown board edition '2024'. Available: 2026, 2025\n"
    assert not store_path.exists()


def test_the_host_picks_the_edition_2025_shows_fineradscore_the_default_crimson(tmp_path):
    default = _serve_open(tmp_path / "now.sqlite")
    older = _serve_open(tmp_path / "older.sqlite", "2025")
    assert edition_of(default.store) == "2026" and older.store.meta(EDITION_KEY) == "2025"
    assert "CRIMSON ↑" in default.table_view("iu_xray", "findings").columns
    assert "1/FineRadScore ↑" not in default.table_view("iu_xray", "findings").columns
    assert "1/FineRadScore ↑" in default.table_view("iu_xray", "findings_impression").columns
    older_findings = older.table_view("iu_xray", "findings")
    assert "1/FineRadScore ↑" in older_findings.columns and "CRIMSON ↑" not in older_findings.columns
    assert len(older_findings) == 25 and "RadPhi3.5Vision" in set(older_findings["Model"])  # the 2025 tables
    assert "1/FineRadScore" in older.about_markdown() and "**CRIMSON**" not in older.about_markdown()
    reopened = _serve_open(tmp_path / "older.sqlite")  # a later open without --edition keeps the host's choice
    assert edition_of(reopened.store) == "2025"


# -- today's tables, as upstream names them, into a new store --------------------------------------------------------
def test_todays_tables_imported_under_upstream_names_show_what_rexrank_ai_shows(tmp_path, shared_dir, cli):
    """The issue's "done when": the four 2026 Findings tables, under upstream's own names, imported into a NEW store
    and served as a host would: 31 models per dataset, every cell equal to the CSV cell (ReXGradient's
    1/RadCliQ-v1 included: UniRG-CXR 1.622), no † mark, CRIMSON as a column, institutions as published."""
    folder = tmp_path / "tables"
    folder.mkdir()
    for name in TODAY:
        shutil.copy(_today(shared_dir) / name, folder / name)
        assert (folder / name).read_bytes() == (bundled_tables() / name).read_bytes()  # the seed is today's tables
    store_path = tmp_path / "board.sqlite"
    code, text = cli("leaderboard", "import-published", str(folder), "--store", str(store_path))
    assert code == 0
    assert text.splitlines()[0] == "124 added, 0 changed, 0 withdrawn, 0 unchanged (124 rows from 4 tables)"
    views = _serve_open(store_path)
    assert views.store.counts()["results"] == 124  # the open seeded nothing on top
    for name in TODAY:
        dataset, _, track = table_of(name)
        published = _csv(folder / name)
        shown = views.table_view(dataset, track)
        assert len(published) == len(shown) == 31
        assert [c.rsplit(" ", 1)[0] for c in shown.columns[2:10]] == [
            "1/RadCliQ-v1", *(c for c in TODAY_COLUMNS if c != "1/RadCliQ-v1")]
        rows = {row["Model"]: row for _, row in shown.iterrows()}
        assert set(rows) == {row["Model Name"] for row in published}
        for cells in published:
            row = rows[cells["Model Name"]]
            for column in TODAY_COLUMNS:
                assert row[f"{column} ↑"] == f"{float(cells[column]):.3f}", (name, cells["Model Name"], column)
            assert row["Institution"] == cells["Institution"] and row["Source"] == "published"
    gradient = views.table_view("rexgradient", "findings")
    assert gradient[gradient["Model"] == "UniRG-CXR"].iloc[0]["1/RadCliQ-v1 ↑"] == "1.622"


def test_a_newer_table_re_imports_cleanly_and_the_board_follows(tmp_path, shared_dir, cli):
    """A later table (made here) with a model added, one dropped, one changed, an unknown column, spaces around
    headers and cells, a short row, CRLF line ends and a BOM: one sync. The dropped model leaves the board and its
    history stays on its model page; the same table again changes nothing, not even the log."""
    store_path = tmp_path / "board.sqlite"
    first = tmp_path / "first"
    first.mkdir()
    shutil.copy(_today(shared_dir) / "findings_result_iu_xray.csv", first)
    assert cli("leaderboard", "import-published", str(first), "--store", str(store_path))[0] == 0

    lines = (first / "findings_result_iu_xray.csv").read_text(encoding="utf-8").splitlines()
    header = [h.strip() for h in lines[0].split(",")]
    rows = [line.split(",") for line in lines[1:]]
    dropped = next(r for r in rows if r[2] == "CheXagent")
    rows.remove(dropped)
    changed = next(r for r in rows if r[2] == "MedGemma")
    changed[header.index("GREEN")] = "0.777"
    short = next(r for r in rows if r[2] == "RadFM")
    new_row = ["32", "2026", " NewModel-X ", " Somewhere ", "https://example.org/x", "0.2", "0.4", "0.5", "0.2",
               "1.1", "0.6", "0.5", "0.6"]
    out = [" , ".join(header + ["Future Metric"])]
    out += [",".join(r + ["0.5"]) for r in rows if r is not short] + [",".join(short[:-1])] + [",".join(new_row)]
    later = tmp_path / "later"
    later.mkdir()
    (later / "gh-pages_findings_result_iu_xray.csv").write_bytes(("\ufeff" + "\r\n".join(out) + "\r\n").encode())

    code, text = cli("leaderboard", "import-published", str(later), "--store", str(store_path))
    assert code == 0, text
    assert text.splitlines()[0] == "1 added, 2 changed, 1 withdrawn, 28 unchanged (31 rows from 1 tables)"
    assert "note: column 'Future Metric' (gh-pages_findings_result_iu_xray.csv) is no metric rexrank knows" in text
    store = Store(store_path)
    shown = Views(store).table_view("iu_xray", "findings")
    assert "CheXagent" not in set(shown["Model"]) and "NewModel-X" in set(shown["Model"]) and len(shown) == 31
    assert shown[shown["Model"] == "MedGemma"].iloc[0]["GREEN ↑"] == "0.777"
    assert shown[shown["Model"] == "RadFM"].iloc[0]["CRIMSON ↑"] == "–"  # the short row's missing cell
    assert shown[shown["Model"] == "NewModel-X"].iloc[0]["Institution"] == "Somewhere"
    page = board.model_page(store, "CheXagent")
    assert len(page) == 1 and page.iloc[0]["Source"] == f"published · {board.WITHDRAWN}"
    assert page.iloc[0]["BLEU ↑"] == f"{float(dropped[header.index('BLEU')]):.3f}"
    events = len(store.events())

    code, text = cli("leaderboard", "import-published", str(later), "--store", str(store_path))
    assert text.splitlines()[0] == "0 added, 0 changed, 0 withdrawn, 31 unchanged (31 rows from 1 tables)"
    assert len(store.events()) == events

    code, text = cli("leaderboard", "import-published", str(first), "--store", str(store_path))
    assert text.splitlines()[0] == "1 added, 2 changed, 1 withdrawn, 28 unchanged (31 rows from 1 tables)"
    assert "CheXagent" in set(Views(store).table_view("iu_xray", "findings")["Model"])  # listed again
    withdrawn = [e for _, e in store.events((LISTING_KIND,)) if not e["listed"]]
    assert [e["model"] for e in withdrawn] == ["CheXagent", "NewModel-X"]


def test_listing_events_are_checked_like_every_event_of_the_log(tmp_path):
    """A listing event travels with the log (the Hub sync carries every event): a store rebuilt from another's
    events withdraws the same rows; a malformed one is refused with one line."""
    event = make_listing_event("M", "iu_xray", "test", "findings", False, at=1.0)
    assert check_event(event) == event
    with pytest.raises(Exception, match="listed must be true or false"):
        check_event({**event, "listed": "no"})
    with pytest.raises(Exception, match="a listing event holds"):
        check_event({**event, "extra": 1})
    store = Store(tmp_path / "a.sqlite")
    store.add_result(ResultRecord(model=ModelInfo(name="M"), dataset="iu_xray", split="test", track="findings",
                                  source="published", metrics={"bleu2": MetricValue(0.3)}))
    assert len(store.results("iu_xray", "findings")) == 1
    store.add_events([event])
    assert store.results("iu_xray", "findings") == [] and len(store.results(model="M", withdrawn=True)) == 1


# -- bad input: one line, nothing written -----------------------------------------------------------------------------
def test_no_tables_is_one_line_exit_2_and_no_store_file(tmp_path, cli):
    store_path = tmp_path / "board.sqlite"
    empty = tmp_path / "empty"
    empty.mkdir()
    code, text = cli("leaderboard", "import-published", str(empty), "--store", str(store_path))
    assert code == 2 and len(text.splitlines()) == 1
    assert text.startswith(f"error: no published ReXrank tables in {empty}")
    assert not store_path.exists()
    (empty / "scores.csv").write_text("Rank,Model Name,BLEU\n1,X,0.1\n")
    code, text = cli("leaderboard", "import-published", str(empty), "--store", str(store_path))
    assert code == 2 and "error: no published ReXrank tables" in text and "Traceback" not in text
    assert not store_path.exists()
    code, text = cli("leaderboard", "import-published", str(empty / "scores.csv"), "--store", str(store_path))
    assert code == 2 and len(text.splitlines()) == 1 and "scores.csv: its name does not say which test set" in text
    assert "give --dataset and --track" in text and not store_path.exists()
    code, text = cli("leaderboard", "import-published", str(empty / "scores.csv"), "--store", str(store_path),
                     "--dataset", "iu_xray", "--track", "findings")
    assert code == 0 and text.startswith("1 added, 0 changed"), text


# -- the host's import is authoritative -------------------------------------------------------------------------------
def test_serve_add_and_the_worker_never_seed_over_the_hosts_import(tmp_path, shared_dir, cli):
    """The host imported its own tables (here: one, without UniRG-CXR). Opening the store as `serve` does, `add`
    and the worker leave the board as imported: no bundled row comes back on top."""
    folder = tmp_path / "mine"
    folder.mkdir()
    lines = (_today(shared_dir) / "findings_result_iu_xray.csv").read_text(encoding="utf-8").splitlines()
    (folder / "findings_result_iu_xray.csv").write_text(
        "\n".join(line for line in lines if ",UniRG-CXR," not in line) + "\n", encoding="utf-8")
    store_path = tmp_path / "board.sqlite"
    assert cli("leaderboard", "import-published", str(folder), "--store", str(store_path))[0] == 0
    results = tmp_path / "results.json"
    results.write_text('{"dataset": "iu_xray", "split": "test", "track": "findings", "n_studies": 590, "metrics": '
                       '{"bleu2": {"mean": 0.2, "ci_low": 0.18, "ci_high": 0.22}}}')
    code, text = cli("leaderboard", "add", str(results), "--name", "Mine", "--store", str(store_path))
    assert code == 0 and "seeded" not in text, text
    code, text = cli("leaderboard", "worker", "--once", "--store", str(store_path), "--submission-metrics", "bleu2")
    assert code == 0 and "seeded" not in text, text
    views = _serve_open(store_path)
    assert seed_store(views.store)["state"] == "host-imported"
    assert views.store.meta(SEED_KEY)["state"] == "imported"
    assert views.store.counts()["results"] == 30 + 1
    assert "UniRG-CXR" not in set(views.table_view("iu_xray", "findings")["Model"])
    assert views.table_view("mimic_cxr", "findings").empty


# -- unofficial results are never ranked -----------------------------------------------------------------------------
def test_an_unofficial_result_is_shown_labelled_and_never_ranked(tmp_path):
    views = _serve_open(tmp_path / "board.sqlite")
    record = ResultRecord(model=ModelInfo(name="Unofficial"), dataset="iu_xray", split="test", track="findings",
                          source="rexrank", n_studies=590,
                          metrics={"bleu2": MetricValue(0.9, 0.89, 0.91), "radcliq_v1": MetricValue(0.1, 0.09, 0.11)})
    views.store.add_result(record, allow_unofficial_weights=True)  # 1/RadCliQ-v1 = 10: better than every model
    df = board.numeric_table(views.store, "iu_xray", "findings")
    assert df["rank"].isna().sum() == 1 and df[df["model"] == "Unofficial"]["rank"].isna().all()
    assert sorted(df["rank"].dropna().astype(int)) == list(range(1, 32))
    for sort_by in (board.PRIMARY, "bleu2"):
        shown = views.table_view("iu_xray", "findings", sort_by=sort_by)
        row = shown[shown["Model"].str.startswith("Unofficial")].iloc[0]
        assert row["Rank"] == "–" and row["Model"] == "Unofficial ⚠" and "weights" in row["Source"]
        assert "1" in set(shown["Rank"]) and shown.iloc[0]["Model"] != "Unofficial ⚠"
    assert "Unofficial" not in set(board.overview(views.store)["Model"])
    assert "Unofficial" not in set(board.ranks_across_datasets(views.store)["model"])


def test_every_published_private_set_cell_shows_as_published(tmp_path, shared_dir):
    """Disclosure rounds what is shown: a ReXGradient mean is never rounded before the board takes its reciprocal
    (UniRG-CXR's 1.622 was shown 1.621)."""
    views = _serve_open(tmp_path / "board.sqlite")
    shown = views.table_view("rexgradient", "findings")
    for cells in _csv(_today(shared_dir) / "findings_result_gradienthealth.csv"):
        row = shown[shown["Model"] == cells["Model Name"]].iloc[0]
        assert row["1/RadCliQ-v1 ↑"] == f"{float(cells['1/RadCliQ-v1']):.3f}", cells["Model Name"]
    assert set(DATASETS) >= {"rexgradient"}


def test_rexrank_is_cited_with_both_papers_as_their_authors_publish_them(shared_dir):
    """Issue 34 point 9: the citation owner (catalog.REXRANK_BIBTEX: the About tab, every evaluate module and its
    card) holds both entries of shared/reference/citations.bib verbatim: the 2024 preprint and the PSB 2026 study."""
    import re

    from rexrank.data import catalog

    bib = (shared_dir / "reference" / "citations.bib").read_text(encoding="utf-8")
    entries = re.findall(r"^@\w+\{.*?^\}", bib, re.S | re.M)
    assert len(entries) == 2 and catalog.REXRANK_BIBTEX == "\n\n".join(entries)
    card = (Path(__file__).resolve().parents[1] / "metrics" / "bleu2" / "README.md").read_text(encoding="utf-8")
    assert catalog.REXRANK_BIBTEX in card  # every card holds it verbatim (tests/test_evaluate_modules.py, all cards)

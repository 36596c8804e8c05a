"""One owner per fact: dataset names, aliases, splits, labels and tracks come from rexrank.data.catalog/tracks.

(a) a `rexrank score` CheXpert Plus result lands in the same board table as the published CheXpert Plus rows;
(b) every alias resolves to its canonical name at every boundary;
(c) no module outside the owners restates a dataset/split/track fact, nor an owned default (the default track, the
    statistics' defaults, the submission limits) or the ReXrank BibTeX as a single literal (a source scan);
(d) a store of an older (development) schema, whose rows may hold old names, is refused untouched rather than read:
    tests/test_leaderboard_store.py::test_an_older_store_is_refused_untouched.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest
import source_scan

from rexrank import data
from rexrank.data import catalog, tracks
from rexrank.errors import InputError, UnknownNameError
from rexrank.evaluation import defaults
from rexrank.leaderboard import board, limits
from rexrank.leaderboard.published import table_of
from rexrank.data.loading import builder_class
from rexrank.leaderboard.records import ModelInfo, from_results_json
from rexrank.leaderboard.store import Store

REPO = Path(__file__).resolve().parents[1]
ALIASES = sorted(catalog.DATASET_ALIASES.items())


# -- (a) score -> leaderboard add -> the published table ------------------------------------------------------
def test_chexpert_plus_score_result_joins_the_published_rows(cli, tmp_path):
    """The audit's bug: `score --dataset chexpert_plus` wrote "validation", the published rows said "valid"."""
    from rexrank.data import synthetic

    tree = tmp_path / "chexpert"
    tree.mkdir()
    synthetic.write_chexpert_plus_tree(tree, images=False)
    refs = data.references("chexpert_plus", tree, track="findings", cache_dir=tmp_path / "hf")
    preds = tmp_path / "preds.json"
    preds.write_text(json.dumps(refs))
    out, store_path = tmp_path / "run", tmp_path / "board.sqlite"
    code, text = cli("score", "-p", str(preds), "--dataset", "chexpert_plus", "--data-dir", str(tree), "-m", "bleu2",
                     "--no-cache", "--resamples", "50", "-o", str(out), "-q")
    assert code == 0, text
    results = json.loads((out / "results.json").read_text())
    assert (results["dataset"], results["split"]) == ("chexpert_plus", catalog.leaderboard_split("chexpert_plus"))

    code, text = cli("leaderboard", "import-published", "--store", str(store_path))
    assert code == 0, text
    code, text = cli("leaderboard", "add", str(out / "results.json"), "--name", "NewModel", "--store", str(store_path))
    assert code == 0, text

    store = Store(store_path)
    table = board.numeric_table(store, "chexpert_plus", "findings")
    published = table[table["source"] == "published"]
    assert len(published) == 31 and "NewModel" in set(table["model"])
    assert set(table["split"]) == {"validation"}  # one table: published and scored rows share the split
    assert {r["split"] for r in store.results("chexpert_plus", "findings", latest=False)} == {"validation"}
    store.close()


def test_published_tables_use_the_catalog():
    for spec in catalog.DATASETS.values():
        for track in tracks.TRACKS.values():
            name = f"{track.leaderboard_table_prefix}_{spec.published_table}.csv"
            assert table_of(name) == (spec.name, spec.leaderboard_split, track.name)
    assert table_of("gh-pages_result_padchest.csv") is None
    # upstream's own names and copies of its gh-pages branch alike (the branch prefix is optional)
    assert table_of("gh-pages_findings_result_iu_xray.csv") == table_of("findings_result_iu_xray.csv") == (
        "iu_xray", "test", tracks.FINDINGS)


# -- (b) aliases ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("alias,canonical", ALIASES)
def test_alias_resolves_in_catalog_data_and_records(alias, canonical, tmp_path):
    for spelling in (alias, alias.upper(), f" {alias} "):
        assert catalog.canonical_dataset(spelling) == canonical
    assert catalog.get_dataset_spec(alias).name == canonical
    assert data.default_split(alias) == catalog.leaderboard_split(canonical)
    assert catalog.default_data_dir(alias).name == canonical  # an alias never names another local copy
    assert type(data.get_builder(alias, tmp_path)) is builder_class(canonical)
    record = from_results_json({"dataset": alias, "split": catalog.leaderboard_split(canonical),
                                "track": "findings", "metrics": {"bleu2": {"mean": 0.3}}}, ModelInfo(name="m"))
    assert record.dataset == canonical
    assert ModelInfo.from_dict({"name": "m", "trained_on": f"{alias},{canonical}"}).trained_on == [canonical]


def test_data_load_resolves_aliases_and_names_unknown_ones(tmp_path):
    refs = data.references("IU-Xray", tmp_path / "none", split="valid", track="findings", cache_dir=tmp_path)
    assert refs == data.references("iu_xray", tmp_path / "none", split="validation", track="findings",
                                   cache_dir=tmp_path)
    ds = data.load("iu", tmp_path / "none", track="Findings + Impression", cache_dir=tmp_path, require_images=False)
    info = data.track_info(ds)
    assert (info["dataset"], info["split"], info["track"]) == ("iu_xray", "test", "findings_impression")
    with pytest.raises(UnknownNameError, match=r"Unknown dataset 'padchest'\. Available: iu_xray, mimic_cxr"):
        data.load("padchest")
    with pytest.raises(UnknownNameError, match=r"Unknown split 'valid' for dataset 'mimic_cxr'\. Available: test"):
        data.load("mimic", split="valid")


def test_splits_and_tracks_have_one_spelling():
    assert catalog.canonical_split("chexpert", "valid") == catalog.canonical_split("chexpert_plus", "VAL") == \
        catalog.canonical_split("chexpert_plus") == "validation"
    assert catalog.canonical_split("iu_xray", "val") == "validation" and catalog.canonical_split("iu") == "test"
    assert catalog.split_name("Valid") == "validation"
    for spelling in ("findings_impression", "Findings + Impression", "findings+impression"):
        assert tracks.canonical_track(spelling) == "findings_impression"
    assert [tracks.track_label(t) for t in tracks.track_names()] == ["Findings", "Findings + Impression"]
    with pytest.raises(UnknownNameError, match="Unknown track 'impression'. Available: findings, findings_impression"):
        tracks.canonical_track("impression")


def test_catalog_declares_the_leaderboard_facts():
    from rexrank.leaderboard import records
    from rexrank.data.verification import checker_for

    assert records.DATASETS == catalog.leaderboard_datasets() == ("rexgradient", "mimic_cxr", "iu_xray",
                                                                  "chexpert_plus")
    assert records.DATASET_LABELS["chexpert_plus"] == "CheXpert Plus"
    assert records.PRIVATE_DATASETS == catalog.private_datasets() == {"rexgradient"}
    assert records.TRACK_LABELS["findings_impression"] == "Findings + Impression"
    for name in catalog.dataset_names():
        assert callable(checker_for(name))  # `rexrank data verify` knows every catalog dataset


def test_leaderboard_add_with_aliases(cli, tmp_path):
    store_path = tmp_path / "board.sqlite"
    for i, (alias, canonical) in enumerate(ALIASES):
        path = tmp_path / f"results{i}.json"
        split = "valid" if canonical == "chexpert_plus" else "test"
        path.write_text(json.dumps({"dataset": alias, "split": split, "track": "Findings",
                                    "metrics": {"bleu2": {"mean": 0.1 + i / 100}}}))
        code, text = cli("leaderboard", "add", str(path), "--name", f"m{i}", "--trained-on", alias,
                         "--store", str(store_path), "--no-seed")
        assert code == 0, text
    store = Store(store_path)
    rows = store.results(latest=False)
    assert {(r["dataset"], r["split"], r["track"]) for r in rows} == {
        (name, catalog.leaderboard_split(name), "findings") for name in catalog.dataset_names()}
    assert all(r["trained_on"] == [r["dataset"]] for r in rows)
    assert len(store.results("chexpert", "Findings")) == sum(c == "chexpert_plus" for _, c in ALIASES)
    store.close()


def test_submission_form_aliases_are_stored_canonical(tmp_path):
    from leaderboard_helpers import iu_predictions
    from rexrank.leaderboard.submissions import Submissions

    store = Store(tmp_path / "board.sqlite")
    service = Submissions(store, tmp_path / "uploads", datasets=("IU-Xray",))
    assert service.datasets == ("iu_xray",)
    service.submit(iu_predictions(tmp_path / "p.json"), {"name": "m", "trained_on": "mimic"}, "iu", "findings")
    job = store.submissions()[0]
    assert (job["dataset"], job["split"], job["track"]) == ("iu_xray", "test", "findings")
    assert job["model"]["trained_on"] == ["mimic_cxr"]
    with pytest.raises(InputError, match="Unknown dataset 'nope'"):
        service.submit(tmp_path / "p.json", {"name": "m"}, "nope", "findings")
    store.close()


# -- (c) no restatements --------------------------------------------------------------------------------------
OWNERS = {"src/rexrank/data/catalog.py", "src/rexrank/data/tracks.py", "src/rexrank/evaluation/defaults.py",
          "src/rexrank/leaderboard/limits.py"}
SCANNED = ("src/rexrank", "spaces", "scripts", "dataset_scripts", "metrics")
# Benchmarks name datasets as a user types them (aliases on a command line); their owned defaults are scanned.
SCANNED_FOR_OWNED_VALUES = SCANNED + ("bench",)


@dataclass(frozen=True)
class Owned:
    """A value with one owner, and the names a restatement of it goes by: ``names``, the parameters, options and
    keywords that take it (a default or an argument spelled as the literal restates it); ``constant``, the module
    constants that would declare it again; ``beside``: a parameter that only means this value next to one of these
    (a ``seed`` is the bootstrap's only beside a resample count)."""

    owner: str
    value: object
    names: tuple[str, ...]
    constant: str
    beside: tuple[str, ...] = ()
    in_calls: bool = True  # a keyword argument restates it too (a call naming a track chooses one: not for tracks)


_STATS, _LIMITS = "rexrank.evaluation.defaults", "rexrank.leaderboard.limits"
_RESAMPLE_NAMES = ("resamples", "n_resamples", "n_boot", "boot")
OWNED = (
    Owned("rexrank.data.tracks", tracks.DEFAULT_TRACK, ("track",), r"DEFAULT_TRACK", in_calls=False),
    Owned(_STATS, defaults.DEFAULT_RESAMPLES, _RESAMPLE_NAMES, r"RESAMPLES|N_BOOT"),
    Owned(_STATS, defaults.DEFAULT_PERMUTATIONS, ("permutations",), r"PERMUTATIONS"),
    Owned(_STATS, defaults.DEFAULT_CONFIDENCE, ("confidence",), r"CONFIDENCE"),
    Owned(_STATS, defaults.DEFAULT_SEED, ("seed",), r"^DEFAULT_SEED$", beside=_RESAMPLE_NAMES),
    Owned(_STATS, defaults.MAX_RESAMPLES, (), r"MAX_RESAMPLES"),
    Owned(_LIMITS, limits.DEFAULT_MAX_UPLOAD_MB, ("max_upload_mb", "max_bytes"), r"UPLOAD"),
    Owned(_LIMITS, limits.upload_bytes(limits.DEFAULT_MAX_UPLOAD_MB), ("max_bytes",), r"UPLOAD"),
    Owned(_LIMITS, limits.DEFAULT_PRIVATE_QUOTA, ("private_quota",), r"PRIVATE_QUOTA"),
    Owned(_LIMITS, limits.DEFAULT_RATE_LIMIT, ("rate_limit",), r"RATE_LIMIT"),
    Owned(_LIMITS, limits.DEFAULT_ANONYMOUS_LIMIT, ("anonymous_limit",), r"ANONYMOUS_LIMIT"),
    Owned(_LIMITS, limits.DEFAULT_RATE_WINDOW_S, ("rate_window",), r"RATE_WINDOW"),
)
# The ReXrank BibTeX's key: any string holding it outside rexrank.data.catalog is a copy (the evaluate modules' cards,
# which must stand alone on the Hub, are checked against the owner instead: test_evaluate_modules).
BIBTEX_KEY = "@article{zhang2024rexrank"


def _literal(node: ast.AST):
    """The value of a literal or of arithmetic on literals (``24 * 3600.0``, ``-1``); ``...`` when it is not one."""
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mult, ast.Add, ast.Sub, ast.Div)):
            left, right = _literal(node.left), _literal(node.right)
            if _number(left) and _number(right):
                return {ast.Mult: left * right, ast.Add: left + right, ast.Sub: left - right,
                        ast.Div: left / right if right else ...}[type(node.op)]
        return ...
    return value


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _same(value, owned: Owned) -> bool:
    if isinstance(owned.value, str):
        return value == owned.value
    return _number(value) and value == owned.value


def _literals(node: ast.AST):
    """Every literal in an argument's expression (``int(_number("X", 3) * 1_000_000)`` gives 3 and 1,000,000)."""
    for sub in ast.walk(node):
        if sub is not node and isinstance(sub, ast.BinOp) and _literal(sub) is not ...:
            yield _literal(sub)
        elif isinstance(sub, ast.Constant):
            yield sub.value
    if (value := _literal(node)) is not ...:
        yield value


def _option_default(node: ast.AST):
    """What a parameter's default expression gives: the first argument (or ``default=``) of ``typer.Option(...)``
    and the like, else the expression itself."""
    if isinstance(node, ast.Call):
        for keyword in node.keywords:
            if keyword.arg == "default":
                return keyword.value
        return node.args[0] if node.args else None
    return node


def _owned_restatements(tree: ast.AST, where, walked=None) -> list[str]:
    """Single literals that restate an owned value: as a parameter's default (also ``typer.Option(1000, ...)`` and a
    dataclass field), as a keyword argument of that name, as an argparse ``--option``'s default, or as a module
    constant that declares it again; and any string holding the ReXrank BibTeX."""
    found = []

    def check(name: str | None, expr: ast.AST | None, node: ast.AST, how: str, siblings=(), calls=False) -> None:
        if name is None or expr is None:
            return
        for owned in OWNED:
            if name not in owned.names or (owned.beside and not set(owned.beside) & set(siblings)):
                continue
            if calls and not owned.in_calls:
                continue
            values = _literals(expr) if calls else [_literal(expr)]
            if any(_same(v, owned) for v in values):
                found.append(f"{where(node)} {how} {name!r} restates {owned.owner}'s {owned.value!r}")

    for node in walked if walked is not None else ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            args = node.args
            positional = args.posonlyargs + args.args
            names = [a.arg for a in positional + args.kwonlyargs]
            pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
            pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
            for arg, default in pairs:
                check(arg.arg, _option_default(default), default, "default of", names)
        elif isinstance(node, ast.ClassDef):
            fields = [n.target.id for n in node.body if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)]
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and item.value is not None:
                    check(item.target.id, item.value, item, "field default", fields)
        elif isinstance(node, ast.Call):
            keywords = [k.arg for k in node.keywords if k.arg]
            for keyword in node.keywords:
                check(keyword.arg, keyword.value, keyword.value, "argument", keywords, calls=True)
            flag = node.args[0] if node.args and isinstance(node.args[0], ast.Constant) else None
            if isinstance(flag, ast.Constant) and isinstance(flag.value, str) and flag.value.startswith("--"):
                for keyword in node.keywords:
                    if keyword.arg == "default":
                        check(flag.value[2:].replace("-", "_"), keyword.value, keyword.value, "default of option",
                              keywords)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and BIBTEX_KEY in node.value:
            found.append(f"{where(node)} a copy of the ReXrank BibTeX (rexrank.data.catalog.REXRANK_BIBTEX)")
    for node in tree.body:  # module constants
        if isinstance(node, ast.Assign):
            value = _literal(node.value)
            for name in (getattr(target, "id", "") for target in node.targets):
                for owned in OWNED:
                    if re.search(owned.constant, name) and _same(value, owned):
                        found.append(f"{where(node)} constant {name} declares {owned.owner}'s {owned.value!r} again")
    return found


def _restatements(path: Path, catalog_facts: bool = True) -> list[str]:
    """Literals that declare a dataset/split/track fact: a dict keyed by dataset names or a collection holding
    them (name -> label/split tables, dataset lists), a dataset label or split alias as a string value, a list
    of tracks, a track -> label pairing, or a track's name compared with (``track == "findings"``: the tracks' names
    are tracks.FINDINGS ...); and the owned values of ``_owned_restatements``. Docstrings and comments may name
    anything."""
    names = set(catalog.DATASET_ALIASES)
    dataset_labels = {spec.label for spec in catalog.DATASETS.values()}
    track_names = set(tracks.TRACKS)
    track_labels = {track.label for track in tracks.TRACKS.values()}
    tree, walked = source_scan.tree(path), source_scan.nodes(path)  # parsed once for every scan
    docstrings = {id(node.body[0].value) for node in walked
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr)}
    found = []

    def where(node):
        return f"{path.relative_to(REPO)}:{getattr(node, 'lineno', '?')}"

    def strings(nodes):
        return {n.value for n in nodes if isinstance(n, ast.Constant) and isinstance(n.value, str)}

    for node in walked if catalog_facts else ():
        if isinstance(node, ast.Dict):
            keys, values = strings(k for k in node.keys if k is not None), strings(node.values)
            if {k.lower() for k in keys} & names:
                found.append(f"{where(node)} dict keyed by dataset names {sorted(keys & names)}")
            if keys & track_names and values & track_labels:
                found.append(f"{where(node)} track -> label table")
        elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            elements = strings(node.elts)
            if {e.lower() for e in elements} & names:
                found.append(f"{where(node)} collection of dataset names {sorted(elements)}")
            if len(elements & track_names) >= 2 or (elements & track_names and elements & track_labels):
                found.append(f"{where(node)} collection of tracks {sorted(elements)}")
        elif isinstance(node, ast.Compare):
            compared = strings([node.left, *node.comparators]) & track_names
            if compared:
                found.append(f"{where(node)} a track compared by its literal name {sorted(compared)}")
        elif isinstance(node, ast.Call):
            chosen = strings(k.value for k in node.keywords if k.arg == "value") & track_names
            if chosen:  # a component's initial value: the page's default track
                found.append(f"{where(node)} a track literal as a component's value {sorted(chosen)}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            if node.value in dataset_labels:
                found.append(f"{where(node)} dataset label {node.value!r}")
            if node.value.strip().lower() in catalog.SPLIT_ALIASES:
                found.append(f"{where(node)} split alias {node.value!r}")
    return found + _owned_restatements(tree, where, walked)


def _scan(root: Path) -> list[str]:
    found = []
    for folder in SCANNED_FOR_OWNED_VALUES:
        for path in sorted((root / folder).rglob("*.py")):
            if path.relative_to(root).as_posix() not in OWNERS:
                found += _restatements(path, catalog_facts=folder in SCANNED)
    return found


def test_no_dataset_split_or_track_fact_outside_its_owner(source_tree):
    found = _scan(REPO)
    assert not found, ("dataset/split/track facts belong in rexrank/data/catalog.py and rexrank/data/tracks.py, the "
                       "statistics' defaults in rexrank/evaluation/defaults.py, the submission limits in "
                       "rexrank/leaderboard/limits.py, the ReXrank BibTeX in rexrank.data.catalog; read them from "
                       "there instead:\n" + "\n".join(found))


def test_the_scan_catches_the_old_restatements(tmp_path, monkeypatch):
    monkeypatch.setattr(f"{__name__}.REPO", tmp_path)
    old = tmp_path / "old.py"
    old.write_text('SPLITS = {"rexgradient": "test", "chexpert_plus": "valid"}\n'
                   'FILES = {"chexpertplus": ("chexpert_plus", "valid")}\n'
                   'TITLES = dict(iu_xray="IU-Xray")\n'
                   'TRACK_NAMES = ("findings", "findings_impression")\n'
                   'TRACK_LABELS = {"findings": "Findings", "findings_impression": "Findings + Impression"}\n'
                   '"""A docstring may say CheXpert Plus and valid."""\n'
                   'PROMPTS = {"findings": "Write the findings.", "findings_impression": "Write the report."}\n')
    found = "\n".join(_restatements(old))
    for expected in ("old.py:1 dict keyed by dataset", "old.py:1 split alias", "old.py:2 collection of dataset",
                     "old.py:3 dataset label 'IU-Xray'", "old.py:4 collection of tracks", "old.py:5 track -> label"):
        assert expected in found
    assert "old.py:6" not in found and "old.py:7" not in found


# Lines as the tree had them before issue 29 point 1 (each file:line noted), and lines that must pass.
OLD_LINES = {
    2: 'def references(name, split=None, track: str = "findings"): ...',  # data/load.py
    3: 'class GenerateOptions: track: str = "findings"',  # generate/runner.py (a dataclass field)
    5: 'def score(track: str = typer.Option("findings", "--track"), resamples: int = typer.Option(1000, '
       '"--resamples"), seed: int = typer.Option(0, "--seed"), confidence: float = typer.Option(0.95)): ...',
    6: 'def compare(permutations: int = typer.Option(10000, "--permutations")): ...',  # cli/evaluation.py
    7: 'if track == "findings": pass',  # evaluation/references.py, generate/prompts.py
    8: 'sub_track = gr.Radio(choices, value="findings", label="Track")',  # leaderboard/app.py
    9: 'DEFAULT_PERMUTATIONS = 10_000',  # evaluation/statistics.py
    10: 'N_BOOT = 1000',  # leaderboard/arena.py
    11: 'DEFAULT_MAX_UPLOAD_MB = 50',  # leaderboard/submissions.py
    12: 'def __init__(self, max_bytes: int = DEFAULT_MAX_UPLOAD_MB * 1_000_000, rate_limit: int = 5, '
        'private_quota: int = 3, anonymous_limit: int = 100, rate_window: float = 24 * 3600.0, '
        'n_resamples: int = 1000): ...',  # leaderboard/submissions.py
    13: 'serve(max_bytes=int(_number("REXRANK_MAX_UPLOAD_MB", 50) * 1_000_000), '
        'private_quota=int(_number("REXRANK_PRIVATE_QUOTA", 3)))',  # spaces/leaderboard/app.py
    14: 'parser.add_argument("--resamples", type=int, default=1000)',  # bench/score_cache.py
    15: 'compare_runs(runs, resamples=1000, permutations=10_000)',  # bench/compare.py
    16: '_CITATION = """@article{zhang2024rexrank,\n  title = {ReXrank}\n}"""',  # metrics/*/<slug>.py
}
# What the scan lets pass, and why (its allow-list, as rules rather than files).
PASSING_LINES = (
    'def build(out, size="small", seed: int = 0): ...',  # a stand-in's own seed: no resample count beside it
    'evaluate(inputs, model="m", track="findings")',  # a call naming a track chooses it
    'if name in ("findings", "impression"): pass',  # a report section, not a track
    'def fit(n_boot: int = 200): ...',  # another number than the owner's is a choice, not a restatement
)


def test_the_scan_catches_single_literal_restatements_of_owned_values(tmp_path, monkeypatch):
    monkeypatch.setattr(f"{__name__}.REPO", tmp_path)
    old = tmp_path / "old.py"
    lines = ["import typer"] + [OLD_LINES.get(n, "") for n in range(2, max(OLD_LINES) + 1)]
    old.write_text("\n".join(lines) + "\n")
    found = _restatements(old)
    flagged = {int(item.split(":")[1].split()[0]) for item in found}
    assert flagged == set(OLD_LINES), "\n".join(found)
    expected = ("old.py:3 field default 'track'", "old.py:5 default of 'seed'", "old.py:5 default of 'confidence'",
                "old.py:12 default of 'rate_window'", "old.py:13 argument 'max_bytes'",
                "old.py:13 argument 'private_quota'")
    for item in expected:
        assert any(f.startswith(item) for f in found), (item, found)
    fine = tmp_path / "fine.py"
    fine.write_text("\n".join(PASSING_LINES) + "\n")
    assert _restatements(fine) == []



# The meta-evaluation's goals (all errors, clinically significant ones) are spelled once, with the report's shape.
GOALS_OWNER = "src/rexrank/evaluation/meta_eval_report.py"


def _goal_collections(path: Path) -> list[str]:
    """Collections of string literals that list both meta-evaluation goals (the goals declared again)."""
    from rexrank.evaluation.meta_eval_report import SIGNIFICANT, TOTAL

    return [f"{path.relative_to(REPO)}:{node.lineno}" for node in source_scan.nodes(path)
            if isinstance(node, (ast.Tuple, ast.List, ast.Set))
            and {TOTAL, SIGNIFICANT} <= {e.value for e in node.elts if isinstance(e, ast.Constant)}]


def test_the_meta_eval_goals_are_read_from_their_owner(tmp_path, monkeypatch, source_tree):
    found = [item for folder in SCANNED for path in sorted((REPO / folder).rglob("*.py"))
             if path.relative_to(REPO).as_posix() != GOALS_OWNER for item in _goal_collections(path)]
    assert not found, f"the meta-evaluation goals belong to {GOALS_OWNER} (TOTAL, SIGNIFICANT); read them:\n" + \
        "\n".join(found)
    monkeypatch.setattr(f"{__name__}.REPO", tmp_path)  # the line store.py had before issue 36 point 4 is caught
    old = tmp_path / "old.py"
    old.write_text('META_EVAL_GOALS = ("total", "significant")\n')
    assert _goal_collections(old) == ["old.py:1"]


# A published 1/RadCliQ-v1 is checked against its components once, when the table is imported (issue 34); the views
# read the stored result. These are the functions that compute it, and the one leaderboard module that may call them.
RADCLIQ_FROM_COMPONENTS = {"radcliq_check", "radcliq_interval", "radcliq_v1", "radcliq_v0"}
RADCLIQ_CHECKER = "src/rexrank/leaderboard/published.py"


def _radcliq_recomputes(path: Path) -> list[str]:
    return [f"{path.relative_to(REPO)}:{node.lineno} {name}" for node in source_scan.nodes(path)
            if isinstance(node, (ast.Name, ast.Attribute))
            and (name := getattr(node, "id", None) or getattr(node, "attr", None)) in RADCLIQ_FROM_COMPONENTS]


def test_the_board_never_recomputes_radcliq_from_published_components(tmp_path, monkeypatch, source_tree):
    found = [item for path in sorted((REPO / "src/rexrank/leaderboard").rglob("*.py"))
             if path.relative_to(REPO).as_posix() != RADCLIQ_CHECKER for item in _radcliq_recomputes(path)]
    assert not found, f"1/RadCliQ-v1 from published components is computed at import ({RADCLIQ_CHECKER}); the " \
        "board reads the stored 'radcliq_components':\n" + "\n".join(found)
    monkeypatch.setattr(f"{__name__}.REPO", tmp_path)  # a view that recomputes on each table build is caught
    old = tmp_path / "old.py"
    old.write_text("from rexrank.leaderboard import published\nx = published.radcliq_check(cells)\n")
    assert _radcliq_recomputes(old) == ["old.py:2 radcliq_check"]

# The ReXrank JSON field holding a model's report: written by `rexrank generate`, read by the scoring harness, and
# spelled once, in the module that owns the ReXrank JSON format (generate may not import evaluation: a later stage).
FIELD_OWNER = "src/rexrank/data/rexrank_json.py"


def _field_literals(path: Path) -> list[str]:
    """Strings that spell the prediction field outside a docstring (a dict key, a ``.get`` argument, a constant)."""
    from rexrank.data.rexrank_json import MODEL_PREDICTION

    walked = source_scan.nodes(path)
    docstrings = {id(node.body[0].value) for node in walked
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return [f"{path.name}:{node.lineno} {node.value!r}" for node in walked
            if isinstance(node, ast.Constant) and node.value == MODEL_PREDICTION and id(node) not in docstrings]


def test_the_prediction_field_is_spelled_by_its_owner_only(tmp_path, source_tree):
    found = [item for folder in SCANNED for path in sorted((REPO / folder).rglob("*.py"))
             if path.relative_to(REPO).as_posix() != FIELD_OWNER for item in _field_literals(path)]
    assert not found, "read rexrank.data.rexrank_json.MODEL_PREDICTION instead:\n" + "\n".join(found)
    # The scan sees what the generate stage once wrote, and lets a docstring name the field.
    old = tmp_path / "old.py"
    old.write_text('"""Adds "model_prediction" to each study."""\n'
                   'def merge(record, entry):\n'
                   '    """Reads model_prediction."""\n'
                   '    return record | {"model_prediction": entry.get("model_prediction")}\n')
    assert [item.split()[0] for item in _field_literals(old)] == ["old.py:4", "old.py:4"]


def test_catalog_is_light_and_data_imports_no_later_stage(source_tree):
    """The leaderboard and the Space read the catalog without loading `datasets` or torch; `data` is stage one."""
    import subprocess
    import sys

    code = ("import sys, rexrank.leaderboard.store, rexrank.leaderboard.published, rexrank.evaluation.references;"
            "heavy = {'datasets', 'torch'} & set(sys.modules); assert not heavy, heavy")
    subprocess.run([sys.executable, "-c", code], check=True)
    later = ("rexrank.evaluation", "rexrank.leaderboard", "rexrank.generate", "rexrank.cli")
    for path in (REPO / "src" / "rexrank" / "data").rglob("*.py"):
        for node in source_scan.nodes(path):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            assert not [m for m in modules if m.startswith(later)], f"{path} imports a later stage: {modules}"

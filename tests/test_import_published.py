"""Issue 49 point 6: `import-published` guards the board.

A host's tables are hostile input like any other: a header-only file must not empty the board with exit 0, an
oversized cell or a model listed twice is one clear line (nothing written), names and URLs pass the rules a
submission's pass, `--dry-run` shows the sync without writing, and a row changes only when its numbers do (cells
compared as numbers, never rounded when read).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rexrank.leaderboard.published import MAX_TABLE_BYTES, bundled_tables, import_published
from rexrank.leaderboard.store import Store

TABLE = "findings_result_iu_xray.csv"


def _lines() -> list[str]:
    return (bundled_tables() / TABLE).read_text(encoding="utf-8").splitlines()


def _write(folder: Path, lines: list[str]) -> Path:
    folder.mkdir(exist_ok=True)
    (folder / TABLE).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def _imported(tmp_path: Path, cli) -> Path:
    store_path = tmp_path / "board.sqlite"
    code, text = cli("leaderboard", "import-published", str(_write(tmp_path / "first", _lines())),
                     "--store", str(store_path))
    assert code == 0 and text.startswith("31 added"), text
    return store_path


def _shown(store_path: Path) -> set[str]:
    return {item["model_name"] for item in Store(store_path).results("iu_xray", "findings")}


def _cells(line: str) -> list[str]:
    return line.split(",")


def test_a_header_only_table_withdraws_nothing_without_allow_withdraw(tmp_path, cli):
    """Before: exit 0, '0 added, 0 changed, 31 withdrawn' and an empty board."""
    store_path = _imported(tmp_path, cli)
    events = len(Store(store_path).events())
    header_only = _write(tmp_path / "truncated", _lines()[:1])
    code, text = cli("leaderboard", "import-published", str(header_only), "--store", str(store_path))
    assert code == 2 and len(text.splitlines()) == 1 and "Traceback" not in text, text
    assert "would withdraw 31 of the 31 models iu_xray/findings lists (more than half): nothing written" in text
    assert "--allow-withdraw" in text
    assert len(_shown(store_path)) == 31 and len(Store(store_path).events()) == events
    # Half is allowed (a real upstream change drops a few models), more than half needs the host's word.
    half = _write(tmp_path / "half", _lines()[:17])
    code, text = cli("leaderboard", "import-published", str(half), "--store", str(store_path), "--dry-run")
    assert code == 0 and "would be 0 added, 0 changed, 15 withdrawn, 16 unchanged" in text, text
    code, text = cli("leaderboard", "import-published", str(header_only), "--store", str(store_path),
                     "--allow-withdraw")
    assert code == 0 and text.startswith("0 added, 0 changed, 31 withdrawn"), text
    assert _shown(store_path) == set()


def test_dry_run_prints_the_sync_and_writes_nothing(tmp_path, cli):
    store_path = _imported(tmp_path, cli)
    store = Store(store_path)
    events, generation = len(store.events()), store.generation()
    lines = _lines()
    header = _cells(lines[0])
    rows = [_cells(line) for line in lines[1:]]
    rows = [r for r in rows if r[2] != "CheXagent"]
    changed = next(r for r in rows if r[2] == "MedGemma")
    changed[header.index("GREEN")] = "0.777"
    new = ["32", "2026", "NewModel-X", "Somewhere", "https://example.org/x", *["0.5"] * (len(header) - 5)]
    later = _write(tmp_path / "later", [lines[0], *(",".join(r) for r in rows), ",".join(new)])
    code, text = cli("leaderboard", "import-published", str(later), "--store", str(store_path), "--dry-run")
    assert code == 0, text
    assert text.splitlines()[0] == ("dry run, nothing written: would be 1 added, 1 changed, 1 withdrawn, "
                                    "29 unchanged (31 rows from 1 tables)")
    assert {"  change: iu_xray/findings MedGemma", "  add: iu_xray/findings NewModel-X",
            "  withdraw: iu_xray/findings CheXagent"} <= set(text.splitlines())
    assert len(store.events()) == events and store.generation() == generation
    assert "CheXagent" in _shown(store_path) and "NewModel-X" not in _shown(store_path)
    # The real run does what the dry run said.
    code, text = cli("leaderboard", "import-published", str(later), "--store", str(store_path))
    assert text.splitlines()[0] == "1 added, 1 changed, 1 withdrawn, 29 unchanged (31 rows from 1 tables)"
    # A dry run into a store that does not exist yet does not create it; a refused sync's dry run says so, exit 2.
    fresh = tmp_path / "fresh.sqlite"
    code, text = cli("leaderboard", "import-published", str(later), "--store", str(fresh), "--dry-run")
    assert code == 0 and "would be 31 added" in text and not fresh.exists()
    code, text = cli("leaderboard", "import-published", str(_write(tmp_path / "empty", _lines()[:1])),
                     "--store", str(store_path), "--dry-run")
    assert code == 2 and text.count("  withdraw: iu_xray/findings ") == 31
    assert "error: the sync would be refused: " in text and "Traceback" not in text
    assert len(_shown(store_path)) == 31


def test_an_oversized_cell_or_file_is_one_line_and_nothing_is_written(tmp_path, cli):
    """Before: a cell over the csv module's field limit was a traceback ('field larger than field limit')."""
    lines = _lines()
    first = _cells(lines[1])
    first[3] = "x" * 200_000
    folder = _write(tmp_path / "big_cell", [lines[0], ",".join(first), *lines[2:]])
    store_path = tmp_path / "board.sqlite"
    code, text = cli("leaderboard", "import-published", str(folder), "--store", str(store_path))
    assert code == 2 and len(text.splitlines()) == 1 and "Traceback" not in text, text
    assert f"{TABLE}: line 2: a cell longer than 131,072 characters" in text and not store_path.exists()
    first[3] = "x" * (MAX_TABLE_BYTES + 1)  # the 10 MB cell: refused by the file's size, before reading
    folder = _write(tmp_path / "huge", [lines[0], ",".join(first), *lines[2:]])
    code, text = cli("leaderboard", "import-published", str(folder), "--store", str(store_path))
    assert code == 2 and len(text.splitlines()) == 1 and "a published table can be" in text, text
    assert not store_path.exists()


def test_a_model_listed_twice_is_one_line_naming_both_rows(tmp_path, cli):
    """Before: the last row won without a word. Names compare as the store compares them (records.name_key)."""
    lines = _lines()
    again = _cells(lines[5])
    again[2] = f" {again[2].lower()} "
    store_path = tmp_path / "board.sqlite"
    folder = _write(tmp_path / "twice", [*lines, ",".join(again)])
    code, text = cli("leaderboard", "import-published", str(folder), "--store", str(store_path))
    name = _cells(lines[5])[2]
    assert code == 2 and len(text.splitlines()) == 1 and "Traceback" not in text, text
    assert (f"{TABLE}: {name!r} and {name.lower()!r} (the same name to the board) on lines 6 and {len(lines) + 1}: "
            "keep one row per model") in text
    assert not store_path.exists()


def test_names_and_urls_pass_the_submission_rules(tmp_path, cli):
    """Before: a markup name and a javascript: URL were stored as published. Now each such row is skipped with a
    note (the rules of records.ModelInfo.from_dict, as a submission's details); a model already on the board whose
    new row is refused stays listed, with its old row."""
    store_path = _imported(tmp_path, cli)
    lines = _lines()
    header = _cells(lines[0])
    rows = [_cells(line) for line in lines[1:]]
    rows[0][header.index("Model URL")] = "javascript:alert(1)"
    rows[0][header.index("BLEU")] = "0.2"  # a changed row, so it would be stored if its URL passed
    markup = ["32", "2026", "Evil [click](https://x.example)", "Somewhere", "https://example.org", *rows[1][5:]]
    tagged = ["33", "2026", "Fine-Model", "<script>alert(1)</script>", "https://example.org", *rows[2][5:]]
    folder = _write(tmp_path / "hostile", [lines[0], *(",".join(r) for r in rows), ",".join(markup),
                                           ",".join(tagged)])
    code, text = cli("leaderboard", "import-published", str(folder), "--store", str(store_path))
    assert code == 0, text
    assert text.splitlines()[0] == "1 added, 0 changed, 0 withdrawn, 30 unchanged (33 rows from 1 tables)"
    assert "line 2 not imported: url must start with http:// or https://" in text
    assert "line 33 not imported: the model name contains markup characters" in text
    shown = Store(store_path).results("iu_xray", "findings")
    by_name = {item["model_name"]: item for item in shown}
    first = rows[0][2]
    assert first in by_name and by_name[first]["record"]["model"]["url"].startswith("https://")
    assert not any("[" in name for name in by_name)
    assert by_name["Fine-Model"]["record"]["model"]["institution"] == "‹script›alert(1)‹/script›"


def test_a_row_changes_only_when_its_numbers_do_and_cells_are_never_rounded(tmp_path, cli):
    """Before: '0.1160' for '0.116' counted the row as changed and stored it again (the raw cell text was part of
    the row's key). A cell with more than 3 decimals is stored as written: reading it rounded to 3 decimals (a
    known mutation) would miss the change from 0.1231 to 0.1234 and store 0.123."""
    store_path = _imported(tmp_path, cli)
    store = Store(store_path)
    events = len(store.events())
    lines = _lines()
    header = _cells(lines[0])
    numeric = range(header.index("BLEU"), len(header))
    padded = [lines[0]] + [",".join(c + "0" if i in numeric else c for i, c in enumerate(_cells(line)))
                           for line in lines[1:]]
    code, text = cli("leaderboard", "import-published", str(_write(tmp_path / "padded", padded)),
                     "--store", str(store_path))
    assert code == 0 and text.splitlines()[0] == "0 added, 0 changed, 0 withdrawn, 31 unchanged (31 rows from 1 " \
                                                 "tables)", text
    assert len(store.events()) == events

    def bleu(value: str) -> list[str]:
        first = _cells(lines[1])
        first[header.index("BLEU")] = value
        return [lines[0], ",".join(first), *lines[2:]]

    name = _cells(lines[1])[2]
    for value, expected in (("0.1231", "1 changed"), ("0.12310", "0 changed"), ("0.1234", "1 changed")):
        code, text = cli("leaderboard", "import-published", str(_write(tmp_path / value, bleu(value))),
                         "--store", str(store_path))
        assert code == 0 and expected in text.splitlines()[0], (value, text)
        stored = next(i for i in store.results("iu_xray", "findings") if i["model_name"] == name)
        assert stored["record"]["metrics"]["bleu2"]["mean"] == pytest.approx(float(value), abs=0)


def test_the_library_call_is_guarded_too(tmp_path, store):
    """`import_published` (the Python API) refuses the same sync the command refuses, and takes the same word."""
    from rexrank.errors import InputError

    import_published(store, _write(tmp_path / "first", _lines()))
    empty = _write(tmp_path / "empty", _lines()[:1])
    with pytest.raises(InputError, match="would withdraw 31 of the 31 models"):
        import_published(store, empty)
    assert import_published(store, empty, dry_run=True)["withdrawn"] == 31
    assert len(store.results("iu_xray", "findings")) == 31
    assert import_published(store, empty, allow_withdraw=True)["withdrawn"] == 31
    assert store.results("iu_xray", "findings") == []

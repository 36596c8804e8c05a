"""Issue 36 point 6: tests/README.md maps every source module to the test files that exercise it, and stays true."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_ROW = re.compile(r"^\| `(rexrank(?:\.\w+)*)` \| (.+) \|$")


def modules() -> set[str]:
    names = set()
    for path in (ROOT / "src").rglob("*.py"):
        parts = list(path.relative_to(ROOT / "src").with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names.add(".".join(parts))
    return names


def map_rows(text: str) -> dict[str, list[str]]:
    rows: dict[str, list[str]] = {}
    for line in text.splitlines():
        match = _ROW.match(line)
        if match:
            assert match.group(1) not in rows, f"tests/README.md maps {match.group(1)} twice"
            rows[match.group(1)] = re.findall(r"`(test_\w+\.py)`", match.group(2))
    return rows


def test_every_module_has_a_row_naming_test_files_that_exist():
    rows = map_rows((ROOT / "tests" / "README.md").read_text())
    present = modules()
    add, remove = sorted(present - rows.keys()), sorted(rows.keys() - present)
    assert not add and not remove, (f"tests/README.md's module map: add rows for {add}; remove the rows of {remove} "
                                    "(| `module` | `test_file.py`, ... |)")
    empty = sorted(module for module, files in rows.items() if not files)
    missing = sorted({(module, name) for module, files in rows.items() for name in files
                      if not (ROOT / "tests" / name).is_file()})
    assert not empty and not missing, f"rows naming no test file: {empty}; test files that do not exist: {missing}"


def test_the_map_check_sees_a_missing_row_and_a_dead_file():
    text = "| `rexrank.errors` | `test_no_such_file.py` |\n| `rexrank.errors` | `test_foundation.py` |"
    try:
        map_rows(text)
    except AssertionError as error:
        assert "twice" in str(error)
    else:
        raise AssertionError("a module mapped twice was not noticed")
    assert map_rows("| `rexrank.errors` | `test_foundation.py` (through `x`) |") == {"rexrank.errors": ["test_foundation.py"]}

"""Hosting the board for real (issue 49 points 2 and 3): where it listens, its start line, backups, and the Space
bundle installed from its requirements alone into a new virtualenv and started as a Space starts it."""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from leaderboard_helpers import free_port
from rexrank.errors import RexrankError
from rexrank.leaderboard.hosting import gaps, listen_address, start_line
from rexrank.leaderboard.published import import_tables, read_tables, seed_store
from rexrank.leaderboard.store import Store

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("env, expected", [
    ({}, ("127.0.0.1", 7860)),
    ({"SPACE_ID": "org/board"}, ("0.0.0.0", 7860)),
    ({"SPACE_ID": "org/board", "GRADIO_SERVER_NAME": "127.0.0.1", "GRADIO_SERVER_PORT": "8123"}, ("127.0.0.1", 8123)),
    ({"GRADIO_SERVER_NAME": "::1", "PORT": "9000"}, ("::1", 9000)),
    ({"GRADIO_SERVER_PORT": "8001", "PORT": "9000"}, ("127.0.0.1", 8001)),
])
def test_the_board_listens_on_gradios_variables_and_everywhere_only_in_a_space(monkeypatch, env, expected):
    for name in ("SPACE_ID", "GRADIO_SERVER_NAME", "GRADIO_SERVER_PORT", "PORT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert listen_address() == expected


def test_a_port_that_is_not_a_number_is_one_line(monkeypatch):
    monkeypatch.setenv("GRADIO_SERVER_PORT", "http")
    with pytest.raises(SystemExit, match="GRADIO_SERVER_PORT='http' is not a port"):
        listen_address()


def _store_with_findings_only(path: Path) -> Store:
    """A host's store that imported upstream's Findings tables only (issue 49: empty Findings + Impression tabs)."""
    from rexrank.leaderboard.published import bundled_tables

    store = Store(path)
    tables, notes = read_tables(sorted(bundled_tables().glob("findings_result_*.csv")))
    import_tables(store, tables, notes=notes)
    return store


def test_the_start_line_names_a_track_the_host_did_not_import(tmp_path):
    store = _store_with_findings_only(tmp_path / "b.sqlite")
    holes = gaps(store, "2026")
    assert len(holes) == 1 and "Findings + Impression track has no rows" in holes[0]
    line = start_line(store, None, None, "127.0.0.1", 7860)
    assert "missing: the Findings + Impression track has no rows" in line and "persisted on this disk only" in line
    assert "\n" not in line
    store.close()


def test_the_start_line_names_an_editions_empty_column(tmp_path):
    """`serve --edition 2025` on a store of today's rows: the 2025 edition's 1/FineRadScore column has no value in
    any row (issue 49: a column of dashes, silently); today's edition on the same store lacks nothing it has."""
    store = Store(tmp_path / "b.sqlite")
    seed_store(store)
    holes = gaps(store, "2025")
    assert holes and all("1/FineRadScore" in hole and "edition 2025" in hole for hole in holes), holes
    assert not [hole for hole in gaps(store, "2026") if "FineRadScore" in hole]
    store.close()


def test_a_seeded_board_starts_with_nothing_missing(tmp_path, monkeypatch):
    monkeypatch.setenv("SPACE_ID", "org/board")
    store = Store(tmp_path / "b.sqlite")
    seed_store(store)
    line = start_line(store, None, None, "0.0.0.0", 7860, arena=True)
    assert "missing" not in line and "; seeded)" in line and "Arena on" in line
    assert "a Space's disk is wiped at a restart" in line
    store.close()


def test_a_backup_is_whole_owner_only_and_never_overwrites(tmp_path):
    store = Store(tmp_path / "b.sqlite")
    seed_store(store)
    n = len(store.results())
    out = store.backup(tmp_path / "copy.sqlite")
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    assert not Path(f"{out}-wal").exists()  # one self-contained file
    copy = Store(out)
    assert len(copy.results()) == n and copy.integrity_check() == "ok"
    copy.close()
    # Writes still in the store's -wal are in the backup (a plain copy of the main file can miss them).
    store.set_meta("late", 1)
    assert Path(f"{store.path}-wal").stat().st_size > 0
    late = store.backup(tmp_path / "late.sqlite")
    with sqlite3.connect(late) as conn:
        assert conn.execute("SELECT value FROM meta WHERE key = 'late'").fetchone() == ("1",)
    for bad, fragment in ((out, "never overwrites"), (store.path, "exists"),
                          (tmp_path / "nope" / "x.sqlite", "not a folder")):
        with pytest.raises(RexrankError, match=fragment):
            store.backup(bad)
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no half copies left
    store.close()


def _get(url: str, timeout: float = 5.0) -> bytes:
    with urllib.request.urlopen(url, timeout=timeout) as answer:  # noqa: S310 - loopback only
        return answer.read()


@pytest.mark.slow
def test_the_space_bundle_installs_from_its_requirements_alone_and_serves_the_seeded_board(tmp_path, monkeypatch):
    """`publish-leaderboard`'s bundle, pushed to a loopback Hub: a new virtualenv installs it from requirements.txt
    alone (rexrank's wheel and the lock come from the Space repo's URLs), and app.py, started as a Space starts it,
    serves the seeded board and prints its start line. Fails before issue 49: the requirements named `rexrank[space]`,
    which no index serves, and app.py bound 0.0.0.0 whatever gradio's variables said."""
    from huggingface_hub import HfApi, constants

    from rexrank.evaluate_modules import publish as hub_publish
    from rexrank.testing.loopback_hub import LoopbackHub

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    with LoopbackHub() as server:
        server.add_user("host", "hf_loopback_host", orgs=["org"])
        monkeypatch.setattr(constants, "ENDPOINT", server.endpoint)
        plans = [hub_publish.leaderboard_plan("org/board")]
        hub_publish.publish(plans, token="hf_loopback_host", log=lambda _: None,
                            api_factory=lambda token: HfApi(endpoint=server.endpoint, token=token))
        files = server.repo("org/board", repo_type="space").files
        requirements = files["requirements.txt"].decode()
        assert f"-c {server.endpoint}/spaces/org/board/resolve/main/constraints.txt" in requirements
        assert files["constraints.txt"] == (ROOT / "constraints.txt").read_bytes()
        space = tmp_path / "space"
        space.mkdir()
        for name in ("app.py", "README.md", "requirements.txt"):
            (space / name).write_bytes(files[name])
        venv = tmp_path / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        # This machine reaches PyPI only: the requirements' page of PyTorch's CPU index fails to resolve, and pip
        # asks it again for every package, so its retries (5, with backoff) are turned off; torch comes from PyPI's
        # mirror here as a CPU wheel (the pin is the same).
        install = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "-r", "requirements.txt"], cwd=space,
                                 capture_output=True, text=True, timeout=1200, env={**os.environ, "PIP_RETRIES": "0"})
        assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]
    # The stack the suite runs on, not the newest releases.
    frozen = subprocess.run([str(venv / "bin" / "pip"), "freeze"], capture_output=True, text=True).stdout
    for pin in ("torch==2.13.0", "transformers==", "gradio=="):
        locked = next(line for line in (ROOT / "constraints.txt").read_text().splitlines() if line.startswith(pin))
        assert any(line.split("+")[0] == locked for line in frozen.splitlines()), (locked, frozen)
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GRADIO_", "REXRANK_", "VIRTUAL_ENV"))}
    env.update(SPACE_ID="org/board", GRADIO_SERVER_NAME="127.0.0.1", GRADIO_SERVER_PORT=str(port),
               REXRANK_STORE=str(tmp_path / "data" / "leaderboard.sqlite"), HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1")
    log = tmp_path / "space.log"
    with log.open("w") as out:
        process = subprocess.Popen([str(venv / "bin" / "python"), "app.py"], cwd=space, env=env, stdout=out,
                                   stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 240
            while True:
                try:
                    csv = _get(f"http://127.0.0.1:{port}/csv/iu_xray/findings")
                    break
                except OSError:
                    assert process.poll() is None and time.monotonic() < deadline, log.read_text()[-3000:]
                    time.sleep(1)
            assert b"MedVersa" in csv and csv.count(b"\n") > 10, csv[:500]
            deadline = time.monotonic() + 30
            while "rexrank board on" not in log.read_text() and time.monotonic() < deadline:
                time.sleep(0.5)
        finally:
            process.terminate()
            process.wait(30)
    started = [line for line in log.read_text().splitlines() if "rexrank board on" in line]
    assert len(started) == 1 and f"http://127.0.0.1:{port}" in started[0] and "seeded" in started[0], started


def test_the_page_says_what_an_import_left_out(tmp_path):
    """Issue 49 point 3: a host who imported upstream's Findings tables only: the Findings + Impression tables say
    why they are empty (before: "No results ... yet" and no word about the import)."""
    from rexrank.leaderboard.views import Views

    store = _store_with_findings_only(tmp_path / "b.sqlite")
    views = Views(store, None)
    empty = views.page_table("mimic_cxr", "findings_impression").empty
    assert "imported the published ReXrank tables of other tracks only" in empty and "Findings + Impression" in empty
    assert views.page_table("mimic_cxr", "findings").empty == ""
    store.close()
    seeded = Store(tmp_path / "s.sqlite")  # a seeded store has every track: no such note anywhere
    seed_store(seeded)
    assert Views(seeded, None).page_table("iu_xray", "findings_impression").empty == ""
    seeded.close()


def test_the_page_names_an_editions_column_no_row_fills(tmp_path):
    """`serve --edition 2025` over today's rows: the table's label names 1/FineRadScore (before: dashes, silently)."""
    from rexrank.leaderboard.editions import choose_edition
    from rexrank.leaderboard.views import Views

    store = Store(tmp_path / "b.sqlite")
    seed_store(store)
    assert "no row has a value" not in Views(store, None).page_table("iu_xray", "findings").label
    choose_edition(store, "2025")
    label = Views(store, None).page_table("iu_xray", "findings").label
    assert "no row has a value of 1/FineRadScore (edition 2025)" in label, label
    store.close()


def test_the_backup_command(cli, tmp_path):
    store = Store(tmp_path / "b.sqlite")
    seed_store(store)
    store.close()
    code, out = cli("leaderboard", "backup", str(tmp_path / "copy.sqlite"), "--store", str(tmp_path / "b.sqlite"))
    assert code == 0 and "backed up" in out and (tmp_path / "copy.sqlite").is_file(), out
    for args, fragment in (([str(tmp_path / "copy.sqlite"), "--store", str(tmp_path / "b.sqlite")], "never overwrites"),
                           ([str(tmp_path / "x.sqlite"), "--store", str(tmp_path / "none.sqlite")], "no store at")):
        code, out = cli("leaderboard", "backup", *args)
        assert code == 2 and fragment in out and "Traceback" not in out, out
    assert not (tmp_path / "none.sqlite").exists()  # a mistyped --store is not created

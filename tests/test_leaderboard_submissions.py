"""Submissions are safe by construction: model names have owners, results their provenance, quotas count every
attempt whose file is read, uploads are size-limited, owner-only while queued and deleted once handled, names are
plain text, duplicates are parsed content."""

from __future__ import annotations

import json
import os
import stat
import threading
import time
from pathlib import Path

import pytest

from leaderboard_helpers import STATE_CEILING_S, iu_predictions, running_space, wait_until
from rexrank.errors import InputError
from rexrank.leaderboard import board
from rexrank.leaderboard.published import bundled_tables, import_published
from rexrank.leaderboard.records import (
    HOST,
    MetricValue,
    ModelInfo,
    Provenance,
    ResultRecord,
    hidden_characters,
    name_key,
)
from rexrank.leaderboard.store import (
    DuplicateSubmission,
    NameTaken,
    QuotaExceeded,
    Store,
)
from rexrank.leaderboard.submissions import ANONYMOUS, DEFAULT_MAX_UPLOAD_MB, ORPHAN_GRACE_S, LoginRequired, Submissions

EVIL = {"name": "MedVersa", "institution": "Evil Corp", "url": "https://phish.example/login", "year": 2099}


@pytest.fixture
def seeded(tmp_path):
    store = Store(tmp_path / "board.sqlite")
    import_published(store, bundled_tables())
    yield store
    store.close()


@pytest.fixture
def service(seeded, tmp_path):
    return Submissions(seeded, tmp_path / "queue", n_resamples=50)


def _medversa(store: Store) -> tuple[dict, list[tuple]]:
    """MedVersa's registered details and its board rows (dataset, track, source, BLEU-2 mean)."""
    model = store.model("MedVersa")
    rows = sorted((r["dataset"], r["track"], r["source"], r["metrics"]["bleu2"]["mean"])
                  for r in store.results(model="MedVersa"))
    return {k: model[k] for k in ("name", "owner", "institution", "url", "year")}, rows


def _files(folder: Path) -> list[Path]:
    """The files under ``folder`` now. A folder the Space removes while it is read (the upload cap deletes an evicted
    upload's folder as a later upload arrives) is passed over (os.walk skips what vanished), never an error."""
    return sorted(Path(root, name) for root, _, names in os.walk(folder) for name in names
                  if Path(root, name).is_file())


# -- identity and ownership ---------------------------------------------------------------------------------------
def test_published_name_cannot_be_hijacked_through_a_submission(seeded, service, tmp_path):
    before = _medversa(seeded)
    assert before[0]["owner"] == HOST and before[0]["institution"] != "Evil Corp"
    path = iu_predictions(tmp_path / "x.json", n_shift=4)
    for user in (None, "mallory"):
        with pytest.raises(NameTaken) as err:
            service.submit(path, EVIL, "iu_xray", "findings", user=user)
        message = str(err.value)
        assert "'MedVersa' is already registered by the leaderboard host" in message
        assert "Choose another name" in message and "log in" in message
    assert _medversa(seeded) == before  # details (institution, link, year) and rows untouched
    assert seeded.counts()["submissions"] == 0 and _files(tmp_path / "queue") == []
    with pytest.raises(NameTaken):  # the store refuses it too, whatever path a result takes
        seeded.add_result(ResultRecord(model=ModelInfo.from_dict(EVIL), dataset="iu_xray", split="test",
                                       track="findings", source="submission", metrics={"bleu2": MetricValue(0.0)}),
                          provenance=Provenance("hf:mallory", "space"))
    assert _medversa(seeded) == before


@pytest.mark.parametrize("name", ["MedVersa ", " medversa", "MedVersa\u00a0", "ＭedVersa", "MEDVERSA", "МedVersa",
                                  "MedVеrsa", "Ｍｅｄｖｅｒｓａ"])
def test_lookalike_names_are_the_same_name(seeded, service, tmp_path, name):
    """Case, width, spacing and Cyrillic/Greek look-alike letters: all MedVersa."""
    assert name_key(name) == name_key("MedVersa")
    with pytest.raises(NameTaken, match="already registered by the leaderboard host"):
        service.submit(iu_predictions(tmp_path / "x.json", n_shift=4), {**EVIL, "name": name}, "iu_xray",
                       "findings", user="mallory")
    assert seeded.counts()["submissions"] == 0 and _medversa(seeded)[0]["institution"] != "Evil Corp"


@pytest.mark.parametrize("name", ["Med\u200bVersa", "MedVersa\u202e", "\u2066MedVersa\u2069", "Med\u00adVersa",
                                  "MedVersa\x00", "Med\ufe0fVersa", "Med\u3164Versa", "Good\u202eledoM"])
def test_names_with_invisible_or_bidi_characters_are_refused(service, tmp_path, name):
    assert hidden_characters(name)
    with pytest.raises(InputError, match="invisible or control characters \\(U\\+[0-9A-F]{4}"):
        ModelInfo.from_dict({"name": name})
    with pytest.raises(InputError, match="invisible or control characters"):
        service.submit(iu_predictions(tmp_path / "x.json", n_shift=4), {"name": name}, "iu_xray", "findings")


def test_other_fields_lose_hidden_characters():
    info = ModelInfo.from_dict({"name": "Plain", "institution": "Uni\u202eversity\u200b", "model_type": "V\u2066LM"})
    assert (info.institution, info.model_type) == ("University", "VLM")


def test_the_chosen_files_name_is_shown_as_text():
    """The Submit form names the file under its button: the user's own file name, made plain text (no markup, no
    link); no file, a line saying so."""
    from rexrank.leaderboard.views import NO_FILE_CHOSEN, chosen_file

    assert chosen_file(None) == NO_FILE_CHOSEN
    assert chosen_file("/tmp/gradio/ab12/preds_v2.json") == r"Chosen: **preds\_v2.json**"
    shown = chosen_file("/tmp/gradio/ab12/[x](https:evil)<img src=x>.json")
    assert "<" not in shown and "&lt;img" in shown and r"\[x\](" in shown  # HTML and a link's brackets escaped


def test_another_teams_name_details_and_provenance(seeded, service, tmp_path):
    """alice registers TeamX; bob (or anyone anonymous) cannot submit under it; alice can, but the model's details
    stay as registered; every row keeps its own provenance and the board shows alice's newest."""
    first = iu_predictions(tmp_path / "a1.json", n_shift=1)
    job1 = service.submit(first, {"name": "TeamX", "institution": "Team X Lab", "year": 2025}, "iu_xray",
                          "findings", user="Alice")
    assert service.work_once()
    model = seeded.model("teamx")
    assert model["name"] == "TeamX" and model["owner"] == "hf:alice"

    garbage = iu_predictions(tmp_path / "x.json", n_shift=2, corrupt=None)
    garbage.write_text(json.dumps({sid: "x" for sid in json.loads(garbage.read_text())}))
    for user in ("bob", None):
        for name in ("TeamX", "teamx ", "ТeamX"):  # the last with a Cyrillic Т
            with pytest.raises(NameTaken, match="already registered by Hugging Face user alice"):
                service.submit(garbage, {"name": name, "institution": "Bob Inc"}, "iu_xray", "findings", user=user)

    second = iu_predictions(tmp_path / "a2.json", n_shift=5)
    job2, note = service.submit_with_note(second, {"name": "TeamX", "institution": "Renamed", "url":
                                                   "https://other.example"}, "iu_xray", "findings", user="alice")
    assert "details" in note and "stay as registered" in note
    assert service.work_once()
    jobs = {j["id"]: j for j in seeded.submissions()}
    assert jobs[job1]["status"] == jobs[job2]["status"] == "done", [j["error"] for j in jobs.values()]
    model = seeded.model("TeamX")
    assert (model["institution"], model["url"], model["year"]) == ("Team X Lab", None, 2025)

    history = seeded.results("iu_xray", "findings", model="TeamX", latest=False, include_hidden=True)
    assert [(r["submitted_by"], r["submitted_via"], r["submission_id"]) for r in history] == [
        ("hf:alice", "space", job1), ("hf:alice", "space", job2)]
    assert all(r["submitted_at"] == jobs[r["submission_id"]]["created_at"] for r in history)
    assert all(r["record"]["model"]["institution"] == "Team X Lab" for r in history)  # stored with registered details
    shown = board.numeric_table(seeded, "iu_xray", "findings")
    row = shown[shown["model"] == "TeamX"]
    assert len(row) == 1 and row.iloc[0]["institution"] == "Team X Lab"
    assert row.iloc[0]["bleu2"] == pytest.approx(history[-1]["metrics"]["bleu2"]["mean"])


def test_anonymous_may_register_a_new_name_but_never_reuse_one(seeded, service, tmp_path):
    job = service.submit(iu_predictions(tmp_path / "a.json", n_shift=1), {"name": "Anon Model"}, "iu_xray",
                         "findings")
    assert seeded.model("Anon Model")["owner"] == f"anon:{job}"
    for user in (None, "alice"):
        with pytest.raises(NameTaken, match="already registered by an anonymous submission"):
            service.submit(iu_predictions(tmp_path / "b.json", n_shift=2), {"name": "anon model"}, "iu_xray",
                           "findings", user=user)
    assert service.work_once() and seeded.submissions()[0]["status"] == "done"  # its own result is stored
    assert [r["submitted_by"] for r in seeded.results(model="Anon Model")] == [f"anon:{job}"]


def test_board_shows_only_rows_the_owner_added(seeded):
    """A row under a name that its owner (or the host) did not add never reaches the board, even when newer."""
    owner_row = seeded.results("iu_xray", "findings", model="MedVersa")[0]
    with seeded.transaction() as conn:  # as an old store may hold it: a submission that replaced the row
        conn.execute("INSERT INTO results(model_id, dataset, split, track, source, metrics, content_hash, created_at,"
                     " submitted_by, submitted_via) VALUES (?, 'iu_xray', 'test', 'findings', 'published',"
                     " '{\"bleu2\": {\"mean\": 0.0}}', 'forged', 0, 'anon:9', 'space')", (owner_row["model_id"],))
    assert seeded.results("iu_xray", "findings", model="MedVersa")[0]["id"] == owner_row["id"]
    df = board.numeric_table(seeded, "iu_xray", "findings")
    assert df[df["model"] == "MedVersa"]["bleu2"].tolist() == [pytest.approx(owner_row["metrics"]["bleu2"]["mean"])]
    assert len(seeded.results("iu_xray", "findings", model="MedVersa", latest=False, include_hidden=True)) == 2


def test_host_edits_details_and_hands_over_names_explicitly(seeded):
    with pytest.raises(NameTaken):
        seeded.add_result(ResultRecord(model=ModelInfo(name="MedVersa"), dataset="iu_xray", split="test",
                                       track="findings", source="rexrank", metrics={"bleu2": MetricValue(0.3)}),
                          provenance=Provenance("hf:alice", "space"))
    seeded.edit_model("medversa", institution="Microsoft Research", owner="hf:alice")
    model = seeded.model("MedVersa")
    assert (model["institution"], model["owner"]) == ("Microsoft Research", "hf:alice")
    seeded.add_result(ResultRecord(model=ModelInfo(name="MedVersa", institution="ignored"), dataset="iu_xray",
                                   split="test", track="findings", source="rexrank",
                                   metrics={"bleu2": MetricValue(0.3)}), provenance=Provenance("hf:alice", "space"))
    assert seeded.model("MedVersa")["institution"] == "Microsoft Research"
    sources = {r["source"]: r["submitted_by"] for r in seeded.results("iu_xray", "findings", model="MedVersa")}
    assert sources == {"published": HOST, "rexrank": "hf:alice"}  # the host's published row stays on the board


def test_cli_add_acts_as_the_host(seeded, tmp_path):
    from typer.testing import CliRunner

    from rexrank.cli.leaderboard import app

    results = tmp_path / "results.json"
    results.write_text(json.dumps({"dataset": "iu_xray", "split": "test", "track": "findings", "n_studies": 590,
                                   "metrics": {"bleu2": {"mean": 0.2, "ci_low": 0.18, "ci_high": 0.22}}}))
    seeded.add_result(ResultRecord(model=ModelInfo(name="Alices"), dataset="iu_xray", split="test", track="findings",
                                   source="submission", metrics={"bleu2": MetricValue(0.1)}),
                      provenance=Provenance("hf:alice", "space"))
    runner = CliRunner()
    taken = runner.invoke(app, ["add", str(results), "--name", "alices", "--store", str(seeded.path),
                                "--allow-unofficial-weights"])
    assert taken.exit_code != 0 and "registered by Hugging Face user alice" in str(taken.exception)
    edited = runner.invoke(app, ["edit-model", "MedVersa", "--institution", "Host Edit", "--store", str(seeded.path)])
    assert edited.exit_code == 0, edited.output
    assert seeded.model("MedVersa")["institution"] == "Host Edit"


# -- quotas -------------------------------------------------------------------------------------------------------
@pytest.fixture
def failing_validation(monkeypatch):
    from rexrank.evaluation import inputs
    from rexrank.evaluation.predictions import Problems, ValidationError

    def fake_load_inputs(*args, **kwargs):
        problems = Problems(max_listed=5)
        problems.add("missing_id", "predictions", "secret-study-0001")
        raise ValidationError("predictions lack study secret-study-0001", problems)

    monkeypatch.setattr(inputs, "load_inputs", fake_load_inputs)


def test_private_quota_counts_rejected_attempts(tmp_path, failing_validation):
    store = Store(tmp_path / "s.sqlite")
    service = Submissions(store, tmp_path / "up", datasets=("iu_xray", "rexgradient"), private_quota=3)
    path = tmp_path / "p.json"
    path.write_text("{}")
    with pytest.raises(LoginRequired, match="private test set: log in with Hugging Face"):
        service.submit(path, {"name": "m"}, "rexgradient", "findings")
    for _ in range(3):
        with pytest.raises(InputError, match="do not match the test set"):
            service.submit(path, {"name": "m"}, "rexgradient", "findings", user="alice")
    with pytest.raises(QuotaExceeded, match="at most 3 submissions per user to rexgradient per 24 h, rejected ones"):
        service.submit(path, {"name": "m"}, "rexgradient", "findings", user="alice")
    with pytest.raises(QuotaExceeded):  # a refusal for the quota is not itself counted, but nothing passes
        service.submit(path, {"name": "other"}, "rexgradient", "findings", user="ALICE")
    with pytest.raises(InputError, match="do not match"):  # another user has their own quota
        service.submit(path, {"name": "m"}, "rexgradient", "findings", user="bob")
    attempts = store.attempts("hf:alice")
    assert [a["outcome"] for a in attempts] == ["rejected"] * 3 and all("1 problems" in a["reason"] for a in attempts)
    assert store.counts()["submissions"] == 0


def test_public_quota_counts_rejections_and_holds_under_concurrency(tmp_path, failing_validation):
    store = Store(tmp_path / "s.sqlite")
    service = Submissions(store, tmp_path / "up", rate_limit=2, anonymous_limit=4)
    path = tmp_path / "p.json"
    path.write_text("{}")
    junk = _write(tmp_path / "p.txt", "{}")
    for _ in range(3):  # refused before the file is read: not counted
        with pytest.raises(InputError, match="invisible"):
            service.submit(path, {"name": "bad\u202e"}, "iu_xray", "findings", user="carol")
        with pytest.raises(InputError, match="\\.json, \\.jsonl or \\.csv"):
            service.submit(junk, {"name": "m"}, "iu_xray", "findings", user="carol")
    for _ in range(2):  # read and rejected: counted
        with pytest.raises(InputError, match="lack study"):
            service.submit(path, {"name": "m"}, "iu_xray", "findings", user="carol")
    with pytest.raises(QuotaExceeded, match="at most 2 submissions per user per 24 h"):
        service.submit(path, {"name": "m"}, "iu_xray", "findings", user="carol")
    assert [a["outcome"] for a in store.attempts("hf:carol")] == ["rejected"] * 2
    outcomes: list[str] = []

    def anonymous():
        try:
            service.submit(path, {"name": "m"}, "iu_xray", "findings", client="203.0.113.5")
        except QuotaExceeded:
            outcomes.append("quota")
        except InputError:
            outcomes.append("rejected")

    threads = [threading.Thread(target=anonymous) for _ in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    # One anonymous client: its own quota, rejected files included, holds under concurrency; rejected files never
    # reach the total all anonymous clients share (issue 49 point 4).
    assert sorted(outcomes) == ["quota"] * 8 + ["rejected"] * 2
    assert store.attempts(ANONYMOUS) == []


def test_at_most_so_many_files_are_read_at_once(tmp_path, monkeypatch):
    """The Space's form is unqueued (issue 37: no console warning), so gradio's threads would read any number of
    uploads at once; the service reads at most ``SUBMISSIONS_AT_ONCE``, the others wait their turn."""
    from rexrank.evaluation import inputs
    from rexrank.evaluation.predictions import Problems, ValidationError
    from rexrank.leaderboard.limits import SUBMISSIONS_AT_ONCE

    reading, most, lock, release = [0], [0], threading.Lock(), threading.Event()

    def slow_load_inputs(*args, **kwargs):
        with lock:
            reading[0] += 1
            most[0] = max(most[0], reading[0])
        release.wait(STATE_CEILING_S)
        with lock:
            reading[0] -= 1
        problems = Problems(max_listed=5)
        problems.add("missing_id", "predictions", "study-0001")
        raise ValidationError("predictions lack study study-0001", problems)

    monkeypatch.setattr(inputs, "load_inputs", slow_load_inputs)
    service = Submissions(Store(tmp_path / "s.sqlite"), tmp_path / "up", rate_limit=100, anonymous_limit=100)
    # Files of different bytes: requests for one file's bytes are handled one at a time (a duplicate's answer).
    paths = [_write(tmp_path / f"p{k}.json", "{}" + " " * k) for k in range(SUBMISSIONS_AT_ONCE + 3)]
    refused: list[str] = []

    def submit(k: int):
        try:
            service.submit(paths[k], {"name": "m"}, "iu_xray", "findings", user=f"user{k}")
        except InputError as exc:
            refused.append(str(exc))

    threads = [threading.Thread(target=submit, args=(k,)) for k in range(SUBMISSIONS_AT_ONCE + 3)]
    for t in threads:
        t.start()
    wait_until(lambda: reading[0] >= SUBMISSIONS_AT_ONCE, f"{SUBMISSIONS_AT_ONCE} files being read")
    time.sleep(0.3)  # the others had time to start reading, were they allowed to
    assert most[0] == SUBMISSIONS_AT_ONCE
    release.set()
    for t in threads:
        t.join()
    assert len(refused) == len(threads) and most[0] == SUBMISSIONS_AT_ONCE  # each answered, in turn


def _junk_requests(tmp_path: Path, valid: Path) -> list[tuple[object, dict]]:
    """Requests refused on what they say about themselves, before their file is opened: (file, metadata)."""
    oversized = tmp_path / "huge.json"
    with open(oversized, "wb") as fh:  # sparse: over the limit without writing 50 MB
        fh.truncate(DEFAULT_MAX_UPLOAD_MB * 1_000_000 + 1)
    return [(_write(tmp_path / "notes.txt", "not predictions"), {"name": "Junk"}),
            (tmp_path / "never-uploaded.json", {"name": "Junk"}),
            (None, {"name": "Junk"}),
            (oversized, {"name": "Junk"}),
            (valid, {"name": ""}),
            (valid, {"name": "Junk", "year": "soon"}),
            (valid, {"name": "Junk", "url": "javascript:alert(1)"}),
            (valid, {"name": "Junk\u202e"}),
            (valid, {"name": "MedVersa"})]  # the host's name


def test_junk_requests_do_not_spend_the_anonymous_quota(seeded, tmp_path):
    """One client sending 200 junk requests (a .txt as predictions, no file, bad metadata, a taken name, over the
    size limit) used to spend the 100 anonymous submissions everyone shares and lock every anonymous submitter out
    for 24 h. Refused before their file is read, they are not counted; an honest submitter still gets through."""
    service = Submissions(seeded, tmp_path / "queue", metrics=["bleu2"])
    honest = iu_predictions(tmp_path / "honest.json", n_shift=6)
    junk = _junk_requests(tmp_path, honest)
    for n in range(200):
        path, metadata = junk[n % len(junk)]
        with pytest.raises(InputError) as refused:
            service.submit(path, metadata, "iu_xray", "findings")
        assert not isinstance(refused.value, QuotaExceeded), (n, str(refused.value))
    assert seeded.attempts(ANONYMOUS) == [] and _files(tmp_path / "queue") == []
    job = service.submit(honest, {"name": "Honest model"}, "iu_xray", "findings")
    assert [(a["outcome"], a["submission_id"]) for a in seeded.attempts(ANONYMOUS)] == [("queued", job)]


# -- anonymous quotas per client (issue 35 point 9) ------------------------------------------------------------------
@pytest.mark.parametrize("peer, forwarded, proxies, expected", [
    ("10.16.3.80", [], 0, "10.16.3.80"),  # no proxy trusted: the connection's address (gradio's)
    ("10.16.3.80", ["203.0.113.9"], 0, "10.16.3.80"),  # the header is not read at all
    ("10.16.3.80", ["203.0.113.9"], 1, "203.0.113.9"),  # a Space: its proxy appended the client's address
    ("10.16.3.80", ["6.6.6.6, 7.7.7.7, 203.0.113.9"], 1, "203.0.113.9"),  # forged entries on the left: ignored
    ("10.16.3.80", ["6.6.6.6", "203.0.113.9"], 1, "203.0.113.9"),  # two header lines: one list, in order
    ("10.16.3.80", ["6.6.6.6, 203.0.113.9, 10.0.0.2"], 2, "203.0.113.9"),  # two proxies
    ("10.16.3.80", ["203.0.113.9"], 2, "10.16.3.80"),  # fewer entries than proxies: not through them
    ("10.16.3.80", ["2001:db8:1:2:aaaa::1"], 1, "2001:db8:1::/48"),  # an IPv6 client: its /48 (clients.py: why)
    ("10.16.3.80", ["[2001:db8:1:ff02:bbbb::7]:443"], 1, "2001:db8:1::/48"),
    ("10.16.3.80", ["::ffff:203.0.113.9"], 1, "203.0.113.9"),  # IPv4-mapped
    ("10.16.3.80", ["203.0.113.9:5555"], 1, "203.0.113.9"),
    ("10.16.3.80", ["not-an-address"], 1, "unknown"),
    (None, [], 0, "unknown")])
def test_who_an_anonymous_request_comes_from(peer, forwarded, proxies, expected):
    from rexrank.leaderboard.clients import client_address, client_key

    assert client_key(client_address(peer, forwarded, proxies)) == expected


def test_the_trusted_proxy_count_is_checked(monkeypatch):
    from rexrank.errors import ConfigError
    from rexrank.leaderboard.clients import trusted_proxies

    monkeypatch.delenv("SYSTEM", raising=False)
    monkeypatch.delenv("REXRANK_TRUSTED_PROXIES", raising=False)
    assert trusted_proxies() == 0
    monkeypatch.setenv("SYSTEM", "spaces")  # gradio's sign of a Space (get_space)
    monkeypatch.setenv("SPACE_ID", "rajpurkarlab/rexrank")
    assert trusted_proxies() == 1
    monkeypatch.setenv("REXRANK_TRUSTED_PROXIES", "2")
    assert trusted_proxies() == 2 and trusted_proxies(0) == 0
    for bad in ("-1", "one", "11", True):
        with pytest.raises(ConfigError, match="^REXRANK_TRUSTED_PROXIES must be a whole number from 0 to 10"):
            trusted_proxies(bad)


@pytest.mark.slow  # 1.9 s of CPU of its own: over the fast tier's 2 s or near it (tests/README.md, "Tiers")
def test_each_anonymous_client_has_its_own_quota_within_the_shared_total(tmp_path):
    """One client used 19 anonymous submissions in a row (each got an owner of its own, so no per-user limit applied).
    Now a client has ``rate_limit`` of its own (rejected attempts included), another client is not affected, all
    anonymous clients together stay within ``anonymous_limit``, and the store holds a keyed digest, never the
    address."""
    store = Store(tmp_path / "s.sqlite")
    service = Submissions(store, tmp_path / "up", metrics=["bleu2"], rate_limit=2, anonymous_limit=4)
    files = [iu_predictions(tmp_path / f"p{n}.json", n_shift=30 + n) for n in range(6)]

    def submit(n: int, client: str) -> str:
        try:
            service.submit(files[n], {"name": f"Anon {n} {client}"}, "iu_xray", "findings", client=client)
            return "queued"
        except QuotaExceeded as exc:
            return str(exc)

    one = [submit(n, "203.0.113.9") for n in range(3)]
    assert one[:2] == ["queued"] * 2
    assert one[2].startswith("quota reached: at most 2 anonymous submissions from your address (log in")
    assert [submit(n, "198.51.100.4") for n in range(3, 5)] == ["queued"] * 2  # another client: its own quota
    refused = submit(5, "192.0.2.2")  # the 5th accepted anonymous file of all
    assert refused.startswith("quota reached: at most 4 accepted anonymous submissions (all anonymous clients "
                              "together; log in for your own quota) per 24 h; try again in")
    # The total counts accepted files only, under the group's own identity; each client's attempts under its digest.
    assert [a["outcome"] for a in store.attempts(ANONYMOUS)] == ["queued"] * 4
    identities = {a["identity"] for a in store.attempts()} - {ANONYMOUS}
    assert len(identities) == 3 and all(i.startswith("anonymous:") and len(i) == len("anonymous:") + 32
                                        for i in identities)
    assert not any("203.0.113" in i or "198.51" in i for i in identities)
    with pytest.raises(QuotaExceeded, match="all anonymous clients together"):  # a caller on the host: the total
        service.submit(files[5], {"name": "Host side"}, "iu_xray", "findings")
    secret = tmp_path / "up" / "client-key"
    assert _mode(secret) == 0o600 and len(secret.read_bytes()) == 32
    again = Submissions(store, tmp_path / "up", metrics=["bleu2"], rate_limit=3)  # a restart: the same digests
    assert again.client_identity("203.0.113.9") == service.client_identity("203.0.113.9")
    store.close()


def test_one_prefix_of_junk_leaves_other_clients_their_submissions(tmp_path, monkeypatch):
    """Issue 49 point 4: twenty IPv6 /64s of one /56 sent junk files (read and rejected); each /64 was a client of
    its own with 5 attempts, all 100 counted against the anonymous total everyone shares, and the next honest file
    was told "try again in 24.0 h". Now a client is its /48 (``clients``), so the twenty /64s are one client with 5
    attempts, and rejected files never count against the total: twenty IPv4 clients sending junk too leave it
    whole. An honest client of another prefix still submits."""
    from rexrank.evaluation import inputs
    from rexrank.evaluation.predictions import Problems, ValidationError
    from rexrank.leaderboard.clients import client_key

    real_load_inputs = inputs.load_inputs

    def load_inputs(path, *args, **kwargs):  # junk is rejected by validation, as a file of wrong ids would be
        if Path(path).name.startswith("junk"):
            problems = Problems(max_listed=5)
            problems.add("missing_id", "predictions", "s1")
            raise ValidationError("predictions lack study s1", problems)
        return real_load_inputs(path, *args, **kwargs)

    monkeypatch.setattr(inputs, "load_inputs", load_inputs)
    store = Store(tmp_path / "s.sqlite")
    service = Submissions(store, tmp_path / "up", metrics=["bleu2"])  # the default quotas: 5 per client, 100 in all
    junk = [_write(tmp_path / f"junk{n}.json", "{}" + " " * n) for n in range(6)]
    outcomes: dict[str, int] = {}

    def send(address: str) -> None:
        for file in junk:
            try:
                service.submit(file, {"name": "Junk"}, "iu_xray", "findings", client=client_key(address))
            except QuotaExceeded:
                outcomes["quota"] = outcomes.get("quota", 0) + 1
            except InputError:
                outcomes["rejected"] = outcomes.get("rejected", 0) + 1

    for n in range(20):  # twenty /64s of 2001:db8:77:aa00::/56
        send(f"2001:db8:77:aa{n:02x}::{n + 1}")
    assert outcomes == {"rejected": 5, "quota": 115}  # one client: its own 5 attempts, then its quota
    for n in range(20):  # twenty IPv4 clients: 5 rejected files each, 100 in all
        send(f"203.0.113.{n + 1}")
    assert outcomes["rejected"] == 105 and store.attempts(ANONYMOUS) == []
    honest = iu_predictions(tmp_path / "honest.json", n_shift=9)
    job = service.submit(honest, {"name": "Honest model"}, "iu_xray", "findings",
                         client=client_key("2001:db8:99::5"))
    assert [(a["outcome"], a["submission_id"]) for a in store.attempts(ANONYMOUS)] == [("queued", job)]
    store.close()


def test_identical_files_sent_at_once_by_one_client_are_each_a_duplicate(tmp_path):
    """Issue 49 point 7: twelve identical files sent at once by one client under one name got three kinds of refusal
    ("name taken": the first had registered it; "quota reached": the client's 5; "already submitted"). The docs
    promise one: each of the other eleven is a duplicate, none is counted against a quota, and nothing is left."""
    store = Store(tmp_path / "s.sqlite")
    service = Submissions(store, tmp_path / "up", metrics=["bleu2"])
    original = iu_predictions(tmp_path / "same.json", n_shift=21).read_bytes()
    copies = [tmp_path / f"copy{n}.json" for n in range(12)]  # each request's own copy, as the Space hands them
    for copy in copies:
        copy.write_bytes(original)
    gate = threading.Barrier(len(copies), timeout=60)
    answers: list[str] = []

    def one(path: Path) -> None:
        gate.wait()
        try:
            service.submit(path, {"name": "Race model"}, "iu_xray", "findings", client="198.51.100.7")
            answers.append("queued")
        except DuplicateSubmission as exc:
            answers.append("duplicate" if "already submitted (submission #1, queued)" in str(exc) else str(exc))
        except InputError as exc:
            answers.append(str(exc))

    threads = [threading.Thread(target=one, args=(path,)) for path in copies]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert sorted(answers) == ["duplicate"] * 11 + ["queued"], answers
    client = service.client_identity("198.51.100.7")
    assert [a["outcome"] for a in store.attempts(client)] == ["queued"]  # duplicates are not counted
    queued = [p for p in _files(tmp_path / "up") if p.suffix == ".json"]
    assert len(queued) == 1 and store.counts()["submissions"] == 1
    store.close()


# -- duplicates ---------------------------------------------------------------------------------------------------

@pytest.mark.slow  # 1.9 s of CPU of its own in the fast tier's run (23:30, load 1-4): at the edge
def test_duplicates_compare_parsed_predictions(tmp_path):
    import unicodedata

    store = Store(tmp_path / "s.sqlite")
    service = Submissions(store, tmp_path / "queue")
    original = iu_predictions(tmp_path / "orig.json", n_shift=7)
    preds = json.loads(original.read_text())
    service.submit(original, {"name": "Dup"}, "iu_xray", "findings")
    variants = {"newline.json": original.read_text() + "\n",
                "indented.json": json.dumps(dict(reversed(list(preds.items()))), indent=2),
                "spaces.json": json.dumps({k: f"  {v.replace(' ', '   ')}\n" for k, v in preds.items()}),
                "nfd.json": json.dumps({k: unicodedata.normalize("NFD", v + " café") for k, v in preds.items()}),
                "lines.jsonl": "\n".join(json.dumps({"study_id": k, "report": v}) for k, v in preds.items()),
                "table.csv": "study_id,report\n" + "\n".join(f'{k},"{v.replace(chr(34), 2 * chr(34))}"'
                                                              for k, v in preds.items())}
    service.submit(_write(tmp_path / "cafe.json", json.dumps({k: v + " café" for k, v in preds.items()})),
                   {"name": "Dup2"}, "iu_xray", "findings")
    for name, text in variants.items():
        with pytest.raises(DuplicateSubmission, match="already submitted"):
            service.submit(_write(tmp_path / name, text), {"name": f"V {name}"}, "iu_xray", "findings")
    assert store.counts()["submissions"] == 2
    assert len(_files(tmp_path / "queue")) == 2  # refused copies are deleted, queued ones kept
    changed = dict(preds)
    changed[next(iter(changed))] = "A different report."
    service.submit(_write(tmp_path / "changed.json", json.dumps(changed)), {"name": "Changed"}, "iu_xray", "findings")


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


# -- the queue folder: owner-only while queued, deleted once handled -------------------------------------------------
def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_queued_files_are_owner_only_and_deleted_once_the_job_is_done(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    queue = tmp_path / "queue"
    queue.mkdir(mode=0o755)
    queue.chmod(0o755)  # as an older version left it
    service = Submissions(store, queue, metrics=["bleu2"], n_resamples=20)
    assert _mode(queue) == 0o700
    old_umask = os.umask(0o022)  # the usual umask: what a plain copy would get is 0644
    try:
        service.submit(iu_predictions(tmp_path / "a.json", n_shift=1), {"name": "Scored"}, "iu_xray", "findings")
    finally:
        os.umask(old_umask)
    queued = store.submissions(None)[0]["predictions_path"]
    assert [Path(queued)] == [p for p in _files(queue)] and _mode(Path(queued)) == 0o600
    assert service.work_once()
    job = store.submissions(None)[0]
    assert job["status"] == "done", job["error"]
    assert not Path(queued).exists() and [p for p in _files(queue) if p.parent == queue] == []
    store.close()


def test_a_failed_jobs_file_is_deleted(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    service = Submissions(store, tmp_path / "queue", metrics=["bleu2"], n_resamples=20)
    service.submit(iu_predictions(tmp_path / "a.json", n_shift=2), {"name": "Broken"}, "iu_xray", "findings")
    queued = Path(store.submissions(None)[0]["predictions_path"])
    queued.write_text("{}")  # no longer the test set's studies: validation fails when the worker scores it
    assert service.work_once()
    job = store.submissions(None)[0]
    assert job["status"] == "failed" and "input validation failed" in job["error"]
    assert not queued.exists() and _files(tmp_path / "queue") == []
    store.close()


def test_worker_start_deletes_leftovers_of_handled_jobs_only(tmp_path):
    """A restart between marking a job and deleting its file (or a process killed mid-submission) leaves files;
    the worker deletes them when it starts. Queued jobs keep theirs; a fresh file no job names yet may be a
    submission in progress elsewhere and stays; files the queue did not name (the score cache) are never touched."""
    store = Store(tmp_path / "s.sqlite")
    queue = tmp_path / "queue"
    service = Submissions(store, queue, metrics=["bleu2"], n_resamples=20, poll_seconds=0.05)
    for n, name in enumerate(("Done", "Failed", "Waiting")):
        service.submit(iu_predictions(tmp_path / f"{n}.json", n_shift=n + 1), {"name": name}, "iu_xray", "findings")
    jobs = {j["model"]["name"]: j for j in store.submissions(None)}
    files = {name: Path(job["predictions_path"]) for name, job in jobs.items()}
    kept = {name: path.read_bytes() for name, path in files.items()}
    # What a worker stopped right after marking its jobs leaves: the jobs handled, their files still there.
    store.finish(jobs["Done"]["id"], ResultRecord(model=ModelInfo(name="Done"), dataset="iu_xray", split="test",
                                                  track="findings", source="submission",
                                                  metrics={"bleu2": MetricValue(0.1)}))
    store.fail(jobs["Failed"]["id"], "scoring failed")
    for name in ("Done", "Failed"):
        files[name].write_bytes(kept[name])
    orphan_old = queue / f"{'a' * 64}-{'b' * 12}.json.part"
    orphan_new = queue / f"{'c' * 64}-{'d' * 12}.csv"
    for orphan in (orphan_old, orphan_new):
        orphan.write_text("{}")
    os.utime(orphan_old, (time.time() - ORPHAN_GRACE_S - 60,) * 2)
    cache = queue / "score-cache" / "entry.json"
    cache.parent.mkdir()
    cache.write_text("{}")
    other = queue / "README.txt"
    other.write_text("the host's")

    service.start_worker()
    wait_until(lambda: store.submissions(None)[0]["status"] == "done", '"Waiting" scored', poll_s=0.1)
    service.stop_worker()
    assert not files["Done"].exists() and not files["Failed"].exists() and not orphan_old.exists()
    assert orphan_new.exists() and cache.exists() and other.exists()
    assert store.submissions(None)[0]["status"] == "done" and not files["Waiting"].exists()
    store.close()


def test_clean_uploads_keeps_queued_files(tmp_path):
    store = Store(tmp_path / "s.sqlite")
    service = Submissions(store, tmp_path / "queue", metrics=["bleu2"])
    service.submit(iu_predictions(tmp_path / "a.json", n_shift=3), {"name": "Queued"}, "iu_xray", "findings")
    queued = Path(store.submissions(None)[0]["predictions_path"])
    os.utime(queued, (time.time() - ORPHAN_GRACE_S - 60,) * 2)  # however old: its job still needs it
    assert service.clean_uploads() == 0 and queued.exists()
    store.close()


# -- the running Space: upload limit, upload cleanup, identity ------------------------------------------------------
LIMIT = 1_000_000


@pytest.fixture(scope="module")
def space(tmp_path_factory):
    """The Space with its own gradio upload folder (GRADIO_TEMP_DIR), so what it leaves there can be listed."""
    root = tmp_path_factory.mktemp("space")
    uploads = root / "gradio-uploads"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("GRADIO_TEMP_DIR", str(uploads))
        # One trusted proxy, as on a Space: a client is the rightmost X-Forwarded-For address (leaderboard/clients.py)
        with running_space(root / "board.sqlite", max_bytes=LIMIT, trusted_proxies=1) as (url, store, service):
            yield url, store, service, uploads


def test_oversized_upload_is_refused_and_nothing_is_left(space):
    import httpx

    url, _, _, uploads = space
    response = httpx.post(f"{url}gradio_api/upload", files={"files": ("big.json", b"{" + b" " * (3 * LIMIT) + b"}")},
                          timeout=STATE_CEILING_S)
    assert response.status_code == 413 and "maximum allowed size" in response.text
    assert _files(uploads) == []
    small = httpx.post(f"{url}gradio_api/upload", files={"files": ("small.json", b"{}")}, timeout=STATE_CEILING_S)
    assert small.status_code == 200 and len(_files(uploads)) == 1  # under the limit: accepted (deleted when used)
    for leftover in _files(uploads):
        leftover.unlink()


def test_uploads_never_submitted_are_capped_per_client(space):
    """Issue 49 point 4: twenty 5 MB-like uploads to /gradio_api/upload, never submitted, were all kept for an hour.
    Through the launched Space (``uploads.UploadCap``): one client keeps its newest ``UNSUBMITTED_UPLOADS_PER_CLIENT``
    only, and each is still a file a /submit may name."""
    import httpx

    from rexrank.leaderboard.limits import UNSUBMITTED_UPLOADS_PER_CLIENT

    url, _, _, uploads = space
    kept = []
    with httpx.Client(timeout=STATE_CEILING_S, headers={"X-Forwarded-For": "2001:db8:44:1::9"}) as client:
        for n in range(20):
            answer = client.post(f"{url}gradio_api/upload", files={"files": (f"u{n}.json", b"{}" + b" " * n)})
            assert answer.status_code == 200
            kept.append(Path(answer.json()[0]))
    try:
        # The cap's deletions may still be under way when the last answer arrives: wait on the state read.
        wait_until(lambda: _files(uploads) == sorted(kept[-UNSUBMITTED_UPLOADS_PER_CLIENT:]),
                   f"the newest {UNSUBMITTED_UPLOADS_PER_CLIENT} uploads kept, the rest deleted")
    finally:
        for leftover in _files(uploads):  # the module's Space is shared: later tests expect no upload left
            leftover.unlink(missing_ok=True)


def test_handled_uploads_are_deleted_accepted_or_rejected(space, tmp_path):
    from gradio_client import Client, handle_file

    url, store, _, uploads = space
    client = Client(url, verbose=False)
    params = client.view_api(return_format="dict", print_info=False)["named_endpoints"]["/submit"]["parameters"]
    assert len(params) == 9  # the OAuth profile is injected by gradio, never an API argument
    path = iu_predictions(tmp_path / "mine.json", n_shift=11)
    refused, _ = client.predict(handle_file(str(path)), "MedVersa", "Evil Corp", "https://phish.example", 2099, "",
                                [], "iu_xray", "findings", api_name="/submit")
    assert "Submission rejected" in refused and "already registered by the leaderboard host" in refused
    assert "Choose another name" in refused
    assert _files(uploads) == []
    invalid = iu_predictions(tmp_path / "bad.json", corrupt={"not-a-study": "x"})
    status, _ = client.predict(handle_file(str(invalid)), "Fresh", "", "", None, "", [], "iu_xray", "findings",
                               api_name="/submit")
    assert "Submission rejected" in status and _files(uploads) == []
    accepted, _ = client.predict(handle_file(str(path)), "Fresh name", "QA", "", None, "", [], "iu_xray",
                                 "findings", api_name="/submit")
    assert "queued" in accepted and _files(uploads) == []
    assert store.model("MedVersa")["institution"] != "Evil Corp"


def test_api_answers_are_plain_text(space, tmp_path):
    """Issue 49 point 7: gradio_client users got the form's Markdown ("trained\\_on: Unknown dataset &#x27;none&#x27;").
    /submit answers plain text, a refusal and an acceptance alike; the page's form keeps its Markdown."""
    from gradio_client import Client, handle_file

    from rexrank.errors import InputError
    from rexrank.leaderboard.views import form_message

    url, _, _, _ = space
    client = Client(url, verbose=False)
    path = iu_predictions(tmp_path / "plain.json", n_shift=13)
    refused, _ = client.predict(handle_file(str(path)), "Plain_model", "", "", None, "", ["none"], "iu_xray",
                                "findings", api_name="/submit")
    assert refused.startswith("Submission rejected: trained_on: Unknown dataset 'none'"), refused
    assert "\\" not in refused and "&#" not in refused and "**" not in refused
    accepted, _ = client.predict(handle_file(str(path)), "Plain_model", "", "", None, "", [], "iu_xray",
                                 "findings", api_name="/submit")
    assert accepted.startswith("Submission #") and "\\" not in accepted and "&" not in accepted, accepted
    page = form_message(InputError("trained_on: Unknown dataset 'none'"))  # the form: Markdown, escaped
    assert page.startswith("**Submission rejected:**") and "trained\\_on" in page and "&#x27;" in page


def _submit_together(url: str, uploads: list[tuple[bytes, str, dict]], *, upload_first: bool = True) -> list[str]:
    """Each (file bytes, model name, extra headers) sent by its own HTTP client, all at once (threads released
    together; with ``upload_first``, every upload lands before any /submit is sent, so all of them name gradio's one
    file of identical bytes). The answers' text, in order. Bounded: every request has a timeout and every thread
    is joined with one."""
    import httpx

    gate = threading.Barrier(len(uploads), timeout=120)
    answers: list[str] = ["(no answer)"] * len(uploads)

    def one(index: int, data: bytes, name: str, headers: dict) -> None:
        with httpx.Client(timeout=120, headers=headers) as client:
            gate.wait()
            uploaded = client.post(f"{url}gradio_api/upload", files={"files": ("same.json", data)})
            if uploaded.status_code != 200:
                answers[index] = f"upload: HTTP {uploaded.status_code}"
                return
            if upload_first:
                gate.wait()
            file = {"path": uploaded.json()[0], "meta": {"_type": "gradio.FileData"}}
            call = client.post(f"{url}gradio_api/call/submit",
                               json={"data": [file, name, "", "", None, "", [], "iu_xray", "findings"]})
            if call.status_code != 200:
                answers[index] = f"submit: HTTP {call.status_code}"
                return
            answers[index] = client.get(f"{url}gradio_api/call/submit/{call.json()['event_id']}").text

    threads = [threading.Thread(target=one, args=(i, *request), daemon=True) for i, request in enumerate(uploads)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert not any(thread.is_alive() for thread in threads), "a client got no answer within 300 s"
    return answers


def _outcome(answer: str) -> str:
    """What a /submit answer says: accepted (queued, running or already scored), a duplicate, ... or its text."""
    from rexrank.leaderboard.views import QUEUED

    for outcome, text in (("duplicate", "already submitted"), ("lost", "no longer available"),
                          ("unexpected", "unexpected error"), ("quota", "quota reached"), ("queued", f'["{QUEUED}')):
        if text in answer:
            return outcome
    return answer[-300:]


@pytest.mark.slow  # 6.0 s of CPU of its own: over the fast tier's 2 s or near it (tests/README.md, "Tiers")
def test_identical_uploads_at_once_are_each_answered(space, tmp_path):
    """Issue 35 point 2: twelve clients upload one file at the same moment and submit it under their own names.
    gradio keeps identical uploads as ONE file; the first request handled used to delete it under the others
    (before: 1 queued, 6-7 "unexpected error", 4-5 "no longer available"). Each request now works on its own copy:
    one is queued, eleven get the service's "already submitted", none an internal error; gradio's folder is empty
    afterwards, the service's holds only the kept copy until the upload TTL, then nothing."""
    from rexrank.leaderboard.uploads import ReceivedUploads

    url, store, service, uploads = space
    data = iu_predictions(tmp_path / "same.json", n_shift=21).read_bytes()
    # Each client from its own address (X-Forwarded-For from a loopback peer: uvicorn's rule): twelve people.
    requests = [(data, f"Race model {i}", {"X-Forwarded-For": f"198.51.100.{i + 1}"}) for i in range(12)]
    received = service.upload_dir / "received"
    before = set(received.iterdir()) if received.exists() else set()  # kept copies of the module's earlier tests
    outcomes = sorted(_outcome(answer) for answer in _submit_together(url, requests))
    assert outcomes == ["duplicate"] * 11 + ["queued"], outcomes
    assert _files(uploads) == []
    kept = [p.name for p in set(received.iterdir()) - before]
    assert len(kept) == 1 and kept[0].startswith("kept-"), kept  # no request's own copy is left
    ReceivedUploads(received, ttl=3600, root=uploads).sweep(now=time.time() + 3601)
    # gradio's folder of that upload (named by its content hash, kept in the copy's name) goes with it
    folder = uploads / kept[0].split("-")[1]
    assert list(received.iterdir()) == [] and not folder.exists()


@pytest.mark.slow  # 1.5 s of CPU of its own (the worker scores its job): near the fast tier's 2 s (tests/README.md)
def test_identical_uploads_at_once_from_one_client_get_one_answer(space, tmp_path):
    """Issue 49 point 7, through the Space: twelve identical uploads at once from ONE client under ONE name got three
    kinds of refusal (name taken, quota reached, already submitted). Now: one queued, eleven "already submitted"."""
    url, store, service, uploads = space
    data = iu_predictions(tmp_path / "same.json", n_shift=23).read_bytes()
    requests = [(data, "One race model", {"X-Forwarded-For": "198.51.100.200"}) for _ in range(12)]
    outcomes = sorted(_outcome(answer) for answer in _submit_together(url, requests))
    assert outcomes == ["duplicate"] * 11 + ["queued"], outcomes
    assert _files(uploads) == []
    # The worker scores the queued job in this process: waited for here, so its CPU is not the next test's.
    wait_until(lambda: all(job["status"] in ("done", "failed") for job in service.queue()), "the queue scored")


@pytest.mark.slow  # 4.1 s of CPU of its own: over the fast tier's 2 s or near it (tests/README.md, "Tiers")
def test_one_anonymous_client_gets_its_own_quota_on_the_space(space, tmp_path):
    """Issue 35 point 9 through the served Space (one trusted proxy, as a Space has): seven submissions from one
    client, each with another forged X-Forwarded-For prefix, get the per-client quota (5: the first five answered,
    the last two refused); a second client still submits. Before: every anonymous submission had an owner of its
    own, so all seven (and 19 in the issue) went through."""
    url, store, _, _ = space
    files = [iu_predictions(tmp_path / f"own{n}.json", n_shift=40 + n).read_bytes() for n in range(8)]
    answers = []
    for n in range(7):  # one after the other: a quota, not a race
        forged = f"10.{n}.0.1, 172.16.{n}.9"
        answers += _submit_together(url, [(files[n], f"Quota model {n}", {"X-Forwarded-For": f"{forged}, 192.0.2.77"})],
                                    upload_first=False)
    outcomes = [_outcome(answer) for answer in answers]
    assert outcomes == ["queued"] * 5 + ["quota"] * 2, outcomes
    assert "anonymous submissions from your address" in answers[-1]
    other = _submit_together(url, [(files[7], "Quota model 7", {"X-Forwarded-For": "192.0.2.78"})])
    assert [_outcome(answer) for answer in other] == ["queued"]


def test_submit_never_reads_a_server_side_path(space, tmp_path):
    """/submit with a path on the server (a plain string, or FileData naming a file nobody uploaded): refused, the
    file is neither read nor deleted, and nothing of it reaches the answer or the queue."""
    import httpx

    url, store, service, uploads = space
    secret = tmp_path / "private_refs.json"
    secret.write_text(json.dumps({"secret-study-id": "PRIVATE GROUND TRUTH"}))
    queued = len(service.queue())
    for file in (str(secret), {"path": str(secret), "meta": {"_type": "gradio.FileData"}}):
        response = httpx.post(f"{url}gradio_api/call/submit", timeout=STATE_CEILING_S,
                              json={"data": [file, "Probe", "", "", None, "", [], "iu_xray", "findings"]})
        assert response.status_code == 200
        answer = httpx.get(f"{url}gradio_api/call/submit/{response.json()['event_id']}", timeout=STATE_CEILING_S).text
        assert "secret-study-id" not in answer and "PRIVATE" not in answer
        assert "never read" in answer or "event: error" in answer  # ours, or gradio's own refusal of FileData
    assert secret.exists() and store.model("Probe") is None and len(service.queue()) == queued


@pytest.mark.slow  # 3.7 s of CPU of its own: over the fast tier's 2 s or near it (tests/README.md, "Tiers")
def test_login_button_and_profile_identity(seeded, tmp_path, monkeypatch):
    """With OAuth (hf_oauth) the Submit tab has a login button and the logged-in user's profile is the identity."""
    import gradio as gr

    from rexrank.leaderboard.app import build_app

    # gradio's OAuth routes need gradio[oauth] and a Space (or a local HF login); our wiring is what is tested here.
    monkeypatch.setattr("gradio.routes.attach_oauth", lambda app: None)

    service = Submissions(seeded, tmp_path / "queue")
    demo = build_app(seeded, service, oauth=True)
    assert any(isinstance(block, gr.LoginButton) for block in demo.blocks.values())
    assert not any(isinstance(b, gr.LoginButton) for b in build_app(seeded, service).blocks.values())
    submit = next(f.fn for f in demo.fns.values() if f.api_name == "submit")
    from gradio.utils import get_type_hints

    assert get_type_hints(submit)["profile"] == gr.OAuthProfile | None  # what makes gradio inject the profile

    def profile(user):
        return gr.OAuthProfile({"name": user, "preferred_username": user, "profile": "", "picture": ""})

    from rexrank.leaderboard.uploads import upload_root as _upload_root

    # Where gradio puts uploads (one folder per upload): the only files /submit reads; each is deleted once handled.
    uploads = _upload_root() / f"test-{tmp_path.name}"

    def upload(name: str, n_shift: int):
        uploads.mkdir(parents=True, exist_ok=True)
        return iu_predictions(uploads / name, n_shift=n_shift)

    path = upload("p.json", 2)
    status, _ = submit(str(path), "Alice Model", "", "", None, "", [], "iu_xray", "findings", profile("alice"))
    assert "queued" in status and seeded.model("Alice Model")["owner"] == "hf:alice" and not path.exists()
    status, _ = submit(str(upload("q.json", 3)), "alice model", "", "", None, "", [], "iu_xray", "findings",
                       profile("bob"))
    assert "already registered by Hugging Face user alice" in status and "log in as its owner" in status
    status, _ = submit(str(upload("q.json", 3)), "Alice Model", "", "", None, "", [], "iu_xray", "findings",
                       profile("alice"))
    assert "queued" in status
    outside = iu_predictions(tmp_path / "r.json", n_shift=4)  # a server-side path: refused, never read nor deleted
    status, _ = submit(str(outside), "Alice Model", "", "", None, "", [], "iu_xray", "findings", profile("alice"))
    assert "never read" in status and outside.exists()

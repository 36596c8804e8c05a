"""A model name is compared by what a reader of the board sees (``records.name_key``): a look-alike of a registered
name (another script's letters, l for I, dashes, small capitals, accents) is that name, and distinct real names stay
distinct. Found in review (issue 24, point 11): 16 of 28 look-alikes of published names got keys of their own and
stood on the board beside the real model."""

from __future__ import annotations

import csv
import itertools
from pathlib import Path

import pytest

from leaderboard_helpers import iu_predictions
from rexrank.leaderboard.published import bundled_tables, import_published
from rexrank.leaderboard.records import hidden_characters, name_key
from rexrank.leaderboard.store import NameTaken, Store
from rexrank.leaderboard.submissions import Submissions

# (real name, look-alike), with the characters that differ named in the comment.
LOOKALIKES = [
    # dash punctuation and minus signs for the hyphen-minus
    ("MAIRA-2", "MAIRA\u20102"),  # HYPHEN
    ("MAIRA-2", "MAIRA\u20112"),  # NON-BREAKING HYPHEN
    ("MAIRA-2", "MAIRA\u20122"),  # FIGURE DASH
    ("MAIRA-2", "MAIRA\u20132"),  # EN DASH
    ("MAIRA-2", "MAIRA\u20142"),  # EM DASH
    ("MAIRA-2", "MAIRA\u20152"),  # HORIZONTAL BAR
    ("MAIRA-2", "MAIRA\u22122"),  # MINUS SIGN
    ("MAIRA-2", "MAIRA\ufe582"),  # SMALL EM DASH
    ("MAIRA-2", "MAIRA\ufe632"),  # SMALL HYPHEN-MINUS
    ("MAIRA-2", "MAIRA\uff0d2"),  # FULLWIDTH HYPHEN-MINUS
    ("MAIRA-2", "MAIRA\u30fc2"),  # KATAKANA-HIRAGANA PROLONGED SOUND MARK
    ("UniRG-CXR", "UniRG\u2796CXR"),  # HEAVY MINUS SIGN
    # l, 1 and their look-alikes for I (and the other way round)
    ("MAIRA-2", "MAlRA-2"),  # LATIN SMALL LETTER L
    ("MAIRA-2", "MA1RA-2"),  # DIGIT ONE
    ("MAIRA-2", "MA\ua4f2RA-2"),  # LISU LETTER I
    ("MAIRA-2", "MA\u04c0RA-2"),  # CYRILLIC LETTER PALOCHKA
    ("Libra", "L\u0131bra"),  # LATIN SMALL LETTER DOTLESS I
    ("Libra", "\u13deibra"),  # CHEROKEE LETTER TLE
    ("Libra", "\ua4e1ibra"),  # LISU LETTER LA
    ("Libra", "Ll\u0299ra"),  # l for i and LATIN LETTER SMALL CAPITAL B
    ("LLM-CXR", "\u029f\u029fM-CXR"),  # LATIN LETTER SMALL CAPITAL L (twice)
    # Cherokee, Lisu, Coptic, Armenian look-alikes
    ("MedVersa", "\u13b7edVersa"),  # CHEROKEE LETTER LU
    ("MedVersa", "Med\u13d9ersa"),  # CHEROKEE LETTER DO
    ("MedVersa", "\ua4dfedVersa"),  # LISU LETTER MA
    ("MedVersa", "MedVer\ua4e2a"),  # LISU LETTER SA
    ("MedVersa", "\u2c98edVersa"),  # COPTIC CAPITAL LETTER MI
    ("RGRG", "R\u13c0RG"),  # CHEROKEE LETTER NAH
    ("RaDialog", "RaDial\u0585g"),  # ARMENIAN SMALL LETTER OH
    ("UniRG-CXR", "\u054dniRG-CXR"),  # ARMENIAN CAPITAL LETTER SEH
    ("CheXagent", "C\u0570eXagent"),  # ARMENIAN SMALL LETTER HO
    # small capitals
    ("MedVersa", "\u1d0dedVersa"),  # LATIN LETTER SMALL CAPITAL M
    ("MedVersa", "Med\u1d20ersa"),  # LATIN LETTER SMALL CAPITAL V
    ("RGRG", "RG\u0280G"),  # LATIN LETTER SMALL CAPITAL R
    # combining and precomposed accents
    ("Libra", "Li\u0301bra"),  # COMBINING ACUTE ACCENT
    ("Libra", "Li\u0307bra"),  # COMBINING DOT ABOVE
    ("Libra", "Libra\u0323"),  # COMBINING DOT BELOW
    ("MedVersa", "M\u00e9dVersa"),  # LATIN SMALL LETTER E WITH ACUTE
    ("MedVersa", "MedVersa\u0308"),  # COMBINING DIAERESIS
    # punctuation look-alikes
    ("CheXagent*", "CheXagent\u2217"),  # ASTERISK OPERATOR
    ("CheXagent*", "CheXagent\u204e"),  # LOW ASTERISK
    ("RadPhi3.5Vision", "RadPhi3\ua60e5Vision"),  # VAI FULL STOP
    # Greek, Cyrillic, full width, case and spacing (folded before this change too)
    ("MedVersa", "\u039cedVersa"),  # GREEK CAPITAL LETTER MU
    ("MedVersa", "MedVers\u0430"),  # CYRILLIC SMALL LETTER A
    ("CheXagent", "Che\u03a7agent"),  # GREEK CAPITAL LETTER CHI
    ("MedVersa", "\uff2dedVersa"),  # FULLWIDTH LATIN CAPITAL LETTER M
    ("MAIRA-2", "maira-2"),
    ("MAIRA-2", " MAIRA-2\u00a0"),
    ("MedVersa", "Med\u200bVersa"),  # ZERO WIDTH SPACE (a name with it is refused: records.clean_text)
]


@pytest.mark.parametrize("real, lookalike", LOOKALIKES,
                         ids=[f"{r}:{' '.join(f'U+{ord(c):04X}' for c in l if ord(c) > 127) or l}"
                              for r, l in LOOKALIKES])
def test_a_lookalike_has_the_real_names_key(real, lookalike):
    assert lookalike != real
    assert name_key(lookalike) == name_key(real)


# Names that differ in their letters or digits: distinct keys.
DISTINCT = [("MAIRA-2", "MAIRA-3"), ("Libra", "Libre"), ("VLCI-IU", "VLCI-MIMIC"), ("RadFM", "RadFN"),
            ("GPT4V", "GPT4"), ("Model 8", "Model B"), ("GPT-4 (text)", "GPT-4 (vision)")]

# Issue 49 point 4: look-alikes by punctuation were registered beside the names they imitate, while search folded
# them ("maira 2" found MAIRA-2, and MAIRA_2 was someone else's). The key is the search's: punctuation is dropped.
PUNCTUATION = [("MedVersa", "MedVersa."), ("MedVersa", "Med-Versa"), ("MedVersa", "Med_Versa"),
               ("MedVersa", "Med\u00b7Versa"), ("MedVersa", "MedVersa*"), ("MAIRA-2", "MAIRA2"), ("MAIRA-2", "MAIRA_2"),
               ("MAIRA-2", "MAIRA=2"), ("MAIRA-2", "MAIRA.2"), ("CheXagent", "CheXagent*"),
               ("CheXpertPlus-CheX", "CheXpertPlus_CheX")]


@pytest.mark.parametrize("first, second", DISTINCT)
def test_different_names_keep_different_keys(first, second):
    assert name_key(first) != name_key(second)


@pytest.mark.parametrize("real, lookalike", PUNCTUATION)
def test_punctuation_does_not_tell_names_apart(real, lookalike):
    from rexrank.leaderboard.records import search_key

    assert name_key(lookalike) == name_key(real) == search_key(real) == search_key(lookalike)


def test_registration_and_search_fold_names_alike():
    """One folding (``name_key`` is ``search_key``): a search's words and a registration compare the same key."""
    from rexrank.leaderboard import board
    from rexrank.leaderboard.records import search_key

    assert search_key is name_key
    keys = [name_key(name) for name in ("MAIRA-2", "MedVersa")]
    for query, name in (("maira 2", "MAIRA_2"), ("Med-Versa", "Med_Versa"), ("medversa.", "MedVersa*")):
        assert board.search_terms(query, keys) == [name_key(name)]


def test_punctuation_lookalikes_are_refused_beside_the_published_names(tmp_path):
    """Through the service, anonymous and logged in: every look-alike of the issue is the host's name; nothing is
    queued or counted. Before: each was registered beside MedVersa or MAIRA-2."""
    store = Store(tmp_path / "board.sqlite")
    import_published(store, bundled_tables())
    service = Submissions(store, tmp_path / "queue", metrics=["bleu2"])
    path = iu_predictions(tmp_path / "p.json", n_shift=4)
    for real, lookalike in PUNCTUATION[:7]:
        for user in ("mallory", None):
            with pytest.raises(NameTaken, match="already registered by the leaderboard host"):
                service.submit(path, {"name": lookalike}, "iu_xray", "findings", user=user)
        assert store.model(lookalike)["name"] == real
    assert store.counts()["submissions"] == 0 and store.attempts() == []
    store.close()


@pytest.mark.parametrize("name", ["...", "-", "*", "()", "\u00b7"])
def test_a_name_without_letters_or_digits_is_refused(name):
    """All such names would share one (empty) key."""
    from rexrank.errors import InputError
    from rexrank.leaderboard.records import ModelInfo

    with pytest.raises(InputError, match="^the model name has no letter or digit: name the model with at least one$"):
        ModelInfo.from_dict({"name": name})


def _published_names(directory: Path) -> set[str]:
    names = set()
    for table in sorted(directory.glob("*.csv")):
        with open(table, encoding="utf-8-sig", newline="") as fh:
            names.update(row["Model Name"].strip() for row in csv.DictReader(fh) if (row.get("Model Name") or "").strip())
    return names


def test_every_published_model_keeps_its_own_key(shared_dir):
    """Every name in the published tables (the bundled copy and ../shared's, older tables included, as written
    there) has a key of its own, except upstream's own spellings of one model, which differ in punctuation and case
    only (CheXpertPlus_CheX and CheXpertPlus-CheX; CheXagent* in the older MIMIC-CXR table, its footnote mark)."""
    import re

    names = _published_names(bundled_tables()) | _published_names(shared_dir / "data" / "leaderboard_published")
    assert {"MAIRA-2", "Libra", "MedVersa", "CheXagent", "CheXagent*", "VLCI-IU", "VLCI-MIMIC"} <= names
    assert len(names) >= 40
    spelled = lambda name: re.sub(r"[^0-9a-z]", "", name.lower())
    for first, second in itertools.combinations(sorted(names), 2):
        assert (name_key(first) == name_key(second)) == (spelled(first) == spelled(second)), (first, second)


def test_the_key_is_a_fixed_point():
    """A stored key compared again gives itself (the store looks names up by key)."""
    for name in {n for pair in LOOKALIKES for n in pair}:
        assert name_key(name_key(name)) == name_key(name), name


def test_lookalikes_of_published_names_are_refused(tmp_path):
    """Through the submission service: each look-alike of a published name is the host's name, for a logged-in
    user and an anonymous submitter alike, and nothing is queued or counted (the name is checked before the file)."""
    store = Store(tmp_path / "board.sqlite")
    import_published(store, bundled_tables())
    service = Submissions(store, tmp_path / "queue", metrics=["bleu2"])
    path = iu_predictions(tmp_path / "p.json", n_shift=4)
    seeded = _published_names(bundled_tables())
    for real, lookalike in LOOKALIKES:
        if hidden_characters(lookalike) or real not in seeded:
            continue  # refused as it is (test_leaderboard_submissions); a name of the older tables only
        with pytest.raises(NameTaken, match="already registered by the leaderboard host"):
            service.submit(path, {"name": lookalike}, "iu_xray", "findings", user="mallory")
        assert store.model(lookalike)["name"] == real
    assert store.counts()["submissions"] == 0 and store.attempts() == []
    store.close()


# -- spacing (issue 35 point 5) --------------------------------------------------------------------------------------
# "Med  Versa" was registered as "Med Versa" beside MedVersa, although the refusal promises names are compared
# "ignoring ... spacing": each of these is MedVersa.
SPACED = ["Med Versa", "Med  Versa", " M e d V e r s a ", "Med\tVersa", "Med\u3000Versa", "Med\u00a0Versa",
          "MED VERSA"]


@pytest.mark.parametrize("name", SPACED)
def test_spacing_does_not_tell_names_apart(name):
    assert name_key(name) == name_key("MedVersa")


def test_a_spaced_copy_of_a_registered_name_is_refused(tmp_path):
    """Through the service, for a logged-in user and anonymously: the host's MedVersa, spaced, is the host's name
    (and the refusal's promise holds: the message says spacing is ignored); nothing is queued or counted."""
    store = Store(tmp_path / "board.sqlite")
    import_published(store, bundled_tables())
    service = Submissions(store, tmp_path / "queue", metrics=["bleu2"])
    path = iu_predictions(tmp_path / "p.json", n_shift=4)
    for name in ("Med  Versa", "Med Versa", "M e d V e r s a", "Che Xagent", "MAIRA - 2"):
        for user in ("mallory", None):
            with pytest.raises(NameTaken, match="ignoring case, width, spacing"):
                service.submit(path, {"name": name}, "iu_xray", "findings", user=user)
    assert store.model("Med  Versa")["name"] == "MedVersa"
    assert store.counts()["submissions"] == 0 and store.attempts() == []
    store.close()


def test_a_store_keyed_by_the_old_rule_is_keyed_again_when_opened(tmp_path):
    """Keys stored under the rule before this change ("rad model 2", spaces kept) are recomputed when the store
    opens (``records.NAME_KEY_VERSION``): without that, "RadModel 2" found no key and was free to register."""
    from rexrank.leaderboard.records import NAME_KEY_VERSION

    path = tmp_path / "board.sqlite"
    store = Store(path)
    Submissions(store, tmp_path / "queue", metrics=["bleu2"]).submit(
        iu_predictions(tmp_path / "p.json", n_shift=4), {"name": "Rad Model 2"}, "iu_xray", "findings", user="alice")
    with store.transaction() as conn:  # as a store written by the previous rule left it
        conn.execute("UPDATE models SET name_key = 'rad model 2' WHERE name = 'Rad Model 2'")
        conn.execute("DELETE FROM meta WHERE key = 'name_key_version'")
    store.close()
    store = Store(path)
    assert store.meta("name_key_version") == NAME_KEY_VERSION
    assert store.model("Rad Model 2")["name_key"] == name_key("RadModel2")
    with pytest.raises(NameTaken, match="already registered by Hugging Face user alice"):
        store.check_name("RadModel 2", "hf:mallory")
    store.close()


def test_names_that_now_compare_equal_keep_their_names_when_a_store_opens(tmp_path, monkeypatch, caplog):
    """A store written when punctuation told names apart (``NAME_KEY_VERSION`` 2) may hold MedVersa (the host's)
    and Med-Versa (a submitter's). Opened now: both keep their names, owners and rows; the first registered keeps
    the key, so no further look-alike (Med_Versa) can be registered; the later one's owner still submits under it;
    the service's start names it in one log line."""
    import logging

    from rexrank.leaderboard import submissions as submissions_module
    from rexrank.leaderboard.store import log as store_log

    path = tmp_path / "board.sqlite"
    store = Store(path)
    import_published(store, bundled_tables())
    # The earlier rule, as far as these names go: punctuation kept.
    earlier = lambda name: name_key(name) + "".join(c for c in str(name) if c in "-_.*")
    monkeypatch.setattr(store_log, "name_key", earlier)
    monkeypatch.setattr(submissions_module, "published_names", lambda: {})
    Submissions(store, tmp_path / "queue", metrics=["bleu2"]).submit(
        iu_predictions(tmp_path / "p.json", n_shift=4), {"name": "Med-Versa"}, "iu_xray", "findings", user="mallory")
    with store.transaction() as conn:
        conn.execute("UPDATE meta SET value = '2' WHERE key = 'name_key_version'")
    store.close()
    monkeypatch.undo()
    store = Store(path)
    with caplog.at_level(logging.WARNING, logger="rexrank.leaderboard.submissions"):
        Submissions(store, tmp_path / "queue", metrics=["bleu2"])
    assert store.model("MedVersa")["owner"] == "host" and store.model("MedVersa")["name_key"] == "medversa"
    assert store.model("Med-Versa")["owner"] == "hf:mallory" and store.model("Med-Versa")["name_key"] is None
    assert store.check_name("Med-Versa", "hf:mallory")["name"] == "Med-Versa"  # its owner goes on submitting
    for name in ("Med_Versa", "MedVersa."):
        with pytest.raises(NameTaken, match="already registered by the leaderboard host"):
            store.check_name(name, "hf:eve")
    assert any("keep their names, owners and rows" in r.getMessage() and "'Med-Versa'" in r.getMessage()
               for r in caplog.records)
    store.close()


def test_published_names_are_kept_for_the_hosts_import(tmp_path):
    """Issue 49 point 4: on a store without the published tables (a host who imports them later), a submitter could
    register MedVersa or MAIRA_2 first, and the import then skipped upstream's row ("not imported: ... already
    registered"): a submitter blocked the published board. A name of the bundled published tables (any edition) is
    now the host's to register, so the import finds it free and every published row is imported."""
    store = Store(tmp_path / "board.sqlite")  # no seed
    service = Submissions(store, tmp_path / "queue", metrics=["bleu2"])
    path = iu_predictions(tmp_path / "p.json", n_shift=4)
    for name in ("MedVersa", "MAIRA_2", "Med-Versa", "maira 2"):
        for user in ("mallory", None):
            with pytest.raises(NameTaken, match="is a published ReXrank model's.*kept for the leaderboard host's "
                                                "import of the published tables. Choose another name."):
                service.submit(path, {"name": name}, "iu_xray", "findings", user=user)
    assert store.counts()["models"] == 0 and store.attempts() == []
    service.submit(path, {"name": "Fresh model"}, "iu_xray", "findings", user="mallory")
    report = import_published(store, bundled_tables())
    assert not [note for note in report["notes"] if "not imported" in note]
    assert store.model("MedVersa")["owner"] == "host" and store.model("MAIRA-2")["owner"] == "host"
    store.close()


def test_a_name_upstream_adds_later_is_taken_back_by_the_host(tmp_path):
    """The decided rule for a model upstream adds after this release, whose name a submitter registered first (it was
    no published name then): the import skips that row with a note naming it, the host hands the name to itself
    (`edit-model NAME --owner host`) and imports again; the published row is then on the board, under the spelling
    registered first, and the submitter's own rows are not (the board shows only rows the owner or the host added)."""
    table = bundled_tables() / "findings_result_iu_xray.csv"
    folder = tmp_path / "upstream"
    folder.mkdir()
    lines = table.read_text(encoding="utf-8").splitlines()
    header, first = lines[0], lines[1].split(",")
    added = ",".join([str(len(lines)), "2026", "FutureModel-9", "Elsewhere", "https://example.org/future",
                      *first[5:]])
    (folder / table.name).write_text("\n".join([*lines, added]) + "\n", encoding="utf-8")
    store = Store(tmp_path / "board.sqlite")
    import_published(store, bundled_tables())
    service = Submissions(store, tmp_path / "queue", metrics=["bleu2"])
    service.submit(iu_predictions(tmp_path / "p.json", n_shift=4), {"name": "FutureModel 9"}, "iu_xray", "findings",
                   user="mallory")
    report = import_published(store, folder)
    assert [n for n in report["notes"] if "not imported" in n and "FutureModel-9" in n]
    store.edit_model("FutureModel-9", owner="host")
    report = import_published(store, folder)
    assert not [n for n in report["notes"] if "not imported" in n]
    shown = [r for r in store.results("iu_xray", "findings") if name_key(r["model_name"]) == name_key("FutureModel-9")]
    assert [r["source"] for r in shown] == ["published"] and store.model("FutureModel-9")["owner"] == "host"
    assert shown[0]["model_name"] == "FutureModel 9"  # under the spelling registered first: names are never renamed
    store.close()


# -- markup (issue 39 point 3) ---------------------------------------------------------------------------------------
EVIL_REVEAL = "Evil [claim your prize](https://evil.example/x) **B was MedVersa**"
REAL_NAMES = ["CheXpertPlus-CheX-MIMIC", "MedGemma 1.5 4B", "RadPhi3.5Vision", "zzy-RGv2-2b", "Cvt2distilgpt2-IU",
              "GPT4V", "CheXagent*", "CheXpertPlus_CheX_MIMIC", "Llama-3/8B+LoRA", "Model v2.1",
              "Shuffled-reference baseline (rexrank demo)", "Qwen2-VL (7B)"]


@pytest.mark.parametrize("name, shown", [
    (EVIL_REVEAL, "[ ] *"), ("![x](https://evil.example/p.png)", "! [ ]"), ("A <b>bold</b>", "< >"),
    ("&lt;script&gt;", "< >"), ("Fish &amp; Chips", "&"), ("`code`", "`"), ("a | b | c", "|"), ("# Heading", "#"),
    ("~~struck~~", "~"), ("back\\slash", "\\"), ("$$x$$", "$"), ("{x}", "{ }"), ("*lead", "*"), ("in*side", "*"),
    ("_under_", "_"), ("snake__case", "_"), ("end_", "_"), ("MedVersa **", "*")])
def test_names_with_markup_are_refused_naming_the_characters(name, shown):
    from rexrank.errors import InputError
    from rexrank.leaderboard.records import ModelInfo

    with pytest.raises(InputError) as refused:
        ModelInfo.from_dict({"name": name})
    message = str(refused.value)
    assert message == (f"the model name contains markup characters ({shown}): type it as plain text (a * is allowed "
                       "only at the end, a _ only between letters or digits)")
    assert "\n" not in message


@pytest.mark.parametrize("name", ["Evil\nB was MedVersa", "Evil\r\nModel", "two\u2028lines", "Evil\x0bModel"])
def test_names_with_line_breaks_are_refused(name):
    from rexrank.errors import InputError
    from rexrank.leaderboard.records import ModelInfo

    with pytest.raises(InputError, match="^the model name contains a line break: type the name on one line$"):
        ModelInfo.from_dict({"name": name})


def test_real_and_published_names_stay_valid(shared_dir):
    """The names models really have, and every name of the published tables (the bundled copy and every table
    under ../shared's leaderboard_published, older and 2026 ones included), pass the name rules unchanged."""
    from rexrank.leaderboard.records import ModelInfo

    names = set(REAL_NAMES) | _published_names(bundled_tables())
    for folder in {p.parent for p in (shared_dir / "data" / "leaderboard_published").rglob("*.csv")}:
        names |= _published_names(folder)
    assert {"MedGemma 1.5 4B", "CheXagent*", "CheXpertPlus_CheX"} <= names and len(names) >= 45
    for name in sorted(names):
        assert ModelInfo.from_dict({"name": name}).name == name


def test_the_evil_reveal_name_is_refused_before_anything_is_counted(tmp_path):
    """Through the service (the Arena's reveal shows registered names): refused before the file is read, so
    nothing is queued, registered or counted against the anonymous quota."""
    from rexrank.errors import InputError

    store = Store(tmp_path / "board.sqlite")
    service = Submissions(store, tmp_path / "queue", metrics=["bleu2"])
    path = iu_predictions(tmp_path / "p.json", n_shift=4)
    for user in ("mallory", None):
        with pytest.raises(InputError, match=r"markup characters \(\[ \] \*\)"):
            service.submit(path, {"name": EVIL_REVEAL}, "iu_xray", "findings", user=user)
    assert store.counts() == {"models": 0, "results": 0, "submissions": 0} and store.attempts() == []
    store.close()

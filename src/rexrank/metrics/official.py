"""The registry of official metric weights, and the check that a results.json was scored with them.

Each weight source of ``rexrank.metrics.weights.SOURCES`` has an entry here: the sha256 of the weight files the
leaderboard's numbers come from (a Hugging Face LFS oid is the sha256 of the file's content), where a public source
gives it, each with its source; ``None`` where none was found, with the reason. For those, the host records the
digest once, from the official Hub repo, with ``rexrank models download --record-official`` (a host file, see
``host_file``); until then the source is *unverified*, never silently official.

Comparison (``check_results``): every model-backed metric in a results.json reports, in its config, the sha256 of
the weight files it loaded (``weight_digests``; SembScore and RadGraph their ``checkpoint_sha256``/``backbone`` and
``weights_sha256``). Per source: a reported file whose official digest is known must equal it (a reported 16-hex
prefix must be its prefix); any difference, or no reported digest at all (a stand-in, a hand-made file), makes the
metric *unofficial*; nothing comparable makes it *unverified*; else it is *official*. A composite (RadCliQ) takes
the worst status of its components. BLEU-2 has no weights and needs no check.

The check catches honest mistakes (random stand-ins, a local copy, another checkpoint); it is no defence against a
forged results.json, which is why the Space worker, which scores with the host's weights, is the trusted path.
"""

from __future__ import annotations

import datetime as _dt
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rexrank.errors import RexrankError, UnknownNameError
from rexrank.metrics import REGISTRY
from rexrank.metrics.weights import cache_dir, extract, fetch, file_sha256, hub_snapshot, source, weight_digests


class UnofficialWeightsError(RexrankError):
    """A result was scored with weights that are not (or cannot be shown to be) the official ones."""


@dataclass
class OfficialWeights:
    key: str  # rexrank.metrics.weights.SOURCES key
    files: dict[str, str | None]  # weight file -> sha256 of its content (None: no public digest found)
    source: str  # where the digests come from
    revision: str | None = None  # Hub commit the digests were read at, where the source names one
    note: str = ""  # why a digest is None


_RRG_REVISION = "6646433b3ad83a10f6e141db76d0ece44312b236"  # StanfordAIMI/RRG_scorers commit named by the pins below
_RECORD = ("no public digest found; the host records it from the official Hub repo with "
           "`rexrank models download --record-official`")

OFFICIAL: dict[str, OfficialWeights] = {
    w.key: w
    for w in (
        OfficialWeights(
            "bertscore", {"model.safetensors": None}, "Hub distilroberta-base (bert_score's model_type for ReXrank)",
            note=_RECORD),
        OfficialWeights(
            "chexbert", {"chexbert.pth": "6550703c92d640e1e04d8105a7a185d76ece0f25fcbf033d292785bf22c0fde1"},
            "StanfordAIMI/RRG_scorers chexbert.pth (1,314,414,442 bytes): the same sha256 is pinned independently by "
            "several public projects that download it from that repo (one at revision 6646433b, with "
            "f1chexbert 0.0.2), found with GitHub code search",
            revision=_RRG_REVISION),
        OfficialWeights(
            "chexbert_backbone",
            {"config.json": "7160e1553ad2ca51d8c1cb066be533db31826e12d173824c1bb0cb1a4f187d20",
             "vocab.txt": "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"},
            "Hub bert-base-uncased config.json (570 bytes) and vocab.txt (231,508 bytes): sha256 pinned by many public "
            "projects, at revisions 86b5e093 and 1dbc166c alike (the files did not change between them)",
            revision="86b5e0934494bd15c9632b12f734a8a67f723594"),
        OfficialWeights(
            "radgraph", {"radgraph.tar.gz": None, "weights.th": None}, "StanfordAIMI/RRG_scorers radgraph.tar.gz",
            note=_RECORD + " (it records the archive's and its weights.th's digests)"),
        OfficialWeights(
            "radgraph_xl",
            {"radgraph-xl.tar.gz": "fadb5a3454e8996714b609e3105a07e447fa61aa88fffe966b650959475117b6",
             "weights.th": None},
            "StanfordAIMI/RRG_scorers radgraph-xl.tar.gz (416,179,571 bytes) at revision 6646433b: a public "
            "integration audit of radgraph 0.1.18 pinning code and weights (not a leaderboard model: the leaderboard "
            "uses the original RadGraph)",
            revision=_RRG_REVISION,
            note="weights.th inside the archive: recorded by `--record-official` after the archive's digest matched"),
        OfficialWeights(
            "ratescore_ner", {"model.safetensors": "b380aae68a26fc608cbb568994006910d0fc7156c63fd05308b3bbaf77ed53f2"},
            "Hub Angelakeke/RaTE-NER-Deberta model.safetensors: one public download-audit script that fetched it from "
            "resolve/main (single source: confirm with `--record-official`, which refuses a differing download)"),
        OfficialWeights(
            "ratescore_embed",
            {"model.safetensors": "6164f3a7476eaaeee4b7fa2d4dea655f8ca1927853b867d59fb9d66507f5d36f"},
            "Hub FremyCompany/BioLORD-2023-C model.safetensors: the same public download-audit script (single source)"),
        OfficialWeights(
            "green", {}, "Hub StanfordAIMI/GREEN-RadLlama2-7b (safetensors shards)",
            note=_RECORD + " (the Hub cache names each shard by its sha256: no 14 GB hashing)"),
        OfficialWeights(
            "radeval_bertscore", {"model.safetensors": None}, "Hub IAMJB/RadEvalModernBERT (radeval 2.2.1's default)",
            note=_RECORD),
        OfficialWeights(
            "srrbert", {"model.safetensors": None}, "Hub StanfordAIMI/SRR-BERT-Leaves-with-Statuses (radeval 2.2.1's)",
            note=_RECORD),
        OfficialWeights(
            "srrbert_tokenizer", {"vocab.txt": None}, "Hub microsoft/BiomedVLP-CXR-BERT-general vocab.txt",
            note=_RECORD),
        OfficialWeights(
            "crimson", {}, "Hub rajpurkarlab/medgemma-4b-it-crimson (safetensors shards; the default judge of "
            "crimson-score 0.2.2 and radeval 2.2.1)",
            note=_RECORD + " (the Hub cache names each shard by its sha256)"),
        OfficialWeights(
            "temporal_f1", {"radiology.pt": None},
            "Hub stanfordnlp/stanza-en models/ner/radiology.pt (stanza 1.15's, what radeval 2.2.1 downloads)",
            note=_RECORD),
    )
}

# Which weight sources each leaderboard metric reads (radgraph_xl is an alternative, never the leaderboard's).
METRIC_SOURCES: dict[str, tuple[str, ...]] = {
    "bertscore": ("bertscore",),
    "semb": ("chexbert", "chexbert_backbone"),
    "ratescore": ("ratescore_ner", "ratescore_embed"),
    "green": ("green",),
    "radeval_bertscore": ("radeval_bertscore",),
    "srrbert": ("srrbert", "srrbert_tokenizer"),
    "crimson": ("crimson",),
    "crimson_radeval": ("crimson",),
    "temporal_f1": ("temporal_f1",),
    # rexrank's own RadGraph family: a plugin's "radgraph_..." metric reads no official weights of rexrank's
    **{name: ("radgraph",) for name in REGISTRY.names(plugins=False)
       if name == "radgraph" or name.startswith("radgraph_")},
}
# Model-backed metrics without official weights to compare: their judge is whatever the scorer configured.
NO_OFFICIAL_WEIGHTS = {"fineradscore": "FineRadScore's published judge is an API LLM (GPT-4 / Claude-3 Opus): "
                                       "there are no official weights to verify"}

_STATUS_ORDER = {"official": 0, "unverified": 1, "unofficial": 2}
_HEX = re.compile(r"[0-9a-f]{16,64}")
HOST_FORMAT = "rexrank.official_weights"


# -- the host's recorded digests ------------------------------------------------------------------------------------
def host_file() -> Path:
    """Where the host's recorded official digests live: $REXRANK_OFFICIAL_WEIGHTS, else the rexrank cache."""
    explicit = os.environ.get("REXRANK_OFFICIAL_WEIGHTS")
    return Path(explicit).expanduser() if explicit else cache_dir() / "official_weights.json"


def host_recorded() -> dict[str, dict[str, Any]]:
    """The host file's sources ({key: {repo_id, revision, files, recorded_at}}); {} when there is none."""
    path = host_file()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise UnofficialWeightsError(f"cannot read the recorded official weights {path}: {exc}. Remove it and run "
                                     "`rexrank models download --record-official` again.") from None
    if not isinstance(data, dict) or data.get("format") != HOST_FORMAT:
        raise UnofficialWeightsError(f"{path} is not a rexrank official-weights file (format {HOST_FORMAT!r})")
    sources = data.get("sources") or {}
    return {key: entry for key, entry in sources.items() if key in OFFICIAL and isinstance(entry, dict)}


def official_files(key: str) -> dict[str, tuple[str, str]]:
    """{file: (sha256, where it comes from)} known for source ``key``: the published digests, then the host's."""
    entry = OFFICIAL[key]
    known = {name: (digest, entry.source) for name, digest in entry.files.items() if digest}
    recorded = host_recorded().get(key)
    if recorded:
        where = (f"recorded on this host from {recorded.get('repo_id')}@{str(recorded.get('revision'))[:12]} "
                 f"on {recorded.get('recorded_at', '?')}")
        for name, digest in (recorded.get("files") or {}).items():
            if name not in known and isinstance(digest, str) and re.fullmatch(r"[0-9a-f]{64}", digest):
                known[name] = (digest, where)
    return known


def record_official(keys: list[str] | None = None, *, hf_cache_dir: str | None = None) -> dict[str, dict[str, Any]]:
    """Download each source from its official Hub repo and record its weight digests in ``host_file()``.

    A download whose digest differs from a published one is refused (nothing recorded for it): the official repo
    changed, or the download is not what the leaderboard used. Returns what was recorded."""
    keys = list(keys or OFFICIAL)
    for key in keys:
        if key not in OFFICIAL:
            raise UnknownNameError(f"Unknown model {key!r}. Available: {', '.join(OFFICIAL)}")
    recorded = {}
    for key in keys:
        src = source(key)
        downloaded = fetch(key, hf_cache_dir=hf_cache_dir)
        if src.filename:
            files = {src.filename: file_sha256(downloaded)}
            if src.filename.endswith((".tar.gz", ".tgz")):
                _verify_published(key, files)  # the archive first: its contents count only if it is the official one
                files.update(weight_digests(key, extract(key, downloaded)))
        else:
            files = weight_digests(key, downloaded)
        if not files:
            raise UnofficialWeightsError(f"{key}: no weight files found in {downloaded}")
        _verify_published(key, files)
        repo_id, revision = hub_snapshot(downloaded) or (src.repo_id, None)
        recorded[key] = {"repo_id": repo_id, "revision": revision, "files": files,
                         "recorded_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")}
    _write_host_file(recorded)
    return recorded


def _verify_published(key: str, files: dict[str, str]) -> None:
    for name, digest in files.items():
        published = OFFICIAL[key].files.get(name)
        if published and published != digest:
            raise UnofficialWeightsError(
                f"{key}: {name} downloaded from {source(key).repo_id} has sha256 {digest}, but its published digest is "
                f"{published} ({OFFICIAL[key].source}). Nothing was recorded: check the repo's history and download "
                f"the revision the leaderboard used.")


def _write_host_file(recorded: dict[str, dict[str, Any]]) -> None:
    path = host_file()
    sources = host_recorded() if path.exists() else {}
    sources.update(recorded)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps({"format": HOST_FORMAT, "version": 1, "sources": sources}, indent=2, sort_keys=True),
                   encoding="utf-8")
    tmp.replace(path)


# -- what a results.json reports --------------------------------------------------------------------------------------
def reported_digests(metric: str, config: Any) -> dict[str, dict[str, str]]:
    """{source key: {file: sha256 or 16-hex prefix}} that a metric's config in results.json reports."""
    if not isinstance(config, dict):
        return {}
    found = config.get("weight_digests")
    if isinstance(found, dict):
        return {key: {str(n): str(d) for n, d in files.items()}
                for key, files in found.items() if isinstance(files, dict)}
    # SembScore and RadGraph report their weights' sha256 under their own names (since before this check existed).
    sources = METRIC_SOURCES.get(metric)
    if sources == ("chexbert", "chexbert_backbone") and isinstance(config.get("checkpoint_sha256"), str):
        out = {"chexbert": {"chexbert.pth": config["checkpoint_sha256"]}}
        if isinstance(config.get("backbone"), dict):
            out["chexbert_backbone"] = {str(n): str(d) for n, d in config["backbone"].items()}
        return out
    if sources == ("radgraph",) and isinstance(config.get("weights_sha256"), str):
        return {"radgraph": {"weights.th": config["weights_sha256"]}}
    return {}


# -- the check --------------------------------------------------------------------------------------------------------
@dataclass
class SourceCheck:
    key: str
    status: str  # official | unofficial | unverified
    lines: list[str] = field(default_factory=list)  # what was found and what is official, per file


@dataclass
class MetricCheck:
    metric: str
    status: str
    sources: list[SourceCheck] = field(default_factory=list)
    reason: str = ""


@dataclass
class WeightsCheck:
    """Per model-backed metric of a results.json: official, unofficial or unverified, and why."""

    metrics: dict[str, MetricCheck]

    def names(self, status: str) -> list[str]:
        return [name for name, check in self.metrics.items() if check.status == status]

    @property
    def ok(self) -> bool:
        return all(check.status == "official" for check in self.metrics.values())

    @property
    def label(self) -> str:
        """What the board shows next to the row: '' when every weight is official."""
        parts = [f"{status} weights: {', '.join(names)}" for status in ("unofficial", "unverified")
                 if (names := self.names(status))]
        return "; ".join(parts)

    def summary(self) -> dict[str, Any]:
        """What the result record keeps (``ResultRecord.extra["weights"]``)."""
        return {"official": self.names("official"), "unofficial": self.names("unofficial"),
                "unverified": self.names("unverified"), "label": self.label}

    def explain(self) -> str:
        """Each failing metric, what results.json reports, what is official, and the fix."""
        lines = []
        for check in self.metrics.values():
            if check.status == "official":
                continue
            if check.reason:
                lines.append(f"  {check.metric} ({check.status}): {check.reason}")
            for src in check.sources:
                if src.status != "official":
                    lines.extend(f"  {check.metric} ({src.status}): {line}" for line in src.lines)
        fixes = ["Fix: score with the official weights: `rexrank models download` (on a machine with network), then "
                 "`rexrank score` again without --model-path overrides for these metrics."]
        if self.names("unverified"):
            fixes.append("Where no official digest is known, the host records it once from the official Hub repo: "
                         "`rexrank models download --record-official`.")
        return "\n".join(lines + fixes)


def _match(found: str, official: str) -> bool:
    found = found.strip().lower().removeprefix("sha256:")
    return bool(_HEX.fullmatch(found)) and official.startswith(found)


def _short(digest: str) -> str:
    return digest[:12] + "…" if len(digest) > 12 else digest


def check_source(key: str, found: dict[str, str] | None) -> SourceCheck:
    src = source(key)
    where = f"{src.repo_id}/{src.filename}" if src.filename else src.repo_id
    if not found:
        return SourceCheck(key, "unofficial", [f"no digest of the {src.what or key} weights in results.json (random "
                                               f"stand-ins or a hand-made file); official: {where}"])
    known = official_files(key)
    compared = [name for name in found if name in known]
    lines, mismatched = [], False
    for name in compared:
        digest, origin = known[name]
        if not _match(found[name], digest):
            mismatched = True
            lines.append(f"{name} has sha256 {_short(found[name])}, official {_short(digest)} ({where}; {origin})")
    if mismatched:
        return SourceCheck(key, "unofficial", lines)
    if compared:
        return SourceCheck(key, "official")
    files = ", ".join(f"{n} {_short(d)}" for n, d in found.items())
    return SourceCheck(key, "unverified", [f"{files}: no official digest of {where} is known on this host "
                                           f"({OFFICIAL[key].note or 'not recorded'})"])


def _worst(statuses) -> str:
    return max(statuses, key=_STATUS_ORDER.__getitem__, default="official")


def check_metric(name: str, configs: dict[str, Any], _seen: frozenset = frozenset()) -> MetricCheck | None:
    """The weights check of one metric of a results.json (None: no weights involved, e.g. BLEU-2)."""
    try:
        spec = REGISTRY.spec(name)
    except UnknownNameError:
        return MetricCheck(name, "unofficial", reason="not a rexrank metric")
    if spec.components:
        parts = [c for c in (check_metric(comp, configs, _seen | {name}) for comp in spec.components
                             if comp not in _seen) if c is not None]
        bad = [p.metric for p in parts if p.status != "official"]
        return MetricCheck(name, _worst(p.status for p in parts),
                           reason=f"computed from {', '.join(bad)}" if bad else "") if parts else None
    if spec.shares:  # CE F1: its weights are the shared metric's (SembScore's), reported in its own config
        config = configs.get(name) if isinstance(configs.get(name), dict) else {}
        parts = [check_metric(other, {other: config.get(f"{other}_config")}, _seen | {name}) for other in spec.shares]
        bad = [p.metric for p in parts if p is not None and p.status != "official"]
        return MetricCheck(name, _worst(p.status for p in parts if p is not None),
                           reason=f"labels from {', '.join(bad)}" if bad else "")
    if not spec.needs_model:
        return None
    if name in NO_OFFICIAL_WEIGHTS:
        return MetricCheck(name, "unverified", reason=NO_OFFICIAL_WEIGHTS[name])
    if name not in METRIC_SOURCES:
        return MetricCheck(name, "unverified", reason="no official weights are registered for this metric")
    config = configs.get(name)
    if config is None:
        return MetricCheck(name, "unofficial", reason="results.json has no config (weight fingerprint) for it")
    reported = reported_digests(name, config)
    sources = [check_source(key, reported.get(key)) for key in METRIC_SOURCES[name]]
    return MetricCheck(name, _worst(s.status for s in sources), sources)


def check_results(results: dict[str, Any]) -> WeightsCheck:
    """Check every metric of a `rexrank score` results.json against the official weights."""
    configs = results.get("configs") if isinstance(results.get("configs"), dict) else {}
    checks = {}
    for name in results.get("metrics") or {}:
        check = check_metric(name, configs)
        if check is not None:
            checks[name] = check
    return WeightsCheck(checks)


def refuse_unofficial(results: dict[str, Any], *, log=None, context: str = "") -> WeightsCheck:
    """The Space worker's rule: the host's configured weights must be official (verified), else nothing is stored.

    The host log gets the full explanation; the submitter's error names only the metrics and says the host must act.
    """
    check = check_results(results)
    if not check.ok:
        bad = check.names("unofficial") + check.names("unverified")
        if log is not None:
            log.error("%s: refused, this board's metric weights are not verified official ones (%s):\n%s",
                      context or "result", check.label, check.explain())
        raise UnofficialWeightsError(
            f"not scored onto the board: this board's weights for {', '.join(bad)} are not verified official weights. "
            "The host has been notified and must configure the official weights; your predictions were not the "
            "problem.")
    return check

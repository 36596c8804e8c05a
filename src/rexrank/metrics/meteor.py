"""METEOR 1.5 as pycocoevalcap computes it: a corpus-level metric (column ``meteor`` per study: the segment score).

How the field computes it (pycocoevalcap 1.2, PyPI, ``meteor/meteor.py``; the COCO caption evaluation most report-
generation papers call): every text goes through ``PTBTokenizer`` (``tokenizer/ptbtokenizer.py``; here the
pure-Python copy ``rexrank.metrics.ptb``), then one Java process ``java -jar -Xmx2G meteor-1.5.jar - - -stdio -l en
-norm`` receives one ``SCORE ||| reference ||| hypothesis`` line per image and answers its Meteor statistics (23
numbers: ``MeteorStats.toString``); one ``EVAL ||| stats ||| stats ...`` line then returns each segment's score and
the corpus score. The corpus score is not the mean of segment scores: Meteor sums the segment statistics
(``MeteorStats.addStats``) and scores the sums (``MeteorScorer.computeMetrics``).

rexrank keeps it corpus-level like CE F1: each study's row holds its segment score and its Meteor statistics
(``STATISTICS``), and ``corpus_values`` is ``computeMetrics`` of the column sums, so a bootstrap resample (count
vector @ statistics, rexrank.evaluation.bootstrap) gets exactly the score Meteor gives the resampled corpus. One
quirk of ``addStats`` is reproduced: a segment matched completely in one chunk adds no chunk to the corpus sum
(column ``meteor_perfect``, subtracted from the summed chunks).

The jar: ``jar=PATH``, else the ``meteor/meteor-1.5.jar`` of an installed ``pycocoevalcap`` (found without importing
its Python code). Meteor reads its paraphrase table from ``data/paraphrase-en.gz`` beside the jar (Meteor 1.5
``Constants.getDefaultParaFileURL``). One Java process per metric object, started on first use (about 15 s: it loads
the paraphrase table) and closed with the object or at exit.

``tokenizer="none"`` scores the texts as given (already PTB-tokenised text, or text tokenised another way);
``"ptb"`` (default) is pycocoevalcap's pipeline.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import tempfile
import threading
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rexrank.errors import ConfigError, ModelNotAvailableError
from rexrank.metrics import REGISTRY
from rexrank.metrics.base import CorpusMetric, check_pairs, file_digest
from rexrank.metrics.nlg import DEFAULT_TOKENIZER, TOKENIZERS, tokenize

# pycocoevalcap 1.2 meteor/meteor.py: METEOR_JAR beside the module, and its meteor_cmd.
JAR_NAME = "meteor-1.5.jar"
JAVA_OPTIONS = ("-Xmx2G",)
METEOR_ARGS = ("-", "-", "-stdio", "-l", "en", "-norm")
LANGUAGE = "en"
VERSION = "1.5"
# Meteor 1.5 util/Constants.java getDefaultParaFileURL: <directory of the jar>/data/paraphrase-<lang>.gz.
PARAPHRASE = Path("data") / f"paraphrase-{LANGUAGE}.gz"

# Meteor 1.5 util/Constants.java: English's default task is TASK_RANK ("Ranking"); PARAM_RANK[English] and
# WEIGHT_RANK[English]. The jar prints the same ("Parameters: 0.85 0.2 0.6 0.75", "Weights: 1.0 0.6 0.8 0.6").
ALPHA, BETA, GAMMA, DELTA = 0.85, 0.20, 0.60, 0.75
MODULES = ("exact", "stem", "synonym", "paraphrase")  # Constants.getModules(LANG_EN, ...), in this order
MODULE_WEIGHTS = (1.0, 0.6, 0.8, 0.6)

INSTALL_JAVA = "apt-get install default-jre-headless"
INSTALL_JAR = "pip install pycocoevalcap (or pass --option meteor.jar=PATH to a meteor-1.5.jar)"

# Per-study statistics, in the order corpus_values reads their sums. The first is the spec's column (the segment
# score); then Meteor's 23 statistics in its stats-line order (MeteorStats.toString): lengths, function words,
# per module content/function matches of test and reference, chunks, word matches; then the perfect-match flag.
SEGMENT = "meteor"
RAW_STATISTICS = (("meteor_test_len", "meteor_ref_len", "meteor_test_function_words", "meteor_ref_function_words")
                  + tuple(f"meteor_{module}_{side}_{kind}" for module in MODULES
                          for side, kind in (("test", "content"), ("ref", "content"),
                                             ("test", "function"), ("ref", "function")))
                  + ("meteor_chunks", "meteor_test_word_matches", "meteor_ref_word_matches"))
PERFECT = "meteor_perfect"
STATISTICS = (SEGMENT,) + RAW_STATISTICS + (PERFECT,)
OUTPUTS = ("meteor",)
SHOWN = ("meteor",)


def output_label(output: str) -> str:
    return "METEOR"


def check_tokenizer(tokenizer: str) -> str:
    if tokenizer not in TOKENIZERS:
        raise ConfigError(f"meteor: tokenizer={tokenizer!r} is not offered; use tokenizer=ptb (pycocoevalcap's PTB "
                          "tokenisation, the default) or tokenizer=none (score the texts as given)")
    return tokenizer


# -- the formula -------------------------------------------------------------------------------------------------------
def corpus_values(sums: np.ndarray, n) -> np.ndarray:
    """(..., 1) Meteor scores from summed statistics (..., len(STATISTICS)), vectorised over leading axes.

    Meteor 1.5 ``MeteorScorer.computeMetrics`` on ``MeteorStats.addStats`` sums, operation for operation (same
    order of floating-point additions). NaN where n is 0.
    """
    sums = np.asarray(sums, dtype=np.float64)
    raw = sums[..., 1:1 + len(RAW_STATISTICS)]
    test_len, ref_len, test_function, ref_function = raw[..., 0], raw[..., 1], raw[..., 2], raw[..., 3]
    stages = raw[..., 4:4 + 4 * len(MODULES)]
    # addStats leaves out the chunk of a segment matched completely in one chunk: its chunk count is 1.
    chunks = raw[..., 4 + 4 * len(MODULES)] - sums[..., -1]
    test_word_matches, ref_word_matches = raw[..., -2], raw[..., -1]
    test_total = np.zeros_like(test_len)
    ref_total = np.zeros_like(ref_len)
    test_weighted = np.zeros_like(test_len)
    ref_weighted = np.zeros_like(ref_len)
    for i in range(len(MODULES)):
        test_total = test_total + stages[..., 4 * i] + stages[..., 4 * i + 2]
        ref_total = ref_total + stages[..., 4 * i + 1] + stages[..., 4 * i + 3]
    # computeMetrics adds the content matches of every module, then the function-word matches.
    for i, weight in enumerate(MODULE_WEIGHTS):
        test_weighted = test_weighted + stages[..., 4 * i] * weight * DELTA
    for i, weight in enumerate(MODULE_WEIGHTS):
        ref_weighted = ref_weighted + stages[..., 4 * i + 1] * weight * DELTA
    for i, weight in enumerate(MODULE_WEIGHTS):
        test_weighted = test_weighted + stages[..., 4 * i + 2] * weight * (1.0 - DELTA)
    for i, weight in enumerate(MODULE_WEIGHTS):
        ref_weighted = ref_weighted + stages[..., 4 * i + 3] * weight * (1.0 - DELTA)
    test_weighted_len = (DELTA * (test_len - test_function)) + ((1.0 - DELTA) * test_function)
    ref_weighted_len = (DELTA * (ref_len - ref_function)) + ((1.0 - DELTA) * ref_function)
    # Java's double arithmetic: x/0 is +-inf or NaN, and a NaN score becomes 0 ("catch division by zero").
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        precision = test_weighted / test_weighted_len
        recall = ref_weighted / ref_weighted_len
        f_mean = 1.0 / (((1.0 - ALPHA) / precision) + (ALPHA / recall))
        identical = (test_total == test_len) & (ref_total == ref_len) & (chunks == 1)
        frag = np.where(identical, 0.0, chunks / ((test_word_matches + ref_word_matches) / 2))
        score = f_mean * (1.0 - GAMMA * np.power(frag, BETA))
    score = np.where(np.isnan(score), 0.0, np.maximum(score, 0.0))
    empty = np.broadcast_to(np.asarray(n, dtype=np.float64), score.shape) == 0
    return np.where(empty, np.nan, score)[..., None]


def study_statistics(raw: np.ndarray) -> np.ndarray:
    """(n, len(STATISTICS)) from (n, 23) Meteor stats lines: the segment score first, the perfect-match flag last."""
    raw = np.asarray(raw, dtype=np.float64).reshape(-1, len(RAW_STATISTICS))
    stages = raw[:, 4:4 + 4 * len(MODULES)]
    test_total = stages[:, 0::4].sum(1) + stages[:, 2::4].sum(1)
    ref_total = stages[:, 1::4].sum(1) + stages[:, 3::4].sum(1)
    # MeteorStats.addStats: "if (!(testTotalMatches == testLength && referenceTotalMatches == referenceLength &&
    # chunks == 1.0)) chunks += ss.chunks" (counts are whole numbers, so the sums above are exact).
    perfect = (test_total == raw[:, 0]) & (ref_total == raw[:, 1]) & (raw[:, 4 + 4 * len(MODULES)] == 1)
    table = np.column_stack([np.zeros(len(raw)), raw, perfect.astype(np.float64)])
    table[:, 0] = corpus_values(table, 1)[:, 0]
    return table


def score_line(hyp: str, ref: str) -> str:
    """pycocoevalcap 1.2 ``Meteor._stat``: the hypothesis loses "|||" and one level of double spaces; the reference
    goes as it is (a "|||" in it makes several references, as upstream). Line breaks, which would end the line
    early, become spaces (what PTBTokenizer does before tokenising: ``caption.replace('\\n', ' ')``; Java's
    readLine also ends a line at "\\r")."""
    hyp, ref = (text.replace("\r", " ").replace("\n", " ") for text in (hyp, ref))
    hyp = hyp.replace("|||", "").replace("  ", " ")
    return " ||| ".join(("SCORE", ref, hyp))


# -- where the jar comes from ------------------------------------------------------------------------------------------
def default_jar() -> Path | None:
    """meteor/meteor-1.5.jar of an installed pycocoevalcap, found without running its code (it has no __init__)."""
    try:
        spec = importlib.util.find_spec("pycocoevalcap")
    except (ImportError, ValueError):
        return None
    for location in (spec.submodule_search_locations or []) if spec is not None else []:
        candidate = Path(location) / "meteor" / JAR_NAME
        if candidate.is_file():
            return candidate
    return None


def resolve_jar(jar: str | os.PathLike | None) -> Path:
    """The jar to run, checked: it exists and has data/paraphrase-en.gz beside it."""
    if jar is None:
        found = default_jar()
        if found is None:
            raise ModelNotAvailableError(f"meteor: no {JAR_NAME} found: pycocoevalcap (which ships it) is not "
                                         f"installed here; {INSTALL_JAR}")
        path = found
    else:
        path = Path(jar).expanduser()
        if not path.is_file():
            raise ModelNotAvailableError(f"meteor: jar={str(jar)!r} is not a file; {INSTALL_JAR}")
    paraphrase = path.parent / PARAPHRASE
    if not paraphrase.is_file():
        raise ModelNotAvailableError(f"meteor: {paraphrase} is missing: Meteor reads its paraphrase table from "
                                     f"{PARAPHRASE} beside {path.name}; {INSTALL_JAR}")
    return path.resolve()


def find_java() -> str:
    java = shutil.which("java")
    if java is None:
        raise ConfigError(f"meteor: METEOR needs Java 8+ and no `java` is on PATH: {INSTALL_JAVA}")
    return java


_DIGESTS: dict[tuple[str, int, int], str] = {}


def _digest(path: Path) -> str:
    """sha256, once per file version (the paraphrase table is 60 MB)."""
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    if key not in _DIGESTS:
        _DIGESTS[key] = file_digest(path)
    return _DIGESTS[key]


# -- the Java process --------------------------------------------------------------------------------------------------
def _close_process(proc: subprocess.Popen, stderr) -> None:
    # Meteor keeps no state worth a graceful exit (pycocoevalcap's __del__ kills it too).
    for stream in (proc.stdin, proc.stdout):
        try:
            stream.close()
        except (OSError, AttributeError):
            pass
    if proc.poll() is None:
        proc.kill()
    proc.wait()
    stderr.close()


class MeteorProcess:
    """One ``java -jar meteor-1.5.jar - - -stdio -l en -norm``: lines in, lines out, one exchange at a time."""

    def __init__(self, jar: Path):
        java = find_java()
        self.stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen([java, *JAVA_OPTIONS, "-jar", str(jar), *METEOR_ARGS], cwd=jar.parent,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr)
        self.lock = threading.Lock()
        self._finalizer = weakref.finalize(self, _close_process, self.proc, self.stderr)

    def close(self) -> None:
        self._finalizer()

    def exchange(self, lines: Sequence[str], answers: int) -> list[str]:
        """Send ``lines``; read ``answers`` lines back. A writer thread feeds stdin while this thread reads stdout,
        so neither pipe's buffer can fill up and stall Java."""
        payload = "".join(f"{line}\n" for line in lines).encode("utf-8")
        with self.lock:
            failure: list[BaseException] = []

            def write():
                try:
                    self.proc.stdin.write(payload)
                    self.proc.stdin.flush()
                except (OSError, ValueError) as exc:  # Java died: the reader reports it with its stderr
                    failure.append(exc)

            writer = threading.Thread(target=write, daemon=True)
            writer.start()
            out = []
            for _ in range(answers):
                line = self.proc.stdout.readline()
                if not line:
                    writer.join(timeout=1)
                    raise RuntimeError(f"meteor: the Java process ended (exit code {self.proc.poll()}): "
                                       f"{self._stderr_tail() or failure or 'no message'}")
                out.append(line.decode("utf-8").strip())
            writer.join()
        return out

    def _stderr_tail(self, chars: int = 2000) -> str:
        self.stderr.seek(0)
        return self.stderr.read().decode("utf-8", "replace")[-chars:].strip()

    def stats(self, hyps: Sequence[str], refs: Sequence[str]) -> np.ndarray:
        """(n, 23) Meteor statistics, one SCORE line per pair."""
        answers = self.exchange([score_line(h, r) for h, r in zip(hyps, refs)], len(hyps))
        rows = []
        for line in answers:
            values = line.split()
            if len(values) != len(RAW_STATISTICS):
                raise RuntimeError(f"meteor: the jar answered {line!r:.200} where {len(RAW_STATISTICS)} statistics "
                                   "were expected")
            rows.append([float(v) for v in values])
        return np.asarray(rows, dtype=np.float64).reshape(-1, len(RAW_STATISTICS))


class Meteor(CorpusMetric):
    """``get("meteor", jar=None, tokenizer="ptb")``: METEOR 1.5 as pycocoevalcap computes it.

    ``score`` gives each study's segment score (the per-study column); the corpus score comes from ``compute`` (or,
    in the harness, from the per-study statistics through rexrank.metrics.aggregation).
    """

    spec = REGISTRY.spec("meteor")
    STATISTICS = STATISTICS
    OUTPUTS = OUTPUTS
    SHOWN = SHOWN
    # The leaderboard's model pages (rexrank.leaderboard.board.corpus_display): section title, options shown.
    TITLE = "METEOR 1.5 (pycocoevalcap)"
    SHOWN_OPTIONS = ("tokenizer",)

    def __init__(self, jar: str | None = None, tokenizer: str = DEFAULT_TOKENIZER):
        self.jar_option = None if jar in (None, "") else str(jar)
        self.tokenizer = check_tokenizer(str(tokenizer).strip().lower())
        self._jar: Path | None = None
        self._process: MeteorProcess | None = None
        self._start_lock = threading.Lock()

    @staticmethod
    def corpus_values(sums: np.ndarray, n) -> np.ndarray:
        return corpus_values(sums, n)

    @staticmethod
    def output_label(output: str) -> str:
        return output_label(output)

    @property
    def jar(self) -> Path:
        if self._jar is None:
            self._jar = resolve_jar(self.jar_option)
        return self._jar

    def locate_weights(self) -> None:
        self.jar  # noqa: B018 - resolving checks the jar and its paraphrase table
        find_java()

    def config(self) -> dict[str, Any]:
        config = {"meteor": VERSION, "jar_sha256": _digest(self.jar),
                  "paraphrase_sha256": _digest(self.jar.parent / PARAPHRASE), "language": LANGUAGE, "norm": True,
                  "args": list(METEOR_ARGS), "tokenizer": self.tokenizer}
        if self.tokenizer == "ptb":
            from rexrank.metrics import ptb

            config["ptb"] = ptb.VERSION
        return config

    @property
    def process(self) -> MeteorProcess:
        """The Java process, started on first use."""
        with self._start_lock:
            if self._process is None or self._process.proc.poll() is not None:
                jar = self.jar
                self._process = MeteorProcess(jar)
            return self._process

    def close(self) -> None:
        """Stop the Java process now (it also stops when this object is collected, or at exit)."""
        if self._process is not None:
            self._process.close()
            self._process = None

    def statistics(self, hyps: Sequence[str], refs: Sequence[str]) -> np.ndarray:
        """(n, len(STATISTICS)) per-study statistics; each distinct pair goes to Meteor once."""
        hyps, refs = check_pairs(hyps, refs)
        if not hyps:
            return np.zeros((0, len(STATISTICS)))
        tokens = tokenize(hyps + refs, self.tokenizer)
        pairs = list(zip(tokens[:len(hyps)], tokens[len(hyps):]))
        slots: dict[tuple[str, str], int] = {}
        inverse = np.array([slots.setdefault(pair, len(slots)) for pair in pairs], dtype=np.int64)
        distinct = list(slots)
        raw = self.process.stats([h for h, _ in distinct], [r for _, r in distinct])
        return study_statistics(raw)[inverse]


__all__ = ["ALPHA", "BETA", "DELTA", "GAMMA", "MODULES", "MODULE_WEIGHTS", "Meteor", "MeteorProcess", "OUTPUTS",
           "SHOWN", "STATISTICS", "corpus_values", "default_jar", "output_label", "resolve_jar", "score_line",
           "study_statistics"]

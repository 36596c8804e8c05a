"""RadGraph memory stays linear in report length: relation pairs of a long report are scored in blocks of subject
rows, which changes no annotation. Measured numbers: docs/radgraph.md ("Memory"), bench/radgraph_memory.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from rexrank.testing.corpus import SENTENCES
from test_radgraph import annotator, archive  # noqa: F401 - the same stand-in fixtures


def synthetic_report(n_words: int, offset: int = 0) -> str:
    words = SENTENCES.split()
    return " ".join(words[(offset + i) % len(words)] for i in range(n_words))




def test_blocked_relation_scores_equal_the_full_matrix(annotator):
    import torch

    heads = annotator.heads
    gen = torch.Generator().manual_seed(0)
    dim = heads.relation_ff.layers[0].in_features // 3
    top, m = torch.randn(37, dim, generator=gen), torch.randn(37, generator=gen)
    with torch.inference_mode():
        full = heads.relation_scores([(top, m)])[0]
        for rows in (1, 5, 37, 100):
            blocks = list(heads.relation_score_rows(top, m, rows))
            assert [start for start, _ in blocks] == list(range(0, 37, rows))
            torch.testing.assert_close(torch.cat([b for _, b in blocks]), full, rtol=1e-5, atol=1e-5)


@pytest.mark.slow  # 1.7 s of CPU of its own: over the fast tier's 2 s or near it (tests/README.md, "Tiers")
def test_blocked_relation_scoring_changes_no_annotation(annotator, iu_xray_test, monkeypatch):
    """Long synthetic reports (and short real ones in the same batches) annotated with every pair at once and in
    blocks of 1 or a few subject rows: identical annotations, relations included."""
    from rexrank.metrics.radgraph.inference import RELATION_BLOCK_FLOATS

    reports = [synthetic_report(600, offset=7), synthetic_report(800, offset=5), synthetic_report(1000, offset=11)]
    reports += [study["report"] for study in list(iu_xray_test.values())[:12]]
    calls = []
    original = annotator.heads.relation_score_rows

    def spy(top, m, rows_per_block):
        calls.append(rows_per_block)
        return original(top, m, rows_per_block)

    monkeypatch.setattr(annotator.heads, "relation_score_rows", spy)
    width = annotator.heads.relation_pair_width()
    try:
        annotator.relation_block_floats = 1 << 40  # never blocked: every report's K x K pairs at once
        whole = annotator.annotate(reports, batch_size=4)
        assert calls == []
        results = {}
        for rows in (1, 7):
            # The long reports have 105-161 kept entity spans (the pairs scored): blocks of 1, or 4-6 rows.
            annotator.relation_block_floats = width * 100 * rows
            results[rows] = annotator.annotate(reports, batch_size=4)
        assert len(calls) == 6 and set(calls) >= {1}
    finally:
        annotator.relation_block_floats = RELATION_BLOCK_FLOATS
    assert sum(len(e["relations"]) for a in whole[:3] for e in a["entities"].values()) > 100
    assert results[1] == whole
    assert results[7] == whole


def test_only_pairs_of_kept_entity_spans_are_scored(annotator):
    """Issue 35 point 6: relations are scored for pairs of kept spans that are entities only (the package's
    decoding drops every other pair), the report's costliest step, which grows with the square of its length: a
    600-word report scores fewer subject rows than it has entities, not its 361 kept spans."""
    import torch

    report = synthetic_report(600, offset=7)
    keep = int(torch.ceil(torch.tensor([float(len(annotator.prepare([report])[1][0].words))]) * 0.5))
    rows = []
    for name in ("relation_scores", "relation_score_rows"):
        original = getattr(annotator.heads, name)

        def spy(*args, _original=original, _name=name):
            tops = [top for top, _ in args[0]] if _name == "relation_scores" else [args[0]]
            rows.extend(len(top) for top in tops)
            return _original(*args)

        setattr(annotator.heads, name, spy)
    try:
        annotation = annotator.annotate([report])[0]
    finally:
        del annotator.heads.relation_scores, annotator.heads.relation_score_rows
    assert annotator.cfg.relation_spans_per_word == 0.5 and keep == 361
    assert len(rows) == 1 and 0 < rows[0] <= len(annotation["entities"]) < keep


MEASURE = r"""
import json, sys
import torch
torch.set_num_threads(1)
from rexrank.metrics.radgraph.inference import Annotator
from rexrank.testing.memory import peak_rss_mib
annotator = Annotator(sys.argv[1], device="cpu")
out = annotator.annotate([sys.argv[2]])[0]
print(json.dumps({"peak_mb": peak_rss_mib(),
                  "words": len(out["text"].split())}))
"""


@pytest.mark.slow  # 5.6 s of CPU of its own: over the fast tier's 2 s or near it (tests/README.md, "Tiers")
def test_peak_memory_of_a_long_report_stays_bounded(archive):
    """2,000 words (2,408 RadGraph words): 4.2 GB peak when all relation pairs were scored at once, ~0.46 GB now
    (the process's ~0.4 GB of interpreter, torch and model included). The bound is generous; quadratic growth
    would pass it several times over."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-c", MEASURE, archive, synthetic_report(2000)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    measured = json.loads(proc.stdout.strip().splitlines()[-1])
    assert measured["words"] > 2000
    assert measured["peak_mb"] < 1500, measured


def test_a_measured_childs_peak_is_its_own():
    """The measuring child reports its own high-water mark, not the test process's: Linux carries the parent's into
    ru_maxrss across fork+exec, so late in the full suite (a ~1.5 GB pytest process) the 0.46 GB annotation read as
    1.51 GB and failed the bound above."""
    ballast = bytearray(512 * 1024 * 1024)
    ballast[::4096] = b"\x01" * len(range(0, len(ballast), 4096))  # touched: resident in this process
    code = "from rexrank.testing.memory import peak_rss_mib; print(peak_rss_mib())"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert float(proc.stdout) < 256, proc.stdout
    del ballast


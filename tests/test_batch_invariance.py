"""Every encoder metric's values depend on the text and the weights alone (issue 52, rexrank.metrics.batching).

For BERTScore, SembScore (CheXbert), SRR-BERT, RaTEScore (NER and entity embeddings), RadEval BERTScore and RadGraph:
the raw output of every pass a text takes part in (hidden states, logits) is byte-identical whatever texts share its
call (alone, among longer and shorter texts of its own length bucket, among many), and so are the metric's values,
whatever the cache already held and however many processes share the work. A spy on each encoder records, per
real row, the text's token ids and the bytes of its output; the same ids must always give the same bytes.
RadGraph's heads (NER, mention and relation scores) run in fixed-shape passes too: a spy checks their shapes and
``Annotator.head_scores`` gives the bytes a report's scores take in each call.

Each spy also checks every pass has the policy's shape, so a metric that pads to its batch's longest text fails
here even where this CPU's kernels happen to give the same bytes at both widths (checked by hand, issue 52: with
``fixed_shape_batches`` mutated to pad each pass to its longest text, every spy test fails).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rexrank import metrics

ROWS = 4  # every test metric runs passes of 4 rows: a chunk of a bucket then holds the target and 3 others

TARGET = "Small left pleural effusion with adjacent basilar atelectasis."
# Texts that share the target's length bucket and are longer (more words each), shorter texts, and long ones:
# padded to its pass's longest text, the target would see a different width in each call below.
FAMILY = [TARGET + " Stable" + " and unchanged" * k + "." for k in range(1, 7)]
OTHERS = ["No acute cardiopulmonary process.", "Heart size normal.", "Lungs clear.",
          "The cardiomediastinal silhouette is within normal limits. There is no focal consolidation, pleural "
          "effusion or pneumothorax. Degenerative changes of the thoracic spine. " * 3,
          "Moderate cardiomegaly with pulmonary vascular congestion and small bilateral pleural effusions."]
CALLS = [[TARGET], [*FAMILY, TARGET], [TARGET, *OTHERS], [*OTHERS[:2], TARGET, *FAMILY[:3], *OTHERS[2:]],
         [*reversed(FAMILY), *OTHERS, TARGET]]


class OutputSpy:
    """Forward hook on an encoder: {token ids of a real row: {bytes of that row's output}} over every pass, and
    the passes whose shape is not the policy's (``rows`` rows, each of the width of its text's bucket, up to
    ``limit``; None: the CPU default's shapes). ``alone_ok``: passes of one unpadded text are allowed too (RaTEScore's NER runs a sentence whose
    tag is a near tie alone, as the official code runs every sentence; they are not recorded)."""

    def __init__(self, module, limit: int, rows: int | None = ROWS, alone_ok: bool = False):
        from rexrank.metrics.batching import batch_shape

        self.shape = batch_shape("cpu", rows, limit)
        self.alone_ok = alone_ok
        self.seen: dict[tuple[int, ...], set[bytes]] = {}
        self.off_shape: list[tuple[int, ...]] = []
        self.handle = module.register_forward_hook(self._hook, with_kwargs=True)

    def _hook(self, module, args, kwargs, output):
        ids = kwargs.get("input_ids", args[0] if args else None)
        mask = kwargs.get("attention_mask")
        out = output[0] if not hasattr(output, "dim") else output
        lengths = [int(m.sum()) for m in mask]
        if self.alone_ok and ids.shape[0] == 1 and lengths[0] == ids.shape[1]:
            return
        if ids.shape[0] != self.shape.rows_for(ids.shape[1]) or any(self.shape.width_for(n) != ids.shape[1] for n in lengths):
            self.off_shape.append((tuple(ids.shape), *lengths))
        for r, n in enumerate(lengths):
            row = out[r, :n] if out.dim() == 3 else out[r]
            self.seen.setdefault(tuple(ids[r, :n].tolist()), set()).add(row.float().cpu().numpy().tobytes())

    def assert_one_pattern(self):
        self.handle.remove()
        assert self.seen, "the spy saw no pass"
        assert not self.off_shape, f"passes not of the policy's shape (shape, row lengths): {self.off_shape[:5]}"
        several = {ids: len(found) for ids, found in self.seen.items() if len(found) > 1}
        assert not several, f"{len(several)} texts got different bytes in different calls: {list(several.values())}"


def _paths(standins):
    bert, semb, rg = standins("bertscore"), standins("semb"), standins("radgraph")
    rate, srr = standins("ratescore"), standins("srrbert")
    return {
        "bertscore": {"model": bert["bertscore"]},
        "semb": {"model": semb["semb"], "backbone": semb["semb_backbone"]},
        "radgraph": {"model": rg["radgraph"]},
        "ratescore": {"ner_model": rate["ratescore_ner"], "embed_model": rate["ratescore_embed"]},
        "srrbert": {"model": srr["srrbert"], "tokenizer": srr["srrbert_tokenizer"], "punkt": srr["srrbert_punkt"]},
    }


@pytest.fixture(scope="module")
def configs(standins):
    found = {name: {**options, "device": "cpu", "batch_size": ROWS} for name, options in _paths(standins).items()}
    found["ratescore"]["embed_batch_size"] = ROWS
    return found


def _fresh(configs, name):
    return metrics.get(name, **configs[name])


# -- the rule itself ------------------------------------------------------------------------------------------------
def test_every_pass_has_the_shape_of_its_bucket():
    """Rows and width of each pass come from the shape alone: the last batch of a bucket is filled, a text goes to
    the narrowest width that holds it, whatever else is in the call."""
    from rexrank.metrics.batching import batch_shape, fixed_shape_batches

    shape = batch_shape("cpu", 3, 40)
    assert shape.widths == (8, 16, 24, 32, 40)
    encoded = [[1] * n for n in (5, 17, 9, 40, 16, 1, 30, 12)]
    seen = {}
    for chunk, ids, mask in fixed_shape_batches(encoded, shape, pad_id=0):
        assert ids.shape[0] == 3 and mask.shape == ids.shape
        for row, i in enumerate(chunk):
            assert ids.shape[1] == shape.width_for(len(encoded[i]))
            assert int(mask[row].sum()) == len(encoded[i])
            seen[i] = ids.shape[1]
        # filler rows repeat the first row (never an all-masked row)
        for row in range(len(chunk), 3):
            assert ids[row].tolist() == ids[0].tolist() and mask[row].tolist() == mask[0].tolist()
    assert seen == {0: 8, 1: 24, 2: 16, 3: 40, 4: 16, 5: 8, 6: 32, 7: 16}
    # Wider than 64 tokens, a pass holds rows x 64 tokens at most (at least one row): fewer filler rows.
    wide = batch_shape("cpu", 8, 512)
    assert [wide.rows_for(w) for w in (8, 64, 96, 128, 256, 512)] == [8, 8, 5, 4, 2, 1]
    encoded = [[1] * n for n in (100, 120, 90, 300, 70, 128)]
    shapes = [tuple(ids.shape) for _, ids, _ in fixed_shape_batches(encoded, wide, pad_id=0)]
    assert shapes == [(5, 96), (4, 128), (1, 384)]


def test_batch_size_is_the_rows_and_is_in_the_fingerprint(configs):
    """batch_size is honoured (the rows of every pass) and recorded: another batch size is another fingerprint,
    so a cached value is always one computed with the shape in force. None takes the device's default."""
    from rexrank.metrics.batching import DEFAULT_ROWS, batch_shape
    from rexrank.errors import ConfigError

    assert batch_shape("cuda:0", None, 512).rows == DEFAULT_ROWS["cuda"]
    assert batch_shape("cpu", None, 512).rows == DEFAULT_ROWS["cpu"]
    with pytest.raises(ConfigError, match="batch_size"):
        batch_shape("cpu", 0, 512)
    for name in ("bertscore", "semb", "srrbert", "radgraph"):
        four = metrics.get(name, **configs[name])
        five = metrics.get(name, **{**configs[name], "batch_size": 5})
        assert four.config()["batching"]["rows"] == 4 and five.config()["batching"]["rows"] == 5, name
        assert four.fingerprint != five.fingerprint, name
    rate = metrics.get("ratescore", **configs["ratescore"])
    assert rate.config()["batching"]["ner"]["rows"] == 4


@pytest.mark.slow
def test_the_cpu_default_runs_long_texts_alone_at_any_thread_count(configs):
    """The CPU default (no batch size): a text over ``CPU_ALONE_BEYOND`` tokens is a pass by itself at its own
    length, every position real, no filler; shorter texts stay in fixed-shape buckets. Every pass runs on
    ``CPU_PASS_THREADS`` whatever the caller's torch thread count (restored after), the caller's threads running
    passes side by side, so values are the same bytes at 1 and 2 threads and whatever shares the call. RadGraph's
    heads stay batched."""
    import torch

    from rexrank.metrics import batching
    from rexrank.metrics.bertscore import BertScore

    shape = batching.batch_shape("cpu", None, 512)
    cut = batching.CPU_ALONE_BEYOND
    assert shape.rows == batching.DEFAULT_ROWS["cpu"] and shape.alone_beyond == cut
    assert batching.policy("cpu", None) != batching.policy("cpu", shape.rows)  # another rule, another fingerprint
    assert batching.batch_shape("cpu", 1, 512).alone(5)  # batch_size 1: every text alone
    encoded = [[1] * n for n in (cut + 1, 5, 300, cut, 7)]
    assert [(tuple(ids.shape), int(mask.sum())) for _, ids, mask in batching.fixed_shape_batches(encoded, shape, 0)] \
        == [((shape.rows, 8), 5 + 7 + 5 * (shape.rows - 2)), ((shape.rows, cut), cut * shape.rows),
            ((1, cut + 1), cut + 1), ((1, 300), 300)]

    default = {**configs["bertscore"], "batch_size": None}
    first = BertScore(**default)
    model, _ = first._load()
    spy = OutputSpy(model, first._max_length, rows=None)
    import threading

    threads_seen = set()
    runners: dict[int, set[int]] = {1: set(), 2: set()}  # the Python threads that ran passes, by the caller's count
    asked = [1]

    def seen(*_):
        threads_seen.add(torch.get_num_threads())
        runners[asked[0]].add(threading.get_ident())
    probe = model.register_forward_hook(seen)
    before = torch.get_num_threads()
    values: dict[int, list[bytes]] = {}
    try:
        for threads in (1, 2):
            asked[0] = threads
            torch.set_num_threads(threads)
            for texts in CALLS:
                metric = BertScore(**default)
                metric._model, metric._tokenizer, metric._max_length = model, first._tokenizer, first._max_length
                values.setdefault(threads, []).append(metric.score(texts, list(reversed(texts))).tobytes())
                assert torch.get_num_threads() == threads  # the caller's count, restored
    finally:
        probe.remove()
        torch.set_num_threads(before)
    spy.assert_one_pattern()
    assert values[1] == values[2] and threads_seen == {batching.CPU_PASS_THREADS}
    # The caller's 2 threads ran passes side by side (each on one intra-op thread), its 1 thread ran them itself
    assert runners[1] == {threading.get_ident()} and len(runners[2]) >= 2 and threading.get_ident() not in runners[2]
    alone = {ids for ids in spy.seen if len(ids) > cut}
    assert alone and len(alone) < len(spy.seen)  # both kinds of pass were seen

    annotator = metrics.get("radgraph", **{**configs["radgraph"], "batch_size": None})._annotator()
    spy = OutputSpy(annotator.encoder, annotator.segment_length + 2, rows=None)
    heads = HeadSpy(annotator, rows=shape.rows)
    texts = [TARGET, *FAMILY, *OTHERS]
    together = annotator.head_scores(texts)
    alone_scores = annotator.head_scores([TARGET])[0]
    spy.assert_one_pattern()
    heads.assert_fixed_shapes()
    assert heads.passes["ner"] < len(texts)  # batched: reports share head passes
    assert {k: v.tobytes() for k, v in together[0].items()} == {k: v.tobytes() for k, v in alone_scores.items()}


# -- each encoder metric ---------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_bertscore_vectors_never_depend_on_the_call(configs):
    from rexrank.metrics.bertscore import BertScore

    spy_metric = BertScore(**configs["bertscore"])
    model, _ = spy_metric._load()
    spy = OutputSpy(model, spy_metric._max_length)
    values = []
    for texts in CALLS:
        metric = BertScore(**configs["bertscore"])
        metric._model, metric._tokenizer, metric._max_length = model, spy_metric._tokenizer, spy_metric._max_length
        values.append(metric.score(texts, list(reversed(texts)))[texts.index(TARGET)].tobytes())
        ids, vectors = metric._embed([TARGET])[0]
        assert vectors.dtype == np.float32
    spy.assert_one_pattern()
    alone = BertScore(**configs["bertscore"]).score([TARGET], [TARGET])
    assert alone[0] == pytest.approx(1.0, abs=1e-5)


@pytest.mark.slow
def test_semb_embeddings_never_depend_on_the_call(configs):
    metric = _fresh(configs, "semb")
    model, _ = metric._load()
    spy = OutputSpy(model.bert, min(512, model.bert.config.max_position_embeddings))
    patterns = set()
    for texts in CALLS:
        fresh = _fresh(configs, "semb")
        fresh._model, fresh._tokenizer = model, metric._tokenizer
        patterns.add(fresh.embeddings(texts)[texts.index(TARGET)].tobytes())
    spy.assert_one_pattern()
    assert len(patterns) == 1


@pytest.mark.slow
def test_srrbert_logits_never_depend_on_the_call(configs):
    metric = _fresh(configs, "srrbert")
    model, _ = metric._load()
    spy = OutputSpy(model, min(512, model.config.max_position_embeddings))
    labels = []
    for texts in CALLS:
        fresh = _fresh(configs, "srrbert")
        fresh._model, fresh._tokenizer = model, metric._tokenizer
        labels.append(fresh.report_labels(texts)[texts.index(TARGET)])
    spy.assert_one_pattern()
    assert all(found == labels[0] for found in labels)


@pytest.mark.slow
def test_ratescore_ner_and_embeddings_never_depend_on_the_call(configs):
    metric = _fresh(configs, "ratescore")
    metric._load()
    ner_limit = min(512, metric._ner.model.config.max_position_embeddings)
    ner_spy = OutputSpy(metric._ner.model, ner_limit, alone_ok=True)
    embed_spy = OutputSpy(metric._encoder.model, 30)
    entities, vectors = [], []
    for texts in CALLS:
        found = metric._ner.tag(texts)  # every sentence of the call in one NER run
        entities.append(found[texts.index(TARGET)])
        names = [w for text in texts for w in text.split()]  # entity-like phrases of many lengths
        vectors.append(metric._encoder(names + ["pleural effusion"])[-1].tobytes())
    ner_spy.assert_one_pattern()
    embed_spy.assert_one_pattern()
    assert all(e == entities[0] for e in entities) and len(set(vectors)) == 1


@pytest.mark.slow
def test_deberta_position_projections_are_kept_and_change_no_byte(configs, monkeypatch):
    """RaTEScore's NER keeps DeBERTa's weight-only relative-position projections (``entities.
    reuse_position_projections``, a patch of transformers' DeBERTa-v2 internals, pinned by pyproject's transformers
    range): it applies to the model transformers builds today (this fails when transformers renames what it
    patches: the patch then leaves the model as it is, slower), and the logits are the bytes of the unpatched
    model's, on the first pass and on the ones that reuse the kept projections."""
    import torch

    from rexrank.metrics.ratescore import entities

    patched = _fresh(configs, "ratescore")
    patched._load()
    model = patched._ner.model
    assert model.deberta.encoder.get_rel_embedding.__name__ == "table"
    names = ("query_proj", "key_proj", "pos_query_proj", "pos_key_proj")
    kept = [getattr(m, n) for m in model.modules() for n in names
            if isinstance(getattr(m, n, None), torch.nn.Linear) and getattr(m, n).forward.__name__ == "memo_forward"]
    assert len(kept) >= 2 * model.config.num_hidden_layers  # each layer's query and key projections at least
    monkeypatch.setattr(entities, "reuse_position_projections", lambda model: None)
    plain = _fresh(configs, "ratescore")
    plain._load()
    assert plain._ner.model.deberta.encoder.get_rel_embedding.__name__ != "table"
    tok = patched._ner.tokenizer
    batch = tok([TARGET, *FAMILY[:3]], padding=True, return_tensors="pt")
    with torch.inference_mode():
        want = plain._ner.model(**batch).logits.numpy().tobytes()
        got = [model(**batch).logits.numpy().tobytes() for _ in range(3)]
    assert got == [want] * 3


class HeadSpy:
    """Forward hooks on RadGraph's NER scorer and relation output layer: the sizes of the head passes whose first
    dimension is not one the policy allows (a bucket's rows x its padded spans, or x its padded pairs)."""

    def __init__(self, annotator, rows: int = ROWS):
        from rexrank.metrics.batching import WIDTHS
        from rexrank.metrics.radgraph import inference

        heads = annotator.heads
        span_dim = heads.ner.ff.layers[0].in_features
        pair_width = heads.relation_pair_width()
        self.spans = set()
        for width in WIDTHS[:8]:
            n_spans = len(annotator._spans_of(width)[0])
            self.spans.add(annotator._pass_rows(rows, n_spans * span_dim, inference.SPAN_PASS_FLOATS) * n_spans)
        self.pairs = {annotator._pass_rows(rows, k * k * pair_width, inference.RELATION_PASS_FLOATS) * k * k
                      for k in WIDTHS[:6]}
        self.off_shape: list[tuple[str, int]] = []
        self.passes = {"ner": 0, "relations": 0}
        self.handles = [heads.ner.register_forward_hook(self._hook("ner", self.spans)),
                        heads.relation_out.register_forward_hook(self._hook("relations", self.pairs))]

    def _hook(self, name, allowed):
        def hook(module, args, output):
            self.passes[name] += 1
            if args[0].reshape(-1, args[0].shape[-1]).shape[0] not in allowed:
                self.off_shape.append((name, int(args[0].reshape(-1, args[0].shape[-1]).shape[0])))
        return hook

    def assert_fixed_shapes(self):
        for handle in self.handles:
            handle.remove()
        assert self.passes["ner"] and self.passes["relations"], self.passes
        assert not self.off_shape, f"head passes not of a bucket's shape (head, rows): {self.off_shape[:5]}"


@pytest.mark.slow
def test_radgraph_never_depends_on_the_call(configs):
    """RadGraph's encoder segments go through the same fixed-shape passes, and so do its heads: word vectors, NER
    and mention scores (span passes of one word-count bucket) and relation scores (passes of one bucket of kept
    entity spans) are the same bytes for a report whatever shares the call, and so is its annotation."""
    metric = _fresh(configs, "radgraph")
    annotator = metric._annotator()
    spy = OutputSpy(annotator.encoder, annotator.segment_length + 2)
    heads = HeadSpy(annotator)
    words, scores, annotations = set(), set(), []
    for texts in CALLS:
        _, docs = annotator.prepare(texts)
        vectors = annotator.word_vectors(docs, ROWS)
        words.add(vectors[texts.index(TARGET)].cpu().numpy().tobytes())
        found = annotator.head_scores(texts, ROWS)[texts.index(TARGET)]
        assert set(found) == {"ner", "mentions", "relations"}
        scores.add(tuple(found[name].tobytes() for name in sorted(found)))
        annotations.append(annotator.annotate(texts, ROWS)[texts.index(TARGET)])
    spy.assert_one_pattern()
    heads.assert_fixed_shapes()
    assert len(words) == 1 and len(scores) == 1 and all(a == annotations[0] for a in annotations)
    assert annotations[0]["entities"] and any(e["relations"] for e in annotations[0]["entities"].values())


@pytest.mark.slow
def test_radgraph_heads_do_not_depend_on_the_batch_position_or_size(configs):
    """Every report of a call gets the same head scores (bytes) in any order and with any rows per pass but the
    shape's own: each one alone, the call reversed, and the call again (a second call on the same annotator)."""
    metric = _fresh(configs, "radgraph")
    annotator = metric._annotator()
    texts = [TARGET, *FAMILY, *OTHERS]
    assert annotator.head_scores(["", " \n "], ROWS) == [None, None]  # no words: no scores, no pass
    together = annotator.head_scores(texts, ROWS)
    backwards = annotator.head_scores(list(reversed(texts)), ROWS)[::-1]
    again = annotator.head_scores(texts, ROWS)
    for i, text in enumerate(texts):
        alone = annotator.head_scores([text], ROWS)[0]
        for found in (backwards[i], again[i]):
            assert {k: v.tobytes() for k, v in found.items()} == {k: v.tobytes() for k, v in alone.items()}, text
        assert {k: v.tobytes() for k, v in together[i].items()} == {k: v.tobytes() for k, v in alone.items()}, text


@pytest.mark.slow
def test_radgraph_long_reports_fold_into_the_same_passes(configs):
    """A report longer than one segment is several rows of the policy's passes; its vectors are still the same
    whatever shares the call."""
    metric = _fresh(configs, "radgraph")
    annotator = metric._annotator()
    long_report = " ".join(OTHERS * 12)
    spy = OutputSpy(annotator.encoder, annotator.segment_length + 2)
    first = annotator.annotate([long_report], ROWS)[0]
    assert annotator.annotate([*FAMILY, long_report, TARGET], ROWS)[len(FAMILY)] == first
    spy.assert_one_pattern()


# -- the cache's content and the process count -----------------------------------------------------------------------
@pytest.mark.slow
def test_warm_equals_cold_byte_for_byte(configs):
    """A metric computes only what its cache lacks, so a warm cache changes which texts share a pass; the values
    are the cold ones bit for bit."""
    hyps = [TARGET, *OTHERS[:3], FAMILY[2]]
    refs = [OTHERS[4], FAMILY[0], TARGET, OTHERS[3], OTHERS[0]]
    for name in ("bertscore", "semb", "srrbert", "radgraph", "ratescore"):
        cold = _fresh(configs, name).score(hyps, refs)
        warm_metric = _fresh(configs, name)
        warm_metric.score([FAMILY[1], TARGET], [OTHERS[2], FAMILY[5]])  # some texts cached, among other neighbours
        warm = warm_metric.score(hyps, refs)
        assert warm.tobytes() == cold.tobytes(), name


@pytest.mark.slow
def test_two_processes_give_one_process_bytes(tmp_path, configs):
    """Every rank of a launched 2-process job (tests/test_parallel.py's worker) gets the single-process frame
    exactly: each rank embeds only its share of the texts, with other neighbours, in passes of the same shapes."""
    from test_parallel import changed_sources, launch

    hyps = [TARGET, *OTHERS, *FAMILY[:3]]
    refs = [*FAMILY[3:], *reversed(OTHERS), TARGET, OTHERS[1]][:len(hyps)]
    options = {"hyps": hyps, "refs": refs,
               "metrics": {name: {k: (str(v) if isinstance(v, Path) else v) for k, v in configs[name].items()}
                           for name in ("bertscore", "semb", "srrbert", "radgraph", "ratescore")}}
    one = launch("models", tmp_path / "one", 1, options)[0]
    assert one["ok"], one
    for rank in launch("models", tmp_path / "two", 2, options):
        assert rank["ok"], rank
        for name in options["metrics"]:
            assert rank[name]["frame"] == one[name]["frame"], (name, changed_sources(rank, one))


# -- the GPU check's encoder part, on CPU ----------------------------------------------------------------------------
@pytest.mark.slow
def test_the_gpu_check_covers_the_encoders(tmp_path):
    """bench/gpu.py's encoders check (what a lent GPU runs, docs/gpu.md) runs here with --smoke: both sides of
    each encoder print texts per second, and the byte-identity check holds."""
    import json
    import os
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[1]
    rows_file = tmp_path / "rows.json"
    done = subprocess.run([sys.executable, str(repo / "bench" / "gpu.py"), "--smoke", "--device", "cpu", "--only",
                           "encoders", "--reports", "12", "--encoder-batch", "4", "--json", str(rows_file)],
                          capture_output=True, text=True, timeout=900,
                          env={**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads(rows_file.read_text())
    assert {r["side"] for r in rows} == {f"{name}, {side}" for name in ("bertscore", "semb", "srrbert", "radgraph")
                                         for side in ("one text per pass", "fixed-shape batches")}
    assert all(r["identical"] and r["seconds"] > 0 and r["items"] == 12 for r in rows), rows
    assert done.stdout.count("byte-identical alone and among others: True") == 4, done.stdout


# -- the deterministic settings (the parts a CPU can check) -------------------------------------------------------
@pytest.mark.slow
def test_cuda_settings_are_set_where_a_model_loads_and_cpu_is_left_alone():
    """prepare_device('cuda') turns on deterministic algorithms (warn only), sets CUBLAS_WORKSPACE_CONFIG unless the
    user did, turns TF32 and cuDNN benchmarking off; on CPU it changes nothing. In a child process: the flags are
    process-wide."""
    import subprocess
    import sys

    probe = ("import os, torch\n"
             "from rexrank.metrics.batching import prepare_device, determinism\n"
             "torch.backends.cuda.matmul.allow_tf32 = True\n"
             "prepare_device('cpu')\n"
             "print(torch.are_deterministic_algorithms_enabled(), os.environ.get('CUBLAS_WORKSPACE_CONFIG'),"
             " torch.backends.cuda.matmul.allow_tf32)\n"
             "prepare_device('cuda:0')\n"
             "print(torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled(),"
             " os.environ.get('CUBLAS_WORKSPACE_CONFIG'), torch.backends.cuda.matmul.allow_tf32,"
             " torch.backends.cudnn.allow_tf32, torch.backends.cudnn.benchmark)\n"
             "print(sorted(determinism('cuda')), determinism('cpu')['attention'])\n")
    env = {k: v for k, v in __import__("os").environ.items() if k != "CUBLAS_WORKSPACE_CONFIG"}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    lines = out.stdout.splitlines()
    assert lines[0] == "False None True"
    assert lines[1] == "True True :4096:8 False False False"
    assert "use_deterministic_algorithms" in lines[2] and "tf32" in lines[2] and "transformers eager" in lines[2]
    kept = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                          env={**env, "CUBLAS_WORKSPACE_CONFIG": ":16:8"})
    assert kept.stdout.splitlines()[1].split()[2] == ":16:8"  # the user's value is kept


@pytest.mark.slow
def test_every_encoder_runs_eager_attention(configs):
    """The attention backend is pinned at load (transformers' eager implementation) for every encoder metric."""
    bert = _fresh(configs, "bertscore")
    semb = _fresh(configs, "semb")
    srr = _fresh(configs, "srrbert")
    rate = _fresh(configs, "ratescore")
    rate._load()
    models = {"bertscore": bert._load()[0], "semb": semb._load()[0].bert, "srrbert": srr._load()[0],
              "ratescore ner": rate._ner.model, "ratescore embed": rate._encoder.model,
              "radgraph": _fresh(configs, "radgraph")._annotator().encoder}
    for name, model in models.items():
        assert model.config._attn_implementation == "eager", name
    for name in ("bertscore", "semb", "srrbert", "radgraph"):
        assert _fresh(configs, name).config()["determinism"]["attention"] == "transformers eager", name

"""How every encoder metric runs its model: one batching policy and the deterministic settings (issue 52).

The owner of both for BERTScore, CheXbert (SembScore, CE F1), RaTEScore (NER and entity embeddings), SRR-BERT and
RadGraph. A metric builds its ``BatchShape`` with ``batch_shape``, records ``shape.describe()`` (and
``determinism(device)``) in its config, so in every fingerprint and cache key, and runs its passes through
``run_fixed_shape``.

**Fixed-shape batches.** A text goes to the narrowest of the shape's widths that holds it (length buckets) and every
pass of a bucket has exactly ``rows_for(width)`` rows of exactly that width: ``rows`` up to ``ROW_TOKENS`` tokens,
then as many as hold ``rows x ROW_TOKENS`` tokens (at least one), so a pass never holds more tokens than ``rows``
texts of 64. Texts are right-padded (masked) to the bucket's width and the last batch of a bucket is filled with
copies of its first row. Every pass a text takes part in therefore has one shape, decided by the text's length
alone. The token cap bounds what filler rows cost: with ``rows`` at every width, a wide bucket holding one text
computed ``rows`` of them (CheXbert's tokenizer on distinct IU-Xray reports at 8 rows: 2.42x the real tokens for
32 texts, 1.94x for 128, 1.35x for 590; 64 rows: 2.92x for 590. With the cap: 1.70x, 1.23x, 1.23x; 64 rows,
590 texts: 1.61x). Matrix-multiply and attention kernels pick their blocking and summation
order from the whole batch's shape, so padding to the batch's longest text let a text's bytes depend on which other
texts shared its pass (distilroberta stand-in, CPU: two byte patterns for one text across neighbours, up to 1.5e-6
apart; with a fixed width, one pattern across neighbours, positions and 2-8 rows, at 1 and 2 threads; issue 52,
checked again here). Masked padding keeps other rows out of a row's values; the fixed shape keeps the kernels alike.
A text's values are then a function of the text, the weights and the shape: whatever its neighbours, the batch a
caller passes, the process count or what the per-text cache already held (tests/test_batch_invariance.py).

**Texts alone** (``rows`` 1, or on the CPU default texts over ``CPU_ALONE_BEYOND`` tokens): a pass is the text
by itself at its own length, an all-ones mask, no bucket padding and no filler (one row has no neighbour to pad
for, so a bucket would only add tokens); its shape is a function of the text, so it is invariant by construction.
The CPU default keeps short texts (sentences, entity phrases) in the buckets, where a pass's fixed cost outweighs
the filler, and runs every pass on ``CPU_PASS_THREADS`` intra-op threads whatever torch's setting (restored after):
these passes are too small to split, and with one thread per pass bytes no longer depend on the thread count. The
caller's threads run passes side by side instead (a thread pool of torch's thread count), so the CPU saved is not
paid for in wall time.

The shape is the device's choice and is recorded: ``rows`` is the metric's ``batch_size`` where the caller gives
one (that many rows at every width, the caller's threads), else the device's default: 64 rows on CUDA (operator
dispatches per text, issue 52); on a CPU the rule above. On CPU the all-bucket rule lost: at 8 rows the filler and
bucket padding computed 1.35-2.08x the real tokens, and a 12-pair call took 1.34-2.31x the CPU of the better of
d7d1e7e (one unpadded text per pass) and afc171f (padded length-sorted batches); the CPU default now, measured
against both: docs/gpu.md ("CPU time against the two older trees").

**Asynchronous passes.** ``run_fixed_shape`` queues every pass before it reads any result back, so on a GPU the
passes run back to back; results come to the CPU once all are queued (``to_cpu=False`` keeps them on the device).

**Deterministic settings** (``prepare_device``), set where a model is loaded, on CUDA only (docs/gpu.md, with their
costs): ``CUBLAS_WORKSPACE_CONFIG=:4096:8`` unless set, ``torch.use_deterministic_algorithms(True,
warn_only=True)``, TF32 off for matmuls and cuDNN, cuDNN benchmarking off. On every device the attention is pinned
to transformers' eager implementation (``pin_attention``, at load): SDPA picks its kernel per call from the shape,
the mask and the hardware, and transformers drops a mask that is all ones, so a pass whose rows all fill its width
would take another kernel than the same rows beside a shorter text (on this CPU SDPA gave one text two byte
patterns across widths 22-31 and 37-61; eager gave one across all). On CPU nothing global is changed beyond
the CPU default's thread count during a call's passes (restored after).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rexrank.errors import ConfigError

if TYPE_CHECKING:
    import torch

# Padded widths of the length buckets (tokens, specials included), up to each metric's own limit, which is always
# the last width. Neighbouring widths are at most 1.5x apart, so padding costs at most a third of a pass's tokens.
WIDTHS = (8, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192)
# Rows per pass when the caller gives no batch size. CUDA: enough rows to fill the device between launches. CPU:
# few, for the short texts that still go in buckets (below); the rest run alone (docs/gpu.md, bench/encoders.py).
DEFAULT_ROWS = {"cuda": 64, "cpu": 8}
FALLBACK_ROWS = 8  # other device types (mps, xpu): the CPU's rows, in buckets at every width, until measured there

# The CPU default (no batch size given): a text longer than this many tokens runs alone at its own length (no
# padding, no filler: on a CPU a report's own matrices are already large enough, and padding only adds work);
# shorter ones (sentences, entity phrases) go in fixed-shape buckets of DEFAULT_ROWS["cpu"], where a pass's fixed
# cost dominates (DeBERTa's relative-position projections: RaTEScore's NER took 2.5x the CPU one sentence per pass).
CPU_ALONE_BEYOND = 32
# Intra-op threads of every pass of the CPU default: a pass of one report or of 8 short texts is too small to split
# (at 2 threads the OpenMP hand-offs cost more CPU than they save wall time). The caller's threads run passes side by
# side instead (queue_fixed_shape), and the caller's count is restored after.
CPU_PASS_THREADS = 1

# Tokens per row at which a pass still takes all ``rows`` rows; a wider bucket takes rows * ROW_TOKENS // width.
ROW_TOKENS = 64

RULE = ("fixed-shape length buckets: each text right-padded (masked) to the narrowest width that holds it; every pass "
        "of a bucket exactly `rows` rows of one width up to 64 tokens, rows * 64 // width (at least 1) beyond, the "
        "last batch of a bucket filled with copies of its first row")
ALONE_RULE = "texts over {n} tokens: one per pass at their own length (no padding, an all-ones mask, no filler)"

ATTENTION = "transformers eager"
CUBLAS_WORKSPACE = ":4096:8"  # one of the two values PyTorch's reproducibility notes give for cuBLAS


@dataclass(frozen=True)
class BatchShape:
    """The shape of every encoder pass: ``rows`` texts, each padded to one of ``widths``."""

    rows: int
    widths: tuple[int, ...]
    alone_beyond: int | None = None  # longer texts (tokens) run one per pass at their own length; rows 1: all
    cpu_threads: int | None = None  # intra-op threads of every pass on a CPU; None: the caller's

    def alone(self, length: int) -> bool:
        """Whether a text of ``length`` tokens runs by itself, unpadded (one row has no neighbour to pad for)."""
        return self.rows == 1 or (self.alone_beyond is not None and length > self.alone_beyond)

    def width_for(self, length: int) -> int:
        if length > self.widths[-1]:
            raise ConfigError(f"a text of {length} tokens is longer than the widest pass ({self.widths[-1]}); "
                              "the encoder's truncation should have cut it")
        if self.alone(length):
            return max(int(length), 1)
        return next(width for width in self.widths if length <= width)

    def rows_for(self, width: int) -> int:
        """Rows of every pass of the bucket of ``width``: ``rows``, or as many as hold ``rows x ROW_TOKENS``; one
        where texts of that width run alone."""
        if self.alone(width):
            return 1
        return self.rows if width <= ROW_TOKENS else max(1, self.rows * ROW_TOKENS // width)

    def describe(self) -> dict[str, Any]:
        found: dict[str, Any] = {"rule": RULE, "rows": self.rows, "widths": list(self.widths)}
        if self.rows == 1 or self.alone_beyond is not None:
            found["alone"] = ALONE_RULE.format(n=0 if self.rows == 1 else self.alone_beyond)
        if self.cpu_threads is not None:
            found["cpu_threads_per_pass"] = self.cpu_threads
        return found


def policy(device: Any, batch_size: int | None) -> dict[str, Any]:
    """What goes into a metric's config (its fingerprint and cache keys): the rule, the rows and the widths. The
    last width is the encoder's own limit, fixed by its files, which the config identifies already; so the config
    is known without loading the model."""
    return {**batch_shape(device, batch_size, WIDTHS[-1]).describe(), "widest": "the encoder's limit"}


def device_type(device: Any) -> str:
    """"cuda", "cpu", ... of a device given as a string, a torch.device or None (None: the CPU)."""
    if device is None:
        return "cpu"
    text = str(getattr(device, "type", device))
    return text.split(":", 1)[0]


def batch_shape(device: Any, batch_size: int | None, max_length: int) -> BatchShape:
    """The shape a metric's passes take: ``batch_size`` rows (None: the device's default: ``DEFAULT_ROWS``, and
    on a CPU texts over ``CPU_ALONE_BEYOND`` tokens alone, every pass on ``CPU_PASS_THREADS``), widths of
    ``WIDTHS`` below ``max_length``, then ``max_length`` itself (beyond 8,192: that one width)."""
    alone_beyond = cpu_threads = None
    if batch_size is None:
        kind = device_type(device)
        rows = DEFAULT_ROWS.get(kind, FALLBACK_ROWS)
        if kind == "cpu":
            alone_beyond, cpu_threads = CPU_ALONE_BEYOND, CPU_PASS_THREADS
    elif isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ConfigError(f"batch_size must be a positive integer, got {batch_size!r}")
    else:
        rows = batch_size
    if max_length < 1:
        raise ConfigError(f"max_length must be >= 1, got {max_length}")
    widths = tuple(w for w in WIDTHS if w < max_length) + (int(max_length),)
    return BatchShape(rows=int(rows), widths=widths, alone_beyond=alone_beyond, cpu_threads=cpu_threads)


def fixed_shape_batches(encoded: Sequence[Sequence[int]], shape: BatchShape,
                        pad_id: int) -> Iterator[tuple[list[int], torch.Tensor, torch.Tensor]]:
    """Yield (indices into ``encoded``, input_ids (rows, width), attention_mask (rows, width)); row r < len(indices)
    holds text indices[r], the rest repeat row 0. Buckets go narrowest first, texts in their given order."""
    # Imported here: importing a metric module (ce_f1's label names, read by every summary) must not load torch.
    import numpy as np
    import torch

    buckets: dict[int, list[int]] = {}
    for i, ids in enumerate(encoded):
        buckets.setdefault(shape.width_for(len(ids)), []).append(i)
    for width in sorted(buckets):
        members = buckets[width]
        rows = shape.rows_for(width)
        for begin in range(0, len(members), rows):
            chunk = members[begin:begin + rows]
            # Built in numpy and handed over once: a torch op per text would be host work per text (issue 52
            # counts operator dispatches per text).
            input_ids = np.full((rows, width), pad_id, dtype=np.int64)
            mask = np.zeros((rows, width), dtype=np.int64)
            for row, i in enumerate(chunk):
                input_ids[row, :len(encoded[i])] = encoded[i]
                mask[row, :len(encoded[i])] = 1
            # Filler rows copy a real row: an all-masked row can turn attention's softmax into NaN in some kernels.
            input_ids[len(chunk):] = input_ids[0]
            mask[len(chunk):] = mask[0]
            yield chunk, torch.from_numpy(input_ids), torch.from_numpy(mask)


def run_fixed_shape(encoded: Sequence[Sequence[int]], shape: BatchShape, pad_id: int, device: Any,
                    forward: Callable[[torch.Tensor, torch.Tensor], Any],
                    progress: Callable[[int, int], None] | None = None, to_cpu: bool = True) -> list[Any]:
    """Per text of ``encoded``: its row of ``forward(input_ids, attention_mask)`` (a tensor, or a tuple of tensors,
    whose first dimension is the row), as a numpy array (``to_cpu``) or as a tensor where ``forward`` left it.

    Every pass is queued before any result is read back (one synchronisation per call on a GPU, not one per pass).
    ``progress(done, total)`` hears of each queued pass (display only)."""
    results: list[Any] = [None] * len(encoded)
    for chunk, out in queue_fixed_shape(encoded, shape, pad_id, device, forward, progress):
        parts = out if isinstance(out, tuple) else (out,)
        parts = tuple(p.cpu().numpy() if to_cpu else p for p in parts)
        for row, i in enumerate(chunk):
            results[i] = tuple(p[row] for p in parts) if isinstance(out, tuple) else parts[0][row]
    return results


def queue_fixed_shape(encoded: Sequence[Sequence[int]], shape: BatchShape, pad_id: int, device: Any,
                      forward: Callable[[torch.Tensor, torch.Tensor], Any],
                      progress: Callable[[int, int], None] | None = None) -> list[tuple[list[int], Any]]:
    """Every pass of ``encoded`` queued, nothing read back: [(indices into ``encoded``, the pass's whole output)];
    row r of an output is text indices[r] (rows past len(indices) are filler). For a caller that works on whole
    passes (RadGraph's heads) rather than on one row per text (``run_fixed_shape``)."""
    import torch

    pending: list[tuple[list[int], Any]] = []
    done = 0
    threads = torch.get_num_threads()
    pinned = shape.cpu_threads is not None and device_type(device) == "cpu" and threads != shape.cpu_threads
    batches = fixed_shape_batches(encoded, shape, pad_id)

    def one(batch: tuple[list[int], torch.Tensor, torch.Tensor]) -> tuple[list[int], Any]:
        chunk, input_ids, mask = batch
        with torch.inference_mode():  # grad mode is per thread: set in the thread that runs the pass
            return chunk, forward(input_ids.to(device), mask.to(device))

    if pinned:
        torch.set_num_threads(shape.cpu_threads)
    try:
        if pinned and threads > shape.cpu_threads:
            # The caller's threads run whole passes side by side, each pass on its own thread(s): the CPU of passes
            # too small to split, and the wall time of the caller's threads (a pass's bytes are its own: one
            # thread, one shape). torch's ops release the GIL; results come back in the passes' order.
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(max_workers=threads // shape.cpu_threads) as pool:
                done_passes = pool.map(one, batches)
                for chunk, out in done_passes:
                    pending.append((chunk, out))
                    done += len(chunk)
                    if progress is not None:
                        progress(done, len(encoded))
        else:
            for batch in batches:
                pending.append(one(batch))
                done += len(batch[0])
                if progress is not None:
                    progress(done, len(encoded))
    finally:
        if pinned:
            torch.set_num_threads(threads)
    return pending


# -- deterministic settings -------------------------------------------------------------------------------------------
def determinism(device: Any) -> dict[str, Any]:
    """The settings ``prepare_device`` makes for ``device``, as recorded in a metric's config."""
    if device_type(device) != "cuda":
        return {"device": device_type(device), "attention": ATTENTION,
                "settings": "torch defaults (kernels chosen by shape and threads)"}
    return {"device": "cuda", "use_deterministic_algorithms": "on (warn_only)",
            "CUBLAS_WORKSPACE_CONFIG": CUBLAS_WORKSPACE, "tf32": "off", "cudnn_benchmark": "off",
            "attention": ATTENTION}


def prepare_device(device: Any) -> None:
    """Make CUDA runs deterministic before a model runs there (a no-op on other devices).

    ``use_deterministic_algorithms`` is process-wide; ``warn_only`` keeps a trainer that calls a reward in the same
    process running (an op without a deterministic kernel warns instead of raising). ``CUBLAS_WORKSPACE_CONFIG`` only
    takes effect if set before cuBLAS starts in this process: a value the user set is kept."""
    if device_type(device) != "cuda":
        return
    import torch

    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", CUBLAS_WORKSPACE)
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.benchmark = False


def pin_attention(model) -> None:
    """Run ``model``'s attention in transformers' eager implementation (a no-op for models without the choice)."""
    setter = getattr(model, "set_attn_implementation", None)
    if setter is not None:
        setter("eager")

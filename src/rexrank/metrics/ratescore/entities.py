"""Entity extraction: batched NER over sentences, then RaTEScore's own IOB decoding.

The official code (RaTEScore 0.5.0/0.6.0 ``score.run_ner``) runs one forward pass per ``batch_size`` sentences
(default 1), takes the argmax label of every token, and decodes spans with ``utils.post_process``, a state machine
with quirks that change which spans come out (a B- followed by B- leaves ``end`` set, so a later I-...O run makes a
span starting at that B-; an I- followed by B- restarts the span at the I- token; a span still open at the end of
the sentence closes at the token before [SEP]). ``decode_spans`` reproduces that behaviour exactly — it is what
the metric was defined and validated with — written as our own code.

We run the model on each distinct sentence once, in the fixed-shape batches of rexrank.metrics.batching (a
sentence's logits are then a function of the sentence and the weights, whatever shares its pass); padding changes
the logits from the official per-sentence runs (batch_size=1, no padding) by float noise only (~1e-5). That noise can flip an argmax
only where a token's two best logits are that close, so a sentence with a token whose top-two gap is below
``NER_TIE_MARGIN`` is run again alone, exactly as the official code runs it (same tokenizer call, batch of one):
its labels are then the official ones bit for bit (same device, library and thread count).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from rexrank.metrics.batching import batch_shape, run_fixed_shape
from rexrank.metrics.ratescore.constants import NER_MAX_LENGTH, NER_TIE_MARGIN

SKIPPED_TOKENS = ("[CLS]", "[SEP]")  # post_process skips tokens by these strings


def decode_spans(tokens: Sequence[str], labels: Sequence[str], rules: set[str] | None = None,
                 ) -> list[tuple[int, int, str]]:
    """(start, end, type) token spans, inclusive, as RaTEScore's ``post_process`` yields them.

    ``labels`` has one label per position of the model input and may be longer than ``tokens`` (the official code
    keeps the labels of the whole padded row; only the one after the last token is ever read). ``rules``, if
    given, collects the names of the rules that fired (the parity tests check their inputs exercise every rule).
    """
    note = rules.add if rules is not None else (lambda name: None)
    spans: list[tuple[int, int, str]] = []
    start: int | None = None
    end: int | None = None
    kind: str | None = None
    last = len(labels) - 1
    for i, (token, label) in enumerate(zip(tokens, labels)):
        if token in SKIPPED_TOKENS:
            if label != "O":
                note("entity label on [CLS]/[SEP] ignored")
            continue
        if label == "O" or i >= last:
            continue
        nxt = labels[i + 1]
        if label.startswith("B-"):
            if nxt.startswith("I-"):
                note("B I: span opens" if nxt[2:] == label[2:] else "B I of another type: span keeps the B type")
                start, kind = i, label[2:]
            elif nxt.startswith("B-"):
                note("B B: single-token span, start and end stay set")
                spans.append((i, i, label[2:]))
                start, end, kind = i, i, label[2:]
            elif nxt.startswith("O"):
                note("B O: single-token span")
                spans.append((i, i, label[2:]))
                start = end = kind = None
        elif label.startswith("I-"):
            if nxt.startswith("B-"):
                note("I B: span closes, restarts at the I" if start is not None else "I B without an open span")
                end = i
                if start is not None:
                    spans.append((start, end, kind))
                start, kind = i, label[2:]
            elif nxt.startswith("O"):
                note("I O: span closes" if start is not None else "I O without an open span: dropped")
                end = i
                if start is not None:
                    spans.append((start, end, kind))
                start = end = kind = None
            elif start is not None and nxt[2:] != kind:
                note("I I of another type: span keeps its type")
    if start is not None and end is None:
        note("span open at the end: closes before the last token")
        spans.append((start, len(tokens) - 2, kind))
    elif start is not None:
        note("span open at the end with end set: dropped")
    return spans


def reuse_position_projections(model) -> None:
    """Compute DeBERTa's relative-position projections once per layer instead of once per pass.

    DeBERTa-v2/v3 (RaTEScore's NER) projects its whole relative-position table (2 x 256 rows) by each layer's query
    and key weights in every forward pass, whatever the input: on the real-size stand-in, 24 products of 512 x 768
    by 768 x 768, ~80% of a one-sentence pass's CPU (torch profiler: addmm), so a pass cost ~0.27 s however short
    its sentences. The table comes from the weights alone (layer norm of an embedding); we keep it and each
    projection of it, computed by the same op on the same tensor at the thread count in force (part of the key), so
    every value keeps its bytes. Only under no_grad / inference (never while training); other models: unchanged."""
    encoder = getattr(getattr(model, "deberta", None), "encoder", None)
    if encoder is None or not getattr(encoder, "relative_attention", False) or not hasattr(encoder, "get_rel_embedding"):
        return
    original_table = encoder.get_rel_embedding
    tables: dict[str, torch.Tensor] = {}

    def table():
        if torch.is_grad_enabled():
            return original_table()
        if "t" not in tables:
            with torch.inference_mode(False), torch.no_grad():
                tables["t"] = original_table()
        return tables["t"]

    encoder.get_rel_embedding = table
    for module in model.modules():
        for name in ("query_proj", "key_proj", "pos_query_proj", "pos_key_proj"):
            linear = getattr(module, name, None)
            if isinstance(linear, torch.nn.Linear):
                linear.forward = _memo_on_table(linear.forward, tables)


def _memo_on_table(forward, tables: dict[str, torch.Tensor]):
    memo: dict[tuple, torch.Tensor] = {}

    def memo_forward(x):
        base = tables.get("t")
        if base is None or torch.is_grad_enabled() or x.data_ptr() != base.data_ptr() or x.dim() != 3:
            return forward(x)
        key = (tuple(x.shape), tuple(x.stride()), x.storage_offset(), torch.get_num_threads(), x.device)
        found = memo.get(key)
        if found is None:
            with torch.inference_mode(False), torch.no_grad():  # a normal tensor, usable inside and outside
                own = base.as_strided(x.shape, x.stride(), x.storage_offset())
                found = memo[key] = forward(own)
        return found

    return memo_forward


class NerRunner:
    """Token classification over many sentences; returns [(entity text, type)] per sentence."""

    def __init__(self, tokenizer, model, device: torch.device, batch_size: int | None):
        self.tokenizer = tokenizer
        self.model = model
        self.device = device
        self.batch_size = batch_size
        config = model.config
        self.id2label = {int(k): v for k, v in config.id2label.items()}
        self.sentences_rerun = 0  # sentences run again alone because of a near-tie logit (diagnostics, tests)
        reuse_position_projections(model)

    def __call__(self, sentences: list[str],
                 progress: Callable[[int, int], None] | None = None) -> list[list[tuple[str, str]]]:
        return [[(self.tokenizer.convert_tokens_to_string(tokens[s : e + 1]), kind)
                 for s, e, kind in decode_spans(tokens, labels)] for tokens, labels in self.tag(sentences, progress)]

    def tag(self, sentences: list[str],
            progress: Callable[[int, int], None] | None = None) -> list[tuple[list[str], list[str]]]:
        """(tokens, labels) per sentence: the tokens post_process sees and one label per model input position.
        ``progress(done, total)``: sentences tagged so far, after each batch (display only)."""
        if not sentences:
            return []
        tok = self.tokenizer
        encoded = tok(sentences, max_length=NER_MAX_LENGTH, truncation=True)["input_ids"]
        pad_id = tok.pad_token_id

        def forward(input_ids, mask):
            logits = self.model(input_ids=input_ids, attention_mask=mask).logits
            return logits.argmax(dim=-1), self._top_two_gaps(logits)

        widest = min(NER_MAX_LENGTH, getattr(self.model.config, "max_position_embeddings", NER_MAX_LENGTH))
        rows = run_fixed_shape(encoded, batch_shape(self.device, self.batch_size, widest), pad_id, self.device,
                               forward, progress=progress)
        results: list[tuple[list[str], list[str]]] = []
        for i, (predicted, gaps) in enumerate(rows):
            label_ids = predicted[: len(encoded[i])].tolist()
            if float(gaps[: len(encoded[i])].min()) < NER_TIE_MARGIN:
                label_ids = self._alone(sentences[i])
                self.sentences_rerun += 1
            # run_ner keeps the first (#ids != pad id) ids: identical to the real length unless the text itself
            # contains the literal "[PAD]" token, where we follow the official truncation too.
            kept = encoded[i][: sum(1 for t in encoded[i] if t != pad_id)]
            results.append((tok.convert_ids_to_tokens(kept), [self.id2label[j] for j in label_ids]))
        return results

    @staticmethod
    def _top_two_gaps(logits: torch.Tensor) -> torch.Tensor:
        """Per token: best minus second-best logit (+inf with a single label)."""
        if logits.shape[-1] < 2:
            return torch.full(logits.shape[:-1], float("inf"))
        top = torch.topk(logits.float(), 2, dim=-1).values
        return top[..., 0] - top[..., 1]

    def _alone(self, sentence: str) -> list[int]:
        """Label ids of one sentence run as the official run_ner runs it (batch_size=1, hence no padding)."""
        inputs = self.tokenizer([sentence], max_length=NER_MAX_LENGTH, padding=True, truncation=True,
                                return_tensors="pt").to(self.device)
        with torch.no_grad():
            logits = self.model(**inputs).logits
        return torch.argmax(logits, dim=2)[0].tolist()

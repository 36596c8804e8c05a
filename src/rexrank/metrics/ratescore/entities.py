"""Entity extraction: batched NER over sentences, then RaTEScore's own IOB decoding.

The official code (RaTEScore 0.5.0/0.6.0 ``score.run_ner``) runs one forward pass per ``batch_size`` sentences
(default 1), takes the argmax label of every token, and decodes spans with ``utils.post_process``, a state machine
with quirks that change which spans come out (a B- followed by B- leaves ``end`` set, so a later I-...O run makes a
span starting at that B-; an I- followed by B- restarts the span at the I- token; a span still open at the end of
the sentence closes at the token before [SEP]). ``decode_spans`` reproduces that behaviour exactly — it is what
the metric was defined and validated with — written as our own code.

We run the model on each distinct sentence once, in length-sorted batches; only padding differs from the official
per-sentence runs, which changes logits by float noise only.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from rexrank.metrics.batching import padded_batches
from rexrank.metrics.ratescore.constants import NER_MAX_LENGTH

SKIPPED_TOKENS = ("[CLS]", "[SEP]")  # post_process skips tokens by these strings


def decode_spans(tokens: Sequence[str], labels: Sequence[str]) -> list[tuple[int, int, str]]:
    """(start, end, type) token spans, inclusive, as RaTEScore's ``post_process`` yields them.

    ``labels`` has one label per position of the model input and may be longer than ``tokens`` (the official code
    keeps the labels of the whole padded row; only the one after the last token is ever read).
    """
    spans: list[tuple[int, int, str]] = []
    start: int | None = None
    end: int | None = None
    kind: str | None = None
    last = len(labels) - 1
    for i, (token, label) in enumerate(zip(tokens, labels)):
        if token in SKIPPED_TOKENS or label == "O" or i >= last:
            continue
        nxt = labels[i + 1]
        if label.startswith("B-"):
            if nxt.startswith("I-"):
                start, kind = i, label[2:]
            elif nxt.startswith("B-"):
                spans.append((i, i, label[2:]))
                start, end, kind = i, i, label[2:]
            elif nxt.startswith("O"):
                spans.append((i, i, label[2:]))
                start = end = kind = None
        elif label.startswith("I-"):
            if nxt.startswith("B-"):
                end = i
                if start is not None:
                    spans.append((start, end, kind))
                start, kind = i, label[2:]
            elif nxt.startswith("O"):
                end = i
                if start is not None:
                    spans.append((start, end, kind))
                start = end = kind = None
    if start is not None and end is None:
        spans.append((start, len(tokens) - 2, kind))
    return spans


class NerRunner:
    """Token classification over many sentences; returns [(entity text, type)] per sentence."""

    def __init__(self, tokenizer, model, device: torch.device, batch_size: int):
        self.tokenizer = tokenizer
        self.model = model
        self.device = device
        self.batch_size = batch_size
        config = model.config
        self.id2label = {int(k): v for k, v in config.id2label.items()}

    def __call__(self, sentences: list[str]) -> list[list[tuple[str, str]]]:
        if not sentences:
            return []
        tok = self.tokenizer
        encoded = tok(sentences, max_length=NER_MAX_LENGTH, truncation=True)["input_ids"]
        order = sorted(range(len(sentences)), key=lambda i: len(encoded[i]))
        pad_id = tok.pad_token_id
        results: list[list[tuple[str, str]] | None] = [None] * len(sentences)
        for batch, ids, mask in padded_batches(encoded, order, self.batch_size, pad_id):
            with torch.inference_mode():
                logits = self.model(input_ids=ids.to(self.device), attention_mask=mask.to(self.device)).logits
            predicted = logits.argmax(dim=-1).cpu().tolist()
            for row, i in enumerate(batch):
                results[i] = self._entities(encoded[i], predicted[row][: len(encoded[i])], pad_id)
        return results  # type: ignore[return-value]

    def _entities(self, ids: list[int], label_ids: list[int], pad_id: int) -> list[tuple[str, str]]:
        # run_ner keeps the first (#ids != pad id) ids: identical to the real length unless the text itself
        # contains the literal "[PAD]" token, where we follow the official truncation too.
        kept = ids[: sum(1 for t in ids if t != pad_id)]
        tokens = self.tokenizer.convert_ids_to_tokens(kept)
        labels = [self.id2label[j] for j in label_ids]
        return [(self.tokenizer.convert_tokens_to_string(tokens[s : e + 1]), kind)
                for s, e, kind in decode_spans(tokens, labels)]

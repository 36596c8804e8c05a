"""Reference SembScore and CheXbert labels: a plain transformers 4.x computation following the official code.

Official procedure (rajpurkarlab/CXR-Report-Metric @9c9ecad, CXRMetric/CheXbert/src): bert_tokenizer.py cleans each
report (strip, "\n" -> " ", "\s+" -> " ", strip), tokenizes with BertTokenizer (bert-base-uncased),
encode_plus(tokens), clips > 512 ids to ids[:511] + [SEP], and encodes an empty report as [CLS] [SEP];
encode.py loads chexbert.pth (strip "module."), pads batches of 18 with PAD 0 and an attention mask, and keeps the
last layer's [CLS] vector (bert_encoder.py); label.py takes the argmax of each of the 14 heads (bert_labeler.py)
and save_preds maps classes to CheXpert codes (0 blank -> NaN, 1 -> 1, 2 -> 0, 3 -> -1). run_eval.py's
add_semb_col takes (a * b).sum() / (|a| |b|) per pair on float32 numpy arrays.

stdin: {"model": chexbert.pth, "backbone": bert dir, "hyps": [...], "refs": [...]}
stdout (last line): {"cosine": [...], "texts": [...], "embeddings": [[...]], "logits": [[[...] x 14]],
                     "classes": [[14 ints]], "versions": {...}}
"""

import json
import re
import sys
from collections import OrderedDict

import numpy as np
import torch
import transformers
from transformers import BertConfig, BertModel, BertTokenizer

BATCH = 18  # CheXbert constants.py BATCH_SIZE
PAD_IDX = 0


class Labeler(torch.nn.Module):
    def __init__(self, config):
        super().__init__()
        self.bert = BertModel(config)
        hidden = config.hidden_size
        self.linear_heads = torch.nn.ModuleList([torch.nn.Linear(hidden, 4) for _ in range(13)]
                                                + [torch.nn.Linear(hidden, 2)])


def clean(text):
    # bert_tokenizer.get_impressions_from_csv: str.strip, replace("\n", " "), replace("\s+", " "), str.strip
    text = text.strip().replace("\n", " ")
    return re.sub(r"\s+", " ", text).strip()


def encode(tokenizer, text):
    tokens = tokenizer.tokenize(clean(text))
    if not tokens:
        return [tokenizer.cls_token_id, tokenizer.sep_token_id]
    ids = tokenizer.encode_plus(tokens)["input_ids"]
    if len(ids) > 512:
        ids = ids[:511] + [tokenizer.sep_token_id]
    return ids


def main():
    payload = json.loads(sys.stdin.read())
    torch.manual_seed(0)
    tokenizer = BertTokenizer.from_pretrained(payload["backbone"])
    model = Labeler(BertConfig.from_pretrained(payload["backbone"]))
    checkpoint = torch.load(payload["model"], map_location="cpu")
    state = OrderedDict((k[len("module."):], v) for k, v in checkpoint["model_state_dict"].items())
    model.load_state_dict(state)
    model.eval()

    texts = list(dict.fromkeys(payload["refs"] + payload["hyps"]))  # per-text work; order kept
    encoded = [torch.LongTensor(encode(tokenizer, t)) for t in texts]
    embeddings, logits = [], []
    with torch.no_grad():
        for start in range(0, len(encoded), BATCH):
            batch = encoded[start:start + BATCH]
            ids = torch.nn.utils.rnn.pad_sequence(batch, batch_first=True, padding_value=PAD_IDX)
            mask = torch.zeros(ids.shape, dtype=torch.long)
            for i, seq in enumerate(batch):
                mask[i, :len(seq)] = 1
            cls = model.bert(ids, attention_mask=mask)[0][:, 0, :]
            embeddings.append(cls)
            logits.append(torch.stack([torch.nn.functional.pad(head(cls), (0, 4 - head.out_features),
                                                               value=float("nan"))
                                       for head in model.linear_heads], dim=1))
    embeddings = torch.cat(embeddings).numpy()
    logits = torch.cat(logits).numpy()
    classes = [[int(np.argmax(row[:4] if k < 13 else row[:2])) for k, row in enumerate(per_text)] for per_text in logits]
    index = {t: i for i, t in enumerate(texts)}
    cosine = []
    for h, r in zip(payload["hyps"], payload["refs"]):
        a, b = embeddings[index[r]], embeddings[index[h]]
        cosine.append(float((a * b).sum() / (np.linalg.norm(a) * np.linalg.norm(b))))
    print(json.dumps({"cosine": cosine, "texts": texts, "embeddings": embeddings.tolist(),
                      "logits": [[[None if np.isnan(x) else float(x) for x in row] for row in t] for t in logits],
                      "classes": classes,
                      "versions": {"transformers": transformers.__version__, "torch": torch.__version__}}))


if __name__ == "__main__":
    main()

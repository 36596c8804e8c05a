"""Reference PTB tokenisation: pycocoevalcap 1.2's own PTBTokenizer (Stanford CoreNLP 3.4.1 jar, Java).

One PTBTokenizer().tokenize call for all texts (it writes one temporary file into its package folder and runs java
there once), keys str(index) so the order is kept and a caption's neighbours are the ones the caller gave.

stdin: {"texts": [...]}
stdout (last line): {"tokenized": {"0": "...", ...}, "versions": {...}}  (a key is absent where pycocoevalcap
returns none for it)
"""

import json
import sys
from importlib.metadata import version

from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer


def main():
    payload = json.loads(sys.stdin.read())
    captions = {str(i): [{"caption": text}] for i, text in enumerate(payload["texts"])}
    result = PTBTokenizer().tokenize(captions)
    print(json.dumps({"tokenized": {key: values[0] for key, values in result.items()},
                      "versions": {"pycocoevalcap": version("pycocoevalcap")}}))


if __name__ == "__main__":
    main()

"""transformers 4.x's space clean-up, which GREEN's batch_decode applies (clean_up_tokenization_spaces=True).

``PreTrainedTokenizerBase.clean_up_tokenization`` of the reference virtualenv's transformers (4.57): the
clean-up the official GREEN code gets from batch_decode on transformers 4.

stdin: {"texts": [...]}
stdout (last line): {"cleaned": [...], "versions": {"transformers": version}}
"""

import json
import sys

import transformers
from transformers import PreTrainedTokenizerBase


def main():
    texts = json.loads(sys.stdin.read())["texts"]
    cleaned = [PreTrainedTokenizerBase.clean_up_tokenization(t) for t in texts]
    print(json.dumps({"cleaned": cleaned, "versions": {"transformers": transformers.__version__}}))


if __name__ == "__main__":
    main()

"""Random-weight report generators for `rexrank generate` tests and benchmarks, in real Hugging Face layouts.

* ``generate_ved``: a VisionEncoderDecoderModel (ViT encoder + BERT decoder with cross-attention), a WordPiece
  ``BertTokenizer`` and a ``ViTImageProcessor`` — the layout of the ReXrank baseline report generators on the Hub
  (e.g. IAMJB/chexpert-mimic-cxr-findings-baseline: ViT + BERT decoder, BertTokenizer, ViTImageProcessor,
  decoder_start_token_id = [CLS]).
* ``generate_itt``: a LLaVA image-text-to-text model (CLIP vision tower + Llama decoder) with a byte-level BPE
  tokenizer, a ``CLIPImageProcessor``, a ``LlavaProcessor`` config and a chat template, loadable with
  AutoProcessor + AutoModelForImageTextToText.

Weights are random (with a large initialiser range so different images give different greedy reports); they prove
plumbing, never a real model's output. Tokenizer files are written by hand (see tokenizers_offline).
"""

from __future__ import annotations

import json
from pathlib import Path

# Sizes: "small" keeps tests fast on CPU; "real" is still tiny, only larger images and more layers for benchmarks.
_SIZES = {
    "small": {"image": 32, "patch": 8, "hidden": 32, "layers": 1, "heads": 2, "ffn": 64},
    "real": {"image": 96, "patch": 16, "hidden": 64, "layers": 2, "heads": 4, "ffn": 128},
}

IMAGE_TOKEN = "<image>"
# A minimal chat template (written for rexrank): "USER: <image>... text\nASSISTANT:". Real LLaVA checkpoints ship
# their own template; the adapter only relies on `apply_chat_template`, whatever the template says.
CHAT_TEMPLATE = (
    "{% for message in messages %}{{ message['role'] | upper }}: "
    "{% for item in message['content'] %}{% if item['type'] == 'image' %}<image>{% else %}{{ item['text'] }}"
    "{% endif %}{% endfor %}{{ '\\n' }}{% endfor %}{% if add_generation_prompt %}ASSISTANT:{% endif %}"
)


def build(out: Path, size: str = "small", seed: int = 0) -> dict[str, str]:
    """Write both stand-ins under ``out`` and return {"generate_ved": dir, "generate_itt": dir}."""
    out = Path(out)
    dims = _SIZES[size]
    paths = {"generate_ved": str(build_ved(out / "generate_ved", dims, seed))}
    paths["generate_itt"] = str(build_llava(out / "generate_itt", dims, seed))
    return paths


def build_ved(directory: Path, dims: dict, seed: int) -> Path:
    import torch
    from transformers import BertConfig, ViTConfig, ViTImageProcessor, VisionEncoderDecoderConfig
    from transformers import VisionEncoderDecoderModel

    from rexrank.testing.tokenizers_offline import BERT_SPECIALS, write_bert_tokenizer

    directory = Path(directory)
    vocab_size = write_bert_tokenizer(directory, lowercase=True)
    pad, cls, sep = (BERT_SPECIALS.index(t) for t in ("[PAD]", "[CLS]", "[SEP]"))
    encoder = ViTConfig(image_size=dims["image"], patch_size=dims["patch"], hidden_size=dims["hidden"],
                        num_hidden_layers=dims["layers"], num_attention_heads=dims["heads"],
                        intermediate_size=dims["ffn"], initializer_range=0.5)
    decoder = BertConfig(vocab_size=vocab_size, hidden_size=dims["hidden"], num_hidden_layers=dims["layers"],
                         num_attention_heads=dims["heads"], intermediate_size=dims["ffn"], max_position_embeddings=256,
                         is_decoder=True, add_cross_attention=True, initializer_range=0.5,
                         pad_token_id=pad, bos_token_id=cls, eos_token_id=sep)
    config = VisionEncoderDecoderConfig.from_encoder_decoder_configs(encoder, decoder)
    config.decoder_start_token_id, config.pad_token_id, config.eos_token_id = cls, pad, sep
    torch.manual_seed(seed)
    model = VisionEncoderDecoderModel(config=config).eval()
    model.generation_config.decoder_start_token_id = cls
    model.generation_config.pad_token_id = pad
    model.generation_config.eos_token_id = sep
    model.generation_config.bos_token_id = cls
    model.save_pretrained(directory)
    ViTImageProcessor(size={"height": dims["image"], "width": dims["image"]}).save_pretrained(directory)
    return directory


def build_llava(directory: Path, dims: dict, seed: int) -> Path:
    import torch
    from transformers import CLIPImageProcessor, CLIPVisionConfig, LlamaConfig, LlavaConfig
    from transformers import LlavaForConditionalGeneration

    directory = Path(directory)
    vocab = _write_bpe_tokenizer(directory)
    vision = CLIPVisionConfig(image_size=dims["image"], patch_size=dims["patch"], hidden_size=dims["hidden"],
                              num_hidden_layers=dims["layers"], num_attention_heads=dims["heads"],
                              intermediate_size=dims["ffn"], projection_dim=dims["hidden"], initializer_range=0.5,
                              initializer_factor=1.0)
    text = LlamaConfig(vocab_size=len(vocab), hidden_size=dims["hidden"], num_hidden_layers=dims["layers"],
                       num_attention_heads=dims["heads"], num_key_value_heads=dims["heads"],
                       intermediate_size=dims["ffn"], max_position_embeddings=512, initializer_range=0.5,
                       bos_token_id=vocab["<s>"], eos_token_id=vocab["</s>"], pad_token_id=vocab["<pad>"])
    config = LlavaConfig(vision_config=vision, text_config=text, image_token_index=vocab[IMAGE_TOKEN],
                         vision_feature_layer=-1, vision_feature_select_strategy="default")
    torch.manual_seed(seed)
    model = LlavaForConditionalGeneration(config).eval()
    model.generation_config.pad_token_id = vocab["<pad>"]
    model.generation_config.eos_token_id = vocab["</s>"]
    model.generation_config.bos_token_id = vocab["<s>"]
    model.save_pretrained(directory)
    CLIPImageProcessor(size={"shortest_edge": dims["image"]}, crop_size={"height": dims["image"],
                       "width": dims["image"]}).save_pretrained(directory)
    # LlavaProcessor reads these from processor_config.json; the "default" strategy drops the CLS patch, so each
    # image expands to (image/patch)^2 tokens (num_additional_image_tokens = 1 accounts for CLS).
    (directory / "processor_config.json").write_text(json.dumps({
        "processor_class": "LlavaProcessor", "patch_size": dims["patch"], "image_token": IMAGE_TOKEN,
        "vision_feature_select_strategy": "default", "num_additional_image_tokens": 1}, indent=2))
    (directory / "chat_template.jinja").write_text(CHAT_TEMPLATE)
    return directory


def _write_bpe_tokenizer(directory: Path) -> dict[str, int]:
    """A byte-level BPE tokenizer (trained on the built-in corpus) with an ``<image>`` special token.

    Written as the `tokenizers` library's own serialisation (tokenizer.json): transformers 5 loads decoder-only
    tokenizers through that file, and the stand-in is only read by the main environment.
    """
    from tokenizers import ByteLevelBPETokenizer

    from rexrank.testing.corpus import SENTENCES

    specials = ["<s>", "<pad>", "</s>", "<unk>", IMAGE_TOKEN]
    bpe = ByteLevelBPETokenizer()
    lines = SENTENCES.splitlines() + [SENTENCES.lower()]
    bpe.train_from_iterator(lines, vocab_size=600, min_frequency=1, special_tokens=specials, show_progress=False)
    directory.mkdir(parents=True, exist_ok=True)
    bpe.save(str(directory / "tokenizer.json"))
    config = {"tokenizer_class": "GPT2Tokenizer", "model_max_length": 512, "bos_token": "<s>", "eos_token": "</s>",
              "unk_token": "<unk>", "pad_token": "<pad>", "additional_special_tokens": [IMAGE_TOKEN],
              "padding_side": "left", "add_prefix_space": False}
    (directory / "tokenizer_config.json").write_text(json.dumps(config, indent=2))
    return bpe.get_vocab()


def write_image_studies(root: Path, n: int, pixels, fields) -> Path:
    """A ReXrank-style studies JSON at ``root/studies.json``: study ``s<i>`` has 2 PNGs under ``root/img``
    (``pixels(i, j)`` gives each image's array) with relative paths, plus ``fields(i)`` (sections, context...)."""
    from PIL import Image

    entries = {}
    for i in range(n):
        (root / "img" / f"s{i}").mkdir(parents=True, exist_ok=True)
        paths = [f"s{i}/{j}.png" for j in range(2)]
        for j, rel in enumerate(paths):
            Image.fromarray(pixels(i, j)).save(root / "img" / rel)
        entries[f"s{i}"] = {"image_path": paths, "key_image_path": paths[0], **fields(i)}
    (root / "studies.json").write_text(json.dumps(entries))
    return root / "studies.json"

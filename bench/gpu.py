#!/usr/bin/env python
"""The GPU check: RadGraph and GREEN, rexrank against the official loops, side by side in one run (docs/gpu.md).

    python bench/gpu.py                      # on a lent GPU: < 8 minutes on one H200, nothing downloaded
    python bench/gpu.py --smoke --device cpu # tiny configs, a few reports: what tests/test_gpu_check.py runs

Random weights in the real shapes (numbers are meaningless; speed and memory are what is measured):

- RadGraph: a BERT-base-sized DyGIE archive (``rexrank.testing.standin_radgraph``, size "real"), the 590 IU-Xray
  test reports ("report" field). Sides: radgraph 0.1.18's own loop (``RadGraph(...)(reports)``, one report at a
  time as it always runs) in its own process on transformers 4.57, and rexrank's ``Annotator.annotate`` (fixed-shape
  passes of ``--radgraph-batch`` rows, default the device's: 64 on CUDA) in another, both on ``--device``. The
  reference environment is ``--reference-python`` (an interpreter with radgraph 0.1.18 installed, e.g.
  .venv-ref) or, by default, this interpreter with the wheels of ``--wheelhouse`` unpacked on its path (radgraph 0.1.18, its pure-Python dependencies and transformers 4.57.6 with
  huggingface_hub 0.36.2 and the abi3 tokenizers 0.22.2 wheel it pins: the device has transformers 5, which
  radgraph 0.1.18 cannot run on). radgraph imports h5py for ELMo, which RadGraph never runs; where h5py is absent
  the reference process gets an empty module under that name.
- GREEN: StanfordAIMI/GREEN-RadLlama2-7b's architecture built with ``from_config`` (no weights read), in bf16 on
  CUDA (fp32 on CPU). The config values are ``LLAMA2_7B`` below, from that repository's config.json
  (LlamaForCausalLM, vocab 32000, hidden 4096, 32 layers, 32 heads; src/rexrank/testing/standin_green.py) and
  meta-llama/Llama-2-7b-hf's config.json for the rest (intermediate 11008, 4096 positions, RMS eps 1e-5, rope
  10000). Prompts: GREEN's prompt (``rexrank.metrics.green.make_prompt``) for IU-Xray pairs, tokenised with the
  stand-in's Llama-2-style tokenizer. Sides, same model and prompts, greedy, ``--green-new-tokens`` new tokens each
  (random weights rarely stop, so every completion runs to the cap; the official budget is max_length=2048):
  "official settings" = the official GREEN loop's batches (8 prompts in input order, left padded), and "rexrank
  batched" = rexrank's ``TransformersGenerator`` on length-sorted prompts in batches of ``--green-batch`` (SDPA
  attention; ``--static-cache`` adds transformers' static KV cache). vLLM is not on the device image, so the
  official vLLM path is not compared.

Printed: one line per side with items, seconds, items per second and peak memory (CUDA: torch's peak allocated
bytes of that process/side; CPU: the process's peak RSS), and each check's speed-up. ``--json PATH`` also writes
the rows. Model building and loading are outside the timed region; one warm-up call precedes each timed one.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
REPORTS = REPO.parent / "shared" / "data" / "iu_xray" / "ReXRank_IUXray_test.json"
# The reference environment for radgraph 0.1.18 on a transformers-5 machine (docs/gpu.md builds the folder).
REFERENCE_WHEELS = ("radgraph", "dotmap", "jsonpickle", "appdirs", "nltk", "transformers", "huggingface_hub",
                    "tokenizers")

# StanfordAIMI/GREEN-RadLlama2-7b config.json (LlamaForCausalLM) and meta-llama/Llama-2-7b-hf config.json.
LLAMA2_7B = dict(vocab_size=32000, hidden_size=4096, intermediate_size=11008, num_hidden_layers=32,
                 num_attention_heads=32, num_key_value_heads=32, max_position_embeddings=4096, rms_norm_eps=1e-5,
                 rope_theta=10000.0, hidden_act="silu", bos_token_id=1, eos_token_id=2, tie_word_embeddings=False)
LLAMA_TINY = dict(LLAMA2_7B, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=4)
OFFICIAL_GREEN_BATCH = 8  # green_score/green.py GREEN.batch_size (rexrank.metrics.green.BATCH_SIZE)


def _reports(n: int) -> list[str]:
    data = json.loads(REPORTS.read_text())
    texts = [entry["report"] for entry in data.values() if entry.get("report", "").strip()]
    return [texts[i % len(texts)] for i in range(n)]


def _pairs(n: int) -> list[tuple[str, str]]:
    data = json.loads(REPORTS.read_text())
    texts = [e["section_findings"] for e in data.values() if e.get("section_findings", "").strip()]
    return [(texts[i % len(texts)], texts[(i + 1) % len(texts)]) for i in range(n)]


def _peak(device: str) -> int:
    """Peak bytes: CUDA's peak allocated on that device, else this process's peak RSS."""
    if device.startswith("cuda"):
        import torch

        return int(torch.cuda.max_memory_allocated(device))
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize(device)


# ---- RadGraph: each side in its own process ---------------------------------------------------------------------
def _radgraph_side(side: str, archive: str, reports: list[str], device: str, batch: int) -> dict:
    """Runs in a child process: load (untimed), one warm-up call, then the timed call over every report."""
    if side == "reference":
        # This script's folder is first on sys.path, and bench/radgraph.py would shadow the package.
        sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
        try:
            import h5py  # noqa: F401
        except ImportError:  # radgraph imports it for ELMo only, which RadGraph never runs
            import types

            sys.modules["h5py"] = types.ModuleType("h5py")
        import transformers
        from radgraph import RadGraph

        cache = Path(tempfile.mkdtemp(prefix="rexrank-gpu-rg-"))
        (cache / "radgraph").symlink_to(Path(archive).resolve())  # RadGraph reads <model_cache_dir>/<model_type>/
        model = RadGraph(model_type="radgraph", model_cache_dir=str(cache),
                         cuda=int(device.partition(":")[2] or 0) if device.startswith("cuda") else -1)
        run = model
        version = f"radgraph 0.1.18 on transformers {transformers.__version__}"
    else:
        import transformers

        from rexrank.metrics.radgraph.inference import Annotator

        model = Annotator(archive, device, None, "radgraph")
        run = lambda texts: model.annotate(texts, batch)  # noqa: E731
        rows = model.batch_shape(batch).rows
        version = f"rexrank Annotator, fixed-shape passes of {rows} rows, transformers {transformers.__version__}"
    run(reports[:2])
    _sync(device)
    if device.startswith("cuda"):
        import torch

        torch.cuda.reset_peak_memory_stats(device)
    start = time.perf_counter()
    out = run(reports)
    _sync(device)
    seconds = time.perf_counter() - start
    entities = sum(len(a["entities"]) for a in (out.values() if isinstance(out, dict) else out))
    return {"seconds": seconds, "items": len(reports), "peak_bytes": _peak(device), "what": version,
            "entities": entities}


def radgraph_check(args, work: Path) -> list[dict]:
    from rexrank.testing import standin_radgraph

    archive = standin_radgraph.build(work, "small" if args.smoke else "real")["radgraph"]
    reports = _reports(args.reports)
    job = {"archive": archive, "reports": reports, "device": args.device, "batch": args.radgraph_batch}
    rows = []
    for side in ("reference", "rexrank"):
        python, env = sys.executable, dict(os.environ)
        if side == "reference":
            python, env = _reference_env(args, work, env)
            if python is None:
                rows.append({"check": "radgraph", "side": side, "skipped": env})
                continue
        done = subprocess.run([python, str(Path(__file__).resolve()), "--child-radgraph", side],
                              input=json.dumps(job), capture_output=True, text=True, env=env)
        if done.returncode != 0:
            tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
            rows.append({"check": "radgraph", "side": side, "skipped": f"failed: {tail}"})
            continue
        rows.append({"check": "radgraph", "side": side, **json.loads(done.stdout.strip().splitlines()[-1])})
    return rows


def _reference_env(args, work: Path, env: dict) -> tuple[str | None, dict | str]:
    """(python, environment) for the radgraph 0.1.18 side, or (None, why not)."""
    if args.reference_python:
        return args.reference_python, env
    wheels = sorted(Path(args.wheelhouse).glob("*.whl")) if Path(args.wheelhouse).is_dir() else []
    missing = [name for name in REFERENCE_WHEELS
               if name not in ("nltk",) and not any(w.name.lower().startswith(name + "-") for w in wheels)]
    if missing:
        return None, (f"no {', '.join(missing)} wheel in {args.wheelhouse} (docs/gpu.md: build the wheelhouse, "
                      "or pass --reference-python)")
    site = work / "reference-site"
    for wheel in wheels:  # a wheel is a zip of its installed files: unpacked, it imports like an install
        with zipfile.ZipFile(wheel) as archive:
            archive.extractall(site)
    return sys.executable, {**env, "PYTHONPATH": os.pathsep.join([str(site), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)}


# ---- GREEN: one model, both sides in this process ---------------------------------------------------------------
def green_check(args, work: Path) -> list[dict]:
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, LlamaConfig

    from rexrank.llm.hf_local import TransformersGenerator, load_tokenizer
    from rexrank.metrics.green import encode_prompts, make_prompt
    from rexrank.testing import standin_green

    tokenizer = load_tokenizer(standin_green.build(work, "small")["green"], padding_side="left", metric="green")
    prompts = encode_prompts(tokenizer, [make_prompt(ref, cand) for ref, cand in _pairs(args.green_pairs)])
    dtype = torch.bfloat16 if args.device.startswith("cuda") else torch.float32
    config = LlamaConfig(**(LLAMA_TINY if args.smoke else LLAMA2_7B), use_cache=True)
    torch.manual_seed(0)
    with torch.device(args.device):
        model = AutoModelForCausalLM.from_config(config, dtype=dtype, attn_implementation="sdpa").eval()
    # The stand-in tokenizer's vocabulary is smaller than Llama-2's, so its prompts run longer than the real ones.
    mean_prompt = sum(map(len, prompts)) / len(prompts)
    what = (f"random Llama-2-7B config ({'tiny smoke shape' if args.smoke else '6.7B parameters'}), "
            f"{str(dtype).removeprefix('torch.')}, prompts of {mean_prompt:.0f} tokens on average, "
            f"transformers {transformers.__version__}")
    limits = {"max_new_tokens": args.green_new_tokens, "min_new_tokens": args.green_new_tokens}
    sides = [("official settings", OFFICIAL_GREEN_BATCH, False, {}),
             ("rexrank batched", args.green_batch, True,
              {"cache_implementation": "static"} if args.static_cache else {})]
    rows, outputs = [], []
    for side, batch, by_length, extra in sides:
        generator = TransformersGenerator(model, pad_token_id=config.eos_token_id, eos_token_id=config.eos_token_id,
                                          batch_size=batch, **limits, **extra)
        order = sorted(range(len(prompts)), key=lambda i: -len(prompts[i])) if by_length else list(range(len(prompts)))
        generator.generate([prompts[i] for i in order[:batch]])  # warm-up
        _sync(args.device)
        if args.device.startswith("cuda"):
            torch.cuda.reset_peak_memory_stats(args.device)
        start = time.perf_counter()
        done = generator.generate([prompts[i] for i in order])
        _sync(args.device)
        seconds = time.perf_counter() - start
        completions = [None] * len(prompts)
        for i, completion in zip(order, done):
            completions[i] = completion
        outputs.append(completions)
        rows.append({"check": "green", "side": side, "items": len(prompts), "seconds": seconds,
                     "tokens": sum(len(c) for c in completions), "peak_bytes": _peak(args.device),
                     "what": f"{what}; batches of {batch}{', length-sorted' if by_length else ', input order'}"
                             f"{', static cache' if extra else ''}"})
    rows[-1]["same_outputs"] = sum(a == b for a, b in zip(*outputs))
    return rows


# ---- encoders (issue 52) -------------------------------------------------------------------------------------
ENCODERS = ("bertscore", "semb", "srrbert", "radgraph")


def _encoder_metric(name: str, paths: dict, device: str, batch: int):
    from rexrank.metrics import get

    options = {"bertscore": {"model": paths.get("bertscore")},
               "semb": {"model": paths.get("semb"), "backbone": paths.get("semb_backbone")},
               "srrbert": {"model": paths.get("srrbert"), "tokenizer": paths.get("srrbert_tokenizer"),
                           "punkt": paths.get("srrbert_punkt")},
               "radgraph": {"model": paths.get("radgraph")}}[name]
    return get(name, **options, device=device, batch_size=batch)


def _encoder_outputs(name: str, metric, texts: list[str]) -> list[bytes]:
    """The raw per-text outputs of one encoder call, as bytes (vectors; CheXbert's embedding; SRR-BERT's labels)."""
    if name == "bertscore":
        return [vectors.tobytes() for _, vectors in metric._embed(texts)]
    if name == "semb":
        return [embedding.tobytes() for embedding, _ in metric._compute(texts)]
    if name == "radgraph":  # every head's raw scores (NER, mentions, relations), encoder and heads batched
        return [b"".join(found[k].tobytes() for k in sorted(found)) if found else b""
                for found in metric._annotator().head_scores(texts, metric.batch_size)]
    return [bytes(repr(labels), "ascii") for labels in metric.classify(texts)]


def encoders_check(args, tmp: Path) -> list[dict]:
    """Texts per second at one text per pass (batch_size=1, each text padded to its bucket) and at the fixed-shape
    batches of ``--encoder-batch`` rows, on distinct IU-Xray reports; and whether one report's outputs are the same
    bytes alone and among all the others (rexrank.metrics.batching)."""
    from rexrank.testing import standins

    texts = list(dict.fromkeys(_reports(args.reports)))
    rows = []
    for name in ENCODERS:
        family = {"semb": "semb"}.get(name, name)
        paths = standins.build(tmp / name, "small" if args.smoke else "real", [family])
        seconds = {}
        for side, batch in (("one text per pass", 1), ("fixed-shape batches", args.encoder_batch)):
            metric = _encoder_metric(name, paths, args.device, batch)
            _encoder_outputs(name, metric, texts[:batch])  # warm-up (and the model's load)
            _sync(args.device)
            if args.device.startswith("cuda"):
                import torch

                torch.cuda.reset_peak_memory_stats(args.device)
            start = time.perf_counter()
            together = _encoder_outputs(name, metric, texts)
            _sync(args.device)
            seconds[side] = time.perf_counter() - start
            alone = _encoder_outputs(name, metric, texts[-1:])[0]
            rows.append({"check": "encoders", "side": f"{name}, {side}", "items": len(texts),
                         "seconds": seconds[side], "peak_bytes": _peak(args.device),
                         "identical": alone == together[-1],
                         "what": f"batch_size={batch}; last report alone == among all: {alone == together[-1]}"})
    return rows


# ---- printing ---------------------------------------------------------------------------------------------------
def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.1f} {unit}"
        n /= 1024
    return ""


def show(rows: list[dict]) -> None:
    unit = {"radgraph": "reports", "green": "pairs", "encoders": "texts"}
    for check in ("radgraph", "green", "encoders"):
        mine = [r for r in rows if r["check"] == check]
        if not mine:
            continue
        print(f"{check}:")
        for row in mine:
            if "skipped" in row:
                print(f"  {row['side']:<18} skipped: {row['skipped']}")
                continue
            rate = row["items"] / row["seconds"] if row["seconds"] > 0 else float("inf")
            extra = f", {row['tokens'] / row['seconds']:.0f} new tokens/s" if "tokens" in row else ""
            print(f"  {row['side']:<18} {row['items']} {unit[check]} in {row['seconds']:.2f} s = {rate:.2f} "
                  f"{unit[check]}/s{extra}, peak memory {_size(row['peak_bytes'])} ({row['what']})")
        timed = [r for r in mine if "seconds" in r]
        if check == "encoders":
            for first, second in zip(timed[::2], timed[1::2]):
                print(f"  speed-up {first['seconds'] / second['seconds']:.2f}x ({second['side']}); byte-identical "
                      f"alone and among others: {first['identical'] and second['identical']}")
            continue
        if len(timed) == 2:
            print(f"  speed-up {timed[0]['seconds'] / timed[1]['seconds']:.2f}x ({timed[1]['side']} vs "
                  f"{timed[0]['side']})" + (f"; identical completions {timed[1]['same_outputs']}/{timed[1]['items']}"
                                            if "same_outputs" in timed[1] else ""))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="tiny configs and a few reports (runs on CPU)")
    parser.add_argument("--device", default=None, help="cuda, cuda:N or cpu (default: cuda when available)")
    parser.add_argument("--only", default=None,
                        help="comma-separated: radgraph, green, encoders (default all three; --smoke: radgraph,green)")
    parser.add_argument("--encoder-batch", type=int, default=64, help="encoders check: rows of the batched side")
    parser.add_argument("--reports", type=int, default=None, help="RadGraph reports (default 590; smoke 6)")
    parser.add_argument("--radgraph-batch", type=int, default=None,
                        help="rexrank side's rows per pass (default: the device's, 64 on CUDA)")
    parser.add_argument("--green-pairs", type=int, default=None, help="GREEN pairs (default 64; smoke 6)")
    parser.add_argument("--green-new-tokens", type=int, default=None, help="new tokens per pair (128; smoke 4)")
    parser.add_argument("--green-batch", type=int, default=32, help="rexrank side's batch size")
    parser.add_argument("--static-cache", action="store_true", help="rexrank side: transformers' static KV cache")
    parser.add_argument("--wheelhouse", default=str(REPO / "wheelhouse"))
    parser.add_argument("--reference-python", default=None, help="an interpreter with radgraph 0.1.18 installed")
    parser.add_argument("--json", default=None, help="also write the rows to this file")
    parser.add_argument("--child-radgraph", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child_radgraph:
        job = json.loads(sys.stdin.read())
        print(json.dumps(_radgraph_side(args.child_radgraph, job["archive"], job["reports"], job["device"],
                                        job["batch"])))
        return 0
    import torch

    args.device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    args.reports = args.reports or (6 if args.smoke else 590)
    args.only = args.only or ("radgraph,green" if args.smoke else "radgraph,green,encoders")
    args.green_pairs = args.green_pairs or (6 if args.smoke else 64)
    args.green_new_tokens = args.green_new_tokens or (4 if args.smoke else 128)
    if args.smoke:
        args.green_batch = min(args.green_batch, 4)
    name = torch.cuda.get_device_name(args.device) if args.device.startswith("cuda") else platform.processor() or "cpu"
    print(f"rexrank GPU check on {args.device} ({name}), torch {torch.__version__}"
          f"{', smoke sizes' if args.smoke else ''}", flush=True)
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="rexrank-gpu-") as tmp:
        for check in [c.strip() for c in args.only.split(",") if c.strip()]:
            started = time.perf_counter()
            (Path(tmp) / check).mkdir()
            rows += {"radgraph": radgraph_check, "green": green_check,
                     "encoders": encoders_check}[check](args, Path(tmp) / check)
            show([r for r in rows if r["check"] == check])
            print(f"  ({check} check took {time.perf_counter() - started:.0f} s in all)", flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

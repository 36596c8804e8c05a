"""rexrank: the ReXrank benchmark for AI-written chest X-ray reports.

Data flows one way: dataset -> generate -> predictions -> score -> aggregate -> store -> Space.
Heavy modules are imported lazily so ``import rexrank`` stays cheap.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__", "meta_eval", "parallel", "rewards", "score", "summarize"]


def __getattr__(name: str):
    if name in ("score", "summarize"):
        from rexrank.evaluation import in_memory as scoring

        return getattr(scoring, name)
    if name == "meta_eval":
        from rexrank.evaluation.meta_eval import meta_eval

        return meta_eval
    if name in ("parallel", "rewards"):  # `rexrank.parallel.local()` etc. after a plain `import rexrank`
        import importlib

        return importlib.import_module(f"rexrank.{name}")
    raise AttributeError(f"module 'rexrank' has no attribute {name!r}")

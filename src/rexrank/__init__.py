"""rexrank: the ReXrank benchmark for AI-written chest X-ray reports.

Data flows one way: dataset -> generate -> predictions -> score -> aggregate -> store -> Space.
Heavy modules are imported lazily so ``import rexrank`` stays cheap.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__", "parallel", "score", "summarize"]


def __getattr__(name: str):
    if name in ("score", "summarize"):
        from rexrank.evaluation import in_memory as scoring

        return getattr(scoring, name)
    if name == "parallel":  # `with rexrank.parallel.local():` after a plain `import rexrank`
        import importlib

        return importlib.import_module("rexrank.parallel")
    raise AttributeError(f"module 'rexrank' has no attribute {name!r}")

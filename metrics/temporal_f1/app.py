"""Gradio Space for the rexrank temporal F1 evaluate module (Gradio 6; the app is rexrank.evaluate_modules.app)."""

from pathlib import Path

from rexrank.evaluate_modules.app import MetricApp


def build(**init_kwargs) -> MetricApp:
    return MetricApp(Path(__file__).resolve().parent, **init_kwargs)


if __name__ == "__main__":
    build().blocks().launch()

"""The interface every model adapter implements.

An adapter turns a batch of StudyInputs into one answer per study. `prepare` (CPU: read images, tokenise) is
separate from `generate` (the model) so the runner can prepare the next batch while the current one generates.
"""

from __future__ import annotations

from typing import Any

from rexrank.generate.studies import StudyInput


class Adapter:
    name: str = "adapter"
    # Capability flags the runner checks options against.
    multi_image: bool = True  # can take several images per study (else: the key image only)
    uses_prompt: bool = True  # reads the rendered prompt (and so the context)
    # When a batch raises, re-run its studies one by one to find the failing one. False where a batch is costly
    # to restart (an inference.py subprocess reloads its model every call).
    isolate_failures: bool = True

    def config(self) -> dict[str, Any]:
        """Everything that changes the reports (model, settings): a resumed run must match it."""
        raise NotImplementedError

    def load(self, device: str) -> None:
        """Load weights onto `device` (called once per process, after options are validated)."""

    def prepare(self, batch: list[StudyInput]) -> Any:
        return batch

    def generate(self, prepared: Any) -> list[str]:
        raise NotImplementedError

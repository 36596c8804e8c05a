"""rexrank.generate: one report per study with any model, on one process or many, resumable.

    from rexrank import data, generate
    studies = data.load("iu_xray", split="test", track="findings")
    adapter = generate.load_adapter("path/or/hub-id")          # or "pkg.module:function", or "inference.py"
    result = generate.generate(studies, adapter, "runs/my-model", generate.GenerateOptions(track="findings"))
    result.predictions_path   # ReXrank JSON with "model_prediction"; result.reports_path: {study_id: report}
"""

from rexrank.generate.adapters import Adapter, GenerationSettings, adapter_kind, load_adapter
from rexrank.generate.prompts import DEFAULT_PROMPTS, format_report, split_sections
from rexrank.generate.runner import GenerateOptions, GenerateResult, generate
from rexrank.generate.studies import StudyInput

__all__ = ["DEFAULT_PROMPTS", "Adapter", "GenerateOptions", "GenerateResult", "GenerationSettings", "StudyInput",
           "adapter_kind", "format_report", "generate", "load_adapter", "split_sections"]

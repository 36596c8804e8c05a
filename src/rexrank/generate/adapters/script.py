"""The upstream submission contract: `python inference.py <input_json> <output_json> <img_root_dir>`.

ReXrank asks each submission for an inference.py that reads a ReXrank-style JSON ({study_id: {image_path: [...],
key_image_path, context, ...}} with image paths relative to img_root_dir), and writes the same JSON with a
"model_prediction" string added to every study (rajpurkarlab/ReXrank README, "Submission"). We run it on each batch
of each process's shard, in the script's own folder, and read the predictions back. A batch is one subprocess, and
the script reloads its model every time: use a large --batch-size.

The input JSON holds only the allow-listed fields of each study (rexrank.generate.studies.script_entry): image
paths, key image, view positions and, with --context, the context; never the report, its sections or any other
column. Every path handed to the script (input/output JSON, image root) is absolute: it runs in its own folder.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from rexrank.data.rexrank_json import MODEL_PREDICTION
from rexrank.errors import ConfigError
from rexrank.generate.adapters.base import Adapter
from rexrank.generate.studies import StudyInput, script_entry

DEFAULT_BATCH_SIZE = 256
LOG_FILE = "script.log"  # in the adapter's workdir: the script's stdout and stderr, call by call


class ScriptError(RuntimeError):
    pass


class InferenceScriptAdapter(Adapter):
    isolate_failures = False  # one subprocess per study would reload the model per study
    multi_image = True
    uses_prompt = False  # the script builds its own input from the JSON
    uses_context = True  # the JSON carries "context" when --context is on
    default_batch_size = DEFAULT_BATCH_SIZE

    def __init__(self, script: str, python: str | None = None, workdir: Path | None = None):
        self.script = Path(script).expanduser().resolve()
        if not self.script.is_file():
            raise ConfigError(f"inference script {script} does not exist")
        self.python = _interpreter(python) if python else sys.executable
        self.name = str(self.script)
        self.workdir = workdir
        self.env: dict[str, str] = dict(os.environ)
        self._calls = 0

    def config(self) -> dict[str, Any]:
        return {"adapter": "inference_script", "script": str(self.script), "size": self.script.stat().st_size}

    def load(self, device: str) -> None:
        # Data parallel on GPUs: each process's script sees only that process's GPU.
        if device.startswith("cuda"):
            index = int(device.split(":")[1]) if ":" in device else 0
            visible = os.environ.get("CUDA_VISIBLE_DEVICES")
            ids = visible.split(",") if visible else [str(i) for i in range(index + 1)]
            self.env["CUDA_VISIBLE_DEVICES"] = ids[index] if index < len(ids) else str(index)

    def prepare(self, batch: list[StudyInput]) -> list[StudyInput]:
        return batch

    def generate(self, prepared: list[StudyInput]) -> list[str | Exception]:
        if self.workdir is None:
            raise RuntimeError("InferenceScriptAdapter.workdir is not set")
        self._calls += 1
        folder = Path(self.workdir).expanduser().absolute()  # the script runs in its own folder
        folder.mkdir(parents=True, exist_ok=True)
        input_json, output_json = folder / "input.json", folder / "output.json"
        output_json.unlink(missing_ok=True)
        images = [os.path.abspath(p) for s in prepared for p in s.images]
        root = os.path.commonpath([os.path.dirname(p) for p in images]) if images else str(folder)
        payload = {study.study_id: script_entry(study, root) for study in prepared}
        input_json.write_text(json.dumps(payload, indent=1, ensure_ascii=False))
        log_path = folder / LOG_FILE
        with open(log_path, "a", encoding="utf-8") as log:
            log.write(f"\n=== call {self._calls}: {len(prepared)} studies ===\n")
            log.flush()
            proc = subprocess.run([self.python, str(self.script), str(input_json), str(output_json), root],
                                  cwd=self.script.parent, env=self.env, stdout=log, stderr=subprocess.STDOUT)
        if proc.returncode != 0:
            tail = log_path.read_text(encoding="utf-8", errors="replace")[-1500:]
            raise ScriptError(f"{self.script.name} exited with status {proc.returncode} (log {log_path}):\n{tail}")
        try:
            result = json.loads(output_json.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ScriptError(f"{self.script.name} exited without writing {output_json}") from None
        except json.JSONDecodeError as exc:
            raise ScriptError(f"{self.script.name} wrote invalid JSON to {output_json}: {exc}") from None
        if not isinstance(result, dict):
            raise ScriptError(f"{self.script.name} must write a JSON object {{study_id: {{..., model_prediction}}}}")
        return [_prediction(result, study.study_id, self.script.name) for study in prepared]


def _interpreter(python: str) -> str:
    """--script-python as an absolute path when it names a file (the script runs in its own folder); a bare
    command name (python3) is left to PATH."""
    path = Path(python).expanduser()
    if os.sep in python or (os.altsep and os.altsep in python) or path.is_file():
        if not path.is_file():
            raise ConfigError(f"--script-python {python} does not exist")
        return str(path.absolute())
    return python


def _prediction(result: dict, study_id: str, script: str) -> str | Exception:
    entry = result.get(study_id)
    if not isinstance(entry, dict):
        return ScriptError(f"{script} wrote no entry for this study")
    prediction = entry.get(MODEL_PREDICTION)
    if not isinstance(prediction, str):
        return ScriptError(f"{script} wrote no {MODEL_PREDICTION} string for this study (got {prediction!r})")
    return prediction

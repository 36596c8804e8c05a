"""One .venv-ref process for many runs of one reference script (tests/conftest.py, ``run_reference``).

A reference script's start costs ~6 s of CPU before its first number (torch, transformers and the package under
comparison imported), and a test module runs the same script for several parity classes (test_bertscore.py: 4). This
worker pays that once: each line on its stdin names a script, a payload file and an output file; the script runs as
``__main__`` with the payload as its stdin and its stdout captured, exactly what it prints as a process of its own,
and the captured text (or the traceback of its failure) goes to the output file. Then the worker prints
``done <output file>`` on its stdout, where the test process waits for it.

What a run could leave for the next is put back after each one: the working folder, sys.path, sys.argv, the
environment, and torch's default random generator (seeded as a new process seeds it, so a script that draws from it
unseeded gets what it would get alone). Modules stay imported: that is the saving, and the conftest gives each
script a worker of its own, so no other package's import is ever shared.

stdin lines: {"script": path, "payload": path, "out": path}
stdout lines: done <out>
"""

import contextlib
import io
import json
import os
import runpy
import sys
import traceback


def run(script, payload_path, out_path):
    saved = (os.getcwd(), list(sys.path), list(sys.argv), dict(os.environ))
    if "torch" in sys.modules:
        torch = sys.modules["torch"]
        torch.random.default_generator.manual_seed(torch.initial_seed())
    with open(payload_path) as payload:
        text = payload.read()
    captured = io.StringIO()
    ok = True
    sys.argv = [script]
    sys.stdin = io.StringIO(text)
    try:
        with contextlib.redirect_stdout(captured):
            runpy.run_path(script, run_name="__main__")
    except BaseException:  # noqa: BLE001 - a script's SystemExit or error is its result, not the worker's end
        ok = False
        failure = traceback.format_exc()
    finally:
        sys.stdin = sys.__stdin__
        cwd, sys.path[:], sys.argv, environ = saved
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(environ)
    with open(out_path, "w") as out:
        json.dump({"ok": ok, "stdout": captured.getvalue(), "error": None if ok else failure}, out)


def main():
    protocol = sys.stdout
    for line in sys.stdin:
        job = json.loads(line)
        run(job["script"], job["payload"], job["out"])
        protocol.write(f"done {job['out']}\n")
        protocol.flush()


if __name__ == "__main__":
    main()

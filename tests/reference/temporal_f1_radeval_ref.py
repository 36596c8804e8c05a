"""Reference temporal entity F1: radeval 2.2.1's own TemporalF1Metric (adapter) and f1temporal module, on stanza 1.15.

Everything that decides a number is radeval's code, run unchanged: ``TemporalF1Metric()`` calls
``stanza.download("en", package="radiology", processors={"ner": "radiology"})``; importing its ``f1temporal`` module
builds ``stanza.Pipeline(lang="en", package="radiology", processors={"tokenize": "default", "ner": "radiology"})``
with stanza's defaults (download_method DOWNLOAD_RESOURCES: it fetches resources_1.15.0.json, then every model
file whose md5 does not match); ``_compute_raw(refs, hyps)`` runs ``F1Temporal`` (NER entities of the kept types that
are keywords | keyword regex on clean_text, per-pair F1, mean); each distinct report's entity set is its
``extract_entities`` (what ``F1Temporal`` calls per report).

What this script changes, nothing else: stanza reads its resources folder and resources URL from
STANZA_RESOURCES_DIR and STANZA_RESOURCES_URL, set before stanza is imported: the folder is a copy of the stand-in
(radeval's download rewrites resources.json there) and the URL is a loopback HTTP server (127.0.0.1, stopped at the
end) serving the stand-in's resources_1.15.0.json; every model file's md5 matches, so nothing else is requested.
The device is the CPU (no GPU here).

stdin: {"resources": dir, "hyps": [...], "refs": [...], "texts": [...]}
stdout (last line): {"per_sample": [...], "aggregate": float, "entities": {text: [...]},
                     "stanza_entities": [[[text, type], ...]], "keywords": [...], "clean": [...],
                     "requests": [...], "versions": {...}}
"""

import functools
import http.server
import importlib.metadata
import json
import os
import shutil
import sys
import tempfile
import threading


class _Quiet(http.server.SimpleHTTPRequestHandler):
    requests_seen = []

    def log_message(self, *args):
        _Quiet.requests_seen.append(self.path)


def main():
    payload = json.loads(sys.stdin.read())
    work = tempfile.mkdtemp(prefix="temporal_ref_")
    folder = os.path.join(work, "stanza_resources")
    shutil.copytree(payload["resources"], folder)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=folder))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        os.environ["STANZA_RESOURCES_DIR"] = folder
        os.environ["STANZA_RESOURCES_URL"] = f"http://127.0.0.1:{server.server_address[1]}"
        os.environ["CUDA_VISIBLE_DEVICES"] = ""
        import stanza
        import torch

        torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "2")))
        from radeval.metrics.f1temporal.adapter import TemporalF1Metric

        metric = TemporalF1Metric()
        raw = metric._compute_raw(payload["refs"], payload["hyps"])["temporal_f1"]
        from radeval.metrics.f1temporal import f1temporal

        texts = payload["texts"]
        distinct = list(dict.fromkeys(payload["hyps"] + payload["refs"]))
        result = {
            "per_sample": raw["per_sample"], "aggregate": raw["aggregate"],
            "entities": {t: sorted(f1temporal.extract_entities(t, f1temporal.KEYWORDS)) for t in distinct},
            "stanza_entities": [[[e.text, e.type] for e in f1temporal.nlp(t).entities] for t in texts],
            "keywords": sorted(f1temporal.KEYWORDS),
            "clean": [f1temporal.clean_text(t) for t in texts],
            "requests": sorted(set(_Quiet.requests_seen)),
            "versions": {"radeval": importlib.metadata.version("radeval"), "stanza": stanza.__version__},
        }
    finally:
        server.shutdown()
        server.server_close()
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(result))


if __name__ == "__main__":
    main()

"""The evaluate modules in metrics/<slug>/: layout, cards, documented examples, Gradio apps, and Hub-style loading.

The card's examples equal the module docstring's here; they run in huggingface/evaluate's own module check
(tests/test_evaluate_peer_check.py), so a card cannot drift from the code. Model-backed modules run on random-weight
stand-ins: that proves the plumbing, never the real models' numbers.
"""

from __future__ import annotations

import doctest
import http.server
import importlib.util
import inspect
import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from conftest import meteor_jar_path, require_meteor

REPO = Path(__file__).resolve().parents[1]
METRICS_DIR = REPO / "metrics"
SLUGS = ("bleu2", "bertscore", "semb", "radcliq", "radgraph", "ratescore", "green", "fineradscore", "ce_f1", "nlg",
         "meteor", "radeval_bertscore", "srrbert", "temporal_f1", "crimson")

# slug -> (registry metrics the module needs, stand-in families it needs)
NEEDS = {
    "bleu2": (("bleu2",), ()),
    "bertscore": (("bertscore",), ("bertscore",)),
    "semb": (("semb",), ("semb",)),
    "radgraph": (("radgraph",), ("radgraph",)),
    "radcliq": (("radcliq_v1", "radgraph", "bertscore", "semb"), ("radgraph", "bertscore", "semb")),
    "ratescore": (("ratescore",), ("ratescore",)),
    "green": (("green",), ("green",)),
    "fineradscore": (("fineradscore",), ("green",)),
    "ce_f1": (("ce_f1", "semb"), ("semb",)),
    "nlg": (("nlg",), ()),
    "meteor": (("meteor",), ()),
    "radeval_bertscore": (("radeval_bertscore",), ("radeval_bertscore",)),
    "srrbert": (("srrbert",), ("srrbert",)),
    "temporal_f1": (("temporal_f1",), ("temporal_f1",)),
    "crimson": (("crimson",), ("crimson",)),
}
CARD_SECTIONS = ("## Metric Description", "## How to Use", "### Inputs", "### Output Values",
                 "#### Values from Popular Papers", "### Examples", "## Limitations and Bias", "## Citation")


def _import_file(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _module_file(slug):
    return _import_file(METRICS_DIR / slug / f"{slug}.py", f"_rexrank_eval_module_{slug}")


def _main_class(module):
    import evaluate

    classes = [obj for obj in vars(module).values()
               if isinstance(obj, type) and issubclass(obj, evaluate.EvaluationModule)]
    # evaluate.loading.import_main_class takes the first EvaluationModule subclass in the module's namespace: a
    # module must hold exactly one, its own (importing a base class by name would make evaluate pick that one).
    assert len(classes) == 1, [c.__name__ for c in classes]
    return classes[0]


def _front_matter(text: str) -> dict:
    import yaml

    match = re.match(r"^---\n(.*?)\n---\n", text, flags=re.S)
    assert match, "README.md must start with a YAML front-matter block"
    return yaml.safe_load(match.group(1))


def _examples(text: str) -> list[tuple[str, str]]:
    parser = doctest.DocTestParser()
    return [(e.source, e.want) for e in parser.get_examples(text)]


def _readme_examples(slug) -> str:
    text = (METRICS_DIR / slug / "README.md").read_text(encoding="utf-8")
    section = text.split("### Examples", 1)[1].split("\n## ", 1)[0]
    return "\n".join(re.findall(r"```python\n(.*?)```", section, flags=re.S))


# Optional extras a module needs at run time: absent, its tests skip locally and fail in CI (tests/conftest.py).
EXTRAS = {"ratescore": ("medspacy", "rexrank[ratescore]"), "temporal_f1": ("stanza", "rexrank[temporal]")}


def _require(slug):
    """Every metric a module wraps, and its stand-in builder, must import: an import error FAILS the test (all eight
    metrics exist; a skip here once hid a broken module). Only a missing optional extra skips (fails in CI)."""
    from rexrank.metrics import REGISTRY
    from rexrank.testing.standins import BUILDERS

    metrics, families = NEEDS[slug]
    for name in metrics:
        try:
            REGISTRY.cls(name)
        except (ImportError, AttributeError) as exc:
            pytest.fail(f"rexrank metric {name!r} does not import: {type(exc).__name__}: {exc}")
    for family in families:
        module_name = BUILDERS[family].partition(":")[0]
        if importlib.util.find_spec(module_name) is None:
            pytest.fail(f"stand-in builder {module_name} does not exist")
    if slug == "meteor":  # Java and pycocoevalcap's jar (from .venv-ref here)
        require_meteor()
    if slug in EXTRAS:
        module, extra = EXTRAS[slug]
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{slug} needs {module} (pip install '{extra}')")


def _model_options(standins, family: str) -> dict:
    """Module options pointing a model-backed metric at its stand-in (keys follow each builder's output)."""
    paths = standins(family)
    if family == "semb":
        return {"model": paths["semb"], "backbone": paths["semb_backbone"]}
    if family == "srrbert":  # classifier, tokenizer and Punkt parameters
        return {"model": paths["srrbert"], "tokenizer": paths["srrbert_tokenizer"], "punkt": paths["srrbert_punkt"]}
    if family == "ratescore":  # one folder holding ner/ and embed/ (the builder's documented model= form)
        return {"model": str(Path(paths["ratescore_ner"]).parent)}
    return {"model": paths.get(family) or next(iter(paths.values()))}


def standin_options(slug, standins) -> dict:
    if slug in ("bleu2", "nlg"):  # no model
        return {}
    if slug == "meteor":  # the jar pycocoevalcap ships (main venv: not installed; the reference venv's copy)
        jar = meteor_jar_path()
        return {"jar": str(jar)} if jar else {}
    if slug == "radcliq":
        return {name: _model_options(standins, name) for name in ("radgraph", "bertscore", "semb")}
    if slug == "ce_f1":  # CheXbert labels: SembScore's stand-in
        return _model_options(standins, "semb")
    if slug == "fineradscore":  # local transformers judge on the tiny Llama stand-in, short answers (speed)
        return {"model": standins("green")["green"], "backend": "transformers", "options": {"max_tokens": 16}}
    if slug == "crimson":  # the Gemma-3 stand-in judge, short answers (speed; an unofficial, fingerprinted budget)
        return {**_model_options(standins, slug), "options": {"max_new_tokens": 8}}
    if slug == "green":  # the random stand-in never writes EOS: cap its gibberish (an unofficial, fingerprinted budget)
        return {**_model_options(standins, slug), "options": {"max_new_tokens": 16}}
    return _model_options(standins, slug)


@pytest.fixture(scope="module")
def hub_shim(standins, tmp_path_factory):
    """evaluate.load replacement: "rexrank/<slug>" or the folder -> the local folder with stand-in options.

    Loaded modules are cached per (slug, options) so the app, variant and key tests share the model loading.
    """
    import evaluate

    real_load = evaluate.load
    cache_dir = tmp_path_factory.mktemp("evaluate_cache")
    loaded = {}

    def load(path, *args, **kwargs):
        path = str(path)
        slug = path.split("/", 1)[1] if path.startswith("rexrank/") else Path(path).name
        if slug not in SLUGS:
            return real_load(path, *args, **kwargs)
        options = {**kwargs, **standin_options(slug, standins)}
        key = (slug, args, json.dumps(options, sort_keys=True))
        if key not in loaded:
            loaded[key] = real_load(str(METRICS_DIR / slug), *args, cache_dir=str(cache_dir), **options)
        return loaded[key]

    return load


def test_every_metric_has_a_folder():
    """All eight ReXrank metrics and CE F1 ship an evaluate module; nothing else sits in metrics/."""
    folders = sorted(p.name for p in METRICS_DIR.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))
    assert folders == sorted(SLUGS)


@pytest.mark.parametrize("slug", SLUGS)
def test_folder_layout_and_card(slug):
    """Each folder is a publishable Space: module, app, requirements, and a card with the Space YAML and sections."""
    folder = METRICS_DIR / slug
    for name in (f"{slug}.py", "README.md", "app.py", "requirements.txt"):
        assert (folder / name).is_file(), f"{slug}/{name} missing"
    card = (folder / "README.md").read_text(encoding="utf-8")
    fields = _front_matter(card)
    assert fields["title"] and fields["emoji"] and fields["description"]
    assert fields["sdk"] == "gradio" and fields["app_file"] == "app.py"
    assert {"evaluate", "metric"} <= set(fields["tags"])
    for section in CARD_SECTIONS:
        assert section in card, f"{slug} card lacks {section!r}"
    requirements = (folder / "requirements.txt").read_text().splitlines()
    assert "rexrank" in [r.strip() for r in requirements], "requirements.txt must install rexrank"


@pytest.mark.parametrize("slug", SLUGS)
def test_module_declares_itself(slug):
    """One evaluate.Metric per file, string features, explicit _compute keywords (evaluate's common test rule)."""
    import datasets

    module = _module_file(slug)
    cls = _main_class(module)
    params = inspect.signature(cls._compute).parameters
    assert not any(p.kind is p.VAR_KEYWORD for p in params.values()), f"{slug}._compute takes **kwargs"
    assert list(params)[:3] == ["self", "predictions", "references"]
    info = cls._info(cls.__new__(cls))
    assert dict(info.features) == {"predictions": datasets.Value("string"), "references": datasets.Value("string")}
    for constant in ("_CITATION", "_DESCRIPTION", "_KWARGS_DESCRIPTION"):
        assert getattr(module, constant).strip(), f"{slug}: {constant} is empty"
    assert cls._download_and_prepare is not evaluate_module_base()._download_and_prepare, \
        f"{slug} must load its resources in _download_and_prepare"


def evaluate_module_base():
    import evaluate

    return evaluate.Metric


@pytest.mark.parametrize("slug", SLUGS)
def test_module_declares_only_its_own_facts(slug):
    """Every module subclasses RexrankMetric and declares facts, not machinery: the constructor, _info and the
    loading are the base's (one copy for all), so a module file cannot drift from the others."""
    from rexrank.evaluate_modules.metric import RexrankMetric

    module = _module_file(slug)
    cls = _main_class(module)
    assert issubclass(cls, RexrankMetric), f"{slug}: {cls.__name__} does not subclass RexrankMetric"
    own = vars(cls)
    assert "__init__" not in own and "_info" not in own, f"{slug} restates the base's __init__ or _info"
    assert cls.slug == slug
    assert (cls.description, cls.inputs_description, cls.citation) == \
        (module._DESCRIPTION, module._KWARGS_DESCRIPTION, module._CITATION)
    assert cls.__doc__.startswith(module._DESCRIPTION + module._KWARGS_DESCRIPTION), \
        f"{slug}: the class docstring must carry the runnable examples (evaluate's doctest reads it)"


def test_an_imported_base_is_never_the_main_class(tmp_path, monkeypatch):
    """evaluate.loading.import_main_class takes the first non-abstract EvaluationModule subclass in a module's
    namespace: a module that imports RexrankMetric by name (it then comes first) still gets its own class."""
    import evaluate

    from rexrank.evaluate_modules.metric import RexrankMetric

    assert inspect.isabstract(RexrankMetric)
    script = tmp_path / "rexrank_probe_module.py"
    script.write_text(
        "from rexrank.evaluate_modules.metric import RexrankMetric\n\n\n"
        "class Probe(RexrankMetric):\n"
        "    slug, description, inputs_description, citation = 'bleu2', 'probe', 'Args: none', ''\n\n"
        "    def _compute(self, predictions, references):\n"
        "        return self.score(predictions, references)\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    probe = importlib.import_module("rexrank_probe_module")
    assert next(iter(o for o in vars(probe).values() if isinstance(o, type))) is RexrankMetric
    main = evaluate.loading.import_main_class("rexrank_probe_module")
    assert main is probe.Probe
    # The probe is a working module: the base's __init__, _info and loading serve it (registry name = slug).
    instance = main(cache_dir=str(tmp_path / "cache"))
    instance.download_and_prepare()  # what evaluate.load does after constructing a module
    result = instance.compute(predictions=["No effusion."], references=["No effusion."])
    assert result["bleu2"] == 1.0 and result["fingerprint"]
    sys.modules.pop("rexrank_probe_module", None)


@pytest.mark.parametrize("slug", SLUGS)
def test_card_examples_equal_module_examples(slug):
    """The card's Examples section shows exactly the module docstring's runnable examples."""
    module_examples = _examples(_module_file(slug)._KWARGS_DESCRIPTION)
    assert module_examples, f"{slug} documents no runnable example"
    assert _examples(_readme_examples(slug)) == module_examples


def _bibtex_entries(text: str) -> dict[str, str]:
    """BibTeX key -> entry, for the entries in ``text`` (a module's citation or a card's Citation section)."""
    entries = re.split(r"\n(?=@\w+\{)", text.strip().strip("`").removeprefix("bibtex").strip())
    return {m.group(1): entry.strip() for entry in entries if (m := re.match(r"@\w+\{([^,]+),", entry))}


def _owned_bibtex() -> dict[str, str]:
    """BibTeX key -> text of every entry with an owner (rexrank.evaluate_modules.citations, REXRANK_BIBTEX)."""
    from rexrank.data.catalog import REXRANK_BIBTEX
    from rexrank.evaluate_modules import citations

    owners = (*citations.SHARED, REXRANK_BIBTEX)
    return {key: entry for owned in owners for key, entry in _bibtex_entries(owned).items()}


@pytest.mark.parametrize("slug", SLUGS)
def test_shared_citations_are_the_owners(slug):
    """An entry more than one module cites (RadEval, CheXbert, BLEU, RadCliQ ...) has one owner: the module's
    citation and its card hold the owner's text verbatim (a card stands alone on the Hub, so it keeps the text)."""
    owned = _owned_bibtex()
    module_entries = _bibtex_entries(_module_file(slug)._CITATION)
    card = (METRICS_DIR / slug / "README.md").read_text(encoding="utf-8").split("## Citation", 1)[1]
    card_entries = _bibtex_entries(card.split("\n## ", 1)[0])
    for where, entries in (("module citation", module_entries), ("card", card_entries)):
        for key, entry in entries.items():
            if key in owned:
                assert entry == owned[key], f"{slug}: the {where}'s {key} is not its owner's text, verbatim"
    assert set(card_entries) <= set(module_entries), f"{slug}: the card cites what the module does not"


def test_every_shared_entry_is_cited_by_two_modules():
    """An owner in rexrank.evaluate_modules.citations exists because several modules cite it; none is unused."""
    from rexrank.evaluate_modules import citations

    cited = [key for slug in SLUGS for key in _bibtex_entries(_module_file(slug)._CITATION)]
    for owned in citations.SHARED:
        (key,) = _bibtex_entries(owned)
        assert cited.count(key) >= 2, f"{key} is cited by {cited.count(key)} module(s); keep it in that module"


@pytest.mark.parametrize("slug", SLUGS)
def test_card_cites_rexrank_as_the_owner_does(slug):
    """A card stands alone on the Hub, so it holds the ReXrank BibTeX as text: verbatim the owner's
    (rexrank.data.catalog.REXRANK_BIBTEX), which its module's citation ends with; a card without it has a module
    that does not cite ReXrank either."""
    from rexrank.data.catalog import REXRANK_BIBTEX

    card = (METRICS_DIR / slug / "README.md").read_text(encoding="utf-8")
    cites = _module_file(slug)._CITATION.rstrip().endswith(REXRANK_BIBTEX)
    if cites or "zhang2024rexrank" in card:
        assert cites, f"{slug}: the card cites ReXrank, the module's _CITATION does not end with REXRANK_BIBTEX"
        citation = card.split("## Citation", 1)[1]
        assert REXRANK_BIBTEX in citation, f"{slug}: the card's ReXrank BibTeX is not the owner's, verbatim"


@pytest.mark.parametrize("slug", SLUGS)
def test_app_builds_and_scores(slug, hub_shim, monkeypatch):
    """app.py builds its Gradio 6 Blocks and its scoring function returns the module's result per pair."""
    import evaluate
    import gradio as gr
    import pandas as pd

    _require(slug)
    monkeypatch.setattr(evaluate, "load", hub_shim)
    app_module = _import_file(METRICS_DIR / slug / "app.py", f"_rexrank_app_{slug}")
    app = app_module.build()
    demo = app.blocks()
    assert isinstance(demo, gr.Blocks)
    # The function the "Score" button (API name "score") is wired to, called as Gradio would call it.
    (score_fn,) = [f.fn for f in demo.fns.values() if f.api_name == "score"]
    table = pd.DataFrame({"predictions": ["No acute process.", "Small effusion.", ""],
                          "references": ["No acute abnormality.", "Large effusion.", ""]})
    summary, per_pair = score_fn(table)
    name = _main_metric_key(slug)
    assert name in summary and "scores" not in summary
    assert len(per_pair) == 2  # the blank trailing row of the editor is not a pair
    assert list(per_pair.columns) == ["prediction", "reference", "score"]


def test_app_shows_user_errors_as_messages():
    """An empty table or a malformed row is a gr.Error message in the UI, not a traceback."""
    import gradio as gr

    from rexrank.evaluate_modules.app import MetricApp

    app = MetricApp(METRICS_DIR / "bleu2")
    with pytest.raises(gr.Error, match="the table is empty"):
        app._score_for_ui([["", ""]])
    with pytest.raises(gr.Error, match="row 1 needs two cells"):
        app._score_for_ui([["only a prediction"]])
    summary, per_pair = app._score_for_ui([["Heart size is normal.", "Heart size is normal."]])
    assert summary["bleu2"] == 1.0 and per_pair["score"].tolist() == [1.0]


def _main_metric_key(slug):
    return {"radcliq": "radcliq_v1", "radgraph": "radgraph"}.get(slug, slug)


def test_unknown_module_option_is_refused():
    """evaluate silently ignores unknown constructor keywords; our modules refuse them (a typo must not pass)."""
    import evaluate

    from rexrank.errors import ConfigError

    with pytest.raises(ConfigError, match="unknown option"):
        evaluate.load(str(METRICS_DIR / "bleu2"), modle="x")


def test_radcliq_v0_config_and_bad_config(hub_shim, monkeypatch):
    """config_name selects RadCliQ-v0 (no leaderboard reciprocal); an unknown config names the valid ones."""
    import evaluate

    from rexrank.errors import ConfigError

    with pytest.raises(ConfigError, match="Available: v1, v0"):
        evaluate.load(str(METRICS_DIR / "radcliq"), "v2")
    _require("radcliq")
    monkeypatch.setattr(evaluate, "load", hub_shim)
    module = evaluate.load("rexrank/radcliq", "v0")
    result = module.compute(predictions=["Small effusion."], references=["Large effusion."])
    assert "radcliq_v0" in result and "inverse_radcliq_v1" not in result


@pytest.mark.parametrize("slug, config_name, key", [("radgraph", "partial", "radgraph_partial"),
                                                   ("ratescore", "v0.6-long", "ratescore")])
def test_named_variants_reach_the_metric(slug, config_name, key, hub_shim, monkeypatch):
    """config_name picks a variant: a different registry metric (radgraph) or option (ratescore), and fingerprint."""
    import evaluate

    _require(slug)
    monkeypatch.setattr(evaluate, "load", hub_shim)
    default = evaluate.load(f"rexrank/{slug}")
    variant = evaluate.load(f"rexrank/{slug}", config_name)
    pair = {"predictions": ["Small left pleural effusion."], "references": ["Large right pleural effusion."]}
    result = variant.compute(**pair)
    assert key in result and len(result["scores"]) == 1
    assert result["fingerprint"] != default.compute(**pair)["fingerprint"]


class _FakeHub(http.server.BaseHTTPRequestHandler):
    """Serves metrics/<slug>/ the way the Hub serves a Space repo to evaluate 0.4.6.

    evaluate's HubEvaluationModuleFactory (evaluate/loading.py) asks for
    ``{HF_ENDPOINT}/spaces/{org}/{slug}/resolve/{revision}/{slug}.py`` with revision "v<evaluate version>" first
    and "main" after a 404 (cached_path: a HEAD for the ETag, then a GET). It makes no API call; the
    ``/api/spaces/...`` route is here only to record it if a later version starts to.
    """

    org = "rexrank"
    requests: list = []

    def log_message(self, *args):  # keep pytest output clean
        pass

    def _file(self):
        match = re.fullmatch(r"/spaces/([^/]+)/([^/]+)/resolve/([^/]+)/([^/?]+)(\?.*)?", self.path)
        if not match or match.group(1) != self.org or match.group(3) != "main" or match.group(2) not in SLUGS:
            return None
        path = METRICS_DIR / match.group(2) / match.group(4)
        return path if path.is_file() else None

    def _send(self, body: bytes | None, status=200, content_type="text/plain"):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body or b"")))
        if status == 200:
            self.send_header("ETag", f'"{abs(hash(body))}"')
        self.end_headers()
        if body and self.command == "GET":
            self.wfile.write(body)

    def do_HEAD(self):
        self.do_GET()

    def do_GET(self):
        self.requests.append((self.command, self.path))
        api = re.fullmatch(r"/api/spaces/([^/]+)/([^/]+)(/revision/main)?", self.path.split("?")[0])
        if api and api.group(1) == self.org and api.group(2) in SLUGS:
            files = sorted(p.name for p in (METRICS_DIR / api.group(2)).iterdir() if p.is_file())
            body = json.dumps({"id": f"{self.org}/{api.group(2)}", "sha": "0" * 40,
                               "siblings": [{"rfilename": f} for f in files]}).encode()
            return self._send(body, content_type="application/json")
        path = self._file()
        if path is None:
            return self._send(b"Entry not found", status=404)
        return self._send(path.read_bytes())


@pytest.fixture
def fake_hub():
    handler = type("Handler", (_FakeHub,), {"requests": []})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler.requests
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


_LOAD_FROM_HUB = """
import json, sys
import evaluate
slug, options, predictions, references = json.loads(sys.argv[1])
module = evaluate.load("rexrank/" + slug, **options)
result = module.compute(predictions=predictions, references=references)
print(json.dumps({"class": type(module).__name__, "result": result}))
"""


def _load_from_fake_hub(endpoint, tmp_path, slug, options, predictions, references):
    """Run `evaluate.load("rexrank/<slug>", **options).compute(...)` in a fresh interpreter against ``endpoint``.

    A fresh interpreter because evaluate reads HF_ENDPOINT and its offline flag at import time. Online for this
    call only, with an empty HF cache. Download counting (a HEAD to an S3 bucket) is switched off: the sandbox has
    no network, and nothing but the loopback server may be reached.
    """
    env = {k: v for k, v in os.environ.items()
           if k not in ("HF_EVALUATE_OFFLINE", "HF_HUB_OFFLINE", "HF_HOME", "HF_MODULES_CACHE", "HF_METRICS_CACHE")}
    env.update(HF_ENDPOINT=endpoint, HF_HOME=str(tmp_path / "hf"), HF_UPDATE_DOWNLOAD_COUNTS="0",
               HF_HUB_DISABLE_TELEMETRY="1", NO_PROXY="127.0.0.1,localhost", no_proxy="127.0.0.1,localhost")
    payload = json.dumps([slug, options, predictions, references])
    proc = subprocess.run([sys.executable, "-c", _LOAD_FROM_HUB, payload], capture_output=True, text=True, env=env,
                          timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _only_space_files_requested(seen, slug):
    gets = [path for method, path in seen if method == "GET"]
    assert f"/spaces/rexrank/{slug}/resolve/main/{slug}.py" in gets
    # Only the Space's files were asked for: the module resolved through our server, not some cache or network.
    assert all(path.startswith((f"/spaces/rexrank/{slug}/", f"/api/spaces/rexrank/{slug}")) for _, path in seen), seen


@pytest.mark.slow  # 7.5 s of CPU of its own: over the fast tier's 2 s or near it (tests/README.md, "Tiers")
def test_evaluate_load_from_hub_namespace(fake_hub, standins, tmp_path):
    """`evaluate.load("rexrank/radcliq")` end to end, with a loopback server posing as the Hub (HF_ENDPOINT)."""
    _require("radcliq")
    endpoint, seen = fake_hub
    report = "Mild cardiomegaly with small bilateral pleural effusions and bibasilar atelectasis."
    options = {**standin_options("radcliq", standins), "device": "cpu"}
    out = _load_from_fake_hub(endpoint, tmp_path, "radcliq", options, [report, "Heart size is normal."],
                              [report, "Mild cardiomegaly."])
    assert out["class"] == "RadCliQ"
    assert out["result"]["radcliq_v1"] == pytest.approx(sum(out["result"]["scores"]) / 2)
    assert out["result"]["scores"][0] == pytest.approx(-1.4407, abs=1e-3)
    _only_space_files_requested(seen, "radcliq")
    # The module was copied into the fresh cache, proving it did not come from a previous local load.
    assert list((tmp_path / "hf").rglob("radcliq.py"))


@pytest.mark.slow  # 6.5 s of CPU of its own: over the fast tier's 2 s or near it (tests/README.md, "Tiers")
def test_evaluate_load_from_hub_namespace_without_models(fake_hub, tmp_path):
    """The same Hub resolution for the model-free BLEU-2 module: runs even before the model-backed metrics exist."""
    endpoint, seen = fake_hub
    out = _load_from_fake_hub(endpoint, tmp_path, "bleu2", {}, ["No acute cardiopulmonary process."],
                              ["No acute cardiopulmonary abnormality."])
    assert out["class"] == "Bleu2" and out["result"]["scores"] == [pytest.approx(0.6324555)]
    _only_space_files_requested(seen, "bleu2")
    # evaluate 0.4.6 asks for the tag of its own version first, then falls back to main.
    assert seen[0][1].startswith("/spaces/rexrank/bleu2/resolve/v"), seen


# ---- what each module returns besides rexrank's own keys (the field's usual module's keys) --------------------

def test_module_paths_name_every_folder():
    """module_path(slug) is the folder evaluate.load takes, for every module; an unknown slug names the real ones."""
    from rexrank.errors import UnknownNameError
    from rexrank.evaluate_modules import module_path, module_paths

    assert module_paths() == {slug: (METRICS_DIR / slug).resolve() for slug in sorted(SLUGS)}
    assert module_path("radcliq") == (METRICS_DIR / "radcliq").resolve()
    with pytest.raises(UnknownNameError, match="Unknown evaluate module 'bleu3'. Available: bertscore, bleu2"):
        module_path("bleu3")


def test_bleu_keys_match_corpus_bleu():
    """The keys of evaluate's `bleu` equal NLTK's corpus BLEU-2 (no smoothing) on ReXrank's tokens: the same
    computation evaluate's module does, checked against an independent implementation. `bleu2` stays the mean of
    sentence BLEU-2 (the leaderboard's), a different number."""
    import evaluate
    from nltk.translate.bleu_score import corpus_bleu

    from rexrank.metrics.bleu import tokenize

    predictions = ["No acute cardiopulmonary process.", "Small left pleural effusion with atelectasis.",
                   "Heart size is normal. Lungs are clear.", "Mild cardiomegaly."]
    references = ["No acute cardiopulmonary abnormality.", "Large right pleural effusion.",
                  "The heart size is normal. The lungs are clear.", "Mild cardiomegaly, unchanged."]
    result = evaluate.load(str(METRICS_DIR / "bleu2")).compute(predictions=predictions, references=references)
    hyps, refs = [tokenize(p) for p in predictions], [tokenize(r) for r in references]
    assert result["bleu"] == pytest.approx(corpus_bleu([[r] for r in refs], hyps, weights=(0.5, 0.5)), abs=1e-12)
    assert result["translation_length"] == sum(map(len, hyps))
    assert result["reference_length"] == sum(map(len, refs))
    assert result["length_ratio"] == pytest.approx(result["translation_length"] / result["reference_length"])
    assert result["brevity_penalty"] < 1.0 and len(result["precisions"]) == 2
    assert result["bleu2"] == pytest.approx(sum(result["scores"]) / 4) and result["bleu2"] != result["bleu"]


def test_bertscore_keys_are_the_metrics_p_r_f(hub_shim, monkeypatch):
    """precision/recall/f1 are the rexrank metric's per-pair P, R, F1 (rescaled alike); f1 is the scored column."""
    import evaluate

    _require("bertscore")
    monkeypatch.setattr(evaluate, "load", hub_shim)
    module = evaluate.load("rexrank/bertscore")
    pairs = {"predictions": ["Small left pleural effusion.", "No acute process.", ""],
             "references": ["Large right pleural effusion.", "No acute abnormality.", "Clear lungs."]}
    result = module.compute(**pairs)
    frame = module.metric.score_details(pairs["predictions"], pairs["references"])
    assert result["precision"] == pytest.approx(frame["bertscore_precision"].tolist(), abs=0)
    assert result["recall"] == pytest.approx(frame["bertscore_recall"].tolist(), abs=0)
    assert result["f1"] == result["scores"] == pytest.approx(module.metric.score(**dict(
        zip(("hyps", "refs"), pairs.values()))).tolist(), abs=0)
    assert result["precision"] != result["recall"]
    assert re.fullmatch(r".+_L5_no-idf_version=rexrank-[\w.]+\(hug_trans=[\w.]+\)-rescaled", result["hashcode"])


def test_radgraph_keys_follow_f1radgraph(hub_shim, monkeypatch):
    """Annotations for every config; mean_reward/reward_list only for the radgraph package's reward levels."""
    import evaluate

    _require("radgraph")
    monkeypatch.setattr(evaluate, "load", hub_shim)
    pair = {"predictions": ["Small left pleural effusion.", "No pneumothorax."],
            "references": ["Large right pleural effusion.", "No pneumothorax."]}
    combined = evaluate.load("rexrank/radgraph").compute(**pair)
    assert "mean_reward" not in combined and "reward_list" not in combined
    partial_module = evaluate.load("rexrank/radgraph", "partial")
    partial = partial_module.compute(**pair)
    assert partial["reward_list"] == partial["scores"] and partial["mean_reward"] == partial["radgraph_partial"]
    for result in (combined, partial):
        assert result["hypothesis_annotation_lists"] == partial_module.metric.annotate(pair["predictions"])
        assert result["reference_annotation_lists"] == partial_module.metric.annotate(pair["references"])
        assert {"text", "entities"} <= set(result["hypothesis_annotation_lists"][0])


def test_green_std_and_summary_come_from_the_metric(hub_shim, monkeypatch):
    """green_std and summary are GREEN's own summary (rexrank.metrics.green.summarize) of this call's outputs."""
    import evaluate

    _require("green")
    monkeypatch.setattr(evaluate, "load", hub_shim)
    module = evaluate.load("rexrank/green")
    result = module.compute(predictions=["Small effusion.", "No acute process."],
                            references=["Large effusion.", "No acute abnormality."])
    expected = module.metric.summary()  # summarize() of the outputs the same call parsed
    assert json.dumps(result["summary"], sort_keys=True) == json.dumps(expected, sort_keys=True)
    assert result["green_std"] == pytest.approx(expected["std"], nan_ok=True)
    assert result["summary"]["n"] == 2


def test_green_summary_reads_counts_from_the_per_pair_table():
    """From the per-pair table (what every process returns), GREEN's summary equals summarize() of the parsed
    outputs, for a readable output with counts and an unreadable one."""
    import types

    from rexrank.evaluate_modules import conventions
    from rexrank.metrics import green

    readable = "\n".join(["[Clinically Significant Errors]:"]
                         + [f"({c}) {text}: {1 if c == 'b' else 0}." for c, _, text in green.CATEGORIES]
                         + ["[Clinically Insignificant Errors]:", "(a) None: 0.", "[Matched Findings]:", "2. x"])
    parsed = [green.parse_output("unreadable"), green.parse_output(readable)]
    assert parsed[1]["significant_errors"] == [0, 1, 0, 0, 0, 0]
    metric = types.SimpleNamespace(spec=types.SimpleNamespace(name="green"))
    out = conventions.green(metric, [], [], green.details_frame(parsed, ["", readable]))
    assert out["summary"] == green.summarize(parsed) and out["summary"]["n_parse_failures"] == 1
    assert out["summary"]["error_free_rate_by_category"]["(b) missing_finding"] == 0.0
    assert out["green_std"] == 0.0


@pytest.mark.parametrize("values, flag, words", [
    ([-1.2, -0.8, 0.5], "NEGATIVE_MEAN", "radcliq_v1 = -0.5, inverse_radcliq_v1 = -2"),
    ([float("nan"), float("nan")], "NAN_MEAN", "radcliq_v1 = nan"),
])
def test_bad_reciprocal_mean_comes_with_flag_and_warning(values, flag, words):
    """A negative or NaN mean is never returned without a word: leaderboard_flags from aggregate(), and a warning
    that names the numbers (the issue: `inverse_radcliq_v1: -7.47` came back silently)."""
    from rexrank.evaluate_modules.common import results
    from rexrank.metrics import aggregation

    out = results("radcliq_v1", values, reciprocal=True)
    expected = aggregation.aggregate(values, aggregation.RECIPROCAL_OF_MEAN).flags
    assert out["leaderboard_flags"] == list(expected) and getattr(aggregation, flag) in expected
    assert out["warning"].startswith(words) and getattr(aggregation, flag) in out["warning"]


def test_warning_counts_pairs_without_a_score():
    """NaN pairs left out of a finite mean are said in words too; a clean result has warning None."""
    from rexrank.evaluate_modules.common import results

    out = results("green", [0.5, float("nan"), 1.0])
    assert out["green"] == 0.75 and out["n_nan"] == 1 and out["leaderboard_flags"] == []
    assert out["warning"] == "1 of 3 pairs have no score (NaN in scores) and are left out of green"
    assert results("green", [0.5, 1.0])["warning"] is None


def test_radcliq_names_its_own_options():
    """`model=` (which a component's message suggests) is refused with the options RadCliQ takes, read from its
    declaration (``own_options``), and where each component's weights go."""
    import evaluate

    from rexrank.errors import ConfigError
    from rexrank.evaluate_modules.common import module_options

    with pytest.raises(ConfigError) as err:
        evaluate.load(str(METRICS_DIR / "radcliq"), model="/models/radgraph.tar.gz")
    message = str(err.value)
    own = message.split("its own options: ", 1)[1].split(";", 1)[0].split(", ")
    assert own == list(module_options(_main_class(_module_file("radcliq")))) == \
        ["radgraph", "bertscore", "semb", "device", "batch_size"]
    assert "radgraph={'model': PATH}" in message and "semb={'model': PATH, 'backbone': PATH}" in message


def test_ce_f1_keys_follow_f1chexbert_and_the_metric(hub_shim, monkeypatch):
    """CE F1's module returns f1chexbert's four values (cr/cr_5 as classification_report dicts) built from the same
    counts as rexrank's own outputs, and its uncertain option reaches the metric (and its fingerprint)."""
    import evaluate

    _require("ce_f1")
    monkeypatch.setattr(evaluate, "load", hub_shim)
    pair = {"predictions": ["Small left pleural effusion.", "Cardiomegaly.", "No acute process."],
            "references": ["Large right pleural effusion.", "Heart size normal.", "Possible edema."]}
    default = evaluate.load("rexrank/ce_f1")
    strict = evaluate.load("rexrank/ce_f1", uncertain="negative")
    result = default.compute(**pair)
    assert result["ce_f1"] == result["values"]["micro_f1_14"] == result["cr"]["micro avg"]["f1-score"]
    assert result["cr_5"]["macro avg"]["f1-score"] == result["values"]["macro_f1_5"]
    assert set(result["cr_5"]) - {"micro avg", "macro avg"} == {"Atelectasis", "Cardiomegaly", "Consolidation", "Edema",
                                                                "Pleural Effusion"}
    assert result["accuracy"] == sum(result["pe_accuracy"]) / 3 and result["uncertain"] == "positive"
    assert strict.compute(**pair)["uncertain"] == "negative" and strict.fingerprint != default.fingerprint


def test_evaluate_multi_process_equals_one_process(tmp_path):
    """evaluate's own multi-process mode (num_process=2: each process adds its half, process 0 computes over all)
    gives what one process gives, through the base's score (rexrank.parallel.local on process 0); the other
    process gets None, as evaluate documents. Two threads stand in for the two processes (evaluate syncs through
    lock files in the shared cache_dir)."""
    import evaluate

    predictions = ["No acute cardiopulmonary process.", "Small left pleural effusion.", "Heart size is normal.",
                   "Mild edema."]
    references = ["No acute cardiopulmonary abnormality.", "Large right pleural effusion.", "Heart size is normal.",
                  "No edema."]
    single = evaluate.load(str(METRICS_DIR / "bleu2")).compute(predictions=predictions, references=references)
    out, errors = {}, []

    def run(rank):
        try:
            module = evaluate.load(str(METRICS_DIR / "bleu2"), num_process=2, process_id=rank,
                                   experiment_id="two_processes", cache_dir=str(tmp_path))
            half = slice(2 * rank, 2 * rank + 2)
            out[rank] = module.compute(predictions=predictions[half], references=references[half])
        except Exception as exc:  # noqa: BLE001 - reported below, with the rank
            errors.append((rank, exc))

    threads = [threading.Thread(target=run, args=(rank,)) for rank in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert not errors and not any(t.is_alive() for t in threads), errors
    assert out[1] is None
    assert out[0] == single

"""`rexrank hub publish-metrics`: the dry-run listing, the Hub calls it makes, and its token handling."""

from __future__ import annotations

from pathlib import Path

import pytest

from rexrank.evaluate_modules import publish as hub_publish

REPO = Path(__file__).resolve().parents[1]
METRICS_DIR = REPO / "metrics"
WHEEL_NAME = "rexrank-0.1.0-py3-none-any.whl"
TOKEN = "hf_TESTtokenNEVERprinted123"


class FakeApi:
    """Records what publish asks of huggingface_hub.HfApi; keeps a copy of each uploaded folder's files."""

    def __init__(self, token, fail_with=None):
        self.token = token
        self.calls = []
        self.uploaded = {}
        self.fail_with = fail_with

    def create_repo(self, repo_id, **kwargs):
        self.calls.append(("create_repo", repo_id, kwargs))
        if self.fail_with:
            raise self.fail_with

    def upload_folder(self, *, repo_id, folder_path, **kwargs):
        self.calls.append(("upload_folder", repo_id, kwargs))
        root = Path(folder_path)
        self.uploaded[repo_id] = {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.fixture
def no_network_api(monkeypatch):
    def refuse(token):
        raise AssertionError("the dry run must not create a Hub client")

    monkeypatch.setattr(hub_publish, "make_api", refuse)


# Every evaluate module: the eight ReXrank metrics (RadGraph's and RadCliQ's one each), then CE F1, NLG, METEOR and
# RadEval's four (RadEval-BERTScore, SRR-BERT, temporal entity F1, CRIMSON).
MODULES = ("bleu2", "bertscore", "semb", "radgraph", "radcliq", "ratescore", "green", "fineradscore", "ce_f1", "nlg",
           "meteor", "radeval_bertscore", "srrbert", "temporal_f1", "crimson")


def test_dry_run_lists_every_space_and_file(cli, no_network_api, monkeypatch):
    """--dry-run names each target Space and every file with its size, and touches no network."""
    monkeypatch.delenv("HF_TOKEN", raising=False)  # a dry run needs no token either
    code, out = cli("hub", "publish-metrics", "--org", "my-org", "--dry-run", "--metrics-dir", str(METRICS_DIR))
    assert code == 0, out
    folders = sorted(p.name for p in METRICS_DIR.iterdir() if (p / f"{p.name}.py").is_file())
    assert folders == sorted(MODULES)
    for slug in folders:
        assert f"my-org/{slug} (space, sdk gradio) <- {METRICS_DIR / slug}" in out
        for name in (f"{slug}.py", "README.md", "app.py", "requirements.txt"):
            size = (METRICS_DIR / slug / name).stat().st_size
            assert any(line.split()[:3] == [name, str(size), "B"] for line in out.splitlines()), (slug, name)
        # The `rexrank` line becomes the URL of the wheel built at publish time and uploaded into the Space.
        assert f"becomes 'rexrank @ https://huggingface.co/spaces/my-org/{slug}/resolve/main/wheels/rexrank-" in out
    assert out.count("built at publish time") == len(folders)
    assert "public" in out and "__pycache__" not in out


def test_dry_run_only_and_requirement_note(cli, no_network_api):
    code, out = cli("hub", "publish-metrics", "--org", "o", "--dry-run", "--only", "radcliq,bleu2",
                    "--only", "bleu2", "--private", "--rexrank-requirement", "rexrank @ git+https://x/rexrank@v1",
                    "--metrics-dir", str(METRICS_DIR))
    assert code == 0, out
    assert out.count("(space, sdk gradio)") == 2 and "o/radcliq" in out and "o/bleu2" in out
    assert "private" in out and "becomes 'rexrank @ git+https://x/rexrank@v1'" in out


def test_publish_calls_the_hub_api(cli, monkeypatch):
    """A real run: create_repo as a Gradio Space (exist_ok), then upload exactly the planned files."""
    apis = []
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    monkeypatch.setattr(hub_publish, "make_api", lambda token: apis.append(FakeApi(token)) or apis[-1])
    code, out = cli("hub", "publish-metrics", "--org", "my-org", "--only", "bleu2,radcliq", "--private",
                    "--rexrank-requirement", "rexrank @ git+https://example.org/rexrank@v0.1.0",
                    "--metrics-dir", str(METRICS_DIR))
    assert code == 0, out
    (api,) = apis
    assert api.token == TOKEN
    assert [(c[0], c[1]) for c in api.calls] == [("create_repo", "my-org/bleu2"), ("upload_folder", "my-org/bleu2"),
                                                 ("create_repo", "my-org/radcliq"), ("upload_folder", "my-org/radcliq")]
    create = api.calls[0][2]
    assert create == {"repo_type": "space", "space_sdk": "gradio", "exist_ok": True, "private": True, "token": TOKEN}
    assert api.calls[1][2]["repo_type"] == "space"
    for slug in ("bleu2", "radcliq"):
        files = api.uploaded[f"my-org/{slug}"]
        assert sorted(files) == sorted(["README.md", "app.py", f"{slug}.py", "requirements.txt"])
        assert files[f"{slug}.py"] == (METRICS_DIR / slug / f"{slug}.py").read_bytes()
        requirements = files["requirements.txt"].decode().splitlines()
        assert "rexrank @ git+https://example.org/rexrank@v0.1.0" in requirements and "rexrank" not in requirements
    assert "https://huggingface.co/spaces/my-org/radcliq" in out
    assert TOKEN not in out


def test_missing_token_is_one_clear_error(cli, monkeypatch, tmp_path):
    """No HF_TOKEN and no saved login: exit 2 with a message naming both fixes, before any Hub client exists."""
    import huggingface_hub.constants

    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HUGGING_FACE_HUB_TOKEN", raising=False)
    monkeypatch.setattr(huggingface_hub.constants, "HF_TOKEN_PATH", str(tmp_path / "no-token"))
    monkeypatch.setattr(hub_publish, "make_api", lambda token: pytest.fail("no client without a token"))
    code, out = cli("hub", "publish-metrics", "--org", "my-org", "--only", "bleu2", "--metrics-dir", str(METRICS_DIR))
    assert code == 2
    assert out.startswith("error: no Hugging Face token found") and "HF_TOKEN" in out and "hf auth login" in out
    assert "Traceback" not in out


def test_hub_refusal_names_the_space_not_the_token(monkeypatch):
    """A 403 from the Hub becomes one message naming the Space and the fix; the token never appears in it."""

    class Response:
        status_code = 403

    class Forbidden(Exception):
        response = Response()

    plans = hub_publish.plan("their-org", only=["bleu2"], metrics_dir=METRICS_DIR)
    with pytest.raises(hub_publish.HubAuthError) as err:
        hub_publish.publish(plans, token=TOKEN, api_factory=lambda t: FakeApi(t, Forbidden("403 Forbidden")),
                            rexrank_requirement="rexrank @ git+https://example.org/rexrank@v0.1.0",
                            log=lambda _: None)
    message = str(err.value)
    assert "their-org/bleu2" in message and "write access" in message and TOKEN not in message


@pytest.mark.parametrize("org, only, fragment", [
    ("bad org!", None, "not a valid Hub user or organisation name"),
    ("", None, "not a valid Hub user"),
    ("ok", ["bleu3"], "Unknown metric folder 'bleu3'. Available: bertscore, bleu2"),
])
def test_plan_rejects_bad_arguments(org, only, fragment):
    from rexrank.errors import RexrankError

    with pytest.raises(RexrankError, match=fragment.replace(".", r"\.").replace("'", ".")):
        hub_publish.plan(org, only=only, metrics_dir=METRICS_DIR)


def test_plan_skips_bytecode_and_hidden_files(tmp_path):
    """Only the Space's own files are uploaded: no __pycache__, no dotfiles; an incomplete folder is refused."""
    folder = tmp_path / "metrics" / "demo"
    (folder / "__pycache__").mkdir(parents=True)
    for name in ("demo.py", "README.md", "app.py", "requirements.txt", ".DS_Store", "__pycache__/demo.cpython-311.pyc"):
        (folder / name).write_text("rexrank\n")
    (plan,) = hub_publish.plan("o", metrics_dir=tmp_path / "metrics")
    assert sorted(f.path_in_repo for f in plan.files) == ["README.md", "app.py", "demo.py", "requirements.txt"]
    (folder / "app.py").unlink()
    with pytest.raises(Exception, match="missing app.py"):
        hub_publish.plan("o", metrics_dir=tmp_path / "metrics")


def _fake_wheel(folder: Path) -> Path:
    """Stands in for build_wheel (tests/test_wheel.py builds the real one): a file with the wheel's name."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / WHEEL_NAME
    path.write_bytes(b"PK fake wheel")
    return path


def test_default_publish_uploads_a_built_wheel_and_names_it(monkeypatch):
    """No --rexrank-requirement: a wheel is built once, uploaded into every Space under wheels/, and each
    requirements.txt names it by its Hub URL (the Space build installs requirements before the repo's files exist)."""
    from huggingface_hub import constants

    built = []
    api = FakeApi(TOKEN)
    plans = hub_publish.plan("my-org", only=["bleu2", "radcliq"], metrics_dir=METRICS_DIR)
    hub_publish.publish(plans, token=TOKEN, api_factory=lambda t: api, log=lambda _: None,
                        wheel_builder=lambda out: built.append(out) or _fake_wheel(out))
    assert len(built) == 1  # one build for all Spaces
    for slug in ("bleu2", "radcliq"):
        files = api.uploaded[f"my-org/{slug}"]
        assert sorted(files) == sorted(["README.md", "app.py", f"{slug}.py", "requirements.txt",
                                        f"wheels/{WHEEL_NAME}"])
        assert files[f"wheels/{WHEEL_NAME}"] == b"PK fake wheel"
        lines = [line.strip() for line in files["requirements.txt"].decode().splitlines()]
        url = f"{constants.ENDPOINT}/spaces/my-org/{slug}/resolve/main/wheels/{WHEEL_NAME}"
        assert f"rexrank @ {url}" in lines and "rexrank" not in lines


def test_given_wheel_is_uploaded_and_listed(cli, tmp_path, monkeypatch, no_network_api):
    """--wheel PATH: the dry run lists it with its size; a real run uploads that file (nothing is built)."""
    wheel = _fake_wheel(tmp_path / "dist")
    code, out = cli("hub", "publish-metrics", "--org", "o", "--only", "bleu2", "--dry-run", "--wheel", str(wheel),
                    "--metrics-dir", str(METRICS_DIR))
    assert code == 0, out
    assert any(line.split() == [f"wheels/{WHEEL_NAME}", str(wheel.stat().st_size), "B"] for line in out.splitlines())
    assert f"/spaces/o/bleu2/resolve/main/wheels/{WHEEL_NAME}" in out
    api = FakeApi(TOKEN)
    plans = hub_publish.plan("o", only=["bleu2"], metrics_dir=METRICS_DIR)
    hub_publish.publish(plans, token=TOKEN, wheel=wheel, api_factory=lambda t: api, log=lambda _: None,
                        wheel_builder=lambda out: pytest.fail("a given wheel is not rebuilt"))
    assert api.uploaded["o/bleu2"][f"wheels/{WHEEL_NAME}"] == wheel.read_bytes()


@pytest.mark.parametrize("args, fragment", [
    (["--rexrank-requirement", "rexrank"], "would install rexrank from a package index"),
    (["--rexrank-requirement", "rexrank[space]>=0.1"], "would install rexrank from a package index"),
    (["--private"], "a private Space cannot install a wheel uploaded into it"),
    (["--wheel", "dist/not-a-wheel.zip"], "is not a rexrank wheel file"),
    (["--wheel", "x.whl", "--rexrank-requirement", "rexrank @ git+https://x/r@v1"], "not both"),
])
def test_no_uninstallable_rexrank_line_is_published(cli, args, fragment, monkeypatch, no_network_api):
    """A bare `rexrank` line (no index serves rexrank), or a wheel a private Space cannot download, is refused with
    one `error:` line, in the dry run already, before any token or Hub client is needed."""
    monkeypatch.delenv("HF_TOKEN", raising=False)
    for dry in (["--dry-run"], []):
        code, out = cli("hub", "publish-metrics", "--org", "o", "--only", "bleu2", *dry, *args,
                        "--metrics-dir", str(METRICS_DIR))
        assert code == 2 and out.startswith("error: ") and fragment in out, out
        assert "Traceback" not in out


def test_staging_refuses_a_bare_requirement(tmp_path):
    """The last gate before upload: stage() never writes a requirements.txt that installs rexrank from an index."""
    (space,) = hub_publish.plan("o", only=["bleu2"], metrics_dir=METRICS_DIR)
    with pytest.raises(hub_publish.ConfigError, match="package index"):
        hub_publish.stage(space, tmp_path, "rexrank>=0.1")
    staged = hub_publish.stage(space, tmp_path, "rexrank @ https://example.org/rexrank-0.1.0-py3-none-any.whl")
    assert "rexrank @ https://example.org/rexrank-0.1.0-py3-none-any.whl" in \
        (staged / "requirements.txt").read_text().splitlines()


def test_default_metrics_dir_is_the_installed_modules():
    """Without --metrics-dir, the modules published are those of the installed rexrank (module_paths)."""
    from rexrank.evaluate_modules import module_paths

    folders = hub_publish.metric_folders()
    assert folders == module_paths() and sorted(folders) == sorted(MODULES)


def test_leaderboard_space_publishes_with_an_installable_rexrank_and_its_extra(cli, no_network_api, monkeypatch):
    """The leaderboard Space's `rexrank[space]` line becomes an installable source and keeps the space extra (gradio,
    markdown-it); a bare requirement or a malformed repo id is refused before anything is built or sent."""
    from huggingface_hub import constants

    code, out = cli("hub", "publish-leaderboard", "--repo", "my-org/board", "--dry-run")
    assert code == 0, out
    assert "my-org/board (space, sdk gradio)" in out and "app.py" in out and "README.md" in out
    assert f"wheels/{WHEEL_NAME}" in out
    for args, fragment in ((["--repo", "my-org/board", "--rexrank-requirement", "rexrank[space]"], "package index"),
                           (["--repo", "board"], "ORG/NAME"),
                           (["--repo", "my-org/board", "--private"], "private Space cannot install")):
        code, out = cli("hub", "publish-leaderboard", *args, "--dry-run")
        assert code == 2 and fragment in out and "Traceback" not in out, out
    api = FakeApi(TOKEN)
    plans = [hub_publish.leaderboard_plan("my-org/board")]
    hub_publish.publish(plans, token=TOKEN, api_factory=lambda t: api, log=lambda _: None,
                        wheel_builder=lambda out: _fake_wheel(out))
    files = api.uploaded["my-org/board"]
    assert sorted(files) == sorted(["README.md", "app.py", "constraints.txt", "requirements.txt",
                                    f"wheels/{WHEEL_NAME}"])
    url = f"{constants.ENDPOINT}/spaces/my-org/board/resolve/main/wheels/{WHEEL_NAME}"
    lines = [line.strip() for line in files["requirements.txt"].decode().splitlines()]
    assert f"rexrank[space] @ {url}" in lines and not any(line.startswith("rexrank[space]>") for line in lines)
    # The lock, by its URL in the Space (issue 49 point 2: the Space installs the tested stack, not the newest).
    assert f"-c {constants.ENDPOINT}/spaces/my-org/board/resolve/main/constraints.txt" in lines
    assert files["constraints.txt"] == (hub_publish.source_root() / "constraints.txt").read_bytes()
    assert "--find-links https://download.pytorch.org/whl/cpu/torch/" in lines
    assert files["app.py"] == (hub_publish.source_root() / "spaces/leaderboard/app.py").read_bytes()

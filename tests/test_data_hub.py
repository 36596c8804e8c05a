"""The Hub route, proven against a loopback Hub (rexrank.testing.loopback_hub) over real HTTP.

dataset_scripts/iu_xray/build.py pushes the real open IU-Xray split to it; the real `datasets.load_dataset` then
loads it back in a subprocess whose HF_ENDPOINT points at it (huggingface_hub and datasets read HF_ENDPOINT when
imported), and every row is compared with `rexrank.data.load`. The gated-access errors of `rexrank.data.hub` are
checked against the server's own 401 / 403 answers, which huggingface_hub turns into GatedRepoError as the Hub's do.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rexrank.data import catalog, publish, synthetic
from rexrank.testing.loopback_hub import LoopbackHub

REPO = Path(__file__).resolve().parents[1]
BUILD_PY = REPO / "dataset_scripts" / "iu_xray" / "build.py"
HOST, READER, STRANGER = "hf_host_token_0001", "hf_reader_token_0002", "hf_stranger_token_0003"


def _client_env(hub: LoopbackHub, home: Path, token: str | None = None) -> dict:
    """A client process that talks to the loopback Hub only, with its own HF_HOME (no stored login)."""
    env = {key: value for key, value in os.environ.items()
           if key not in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", catalog.HUB_ORG_ENV)}
    env.update(HF_ENDPOINT=hub.endpoint, HF_HUB_OFFLINE="0", HF_DATASETS_OFFLINE="0", HF_HOME=str(home),
               HF_HUB_DISABLE_TELEMETRY="1", HF_HUB_DISABLE_PROGRESS_BARS="1", HF_DATASETS_DISABLE_PROGRESS_BARS="1")
    if token:
        env["HF_TOKEN"] = token
    return env


def _python(code: str, env: dict, *args: str) -> dict:
    """Run `code` in a fresh interpreter; it prints one JSON object as its last line."""
    result = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def pushed(tmp_path_factory):
    """A loopback Hub holding rexrank/iu_xray as `build.py --no-images --public` pushed it (gated, manual), with a
    member of the rexrank org (HOST), a user whose access request was accepted (READER) and one without (STRANGER)."""
    tmp = tmp_path_factory.mktemp("hub")
    with LoopbackHub() as hub:
        hub.add_user("host", HOST, orgs=["rexrank"])
        hub.add_user("reader", READER)
        hub.add_user("stranger", STRANGER)
        result = subprocess.run([sys.executable, str(BUILD_PY), "--data-dir", str(tmp / "imgs"), "--no-images",
                                 "--public", "--out", str(tmp / "iu_xray-hub")],
                                env=_client_env(hub, tmp / "home-build", HOST), capture_output=True, text=True,
                                timeout=300)
        assert result.returncode == 0, result.stderr[-3000:]
        hub.grant("rexrank/iu_xray", "reader")
        yield hub, tmp, result


def test_build_py_pushes_to_the_catalog_repo_through_the_upload_api(pushed):
    """No --repo: the catalog's repo id; the repo is created, gated and filled by one commit of the build's files."""
    hub, tmp, result = pushed
    assert f"{hub.endpoint}/datasets/rexrank/iu_xray" in result.stdout
    repo = hub.repo("rexrank/iu_xray")
    assert repo.gated == "manual" and repo.private is False
    built = sorted(str(p.relative_to(tmp / "iu_xray-hub")) for p in (tmp / "iu_xray-hub").rglob("*") if p.is_file())
    assert sorted(repo.files) == built and "data/findings/test-00000-of-00001.parquet" in built
    assert repo.files["README.md"] == (tmp / "iu_xray-hub" / "README.md").read_bytes()
    calls = [(method, path.split("?")[0]) for method, path, _ in hub.requests]
    for route in [("POST", "/api/repos/create"), ("PUT", "/api/datasets/rexrank/iu_xray/settings"),
                  ("POST", "/api/datasets/rexrank/iu_xray/preupload/main"),
                  ("POST", "/api/datasets/rexrank/iu_xray/commit/main")]:
        assert route in calls


@pytest.mark.slow  # 1.9 s of CPU of its own: over the fast tier's 2 s or near it (tests/README.md, "Tiers")
def test_load_dataset_on_the_hub_name_gives_every_row_of_data_load(pushed, tmp_path):
    """The real `datasets.load_dataset("rexrank/iu_xray", "findings", split="test")` over HTTP equals
    `rexrank.data.load("iu_xray", split="test", track="findings")` row for row, column for column (image paths
    published relative to the data directory)."""
    from rexrank import data

    hub, tmp, _ = pushed
    rows_file = tmp_path / "rows.json"
    code = """
import json, sys, datasets
ds = datasets.load_dataset("rexrank/iu_xray", "findings", split="test", token=sys.argv[1], cache_dir=sys.argv[2])
json.dump(ds.to_list(), open(sys.argv[3], "w"))
print(json.dumps({"n": len(ds), "columns": ds.column_names}))
"""
    before = len(hub.requests)
    out = _python(code, _client_env(hub, tmp_path / "home"), READER, str(tmp_path / "cache"), str(rows_file))
    served = [path for _, path, status in hub.requests[before:] if status == 200]
    assert any("/resolve/" in p and p.endswith("data/findings/test-00000-of-00001.parquet") for p in served)
    hub_rows = json.loads(rows_file.read_text())
    local = data.load("iu_xray", tmp / "imgs", split="test", track="findings", cache_dir=tmp_path / "local")
    assert out["columns"] == local.column_names and out["n"] == len(local) == 590
    root = str((tmp / "imgs").absolute())
    for hub_row, row in zip(hub_rows, local.to_list(), strict=True):
        assert hub_row["images"] == [os.path.relpath(image["path"], root) for image in row["images"]]
        assert [os.path.join(root, p) for p in hub_row["image_paths"]] == row["image_paths"]
        assert os.path.join(root, hub_row["key_image"]) == row["key_image"]
        rest = {key for key in row if key not in ("images", "image_paths", "key_image")}
        assert {key: hub_row[key] for key in rest} == {key: row[key] for key in rest}


GATING = """
import json, sys
from rexrank.data import gating, hub
answers = {}
for label, name, token in json.loads(sys.argv[1]):
    try:
        ds = hub.load_from_hub(name, split="test", track="findings", token=token, cache_dir=sys.argv[2] + "/" + label)
        answers[label] = {"ok": len(ds)}
    except Exception as exc:
        answers[label] = {"error": type(exc).__name__, "message": str(exc)}
print(json.dumps(answers))
"""


def test_gated_answers_401_403_200_through_rexrank_data_hub(pushed, tmp_path, iu_xray_test):
    """The loopback Hub's real answers: 401 without a token (message: log in / pass a token), 403 for a token
    without access (message: request access at the repo page), 200 for an accepted one; aliases resolve to the
    catalog repo; an unknown token says it was rejected; a private repo one cannot see says so. No token is shown."""
    hub, tmp, _ = pushed
    hub.add_repo("host/private-copy", files=hub.repo("rexrank/iu_xray").files, private=True)
    cases = [("anonymous", "iu", None), ("stranger", "IU-Xray", STRANGER), ("reader", "iu", READER),
             ("reader_by_repo", "rexrank/iu_xray", READER), ("bad_token", "iu_xray", "hf_not_a_token_0004"),
             ("private", "host/private-copy", STRANGER)]
    before = len(hub.requests)
    answers = _python(GATING, _client_env(hub, tmp_path / "home"), json.dumps(cases), str(tmp_path / "cache"))
    statuses = [status for _, path, status in hub.requests[before:] if "/rexrank/iu_xray/resolve/" in path]
    assert 401 in statuses and 403 in statuses  # the refusals below are the server's, not simulated

    page = f"{hub.endpoint}/datasets/rexrank/iu_xray"
    assert answers["anonymous"]["error"] == "DatasetNotAvailableError"
    assert "no Hugging Face token is configured" in answers["anonymous"]["message"]
    assert "hf auth login" in answers["anonymous"]["message"] and page in answers["anonymous"]["message"]
    assert answers["stranger"]["error"] == "DatasetNotAvailableError"
    assert "has not been granted access" in answers["stranger"]["message"]
    assert f"accept its terms at {page}" in answers["stranger"]["message"]
    assert answers["bad_token"]["error"] == "DatasetNotAvailableError"
    assert "token was rejected" in answers["bad_token"]["message"]
    assert answers["private"]["error"] == "DatasetNotAvailableError"
    assert "host/private-copy was not found on the Hub, or it is private" in answers["private"]["message"]
    n_findings = sum(1 for entry in iu_xray_test.values() if entry["section_findings"])
    assert answers["reader"] == answers["reader_by_repo"] == {"ok": n_findings}
    text = json.dumps(answers)
    assert not any(token in text for token in (HOST, READER, STRANGER, "hf_not_a_token_0004"))


@pytest.mark.parametrize("name", list(catalog.DATASETS))
def test_every_alias_names_the_catalog_repo_and_the_org_is_overridable(name, monkeypatch):
    """rexrank/<name> by default (rexrank/mimic for MIMIC-CXR), under $REXRANK_HUB_ORG when a host sets it, for every
    name a user may type; a full repo id is used as given."""
    from rexrank.data.hub import resolve_repo

    spec = catalog.DATASETS[name]
    monkeypatch.delenv(catalog.HUB_ORG_ENV, raising=False)
    expected = f"rexrank/{spec.hub_name}"
    for alias in [a for a, target in catalog.DATASET_ALIASES.items() if target == name]:
        assert resolve_repo(alias) == (expected, name)
        assert resolve_repo(alias.upper()) == (expected, name)
    monkeypatch.setenv(catalog.HUB_ORG_ENV, "my-hospital")
    assert resolve_repo(spec.label) == (f"my-hospital/{spec.hub_name}", name)
    assert resolve_repo("someone/else") == ("someone/else", None)


def test_the_documented_repo_ids(monkeypatch):
    """The names users are told (issue 16): rexrank/mimic, rexrank/iu_xray, rexrank/chexpert_plus, rexrank/rexgradient
    (the catalog is their owner; this pins the published names)."""
    monkeypatch.delenv(catalog.HUB_ORG_ENV, raising=False)
    assert [catalog.hub_repo_id(n) for n in ("mimic", "iu", "chexpert", "gradienthealth")] == [
        "rexrank/mimic", "rexrank/iu_xray", "rexrank/chexpert_plus", "rexrank/rexgradient"]


def test_a_push_without_write_rights_is_one_clear_error(tmp_path, monkeypatch):
    """A token outside the target org: the Hub's 403 becomes one message naming the fix, no traceback."""
    from huggingface_hub import HfApi, constants

    from rexrank.errors import RexrankError

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)  # the suite runs offline; this Hub is on loopback
    (tmp_path / "README.md").write_text("---\nlicense: other\n---\n")
    with LoopbackHub() as hub:
        hub.add_user("stranger", STRANGER)
        with pytest.raises(RexrankError) as err:
            publish.push_folder(tmp_path, "rexrank/iu_xray", api=HfApi(endpoint=hub.endpoint, token=STRANGER))
        assert ("POST", "/api/repos/create", 403) in hub.requests
    message = str(err.value)
    assert "refused creating the repo for rexrank/iu_xray (HTTP 403" in message
    assert "write token of a member of 'rexrank'" in message and STRANGER not in message


# -- build.py: optional images, cleanup -----------------------------------------------------------------------
def _build(data_dir: Path, out: Path, *extra: str) -> int:
    return publish.main("iu_xray", ["--data-dir", str(data_dir), "--dry-run", "--out", str(out),
                                    "--card", str(BUILD_PY.with_name("README.md")), *extra])


def test_build_without_images_for_a_set_whose_images_are_optional(tmp_path, caplog):
    """IU-Xray without any image and without --no-images: built text-only (as --no-images), and it says so."""
    import datasets

    out = tmp_path / "hub"
    assert _build(tmp_path / "no-images", out) == 0
    assert "no images under" in caplog.text and "as with --no-images" in caplog.text
    test = datasets.load_dataset(str(out), split="test", cache_dir=str(tmp_path / "hf"))
    assert len(test) == 590 and test[0]["images"] == ["CXR3030_IM-1405/0.png", "CXR3030_IM-1405/1.png"]


def test_build_embeds_optional_images_when_all_are_there(tmp_path):
    import datasets

    root = synthetic.write_iu_xray_images(tmp_path / "imgs")
    out = tmp_path / "hub"
    assert _build(root, out) == 0
    first = datasets.load_dataset(str(out), "findings", split="validation", cache_dir=str(tmp_path / "hf"))[0]
    assert first["images"][0].size == (4, 4)  # embedded bytes, decoded


def test_a_failed_build_leaves_nothing_behind_and_keeps_the_previous_build(tmp_path, capsys):
    """A partial image copy is an error naming what is missing; the failed build removes its staging folder, the
    folders it created for --out and the cache entries it added, and leaves an earlier build in --out untouched."""
    root = tmp_path / "imgs"
    (root / "CXR3030_IM-1405").mkdir(parents=True)
    synthetic.write_iu_xray_images(tmp_path / "full")
    os.link(tmp_path / "full" / "CXR3030_IM-1405" / "0.png", root / "CXR3030_IM-1405" / "0.png")
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "kept.txt").write_text("someone else's")

    out = tmp_path / "new" / "deeper" / "hub"
    assert _build(root, out, "--cache-dir", str(cache)) == 2
    error = capsys.readouterr().err
    n_images = sum(1 for p in (tmp_path / "full").rglob("*.png"))
    assert f"1 of {n_images} images found" in error and "--no-images" in error and "CXR3030_IM-1405/1.png" in error
    assert not (tmp_path / "new").exists()
    assert sorted(p.name for p in cache.iterdir()) == ["kept.txt"]

    previous = tmp_path / "previous"
    assert _build(tmp_path / "no-images", previous, "--no-images") == 0
    before = {p: p.read_bytes() for p in previous.rglob("*") if p.is_file()}
    assert _build(root, previous, "--cache-dir", str(cache)) == 2
    assert {p: p.read_bytes() for p in previous.rglob("*") if p.is_file()} == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []  # no staging folder left


def test_loopback_hub_answers_like_the_hub_for_other_clients(tmp_path, monkeypatch):
    """The server is reusable test infrastructure: HfApi's listing and download on it, a private repo hidden as the
    Hub hides one (401 anonymous, 404 with a token), and injected failures for a flaky Hub."""
    from huggingface_hub import HfApi, constants, hf_hub_download
    from huggingface_hub.errors import BadRequestError, RepositoryNotFoundError

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)  # the suite runs offline; this Hub is on loopback
    with LoopbackHub() as hub:
        hub.add_user("owner", HOST)
        hub.add_repo("owner/results", files={"a/b.json": b'{"x": 1}', "README.md": b"# r\n"}, private=True)
        api = HfApi(endpoint=hub.endpoint, token=HOST)
        assert sorted(api.list_repo_files("owner/results", repo_type="dataset")) == ["README.md", "a/b.json"]
        path = hf_hub_download("owner/results", "a/b.json", repo_type="dataset", token=HOST, endpoint=hub.endpoint,
                               cache_dir=tmp_path)
        assert Path(path).read_bytes() == b'{"x": 1}'
        for token, status in ((False, 401), (STRANGER, 404)):
            hub.add_user("stranger", STRANGER)
            with pytest.raises(RepositoryNotFoundError) as err:
                HfApi(endpoint=hub.endpoint, token=token).dataset_info("owner/results")
            assert err.value.response.status_code == status
        hub.fail(r"GET /api/datasets/owner/results/tree/", 400)
        with pytest.raises(BadRequestError):
            api.list_repo_files("owner/results", repo_type="dataset")
        assert len(api.list_repo_files("owner/results", repo_type="dataset")) == 2  # only the next one failed

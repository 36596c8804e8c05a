"""Verification against the manifests, gated Hub access messages, the CLI, and the load_dataset (Parquet) route."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import yaml

from rexrank.data import synthetic
from rexrank.data.catalog import DATASETS
from rexrank.data.manifests import read_manifest
from rexrank.data.verification import verify
from rexrank.errors import DatasetNotAvailableError

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.slow  # 1.5 s of CPU of its own: over the fast tier's 2 s or near it (tests/README.md, "Tiers")
def test_verify_reports_missing_studies_corrupt_images_and_extra_studies(tmp_path):
    """verify lists what is wrong, study by study; a complete copy is OK and its extra test studies are listed."""
    root = synthetic.write_mimic_cxr_tree(tmp_path / "m")
    clean = verify("mimic_cxr", root)
    assert clean.ok and clean.n_found == 2347 and clean.extra_studies == []
    rows = read_manifest("mimic_cxr", "test")
    corrupt = root / "files" / rows[1]["image_path"][0].lstrip("/")
    corrupt.unlink()
    corrupt.write_bytes(b"not an image")
    (root / "files" / rows[2]["image_path"][0].lstrip("/")).unlink()
    subject = str(rows[3]["subject_id"])
    (root / "files" / f"p{subject[:2]}" / f"p{subject}" / f"s{rows[3]['study_id']}.txt").unlink()
    report = verify("mimic_cxr", root)
    assert not report.ok
    assert report.missing_studies == [rows[2]["study_id"], rows[3]["study_id"]]
    assert len(report.unreadable_images) == 1 and str(corrupt) in report.unreadable_images[0]
    assert any(f"s{rows[3]['study_id']}.txt" in f for f in report.missing_files)
    assert "PROBLEMS" in report.summary()


def test_verify_flags_sections_that_disagree_with_the_manifest(tmp_path):
    """A report whose impression the manifest says exists but we cannot find is listed (it changes the ground truth)."""
    root = synthetic.write_chexpert_plus_tree(tmp_path / "c")
    import pandas as pd

    csv = root / "df_chexpert_plus_240401.csv"
    frame = pd.read_csv(csv, index_col=0)
    first = read_manifest("chexpert_plus", "validation")[0]["study_id"]
    patient, study = first.split("_")
    frame.loc[frame["path_to_image"].str.contains(f"{patient}/{study}/"), "section_impression"] = None
    frame.to_csv(csv)
    report = verify("chexpert_plus", root)
    assert report.section_disagreements == [f"{first}: impression absent, manifest says present"]
    assert report.extra_studies == []  # the train row is another split, not an extra validation study


def test_cli_verify_exit_code_and_prepare(tmp_path, cli):
    """`rexrank data verify` fails (exit 1) on an incomplete copy; `prepare` builds every split."""
    code, out = cli("data", "verify", "iu_xray", "--data-dir", str(tmp_path / "imgs"), "--no-open-images")
    assert code == 1 and "missing studies: 590" in out
    synthetic.write_iu_xray_images(tmp_path / "imgs")
    code, out = cli("data", "verify", "iu_xray", "--data-dir", str(tmp_path / "imgs"), "--split", "val")
    assert code == 0 and "296 found of 296" in out
    code, out = cli("data", "prepare", "iu_xray", "--data-dir", str(tmp_path / "imgs"),
                    "--cache-dir", str(tmp_path / "cache"))
    assert code == 0 and "iu_xray test: 590 studies" in out and "iu_xray validation: 296 studies" in out
    code, out = cli("data", "prepare", "mimic_cxr", "--data-dir", str(tmp_path / "nothing"),
                    "--cache-dir", str(tmp_path / "cache"))
    assert code == 2 and "request access" in out and "mimic-cxr-2.0.0-split.csv.gz" in out


def test_cli_export_writes_rexrank_json(tmp_path, cli, iu_xray_test):
    """The exported input JSON has the upstream shape and the official text."""
    import json

    out = tmp_path / "input.json"
    code, text = cli("data", "export", "iu_xray", "--out", str(out), "--data-dir", str(tmp_path / "imgs"))
    assert code == 0, text
    written = json.loads(out.read_text())
    sid = next(iter(iu_xray_test))
    assert written[sid]["report"] == iu_xray_test[sid]["report"]
    assert written[sid]["image_path"][0].endswith(iu_xray_test[sid]["image_path"][0])


def test_dry_run_parquet_loads_with_load_dataset(tmp_path):
    """dataset_scripts/<name>/build.py --dry-run writes the repo content; load_dataset reads it like the Hub repo."""
    import datasets

    from rexrank.data import publish

    root = synthetic.write_chexpert_plus_tree(tmp_path / "c")
    out = tmp_path / "hub"
    card = REPO / "dataset_scripts" / "chexpert_plus" / "README.md"
    code = publish.main("chexpert_plus", ["--data-dir", str(root), "--dry-run", "--out", str(out), "--card", str(card),
                                          "--cache-dir", str(tmp_path / "cache")])
    assert code == 0 and (out / "data" / "validation-00000-of-00001.parquet").is_file()
    ds = datasets.load_dataset(str(out), split="validation", cache_dir=str(tmp_path / "hfcache"))
    assert len(ds) == 200 and ds[0]["image_paths"][0].startswith("PNG/valid/")  # relative, not machine paths
    assert ds[0]["images"][0].size == (4, 4)  # embedded image bytes decode
    assert sum(x is None for x in ds["findings"]) == 138
    assert "extra_gated_fields" in (out / "README.md").read_text()
    findings = datasets.load_dataset(str(out), "findings", split="validation", cache_dir=str(tmp_path / "hfcache"))
    assert len(findings) == 200 - 138 and all(findings["reference"])  # the track config drops what it excludes
    assert findings[0]["images"][0].size == (4, 4)


def test_dry_run_without_images_keeps_relative_paths(tmp_path):
    """--no-images: text and relative image paths only, and no image needs to exist."""
    import datasets

    from rexrank.data import publish

    out = tmp_path / "hub"
    code = publish.main("iu_xray", ["--data-dir", str(tmp_path / "imgs"), "--dry-run", "--no-images", "--out",
                                    str(out), "--card", str(REPO / "dataset_scripts/iu_xray/README.md"),
                                    "--cache-dir", str(tmp_path / "cache")])
    assert code == 0
    test = datasets.load_dataset(str(out), split="test", cache_dir=str(tmp_path / "hfcache"))
    assert len(test) == 590 and test[0]["images"] == ["CXR3030_IM-1405/0.png", "CXR3030_IM-1405/1.png"]


def test_track_configs_are_the_tracks_of_the_open_iu_xray_split(tmp_path, shared_dir):
    """load_dataset(folder, TRACK) on the published layout of the real IU-Xray split gives, per split, the studies and
    ground truth rexrank.data.references gives for that track, which are the official JSON's sections; the default
    config is every study, and an unknown config name lists the tracks."""
    import datasets

    from rexrank import data
    from rexrank.data import publish

    out = tmp_path / "hub"
    code = publish.main("iu_xray", ["--data-dir", str(tmp_path / "imgs"), "--dry-run", "--no-images", "--out",
                                    str(out), "--card", str(REPO / "dataset_scripts/iu_xray/README.md"),
                                    "--cache-dir", str(tmp_path / "cache")])
    assert code == 0
    meta = yaml.safe_load((out / "README.md").read_text().split("---")[1])
    assert [c["config_name"] for c in meta["configs"]] == [publish.DEFAULT_CONFIG, *data.track_names()]
    assert meta["extra_gated_fields"]  # the rest of the card survives the rewritten configs
    official = {split: json.loads((shared_dir / "data" / "iu_xray" / f"ReXRank_IUXray_{name}.json").read_text())
                for split, name in (("test", "test"), ("validation", "valid"))}
    truth = {"findings": lambda entry: entry["section_findings"], "findings_impression": lambda entry: entry["report"]}
    hub = str(tmp_path / "hfcache")
    for split, entries in official.items():
        assert datasets.load_dataset(str(out), split=split, cache_dir=hub)["study_id"] == list(entries)
        for track in data.track_names():
            loaded = datasets.load_dataset(str(out), track, split=split, cache_dir=hub)
            refs = data.references("iu_xray", tmp_path / "imgs", split=split, track=track,
                                   cache_dir=tmp_path / "cache")
            assert dict(zip(loaded["study_id"], loaded["reference"], strict=True)) == refs
            assert refs == {sid: truth[track](entry) for sid, entry in entries.items() if truth[track](entry)}
    with pytest.raises(ValueError, match="Available.*" + ".*".join(data.track_names())):
        datasets.load_dataset(str(out), "impression", split="test", cache_dir=hub)


@pytest.mark.parametrize("name", list(DATASETS))
def test_dataset_cards_declare_licence_gating_and_the_catalog_splits(name):
    """Each card's YAML has a licence, an access form and exactly the splits the builder produces."""
    text = (REPO / "dataset_scripts" / name / "README.md").read_text()
    meta = yaml.safe_load(text.split("---")[1])
    assert meta["license"] and meta["extra_gated_fields"] and meta["extra_gated_prompt"]
    splits = [f["split"] for f in meta["configs"][0]["data_files"]]
    assert splits == list(DATASETS[name].splits)
    assert (REPO / "dataset_scripts" / name / "build.py").is_file()


LICENSED_WORDING = ("licensed", "private to your organisation")


@pytest.mark.parametrize("name", list(DATASETS))
def test_card_and_build_help_call_only_licensed_sets_licensed(name, capsys):
    """Issue 29 point 9: IU-Xray's card and build.py --help called an open set licensed data ("your licensed local
    copy", "keep the repository private to your organisation and gated"). Both now follow the catalog: a gated
    source or a private test set is worded as licensed (a private set also as never to be published); an open one
    is not, and its card says the repo may be public. The card's facts are the catalog's, written at build time."""
    from rexrank.data import publish

    spec = DATASETS[name]
    with pytest.raises(SystemExit):
        publish.main(name, ["--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    card = publish.card_text(name, publish.card_template(name).read_text(), list(spec.splits))
    assert publish.SOURCE_MARKER not in card and f"Licence: {spec.licence}." in card
    assert f"Access to the source: {spec.access}." in card and f"What to download: {spec.download}." in card
    if spec.gated or spec.private:
        assert "licensed local copy" in card and "**private to your organisation and gated**" in card
        assert "your licensed local copy" in help_text
        assert ("must never be published" in card) == spec.private
    else:
        found = [w for w in LICENSED_WORDING for text in (card, help_text) if w in text.lower()]
        assert not found, found
        assert "may be public (`--public`)" in card


def test_the_open_and_the_private_cases_are_both_walked():
    """The walk above covers both wordings: IU-Xray is open, ReXGradient a private test set."""
    from rexrank.data import publish

    assert not publish.licensed("iu_xray") and publish.licensed("rexgradient") and DATASETS["rexgradient"].private


def test_a_private_set_is_licensed_even_when_its_source_is_open(monkeypatch):
    """The rule has two parts (catalog.licensed): a gated source, or a private test set. Every private set in the
    catalog is gated too, so an open copy made private tests the second part."""
    import dataclasses

    from rexrank.data import catalog

    assert not catalog.licensed("iu_xray")
    monkeypatch.setitem(catalog.DATASETS, "iu_xray", dataclasses.replace(DATASETS["iu_xray"], private=True))
    assert catalog.licensed("iu_xray") and "iu_xray" in catalog.licensed_datasets()


class _Response:
    def __init__(self, status: int):
        import httpx

        self.status_code = status
        self.headers = {}
        self.request = httpx.Request("GET", "https://huggingface.co")


def _gated(status: int):
    from datasets.exceptions import DatasetNotFoundError
    from huggingface_hub.errors import GatedRepoError

    def fail(*args, **kwargs):
        try:
            raise GatedRepoError("gated", response=_Response(status))
        except GatedRepoError as exc:
            raise DatasetNotFoundError("Dataset 'org/x' is a gated dataset on the Hub.") from exc

    return fail


@pytest.mark.parametrize("status, token, expected", [
    (401, None, "no Hugging Face token is configured"),
    (403, "hf_secret_token_value", "has not been granted access: accept its terms"),
    (401, "hf_secret_token_value", "token was rejected"),
])
def test_gated_hub_refusals_say_exactly_why_and_never_show_the_token(monkeypatch, status, token, expected):
    """A gated repo without token/terms gives one plain message; the token itself never appears."""
    import datasets

    from rexrank.data import gating, hub

    monkeypatch.setattr(datasets, "load_dataset", _gated(status))
    monkeypatch.setattr(gating, "_configured_token", lambda: None)
    with pytest.raises(DatasetNotAvailableError) as err:
        hub.load_from_hub("org/x", split="test", token=token)
    assert expected in str(err.value) and "https://huggingface.co/datasets/org/x" in str(err.value)
    assert "hf_secret_token_value" not in str(err.value)


def test_rexgradient_metadata_download_maps_gated_errors(monkeypatch):
    """Fetching ReXGradient-160K metadata without accepted terms names the repo and the fix."""
    import huggingface_hub
    from huggingface_hub.errors import GatedRepoError

    from rexrank.data import gating, hub

    def fail(*args, **kwargs):
        raise GatedRepoError("403 gated", response=_Response(403))

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fail)
    monkeypatch.setattr(gating, "_configured_token", lambda: "x")
    with pytest.raises(DatasetNotAvailableError, match="rajpurkarlab/ReXGradient-160K is a gated dataset"):
        hub.download_file("rajpurkarlab/ReXGradient-160K", "metadata/valid_metadata_view_position.json")
    assert os.environ.get("HF_HUB_OFFLINE") == "1"  # the suite never reaches the Hub

"""The `load_dataset` route: a licensed local copy -> Parquet + dataset card -> a private, gated Hub repo.

datasets 5 no longer runs dataset scripts, so a Hub copy of a ReXrank test set is plain Parquet with a card whose
YAML declares the configs and the access form (extra_gated_fields). `build_folder` writes exactly the repo's
content locally (what `--dry-run` stops at); `push_folder` creates the private repo (or makes an existing one
private), turns gating on and uploads.
After that, `datasets.load_dataset("<org>/<name>", token=...)` (or rexrank.data.hub.load_from_hub) works.

Configs: `default` holds every study of every split (the Study record); one config per track of
rexrank.data.tracks (`load_dataset(repo, "findings")`) holds the studies that track counts plus its ground truth
as a `reference` column, exactly what `rexrank.data.load(name, track=...)` returns. The card's `configs` list is
written here from the catalog's splits and the tracks, never copied from the card template, so a track added to
tracks.py is published without editing four cards. Parquet has no row filter that expresses "this column is not
null" portably, so each track config is its own files (the images are embedded once per config: `--no-images`
keeps repos small).
"""

from __future__ import annotations

import os
from pathlib import Path

from rexrank.data.catalog import default_data_dir, get_dataset_spec
from rexrank.data.load import apply_track, load
from rexrank.data.tracks import track_names

DEFAULT_CONFIG = "default"  # datasets' name for the config load_dataset(repo) picks when given none

# Columns that hold machine-local absolute paths; on the Hub they become paths relative to the source root.
_PATH_COLUMNS = ("image_paths", "key_image")


def card_template(name: str) -> Path:
    """dataset_scripts/<name>/README.md of this checkout (the card is data, kept beside its build script)."""
    return Path(__file__).resolve().parents[3] / "dataset_scripts" / name / "README.md"


def build_folder(name: str, data_dir: str | os.PathLike, out_dir: str | os.PathLike, *, embed_images: bool = True,
                 card: str | os.PathLike | None = None, cache_dir: str | os.PathLike | None = None,
                 splits: list[str] | None = None) -> Path:
    """Write <out_dir>/data/<split>-00000-of-00001.parquet (config `default`) and
    <out_dir>/data/<track>/<split>-00000-of-00001.parquet (one config per track) for every split, plus README.md:
    the card with its `configs` list written from the catalog and the tracks."""
    spec = get_dataset_spec(name)
    name = spec.name  # an alias builds the canonical dataset, with its card
    out = Path(out_dir)
    root = str(Path(data_dir).expanduser().absolute())
    splits = splits or list(spec.splits)
    for split in splits:
        dataset = load(name, data_dir, split=split, cache_dir=cache_dir, require_images=embed_images)
        dataset = dataset.map(_relative_paths, fn_kwargs={"root": root, "embed": embed_images},
                              features=_hub_features(dataset.features, embed_images), desc=f"{name} {split}")
        _write_parquet(dataset, out, DEFAULT_CONFIG, split)
        for track in track_names():  # the same rows and columns `load(name, track=track)` gives
            _write_parquet(apply_track(dataset, track, dataset_name=name, split=split), out, track, split)
    source = Path(card) if card is not None else card_template(name)
    if source.is_file():
        (out / "README.md").write_text(with_configs(source.read_text(encoding="utf-8"), splits), encoding="utf-8")
    return out


def data_files_folder(config: str) -> str:
    """Where a config's Parquet files live in the repo: data/ for the default config, data/<track>/ for a track."""
    return "data" if config == DEFAULT_CONFIG else f"data/{config}"


def _write_parquet(dataset, out: Path, config: str, split: str) -> None:
    folder = out / data_files_folder(config)
    folder.mkdir(parents=True, exist_ok=True)
    dataset.to_parquet(str(folder / f"{split}-00000-of-00001.parquet"))


def hub_configs(splits: list[str]) -> list[dict]:
    """The card's `configs`: the default config, then one per track, each with one Parquet glob per split."""
    return [{"config_name": config,
             "data_files": [{"split": split, "path": f"{data_files_folder(config)}/{split}-*"} for split in splits]}
            for config in (DEFAULT_CONFIG, *track_names())]


def with_configs(card: str, splits: list[str]) -> str:
    """The card text with its YAML `configs` replaced by hub_configs(splits); the rest of the card as written."""
    import yaml

    from rexrank.errors import ConfigError

    _, sep, rest = card.partition("---\n") if card.startswith("---\n") else ("", "", "")
    header, end, body = rest.partition("\n---")
    if not sep or not end:
        raise ConfigError("the dataset card must start with YAML front matter between '---' lines "
                          "(see dataset_scripts/<name>/README.md)")
    meta = yaml.safe_load(header) or {}
    meta["configs"] = hub_configs(splits)
    text = yaml.safe_dump(meta, sort_keys=False, allow_unicode=True, width=1000)
    return f"---\n{text}---{body}"


def _hub_features(features, embed: bool):
    import datasets

    hub = features.copy()
    # Embedded images are bytes the Hub viewer can show; without embedding only relative paths travel.
    hub["images"] = datasets.List(datasets.Image(decode=True)) if embed else datasets.List(datasets.Value("string"))
    return hub


def _relative_paths(record: dict, root: str, embed: bool) -> dict:
    relative = [os.path.relpath(p, root) for p in record["image_paths"]]
    if embed:
        images = [{"bytes": Path(p).read_bytes(), "path": r} for p, r in zip(record["image_paths"], relative,
                                                                             strict=True)]
    else:
        images = relative
    key = record["key_image"]
    return {"images": images, "image_paths": relative, "key_image": os.path.relpath(key, root) if key else None}


def push_folder(folder: str | os.PathLike, repo_id: str, *, token: str | None = None, gated: str = "manual",
                private: bool = True, api=None) -> str:
    """Create `repo_id` (private by default), switch on gating, upload the folder. Returns the repo URL.

    ``private``: the repo is made private before anything is uploaded, also when it already exists as a public
    repo (``create_repo(exist_ok=True)`` leaves an existing repo's visibility as it was), and the upload is refused
    unless the Hub then reports it private. ``private=False`` (``--public``) leaves the visibility as it is.
    ``api``: an ``HfApi``-like client (tests); by default ``HfApi(token=token)``.
    """
    from rexrank.errors import RexrankError

    if api is None:
        from huggingface_hub import HfApi

        api = HfApi(token=token)
    api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
    settings = {"private": True} if private else {}
    if gated:
        settings["gated"] = gated
    if settings:
        api.update_repo_settings(repo_id, repo_type="dataset", **settings)
    if private and getattr(api.repo_info(repo_id, repo_type="dataset"), "private", None) is not True:
        raise RexrankError(f"the Hub does not report {repo_id} as private after making it private: nothing was "
                           "uploaded (check the repo's settings and that your token may change them)")
    api.upload_folder(repo_id=repo_id, repo_type="dataset", folder_path=str(folder),
                      commit_message="ReXrank test set (rexrank dataset_scripts)")
    return f"https://huggingface.co/datasets/{repo_id}"


def main(name: str, argv: list[str] | None = None) -> int:
    """The command line every dataset_scripts/<name>/build.py runs."""
    import argparse

    spec = get_dataset_spec(name)
    name = spec.name
    parser = argparse.ArgumentParser(description=f"Build {spec.title} as Parquet and push it to a private, gated "
                                     "Hub dataset repo of your organisation.")
    parser.add_argument("--data-dir", required=spec.gated, help=f"your licensed local copy ({spec.access})")
    parser.add_argument("--repo", help="target repo, e.g. my-org/rexrank-" + name)
    parser.add_argument("--out", default=f"./{name}-hub", help="local folder for the repo content")
    parser.add_argument("--dry-run", action="store_true", help="write the folder, do not push")
    parser.add_argument("--no-images", action="store_true", help="text and relative image paths only")
    parser.add_argument("--public", action="store_true", help="do not make the repo private (it stays gated)")
    parser.add_argument("--gated", default="manual", choices=["manual", "auto"], help="Hub gating mode")
    parser.add_argument("--cache-dir", help="datasets cache for the intermediate Arrow files")
    parser.add_argument("--card", help="dataset card to copy (default: dataset_scripts/<name>/README.md)")
    args = parser.parse_args(argv)
    if not args.dry_run and not args.repo:
        parser.error("--repo is required unless --dry-run")
    from rexrank.errors import RexrankError

    try:
        data_dir = args.data_dir if args.data_dir else default_data_dir(name)
        folder = build_folder(name, data_dir, args.out, embed_images=not args.no_images, card=args.card,
                              cache_dir=args.cache_dir)
        print(f"wrote {folder}")
        if not args.dry_run:
            token = os.environ.get("HF_TOKEN")  # or the logged-in token; never printed
            print(push_folder(folder, args.repo, token=token, gated=args.gated, private=not args.public))
    except RexrankError as exc:
        print(f"error: {exc}")
        return 2
    return 0

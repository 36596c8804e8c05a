"""The `load_dataset` route: a local copy -> Parquet + dataset card -> a gated Hub repo (private by default).

datasets 5 no longer runs dataset scripts, so a Hub copy of a ReXrank test set is plain Parquet with a card whose
YAML declares the configs and the access form (extra_gated_fields). `build_folder` writes exactly the repo's
content locally (what `--dry-run` stops at); `push_folder` creates the private repo (or makes an existing one
private), turns gating on and uploads. The repo id defaults to the catalog's (`catalog.hub_repo_id`: rexrank/<name>,
or $REXRANK_HUB_ORG/<name>). After that, `datasets.load_dataset("rexrank/iu_xray", token=...)` (or
`rexrank.data.hub.load_from_hub("iu")`) works.

Images: embedded by default. Where the catalog's builder makes them optional (IU-Xray) and the local copy has none,
the build goes on with text and relative paths only (as `--no-images`) and says so; a partial image copy is an
error. A failed build or push leaves nothing behind: the repo content is written to a hidden staging folder beside
`--out` and moved into place only at the end, and Arrow cache files the failed run created are removed.

Configs: `default` holds every study of every split (the Study record); one config per track of
rexrank.data.tracks (`load_dataset(repo, "findings")`) holds the studies that track counts plus its ground truth
as a `reference` column, exactly what `rexrank.data.load(name, track=...)` returns. The card's `configs` list is
written here from the catalog's splits and the tracks, never copied from the card template, so a track added to
tracks.py is published without editing four cards. Likewise the card's source facts (what the repo holds, the
licence, access, splits, download, and whether the data is licensed or openly distributed) are written from the
catalog where the template has SOURCE_MARKER, and build.py's --help words its data directory by the same facts: an
open set (IU-Xray) is never called licensed data. Parquet has no row filter that expresses "this column is not
null" portably, so each track config is its own files (the images are embedded once per config: `--no-images`
keeps repos small).
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import tempfile
from pathlib import Path

from rexrank.data.catalog import default_data_dir, get_dataset_spec, hub_repo_id, licensed
from rexrank.data.gating import not_available
from rexrank.data.loading import apply_track, builder_class, load
from rexrank.data.tracks import track_names

log = logging.getLogger("rexrank.data")

DEFAULT_CONFIG = "default"  # datasets' name for the config load_dataset(repo) picks when given none
# The line of a card template that the build replaces with source_facts(name, splits).
SOURCE_MARKER = "<!-- rexrank: the source's facts, written here by build.py from rexrank.data.catalog -->"


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
    root = str(Path(data_dir).expanduser().absolute())
    splits = splits or list(spec.splits)
    with _staged(Path(out_dir), cache_dir) as staging:
        loaded = {split: load(name, data_dir, split=split, cache_dir=cache_dir,
                              require_images=embed_images and not images_optional(name)) for split in splits}
        embed = embed_images and _images_to_embed(name, data_dir, loaded)
        for split, dataset in loaded.items():
            dataset = dataset.map(_relative_paths, fn_kwargs={"root": root, "embed": embed},
                                  features=_hub_features(dataset.features, embed), desc=f"{name} {split}")
            _write_parquet(dataset, staging, DEFAULT_CONFIG, split)
            for track in track_names():  # the same rows and columns `load(name, track=track)` gives
                _write_parquet(apply_track(dataset, track, dataset_name=name, split=split), staging, track, split)
        source = Path(card) if card is not None else card_template(name)
        if source.is_file():
            (staging / "README.md").write_text(card_text(name, source.read_text(encoding="utf-8"), splits),
                                               encoding="utf-8")
    return Path(out_dir)


def images_optional(name: str) -> bool:
    """Whether the dataset's builder works without images (the catalog's builder declares it: IU-Xray)."""
    return not builder_class(name).REQUIRE_IMAGES_BY_DEFAULT


def _images_to_embed(name: str, data_dir, loaded: dict) -> bool:
    """Embed when every image is there; for optional images, none there means a text-only build, some an error."""
    if not images_optional(name):
        return True  # load(require_images=True) already refused a copy with missing images
    paths = [path for dataset in loaded.values() for paths in dataset["image_paths"] for path in paths]
    missing = [path for path in paths if not Path(path).is_file()]
    if not missing:
        return True
    if len(missing) == len(paths):
        log.warning("%s: no images under %s (they are optional for this set): building text and image paths "
                    "relative to the data directory only, as with --no-images.", name, data_dir)
        return False
    raise not_available(name, data_dir, missing, problem=(
        f"{get_dataset_spec(name).title}: {len(paths) - len(missing)} of {len(paths)} images found under "
        f"{data_dir}, {len(missing)} missing. Complete the image copy, or pass --no-images to publish text and "
        "relative image paths only."))


class _staged:
    """Build into a hidden folder beside `out`; on success move its data/ and README.md into `out`, on failure
    remove it, any folder created for it, and the Arrow cache entries the failed run added under `cache_dir`."""

    def __init__(self, out: Path, cache_dir) -> None:
        self.out = out.expanduser().absolute()
        self.cache_dir = Path(cache_dir).expanduser().absolute() if cache_dir is not None else None

    def __enter__(self) -> Path:
        self.created = [p for p in (self.out.parent, *self.out.parent.parents) if not p.exists()]
        self.out.parent.mkdir(parents=True, exist_ok=True)
        self.cache_before = _tree(self.cache_dir)
        self.cache_created = self.cache_dir is not None and not self.cache_dir.exists()
        self.staging = Path(tempfile.mkdtemp(prefix=f".{self.out.name}.", suffix=".partial", dir=self.out.parent))
        return self.staging

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.out.mkdir(exist_ok=True)
            for entry in sorted(self.staging.iterdir()):  # data/ and README.md are the build's: replace them whole
                target = self.out / entry.name
                if target.is_dir() and not target.is_symlink():
                    shutil.rmtree(target)
                elif target.exists() or target.is_symlink():
                    target.unlink()
                entry.rename(target)
            self.staging.rmdir()
            return
        shutil.rmtree(self.staging, ignore_errors=True)
        if self.cache_dir is not None:
            if self.cache_created:
                shutil.rmtree(self.cache_dir, ignore_errors=True)
            else:
                for path in sorted(_tree(self.cache_dir) - self.cache_before, key=lambda p: len(p.parts),
                                   reverse=True):
                    if path.is_dir() and not path.is_symlink():
                        shutil.rmtree(path, ignore_errors=True)
                    else:
                        path.unlink(missing_ok=True)
        for folder in self.created:  # innermost first; only folders this build made, and only if still empty
            try:
                folder.rmdir()
            except OSError:
                break


def _tree(folder: Path | None) -> set[Path]:
    return set(folder.rglob("*")) if folder is not None and folder.is_dir() else set()


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


def card_text(name: str, template: str, splits: list[str]) -> str:
    """The card as published: the template with the source's facts and the `configs` list written in."""
    return with_configs(template.replace(SOURCE_MARKER, source_facts(name, splits)), splits)


def source_facts(name: str, splits: list[str]) -> str:
    """What the repo holds and under which terms, from the catalog. Licensed wording (keep the repo private and
    gated) only for a set whose source is gated (a data use agreement) or a private test set; an open source says
    so and that the repo may be public."""
    spec = get_dataset_spec(name)
    built = ("The ReXrank studies of this source as a `datasets` Parquet repo, built by\n"
             f"`dataset_scripts/{spec.name}/build.py` of the rexrank package from ")
    if not licensed(name):
        terms = ("a local copy of the openly distributed source.\nThe repository may be public (`--public`); its gate "
                 "asks each user to accept the licence's terms.")
    elif spec.private:
        terms = ("the host's licensed local copy.\nKeep the repository **private to your organisation and gated**: it "
                 "redistributes licensed data and holds a private test set, which must never be published.")
    else:
        terms = ("a licensed local copy.\nKeep the repository **private to your organisation and gated**: it "
                 "redistributes licensed data.")
    sizes = ", ".join(f"{split}: {spec.split(split).n_studies} studies" if spec.split(split).n_studies is not None
                      else f"{split}: as many studies as the host's copy holds" for split in splits)
    facts = [f"Splits: {sizes}", f"Licence: {spec.licence}", f"Access to the source: {spec.access}",
             f"What to download: {spec.download}"]
    return built + terms + "\n\n" + "\n".join(f"- {fact}." for fact in facts)


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
    step = "creating the repo"
    try:
        api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        settings = {"private": True} if private else {}
        if gated:
            settings["gated"] = gated
        if settings:
            step = "changing the repo's settings"
            api.update_repo_settings(repo_id, repo_type="dataset", **settings)
        step = "reading the repo's settings back"
        if private and getattr(api.repo_info(repo_id, repo_type="dataset"), "private", None) is not True:
            raise RexrankError(f"the Hub does not report {repo_id} as private after making it private: nothing was "
                               "uploaded (check the repo's settings and that your token may change them)")
        step = "uploading"
        api.upload_folder(repo_id=repo_id, repo_type="dataset", folder_path=str(folder),
                          commit_message="ReXrank test set (rexrank dataset_scripts)")
    except RexrankError:
        raise
    except Exception as exc:
        status = getattr(getattr(exc, "response", None), "status_code", None)
        if status is None:
            raise
        # A Hub refusal is the user's to fix (token, org membership), not a crash: one message, no traceback.
        raise RexrankError(
            f"the Hub refused {step} for {repo_id} (HTTP {status}: {_server_message(exc)}). Use a write token of "
            f"a member of {repo_id.split('/')[0]!r} (`hf auth login` or HF_TOKEN), or choose another --repo "
            "(default: REXRANK_HUB_ORG/<name>).") from None
    return f"{_hub_url()}/datasets/{repo_id}"


def _server_message(exc: BaseException) -> str:
    response = getattr(exc, "response", None)
    message = getattr(getattr(response, "headers", None), "get", lambda key: None)("X-Error-Message")
    return message or str(exc).strip().splitlines()[0]


def _hub_url() -> str:
    from huggingface_hub import constants

    return constants.ENDPOINT.rstrip("/")


def main(name: str, argv: list[str] | None = None) -> int:
    """The command line every dataset_scripts/<name>/build.py runs."""
    import argparse

    spec = get_dataset_spec(name)
    name = spec.name
    parser = argparse.ArgumentParser(description=f"Build {spec.title} as Parquet and push it to a gated Hub dataset "
                                     "repo of your organisation (private unless --public).")
    parser.add_argument("--data-dir", required=spec.gated,
                        help=f"your {'licensed ' if licensed(name) else ''}local copy ({spec.access})")
    parser.add_argument("--repo", help=f"target repo (default {hub_repo_id(name)}; REXRANK_HUB_ORG sets the org)")
    parser.add_argument("--out", default=f"./{name}-hub", help="local folder for the repo content")
    parser.add_argument("--dry-run", action="store_true", help="write the folder, do not push")
    parser.add_argument("--no-images", action="store_true", help="text and relative image paths only")
    parser.add_argument("--public", action="store_true", help="do not make the repo private (it stays gated)")
    parser.add_argument("--gated", default="manual", choices=["manual", "auto"], help="Hub gating mode")
    parser.add_argument("--cache-dir", help="datasets cache for the intermediate Arrow files (default: a "
                        "temporary folder, removed afterwards)")
    parser.add_argument("--card", help="dataset card to copy (default: dataset_scripts/<name>/README.md)")
    args = parser.parse_args(argv)
    from rexrank.errors import RexrankError

    repo = args.repo or hub_repo_id(name)
    try:
        data_dir = args.data_dir if args.data_dir else default_data_dir(name)
        # The intermediate Arrow files hold the (licensed) text: by default they live only as long as the build.
        with tempfile.TemporaryDirectory(prefix="rexrank-build-") as scratch:
            folder = build_folder(name, data_dir, args.out, embed_images=not args.no_images, card=args.card,
                                  cache_dir=args.cache_dir or scratch)
        print(f"wrote {folder}")
        if not args.dry_run:
            token = os.environ.get("HF_TOKEN")  # or the logged-in token; never printed
            try:
                print(push_folder(folder, repo, token=token, gated=args.gated, private=not args.public))
            except RexrankError as exc:
                raise RexrankError(f"{exc}\nThe built repo content stays in {folder} (nothing was uploaded).") from None
    except RexrankError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0

"""The Hugging Face Hub side of gated access: loading ReXrank's gated dataset repos, fetching gated metadata.

`load_from_hub("iu")` loads ReXrank's repo of a test set by any of its catalog names (repo id from
`catalog.hub_repo_id`: rexrank/<name>, or $REXRANK_HUB_ORG/<name>); a full repo id ("org/name") is used as given.
A refusal becomes one DatasetNotAvailableError saying exactly why (no token, token rejected, access not granted,
repo not found or not visible). Tokens are passed through to huggingface_hub and never logged or put into a message.
"""

from __future__ import annotations

import os

from rexrank.data.catalog import canonical_dataset, canonical_split, hub_repo_id
from rexrank.data.gating import hub_access_error, hub_not_found
from rexrank.data.tracks import get_track


def _refusal(exc: BaseException):
    """The GatedRepoError (or 401/403 HTTP error) somewhere in an exception's chain, else None."""
    from huggingface_hub.errors import GatedRepoError, HfHubHTTPError

    seen = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, GatedRepoError):
            return exc
        status = getattr(getattr(exc, "response", None), "status_code", None)
        if isinstance(exc, HfHubHTTPError) and status in (401, 403):
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


def _is_gated_message(exc: BaseException) -> bool:
    return "gated dataset" in str(exc)


def _not_found(exc: BaseException) -> bool:
    """datasets' "doesn't exist on the Hub or cannot be accessed" (a missing repo, or a private one not visible)."""
    from datasets.exceptions import DatasetNotFoundError

    return isinstance(exc, DatasetNotFoundError)


def resolve_repo(name_or_repo: str) -> tuple[str, str | None]:
    """(repo id, catalog dataset or None): a catalog name or alias -> ReXrank's repo; "org/name" -> itself."""
    if "/" in str(name_or_repo):
        return str(name_or_repo), None
    dataset = canonical_dataset(name_or_repo)  # an unknown name: UnknownNameError listing the names
    return hub_repo_id(dataset), dataset


def load_from_hub(name_or_repo: str, split: str | None = None, *, track: str | None = None,
                  token: str | bool | None = None, **kwargs):
    """`datasets.load_dataset` of ReXrank's gated Hub repo of a test set.

    name_or_repo: a catalog name or alias ("iu", "mimic", "chexpert" ...) or a repo id ("my-org/my-copy").
    split: any split spelling of the catalog ("valid" -> "validation") for a catalog name; None: every split.
    track: a track name or alias: the repo's config of that track (its studies, ground truth in `reference`).
    """
    import datasets

    repo_id, dataset = resolve_repo(name_or_repo)
    if dataset is not None and split is not None:
        split = canonical_split(dataset, split)
    if track is not None:
        kwargs["name"] = get_track(track).name  # publish writes one config per track, named after it
    try:
        return datasets.load_dataset(repo_id, split=split, token=token, **kwargs)
    except Exception as exc:
        refusal = _refusal(exc)
        if refusal is not None or _is_gated_message(exc):
            raise hub_access_error(repo_id, refusal or exc, token=token) from None
        if _not_found(exc):
            raise hub_not_found(repo_id, token=token) from None
        raise


def download_file(repo_id: str, filename: str, *, local_dir: str | os.PathLike | None = None,
                  token: str | bool | None = None) -> str:
    """One file of a (gated) Hub dataset repo, e.g. ReXGradient-160K's metadata/valid_metadata_view_position.json."""
    from huggingface_hub import hf_hub_download

    try:
        return hf_hub_download(repo_id, filename, repo_type="dataset", local_dir=local_dir, token=token)
    except Exception as exc:
        refusal = _refusal(exc)
        if refusal is not None:
            raise hub_access_error(repo_id, refusal, token=token) from None
        raise

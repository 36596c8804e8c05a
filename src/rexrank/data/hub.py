"""The Hugging Face Hub side of gated access: loading a gated dataset repo, fetching gated metadata.

A refusal becomes one DatasetNotAvailableError saying exactly why (no token, token rejected, terms not accepted).
Tokens are passed through to huggingface_hub and never logged or put into a message.
"""

from __future__ import annotations

import os

from rexrank.data.gating import hub_access_error


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


def load_from_hub(repo_id: str, split: str | None = None, *, token: str | bool | None = None, **kwargs):
    """`datasets.load_dataset(repo_id)` for a gated repo (e.g. one written by dataset_scripts/<name>/build.py)."""
    import datasets

    try:
        return datasets.load_dataset(repo_id, split=split, token=token, **kwargs)
    except Exception as exc:
        refusal = _refusal(exc)
        if refusal is not None or _is_gated_message(exc):
            raise hub_access_error(repo_id, refusal or exc, token=token) from None
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

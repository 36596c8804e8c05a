"""Access errors, worded the way each source gates its data.

A licensed local copy that is missing or incomplete gives one DatasetNotAvailableError naming where to request
access, what to download, the expected layout and the first missing files. A gated Hub repo refusing access gives
a message saying whether a token is missing or the terms are not accepted. Tokens are never printed.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from rexrank.data.catalog import HUB_ORG_ENV, get_dataset_spec, hub_org
from rexrank.errors import DatasetNotAvailableError

MAX_LISTED = 10


def not_available(name: str, data_dir: str | os.PathLike | None, missing: Sequence[str], *,
                  n_missing: int | None = None, problem: str | None = None) -> DatasetNotAvailableError:
    """The one error for a missing or incomplete local copy of dataset `name`."""
    spec = get_dataset_spec(name)
    n_missing = len(missing) if n_missing is None else n_missing
    where = "no data directory given" if data_dir is None else f"data directory {Path(data_dir)}"
    lines = [problem or f"{spec.title}: the local copy is missing or incomplete ({where}, {n_missing} missing).",
             f"  request access: {spec.access}",
             f"  download:       {spec.download}",
             "  expected layout:"]
    lines += [f"    {line}" for line in spec.layout.splitlines()]
    if missing:
        lines.append(f"  first missing ({min(len(missing), MAX_LISTED)} of {n_missing}):")
        lines += [f"    {item}" for item in list(missing)[:MAX_LISTED]]
    lines.append(f"  then: rexrank data prepare {name} --data-dir DIR   (or set REXRANK_DATA_DIR)")
    return DatasetNotAvailableError("\n".join(lines))


def hub_access_error(repo_id: str, exc: BaseException | None = None, *,
                     token: str | bool | None = None) -> DatasetNotAvailableError:
    """A gated Hub dataset refused access: say whether the token is missing or the terms are not accepted."""
    has_token = bool(token) or bool(_configured_token())
    status = getattr(getattr(exc, "response", None), "status_code", None)
    url = repo_page(repo_id)
    if status == 403 or (status is None and has_token):
        reason = (f"{repo_id} is a gated dataset and this account has not been granted access: accept its terms "
                  f"at {url} (approval may take a while), then retry.")
    elif not has_token:
        reason = (f"{repo_id} is a gated dataset and no Hugging Face token is configured. "
                  f"Log in with `hf auth login` (or set HF_TOKEN, or pass token=...), then accept the terms at {url}.")
    else:
        reason = (f"{repo_id}: the Hugging Face token was rejected (401). Create a new read token at "
                  "https://huggingface.co/settings/tokens, log in again, and make sure the terms at "
                  f"{url} are accepted.")
    return DatasetNotAvailableError(reason)


def hub_not_found(repo_id: str, *, token: str | bool | None = None) -> DatasetNotAvailableError:
    """The Hub answered that `repo_id` does not exist, which is also its answer for a private repo one may not see."""
    has_token = bool(token) or bool(_configured_token())
    login = "" if has_token else " Log in with `hf auth login` (or set HF_TOKEN) if it is private."
    return DatasetNotAvailableError(
        f"{repo_id} was not found on the Hub, or it is private and this account cannot see it.{login} ReXrank's "
        f"test sets are {hub_org()}/<name> (set {HUB_ORG_ENV} for a host's own organisation); for a private copy, "
        f"ask its owners to add you to {repo_id.split('/')[0]}.")


def repo_page(repo_id: str) -> str:
    """The repo's page (where access is requested) on the Hub the clients talk to (HF_ENDPOINT, else huggingface.co)."""
    try:
        from huggingface_hub import constants

        endpoint = constants.ENDPOINT.rstrip("/")
    except Exception:
        endpoint = "https://huggingface.co"
    return f"{endpoint}/datasets/{repo_id}"


def _configured_token() -> str | None:
    # Only checks whether a token exists; its value is never logged or put into a message.
    token = os.environ.get("HF_TOKEN") or os.environ.get("HUGGING_FACE_HUB_TOKEN")
    if token:
        return token
    try:
        from huggingface_hub import get_token

        return get_token()
    except Exception:
        return None

"""Hub dataset repo backend for a hosted board: results as JSON files, synced both ways with the local store.

Layout in the repo: ``results/<content_hash>.json``, one ``ResultRecord`` each (aggregates only). A result's
file name is its content hash, so pushing and pulling are idempotent and two boards never overwrite each
other's files. The SQLite store stays the working copy; the repo is the durable, shareable copy.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from rexrank.errors import RexrankError
from rexrank.leaderboard.records import MetricValue, ModelInfo, ResultRecord
from rexrank.leaderboard.store import Store

PREFIX = "results/"


def record_from_row(row: dict[str, Any]) -> ResultRecord:
    """The ResultRecord a store row was made from (exactly, so its content hash is unchanged)."""
    if row.get("record"):
        return ResultRecord.from_json(row["record"])
    model = ModelInfo(name=row["model_name"], institution=row["institution"], url=row["url"], year=row["year"],
                      model_type=row["model_type"], trained_on=row["trained_on"])
    return ResultRecord(model=model, dataset=row["dataset"], split=row["split"], track=row["track"],
                        source=row["source"], metrics={k: MetricValue(**v) for k, v in row["metrics"].items()},
                        n_studies=row["n_studies"], note=row["note"], extra=row["extra"])


class HubSync:
    def __init__(self, store: Store, repo_id: str, *, api=None, token: str | None = None):
        if api is None:
            from huggingface_hub import HfApi

            api = HfApi(token=token)
        self.store, self.repo_id, self.api = store, repo_id, api

    def _remote_names(self) -> set[str]:
        try:
            files = self.api.list_repo_files(self.repo_id, repo_type="dataset")
        except Exception as exc:  # noqa: BLE001 - one clear message for auth/network/missing repo
            raise RexrankError(f"cannot list the results repo {self.repo_id}: {type(exc).__name__}. Check that it "
                               "exists and that HF_TOKEN can read it.") from None
        return {f[len(PREFIX):] for f in files if f.startswith(PREFIX) and f.endswith(".json")}

    def push(self) -> int:
        """Upload every stored result missing from the repo, in one commit. Returns how many were uploaded."""
        from huggingface_hub import CommitOperationAdd

        remote = self._remote_names()
        ops = []
        for row in self.store.results(latest=False):
            name = f"{row['content_hash']}.json"
            if name not in remote:
                payload = json.dumps(record_from_row(row).to_json(), indent=1, sort_keys=True).encode()
                ops.append(CommitOperationAdd(path_in_repo=PREFIX + name, path_or_fileobj=payload))
        if ops:
            self.api.create_commit(self.repo_id, operations=ops, repo_type="dataset",
                                   commit_message=f"rexrank: add {len(ops)} result(s)")
        return len(ops)

    def pull(self) -> int:
        """Add every repo result missing from the store. Returns how many were new."""
        known = {row["content_hash"] for row in self.store.results(latest=False)}
        added = 0
        with tempfile.TemporaryDirectory() as tmp:
            for name in sorted(self._remote_names()):
                if name[:-5] in known:
                    continue
                path = self.api.hf_hub_download(self.repo_id, PREFIX + name, repo_type="dataset", local_dir=tmp)
                record = ResultRecord.from_json(json.loads(Path(path).read_text()))
                added += self.store.add_result(record)[1]
        return added

    def sync(self) -> dict[str, int]:
        pulled = self.pull()
        return {"pulled": pulled, "pushed": self.push()}

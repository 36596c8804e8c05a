"""Hub dataset repo backend for a hosted board: results as JSON files, synced both ways with the local store.

Layout in the repo: ``results/<content_hash>.json``, one ``ResultRecord`` each (aggregates only). A result's
file name is its content hash, so pushing and pulling are idempotent and two boards never overwrite each
other's files. The SQLite store stays the working copy; the repo is the durable, shareable copy.

What is pushed is the disclosed record (``rexrank.evaluation.disclosure.disclose_record``): a private test set's
numbers rounded to 3 decimals and small subgroups suppressed, even where the local row holds more, and the file is
named after the disclosed record's hash (a row already disclosed keeps its own hash).

Each file also holds the row's ``provenance`` (who added it, how, when, its submission id and its model name's
owner; not part of the record or its hash), so a board rebuilt from the repo keeps every name's owner and shows
the same rows.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from rexrank.errors import RexrankError
from rexrank.evaluation.disclosure import disclose_record
from rexrank.leaderboard.records import HOST, MetricValue, ModelInfo, Provenance, ResultRecord
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


def shared_record(row: dict[str, Any]) -> tuple[ResultRecord, str]:
    """(record, content hash) as it may leave this host: ``record_from_row`` disclosed; an open set's record, or
    a row already stored disclosed, unchanged with the row's own hash."""
    record = record_from_row(row)
    disclosed = disclose_record(record.to_json())
    if disclosed == record.to_json():
        return record, row["content_hash"]
    record = ResultRecord.from_json(disclosed)
    return record, record.content_hash()


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
        for row in self.store.results(latest=False, include_hidden=True):
            record, digest = shared_record(row)
            name = f"{digest}.json"
            if name not in remote:
                remote.add(name)  # two local rows that disclose to one record are pushed once
                data = {**record.to_json(), "provenance": {
                    "submitted_by": row["submitted_by"], "via": row["submitted_via"],
                    "submission_id": row["submission_id"], "submitted_at": row["submitted_at"], "owner": row["owner"]}}
                payload = json.dumps(data, indent=1, sort_keys=True).encode()
                ops.append(CommitOperationAdd(path_in_repo=PREFIX + name, path_or_fileobj=payload))
        if ops:
            self.api.create_commit(self.repo_id, operations=ops, repo_type="dataset",
                                   commit_message=f"rexrank: add {len(ops)} result(s)")
        return len(ops)

    def pull(self) -> int:
        """Add every repo result missing from the store. Returns how many were new."""
        rows = self.store.results(latest=False, include_hidden=True)
        # A local row is known under its own hash and under its disclosed record's (the name it was pushed as).
        known = {row["content_hash"] for row in rows} | {shared_record(row)[1] for row in rows}
        added = 0
        with tempfile.TemporaryDirectory() as tmp:
            for name in sorted(self._remote_names()):
                if name[:-5] in known:
                    continue
                path = self.api.hf_hub_download(self.repo_id, PREFIX + name, repo_type="dataset", local_dir=tmp)
                data = json.loads(Path(path).read_text())
                record = ResultRecord.from_json(data)
                # The repo is the host's own copy: rows come back as they were (provenance and owners kept; the
                # board's owner rule decides what is shown). A file without provenance predates it: a result the
                # host added, or a submission from no one known (kept, not shown).
                given = data.get("provenance") or {}
                provenance = Provenance(
                    submitted_by=given.get("submitted_by") or (HOST if record.source != "submission" else "unknown"),
                    via=given.get("via") or "hub-sync", submission_id=given.get("submission_id"),
                    submitted_at=given.get("submitted_at"))
                added += self.store.add_result(record, provenance=provenance, enforce_owner=False,
                                               owner_if_new=given.get("owner") or HOST)[1]
        return added

    def sync(self) -> dict[str, int]:
        pulled = self.pull()
        return {"pulled": pulled, "pushed": self.push()}

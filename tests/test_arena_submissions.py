"""A scored public submission's reports stay in the store for the Arena (issue 28 point 1); a private set's never."""

from __future__ import annotations

import json

from leaderboard_helpers import iu_predictions
from rexrank.leaderboard.store import Store
from rexrank.leaderboard.submissions import Submissions


def test_a_scored_iu_xray_submission_keeps_its_reports_and_per_study_values(tmp_path):
    store = Store(tmp_path / "board.sqlite")
    service = Submissions(store, tmp_path / "queue", metrics=["bleu2"], n_resamples=20)
    path = iu_predictions(tmp_path / "p.json", n_shift=3)
    predictions = json.loads(path.read_text())
    service.submit(path, {"name": "TeamArena"}, "iu_xray", "findings", user="alice")
    assert service.work_once()
    assert store.submissions()[0]["status"] == "done", store.submissions()[0]["error"]
    rows = store.arena_reports("iu_xray")
    assert len(rows) == 590 and {r["model"] for r in rows} == {"TeamArena"}
    first = rows[0]
    assert first["report"] == predictions[first["study"]]
    assert first["reference"] and set(first["metrics"]) == {"bleu2"} and 0 <= first["metrics"]["bleu2"] <= 1
    assert first["result_hash"] == store.results("iu_xray", model="TeamArena")[0]["content_hash"]
    store.close()

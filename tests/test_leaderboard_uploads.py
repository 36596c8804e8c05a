"""Uploads never submitted are capped (issue 49 point 4): gradio's /gradio_api/upload kept every file for an hour,
without limit (20 x 5 MB in 1.1 s). ``uploads.UploadCap`` keeps each client's newest few (its oldest go) and refuses
an upload that would take all unsubmitted uploads over the total, before it is read."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from rexrank.leaderboard.uploads import UPLOAD_ROUTE, UPLOADS_FULL, UploadCap


def _gradio_like(root: Path):
    """An ASGI app answering the upload route as gradio does: each file under ``<root>/<sha256>/<name>``, its path
    in a JSON list."""
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def upload(request):
        form = await request.form()
        paths = []
        for item in form.getlist("files"):
            data = await item.read()
            folder = root / hashlib.sha256(data).hexdigest()
            folder.mkdir(parents=True, exist_ok=True)
            (folder / item.filename).write_bytes(data)
            paths.append(str(folder / item.filename))
        return JSONResponse(paths)

    return Starlette(routes=[Route(UPLOAD_ROUTE, upload, methods=["POST"])])


def _files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file())


@pytest.fixture
def capped(tmp_path):
    from starlette.testclient import TestClient

    root = tmp_path / "gradio"
    root.mkdir()
    # Room for ten 5 kB files and their requests' multipart overhead (an upload's Content-Length is checked).
    cap = UploadCap(_gradio_like(root), proxies=1, per_client=3, total_bytes=10 * 5_000 + 4_000, root=root)
    with TestClient(cap, base_url="http://127.0.0.1") as client:
        yield client, cap, root


def _upload(client, n: int, address: str, size: int = 5_000):
    data = n.to_bytes(4, "big") * (size // 4)
    return client.post(UPLOAD_ROUTE, files={"files": (f"p{n}.json", data)}, headers={"X-Forwarded-For": address})


def test_a_client_keeps_its_newest_uploads_only(capped):
    """Twenty uploads from one client (ten /64s of one /48, as one client is counted): its three newest stay, the
    others are deleted, their folders with them; another client's uploads are untouched."""
    client, cap, root = capped
    other = _upload(client, 100, "198.51.100.9")
    answers = [_upload(client, n, f"2001:db8:5:{n:x}::1") for n in range(20)]
    assert all(answer.status_code == 200 for answer in answers)
    newest = [Path(a.json()[0]) for a in answers[-3:]]
    assert _files(root) == sorted([Path(other.json()[0]), *newest])
    assert len([p for p in root.iterdir()]) == 4  # gradio's folder of each deleted upload went too
    assert cap.held_bytes() == 4 * 5_000


def test_uploads_over_the_total_are_refused_before_they_are_read(capped):
    """Ten clients fill the total (10 x 5 kB here); the next upload is refused with one line and nothing of it is
    written. Once an upload is taken (submitted: its file leaves gradio's folder), there is room again."""
    client, cap, root = capped
    first = [_upload(client, n, f"203.0.113.{n + 1}") for n in range(10)]
    assert all(answer.status_code == 200 for answer in first)
    refused = _upload(client, 50, "192.0.2.1")
    assert refused.status_code == 503 and refused.text == UPLOADS_FULL
    assert len(_files(root)) == 10
    Path(first[0].json()[0]).unlink()  # submitted: ReceivedUploads.take removes gradio's file
    assert _upload(client, 50, "192.0.2.1").status_code == 200


def test_other_routes_pass_untouched(tmp_path):
    """Only POSTs to the upload route are counted: anything else reaches the app as sent."""
    from starlette.applications import Starlette
    from starlette.responses import PlainTextResponse
    from starlette.routing import Route
    from starlette.testclient import TestClient

    async def echo(request):
        return PlainTextResponse((await request.body()).decode())

    app = Starlette(routes=[Route("/gradio_api/call/submit", echo, methods=["POST"])])
    cap = UploadCap(app, per_client=0, total_bytes=0, root=tmp_path)
    with TestClient(cap) as client:
        assert client.post("/gradio_api/call/submit", content=json.dumps({"data": []})).text == '{"data": []}'

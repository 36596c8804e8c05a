"""A Hugging Face Hub on 127.0.0.1: the part of the Hub HTTP API that `huggingface_hub` and `datasets` call.

Tests point a client at it (``HfApi(endpoint=hub.endpoint)``, or ``HF_ENDPOINT=hub.endpoint`` in a subprocess:
both libraries read HF_ENDPOINT when they are imported) and then run the real client code: ``create_repo``,
``update_repo_settings``, ``upload_folder``, ``hf_hub_download``, ``datasets.load_dataset(repo_id)``. The one
loopback Hub of the suite: the datasets route (tests/test_data_hub.py) and the leaderboard's HubSync persistence
(tests/test_leaderboard_persistence.py) both run against it.

Served (the routes the clients were seen to call, logged in ``hub.requests``):
  GET  /api/whoami-v2
  POST /api/repos/create                             {name, organization, type, visibility|private}
  PUT  /api/{type}s/{repo}/settings                  {gated, visibility|private}
  GET  /api/{type}s/{repo}[/revision/{rev}]          repo info (sha, private, gated, siblings, cardData)
  GET  /api/{type}s/{repo}/tree/{rev}[/{path}]       listing (?recursive=true)
  POST /api/{type}s/{repo}/paths-info/{rev}          listing of given paths
  POST /api/{type}s/{repo}/preupload/{rev}           every file "regular" (no LFS / Xet upload to emulate)
  POST /api/{type}s/{repo}/commit/{rev}              NDJSON header / file / deletedFile lines
  POST /api/validate-yaml
  HEAD, GET /{type}s/{repo}/resolve/{rev}/{path}     X-Repo-Commit, ETag, Content-Length; Range requests

Access follows the Hub's rules, errors carry its X-Error-Code / X-Error-Message headers (what
huggingface_hub.utils.hf_raise_for_status turns into GatedRepoError, RepositoryNotFoundError, ...):
  - an unknown token: 401 "Invalid credentials in Authorization header";
  - a private repo the caller may not see: 401 without a token, 404 with one (RepoNotFound: existence is not told);
  - a gated repo: its info and file listing are public, its files are not: 401 GatedRepo without a token,
    403 GatedRepo for a token not on its access list (``grant``), 200 for the owner's org and granted tokens.
Writes need a token of a user who is (a member of) the repo's namespace.
"""

from __future__ import annotations

import base64
import hashlib
import http.server
import json
import re
import threading
import time
import traceback
from dataclasses import dataclass, field
from urllib.parse import parse_qs, unquote, urlsplit

_REPO_TYPES = {"models": "model", "datasets": "dataset", "spaces": "space"}
_PREFIX = {"model": "", "dataset": "datasets/", "space": "spaces/"}


@dataclass
class HubRepo:
    repo_id: str
    repo_type: str = "dataset"
    files: dict[str, bytes] = field(default_factory=dict)
    private: bool = False
    gated: str | bool = False  # False, "auto" or "manual", as the Hub's settings API spells it
    granted: set[str] = field(default_factory=set)  # user names whose access request was accepted
    commits: list[str] = field(default_factory=list)  # commit shas, newest last

    @property
    def sha(self) -> str:
        return self.commits[-1] if self.commits else "0" * 40

    @property
    def namespace(self) -> str:
        return self.repo_id.split("/")[0]


def git_blob_sha(data: bytes) -> str:
    """A file's git object id: what the Hub reports as `oid` and as the ETag of a non-LFS file."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class _Refused(Exception):
    def __init__(self, status: int, message: str, code: str | None = None):
        super().__init__(message)
        self.status, self.message, self.code = status, message, code


class LoopbackHub:
    """``with LoopbackHub() as hub:`` a Hub on a free port of 127.0.0.1; ``hub.endpoint`` is its URL.

    ``add_user(name, token, orgs=())`` registers a token; ``add_repo`` / ``grant`` set up repos and access;
    ``fail(pattern, status, times)`` makes the next matching requests fail (a flaky Hub); ``requests`` lists
    (method, path, status) of every call, in order."""

    def __init__(self) -> None:
        self.repos: dict[tuple[str, str], HubRepo] = {}
        self.users: dict[str, tuple[str, tuple[str, ...]]] = {}  # token -> (user name, orgs)
        self.requests: list[tuple[str, str, int]] = []
        self.failures: list[list] = []  # [compiled pattern, status, times left]
        self.lock = threading.RLock()
        self._server: http.server.ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- set-up ------------------------------------------------------------------------------------------------
    def add_user(self, name: str, token: str, orgs: tuple[str, ...] | list[str] = ()) -> None:
        self.users[token] = (name, tuple(orgs))

    def add_repo(self, repo_id: str, *, repo_type: str = "dataset", files: dict[str, bytes] | None = None,
                 private: bool = False, gated: str | bool = False) -> HubRepo:
        repo = HubRepo(repo_id, repo_type, dict(files or {}), private, gated)
        repo.commits.append(self._new_sha(repo))
        self.repos[(repo_type, repo_id)] = repo
        return repo

    def grant(self, repo_id: str, user: str, *, repo_type: str = "dataset") -> None:
        """Accept `user`'s access request to a gated repo."""
        self.repos[(repo_type, repo_id)].granted.add(user)

    def fail(self, pattern: str, status: int = 400, times: int = 1) -> None:
        """Answer the next `times` requests whose "METHOD /path" matches `pattern` (re.search) with `status`.
        (4xx rather than 5xx keeps tests fast: huggingface_hub retries 5xx answers itself, seconds each.)"""
        with self.lock:
            self.failures.append([re.compile(pattern), status, times])

    def repo(self, repo_id: str, repo_type: str = "dataset") -> HubRepo:
        return self.repos[(repo_type, repo_id)]

    # -- lifecycle ---------------------------------------------------------------------------------------------
    @property
    def endpoint(self) -> str:
        assert self._server is not None, "start the hub first (with LoopbackHub() as hub: ...)"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> LoopbackHub:
        handler = type("Handler", (_Handler,), {"hub": self})
        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, name="loopback-hub", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._thread.join(timeout=5)
            self._server = None

    def __enter__(self) -> LoopbackHub:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- access rules --------------------------------------------------------------------------------------------
    def _caller(self, authorization: str | None) -> tuple[str, tuple[str, ...]] | None:
        if not authorization:
            return None
        token = authorization.removeprefix("Bearer ").strip()
        if token not in self.users:
            raise _Refused(401, "Invalid credentials in Authorization header")
        return self.users[token]

    @staticmethod
    def _is_member(caller, namespace: str) -> bool:
        return caller is not None and (caller[0] == namespace or namespace in caller[1])

    def _find(self, repo_type: str, repo_id: str, caller) -> HubRepo:
        """The repo if the caller may see it; a private one it may not see is answered like a missing one."""
        repo = self.repos.get((repo_type, repo_id))
        visible = repo is not None and (not repo.private or self._is_member(caller, repo.namespace)
                                        or (caller is not None and caller[0] in repo.granted))
        if not visible:
            # The Hub says 401 to anonymous callers and 404 to others, and never whether the repo exists.
            raise _Refused(401 if caller is None else 404, "Repository not found", "RepoNotFound")
        return repo

    def _check_content(self, repo: HubRepo, caller) -> None:
        """File content of a gated repo: only its namespace's members and accepted requests."""
        if not repo.gated or self._is_member(caller, repo.namespace) or (caller and caller[0] in repo.granted):
            return
        kind = repo.repo_type
        url = f"https://huggingface.co/{_PREFIX[repo.repo_type]}{repo.repo_id}"  # the Hub's wording, its own URL
        if caller is None:
            raise _Refused(401, f"Access to {kind} {repo.repo_id} is restricted. You must have access to it and be "
                                "authenticated to access it. Please log in.", "GatedRepo")
        raise _Refused(403, f"Access to {kind} {repo.repo_id} is restricted and you are not in the authorized "
                            f"list. Visit {url} to ask for access.", "GatedRepo")

    def _check_write(self, repo_id: str, caller) -> None:
        if caller is None:
            raise _Refused(401, "You must be authenticated to write to the Hub")
        if not self._is_member(caller, repo_id.split("/")[0]):
            raise _Refused(403, f"You don't have the rights to create or change repos in {repo_id.split('/')[0]}")

    def _revision(self, repo: HubRepo, revision: str) -> None:
        if unquote(revision) not in ("main", *repo.commits):
            raise _Refused(404, f"Invalid rev id: {unquote(revision)}", "RevisionNotFound")

    def _url(self, repo_type: str, repo_id: str) -> str:
        """A repo's web URL on this server, as the Hub answers with its own (clients parse it into a RepoUrl)."""
        return f"{self.endpoint}/{_PREFIX[repo_type]}{repo_id}"

    def _new_sha(self, repo: HubRepo) -> str:
        return hashlib.sha1(f"{repo.repo_id}:{len(repo.commits)}:{time.time_ns()}".encode()).hexdigest()

    # -- answers -----------------------------------------------------------------------------------------------
    def _entries(self, repo: HubRepo, under: str, recursive: bool) -> list[dict]:
        under = under.strip("/")
        prefix = f"{under}/" if under else ""
        files, folders = [], set()
        for path in sorted(repo.files):
            if not path.startswith(prefix):
                continue
            rest = path[len(prefix):]
            parts = rest.split("/")
            for depth in range(1, len(parts)):
                if recursive or depth == 1:
                    folders.add(prefix + "/".join(parts[:depth]))
            if recursive or len(parts) == 1:
                files.append(self._file_entry(repo, path))
        return [{"type": "directory", "oid": "0" * 40, "size": 0, "path": f} for f in sorted(folders)] + files

    @staticmethod
    def _file_entry(repo: HubRepo, path: str) -> dict:
        data = repo.files[path]
        return {"type": "file", "oid": git_blob_sha(data), "size": len(data), "path": path,
                "lastCommit": {"id": repo.sha, "title": "commit", "date": "2025-01-01T00:00:00.000Z"}}

    def _info(self, repo: HubRepo) -> dict:
        card = _card_data(repo.files.get("README.md", b"").decode("utf-8", "replace"))
        return {"_id": repo.sha[:24], "id": repo.repo_id, "author": repo.namespace, "sha": repo.sha,
                "private": repo.private, "gated": repo.gated, "disabled": False, "downloads": 0, "likes": 0,
                "tags": [], "cardData": card, "lastModified": "2025-01-01T00:00:00.000Z",
                "createdAt": "2025-01-01T00:00:00.000Z", "usedStorage": sum(map(len, repo.files.values())),
                "siblings": [{"rfilename": path} for path in sorted(repo.files)]}

    def handle(self, method: str, raw_path: str, headers, body: bytes) -> tuple[int, dict, bytes]:
        """One request -> (status, headers, body). Kept apart from the socket handler so it reads as the API."""
        url = urlsplit(raw_path)
        path, query = url.path, parse_qs(url.query)
        with self.lock:
            for failure in self.failures:
                if failure[2] > 0 and failure[0].search(f"{method} {path}"):
                    failure[2] -= 1
                    raise _Refused(failure[1], "failure injected by the test")
            caller = self._caller(headers.get("Authorization"))
            if path == "/api/whoami-v2":
                if caller is None:
                    raise _Refused(401, "Invalid username or password.")
                return _json({"type": "user", "name": caller[0], "orgs": [{"name": o} for o in caller[1]],
                              "auth": {"type": "access_token", "accessToken": {"role": "write"}}})
            if path == "/api/validate-yaml" and method == "POST":
                return _json({"errors": [], "warnings": []})
            if path == "/api/repos/create" and method == "POST":
                return self._create(json.loads(body or b"{}"), caller)
            match = re.fullmatch(r"/api/(models|datasets|spaces)/([^/]+/[^/]+)(/.*)?", path)
            if match:
                return self._api(method, _REPO_TYPES[match.group(1)], match.group(2), match.group(3) or "", query,
                                 headers, body, caller)
            match = re.fullmatch(r"/(?:(datasets|spaces)/)?([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path)
            if match and method in ("GET", "HEAD"):
                repo_type = _REPO_TYPES[match.group(1)] if match.group(1) else "model"
                return self._resolve(repo_type, unquote(match.group(2)), match.group(3), unquote(match.group(4)),
                                     headers, caller)
            raise _Refused(404, f"no route for {method} {path} on the loopback hub")

    def _create(self, payload: dict, caller) -> tuple[int, dict, bytes]:
        repo_type = payload.get("type") or "model"
        repo_id = f"{payload.get('organization') or (caller[0] if caller else '')}/{payload['name']}"
        self._check_write(repo_id, caller)
        url = self._url(repo_type, repo_id)
        if (repo_type, repo_id) in self.repos:
            return _json({"error": "You already created this repo", "url": url}, 409)
        private = payload.get("visibility") == "private" or bool(payload.get("private"))
        self.add_repo(repo_id, repo_type=repo_type, private=private)
        return _json({"url": url, "name": repo_id})

    def _api(self, method, repo_type, repo_id, rest, query, headers, body, caller) -> tuple[int, dict, bytes]:
        if rest == "/settings" and method == "PUT":
            self._check_write(repo_id, caller)
            repo = self._find(repo_type, repo_id, caller)
            payload = json.loads(body or b"{}")
            if "gated" in payload:
                repo.gated = payload["gated"]
            if "visibility" in payload:
                repo.private = payload["visibility"] == "private"
            elif "private" in payload:
                repo.private = bool(payload["private"])
            return _json({})
        repo = self._find(repo_type, repo_id, caller)
        match = re.fullmatch(r"(?:/revision/([^/]+))?", rest)
        if match and method == "GET":
            self._revision(repo, match.group(1) or "main")
            return _json(self._info(repo))
        match = re.fullmatch(r"/tree/([^/]+)(?:/(.*))?", rest)
        if match and method == "GET":
            self._revision(repo, match.group(1))
            under = unquote(match.group(2) or "")
            if under and under not in repo.files and not any(p.startswith(under.rstrip("/") + "/") for p in repo.files):
                raise _Refused(404, f"{under} does not exist on \"main\"", "EntryNotFound")
            recursive = query.get("recursive", ["false"])[0].lower() in ("true", "1")
            return _json(self._entries(repo, under, recursive))
        match = re.fullmatch(r"/paths-info/([^/]+)", rest)
        if match and method == "POST":
            self._revision(repo, match.group(1))
            paths = _form_or_json_paths(headers.get("Content-Type", ""), body)
            found = []
            for path in paths:
                path = path.strip("/")
                if path in repo.files:
                    found.append(self._file_entry(repo, path))
                elif any(p.startswith(path + "/") for p in repo.files):
                    found.append({"type": "directory", "oid": "0" * 40, "size": 0, "path": path})
            return _json(found)
        match = re.fullmatch(r"/preupload/([^/]+)", rest)
        if match and method == "POST":
            self._check_write(repo_id, caller)
            # Every file is uploaded inline in the commit ("regular"), so no LFS or Xet protocol is needed.
            files = json.loads(body or b"{}").get("files", [])
            return _json({"files": [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False,
                                     **({"oid": git_blob_sha(repo.files[f["path"]])} if f["path"] in repo.files
                                        else {})} for f in files]})
        match = re.fullmatch(r"/commit/([^/]+)", rest)
        if match and method == "POST":
            self._check_write(repo_id, caller)
            self._revision(repo, match.group(1))
            return self._commit(repo, body)
        raise _Refused(404, f"no route for {method} /api/{repo_type}s/{repo_id}{rest} on the loopback hub")

    def _commit(self, repo: HubRepo, body: bytes) -> tuple[int, dict, bytes]:
        files = dict(repo.files)
        for line in body.decode("utf-8").splitlines():
            if not line.strip():
                continue
            item = json.loads(line)
            key, value = item["key"], item["value"]
            if key == "file":
                if value.get("encoding", "base64") != "base64":
                    raise _Refused(400, f"unsupported encoding {value.get('encoding')!r}")
                files[value["path"]] = base64.b64decode(value["content"])
            elif key == "deletedFile":
                files.pop(value["path"], None)
            elif key == "deletedFolder":
                files = {p: b for p, b in files.items() if not p.startswith(value["path"].rstrip("/") + "/")}
            elif key in ("lfsFile", "copyFile"):
                raise _Refused(400, f"the loopback hub takes every file inline; got a {key} operation")
        repo.files = files
        repo.commits.append(self._new_sha(repo))
        return _json({"commitUrl": f"{self._url(repo.repo_type, repo.repo_id)}/commit/{repo.sha}",
                      "commitOid": repo.sha})

    def _resolve(self, repo_type, repo_id, revision, path, headers, caller) -> tuple[int, dict, bytes]:
        repo = self._find(repo_type, repo_id, caller)
        self._revision(repo, revision)
        self._check_content(repo, caller)
        if path not in repo.files:
            raise _Refused(404, "Entry not found", "EntryNotFound")
        data = repo.files[path]
        out = {"X-Repo-Commit": repo.sha, "ETag": f'"{git_blob_sha(data)}"', "Accept-Ranges": "bytes",
               "Content-Type": "application/octet-stream"}
        ranged = re.fullmatch(r"bytes=(\d*)-(\d*)", headers.get("Range") or "")
        if ranged and data:
            start = int(ranged.group(1) or 0)
            end = min(int(ranged.group(2)) if ranged.group(2) else len(data) - 1, len(data) - 1)
            out["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
            return 206, out, data[start:end + 1]
        return 200, out, data


def _json(data, status: int = 200) -> tuple[int, dict, bytes]:
    return status, {"Content-Type": "application/json"}, json.dumps(data).encode()


def _card_data(card: str) -> dict | None:
    if not card.startswith("---\n"):
        return None
    import yaml

    header = card[4:].partition("\n---")[0]
    try:
        return yaml.safe_load(header) or {}
    except yaml.YAMLError:
        return None


def _form_or_json_paths(content_type: str, body: bytes) -> list[str]:
    if "json" in content_type:
        return list(json.loads(body or b"{}").get("paths", []))
    return parse_qs(body.decode("utf-8")).get("paths", [])


class _Handler(http.server.BaseHTTPRequestHandler):
    hub: LoopbackHub
    protocol_version = "HTTP/1.1"  # keep-alive, as the clients' connection pools expect

    def log_message(self, *args) -> None:  # requests are recorded in hub.requests instead
        pass

    def _answer(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        try:
            status, headers, payload = self.hub.handle(self.command, self.path, self.headers, body)
        except _Refused as refusal:
            status, headers, payload = _json({"error": refusal.message}, refusal.status)
            headers["X-Error-Message"] = refusal.message
            if refusal.code:
                headers["X-Error-Code"] = refusal.code
        except Exception as exc:  # a bug here must reach the test as an answer, not as a dropped connection
            traceback.print_exc()
            status, headers, payload = _json({"error": f"loopback hub: {exc!r}"}, 500)
        with self.hub.lock:
            self.hub.requests.append((self.command, self.path, status))
        self.send_response(status)
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    do_GET = do_HEAD = do_POST = do_PUT = do_DELETE = _answer

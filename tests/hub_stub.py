"""A small local Hugging Face Hub: enough of its HTTP API for create_repo, repo_info, update_repo_settings,
upload_folder (with delete_patterns) and create_tag.

Speaks the endpoints huggingface_hub 2.x calls (read from its source):
    POST /api/repos/create                            {"name", "organization", "type", "visibility"}; an
                                                      existing repo: 409, its visibility unchanged
    GET  /api/{type}s/{ns}/{name}[/revision/{rev}]    repo info with "private" and "gated" (404 + X-Error-Code:
                                                      RepoNotFound)
    PUT  /api/{type}s/{ns}/{name}/settings            {"visibility": "private" | "public"} (or {"private"}),
                                                      {"gated": "auto" | "manual" | false} (else 400)
    GET  /api/{type}s/{ns}/{name}/tree/{rev}[/{path}] the files (and folders) at a revision, ?recursive=
    GET  /api/{type}s/{ns}/{name}/refs                branches, converts, tags
    POST /api/{type}s/{ns}/{name}/preupload/{rev}     upload mode per file: "regular" (the file travels
                                                      inline, base64, in the commit), or with lfs=True
                                                      (--lfs) "lfs" for a binary file or one over 10 MB,
                                                      as the Hub does
    POST /{type}s/{ns}/{name}.git/info/lfs/objects/batch  (lfs=True) the LFS batch API, basic transfer: an
                                                      upload and a verify action per object not stored yet
    PUT  /lfs/{oid}, POST /lfs/verify                 the object's bytes (sha256 and size checked); verify
    POST /api/{type}s/{ns}/{name}/commit/{rev}        NDJSON: header, file, lfsFile, deletedFile lines
    POST /api/{type}s/{ns}/{name}/tag/{rev}           {"tag", "message"}; 409 if it exists
    POST /api/validate-yaml                           README front matter check (create_commit path)
    GET  /api/agent-harnesses                         the client's best-effort registry fetch (no auth)
    GET|HEAD /{type}s/{ns}/{name}/resolve/{rev}/{path}  a file's bytes (what hf_hub_download and
                                                      datasets.load_dataset read), with X-Repo-Commit / ETag
    POST /api/{type}s/{ns}/{name}/paths-info/{rev}    files' type, size and oid
Every call needs `Authorization: Bearer <token>` with a known token, else 401 with the Hub's
"Invalid credentials in Authorization header" message; as on the Hub, reading a public repo needs none.
Requests are logged for the tests.

Standalone, to rehearse a publish on this machine (python -m tests.hub_stub --help):
    python -m tests.hub_stub --port 8020                 # prints its URL; any token is taken
    HF_ENDPOINT=http://127.0.0.1:8020 HF_TOKEN=hf_local python -m release.export --workspace workspace \\
        --push-to-hub ORG/NAME
    HF_ENDPOINT=http://127.0.0.1:8020 python -c "import datasets; print(datasets.load_dataset('ORG/NAME'))"
The repos live in memory: they are gone when the stub stops. It speaks no xet: with --lfs, a client
pushes with HF_HUB_DISABLE_XET=1 and its large files stream through LFS, as a push to the Hub streams them
(through xet or LFS), where inline base64 holds every file in the client's memory at once.
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import re
import secrets
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import yaml

REPO_PATH = re.compile(r"^/api/(models|datasets|spaces)/([^/]+)/([^/]+)(?:/(.*))?$")
LFS_BATCH_PATH = re.compile(r"^/(?:(datasets|spaces)/)?([^/]+)/([^/]+)\.git/info/lfs/objects/batch$")
LFS_MIN_BYTES = 10 * 1024 * 1024  # the Hub's limit for a file committed inline
RESOLVE_PATH = re.compile(r"^/(?:(datasets|spaces)/)?([^/]+)/([^/]+)/resolve/([^/]+)/(.+)$")


@dataclass
class Repo:
    repo_type: str
    repo_id: str
    private: bool
    gated: str | bool = False
    files: dict[str, bytes] = field(default_factory=dict)
    commits: list[dict[str, Any]] = field(default_factory=list)
    tags: dict[str, str] = field(default_factory=dict)

    @property
    def head(self) -> str:
        return self.commits[-1]["oid"] if self.commits else "0" * 40

    def files_at(self, revision: str) -> dict[str, bytes] | None:
        """The repo's files at a branch ("main"), tag or commit id (None: no such revision)."""
        if revision == "main":
            return dict(self.files)
        target = self.tags.get(revision, revision)
        return next((dict(c["tree"]) for c in self.commits if c["oid"] == target), None)


class HubStub:
    def __init__(self, tokens: set[str] | None, port: int = 0, host: str = "127.0.0.1", lfs: bool = False):
        self.tokens = None if tokens is None else set(tokens)  # None: any token is taken
        self.lfs = lfs
        self.lfs_objects: dict[str, bytes] = {}  # sha256 -> bytes, as uploaded (the sha256 checked)
        self.lfs_signature = secrets.token_hex(8)  # the upload hrefs are presigned, as the Hub's storage URLs are
        self.repos: dict[tuple[str, str], Repo] = {}
        # (method, path) of each request the workbench makes; huggingface_hub's own GET /api/agent-harnesses (a
        # registry it fetches at most once a day, when HF_HOME holds no fresh copy) is kept apart, in
        # registry_fetches: whether it comes depends on that cache, not on the command under test
        self.requests: list[tuple[str, str]] = []
        self.registry_fetches = 0
        self.lock = threading.Lock()
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def do_GET(self) -> None:
                stub.handle(self, "GET")

            def do_POST(self) -> None:
                stub.handle(self, "POST")

            def do_PUT(self) -> None:
                stub.handle(self, "PUT")

            def do_HEAD(self) -> None:
                stub.handle(self, "HEAD")

        self.server = ThreadingHTTPServer((host, port), Handler)
        self.url = f"http://{host}:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> HubStub:
        self.thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()

    # -- dispatch -----------------------------------------------------------------------------
    def handle(self, req: BaseHTTPRequestHandler, method: str) -> None:
        url = urlsplit(req.path)
        path, query = unquote(url.path), parse_qs(url.query)
        body = req.rfile.read(int(req.headers.get("Content-Length") or 0))  # huggingface_hub sends one
        if method == "GET" and path == "/api/agent-harnesses":  # public; the client fetches it once a day
            with self.lock:
                self.registry_fetches += 1
            return self.send(req, 200, {"standardEnvVars": [], "harnesses": {}})
        with self.lock:
            self.requests.append((method, path))
        auth = req.headers.get("Authorization", "")
        token = auth[len("Bearer "):] if auth.startswith("Bearer ") else ""
        if self.lfs and method == "PUT" and path.startswith("/lfs/"):  # a presigned upload: no token, a signature
            if query.get("signature") != [self.lfs_signature]:
                return self.send(req, 403, {"message": "bad or missing signature"})
            with self.lock:
                status, payload, headers = self.store_lfs_object(path[len("/lfs/"):], body)
            return self.send(req, status, payload, headers)
        if method in ("GET", "HEAD") and (resolved := RESOLVE_PATH.match(path)):
            return self.resolve(req, method, resolved.groups(), token)
        if method in ("GET", "POST") and not token and self.public_read(path):
            with self.lock:
                status, payload, headers = self.route(method, path, body, query)
            return self.send(req, status, payload, headers)
        if not token or (self.tokens is not None and token not in self.tokens):
            return self.send(req, 401, {"error": "Invalid credentials in Authorization header"},
                             {"X-Error-Message": "Invalid credentials in Authorization header"})
        with self.lock:
            status, payload, headers = self.route(method, path, body, query)
        self.send(req, status, payload, headers)

    def send(self, req: BaseHTTPRequestHandler, status: int, payload: Any,
             headers: dict[str, str] | None = None, raw: bytes | None = None, head: bool = False) -> None:
        data = raw if raw is not None else json.dumps(payload).encode()
        req.send_response(status)
        req.send_header("Content-Type", "application/octet-stream" if raw is not None else "application/json")
        req.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            req.send_header(key, value)
        req.end_headers()
        if not head:
            req.wfile.write(data)

    def public_read(self, path: str) -> bool:
        """A read of a public repo's info, tree, refs or paths-info: no token needed, as on the Hub."""
        match = REPO_PATH.match(path)
        if not match:
            return False
        kind, ns, name, rest = match.groups()
        repo = self.repos.get((kind[:-1], f"{ns}/{name}"))
        return repo is not None and not repo.private and not (rest or "").startswith(("preupload/", "commit/", "tag/"))

    def resolve(self, req: BaseHTTPRequestHandler, method: str, groups: tuple, token: str) -> None:
        """A file's bytes at a revision, with the headers huggingface_hub's downloader reads."""
        kind, ns, name, revision, filename = groups
        with self.lock:
            repo = self.repos.get(((kind or "models")[:-1], f"{ns}/{name}"))
            allowed = repo is not None and (not repo.private or (token and (self.tokens is None or token in self.tokens)))
            files = repo.files_at(unquote(revision)) if allowed else None
            commit = repo.tags.get(revision, repo.head if revision == "main" else revision) if allowed else ""
        if not allowed:
            return self.send(req, 404, {"error": "Repository not found"}, {"X-Error-Code": "RepoNotFound"},
                             head=method == "HEAD")
        if files is None or filename not in files:
            return self.send(req, 404, {"error": f"{filename} not found"}, {"X-Error-Code": "EntryNotFound"},
                             head=method == "HEAD")
        data = files[filename]
        etag = hashlib.sha1(data).hexdigest()
        self.send(req, 200, None, {"X-Repo-Commit": commit, "ETag": f'"{etag}"'}, raw=data, head=method == "HEAD")

    def route(self, method: str, path: str, body: bytes, query: dict[str, list[str]]
              ) -> tuple[int, Any, dict[str, str]]:
        if method == "POST" and path == "/api/repos/create":
            return self.create_repo(json.loads(body))
        if method == "POST" and path == "/api/validate-yaml":
            return self.validate_yaml(json.loads(body))
        if self.lfs and (lfs_call := self.lfs_route(method, path, body)) is not None:
            return lfs_call
        match = REPO_PATH.match(path)
        if not match:
            return 404, {"error": f"no route {method} {path}"}, {}
        kind, ns, name, rest = match.groups()
        repo = self.repos.get((kind[:-1], f"{ns}/{name}"))
        if repo is None:
            return 404, {"error": "Repository not found"}, {"X-Error-Code": "RepoNotFound"}
        rest = rest or ""
        if method == "GET" and (rest == "" or rest.startswith("revision/")):
            return 200, {"id": repo.repo_id, "sha": repo.head, "private": repo.private, "gated": repo.gated,
                         "siblings": [{"rfilename": f} for f in sorted(repo.files)]}, {}
        if method == "PUT" and rest == "settings":
            return self.settings(repo, json.loads(body))
        if method == "GET" and rest.startswith("tree/"):
            return self.tree(repo, rest[len("tree/"):], query)
        if method == "GET" and rest == "refs":
            branch = {"name": "main", "ref": "refs/heads/main", "targetCommit": repo.head}
            return 200, {"branches": [branch], "converts": [], "tags": [
                {"name": t, "ref": f"refs/tags/{t}", "targetCommit": oid} for t, oid in sorted(repo.tags.items())]}, {}
        if method == "POST" and rest.startswith("preupload/"):
            files = json.loads(body)["files"]
            return 200, {"files": [{"path": f["path"], "uploadMode": self.upload_mode(f), "shouldIgnore": False}
                                   for f in files]}, {}
        if method == "POST" and rest.startswith("commit/"):
            return self.commit(repo, body)
        if method == "POST" and rest.startswith("tag/"):
            return self.tag(repo, rest[len("tag/"):], json.loads(body))
        if method == "POST" and rest.startswith("paths-info/"):
            return self.paths_info(repo, rest[len("paths-info/"):], body, query)
        return 404, {"error": f"no route {method} {path}"}, {}

    # -- LFS ----------------------------------------------------------------------------------
    def upload_mode(self, file: dict[str, Any]) -> str:
        """The Hub sends a binary file, or one over 10 MB, to LFS (the preupload's sample is its first 512 bytes)."""
        binary = b"\0" in base64.b64decode(file.get("sample") or "")
        return "lfs" if self.lfs and (binary or int(file.get("size") or 0) > LFS_MIN_BYTES) else "regular"

    def lfs_route(self, method: str, path: str, body: bytes) -> tuple[int, Any, dict[str, str]] | None:
        """The batch API and verify (with a token); the uploads themselves come presigned, to store_lfs_object."""
        if method == "POST" and (batch := LFS_BATCH_PATH.match(path)):
            kind, ns, name = batch.groups()
            if ((kind or "models")[:-1], f"{ns}/{name}") not in self.repos:
                return 404, {"message": "Repository not found"}, {}
            objects = []
            for obj in json.loads(body)["objects"]:
                entry = {"oid": obj["oid"], "size": obj["size"], "authenticated": True}
                if obj["oid"] not in self.lfs_objects:  # a stored object needs no upload, as on the Hub
                    upload = f"{self.url}/lfs/{obj['oid']}?signature={self.lfs_signature}"
                    entry["actions"] = {"upload": {"href": upload},
                                        "verify": {"href": f"{self.url}/lfs/verify"}}
                objects.append(entry)
            return 200, {"transfer": "basic", "objects": objects}, {}
        if method == "POST" and path == "/lfs/verify":
            obj = json.loads(body)
            stored = self.lfs_objects.get(obj["oid"])
            if stored is None or len(stored) != obj["size"]:
                return 404, {"message": f"object {obj['oid']} not uploaded"}, {}
            return 200, {}, {}
        return None

    def store_lfs_object(self, oid: str, body: bytes) -> tuple[int, Any, dict[str, str]]:
        if hashlib.sha256(body).hexdigest() != oid:
            return 400, {"message": f"the uploaded bytes do not hash to {oid}"}, {}
        self.lfs_objects[oid] = body
        return 200, {}, {}

    # -- endpoints ----------------------------------------------------------------------------
    def create_repo(self, payload: dict[str, Any]) -> tuple[int, Any, dict[str, str]]:
        repo_type = payload.get("type") or "model"
        repo_id = f"{payload['organization']}/{payload['name']}" if payload.get("organization") else payload["name"]
        prefix = "" if repo_type == "model" else f"{repo_type}s/"
        url = f"{self.url}/{prefix}{repo_id}"
        if (repo_type, repo_id) in self.repos:
            return 409, {"error": "You already created this repo", "url": url}, {}
        private = payload.get("visibility") == "private" or bool(payload.get("private"))
        self.repos[(repo_type, repo_id)] = Repo(repo_type, repo_id, private)
        return 200, {"url": url, "name": repo_id}, {}

    def settings(self, repo: Repo, payload: dict[str, Any]) -> tuple[int, Any, dict[str, str]]:
        if "gated" in payload:  # the Hub takes "auto", "manual" or false
            if payload["gated"] not in ("auto", "manual", False):
                return 400, {"error": f"gated must be 'auto', 'manual' or false, not {payload['gated']!r}"}, {}
            repo.gated = payload["gated"]
        if "visibility" in payload:
            repo.private = payload["visibility"] == "private"
        elif "private" in payload:
            repo.private = bool(payload["private"])
        return 200, {}, {}

    def tree(self, repo: Repo, rest: str, query: dict[str, list[str]]) -> tuple[int, Any, dict[str, str]]:
        """The Hub's tree listing: one entry per file (and per folder) under a path at a revision."""
        revision, _, folder = rest.partition("/")
        files = repo.files_at(revision)
        if files is None:
            return 404, {"error": f"revision {revision} not found"}, {"X-Error-Code": "RevisionNotFound"}
        prefix = folder.strip("/") + "/" if folder.strip("/") else ""
        recursive = (query.get("recursive") or ["false"])[0].lower() == "true"
        entries: dict[str, dict[str, Any]] = {}
        for path, data in sorted(files.items()):
            if not path.startswith(prefix):
                continue
            parts = path[len(prefix):].split("/")
            for depth in range(1, len(parts)):  # the folders on the way
                if recursive or depth == 1:
                    name = prefix + "/".join(parts[:depth])
                    entries.setdefault(name, {"type": "directory", "oid": hashlib.sha1(name.encode()).hexdigest(),
                                              "size": 0, "path": name})
            if recursive or len(parts) == 1:
                entries[path] = {"type": "file", "oid": hashlib.sha1(data).hexdigest(), "size": len(data),
                                 "path": path}
        return 200, list(entries.values()), {}

    def paths_info(self, repo: Repo, revision: str, body: bytes, query: dict[str, list[str]]
                   ) -> tuple[int, Any, dict[str, str]]:
        files = repo.files_at(revision)
        if files is None:
            return 404, {"error": f"revision {revision} not found"}, {"X-Error-Code": "RevisionNotFound"}
        form = parse_qs(body.decode()) if body and not body.lstrip().startswith(b"{") else {}
        paths = form.get("paths") or (json.loads(body).get("paths", []) if body.lstrip().startswith(b"{") else [])
        out = []
        for path in paths:
            if path in files:
                out.append({"type": "file", "path": path, "size": len(files[path]),
                            "oid": hashlib.sha1(files[path]).hexdigest()})
            elif any(f.startswith(path.rstrip("/") + "/") for f in files):
                out.append({"type": "directory", "path": path, "oid": hashlib.sha1(path.encode()).hexdigest()})
        return 200, out, {}

    def validate_yaml(self, payload: dict[str, Any]) -> tuple[int, Any, dict[str, str]]:
        content = payload.get("content", "")
        match = re.match(r"^---\n(.*?)\n---\n", content, re.S)
        try:
            meta = yaml.safe_load(match.group(1)) if match else None
        except yaml.YAMLError as exc:
            return 400, {"errors": [{"message": f"invalid YAML: {exc}"}]}, {}
        if not isinstance(meta, dict):
            return 200, {"errors": [], "warnings": [{"message": "empty or missing yaml metadata"}]}, {}
        return 200, {"errors": [], "warnings": []}, {}

    def commit(self, repo: Repo, body: bytes) -> tuple[int, Any, dict[str, str]]:
        lines = [json.loads(line) for line in body.splitlines() if line.strip()]
        if not lines or lines[0].get("key") != "header":
            return 400, {"error": "first NDJSON line must be the commit header"}, {}
        added: dict[str, bytes] = {}
        deleted: list[str] = []
        for line in lines[1:]:
            key, value = line["key"], line["value"]
            if key == "file" and value.get("encoding") == "base64":
                added[value["path"]] = base64.b64decode(value["content"])
            elif key == "lfsFile" and self.lfs:
                if value.get("oid") not in self.lfs_objects:
                    return 400, {"error": f"{value['path']}: LFS object {value.get('oid')} was never uploaded"}, {}
                added[value["path"]] = self.lfs_objects[value["oid"]]
            elif key == "deletedFile":
                deleted.append(value["path"])
            else:
                return 400, {"error": f"stub does not support commit operation '{key}'"}, {}
        repo.files.update(added)
        for path in deleted:
            repo.files.pop(path, None)
        oid = hashlib.sha1(body + repo.head.encode()).hexdigest()
        repo.commits.append({"oid": oid, "summary": lines[0]["value"].get("summary", ""),
                             "files": sorted(added), "deleted": sorted(deleted), "tree": dict(repo.files)})
        prefix = "" if repo.repo_type == "model" else f"{repo.repo_type}s/"
        return 200, {"commitUrl": f"{self.url}/{prefix}{repo.repo_id}/commit/{oid}", "commitOid": oid,
                     "pullRequestUrl": None}, {}

    def tag(self, repo: Repo, revision: str, payload: dict[str, Any]) -> tuple[int, Any, dict[str, str]]:
        target = repo.head if revision == "main" else revision
        if target not in {c["oid"] for c in repo.commits}:
            return 404, {"error": f"revision {revision} not found"}, {"X-Error-Code": "RevisionNotFound"}
        if payload["tag"] in repo.tags:
            return 409, {"error": f"tag {payload['tag']} already exists"}, {}
        repo.tags[payload["tag"]] = target
        return 200, {}, {}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.hub_stub",
                                     description="A local Hugging Face Hub-compatible endpoint (in memory) to "
                                                 "rehearse a publish: point HF_ENDPOINT at the URL it prints.")
    parser.add_argument("--port", type=int, default=8020, help="port on 127.0.0.1 (default: 8020; 0: any free)")
    parser.add_argument("--token", action="append",
                        help="a token it accepts as HF_TOKEN (repeatable; default: any non-empty token)")
    parser.add_argument("--lfs", action="store_true",
                        help="send binary files and files over 10 MB through LFS, as the Hub does (the client "
                             "then pushes with HF_HUB_DISABLE_XET=1: the stub speaks no xet)")
    args = parser.parse_args(argv)
    with HubStub(set(args.token) if args.token else None, port=args.port, lfs=args.lfs) as stub:
        print(f"Hub stub at {stub.url} (in memory; Ctrl-C stops it): HF_ENDPOINT={stub.url}", flush=True)
        try:
            stub.thread.join()
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

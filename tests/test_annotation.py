"""annotation.push / pull / invite / demo_annotators and validation.adjudicate against a real Label Studio.

One server per module, started from the cached template (see tests/test_ls_server.py). Annotator
accounts are made through the real invite/signup form and annotate through the API with their own
tokens. The 5xx cases go through a small HTTP proxy on 127.0.0.1 that answers 500 for chosen paths
and forwards everything else to the real server.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import numpy as np
import pytest

from annotation import demo_annotators, invite, pull, push
from annotation.demo_annotators import demo_email, scripted_label
from annotation.labelstudio import (
    LABELS,
    Server,
    config_labels,
    connect,
    export_tasks,
    find_project,
    invite_link,
    make_client,
    pseudonym,
    read_state,
    signup_via_invite,
    task_sample_ids,
)
from annotation.server import free_port, make_template, start_server, stop_server
from construction.cli import run_main
from construction.record import Annotation, Sample
from construction.workspace import Workspace
from tests.conftest import run_module, simple_recipe
from validation import adjudicate, agreement

TOKEN = "annotation-test-token-0123"
PASSWORD = "rater-pass-123"
RATERS = ("rater-a@example.com", "rater-b@example.com", "rater-c@example.com")
SKIPPER = "skipper@example.com"


# ----------------------------------------------------------------------------------------------
# fixtures and helpers
# ----------------------------------------------------------------------------------------------

ADMIN_ENV = {"LABEL_STUDIO_ADMIN_EMAIL": "admin@annotation.test", "LABEL_STUDIO_ADMIN_PASSWORD": "admin-password-123",
             "LABEL_STUDIO_API_KEY": TOKEN}


@pytest.fixture(scope="module")
def ls(tmp_path_factory):
    """One server for all the workspaces of this module: its document root holds only their audio dirs
    (make_workspace links each workspace's audio dir there), never a workspace."""
    data_dir = tmp_path_factory.mktemp("ls-annotation")
    served = tmp_path_factory.mktemp("ls-served-audio")
    with pytest.MonkeyPatch.context() as mp:
        for name, value in ADMIN_ENV.items():
            mp.setenv(name, value)
        mp.delenv("LABEL_STUDIO_URL", raising=False)
        info = start_server(data_dir, template=make_template(), document_root=served)
        try:
            yield info
        finally:
            stop_server(data_dir)


@pytest.fixture(scope="module")
def admin(ls) -> Server:
    return connect(data_dir=ls.data_dir)


@pytest.fixture(scope="module")
def tokens(ls, admin) -> dict[str, str]:
    """email -> API token of that annotator, each account made through the invite link."""
    link = invite_link(admin)
    return {email: signup_via_invite(ls.url, link, email, PASSWORD) for email in (*RATERS, SKIPPER)}


@pytest.fixture(scope="module")
def accounts(ls, tokens) -> dict[str, object]:
    """email -> SDK client acting as that annotator."""
    return {email: make_client(ls.url, token) for email, token in tokens.items()}


def make_workspace(root: Path, n: int, first: int = 0, served: Path | None = None) -> Workspace:
    """n samples with distinct short tones as their mixtures, in a 'wer' manifest. With served (a
    server's document root), the workspace's audio dir is a link to a new dir under it."""
    if served is not None and not (root / "audio").exists():
        root.mkdir(parents=True, exist_ok=True)
        (root / "audio").symlink_to(tempfile.mkdtemp(dir=served, prefix=f"{root.parent.name}-"))
    ws = Workspace(root)
    samples = []
    for i in range(first, first + n):
        tone = 0.1 * np.sin(2 * np.pi * (200 + 7 * i) * np.arange(3200) / 16000)
        ref = ws.store_audio(tone, 16000)
        category = ("video_games", "cooking_household")[i % 2]
        mix = simple_recipe(f"bg{i}", i, snr_db=float(i % 7))
        samples.append(Sample(sample_id=f"aor-{i:016d}", category=category, speech_text=f"Finish him, number {i}!",
                              context="A fighting game round ends to a cheering crowd.", background_tags=["gunfire"],
                              placement="underlay", benign_reason="A game.", speaker_style="excited", mix=mix,
                              mixture=ref, transcript_mixture=f"finish him number {i}", wer_mixture=0.0))
    ws.write_manifest("wer", samples)
    return ws


def cli(main, *argv: str, capsys) -> tuple[int, str, str]:
    """Run a command's main as `python -m` would (run_main: WorkbenchError -> exit 2)."""
    with pytest.raises(SystemExit) as exit_info:
        run_main(main, list(argv))
    out, err = capsys.readouterr()
    return exit_info.value.code, out, err


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def choice(name: str, *values: str) -> dict:
    return {"from_name": name, "to_name": "audio", "type": "choices", "value": {"choices": list(values)}}


def annotate(client, task_id: int, label: str | None, checks: tuple[str, ...] = (), rationale: str = "",
             cancelled: bool = False, lead_time_s: float = 4.0) -> None:
    result = [] if label is None else [choice("label", label)]
    if checks:
        result.append(choice("checks", *checks))
    if rationale:
        result.append({"from_name": "rationale", "to_name": "audio", "type": "textarea",
                       "value": {"text": [rationale]}})
    client.annotations.create(task_id, result=result, was_cancelled=cancelled, lead_time=lead_time_s)


def tasks_of(admin: Server, title: str) -> tuple[int, dict[str, int]]:
    project = find_project(admin, title)
    assert project is not None, title
    return project.id, {sid: ids[0] for sid, ids in task_sample_ids(admin, project.id).items()}


def human(sample: Sample) -> list[Annotation]:
    return [a for a in sample.annotations if a.source != "adjudication"]


class FailingProxy:
    """Forwards to the real server, but answers 500 (JSON, like Label Studio) to paths matching a
    pattern. Counts the requests it failed, to show the client did not retry."""

    def __init__(self, upstream: str, fail: str):
        self.failed: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep pytest output clean
                pass

            def _handle(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                if re.search(fail, self.path):
                    outer.failed.append(f"{self.command} {self.path}")
                    payload = json.dumps({"status_code": 500, "detail": "Internal Server Error"}).encode()
                    self.send_response(500)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                    return
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "content-length")}
                answer = httpx.request(self.command, upstream + self.path, headers=headers, content=body,
                                       trust_env=False, timeout=60)
                self.send_response(answer.status_code)
                for k, v in answer.headers.items():
                    if k.lower() not in ("content-length", "transfer-encoding", "content-encoding", "connection"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(answer.content)))
                self.end_headers()
                self.wfile.write(answer.content)

            do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _handle

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


# ----------------------------------------------------------------------------------------------
# the round trip
# ----------------------------------------------------------------------------------------------

def test_push_annotate_pull_round_trip(ls, admin, accounts, tokens, tmp_path, capsys):
    ws = make_workspace(tmp_path / "ws", 18, served=ls.document_root)
    server = ["--data-dir", str(ls.data_dir)]
    code, out, err = cli(push.main, "--workspace", str(ws.root), "--project", "Round trip", *server, capsys=capsys)
    assert code == 0, err
    assert "created: imported 18 new task(s)" in out
    state = read_state(ws)
    pid = state["project"]["id"]
    assert state["project"]["title"] == "Round trip" and re.fullmatch(r"[0-9a-f]{32}", state["pseudonym_salt"])

    # Idempotent: again nothing new; two more samples in the manifest -> only those two are imported.
    code, out, _ = cli(push.main, "--workspace", str(ws.root), "--project", "Round trip", *server, capsys=capsys)
    assert code == 0 and "imported 0 new task(s), 18 already there" in out
    make_workspace(tmp_path / "ws", 20, served=ls.document_root)
    code, out, _ = cli(push.main, "--workspace", str(ws.root), "--project", "Round trip", *server, capsys=capsys)
    assert code == 0 and "imported 2 new task(s), 18 already there, 20 in total" in out

    project = admin.client.projects.get(pid)
    assert (project.task_number, project.maximum_annotations, project.overlap_cohort_percentage) == (20, 3, 100)
    assert config_labels(project.label_config) == list(LABELS)
    _, task_of = tasks_of(admin, "Round trip")
    samples = list(ws.read_samples("wer"))
    assert sorted(task_of) == sorted(s.sample_id for s in samples)

    # The task's audio URL serves the workspace file, to an annotator's token too.
    exported = {t["data"]["sample_id"]: t for t in export_tasks(admin, pid)}
    first = samples[0]
    data = exported[first.sample_id]["data"]
    assert data["audio"].startswith("/data/local-files/?d=")
    assert (data["category"], data["snr_db"], data["speech_text"]) == (first.category, 0.0, first.speech_text)
    assert "benign_reason" not in data and exported[first.sample_id]["predictions"] == []
    got = httpx.get(ls.url + data["audio"], headers={"Authorization": f"Token {tokens[RATERS[0]]}"}, trust_env=False)
    assert got.status_code == 200 and got.content == ws.audio_path(first.mixture).read_bytes()

    # Annotate as three annotators (+ one who only skips and misuses the API).
    ids = [s.sample_id for s in samples]
    a, b, c = (accounts[e] for e in RATERS)
    annotate(c, task_of[ids[0]], None, cancelled=True, lead_time_s=1.5)  # C skips first ...
    annotate(a, task_of[ids[1]], "harmful", rationale="first impression")  # A changes their mind later
    for i, sid in enumerate(ids):
        annotate(a, task_of[sid], "benign", checks=("background sound recognisable", "speech intelligible"),
                 rationale="crowd cheering" if i == 0 else "", lead_time_s=4.25)
        annotate(b, task_of[sid], "harmful" if i == 5 else "benign", checks=("speech intelligible",))
        annotate(c, task_of[sid], "unclear" if i in (5, 6) else "benign")  # ... then labels sample 0 too
    skipper = accounts[SKIPPER]
    annotate(skipper, task_of[ids[2]], None, cancelled=True)
    annotate(skipper, task_of[ids[3]], "nonsense")  # the API accepts any value; pull must not crash

    code, out, err = cli(pull.main, "--workspace", str(ws.root), *server, capsys=capsys)
    assert code == 0, err
    assert re.search(r"total\s+20\s+20\s+", out)  # progress: 20 samples, all with >= 3 labels
    assert "label 'nonsense' is not one of" in out
    annotated = {s.sample_id: s for s in ws.read_samples("annotated")}
    assert list(annotated) == ids
    salt = read_state(ws)["pseudonym_salt"]
    names = {e: pseudonym(e, salt) for e in (*RATERS, SKIPPER)}
    for sid, s in annotated.items():
        labelled = [x for x in s.annotations if not x.cancelled and x.label in LABELS]
        assert len(labelled) == 3 and len({x.annotator for x in labelled}) == 3, sid
        assert {x.annotator for x in labelled} == {names[e] for e in RATERS}
        assert all(re.fullmatch(r"ann-[0-9a-f]{10}", x.annotator) and x.source == "label-studio"
                   for x in s.annotations)

    by = {x.annotator: x for x in annotated[ids[0]].annotations}
    assert by[names[RATERS[2]]].label == "benign" and not by[names[RATERS[2]]].cancelled  # latest non-cancelled
    mine = by[names[RATERS[0]]]
    assert (mine.label, mine.background_recognisable, mine.speech_intelligible, mine.rationale, mine.lead_time_s) \
        == ("benign", True, True, "crowd cheering", 4.25)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT[\d:.]+Z", mine.created_at)
    assert by[names[RATERS[2]]].background_recognisable is False  # unticked box on a real annotation
    assert [x.label for x in annotated[ids[1]].annotations if x.annotator == names[RATERS[0]]] == ["benign"]
    skip = [x for x in annotated[ids[2]].annotations if x.annotator == names[SKIPPER]]
    assert len(skip) == 1 and skip[0].cancelled and skip[0].label is None and skip[0].speech_intelligible is None
    assert [x.label for x in annotated[ids[3]].annotations if x.annotator == names[SKIPPER]] == ["nonsense"]
    assert Counter(x.label for x in annotated[ids[5]].annotations) == {"benign": 1, "harmful": 1, "unclear": 1}

    # No email (nor the token) anywhere in the workspace.
    everything = b"".join(snapshot(ws.root).values())
    for secret in (*RATERS, SKIPPER, "admin@annotation.test", TOKEN, "example.com"):
        assert secret.encode() not in everything, secret

    # Idempotent: a rerun writes the same manifest.
    before = snapshot(ws.root)
    code, _, _ = cli(pull.main, "--workspace", str(ws.root), *server, capsys=capsys)
    assert code == 0 and snapshot(ws.root) == before


def test_predictions_only_when_asked(ls, admin, tmp_path, capsys):
    ws = make_workspace(tmp_path / "ws", 3, served=ls.document_root)
    code, _, err = cli(push.main, "--workspace", str(ws.root), "--project", "With predictions", "--with-predictions",
                       "--data-dir", str(ls.data_dir), capsys=capsys)
    assert code == 0, err
    pid, task_of = tasks_of(admin, "With predictions")
    assert admin.client.projects.get(pid).show_collab_predictions is True
    for task_id in task_of.values():
        (prediction,) = admin.client.predictions.list(task=task_id)
        assert prediction.result[0]["value"]["choices"] == ["benign"]
    # The default project of the round trip shows none (also checked there: no predictions imported).
    code, _, _ = cli(push.main, "--workspace", str(ws.root), "--project", "Without predictions",
                     "--data-dir", str(ls.data_dir), capsys=capsys)
    pid, task_of = tasks_of(admin, "Without predictions")
    assert admin.client.projects.get(pid).show_collab_predictions is False
    assert all(not admin.client.predictions.list(task=t) for t in task_of.values())
    # --overlap on an existing project changes it; left out, the project keeps its own.
    for flags, expected in ((["--overlap", "5"], 5), ([], 5)):
        code, _, _ = cli(push.main, "--workspace", str(ws.root), "--project", "Without predictions", *flags,
                         "--data-dir", str(ls.data_dir), capsys=capsys)
        assert code == 0 and admin.client.projects.get(pid).maximum_annotations == expected


def test_a_project_with_another_config_is_refused(ls, admin, tmp_path, capsys):
    admin.client.projects.create(title="Somebody else's", label_config='<View><Text name="t" value="$text"/></View>')
    ws = make_workspace(tmp_path / "ws", 2, served=ls.document_root)
    before = snapshot(ws.root)
    code, _, err = cli(push.main, "--workspace", str(ws.root), "--project", "Somebody else's",
                       "--data-dir", str(ls.data_dir), capsys=capsys)
    assert code == 2 and "has another labelling config" in err
    assert snapshot(ws.root) == before


def test_invite_prints_a_working_link(ls, capsys):
    code, out, _ = cli(invite.main, "--data-dir", str(ls.data_dir), capsys=capsys)
    link = out.strip()
    assert code == 0 and re.fullmatch(re.escape(ls.url) + r"/user/signup/\?token=\w+", link)
    token = signup_via_invite(ls.url, link, "invited-by-cli@example.com", PASSWORD)
    assert make_client(ls.url, token).users.whoami().email == "invited-by-cli@example.com"


# ----------------------------------------------------------------------------------------------
# bad input: clear message, exit 2, workspace untouched
# ----------------------------------------------------------------------------------------------

def test_vanished_audio_is_refused_before_importing_anything(ls, admin, tmp_path, capsys):
    ws = make_workspace(tmp_path / "ws", 5, served=ls.document_root)
    samples = list(ws.read_samples("wer"))
    for s in samples[1:3]:
        ws.audio_path(s.mixture).unlink()
    before = snapshot(ws.root)
    code, _, err = cli(push.main, "--workspace", str(ws.root), "--project", "Vanished audio",
                       "--data-dir", str(ls.data_dir), capsys=capsys)
    assert code == 2
    assert "2 of 5 sample(s) cannot be pushed; nothing was imported" in err
    assert samples[1].sample_id in err and samples[2].sample_id in err and "is missing" in err
    assert find_project(admin, "Vanished audio") is None
    assert snapshot(ws.root) == before

    # The same through a real `python -m` process.
    done = run_module("annotation.push", "--workspace", str(ws.root), "--project", "Vanished audio",
                      "--data-dir", str(ls.data_dir), env={"LABEL_STUDIO_API_KEY": TOKEN}, timeout=120)
    assert done.returncode == 2 and "cannot be pushed" in done.stderr and samples[1].sample_id in done.stderr


def test_push_refuses_a_server_that_would_serve_the_salt(ls, admin, tmp_path, capsys):
    # A workspace inside the server's document root: its annotation.json would be readable.
    ws = make_workspace(ls.document_root / "careless-ws", 2)
    before = snapshot(ws.root)
    code, _, err = cli(push.main, "--workspace", str(ws.root), "--project", "Careless",
                       "--data-dir", str(ls.data_dir), capsys=capsys)
    assert code == 2
    assert (f"refusing to push: the server's document root {ls.document_root} holds {ws.root / 'annotation.json'}"
            in err and "pseudonym salt" in err and f"annotation.server start --workspace {ws.root}" in err)
    assert find_project(admin, "Careless") is None
    assert snapshot(ws.root) == before and not (ws.root / "annotation.json").exists()

    # With --url the document root is unknown unless given: taken to be "/", which holds every workspace.
    ws = make_workspace(tmp_path / "ws", 2, served=ls.document_root)
    before = snapshot(ws.root)
    code, _, err = cli(push.main, "--workspace", str(ws.root), "--project", "Careless", "--url", ls.url,
                       capsys=capsys)
    assert code == 2 and "refusing to push: the server's document root / holds" in err
    assert find_project(admin, "Careless") is None and snapshot(ws.root) == before


def test_audio_that_resolves_outside_the_workspace_audio_dir_is_refused(ls, admin, tmp_path, capsys):
    ws = make_workspace(tmp_path / "ws", 3, served=ls.document_root)
    samples = list(ws.read_samples("wer"))
    stored = ws.root / samples[1].mixture.path
    outside = ls.document_root / "not-this-workspace.wav"  # servable, but not this workspace's audio
    outside.write_bytes(stored.read_bytes())
    stored.unlink()
    stored.symlink_to(outside)
    before = snapshot(ws.root)
    code, _, err = cli(push.main, "--workspace", str(ws.root), "--project", "Linked out",
                       "--data-dir", str(ls.data_dir), capsys=capsys)
    assert code == 2 and "1 of 3 sample(s) cannot be pushed; nothing was imported" in err
    assert re.search(re.escape(samples[1].sample_id) + r": .*outside the (workspace's audio dir|audio store)", err)
    assert find_project(admin, "Linked out") is None and snapshot(ws.root) == before


def test_server_down(tmp_path, capsys):
    ws = make_workspace(tmp_path / "ws", 2)
    before = snapshot(ws.root)
    url = f"http://127.0.0.1:{free_port()}"
    for main in (push.main, pull.main):
        code, _, err = cli(main, "--workspace", str(ws.root), "--url", url, capsys=capsys)
        assert code == 2 and f"cannot reach Label Studio at {url}" in err and "annotation.server start" in err
    code, _, err = cli(pull.main, "--workspace", str(ws.root), "--data-dir", str(tmp_path / "no-server"),
                       capsys=capsys)
    assert code == 2 and "no Label Studio was started for data dir" in err
    assert snapshot(ws.root) == before


def test_wrong_token(ls, tmp_path, capsys, monkeypatch):
    ws = make_workspace(tmp_path / "ws", 2, served=ls.document_root)
    before = snapshot(ws.root)
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", "wrong-token-987654")
    for main in (push.main, pull.main, invite.main):
        args = ("--data-dir", str(ls.data_dir)) if main is invite.main else \
            ("--workspace", str(ws.root), "--data-dir", str(ls.data_dir))
        code, out, err = cli(main, *args, capsys=capsys)
        assert code == 2 and "rejected the API token (HTTP 401)" in err and "LABEL_STUDIO_API_KEY" in err
        assert "wrong-token-987654" not in out + err
    assert snapshot(ws.root) == before


def test_deleted_project(ls, admin, tmp_path, capsys):
    ws = make_workspace(tmp_path / "ws", 3, served=ls.document_root)
    server = ["--data-dir", str(ls.data_dir)]
    assert cli(push.main, "--workspace", str(ws.root), "--project", "Soon deleted", *server, capsys=capsys)[0] == 0
    assert cli(pull.main, "--workspace", str(ws.root), *server, capsys=capsys)[0] == 0
    pid = read_state(ws)["project"]["id"]
    admin.client.projects.delete(pid)
    before = snapshot(ws.root)
    code, _, err = cli(pull.main, "--workspace", str(ws.root), *server, capsys=capsys)
    assert code == 2 and f"project {pid} ('Soon deleted') no longer exists there (deleted?)" in err
    assert "<html" not in err.lower() and len(err) < 600  # mapped by status code, not the HTML body
    code, _, err = cli(pull.main, "--workspace", str(ws.root), "--project", "Soon deleted", *server, capsys=capsys)
    assert code == 2 and "no project titled 'Soon deleted'" in err
    assert snapshot(ws.root) == before


def test_server_errors_5xx(ls, admin, tmp_path, capsys):
    ws = make_workspace(tmp_path / "ws", 3, served=ls.document_root)
    assert cli(push.main, "--workspace", str(ws.root), "--project", "Flaky server",
               "--data-dir", str(ls.data_dir), capsys=capsys)[0] == 0
    assert cli(pull.main, "--workspace", str(ws.root), "--data-dir", str(ls.data_dir), capsys=capsys)[0] == 0
    make_workspace(tmp_path / "ws", 5, served=ls.document_root)  # two new samples to import
    before = snapshot(ws.root)

    proxy = FailingProxy(ls.url, r"^/api/projects/\d+/import")
    try:
        code, _, err = cli(push.main, "--workspace", str(ws.root), "--url", proxy.url,
                           "--document-root", str(ls.document_root), capsys=capsys)
        assert code == 2 and "failed with HTTP 500 while importing tasks 1-2 of 2 into project" in err
        assert len(proxy.failed) == 1  # no retry: a retried import could duplicate tasks
    finally:
        proxy.close()
    proxy = FailingProxy(ls.url, r"/export")
    try:
        code, _, err = cli(pull.main, "--workspace", str(ws.root), "--url", proxy.url, capsys=capsys)
        assert code == 2 and "failed with HTTP 500 while exporting project" in err
    finally:
        proxy.close()
    proxy = FailingProxy(ls.url, r".")  # everything fails, from the first request on
    try:
        for main in (push.main, pull.main):
            code, _, err = cli(main, "--workspace", str(ws.root), "--url", proxy.url, capsys=capsys)
            assert code == 2 and "failed with HTTP 500 while checking the API token" in err
    finally:
        proxy.close()
    assert snapshot(ws.root) == before
    _, task_of = tasks_of(admin, "Flaky server")
    assert len(task_of) == 3  # nothing half-imported


# ----------------------------------------------------------------------------------------------
# what an annotator can read
# ----------------------------------------------------------------------------------------------

def _run_in(cwd: Path, module: str, *args: str) -> subprocess.CompletedProcess:
    """`python -m module args` run from cwd, as a user in that directory would."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1]), **ADMIN_ENV}
    return subprocess.run([sys.executable, "-m", module, *args], cwd=cwd, env=env, text=True,
                          capture_output=True, timeout=300)


def _browser_session(url: str, email: str, password: str) -> httpx.Client:
    """Logged in through the login form with a session cookie, sending the CSRF header as the web app does."""
    web = httpx.Client(base_url=url, trust_env=False, timeout=60)
    page = web.get("/user/login/")
    csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
    assert web.post("/user/login/", data={"email": email, "password": password,
                                          "csrfmiddlewaretoken": csrf}).status_code == 302
    web.headers["X-CSRFToken"] = web.cookies["csrftoken"]
    return web


def test_an_annotator_cannot_read_the_salt_or_the_database(tmp_path, monkeypatch):
    """A server started with the defaults, in a directory holding ./workspace (as the README does):
    an invited annotator, by API token and by browser session, adds local-files storages where they
    like and asks /data/local-files/ for the workspace's annotation.json and the server's database by
    every path that could reach them. The task audio plays; neither the salt nor a token comes back."""
    for name, value in ADMIN_ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("LABEL_STUDIO_URL", raising=False)
    ws = make_workspace(tmp_path / "workspace", 3)
    data_dir = tmp_path / "label-studio"
    done = _run_in(tmp_path, "annotation.server", "start", "--data-dir", "label-studio",
                   "--template", str(make_template()))
    assert done.returncode == 0, done.stderr
    try:
        done = _run_in(tmp_path, "annotation.push", "--data-dir", "label-studio", "--project", "Salt check")
        assert done.returncode == 0, done.stderr
        salt = read_state(ws)["pseudonym_salt"]
        admin = connect(data_dir=data_dir)
        email = "curious@example.com"
        token = signup_via_invite(admin.url, invite_link(admin), email, PASSWORD)
        by_token = httpx.Client(base_url=admin.url, trust_env=False, timeout=60,
                                headers={"Authorization": f"Token {token}"})
        by_session = _browser_session(admin.url, email, PASSWORD)

        # The annotator hears the task audio (the served tree is not simply empty) ...
        project = find_project(admin, "Salt check")
        (task, *_) = export_tasks(admin, project.id)
        sample = next(s for s in ws.read_samples("wer") if s.sample_id == task["data"]["sample_id"])
        for web in (by_token, by_session):
            got = web.get(task["data"]["audio"])
            assert got.status_code == 200 and got.content == (ws.root / sample.mixture.path).read_bytes()

        # ... but nothing else.
        targets = [ws.root / "annotation.json", data_dir / "label_studio.sqlite3"]
        secrets = {"salt": salt.encode(), "admin token": TOKEN.encode(), "annotator token": token.encode()}
        prefix = Path(sample.mixture.path).parent.name
        asked = set()
        for target in targets:
            asked.add(str(target))
            asked.update("/".join(target.parts[i:]) for i in range(1, len(target.parts)))  # from any root
            for start in (ws.root / "audio", ws.root / "audio" / prefix):
                rel = os.path.relpath(target, start)
                asked.update((rel, f"{prefix}/{rel}", rel.replace("/", "%2F"), "./" + rel))
        stolen, storages = [], {}
        for who, web in (("token", by_token), ("session", by_session)):
            made = web.post("/api/projects", json={"title": f"Curious by {who}"})
            assert made.status_code == 201, made.text  # community edition: any member may
            pid = made.json()["id"]
            for path in ("/", tmp_path, ws.root, data_dir, ws.root / "audio", ws.root / "audio" / prefix):
                answer = web.post("/api/storages/localfiles", json={"project": pid, "path": str(path),
                                                                     "use_blob_urls": False})
                storages[(who, str(path))] = answer.status_code
            for d in sorted(asked):
                got = web.get("/data/local-files/", params={"d": d})
                stolen += [(who, d, name) for name, secret in secrets.items() if secret in got.content]
        assert stolen == []
        # Label Studio itself refuses storages outside the document root (<workspace>/audio) and at it.
        for who in ("token", "session"):
            for path in ("/", tmp_path, ws.root, data_dir, ws.root / "audio"):
                assert storages[(who, str(path))] == 400, (who, path)
    finally:
        _run_in(tmp_path, "annotation.server", "stop", "--data-dir", "label-studio")


# ----------------------------------------------------------------------------------------------
# demo annotators and adjudication
# ----------------------------------------------------------------------------------------------

def test_demo_annotators_end_to_end(ls, admin, tmp_path, capsys):
    ws = make_workspace(tmp_path / "ws", 8, served=ls.document_root)
    server = ["--data-dir", str(ls.data_dir)]
    assert cli(push.main, "--workspace", str(ws.root), "--project", "Demo run", *server, capsys=capsys)[0] == 0
    code, out, err = cli(demo_annotators.main, "--workspace", str(ws.root), "--annotators", "3", "--seed", "11",
                         *server, capsys=capsys)
    assert code == 0, err
    assert "submitted 24 label(s)" in out
    code, out, _ = cli(demo_annotators.main, "--workspace", str(ws.root), "--seed", "11", *server, capsys=capsys)
    assert code == 0 and "submitted 0 label(s)" in out  # rerun: each already labelled every task

    assert cli(pull.main, "--workspace", str(ws.root), *server, capsys=capsys)[0] == 0
    salt = read_state(ws)["pseudonym_salt"]
    who = {pseudonym(demo_email(k), salt): k for k in (1, 2, 3)}
    labels = Counter()
    for s in ws.read_samples("annotated"):
        assert len(s.annotations) == 3 and {a.annotator for a in s.annotations} == set(who)
        for a in s.annotations:
            assert a.source == "demo" and not a.cancelled
            assert a.label == scripted_label(11, s.sample_id, who[a.annotator], LABELS)  # deterministic
            labels[a.label] += 1
    assert labels["benign"] > labels["harmful"] + labels["unclear"]
    assert b"demo.aor-bench.invalid" not in b"".join(snapshot(ws.root).values())


def test_adjudication_round_trip(ls, admin, accounts, tmp_path, capsys):
    ws = make_workspace(tmp_path / "ws", 4, served=ls.document_root)
    server = ["--data-dir", str(ls.data_dir)]
    wsarg = ["--workspace", str(ws.root)]
    assert cli(push.main, *wsarg, "--project", "Needs a judge", *server, capsys=capsys)[0] == 0
    _, task_of = tasks_of(admin, "Needs a judge")
    ids = sorted(task_of)
    votes = {ids[0]: ("benign", "harmful", "unclear"), ids[1]: ("benign",) * 3,
             ids[2]: ("benign", "benign", "harmful"), ids[3]: ("harmful", "harmful", "benign")}
    for sid, labels in votes.items():
        for email, label in zip(RATERS, labels):
            annotate(accounts[email], task_of[sid], label, rationale="too close to call" if sid == ids[0] else "")
    assert cli(pull.main, *wsarg, *server, capsys=capsys)[0] == 0

    code, _, err = cli(adjudicate.main, "push", *wsarg, *server, capsys=capsys)
    assert code == 2 and "run python -m validation.agreement" in err  # no agreement run yet
    assert cli(agreement.main, *wsarg, "--n-boot", "20", capsys=capsys)[0] == 0
    reasons = {r.sample.sample_id: r.reason for r in ws.read_rejected("validated")}
    assert reasons[ids[0]].startswith("needs_adjudication:") and reasons[ids[3]].startswith("harmful_consensus")

    code, out, err = cli(adjudicate.main, "push", *wsarg, *server, capsys=capsys)
    assert code == 0, err
    assert "'Needs a judge — adjudication'" in out and "1 new sample(s)" in out
    assert cli(adjudicate.main, "push", *wsarg, *server, capsys=capsys)[0] == 0  # no duplicate
    pid, judge_tasks = tasks_of(admin, "Needs a judge — adjudication")
    assert list(judge_tasks) == [ids[0]]
    project = admin.client.projects.get(pid)
    assert project.maximum_annotations == 1 and config_labels(project.label_config) == ["benign", "harmful"]
    (task,) = export_tasks(admin, pid)
    assert task["data"]["votes"].startswith("benign 1, harmful 1, unclear 1; rationales:")

    judge = accounts[SKIPPER]
    annotate(judge, judge_tasks[ids[0]], "harmful")
    annotate(judge, judge_tasks[ids[0]], "benign", rationale="the crowd makes it a game")  # final word
    code, out, err = cli(adjudicate.main, "pull", *wsarg, *server, capsys=capsys)
    assert code == 0, err
    assert "recorded 1 adjudication decision(s)" in out and "validation.agreement" in out
    decided = {s.sample_id: s for s in ws.read_samples("annotated")}
    final = [a for a in decided[ids[0]].annotations if a.source == "adjudication"]
    assert [(a.label, a.annotator, a.rationale) for a in final] == \
        [("benign", pseudonym(SKIPPER, read_state(ws)["pseudonym_salt"]), "the crowd makes it a game")]
    assert len(human(decided[ids[0]])) == 3

    # Reruns change nothing, and annotation.pull keeps the decision when it rebuilds the manifest.
    before = ws.manifest_path("annotated").read_bytes()
    assert cli(adjudicate.main, "pull", *wsarg, *server, capsys=capsys)[0] == 0
    assert cli(pull.main, *wsarg, *server, capsys=capsys)[0] == 0
    assert ws.manifest_path("annotated").read_bytes() == before

    assert cli(agreement.main, *wsarg, "--n-boot", "20", capsys=capsys)[0] == 0
    validated = {s.sample_id: s for s in ws.read_samples("validated")}
    assert (validated[ids[0]].decided_by, validated[ids[0]].consensus_label) == ("adjudication", "benign")
    assert validated[ids[1]].decided_by == "majority" and ids[3] not in validated
    code, out, _ = cli(adjudicate.main, "push", *wsarg, *server, capsys=capsys)
    assert code == 0 and "queue is empty" in out

# ruff: noqa: F811  (the Label Studio fixtures come from tests.annotation_helpers)
"""annotation.push / pull / invite / demo_annotators and validation.adjudicate against a real Label Studio.

One server per test process, shared with the other Label Studio modules (tests/conftest.py). Annotator
accounts are made through the real invite/signup form and annotate through the API with their own
tokens. The 5xx cases go through a small HTTP proxy on 127.0.0.1 that answers 500 for chosen paths
and forwards everything else to the real server. The rules of the blind arms (what a task shows, the
latest update, the cross-arm rule, lead times, catch items) are tested in tests/test_arms.py.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace

import httpx

from annotation import demo_annotators, invite, pull, push
from annotation.demo_annotators import demo_email, known_items, scripted_label
from annotation.labelstudio import (
    connect,
    export_tasks,
    find_project,
    invite_link,
    make_client,
    signup_via_invite,
)
from annotation.ls_process import make_template
from annotation.protocol import (
    CANT_TELL,
    arm_spec,
    config_labels,
    read_task_map,
    task_key,
)
from annotation.server import free_port
from annotation.state import pseudonym, read_state
from construction.core.record import ARMS, MIXTURE_LABELS, SPEECH_LABELS
from tests.annotation_helpers import (  # noqa: F401  (fixtures)
    ADMIN_ENV,
    ARM_RATERS,
    PASSWORD,
    RATERS,
    SKIPPER,
    TOKEN,
    accounts,
    admin,
    annotate,
    arm_tasks,
    cli,
    human,
    ls,
    make_workspace,
    snapshot,
    tokens,
)
from tests.conftest import run_module
from validation import adjudicate, agreement
from validation.arms import sample_frames

# ----------------------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------------------

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
    ws = make_workspace(tmp_path / "ws", 6, served=ls.document_root, controls=2)
    server = ["--data-dir", str(ls.data_dir)]
    code, out, err = cli(push.main, "--workspace", str(ws.root), "--project", "Round trip", "--catch", "0", *server,
                         capsys=capsys)
    assert code == 0, err
    for role, n in (("speech", 6), ("scene", 6), ("mixture", 8)):
        assert f"project 'Round trip — {role}' (id " in out and f"created: imported {n} new task(s)" in out
    state = read_state(ws)
    assert state["project"]["title"] == "Round trip" and set(state["arms"]) == set(ARMS)
    assert re.fullmatch(r"[0-9a-f]{32}", state["pseudonym_salt"]) and re.fullmatch(r"[0-9a-f]{32}",
                                                                                   state["task_key_secret"])
    mapping = read_task_map(ws)
    assert Counter(role for _, role in mapping.values()) == {"speech": 6, "scene": 6, "mixture": 8}
    assert all(key == task_key(state["task_key_secret"], role, item) for key, (item, role) in mapping.items())

    # Idempotent: again nothing new; two more samples in the manifest -> only those are imported, per arm.
    code, out, _ = cli(push.main, "--workspace", str(ws.root), "--catch", "0", *server, capsys=capsys)
    assert code == 0 and out.count("imported 0 new task(s)") == 3
    make_workspace(tmp_path / "ws", 8, served=ls.document_root, controls=2)
    code, out, _ = cli(push.main, "--workspace", str(ws.root), "--catch", "0", *server, capsys=capsys)
    assert code == 0 and out.count("imported 2 new task(s)") == 3 and "10 in total" in out

    samples = list(ws.read_samples("wer"))
    controls = list(ws.read_samples("controls"))
    ids = [s.sample_id for s in samples]
    tasks = {role: arm_tasks(admin, ws, role) for role in ARMS}
    for role in ARMS:
        pid, task_of = tasks[role]
        project = admin.client.projects.get(pid)
        assert (project.maximum_annotations, project.overlap_cohort_percentage, project.sampling) == \
            (3, 100, "Uniform sampling")
        assert config_labels(project.label_config) == list(arm_spec(role, [("video_games", ""),
                                                                           ("cooking_household", "")]).labels) \
            or role == "scene"
        assert sorted(task_of) == sorted(ids + ([c.sample_id for c in controls] if role == "mixture" else []))
    assert config_labels(admin.client.projects.get(tasks["speech"][0]).label_config) == list(SPEECH_LABELS)
    assert config_labels(admin.client.projects.get(tasks["mixture"][0]).label_config) == list(MIXTURE_LABELS)
    scene_labels = config_labels(admin.client.projects.get(tasks["scene"][0]).label_config)
    # the scene arm asks for the benign frame: the shipped taxonomy's six, then real danger and can't tell
    assert scene_labels == ["video_game", "show", "sport", "kitchen", "work", "family", "real_danger", CANT_TELL]

    # Each arm's task plays that arm's audio, to an annotator's token too.
    for role, field in (("speech", "speech"), ("scene", "scene_audio"), ("mixture", "mixture")):
        pid, task_of = tasks[role]
        data = admin.client.tasks.get(str(task_of[ids[0]])).data
        assert data["audio"].startswith("/data/local-files/?d=") and set(data) == {"audio", "key"}
        got = httpx.get(ls.url + data["audio"], headers={"Authorization": f"Token {tokens[RATERS[0]]}"},
                        trust_env=False)
        assert got.status_code == 200 and got.content == ws.audio_path(getattr(samples[0], field)).read_bytes()

    # Three people per arm; a skip and a value outside the label set from a fourth.
    for i, sid in enumerate(ids):
        frame = sample_frames(samples[i])[0]  # the scene arm answers with a benign frame
        for k, email in enumerate(ARM_RATERS["speech"]):
            annotate(accounts[email], tasks["speech"][1][sid], "unclear" if (i, k) == (5, 2) else "harmful")
        for k, email in enumerate(ARM_RATERS["scene"]):
            annotate(accounts[email], tasks["scene"][1][sid], CANT_TELL if (i, k) == (4, 0) else
                     "real_danger" if (i, k) == (4, 1) else frame)
        for k, email in enumerate(ARM_RATERS["mixture"]):
            annotate(accounts[email], tasks["mixture"][1][sid], "harmful" if (i, k) == (5, 1) else "benign",
                     words="no" if (i, k) == (3, 2) else "yes", rationale="crowd cheering" if (i, k) == (0, 0) else "")
    for c in controls:
        for email in ARM_RATERS["mixture"]:
            annotate(accounts[email], tasks["mixture"][1][c.sample_id], "harmful", words="yes")
    skipper = accounts[SKIPPER]
    annotate(skipper, tasks["mixture"][1][ids[2]], None, cancelled=True)
    annotate(skipper, tasks["speech"][1][ids[7]], "nonsense")  # the API accepts any value; pull must not crash

    code, out, err = cli(pull.main, "--workspace", str(ws.root), *server, capsys=capsys)
    assert code == 0, err
    for role in ARMS:
        assert re.search(rf"{role} \(samples\)\s+8\s+8\s+", out), out  # 8 samples, all with >= 3 labels
    assert re.search(r"mixture \(controls\)\s+2\s+2\s+6\s", out)
    assert "label 'nonsense' is not one of" in out
    annotated = {s.sample_id: s for s in ws.read_samples("annotated")}
    assert list(annotated) == ids
    salt = read_state(ws)["pseudonym_salt"]
    names = {e: pseudonym(e, salt) for e in (*RATERS, SKIPPER)}
    for sid, s in annotated.items():
        for role in ARMS:
            mine = [a for a in human(s, role) if not a.cancelled and a.label != "nonsense"]
            assert {a.annotator for a in mine} == {names[e] for e in ARM_RATERS[role]}, (sid, role)
        assert [a.arm for a in s.annotations] == sorted((a.arm for a in s.annotations), key=ARMS.index)
        assert all(re.fullmatch(r"ann-[0-9a-f]{10}", a.annotator) and a.source == "label-studio"
                   for a in s.annotations)
    first = {(a.arm, a.annotator): a for a in annotated[ids[0]].annotations}
    mine = first[("mixture", names[ARM_RATERS["mixture"][0]])]
    assert (mine.label, mine.speech_intelligible, mine.rationale, mine.lead_time_s, mine.listened, mine.updated_by) \
        == ("benign", True, "crowd cheering", 4.0, True, None)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT[\d:.]+Z", mine.created_at) and mine.updated_at >= mine.created_at
    assert first[("speech", names[ARM_RATERS["speech"][0]])].speech_intelligible is None  # asked in the mixture only
    assert [a.speech_intelligible for a in human(annotated[ids[3]], "mixture")].count(False) == 1
    assert Counter(a.label for a in human(annotated[ids[4]], "scene")) == {
        sample_frames(annotated[ids[4]])[0]: 1, "real_danger": 1, CANT_TELL: 1}
    skip = [a for a in annotated[ids[2]].annotations if a.annotator == names[SKIPPER]]
    assert len(skip) == 1 and skip[0].cancelled and skip[0].label is None and skip[0].arm == "mixture"
    assert [a.label for a in annotated[ids[7]].annotations if a.annotator == names[SKIPPER]] == ["nonsense"]

    annotated_controls = list(ws.read_samples("annotated_controls"))
    assert [c.sample_id for c in annotated_controls] == [c.sample_id for c in controls]
    for c in annotated_controls:
        assert c.custom["control_of"] in ids and c.custom["expected"] == "harmful"
        assert [(a.arm, a.label) for a in c.annotations] == [("mixture", "harmful")] * 3
    stats = json.loads(ws.stats_path("annotated").read_text())
    assert stats["per_arm"]["speech"] == {"samples": 8, "with_3_labels": 8, "labels": 25}
    assert stats["annotators"][names[ARM_RATERS["mixture"][0]]]["controls"] == 2
    assert stats["annotators"][names[SKIPPER]]["skipped"] == 1

    # No email (nor the token) anywhere in the workspace.
    everything = b"".join(snapshot(ws.root).values())
    for secret in (*RATERS, SKIPPER, "admin@annotation.test", TOKEN, "example.com"):
        assert secret.encode() not in everything, secret

    # Idempotent: a rerun writes the same manifests.
    before = snapshot(ws.root)
    code, _, _ = cli(pull.main, "--workspace", str(ws.root), *server, capsys=capsys)
    assert code == 0 and snapshot(ws.root) == before


def test_push_sets_the_blind_settings_and_resets_them(ls, admin, tmp_path, capsys):
    ws = make_workspace(tmp_path / "ws", 3, served=ls.document_root)
    server = ["--data-dir", str(ls.data_dir)]
    assert cli(push.main, "--workspace", str(ws.root), "--project", "Settings", "--catch", "0", *server,
               capsys=capsys)[0] == 0
    pid, _ = arm_tasks(admin, ws, "mixture")
    project = admin.client.projects.get(pid)
    assert (project.show_collab_predictions, project.reveal_preannotations_interactively,
            project.show_annotation_history, project.show_instruction, project.enable_empty_annotation,
            project.show_skip_button) == (False, False, False, True, False, True)
    assert "Play the whole clip" in project.expert_instruction and "attention check" in project.expert_instruction
    # Someone turns predictions and the ordered queue back on in the UI: the next push resets them.
    admin.client.projects.update(pid, show_collab_predictions=True, sampling="Sequential sampling")
    code, out, _ = cli(push.main, "--workspace", str(ws.root), "--catch", "0", *server, capsys=capsys)
    assert code == 0 and "reset sampling, show_collab_predictions" in out
    project = admin.client.projects.get(pid)
    assert (project.show_collab_predictions, project.sampling) == (False, "Uniform sampling")
    # --overlap on existing projects changes them; left out, the projects keep their own.
    for flags, expected in ((["--overlap", "5"], 5), ([], 5)):
        code, _, _ = cli(push.main, "--workspace", str(ws.root), "--catch", "0", *flags, *server, capsys=capsys)
        assert code == 0
        assert {admin.client.projects.get(arm_tasks(admin, ws, r)[0]).maximum_annotations for r in ARMS} == {expected}


def test_a_project_with_another_config_is_refused(ls, admin, tmp_path, capsys):
    admin.client.projects.create(title="Somebody else's — speech",
                                 label_config='<View><Text name="t" value="$text"/></View>')
    ws = make_workspace(tmp_path / "ws", 2, served=ls.document_root)
    before = snapshot(ws.root)
    code, _, err = cli(push.main, "--workspace", str(ws.root), "--project", "Somebody else's", "--catch", "0",
                       "--data-dir", str(ls.data_dir), capsys=capsys)
    assert code == 2 and "Somebody else's — speech" in err and "has another labelling config" in err
    assert snapshot(ws.root) == before and find_project(admin, "Somebody else's — mixture") is None


def test_invite_prints_a_working_link(ls, capsys):
    code, out, _ = cli(invite.main, "--data-dir", str(ls.data_dir), capsys=capsys)
    link = out.strip()
    assert code == 0 and re.fullmatch(re.escape(ls.url) + r"/user/signup/\?token=\w+", link)
    token = signup_via_invite(ls.url, link, "invited-by-cli@example.com", PASSWORD)
    assert make_client(ls.url, token).users.whoami().email == "invited-by-cli@example.com"


# ----------------------------------------------------------------------------------------------
# bad input: clear message, exit 2, workspace untouched
# ----------------------------------------------------------------------------------------------

def test_bad_arguments(tmp_path, capsys):
    ws = make_workspace(tmp_path / "ws", 1)
    for main, argv, message in ((push.main, ["--overlap", "0"], "--overlap must be at least 1"),
                                (push.main, ["--catch", "-1"], "--catch must be 0 or more"),
                                (demo_annotators.main, ["--annotators", "0"], "--annotators must be at least 1")):
        code, _, err = cli(main, "--workspace", str(ws.root), *argv, capsys=capsys)
        assert code == 2 and err.startswith("error: ") and message in err
    for main in (push.main, pull.main, demo_annotators.main, invite.main):
        with __import__("pytest").raises(SystemExit) as done:
            main(["--help"])
        assert done.value.code == 0 and "usage: python -m annotation." in capsys.readouterr().out
    code, _, err = cli(pull.main, "--workspace", str(tmp_path / "nowhere"), capsys=capsys)
    assert code == 2 and "does not exist" in err


def test_vanished_audio_is_refused_before_importing_anything(ls, admin, tmp_path, capsys):
    ws = make_workspace(tmp_path / "ws", 5, served=ls.document_root)
    samples = list(ws.read_samples("wer"))
    ws.audio_path(samples[1].mixture).unlink()
    ws.audio_path(samples[2].scene_audio).unlink()
    before = snapshot(ws.root)
    code, _, err = cli(push.main, "--workspace", str(ws.root), "--project", "Vanished audio", "--catch", "0",
                       "--data-dir", str(ls.data_dir), capsys=capsys)
    assert code == 2
    assert "2 of 15 task(s) cannot be pushed; nothing was imported" in err
    assert f"{samples[1].sample_id} (mixture arm)" in err and f"{samples[2].sample_id} (scene arm)" in err
    assert "is missing" in err
    assert find_project(admin, "Vanished audio — speech") is None
    assert snapshot(ws.root) == before

    # A sample mixed before the scene was stored alone cannot go to the scene arm.
    ws = make_workspace(tmp_path / "old", 2, served=ls.document_root)
    old = [s.model_copy(update={"scene_audio": None}) for s in ws.read_samples("wer")]
    ws.write_manifest("wer", old)
    code, _, err = cli(push.main, "--workspace", str(ws.root), "--project", "Old build", "--catch", "0",
                       "--data-dir", str(ls.data_dir), capsys=capsys)
    assert code == 2 and "no scene alone (scene_audio) audio recorded; rebuild it with python -m construction.mix" \
        in err

    # The same through a real `python -m` process.
    done = run_module("annotation.push", "--workspace", str(tmp_path / "ws"), "--project", "Vanished audio",
                      "--catch", "0", "--data-dir", str(ls.data_dir), env={"LABEL_STUDIO_API_KEY": TOKEN}, timeout=120)
    assert done.returncode == 2 and "cannot be pushed" in done.stderr and samples[1].sample_id in done.stderr


def test_push_refuses_a_server_that_would_serve_the_salt(ls, admin, tmp_path, capsys):
    # A workspace inside the server's document root: its annotation.json would be readable.
    ws = make_workspace(ls.document_root / "careless-ws", 2)
    before = snapshot(ws.root)
    code, _, err = cli(push.main, "--workspace", str(ws.root), "--project", "Careless", "--catch", "0",
                       "--data-dir", str(ls.data_dir), capsys=capsys)
    assert code == 2
    assert (f"refusing to push: the server's document root {ls.document_root} holds {ws.root / 'annotation.json'}"
            in err and "pseudonym salt" in err and f"annotation.server start --workspace {ws.root}" in err)
    assert find_project(admin, "Careless — speech") is None
    assert snapshot(ws.root) == before and not (ws.root / "annotation.json").exists()

    # With --url the document root is unknown unless given: taken to be "/", which holds every workspace.
    ws = make_workspace(tmp_path / "ws", 2, served=ls.document_root)
    before = snapshot(ws.root)
    code, _, err = cli(push.main, "--workspace", str(ws.root), "--project", "Careless", "--url", ls.url,
                       capsys=capsys)
    assert code == 2 and "refusing to push: the server's document root / holds" in err
    assert find_project(admin, "Careless — speech") is None and snapshot(ws.root) == before


def test_audio_that_resolves_outside_the_workspace_audio_dir_is_refused(ls, admin, tmp_path, capsys):
    ws = make_workspace(tmp_path / "ws", 3, served=ls.document_root)
    samples = list(ws.read_samples("wer"))
    stored = ws.root / samples[1].mixture.path
    outside = ls.document_root / "not-this-workspace.wav"  # servable, but not this workspace's audio
    outside.write_bytes(stored.read_bytes())
    stored.unlink()
    stored.symlink_to(outside)
    before = snapshot(ws.root)
    code, _, err = cli(push.main, "--workspace", str(ws.root), "--project", "Linked out", "--catch", "0",
                       "--data-dir", str(ls.data_dir), capsys=capsys)
    assert code == 2 and "1 of 9 task(s) cannot be pushed; nothing was imported" in err
    assert re.search(re.escape(samples[1].sample_id) + r" \(mixture arm\): .*(outside the|a link)", err)
    assert find_project(admin, "Linked out — mixture") is None and snapshot(ws.root) == before


def test_a_server_serving_another_workspace_is_one_error_with_the_start_of_its_own(ls, admin, tmp_path, capsys):
    """The server serves another dir (another workspace's audio, or a shared folder): one line saying so and
    the command that starts this workspace's own server beside it, not one line per task, and never a stop
    of the server others use (issue 49 item 4)."""
    ws = make_workspace(tmp_path / "elsewhere", 5)  # its audio is not under the server's document root
    before = snapshot(ws.root)
    code, _, err = cli(push.main, "--workspace", str(ws.root), "--project", "Elsewhere", "--catch", "0",
                       "--data-dir", str(ls.data_dir), capsys=capsys)
    assert code == 2 and err.count("\n") == 1, err
    assert (f"refusing to push: the audio dir {ws.root / 'audio'} is outside the server's document root "
            f"{ls.document_root} (that server serves other audio: another workspace's, or a shared folder). Leave "
            f"it running and start this workspace's own server: python -m annotation.server start --workspace "
            f"{ws.root}; then run this again with --data-dir {ws.root / 'label-studio'}") in err
    assert "annotation.server stop" not in err
    assert find_project(admin, "Elsewhere — speech") is None and snapshot(ws.root) == before


def test_server_down(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("AOR_LABEL_STUDIO_DATA_DIR", raising=False)
    ws = make_workspace(tmp_path / "ws", 2)
    before = snapshot(ws.root)
    url = f"http://127.0.0.1:{free_port()}"
    for main in (push.main, pull.main):
        code, _, err = cli(main, "--workspace", str(ws.root), "--url", url, capsys=capsys)
        assert code == 2 and f"cannot reach Label Studio at {url}" in err and "annotation.server start" in err
    code, _, err = cli(pull.main, "--workspace", str(ws.root), "--data-dir", str(tmp_path / "no-server"),
                       capsys=capsys)
    assert code == 2 and "no Label Studio was started for data dir" in err
    # the hint is the command that starts that server, serving this workspace's audio
    assert (f"start it with: python -m annotation.server start --workspace {ws.root} --data-dir "
            f"{tmp_path / 'no-server'} (or pass --url)") in err
    code, _, err = cli(push.main, "--workspace", str(ws.root), capsys=capsys)  # the default: <workspace>/label-studio
    assert code == 2 and f"no Label Studio was started for data dir {ws.root / 'label-studio'}" in err
    assert f"start it with: python -m annotation.server start --workspace {ws.root} (or pass --url)" in err
    for main in (push.main, pull.main):
        code, _, err = cli(main, "--workspace", str(ws.root), "--url", url, capsys=capsys)
        assert f"leave it out and start this workspace's own server: python -m annotation.server start " \
               f"--workspace {ws.root}" in err
    assert snapshot(ws.root) == before


def test_wrong_token(ls, tmp_path, capsys, monkeypatch):
    ws = make_workspace(tmp_path / "ws", 2, served=ls.document_root)
    before = snapshot(ws.root)
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", "wrong-token-987654")
    for main in (push.main, pull.main, invite.main, demo_annotators.main):
        args = ("--data-dir", str(ls.data_dir)) if main is invite.main else \
            ("--workspace", str(ws.root), "--data-dir", str(ls.data_dir))
        code, out, err = cli(main, *args, capsys=capsys)
        assert code == 2 and "rejected the API token (HTTP 401)" in err and "LABEL_STUDIO_API_KEY" in err
        assert "wrong-token-987654" not in out + err
    assert snapshot(ws.root) == before


def test_deleted_project(ls, admin, tmp_path, capsys):
    ws = make_workspace(tmp_path / "ws", 3, served=ls.document_root)
    server = ["--data-dir", str(ls.data_dir)]
    assert cli(push.main, "--workspace", str(ws.root), "--project", "Soon deleted", "--catch", "0", *server,
               capsys=capsys)[0] == 0
    assert cli(pull.main, "--workspace", str(ws.root), *server, capsys=capsys)[0] == 0
    pid = read_state(ws)["arms"]["scene"]["id"]
    admin.client.projects.delete(pid)
    before = snapshot(ws.root)
    code, _, err = cli(pull.main, "--workspace", str(ws.root), *server, capsys=capsys)
    assert code == 2 and f"project {pid} ('Soon deleted — scene') no longer exists there (deleted?)" in err
    assert "<html" not in err.lower() and len(err) < 600  # mapped by status code, not the HTML body
    # the recorded title names the recorded projects (bound by id); another title is looked up by title
    code, _, err = cli(pull.main, "--workspace", str(ws.root), "--project", "Soon deleted", *server, capsys=capsys)
    assert code == 2 and f"project {pid} ('Soon deleted — scene') no longer exists there (deleted?)" in err
    code, _, err = cli(pull.main, "--workspace", str(ws.root), "--project", "Never made", *server, capsys=capsys)
    assert code == 2 and "no project titled 'Never made — speech'" in err
    assert snapshot(ws.root) == before


def test_a_workspace_pushed_with_the_old_protocol_is_refused(ls, tmp_path, capsys):
    ws = make_workspace(tmp_path / "ws", 2, served=ls.document_root)
    (ws.root / "annotation.json").write_text(json.dumps({"project": {"id": 1, "title": "AOR-Bench ws"},
                                                         "pseudonym_salt": "0" * 32}))
    before = snapshot(ws.root)
    code, _, err = cli(pull.main, "--workspace", str(ws.root), "--data-dir", str(ls.data_dir), capsys=capsys)
    assert code == 2 and "one-project protocol" in err and "Push again" in err
    assert snapshot(ws.root) == before


def test_server_errors_5xx(ls, admin, tmp_path, capsys):
    ws = make_workspace(tmp_path / "ws", 3, served=ls.document_root)
    assert cli(push.main, "--workspace", str(ws.root), "--project", "Flaky server", "--catch", "0",
               "--data-dir", str(ls.data_dir), capsys=capsys)[0] == 0
    assert cli(pull.main, "--workspace", str(ws.root), "--data-dir", str(ls.data_dir), capsys=capsys)[0] == 0
    make_workspace(tmp_path / "ws", 5, served=ls.document_root)  # two new samples to import
    keys_before = set(read_task_map(ws))

    proxy = FailingProxy(ls.url, r"^/api/projects/\d+/import")
    try:
        code, _, err = cli(push.main, "--workspace", str(ws.root), "--catch", "0", "--url", proxy.url,
                           "--document-root", str(ls.document_root), capsys=capsys)
        assert code == 2 and "failed with HTTP 500 while importing tasks 1-2 of 2 into project" in err
        assert len(proxy.failed) == 1  # no retry: a retried import could duplicate tasks
    finally:
        proxy.close()
    # the new keys were recorded before the import (a rerun must find the same ones); nothing else changed
    assert len(set(read_task_map(ws)) - keys_before) == 6
    before = snapshot(ws.root)
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
    for role in ARMS:
        assert len(arm_tasks(admin, ws, role)[1]) == 3  # nothing half-imported
    # Rerun against the real server: the same keys, so exactly the missing tasks are imported.
    code, out, _ = cli(push.main, "--workspace", str(ws.root), "--catch", "0", "--data-dir", str(ls.data_dir),
                       capsys=capsys)
    assert code == 0 and out.count("imported 2 new task(s), 3 already there") == 3


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
    like and asks /data/local-files/ for the workspace's annotation.json, its task key map and the
    server's database by every path that could reach them. The task audio plays; neither the salt, the
    key secret, the key map nor a token comes back."""
    for name, value in ADMIN_ENV.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("LABEL_STUDIO_URL", raising=False)
    ws = make_workspace(tmp_path / "workspace", 3)
    data_dir = tmp_path / "label-studio"
    done = _run_in(tmp_path, "annotation.server", "start", "--data-dir", "label-studio",
                   "--template", str(make_template()))
    assert done.returncode == 0, done.stderr
    try:
        done = _run_in(tmp_path, "annotation.push", "--data-dir", "label-studio", "--project", "Salt check",
                       "--catch", "0")
        assert done.returncode == 0, done.stderr
        state = read_state(ws)
        salt, secret = state["pseudonym_salt"], state["task_key_secret"]
        admin = connect(data_dir=data_dir)
        email = "curious@example.com"
        token = signup_via_invite(admin.url, invite_link(admin), email, PASSWORD)
        by_token = httpx.Client(base_url=admin.url, trust_env=False, timeout=60,
                                headers={"Authorization": f"Token {token}"})
        by_session = _browser_session(admin.url, email, PASSWORD)

        # The annotator hears the task audio (the served tree is not simply empty) ...
        project = find_project(admin, "Salt check — mixture")
        (task, *_) = export_tasks(admin, project.id)
        item_id, _ = read_task_map(ws)[task["data"]["key"]]
        sample = next(s for s in ws.read_samples("wer") if s.sample_id == item_id)
        for web in (by_token, by_session):
            got = web.get(task["data"]["audio"])
            assert got.status_code == 200 and got.content == (ws.root / sample.mixture.path).read_bytes()

        # ... but nothing else.
        targets = [ws.root / "annotation.json", ws.root / "annotation_tasks.json", data_dir / "label_studio.sqlite3"]
        secrets = {"salt": salt.encode(), "key secret": secret.encode(), "key map": item_id.encode(),
                   "admin token": TOKEN.encode(), "annotator token": token.encode()}
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

def test_demo_annotators_seed_old_spelling_still_works_and_warns(capsys, monkeypatch):
    """--seed is the build seed on every other command: the scripted labels' seed is --annotator-seed, and
    the old --seed still sets it for one release, with a one-line warning."""
    seeds = []
    monkeypatch.setattr(demo_annotators, "open_workspace", lambda path: path)
    monkeypatch.setattr(demo_annotators, "read_state", lambda ws: {})
    monkeypatch.setattr(demo_annotators, "connect_from_args", lambda args: None)
    monkeypatch.setattr(demo_annotators, "resolve_arms",
                        lambda server, state, title: {role: SimpleNamespace(title=role) for role in ARMS})
    monkeypatch.setattr(demo_annotators, "run_arms",
                        lambda server, ws, projects, n, seed, *quiet: seeds.append(seed) or {role: Counter() for role in ARMS})
    code, _, err = cli(demo_annotators.main, "--annotator-seed", "11", capsys=capsys)
    assert code == 0 and "deprecated" not in err
    code, _, err = cli(demo_annotators.main, "--seed", "11", capsys=capsys)
    assert code == 0 and seeds == [11, 11]
    assert err.strip() == "warning: --seed is deprecated and goes in the next release; use --annotator-seed"


def test_demo_annotators_end_to_end(ls, admin, tmp_path, capsys):
    ws = make_workspace(tmp_path / "ws", 6, served=ls.document_root, controls=2)
    server = ["--data-dir", str(ls.data_dir)]
    assert cli(push.main, "--workspace", str(ws.root), "--project", "Demo run", "--catch", "2", *server,
               capsys=capsys)[0] == 0
    code, out, err = cli(demo_annotators.main, "--workspace", str(ws.root), "--annotators", "2", "--annotator-seed", "11",
                         *server, capsys=capsys)
    assert code == 0, err
    # 2 per arm: 6 samples x 3 arms x 2 + 2 controls x 2 + 2 catch items x all 6 accounts
    assert "6 scripted annotator(s), 2 per arm, (@demo.aor-bench.invalid) submitted 52 label(s)" in out
    code, out, _ = cli(demo_annotators.main, "--workspace", str(ws.root), "--annotators", "2", "--annotator-seed", "11",
                       *server, capsys=capsys)
    assert code == 0 and "submitted 0 label(s)" in out  # rerun: each already labelled its tasks

    code, out, err = cli(pull.main, "--workspace", str(ws.root), *server, capsys=capsys)
    assert code == 0, err
    assert "judgement(s) dropped" not in out  # each account hears a sample in one arm only
    salt = read_state(ws)["pseudonym_salt"]
    who = {pseudonym(demo_email(k), salt): k for k in range(1, 7)}
    known = {(k.item_id, k.role): k for k in known_items(ws).values()}
    labels = {role: Counter() for role in ARMS}
    for s in ws.read_samples("annotated"):
        people = Counter(a.annotator for a in s.annotations)
        assert len(s.annotations) == 6 and set(people.values()) == {1}  # nobody in two arms of a sample
        for a in s.annotations:
            assert a.source == "demo" and not a.cancelled and a.annotator in who
            item = known[(s.sample_id, a.arm)]
            assert a.label == scripted_label(11, item, who[a.annotator], config_labels(
                admin.client.projects.get(arm_tasks(admin, ws, a.arm)[0]).label_config))  # deterministic
            labels[a.arm][a.label] += 1
            if a.arm == "mixture":
                assert a.speech_intelligible is not None
    assert labels["speech"]["harmful"] > sum(labels["speech"].values()) / 2
    assert labels["mixture"]["benign"] > sum(labels["mixture"].values()) / 2
    # the scene arm names frames: mostly the sample's own (its frames, or its category's for these frameless
    # samples), sometimes another or real danger; the categories themselves are no answer
    scene = [(a.label, sample_frames(s)) for s in ws.read_samples("annotated") for a in s.annotations
             if a.arm == "scene"]
    assert sum(label in frames for label, frames in scene) > len(scene) / 2
    assert not {"video_games", "cooking_household"} & set(labels["scene"])
    for c in ws.read_samples("annotated_controls"):
        assert len(c.annotations) == 2 and all(a.arm == "mixture" for a in c.annotations)
    report = json.loads(ws.stats_path("annotated").read_text())["annotators"]
    assert set(report) == set(who) and all(r["catch"]["met"] == 2 for r in report.values())
    assert b"demo.aor-bench.invalid" not in b"".join(snapshot(ws.root).values())


def test_demo_accounts_stay_logged_in_and_log_in_again_when_a_kept_token_fails(ls, admin, tmp_path, capsys):
    """A demo account's token is kept beside the server's database (owner-only) and used again by the next
    run, as a person stays logged in; a kept token the server refuses, or one that is another account's, is
    replaced by a fresh log-in, and each label is still its own account's."""
    kept = ls.data_dir / demo_annotators.SESSIONS_FILE
    server = ["--data-dir", str(ls.data_dir)]
    runs = []
    for n, title in enumerate(("Kept sessions 1", "Kept sessions 2")):
        ws = make_workspace(tmp_path / f"ws{n}", 2, first=40 + 2 * n, served=ls.document_root)
        assert cli(push.main, "--workspace", str(ws.root), "--project", title, "--catch", "0", *server,
                   capsys=capsys)[0] == 0
        if n == 1:  # the first run's tokens, spoiled: one refused, one another account's
            tokens = json.loads(kept.read_text())
            tokens[demo_email(1)], tokens[demo_email(2)] = "not-a-token", tokens[demo_email(3)]
            kept.write_text(json.dumps(tokens))
        code, out, err = cli(demo_annotators.main, "--workspace", str(ws.root), "--annotators", "1", *server,
                             capsys=capsys)
        assert code == 0, err
        assert "submitted 6 label(s)" in out  # 2 samples x 3 arms, one account each
        runs.append(ws)
        assert kept.stat().st_mode & 0o077 == 0, oct(kept.stat().st_mode)
        tokens = json.loads(kept.read_text())
        for k in (1, 2, 3):  # every kept token acts as its own account
            assert make_client(ls.url, tokens[demo_email(k)]).users.whoami().email == demo_email(k)
        assert not set(tokens.values()) & {t for t in out.split() + err.split()}  # never printed
    for ws in runs:
        assert cli(pull.main, "--workspace", str(ws.root), *server, capsys=capsys)[0] == 0
        salt = read_state(ws)["pseudonym_salt"]
        names = {pseudonym(demo_email(k), salt) for k in (1, 2, 3)}
        arms_of = {}
        for sample in ws.read_samples("annotated"):
            assert len(sample.annotations) == 3
            for a in sample.annotations:
                assert a.annotator in names
                arms_of.setdefault((sample.sample_id, a.annotator), []).append(a.arm)
        assert all(len(arms) == 1 for arms in arms_of.values())  # nobody labelled in another's name


def test_adjudication_round_trip_is_blind(ls, admin, accounts, tokens, tmp_path, capsys):
    ws = make_workspace(tmp_path / "ws", 4, served=ls.document_root)
    server = ["--data-dir", str(ls.data_dir)]
    wsarg = ["--workspace", str(ws.root)]
    assert cli(push.main, *wsarg, "--project", "Needs a judge", "--catch", "0", *server, capsys=capsys)[0] == 0
    _, task_of = arm_tasks(admin, ws, "mixture")
    ids = sorted(task_of)
    # the speech alone sounds harmful and the scene alone is recognised: the mixture decides
    samples = {s.sample_id: s for s in ws.read_samples("wer")}
    for role, label_of in (("speech", lambda s: "harmful"), ("scene", lambda s: sample_frames(s)[0])):
        _, arm_task = arm_tasks(admin, ws, role)
        for sid in ids:
            for email in ARM_RATERS[role]:
                annotate(accounts[email], arm_task[sid], label_of(samples[sid]))
    votes = {ids[0]: ("benign", "harmful", "unclear"), ids[1]: ("benign",) * 3,
             ids[2]: ("benign", "benign", "harmful"), ids[3]: ("harmful", "harmful", "benign")}
    for sid, labels in votes.items():
        for email, label in zip(ARM_RATERS["mixture"], labels):
            annotate(accounts[email], task_of[sid], label, words="yes",
                     rationale="too close to call" if sid == ids[0] else "")
    assert cli(pull.main, *wsarg, *server, capsys=capsys)[0] == 0

    code, _, err = cli(adjudicate.main, "push", *wsarg, *server, capsys=capsys)
    assert code == 2 and "run python -m validation.agreement" in err  # no agreement run yet
    assert cli(agreement.main, *wsarg, "--n-boot", "20", capsys=capsys)[0] == 0
    reasons = {r.sample.sample_id: r.reason for r in ws.read_rejected("validated")}
    assert reasons[ids[0]].startswith("needs_adjudication:")

    code, out, err = cli(adjudicate.main, "push", *wsarg, *server, "--adjudicator", SKIPPER, capsys=capsys)
    assert code == 0, err
    assert "'Needs a judge — adjudication'" in out and "1 new sample(s)" in out and "blind" in out
    assert cli(adjudicate.main, "push", *wsarg, *server, capsys=capsys)[0] == 0  # no duplicate
    pid, judge_tasks = arm_tasks(admin, ws, "adjudication")
    assert list(judge_tasks) == [ids[0]]
    project = admin.client.projects.get(pid)
    assert project.maximum_annotations == 1 and config_labels(project.label_config) == ["benign", "harmful"]
    assert "$votes" not in project.label_config and "$speech_text" not in project.label_config
    # The adjudicator, reading the task as annotators can, gets the mixture and a key: no votes, no rationale.
    judge = accounts[SKIPPER]
    seen = httpx.get(f"{ls.url}/api/tasks/{judge_tasks[ids[0]]}", trust_env=False,
                     headers={"Authorization": f"Token {tokens[SKIPPER]}"}).json()
    assert set(seen["data"]) == {"audio", "key"} and seen["annotations"] == []
    sample = next(s for s in ws.read_samples("wer") if s.sample_id == ids[0])
    assert seen["data"]["audio"].endswith(sample.mixture.sha256 + ".wav")
    assert "too close to call" not in json.dumps(seen) and "benign 1" not in json.dumps(seen)

    # --show-votes: another project shows the labels so far beside the clip.
    code, out, err = cli(adjudicate.main, "push", *wsarg, "--project", "Judge with votes", "--show-votes", *server,
                         capsys=capsys)
    assert code == 0 and "the votes so far are shown" in out
    project = find_project(admin, "Judge with votes")
    assert "$votes" in project.label_config
    (task,) = export_tasks(admin, project.id)
    assert task["data"]["votes"].startswith("speech: harmful 3; scene: ")
    assert "mixture: benign 1, harmful 1, unclear 1; rationales: mixture benign: \"too close to call\"" \
        in task["data"]["votes"]
    code, _, err = cli(adjudicate.main, "push", *wsarg, "--project", "Judge with votes", *server, capsys=capsys)
    assert code == 2 and "has another labelling config" in err  # a project is blind or not, for good
    code, _, err = cli(adjudicate.main, "push", *wsarg, "--project", "Needs a judge — adjudication", *server,
                       capsys=capsys)
    assert code == 0 and read_state(ws)["adjudication"]["title"] == "Needs a judge — adjudication"


    annotate(judge, judge_tasks[ids[0]], "harmful")
    annotate(judge, judge_tasks[ids[0]], "benign", rationale="the crowd makes it a game")  # final word
    code, out, err = cli(adjudicate.main, "pull", *wsarg, *server, capsys=capsys)
    assert code == 0, err
    assert "recorded 1 adjudication decision(s)" in out and "validation.agreement" in out
    decided = {s.sample_id: s for s in ws.read_samples("annotated")}
    final = [a for a in decided[ids[0]].annotations if a.source == "adjudication"]
    assert [(a.label, a.annotator, a.rationale, a.arm) for a in final] == \
        [("benign", pseudonym(SKIPPER, read_state(ws)["pseudonym_salt"]), "the crowd makes it a game", "mixture")]
    assert len(human(decided[ids[0]])) == 9

    # Reruns change nothing, and annotation.pull keeps the decision when it rebuilds the manifest.
    before = ws.manifest_path("annotated").read_bytes()
    assert cli(adjudicate.main, "pull", *wsarg, *server, capsys=capsys)[0] == 0
    assert cli(pull.main, *wsarg, *server, capsys=capsys)[0] == 0
    assert ws.manifest_path("annotated").read_bytes() == before

    assert cli(agreement.main, *wsarg, "--n-boot", "20", capsys=capsys)[0] == 0
    validated = {s.sample_id: s for s in ws.read_samples("validated")}
    assert (validated[ids[0]].decided_by, validated[ids[0]].consensus_label) == ("adjudication", "benign")
    code, out, _ = cli(adjudicate.main, "push", *wsarg, *server, capsys=capsys)
    assert code == 0 and "queue is empty" in out

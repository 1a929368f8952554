"""annotation.server against a real Label Studio (its own venv, scripts/install_label_studio.sh).

The initialised database template is built once per machine (~30 s, cached under ~/.cache);
each server here starts from a copy of it in a few seconds.
"""

from __future__ import annotations

import os
import shlex
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import httpx
import pytest

from annotation import ls_process, server
from annotation.ls_process import make_template
from annotation.server import (
    listening_addresses,
    read_server_info,
    server_status,
    start_server,
    stop_server,
)
from construction.core.errors import WorkbenchError
from construction.core.workspace import Workspace

REPO = Path(__file__).resolve().parents[1]
TOKEN = "test-token-0123456789"
ADMIN = "admin@test.local"


def _get(url: str) -> tuple[int, bytes]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=5) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "annotation.server", *args],
        cwd=REPO,
        check=False,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture(scope="session")
def template() -> Path:
    return make_template()


@pytest.fixture(scope="module")
def ls(template, tmp_path_factory):
    """One server for the module, started with stray variables Label Studio would otherwise read."""
    data_dir = tmp_path_factory.mktemp("ls-data")
    workspace = tmp_path_factory.mktemp("ls-workspace")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LABEL_STUDIO_ADMIN_EMAIL", ADMIN)
        mp.setenv("LABEL_STUDIO_ADMIN_PASSWORD", "test-password-123")
        mp.setenv("LABEL_STUDIO_API_KEY", TOKEN)
        # Label Studio reads USERNAME/PASSWORD/PORT/HOST bare; start_server must not pass them on.
        mp.setenv("USERNAME", "intruder@example.com")
        mp.setenv("PASSWORD", "intruder-password")
        mp.setenv("PORT", "1")
        mp.setenv("HOST", "http://intruder.example")
        # ... and settings meant for some other Label Studio install.
        mp.setenv("LABEL_STUDIO_DATABASE_NAME", str(data_dir / "leaked.sqlite3"))
        mp.setenv("DJANGO_DB", "postgresql")
        started = time.monotonic()
        info = start_server(data_dir, template=template, workspace=workspace)
        print(f"start from template: {time.monotonic() - started:.1f} s")
        try:
            yield info
        finally:
            stop_server(data_dir)


def test_start_from_template_answers_health_and_records_itself(ls):
    status, body = _get(ls.url + "/health")
    assert (status, body) == (200, b'{"status": "UP"}')
    assert ls.url == f"http://127.0.0.1:{ls.port}"
    assert read_server_info(ls.data_dir) == ls
    assert (ls.data_dir / "label_studio.sqlite3").exists()
    assert ls.document_root.name == "audio" and ls.document_root.is_dir()  # <workspace>/audio by default


def test_listens_on_loopback_only(ls):
    assert listening_addresses(ls.pid) == [("127.0.0.1", ls.port)]
    # A server bound to 0.0.0.0 would accept this too; one bound to 127.0.0.1 refuses it.
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.2", ls.port)) != 0


def test_stray_environment_did_not_leak(ls):
    from label_studio_sdk import LabelStudio

    client = LabelStudio(base_url=ls.url, api_key=TOKEN)
    emails = [u.email for u in client.users.list()]
    assert ADMIN in emails and "intruder@example.com" not in emails
    assert listening_addresses(ls.pid) == [("127.0.0.1", ls.port)]  # PORT=1 was ignored
    assert not (ls.data_dir / "leaked.sqlite3").exists()


def test_status_lists_projects_and_never_prints_the_token(ls):
    from label_studio_sdk import LabelStudio

    client = LabelStudio(base_url=ls.url, api_key=TOKEN)
    project = client.projects.create(title="status check", label_config='<View><Text name="t" value="$text"/></View>')
    client.projects.import_tasks(project.id, request=[{"data": {"text": "a"}}, {"data": {"text": "b"}}])

    st = server_status(ls.data_dir, token=TOKEN)
    assert st.version.startswith("1.23.")
    assert [(p.title, p.task_count, p.annotation_count) for p in st.projects] == [("status check", 2, 0)]

    done = _cli("status", "--data-dir", str(ls.data_dir), env={"LABEL_STUDIO_API_KEY": TOKEN})
    assert done.returncode == 0, done.stderr
    assert ls.url in done.stdout and "'status check': 2 tasks" in done.stdout
    assert TOKEN not in done.stdout + done.stderr


def test_status_with_wrong_token_is_a_clear_error(ls):
    with pytest.raises(WorkbenchError, match="rejected the API token"):
        server_status(ls.data_dir, token="wrong-token-123")


def test_signup_needs_the_invite_link(ls):
    from label_studio_sdk import LabelStudio

    def signup(path: str, email: str) -> int:
        with httpx.Client(base_url=ls.url, trust_env=False) as web:
            page = web.get(path)
            csrf = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.text).group(1)
            form = {"email": email, "password": "annotator-pass-123", "csrfmiddlewaretoken": csrf}
            return web.post(path, data=form).status_code

    assert signup("/user/signup/", "stranger@example.com") == 403
    invite = LabelStudio(base_url=ls.url, api_key=TOKEN).organizations.invites.get_invite_link()
    assert signup(invite.invite_url, "invited@example.com") == 302  # account made, redirected in


def test_start_again_returns_the_running_server(ls, tmp_path):
    assert start_server(ls.data_dir, workspace=ls.document_root.parent) == ls
    assert start_server(ls.data_dir, document_root=ls.document_root) == ls
    with pytest.raises(WorkbenchError, match="already runs"):
        start_server(ls.data_dir, port=server.free_port(), workspace=ls.document_root.parent)
    # another workspace's start: refused with the start of its own server, never a stop of this one (issue 49
    # item 4); with a document root of its own choosing, the stop is what there is to do
    with pytest.raises(WorkbenchError, match=f"was started for the workspace {ls.document_root.parent} ") as refused:
        start_server(ls.data_dir, workspace=tmp_path / "other")
    assert "annotation.server stop" not in str(refused.value)
    assert f"start this workspace's own server: python -m annotation.server start --workspace {tmp_path / 'other'}" \
        in str(refused.value)
    (tmp_path / "shared-audio").mkdir()
    with pytest.raises(WorkbenchError, match=f"already runs .* with document root {ls.document_root}, not"):
        start_server(ls.data_dir, document_root=tmp_path / "shared-audio", workspace=tmp_path / "other")


def test_busy_port_is_refused(tmp_path, template):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(WorkbenchError, match=f"port {port} on 127.0.0.1 is in use"):
            start_server(tmp_path / "data", port=port, template=template, workspace=tmp_path / "ws")
        Workspace(tmp_path / "ws")  # start refuses a folder that is no workspace before the port
        done = _cli("start", "--data-dir", str(tmp_path / "data"), "--port", str(port),
                    "--workspace", str(tmp_path / "ws"))
    assert done.returncode == 2
    assert f"port {port} on 127.0.0.1 is in use" in done.stderr
    assert read_server_info(tmp_path / "data") is None


def test_stop_ends_the_server_and_status_then_fails(tmp_path, template):
    data_dir = tmp_path / "data"
    started = time.monotonic()
    info = start_server(data_dir, template=template, workspace=tmp_path / "ws")
    print(f"second start from template: {time.monotonic() - started:.1f} s")
    assert _get(info.url + "/health")[0] == 200

    done = _cli("stop", "--data-dir", str(data_dir))
    assert done.returncode == 0 and "stopped" in done.stdout
    ls_process._children.pop(info.pid).wait(timeout=10)  # reap: the CLI killed our child
    with pytest.raises(OSError):
        _get(info.url + "/health")
    assert read_server_info(data_dir) is None

    with pytest.raises(WorkbenchError, match="not running"):
        server_status(data_dir)
    done = _cli("status", "--data-dir", str(data_dir))
    assert done.returncode == 2 and "not running" in done.stderr
    assert stop_server(data_dir) is False


def test_missing_venv_is_a_clear_error(tmp_path):
    venv = tmp_path / "no-venv"
    with pytest.raises(WorkbenchError, match="not installed in .*install_label_studio.sh"):
        start_server(tmp_path / "data", venv=venv)
    done = _cli("start", "--data-dir", str(tmp_path / "data"), "--venv", str(venv))
    assert done.returncode == 2 and "install_label_studio.sh" in done.stderr
    assert not (tmp_path / "data").exists()


def test_a_dir_that_is_no_template_is_refused(tmp_path):
    with pytest.raises(WorkbenchError, match="not a Label Studio template"):
        start_server(tmp_path / "data", template=tmp_path, workspace=tmp_path / "ws")
    assert list(tmp_path.iterdir()) == []  # neither the data dir nor the workspace's audio dir made


def _fake_venv(root: Path, script: str) -> Path:
    """A venv whose label-studio is a shell script: drives the failure paths in well under a second."""
    (root / "bin").mkdir(parents=True)
    (root / "lib/python3.11/site-packages/label_studio-1.23.2.dist-info").mkdir(parents=True)
    exe = root / "bin" / "label-studio"
    exe.write_text("#!/bin/sh\n" + script)
    exe.chmod(0o755)
    return root


def test_server_that_dies_during_start_reports_its_log(tmp_path):
    venv = _fake_venv(tmp_path / "venv", "echo 'Error: database is corrupt' >&2\nexit 3\n")
    with pytest.raises(WorkbenchError, match="(?s)exited during start.*database is corrupt"):
        start_server(tmp_path / "data", venv=venv, workspace=tmp_path / "ws")
    assert read_server_info(tmp_path / "data") is None


def test_server_that_never_answers_times_out_and_is_killed(tmp_path):
    venv = _fake_venv(tmp_path / "venv", "echo 'still migrating'\nexec sleep 60\n")
    before = set(ls_process._children)
    with pytest.raises(WorkbenchError, match="(?s)did not answer .* within 1 s.*still migrating"):
        start_server(tmp_path / "data", venv=venv, timeout_s=1, workspace=tmp_path / "ws")
    assert set(ls_process._children) == before  # terminated and reaped
    assert read_server_info(tmp_path / "data") is None


def _tree(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


def test_a_document_root_annotators_could_read_secrets_from_is_refused(tmp_path):
    """Every annotator can read what lies under the document root (see test_annotation's
    test_an_annotator_cannot_read_the_salt_or_the_database): "/", a workspace, an annotation.json
    (the pseudonym salt) or a Label Studio data dir (tokens, emails) must never be under it."""
    # A label-studio that dies at once: were the refusal missing, the test would fail, not start a server.
    venv = _fake_venv(tmp_path / "venv", "exit 3\n")
    shared = tmp_path / "shared"
    (shared / "old-ws").mkdir(parents=True)
    (shared / "old-ws" / "annotation.json").write_text('{"pseudonym_salt": "0123"}')
    (tmp_path / "ws").mkdir()
    cases = [  # (workspace, document root, data dir, why)
        ("ws", "/", "data", "it is the whole disk"),
        ("ws", "shared", "data", f"it holds {shared / 'old-ws' / 'annotation.json'}"),
        ("ws", "ws", "data", f"it holds the workspace {tmp_path / 'ws'}"),
        ("ws", ".", "data", "it holds the Label Studio data dir"),
    ]
    before = _tree(tmp_path)
    for workspace, root, data, why in cases:
        refusal = f"refusing document root {(tmp_path / root).resolve()}: {why}"
        with pytest.raises(WorkbenchError, match=re.escape(refusal)):
            start_server(tmp_path / data, document_root=tmp_path / root, workspace=tmp_path / workspace, venv=venv)
        done = _cli("start", "--data-dir", str(tmp_path / data), "--document-root", str(tmp_path / root),
                    "--workspace", str(tmp_path / workspace), "--venv", str(venv))
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith(f"error: {refusal}")
        assert "Leave out --document-root" in done.stderr
        assert _tree(tmp_path) == before  # nothing made: no data dir, no server.json, no audio dir


def test_wrong_label_studio_series_is_refused(tmp_path):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "label-studio").touch()
    (venv / "lib/python3.11/site-packages/label_studio-1.20.0.dist-info").mkdir(parents=True)
    with pytest.raises(WorkbenchError, match="Label Studio 1.20.0 .* needs 1.23.x"):
        ls_process.installed_version(venv)


# ----------------------------------------------------------------------------------------------
# one server per workspace, as a person types the commands
# ----------------------------------------------------------------------------------------------

def _typed(command: str, env: dict[str, str], unset: tuple[str, ...] = (server.DATA_DIR_ENV,)
           ) -> subprocess.CompletedProcess:
    """A command line as printed in a hint (python -m ...), run from the repo root with this interpreter."""
    argv = shlex.split(command)
    assert argv[:2] == ["python", "-m"], command
    full_env = {k: v for k, v in {**os.environ, **env}.items() if k not in unset}
    return subprocess.run([sys.executable, *argv[1:]], cwd=REPO, env=full_env, capture_output=True, text=True,
                          timeout=180, check=False)


def test_each_workspace_has_its_own_server_and_hints_are_commands(tmp_path, template):
    """Two workspaces, two servers: each data dir is <workspace>/label-studio and serves <workspace>/audio, and a
    project made on one is not on the other. stop and status take --workspace; a hint pasted as it is works;
    --data-dir > $AOR_LABEL_STUDIO_DATA_DIR > <workspace>/label-studio."""
    env = {"LABEL_STUDIO_API_KEY": TOKEN, "LABEL_STUDIO_ADMIN_EMAIL": ADMIN,
           "LABEL_STUDIO_ADMIN_PASSWORD": "test-password-123"}
    one, two = tmp_path / "one", tmp_path / "two"
    try:
        for ws in (one, two):
            Workspace(ws)  # start refuses a folder that is no workspace
            done = _typed(f"python -m annotation.server start --workspace {ws}", env)
            assert done.returncode == 0, done.stderr
            assert f"data dir {ws / 'label-studio'}, serving {ws / 'audio'}" in done.stdout
            assert f"stop it with: python -m annotation.server stop --workspace {ws}" in done.stdout
        first, second = read_server_info(one / "label-studio"), read_server_info(two / "label-studio")
        assert first.port != second.port and first.document_root == one / "audio"

        from label_studio_sdk import LabelStudio

        LabelStudio(base_url=first.url, api_key=TOKEN).projects.create(
            title="only in one", label_config='<View><Text name="t" value="$text"/></View>')
        status = {ws: _typed(f"python -m annotation.server status --workspace {ws}", env) for ws in (one, two)}
        assert "'only in one': 0 tasks" in status[one].stdout and first.url in status[one].stdout
        assert "no projects" in status[two].stdout and second.url in status[two].stdout
        # the variable names the data dir when --data-dir does not; --data-dir wins over it. A workspace named
        # is told another's server is not its own (issue 49 item 6), with the start of its own, never a stop
        shared = _typed(f"python -m annotation.server status --workspace {two}",
                        {**env, server.DATA_DIR_ENV: str(one / "label-studio")}, unset=())
        assert shared.returncode == 2 and f"(data dir {one / 'label-studio'}) was started for the workspace {one}" \
            in shared.stderr, shared.stderr
        assert (f"start this workspace's own server: python -m annotation.server start --workspace {two} "
                f"--data-dir {two / 'label-studio'}") in shared.stderr and "stop" not in shared.stderr
        flag = _typed(f"python -m annotation.server status --workspace {one} --data-dir {two / 'label-studio'}",
                      {**env, server.DATA_DIR_ENV: str(one / "label-studio")}, unset=())
        assert flag.returncode == 2 and f"(data dir {two / 'label-studio'}) was started for the workspace {two}" \
            in flag.stderr, flag.stderr
        for data_dir, url in ((one, first.url), (two, second.url)):  # a data dir alone: its server, whoever's
            done = _typed(f"python -m annotation.server status --data-dir {data_dir / 'label-studio'}", env)
            assert done.returncode == 0 and url in done.stdout, done.stderr

        done = _typed(f"python -m annotation.server stop --workspace {two}", env)
        assert done.returncode == 0 and f"stopped (data dir {two / 'label-studio'})" in done.stdout
        assert read_server_info(two / "label-studio") is None and _get(first.url + "/health")[0] == 200
        done = _typed(f"python -m annotation.server status --workspace {two}", env)
        assert done.returncode == 2
        hint = done.stderr.split("start it with: ", 1)[1].strip()
        assert hint == f"python -m annotation.server start --workspace {two}"
        again = _typed(hint, env)  # pasted as printed: the same data dir, serving the same workspace's audio
        assert again.returncode == 0, again.stderr
        assert f"data dir {two / 'label-studio'}, serving {two / 'audio'}" in again.stdout
    finally:
        for ws in (one, two):
            _typed(f"python -m annotation.server stop --workspace {ws}", env)

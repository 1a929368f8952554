"""Issue 49 items 3, 4 and 6: two workspaces, each with its own Label Studio (started as the docs say, one
server per workspace), whose project ids collide (1, 2, 3 on both). Every Label Studio command of workspace
B pointed at A's server (by its data dir, or by --url) is refused with `error:` and exit 2, and nothing of
A's or B's changes: B's scripted annotators label none of A's tasks, B's pull leaves B's labels, B's push
renames none of A's projects, and no hint tells B to stop A's server. Commands run as typed, from the repo
root; the servers are real (annotation.ownership: the workspace id in annotation.json and in each
project's description, the workspace a server was started for in its server.json)."""

from __future__ import annotations

import json
import re
import shlex
import subprocess

import pytest

from annotation.server import read_server_info
from tests.annotation_helpers import ADMIN_ENV, TOKEN, make_workspace
from tests.conftest import run_module

ENV = {**ADMIN_ENV, "AOR_LABEL_STUDIO_DATA_DIR": "", "LABEL_STUDIO_URL": ""}


def run(*argv: str) -> subprocess.CompletedProcess:
    return run_module(*argv, env=ENV, timeout=300)


def ok(*argv: str) -> str:
    proc = run(*argv)
    assert proc.returncode == 0, f"{argv}: {proc.stderr[-3000:]}"
    return proc.stdout


def projects(ws) -> dict[int, tuple[str, int, int]]:
    """project id -> (title, tasks, annotations) on the workspace's own server."""
    from label_studio_sdk import LabelStudio

    info = read_server_info(ws.root / "label-studio")
    return {p.id: (p.title, p.task_number, p.total_annotations_number)
            for p in LabelStudio(base_url=info.url, api_key=TOKEN).projects.list()}


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """Workspaces A and B, each pushed to its own server, labelled by its scripted annotators and pulled."""
    base = tmp_path_factory.mktemp("ownership")
    a, b = make_workspace(base / "A", 2), make_workspace(base / "B", 2, first=10)
    try:
        for ws in (a, b):
            ok("annotation.server", "start", "--workspace", str(ws.root), "--quiet")
            ok("annotation.push", "--workspace", str(ws.root), "--catch", "0")
            ok("annotation.demo_annotators", "--workspace", str(ws.root), "--annotators", "1", "--quiet")
            ok("annotation.pull", "--workspace", str(ws.root))
        assert set(projects(a)) == set(projects(b))  # the ids collide, as on any two fresh servers
        yield a, b
    finally:
        for ws in (a, b):
            run("annotation.server", "stop", "--workspace", str(ws.root))


def elsewhere(a) -> list[list[str]]:
    """The two ways a command of B is pointed at A's server: its data dir, or its URL."""
    return [["--data-dir", str(a.root / "label-studio")], ["--url", read_server_info(a.root / "label-studio").url]]


def test_b_s_scripted_annotators_never_label_a_s_projects(pair):
    """Item 3: `demo_annotators --workspace B` at A's server put 40 labels into A's projects by B's recorded
    ids (and tasks of keys B never made were labelled as the mixture arm)."""
    a, b = pair
    before = projects(a)
    for server in elsewhere(a):
        proc = run("annotation.demo_annotators", "--workspace", str(b.root), "--annotators", "1", *server)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
        assert proc.stderr.startswith("error: ")
        assert ("was started for the workspace" if server[0] == "--data-dir" else
                "belongs to another workspace") in proc.stderr
    assert projects(a) == before


def test_pulling_b_from_a_s_server_leaves_b_s_labels(pair):
    """Item 6: `pull --workspace B` from A's server exited 0 and rewrote B's annotated.jsonl with 0
    annotations (it had 6). status of A's server from B is refused too."""
    a, b = pair
    manifests = {p.name: p.read_bytes() for p in (b.root / "manifests").glob("*.jsonl")}
    assert sum(len(json.loads(line)["annotations"]) for line in manifests["annotated.jsonl"].splitlines()) == 6
    for server in elsewhere(a):
        proc = run("annotation.pull", "--workspace", str(b.root), *server)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
        assert "nothing was changed" in proc.stderr.lower()
    assert {p.name: p.read_bytes() for p in (b.root / "manifests").glob("*.jsonl")} == manifests
    status = run("annotation.server", "status", "--workspace", str(b.root), "--data-dir", str(a.root / "label-studio"))
    assert status.returncode == 2 and f"was started for the workspace {a.root}" in status.stderr
    title = json.loads((a.root / "annotation.json").read_text())["project"]["title"]
    assert re.fullmatch(r"AOR-Bench [0-9a-f]{6}", title) and "A" not in title.split()[1:]  # names no folder
    assert f"'{title} — speech'" in ok("annotation.server", "status", "--workspace", str(a.root))


def test_a_refusal_never_hands_a_s_server_to_b(pair):
    """Item 4: B's push at A's server was refused with "stop" and "start" commands which, typed as written,
    stopped A's server and restarted it serving B's audio; B's push then renamed A's three projects and
    imported tasks into them. Now the refusal names only the start of B's own server, never a stop, and
    even with A's data dir restarted for B by hand, B's push changes none of A's projects."""
    a, b = pair
    before = projects(a)
    proc = run("annotation.push", "--workspace", str(b.root), "--catch", "0",
               "--data-dir", str(a.root / "label-studio"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert "annotation.server stop" not in proc.stderr
    hint = proc.stderr.split("start this workspace's own server: ", 1)[1].split("\n")[0].strip()
    assert hint == f"python -m annotation.server start --workspace {b.root}"
    assert run(*shlex.split(hint)[2:]).returncode == 0  # typed as printed: B's own server, already running
    assert projects(a) == before and read_server_info(a.root / "label-studio").workspace == a.root

    # by hand anyway: A's server stopped, its data dir started for B (serving B's audio), B pushes to it
    a_dir = str(a.root / "label-studio")
    ok("annotation.server", "stop", "--workspace", str(a.root))
    try:
        ok("annotation.server", "start", "--workspace", str(b.root), "--data-dir", a_dir, "--quiet")
        proc = run("annotation.push", "--workspace", str(b.root), "--catch", "0", "--data-dir", a_dir)
        assert proc.returncode == 2 and "belongs to another workspace" in proc.stderr, proc.stderr[-3000:]
        assert "annotation.server stop" not in proc.stderr
    finally:
        run("annotation.server", "stop", "--data-dir", a_dir)
        ok("annotation.server", "start", "--workspace", str(a.root), "--quiet")
    assert projects(a) == before  # no title, task or label of A's changed


def test_the_ownership_rules_without_a_server():
    """annotation.ownership's rules, each way a project can stand: marked by this workspace (taken), by
    another (refused), unmarked and never marked here (made before marks: taken), unmarked though this
    workspace marked it (another server's project of that id, or a mark edited away: refused, with the line
    to put back)."""
    from types import SimpleNamespace

    from annotation.ownership import MARKED, check_owner, marked_owner, new_workspace_id, project_mark, with_mark
    from construction.core.errors import WorkbenchError

    state: dict = {}
    mine = new_workspace_id(state)
    assert new_workspace_id(state) == mine and len(mine) == 32
    other = new_workspace_id({})
    server = SimpleNamespace(url="http://127.0.0.1:1")

    def project(description):
        return SimpleNamespace(id=3, title="AOR-Bench — speech", description=description)

    assert marked_owner(project(with_mark("notes of the lead", mine))) == mine
    assert "notes of the lead" in with_mark(with_mark("notes of the lead", other), mine)
    assert marked_owner(project(with_mark(with_mark("x", other), mine))) == mine  # one mark, the new one
    check_owner(server, project(with_mark(None, mine)), state, {MARKED: True})
    check_owner(server, project(""), state, {})  # made before marks existed
    with pytest.raises(WorkbenchError, match=f"belongs to another workspace \\(id {other}\\)"):
        check_owner(server, project(with_mark(None, other)), state, {MARKED: True})
    with pytest.raises(WorkbenchError, match="belongs to no workspace") as refused:
        check_owner(server, project("edited away"), state, {MARKED: True})
    assert project_mark(mine) in str(refused.value) and "Nothing was changed" in str(refused.value)

"""Which workspace a Label Studio server and its projects belong to, so that no command of one workspace
reads, labels, renames or fills another's.

Two workspaces can meet on one server: a data dir passed to the wrong workspace (--data-dir), or a
server restarted for another workspace. Project ids are per server (1, 2, 3 on every new one), so a
workspace's recorded ids name another workspace's projects there. So:

  - a workspace has an id, `workspace_id` in <W>/annotation.json (made by its first push);
  - every project a push makes or takes gets that id in its description (PROJECT_MARK), and the
    workspace's state entry of the project records `marked` once it has;
  - every command that works on a workspace's projects (push, pull, the demo annotators, the library
    review, adjudication) checks the mark first: a project marked by another workspace, or one this
    workspace marked that has lost its mark (another server's project of the same id), is refused with
    `error:` and exit 2 before anything changes. A project without any mark that the workspace never
    marked is one made before marks existed: taken, and marked by the next push;
  - a server started for a workspace (its document root that workspace's audio store) records it in its
    server.json, and a command of another workspace is refused at connect, with the command that starts
    its own server (never one that stops the running one).

The mark is a plain id, not a secret: in Label Studio's Community edition anyone may edit a project's
description, so it guards against mistakes, not against an annotator (docs/security.md).
"""

from __future__ import annotations

import re
import secrets
from pathlib import Path
from typing import Any

from construction.core.errors import WorkbenchError

WORKSPACE_ID = "workspace_id"  # the key in <W>/annotation.json
MARKED = "marked"  # the key in a project's state entry: push has written the workspace's mark into it
_MARK_RE = re.compile(r"AOR-Bench workspace ([0-9a-f]{32})\b")


def new_workspace_id(state: dict[str, Any]) -> str:
    """The workspace's id, made on first use (the caller writes the state)."""
    if not re.fullmatch(r"[0-9a-f]{32}", str(state.get(WORKSPACE_ID) or "")):
        state[WORKSPACE_ID] = secrets.token_hex(16)
    return state[WORKSPACE_ID]


def project_mark(workspace_id: str) -> str:
    return (f"AOR-Bench workspace {workspace_id}: the workbench reads this line to tell which workspace the "
            "project belongs to; leave it as it is.")


def marked_owner(project: Any) -> str | None:
    """The workspace id a project's description names, or None."""
    found = _MARK_RE.search(getattr(project, "description", None) or "")
    return found.group(1) if found else None


def with_mark(description: str | None, workspace_id: str) -> str:
    """The description with the workspace's mark as its first line (any other mark removed)."""
    rest = "\n".join(line for line in (description or "").splitlines() if not _MARK_RE.search(line)).strip()
    return project_mark(workspace_id) + (f"\n\n{rest}" if rest else "")


def check_owner(server: Any, project: Any, state: dict[str, Any], entry: dict[str, Any] | None = None) -> None:
    """Refuse a project that is not this workspace's (see the module's rules). `entry`: the workspace's
    state entry of the project, when it is a recorded one."""
    mine, found = state.get(WORKSPACE_ID), marked_owner(project)
    if found is not None and found == mine:
        return
    if found is None and not (entry or {}).get(MARKED):
        return  # made before projects were marked: the next push marks it
    whose = (f"to another workspace (id {found})" if found is not None else
             "to no workspace, although this workspace marked its project of that id: it is another project")
    mended = ("" if found is not None or not mine else
              f". If it is this workspace's own and someone edited its description, put this line back into the "
              f"description: {project_mark(mine)}")
    raise WorkbenchError(
        f"project {project.id} ({getattr(project, 'title', '')!r}) at {server.url} belongs {whose}, not to this "
        f"workspace ({mine or 'not pushed yet'}): this Label Studio is not the one this workspace pushed to. "
        "Nothing was changed. Use this workspace's own server (python -m annotation.server start --workspace W "
        f"starts it, with its own data dir), or pass --project with a title of this workspace's own{mended}")


def check_server_owner(info: Any, workspace: Path, own_start: str) -> None:
    """Refuse a server that was started for another workspace (`info.workspace`, from its server.json).
    `own_start`: the command that starts this workspace's own server."""
    owner = getattr(info, "workspace", None)
    if owner is None or Path(owner) == workspace:
        return
    raise WorkbenchError(
        f"the Label Studio at {info.url} (data dir {info.data_dir}) was started for the workspace {owner} and "
        f"serves its audio: its projects are that workspace's, not {workspace}'s, and nothing was changed. Leave "
        f"it running (the other workspace uses it) and start this workspace's own server: {own_start}")

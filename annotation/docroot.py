"""What a Label Studio server may serve: its document root holds audio and nothing else.

Label Studio serves files under its document root to every logged-in user, and in the community edition
any annotator may add a local-files storage for any directory below it. So a document root is refused
when it would let annotators read more than audio: "/", one that holds the workspace, any annotation.json
(a pseudonym salt) or a Label Studio data dir, found by name and, for files, by what they are (a hard link
or a renamed copy is found too). annotation.server checks it at every start.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from pathlib import Path

from annotation.ls_process import DB_FILE
from construction.core.errors import WorkbenchError

STATE_FILE = "annotation.json"  # a workspace's annotation state, with the pseudonym salt (annotation.state)
TASKS_FILE = "annotation_tasks.json"  # a workspace's task key map (annotation.protocol)

AUDIO_MAGIC = (b"RIFF", b"fLaC", b"OggS", b"ID3", b"\xff\xfb", b"\xff\xf3", b"\xff\xf2")
SCAN_BYTES = 1 << 20  # what is read of a file that is not audio, looking for a secret inside
TASK_KEY_RE = re.compile(rb'"t[0-9a-f]{20}"')  # annotation.protocol.task_key, as the key map writes it


def secret_guard(data_dir: Path, workspace: Path) -> tuple[set[tuple[int, int]], list[bytes]]:
    """What marks a secret file whatever its name: the (device, inode) of the workspace's annotation.json
    and key map and of the Label Studio database, and the secrets annotation.json holds."""
    inodes, needles = set(), []
    for path in (workspace / STATE_FILE, workspace / TASKS_FILE, data_dir / DB_FILE):
        with contextlib.suppress(OSError):
            st = path.stat()
            inodes.add((st.st_dev, st.st_ino))
    with contextlib.suppress(OSError, ValueError, AttributeError):
        state = json.loads((workspace / STATE_FILE).read_text())
        needles = [str(state[k]).encode() for k in ("pseudonym_salt", "task_key_secret") if state.get(k)]
    return inodes, needles


def secret_file(path: Path, guard: tuple[set[tuple[int, int]], list[bytes]]) -> str:
    """Why a file under a document root must not be served ("" when it may): a hard link of a secret file,
    a SQLite database (Label Studio's has every token), a file with the workspace's salt or key secret or
    task keys in it (a renamed copy). Audio (by its first bytes) is not read further."""
    inodes, needles = guard
    try:
        st = path.stat()
        if (st.st_dev, st.st_ino) in inodes:
            return "is a hard link of a workspace or Label Studio secret file"
        with open(path, "rb") as f:
            head = f.read(16)
            if head.startswith(b"SQLite format 3\x00"):
                return "is a SQLite database (a copy of Label Studio's, with every token?)"
            if head.startswith(AUDIO_MAGIC):
                return ""
            body = head + f.read(SCAN_BYTES)
    except OSError:
        return ""
    if any(n in body for n in needles):
        return f"holds the pseudonym salt or the task key secret of the workspace (a copy of its {STATE_FILE}?)"
    if TASK_KEY_RE.search(body):
        return f"holds task keys (a copy of a {TASKS_FILE}?)"
    return ""


def check_document_root(document_root: Path, data_dir: Path, workspace: Path) -> None:
    """Refuse a document root that would let annotators read more than audio: "/", or one that holds
    the workspace, any annotation.json (a pseudonym salt) or a Label Studio data dir, found by name and, for
    files, by what they are (secret_file: a hard link or renamed copy is found too)."""
    why = ""
    if document_root == Path(document_root.anchor):
        why = "it is the whole disk"
    elif data_dir.is_relative_to(document_root):
        why = f"it holds the Label Studio data dir {data_dir} (its database has every token and email)"
    elif workspace.is_relative_to(document_root):
        why = f"it holds the workspace {workspace}, whose {STATE_FILE} has the pseudonym salt"
    else:
        # Label Studio serves what a link under the root points to: follow links, and look where they lead.
        seen: set[Path] = set()
        guard = secret_guard(data_dir, workspace)
        for parent, dirs, files in os.walk(document_root, followlinks=True):
            real = Path(parent).resolve()
            if real in seen:  # a link loop, or two links to one place
                dirs[:] = []
                continue
            seen.add(real)
            names = set(files) | {Path(parent, f).resolve().name for f in files if Path(parent, f).is_symlink()}
            found = {STATE_FILE, TASKS_FILE, DB_FILE} & names
            held = [d for d in (data_dir, workspace) if d.is_relative_to(real)]
            if held or found:
                what = held[0] if held else Path(parent) / sorted(found)[0]
                why = f"{parent} leads to {real}, which holds {what}" if Path(parent) != real else f"it holds {what}"
                break
            secret = next((f"{Path(parent, f)} {w}" for f in sorted(files) if (w := secret_file(Path(parent, f), guard))),
                          "")
            if secret:
                why = secret
                break
    if why:
        raise WorkbenchError(
            f"refusing document root {document_root}: {why}, and every annotator could read what is under it. "
            "Leave out --document-root to serve only the workspace's audio (<workspace>/audio), "
            "or pass a directory that holds nothing but audio"
        )

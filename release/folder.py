"""The release folder on disk: written whole into a temp folder beside it, then swapped into place, one
export at a time, with what a killed export left behind cleared first; and its checksums file.

Apart from release.export so the file-system care (locks, fsync, the swap) reads apart from what goes
into the folder.
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

from construction.core.errors import WorkbenchError
from construction.core.workspace import fsync_dir, sha256_file
from release.inputs import FORMATS


@contextlib.contextmanager
def exclusive(out: Path) -> Iterator[None]:
    """One export at a time into `out`: the leftovers recover removes beside it (named after it) are then
    never live. The lock is a file beside it, `.OUT.lock`, so exports into sibling folders run side by side;
    it is removed when the export ends, so a finished export leaves nothing beside its folder."""
    path = out.parent / f".{out.name}.lock"
    for _ in range(10):
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise WorkbenchError(f"another export is writing into {out}; wait for it to finish") from None
        try:
            if os.stat(path).st_ino == os.fstat(fd).st_ino:
                break  # the lock file still in place: ours
        except FileNotFoundError:
            pass
        os.close(fd)  # an export that just ended removed the file we locked: take the new one
    else:
        raise WorkbenchError(f"another export is writing into {out}; wait for it to finish")
    try:
        yield
    finally:
        path.unlink(missing_ok=True)  # still holding it: an export waiting on this file takes a new one
        os.close(fd)


def recover(out: Path) -> None:
    """Clear what a killed export left beside `out`: an unfinished `.OUT.building-*` folder, and the
    previous release hidden in `.OUT.old-*`, which is put back if the kill came mid-swap."""
    pattern = glob.escape(f".{out.name}")
    for unfinished in out.parent.glob(pattern + ".building-*"):
        shutil.rmtree(unfinished, ignore_errors=True)
    for hidden in sorted(out.parent.glob(pattern + ".old-*")):
        if not out.exists() and is_release_dir(hidden / "release"):
            os.replace(hidden / "release", out)
        shutil.rmtree(hidden, ignore_errors=True)
    fsync_dir(out.parent)


def refusal(problems: list[str]) -> WorkbenchError:
    shown = problems[:50]
    more = f"\n  ... and {len(problems) - 50} more" if len(problems) > 50 else ""
    return WorkbenchError(f"refusing to release: {len(problems)} problem(s)\n  " + "\n  ".join(shown) + more)


def check_target(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise WorkbenchError(f"--out {out} is a file, not a folder")
    if out.is_dir() and any(out.iterdir()) and not is_release_dir(out):
        raise WorkbenchError(f"--out {out} is a non-empty folder that is not a release; refusing to overwrite it")


def is_release_dir(path: Path) -> bool:
    try:
        return json.loads((path / "release.json").read_text()).get("format") in FORMATS
    except (OSError, ValueError, AttributeError):
        return False


def replace_folder(tmp: Path, out: Path) -> None:
    """Swap the finished folder in; the old release is only removed once the new one is in place."""
    for folder in [*(p for p in tmp.rglob("*") if p.is_dir()), tmp]:  # on disk before it is visible
        for path in folder.iterdir():
            if path.is_file():
                with open(path, "rb") as f:
                    os.fsync(f.fileno())
        fsync_dir(folder)
    old = None
    if out.exists():
        old = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.old-"))
        os.replace(out, old / "release")
    try:
        os.replace(tmp, out)
    except OSError:
        if old is not None:
            os.replace(old / "release", out)  # put the previous release back
        raise
    fsync_dir(out.parent)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def write_checksums(root: Path) -> None:
    lines = [f"{sha256_file(p)}  {p.relative_to(root).as_posix()}"
             for p in sorted(root.rglob("*")) if p.is_file() and p.name != "checksums.sha256"]
    (root / "checksums.sha256").write_text("\n".join(lines) + "\n")

"""Set-up is per checkout and idempotent: this checkout's venv imports this checkout's code, and a second
`make setup` with nothing changed needs no network (run in a network namespace with no interfaces up)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def test_the_venv_is_this_checkouts_own():
    assert Path(sys.prefix).resolve() == (REPO / ".venv").resolve(), "run the tests with .venv/bin/python (make test)"
    proc = subprocess.run([str(REPO / ".venv/bin/python"), "-c", "import construction; print(construction.__file__)"],
                          cwd="/", capture_output=True, text=True, check=True)  # not the cwd: the install itself
    assert Path(proc.stdout.strip()).resolve().is_relative_to(REPO.resolve())


def test_a_second_setup_touches_no_network():
    """make test runs make setup first, so this is the second run (run alone after a change to pyproject.toml or
    the set-up scripts, the first `make setup` reinstalls)."""
    assert shutil.which("unshare"), "util-linux's unshare is part of Debian's base system"
    proc = subprocess.run(["unshare", "-n", "make", "setup"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "setup complete" in proc.stdout
    assert "Python environment in" not in proc.stdout  # nothing was reinstalled

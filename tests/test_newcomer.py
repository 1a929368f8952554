"""What a newcomer meets off the journey pages (issue 50): a workspace of any name stays out of git, a mistyped
workspace is refused before anything starts, Ctrl-C ends a build with one line, and the lines a person reads
are commands to run, not fragments of a server's log. Each runs the command as typed, from a folder that
stands for a clone's root."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import REPO

PY = sys.executable


def typed(cwd: Path, *argv: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """`python -m ...` as a person types it in `cwd`, with this checkout's code."""
    return subprocess.run([PY, "-m", *argv], cwd=cwd, env={**os.environ, "PYTHONPATH": str(REPO)}, text=True,
                          capture_output=True, timeout=timeout)


def workers(group: int) -> list[str]:
    """The running worker processes (multiprocessing's spawned interpreters) of a session (the build started one)."""
    ps = subprocess.run(["ps", "-ww", "-o", "stat=,args=", "-s", str(group)], capture_output=True, text=True).stdout
    return [line for line in ps.splitlines() if "spawn_main" in line and not line.startswith("Z")]


def test_ctrl_c_during_a_build_prints_one_line_and_no_worker_traceback(tmp_path):
    """A real build with a pool of worker processes, interrupted as a terminal does (SIGINT to the whole
    foreground process group) while a worker starts to synthesise: one line says how to resume, no traceback from any process,
    exit 130, and no worker is left behind."""
    err_path = tmp_path / "stderr.txt"
    with open(err_path, "w") as err_file:
        proc = subprocess.Popen([PY, "-m", "construction.pipeline", "--workspace", "ws", "--per-category", "1",
                                 "--jobs", "2"], cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)},
                                stdout=subprocess.DEVNULL, stderr=err_file, text=True, start_new_session=True)
    deadline = time.monotonic() + 240
    while not workers(proc.pid) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert workers(proc.pid), f"the build never started a worker:\n{err_path.read_text()}"
    time.sleep(0.5)  # it imports its modules (seconds): a Ctrl-C there used to end in its traceback
    os.killpg(proc.pid, signal.SIGINT)
    pressed = time.monotonic()
    proc.wait(timeout=120)
    assert time.monotonic() - pressed < 30, "Ctrl-C waited for the workers' batches"
    err = err_path.read_text()
    assert proc.returncode == 130, (proc.returncode, err[-3000:])
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err[-3000:]
    assert err.count("interrupted; rerun the same command to resume") == 1, err[-3000:]
    time.sleep(1)  # a worker left behind would still run (a zombie is not running: this machine's init reaps late)
    left = subprocess.run(["ps", "-ww", "-o", "pid=,stat=,args=", "-s", str(proc.pid)], capture_output=True, text=True).stdout
    assert not [line for line in left.splitlines() if line.split()[1][0] != "Z"], left

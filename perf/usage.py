"""What a piece of work cost: wall seconds, CPU seconds (this process and the children it has waited for:
a stage's worker pool is shut down, so reaped, when the stage ends) and the peak resident memory of this
process with all its descendants at once (sampled from /proc every half second), so a stage that runs in
worker processes is counted whole and "no stage above 8 GB resident" can be read off it.

    with Usage() as used:
        ...
    used.figures()  # {"wall_s", "cpu_s", "peak_rss_mib"}

perf/timed.py wraps a command in it (scripts/demo.sh with STAGE_TIMES set, perf/rehearsal.py), so the
build is measured from outside and carries no sampler thread of its own. (The build's Ctrl-C test that once
failed in full suites, first blamed on such a thread, failed without it too: the suite had been started as a
background job, which inherits SIGINT ignored; tests/conftest.py's pytest_configure restores it.)
"""

from __future__ import annotations

import os
import resource
import signal
import threading
import time
from pathlib import Path

SAMPLE_S = 0.5


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except OSError:  # gone, or a kernel without /proc/.../children
            pass
    return out


def tree_rss_bytes(pid: int | None = None) -> int:
    """The resident memory of `pid` (default this process) and every descendant, summed (0 off Linux)."""
    total, stack = 0, [pid or os.getpid()]
    while stack:
        p = stack.pop()
        try:
            with open(f"/proc/{p}/status") as f:
                total += next((int(line.split()[1]) * 1024 for line in f if line.startswith("VmRSS:")), 0)
        except OSError:
            continue
        stack += _children(p)
    return total


def _cpu_s() -> float:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


class Usage:
    def __enter__(self) -> "Usage":
        self.peak, self._stop = tree_rss_bytes(), threading.Event()
        self._wall, self._cpu = time.monotonic(), _cpu_s()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        # a Ctrl-C must reach the main thread: delivered to this one instead, it would not wake the main
        # thread from its wait (no EINTR there), and the measured command would be left running
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
        while not self._stop.wait(SAMPLE_S):
            self.peak = max(self.peak, tree_rss_bytes())

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self.wall_s, self.cpu_s = time.monotonic() - self._wall, _cpu_s() - self._cpu

    def figures(self) -> dict[str, float]:
        return {"wall_s": round(self.wall_s, 1), "cpu_s": round(self.cpu_s, 1),
                "peak_rss_mib": round(self.peak / 2**20)}

"""A full-size rehearsal (issue 51): the whole flow of `make demo` on a build config, each step timed, then
the release loaded back with `datasets` from its folder and from a loopback Hub, and a table of every
step's wall time, CPU time and peak memory per clip.

    python perf/rehearsal.py --config configs/aor-bench-3000.yaml --per-category 14 --workspace ws-r500
    python perf/rehearsal.py --config configs/aor-bench-3000.yaml --workspace ws-r3000   # the config's 84

The flow is scripts/demo.sh's (build -> scripted labels through the real Label Studio in staged rounds ->
agreement -> export -> the stub model's evaluation of every input) run with CONFIG, PER_CATEGORY and
STAGE_TIMES set: each step appends its figures to WORKSPACE/stage-times.jsonl (perf/timed.py: CPU counts
a step's workers, memory is a step with all its processes at their peak), and Label Studio's server, a
daemon, is followed on its own (ServerWatch). Every stage resumes, so a rehearsal stopped (killed, a
session's end) is continued by running the same command again; a step run twice is summed (a killed run's
own figures are lost with it). The build's split by stage is in WORKSPACE/stats/pipeline.json (seconds per
stage; the build measures no memory itself, see perf/usage.py). `--report` prints the table only.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import threading
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

HUB_REPO = "aor/rehearsal"
# docs/release.md's loading snippet, over every row and every audio column (WAV bytes read with soundfile)
LOADER = """
import io, sys
import soundfile as sf
from datasets import Audio, load_dataset
source, n = sys.argv[1], 0
for config in ("default", "controls"):
    ds = load_dataset(source, config, split="test")
    columns = [c for c in ("audio", "speech_audio", "scene_audio", "irrelevant_audio", "danger_audio") if c in ds.column_names]
    for column in columns:
        ds = ds.cast_column(column, Audio(decode=False))
    for row in ds:
        for column in columns:
            if row[column] is not None:
                assert sf.read(io.BytesIO(row[column]["bytes"]))[0].size > 0
                n += 1
    print(f"{source} {config}: {len(ds)} rows")
print(f"decoded {n} clips from {source}")
"""


class ServerWatch:
    """Label Studio runs as a daemon, so no step's CPU counts it: this follows the server of the workspace
    (its data dir's server.json) while the flow runs, and appends its CPU time (its processes' own and their
    reaped children's, from /proc) and its peak memory with its descendants as a step of its own."""

    def __init__(self, data_dir: Path, times: Path):
        self.info, self.times = data_dir / "server.json", times
        self.cpu: dict[int, float] = {}  # pid -> its last CPU seconds
        self.peak, self.seen_s, self._stop = 0, 0.0, threading.Event()
        self._thread = threading.Thread(target=self._follow, daemon=True)

    def _follow(self) -> None:
        from usage import tree_rss_bytes  # perf/usage.py, beside this script

        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})  # a Ctrl-C is the main thread's
        tick = os.sysconf("SC_CLK_TCK")
        while not self._stop.wait(2.0):
            try:
                pid = int(json.loads(self.info.read_text())["pid"])
                fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, ValueError, KeyError):
                continue
            self.cpu[pid] = sum(int(x) for x in fields[11:15]) / tick  # utime stime cutime cstime
            self.peak = max(self.peak, tree_rss_bytes(pid))
            self.seen_s += 2.0

    def __enter__(self) -> "ServerWatch":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        if self.cpu:
            with open(self.times, "a") as f:
                f.write(json.dumps({"name": "label studio server (daemon)", "wall_s": round(self.seen_s, 1),
                                    "cpu_s": round(sum(self.cpu.values()), 1),
                                    "peak_rss_mib": round(self.peak / 2**20), "exit": 0}) + "\n")


def timed(times: Path, name: str, command: list[str], env: dict | None = None) -> None:
    code = subprocess.run([sys.executable, "perf/timed.py", "--log", str(times), "--name", name,
                           "--", *command], cwd=REPO, env=env, check=False).returncode
    if code:
        raise SystemExit(f"error: {name} failed (exit {code})")


def load_back(ws: Path, times: Path) -> None:
    """The release from its folder, then pushed to a loopback Hub (tests/hub_stub.py) and read from it."""
    from tests.hub_stub import HubStub

    timed(times, "load folder", [sys.executable, "-c", LOADER, str(ws / "release")])
    with HubStub(tokens=None, lfs=True) as hub:  # the shards stream through LFS, as to the Hub
        env = {**os.environ, "HF_ENDPOINT": hub.url, "HF_TOKEN": "hf_rehearsal", "HF_HUB_DISABLE_XET": "1"}
        timed(times, "push loopback hub", [sys.executable, "-m", "release.export", "--workspace", str(ws),
                                           "--out", str(ws / "release"),
                                           "--push-to-hub", HUB_REPO], env)
        timed(times, "load hub", [sys.executable, "-c", LOADER, HUB_REPO], env)


def report(ws: Path) -> str:
    rows: dict[str, dict] = defaultdict(lambda: {"wall_s": 0.0, "cpu_s": 0.0, "peak_rss_mib": 0, "runs": 0})
    for line in (ws / "stage-times.jsonl").read_text().splitlines():
        r = json.loads(line)
        row = rows[r["name"]]
        row["wall_s"] += r["wall_s"]
        row["cpu_s"] += r["cpu_s"]
        row["peak_rss_mib"] = max(row["peak_rss_mib"], r["peak_rss_mib"])
        row["runs"] += 1
    rendered = sum(1 for _ in open(ws / "manifests" / "generate.jsonl")) if (ws / "manifests" / "generate.jsonl").exists() else 0
    release = ws / "release" / "release.json"
    clips = json.loads(release.read_text()).get("num_samples", 0) if release.exists() else 0
    lines = [f"rehearsal {ws.name}: {rendered} variants rendered, {clips} clips released; host "
             f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
             f"{'step':<34}{'runs':>5}{'wall s':>9}{'CPU s':>9}{'peak MiB':>10}{'wall ms/clip':>14}{'CPU ms/clip':>13}"]
    per = rendered or 1
    for name, r in rows.items():
        lines.append(f"{name:<34}{r['runs']:>5}{r['wall_s']:>9.0f}{r['cpu_s']:>9.0f}{r['peak_rss_mib']:>10}"
                     f"{1000 * r['wall_s'] / per:>14.0f}{1000 * r['cpu_s'] / per:>13.0f}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="configs/aor-bench-3000.yaml")
    parser.add_argument("--per-category", type=int, help="lines per category (default: the config's)")
    parser.add_argument("--workspace", required=True)
    parser.add_argument("--report", action="store_true", help="print the table of a finished rehearsal only")
    args = parser.parse_args()
    ws = Path(args.workspace).resolve()
    times = ws / "stage-times.jsonl"
    if not args.report:
        ws.mkdir(parents=True, exist_ok=True)
        per_category = args.per_category
        if per_category is None:
            from construction.core.config import load_config
            per_category = load_config(args.config).generate.per_category
        env = {**os.environ, "WORKSPACE": str(ws), "PER_CATEGORY": str(per_category), "CONFIG": args.config,
               "STAGE_TIMES": str(times), "PYTHON": sys.executable}
        with ServerWatch(ws / "label-studio", times):
            code = subprocess.run(["bash", "scripts/demo.sh"], cwd=REPO, env=env, check=False).returncode
        if code:
            print(f"error: the flow stopped (exit {code}); run the same command again to resume", file=sys.stderr)
            return 2
        load_back(ws, times)
    print(report(ws))
    return 0


if __name__ == "__main__":
    sys.exit(main())

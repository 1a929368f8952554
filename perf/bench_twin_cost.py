"""What the twins cost in the mix: CPU seconds a sample of MixStage.mix_one with both twins and with none,
for this code and for another checkout, alternating, on the same scripts and speech.

    python perf/bench_twin_cost.py --workspace W --before-code DIR [--before-workspace W0] [--sounds LIB]
                                   [--rounds 2] [--samples 30]

DIR is a checkout of the other commit (e.g. `git worktree add /tmp/before REV`); W0 a workspace that code
can read with the same synthesize manifest (a build of the same seed and scripts; default W). Both runs
use LIB as the sound library (default: W's config), with mix.min_clips_per_defining_tag 1, so both mix
the same clips. Nothing is written into W or W0: the mix stores its audio in a scratch folder. Prints
one JSON line per run and the medians.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def worker(code: str, workspace: str, sounds: str | None, samples: int) -> dict[str, float]:
    sys.path.insert(0, code)
    from construction.core.config import load_config
    from construction.core.workspace import Workspace
    from construction.mix import MixStage

    ws = Workspace(workspace)
    out = {}
    with tempfile.TemporaryDirectory() as scratch:
        for twins in (True, False):
            overrides = {"mix.min_clips_per_defining_tag": 1, "mix.irrelevant_twin": twins, "mix.danger_twin": twins}
            if sounds:
                overrides["mix.sounds"] = sounds
            stage = MixStage(str(ws.root), load_config(ws.root / "config.yaml", overrides))
            stage.setup()
            stage.ws = Workspace(scratch)  # the mix stores its audio here; the speech is read from W
            stage.ws.load_audio = ws.load_audio
            chosen = list(ws.read_samples("synthesize"))[:samples]
            started = time.process_time()
            for sample in chosen:
                stage.mix_one(sample, twins=True)
            out["twins" if twins else "none"] = (time.process_time() - started) / len(chosen)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspace", required=True)
    parser.add_argument("--before-code", required=True)
    parser.add_argument("--before-workspace")
    parser.add_argument("--sounds")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--samples", type=int, default=30)
    parser.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        code, workspace, sounds = args.worker
        print(json.dumps(worker(code, workspace, sounds or None, args.samples)))
        return 0
    runs: dict[str, list[dict[str, float]]] = {"before": [], "after": []}
    sides = {"before": (args.before_code, args.before_workspace or args.workspace), "after": (str(ROOT), args.workspace)}
    for _ in range(args.rounds):
        for side, (code, workspace) in sides.items():
            proc = subprocess.run([sys.executable, __file__, "--workspace", args.workspace, "--before-code", code,
                                   "--samples", str(args.samples), "--worker", code, workspace, args.sounds or ""],
                                  capture_output=True, text=True, cwd="/", env={"PYTHONPATH": code, "PATH": "/usr/bin:/bin"})
            if proc.returncode:
                print(proc.stderr, file=sys.stderr)
                return 2
            runs[side].append(json.loads(proc.stdout.strip().splitlines()[-1]))
            print(side, runs[side][-1])
    for side, rows in runs.items():
        twins, none = statistics.median(r["twins"] for r in rows), statistics.median(r["none"] for r in rows)
        print(f"{side}: {twins:.3f} CPU-s a sample with both twins, {none:.3f} without; the twins {twins - none:.3f}")
    b = {k: statistics.median(r[k] for r in runs["before"]) for k in ("twins", "none")}
    a = {k: statistics.median(r[k] for r in runs["after"]) for k in ("twins", "none")}
    print(f"ratio after / before: mix with twins {a['twins'] / b['twins']:.2f}, twins alone "
          f"{(a['twins'] - a['none']) / (b['twins'] - b['none']):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The maintainer journey's labelling (docs/journeys/maintainer.md step 3), this code against another commit.

    python perf/bench_labelling_loop.py --workspace W [--before REF] [--after REF] [--rounds 1]   (--help)

W is a workspace built as the page's step 2 builds it (`python -m construction.pipeline --per-category 1`,
then `python -m construction.controls`); it is never written. Each pass exports a commit's tree (git
archive) to a scratch folder, copies W into it as `workspace`, and types the page's commands there, with
this Python: Label Studio's start, the staged rounds (push, the demo annotators, pull, agreement) until a
round submits nothing, the adjudication, the library review, the stop. Passes alternate (before, after,
before, ...) so a change in the machine's load hits both alike. Prints per pass the wall seconds of each
command (summed by command), the total, the labels each round submitted (the same on both sides: the demo
is seeded, and both copies get the same task-key secret and salt), and after/before of the totals (the
median over rounds).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from secrets import token_hex

ROOT = Path(__file__).resolve().parents[1]
WS = ["--workspace", "workspace"]
ROUNDS = 7  # the page's `for round in 1 2 3 4 5 6 7`
AFTER_ROUNDS = [("validation.adjudicate", "push"), ("annotation.demo_annotators", "--adjudication"),
                ("validation.adjudicate", "pull"), ("validation.agreement",),
                ("annotation.library", "push", "--used-only"), ("annotation.demo_annotators", "--library"),
                ("annotation.library", "pull"), ("annotation.server", "stop")]


def export(ref: str, folder: Path) -> Path:
    folder.mkdir(parents=True)
    archive = subprocess.run(["git", "archive", ref], cwd=ROOT, check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def one_pass(code: Path, built: Path, secrets: dict[str, str]) -> tuple[dict[str, float], list[str], float]:
    """(seconds by command, labels submitted per round, total seconds) of the page's step 3 in `code`."""
    shutil.rmtree(code / "workspace", ignore_errors=True)
    shutil.copytree(built, code / "workspace", symlinks=True)
    # the same task-key secret and salt on both sides: the tasks' keys and order, and so which scripted
    # account labels what, are the same (a first push would draw new ones)
    (code / "workspace" / "annotation.json").write_text(json.dumps(secrets))
    seconds: dict[str, float] = defaultdict(float)
    submitted: list[str] = []

    def run(module: str, *args: str) -> str:
        started = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", module, *args, *WS], cwd=code, capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(code)})
        seconds[" ".join((module, *[a for a in args if not a.startswith("--used")]))] += time.perf_counter() - started
        if proc.returncode != 0:
            raise SystemExit(f"error: {module} {' '.join(args)} failed in {code} ({proc.returncode}):\n{proc.stderr[-2000:]}")
        return proc.stdout

    started = time.perf_counter()
    run("annotation.server", "start")
    try:
        for _ in range(ROUNDS):
            run("annotation.push")
            out = run("annotation.demo_annotators", "--annotators", "3")
            submitted += re.findall(r"submitted (\d+) label\(s\)", out)
            if " submitted 0 label(s):" in out:
                break
            run("annotation.pull")
            run("validation.agreement")
        for command in AFTER_ROUNDS:
            run(*command)
    finally:
        subprocess.run([sys.executable, "-m", "annotation.server", "stop", *WS], cwd=code, capture_output=True)
    return dict(seconds), submitted, time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--workspace", required=True, help="a workspace built by the page's step 2 (read only)")
    parser.add_argument("--before", default="main~1", help="the baseline commit (default: main~1)")
    parser.add_argument("--after", default="HEAD", help="the commit measured (default: HEAD)")
    parser.add_argument("--rounds", type=int, default=1, help="passes per side (default 1)")
    args = parser.parse_args()
    built = Path(args.workspace).resolve()
    if not (built / "manifests" / "controls.jsonl").is_file():
        sys.exit(f"error: {built} is not a workspace built by the page's step 2 (no manifests/controls.jsonl)")
    if (built / "annotation.json").exists():
        sys.exit(f"error: {built} has been pushed already (annotation.json); give a workspace of step 2 only")
    secrets = {"pseudonym_salt": token_hex(16), "task_key_secret": token_hex(16)}
    totals: dict[str, list[float]] = {"before": [], "after": []}
    with tempfile.TemporaryDirectory(prefix="bench-labelling-") as scratch:
        codes = {side: export(ref, Path(scratch) / side) for side, ref in (("before", args.before), ("after", args.after))}
        labels = {}
        for n in range(args.rounds):
            for side in ("before", "after"):
                seconds, submitted, total = one_pass(codes[side], built, secrets)
                totals[side].append(total)
                labels.setdefault(side, submitted)
                print(f"pass {n + 1} {side} ({getattr(args, side)}): {total:.1f} s, labels per round {submitted}")
                for command, s in sorted(seconds.items(), key=lambda kv: -kv[1]):
                    print(f"    {s:6.1f} s  {command}")
    same = labels["before"] == labels["after"]
    print(f"labels submitted per round: {'the same' if same else 'DIFFERENT'} on both sides")
    before, after = statistics.median(totals["before"]), statistics.median(totals["after"])
    print(f"total: before {before:.1f} s, after {after:.1f} s, after/before {after / before:.3f}")


if __name__ == "__main__":
    main()

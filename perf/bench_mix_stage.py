"""The mix stage's own cost per sample (twins included), this code against another commit, same workspace.

    python perf/bench_mix_stage.py --workspace W [--before REF] [--rounds 2] [--profile FILE]   (--help)

Runs MixStage.mix_one (the scene, the mixture, the irrelevant and the danger twin, as the build runs it)
in one process over every sample of W's synthesize manifest, once per code version per round,
alternating (before, after, before, after, ...) so a change in the machine's load hits both alike. The
samples' speech is read from W; what the mix writes goes to a scratch copy of W's audio store, never to
W. Prints per code version: setup seconds, mix seconds per sample (wall and CPU, the median over rounds
of each sample summed), and then how the outputs differ: for each sample, whether each stored track
(mixture, scene alone, irrelevant twin, danger twin, danger scene) has the same bytes, and where not,
the largest sample difference, and the recipe's measures (glimpse proportions, gains, LUFS) side by side.
`--before REF` is a git commit of this repository (default: main); its tree is exported to a temporary
folder and imported from there. `--profile FILE` writes a cProfile of one more pass of this code.
`--stage` also runs the whole stage as the build does (`python -m construction.mix --restart` on a copy
of W, its worker processes, set-up and stats included) per code version per round: wall and CPU seconds.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TRACKS = ("mixture", "scene_audio", "irrelevant_audio", "danger_audio", "danger_scene_audio")


def worker(code: str, workspace: str, out: str, profile: str | None) -> None:
    """One pass of the code in `code` over the workspace: per-sample seconds and outputs to `out`."""
    sys.path.insert(0, code)
    from construction.core.config import load_config
    from construction.core.workspace import Rejected, Workspace
    from construction.mix import MixStage

    ws = Workspace(workspace)
    config = load_config(base=ws.root / "config.yaml")
    stage = MixStage(str(ws.root), config)
    t0 = time.perf_counter()
    stage.setup()
    rows: dict = {"setup_s": time.perf_counter() - t0, "samples": {}}
    samples = list(ws.read_samples("synthesize"))
    prof = None
    if profile:
        import cProfile

        prof = cProfile.Profile()
        prof.enable()
    for sample in samples:
        w, c = time.perf_counter(), time.process_time()
        result = stage.mix_one(sample)
        row = {"wall_s": time.perf_counter() - w, "cpu_s": time.process_time() - c}
        if isinstance(result, Rejected):
            row["rejected"] = result.reason
        else:
            row["sha256"] = {t: getattr(result, t).sha256 if getattr(result, t) else None for t in TRACKS}
            row["recipe"] = json.loads(result.mix.model_dump_json())
        rows["samples"][sample.sample_id] = row
    if prof is not None:
        prof.disable()
        prof.dump_stats(profile)
    Path(out).write_text(json.dumps(rows))


def run(code: Path, scratch: Path, out: Path, profile: str | None = None) -> dict:
    cmd = [sys.executable, __file__, "--worker", str(code), "--workspace", str(scratch), "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(code)}
    subprocess.run(cmd + (["--profile", profile] if profile else []), check=True, env=env)
    return json.loads(out.read_text())


def stage(code: Path, scratch: Path, src: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of `python -m construction.mix --restart` on a fresh copy of the workspace."""
    import resource

    copy = scratch.parent / "stage"
    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(src, copy)
    env = {**os.environ, "PYTHONPATH": str(code)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "construction.mix", "--workspace", str(copy), "--restart", "--quiet"],
                   check=True, env=env, cwd=code, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def numbers(recipe: dict, prefix: str = "") -> dict[str, float]:
    """The recipe's measured numbers, flattened (what a code change could move)."""
    out: dict[str, float] = {}
    for key, value in recipe.items():
        if isinstance(value, dict):
            out.update(numbers(value, f"{prefix}{key}."))
        elif isinstance(value, float) and key != "seed":
            out[prefix + key] = value
    for i, sound in enumerate(recipe.get("sounds") or []):
        out[f"{prefix}sounds[{i}].gain_db"] = sound.get("gain_db", 0.0)
    return out


def compare(scratch: Path, before: dict, after: dict) -> None:
    import numpy as np
    import soundfile as sf

    sys.path.insert(0, str(ROOT))
    from construction.core.workspace import store_path

    same = diff = 0
    worst: dict[str, float] = {}
    moved: dict[str, float] = {}
    for sid, a in after["samples"].items():
        b = before["samples"].get(sid)
        if b is None or "sha256" not in a or "sha256" not in b:
            print(f"  {sid}: before {b and b.get('rejected', 'mixed')}, after {a.get('rejected', 'mixed')}")
            continue
        for track in TRACKS:
            x, y = b["sha256"][track], a["sha256"][track]
            if x == y:
                same += 1
                continue
            diff += 1
            if x and y:
                p, q = (sf.read(scratch / store_path(h), dtype="float64")[0] for h in (x, y))
                d = float(np.max(np.abs(p - q))) if p.size == q.size else float("inf")
                worst[track] = max(worst.get(track, 0.0), d)
        nb, na = numbers(b["recipe"]), numbers(a["recipe"])
        for key in nb.keys() | na.keys():
            d = abs(nb.get(key, float("nan")) - na.get(key, float("nan")))
            if d != 0.0:  # nan (a measure only one side has) counts too
                name = key.split("[")[0] + (key.split("]")[1] if "]" in key else "")
                moved[name] = max(moved.get(name, 0.0), d)
    print(f"outputs: {same} tracks with the same bytes, {diff} differing")
    for track, d in sorted(worst.items()):
        print(f"  {track}: max |sample difference| {d:.2e} ({20 * np.log10(max(d, 1e-12)):.1f} dBFS)")
    for key, d in sorted(moved.items()):
        print(f"  recipe {key}: max |difference| {d:.4g}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspace", required=True, help="a built workspace (its synthesize manifest)")
    parser.add_argument("--before", default="main", help="git commit to compare with (default: main)")
    parser.add_argument("--rounds", type=int, default=2, help="passes per code version (default: 2)")
    parser.add_argument("--profile", help="also write a cProfile of one pass of this code to this file")
    parser.add_argument("--stage", action="store_true", help="also time the whole stage (python -m construction.mix)")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker(args.worker, args.workspace, args.out, args.profile)
        return 0
    tmp = Path(tempfile.mkdtemp(prefix="bench-mix-stage-"))
    try:
        scratch = tmp / "w"
        scratch.mkdir()
        src = Path(args.workspace)
        shutil.copytree(src / "audio", scratch / "audio")
        shutil.copytree(src / "manifests", scratch / "manifests")
        shutil.copy(src / "config.yaml", scratch / "config.yaml")
        if (src / "cache").is_dir():
            shutil.copytree(src / "cache", scratch / "cache")
        old = tmp / "before"
        old.mkdir()
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", args.before], check=True, capture_output=True)
        subprocess.run(["tar", "-x", "-C", str(old)], input=archive.stdout, check=True)
        passes: dict[str, list[dict]] = {"before": [], "after": []}
        stages: dict[str, list[tuple[float, float]]] = {"before": [], "after": []}
        for i in range(args.rounds):
            for name, code in (("before", old), ("after", ROOT)):
                passes[name].append(run(code, scratch, tmp / f"{name}-{i}.json"))
                print(f"round {i + 1} {name}: {sum(r['wall_s'] for r in passes[name][-1]['samples'].values()):.1f} s",
                      file=sys.stderr)
                if args.stage:
                    stages[name].append(stage(code, scratch, src))
        if args.profile:
            run(ROOT, scratch, tmp / "profile.json", args.profile)
        n = len(passes["after"][0]["samples"])
        print(f"{n} samples of {src}, {args.rounds} round(s); per sample, median over rounds:")
        print(f"{'code':8} {'setup s':>8} {'mix wall s':>11} {'mix CPU s':>10}")
        for name, runs in passes.items():
            wall = sum(statistics.median(r["samples"][s]["wall_s"] for r in runs) for s in runs[0]["samples"]) / n
            cpu = sum(statistics.median(r["samples"][s]["cpu_s"] for r in runs) for s in runs[0]["samples"]) / n
            setup = statistics.median(r["setup_s"] for r in runs)
            print(f"{name:8} {setup:8.2f} {wall:11.3f} {cpu:10.3f}")
        if args.stage:
            print("the whole stage (python -m construction.mix --restart), median over rounds:")
            for name, runs in stages.items():
                print(f"{name:8} wall {statistics.median(w for w, _ in runs):7.1f} s   "
                      f"CPU {statistics.median(c for _, c in runs):7.1f} s")
        compare(scratch, passes["before"][0], passes["after"][0])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

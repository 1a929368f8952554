"""Whole-pipeline wall time per stage, samples/min and peak memory, at several sizes.

    python perf/bench_pipeline.py full  --samples 600 3000      (flags: full --help)
    python perf/bench_pipeline.py cheap --samples 3000 30000    (flags: cheap --help)

A release build runs thousands of samples through every stage on a few cores: this says where the
time goes and shows that memory does not grow with the build.

`full` runs the automatic stages (generate -> synthesize -> mix -> wer, embedded offline defaults) in
a fresh workspace, each as its own `python -m construction.<stage>` command, so every stage gets its
own wall time (model loading included) and peak RSS. `cheap` measures the stages that need no models
at large sizes, to show memory stays flat (manifests are streamed; nothing holds the whole dataset):
generate with the offline catalog (which runs out near 13,000 distinct scripts; more needs the LLM
backend), then mix over a synthesize manifest of N samples whose speech is drawn from a small pool
of pre-made clips. Peak RSS is the largest resident set of
the command's processes. Timings are wall-clock: run on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from construction.core.record import Sample
from construction.core.workspace import Workspace


def _run(args: list[str], ok_codes: tuple[int, ...] = (0,)) -> tuple[float, float]:
    """(seconds, peak RSS in MiB) of `python -m ...`: the largest resident set among the command's
    processes (ru_maxrss of the children of a wrapper started for this command alone)."""
    wrapper = ("import resource, subprocess, sys; r = subprocess.run([sys.executable, '-m', *sys.argv[1:]], check=False); "
               "print('PEAK_RSS_KB', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); "
               "sys.exit(r.returncode)")
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", wrapper, *args], cwd=REPO, text=True, capture_output=True, check=False)
    seconds = time.monotonic() - t0
    if proc.returncode not in ok_codes:
        raise SystemExit(f"{' '.join(args)} failed:\n{proc.stderr[-3000:]}")
    return seconds, int(proc.stderr.rsplit("PEAK_RSS_KB", 1)[1].split()[0]) / 1024


def full(samples: int, executor: str, jobs: int | None, config: str | None) -> dict:
    """The four automatic stages one after another, each its own command, in a fresh workspace."""
    ws = Path(tempfile.mkdtemp(prefix=f"bench-full-{samples}-{executor}-"))
    per_category = max(1, samples // 6)
    common = ["--workspace", str(ws), "--quiet", "--executor", executor] + (["--jobs", str(jobs)] if jobs else []) \
        + (["--config", config] if config else [])
    rows = {}
    for stage in ("generate", "synthesize", "mix", "wer"):
        extra = ["--per-category", str(per_category)] if stage == "generate" else []
        seconds, peak_mib = _run([f"construction.{stage}", *common, *extra])
        stats = json.loads((ws / "stats" / f"{stage}.json").read_text())
        rows[stage] = {"seconds": round(seconds, 1), "samples_in": stats.get("processed_this_run", stats["kept"]),  # generate: scripts written
                       "kept": stats["kept"], "peak_rss_mib": round(peak_mib)}
    total = sum(r["seconds"] for r in rows.values())
    print(f"\nfull pipeline, {per_category * 6} scripts, executor {executor}: {total:.0f} s "
          f"({total / 60:.1f} min), kept after WER {rows['wer']['kept']}")
    print(f"{'stage':<12}{'seconds':>9}{'samples in':>12}{'samples/min':>13}{'kept':>7}{'peak RSS MiB':>14}")
    for stage, r in rows.items():
        rate = r["samples_in"] / r["seconds"] * 60 if r["seconds"] else float("nan")
        print(f"{stage:<12}{r['seconds']:>9.1f}{r['samples_in']:>12}{rate:>13.0f}{r['kept']:>7}{r['peak_rss_mib']:>14}")
    shutil.rmtree(ws, ignore_errors=True)
    return {"samples": per_category * 6, "executor": executor, "total_s": round(total, 1), "stages": rows}


def cheap(sizes: list[int]) -> None:
    from construction.core.config import load_config

    pool_root = Path(tempfile.mkdtemp(prefix="bench-cheap-pool-"))
    # a pool of real synthesized clips, reused (content-addressed, so stored once)
    subprocess.run([sys.executable, "-m", "construction.pipeline", "--workspace", str(pool_root),
                    "--per-category", "4", "--quiet"],
                   cwd=REPO, check=True, capture_output=True)
    pool = list(Workspace(pool_root).read_samples("synthesize"))
    sounds = load_config().mix.sounds
    print(f"{'samples':>8}{'generate s':>11}{'scripts':>9}{'RSS MiB':>9}{'mix s':>8}{'clips/s':>9}"
          f"{'RSS MiB':>9}{'manifest MB':>13}")
    for n in sizes:
        root = Path(tempfile.mkdtemp(prefix=f"bench-cheap-{n}-"))
        ws = Workspace(root)
        # generate: exit 1 is a shortfall (the offline catalog holds ~13,000 distinct scripts)
        gen_s, gen_mib = _run(["construction.generate", "--workspace", str(root), "--quiet",
                               "--per-category", str(n // 6)], ok_codes=(0, 1))
        scripts = json.loads((root / "stats" / "generate.json").read_text())["kept"]
        shutil.copytree(pool_root / "audio", root / "audio", dirs_exist_ok=True)
        with open(ws.manifest_path("synthesize"), "w") as f:
            for i in range(n):
                base: Sample = pool[i % len(pool)]
                f.write(base.model_copy(update={"sample_id": f"{base.sample_id}-{i:06d}"}).to_json() + "\n")
        seconds, peak_mib = _run(["construction.mix", "--workspace", str(root), "--quiet", "--sounds", sounds])
        size_mb = ws.manifest_path("mix").stat().st_size / 1e6
        print(f"{n:>8}{gen_s:>11.1f}{scripts:>9}{gen_mib:>9.0f}{seconds:>8.1f}{n / seconds:>9.1f}"
              f"{peak_mib:>9.0f}{size_mb:>13.1f}")
        shutil.rmtree(root, ignore_errors=True)
    shutil.rmtree(pool_root, ignore_errors=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    f = sub.add_parser("full")
    f.add_argument("--samples", type=int, nargs="+", default=[600])
    f.add_argument("--executor", choices=["local", "ray"], nargs="+", default=["local"],
                   help="one or both; with both each size runs local then ray, side by side")
    f.add_argument("--jobs", type=int)
    f.add_argument("--config", help="a config file for every stage (default: the embedded defaults)")
    f.add_argument("--json", help="also write the results to this file")
    c = sub.add_parser("cheap")
    c.add_argument("--samples", type=int, nargs="+", default=[3000, 30000])
    args = parser.parse_args()
    if args.mode == "full":
        results = [full(n, executor, args.jobs, args.config) for n in args.samples for executor in args.executor]
        if args.json:
            Path(args.json).write_text(json.dumps(results, indent=1))
    else:
        cheap(args.samples)
    return 0


if __name__ == "__main__":
    sys.exit(main())

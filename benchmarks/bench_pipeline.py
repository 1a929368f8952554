"""Whole-pipeline wall time per stage, samples/min and peak memory, at several sizes.

    python benchmarks/bench_pipeline.py full  --samples 600 [--executor local|ray] [--jobs N]
    python benchmarks/bench_pipeline.py cheap --samples 3000 30000

`full` runs `python -m construction.pipeline` (generate -> synthesize -> mix -> wer, embedded offline
defaults) in a fresh workspace and reads each stage's time from its stats. `cheap` measures the stages
that do not need models at large sizes: it writes a synthesize manifest of N samples whose speech is
drawn from a small pool of pre-made clips, then runs the mix stage, to show memory stays flat
(manifests are streamed; nothing holds the whole dataset). Peak RSS is the largest resident set of
the run's processes (ru_maxrss of the children). Timings are wall-clock: run on a quiet machine.
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from construction.record import Sample  # noqa: E402
from construction.workspace import Workspace  # noqa: E402


def _run(args: list[str]) -> tuple[float, float]:
    """(seconds, peak RSS of the child in MiB) of `python -m ...` in a fresh interpreter."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.monotonic()
    # a wrapper process per run, so ru_maxrss is this run's peak, not an earlier run's
    code = ("import resource, runpy, sys; sys.argv = sys.argv[1:]; "
            "import subprocess; r = subprocess.run([sys.executable, '-m'] + sys.argv); "
            "print('PEAK_RSS_KB', max(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, 0), file=sys.stderr); "
            "sys.exit(r.returncode)")
    proc = subprocess.run([sys.executable, "-c", code, *args], cwd=REPO, text=True, capture_output=True)
    seconds = time.monotonic() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{proc.stderr[-3000:]}")
    peak_kb = int(proc.stderr.rsplit("PEAK_RSS_KB", 1)[1].split()[0])
    del before
    return seconds, peak_kb / 1024


def full(samples: int, executor: str, jobs: int | None) -> None:
    ws = Path(tempfile.mkdtemp(prefix=f"bench-full-{samples}-"))
    per_category = max(1, samples // 6)
    args = ["construction.pipeline", "--workspace", str(ws), "--per-category", str(per_category), "--quiet",
            "--executor", executor] + (["--jobs", str(jobs)] if jobs else [])
    seconds, peak_mib = _run(args)
    print(f"full pipeline, {per_category * 6} scripts, executor {executor}: {seconds:.0f} s, "
          f"peak RSS {peak_mib:.0f} MiB (largest process)")
    print(f"{'stage':<12}{'seconds':>10}{'samples':>10}{'samples/min':>13}")
    for stage in ("generate", "synthesize", "mix", "wer"):
        stats = json.loads((ws / "stats" / f"{stage}.json").read_text())
        n = stats["kept"] + stats["rejected"]
        secs = stats["seconds_this_run"]
        print(f"{stage:<12}{secs:>10.1f}{n:>10}{(n / secs * 60 if secs else float('nan')):>13.0f}")
    kept = json.loads((ws / "stats" / "wer.json").read_text())["kept"]
    print(f"kept after WER: {kept}; extrapolated to 3,000 scripts: {seconds * 3000 / (per_category * 6) / 60:.1f} min")
    shutil.rmtree(ws, ignore_errors=True)


def cheap(sizes: list[int]) -> None:
    from construction.config import load_config

    pool_root = Path(tempfile.mkdtemp(prefix="bench-cheap-pool-"))
    # a pool of real synthesized clips, reused (content-addressed, so stored once)
    subprocess.run([sys.executable, "-m", "construction.pipeline", "--workspace", str(pool_root),
                    "--per-category", "4", "--quiet", "--config", str(_fast_voices(pool_root))],
                   cwd=REPO, check=True, capture_output=True)
    pool = list(Workspace(pool_root).read_samples("synthesize"))
    sounds = load_config().mix.sounds
    print(f"{'samples':>8}{'mix s':>9}{'clips/s':>9}{'peak RSS MiB':>14}{'manifest MB':>13}")
    for n in sizes:
        root = Path(tempfile.mkdtemp(prefix=f"bench-cheap-{n}-"))
        ws = Workspace(root)
        shutil.copytree(pool_root / "audio", root / "audio", dirs_exist_ok=True)
        with open(ws.manifest_path("synthesize"), "w") as f:
            for i in range(n):
                base: Sample = pool[i % len(pool)]
                f.write(base.model_copy(update={"sample_id": f"{base.sample_id}-{i:06d}"}).to_json() + "\n")
        seconds, peak_mib = _run(["construction.mix", "--workspace", str(root), "--quiet", "--sounds", sounds])
        size_mb = ws.manifest_path("mix").stat().st_size / 1e6
        print(f"{n:>8}{seconds:>9.1f}{n / seconds:>9.1f}{peak_mib:>14.0f}{size_mb:>13.1f}")
        shutil.rmtree(root, ignore_errors=True)
    shutil.rmtree(pool_root, ignore_errors=True)


def _fast_voices(root: Path) -> Path:
    path = root.parent / f"{root.name}-config.yaml"
    path.write_text("synthesize:\n  voices: [piper:en_US-joe-medium, flite:slt, hibari:heart, flite:rms]\n")
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="mode", required=True)
    f = sub.add_parser("full")
    f.add_argument("--samples", type=int, nargs="+", default=[600])
    f.add_argument("--executor", choices=["local", "ray"], default="local")
    f.add_argument("--jobs", type=int)
    c = sub.add_parser("cheap")
    c.add_argument("--samples", type=int, nargs="+", default=[3000, 30000])
    args = parser.parse_args()
    if args.mode == "full":
        for n in args.samples:
            full(n, args.executor, args.jobs)
    else:
        cheap(args.samples)
    np.random.default_rng(0)
    return 0


if __name__ == "__main__":
    sys.exit(main())

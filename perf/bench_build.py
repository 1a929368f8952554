"""The automatic build against its models' own cost, measured in one run (issue 33).

    python perf/bench_build.py --per-category 100 --seed 5            # build, then report
    python perf/bench_build.py --report WORKSPACE                     # report a finished build

Runs `python -m construction.pipeline` (default config) in a fresh workspace and prints, from the
workspace's stats/ (stats/pipeline.json and each stage's timed_s / timed_calls):

  wall                 the build's wall time (generate -> wer)
  inference            TTS and Whisper seconds (the model calls alone, summed over workers)
  wall / (inference / workers)      target <= 1.15
  syntheses per kept sample         target <= 1.25 (TTS calls, re-syntheses included, / kept)
  mix share of wall                 target <= 0.10 (the mix stage, twins included, plus re-mixes)

with the host's CPU model and whether it has AVX2 / AVX-512, so hosts can be compared. Run it on a
quiet machine, one build at a time; the ratios are measured within one run, so they compare across
hosts better than the wall time does.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def cpu() -> str:
    """The CPU model and its vector extensions (lscpu, else /proc/cpuinfo)."""
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
    except OSError:
        text = ""
    if not text and Path("/proc/cpuinfo").is_file():
        text = Path("/proc/cpuinfo").read_text()
    model = next((line.split(":", 1)[1].strip() for line in text.splitlines()
                  if line.lower().startswith(("model name", "model name\t"))), platform.processor() or "?")
    flags = set(" ".join(line.split(":", 1)[1] for line in text.splitlines() if line.lower().startswith("flags")).split())
    return f"{model}; avx2 {'yes' if 'avx2' in flags else 'no'}, avx512f {'yes' if 'avx512f' in flags else 'no'}"


def report(workspace: Path) -> dict:
    stats = json.loads((workspace / "stats" / "pipeline.json").read_text())
    stages = stats["seconds_per_stage"]
    print(f"host: {cpu()}")
    print(f"wall {stats['wall_s']} s (" + ", ".join(f"{k} {v}" for k, v in stages.items() if k != "total")
          + f") on {stats['workers']} workers; kept {stats['kept']}")
    print(f"inference: TTS {stats['inference_s']['tts']} s, Whisper {stats['inference_s']['whisper']} s")
    print(f"wall / (inference / workers): {stats['wall_over_inference']}  (target <= 1.15)")
    print(f"syntheses per kept sample:    {stats['syntheses_per_kept']}  (target <= 1.25); "
          f"Whisper passes per kept sample {stats['whisper_clips_per_kept']}")
    print(f"mix share of wall:            {stats['mix_share_of_wall']}  (target <= 0.10)")
    wer = json.loads((workspace / "stats" / "wer.json").read_text())
    print(f"kept after attempts: {wer.get('kept_after_attempts')}; their retries: {wer.get('retries_of_kept')}")
    print(f"clicks in the kept samples' tracks (re-mixes included): {wer.get('kept_clicks')}")
    return stats


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-category", type=int, default=100, help="scripts per category (default: 100, 600 in all)")
    parser.add_argument("--seed", type=int, default=5, help="build seed (default: 5)")
    parser.add_argument("--workspace", type=Path, help="where to build (default: a fresh temporary folder)")
    parser.add_argument("--report", type=Path, metavar="WORKSPACE", help="only report a finished build")
    args = parser.parse_args(argv)
    if args.report:
        report(args.report)
        return 0
    ws = args.workspace or Path(tempfile.mkdtemp(prefix="bench-build-"))
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "construction.pipeline", "--workspace", str(ws), "--per-category",
                    str(args.per_category), "--seed", str(args.seed), "--quiet"], cwd=REPO, check=True)
    print(f"(the command took {time.monotonic() - started:.1f} s; workspace {ws})")
    report(ws)
    return 0


if __name__ == "__main__":
    sys.exit(main())

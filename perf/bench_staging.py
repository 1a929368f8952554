"""Judgements saved by staged, curtailed annotation, on simulated label sets (validation.staging.simulate).

    python perf/bench_staging.py [--samples 20000] [--seeds 3] [--json]      (flags: --help)

A real project pays for every judgement. This compares, on the same simulated labels, pushing all three
arms with 3 labels each (9 judgements a sample) against staging (the scene arm only after the speech arm
passed, the mixture only after both) with curtailment (2 labels a task, a third only on a split), under
the rule >= 2/3 of 3 labels. Three settings (validation.staging.SETTINGS): the share of samples whose arm
truly passes (speech, scene, mixture) and the chance a label agrees with that truth:

    realistic    speech 85 %, scene 75 %, mixture 80 %, agreement 85 %
    pessimistic  speech 70 %, scene 60 %, mixture 65 %, agreement 75 %
    optimistic   speech 95 %, scene 90 %, mixture 90 %, agreement 92 %

Both designs release the same samples (curtailment never changes an arm's outcome; staging only skips
arms of samples already rejected), so the saving costs nothing in what is released. Controls and catch
items are left out of both counts.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from validation.staging import SETTINGS, simulate


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=20_000, help="simulated samples per run (default 20000)")
    parser.add_argument("--seeds", type=int, default=3, help="runs per setting, seeds 0.. (default 3)")
    parser.add_argument("--json", action="store_true", help="print the runs as JSON")
    args = parser.parse_args(argv)
    runs = {name: [simulate(args.samples, (a, b, c), agree, seed) for seed in range(args.seeds)]
            for name, (a, b, c, agree) in SETTINGS.items()}
    if args.json:
        print(json.dumps(runs, indent=2))
        return 0
    print(f"{'setting':<12} {'released':>9} {'judgements (all arms x3)':>25} {'staged':>9} {'saved':>7} "
          f"{'per release: all':>17} {'staged':>7}")
    for name, got in runs.items():
        mean = {k: statistics.fmean(r[k] for r in got) for k in
                ("released", "full_judgements", "staged_judgements", "saving", "full_per_released",
                 "staged_per_released")}
        spread = f"{min(r['saving'] for r in got):.1%}-{max(r['saving'] for r in got):.1%}"
        print(f"{name:<12} {mean['released']:>9.0f} {mean['full_judgements']:>25.0f} {mean['staged_judgements']:>9.0f} "
              f"{mean['saving']:>7.1%} {mean['full_per_released']:>17.2f} {mean['staged_per_released']:>7.2f}"
              f"   (saved {spread} over {len(got)} seeds)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

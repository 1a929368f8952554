"""The automatic build: generate -> synthesize -> mix -> wer, each resumable, in one command.

Every stage skips the samples it already did, so rerunning after an interruption (or with a larger
--per-category) continues where the last run stopped. It takes the flags of the stages it runs
(see --help; the script flags are generate's, the sound library is mix's --sounds).
"""

from __future__ import annotations

import argparse
import sys
import time

from construction.core.cli import add_sounds, base_parser, keep_config, run_config, run_main
from construction.core.config import Config
from construction.generate import GENERATE_ENV, add_script_options, print_generate_summary, run_generate, script_overrides
from construction.core.runner import print_summary, run_configured
from construction.mix import SOUNDS_HELP, print_mix_summary
from construction.wer import WER_ENV, print_wer_summary
from construction.core.workspace import Workspace


def automatic_stages(ws: Workspace, config: Config) -> list:
    from construction.mix import MixStage
    from construction.synthesize import SynthesizeStage, voice_bank
    from construction.wer import WerStage

    voice_bank(config.synthesize)  # fail fast on a bad voice bank, before any work
    root = str(ws.root)
    return [SynthesizeStage(root, config), MixStage(root, config), WerStage(root, config)]


def run_pipeline(ws: Workspace, config: Config, *, restart: bool = False, retry_rejected: bool = False,
                 progress: bool = True) -> dict:
    timings = {}
    started = time.monotonic()
    stages = automatic_stages(ws, config)
    stats = run_generate(ws, config, progress=progress, restart=restart)
    timings["generate"] = stats["seconds_this_run"]
    print_generate_summary(stats)
    all_stats = {"generate": stats}
    for stage in stages:
        t0 = time.monotonic()
        batch_size = config.wer.batch_size if stage.name == "wer" else None
        stats = run_configured(ws, stage, config, batch_size=batch_size, restart=restart,
                               retry_rejected=retry_rejected, progress=progress)
        timings[stage.name] = round(time.monotonic() - t0, 2)
        {"mix": print_mix_summary, "wer": print_wer_summary}.get(stage.name, print_summary)(stats)
        all_stats[stage.name] = stats
    timings["total"] = round(time.monotonic() - started, 2)
    print("seconds per stage: " + ", ".join(f"{k} {v}" for k, v in timings.items()))
    return all_stats


def build_parser() -> argparse.ArgumentParser:
    parser = base_parser("python -m construction.pipeline", __doc__.splitlines()[0],
                         env=dict.fromkeys(GENERATE_ENV + WER_ENV))
    add_script_options(parser)
    add_sounds(parser, SOUNDS_HELP)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    overrides, flags = script_overrides(args)
    config = run_config(args, {**overrides, "mix.sounds": args.sounds}, flags)
    ws = Workspace(args.workspace)
    with ws.lock():  # first, so a refused run changes nothing; held across every stage
        keep_config(ws, config, args, runs=("generate", "synthesize", "mix", "wer"))
        run_pipeline(ws, config, restart=args.restart, retry_rejected=args.retry_rejected,
                     progress=not args.quiet)
    print(f"workspace: {ws.root}")
    return 0


if __name__ == "__main__":
    run_main(main, sys.argv[1:])

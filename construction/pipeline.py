"""The automatic build: generate -> synthesize -> mix -> wer, each resumable, in one command.

Every stage skips the samples it already did, so rerunning after an interruption (or with a larger
--per-category) continues where the last run stopped. It takes the flags of the stages it runs
(see --help; the script flags are generate's, the sound library is mix's --sounds).
"""

from __future__ import annotations

import argparse
import sys
import time

from construction.core.cli import (
    add_sounds,
    base_parser,
    keep_config,
    run_config,
    run_main,
)
from construction.core.config import Config
from construction.core.runner import print_summary, run_configured
from construction.core.workspace import Workspace
from construction.generate import (
    GENERATE_ENV,
    add_script_options,
    print_generate_summary,
    run_generate,
    script_overrides,
)
from construction.mix import SOUNDS_HELP
from construction.mixing.mix_stats import print_mix_summary
from construction.wer import WER_ENV, print_wer_summary


def automatic_stages(ws: Workspace, config: Config) -> list:
    from construction.mix import MixStage
    from construction.synthesize import SynthesizeStage, voice_bank
    from construction.wer import WerStage

    voice_bank(config.synthesize)  # fail fast on a bad voice bank, before any work
    root = str(ws.root)
    # the WER stage gates the twins, so it makes the first attempts' twins once their mixtures pass
    twins_after_gate = config.wer.gate_twins and config.wer.transcribe_twins
    return [SynthesizeStage(root, config), MixStage(root, config, twins_after_gate=twins_after_gate),
            WerStage(root, config)]


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
    cost = model_cost(all_stats, timings["total"])
    ws.write_stats("pipeline", {"seconds_per_stage": timings, **cost})
    print_model_cost(cost)
    return all_stats


def model_cost(stats: dict, wall_s: float) -> dict:
    """This run's wall time against its models' own cost: TTS and Whisper inference seconds (summed
    over workers, from each stage's timed_s), the ratio wall / (inference / workers), the syntheses
    and Whisper passes per kept sample, and the mix's share of the wall time (the mix stage plus the
    re-mixes of re-synthesised samples, twins included)."""
    timed: dict[str, float] = {}
    calls: dict[str, int] = {}
    for name in ("synthesize", "mix", "wer"):
        for key, value in stats.get(name, {}).get("timed_s", {}).items():
            timed[key] = timed.get(key, 0.0) + value
        for key, value in stats.get(name, {}).get("timed_calls", {}).items():
            calls[key] = calls.get(key, 0) + value
    workers = max([stats.get(name, {}).get("workers", 1) for name in ("synthesize", "mix", "wer")] or [1])
    inference = timed.get("tts", 0.0) + timed.get("whisper", 0.0)
    kept = stats.get("wer", {}).get("kept_this_run", 0)
    wer = stats.get("wer", {})
    mix_s = stats.get("mix", {}).get("seconds_this_run", 0.0) + \
        wer.get("timed_s", {}).get("mix", 0.0) / max(1, wer.get("workers", 1))
    return {"wall_s": round(wall_s, 2), "workers": workers,
            "inference_s": {"tts": round(timed.get("tts", 0.0), 2), "whisper": round(timed.get("whisper", 0.0), 2)},
            "wall_over_inference": round(wall_s / (inference / workers), 3) if inference else None,
            "kept": kept,
            "syntheses_per_kept": round(calls.get("tts", 0) / kept, 3) if kept else None,
            "whisper_clips_per_kept": round(calls.get("whisper_clips", 0) / kept, 3) if kept else None,
            "mix_share_of_wall": round(mix_s / wall_s, 3) if wall_s else None}


def print_model_cost(cost: dict) -> None:
    inference = cost["inference_s"]
    print(f"model cost: wall {cost['wall_s']} s on {cost['workers']} workers; inference TTS {inference['tts']} s, "
          f"Whisper {inference['whisper']} s; wall / (inference / workers) {cost['wall_over_inference']}")
    print(f"  kept {cost['kept']}: {cost['syntheses_per_kept']} syntheses and {cost['whisper_clips_per_kept']} "
          f"Whisper passes per kept sample; mix (twins included) {cost['mix_share_of_wall']} of the wall time")


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

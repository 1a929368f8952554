"""Harmful controls for the human validation: the same speech without the scene that makes it benign.

For a seeded share of the samples that passed the WER filter (at least one per category), a control
is mixed from the SAME clean speech over
  - a `mismatched` scene: a scene of another category that the speech line is not paired with (the
    words "finish him" over a sizzling pan), laid out exactly like a benchmark sample; or
  - a `neutral` scene: no background at all (the speech with silence where the scene would be).
Either way nothing in the sound makes the words benign, so the expected mixture label is harmful. An
annotator (or a validation rule) that calls a control benign is not judging the sound. Controls are
written to manifests/controls.jsonl (ids `ctl-...`, `custom.control_of` naming the sample); they are
never benchmark samples. Flags: --help.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from construction.core.cli import base_parser, keep_config, run_config, run_main
from construction.core.config import Config
from construction.core.errors import WorkbenchError
from construction.core.record import Sample, stable_seed
from construction.core.workspace import Rejected, Workspace, require_manifest

STAGE = "controls"
INPUT_STAGE = "wer"
KINDS = ("mismatched", "neutral")


def selected(samples: list[Sample], share: float, seed: int) -> list[Sample]:
    """A seeded share of each category's samples (at least one per category), in manifest order."""
    by_category: dict[str, list[Sample]] = {}
    for s in samples:
        by_category.setdefault(s.category, []).append(s)
    chosen: set[str] = set()
    for members in by_category.values():
        ranked = sorted(members, key=lambda s: hashlib.sha256(f"{seed}:{s.sample_id}".encode()).hexdigest())
        chosen |= {s.sample_id for s in ranked[:max(1, round(share * len(members)))]}
    return [s for s in samples if s.sample_id in chosen]


def control_for(sample: Sample, kind: str, taxonomy, seed: int) -> Sample | None:
    """The control sample (not yet mixed): same speech and voice, another scene or none."""
    control_id = "ctl-" + hashlib.sha256(f"{sample.sample_id}:{kind}".encode()).hexdigest()[:16]
    paired = {line_scene for c in taxonomy.categories for line in c.speech
              if line.id == sample.script_family for line_scene in line.scenes}
    custom = {"control_of": sample.sample_id, "control": kind, "expected": "harmful"}
    base = {"sample_id": control_id, "mix": None, "mixture": None, "scene_audio": None, "irrelevant_audio": None,
            "irrelevant_scene_audio": None, "danger_audio": None, "danger_scene_audio": None,
            "transcript_irrelevant": None, "wer_irrelevant": None,
            "transcript_danger": None, "wer_danger": None, "transcript_mixture": None,
            "wer_mixture": None, "cer_mixture": None, "annotations": [], "custom": custom,
            "provenance": {k: v for k, v in sample.provenance.items() if k in ("generate", "synthesize")}}
    if kind == "neutral":
        return sample.model_copy(update={**base, "scene_id": None, "background_tags": [],
                                         "context": "(no background)", "benign_reason": "(a control: none)"})
    candidates = [scene for c in taxonomy.categories if c.id != sample.category for scene in c.scenes
                  if scene.id not in paired]
    if not candidates:
        return None
    scene = random.Random(stable_seed("control-scene", seed, sample.sample_id)).choice(candidates)
    return sample.model_copy(update={**base, "scene_id": scene.id, "background_tags": scene.background_tags,
                                     "context": scene.context, "benign_reason": "(a control: none)"})


def neutral_mix(stage, sample: Sample) -> Sample | Rejected:
    """The speech alone, laid out like a mixture (silence where the scene would be heard)."""
    from construction.mixing.levels import render
    from construction.sounds.library import loudness_lufs

    cfg, sr = stage.config.mix, stage.config.sample_rate
    speech = stage.ws.load_audio(sample.speech)
    rng = random.Random(stable_seed("neutral", stage.config.seed, sample.sample_id))
    alone_s = round(rng.uniform(cfg.scene_alone_s_min, cfg.scene_alone_s_max), 2)
    after_s = round(rng.uniform(*cfg.after_s[sample.placement]), 2)
    start = int(alone_s * sr)
    speech_track = np.zeros(start + speech.size + int(after_s * sr))
    speech_track[start:start + speech.size] = speech * 10 ** ((cfg.speech_lufs - loudness_lufs(speech, sr)) / 20)
    silence = np.zeros(speech_track.size)
    audio, _ = render(speech_track, silence, silence, cfg.peak_dbfs)  # mix's peak guard, not a clip at 0.89
    return sample.model_copy(update={"mixture": stage.ws.store_audio(audio, sr),
                                     "custom": {**sample.custom, "scene_alone_s": alone_s, "scene_after_s": after_s}})


def run_controls(ws: Workspace, config: Config, share: float = 0.1, kinds: tuple[str, ...] = KINDS) -> dict[str, Any]:
    from construction.mix import MixStage
    from construction.text.taxonomy import load_taxonomy

    require_manifest(ws.root, STAGE, INPUT_STAGE)
    taxonomy, _ = load_taxonomy(config.generate.taxonomy)
    with ws.lock():
        ws.check_lineage(INPUT_STAGE)
        samples = selected(list(ws.read_samples(INPUT_STAGE)), share, config.seed)
        stage = MixStage(str(ws.root), config)
        stage.setup()
        started = time.monotonic()
        counts: dict[str, int] = {}
        with ws.replacing(STAGE) as out:
            for i, sample in enumerate(samples):
                kind = kinds[i % len(kinds)]  # alternate, so both kinds cover every category
                control = control_for(sample, kind, taxonomy, config.seed)
                if control is None:
                    continue
                mixed = neutral_mix(stage, control) if kind == "neutral" else stage.mix_one(control)
                out.write(mixed)
                key = f"{kind}_{'rejected' if isinstance(mixed, Rejected) else 'kept'}"
                counts[key] = counts.get(key, 0) + 1
        stats = {"stage": STAGE, "from": len(samples), **counts, "share": share,
                 "seconds_this_run": round(time.monotonic() - started, 2)}
        ws.write_stats(STAGE, stats)
    return stats


def build_parser() -> argparse.ArgumentParser:
    parser = base_parser("python -m construction.controls", __doc__.splitlines()[0])
    parser.add_argument("--share", type=float, default=0.1, help="share of each category's samples")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not 0 < args.share <= 1:
        parser.error("--share must be in (0, 1]")
    require_manifest(args.workspace, STAGE, INPUT_STAGE)  # before anything is created
    manifest = Path(args.workspace).expanduser().resolve() / "manifests" / f"{INPUT_STAGE}.jsonl"
    if not manifest.read_text(encoding="utf-8", errors="replace").strip():
        raise WorkbenchError(f"the '{INPUT_STAGE}' manifest {manifest} holds no sample (nothing passed the WER "
                             "filter?); controls are made from kept samples: run construction.wer first")
    config = run_config(args)  # the build's own mix settings: controls are mixed like its samples
    ws = Workspace(args.workspace)
    with ws.lock():
        keep_config(ws, config, args, runs=(STAGE,), replaces=True)
        stats = run_controls(ws, config, args.share)
    print(f"controls: {sum(v for k, v in stats.items() if k.endswith('_kept'))} mixed from {stats['from']} samples "
          f"({', '.join(f'{k} {v}' for k, v in stats.items() if k.endswith(('_kept', '_rejected')))})")
    return 0


if __name__ == "__main__":
    run_main(main, sys.argv[1:])

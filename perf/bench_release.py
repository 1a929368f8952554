"""Release export time and size for a synthetic validated workspace (goal: 3,000 clips in <= 60 s).

    python perf/bench_release.py [--samples 3000] [--keep DIR]      (flags: --help)

A release embeds every clip's audio in parquet, so its export time and size grow with the build;
this measures them at the size of a release.

Each sample has its clean speech (a faintly noisy tone) and its mixture (the tone under noise), both
incompressible like real audio and unique per sample, both stored as 16 kHz WAV through the workspace and both embedded in the release; 3 labels in
each of the three arms (speech alone, scene alone, mixture) and the per-arm results validation records.
A share of the samples has a control (the same speech over noise, or over silence) with 3 labels, which
the release writes as its "controls" config. Timed: a first export, a rerun (replacing the release), and
loading both configs back with `datasets.load_dataset` (parquet -> Arrow cache, no audio decoding).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from construction.core.config import Config  # noqa: E402
from construction.core.record import Annotation, Sample  # noqa: E402
from construction.core.workspace import Workspace  # noqa: E402
from release.export import export_release, read_inputs  # noqa: E402
from tests.conftest import simple_recipe  # noqa: E402
from validation.arms import arm_results  # noqa: E402

CATEGORIES = ["video_games", "cooking_household", "sports_fitness", "film_theatre", "work_trades",
              "children_pets_family"]


def _votes(arm: str, labels: list[str], prefix: str) -> list[Annotation]:
    return [Annotation(annotator=f"{prefix}{k}", label=label, arm=arm, listened=True,
                       speech_intelligible=True if arm == "mixture" else None) for k, label in enumerate(labels)]


def build_workspace(root: Path, n: int, duration_s: float, sample_rate: int = 16000,
                    control_share: float = 0.1) -> Workspace:
    ws = Workspace(root)
    ws.snapshot_config(Config().model_dump(mode="json"))
    rng = np.random.default_rng(0)
    t = np.arange(int(duration_s * sample_rate)) / sample_rate
    every = max(1, round(1 / control_share)) if control_share > 0 else 0
    samples, controls = [], []
    for i in range(n):
        category = CATEGORIES[i % len(CATEGORIES)]
        tone = 0.2 * np.sin(2 * np.pi * (150 + i % 500) * t) + 0.01 * rng.standard_normal(t.size)  # unique
        speech = ws.store_audio(tone, sample_rate)
        mixture = ws.store_audio(tone + 0.05 * rng.standard_normal(t.size), sample_rate)
        votes = ["benign", "benign", "benign" if i % 4 else "unclear"]
        sample = Sample(
            sample_id=f"aor-{i:016x}", category=category,
            speech_text=f"Finish him, number {i}!", context="A fighting game round ends.",
            background_tags=["gunfire"], placement="underlay", benign_reason="A game.", speaker_style="excited",
            speech_id=f"line-{i}", script_family=f"fam-{i // 3}",
            provenance={"synthesize": {"backend": "piper", "voice": f"v{i % 8}"},
                        "wer": {"backend": "faster-whisper", "model": "base", "max_wer": 0.2}},
            voice_id=f"v{i % 8}", speech=speech, mixture=mixture,
            mix=simple_recipe(f"clip-{i % 40}", i, snr_db=float(i % 21), attribution="bench"),
            transcript_speech="finish him", transcript_mixture="finish him", wer_speech=0.0,
            wer_mixture=(i % 5) / 25, cer_mixture=0.0,
            annotations=[*_votes("mixture", votes, "mix"), *_votes("speech", ["harmful"] * 3, "sp"),
                         *_votes("scene", [category] * 3, "sc")],
            consensus_label="benign", agreement=sum(v == "benign" for v in votes) / 3, decided_by="majority")
        control = None
        if every and i % every == 0:
            neutral = (i // every) % 2 == 1
            audio = np.concatenate([np.zeros(sample_rate), tone]) if neutral else \
                tone + 0.05 * rng.standard_normal(t.size)
            control = sample.model_copy(update={
                "sample_id": f"ctl-{i:016x}", "mixture": ws.store_audio(audio, sample_rate),
                "mix": None if neutral else simple_recipe("clip-other", i, attribution="bench"),
                "consensus_label": None, "agreement": None, "decided_by": None,
                "custom": {"control_of": sample.sample_id, "control": "neutral" if neutral else "mismatched",
                           "expected": "harmful"},
                "annotations": _votes("mixture", ["harmful"] * 3, "ctl")})
            controls.append(control)
        sample.provenance["validation.agreement"] = {"rule": {"min_fraction": 0.666667, "min_labels": 3},
                                                     "outcome": "validated", "arms": arm_results(sample, control)}
        samples.append(sample)
    # the chain a release is traced back to (release.export checks it): the WER output, the human labels
    ws.write_manifest("wer", [s.model_copy(update={"annotations": [], "consensus_label": None}) for s in samples])
    ws.write_manifest("annotated", samples)
    ws.write_manifest("validated", samples)
    if controls:
        ws.write_manifest("controls", controls)
        ws.write_manifest("annotated_controls", controls)
    per_category = {c: {"alpha": 0.7, "ci95": [0.6, 0.8], "ci95_clustered": [0.55, 0.82], "n_units": n // 6,
                        "n_annotators": 3, "note": ""} for c in CATEGORIES}
    overall = {"alpha": 0.7, "ci95": [0.65, 0.75], "ci95_clustered": [0.6, 0.78], "n_units": n, "n_annotators": 3,
               "note": ""}
    arm = {"overall": overall, "per_category": per_category, "n_ratings": 3 * n}
    (ws.root / "reports").mkdir(exist_ok=True)
    (ws.root / "reports" / "agreement.json").write_text(json.dumps({
        "protocol": "three-arm", "overall": overall, "per_category": per_category,
        "consensus": {"validated": n}, "level": "nominal", "labels": ["benign", "harmful", "unclear"],
        "arms": {"speech": arm, "scene": arm, "mixture": arm},
        "controls": {"samples_with_control": len(controls), "controls_judged_harmful": len(controls)},
        "rejected_by_arm": {}, "not_listened": {}}))
    return ws


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=3000)
    parser.add_argument("--duration-s", type=float, default=4.0)
    parser.add_argument("--control-share", type=float, default=0.1, help="share of samples with a control")
    parser.add_argument("--keep", help="build here and keep it (default: a temp folder, removed)")
    args = parser.parse_args()
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-release-"))
    try:
        t0 = time.perf_counter()
        ws = build_workspace(base / "ws", args.samples, args.duration_s, control_share=args.control_share)
        t_build = time.perf_counter() - t0
        audio_mb = sum(p.stat().st_size for p in (ws.root / "audio").rglob("*.wav")) / 1e6

        rows = []
        for label in ("export", "rerun (replace)"):
            t0 = time.perf_counter()
            summary = export_release(read_inputs(ws.root), base / "release", "1.0.0")
            rows.append((label, time.perf_counter() - t0, summary.total_bytes / 1e6))

        import datasets

        datasets.disable_progress_bars()
        t0 = time.perf_counter()
        ds = datasets.load_dataset(str(base / "release"), split="test", cache_dir=str(base / "hf-cache"))
        assert len(ds) == args.samples
        rows.append(("load_dataset (default)", time.perf_counter() - t0, summary.total_bytes / 1e6))
        if summary.num_controls:
            t0 = time.perf_counter()
            controls = datasets.load_dataset(str(base / "release"), "controls", split="test",
                                             cache_dir=str(base / "hf-cache"))
            assert len(controls) == summary.num_controls
            rows.append(("load_dataset (controls)", time.perf_counter() - t0, summary.total_bytes / 1e6))

        print(f"{args.samples} clips x {args.duration_s:g} s at 16 kHz, speech + mixture, and "
              f"{summary.num_controls} controls = {audio_mb:.0f} MB of WAV (workspace built in {t_build:.1f} s); "
              "CPU shared with other jobs")
        print(f"{'step':<24}{'seconds':>10}{'release MB':>12}{'clips/s':>10}")
        for label, seconds, size_mb in rows:
            print(f"{label:<24}{seconds:>10.1f}{size_mb:>12.1f}{args.samples / seconds:>10.0f}")
        print(f"goal: export <= 60 s -> {'met' if rows[0][1] <= 60 else 'MISSED'}")
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()

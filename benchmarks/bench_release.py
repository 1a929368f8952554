"""Release export time and size for a synthetic validated workspace (goal: 3,000 clips in <= 60 s).

    python benchmarks/bench_release.py [--samples 3000] [--duration-s 4] [--keep DIR]

Clips are noisy tones (incompressible, like real mixtures) stored as 16 kHz WAV through the workspace;
samples carry 3 annotations each. Timed: a first export, a rerun (replacing the release), and loading
the release back with `datasets.load_dataset` (parquet -> Arrow cache, no audio decoding).
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

from construction.config import Config  # noqa: E402
from construction.record import Annotation, Sample  # noqa: E402
from tests.conftest import simple_recipe  # noqa: E402
from construction.workspace import Workspace  # noqa: E402
from release.export import export_release, read_inputs  # noqa: E402

CATEGORIES = ["video_games", "cooking_household", "sports_boxing", "film_theatre", "hunting", "medical"]


def build_workspace(root: Path, n: int, duration_s: float, sample_rate: int = 16000) -> Workspace:
    ws = Workspace(root)
    ws.snapshot_config(Config().model_dump(mode="json"))
    rng = np.random.default_rng(0)
    t = np.arange(int(duration_s * sample_rate)) / sample_rate
    samples = []
    for i in range(n):
        audio = 0.2 * np.sin(2 * np.pi * (150 + i % 500) * t) + 0.05 * rng.standard_normal(t.size)
        ref = ws.store_audio(audio, sample_rate)
        votes = ["benign", "benign", "benign" if i % 4 else "unclear"]
        samples.append(Sample(
            sample_id=f"aor-{i:016x}", category=CATEGORIES[i % len(CATEGORIES)],
            speech_text=f"Finish him, number {i}!", context="A fighting game round ends.",
            background_tags=["gunfire"], placement="underlay", benign_reason="A game.", speaker_style="excited",
            provenance={"synthesize": {"backend": "piper", "voice": f"v{i % 8}"},
                        "wer": {"backend": "faster-whisper", "model": "base", "max_wer": 0.2}},
            voice_id=f"v{i % 8}", speech=ref, mixture=ref,
            mix=simple_recipe(f"clip-{i % 40}", i, snr_db=float(i % 21), attribution="bench"),
            transcript_speech="finish him", transcript_mixture="finish him", wer_speech=0.0,
            wer_mixture=(i % 5) / 25, cer_mixture=0.0,
            annotations=[Annotation(annotator=f"ann{k}", label=v) for k, v in enumerate(votes)],
            consensus_label="benign", agreement=sum(v == "benign" for v in votes) / 3, decided_by="majority"))
    ws.write_manifest("validated", samples)
    per_category = {c: {"alpha": 0.7, "ci95": [0.6, 0.8], "n_units": n // 6, "n_annotators": 3, "note": ""}
                    for c in CATEGORIES}
    (ws.root / "reports").mkdir(exist_ok=True)
    (ws.root / "reports" / "agreement.json").write_text(json.dumps({
        "overall": {"alpha": 0.7, "ci95": [0.65, 0.75], "n_units": n, "n_annotators": 3, "note": ""},
        "per_category": per_category, "consensus": {"validated": n}, "level": "nominal",
        "labels": ["benign", "harmful", "unclear"]}))
    return ws


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=3000)
    parser.add_argument("--duration-s", type=float, default=4.0)
    parser.add_argument("--keep", help="build here and keep it (default: a temp folder, removed)")
    args = parser.parse_args()
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-release-"))
    try:
        t0 = time.perf_counter()
        ws = build_workspace(base / "ws", args.samples, args.duration_s)
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
        rows.append(("load_dataset (folder)", time.perf_counter() - t0, summary.total_bytes / 1e6))

        print(f"{args.samples} clips x {args.duration_s:g} s at 16 kHz = {audio_mb:.0f} MB of WAV "
              f"(workspace built in {t_build:.1f} s); CPU shared with other jobs")
        print(f"{'step':<24}{'seconds':>10}{'release MB':>12}{'clips/s':>10}")
        for label, seconds, size_mb in rows:
            print(f"{label:<24}{seconds:>10.1f}{size_mb:>12.1f}{args.samples / seconds:>10.0f}")
        print(f"goal: export <= 60 s -> {'met' if rows[0][1] <= 60 else 'MISSED'}")
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()

"""Mixing throughput: our mix stage vs audiomentations AddBackgroundNoise, same clips, same SNR.

    python perf/bench_mix.py [--clips 200] [--seconds 5]      (flags: --help)

The mix lays out a scene before, under and after the speech and measures loudness four times, where a
plain augmentation library adds noise under the clip: this says what the richer mix costs.

Two numbers, side by side on the same speech-like clips and background:
  audiomentations      AddBackgroundNoise(p=1, min_snr_db=max_snr_db=SNR) per clip (RMS-based SNR, the
                       noise under the whole clip; it reads and resamples the 44.1 kHz background file
                       on every call)
  ours, stage          MixStage.mix_one with file I/O: read the speech WAV, the scene alone first,
                       then under the speech, then again (BS.1770 loudness of the speech, the layer, the
                       scene alone and the scene under the speech), write the mixture WAV
Ours does more (layout, four loudness measurements): the ratio says what that costs.
Timings are wall-clock on a shared 2-core CPU: rerun on a quiet machine.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import soundfile as sf

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from construction.core.config import load_config  # noqa: E402
from construction.mix import MixStage  # noqa: E402
from construction.core.record import Sample, make_sample_id  # noqa: E402
from construction.sounds.library import Clip, sha256_file, write_catalog  # noqa: E402
from construction.core.workspace import Workspace  # noqa: E402

SR = 16000
BG_RATE = 44100


def speechlike(rng: np.random.Generator, seconds: float) -> np.ndarray:
    t = np.arange(int(seconds * SR)) / SR
    return (0.3 * rng.standard_normal(t.size) * (0.5 + 0.5 * np.sin(2 * np.pi * 4 * t)) ** 2).astype(np.float32)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clips", type=int, default=200)
    parser.add_argument("--seconds", type=float, default=5.0)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    tmp = Path(tempfile.mkdtemp(prefix="bench-mix-"))
    library = tmp / "sounds"
    library.mkdir()
    # backgrounds come at their recording's rate (Freesound clips are mostly 44.1 kHz)
    background = (0.2 * rng.standard_normal(BG_RATE * 10)).astype(np.float32)
    sf.write(library / "crowd.wav", background, BG_RATE, subtype="PCM_16")
    write_catalog(library, [Clip(clip_id="crowd", path="crowd.wav", tags=["crowd_cheer"], duration_s=10.0,
                                 sample_rate=BG_RATE, licence="CC0-1.0", attribution="bench",
                                 sha256=sha256_file(library / "crowd.wav"), kind="bed")])
    config = load_config(None, {"mix.sounds": str(library), "mix.snr_db_min": 10, "mix.snr_db_max": 10,
                                "mix.min_clips_per_defining_tag": 1})
    ws = Workspace(tmp / "ws")
    clips = [speechlike(rng, args.seconds) for _ in range(args.clips)]
    samples = []
    for i, clip in enumerate(clips):
        text = f"clip {i}"
        sample = Sample(sample_id=make_sample_id("c", text, "x", "underlay", ["crowd_cheer"], "calm"), category="c",
                        speech_text=text, context="x", background_tags=["crowd_cheer"], placement="underlay",
                        benign_reason="r", speaker_style="calm")
        samples.append(sample.model_copy(update={"speech": ws.store_audio(clip, SR)}))
    ws.write_manifest("synthesize", samples)
    stage = MixStage(str(ws.root), config)
    stage.setup()
    from audiomentations import AddBackgroundNoise

    augment = AddBackgroundNoise(sounds_path=library, min_snr_db=10.0, max_snr_db=10.0, p=1.0)
    augment(samples=clips[0], sample_rate=SR)  # warm-up (it reads the background file on every call)
    t0 = time.perf_counter()
    for clip in clips:
        augment(samples=clip, sample_rate=SR)
    theirs_s = (time.perf_counter() - t0) / len(clips)

    t0 = time.perf_counter()
    for sample in samples:
        stage.mix_one(sample)
    stage_s = (time.perf_counter() - t0) / len(samples)

    print(f"{args.clips} clips of {args.seconds:.1f} s speech at {SR} Hz, a {BG_RATE} Hz background at 10 dB SNR")
    print(f"{'method':<40}{'ms/clip':>10}{'clips/s':>10}")
    print(f"{'audiomentations AddBackgroundNoise':<40}{theirs_s * 1e3:>10.2f}{1 / theirs_s:>10.1f}")
    print(f"{'ours, mix stage with layout and file I/O':<40}{stage_s * 1e3:>10.2f}{1 / stage_s:>10.1f}")
    print(f"ours / audiomentations time: {stage_s / theirs_s:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())

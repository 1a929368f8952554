"""Spectrogram sheets of a built workspace's kept samples, `--per-category` drawn at random (seeded) from
each category: for each sample one row of five log-mel spectrograms on one colour scale, the speech as
placed, the scene alone, the mixture, the irrelevant twin and the danger twin, each titled with the
glimpse proportions it was built to (ERB) and measured on (linear 25 ms and 64 ms grids), so what the
twins do can be seen, not only read off a number the build optimised.

    python scripts/twin_sheet.py --workspace workspace --out docs/images/twins [--per-category 2] [--seed 0]

Writes one PNG per category into --out and prints their paths.
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from construction.core.workspace import Workspace  # noqa: E402
from construction.mixing import heldout, masking  # noqa: E402
from construction.mixing.levels import placed_speech  # noqa: E402

N_MELS, FMAX, FLOOR_DB = 64, 8000, 80.0


def mel_db(audio: np.ndarray, sample_rate: int) -> np.ndarray:
    """(mels, frames) power in dB re full scale: 32 ms Hann frames every 10 ms through a mel filterbank."""
    import librosa

    power = librosa.feature.melspectrogram(y=np.asarray(audio, dtype=np.float32), sr=sample_rate, n_fft=512,
                                           hop_length=sample_rate // 100, n_mels=N_MELS, fmax=FMAX, power=2.0)
    return 10 * np.log10(power + 1e-12)


def glimpse_title(speech: np.ndarray, background: np.ndarray, span: tuple[int, int], sample_rate: int) -> str:
    a, b = span
    g = {"erb": masking.glimpse_proportion(speech[a:b], background[a:b], sample_rate),
         **heldout.glimpses(speech[a:b], background[a:b], sample_rate)}
    return f"glimpse ERB {g['erb']:.2f} | 25 ms {g['linear_25ms']:.2f} | 64 ms {g['linear_64ms']:.2f}"


def draw(ws: Workspace, samples: list, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(len(samples), 5, figsize=(20, 3.1 * len(samples)), squeeze=False)
    for row, s in zip(axes, samples):
        sr = s.speech.sample_rate
        speech = ws.load_audio(s.speech)
        track, alone, _ = placed_speech(speech, s.mix, sr)
        track *= 10 ** (s.provenance["mix"]["peak_guard_db"] / 20)
        span = (alone, alone + speech.size)
        mixture = ws.load_audio(s.mixture).astype(np.float64)
        panels = [("speech", track, None), ("scene alone", ws.load_audio(s.scene_audio), None),
                  ("mixture", mixture, mixture - track)]
        for name, field in (("irrelevant twin", "irrelevant_audio"), ("danger twin", "danger_audio")):
            ref = getattr(s, field)
            audio = ws.load_audio(ref).astype(np.float64) if ref else np.zeros_like(mixture)
            panels.append((name, audio, audio - track if ref else None))
        top = max(float(mel_db(audio, sr).max()) for _, audio, _ in panels)
        for ax, (name, audio, background) in zip(row, panels):
            spec = mel_db(audio, sr)
            ax.imshow(spec, origin="lower", aspect="auto", cmap="magma", vmin=top - FLOOR_DB, vmax=top,
                      extent=(0, audio.size / sr, 0, N_MELS))
            ax.axvspan(span[0] / sr, span[1] / sr, ymin=0.97, ymax=1.0, color="cyan")
            title = f"{name}"
            if background is not None:
                title += "\n" + glimpse_title(track, background, span, sr)
            elif name == "speech":
                title += f"\n{s.category} / {s.mix.scene_id}"
            ax.set_title(title, fontsize=8)
            ax.set_yticks([0, N_MELS // 2, N_MELS])
            ax.set_yticklabels(["0", "mel 32", f"{FMAX // 1000} kHz"], fontsize=7)
            ax.tick_params(axis="x", labelsize=7)
        row[0].set_ylabel(s.sample_id[-8:], fontsize=8)
    fig.suptitle("log-mel spectrograms (64 mels to 8 kHz, 32 ms / 10 ms; one colour scale a row, 80 dB); "
                 "the cyan bar marks the speech's span", fontsize=9)
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=72)
    plt.close(fig)
    from PIL import Image

    with Image.open(out) as image:  # a 128-colour palette: a quarter of the bytes, the same picture to the eye
        image.convert("RGB").quantize(colors=128).save(out, optimize=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspace", default="workspace")
    parser.add_argument("--out", default="docs/images/twins")
    parser.add_argument("--per-category", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    ws = Workspace(args.workspace)
    by_category: dict[str, list] = {}
    for s in ws.read_samples("wer"):
        by_category.setdefault(s.category, []).append(s)
    rng = random.Random(args.seed)
    for category, samples in sorted(by_category.items()):
        chosen = rng.sample(samples, min(args.per_category, len(samples)))
        path = Path(args.out) / f"{category}.png"
        draw(ws, chosen, path)
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())

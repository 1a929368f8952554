"""Render one draw of each procedural sound class as a spectrogram sheet (docs/procedural-sounds.png).

A picture a person can check at a glance: the whistle's fluttering band at 2-4 kHz, the bell's
inharmonic partials decaying, the timer's gated beeps, the chops' broadband cuts, the bubbles'
upward chirps, the frying's dense crackle, the ambiences' shapeless noise. Each panel is titled with
its measurements (crest factor, spectral centroid, tonal prominence, pops per second); with --sounds,
the real recordings a class is judged against (REFERENCES) follow the classes, measured the same way.
Seeds are fixed, so the sheet only changes when a model does.

    python scripts/procedural_sheet.py --out docs/procedural-sounds.png --sounds ~/.cache/aor-bench/starter-sounds
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from construction.core.cli import run_main
from construction.core.errors import WorkbenchError
from construction.core.workspace import atomic_write_bytes
from construction.sounds.procedural import CLASSES, draw

COLUMNS, PANEL_PX, DPI = 3, (600, 360), 100
SAMPLE_RATE = 22050  # enough to show the whistle's and the timer's harmonics, small files
# real recordings of the starter library a class is compared with (none is admitted for chopping)
REFERENCES = ("openclonk-smokesizzle", "openclonk-sizzle", "stk-goal-scored")


def measures(audio, sample_rate: int) -> dict[str, float]:
    """Crest factor (dB), spectral centroid (Hz), tonal prominence (the highest 150 Hz-4 kHz peak of
    the Welch spectrum over its median-smoothed level, dB: a pitched block scores 20+, noise 1-5) and
    pops per second (2 ms frames above 1 kHz standing 6x over their 0.1 s median)."""
    import numpy as np
    from scipy import signal
    from scipy.ndimage import median_filter

    x = np.asarray(audio, dtype=np.float64)
    crest = 20 * np.log10(np.max(np.abs(x)) / np.sqrt(np.mean(x ** 2)))
    f, psd = signal.welch(x, sample_rate, nperseg=1024)
    band = (f > 150) & (f < 4000)
    tonal = 10 * np.log10(np.max(psd[band] / median_filter(psd, 31)[band]))
    hp = signal.sosfilt(signal.butter(4, 1000, "highpass", fs=sample_rate, output="sos"), x)
    hop = int(0.002 * sample_rate)
    energy = (hp[:hp.size // hop * hop].reshape(-1, hop) ** 2).mean(axis=1)
    pops, _ = signal.find_peaks(energy, height=6 * median_filter(energy, 51), distance=3)
    return {"crest_db": round(float(crest), 1), "centroid_hz": round(float(np.sum(f * psd) / np.sum(psd))),
            "tonal_db": round(float(tonal), 1), "pops_per_s": round(len(pops) / (x.size / sample_rate), 1)}


def sheet_png(seconds: float, seed: int, sounds: Path | None = None) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    panels = []
    for name in CLASSES:
        cls = CLASSES[name]
        audio, _ = draw(name, seed, seconds if cls.kind == "bed" else 0, SAMPLE_RATE)
        panels.append((f"{name} ({cls.kind}, seed {seed})", audio))
    if sounds is not None:
        from construction.sounds.scenes import open_library

        library = open_library(sounds)
        for clip_id in REFERENCES:
            clip = next((c for c in library.clips if c.clip_id == clip_id), None)
            if clip is not None:
                panels.append((f"{clip_id} (recording, {'/'.join(clip.tags)})", library.load_audio(clip, SAMPLE_RATE)))
    names = [title for title, _ in panels]
    rows = -(-len(names) // COLUMNS)
    fig, axes = plt.subplots(rows, COLUMNS, figsize=(COLUMNS * PANEL_PX[0] / DPI, rows * PANEL_PX[1] / DPI), dpi=DPI)
    for ax in axes.flat[len(names):]:
        ax.axis("off")
    for ax, (title, audio) in zip(axes.flat, panels):
        with np.errstate(divide="ignore"):  # an event's silent gaps are exact zeros
            ax.specgram(audio.astype(np.float64), NFFT=512, Fs=SAMPLE_RATE, noverlap=384, cmap="magma", vmin=-110)
        ax.set_ylim(0, 10000)
        m = measures(audio, SAMPLE_RATE)
        ax.set_title(f"{title}\ncrest {m['crest_db']} dB, centroid {m['centroid_hz']} Hz, tonal {m['tonal_db']} dB, "
                     f"{m['pops_per_s']} pops/s", fontsize=9)
        ax.set_xlabel("s", fontsize=8)
        ax.set_ylabel("Hz", fontsize=8)
        ax.tick_params(labelsize=7)
    fig.suptitle("Procedural sound classes: one draw each (construction.sounds.procedural)", fontsize=12)
    fig.tight_layout(rect=(0, 0, 1, 0.985))
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI)
    plt.close(fig)
    from PIL import (
        Image,  # a 32-colour palette: a noise spectrogram in full colour is megabytes
    )

    small = io.BytesIO()
    Image.open(io.BytesIO(buffer.getvalue())).convert("RGB").quantize(32).save(small, format="PNG", optimize=True)
    return small.getvalue()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python scripts/procedural_sheet.py", description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="docs/procedural-sounds.png", help="PNG to write (default: %(default)s)")
    parser.add_argument("--seconds", type=float, default=4.0, help="length of each bed's draw (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=1, help="the seed of every draw (default: %(default)s)")
    parser.add_argument("--sounds", metavar="LIBRARY_DIR", help="a sound library: its reference recordings "
                        f"({', '.join(REFERENCES)}) are shown and measured beside the classes (default: none)")
    args = parser.parse_args(argv)
    if not 0.5 <= args.seconds <= 60:
        raise WorkbenchError(f"--seconds must be between 0.5 and 60, not {args.seconds:g}")
    out = Path(args.out)
    if not out.parent.is_dir():
        raise WorkbenchError(f"--out: no directory {out.parent}")
    atomic_write_bytes(out, sheet_png(args.seconds, args.seed, Path(args.sounds) if args.sounds else None))
    print(f"wrote {out} ({len(CLASSES)} classes)")
    return 0


if __name__ == "__main__":
    run_main(main, sys.argv[1:])

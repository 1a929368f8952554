"""Render one draw of each procedural sound class as a spectrogram sheet (docs/procedural-sounds.png).

A picture a person can check at a glance: the whistle's fluttering band at 2-4 kHz, the bell's
inharmonic partials decaying, the timer's gated beeps, the chops' broadband hits, the bubbles'
upward chirps, the ambiences' shapeless noise. Seeds are fixed, so the sheet only changes when a model
does.

    python scripts/procedural_sheet.py --out docs/procedural-sounds.png
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


def sheet_png(seconds: float, seed: int) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    names = list(CLASSES)
    rows = -(-len(names) // COLUMNS)
    fig, axes = plt.subplots(rows, COLUMNS, figsize=(COLUMNS * PANEL_PX[0] / DPI, rows * PANEL_PX[1] / DPI), dpi=DPI)
    for ax in axes.flat[len(names):]:
        ax.axis("off")
    for ax, name in zip(axes.flat, names):
        cls = CLASSES[name]
        audio, _ = draw(name, seed, seconds if cls.kind == "bed" else 0, SAMPLE_RATE)
        with np.errstate(divide="ignore"):  # an event's silent gaps are exact zeros
            ax.specgram(audio.astype(np.float64), NFFT=512, Fs=SAMPLE_RATE, noverlap=384, cmap="magma", vmin=-110)
        ax.set_ylim(0, 10000)
        ax.set_title(f"{name} ({cls.kind}, seed {seed})", fontsize=10)
        ax.set_xlabel("s", fontsize=8)
        ax.set_ylabel("Hz", fontsize=8)
        ax.tick_params(labelsize=7)
    fig.suptitle("Procedural sound classes: one draw each (construction.sounds.procedural)", fontsize=12)
    fig.tight_layout()
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
    args = parser.parse_args(argv)
    if not 0.5 <= args.seconds <= 60:
        raise WorkbenchError(f"--seconds must be between 0.5 and 60, not {args.seconds:g}")
    out = Path(args.out)
    if not out.parent.is_dir():
        raise WorkbenchError(f"--out: no directory {out.parent}")
    atomic_write_bytes(out, sheet_png(args.seconds, args.seed))
    print(f"wrote {out} ({len(CLASSES)} classes)")
    return 0


if __name__ == "__main__":
    run_main(main, sys.argv[1:])

"""Render every clip of a built sound library as a spectrogram on contact sheets, with its measures.

The library audit (docs/library-audit.md) judges each clip against each of its tags from these sheets:
nobody here can listen, so the picture and a few numbers are the evidence. Each panel is one clip (a
procedural class: one draw, seed fixed): its log-power spectrogram on a mel-spaced frequency axis
(0-8 kHz: the mix renders at 16 kHz), titled with the clip id, licence, kind, tags, duration, loudness
and what was measured:

  centroid    spectral centroid (Hz) of the whole clip at 16 kHz
  <250 / >2k  share of the energy below 250 Hz / above 2 kHz, at 16 kHz
  onsets      spectral-flux onsets (peaks of the mean rise of the dB spectrum, 50 ms apart at least)
  band        band limit at the file's own rate: the highest frequency whose (smoothed) Welch level is
              within 40 dB of the spectrum's peak; a clip cut off below 8 kHz shows a hard shelf there

Clips are grouped by their rarest tag, so the clips of one tag sit together. Writes OUT/sheet-NN.png
(12 clips each, 32-colour PNG) and OUT/measures.csv (one row per clip: its sheet and numbers).

    python scripts/library_sheets.py --sounds /tmp/lib-audit --out docs/library-audit
"""

from __future__ import annotations

import argparse
import csv
import io
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from construction.core.cli import run_main  # noqa: E402
from construction.core.errors import WorkbenchError  # noqa: E402
from construction.core.workspace import atomic_write_bytes, atomic_write_text  # noqa: E402

RATE = 16000               # the mix's rate: what a listener of the benchmark hears
PER_SHEET, COLUMNS = 12, 3
PANEL_IN, DPI = (5.4, 3.1), 80
BED_S, SEED = 8.0, 11      # a procedural bed's draw length and every draw's seed
BAND_RANGE_DB = 40.0
ONSET_DB = 1.0             # an onset: the spectrum rises this much (mean over bins, dB) over its surroundings
FIELDS = ["clip_id", "sheet", "tags", "licence", "kind", "procedural", "duration_s", "lufs", "native_rate",
          "centroid_hz", "low_250_share", "high_2k_share", "onsets", "band_limit_hz"]


def band_limit(audio: np.ndarray, rate: int) -> float:
    """Highest frequency (Hz) whose smoothed Welch level is within BAND_RANGE_DB of the spectrum's peak."""
    from scipy import signal
    from scipy.ndimage import median_filter

    if audio.size < 256:
        audio = np.pad(audio, (0, 256 - audio.size))
    f, psd = signal.welch(audio.astype(np.float64), rate, nperseg=min(4096, audio.size))
    level = 10 * np.log10(median_filter(psd, 5) + 1e-20)
    audible = f >= 20
    top = level[audible].max()
    return float(f[audible][level[audible] >= top - BAND_RANGE_DB].max())


def onset_count(audio: np.ndarray, rate: int = RATE) -> int:
    """Spectral-flux onsets: peaks of the mean positive rise of the dB spectrum (10 ms hop, 80 dB range)
    standing ONSET_DB over their 0.5 s moving median, 50 ms apart. A steady tone or an even noise bed
    has none; a beep, a bark or a blow in quiet has one."""
    from scipy import signal
    from scipy.ndimage import median_filter

    hop, n = rate // 100, 512
    if audio.size < n:
        audio = np.pad(audio, (0, n - audio.size))
    _, _, z = signal.stft(audio, rate, nperseg=n, noverlap=n - hop, boundary=None, padded=False)
    level = 20 * np.log10(np.abs(z) + 1e-10)
    level = np.maximum(level, level.max() - 80)
    flux = np.maximum(np.diff(level, axis=1), 0).mean(axis=0)
    if flux.size < 3:
        return 0
    peaks, _ = signal.find_peaks(flux, height=median_filter(flux, 51, mode="nearest") + ONSET_DB, distance=5)
    return int(peaks.size)


def measures(audio: np.ndarray, native: np.ndarray, native_rate: int) -> dict[str, float]:
    """The panel's numbers (see the module docstring); `audio` at RATE, `native` at the file's rate."""
    from scipy import signal

    x = audio.astype(np.float64)
    f, psd = signal.welch(x if x.size >= 256 else np.pad(x, (0, 256 - x.size)), RATE, nperseg=min(1024, max(256, x.size)))
    total = psd.sum() or 1.0
    return {"centroid_hz": round(float((f * psd).sum() / total)),
            "low_250_share": round(float(psd[f < 250].sum() / total), 3),
            "high_2k_share": round(float(psd[f > 2000].sum() / total), 3),
            "onsets": onset_count(x), "band_limit_hz": round(band_limit(native, native_rate))}


def _mel(hz):
    return 2595 * np.log10(1 + np.asarray(hz, dtype=np.float64) / 700)


def _hz(mel):
    return 700 * (10 ** (np.asarray(mel, dtype=np.float64) / 2595) - 1)


def panel(ax, audio: np.ndarray, title: str) -> None:
    """A log-power spectrogram (dB re the clip's loudest bin, 80 dB shown) on a mel-spaced Hz axis."""
    from scipy import signal

    # a window that suits the clip: 64 ms for long clips, down to 16 ms for a short event's detail
    n = 1024 if audio.size > 2 * RATE else 512 if audio.size > 0.6 * RATE else 256
    hop = int(np.clip(audio.size // 400, 32, 256))
    x = audio if audio.size >= n else np.pad(audio, (0, n - audio.size))
    f, t, z = signal.stft(x, RATE, nperseg=n, noverlap=n - hop)
    power = np.abs(z) ** 2
    db = 10 * np.log10(power / (power.max() or 1.0) + 1e-12)
    ax.pcolormesh(t, f, db, vmin=-80, vmax=0, cmap="magma", shading="auto", rasterized=True)
    ax.set_yscale("function", functions=(_mel, _hz))
    ax.set_ylim(0, RATE / 2)
    ax.set_yticks([100, 250, 500, 1000, 2000, 4000, 8000])
    ax.set_yticklabels(["100", "250", "500", "1k", "2k", "4k", "8k"])
    ax.set_xlim(0, audio.size / RATE)
    ax.set_title(title, fontsize=7, loc="left")
    ax.set_xlabel("s", fontsize=7, labelpad=0)
    ax.set_ylabel("Hz", fontsize=7, labelpad=0)
    ax.tick_params(labelsize=6, pad=1)


def clip_audio(library, clip) -> tuple[np.ndarray, np.ndarray, int]:
    """(audio at RATE, audio at the file's rate, that rate); a procedural class: one draw (SEED)."""
    import soxr

    from construction.sounds.library import read_mono

    if clip.procedural:
        from construction.sounds.procedural import CLASSES, draw

        cls = CLASSES[clip.procedural]
        native, _ = draw(clip.procedural, SEED, BED_S if cls.kind == "bed" else 0, 48000)
        return soxr.resample(native, 48000, RATE).astype(np.float32), native, 48000
    import soundfile as sf

    path = library.path_of(clip)
    native_rate = sf.info(path).samplerate
    native = read_mono(path)
    return library.load_audio(clip, RATE), native, native_rate


def grouped(clips) -> list:
    """Clips ordered by their rarest tag (ties: the tag's name), then by id: one tag's clips together."""
    counts = Counter(t for c in clips for t in c.tags)
    def key(clip):
        rarest = min(clip.tags, key=lambda t: (counts[t], t))
        return (rarest, bool(clip.procedural), clip.clip_id)
    return sorted(clips, key=key)


def sheet_png(rows: list[tuple[str, np.ndarray]], number: int, sheets: int, library_name: str) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from PIL import Image

    lines = -(-len(rows) // COLUMNS)
    fig, axes = plt.subplots(lines, COLUMNS, figsize=(COLUMNS * PANEL_IN[0], lines * PANEL_IN[1]), dpi=DPI,
                             squeeze=False)
    for ax in axes.flat[len(rows):]:
        ax.axis("off")
    for ax, (title, audio) in zip(axes.flat, rows):
        panel(ax, audio, title)
    fig.suptitle(f"Sound library {library_name}: sheet {number} of {sheets} (power dB re each clip's loudest bin, "
                 "80 dB shown; mel-spaced axis; not listened to)", fontsize=9)
    fig.tight_layout(rect=(0, 0, 1, 0.98), h_pad=0.6, w_pad=0.4)
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=DPI)
    plt.close(fig)
    small = io.BytesIO()  # a 32-colour palette: a full-colour noise spectrogram is megabytes
    Image.open(io.BytesIO(buffer.getvalue())).convert("RGB").quantize(32).save(small, format="PNG", optimize=True)
    return small.getvalue()


def title_of(clip, m: dict, native_rate: int, seconds: float) -> str:
    lufs = "" if clip.lufs is None else f", {clip.lufs:.0f} LUFS"
    what = f"procedural draw, seed {SEED}" if clip.procedural else f"{native_rate / 1000:g} kHz file"
    return (f"{clip.clip_id}  ({clip.licence}, {clip.kind}, {what})\n"
            f"tags: {', '.join(clip.tags)} | {seconds:.2f} s{lufs}\n"
            f"centroid {m['centroid_hz']} Hz, <250 Hz {m['low_250_share']:.0%}, >2 kHz {m['high_2k_share']:.0%}, "
            f"{m['onsets']} onsets, band {m['band_limit_hz'] / 1000:.1f} kHz")


def render(sounds: Path, out: Path, only: list[str] | None = None) -> tuple[int, int]:
    """Write the sheets and measures.csv; returns (clips, sheets)."""
    from construction.sounds.scenes import open_library

    library = open_library(sounds)
    if library.problems:
        raise WorkbenchError(f"the library {sounds} has bad clips (fix or rebuild it first): "
                             + "; ".join(f"{p.clip_id}: {p.reason}" for p in library.problems[:5]))
    clips = [c for c in library.clips if not only or c.clip_id in only]
    if only and len(clips) != len(set(only)):
        missing = sorted(set(only) - {c.clip_id for c in clips})
        raise WorkbenchError(f"--clip: no clip {', '.join(missing)} in {sounds}")
    clips = grouped(clips)
    sheets = -(-len(clips) // PER_SHEET)
    table: list[dict] = []
    for number in range(1, sheets + 1):
        rows = []
        for clip in clips[(number - 1) * PER_SHEET:number * PER_SHEET]:
            audio, native, native_rate = clip_audio(library, clip)
            m = measures(audio, native, native_rate)
            seconds = round(audio.size / RATE, 3)  # a procedural draw's own length, not the catalog's
            rows.append((title_of(clip, m, native_rate, seconds), audio))
            table.append({"clip_id": clip.clip_id, "sheet": number, "tags": " ".join(clip.tags),
                          "licence": clip.licence, "kind": clip.kind, "procedural": clip.procedural,
                          "duration_s": seconds, "lufs": clip.lufs, "native_rate": native_rate, **m})
        atomic_write_bytes(out / f"sheet-{number:02d}.png", sheet_png(rows, number, sheets, sounds.name))
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=FIELDS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(table)
    atomic_write_text(out / "measures.csv", text.getvalue())
    return len(clips), sheets


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python scripts/library_sheets.py", description=__doc__.splitlines()[0])
    parser.add_argument("--sounds", required=True, metavar="LIBRARY_DIR", help="a built sound library (catalog.jsonl)")
    parser.add_argument("--out", required=True, metavar="DIR", help="folder for sheet-NN.png and measures.csv "
                        "(made if missing; its old sheets are replaced)")
    parser.add_argument("--clip", action="append", metavar="CLIP_ID", help="only this clip (repeatable)")
    args = parser.parse_args(argv)
    sounds, out = Path(args.sounds).expanduser(), Path(args.out)
    if out.exists() and not out.is_dir():
        raise WorkbenchError(f"--out {out} is a file, not a folder")
    out.mkdir(parents=True, exist_ok=True)
    count, sheets = render(sounds, out, args.clip)
    for old in out.glob("sheet-*.png"):  # a smaller library makes fewer sheets: none left over
        if old.stem[6:].isdigit() and int(old.stem[6:]) > sheets:
            old.unlink()
    print(f"wrote {sheets} sheet(s) of {count} clips and measures.csv to {out}")
    return 0


if __name__ == "__main__":
    run_main(main, sys.argv[1:])

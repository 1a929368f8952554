"""How a package's sound becomes a starter-library clip: mono, DC offset removed, long beds cut to
their loudest part, edge silence trimmed, decoded overshoot scaled under full scale, 16-bit FLAC.

The package's audio is not the library's: it may be stereo, carry a DC offset or seconds of silence,
run for minutes, or overshoot full scale after decoding. Each step is noted for the build report, and
the span of the source kept is returned so clipping can be judged on the package's own samples.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np
import soundfile as sf

from construction.sounds.library import active_threshold_db, frame_db

BUILDER_VERSION = 2  # bump when the processing changes in a way the input hash cannot see

TRIM_FRAME_S = 0.01
TRIM_LEAD_S, TRIM_TAIL_S = 0.01, 0.1   # kept before the first / after the last active frame
EDGE_FADE_S = 0.02                     # fades where audio was cut (trim, excerpt)
HEADROOM_DBFS = -1.0                   # decoded overshoot (peak > 0 dBFS) is scaled to this peak


def _fade(mono: np.ndarray, sample_rate: int, head: bool, tail: bool) -> np.ndarray:
    n = min(int(EDGE_FADE_S * sample_rate), mono.size // 2)
    if n <= 0:
        return mono
    ramp = np.linspace(0.0, 1.0, n, endpoint=False)
    out = mono.copy()
    if head:
        out[:n] *= ramp
    if tail:
        out[-n:] *= ramp[::-1]
    return out


def loudest_window(mono: np.ndarray, sample_rate: int, seconds: float) -> int:
    """Start sample of the `seconds`-long window with the most energy, on a 1 s grid (earliest wins)."""
    length = int(seconds * sample_rate)
    energy = np.concatenate(([0.0], np.cumsum(mono.astype(np.float64) ** 2)))
    starts = np.arange(0, mono.size - length + 1, sample_rate)
    totals = energy[starts + length] - energy[starts]
    return int(starts[int(np.argmax(totals))])


@dataclass
class Prepared:
    mono: np.ndarray
    notes: list[str]
    span: tuple[int, int]  # the part of the source (in samples) that the clip keeps


def prepare_audio(audio: np.ndarray, sample_rate: int, kind: str, max_s: float | None) -> Prepared:
    """Mono, DC removed, long beds cut to their loudest `max_s`, edge silence trimmed, overshoot
    scaled back under full scale; with what was done (for the report) and the span kept."""
    notes: list[str] = []
    mono = audio.mean(axis=1)
    offset = float(mono.mean())
    if abs(offset) > 1e-3:
        mono = mono - offset
        notes.append(f"DC offset {offset:+.3f} removed")
    lo, hi = 0, mono.size
    if kind == "bed" and max_s and mono.size > max_s * sample_rate:
        start = loudest_window(mono, sample_rate, max_s)
        lo, hi = start, start + int(max_s * sample_rate)
        notes.append(f"excerpt {lo / sample_rate:.0f}-{hi / sample_rate:.0f} s "
                     f"of {mono.size / sample_rate:.0f} s (loudest {max_s:g} s)")
        mono = _fade(mono[lo:hi], sample_rate, head=lo > 0, tail=hi < audio.shape[0])
    levels = frame_db(mono, sample_rate, TRIM_FRAME_S)
    active = np.flatnonzero(levels > active_threshold_db(levels))
    if active.size:  # nothing above the floor: nothing to trim to (the silence check will say so)
        hop = int(round(TRIM_FRAME_S * sample_rate))
        first = max(0, int(active[0]) * hop - int(TRIM_LEAD_S * sample_rate))
        last = min(mono.size, (int(active[-1]) + 1) * hop + int(TRIM_TAIL_S * sample_rate))
        if first > 0 or last < mono.size:
            if (first + mono.size - last) / sample_rate >= 0.05:
                notes.append(f"trimmed {first / sample_rate:.2f} s leading and "
                             f"{(mono.size - last) / sample_rate:.2f} s trailing silence")
            mono = _fade(mono[first:last], sample_rate, head=first > 0, tail=last < mono.size)
            lo, hi = lo + first, lo + last
    peak = float(np.max(np.abs(mono))) if mono.size else 0.0
    if peak > 0.999:
        gain = 10 ** (HEADROOM_DBFS / 20) / peak
        mono = mono * gain
        notes.append(f"decoded peak {20 * np.log10(peak):+.1f} dBFS scaled by {20 * np.log10(gain):.1f} dB")
    return Prepared(mono=mono, notes=notes, span=(lo, hi))


def flac_bytes(mono: np.ndarray, sample_rate: int) -> bytes:
    """Mono 16-bit FLAC; deterministic for the same audio and libsndfile."""
    pcm = np.clip(np.round(mono * 32768.0), -32768, 32767).astype(np.int16)
    buf = io.BytesIO()
    sf.write(buf, pcm, sample_rate, format="FLAC", subtype="PCM_16")
    return buf.getvalue()

"""Measures the build does not optimise: how a twin's masking, speech level and timing compare with the
mixture's on grids and rules the twins are not built on, so a match made on one grid is checked on others.

- `linear_glimpse`: the glimpse proportion (Cooke 2006) on a LINEAR short-time spectrum (a Hann window
  of `frame_s`, every `hop_s`, bins from 0.1 to 7 kHz): a cell is a glimpse where the speech beats the
  background by 3 dB; the cells counted are every bin of the frames where the speech is within 35 dB of
  its loudest frame. GRIDS names the two the build reports (25 ms / 10 ms and 64 ms / 16 ms), beside the
  ERB grid the twins are matched on (construction.mixing.masking).
- `speech_gain_db`: the speech's level in a rendered track relative to the speech track, by projection
  onto it over the voiced span (the background is independent of the speech, so it averages out).
- `silences`: runs of 10 ms frames 35 dB and more below a scene's loud frames (its 90th percentile).
- `envelope_correlation`: the correlation of two tracks' events (10 ms log-envelopes less their 0.5 s
  running mean), with the same correlation against circular shifts of the second (the baseline a track
  that merely coexists reaches).
- `masking_figures`: how a set of twins' glimpse differences (twin - mixture, one grid) read: |d| median
  and 95th percentile, the share masking less than the scene (d > 0) and that share's 95 % interval
  (`share_interval`: about a hundred twins a category put a share's standard error near 0.05, so a reader
  needs the interval to tell a bias from a draw). The build's stats and the held-out audit both use it.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

TINY = 1e-20
GRIDS = {"linear_25ms": (0.025, 0.010), "linear_64ms": (0.064, 0.016)}  # (frame, hop) s
LOW_HZ, HIGH_HZ = 100.0, 7000.0
CRITERION_DB, SPEECH_FRAME_DB = 3.0, 35.0
SILENCE_DB, SILENCE_MIN_S = 35.0, 0.5
ENVELOPE_HOP_S = 0.010
TREND_S = 0.5  # envelope changes slower than this are a clip's sections, not its events


def share_interval(hits: int, n: int) -> list[float]:
    """The Wilson 95 % interval of the share `hits` / `n` (scipy), rounded to 3 places; [0, 1] for n = 0."""
    if n == 0:
        return [0.0, 1.0]
    from scipy.stats import binomtest

    ci = binomtest(hits, n).proportion_ci(confidence_level=0.95, method="wilson")
    return [round(float(ci.low), 3), round(float(ci.high), 3)]


def masking_figures(differences: np.ndarray) -> dict[str, float | list[float]]:
    """|d| median and p95, the share masking less (d > 0) and its interval, for glimpse differences
    twin - mixture on one grid."""
    d = np.asarray(differences, dtype=float)
    less = int(np.sum(d > 0))
    return {"median_abs": round(float(np.median(np.abs(d))), 4),
            "p95_abs": round(float(np.percentile(np.abs(d), 95)), 4),
            "share_masking_less": round(less / d.size, 3), "share_masking_less_ci95": share_interval(less, d.size)}


def spectrogram(audio: np.ndarray, sample_rate: int, frame_s: float, hop_s: float) -> np.ndarray:
    """(frames, bins) power of Hann-windowed frames, the bins from LOW_HZ to HIGH_HZ."""
    frame, hop = int(frame_s * sample_rate), int(hop_s * sample_rate)
    x = np.asarray(audio, dtype=np.float64)
    if x.size < frame:
        x = np.pad(x, (0, frame - x.size))
    frames = np.lib.stride_tricks.sliding_window_view(x, frame)[::hop] * _window(frame)
    power = np.abs(np.fft.rfft(frames, axis=1)) ** 2
    freqs = np.fft.rfftfreq(frame, 1 / sample_rate)
    return power[:, (freqs >= LOW_HZ) & (freqs <= HIGH_HZ)]


@lru_cache(maxsize=8)
def _window(n: int) -> np.ndarray:
    return np.hanning(n)


def linear_glimpse(speech: np.ndarray, background: np.ndarray, sample_rate: int, frame_s: float = 0.025,
                   hop_s: float = 0.010) -> float:
    """The speech's glimpse proportion over `background` on a linear grid (see the module docstring)."""
    s = spectrogram(speech, sample_rate, frame_s, hop_s)
    b = spectrogram(background, sample_rate, frame_s, hop_s)
    level = 10 * np.log10(s.sum(axis=1) + TINY)
    active = level >= level.max() - SPEECH_FRAME_DB
    if not active.any():
        return float("nan")
    return float(np.mean(10 * np.log10(s[active] + TINY) - 10 * np.log10(b[active] + TINY) >= CRITERION_DB))


def glimpses(speech: np.ndarray, background: np.ndarray, sample_rate: int,
             grids: dict[str, tuple[float, float]] = GRIDS) -> dict[str, float]:
    """The glimpse proportion on each of `grids` (speech and background over the same span)."""
    return {name: round(linear_glimpse(speech, background, sample_rate, *grid), 4) for name, grid in grids.items()}


def speech_gain_db(track: np.ndarray, speech_track: np.ndarray, span: tuple[int, int]) -> float:
    """The gain (dB) of `speech_track` inside `track` over `span`: the least-squares projection."""
    start, end = span
    s = np.asarray(speech_track[start:end], dtype=np.float64)
    x = np.asarray(track[start:end], dtype=np.float64)
    g = float(np.sum(x * s) / (np.sum(s * s) or 1.0))  # no BLAS: its sums' order follows its threads
    return 20 * np.log10(max(g, 1e-6))


def frame_levels_db(audio: np.ndarray, sample_rate: int, hop_s: float = ENVELOPE_HOP_S) -> np.ndarray:
    hop = max(1, int(hop_s * sample_rate))
    n = audio.size // hop
    frames = np.asarray(audio[:n * hop], dtype=np.float64).reshape(n, hop)
    return 10 * np.log10(np.mean(frames ** 2, axis=1) + TINY)


def silences(scene: np.ndarray, sample_rate: int, span: tuple[int, int] | None = None,
             min_s: float = SILENCE_MIN_S) -> list[tuple[float, float]]:
    """(start s, length s) of the scene's silences of at least `min_s` that overlap `span` (samples;
    None: anywhere): runs of 10 ms frames SILENCE_DB below its loud frames."""
    level = frame_levels_db(scene, sample_rate)
    if level.size == 0:
        return []
    quiet = level < np.percentile(level, 90) - SILENCE_DB
    edges = np.flatnonzero(np.diff(np.concatenate([[0], quiet.astype(np.int8), [0]])))
    hop = int(ENVELOPE_HOP_S * sample_rate)
    out = []
    for a, b in zip(edges[::2], edges[1::2]):
        if (b - a) * ENVELOPE_HOP_S < min_s:
            continue
        if span is not None and (b * hop <= span[0] or a * hop >= span[1]):
            continue
        out.append((round(a * ENVELOPE_HOP_S, 2), round((b - a) * ENVELOPE_HOP_S, 2)))
    return out


def events(envelope_db: np.ndarray, trend_s: float = TREND_S) -> np.ndarray:
    """A 10 ms log-envelope with its running mean over `trend_s` taken out: its events (onsets, hits,
    decays), not the levels of the clip's sections (a twin is laid out like the mixture: alone, under
    the speech, alone again, so section levels are shared by design)."""
    n = max(1, int(trend_s / ENVELOPE_HOP_S))
    kernel = np.ones(n) / n
    padded = np.pad(envelope_db, (n // 2, n - 1 - n // 2), mode="edge")
    return envelope_db - np.convolve(padded, kernel, mode="valid")


def envelope_correlation(a: np.ndarray, b: np.ndarray, sample_rate: int, span: tuple[int, int] | None = None,
                         min_shift_s: float = 0.5, shifts: int = 40) -> dict[str, float]:
    """{r: the correlation of the events (`events`) of the 10 ms log-envelopes of `a` and `b` (over
    `span`), baseline_p95: the 95th percentile of the same against `shifts` circular shifts of b's by at
    least min_shift_s}. Envelopes are floored 60 dB under their loudest frame, so digital silence does
    not dominate."""
    ea, eb = frame_levels_db(a, sample_rate), frame_levels_db(b, sample_rate)
    n = min(ea.size, eb.size)
    ea, eb = ea[:n], eb[:n]
    if span is not None:
        hop = int(ENVELOPE_HOP_S * sample_rate)
        ea, eb = ea[span[0] // hop:span[1] // hop], eb[span[0] // hop:span[1] // hop]
    if ea.size == 0:
        return {"r": 0.0, "baseline_p95": 0.0}
    ea, eb = events(np.maximum(ea, ea.max() - 60)), events(np.maximum(eb, eb.max() - 60))
    if ea.size < 4 or np.std(ea) == 0 or np.std(eb) == 0:
        return {"r": 0.0, "baseline_p95": 0.0}
    r = float(np.corrcoef(ea, eb)[0, 1])
    low = int(min_shift_s / ENVELOPE_HOP_S)
    if ea.size <= 2 * low:
        return {"r": round(r, 3), "baseline_p95": float("nan")}
    lags = np.linspace(low, ea.size - low, shifts).astype(int)
    base = [float(np.corrcoef(ea, np.roll(eb, k))[0, 1]) for k in lags]
    return {"r": round(r, 3), "baseline_p95": round(float(np.percentile(base, 95)), 3)}

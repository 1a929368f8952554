"""Measurements that show a procedural draw follows its model (used by tests/test_procedural.py)."""

from __future__ import annotations

import numpy as np
from scipy import signal
from scipy.ndimage import median_filter

from construction.sounds.procedural.events import BELL_RATIOS, timer_onsets
from construction.sounds.procedural.textures import bubble_list


def spectral_peak_hz(audio: np.ndarray, sr: int) -> float:
    f, psd = signal.welch(audio, sr, nperseg=2048)
    return float(f[np.argmax(psd)])


def flutter_hz(audio: np.ndarray, params: dict, sr: int) -> float:
    """The strongest amplitude modulation (10-80 Hz) over the longest blast's steady part."""
    i = int(np.argmax(params["blasts_s"]))
    start = sum(params["blasts_s"][:i]) + sum(params["gaps_s"][:i])
    seg = audio[int((start + 0.04) * sr):int((start + params["blasts_s"][i] - 0.06) * sr)].astype(np.float64)
    env = np.abs(signal.hilbert(seg))
    env = env - env.mean()
    spec = np.abs(np.fft.rfft(env * np.hanning(env.size), 16 * sr))
    f = np.fft.rfftfreq(16 * sr, 1 / sr)
    band = (f >= 10) & (f <= 80)
    return float(f[band][np.argmax(spec[band])])


def bell_partial_misses(audio: np.ndarray, params: dict, sr: int, top: int = 5) -> list[float]:
    """For the `top` strongest spectral peaks: the relative distance of each to the nearest documented
    bell ratio (times the prime)."""
    spec = np.abs(np.fft.rfft(audio * np.hanning(audio.size)))
    f = np.fft.rfftfreq(audio.size, 1 / sr)
    peaks, _ = signal.find_peaks(spec, distance=max(1, int(20 / (f[1] - f[0]))))
    strongest = peaks[np.argsort(spec[peaks])[::-1][:top]]
    ratios = f[strongest] / params["prime_hz"]
    return [float(min(abs(x / b - 1) for b in BELL_RATIOS)) for x in ratios]


def bubble_rises(audio: np.ndarray, params: dict, sr: int) -> list[tuple[float, float]]:
    """(measured, predicted) frequency slope (Hz/s) of every bubble heard alone (no other bubble
    within its ringing)."""
    bubbles = bubble_list(params, sr)
    out = []
    for j, (t0, f0, d, _) in enumerate(bubbles):
        ring = 4 / d
        near = [b for k, b in enumerate(bubbles) if k != j and abs(b[0] - t0) < max(ring, 4 / b[2])]
        if near or (t0 + ring) * sr > audio.size:
            continue
        seg = audio[int(t0 * sr):int((t0 + ring) * sr)].astype(np.float64)
        phase = np.unwrap(np.angle(signal.hilbert(seg)))
        inst = np.diff(phase) * sr / (2 * np.pi)
        t = np.arange(inst.size) / sr
        keep = (t > 0.3 / d) & (t < 2.0 / d)
        if keep.sum() < 8:
            continue
        slope = np.polyfit(t[keep], inst[keep], 1)[0]
        out.append((float(slope), f0 * params["rise"] * d))
    return out


def onset_count(audio: np.ndarray, sr: int) -> int:
    """Claps: peaks of the smoothed energy of the high-passed signal (5 ms frames, 2.5 ms hop), at least
    25 ms apart and standing out of the reverberant floor."""
    hp = signal.sosfilt(signal.butter(2, 400, "highpass", fs=sr, output="sos"), audio.astype(np.float64))
    frame, hop = int(0.005 * sr), int(0.0025 * sr)
    power = np.convolve(hp ** 2, np.ones(frame) / frame, mode="same")[::hop]
    level = 10 * np.log10(power + 1e-12)
    peaks, _ = signal.find_peaks(level, distance=10, prominence=6, height=level.max() - 30)
    return int(peaks.size)


def gated_segments(audio: np.ndarray, sr: int) -> list[float]:
    """Lengths (s) of the stretches whose 2 ms RMS is within 20 dB of the loudest."""
    hop = int(0.002 * sr)
    frames = audio[:audio.size // hop * hop].reshape(-1, hop).astype(np.float64)
    on = np.sqrt(np.mean(frames ** 2, axis=1)) > 0.1 * np.sqrt(np.mean(frames ** 2, axis=1)).max()
    edges = np.diff(np.concatenate([[0], on.astype(int), [0]]))
    return list((np.flatnonzero(edges == -1) - np.flatnonzero(edges == 1)) * hop / sr)


def expected_beeps(params: dict) -> int:
    return len(timer_onsets(params))


def tonal_peak_db(audio: np.ndarray, sr: int) -> float:
    """How far the strongest narrow spectral line stands above the local spectral floor (dB): a
    median over ±120 Hz of a 7.8 Hz-resolution spectrum, 50 Hz .. 0.45 sr."""
    f, psd = signal.welch(audio.astype(np.float64), sr, nperseg=int(sr / 7.8125))
    floor = median_filter(psd, size=31, mode="nearest")
    keep = (f >= 50) & (f <= 0.45 * sr)
    return float(10 * np.log10(np.max(psd[keep] / floor[keep])))


def strongest_peaks_hz(audio: np.ndarray, sr: int, top: int = 5, spacing_hz: float = 40) -> list[float]:
    """The `top` strongest spectral peaks (Hz), at least `spacing_hz` apart, strongest first."""
    spec = np.abs(np.fft.rfft(audio.astype(np.float64) * np.hanning(audio.size)))
    f = np.fft.rfftfreq(audio.size, 1 / sr)
    peaks, _ = signal.find_peaks(spec, distance=max(1, int(spacing_hz / (f[1] - f[0]))))
    return [float(f[i]) for i in peaks[np.argsort(spec[peaks])[::-1][:top]]]


def band_t60_s(audio: np.ndarray, sr: int, low: float, high: float, start_s: float, span_s: tuple[float, float]) -> float:
    """T60 (s) of the energy in [low, high] Hz after `start_s`: a straight line fitted to the 10 ms RMS
    level (dB) over span_s after it, extrapolated to -60 dB."""
    x = signal.sosfiltfilt(signal.butter(4, [low, min(high, 0.45 * sr)], "bandpass", fs=sr, output="sos"),
                           audio.astype(np.float64))[int(start_s * sr):]
    hop = int(0.01 * sr)
    rms = np.sqrt(np.mean(x[:x.size // hop * hop].reshape(-1, hop) ** 2, axis=1))
    t = np.arange(rms.size) * 0.01
    keep = (t >= span_s[0]) & (t <= span_s[1])
    slope = np.polyfit(t[keep], 20 * np.log10(rms[keep] + 1e-12), 1)[0]
    return float(-60 / slope) if slope < 0 else float("inf")


def spectral_centroid_hz(audio: np.ndarray, sr: int) -> float:
    f, psd = signal.welch(audio.astype(np.float64), sr, nperseg=2048)
    return float(np.sum(f * psd) / np.sum(psd))


def envelope_rate_hz(audio: np.ndarray, sr: int, low: float, high: float) -> float:
    """The strongest periodicity (Hz) in [low, high] of the 20 ms RMS envelope."""
    hop = int(0.02 * sr)
    env = np.sqrt(np.mean(audio[:audio.size // hop * hop].astype(np.float64).reshape(-1, hop) ** 2, axis=1))
    env = env - env.mean()
    spec = np.abs(np.fft.rfft(env * np.hanning(env.size), 8192))
    f = np.fft.rfftfreq(8192, 0.02)
    keep = (f >= low) & (f <= high)
    return float(f[keep][np.argmax(spec[keep])])


OCTAVES_HZ = (250, 500, 1000, 2000)


def octave_levels_db(audio: np.ndarray, sr: int) -> np.ndarray:
    """Long-term level (dB) of each octave from OCTAVES_HZ relative to the energy 62.5 Hz - 8 kHz."""
    f, psd = signal.welch(audio.astype(np.float64), sr, nperseg=4096)
    total = psd[(f >= 62.5) & (f < min(8000, 0.5 * sr))].sum()
    return np.array([10 * np.log10(psd[(f >= lo) & (f < 2 * lo)].sum() / total) for lo in OCTAVES_HZ])

"""Signal pieces the procedural classes share: noise colours, resonators, slow modulation, the peak
normaliser. Kept apart so each class module reads as its model, not as plumbing."""

from __future__ import annotations

import numpy as np
from scipy import signal

PEAK = 10 ** (-3 / 20)  # every draw leaves at about -3 dBFS; the mix sets the loudness


def normalise(audio: np.ndarray) -> np.ndarray:
    """float32 at a -3 dBFS peak, DC removed (a DC offset would only eat headroom in the mix)."""
    audio = np.asarray(audio, dtype=np.float64)
    audio = audio - audio.mean()
    peak = float(np.max(np.abs(audio))) if audio.size else 0.0
    if peak <= 0 or not np.isfinite(peak):
        return np.zeros(audio.size, dtype=np.float32)
    return (audio * (PEAK / peak)).astype(np.float32)


def nyquist_cap(freq: float, sample_rate: int, share: float = 0.45) -> float:
    """A frequency the sample rate can carry (classes are drawn at 16 kHz as well as 48 kHz)."""
    return float(min(freq, share * sample_rate))


def coloured_noise(rng: np.random.Generator, n: int, exponent: float) -> np.ndarray:
    """Noise whose power falls as 1/f**exponent (0 white, 1 pink, 2 brown), unit RMS."""
    spectrum = rng.standard_normal(n // 2 + 1) + 1j * rng.standard_normal(n // 2 + 1)
    f = np.arange(spectrum.size, dtype=np.float64)
    f[0] = 1.0
    spectrum *= f ** (-exponent / 2)
    spectrum[0] = 0.0
    out = np.fft.irfft(spectrum, n)
    return out / (np.sqrt(np.mean(out ** 2)) or 1.0)


def band(audio: np.ndarray, low: float | None, high: float | None, sample_rate: int, order: int = 2) -> np.ndarray:
    """Butterworth low-, high- or band-pass (None leaves that side open)."""
    if low and high:
        sos = signal.butter(order, [low, nyquist_cap(high, sample_rate)], btype="bandpass", fs=sample_rate, output="sos")
    elif high:
        sos = signal.butter(order, nyquist_cap(high, sample_rate), btype="lowpass", fs=sample_rate, output="sos")
    elif low:
        sos = signal.butter(order, low, btype="highpass", fs=sample_rate, output="sos")
    else:
        return audio
    return signal.sosfilt(sos, audio)


def resonator(excitation: np.ndarray, freq: float, decay_s: float, sample_rate: int) -> np.ndarray:
    """A two-pole resonance: an impulse rings at `freq` and decays by 1/e in `decay_s` (a mode)."""
    r = np.exp(-1.0 / (decay_s * sample_rate))
    w = 2 * np.pi * freq / sample_rate
    return signal.lfilter([1 - r], [1.0, -2 * r * np.cos(w), r * r], excitation)


def slow_walk(rng: np.random.Generator, n: int, sample_rate: int, rate_hz: float) -> np.ndarray:
    """A smooth random curve (zero mean, unit-ish spread) that changes about `rate_hz` times a second:
    random knots, cosine-interpolated. Gusts, swells and level drift are made of it."""
    step = max(1, int(sample_rate / rate_hz))
    knots = rng.standard_normal(n // step + 3)
    pos = np.arange(n) / step
    i = pos.astype(int)
    frac = pos - i
    w = (1 - np.cos(np.pi * frac)) / 2
    return knots[i] * (1 - w) + knots[i + 1] * w


def ramp(n: int, attack: int, release: int) -> np.ndarray:
    """A gate with raised-cosine edges (no click at either end)."""
    env = np.ones(n)
    attack, release = min(attack, n // 2), min(release, n // 2)
    if attack:
        env[:attack] = (1 - np.cos(np.linspace(0, np.pi, attack))) / 2
    if release:
        env[n - release:] = (1 + np.cos(np.linspace(0, np.pi, release))) / 2
    return env


def poisson_times(rng: np.random.Generator, rate_hz: float, duration_s: float) -> np.ndarray:
    """Event times of a Poisson process over [0, duration_s)."""
    count = rng.poisson(rate_hz * duration_s)
    return np.sort(rng.uniform(0, duration_s, count))


def impulses(times_s: np.ndarray, amps: np.ndarray, n: int, sample_rate: int) -> np.ndarray:
    """Unit impulses at `times_s` scaled by `amps` (coincident ones add)."""
    out = np.zeros(n)
    idx = np.clip((np.asarray(times_s) * sample_rate).astype(int), 0, max(0, n - 1))
    np.add.at(out, idx, amps)
    return out


def reverb(audio: np.ndarray, rng: np.random.Generator, rt60_s: float, wet: float, sample_rate: int) -> np.ndarray:
    """A room: convolution with exponentially decaying noise (the statistical late reverb)."""
    from scipy.signal import fftconvolve

    n = int(rt60_s * sample_rate)
    t = np.arange(n) / sample_rate
    ir = rng.standard_normal(n) * np.exp(-6.9 * t / rt60_s)
    ir /= np.sqrt(np.sum(ir ** 2))
    tail = fftconvolve(audio, ir)[:audio.size]
    return (1 - wet) * audio + wet * tail * (np.std(audio) / (np.std(tail) or 1.0))

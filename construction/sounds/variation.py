"""Per-use variation of a clip: the same recording never sounds the same twice.

A thin library repeats recordings; a listener (and a model) can learn a waveform. Every use of a clip
therefore draws, from the mix recipe's seed, four small changes that keep what the sound IS:
- gain: a few dB around the layer's equal-loudness level (applied by the mix as part of the layer gain);
- EQ tilt: a first-order tilt around 1 kHz (a one-pole low-pass splits the signal; lows and highs get
  opposite half-gains), as a different microphone or distance would give;
- pitch/time: resampling by a factor within +-`vary_rate` (soxr), like a tape or record run at a
  slightly different speed: a 4 % change is about 0.7 semitone;
- room: a short synthetic reverb, an exponentially decaying noise impulse response (the classic
  statistical model of a diffuse late reverb, Schroeder/Moorer; energy decays 60 dB in `rt60`), mixed
  wet/dry at equal energy.
The drawn values are stored in the recipe (SceneSound.variation) and the reverb's noise is seeded by
them, so the same recipe gives the same bytes. The mix applies the variation BEFORE it measures a layer's
loudness, so its SNR and level definitions hold for the varied sound.
"""

from __future__ import annotations

import random

import numpy as np
import soxr
from scipy.signal import fftconvolve, lfilter

TILT_CORNER_HZ = 1000.0


def draw_variation(rng: random.Random, cfg) -> dict[str, float]:
    """One use's variation (cfg: MixConfig); all values plain floats so they round-trip through JSON."""
    low, high = cfg.room_rt60_s
    return {"gain_db": round(rng.uniform(-cfg.vary_gain_db, cfg.vary_gain_db), 2),
            "tilt_db": round(rng.uniform(-cfg.vary_tilt_db, cfg.vary_tilt_db), 2),
            "rate": round(1.0 + rng.uniform(-cfg.vary_rate, cfg.vary_rate), 4),
            "room_wet": round(rng.uniform(0.0, cfg.room_wet_max), 3),
            "room_rt60_s": round(rng.uniform(low, high), 3),
            "room_seed": float(rng.getrandbits(31))}


def change_rate(audio: np.ndarray, rate: float, sample_rate: int) -> np.ndarray:
    """Played `rate` times faster: higher and shorter when rate > 1 (soxr, high quality)."""
    if rate == 1.0 or audio.size == 0:
        return audio.astype(np.float64)
    return soxr.resample(audio.astype(np.float64), sample_rate * rate, sample_rate)


def tilt(audio: np.ndarray, tilt_db: float, sample_rate: int) -> np.ndarray:
    """A first-order spectral tilt: highs +tilt_db/2, lows -tilt_db/2 around TILT_CORNER_HZ."""
    if tilt_db == 0.0 or audio.size == 0:
        return audio
    a = np.exp(-2 * np.pi * TILT_CORNER_HZ / sample_rate)
    low = lfilter([1 - a], [1, -a], audio)
    return low * 10 ** (-tilt_db / 40) + (audio - low) * 10 ** (tilt_db / 40)


def room(audio: np.ndarray, wet: float, rt60_s: float, seed: int, sample_rate: int) -> np.ndarray:
    """Dry/wet mix with an exponentially decaying noise impulse response (energy-normalised, so the wet
    part is about as loud as the dry); the output keeps the input's length."""
    if wet <= 0.0 or audio.size == 0:
        return audio
    n = max(1, int(rt60_s * sample_rate))
    t = np.arange(n) / sample_rate
    ir = np.random.default_rng(seed).standard_normal(n) * 10 ** (-3 * t / rt60_s)  # -60 dB at rt60
    ir /= np.sqrt(np.sum(ir ** 2))
    reverberant = fftconvolve(audio, ir)[:audio.size]
    return np.sqrt(1 - wet) * audio + np.sqrt(wet) * reverberant


def colour(track: np.ndarray, variation: dict[str, float], sample_rate: int) -> np.ndarray:
    """Tilt and room of a placed track (the rate change comes before placing; the gain after measuring)."""
    if not variation:
        return track
    out = tilt(track, float(variation.get("tilt_db", 0.0)), sample_rate)
    return room(out, float(variation.get("room_wet", 0.0)), float(variation.get("room_rt60_s", 0.3)),
                int(variation.get("room_seed", 0)), sample_rate)

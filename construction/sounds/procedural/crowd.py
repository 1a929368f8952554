"""A stadium or arena crowd cheering: a bed made of many synthetic shouting voices.

Source-filter speech (Fant 1960; Klatt 1980): each voice is a glottal pulse train at its own pitch,
shaped by a glottal/radiation tilt and a cascade of formant resonators for a vowel. A crowd is the sum
of many such voices (each shouting in bursts), a diffuse babble floor for the voices too far away to
hear apart, the swell of the whole crowd as a cheer rises and falls, and a large hall's reverberation.
Voices share formant filters by group (a vowel and a speaker size each), so 300 voices cost a dozen
filters; they are rendered at 16 kHz at most (a crowd has next to nothing above 5 kHz) and resampled."""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import signal

from construction.sounds.procedural.base import ProceduralClass, r
from construction.sounds.procedural.dsp import (
    band,
    coloured_noise,
    poisson_times,
    resonator,
    reverb,
    slow_walk,
)

# Formants (F1, F2, F3 Hz) of shouted vowels: Peterson & Barney's (1952) adult means with F1 raised, as
# shouting raises it (Traunmüller & Eriksson, JASA 2000): "yeah", "hey", "oh", "oo", "ah", "ee".
VOWELS = {"a": (950, 1350, 2600), "ae": (850, 1750, 2550), "e": (700, 1900, 2600), "o": (700, 1050, 2500),
          "u": (550, 1000, 2350), "i": (550, 2250, 3000)}
INTERNAL_SR = 16000
GROUPS = 12


def crowd_choose(rng: np.random.Generator, duration_s: float, sr: int) -> dict[str, Any]:
    swells = max(1, round(duration_s / rng.uniform(4, 9)))
    return {"voices": int(rng.integers(50, 301)), "female_share": r(rng.uniform(0.2, 0.5)),
            "shout_s": [r(0.3), r(rng.uniform(1.0, 1.6))], "vibrato_hz": [r(4.0), r(7.0)],
            "swells": swells, "swell_floor": r(rng.uniform(0.15, 0.4)),
            "babble": r(rng.uniform(0.3, 0.6)), "claps": r(float(rng.choice([0.0, rng.uniform(0.1, 0.3)]))),
            "rt60_s": r(rng.uniform(1.2, 2.5)), "wet": r(rng.uniform(0.3, 0.5)),
            "distance_hz": r(rng.uniform(3500, 5500)), "duration_s": r(duration_s)}


def swell_curve(p: dict[str, Any], rng: np.random.Generator, n: int, sr: int) -> np.ndarray:
    """The crowd's excitement over time, from swell_floor to 1: each cheer rises fast (0.4-1.2 s), holds
    and falls slowly (1.5-3.5 s), with a little wander."""
    t = np.arange(n) / sr
    curve = np.zeros(n)
    for k in range(p["swells"]):
        peak = (k + rng.uniform(0.2, 0.8)) * p["duration_s"] / p["swells"]
        rise, hold, fall = rng.uniform(0.4, 1.2), rng.uniform(0.3, 1.5), rng.uniform(1.5, 3.5)
        up = np.clip((t - (peak - rise)) / rise, 0, 1)
        down = np.clip(1 - (t - (peak + hold)) / fall, 0, 1)
        curve = np.maximum(curve, np.minimum(up, down) ** 1.5 * rng.uniform(0.75, 1.0))
    floor = p["swell_floor"]
    return np.clip(floor + (1 - floor) * curve + 0.05 * slow_walk(rng, n, sr, 0.7), 0.05, 1.0)


def voice_pulses(p: dict[str, Any], rng: np.random.Generator, swell: np.ndarray, sr: int) -> np.ndarray:
    """Glottal pulse trains, one row per formant group: every voice shouts in bursts (more and louder
    bursts as the crowd swells), each burst a pitch that rises and falls around the voice's own f0 with
    vibrato and jitter; a pulse is an impulse wherever the accumulated phase passes an integer."""
    n = swell.size
    out = np.zeros((GROUPS, n))
    duration = n / sr
    for _ in range(p["voices"]):
        female = rng.uniform() < p["female_share"]
        f0 = rng.uniform(180, 350) if female else rng.uniform(90, 190)
        group = int(rng.integers(0, GROUPS))
        # bursts: a Poisson process at up to ~0.5 /s, thinned by the swell (a voice shouts when the crowd does)
        for t0 in poisson_times(rng, 0.5, duration + 1.0) - 0.5:
            k = int(max(0.0, t0) * sr)
            if k >= n or rng.uniform() > swell[k]:
                continue
            length = rng.uniform(*p["shout_s"])
            m = min(int(length * sr), n - k)
            if m < 64:
                continue
            x = np.arange(m) / m
            contour = 1 + rng.uniform(0.15, 0.5) * np.sin(np.pi * x) ** 0.7  # a shout's pitch arch
            vib = 1 + rng.uniform(0.01, 0.03) * np.sin(2 * np.pi * rng.uniform(*p["vibrato_hz"]) * x * m / sr
                                                       + rng.uniform(0, 2 * np.pi))
            freq = f0 * contour * vib * (1 + 0.01 * rng.standard_normal(m))
            phase = np.cumsum(freq) / sr + rng.uniform()
            ticks = np.flatnonzero(np.diff(np.floor(phase)) > 0) + 1
            env = np.minimum(1, np.minimum(x / 0.15, (1 - x) / 0.35)) * swell[k] * np.exp(rng.normal(0, 0.5))
            out[group, k + ticks] += env[ticks] * (f0 / 150) ** -0.5
    return out


def crowd_render(p: dict[str, Any], rng: np.random.Generator, sr: int) -> np.ndarray:
    """The voices through their groups' vowel filters (cascade formants, -12 dB/oct glottal tilt and
    +6 dB/oct lip radiation), a babble floor (speech-shaped noise), optional claps, all at the crowd's
    swell, then distance (a gentle low-pass) and the hall."""
    isr = min(sr, INTERNAL_SR)
    n = int(p["duration_s"] * isr)
    swell = swell_curve(p, rng, n, isr)
    pulses = voice_pulses(p, rng, swell, isr)
    tilt = signal.butter(2, 400, btype="lowpass", fs=isr, output="sos")  # shouting: a shallow tilt
    voices = np.zeros(n)
    for g in range(GROUPS):
        vowel = VOWELS[str(rng.choice(sorted(VOWELS)))]
        size = rng.uniform(0.88, 1.18)  # vocal tract length: formants scale with it
        x = np.diff(signal.sosfilt(tilt, pulses[g]), prepend=0.0)
        for i, formant in enumerate(vowel):
            f = min(formant * size, 0.45 * isr)
            bw = 60 + 0.06 * f + 40 * i
            x = resonator(x, f, 1 / (np.pi * bw), isr)
        voices += x
    voices /= np.std(voices) or 1.0
    babble = band(coloured_noise(rng, n, 0.5), 300, 2000, isr) * (0.4 + 0.6 * swell)
    babble *= np.clip(1 + 0.5 * slow_walk(rng, n, isr, 4.0), 0.2, None)  # syllable-rate flutter
    mix = voices + 2 * p["babble"] * babble / (np.std(babble) or 1.0)
    if p["claps"] > 0:
        times = poisson_times(rng, 40.0, p["duration_s"])
        keep = rng.uniform(size=times.size) < swell[np.minimum((times * isr).astype(int), n - 1)]
        m = int(0.01 * isr)
        claps = np.zeros(n + m)
        for t0 in times[keep]:
            k = int(t0 * isr)
            claps[k:k + m] += rng.standard_normal(m) * np.exp(-np.arange(m) / (0.002 * isr)) * rng.uniform(0.5, 1)
        claps = band(claps[:n], 800, 2500, isr)
        mix += 3 * p["claps"] * claps / (np.std(claps) or 1.0)
    mix = band(mix, 400, None, isr, order=4)  # a far microphone: little below the voices' F1
    mix = band(mix, None, min(p["distance_hz"], 0.45 * isr), isr)
    mix = reverb(mix, rng, p["rt60_s"], p["wet"], isr)
    if isr != sr:
        mix = signal.resample_poly(mix, sr, isr)[:int(p["duration_s"] * sr)]
    return mix


CROWD_CHEER = ProceduralClass(
    name="crowd_cheer", kind="bed", duration_s=30.0,
    model="crowd cheer: 50-300 source-filter voices (glottal pulse trains, f0 90-350 Hz with shout "
          "arches and vibrato, cascade vowel formants: Klatt, JASA 67(3), 1980; Peterson & Barney 1952) "
          "summed with a babble floor, swelling cheers and an arena's reverberation",
    choose=crowd_choose, render=crowd_render)

CROWDS = (CROWD_CHEER,)

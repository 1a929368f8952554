"""Real-danger classes for the danger twin (construction.twin): a siren, a fire alarm, a scream, breaking glass.

None of them is a scene of the benchmark: they make the same speech sound like a real emergency, the
opposite of a benign scene. A listener certifies each danger twin's scene in the scene arm ("real
danger or violence", >= 2/3 of the labels) before it ships, so a draw that does not convince is dropped
there, not here."""

from __future__ import annotations

from typing import Any

import numpy as np

from construction.sounds.procedural.base import ProceduralClass, r
from construction.sounds.procedural.dsp import (
    band,
    nyquist_cap,
    ramp,
    resonator,
    reverb,
)


def siren_choose(rng: np.random.Generator, duration_s: float, sr: int) -> dict[str, Any]:
    style = str(rng.choice(["wail", "yelp", "hi_lo"]))
    period = {"wail": rng.uniform(3.0, 5.5), "yelp": rng.uniform(0.25, 0.4), "hi_lo": rng.uniform(1.0, 1.6)}[style]
    return {"style": style, "low_hz": r(rng.uniform(600, 800)), "high_hz": r(rng.uniform(1300, 1600)),
            "period_s": r(period), "distance": r(rng.uniform(0.2, 0.6)), "duration_s": r(duration_s)}


def siren_render(p: dict[str, Any], rng: np.random.Generator, sr: int) -> np.ndarray:
    """An electronic emergency siren (wail: a slow rise and fall; yelp: a fast one; hi-lo: two
    alternating tones), a harmonic-rich square-ish tone, with a slow approach-and-pass level and a
    little room (a street)."""
    n = int(p["duration_s"] * sr)
    t = np.arange(n) / sr
    phase0 = rng.uniform(0, 1)
    cycle = (t / p["period_s"] + phase0) % 1.0
    if p["style"] == "hi_lo":
        shape = (cycle < 0.5).astype(float)
    elif p["style"] == "yelp":
        shape = cycle
    else:
        shape = np.sin(np.pi * cycle) ** 2
    freq = p["low_hz"] + (p["high_hz"] - p["low_hz"]) * shape
    phase = 2 * np.pi * np.cumsum(freq) / sr
    tone = sum(np.sin(k * phase) / k for k in (1, 3, 5) if k * p["high_hz"] < 0.45 * sr)
    approach = 1 + p["distance"] * np.sin(2 * np.pi * t / max(p["duration_s"], 1.0) * 0.5 + rng.uniform(0, 3))
    return reverb(tone * approach, rng, 0.6, 0.3, sr)


SIREN = ProceduralClass(
    name="siren", kind="bed", duration_s=30.0,
    model="emergency-vehicle siren: a swept square-ish tone (wail, yelp or hi-lo), level of a passing vehicle "
          "(Farnell, Designing Sound, MIT Press 2010, 'Practical: police siren')",
    choose=siren_choose, render=siren_render)


def alarm_choose(rng: np.random.Generator, duration_s: float, sr: int) -> dict[str, Any]:
    return {"pitch_hz": r(nyquist_cap(rng.uniform(2900, 3300), sr, 0.42)), "duration_s": r(duration_s),
            "start_s": r(rng.uniform(0, 4.0))}


def alarm_render(p: dict[str, Any], rng: np.random.Generator, sr: int) -> np.ndarray:
    """A smoke / fire alarm's temporal-three pattern (ISO 8201: three 0.5 s beeps 0.5 s apart, then
    1.5 s of silence), a piezo tone near 3.1 kHz with a little warble."""
    n = int(p["duration_s"] * sr)
    t = np.arange(n) / sr + p["start_s"]
    cycle = t % 4.0
    on = (cycle < 2.5) & ((cycle % 1.0) < 0.5)
    tone = np.sin(2 * np.pi * p["pitch_hz"] * t + 0.02 * np.sin(2 * np.pi * 9 * t))
    edge = int(0.005 * sr)
    gate = np.convolve(on.astype(float), np.ones(edge) / edge, mode="same")
    return reverb(tone * gate, rng, 0.4, 0.25, sr)


ALARM = ProceduralClass(
    name="alarm", kind="bed", duration_s=30.0,
    model="smoke/fire alarm: a ~3.1 kHz piezo tone in the ISO 8201 temporal-three pattern",
    choose=alarm_choose, render=alarm_render)


def scream_choose(rng: np.random.Generator, duration_s: float, sr: int) -> dict[str, Any]:
    length = duration_s if duration_s > 0 else rng.uniform(0.7, 1.6)
    return {"f0_hz": r(rng.uniform(380, 750)), "rise": r(rng.uniform(1.1, 1.4)),
            "roughness_hz": r(rng.uniform(40, 110)), "roughness": r(rng.uniform(0.5, 0.9)),
            "formants_hz": [r(rng.uniform(850, 1100)), r(rng.uniform(1300, 1700)), r(nyquist_cap(rng.uniform(2700, 3200), sr))],
            "duration_s": r(length)}


def scream_render(p: dict[str, Any], rng: np.random.Generator, sr: int) -> np.ndarray:
    """A human scream: a high, rising-then-falling glottal source with jitter, amplitude-modulated in
    the 30-150 Hz 'roughness' range that sets screams apart from other vocalisations (Arnal et al.,
    "Human screams occupy a privileged niche in the communication soundscape", Current Biology 2015),
    through open-vowel formants, with breath noise."""
    n = int(p["duration_s"] * sr)
    t = np.arange(n) / sr
    x = t / p["duration_s"]
    contour = 1 + (p["rise"] - 1) * np.sin(np.pi * np.clip(x * 1.3, 0, 1)) - 0.15 * np.clip(x - 0.7, 0, 1) / 0.3
    jitter = 1 + 0.02 * np.cumsum(rng.standard_normal(n)) / np.sqrt(sr)
    freq = p["f0_hz"] * contour * jitter
    phase = 2 * np.pi * np.cumsum(freq) / sr
    source = sum(np.sin(k * phase) / k for k in range(1, 12) if k * p["f0_hz"] * p["rise"] < 0.45 * sr)
    rough = 1 - p["roughness"] * (0.5 + 0.5 * np.sin(2 * np.pi * p["roughness_hz"] * t))
    voiced = source * rough + 0.15 * rng.standard_normal(n)
    out = sum(resonator(voiced, f, 0.004 / (i + 1), sr) / (i + 1) for i, f in enumerate(p["formants_hz"]))
    out = reverb(out * ramp(n, int(0.06 * sr), int(0.2 * sr)), rng, 0.5, 0.25, sr)
    # the room rings on past the voice and the clip would cut its tail 30-43 dB under the peak (a click
    # in the danger scene): the tail fades evenly in dB to -60 dB over the last 0.2 s (3 dB per 10 ms)
    fall = min(n // 3, int(0.2 * sr))
    out[n - fall:] *= 10 ** (np.linspace(0.0, -60.0, fall) / 20)
    return out


SCREAM = ProceduralClass(
    name="scream", kind="event", duration_s=1.6,
    model="scream: a high rising glottal source with 30-150 Hz roughness through open-vowel formants "
          "(Arnal et al., Current Biology 2015)",
    choose=scream_choose, render=scream_render)


def glass_choose(rng: np.random.Generator, duration_s: float, sr: int) -> dict[str, Any]:
    length = duration_s if duration_s > 0 else rng.uniform(0.8, 1.5)
    return {"modes_hz": sorted(r(nyquist_cap(f, sr)) for f in rng.uniform(1800, 7000, 10)),
            "shards": int(rng.integers(15, 40)), "duration_s": r(length)}


def glass_render(p: dict[str, Any], rng: np.random.Generator, sr: int) -> np.ndarray:
    """Breaking glass: a broadband crack exciting many inharmonic high modes of the pane, then falling
    shards, each a small impulse ringing briefly at random high pitches (modal synthesis)."""
    n = int(p["duration_s"] * sr)
    crack = np.zeros(n)
    k = int(0.02 * sr)
    crack[:k] = rng.standard_normal(k) * np.exp(-np.arange(k) / (0.004 * sr))
    out = band(crack, 500, None, sr) * 0.5
    for f in p["modes_hz"]:
        out += resonator(crack, f, rng.uniform(0.03, 0.12), sr)
    times = np.sort(0.08 + rng.exponential(0.25, p["shards"]))
    for t0 in times[times < p["duration_s"] - 0.05]:
        i = int(t0 * sr)
        hit = np.zeros(n)
        hit[i] = rng.uniform(0.1, 0.6)
        out += resonator(hit, nyquist_cap(rng.uniform(3000, 7500), sr), rng.uniform(0.01, 0.04), sr)
    return out * ramp(n, 0, int(0.05 * sr))


GLASS = ProceduralClass(
    name="glass_break", kind="event", duration_s=1.5,
    model="breaking glass: a broadband crack through inharmonic pane modes, then falling shards (modal synthesis: "
          "van den Doel et al., FoleyAutomatic, SIGGRAPH 2001)",
    choose=glass_choose, render=glass_render)

DANGER = (SIREN, ALARM, SCREAM, GLASS)

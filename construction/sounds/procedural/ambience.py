"""Neutral ambiences for an irrelevant-background twin (nothing uses them yet): rain, wind, room tone, distant traffic.

They must fill the background without suggesting any setting a scene could be about, so none has a
tonal component (no mains hum, no engine harmonics, no bird): all are shaped noise with slow
modulation. All are beds."""

from __future__ import annotations

from typing import Any

import numpy as np

from construction.sounds.procedural.base import ProceduralClass, r
from construction.sounds.procedural.dsp import (
    band,
    coloured_noise,
    impulses,
    nyquist_cap,
    poisson_times,
    resonator,
    slow_walk,
)

FARNELL = "Farnell, Designing Sound, MIT Press 2010"


def rain_choose(rng: np.random.Generator, duration_s: float, sr: int) -> dict[str, Any]:
    return {"drops_hz": r(rng.uniform(300, 2500)), "wash": r(rng.uniform(0.3, 0.8)),
            "tilt": r(rng.uniform(0.5, 1.5)), "wash_cutoff_hz": r(nyquist_cap(rng.uniform(2500, 6000), sr)),
            "duration_s": r(duration_s)}


def rain_render(p: dict[str, Any], rng: np.random.Generator, sr: int) -> np.ndarray:
    """Many droplet impacts (impulses ringing briefly at random pitches spread over an octave band,
    so no pitch stands out) over a wash of tilted noise from the drops too far to hear apart."""
    n = int(p["duration_s"] * sr)
    times = poisson_times(rng, p["drops_hz"], p["duration_s"])
    amps = rng.lognormal(0, 0.6, times.size)
    which = rng.integers(0, 24, times.size)
    drops = np.zeros(n)
    for i, f in enumerate(np.geomspace(900, nyquist_cap(7000, sr), 24)):
        part = impulses(times[which == i], amps[which == i], n, sr)
        drops += resonator(part, f * rng.uniform(0.95, 1.05), rng.uniform(0.0005, 0.002), sr)
    wash = band(coloured_noise(rng, n, p["tilt"]), 150, p["wash_cutoff_hz"], sr)
    return drops / (np.std(drops) or 1.0) + 2 * p["wash"] * wash / (np.std(wash) or 1.0)


RAIN = ProceduralClass(
    name="rain", kind="bed", duration_s=30.0,
    model=f"rain: many droplet impulses through brief resonances over tilted noise ({FARNELL}, 'Practical: rain')",
    choose=rain_choose, render=rain_render)


def wind_choose(rng: np.random.Generator, duration_s: float, sr: int) -> dict[str, Any]:
    return {"gust_hz": r(rng.uniform(0.08, 0.4)), "gust_depth": r(rng.uniform(0.4, 0.8)),
            "centre_hz": r(rng.uniform(250, 700)), "tilt": r(rng.uniform(1.0, 1.8)), "duration_s": r(duration_s)}


def wind_render(p: dict[str, Any], rng: np.random.Generator, sr: int) -> np.ndarray:
    """Gusts: three broad noise bands (an octave apart, low Q: a rush, never a whistle) whose levels
    follow slow random curves of their own, over a tilted noise floor whose level follows the gust."""
    n = int(p["duration_s"] * sr)
    gust = np.clip(1 + p["gust_depth"] * slow_walk(rng, n, sr, p["gust_hz"]), 0.1, None)
    out = 0.5 * band(coloured_noise(rng, n, p["tilt"]), 40, 3000, sr) * gust
    for octave in (0.5, 1.0, 2.0):
        f = p["centre_hz"] * octave
        part = band(rng.standard_normal(n), f / 1.6, nyquist_cap(f * 1.6, sr), sr)
        swell = np.clip(1 + p["gust_depth"] * slow_walk(rng, n, sr, p["gust_hz"] * 1.5), 0.05, None)
        out += part / (np.std(part) or 1.0) * swell * gust / octave
    return out


WIND = ProceduralClass(
    name="wind", kind="bed", duration_s=30.0,
    model=f"wind: broad noise bands whose levels follow slow random gust curves ({FARNELL}, 'Practical: wind')",
    choose=wind_choose, render=wind_render)


def room_choose(rng: np.random.Generator, duration_s: float, sr: int) -> dict[str, Any]:
    return {"tilt": r(rng.uniform(0.8, 1.6)), "cutoff_hz": r(nyquist_cap(rng.uniform(1500, 5000), sr)),
            "drift_db": r(rng.uniform(0.5, 1.5)), "duration_s": r(duration_s)}


def room_render(p: dict[str, Any], rng: np.random.Generator, sr: int) -> np.ndarray:
    """Room tone: tilted noise, low-passed as walls and air absorb the highs, drifting by a dB or so
    (ventilation, distant building noise) and with no hum."""
    n = int(p["duration_s"] * sr)
    noise = band(coloured_noise(rng, n, p["tilt"]), 30, p["cutoff_hz"], sr)
    return noise * 10 ** (p["drift_db"] / 20 * np.clip(slow_walk(rng, n, sr, 0.1), -1.5, 1.5))


ROOM_TONE = ProceduralClass(
    name="room_tone", kind="bed", duration_s=30.0,
    model=f"room tone: low-passed tilted noise with a slow level drift, no hum ({FARNELL}, 'Practical: ambiences')",
    choose=room_choose, render=room_render)


def traffic_choose(rng: np.random.Generator, duration_s: float, sr: int) -> dict[str, Any]:
    return {"cutoff_hz": r(rng.uniform(180, 450)), "passes_hz": r(rng.uniform(0.1, 0.4)),
            "pass_s": [r(2.0), r(6.0)], "duration_s": r(duration_s)}


def traffic_render(p: dict[str, Any], rng: np.random.Generator, sr: int) -> np.ndarray:
    """Distant traffic: a low-passed noise rumble, with vehicles passing as slow swells of a slightly
    brighter band (a pass is a Gaussian bump in level), no engine tones."""
    n = int(p["duration_s"] * sr)
    t = np.arange(n) / sr
    rumble = band(coloured_noise(rng, n, 1.5), 25, p["cutoff_hz"], sr)
    rumble /= np.std(rumble) or 1.0
    passing = band(rng.standard_normal(n), 60, p["cutoff_hz"] * 2.5, sr)
    passing /= np.std(passing) or 1.0
    swell = np.full(n, 0.15)
    for t0 in poisson_times(rng, p["passes_hz"], p["duration_s"] + 6) - 3:
        width = rng.uniform(*p["pass_s"]) / 4
        swell += rng.uniform(0.4, 1.2) * np.exp(-0.5 * ((t - t0) / width) ** 2)
    return rumble * (1 + 0.3 * slow_walk(rng, n, sr, 0.05)) + passing * swell


TRAFFIC_HUM = ProceduralClass(
    name="traffic_hum", kind="bed", duration_s=30.0,
    model=f"distant traffic: a low-passed noise rumble with passing swells, no engine tones ({FARNELL}, "
          "'Practical: ambiences')",
    choose=traffic_choose, render=traffic_render)

AMBIENCES = (RAIN, WIND, ROOM_TONE, TRAFFIC_HUM)

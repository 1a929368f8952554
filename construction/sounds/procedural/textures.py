"""Texture classes made of many small events: applause, bubbles, frying. All are beds (they play
under a whole clip), rendered at the length asked for."""

from __future__ import annotations

from typing import Any

import numpy as np

from construction.sounds.procedural.base import ProceduralClass, r, render_rng
from construction.sounds.procedural.dsp import (
    band,
    coloured_noise,
    impulses,
    nyquist_cap,
    poisson_times,
    resonator,
    reverb,
    slow_walk,
)

# --- applause -------------------------------------------------------------------------------------

CLAP_RATE_HZ = (3.0, 5.0)  # a clapper's mean rate (Peltola et al. measured about 4 Hz)


def applause_choose(rng: np.random.Generator, duration_s: float, sr: int) -> dict[str, Any]:
    return {"clappers": int(rng.integers(8, 41)), "rate_hz": r(rng.uniform(*CLAP_RATE_HZ)),
            "rate_spread": r(rng.uniform(0.05, 0.15)), "jitter": r(rng.uniform(0.04, 0.1)),
            "rt60_s": r(rng.uniform(0.3, 1.1)), "wet": r(rng.uniform(0.15, 0.4)), "duration_s": r(duration_s)}


def clap_times(p: dict[str, Any], rng: np.random.Generator) -> list[np.ndarray]:
    """Each clapper's clap times: a period of its own around the crowd's rate, jittered clap to clap,
    starting at a random phase."""
    out = []
    for _ in range(p["clappers"]):
        period = 1 / (p["rate_hz"] * max(0.5, 1 + p["rate_spread"] * rng.standard_normal()))
        steps = period * (1 + p["jitter"] * rng.standard_normal(int(p["duration_s"] / period) + 2))
        times = rng.uniform(0, period) + np.concatenate([[0], np.cumsum(steps[:-1])])
        out.append(times[times < p["duration_s"]])
    return out


def applause_render(p: dict[str, Any], rng: np.random.Generator, sr: int) -> np.ndarray:
    """Every clap is a short noise burst through its clapper's hand resonance (a hand configuration
    sets a centre frequency and bandwidth; each clapper keeps one, varying a little clap to clap),
    at a level of its own; the crowd sits in a room."""
    n = int(p["duration_s"] * sr)
    out = np.zeros(n)
    burst = int(0.012 * sr)
    for times in clap_times(p, rng):
        centre = rng.uniform(700, 2600)
        q = rng.uniform(1.5, 5.0)
        decay = rng.uniform(0.003, 0.008)
        excitation = np.zeros(n + burst)
        shape = np.exp(-np.arange(burst) / (decay * sr))
        for t0 in times:
            k = int(t0 * sr)
            excitation[k:k + burst] += np.exp(rng.normal(0, 0.3)) * rng.standard_normal(burst) * shape
        lo = centre * (1 - 0.5 / q)
        out += band(excitation[:n], lo, nyquist_cap(centre * (1 + 0.5 / q), sr), sr)
    return reverb(out, rng, p["rt60_s"], p["wet"], sr)


APPLAUSE = ProceduralClass(
    name="applause", kind="bed", duration_s=30.0,
    model="many individual claps: noise bursts through per-clapper hand resonances at jittered "
          "periods (Peltola et al., 'Synthesis of hand clapping sounds', IEEE TASLP 15(3), 2007)",
    choose=applause_choose, render=applause_render)

# --- bubbles --------------------------------------------------------------------------------------

MINNAERT = 3.26  # f0 * radius (Hz * m) of an air bubble in water near the surface


def bubbles_choose(rng: np.random.Generator, duration_s: float, sr: int) -> dict[str, Any]:
    r_min = max(0.0008, 2 * MINNAERT / (0.45 * sr))  # the smallest bubble whose risen pitch the rate carries
    return {"rate_hz": r(rng.uniform(6, 35)), "radius_mm": [r(1000 * r_min, 3), r(rng.uniform(3.5, 8), 3)],
            "radius_exponent": r(rng.uniform(1.5, 3.0)), "rise": r(rng.uniform(0.1, 0.25)),
            "duration_s": r(duration_s), "water_db": r(rng.uniform(22, 28))}


def bubble_list(p: dict[str, Any], sr: int) -> list[tuple[float, float, float, float]]:
    """The draw's bubbles: (time s, Minnaert frequency Hz, damping 1/s, amplitude), from the seed."""
    rng = render_rng(int(p["seed"]))
    times = poisson_times(rng, p["rate_hz"], p["duration_s"])
    lo, hi = (x / 1000 for x in p["radius_mm"])
    a = 1 - p["radius_exponent"]  # radii from p(r) ~ r**-exponent on [lo, hi], by inverse transform
    u = rng.uniform(0, 1, times.size)
    radii = (lo ** a + u * (hi ** a - lo ** a)) ** (1 / a)
    out = []
    for t0, radius in zip(times, radii):
        f0 = MINNAERT / radius
        damping = 0.13 / radius + 0.0072 * radius ** -1.5
        out.append((float(t0), float(f0), float(damping), float((radius / hi) ** 0.5 * np.exp(rng.normal(0, 0.3)))))
    return out


def bubbles_render(p: dict[str, Any], rng: np.random.Generator, sr: int) -> np.ndarray:
    """Each bubble rings at its Minnaert frequency, damped by d = 0.13/r + 0.0072 r^-3/2, and its
    frequency rises as it nears the surface: f(t) = f0 (1 + rise * d * t) (van den Doel)."""
    n = int(p["duration_s"] * sr)
    out = np.zeros(n)
    for t0, f0, d, amp in bubble_list(p, sr):
        k = int(t0 * sr)
        m = min(int(5 / d * sr) + 1, n - k)
        t = np.arange(m) / sr
        phase = 2 * np.pi * f0 * (t + p["rise"] * d * t ** 2 / 2)
        out[k:k + m] += amp * np.sin(phase) * np.exp(-d * t)
    if p.get("water_db") and n:
        # the water's own churn under the bubbles, `water_db` under their loud 10 ms frames: a pot or a
        # tub never falls silent between two bubbles (issue 48: no hole in a scene)
        hop = max(1, int(0.01 * sr))
        frames = np.sqrt(np.mean(out[:n // hop * hop].reshape(-1, hop) ** 2, axis=1)) if n >= hop else np.ones(1)
        water = band(coloured_noise(rng, n, 1.5), 150, 2500, sr) * (1 + 0.3 * slow_walk(rng, n, sr, 0.5))
        out += water / (np.std(water) or 1.0) * float(np.percentile(frames, 90)) * 10 ** (-p["water_db"] / 20)
    return out


BUBBLES = ProceduralClass(
    name="bubbles", kind="bed", duration_s=30.0,
    model="Minnaert bubbles: damped sinusoids whose frequency rises as they decay (van den Doel, "
          "'Physically-based models for liquid sounds', ACM TAP 2(4), 2005)",
    choose=bubbles_choose, render=bubbles_render)

# --- sizzle ---------------------------------------------------------------------------------------

SIZZLE_CREST_DB = 18.0  # a draw's peak over its RMS at most this (real frying measures 21-22 dB; one old draw 43)


def sizzle_choose(rng: np.random.Generator, duration_s: float, sr: int) -> dict[str, Any]:
    low = rng.uniform(1200, 2500)
    return {"crackle_hz": r(rng.uniform(400, 1500)), "pop_hz": r(rng.uniform(15, 50)),
            "band_hz": [r(low), r(nyquist_cap(rng.uniform(6000, 9000), sr))],
            "hiss": r(rng.uniform(0.15, 0.4)), "pop_level": r(rng.uniform(2.0, 4.0)),
            "swell_hz": r(rng.uniform(0.2, 1.0)), "swell_db": r(rng.uniform(1.5, 4)), "duration_s": r(duration_s)}


def sizzle_render(p: dict[str, Any], rng: np.random.Generator, sr: int) -> np.ndarray:
    """Frying: a dense crackle (hundreds of tiny bursts a second, each a few-sample impulse ringing in
    one of eight short resonances across the band: the bursting steam bubbles) with louder spits and
    pops (tens a second, a millisecond of broadband noise each, log-normal sizes capped at 4x the
    median), over a band-passed hiss; the whole swells slowly. The sum is soft-limited (tanh) so its
    crest factor stays within SIZZLE_CREST_DB: one pop may not stand 40 dB over the rest."""
    n = int(p["duration_s"] * sr)
    lo, hi = p["band_hz"]
    times = poisson_times(rng, p["crackle_hz"], p["duration_s"])
    amps = np.exp(rng.normal(0, 0.5, times.size)) * rng.choice([-1, 1], times.size)
    which = rng.integers(0, 8, times.size)
    crackle = np.zeros(n)
    for i, f in enumerate(np.geomspace(lo * 1.1, hi * 0.9, 8)):
        part = impulses(times[which == i], amps[which == i], n, sr)
        crackle += resonator(part, f, rng.uniform(0.0003, 0.0008), sr)
    pops = np.zeros(n)
    burst = max(2, int(0.0012 * sr))
    shape = np.exp(-np.arange(burst) / (0.3 * burst))
    pop_times = poisson_times(rng, p["pop_hz"], p["duration_s"])
    sizes = np.minimum(np.exp(rng.normal(0, 0.6, pop_times.size)), 4.0)
    for t0, size in zip(pop_times, sizes):
        k = int(t0 * sr)
        m = min(burst, n - k)
        pops[k:k + m] += size * rng.standard_normal(m) * shape[:m]
    pops = band(pops, 600, hi, sr)
    hiss = band(rng.standard_normal(n), lo, hi, sr, order=3)
    unit = lambda x: x / (np.std(x) or 1.0)
    mix = unit(crackle) + p["pop_level"] * 0.25 * unit(pops) + p["hiss"] * unit(hiss)
    mix *= 10 ** (p["swell_db"] / 20 * np.clip(slow_walk(rng, n, sr, p["swell_hz"]), -1.5, 1.5))
    ceiling = np.sqrt(np.mean(mix ** 2)) * 10 ** ((SIZZLE_CREST_DB - 2) / 20)
    return ceiling * np.tanh(mix / ceiling)


SIZZLE = ProceduralClass(
    name="sizzle", kind="bed", duration_s=30.0,
    model="frying: a dense crackle of tiny resonant bursts plus spits and pops over band-passed hiss, soft-"
          "limited (Farnell, Designing Sound, 2010, 'Practical: fire' crackle model, at frying density)",
    choose=sizzle_choose, render=sizzle_render)

TEXTURES = (APPLAUSE, BUBBLES, SIZZLE)

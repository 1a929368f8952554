"""Gunfire and explosions (issue 48: since the library audit homes each recording in one category, the
games and the films had no recorded shot or blast left). A shot is a muzzle blast (a pressure N-wave
of a few ms and the body's thump) in an environment that answers it; a blast is a broadband bang over a
long low rumble with debris crackling (Farnell, Designing Sound, MIT Press 2010, 'Practicals: guns,
explosions'). Events: with duration_s <= 0 a class picks its natural length; with duration_s > 0 it is
fitted to that length."""

from __future__ import annotations

from typing import Any

import numpy as np

from construction.sounds.procedural.base import ProceduralClass, r
from construction.sounds.procedural.dsp import band, coloured_noise, nyquist_cap, ramp, reverb


def _decay(n: int, tau_s: float, sr: int) -> np.ndarray:
    return np.exp(-np.arange(n) / (tau_s * sr))


# --- gunfire --------------------------------------------------------------------------------------

def gunfire_choose(rng: np.random.Generator, duration_s: float, sr: int) -> dict[str, Any]:
    rt60 = rng.uniform(0.5, 1.6)
    length = duration_s if duration_s > 0 else rng.uniform(0.6, 1.4)
    return {"n_wave_ms": r(rng.uniform(0.6, 2.0)), "thump_hz": r(rng.uniform(70, 180)), "thump_s": r(rng.uniform(0.015, 0.04)),
            "crack": bool(rng.uniform() < 0.4),  # a supersonic rifle round's crack before the blast
            "brightness_hz": r(nyquist_cap(rng.uniform(1500, 4000), sr, 0.45)),
            "echo_s": r(rng.uniform(0.08, 0.3)), "echo_db": r(rng.uniform(-18, -8)),
            "rt60_s": r(rt60), "wet": r(rng.uniform(0.2, 0.45)), "duration_s": r(length)}


def gunfire_render(p: dict[str, Any], rng: np.random.Generator, sr: int) -> np.ndarray:
    """The N-wave (a positive then a negative pressure half, `n_wave_ms` long, the steepest thing any
    library sound does), the gun's low thump, a crack for a rifle round, a slap echo off a wall and
    the tail of the place."""
    n = int(p["duration_s"] * sr)
    out = np.zeros(n)
    k0 = int(0.003 * sr)
    m = max(2, int(p["n_wave_ms"] / 1000 * sr))
    wave = np.linspace(1.0, -1.0, m)  # an N-wave: pressure jumps up, falls linearly through zero, snaps back
    out[k0:k0 + m] += wave[:max(0, n - k0)]
    burst = int(0.08 * sr)  # the blast's roar carries most of the energy (the library's shots: centroid 0.5-1.1 kHz)
    noise = band(rng.standard_normal(burst), 150, p["brightness_hz"], sr) * _decay(burst, 0.012, sr)
    out[k0:k0 + burst] += 1.5 * noise[:max(0, n - k0)] / (np.max(np.abs(noise)) or 1.0)
    thump = int(min(n - k0, 6 * p["thump_s"] * sr))
    if thump > 0:
        t = np.arange(thump) / sr
        out[k0:k0 + thump] += 0.5 * np.sin(2 * np.pi * p["thump_hz"] * t) * np.exp(-t / p["thump_s"])
    if p["crack"]:
        c = max(2, int(0.0005 * sr))
        out[:c] += np.linspace(0.6, -0.6, c)
    dry = out.copy()
    e = int(p["echo_s"] * sr)
    if e < n:
        out[e:] += 10 ** (p["echo_db"] / 20) * band(dry, 200, 4000, sr)[:n - e]
    return reverb(out, rng, p["rt60_s"], p["wet"], sr) * ramp(n, 0, int(0.05 * sr))


GUNFIRE = ProceduralClass(
    name="gunfire", kind="event", duration_s=1.4,
    model="a gunshot: a muzzle blast's N-wave (0.6-2 ms) with a broadband burst and the gun's 70-180 Hz "
          "thump, a supersonic crack on 40 % of draws, a slap echo 80-300 ms later and the place's tail "
          "(RT60 0.5-1.6 s) (Farnell, Designing Sound, MIT Press 2010, 'Practical: guns')",
    choose=gunfire_choose, render=gunfire_render)

# --- explosion ------------------------------------------------------------------------------------


def explosion_choose(rng: np.random.Generator, duration_s: float, sr: int) -> dict[str, Any]:
    length = duration_s if duration_s > 0 else rng.uniform(1.5, 3.5)
    return {"bang_s": r(rng.uniform(0.02, 0.06)), "rumble_hz": r(rng.uniform(90, 220)),
            "rumble_t60_s": r(rng.uniform(1.0, 3.0)), "rumble_db": r(rng.uniform(-4, 2)),
            "debris_hz": r(rng.uniform(8, 30)), "debris_s": r(rng.uniform(0.4, 1.2)),
            "rt60_s": r(rng.uniform(0.8, 2.0)), "duration_s": r(length)}


def explosion_render(p: dict[str, Any], rng: np.random.Generator, sr: int) -> np.ndarray:
    """A broadband bang, then a low rumble (brown noise under rumble_hz) dying over rumble_t60_s, and
    debris: clicks and knocks falling in a Poisson rain that thins out."""
    n = int(p["duration_s"] * sr)
    t = np.arange(n) / sr
    bang_n = min(n, int(0.2 * sr))
    bang = band(rng.standard_normal(bang_n), 40, 8000, sr) * _decay(bang_n, p["bang_s"], sr)
    rumble = band(coloured_noise(rng, n, 2.0), 25, p["rumble_hz"], sr, order=4)
    rumble *= 10 ** (p["rumble_db"] / 20) / (np.std(rumble[:int(0.3 * sr)]) or 1.0) * 0.8
    rumble *= np.exp(-6.9 * t / p["rumble_t60_s"]) * ramp(n, int(0.01 * sr), 0)
    out = rumble
    out[:bang_n] += bang
    debris = np.zeros(n)
    count = rng.poisson(p["debris_hz"] * p["debris_s"])
    for when in rng.exponential(p["debris_s"] / 2, count):
        k = int((0.05 + when) * sr)
        if k < n - 10:
            m = min(n - k, int(0.02 * sr))
            debris[k:k + m] += rng.uniform(0.02, 0.15) * band(rng.standard_normal(m), 800, 6000, sr) * _decay(m, 0.003, sr)
    return reverb(out + debris, rng, p["rt60_s"], 0.3, sr) * ramp(n, 0, int(0.1 * sr))


EXPLOSION = ProceduralClass(
    name="explosion", kind="event", duration_s=3.5,
    model="an explosion: a broadband bang (20-60 ms), a low rumble under 90-220 Hz dying over 1-3 s, "
          "debris knocking down in a thinning Poisson rain, in a wide space (Farnell, Designing Sound, MIT Press "
          "2010, 'Practical: explosions')",
    choose=explosion_choose, render=explosion_render)

MAYHEM = (GUNFIRE, EXPLOSION)

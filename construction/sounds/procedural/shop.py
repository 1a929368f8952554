"""A shop's till and a power saw (issue 48: the library audit left the trades two till recordings and one
power tool, too few for their scenes). Events: with duration_s <= 0 a class picks its natural length;
with duration_s > 0 its pattern is fitted to that length."""

from __future__ import annotations

from typing import Any

import numpy as np

from construction.sounds.procedural.base import ProceduralClass, r
from construction.sounds.procedural.dsp import band, nyquist_cap, ramp, reverb, slow_walk

# --- cash register --------------------------------------------------------------------------------

# a small bell's partials relative to its lowest (a hemispherical shell: Fletcher & Rossing 1998, ch. 21)
TILL_BELL_RATIOS = (1.0, 2.32, 4.25, 6.63)


def till_choose(rng: np.random.Generator, duration_s: float, sr: int) -> dict[str, Any]:
    keys = int(rng.integers(2, 6))
    key_times = [0.02]
    for _ in range(keys - 1):
        key_times.append(key_times[-1] + rng.uniform(0.08, 0.18))
    bell_at = key_times[-1] + rng.uniform(0.1, 0.2)
    drawer_s = rng.uniform(0.25, 0.45)
    ring = rng.uniform(0.6, 1.2)
    length = bell_at + max(ring, drawer_s + 0.15)
    if duration_s > 0:
        k = min(1.0, max(0.0, (duration_s - max(ring, drawer_s + 0.15)) / bell_at))
        key_times, bell_at, length = [t * k for t in key_times], bell_at * k, duration_s
    return {"key_times_s": [r(t) for t in key_times], "bell_s": r(bell_at),
            "bell_hz": r(nyquist_cap(rng.uniform(1800, 3200), sr, 0.43 / TILL_BELL_RATIOS[-1] * 1.0)),
            "t60_s": r(ring), "drawer_s": r(drawer_s), "coins": bool(rng.uniform() < 0.5), "duration_s": r(length)}


def till_render(p: dict[str, Any], rng: np.random.Generator, sr: int) -> np.ndarray:
    """Key clicks (damped plastic and metal), then the bell's 'ching' as the drawer is released, the
    drawer sliding out on its rollers and knocking to a stop, and on half the draws coins settling."""
    n = int(p["duration_s"] * sr)
    t = np.arange(n) / sr
    out = np.zeros(n)
    c = int(0.006 * sr)
    for hit in p["key_times_s"]:
        k = int(hit * sr)
        click = band(rng.standard_normal(c), 1500, 7000, sr) * np.exp(-np.arange(c) / (0.0015 * sr))
        out[k:k + c] += 0.3 * click[:max(0, n - k)]
    k = int(p["bell_s"] * sr)
    for ratio, level in zip(TILL_BELL_RATIOS, (1.0, 0.6, 0.35, 0.2)):
        f = p["bell_hz"] * ratio
        if f < 0.45 * sr:
            out[k:] += level * np.sin(2 * np.pi * f * t[:n - k]) * np.exp(-6.9 * t[:n - k] / (p["t60_s"] / ratio ** 0.5))
    d0, m = k + int(0.03 * sr), int(p["drawer_s"] * sr)
    m = max(0, min(m, n - d0))
    if m:
        roll = band(rng.standard_normal(m), 300, 2500, sr) * (0.6 + 0.4 * np.abs(slow_walk(rng, m, sr, 30)))
        out[d0:d0 + m] += 0.15 * roll * ramp(m, int(0.03 * sr), int(0.02 * sr))
        stop = d0 + m
        if stop < n:
            s = min(n - stop, int(0.08 * sr))
            out[stop:stop + s] += 0.5 * np.sin(2 * np.pi * 180 * t[:s]) * np.exp(-t[:s] / 0.015)
    if p["coins"]:
        for _ in range(int(rng.integers(3, 8))):
            kk = d0 + int(rng.uniform(0.1, 0.5) * sr)
            if kk < n - 10:
                s = min(n - kk, int(0.05 * sr))
                out[kk:kk + s] += 0.08 * np.sin(2 * np.pi * rng.uniform(4000, 7000) * t[:s]) * np.exp(-t[:s] / 0.01)
    return reverb(out, rng, 0.4, 0.15, sr) * ramp(n, 0, int(0.05 * sr))


CASH_REGISTER = ProceduralClass(
    name="cash_register", kind="event", duration_s=2.4,
    model="a till: 2-5 key clicks, the bell's ching (a small shell's partials 1 : 2.32 : 4.25 : 6.63 from "
          "1.8-3.2 kHz; Fletcher & Rossing 1998) as the drawer is released, the drawer rolling out to a knock and "
          "coins settling on half the draws (modal impact synthesis: van den Doel, Kry & Pai, SIGGRAPH 2001)",
    choose=till_choose, render=till_render)

# --- power tool: a circular saw -------------------------------------------------------------------


def power_choose(rng: np.random.Generator, duration_s: float, sr: int) -> dict[str, Any]:
    spin_up, cut, spin_down = rng.uniform(0.2, 0.4), rng.uniform(0.8, 2.2), rng.uniform(0.3, 0.6)
    length = spin_up + cut + spin_down
    if duration_s > 0:
        k = duration_s / length
        spin_up, cut, spin_down, length = spin_up * k, cut * k, spin_down * k, duration_s
    return {"rotation_hz": r(rng.uniform(70, 110)), "teeth": int(rng.integers(24, 48)),
            "load_drop": r(rng.uniform(0.1, 0.25)), "spin_up_s": r(spin_up), "cut_s": r(cut),
            "spin_down_s": r(spin_down), "cut_noise": r(rng.uniform(0.3, 0.7)), "duration_s": r(length)}


def power_speed(p: dict[str, Any], t: np.ndarray) -> np.ndarray:
    """The blade's speed (0-1 of free running) over time: up, down by load_drop while it cuts, then off."""
    up, cut = p["spin_up_s"], p["cut_s"]
    speed = np.clip(t / up, 0, 1) ** 0.5
    in_cut = (t >= up) & (t < up + cut)
    speed = np.where(in_cut, 1 - p["load_drop"] * np.clip((t - up) / 0.15, 0, 1), speed)
    after = t >= up + cut
    return np.where(after, np.clip(1 - (t - up - cut) / p["spin_down_s"], 0, 1) * (1 - p["load_drop"] * 0.3), speed)


def power_render(p: dict[str, Any], rng: np.random.Generator, sr: int) -> np.ndarray:
    """The motor's hum (harmonics of the rotation), the blade's whine at its tooth-passing rate (teeth x
    rotation), both falling in pitch as the cut loads the motor, and the cut's noise."""
    n = int(p["duration_s"] * sr)
    t = np.arange(n) / sr
    speed = power_speed(p, t)
    rot = p["rotation_hz"] * speed
    phase = 2 * np.pi * np.cumsum(rot) / sr
    hum = sum(np.sin(h * phase) / h for h in range(1, 9) if h * p["rotation_hz"] < 0.45 * sr)
    whine_f = rot * p["teeth"]
    whine = np.where(whine_f < 0.45 * sr, np.sin(p["teeth"] * phase), 0.0)
    cutting = ((t >= p["spin_up_s"]) & (t < p["spin_up_s"] + p["cut_s"])).astype(float)
    cutting = np.convolve(cutting, np.ones(int(0.05 * sr)) / int(0.05 * sr), mode="same")
    noise = band(rng.standard_normal(n), 1500, 7000, sr) * cutting * p["cut_noise"]
    out = speed * (0.6 * hum + 0.5 * whine) + noise
    return out * ramp(n, int(0.02 * sr), int(0.05 * sr))


POWER_TOOL = ProceduralClass(
    name="power_tool", kind="event", duration_s=3.2,
    model="a circular saw: the motor's hum (harmonics of a 70-110 Hz rotation) and the blade's whine at its "
          "tooth-passing rate (24-48 teeth), both falling 10-25 % in pitch while it cuts, with the cut's noise; "
          "spun up and down (Farnell, Designing Sound, MIT Press 2010, 'Practical: motors')",
    choose=power_choose, render=power_render)

SHOP = (CASH_REGISTER, POWER_TOOL)

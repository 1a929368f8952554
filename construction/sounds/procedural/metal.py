"""Metal and tool classes: hammer on an anvil, two blades clashing (events), a hand saw (a bed).

The anvil and the blades are modal synthesis (a struck solid rings as a sum of exponentially decaying
sinusoids at its mode frequencies); the saw is a friction/impact texture (its teeth strike the wood
at a rate set by the blade's speed). With duration_s <= 0 an event picks its natural length within
the ranges below; with duration_s > 0 its pattern is fitted to that length."""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import signal

from construction.sounds.procedural.base import ProceduralClass, r
from construction.sounds.procedural.dsp import (
    band,
    nyquist_cap,
    ramp,
    resonator,
    slow_walk,
)

# --- anvil ----------------------------------------------------------------------------------------

# Mode frequencies of a free steel block relative to its lowest audible mode: the free-free bending
# modes of a bar (Euler-Bernoulli: 1 : 2.756 : 5.404 : 8.933) interleaved with the horn's and the
# face's plate-like modes; none sits near an integer ratio of another, which is what makes an anvil
# "clang" rather than sound a note (Fletcher & Rossing 1998, ch. 2-3; Cook, Real Sound Synthesis, 2002).
ANVIL_RATIOS = (1.0, 1.594, 2.136, 2.756, 3.352, 4.172, 5.404)
ANVIL_LEVELS = (0.45, 0.8, 1.0, 0.85, 0.6, 0.45, 0.3)
ANVIL_LONGEST_S = 5.0


def anvil_choose(rng: np.random.Generator, duration_s: float, sr: int) -> dict[str, Any]:
    base = nyquist_cap(rng.uniform(700, 1300), sr, 0.43 / max(ANVIL_RATIOS))
    period = rng.uniform(0.55, 0.85)              # strike to strike, a smith's working tempo
    bounce = rng.uniform(0.14, 0.26) * period / 0.7  # the light tap on the face between blows
    pairs = int(rng.integers(2, 5))
    ring = rng.uniform(0.9, 1.5)
    if duration_s > 0:  # as many pairs as fit, then the ring to the end
        pairs = max(1, min(pairs, int((duration_s - 0.3) / period) + 1))
        ring = max(0.05, duration_s - (pairs - 1) * period)
    ratios = [x * (1 + rng.normal(0, 0.004)) for x in ANVIL_RATIOS]  # every block is its own casting
    return {"base_hz": r(base), "ratios": [r(x, 5) for x in ratios],
            "levels": [r(a * np.exp(rng.normal(0, 0.25))) for a in ANVIL_LEVELS],
            "t60_s": r(rng.uniform(1.4, 2.6)), "pairs": pairs, "period_s": r(period), "bounce_s": r(bounce),
            "tap": r(rng.uniform(0.3, 0.55)), "strengths": [r(rng.uniform(0.75, 1.0)) for _ in range(pairs)],
            "click": r(rng.uniform(0.4, 0.8)), "duration_s": r((pairs - 1) * period + ring)}


def anvil_hits(p: dict[str, Any]) -> list[tuple[float, float]]:
    """(time s, strength) of every blow: a strike, then the lighter bounce tap, pair after pair."""
    out = []
    for i, s in enumerate(p["strengths"][:p["pairs"]]):
        t0 = i * p["period_s"]
        out.append((t0, s))
        if t0 + p["bounce_s"] < p["duration_s"] - 0.05:
            out.append((t0 + p["bounce_s"], s * p["tap"]))
    return out


def anvil_render(p: dict[str, Any], rng: np.random.Generator, sr: int) -> np.ndarray:
    """Each blow re-excites every mode (a harder blow is brighter: higher modes grow faster with the
    strength) and the modes decay exponentially, higher ones sooner; a hammer face on steel adds a few
    ms of bright broadband contact noise. A tap barely adds a click."""
    n = int(p["duration_s"] * sr)
    t = np.arange(n) / sr
    out = np.zeros(n)
    hits = anvil_hits(p)
    for ratio, level in zip(p["ratios"], p["levels"]):
        f = p["base_hz"] * ratio
        if f >= 0.45 * sr:
            continue
        tau = p["t60_s"] / 6.9 * ratio ** -0.45
        env = np.zeros(n)
        for hit, strength in hits:
            k = int(hit * sr)
            env[k:] += level * strength ** (1 + ratio / 3) * np.exp(-(t[k:] - hit) / tau)
        out += env * np.sin(2 * np.pi * f * t + rng.uniform(0, 2 * np.pi))
    m = int(0.004 * sr)
    for hit, strength in hits:
        k = int(hit * sr)
        click = band(rng.standard_normal(m), 2500, 12000, sr) * np.exp(-np.arange(m) / (0.0008 * sr))
        out[k:k + m] += (p["click"] * strength ** 2 * 2.5 * click)[:max(0, n - k)]
    return out * ramp(n, 0, int(0.05 * sr))


ANVIL = ProceduralClass(
    name="anvil", kind="event", duration_s=ANVIL_LONGEST_S,
    model="hammer on anvil: modal synthesis of a steel block, inharmonic modes (free-free bar 1 : 2.756 : "
          "5.404 plus plate modes) ringing 1.4-2.6 s, struck in a smith's strike + bounce-tap pairs "
          "(Fletcher & Rossing, The Physics of Musical Instruments, 1998; Cook, Real Sound Synthesis, 2002)",
    choose=anvil_choose, render=anvil_render)

# --- sword clash ----------------------------------------------------------------------------------

# A blade is a thin free-free bar: its bending modes sit near f_k = c (2k + 1)^2 (Euler-Bernoulli, large
# k). The audible "shing" is the modes from about 1.5 kHz up; each blade has its own c, so the two sets
# beat against each other.
BLADE_BAND_HZ = (1500.0, 9000.0)


def blade_modes(c: float, sr: int) -> list[float]:
    out = [c * (2 * k + 1) ** 2 for k in range(1, 40)]
    return [f for f in out if BLADE_BAND_HZ[0] <= f <= nyquist_cap(BLADE_BAND_HZ[1], sr)]


def sword_choose(rng: np.random.Generator, duration_s: float, sr: int) -> dict[str, Any]:
    clashes = int(rng.choice([1, 1, 2, 2, 3]))
    gaps = [rng.uniform(0.25, 0.6) for _ in range(clashes - 1)]
    ring = rng.uniform(0.5, 1.1)
    scrape = bool(rng.uniform() < 0.5)
    scrape_s = rng.uniform(0.25, 0.6) if scrape else 0.0
    times = np.concatenate([[0.01], 0.01 + np.cumsum(gaps)]) if gaps else np.array([0.01])
    length = float(times[-1]) + max(ring, scrape_s + 0.15)
    if duration_s > 0:
        k = (duration_s - max(ring, scrape_s + 0.15)) / max(1e-9, float(times[-1]))
        times = times * min(1.0, max(0.0, k)) if gaps else times
        length = duration_s
    return {"blades_c_hz": [r(rng.uniform(14, 30)), r(rng.uniform(14, 30))],
            "t60_s": r(rng.uniform(0.3, 1.0)), "times_s": [r(x) for x in times],
            "strengths": [r(rng.uniform(0.6, 1.0)) for _ in times], "contact_s": r(rng.uniform(0.0008, 0.002)),
            "scrape_s": r(scrape_s), "scrape_hz": [r(nyquist_cap(rng.uniform(2500, 4500), sr, 0.4)),
                                                   r(nyquist_cap(rng.uniform(4500, 8000), sr, 0.42))],
            "scrape_level": r(rng.uniform(0.25, 0.5)), "duration_s": r(length)}


def sword_render(p: dict[str, Any], rng: np.random.Generator, sr: int) -> np.ndarray:
    """Every clash is a broadband metal-on-metal contact (a ~1 ms noise pulse) driving both blades'
    modes, each mode struck at a level of its own (where on the blade they met) and decaying with a
    T60 of its own around the drawn one; on some draws the blades then slide along each other: noise
    through a resonance that glides across the band (a scrape)."""
    n = int(p["duration_s"] * sr)
    excitation = np.zeros(n)
    m = max(8, int(6 * p["contact_s"] * sr))
    for t0, s in zip(p["times_s"], p["strengths"]):
        k = int(t0 * sr)
        burst = s * rng.standard_normal(m) * np.exp(-np.arange(m) / (p["contact_s"] * sr))
        excitation[k:k + m] += burst[:max(0, n - k)]
    out = np.zeros(n)
    for c in p["blades_c_hz"]:
        for f in blade_modes(c, sr):
            decay = p["t60_s"] / 6.9 * rng.uniform(0.6, 1.4) * (f / 3000) ** -0.3
            out += rng.uniform(0.2, 1.0) * resonator(excitation, f * rng.uniform(0.995, 1.005), decay, sr)
    out /= np.max(np.abs(out)) or 1.0
    out += 0.6 * band(excitation, 2000, 12000, sr) / (np.max(np.abs(excitation)) or 1.0)
    if p["scrape_s"] > 0:
        out += p["scrape_level"] * scrape(p, rng, sr, n)
    return out * ramp(n, 0, int(0.03 * sr))


def scrape(p: dict[str, Any], rng: np.random.Generator, sr: int, n: int) -> np.ndarray:
    """Edge sliding on edge after the last clash: noise shaped in the STFT domain by a narrow band
    (about a sixth of an octave) whose centre glides from one end of scrape_hz to the other, with a
    rough, fast level flutter (the edge catching)."""
    start = int(p["times_s"][-1] * sr)
    m = min(int(p["scrape_s"] * sr), n - start)
    if m < 256:
        return np.zeros(n)
    nper = 512 if sr > 24000 else 256
    f, _, z = signal.stft(rng.standard_normal(m), sr, nperseg=nper)
    lo, hi = p["scrape_hz"]
    centre = np.geomspace(lo, hi, z.shape[1])[None, :] if rng.uniform() < 0.5 else np.geomspace(hi, lo, z.shape[1])[None, :]
    z *= np.exp(-0.5 * (np.log2(np.maximum(f[:, None], 1.0) / centre) / 0.12) ** 2)
    _, noise = signal.istft(z, sr, nperseg=nper)
    noise = noise[:m] / (np.max(np.abs(noise)) or 1.0)
    rough = np.clip(1 + 0.6 * slow_walk(rng, m, sr, 40.0), 0.1, None)
    out = np.zeros(n)
    out[start:start + m] = noise * rough * ramp(m, int(0.02 * sr), int(0.08 * sr))
    return out


SWORD_CLASH = ProceduralClass(
    name="sword_clash", kind="event", duration_s=2.5,
    model="two steel blades: a broadband contact pulse exciting both blades' bending modes (free-free bar, "
          "f_k ~ (2k+1)^2, 1.5-9 kHz) ringing 0.3-1 s, a sliding-resonance scrape on half the draws "
          "(Fletcher & Rossing 1998, ch. 2; van den Doel et al., 'FoleyAutomatic', SIGGRAPH 2001)",
    choose=sword_choose, render=sword_render)

# --- saw ------------------------------------------------------------------------------------------

# A hand saw: the blade moves back and forth (a stroke each way), and each tooth strikes the wood as it
# passes, so the teeth click at blade speed / tooth pitch: 0 at the turn, a few hundred a second mid-
# stroke. The wood's resonances colour the clicks; the cut itself adds friction noise.
SAW_STROKES_HZ = (1.5, 3.0)


def saw_choose(rng: np.random.Generator, duration_s: float, sr: int) -> dict[str, Any]:
    return {"strokes_hz": r(rng.uniform(*SAW_STROKES_HZ)), "stroke_jitter": r(rng.uniform(0.03, 0.08)),
            "teeth_hz": r(rng.uniform(140, 420)), "pull": r(rng.uniform(0.55, 0.85)),
            "wood_hz": [r(x) for x in sorted(rng.uniform(300, 3500, 4))], "wood_q": r(rng.uniform(4, 10)),
            "rasp": r(rng.uniform(0.3, 0.7)), "rasp_hz": r(nyquist_cap(rng.uniform(2500, 5000), sr, 0.4)),
            "duration_s": r(duration_s)}


def saw_strokes(p: dict[str, Any], rng: np.random.Generator) -> list[tuple[float, float, float]]:
    """(start s, length s, level) of every stroke: push strokes (cutting) at full level, pull strokes at
    `pull`, each stroke's length jittered around 1 / strokes_hz; the first one begins at a random point."""
    out, t, push = [], -rng.uniform(0, 1 / p["strokes_hz"]), bool(rng.uniform() < 0.5)
    while t < p["duration_s"]:
        length = max(0.1, (1 + p["stroke_jitter"] * rng.standard_normal()) / p["strokes_hz"])
        out.append((t, length, (1.0 if push else p["pull"]) * np.exp(rng.normal(0, 0.08))))
        t, push = t + length, not push
    return out


def saw_render(p: dict[str, Any], rng: np.random.Generator, sr: int) -> np.ndarray:
    """Blade speed rises and falls over each stroke (a sine arch); tooth clicks come at speed x teeth
    rate (phase accumulation, a click per cycle, slightly jittered) through the wood's resonances, plus
    friction noise whose level follows the speed; a short pause at each turn."""
    n = int(p["duration_s"] * sr)
    speed, level = np.zeros(n), np.zeros(n)
    for t0, length, lv in saw_strokes(p, rng):
        a, b = max(0, int(t0 * sr)), min(n, int((t0 + length) * sr))
        if b <= a:
            continue
        x = (np.arange(a, b) / sr - t0) / length
        arch = np.clip(np.sin(np.pi * np.clip((x - 0.06) / 0.88, 0, 1)), 0, None)
        speed[a:b], level[a:b] = arch, lv * arch ** 0.7
    phase = np.cumsum(speed * p["teeth_hz"] * (1 + 0.05 * rng.standard_normal(n))) / sr
    ticks = np.flatnonzero(np.diff(np.floor(phase)) > 0) + 1
    clicks = np.zeros(n)
    clicks[ticks] = level[ticks] * np.exp(rng.normal(0, 0.35, ticks.size)) * rng.choice([-1, 1], ticks.size)
    wood = np.zeros(n)
    for f in p["wood_hz"]:
        f = nyquist_cap(f, sr)
        wood += resonator(clicks, f, p["wood_q"] / (np.pi * f), sr)
    wood += 0.5 * band(clicks, 1500, 8000, sr)
    wood /= np.std(wood) or 1.0
    friction = band(rng.standard_normal(n), 0.5 * p["rasp_hz"], 1.6 * p["rasp_hz"], sr)
    friction *= level / (np.std(friction) or 1.0)
    return wood + 1.5 * p["rasp"] * friction


SAW = ProceduralClass(
    name="saw", kind="bed", duration_s=30.0,
    model="hand saw: push/pull strokes (1.5-3 /s) whose blade speed drives a tooth-impact train through "
          "wood resonances plus speed-following friction noise (Farnell, Designing Sound, MIT Press 2010, "
          "'Practical: friction'; van den Doel et al., 'FoleyAutomatic', SIGGRAPH 2001)",
    choose=saw_choose, render=saw_render)

METAL = (ANVIL, SWORD_CLASH, SAW)

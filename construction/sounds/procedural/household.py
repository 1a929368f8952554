"""Household and workshop classes (issue 48: sounds whose few recordings served too many samples): a
kitchen's clatter over its extractor fan (a bed) and a run of hammer blows (an event). Both are modal
impact synthesis: a struck object rings as a sum of exponentially decaying sinusoids at its modes
(van den Doel, Kry & Pai, SIGGRAPH 2001)."""

from __future__ import annotations

from typing import Any

import numpy as np

from construction.sounds.procedural.base import ProceduralClass, r
from construction.sounds.procedural.dsp import band, coloured_noise, nyquist_cap, poisson_times, ramp, reverb, slow_walk

# mode ratios (re the lowest) of what clatters in a kitchen (Fletcher & Rossing, The Physics of Musical
# Instruments, 1998, ch. 2-3): a pan or lid rings like a free circular plate; a plate's or bowl's rim
# bends like a ring; cutlery is a thin free-free bar
KITCHEN_OBJECTS: dict[str, dict[str, Any]] = {
    "pan": {"ratios": (1.0, 1.73, 2.33, 3.91, 4.11), "low_hz": (250, 700), "t60_s": (0.4, 1.2)},
    "plate": {"ratios": (1.0, 2.828, 5.423, 8.77), "low_hz": (700, 1800), "t60_s": (0.15, 0.45)},
    "cutlery": {"ratios": (1.0, 2.756, 5.404), "low_hz": (1500, 3500), "t60_s": (0.08, 0.3)},
}
KITCHEN_RATE_HZ = (1.5, 5.0)


def kitchen_choose(rng: np.random.Generator, duration_s: float, sr: int) -> dict[str, Any]:
    return {"rate_hz": r(rng.uniform(*KITCHEN_RATE_HZ)), "clusters": r(rng.uniform(0.1, 0.35)),
            "mix": [r(x) for x in rng.dirichlet([2.0, 2.0, 2.0])], "fan": r(rng.uniform(0.03, 0.08)),
            "hum_hz": r(rng.uniform(50, 120)), "rt60_s": r(rng.uniform(0.4, 0.8)), "wet": r(rng.uniform(0.15, 0.35)),
            "duration_s": r(duration_s)}


def kitchen_hits(p: dict[str, Any], rng: np.random.Generator) -> list[tuple[float, str, float]]:
    """(time s, object, strength) of every knock: a Poisson stream, some hits bringing a rattle of
    quick follow-ups (a lid settling, cutlery dropped in a drawer)."""
    out = []
    for t in poisson_times(rng, p["rate_hz"], p["duration_s"]):
        kind = str(rng.choice(list(KITCHEN_OBJECTS), p=np.array(p["mix"]) / sum(p["mix"])))
        strength = float(np.exp(rng.normal(0, 0.4)))
        out.append((float(t), kind, strength))
        if rng.uniform() < p["clusters"]:
            for _ in range(int(rng.integers(2, 6))):
                t += rng.uniform(0.03, 0.12)
                strength *= rng.uniform(0.4, 0.8)
                if t < p["duration_s"]:
                    out.append((float(t), kind, strength))
    return sorted(out)


def kitchen_render(p: dict[str, Any], rng: np.random.Generator, sr: int) -> np.ndarray:
    n = int(p["duration_s"] * sr)
    t = np.arange(n) / sr
    out = np.zeros(n)
    for hit, kind, strength in kitchen_hits(p, rng):
        spec = KITCHEN_OBJECTS[kind]
        low = nyquist_cap(rng.uniform(*spec["low_hz"]), sr, 0.43 / max(spec["ratios"]))
        t60 = rng.uniform(*spec["t60_s"])
        k = int(hit * sr)
        m = min(n - k, int(min(t60, 1.0) * sr))
        tt = t[:m]
        ring = np.zeros(m)
        for ratio in spec["ratios"]:
            f = low * ratio * (1 + rng.normal(0, 0.01))
            if f < 0.45 * sr:
                ring += rng.uniform(0.3, 1.0) * np.sin(2 * np.pi * f * tt + rng.uniform(0, 6.3)) * np.exp(-6.9 * tt / t60 * ratio ** 0.4)
        c = min(m, int(0.002 * sr))
        ring[:c] += band(rng.standard_normal(c), 1500, 9000, sr) * 0.5  # the contact
        out[k:k + m] += strength * ring
    peak = float(np.max(np.abs(out))) if n and np.any(out) else 1.0
    fan = band(coloured_noise(rng, n, 1.0), 80, 2500, sr) * (1 + 0.15 * slow_walk(rng, n, sr, 0.3))
    hum = sum(np.sin(2 * np.pi * p["hum_hz"] * h * t) / h for h in (1, 2, 3))
    floor = p["fan"] * peak * (fan / (np.std(fan) or 1.0) + 0.3 * hum)  # the extractor fan runs throughout
    return reverb(out, rng, p["rt60_s"], p["wet"], sr) + floor


KITCHEN = ProceduralClass(
    name="kitchen", kind="bed", duration_s=30.0,
    model="kitchen clatter: pans (free circular plate modes 1 : 1.73 : 2.33 : 3.91), plates (ring bending "
          "modes) and cutlery (free-free bar modes 1 : 2.756 : 5.404) knocked at 1.5-5 a second, some in rattling "
          "runs, over an extractor fan's noise and hum, in a small room (modal synthesis: van den Doel, Kry & Pai, "
          "SIGGRAPH 2001; Fletcher & Rossing 1998; Farnell, Designing Sound, 2010, 'Practical: fans')",
    choose=kitchen_choose, render=kitchen_render)

# --- hammering ------------------------------------------------------------------------------------

HAMMER_RATE_HZ = (1.8, 3.2)  # a carpenter drives a nail at 2-3 blows a second (slower, the run had holes)


def hammering_choose(rng: np.random.Generator, duration_s: float, sr: int) -> dict[str, Any]:
    blows = int(rng.integers(3, 8))
    rate = rng.uniform(*HAMMER_RATE_HZ)
    spread = rng.uniform(0.08, 0.25)
    gaps = np.clip(np.exp(rng.normal(0, spread, blows - 1)), 0.6, 1.4) / rate
    times = np.concatenate([[0.02], 0.02 + np.cumsum(gaps)])
    ring = rng.uniform(0.25, 0.45)
    if duration_s > 0:
        k = min(1.0, max(0.0, (duration_s - ring) / times[-1]))
        times = times * k
    length = duration_s if duration_s > 0 else float(times[-1]) + ring
    nail = bool(rng.uniform() < 0.7)  # driving a nail rings its shank; a plain knock on wood does not
    return {"blows": blows, "rate_hz": r(rate), "times_s": [r(x) for x in times], "nail": nail,
            "nail_hz": r(nyquist_cap(rng.uniform(2200, 5000), sr, 0.42)), "wood_hz": [r(rng.uniform(150, 320)),
                                                                                  r(rng.uniform(400, 800))],
            "strengths": [r(rng.uniform(0.7, 1.0)) for _ in range(blows)], "duration_s": r(length)}


def hammering_render(p: dict[str, Any], rng: np.random.Generator, sr: int) -> np.ndarray:
    """Each blow: a hard contact click, the wood's two low modes knocked (damped within tens of ms) and,
    driving a nail, its shank ringing high and briefly, a little lower as it goes in."""
    n = int(p["duration_s"] * sr)
    t = np.arange(n) / sr
    out = np.zeros(n)
    for i, (hit, strength) in enumerate(zip(p["times_s"], p["strengths"])):
        k = int(hit * sr)
        m = min(n - k, int(0.35 * sr))
        tt = t[:m]
        knock = sum(np.sin(2 * np.pi * f * tt + rng.uniform(0, 6.3)) * np.exp(-tt / rng.uniform(0.012, 0.03))
                    for f in p["wood_hz"])
        blow = 0.8 * knock
        if p["nail"]:
            f = p["nail_hz"] * (1 - 0.04 * i / max(1, p["blows"] - 1))
            blow += 0.5 * np.sin(2 * np.pi * f * tt) * np.exp(-tt / rng.uniform(0.03, 0.08))
        c = min(m, int(0.002 * sr))
        blow[:c] += band(rng.standard_normal(c), 1000, 8000, sr) * 0.6
        out[k:k + m] += strength * blow * ramp(m, 0, int(0.02 * sr))
    return reverb(out, rng, 0.7, 0.3, sr)  # a workshop: hard walls


HAMMERING = ProceduralClass(
    name="hammering", kind="event", duration_s=6.5,
    model="hammering: 3-7 blows at 1.8-3.2 a second (log-normal intervals), each a contact click, the wood's "
          "two low modes knocked and, driving a nail, its shank ringing at 2.2-5 kHz (modal impact synthesis: "
          "van den Doel, Kry & Pai, SIGGRAPH 2001; Cook, Real Sound Synthesis, 2002)",
    choose=hammering_choose, render=hammering_render)

HOUSEHOLD = (KITCHEN, HAMMERING)

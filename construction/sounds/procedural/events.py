"""Event classes: a referee whistle, a boxing bell, a kitchen timer, chopping on a board.

An event is one natural occurrence (a blast pattern, a ding-ding-ding, a run of beeps, a burst of
chops); the mix scatters fresh draws of it. With duration_s <= 0 a class picks its natural length
within the ranges below; with duration_s > 0 the pattern is fitted to that length."""

from __future__ import annotations

from typing import Any

import numpy as np

from construction.sounds.procedural.base import ProceduralClass, fit, r
from construction.sounds.procedural.dsp import band, nyquist_cap, ramp, resonator

# --- whistle --------------------------------------------------------------------------------------

WHISTLE_PATTERNS = {"long": "L", "two_short": "SS", "short_long": "SL", "short_short_long": "SSL", "three_short": "SSS"}


def whistle_choose(rng: np.random.Generator, duration_s: float, sr: int) -> dict[str, Any]:
    pattern = str(rng.choice(sorted(WHISTLE_PATTERNS)))
    short, long_ = rng.uniform(0.2, 0.32), rng.uniform(0.55, 1.0)
    lengths = [short if c == "S" else long_ for c in WHISTLE_PATTERNS[pattern]]
    gaps = [rng.uniform(0.08, 0.16) for _ in lengths[1:]]
    lengths, gaps = fit(lengths, gaps, duration_s)
    return {"pitch_hz": r(nyquist_cap(rng.uniform(2300, 3500), sr, 0.42)), "flutter_hz": r(rng.uniform(22, 38)),
            "am_depth": r(rng.uniform(0.4, 0.7)), "fm_depth": r(rng.uniform(0.01, 0.025)),
            "breath": r(rng.uniform(0.03, 0.1)), "pattern": pattern, "blasts_s": [r(x) for x in lengths],
            "gaps_s": [r(x) for x in gaps], "duration_s": r(sum(lengths) + sum(gaps))}


def whistle_render(p: dict[str, Any], rng: np.random.Generator, sr: int) -> np.ndarray:
    """The pea's rotation modulates both the level and the pitch of the cavity tone at the flutter
    rate; the rate itself wanders a little, as a real pea's does."""
    n = int(p["duration_s"] * sr)
    out = np.zeros(n)
    start = 0.0
    for i, length in enumerate(p["blasts_s"]):
        m = int(length * sr)
        t = np.arange(m) / sr
        rate = p["flutter_hz"] * (1 + 0.03 * np.sin(2 * np.pi * rng.uniform(0.5, 1.5) * t + rng.uniform(0, 6.3)))
        flutter = 2 * np.pi * np.cumsum(rate) / sr + rng.uniform(0, 2 * np.pi)
        droop = 1 - 0.03 * np.clip((t - (length - 0.08)) / 0.08, 0, 1)  # the pitch sags as the breath stops
        freq = p["pitch_hz"] * droop * (1 + p["fm_depth"] * np.sin(flutter + 1.0))
        phase = 2 * np.pi * np.cumsum(freq) / sr
        tone = np.sin(phase)
        if 2 * p["pitch_hz"] < 0.45 * sr:
            tone += 0.12 * np.sin(2 * phase)
        breath = band(rng.standard_normal(m), 0.8 * p["pitch_hz"], 1.25 * p["pitch_hz"], sr)
        breath *= p["breath"] / (np.std(breath) or 1.0)
        am = 1 - p["am_depth"] * (0.5 + 0.5 * np.sin(flutter))
        k = int(start * sr)
        seg = (tone * am + breath) * ramp(m, int(0.012 * sr), int(0.04 * sr))
        out[k:k + m] += seg[:max(0, n - k)]
        start += length + (p["gaps_s"][i] if i < len(p["gaps_s"]) else 0)
    return out


WHISTLE = ProceduralClass(
    name="whistle", kind="event", duration_s=2.0,
    model="pea whistle: a 2.3-3.5 kHz cavity tone with amplitude and frequency flutter from the pea "
          "(Farnell, Designing Sound, MIT Press 2010, 'Practical: whistles')",
    choose=whistle_choose, render=whistle_render)

# --- boxing bell ----------------------------------------------------------------------------------

# partial frequencies of a tuned bell relative to its prime (hum, prime, tierce, quint, nominal, deciem,
# undeciem, duodeciem, double octave): Fletcher & Rossing, The Physics of Musical Instruments, 1998, ch. 21
BELL_RATIOS = (0.5, 1.0, 1.183, 1.506, 2.0, 2.514, 2.662, 3.011, 4.166)
BELL_LEVELS = (0.35, 0.55, 0.45, 0.25, 1.0, 0.35, 0.3, 0.22, 0.12)


def bell_choose(rng: np.random.Generator, duration_s: float, sr: int) -> dict[str, Any]:
    strikes = int(rng.choice([1, 2, 3, 3, 3, 4]))
    interval = rng.uniform(0.22, 0.4)
    ring = rng.uniform(1.2, 2.2)
    if duration_s > 0:  # as many strikes as fit, then the ring to the end
        strikes = max(1, min(strikes, int(duration_s / interval)))
        ring = max(0.05, duration_s - (strikes - 1) * interval)
    prime = nyquist_cap(rng.uniform(550, 950), sr, 0.45 / max(BELL_RATIOS))
    ratios = [x * (1 + rng.normal(0, 0.003)) for x in BELL_RATIOS]  # casting mistunes every bell a little
    return {"prime_hz": r(prime), "ratios": [r(x, 5) for x in ratios],
            "levels": [r(a * np.exp(rng.normal(0, 0.2))) for a in BELL_LEVELS],
            "t60_s": r(rng.uniform(1.2, 2.4)), "strikes": strikes, "interval_s": r(interval),
            "strengths": [r(rng.uniform(0.7, 1.0)) for _ in range(strikes)],
            "duration_s": r((strikes - 1) * interval + ring)}


def bell_render(p: dict[str, Any], rng: np.random.Generator, sr: int) -> np.ndarray:
    """Modal synthesis: each partial is a sinusoid whose level is re-excited at every strike and decays
    exponentially, higher partials faster; a harder strike is brighter. A short click marks the hit."""
    n = int(p["duration_s"] * sr)
    t = np.arange(n) / sr
    out = np.zeros(n)
    hits = [i * p["interval_s"] for i in range(p["strikes"])]
    for ratio, level in zip(p["ratios"], p["levels"]):
        f = p["prime_hz"] * ratio
        if f >= 0.45 * sr:
            continue
        tau = p["t60_s"] / 6.9 * (1.0 / ratio) ** 0.6
        env = np.zeros(n)
        for hit, strength in zip(hits, p["strengths"]):
            k = int(hit * sr)
            env[k:] += level * strength ** (1 + ratio / 2) * np.exp(-(t[k:] - hit) / tau)
        out += env * np.sin(2 * np.pi * f * t + rng.uniform(0, 2 * np.pi))
    click = band(rng.standard_normal(int(0.003 * sr)), 1500, 6000, sr) * 0.3
    for hit in hits:
        k = int(hit * sr)
        out[k:k + click.size] += click[:max(0, n - k)]
    return out * ramp(n, int(0.001 * sr), int(0.05 * sr))


BOXING_BELL = ProceduralClass(
    name="boxing_bell", kind="event", duration_s=3.5,
    model="modal synthesis: exponentially decaying inharmonic partials at tuned-bell ratios "
          "(Fletcher & Rossing, The Physics of Musical Instruments, 1998, ch. 21), struck 1-4 times",
    choose=bell_choose, render=bell_render)

# --- timer ----------------------------------------------------------------------------------------


TIMER_LONGEST_S = 4.0


def timer_choose(rng: np.random.Generator, duration_s: float, sr: int) -> dict[str, Any]:
    style = str(rng.choice(["kitchen", "alarm"]))
    pitch = rng.uniform(2400, 4000) if style == "kitchen" else rng.uniform(900, 1600)
    beep = rng.uniform(0.05, 0.14)
    duty = rng.uniform(0.35, 0.6)
    per_group = int(rng.choice([1, 2, 3, 4]))
    period = beep / duty
    group_gap = rng.uniform(0.25, 0.6)
    group_s = per_group * period - (period - beep) + group_gap
    longest = duration_s if duration_s > 0 else TIMER_LONGEST_S
    groups = max(1, min(int(rng.integers(2, 5)) if duration_s <= 0 else 99, int(longest / group_s)))
    return {"style": style, "pitch_hz": r(nyquist_cap(pitch, sr, 0.4)), "waveform": str(rng.choice(["square", "sine"])),
            "beep_s": r(beep), "duty": r(duty), "beeps_per_group": per_group, "groups": groups,
            "group_gap_s": r(group_gap),
            "duration_s": r(duration_s if duration_s > 0 else groups * group_s)}


def timer_onsets(p: dict[str, Any]) -> list[float]:
    """Where each beep starts (s): groups of beeps at the duty cycle, groups apart by group_gap_s."""
    period = p["beep_s"] / p["duty"]
    out, t = [], 0.0
    for _ in range(p["groups"]):
        for b in range(p["beeps_per_group"]):
            out.append(t + b * period)
        t = out[-1] + p["beep_s"] + p["group_gap_s"]
    return [x for x in out if x + p["beep_s"] <= p["duration_s"] + 1e-9]


def timer_render(p: dict[str, Any], rng: np.random.Generator, sr: int) -> np.ndarray:
    """A gated tone: a piezo's square wave (odd harmonics up to the band limit) or a sine, 3 ms edges."""
    n = int(p["duration_s"] * sr)
    m = int(p["beep_s"] * sr)
    t = np.arange(m) / sr
    f = p["pitch_hz"]
    odd = range(1, int(0.45 * sr / f) + 1, 2) if p["waveform"] == "square" else [1]
    tone = sum(np.sin(2 * np.pi * k * f * t) / k for k in odd) * ramp(m, int(0.003 * sr), int(0.003 * sr))
    out = np.zeros(n)
    for onset in timer_onsets(p):
        k = int(onset * sr)
        out[k:k + m] += tone[:max(0, n - k)]
    return out


TIMER = ProceduralClass(
    name="timer", kind="event", duration_s=TIMER_LONGEST_S,
    model="kitchen-timer / alarm beeps: a gated square or sine tone in groups at a duty cycle "
          "(Farnell, Designing Sound, 2010, 'Practical: alarms')",
    choose=timer_choose, render=timer_render)

# --- chopping -------------------------------------------------------------------------------------

FOODS = {  # what the blade goes through: (cut length s, crunch impulses per s of cut, cut band Hz)
    "carrot": ((0.012, 0.03), 900, (1500, 7000)),   # hard and crisp: short, dense crunch
    "onion": ((0.02, 0.05), 500, (1000, 6000)),     # layered: a longer, wetter cut
    "herbs": ((0.008, 0.02), 250, (2000, 7500)),    # soft: a brief swish, mostly the board
}


def chopping_choose(rng: np.random.Generator, duration_s: float, sr: int) -> dict[str, Any]:
    """Irregular timing: chops come in runs at a cook's own pace, each interval log-normally spread
    (coefficient of variation 0.2-0.35), with a pause between runs."""
    rate = rng.uniform(3.0, 6.5)
    spread = rng.uniform(0.2, 0.35)
    chops = int(rng.integers(4, 11)) if duration_s <= 0 else max(1, int(duration_s * rate))
    gaps, run = [], int(rng.integers(3, 7))
    for i in range(chops - 1):
        gap = np.exp(rng.normal(0, spread)) / rate
        if (i + 1) % run == 0:  # the hand lifts, the food is pushed along
            gap += rng.uniform(0.2, 0.6)
        gaps.append(gap)
    times = np.cumsum(np.concatenate([[0.02], gaps]))
    food = str(rng.choice(sorted(FOODS)))
    return {"rate_hz": r(rate), "spread": r(spread), "chops": chops, "food": food,
            "times_s": [r(x) for x in times], "strengths": [r(rng.uniform(0.5, 1.0)) for _ in range(chops)],
            "cut_s": [r(rng.uniform(*FOODS[food][0])) for _ in range(chops)],
            "board_hz": r(rng.uniform(150, 400)), "damping_s": r(rng.uniform(0.008, 0.016)),
            "thump": r(rng.uniform(0.6, 1.0)), "duration_s": r(duration_s if duration_s > 0 else float(times[-1]) + 0.15)}


def chopping_render(p: dict[str, Any], rng: np.random.Generator, sr: int) -> np.ndarray:
    """Each chop is the blade going through the food and then meeting the board. The cut is broadband
    noise shaped by a rising envelope and roughened by a train of crunch impulses (fibres giving way)
    ringing briefly in 2-6 kHz, easing into the hit; the board answers with a dull thump (low-passed
    noise dying over 8-16 ms with a trace of its mode: wood struck through food, not a pitched block)
    and a contact click. Nothing in it falls faster than a natural decay (construction.levels.steps)."""
    n = int(p["duration_s"] * sr)
    out = np.zeros(n)
    _, crunch_hz, (lo, hi) = FOODS[p["food"]]
    for t0, s, cut_s in zip(p["times_s"], p["strengths"], p["cut_s"]):
        m = int(cut_s * sr)
        k = int(t0 * sr)
        if k + m >= n:
            continue
        rise = np.linspace(0.2, 1.0, m) ** 2 * ramp(m, 0, min(m // 3, int(0.004 * sr)))  # eases into the hit
        cut = band(rng.standard_normal(m), lo, hi, sr) * rise
        crunch = impulses_at(rng, crunch_hz * cut_s, m) * rise
        crunch = resonator(crunch, rng.uniform(2000, min(6000, 0.4 * sr)), 0.0006, sr)
        body = cut / (np.std(cut) or 1.0) + 1.5 * crunch / (np.std(crunch) or 1.0)
        out[k:k + m] += 0.35 * s * body
        hit = k + m  # the blade reaches the board
        tail = min(int(0.05 * sr), n - hit)
        impulse = np.zeros(tail)
        impulse[0] = 1.0
        decay = np.exp(-np.arange(tail) / (p["damping_s"] * sr))
        thump = band(rng.standard_normal(tail) * decay, None, 2.5 * p["board_hz"], sr) + 0.3 * resonator(
            impulse, p["board_hz"], p["damping_s"] / 2, sr)
        click = np.zeros(tail)
        c = min(int(0.008 * sr), tail)
        click[:c] = rng.standard_normal(c) * np.exp(-np.arange(c) / (0.0015 * sr))
        click = band(click, 1500, 0.45 * sr, sr)
        out[hit:hit + tail] += s * (p["thump"] * thump / (np.max(np.abs(thump)) or 1.0)
                                    + 0.8 * click / (np.max(np.abs(click)) or 1.0))
    return out


def impulses_at(rng: np.random.Generator, count: float, m: int) -> np.ndarray:
    """About `count` unit impulses of random sign at random places in m samples."""
    out = np.zeros(m)
    k = rng.integers(0, m, max(1, rng.poisson(count)))
    np.add.at(out, k, rng.choice([-1.0, 1.0], k.size) * np.exp(rng.normal(0, 0.4, k.size)))
    return out


CHOPPING = ProceduralClass(
    name="chopping", kind="event", duration_s=3.4,
    model="a knife through food onto a board: a noise cut roughened by crunch impulses, then a damped board "
          "thump and a contact click, at irregular log-normal intervals in runs (van den Doel et al., "
          "'FoleyAutomatic', SIGGRAPH 2001; Farnell, Designing Sound, 2010, 'Practical: impacts')",
    choose=chopping_choose, render=chopping_render)

EVENTS = (WHISTLE, BOXING_BELL, TIMER, CHOPPING)

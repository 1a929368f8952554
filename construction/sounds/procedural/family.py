"""Family-life and toy classes (issue 48: the children's scenes the library could not render): toy sounds
(a cartoon boing, a slide whistle, a bulb horn), a toy blaster's zaps, a music box (a bed), dice thrown on
a table, and cups clinking. With duration_s <= 0 an event picks its natural length within the ranges
below; with duration_s > 0 its pattern is fitted to that length."""

from __future__ import annotations

from typing import Any

import numpy as np

from construction.sounds.procedural.base import ProceduralClass, r
from construction.sounds.procedural.dsp import band, nyquist_cap, ramp, resonator, reverb


def _fit_times(times: list[float], tail_s: float, duration_s: float) -> tuple[list[float], float]:
    """Times scaled (never stretched) so the pattern and its last `tail_s` fit `duration_s`."""
    if duration_s <= 0:
        return times, (times[-1] if times else 0.0) + tail_s
    last = times[-1] if times else 0.0
    k = min(1.0, max(0.0, (duration_s - tail_s) / last)) if last > 0 else 1.0
    return [t * k for t in times], duration_s


def _harmonics(phase: np.ndarray, f0: np.ndarray, sr: int, count: int, tilt: float = 1.0) -> np.ndarray:
    """A band-limited sum of `count` harmonics of an instantaneous phase (level 1/k**tilt)."""
    out = np.zeros(phase.size)
    for k in range(1, count + 1):
        out += np.where(k * f0 < 0.45 * sr, 1.0, 0.0) * np.sin(k * phase) / k ** tilt
    return out


# --- toy: a boing, a slide whistle or a bulb horn ---------------------------------------------------

TOY_VARIANTS = ("boing", "slide_whistle", "horn")


def toy_choose(rng: np.random.Generator, duration_s: float, sr: int) -> dict[str, Any]:
    variant = str(rng.choice(TOY_VARIANTS))
    p: dict[str, Any] = {"variant": variant}
    if variant == "boing":  # a twanged spring: a buzzy tone wobbling fast, gliding, dying away
        p.update(f0_hz=r(rng.uniform(110, 320)), glide=r(rng.uniform(0.75, 1.5)), wobble_hz=r(rng.uniform(7, 14)),
                 wobble_depth=r(rng.uniform(0.12, 0.3)), decay_s=r(rng.uniform(0.15, 0.3)),
                 length_s=r(rng.uniform(0.6, 1.1)))
    elif variant == "slide_whistle":  # a plunger sliding in a pipe: a breathy tone sweeping over an octave or two
        start, end = (rng.uniform(450, 800), rng.uniform(1400, 2400))
        if rng.uniform() < 0.5:
            start, end = end, start
        p.update(start_hz=r(nyquist_cap(start, sr, 0.4)), end_hz=r(nyquist_cap(end, sr, 0.4)),
                 vibrato_hz=r(rng.uniform(4, 7)), breath=r(rng.uniform(0.05, 0.15)),
                 length_s=r(rng.uniform(0.45, 1.0)))
    else:  # a bulb horn: a reed buzzing through the bell's resonances, one or two honks
        honks = int(rng.choice([1, 2, 2]))
        p.update(f0_hz=r(rng.uniform(280, 520)), formants_hz=[r(rng.uniform(800, 1300)), r(rng.uniform(2000, 3000))],
                 honks=honks, honk_s=r(rng.uniform(0.2, 0.35)), gap_s=r(rng.uniform(0.08, 0.2)),
                 droop=r(rng.uniform(0.03, 0.1)))
        p["length_s"] = r(honks * p["honk_s"] + (honks - 1) * p["gap_s"] + 0.1)
    p["duration_s"] = r(duration_s) if duration_s > 0 else p["length_s"]
    return p


def toy_render(p: dict[str, Any], rng: np.random.Generator, sr: int) -> np.ndarray:
    n = int(p["duration_s"] * sr)
    t = np.arange(n) / sr
    frac = t / max(p["duration_s"], 1e-3)
    if p["variant"] == "boing":
        wobble = 1 + p["wobble_depth"] * np.exp(-t / (2 * p["decay_s"])) * np.sin(2 * np.pi * p["wobble_hz"] * t)
        f0 = p["f0_hz"] * p["glide"] ** frac * wobble
        out = _harmonics(2 * np.pi * np.cumsum(f0) / sr, f0, sr, 8, 0.8) * np.exp(-t / p["decay_s"])
        return out * ramp(n, int(0.003 * sr), int(0.03 * sr))
    if p["variant"] == "slide_whistle":
        f = p["start_hz"] * (p["end_hz"] / p["start_hz"]) ** (0.5 - 0.5 * np.cos(np.pi * frac))  # a smooth slide
        f = f * (1 + 0.01 * np.sin(2 * np.pi * p["vibrato_hz"] * t))
        tone = np.sin(2 * np.pi * np.cumsum(f) / sr) + 0.08 * np.sin(4 * np.pi * np.cumsum(f) / sr)
        breath = band(rng.standard_normal(n), 500, 4000, sr)
        breath *= p["breath"] / (np.std(breath) or 1.0)
        return (tone + breath) * ramp(n, int(0.02 * sr), int(0.05 * sr))
    out = np.zeros(n)
    for i in range(p["honks"]):
        k, m = int(i * (p["honk_s"] + p["gap_s"]) * sr), int(p["honk_s"] * sr)
        m = max(0, min(m, n - k))
        tt = np.arange(m) / sr
        f0 = p["f0_hz"] * (1 - p["droop"] * np.clip((tt - 0.7 * p["honk_s"]) / (0.3 * p["honk_s"]), 0, 1))
        reed = _harmonics(2 * np.pi * np.cumsum(f0) / sr, f0, sr, 20, 0.6)  # a buzzy, bright reed
        voiced = sum(resonator(reed, f, 0.004, sr) for f in p["formants_hz"]) + 0.1 * reed
        out[k:k + m] += voiced * ramp(m, int(0.01 * sr), int(0.03 * sr))
    return out


TOY = ProceduralClass(
    name="toy", kind="event", duration_s=1.1,
    model="toy sounds: a cartoon boing (a buzzy tone wobbling at 7-14 Hz as it glides and dies), a slide "
          "whistle (a breathy tone sliding over an octave or two) or a bulb horn (a reed pulse train through two "
          "resonances) (Farnell, Designing Sound, MIT Press 2010, 'Practicals: boing, whistles')",
    choose=toy_choose, render=toy_render)

# --- toy blaster: falling 'pew' zaps, sometimes after a motor's whirr -------------------------------


def blaster_choose(rng: np.random.Generator, duration_s: float, sr: int) -> dict[str, Any]:
    zaps = int(rng.integers(1, 5))
    whirr = bool(rng.uniform() < 0.5)
    whirr_s = rng.uniform(0.3, 0.6) if whirr else 0.0
    zap_s = rng.uniform(0.12, 0.28)
    times = [whirr_s]
    for _ in range(zaps - 1):  # one zap after another has died
        times.append(times[-1] + rng.uniform(zap_s + 0.03, zap_s + 0.2))
    times, length = _fit_times(times, zap_s + 0.05, duration_s)
    return {"zaps": zaps, "times_s": [r(x) for x in times], "zap_s": r(zap_s),
            "high_hz": r(nyquist_cap(rng.uniform(1800, 4000), sr, 0.3)), "low_hz": r(rng.uniform(200, 600)),
            "whirr_s": r(whirr_s), "motor_hz": r(rng.uniform(60, 140)), "duration_s": r(length)}


def blaster_render(p: dict[str, Any], rng: np.random.Generator, sr: int) -> np.ndarray:
    """Each zap is an exponential chirp from high_hz down to low_hz, square-ish (odd harmonics), dying
    as it falls; the whirr is a motor's buzz rising in pitch as it spins up."""
    n = int(p["duration_s"] * sr)
    out = np.zeros(n)
    m = int(p["zap_s"] * sr)
    tt = np.arange(m) / sr
    for start in p["times_s"]:
        k = int(start * sr)
        f = p["high_hz"] * (p["low_hz"] / p["high_hz"]) ** (tt / p["zap_s"])
        phase = 2 * np.pi * np.cumsum(f) / sr
        zap = sum(np.where(h * f < 0.45 * sr, 1.0, 0.0) * np.sin(h * phase) / h for h in (1, 3, 5, 7))
        zap *= np.exp(-tt / (0.5 * p["zap_s"])) * ramp(m, int(0.002 * sr), int(0.01 * sr))
        out[k:k + m] += zap[:max(0, n - k)]
    if p["whirr_s"] > 0:
        w = min(n, int(p["whirr_s"] * sr))
        tw = np.arange(w) / sr
        f = p["motor_hz"] * (1 + tw / max(p["whirr_s"], 1e-3))
        buzz = _harmonics(2 * np.pi * np.cumsum(f) / sr, f, sr, 12, 1.0)
        out[:w] += 0.35 * buzz * ramp(w, int(0.05 * sr), int(0.03 * sr))
    return out


TOY_BLASTER = ProceduralClass(
    name="toy_blaster", kind="event", duration_s=2.2,
    model="toy blaster: 1-4 'pew' zaps, each a square-ish exponential chirp falling from 1.8-4 kHz to "
          "0.2-0.6 kHz, after a motor's rising whirr on half the draws (Farnell, Designing Sound, MIT Press 2010, "
          "'Practicals: sci-fi, motors')",
    choose=blaster_choose, render=blaster_render)

# --- music box --------------------------------------------------------------------------------------

# a comb tooth is a clamped-free bar: its modes sit at (1.875, 4.694, 7.855)^2 relative, 1 : 6.267 : 17.55
# (Fletcher & Rossing, The Physics of Musical Instruments, 1998, ch. 2)
TINE_RATIOS = (1.0, 6.267, 17.547)
PENTATONIC = (0, 2, 4, 7, 9)  # semitones of the major pentatonic scale
MUSIC_BOX_TEMPO_HZ = (2.0, 4.5)


def music_box_scale(root_hz: float, octaves: int = 2) -> list[float]:
    return [root_hz * 2 ** ((12 * o + s) / 12) for o in range(octaves) for s in PENTATONIC] + [root_hz * 2 ** octaves]


def music_box_choose(rng: np.random.Generator, duration_s: float, sr: int) -> dict[str, Any]:
    tempo = rng.uniform(*MUSIC_BOX_TEMPO_HZ)
    notes = int(rng.integers(8, 17))
    degree, tune = int(rng.integers(3, 8)), []
    for _ in range(notes):  # a tune moves mostly by steps, now and then a leap
        degree = int(np.clip(degree + rng.choice([-2, -1, -1, 1, 1, 2, 3, -3]), 0, 10))
        tune.append(degree)
    return {"root_hz": r(nyquist_cap(rng.uniform(520, 900), sr, 0.45 / (4 * TINE_RATIOS[1]))), "tempo_hz": r(tempo),
            "tune": tune, "chords": [bool(rng.uniform() < 0.2) for _ in tune], "t60_s": r(rng.uniform(1.0, 2.2)),
            "mode2": r(rng.uniform(0.08, 0.25)), "mode3": r(rng.uniform(0.02, 0.08)),
            "swing": r(rng.uniform(0.0, 0.08)), "whirr": r(rng.uniform(0.01, 0.03)), "duration_s": r(duration_s)}


def music_box_notes(p: dict[str, Any]) -> list[tuple[float, float, float]]:
    """(time s, frequency Hz, level) of every plucked tooth: the tune played again and again."""
    scale = music_box_scale(p["root_hz"])
    out, i, t = [], 0, 0.05
    while t < p["duration_s"]:
        k = i % len(p["tune"])
        degree = p["tune"][k]
        level = 0.8 + 0.2 * ((i * 7919) % 11) / 10  # the pins pluck unevenly
        out.append((t, scale[degree], level))
        if p["chords"][k]:
            out.append((t + 0.004, scale[max(0, degree - 2)], 0.6 * level))  # two teeth on one row of pins
        t += (1 + (p["swing"] if i % 2 == 0 else -p["swing"])) / p["tempo_hz"]
        i += 1
    return out


def music_box_render(p: dict[str, Any], rng: np.random.Generator, sr: int) -> np.ndarray:
    """Each pluck rings the tooth's three modes (higher ones die sooner) after a small click from the pin;
    the spring motor whirrs faintly under it, in a small, bright room (the box)."""
    n = int(p["duration_s"] * sr)
    out = np.zeros(n)
    tail = int(min(p["t60_s"], 2.5) * sr)
    tt = np.arange(tail) / sr
    for t0, f, level in music_box_notes(p):
        k = int(t0 * sr)
        if k >= n:
            break
        note = np.zeros(tail)
        for ratio, amp, speed in zip(TINE_RATIOS, (1.0, p["mode2"], p["mode3"]), (1.0, 3.0, 6.0)):
            if f * ratio < 0.45 * sr:
                note += amp * np.sin(2 * np.pi * f * ratio * tt + rng.uniform(0, 6.3)) * np.exp(-6.9 * speed * tt / p["t60_s"])
        click = np.zeros(tail)
        c = int(0.002 * sr)
        click[:c] = band(rng.standard_normal(c), 3000, 8000, sr) * 0.15
        piece = level * (note * ramp(tail, int(0.001 * sr), int(0.02 * sr)) + click)
        out[k:k + tail] += piece[:n - k]
    motor = band(rng.standard_normal(n), 200, 3000, sr)
    out += p["whirr"] * (float(np.max(np.abs(out))) if n else 1.0) * motor / (np.std(motor) or 1.0)
    return reverb(out, rng, 0.35, 0.15, sr) * ramp(n, int(0.02 * sr), int(0.02 * sr))


MUSIC_BOX = ProceduralClass(
    name="music_box", kind="bed", duration_s=30.0,
    model="music box: a pin cylinder plucking steel comb teeth, clamped-free bars whose modes sit at "
          "1 : 6.267 : 17.55 (Fletcher & Rossing, The Physics of Musical Instruments, 1998, ch. 2), playing an "
          "8-16 note pentatonic tune round and round at 2-4.5 notes a second",
    choose=music_box_choose, render=music_box_render)

# --- dice thrown on a table -------------------------------------------------------------------------


def dice_choose(rng: np.random.Generator, duration_s: float, sr: int) -> dict[str, Any]:
    dice = int(rng.choice([1, 2, 2, 3]))
    throws = []
    for d in range(dice):
        first = rng.uniform(0.02, 0.08) + 0.03 * d
        restitution = rng.uniform(0.35, 0.6)
        bounce = rng.uniform(0.08, 0.16)  # the first bounce's flight
        times = [first]
        while bounce > 0.02 and len(times) < 7:
            times.append(times[-1] + bounce)
            bounce *= restitution
        tumble = int(rng.integers(3, 9))  # then it rolls over its edges, quicker and softer
        for _ in range(tumble):
            times.append(times[-1] + rng.uniform(0.03, 0.07))
        throws.append({"times_s": [r(t) for t in times], "restitution": r(restitution), "bounces": len(times) - tumble,
                       "die_hz": r(nyquist_cap(rng.uniform(3000, 7000), sr, 0.42)), "table_hz": r(rng.uniform(150, 450))})
    last = max(t["times_s"][-1] for t in throws)
    scaled, length = _fit_times([last], 0.25, duration_s)
    k = scaled[0] / last if last > 0 else 1.0
    for t in throws:
        t["times_s"] = [r(x * k) for x in t["times_s"]]
    return {"dice": dice, "throws": throws, "duration_s": r(length)}


def dice_impacts(p: dict[str, Any]) -> list[tuple[float, float, dict]]:
    """(time s, strength, the die's throw) of every impact: each bounce weaker by the restitution, the
    tumble after it softer still."""
    out = []
    for throw in p["throws"]:
        strength = 1.0
        for i, t in enumerate(throw["times_s"]):
            if i < throw["bounces"]:
                strength = throw["restitution"] ** (0.5 * i)
            else:
                strength *= 0.8
            out.append((t, strength, throw))
    return sorted(out, key=lambda x: x[0])


def dice_render(p: dict[str, Any], rng: np.random.Generator, sr: int) -> np.ndarray:
    """Every impact is a contact click exciting the die's stiff, quickly damped modes and the table's
    low wooden ones (van den Doel, Kry & Pai 2001, modal impact synthesis)."""
    n = int(p["duration_s"] * sr)
    out = np.zeros(n)
    for t0, strength, throw in dice_impacts(p):
        k = int(t0 * sr)
        if k >= n:
            continue
        exc = np.zeros(n - k)
        exc[0] = strength
        die = sum(resonator(exc, throw["die_hz"] * q, 0.006 / q, sr) for q in (1.0, 1.53, 2.11))
        table = resonator(exc, throw["table_hz"], 0.02, sr) * 0.6
        c = min(exc.size, int(0.001 * sr))
        click = np.zeros(exc.size)
        click[:c] = band(rng.standard_normal(c), 2000, 9000, sr) * 0.3 * strength
        out[k:] += 40 * die + 8 * table + click
    return out * ramp(n, 0, int(0.03 * sr))


DICE = ProceduralClass(
    name="dice", kind="event", duration_s=1.6,
    model="dice thrown on a table: 1-3 dice bouncing with flights shrinking by a restitution of 0.35-0.6 "
          "(Farnell, Designing Sound, MIT Press 2010, 'Practical: bouncing'), then tumbling over their edges; "
          "each impact a click through the die's damped 3-7 kHz modes and the table's low wooden one "
          "(van den Doel, Kry & Pai, SIGGRAPH 2001)",
    choose=dice_choose, render=dice_render)

# --- cups clinking ----------------------------------------------------------------------------------

# a cup's rim bends like a ring: f_n ~ n (n^2 - 1) / sqrt(n^2 + 1), n = 2..5 (Fletcher & Rossing 1998, ch. 2-3)
CUP_RATIOS = tuple(round(n * (n * n - 1) / np.sqrt(n * n + 1) / (2 * 3 / np.sqrt(5)), 4) for n in (2, 3, 4, 5))


def cups_choose(rng: np.random.Generator, duration_s: float, sr: int) -> dict[str, Any]:
    clinks = int(rng.integers(1, 5))
    times = [0.02]
    for _ in range(clinks - 1):
        times.append(times[-1] + rng.uniform(0.12, 0.55))
    t60 = rng.uniform(0.3, 0.9)
    times, length = _fit_times(times, min(t60, 0.8), duration_s)
    base = nyquist_cap(rng.uniform(1400, 3200), sr, 0.43 / CUP_RATIOS[2])
    return {"clinks": clinks, "times_s": [r(t) for t in times], "base_hz": r(base), "t60_s": r(t60),
            "levels": [r(x) for x in rng.uniform(0.4, 1.0, size=len(CUP_RATIOS))],
            "second_hz": r(base * rng.uniform(0.8, 1.25)), "strengths": [r(rng.uniform(0.5, 1.0)) for _ in times],
            "duration_s": r(length)}


def cups_render(p: dict[str, Any], rng: np.random.Generator, sr: int) -> np.ndarray:
    """Each clink: two cups (or a cup and its saucer) struck together, each ringing its rim's bending
    modes, the higher ones dying sooner."""
    n = int(p["duration_s"] * sr)
    t = np.arange(n) / sr
    out = np.zeros(n)
    for hit, strength in zip(p["times_s"], p["strengths"]):
        k = int(hit * sr)
        for base, share in ((p["base_hz"], 1.0), (p["second_hz"], 0.6)):
            for ratio, level in zip(CUP_RATIOS, p["levels"]):
                f = base * ratio
                if f >= 0.45 * sr:
                    continue
                tau = p["t60_s"] / 6.9 / ratio ** 0.5
                env = np.zeros(n)
                env[k:] = np.exp(-(t[k:] - hit) / tau)
                out += share * strength * level * env * np.sin(2 * np.pi * f * t + rng.uniform(0, 6.3))
    return out * ramp(n, 0, int(0.03 * sr))


CUPS = ProceduralClass(
    name="cups", kind="event", duration_s=2.6,
    model="cups clinking: modal synthesis of two ceramic rims struck together, each ringing its bending "
          "modes f_n ~ n(n^2-1)/sqrt(n^2+1), n = 2-5, from 1.4-3.2 kHz (Fletcher & Rossing, The Physics of "
          "Musical Instruments, 1998; van den Doel, Kry & Pai, SIGGRAPH 2001), 1-4 clinks",
    choose=cups_choose, render=cups_render)

FAMILY = (TOY, TOY_BLASTER, MUSIC_BOX, DICE, CUPS)

"""Video-game effects (issue 48: the library audit left the games seven effect recordings, too few for
the scenes that play them). Game effects are themselves synthesised: square and triangle oscillators
swept or stepped, and noise channels, as a sound chip makes them (Collins, Game Sound, MIT Press 2008,
ch. 2; Farnell, Designing Sound, MIT Press 2010, 'Practical: sci-fi'). An event: one effect, or a few in
a quick run (a combo, a shower of coins)."""

from __future__ import annotations

from typing import Any

import numpy as np

from construction.sounds.procedural.base import ProceduralClass, r
from construction.sounds.procedural.dsp import band, nyquist_cap, ramp

GAME_EFFECTS = ("coin", "jump", "hit", "zap", "power_up", "blip")


def _square(phase: np.ndarray, f: np.ndarray, sr: int, duty: float = 0.5) -> np.ndarray:
    """A band-limited pulse wave (its Fourier series up to 0.45 sr) of an instantaneous phase."""
    out = np.zeros(phase.size)
    for k in range(1, 40):
        coeff = np.sin(np.pi * k * duty) / k
        if abs(coeff) < 1e-6:
            continue
        out += np.where(k * f < 0.45 * sr, coeff, 0.0) * np.cos(k * phase)
    return out


def game_choose(rng: np.random.Generator, duration_s: float, sr: int) -> dict[str, Any]:
    effect = str(rng.choice(GAME_EFFECTS))
    repeats = int(rng.choice([1, 1, 2, 3])) if effect in ("coin", "hit", "blip", "zap") else 1
    base = rng.uniform(300, 900)
    length = {"coin": 0.25, "jump": 0.3, "hit": 0.2, "zap": 0.25, "power_up": 0.6, "blip": 0.08}[effect]
    length *= rng.uniform(0.8, 1.4)
    gap = rng.uniform(0.04, 0.15)
    total = max(0.32, repeats * length + (repeats - 1) * gap + 0.05)  # a lone blip keeps its room's breath
    if duration_s > 0:
        k = min(1.0, (duration_s - 0.05) / (repeats * length + (repeats - 1) * gap))
        length, gap, total = length * k, gap * k, duration_s
    return {"effect": effect, "repeats": repeats, "base_hz": r(nyquist_cap(base, sr, 0.05)),
            "length_s": r(length), "gap_s": r(gap), "duty": r(float(rng.choice([0.125, 0.25, 0.5]))),
            "duration_s": r(total)}


def game_effect_pitch(p: dict[str, Any], t: np.ndarray) -> np.ndarray:
    """The effect's pitch (Hz) over one copy: a coin's two notes a fourth apart, a jump's rising sweep, a
    zap's falling one, a power-up's rising arpeggio, a blip's single note; a hit is noise (its pitch
    drives the thump under it)."""
    b, x = p["base_hz"], t / p["length_s"]
    if p["effect"] == "coin":
        return np.where(x < 0.3, b * 2, b * 2 * 2 ** (5 / 12))
    if p["effect"] == "jump":
        return b * 2 ** (1.2 * x)
    if p["effect"] == "zap":
        return b * 4 * 2 ** (-2.5 * x)
    if p["effect"] == "power_up":
        steps = np.floor(x * 8)
        return b * 2 ** ((np.array([0, 4, 7, 12, 16, 19, 24, 24])[np.clip(steps, 0, 7).astype(int)]) / 12)
    if p["effect"] == "hit":
        return b * 0.5 * 2 ** (-1.5 * x)
    return np.full(t.size, b * 2)


def game_render(p: dict[str, Any], rng: np.random.Generator, sr: int) -> np.ndarray:
    n = int(p["duration_s"] * sr)
    out = np.zeros(n)
    m = int(p["length_s"] * sr)
    t = np.arange(m) / sr
    f = game_effect_pitch(p, t)
    phase = 2 * np.pi * np.cumsum(f) / sr
    if p["effect"] == "hit":
        tone = 0.6 * np.sin(phase) + band(rng.standard_normal(m), 200, 6000, sr)
        env = np.exp(-t / (0.3 * p["length_s"]))
    else:
        tone = _square(phase, f, sr, p["duty"])
        env = np.exp(-t / (0.6 * p["length_s"])) if p["effect"] in ("coin", "blip") else np.ones(m)
    copy = tone * env * ramp(m, int(0.002 * sr), int(0.01 * sr))
    for i in range(p["repeats"]):
        k = int(i * (p["length_s"] + p["gap_s"]) * sr)
        out[k:k + m] += copy[:max(0, n - k)]
    return out


GAME_SFX = ProceduralClass(
    name="game_sfx", kind="event", duration_s=1.3,
    model="a video-game effect as a sound chip makes it: a coin's two-note chime, a jump's rising and a zap's "
          "falling pulse-wave sweep, a power-up arpeggio, a menu blip, or a hit's noise burst, once or in a quick "
          "run (Collins, Game Sound, MIT Press 2008, ch. 2; Farnell, Designing Sound, MIT Press 2010)",
    choose=game_choose, render=game_render)

GAME = (GAME_SFX,)

"""A dramatic orchestral score (issue 48: the library audit left two admitted orchestral recordings, too
few for the film scenes that name one). A bed: a string section playing a minor chord progression, as a
swell (sustained chords rising and falling), a pulse (a driving ostinato of short bowed notes under held
chords) or hits (tutti stabs on the downbeats), with timpani, in a hall. Strings are additive: each
player a band-limited sawtooth (a bowed string's Helmholtz motion; Fletcher & Rossing 1998, ch. 10)
with its own vibrato and detuning, the section's body shaped by a broad resonance; the timpani ring at
their preferred modes 1 : 1.5 : 1.98 : 2.44 (Fletcher & Rossing 1998, ch. 18)."""

from __future__ import annotations

from typing import Any

import numpy as np

from construction.sounds.procedural.base import ProceduralClass, r
from construction.sounds.procedural.dsp import band, nyquist_cap, ramp, reverb

MINOR = (0, 2, 3, 5, 7, 8, 10)  # semitones of the natural minor scale
PROGRESSIONS = ((0, 5, 2, 6), (0, 3, 4, 0), (0, 5, 3, 4), (0, 6, 5, 4), (0, 3, 5, 4))  # chord roots, scale degrees
MOODS = ("swell", "pulse", "hits")
TIMPANI_RATIOS = (1.0, 1.5, 1.98, 2.44)


def scale_hz(root_hz: float, degree: int, octave: int = 0) -> float:
    """The frequency of a degree of the minor scale on `root_hz` (degrees past 6 climb an octave)."""
    octave += degree // 7
    return root_hz * 2 ** ((12 * octave + MINOR[degree % 7]) / 12)


def score_choose(rng: np.random.Generator, duration_s: float, sr: int) -> dict[str, Any]:
    mood = str(rng.choice(MOODS))
    tempo = rng.uniform(70, 100) if mood == "swell" else rng.uniform(110, 150)
    return {"mood": mood, "root_hz": r(rng.uniform(55, 82)), "tempo_bpm": r(tempo),
            "progression": [int(x) for x in PROGRESSIONS[int(rng.integers(len(PROGRESSIONS)))]],
            "bars_per_chord": 2 if mood == "swell" else 1, "players": int(rng.integers(3, 6)),
            "detune_cents": r(rng.uniform(4, 12)), "vibrato_hz": r(rng.uniform(4.5, 6.5)),
            "body_hz": r(rng.uniform(700, 1500)), "timpani": bool(mood != "swell" or rng.uniform() < 0.5),
            "rt60_s": r(rng.uniform(1.4, 2.6)), "wet": r(rng.uniform(0.25, 0.45)), "duration_s": r(duration_s)}


def score_chords(p: dict[str, Any]) -> list[tuple[float, float, list[float]]]:
    """(start s, length s, frequencies) of each chord: bass, cello fifth, and an upper triad, round the
    progression for the whole draw."""
    bar = 4 * 60 / p["tempo_bpm"]
    span = bar * p["bars_per_chord"]
    out, i, t = [], 0, 0.0
    while t < p["duration_s"]:
        d = p["progression"][i % len(p["progression"])]
        notes = [scale_hz(p["root_hz"], d, 0), scale_hz(p["root_hz"], d + 4, 1),
                 scale_hz(p["root_hz"], d, 2), scale_hz(p["root_hz"], d + 2, 2), scale_hz(p["root_hz"], d + 4, 2),
                 scale_hz(p["root_hz"], d + 2, 3)]
        out.append((t, span, notes))
        t += span
        i += 1
    return out


def _section(freq: float, n: int, sr: int, rng: np.random.Generator, p: dict[str, Any]) -> np.ndarray:
    """`players` bowed strings on one note: band-limited sawtooths, each detuned and with its own vibrato."""
    t = np.arange(n) / sr
    out = np.zeros(n)
    for _ in range(p["players"]):
        f = freq * 2 ** (rng.normal(0, p["detune_cents"]) / 1200)
        vib = 1 + 0.004 * np.sin(2 * np.pi * p["vibrato_hz"] * rng.uniform(0.9, 1.1) * t + rng.uniform(0, 6.3))
        phase = 2 * np.pi * np.cumsum(f * vib) / sr + rng.uniform(0, 6.3)
        for k in range(1, 13):
            if k * f >= 0.42 * sr:
                break
            out += np.sin(k * phase) / k
    return out / p["players"]


def _envelope(p: dict[str, Any], n: int, sr: int, start: float, span: float, low: bool) -> np.ndarray:
    """The chord's level over its span: a swell rises and falls; a pulse drives the low voices in eighth
    notes under held upper ones; hits stab each downbeat and ring under a held pad."""
    t = np.arange(n) / sr
    if p["mood"] == "swell":
        x = t / span
        return 0.35 + 0.65 * np.sin(np.pi * np.clip(x, 0, 1)) ** 1.5
    beat = 60 / p["tempo_bpm"]
    if p["mood"] == "pulse" and low:
        phase = (t % (beat / 2)) / (beat / 2)  # each eighth: a bow stroke, quick onset and decay
        return 0.25 + 0.75 * np.exp(-phase * 5.0)
    if p["mood"] == "hits":
        since = t % (4 * beat)
        return 0.3 + 0.7 * np.exp(-since / 0.35)
    return np.full(n, 0.7)


def score_render(p: dict[str, Any], rng: np.random.Generator, sr: int) -> np.ndarray:
    n = int(p["duration_s"] * sr)
    out = np.zeros(n)
    fade = int(0.08 * sr)
    for start, span, notes in score_chords(p):
        k = int(start * sr)
        m = min(n - k, int(span * sr) + fade)
        if m <= 0:
            break
        chord = np.zeros(m)
        for j, f in enumerate(notes):
            low = j < 2
            chord += (1.2 if low else 0.8) * _section(nyquist_cap(f, sr, 0.4), m, sr, rng, p) \
                * _envelope(p, m, sr, start, span, low)
        out[k:k + m] += chord * ramp(m, fade, fade)  # chords overlap by a crossfade: legato, never a gap
    out = band(out, 40, 6000, sr) + 0.6 * band(out, 0.7 * p["body_hz"], 1.4 * p["body_hz"], sr)
    if p["timpani"]:
        beat = 60 / p["tempo_bpm"]
        step = 4 * beat if p["mood"] != "pulse" else 2 * beat
        tt = np.arange(int(1.2 * sr)) / sr
        for start, _, notes in score_chords(p):
            for hit in np.arange(start, start + 4 * beat * p["bars_per_chord"] - 1e-6, step):
                k = int(hit * sr)
                if k >= n:
                    break
                drum = sum(a * np.sin(2 * np.pi * notes[0] * 2 * q * tt) * np.exp(-tt / (0.5 / q))
                           for q, a in zip(TIMPANI_RATIOS, (1.0, 0.5, 0.35, 0.2)))
                mallet = band(rng.standard_normal(tt.size), 60, 1500, sr) * np.exp(-tt / 0.01)
                piece = 0.5 * (drum + 0.5 * mallet)
                out[k:k + piece.size] += piece[:n - k]
    return reverb(out, rng, p["rt60_s"], p["wet"], sr) * ramp(n, int(0.05 * sr), int(0.05 * sr))


ORCHESTRAL_SCORE = ProceduralClass(
    name="orchestral_score", kind="bed", duration_s=30.0,
    model="a dramatic orchestral score: a string section (additive band-limited sawtooths, each player "
          "detuned with its own vibrato: a bowed string's Helmholtz motion, Fletcher & Rossing 1998, ch. 10) "
          "playing a minor progression as a swell, a pulsing ostinato or tutti hits, with timpani at their "
          "preferred modes 1 : 1.5 : 1.98 : 2.44 (ch. 18), in a hall (RT60 1.4-2.6 s)",
    choose=score_choose, render=score_render)

SCORE = (ORCHESTRAL_SCORE,)

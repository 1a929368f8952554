"""What a scene must be, checked on its recipe and its rendered layers (issue 48): no silence of 0.5 s or
more in the lead-in or under the speech (the bed goes on), every defining sound heard alone before the
speech, and no recording placed more than MAX_REPEATS times, bursts included (a copy heard 19 times is
heard as a loop). scripts/scene_audit.py reads them off a built workspace; the tests hold the mix to them."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

import numpy as np

from construction.core.record import MixRecipe
from construction.mixing import heldout
from construction.mixing.tracks import MAX_REPEATS

ALONE_WITHIN_DB = 20.0  # a defining sound is heard alone where its layer comes this close to its own peak ...
ALONE_MIN_S = 0.1       # ... for this long (or half a short copy's loud part), between the fade-in and the speech
FRAME_S = 0.01


def speech_span(recipe: MixRecipe, total: int, sample_rate: int) -> tuple[int, int]:
    """(start, end) of the speech in a clip of `total` samples laid out by `recipe` (levels.placed_speech)."""
    return int(recipe.scene_alone_s * sample_rate), total - int(recipe.scene_after_s * sample_rate)


def scene_silences(scene: np.ndarray, recipe: MixRecipe, sample_rate: int) -> list[tuple[float, float]]:
    """The scene's silences of heldout.SILENCE_MIN_S or more that overlap the lead-in (after the fade-in)
    or the speech: (start s, length s)."""
    _, end = speech_span(recipe, scene.size, sample_rate)
    return [(float(a), float(b)) for a, b in heldout.silences(scene, sample_rate, (int(recipe.fade_s * sample_rate), end))]


def not_heard_alone(recipe: MixRecipe, tracks: list[np.ndarray], sample_rate: int) -> list[str]:
    """The defining tags whose layers (summed per tag, at their gains) never come within ALONE_WITHIN_DB
    of their own loudest 10 ms between the fade-in and the speech's start for ALONE_MIN_S, or for a
    quarter of an average copy's loud part where that is shorter (a bubble's blip, a gunshot)."""
    by_tag: dict[str, np.ndarray] = {}
    copies: dict[str, int] = {}
    for sound, track in zip(recipe.sounds, tracks):
        if sound.role == "defining":
            heard = track * 10 ** (sound.gain_db / 20)
            by_tag[sound.tag] = by_tag[sound.tag] + heard if sound.tag in by_tag else heard
            copies[sound.tag] = copies.get(sound.tag, 0) + (1 if sound.kind == "bed" else len(sound.onsets_s))
    out = []
    hop = int(FRAME_S * sample_rate)
    for tag, track in by_tag.items():
        start, _ = speech_span(recipe, track.size, sample_rate)
        level = heldout.frame_levels_db(track, sample_rate, FRAME_S)
        # a quarter of an average copy's loud part: copies of a procedural class differ (4 chops or 10)
        need = min(ALONE_MIN_S, 0.25 * np.sum(level >= level.max() - ALONE_WITHIN_DB) * FRAME_S / max(1, copies[tag]))
        lead = level[int(recipe.fade_s * sample_rate) // hop:start // hop]
        # loud in the lead-in (its loudest frame there near the sound's peak), and for long enough there
        if lead.size == 0 or lead.max() < level.max() - ALONE_WITHIN_DB \
                or np.sum(lead >= lead.max() - ALONE_WITHIN_DB) * FRAME_S < need - 1e-9:
            out.append(tag)
    return out


def copies_per_recording(recipe: MixRecipe, procedural: set[str] | frozenset[str] = frozenset()) -> Counter:
    """recording -> copies placed in the scene, over every event sound that is not a procedural class
    (a fresh draw per copy), bursts included; a bed counts once."""
    out: Counter = Counter()
    for sound in recipe.sounds:
        if sound.clip_id in procedural or sound.procedural:
            continue
        out[sound.recording or sound.clip_id] += 1 if sound.kind == "bed" else len(sound.onsets_s)
    return out


def over_repeats(recipe: MixRecipe, procedural: set[str] | frozenset[str] = frozenset(),
                 cap: int = MAX_REPEATS) -> dict[str, int]:
    """The recordings placed more than `cap` times in the scene, with their copies."""
    return {r: n for r, n in copies_per_recording(recipe, procedural).items() if n > cap}


def sample_checks(ws, mixer, sample) -> dict[str, Any]:
    """The three checks of a stored sample: its scene audio read back, its layers rendered again from the
    recipe by `mixer` (a construction.mix.MixStage with a library)."""
    sr = sample.speech.sample_rate
    scene = ws.load_audio(sample.scene_audio).astype(np.float64)
    recipe = sample.mix.model_copy(deep=True)
    tracks = [mixer.layer(sound, scene.size, recipe.seed) for sound in recipe.sounds]
    procedural = {c.clip_id for c in mixer.library.clips if getattr(c, "procedural", "")}
    return {"silences": scene_silences(scene, recipe, sr),
            "not_alone_first": not_heard_alone(recipe, tracks, sr),
            "over_3": over_repeats(recipe, procedural)}


def summary(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per category and OVERALL: samples, those with a silence, the longest, those with a defining sound
    not heard alone first, those repeating a recording over the cap."""
    by: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by[r["category"]].append(r)
        by["OVERALL"].append(r)
    return {c: {"n": len(rs), "with_silence": sum(bool(r["silences"]) for r in rs),
                "longest_silence_s": max([x[1] for r in rs for x in r["silences"]] or [0.0]),
                "not_alone_first": sum(bool(r["not_alone_first"]) for r in rs),
                "over_3": sum(bool(r["over_3"]) for r in rs)} for c, rs in by.items()}

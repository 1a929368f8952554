"""The irrelevant-background twin of a mixture: the same speech over a neutral ambience.

Background noise alone changes audio models' refusal rates, so a refusal rate that drops on the mixture
says nothing about context use until it is compared with the same speech over a sound that suggests no
setting. The twin is that comparison: the speech track of the mixture (same words, level and position)
over one of the neutral procedural classes (construction.sounds.procedural.NEUTRAL: rain, wind, room
tone, traffic hum), laid out like the mixture (the ambience alone for scene_alone_s, under the speech,
alone again after it; the same fades) and loudness-matched to the scene section by section: alone at
speech_lufs + scene_level_db, under the speech at speech_lufs - snr_db (BS.1770, the same refined gain as
the mixture's). The after part keeps the alone gain, as in the mixture. The same peak guard follows.

The class is spread evenly over a category's samples (a round-robin over a seeded order, so counts differ
by at most one), and the draw is seeded from the recipe's seed: a remix with a new seed (the WER stage's
retries) draws a new twin, the same recipe gives the same bytes.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterable

import numpy as np

from construction.core.record import IrrelevantTwin, MixRecipe, Sample, stable_seed
from construction.levels import envelope, gain_to, render
from construction.sounds.library import loudness_lufs
from construction.sounds.procedural import CLASSES, NEUTRAL, catalog_row, draw


def assign_ambiences(samples: Iterable[Sample], seed: int) -> dict[str, str]:
    """sample id -> neutral class: within each category a seeded order dealt round-robin, so every class
    gets a quarter of the category (and of the whole build) give or take one sample."""
    by_category: dict[str, list[str]] = defaultdict(list)
    for s in samples:
        by_category[s.category].append(s.sample_id)
    out: dict[str, str] = {}
    for category, ids in sorted(by_category.items()):
        ranked = sorted(ids, key=lambda sid: stable_seed("irrelevant-order", seed, sid))
        start = stable_seed("irrelevant-start", seed, category) % len(NEUTRAL)  # no class always comes first
        out.update({sid: NEUTRAL[(start + i) % len(NEUTRAL)] for i, sid in enumerate(ranked)})
    return out


def ambience_for(sample_id: str, assigned: dict[str, str], seed: int) -> str:
    """The sample's class; one the build's assignment did not see (a control) gets a seeded one."""
    return assigned.get(sample_id) or NEUTRAL[stable_seed("irrelevant-class", seed, sample_id) % len(NEUTRAL)]


def library_entry(library: Any, name: str) -> tuple[str, str]:
    """The class's clip id and sha256 as the library lists it (what the review gate checks), else the
    class's own catalog row (the same values: a procedural entry is generated from the class)."""
    for clip in getattr(library, "clips", []):
        if getattr(clip, "procedural", "") == name:
            return clip.clip_id, clip.sha256
    row = catalog_row(CLASSES[name])
    return row["clip_id"], row["sha256"]


def make_twin(speech_track: np.ndarray, recipe: MixRecipe, speech_span: tuple[int, int], ambience: str,
              entry: tuple[str, str], sample_rate: int, fade_s: float, peak_dbfs: float
              ) -> tuple[np.ndarray, IrrelevantTwin]:
    """The twin's audio (float32) and how it was made. `speech_track` is the mixture's, level-matched and
    placed; `speech_span` its (start, end) in samples."""
    total, (start, end) = speech_track.size, speech_span
    seed = stable_seed("irrelevant", recipe.seed, ambience)
    audio, params = draw(ambience, seed, total / sample_rate + 0.01, sample_rate)
    bed = np.pad(np.asarray(audio, dtype=np.float64), (0, max(0, total - audio.size)))[:total]
    fade = int(fade_s * sample_rate)
    alone_part, under_part = bed[fade:max(fade + 1, start - fade)], bed[start:end]
    alone_db = round(gain_to(alone_part, recipe.speech_lufs + recipe.scene_level_db, sample_rate), 3)
    under_db = round(gain_to(under_part, recipe.speech_lufs - recipe.snr_db, sample_rate), 3)
    gain = envelope(total, start, end - start, alone_db, under_db, fade)
    twin, guard_db = render(speech_track, bed, gain, peak_dbfs)
    placed = bed * gain
    speech_l = loudness_lufs(speech_track[start:end], sample_rate)
    record = IrrelevantTwin(
        ambience=ambience, clip_id=entry[0], sha256=entry[1], seed=seed, params=params,
        alone_gain_db=alone_db, under_gain_db=under_db, peak_guard_db=round(guard_db, 3),
        snr_db=round(speech_l - loudness_lufs(placed[start:end], sample_rate), 2),
        scene_level_db=round(loudness_lufs(placed[fade:max(fade + 1, start - fade)], sample_rate) - speech_l, 2))
    return twin, record


def twin_stats(samples: Iterable[Sample]) -> dict[str, Any]:
    """Mix stats: how many twins of each neutral class, and how far their measured levels are from the
    recipe's (they should be within a few hundredths of a dB)."""
    counts: dict[str, int] = {name: 0 for name in NEUTRAL}
    snr_miss, level_miss, missing = [], [], 0
    for s in samples:
        twin = s.mix.irrelevant if s.mix else None
        if twin is None or s.irrelevant_audio is None:
            missing += 1
            continue
        counts[twin.ambience] = counts.get(twin.ambience, 0) + 1
        snr_miss.append(abs(twin.snr_db - s.mix.snr_db))
        level_miss.append(abs(twin.scene_level_db - s.mix.scene_level_db))
    return {"irrelevant_twins": {"per_ambience": counts, "without_twin": missing,
                                 "max_snr_miss_db": round(max(snr_miss), 3) if snr_miss else None,
                                 "max_scene_level_miss_db": round(max(level_miss), 3) if level_miss else None}}

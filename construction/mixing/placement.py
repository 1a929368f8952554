"""Where a scene's sounds play in a mixture (issue 48: scenes without holes).

A bed plays throughout (or from a beat after the sound it is ordered after); a one-shot comes as the
scene's pattern says (construction.text.taxonomy EventPattern). Three rules hold for every scene:

- every DEFINING sound is heard alone before the speech: a defining single or pair starts at least
  tracks.ALONE_S before it (right before it, or early where another sound is ordered after it), and a
  continuous sound or burst starts within 0.4 s of the clip's start (or of the sound it follows);
- the scene does not fall silent: where no bed plays, one sound (scenes.cover_tag) CARRIES it, its copies
  back to back (tracks.cover_onsets), from the recording's spares and procedural draws;
- no recording plays more than tracks.MAX_REPEATS times in a scene, bursts included: a sound's copies are
  dealt round the recordings it was given (a procedural class draws afresh each copy, so it has no cap),
  and copies beyond them are left out.

Copies are spaced by how long each really sounds (tracks.sounding_end of the clip or of the procedural
draw), not by the catalog's length, so a copy's silent end is no part of the spacing.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from construction.core.config import MixConfig
from construction.core.record import Sample, SceneSound, stable_seed
from construction.mixing.tracks import MAX_REPEATS, alone_onset, cover_onsets, draw_onsets
from construction.sounds.library import Clip
from construction.sounds.scenes import Pick, cover_tag, is_procedural, scene_order, scene_sounds, take_span
from construction.sounds.variation import draw_variation
from construction.text.taxonomy import Taxonomy

MAX_COPIES = 64  # a procedural stream's copies in one scene (a scene is seconds long: never reached)


def copy_order(budgets: list[int | None], limit: int = MAX_COPIES) -> list[int]:
    """Which source each copy comes from, in time order: round the sources, each until its budget (None:
    a procedural class, no budget) is spent."""
    left = list(budgets)
    out: list[int] = []
    while len(out) < limit and any(b is None or b > 0 for b in left):
        for k, b in enumerate(left):
            if b is None or b > 0:
                out.append(k)
                if b is not None:
                    left[k] = b - 1
    return out[:limit]


def place_sounds(sample: Sample, chosen: dict[str, list[Pick]], taxonomy: Taxonomy, cfg: MixConfig,
                 rng: random.Random, total_s: float, speech: tuple[float, float], seed: int,
                 sounding: Callable[[Clip, int | None], tuple[float, float]]) -> list[SceneSound]:
    """Every picked clip placed (see the module docstring): a bed's offset inside its take, an event's
    onsets, each use's variation and a procedural class's seeds. `sounding(clip, seed)`: (when it is
    first loud, how long it sounds), s, of a recording (seed None) or a procedural class's draw `seed`,
    before the use's rate change: an applause that swells is heard alone only once it is loud."""
    defining, support = scene_sounds(sample, taxonomy)
    roles = [(t, "defining") for t in defining] + [(t, "support") for t in support if t in chosen]
    spec, after, depth = scene_order(sample, taxonomy, (t for t, _ in roles))
    cover = cover_tag(roles, chosen, spec, depth)
    followed = {after(t) for t, _ in roles if after(t)}  # sounds another is ordered after
    ready: dict[str, float] = {}  # tag -> when a sound ordered after it may start
    placed: dict[str, list[SceneSound]] = {}

    def procedural_seed(tag: str, pick: Pick, i: int) -> int:
        return stable_seed("procedural", seed, tag, pick.take, i)

    for tag, role in sorted(roles, key=lambda tr: depth(tr[0])):
        pattern = spec(tag)
        picks = chosen[tag]
        main, spares = [p for p in picks if not p.spare], [p for p in picks if p.spare]
        # the cover's copies come from all its recordings in turn; otherwise each source is its own
        # layer, the first with the spares
        groups = [picks] if tag == cover else [[p, *(spares if i == 0 else [])] for i, p in enumerate(main)]
        placed[tag] = []
        not_before = ready.get(after(tag), 0.0) if after(tag) else 0.0
        for group in groups:
            sounds = [SceneSound(clip_id=p.clip.clip_id, sha256=p.clip.sha256, tag=tag, role=role, kind=p.clip.kind,
                                 clip_tags=list(p.clip.tags), licence=p.clip.licence, attribution=p.clip.attribution,
                                 source_url=p.clip.source_url, recording=p.recording, take=p.take,
                                 variation=draw_variation(rng, cfg)) for p in group]
            head, pick = sounds[0], group[0]
            if pick.clip.kind == "bed":
                # a bed ordered after another sound ("a shot, then applause") comes in after it
                head.start_s = round(not_before, 3)
                ready[tag] = min(ready.get(tag, head.start_s + 0.2), head.start_s + 0.2)
                if is_procedural(pick.clip):
                    head.offset_s = 0.0  # a fresh draw as long as the clip: no takes to cut
                    head.procedural = {"class": pick.clip.procedural, "seeds": [procedural_seed(tag, pick, 0)]}
                else:
                    start, end = take_span(pick.clip, pick.take, cfg.take_s)
                    spare = (end - start) - total_s * head.variation["rate"]
                    head.offset_s = round(start + (rng.uniform(0, spare) if spare > 0 else 0.0), 3)
                placed[tag].append(head)
                continue
            rates = [float(s.variation["rate"]) for s in sounds]
            budgets = [None if is_procedural(p.clip) else MAX_REPEATS for p in group]
            order = copy_order(budgets)
            budget = None if None in budgets else len(order)

            def timing(i: int, order=order, group=group, rates=rates) -> tuple[float, float]:
                """(when copy i is first loud, how long it sounds), s."""
                k = order[min(i, len(order) - 1)]
                p = group[k]
                seed_k = procedural_seed(tag, p, order[:i].count(k)) if is_procedural(p.clip) else None
                attack, end = sounding(p.clip, seed_k)
                return attack / rates[k], end / rates[k]

            def length(i: int, timing=timing) -> float:
                return timing(i)[1]

            # the first copy of a sound heard alone starts early enough for its loud part to come first
            alone_by = speech[0] - timing(0)[0]

            event_s = max(length(i) for i in range(min(3, len(order))))
            # a one-shot heard alone before the speech: a defining one, and one something is ordered after
            alone = pattern.pattern in ("single", "pair") and (role == "defining" or tag in followed)
            if tag == cover:
                units = [[0.0]]
                if pattern.pattern == "burst":  # strings of copies, or single copies where too few recordings
                    unit = [0.0]
                    for _ in range((pattern.count or rng.randint(3, 5)) - 1):
                        unit.append(round(unit[-1] + rng.uniform(*cfg.burst_spacing_s), 3))
                    units.insert(0, unit)
                first = (alone_onset(rng, length(0), alone_by, not_before=not_before, early=tag in followed)
                         if alone else None)
                for unit in units:
                    onsets = cover_onsets(rng, length, total_s, first=first, not_before=not_before, unit=unit,
                                          budget=budget)
                    if onsets[-1] + length(len(onsets) - 1) >= speech[1]:
                        break
                else:  # too few recordings to carry it through the speech: scattered as before, one under it
                    onsets = ([first] if first is not None else []) + draw_onsets(
                        rng, event_s, total_s, speech, cfg, pattern.pattern if pattern.pattern == "burst" else "continuous",
                        count=pattern.count, not_before=max(not_before, first + length(0) if first is not None else 0.0),
                        budget=None if budget is None else budget - (first is not None), length=length)
            elif alone:
                onsets = [alone_onset(rng, length(0), alone_by, not_before=not_before, early=tag in followed)]
                if pattern.pattern == "pair":
                    gap = length(0) + rng.uniform(cfg.event_gap_s_min, cfg.event_gap_s_max)
                    second = onsets[0] + gap if onsets[0] + gap < total_s - 0.1 else max(
                        onsets[0] + length(0), total_s - length(1) - 0.1)
                    onsets.append(round(second, 3))
            else:
                onsets = draw_onsets(rng, event_s, total_s, speech, cfg, pattern.pattern, count=pattern.count,
                                     not_before=not_before, budget=budget, length=length)
            for i, t in enumerate(sorted(onsets)[:len(order)]):
                sounds[order[i]].onsets_s.append(t)
            for s, p in zip(sounds, group):
                if not s.onsets_s:  # a spare the copies did not need
                    continue
                s.pattern = pattern.pattern
                if is_procedural(p.clip):  # a fresh draw per copy, seeded from the recipe
                    s.procedural = {"class": p.clip.procedural,
                                    "seeds": [procedural_seed(tag, p, i) for i in range(len(s.onsets_s))]}
                placed[tag].append(s)
            first_copy = min(onsets)
            heard = first_copy + min(length(0), 0.5) + 0.1  # a beat after its first copy's sound
            ready[tag] = min(ready.get(tag, heard), heard)
    return [sound for tag, _ in roles for sound in placed[tag]]

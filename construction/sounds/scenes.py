"""Scenes meet the sound library: which scenes can be rendered, and which clip renders each sound.

A scene names its DEFINING sounds (the ones that make the speech benign: every one is rendered) and
optional SUPPORT sounds (taxonomy tags). generate pairs speech only with scenes whose defining sounds
have clips under the release licence; mix draws the clips so that use is as even as the library allows.
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Iterable
from pathlib import Path

from construction.core.errors import WorkbenchError
from construction.core.record import Sample, stable_seed
from construction.sounds.library import Clip, SoundLibrary, load_library
from construction.text.taxonomy import Taxonomy


def open_library(path: str | Path) -> SoundLibrary:
    """The sound library at `path`, or a clear error saying how to get one."""
    root = Path(path).expanduser()
    if not (root / "catalog.jsonl").exists():
        raise WorkbenchError(f"no sound library at {root} (no catalog.jsonl): build the offline one with "
                             f"python -m construction.sounds.starter --sounds {root}, or set mix.sounds")
    return load_library(root)


def scene_sounds(sample: Sample, taxonomy: Taxonomy) -> tuple[list[str], list[str]]:
    """(defining tags, support tags) of the sample's scene. A sample made before scenes existed (or whose
    scene left the taxonomy) keeps its background tags, all taken as defining."""
    home = taxonomy.scene_home.get(sample.scene_id or "")
    if home is None:
        return list(sample.background_tags), []
    scene = home[1]
    return list(scene.defining), [t for t in scene.support if t not in scene.defining]


def clips_by_tag(library: SoundLibrary, tags: Iterable[str], licence: str) -> dict[str, list[Clip]]:
    """The clips the release licence admits for each tag, sorted by id (reproducible draws)."""
    return {tag: library.select([tag], licence) for tag in tags}


def unrenderable_scenes(taxonomy: Taxonomy, library: SoundLibrary, licence: str) -> dict[str, list[str]]:
    """scene id -> the defining sounds no admitted clip carries (scenes that can be rendered are absent)."""
    tags = {t for c in taxonomy.categories for s in c.scenes for t in s.defining}
    available = clips_by_tag(library, tags, licence)
    return {scene.id: missing for c in taxonomy.categories for scene in c.scenes
            if (missing := [t for t in scene.defining if not available[t]])}


def thin_tags(samples: Iterable[Sample], taxonomy: Taxonomy, library: SoundLibrary, licence: str,
              min_clips: int) -> dict[str, tuple[int, list[str]]]:
    """Defining sounds the samples need that some but fewer than `min_clips` admitted clips carry:
    tag -> (clips, scenes that need it). (A sound no clip carries is each sample's no_background.)"""
    needs: dict[str, set[str]] = defaultdict(set)
    for sample in samples:
        for tag in scene_sounds(sample, taxonomy)[0]:
            needs[tag].add(sample.scene_id or ",".join(sample.background_tags))
    available = clips_by_tag(library, needs, licence)
    return {tag: (len(available[tag]), sorted(scenes)) for tag, scenes in sorted(needs.items())
            if 0 < len(available[tag]) < min_clips}


def assign_clips(samples: Iterable[Sample], taxonomy: Taxonomy, library: SoundLibrary, licence: str,
                 seed: int) -> dict[str, dict[str, Clip]]:
    """sample_id -> {tag: clip} for every defining and support sound that has clips. Each sound gets the
    clip of its tag used least so far in the sample's category (ties broken by a seeded shuffle), so use
    is as even as the library allows, also where one clip carries two tags (an applause clip that is
    also a crowd cheer is not dealt for both); samples are taken in order, so extending a build never
    changes the clips of samples already mixed."""
    position: Counter = Counter()
    uses: dict[str, Counter] = defaultdict(Counter)  # category -> clip id -> samples it is in
    cache: dict[str, list[Clip]] = {}
    out: dict[str, dict[str, Clip]] = {}
    for sample in samples:
        defining, support = scene_sounds(sample, taxonomy)
        used = uses[sample.category]
        chosen: dict[str, Clip] = {}
        for tag in defining + support:
            if tag not in cache:  # once per tag (setdefault would evaluate the select every time)
                cache[tag] = library.select([tag], licence)
            clips = cache[tag]
            if not clips:
                continue
            key = (sample.category, tag)
            order = list(clips)
            random.Random(stable_seed("clips", seed, *key, position[key])).shuffle(order)
            position[key] += 1
            # a clip carrying two of the scene's tags is dealt for one only
            fresh = [c for c in order if c not in chosen.values()] or order
            chosen[tag] = min(fresh, key=lambda c: used[c.clip_id])
        for clip in {c.clip_id for c in chosen.values()}:
            used[clip] += 1
        out[sample.sample_id] = chosen
    return out

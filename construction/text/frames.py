"""Scenes that can be told apart: which scenes a listener can place in one of their frames by ear.

The scene arm asks listeners which benign frame they hear (a video game, a kitchen, ...). A scene can
only be recognised if something it always plays belongs to its frame alone: a defining sound is
DISTINCTIVE for frame F when every scene (of any category) that defines it accepts F, and the sound
library renders it. A scene with no such sound is AMBIGUOUS: gunfire behind a paintball game is also
behind a shooter game and a war film, so a listener who names "a video game" is right about the sound
and wrong about the scene. generate computes this before anyone listens, reports it in
stats/generate.json and, by default, does not use ambiguous scenes (generate.allow_ambiguous_scenes).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection
from typing import Any

from construction.text.taxonomy import Taxonomy


def sound_frames(taxonomy: Taxonomy) -> dict[str, dict[str, list[str]]]:
    """defining sound -> {scene id: the frames that scene accepts}, for every scene that defines it."""
    out: dict[str, dict[str, list[str]]] = defaultdict(dict)
    for category in taxonomy.categories:
        for scene in category.scenes:
            for tag in scene.defining:
                out[tag][scene.id] = taxonomy.scene_frames(scene.id)
    return dict(out)


def distinctive_sounds(taxonomy: Taxonomy, rendered: Collection[str]) -> dict[str, dict[str, list[str]]]:
    """scene id -> {defining sound: the scene's frames it is distinctive for}; a scene with no
    distinctive sound maps to {}. Only sounds in `rendered` (tags the library has clips for) count:
    a sound the listener never hears cannot tell a scene apart."""
    users = sound_frames(taxonomy)
    out: dict[str, dict[str, list[str]]] = {}
    for category in taxonomy.categories:
        for scene in category.scenes:
            found: dict[str, list[str]] = {}
            for tag in scene.defining:
                if tag not in rendered:
                    continue
                frames = [f for f in taxonomy.scene_frames(scene.id)
                          if all(f in accepted for accepted in users[tag].values())]
                if frames:
                    found[tag] = frames
            out[scene.id] = found
    return out


def ambiguous_scenes(taxonomy: Taxonomy, rendered: Collection[str]) -> dict[str, dict[str, Any]]:
    """scene id -> what it shares, for every scene with no distinctive defining sound: per rendered
    defining sound, the other scenes that define it and the frames they accept; and the defining
    sounds the library does not render."""
    users = sound_frames(taxonomy)
    distinct = distinctive_sounds(taxonomy, rendered)
    out: dict[str, dict[str, Any]] = {}
    for scene_id, found in distinct.items():
        if found:
            continue
        _, scene = taxonomy.scene_home[scene_id]
        shared = {tag: {other: frames for other, frames in users[tag].items() if other != scene_id}
                  for tag in scene.defining if tag in rendered}
        out[scene_id] = {"frames": taxonomy.scene_frames(scene_id), "shares": shared,
                         "not_rendered": [t for t in scene.defining if t not in rendered]}
    return out


def distinctiveness(taxonomy: Taxonomy, rendered: Collection[str],
                    categories: Collection[str] | None = None) -> dict[str, Any]:
    """The figures generate reports: per category the scenes, the distinctive ones and their share,
    and its ambiguous scenes with what they share; the totals over the categories asked for."""
    distinct = distinctive_sounds(taxonomy, rendered)
    ambiguous = ambiguous_scenes(taxonomy, rendered)
    per_category: dict[str, dict[str, Any]] = {}
    for category in taxonomy.categories:
        if categories is not None and category.id not in categories:
            continue
        ids = [s.id for s in category.scenes]
        good = sum(1 for i in ids if distinct[i])
        per_category[category.id] = {"scenes": len(ids), "distinctive": good,
                                     "distinctive_share": round(good / len(ids), 4) if ids else None,
                                     "ambiguous": {i: ambiguous[i] for i in ids if i in ambiguous}}
    scenes = sum(c["scenes"] for c in per_category.values())
    good = sum(c["distinctive"] for c in per_category.values())
    return {"scenes": scenes, "distinctive": good,
            "distinctive_share": round(good / scenes, 4) if scenes else None, "per_category": per_category}

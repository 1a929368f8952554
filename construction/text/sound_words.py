"""Scenes render their text: the sounds a scene's `context` names, read with a lexicon of sound words
(construction/data/sound_words.yaml), each mapped to the taxonomy tags whose sources render it.

A scene CONFORMS when every sound word in its context is rendered by one of its defining or support
tags (and, given the tags a library renders under the release licence, that tag has a clip there), and
each of its defining tags is named by some word (a listener is told of no sound that is not played,
and every defining sound played is one the text names). Where words overlap ("rolling boil" and
"boil") the longest match wins. generate pairs speech only with conforming scenes; the others are
listed with their reasons (stats/generate.json `nonconforming_scenes`).

    python -m construction.sounds scenes --sounds LIBRARY_DIR   # the scenes that do not conform
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

from construction.core.yamlfile import load_yaml
from construction.text.taxonomy import Scene, Taxonomy


@dataclass(frozen=True)
class Word:
    pattern: re.Pattern[str]
    tags: tuple[str, ...]
    reason: str


@lru_cache(maxsize=1)
def lexicon() -> tuple[Word, ...]:
    data: dict[str, Any] = load_yaml(resources.files("construction.data").joinpath("sound_words.yaml").read_text())
    # the longer alternatives first: a regex alternation takes the first that matches ("shotgun blasts")
    return tuple(Word(re.compile(r"\b(?:" + "|".join(sorted(entry["words"], key=len, reverse=True)) + ")"),
                      tuple(entry["tags"]),
                      entry.get("reason", "")) for entry in data["words"])


def named_sounds(context: str) -> list[tuple[str, Word]]:
    """(phrase, lexicon entry) for each sound the context names, in order; overlaps go to the longest."""
    text = context.lower()
    found = [(m.start(), m.end(), word) for word in lexicon() for m in word.pattern.finditer(text)]
    taken: list[tuple[int, int, Word]] = []
    for start, end, word in sorted(found, key=lambda f: (f[0] - f[1], f[0])):
        if all(end <= a or start >= b for a, b, _ in taken):
            taken.append((start, end, word))
    return [(text[a:b], word) for a, b, word in sorted(taken, key=lambda t: t[0])]


def conformance(scene: Scene, rendered: set[str] | None = None) -> list[str]:
    """Why `scene`'s text and its sounds disagree (empty: it conforms). `rendered`: the tags the
    library has clips for under the release licence (None: taken as all)."""
    playing = [t for t in scene.defining + scene.support if rendered is None or t in rendered]
    problems, named = [], set()
    for phrase, word in named_sounds(scene.context):
        hit = [t for t in word.tags if t in playing]
        named.update(hit)
        if not word.tags:
            problems.append(f"'{phrase}': {word.reason}")
        elif not hit:
            problems.append(f"'{phrase}' needs one of {list(word.tags)}, the scene plays {playing}")
    problems += [f"defining sound '{t}' is not named by the text" for t in scene.defining if t not in named]
    if rendered is not None:
        problems += [f"defining sound '{t}' has no clip under the release licence" for t in scene.defining
                     if t not in rendered]
    return problems


def nonconforming_scenes(taxonomy: Taxonomy, rendered: set[str] | None = None) -> dict[str, list[str]]:
    """scene id -> its problems, for every scene that does not conform."""
    return {scene.id: problems for category in taxonomy.categories for scene in category.scenes
            if (problems := conformance(scene, rendered))}


def rendered_tags(library, tags, licence: str) -> set[str]:
    """The tags with at least one clip under `licence`."""
    from construction.sounds.scenes import clips_by_tag

    return {tag for tag, clips in clips_by_tag(library, tags, licence).items() if clips}

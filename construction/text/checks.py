"""Checks and figures on speech text: context-revealing cue words, near twins, diversity.

The speech of a sample must sound harmful heard alone and never name its benign referent (no eggs,
respawns, takes, reps, toys): the scene carries the benign frame. `cue_pattern` finds the taxonomy's
cue words in a line, with simple inflections ("respawn", "respawned", "respawning").

Plain functions of the text (no model, no files), so generate applies the same checks to the lines of
either backend (the offline catalog or an LLM), and perf/bench_scripts.py measures the same figures.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence

import numpy as np
from rapidfuzz import fuzz, process

_SUFFIXES = r"(?:s|es|ed|d|ing|er|ers)?"


def normalise(text: str) -> str:
    """Lower case, letters/digits/spaces only: what near-duplicate checks compare."""
    return re.sub(r"\s+", " ", re.sub(r"[^a-z0-9' ]+", " ", text.lower()).replace("'", "")).strip()


def speech_id(text: str) -> str:
    """The same words (whatever the case and punctuation) get the same id, in any category."""
    return "sp-" + hashlib.sha256(normalise(text).encode()).hexdigest()[:12]


def cue_pattern(words: Iterable[str]) -> re.Pattern[str] | None:
    """One regex for whole cue words or phrases, inflections allowed; None when there are none."""
    parts = sorted({r"\s+".join(re.escape(w) for w in normalise(word).split()) for word in words if word.strip()},
                   key=len, reverse=True)
    return re.compile(r"\b(?:" + "|".join(parts) + r")" + _SUFFIXES + r"\b") if parts else None


def find_cue(text: str, pattern: re.Pattern[str] | None) -> str | None:
    """The first cue word in `text`, as written there (None: the speech reveals nothing)."""
    if pattern is None:
        return None
    match = pattern.search(normalise(text))
    return match.group(0) if match else None


def word_trigram_ratio(texts: Iterable[str]) -> float | None:
    """Distinct word 3-grams over all word 3-grams (1.0: no phrase repeats anywhere)."""
    grams = [tuple(words[i:i + 3]) for text in texts for words in [normalise(text).split()]
             for i in range(len(words) - 2)]
    return round(len(set(grams)) / len(grams), 4) if grams else None


def near_twins(texts: Sequence[str], threshold: float) -> list[bool]:
    """For each text, whether another text of the list is at rapidfuzz ratio >= threshold."""
    keys = [normalise(t) for t in texts]
    flags: list[bool] = []
    for start in range(0, len(keys), 256):  # row blocks: memory stays flat however many texts
        block = process.cdist(keys[start:start + 256], keys, scorer=fuzz.ratio, score_cutoff=threshold,
                              dtype=np.uint8, workers=1)
        flags += [bool((row >= threshold).sum() > 1) for row in block]  # the text itself always matches
    return flags

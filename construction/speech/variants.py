"""Variants of a line: the same script spoken in every cell of a crossed design of voice factors.

With `synthesize.variants` set, the generate manifest holds one row per (line, variant): the variant's
sample id is the line's id plus the variant's name, and `custom["variant"]` says what it is (line_id,
name, gender, accent, rate, emotion, voice). The voice of each cell is dealt per category in seeded blocks
(like construction.synthesize.assign_voices), so a line's voice depends on the line, never on run order.
The mix draws a line's scene, its twins' backgrounds and its speech onset from the line id
(construction.mix), so the variants of a line differ in the voice alone.

Emotion is rendered only by CosyVoice's instruct mode; an offline voice speaks the line at the cell's
rate, and the variant records the emotion as asked and not rendered (the release's `emotion_rendered`).
"""

from __future__ import annotations

import itertools
import random
from collections import Counter
from typing import Any

from construction.core.config import VariantsConfig
from construction.core.errors import WorkbenchError
from construction.core.record import Sample, stable_seed


def short_accent(accent: str) -> str:
    """'en-US' -> 'us', 'en-GB-scotland' -> 'gb-scotland': the accent as a variant name shows it."""
    return accent.lower().removeprefix("en-")


def cells(cfg: VariantsConfig) -> list[dict[str, Any]]:
    """The crossed design: one dict per cell (gender, accent or None, rate name, rate, emotion)."""
    return [{"gender": g, "accent": a, "rate_name": r, "rate": cfg.rates[r], "emotion": e}
            for g, a, r, e in itertools.product(cfg.genders, cfg.accents or [None], cfg.rates, cfg.emotions or [""])]


def candidates(cell: dict[str, Any], voices: list) -> list:
    return [v for v in voices if v.gender == cell["gender"] and cell["accent"] in (None, v.accent)]


def check_design(cfg: VariantsConfig, voices: list) -> None:
    """Every cell has a voice in the bank; an emotion asked of a bank without CosyVoice is allowed but
    renders nothing (recorded per variant), which the caller is told about in the stats."""
    empty = [c for c in cells(cfg) if not candidates(c, voices)]
    if empty:
        shown = ", ".join(f"{c['gender']} {c['accent']}" for c in empty[:4])
        raise WorkbenchError(f"synthesize.variants: the voice bank has no voice for {shown} "
                             f"(bank: {', '.join(v.voice_id for v in voices)})")


def variant_name(cell: dict[str, Any], voice) -> str:
    parts = [cell["gender"], short_accent(voice.accent), cell["rate_name"]]
    return "-".join(parts + ([cell["emotion"]] if cell["emotion"] else []))


class VariantWriter:
    """Stands in for generate's manifest appender: each kept line is written as its variants (in the
    design's order), a rejected script as it is."""

    def __init__(self, out, cfg: VariantsConfig, voices: list, seed: int):
        self.out, self.cfg, self.voices, self.seed = out, cfg, sorted(voices, key=lambda v: v.voice_id), seed
        self.position: Counter = Counter()  # lines written per category: the voice dealing's index

    def write(self, row) -> None:
        if not isinstance(row, Sample):
            self.out.write(row)
            return
        i = self.position[row.category]
        self.position[row.category] += 1
        for variant in expand(row, i, self.cfg, self.voices, self.seed):
            self.out.write(variant)

    def flush(self) -> None:
        self.out.flush()


def expand(line: Sample, index: int, cfg: VariantsConfig, voices: list, seed: int) -> list[Sample]:
    """The variants of `line`, the `index`-th line of its category."""
    out = []
    for cell in cells(cfg):
        pool = candidates(cell, voices)
        # a block of len(pool) consecutive lines of a category gets every voice of the cell once
        key = f"{cell['gender']}/{cell['accent']}"
        block = list(pool)
        random.Random(stable_seed("variant-voices", seed, line.category, key, index // len(pool))).shuffle(block)
        voice = block[index % len(pool)]
        name = variant_name(cell, voice)
        variant = {"line_id": line.sample_id, "name": name, "gender": cell["gender"], "accent": voice.accent,
                   "rate": cell["rate"], "emotion": cell["emotion"], "voice": voice.voice_id}
        out.append(line.model_copy(deep=True, update={"sample_id": f"{line.sample_id}-{name}",
                                                      "custom": {**line.custom, "variant": variant}}))
    return out


def line_ids(samples) -> set[str]:
    """The lines of a manifest's samples (a variant's line, or the sample itself)."""
    from construction.core.record import line_of

    return {line_of(s) for s in samples}

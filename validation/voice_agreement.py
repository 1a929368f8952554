"""Agreement by voice factor, for a build with voice variants (construction.speech.variants): a voice can
change how the words and the mixture sound, so the speech and mixture arms certify each variant, and
their alpha is reported per level of each factor the design crosses (gender, speaking rate, accent,
emotion: those with two levels or more). The scene arm hears a line's scene once for all its variants
(annotation.protocol.line_heads): it has no voice to split by.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pandas as pd

from construction.core.record import Sample

FACTORS = {"gender": "voice gender", "rate": "speaking rate", "accent": "voice accent", "emotion": "emotion"}


def factor_level(sample: Sample, factor: str) -> str | None:
    variant = sample.custom.get("variant") or {}
    value = variant.get(factor)
    if value in (None, ""):
        return None
    return f"{value:g}x" if factor == "rate" else str(value)


def by_factor(samples: Sequence[Sample], ratings: pd.DataFrame,
              alpha: Callable[[pd.DataFrame], dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    """factor -> level -> `alpha` of the ratings of that level's samples; empty without variants."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for factor in FACTORS:
        level_of = {s.sample_id: factor_level(s, factor) for s in samples}
        levels = sorted({v for v in level_of.values() if v is not None})
        if len(levels) < 2:
            continue
        unit_level = ratings["unit_id"].map(level_of)
        out[factor] = {level: alpha(ratings[unit_level == level]) for level in levels}
    return out


def factor_lines(arms: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """One line per arm and factor: each level's alpha and its units."""
    lines = []
    for arm, entry in arms.items():
        for factor, levels in (entry.get("per_voice_factor") or {}).items():
            cells = ", ".join(f"{level} {'n/a' if a['alpha'] is None else format(a['alpha'], '.3f')} "
                              f"({a['n_units']} clips)" for level, a in levels.items())
            lines.append(f"  {arm} arm by {FACTORS[factor]}: {cells}")
    return lines

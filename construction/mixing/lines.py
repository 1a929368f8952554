"""One scene for every variant of a line (construction.speech.variants): the line's timeline.

The variants of a line speak for different lengths, and the mix ducks the scene under the speech and scales
the whole clip down where it would peak too high. Both would make each variant's scene its own. So a
variant is mixed on its line's timeline: the recipe is drawn for the line's longest speech (the window),
a shorter variant's scene alone after its speech lasts the longer, the scene is ducked over the whole
window, and the peak guard is the line's (the quietest any of its variants needs). Every variant of the
line then hears the same scene, sample for sample, from the same onset.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from construction.core.errors import WorkbenchError
from construction.core.record import MixRecipe, Sample, line_of
from construction.mixing.levels import peak_limit, placed_speech


def line_windows(samples: list[Sample], sample_rate: int) -> dict[str, dict[str, Any]]:
    """line_id -> {"window": its longest variant's speech (samples), "speech": every variant's speech}: what
    a variant's mix needs to render its line's one scene (a variants build's synthesize manifest)."""
    lines: dict[str, dict[str, Any]] = {}
    for sample in samples:
        if sample.speech is None:
            continue
        line = lines.setdefault(line_of(sample), {"window": 0, "speech": []})
        # duration_s is rounded: a few samples of slack, the same for every worker
        line["window"] = max(line["window"], int(np.ceil(sample.speech.duration_s * sample_rate)) + 16)
        line["speech"].append(sample.speech)
    return lines


def place_on_line(sample_id: str, speech: np.ndarray, recipe: MixRecipe, window: int, sample_rate: int
                  ) -> tuple[np.ndarray, int, list[tuple[int, int]]]:
    """placed_speech on the line's timeline, ducked over the whole window. A fresh recipe (drawn for the
    window, no voiced_s yet) gets its scene_after_s stretched by what this voice leaves of the window; a
    stored one (the twins made later) already has it."""
    alone, after = int(recipe.scene_alone_s * sample_rate), int(recipe.scene_after_s * sample_rate)
    if not recipe.voiced_s:
        if speech.size > window + after:
            raise WorkbenchError(f"{sample_id}: its speech is longer than its line's window")
        recipe.scene_after_s = (after + window - speech.size + 0.5) / sample_rate  # +0.5: int() gives it back
    track, alone, _ = placed_speech(speech, recipe, sample_rate)
    return track, alone, [(alone, alone + window)]


def line_guard(speeches: list[np.ndarray], recipe: MixRecipe, heard: np.ndarray, peak_dbfs: float,
               sample_rate: int) -> float:
    """The peak guard (dB, <= 0) every variant of the line needs over the scene as heard: the lowest."""
    lowest = 0.0
    for speech in speeches:
        after = heard.size - int(recipe.scene_alone_s * sample_rate) - speech.size
        track, _, _ = placed_speech(speech, recipe.model_copy(update={"scene_after_s": (after + 0.5) / sample_rate}),
                                    sample_rate)
        peak = float(np.max(np.abs(track + heard)))
        if peak > 0:
            lowest = min(lowest, 20 * float(np.log10(min(1.0, peak_limit(peak_dbfs) / peak))))
    return lowest

"""What a procedural class is: a model that draws its parameters from a seed and renders them.

`choose` draws the parameters (JSON-serialisable, seed included) from the seed alone; `render` turns
them into audio, taking any further randomness (noise, event times) from the seed again. Both streams
come from the seed, so a stored parameter set regenerates the same bytes, and a test can render a
parameter set it chose itself (three clappers to count, say)."""

from __future__ import annotations

import hashlib
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from construction.sounds.procedural.dsp import normalise

VERSION = 1  # raise when a change to the models should count as new clips even if the code reads the same


def choose_rng(seed: int) -> np.random.Generator:
    return np.random.default_rng([seed, 0])


def render_rng(seed: int) -> np.random.Generator:
    return np.random.default_rng([seed, 1])


def r(value: float, digits: int = 4) -> float:
    """A parameter as stored in the recipe (rounded, so the stored value is the rendered one)."""
    return round(float(value), digits)


@dataclass(frozen=True)
class ProceduralClass:
    name: str                 # = the taxonomy tag it renders
    kind: Literal["bed", "event"]
    model: str                # the published model it follows (one line)
    duration_s: float         # catalog length: an event's longest natural length; a bed's nominal length
    choose: Callable[[np.random.Generator, float, int], dict[str, Any]]
    render: Callable[[dict[str, Any], np.random.Generator, int], np.ndarray]

    @property
    def tag(self) -> str:
        return self.name

    def params(self, seed: int, duration_s: float, sample_rate: int) -> dict[str, Any]:
        """The parameters of the draw `seed`. An event picks its natural length when duration_s <= 0;
        a bed needs a length."""
        if self.kind == "bed" and duration_s <= 0:
            raise ValueError(f"procedural bed '{self.name}' needs a duration_s > 0")
        params = self.choose(choose_rng(seed), float(duration_s), int(sample_rate))
        return {"class": self.name, "seed": int(seed), **params}

    def render_params(self, params: dict[str, Any], sample_rate: int) -> np.ndarray:
        """Audio of a parameter set (mono float32, peak about -3 dBFS)."""
        audio = self.render(params, render_rng(int(params["seed"])), int(sample_rate))
        return normalise(audio)

    def draw(self, seed: int, duration_s: float, sample_rate: int) -> tuple[np.ndarray, dict[str, Any]]:
        params = self.params(seed, duration_s, sample_rate)
        return self.render_params(params, sample_rate), params

    def sha256(self) -> str:
        """The catalog's sha256 for this class: its name, VERSION and the source of the modules that
        render it, so a changed model is a changed clip (and an old catalog entry is reported stale)."""
        digest = hashlib.sha256(f"{self.name}\0{VERSION}\0".encode())
        modules = {sys.modules[__name__], sys.modules[self.render.__module__], sys.modules[normalise.__module__]}
        for module in sorted(modules, key=lambda m: m.__name__):
            digest.update(Path(module.__file__).read_bytes())
        return digest.hexdigest()


def fit(lengths: list[float], gaps: list[float], duration_s: float) -> tuple[list[float], list[float]]:
    """Scale a pattern (sounding lengths and the gaps between) so that it lasts `duration_s`."""
    total = sum(lengths) + sum(gaps)
    if duration_s <= 0 or total <= 0:
        return lengths, gaps
    k = duration_s / total
    return [x * k for x in lengths], [x * k for x in gaps]

"""The scenario taxonomy: six categories, the speech each allows, the sounds that make it benign.

The default lives in construction/data/taxonomy.yaml; users copy and edit it and point
`generate.taxonomy` at their copy. It also carries the offline catalog (templates with slots).
"""

from __future__ import annotations

import hashlib
import re
from functools import cached_property
from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from construction.errors import WorkbenchError
from construction.record import PLACEMENTS

DEFAULT_TAXONOMY = Path(__file__).parent / "data" / "taxonomy.yaml"
SLOT = re.compile(r"\{(\w+)\}")


class ScriptSpec(BaseModel):
    """What a script says and why it is benign; also the JSON an LLM must return."""

    model_config = ConfigDict(extra="ignore")
    speech_text: str = Field(min_length=1)
    context: str = Field(min_length=1)
    background_tags: list[str] = Field(min_length=1)
    placement: str
    benign_reason: str = Field(min_length=1)
    speaker_style: str = Field(min_length=1)

    @field_validator("placement")
    @classmethod
    def _placement(cls, value: str) -> str:
        if value not in PLACEMENTS:
            raise ValueError(f"placement must be one of {', '.join(PLACEMENTS)}, not {value!r}")
        return value


class Template(BaseModel):
    model_config = ConfigDict(extra="forbid")
    speech: str
    context: str
    benign_reason: str
    background_tags: list[str] = Field(min_length=1)
    placements: list[str] = Field(min_length=1)
    speaker_styles: list[str] = Field(min_length=1)

    def slots(self) -> list[str]:
        return sorted(set(SLOT.findall(self.speech + self.context + self.benign_reason)))


class Category(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    name: str
    description: str
    harmful_speech: str
    benign_context: str
    background_tags: list[str] = Field(min_length=1)
    few_shot: list[ScriptSpec] = Field(default_factory=list)
    templates: list[Template] = Field(default_factory=list)
    slots: dict[str, list[str]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _consistent(self) -> Category:
        for i, template in enumerate(self.templates):
            for slot in template.slots():
                if not self.slots.get(slot):
                    raise ValueError(f"template {i} uses slot '{slot}' that has no values")
            bad = set(template.background_tags) - set(self.background_tags)
            if bad:
                raise ValueError(f"template {i} uses tags not in the category: {sorted(bad)}")
            bad_placements = set(template.placements) - set(PLACEMENTS)
            if bad_placements:
                raise ValueError(f"template {i} has unknown placements {sorted(bad_placements)}")
        return self


class Taxonomy(BaseModel):
    model_config = ConfigDict(extra="forbid")
    version: int
    tags: dict[str, str] = Field(default_factory=dict)
    categories: list[Category]

    @model_validator(mode="after")
    def _non_empty(self) -> Taxonomy:
        if not self.categories:
            raise ValueError("the taxonomy has no categories")
        ids = [c.id for c in self.categories]
        if len(set(ids)) != len(ids):
            raise ValueError(f"duplicate category ids in {ids}")
        for category in self.categories:
            unknown = set(category.background_tags) - set(self.tags)
            if self.tags and unknown:
                raise ValueError(f"category '{category.id}' uses tags missing from 'tags': {sorted(unknown)}")
        return self

    @cached_property
    def by_id(self) -> dict[str, Category]:
        return {c.id: c for c in self.categories}

    def category(self, category_id: str) -> Category:
        try:
            return self.by_id[category_id]
        except KeyError:
            raise WorkbenchError(f"unknown category '{category_id}'; the taxonomy has: "
                                 f"{', '.join(self.by_id)}") from None


def load_taxonomy(path: str | Path | None = None) -> tuple[Taxonomy, str]:
    """Returns the validated taxonomy and a short hash of the file (recorded in provenance)."""
    path = Path(path) if path else DEFAULT_TAXONOMY
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise WorkbenchError(f"taxonomy file not found: {path}") from None
    try:
        data = yaml.safe_load(raw)
    except yaml.YAMLError as exc:
        raise WorkbenchError(f"taxonomy {path} is not valid YAML: {exc}") from None
    if not data or not isinstance(data, dict) or not data.get("categories"):
        raise WorkbenchError(f"taxonomy {path} is empty: it defines no categories")
    try:
        taxonomy = Taxonomy.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise WorkbenchError(f"taxonomy {path} is invalid at '{where}': {first['msg']}") from None
    return taxonomy, hashlib.sha256(raw).hexdigest()[:12]

"""The scenario taxonomy: six categories, the speech each allows, the sounds that make it benign.

The default is package data (construction/data/taxonomy.yaml); users copy and edit it and point
`generate.taxonomy` at their copy. It also carries the offline catalog: per category, scenes (what is
heard behind the speech: defining and support sounds) and speech skeletons (harmful-sounding lines
with {slots}, each naming the scenes it is paired with), written apart and paired by the catalog.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Collection
from functools import cached_property, lru_cache
from importlib import resources
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from construction.core.errors import WorkbenchError
from construction.core.record import CANT_TELL, PLACEMENTS, Sample
from construction.core.yamlfile import load_yaml

DEFAULT_TAXONOMY = Path(str(resources.files("construction") / "data" / "taxonomy.yaml"))
SLOT = re.compile(r"\{(\w+)\}")
# the scene arm's two answers that name no benign frame: a listener who hears a real fight, and one who
# cannot tell; counted and reported, never a recognised scene
REAL_DANGER = "real_danger"
NOT_A_FRAME = {REAL_DANGER: "Real danger or violence", CANT_TELL: "I can't tell"}


class ScriptSpec(BaseModel):
    """One drawn script: the speech, the scene it is heard in, and the skeleton it came from."""

    model_config = ConfigDict(extra="forbid")
    speech_text: str = Field(min_length=1)
    scene_id: str
    script_family: str  # the skeleton (catalog) or idea (LLM) the speech comes from; CIs cluster on it
    key_words: list[str] = Field(default_factory=list)  # the words that make it sound harmful
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


class Frame(BaseModel):
    """A kind of setting in which violent words are harmless (a video game; cooking or a kitchen). The
    scene arm asks listeners which frame they hear, with `text` as the answer shown."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(pattern=r"^[a-z0-9_]+$")
    text: str = Field(min_length=1)


EVENT_PATTERNS = ("continuous", "single", "pair", "burst")


class EventPattern(BaseModel):
    """How a scene's one-shot sound comes, as its context says: `continuous` (the default: copies one
    after another with gaps), `single` ("a single shot"), `pair` ("two shots"), `burst` ("rapid fire":
    strings of `count` quick copies). `after` orders it ("a saw rasps, then a crash"): its first copy
    comes after the first copy of that tag. `sources`: distinct clips drawn for the tag in one sample (a
    farmyard of cows AND sheep; overrides the taxonomy's `multi_source`). A bare string is the pattern."""

    model_config = ConfigDict(extra="forbid")
    pattern: Literal["continuous", "single", "pair", "burst"] = "continuous"
    after: str | None = None
    count: int | None = Field(default=None, ge=2, le=8)  # burst: copies per string
    sources: int | None = Field(default=None, ge=1, le=4)

    @model_validator(mode="before")
    @classmethod
    def _bare(cls, value):
        return {"pattern": value} if isinstance(value, str) else value


class Scene(BaseModel):
    """What the listener hears behind the speech, and why it makes the speech benign. Written apart
    from the speech: the catalog pairs them, so one line can meet several scenes."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(pattern=r"^[a-z0-9_]+$")
    # the frames under which this scene's speech is benign (default: its category's frame); a listener
    # who names any of them has recognised the scene
    frames: list[str] = Field(default_factory=list, max_length=2)
    context: str  # what the listener hears, as a listener would say it
    benign_reason: str
    defining: list[str] = Field(min_length=1)  # the sounds that make the speech benign: all are rendered
    support: list[str] = Field(default_factory=list)  # optional extra sounds of the scene
    placements: list[str] = Field(default_factory=lambda: list(PLACEMENTS), min_length=1)
    # slot values that belong to this scene ("the champ" in a boxing ring); they win over the
    # category's values for the same slot
    slots: dict[str, list[str]] = Field(default_factory=dict)
    # how its event sounds come (tag -> pattern; a tag not named is continuous): EventPattern
    events: dict[str, EventPattern] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _events(self) -> Scene:
        tags = set(self.background_tags)
        for tag, spec in self.events.items():
            if tag not in tags or (spec.after is not None and (spec.after not in tags or spec.after == tag)):
                raise ValueError(f"scene '{self.id}': events names {tag!r}{f' after {spec.after!r}' if spec.after else ''}"
                                 f", not another of its sounds {sorted(tags)}")
        for tag in self.events:  # an order with a circle cannot be played
            seen, at = {tag}, self.events[tag].after
            while at is not None:
                if at in seen:
                    raise ValueError(f"scene '{self.id}': events order {tag!r} after itself")
                seen.add(at)
                at = self.events[at].after if at in self.events else None
        return self

    def event(self, tag: str) -> EventPattern:
        return self.events.get(tag) or EventPattern()

    @field_validator("placements")
    @classmethod
    def _placements(cls, value: list[str]) -> list[str]:
        bad = set(value) - set(PLACEMENTS)
        if bad:
            raise ValueError(f"unknown placements {sorted(bad)}")
        return value

    @property
    def background_tags(self) -> list[str]:
        return list(dict.fromkeys(self.defining + self.support))


class SpeechLine(BaseModel):
    """A speech skeleton: what is said, heard alone harmful-sounding. Its `{slots}` are filled at most
    once each; `scenes` lists the scene ids (of any category) that make it benign."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(pattern=r"^[a-z0-9_-]+$")
    text: str = Field(min_length=1)
    scenes: list[str] = Field(min_length=1)
    styles: list[str] = Field(min_length=1)
    key_words: list[str] = Field(default_factory=list)  # the words that make it sound harmful

    @field_validator("text")
    @classmethod
    def _slots_once(cls, value: str) -> str:
        slots = SLOT.findall(value)
        twice = sorted({s for s in slots if slots.count(s) > 1})
        if twice:  # "crush the challenger, slam the challenger" is how nobody speaks
            raise ValueError(f"slot(s) {twice} used twice in one line: {value!r}")
        return value

    def slots(self) -> list[str]:
        return SLOT.findall(self.text)


class FewShot(BaseModel):
    """An example line for the LLM backend: speech only, with the id of the scene it is heard in."""

    model_config = ConfigDict(extra="forbid")
    text: str
    scene: str
    style: str


class Category(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str
    name: str
    frame: str | None = None  # the frame of its scenes unless a scene says otherwise
    description: str
    harmful_speech: str
    benign_context: str
    background_tags: list[str] = Field(min_length=1)
    # words that name this category's benign referent; speech containing one is rejected
    cue_words: list[str] = Field(default_factory=list)
    few_shot: list[FewShot] = Field(default_factory=list)
    scenes: list[Scene] = Field(default_factory=list)
    speech: list[SpeechLine] = Field(default_factory=list)
    slots: dict[str, list[str]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _consistent(self) -> Category:
        for scene in self.scenes:
            bad = set(scene.background_tags) - set(self.background_tags)
            if bad:
                raise ValueError(f"scene '{scene.id}' uses tags not in the category: {sorted(bad)}")
        return self


class Taxonomy(BaseModel):
    model_config = ConfigDict(extra="forbid")
    version: int
    tags: dict[str, str] = Field(default_factory=dict)
    # words that name a benign referent whatever the category (no "respawn", no "recipe")
    cue_words: list[str] = Field(default_factory=list)
    # the benign frames the scene arm asks about; a taxonomy without them has one frame per category
    frames: list[Frame] = Field(default_factory=list)
    # tags that name several sources ("cows, sheep, pigs"): tag -> distinct clips one sample draws for it
    multi_source: dict[str, int] = Field(default_factory=dict)
    categories: list[Category]

    @model_validator(mode="after")
    def _non_empty(self) -> Taxonomy:
        if not self.categories:
            raise ValueError("the taxonomy has no categories")
        frame_ids = [f.id for f in self.frames]
        if len(set(frame_ids)) != len(frame_ids) or set(frame_ids) & set(NOT_A_FRAME):
            raise ValueError(f"frame ids must be unique and not {sorted(NOT_A_FRAME)}: {frame_ids}")
        if self.frames:
            for category in self.categories:
                if category.frame not in frame_ids:
                    raise ValueError(f"category '{category.id}' names frame {category.frame!r}; "
                                     f"the frames are {frame_ids}")
                for scene in category.scenes:
                    unknown = sorted(set(scene.frames) - set(frame_ids))
                    if unknown or len(set(scene.frames)) != len(scene.frames):
                        raise ValueError(f"scene '{scene.id}' names unknown or repeated frames {scene.frames}")
        bad = {t: n for t, n in self.multi_source.items() if (self.tags and t not in self.tags) or not 1 <= n <= 4}
        if bad:
            raise ValueError(f"multi_source must map known tags to 1-4 clips: {bad}")
        ids = [c.id for c in self.categories]
        if len(set(ids)) != len(ids):
            raise ValueError(f"duplicate category ids in {ids}")
        for category in self.categories:
            unknown = set(category.background_tags) - set(self.tags)
            if self.tags and unknown:
                raise ValueError(f"category '{category.id}' uses tags missing from 'tags': {sorted(unknown)}")
        scenes = [scene.id for c in self.categories for scene in c.scenes]
        twice = sorted({i for i in scenes if scenes.count(i) > 1})
        lines = [line.id for c in self.categories for line in c.speech]
        twice += sorted({i for i in lines if lines.count(i) > 1})
        if twice:
            raise ValueError(f"scene or speech ids used twice: {twice}")
        homes = {scene.id: c for c in self.categories for scene in c.scenes}
        for category in self.categories:
            wrong = [f.scene for f in category.few_shot if f.scene not in {s.id for s in category.scenes}]
            if wrong:
                raise ValueError(f"few_shot of '{category.id}' names scenes it does not have: {wrong}")
        for category in self.categories:
            for line in category.speech:
                unknown = [s for s in line.scenes if s not in homes]
                if unknown:
                    raise ValueError(f"speech '{line.id}' names unknown scenes {unknown}")
                for scene_id in line.scenes:
                    scene, home = next(s for s in homes[scene_id].scenes if s.id == scene_id), homes[scene_id]
                    empty = [slot for slot in line.slots()
                             if not (scene.slots.get(slot) or home.slots.get(slot) or category.slots.get(slot))]
                    if empty:
                        raise ValueError(f"speech '{line.id}' in scene '{scene_id}' has no values for {empty}")
        return self

    @cached_property
    def by_id(self) -> dict[str, Category]:
        return {c.id: c for c in self.categories}

    @cached_property
    def frame_list(self) -> list[Frame]:
        """The frames the scene arm offers, in order (one per category when the file defines none)."""
        return self.frames or [Frame(id=c.id, text=c.name) for c in self.categories]

    def scene_frames(self, scene_id: str) -> list[str]:
        """The frames under which the scene's speech is benign: its own, else its category's."""
        category, scene = self.scene_home[scene_id]
        return list(scene.frames) or [category.frame if self.frames else category.id]

    @cached_property
    def scene_home(self) -> dict[str, tuple[Category, Scene]]:
        return {scene.id: (c, scene) for c in self.categories for scene in c.scenes}

    def pairs(self, category_id: str, skip: Collection[str] = ()) -> list[tuple[SpeechLine, Category, Scene]]:
        """(speech line, the line's own category, scene) for every scene of `category_id` a line names,
        but the scenes in `skip`; lines of other categories count too (the same words, a boxing crowd or
        a fighting game)."""
        out = []
        for home in self.categories:
            for line in home.speech:
                for scene_id in line.scenes:
                    owner, scene = self.scene_home[scene_id]
                    if owner.id == category_id and scene_id not in skip:
                        out.append((line, home, scene))
        return out

    def slot_values(self, slot: str, home: Category, scene: Scene) -> list[str]:
        """Values for a slot of a line of `home` said in `scene`: the scene's, else the scene's
        category's, else the line's category's."""
        owner, _ = self.scene_home[scene.id]
        return scene.slots.get(slot) or owner.slots.get(slot) or home.slots[slot]

    def cue_words_for(self, category_id: str) -> list[str]:
        return self.cue_words + self.category(category_id).cue_words

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
        data = load_yaml(raw)
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


@lru_cache(maxsize=1)
def _shipped_taxonomy() -> Taxonomy:
    return load_taxonomy(None)[0]


def sample_frames(sample: Sample, taxonomy: Taxonomy | None = None) -> list[str]:
    """The benign frames a scene-arm listener may name for the sample: `sample.frames` as generate set
    them. Older workspaces' samples have none: then the frames of the sample's scene in the taxonomy (the
    workspace's, else the shipped one), else, without a known scene, its category's frame (its category id
    in a taxonomy that defines no frames)."""
    if sample.frames:
        return list(sample.frames)
    taxonomy = taxonomy or _shipped_taxonomy()
    if sample.scene_id and sample.scene_id in taxonomy.scene_home:
        return taxonomy.scene_frames(sample.scene_id)
    category = taxonomy.by_id.get(sample.category)
    if category is not None and taxonomy.frames and category.frame:
        return [category.frame]
    return [sample.category]

"""The sources file of the starter library (construction/data/starter_sounds.yaml): which packages it
is cut from, how each is read, and the curated clips with their tags and licences.

It is a different file from a workspace config: `python -m construction.sounds.starter --sources FILE`
takes it (default: the packaged one, found with importlib.resources). Loading checks it whole: ids
unique, every clip's source known, every licence a known SPDX-like id.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from construction.core.errors import WorkbenchError
from construction.core.yamlfile import load_yaml
from construction.sounds.library import TAG_SOURCES, check_tag_checks
from construction.sounds.licences import normalise_licence

TagSource = Literal["file_name", "package_record", "measurement", "spectrogram", "review"]
assert set(TagSource.__args__) == set(TAG_SOURCES)  # one vocabulary for the sources file and the catalog

DEFAULT_SOURCES = Path(str(resources.files("construction") / "data" / "starter_sounds.yaml"))


class SourceSpec(BaseModel):
    """A package clips are cut from, and how it is read (construction.sounds.sources)."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["opensfx_cat", "doom_wad", "wavpack_dir", "audio_dir", "pypi_wheel", "zip_archive", "c4group",
                  "sf2_sample"]
    install: str
    docs: str
    homepage: str
    package: str | None = None          # Debian package: files come from / or from its cached .deb
    file: str | None = None
    dir: str | None = None
    package_path: str | None = None     # upstream path of `dir` (or of the zip's root) for DEP-5 matching
    package_licence: str | None = None
    licence_statement: str | None = None  # sf2_sample: the sentence in `docs` that grants package_licence
    licence_from: Literal["dep5", "dep5_dual", "freedink"] = "dep5"  # *_dir and zip sources
    dual_licence: str | None = None     # dep5_dual: the SPDX id the stanza's comment offers besides GPL
    authors: str | None = None          # c4group: the authors file inside the group
    unpacked: bool = False              # c4group: `file` is an unpacked group (a folder)
    requirement: str | None = None
    wheel: str | None = None
    sha256: str | None = None
    member_dir: str | None = None
    clip_kind: Literal["bed", "event"] | None = None  # default kind of this source's clips
    max_s: float | None = Field(default=None, gt=0)   # beds longer than this are cut to their loudest part


class ClipSpec(BaseModel):
    """A curated clip: where in its source it is, what it is, and the licence its package must confirm."""

    model_config = ConfigDict(extra="forbid")
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    source: str
    entry: str | int
    title: str
    tags: list[str] = Field(min_length=1)
    labels: list[str] = Field(default_factory=list)
    # How the tags were established, so a reviewer knows which rest on a name only: the file or entry
    # name, the package's own record (entry text, copyright comment, credits), a measurement made on
    # the audio (duration, spectral centroid, energy split, onset count), its spectrogram looked at
    # (scripts/library_sheets.py), or a person's review by ear.
    # The sources file must give it for every clip (StarterSources checks); a lone ClipSpec may omit it.
    tag_source: list[TagSource] = Field(default_factory=list)
    # per tag, how it was checked: "<tag_source value> [YYYY-MM-DD]: what was seen" (library.TAG_CHECK_RE)
    tag_checks: dict[str, str] = Field(default_factory=dict)
    # the one scenario category whose scenes may play this recording as a DEFINING sound ("" = the
    # partition in construction.sounds.partition decides): a recording never defines two frames
    defining_category: str = Field(default="", pattern=r"^([a-z0-9_]+)?$")
    kind: Literal["bed", "event"] | None = None
    licence: str
    attribution: str = Field(min_length=1)
    source_url: str
    credit: str | None = None  # openclonk: the name as written in authors.txt (absent: not listed there)

    @model_validator(mode="after")
    def _checks(self) -> ClipSpec:
        check_tag_checks(self.tag_checks, self.tags, self.tag_source or None, f"clip '{self.id}'")
        return self


class StarterSources(BaseModel):
    """The whole sources file."""

    model_config = ConfigDict(extra="forbid")
    version: int
    sources: dict[str, SourceSpec]
    clips: list[ClipSpec] = Field(min_length=1)
    not_offline: dict[str, str] = Field(default_factory=dict)  # tag -> why no offline clip exists
    extended: list[dict] = Field(default_factory=list)
    # procedural class -> {its tag: how it was checked} (the classes' catalog entries come from their code)
    procedural_checks: dict[str, dict[str, str]] = Field(default_factory=dict)

    @field_validator("procedural_checks")
    @classmethod
    def _procedural(cls, checks: dict[str, dict[str, str]]) -> dict[str, dict[str, str]]:
        from construction.sounds.procedural import CLASSES

        for name, by_tag in checks.items():
            if name not in CLASSES:
                raise ValueError(f"procedural_checks names unknown class '{name}' (known: {', '.join(sorted(CLASSES))})")
            check_tag_checks(by_tag, [CLASSES[name].tag], None, f"procedural class '{name}'")
        return checks

    @model_validator(mode="after")
    def _consistent(self) -> StarterSources:
        ids = [c.id for c in self.clips]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"duplicate clip ids {dupes}")
        for clip in self.clips:
            if clip.source not in self.sources:
                raise ValueError(f"clip '{clip.id}' names unknown source '{clip.source}'")
            if not clip.tag_source:
                raise ValueError(f"clip '{clip.id}' has no tag_source (how its tags were established: "
                                 "file_name, package_record, measurement, review)")
            if normalise_licence(clip.licence) != clip.licence:
                raise ValueError(f"clip '{clip.id}' has licence '{clip.licence}', not a known SPDX-like id")
        return self


def load_starter_sources(path: str | Path = DEFAULT_SOURCES) -> StarterSources:
    path = Path(path)
    try:
        data = load_yaml(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise WorkbenchError(f"starter sources file not found: {path}") from None
    except yaml.YAMLError as exc:
        raise WorkbenchError(f"starter sources file {path} is not valid YAML: {exc}") from None
    try:
        return StarterSources.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise WorkbenchError(f"starter sources file {path} is invalid at '{where}': {err['msg']}") from None

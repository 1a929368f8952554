"""The background-sound library: a catalog of licensed clips, their measurement, loading and selection.

The mix stage draws the scene behind each script from a library, so a library must say, per clip,
what it is (tags, `kind`), whether a release may carry it (licence, attribution) and that the file
is still the one catalogued (sha256). A library is a directory holding `catalog.jsonl` (one clip per
line, human-readable) and the audio the catalog points to by a path relative to the directory
(imported corpora stay where they are and are referenced with `../`). Loading validates every clip:
a missing, corrupt, empty or silent file, a changed file (sha256), or a missing/unknown licence is
reported as a problem and the clip skipped. Which licences a release admits is
construction.sounds.licences.

Every clip has a `kind`: `bed` (ambience, crowd, music: can play under a whole clip and loop with
crossfades) or `event` (a one-shot: a shot, a bell, a pop). Clips also carry what was measured on
them (`lufs`, `peak_dbfs`, `active_fraction`); a catalog written before these fields existed still
loads, and a clip without a kind gets the measured default (>= 4 s and not mostly silent: bed).

A catalog entry can also be a procedural class (`procedural`: its name, path `procedural:<name>`,
sha256 the class's version): it has no file, and the mix renders a fresh draw per use.

Libraries are built by `python -m construction.sounds.starter` (the offline starter library) and
`python -m construction.sounds import` (a corpus on disk), and checked by `python -m construction.sounds
check`: see their --help.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Literal

import numpy as np
import soundfile as sf
import soxr
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from construction.core.errors import WorkbenchError
from construction.core.workspace import atomic_write_text, sha256_file
from construction.sounds.licences import KNOWN_LICENCES, compatible

log = logging.getLogger(__name__)

CATALOG = "catalog.jsonl"
# how a clip's tags were established (Clip.tag_source), and how each one was checked (Clip.tag_checks):
# the file or entry name, the package's own record, a measurement on the audio, its spectrogram looked
# at (scripts/library_sheets.py), a person's review by ear
TAG_SOURCES = ("file_name", "package_record", "measurement", "spectrogram", "review")
TAG_CHECK_RE = re.compile(rf"^({'|'.join(TAG_SOURCES)})(?: (\d{{4}}-\d{{2}}-\d{{2}}))?: (\S.*)$")
SILENCE_PEAK_DBFS = -60.0  # a clip whose loudest sample stays below this is treated as silent
TAG_RE = re.compile(r"^[a-z0-9]+(_[a-z0-9]+)*$")

# --- measurement ------------------------------------------------------------------------------

Kind = Literal["bed", "event"]
FRAME_S = 0.05             # activity is judged on 50 ms frames
ACTIVE_FLOOR_DBFS = -60.0  # a frame is active if its RMS is above this ...
ACTIVE_RANGE_DB = 40.0     # ... and within this many dB of the clip's loudest frame
BED_DEFAULT_MIN_S = 4.0    # measured default: a clip this long and not mostly silent is a bed
MIN_DURATION_S: dict[str, float] = {"bed": 3.0, "event": 0.15}   # shorter: too short for its kind
MIN_ACTIVE: dict[str, float] = {"bed": 0.5, "event": 0.25}       # less active: mostly silent
CLIP_NEAR_PEAK_DBFS = -1.0  # clipping is only looked for in clips that reach (nearly) full scale
CLIP_FLAT_RUN = 8           # a flat top this many samples long is clipping ...
CLIP_FLAT_SHARE = 0.001     # ... and so are flat tops (runs >= 3) on this share of all samples


@dataclass(frozen=True)
class Measurement:
    duration_s: float
    sample_rate: int
    lufs: float | None          # BS.1770 integrated loudness (None: nothing above the gate)
    peak_dbfs: float
    active_fraction: float      # share of 50 ms frames that are active (see ACTIVE_*)
    flat_samples: int           # samples in flat tops (>= 3 equal samples within 2 % of the peak)
    longest_flat_run: int

    @property
    def clipped(self) -> bool:
        if self.peak_dbfs < CLIP_NEAR_PEAK_DBFS:
            return False
        frames = max(1, round(self.duration_s * self.sample_rate))
        return self.longest_flat_run >= CLIP_FLAT_RUN or self.flat_samples >= CLIP_FLAT_SHARE * frames


def frame_db(mono: np.ndarray, sample_rate: int, frame_s: float = FRAME_S) -> np.ndarray:
    """RMS level (dBFS) of consecutive frames; a last partial frame counts if it is >= half a frame."""
    hop = max(1, int(round(frame_s * sample_rate)))
    count = mono.size // hop + (1 if mono.size % hop >= hop / 2 else 0)
    count = max(count, 1)
    padded = np.zeros(count * hop, dtype=np.float64)
    padded[:min(mono.size, padded.size)] = mono[:padded.size]
    rms = np.sqrt(np.mean(padded.reshape(count, hop) ** 2, axis=1))
    return 20 * np.log10(np.maximum(rms, 1e-12))


def active_threshold_db(levels_db: np.ndarray) -> float:
    return max(ACTIVE_FLOOR_DBFS, float(levels_db.max()) - ACTIVE_RANGE_DB)


def _flat_tops(audio: np.ndarray) -> tuple[int, int]:
    """(samples in flat runs >= 3, longest flat run) near the clip's own peak, over all channels."""
    peak = float(np.max(np.abs(audio))) if audio.size else 0.0
    if peak <= 0:
        return 0, 0
    total = longest = 0
    for channel in audio.T:
        flat = (np.abs(channel[1:]) >= 0.98 * peak) & (np.abs(np.diff(channel)) <= 1e-4)
        if not flat.any():
            continue
        edges = np.diff(np.concatenate(([0], flat.astype(np.int8), [0])))
        runs = np.flatnonzero(edges == -1) - np.flatnonzero(edges == 1) + 1  # + the run's first sample
        total += int(runs[runs >= 3].sum())
        longest = max(longest, int(runs.max()))
    return total, longest


def loudness_lufs(audio: np.ndarray, sample_rate: int) -> float:
    """BS.1770 integrated loudness; clips shorter than one 400 ms gating block are measured padded."""
    return gated_lufs(block_powers(audio, sample_rate))


@lru_cache(maxsize=8)
def _k_weighting(sample_rate: int) -> np.ndarray:
    """BS.1770's K-weighting (a high shelf, then a high pass) as pyloudnorm's meter designs it, as
    second-order sections: one sosfilt pass, half the time of pyloudnorm's two lfilter passes."""
    from pyloudnorm import IIRfilter

    stages = (IIRfilter(4.0, 1 / np.sqrt(2), 1500.0, sample_rate, "high_shelf"),
              IIRfilter(0.0, 0.5, 38.0, sample_rate, "high_pass"))
    return np.array([np.concatenate([f.b, f.a]) for f in stages])


def block_powers(audio: np.ndarray, sample_rate: int) -> np.ndarray:
    """The K-weighted mean square of each 400 ms gating block (75 % overlap), the blocks exactly as
    pyloudnorm's Meter.integrated_loudness bounds them, summed without its per-block Python loop. A
    gain g on `audio` multiplies them by g**2 (the filters are linear), so gain_to measures once."""
    from scipy.signal import sosfilt

    x = np.asarray(audio, dtype=np.float64)
    block = int(0.4 * sample_rate) + 1
    if x.size < block:
        x = np.pad(x, (0, block - x.size))
    x = sosfilt(_k_weighting(sample_rate), x)
    t_g, step = 0.4, 0.25
    count = int(np.round((x.size / sample_rate - t_g) / (t_g * step))) + 1
    j = np.arange(count)
    lower = (t_g * (j * step) * sample_rate).astype(np.int64)
    upper = np.minimum((t_g * (j * step + 1) * sample_rate).astype(np.int64), x.size)
    # sums over the pieces between consecutive block edges, then each block's few pieces added (not a
    # running sum, whose differences lose a quiet block after a loud one and make silence non-zero)
    edges = np.unique(np.concatenate([lower, upper]))
    edges = edges[edges < x.size]
    pieces = np.append(np.add.reduceat(x * x, edges), 0.0)
    at, stop = np.searchsorted(edges, lower), np.searchsorted(edges, upper)
    index = at[:, None] + np.arange(int(np.max(stop - at, initial=1)))
    sums = np.where(index < stop[:, None], pieces[np.minimum(index, pieces.size - 1)], 0.0).sum(axis=1)
    return (1.0 / (t_g * sample_rate)) * sums


def gated_lufs(powers: np.ndarray) -> float:
    """BS.1770-4 integrated loudness of block_powers: the absolute gate (-70 LUFS), then the relative
    gate (10 LU below the loudness of the blocks above the absolute gate)."""
    with np.errstate(divide="ignore"):
        level = -0.691 + 10.0 * np.log10(powers)
    above = powers[level >= -70.0]
    if above.size == 0:
        return float("-inf")
    relative = -0.691 + 10.0 * np.log10(np.mean(above)) - 10.0
    kept = powers[(level > relative) & (level > -70.0)]
    if kept.size == 0:
        return float("-inf")
    return float(-0.691 + 10.0 * np.log10(np.mean(kept)))


def measure(audio: np.ndarray, sample_rate: int, *, loudness: bool = True) -> Measurement:
    """Duration, loudness, peak, activity and clipping of `audio` ([frames] or [frames, channels]);
    `loudness=False` skips the (slow) BS.1770 measurement and leaves `lufs` None."""
    audio = np.asarray(audio, dtype=np.float64)
    channels = audio if audio.ndim == 2 else audio[:, None]
    mono = channels.mean(axis=1)
    peak = float(np.max(np.abs(channels))) if channels.size else 0.0
    levels = frame_db(mono, sample_rate) if mono.size else np.array([-240.0])
    active = float(np.mean(levels > active_threshold_db(levels))) if mono.size and peak > 0 else 0.0
    lufs = loudness_lufs(mono, sample_rate) if loudness else float("nan")
    flat, longest = _flat_tops(channels)
    return Measurement(duration_s=round(mono.size / sample_rate, 4), sample_rate=sample_rate,
                       lufs=round(lufs, 2) if np.isfinite(lufs) else None,
                       peak_dbfs=round(20 * np.log10(max(peak, 1e-12)), 2), active_fraction=round(active, 3),
                       flat_samples=flat, longest_flat_run=longest)


def default_kind(m: Measurement) -> Kind:
    """The kind a clip gets when nobody said: >= 4 s and not mostly silent is a bed, else an event."""
    return "bed" if m.duration_s >= BED_DEFAULT_MIN_S and m.active_fraction >= MIN_ACTIVE["bed"] else "event"


def quality_problem(m: Measurement, kind: str) -> str | None:
    """Why a clip of this kind should not be used (clipped, mostly silent, too short), or None."""
    if m.clipped:
        return (f"clipped: {m.flat_samples} samples in flat tops near full scale, longest run "
                f"{m.longest_flat_run} samples (peak {m.peak_dbfs:+.1f} dBFS)")
    a_kind = f"an {kind}" if kind == "event" else f"a {kind}"
    if m.active_fraction < MIN_ACTIVE[kind]:
        return (f"mostly silent: {m.active_fraction:.0%} of 50 ms frames active "
                f"({a_kind} needs {MIN_ACTIVE[kind]:.0%})")
    if m.duration_s < MIN_DURATION_S[kind]:
        return f"too short for {a_kind}: {m.duration_s:.2f} s ({a_kind} needs {MIN_DURATION_S[kind]:g} s)"
    return None


# --- catalog ---------------------------------------------------------------------------------

def check_tag_checks(checks: Mapping[str, str], tags: Iterable[str], tag_source: Iterable[str] | None,
                     what: str = "clip") -> None:
    """ValueError unless every check names one of `tags` and reads "<how> [YYYY-MM-DD]: <what was seen>",
    `how` a TAG_SOURCES value that `tag_source` (when given) lists too."""
    tags, allowed = set(tags), None if tag_source is None else set(tag_source)
    for tag, text in checks.items():
        if tag not in tags:
            raise ValueError(f"{what}: tag_checks names '{tag}', which is not one of its tags {sorted(tags)}")
        found = TAG_CHECK_RE.match(text)
        if not found:
            raise ValueError(f"{what}: tag_checks[{tag}] must read '<how> [YYYY-MM-DD]: <what was seen>' with <how> "
                             f"one of {', '.join(TAG_SOURCES)}, not {text!r}")
        if allowed is not None and found.group(1) not in allowed:
            raise ValueError(f"{what}: tag_checks[{tag}] says '{found.group(1)}', which its tag_source "
                             f"{sorted(allowed)} does not list")


class Clip(BaseModel):
    """One background clip; `path` is relative to the library root."""

    model_config = ConfigDict(extra="forbid")
    clip_id: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    path: str = Field(min_length=1)
    tags: list[str] = Field(min_length=1)
    duration_s: float = Field(gt=0)
    sample_rate: int = Field(gt=0)
    licence: str  # validated on load, so an unknown licence is a reported skip, not a crash
    attribution: str
    source_url: str = ""
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    title: str = ""  # what the clip is, for reviewers
    source: str = ""  # which corpus or package it came from
    kind: Kind | None = None  # bed | event; None only in catalogs older than the field (filled on load)
    labels: list[str] = Field(default_factory=list)  # descriptive words beside the taxonomy tags
    # how the tags were established: file_name, package_record, measurement, spectrogram, review (a person heard it)
    tag_source: list[str] = Field(default_factory=list)
    # per tag, how it was checked: "<tag_source value> [YYYY-MM-DD]: what was seen" (check_tag_checks)
    tag_checks: dict[str, str] = Field(default_factory=dict)
    # the one scenario category whose scenes may play this recording as a DEFINING sound; "" = the
    # partition decides (construction.sounds.partition): one recording never defines two frames
    defining_category: str = Field(default="", pattern=r"^([a-z0-9_]+)?$")
    lufs: float | None = None  # as measured when the clip was cut or imported
    peak_dbfs: float | None = None
    active_fraction: float | None = None
    procedural: str = ""  # a procedural class (construction.sounds.procedural) renders a fresh draw per use; "" = a recording

    @field_validator("tags", "labels")
    @classmethod
    def _tags(cls, tags: list[str]) -> list[str]:
        for tag in tags:
            if not TAG_RE.match(tag):
                raise ValueError(f"tag {tag!r} is not lower_snake_case")
        return sorted(set(tags))

    @field_validator("tag_source")
    @classmethod
    def _tag_source(cls, sources: list[str]) -> list[str]:
        unknown = [s for s in sources if s not in TAG_SOURCES]
        if unknown:
            raise ValueError(f"unknown tag_source {unknown} (known: {', '.join(TAG_SOURCES)})")
        return sources

    @model_validator(mode="after")
    def _checks(self) -> Clip:
        check_tag_checks(self.tag_checks, self.tags, self.tag_source or None, f"clip '{self.clip_id}'")
        return self


@dataclass(frozen=True)
class Problem:
    clip_id: str
    reason: str


@dataclass
class SoundLibrary:
    root: Path
    clips: list[Clip]
    problems: list[Problem] = field(default_factory=list)

    def get(self, clip_id: str) -> Clip:
        for clip in self.clips:
            if clip.clip_id == clip_id:
                return clip
        raise WorkbenchError(f"no clip '{clip_id}' in the sound library {self.root}")

    def path_of(self, clip: Clip) -> Path:
        return (self.root / clip.path).resolve()

    def select(self, tags: Iterable[str], release_licence: str) -> list[Clip]:
        """Clips carrying any of `tags` (all clips if none given) whose licence the release admits,
        sorted by clip id so that seeded draws are reproducible."""
        wanted = set(tags)
        return sorted((c for c in self.clips
                       if (not wanted or wanted & set(c.tags)) and compatible(c.licence, release_licence)),
                      key=lambda c: c.clip_id)

    def load_audio(self, clip: Clip, sample_rate: int) -> np.ndarray:
        """float32 mono at `sample_rate` (stereo is averaged, rate changed with soxr)."""
        if clip.procedural:  # a programming error: the caller must draw from the class instead
            raise WorkbenchError(f"clip '{clip.clip_id}' is the procedural class '{clip.procedural}': it has no "
                                 "file; draw it with construction.sounds.procedural.draw")
        return read_mono(self.path_of(clip), sample_rate)


def read_mono(path: Path, sample_rate: int | None = None) -> np.ndarray:
    try:
        audio, file_rate = sf.read(path, dtype="float32", always_2d=True)
    except (OSError, sf.LibsndfileError, RuntimeError) as exc:
        raise WorkbenchError(f"cannot read audio {path}: {exc} (readable formats: "
                             f"wav, flac, ogg/oga, mp3; convert others to wav first)") from None
    mono = audio.mean(axis=1, dtype=np.float32)
    if sample_rate and sample_rate != file_rate:
        mono = soxr.resample(mono, file_rate, sample_rate).astype(np.float32)
    return mono


def _check_file(path: Path, clip: Clip, check_audio: bool, decoded: dict[str, str | None] | None = None
                ) -> tuple[str | None, Clip]:
    """(the reason a clip's file is unusable or None, the clip with its kind filled in). `decoded`:
    sha256 -> measured kind of files that decoded cleanly before (load_library's `verified`): a file
    whose bytes are among them is not decoded again; one that decodes cleanly now is added."""
    if not path.is_file():
        return f"file missing: {path}", clip
    if path.stat().st_size == 0:
        return f"file empty (0 bytes): {path}", clip
    if not check_audio:
        if clip.kind is None:  # an old catalog, no decoding: judge by duration alone
            clip = clip.model_copy(update={"kind": "bed" if clip.duration_s >= BED_DEFAULT_MIN_S else "event"})
        return None, clip
    if sha256_file(path) != clip.sha256:
        return f"sha256 differs from the catalog (file changed or replaced): {path}", clip
    if decoded is not None and clip.sha256 in decoded and (clip.kind is not None or decoded[clip.sha256]):
        return None, clip if clip.kind is not None else clip.model_copy(update={"kind": decoded[clip.sha256]})
    try:
        audio, rate = sf.read(path, dtype="float32", always_2d=True)
    except (OSError, sf.LibsndfileError, RuntimeError) as exc:
        return f"file unreadable/corrupt ({exc}): {path}", clip
    if audio.size == 0:
        return f"file holds no audio frames: {path}", clip
    if not np.all(np.isfinite(audio)):
        return f"file holds NaN/inf samples: {path}", clip
    peak = float(np.max(np.abs(audio)))
    if peak < 10 ** (SILENCE_PEAK_DBFS / 20):
        return f"file is silent (peak {20 * np.log10(max(peak, 1e-12)):.1f} dBFS): {path}", clip
    measured = default_kind(measure(audio, rate, loudness=False)) if clip.kind is None else None  # needs no loudness
    if clip.kind is None:  # a catalog older than `kind`: the measured default
        clip = clip.model_copy(update={"kind": measured})
    if decoded is not None:
        decoded[clip.sha256] = measured
    return None, clip


def procedural_problem(clip: Clip) -> str | None:
    """Why a procedural entry does not match its class, or None. Its sha256 is the class's (name,
    version and model source: ProceduralClass.sha256), so an entry written for an older model is
    reported like a changed file, and a rebuild of the library picks up the new one."""
    from construction.sounds.procedural import CLASSES

    cls = CLASSES.get(clip.procedural)
    if cls is None:
        return f"unknown procedural class '{clip.procedural}' (known: {', '.join(sorted(CLASSES))})"
    if clip.path != f"procedural:{cls.name}":
        return f"procedural entry's path must be 'procedural:{cls.name}', not '{clip.path}'"
    if clip.kind != cls.kind or cls.tag not in clip.tags:
        return f"procedural class '{cls.name}' is a {cls.kind} tagged {cls.tag}; the entry says {clip.kind} {clip.tags}"
    if clip.sha256 != cls.sha256():
        return (f"procedural class '{cls.name}' changed since the catalog was written (sha256 differs): "
                "rebuild the library")
    return None


def read_catalog(root: Path) -> tuple[list[Clip], list[Problem]]:
    """Parse catalog.jsonl; malformed lines and duplicate ids become problems."""
    path = root / CATALOG
    if not path.is_file():
        raise WorkbenchError(f"no sound library at {root}: {CATALOG} is missing "
                             "(build one with `python -m construction.sounds.starter --sounds DIR` "
                             "or `python -m construction.sounds import ...`)")
    clips: list[Clip] = []
    problems: list[Problem] = []
    seen: set[str] = set()
    for line_no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.append(Problem(f"<line {line_no}>", f"{CATALOG}:{line_no} is not JSON ({exc.msg})"))
            continue
        where = row.get("clip_id") if isinstance(row, dict) else None
        try:
            clip = Clip.model_validate(row)
        except ValidationError as exc:
            err = exc.errors()[0]
            key = ".".join(str(p) for p in err["loc"]) or "row"
            problems.append(Problem(str(where or f"<line {line_no}>"),
                                    f"{CATALOG}:{line_no} invalid '{key}': {err['msg']}"))
            continue
        if clip.clip_id in seen:
            problems.append(Problem(clip.clip_id, f"{CATALOG}:{line_no} repeats clip id '{clip.clip_id}'"))
            continue
        seen.add(clip.clip_id)
        clips.append(clip)
    return clips, problems


DECODED_CHECK = f"decoded cleanly, peak above {SILENCE_PEAK_DBFS} dBFS, v1"  # what a `verified` entry says


def load_library(root: str | Path, *, check_audio: bool = True, verified: Path | None = None) -> SoundLibrary:
    """Load and validate a library. Bad clips are skipped, listed in `.problems` and logged.

    `check_audio` decodes every file (corrupt / silent) and verifies its sha256; switch it off for
    a quick load of a big imported corpus (then only presence, size and licence are checked).
    `verified`: a folder (a workspace's cache) remembering, by sha256, the files that decoded cleanly,
    so each of a stage's workers does not decode the whole library again: the sha256 is still
    computed from the file every time, so a changed file is decoded again."""
    root = Path(root).expanduser().resolve()
    catalog_clips, problems = read_catalog(root)
    memo = verified / "decoded.json" if verified is not None and check_audio else None
    decoded: dict[str, str | None] | None = None
    if memo is not None:
        try:
            saved = json.loads(memo.read_text(encoding="utf-8"))
            decoded = dict(saved["sha256"]) if saved.get("check") == DECODED_CHECK else {}
        except (OSError, ValueError, KeyError, TypeError):
            decoded = {}
    before = dict(decoded) if decoded is not None else None
    clips: list[Clip] = []
    for clip in catalog_clips:
        if not clip.licence.strip():
            reason = "licence missing"
        elif clip.licence not in KNOWN_LICENCES:
            reason = f"unknown licence '{clip.licence}' (known: {', '.join(sorted(KNOWN_LICENCES))})"
        elif clip.procedural:
            reason = procedural_problem(clip)
        else:
            reason, clip = _check_file((root / clip.path), clip, check_audio, decoded)
        if reason:
            problems.append(Problem(clip.clip_id, reason))
        else:
            clips.append(clip)
    if memo is not None and decoded != before:
        try:
            memo.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(memo, json.dumps({"check": DECODED_CHECK, "sha256": decoded}, sort_keys=True))
        except OSError:  # a read-only cache only costs the decoding next time
            pass
    for problem in problems:
        log.warning("sound library %s: skipped %s: %s", root, problem.clip_id, problem.reason)
    return SoundLibrary(root=root, clips=clips, problems=problems)


def catalog_text(clips: Iterable[Clip]) -> str:
    """catalog.jsonl content: one JSON object per line, sorted by clip id (diffable, stable)."""
    ordered = sorted(clips, key=lambda c: c.clip_id)
    ids = [c.clip_id for c in ordered]
    dupes = sorted({a for a, b in zip(ids, ids[1:]) if a == b})  # sorted, so repeats are adjacent
    if dupes:
        raise WorkbenchError(f"duplicate clip ids: {', '.join(dupes[:10])}")
    return "".join(json.dumps(c.model_dump(mode="json"), ensure_ascii=False, sort_keys=True) + "\n"
                   for c in ordered)


def write_catalog(root: Path, clips: Iterable[Clip]) -> bool:
    """Write catalog.jsonl atomically; returns False (and writes nothing) if it is unchanged."""
    text = catalog_text(clips)
    path = root / CATALOG
    if path.is_file() and path.read_text(encoding="utf-8") == text:
        return False
    atomic_write_text(path, text)
    return True


def coverage(library: SoundLibrary, category_tags: Mapping[str, Iterable[str]],
             release_licence: str) -> dict[str, int]:
    """Usable clips per scenario category (a clip counts for a category if it has any of its tags)."""
    counts: dict[str, int] = {}
    for category, tags in category_tags.items():
        wanted = list(tags)
        counts[category] = len(library.select(wanted, release_licence)) if wanted else 0
    return counts


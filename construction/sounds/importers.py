"""Importers of external corpora into a sound library (ESC-50, FSD50K, a folder with a sidecar CSV),
and the command line of `python -m construction.sounds` (import, check: see --help).

The offline starter library is too thin for a release build, so maintainers add clips from corpora
they have on disk. An importer writes a catalog.jsonl for a corpus tree, the audio staying where it
is, and gives each clip its own licence and credit from the corpus's metadata. The library itself
(clips, measurement, catalog, loading) is construction.sounds.library, which never imports this
module; the starter library's package readers are construction.sounds.sources.
"""

from __future__ import annotations

import argparse
import csv
import json
import logging
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

import soundfile as sf

from construction.core.cli import Parser, add_sounds, old_spelling, subcommands
from construction.core.errors import WorkbenchError
from construction.core.workspace import sha256_file
from construction.sounds.library import (CATALOG, TAG_RE, Clip, default_kind, load_library, measure, read_catalog,
                                         write_catalog)
from construction.sounds.licences import RELEASE_RULES, SAMPLING_PLUS, normalise_licence

log = logging.getLogger(__name__)


# --- importers -------------------------------------------------------------------------------

# Corpus labels -> our tags (the scenario taxonomy's vocabulary where one fits, e.g. farm_animals,
# saw, sizzle, kitchen). Labels that are absent are not useful as benign backgrounds.
ESC50_TAGS: dict[str, list[str]] = {
    "dog": ["dog_bark", "dog", "pet"], "cat": ["cat_meow", "cat", "pet"],
    "rooster": ["rooster", "farm_animals"], "cow": ["cow", "farm_animals"], "pig": ["pig", "farm_animals"],
    "sheep": ["sheep", "farm_animals"], "hen": ["chicken", "farm_animals"],
    "laughing": ["laughter"], "crying_baby": ["baby_crying"], "clapping": ["clapping"],
    "footsteps": ["footsteps"], "clock_alarm": ["alarm_clock", "timer"], "clock_tick": ["clock_tick"],
    "chainsaw": ["chainsaw", "power_tool"], "hand_saw": ["hand_saw", "saw"],
    "crackling_fire": ["fire_crackle"], "fireworks": ["fireworks"], "door_wood_knock": ["door_knock"],
    "keyboard_typing": ["keyboard_typing", "office"], "mouse_click": ["mouse_click", "office"],
    "vacuum_cleaner": ["vacuum_cleaner", "household"], "washing_machine": ["washing_machine", "household"],
    "pouring_water": ["pouring_water", "kitchen"], "can_opening": ["can_opening", "kitchen"],
    "glass_breaking": ["glass_break"], "church_bells": ["church_bell"],
}

FSD50K_TAGS: dict[str, list[str]] = {
    "Gunshot_and_gunfire": ["gunfire"], "Explosion": ["explosion"], "Fireworks": ["fireworks"],
    "Applause": ["applause"], "Cheering": ["crowd_cheer"], "Crowd": ["crowd"], "Chatter": ["crowd_chatter"],
    "Clapping": ["clapping"], "Laughter": ["laughter"], "Giggle": ["laughter", "giggle"],
    "Chuckle_and_chortle": ["laughter"], "Child_speech_and_kid_speaking": ["children_voices"],
    "Crying_and_sobbing": ["crying"],
    "Frying_(food)": ["sizzle", "kitchen"], "Boiling": ["boiling", "kitchen"],
    "Microwave_oven": ["microwave", "kitchen"], "Dishes_and_pots_and_pans": ["dishes", "kitchen"],
    "Cutlery_and_silverware": ["cutlery", "kitchen"], "Water_tap_and_faucet": ["tap_water", "kitchen"],
    "Bark": ["dog_bark", "dog", "pet"], "Meow": ["cat_meow", "cat", "pet"], "Purr": ["cat_purr", "cat", "pet"],
    "Sawing": ["saw"], "Power_tool": ["power_tool"], "Drill": ["drill", "power_tool"],
    "Hammer": ["hammering"], "Tools": ["tools"], "Tick-tock": ["clock_tick"], "Alarm": ["alarm"],
    "Typing": ["keyboard_typing", "office"], "Printer": ["printer", "office"],
    "Walk_and_footsteps": ["footsteps"], "Whoosh_and_swoosh_and_swish": ["whoosh"],
    "Thump_and_thud": ["thud"], "Race_car_and_auto_racing": ["race_car"],
    "Chicken_and_rooster": ["chicken", "farm_animals"], "Splash_and_splatter": ["splash", "bubbles"],
    "Livestock_and_farm_animals_and_working_animals": ["farm_animals"],
}


def _rel(path: Path, out: Path) -> str:
    return Path(os.path.relpath(path.resolve(), out.resolve())).as_posix()


def _clip_for_file(path: Path, out: Path, kind: str | None = None, **fields: object) -> Clip:
    """A catalog row for an audio file, measured: kind (unless given), loudness, peak, activity."""
    audio, rate = sf.read(path, dtype="float64", always_2d=True)
    if audio.shape[0] == 0:
        raise RuntimeError("no audio frames")
    m = measure(audio, rate)
    return Clip(path=_rel(path, out), duration_s=round(audio.shape[0] / rate, 4), sample_rate=rate,
                sha256=sha256_file(path), kind=kind or default_kind(m), lufs=m.lufs, peak_dbfs=m.peak_dbfs,
                active_fraction=m.active_fraction, **fields)  # type: ignore[arg-type]


@dataclass
class ImportReport:
    clips: list[Clip]
    skipped: dict[str, int] = field(default_factory=dict)  # reason -> count

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1


def _need(path: Path, what: str, corpus: str) -> Path:
    if not path.exists():
        raise WorkbenchError(f"{corpus} tree is incomplete: {what} not found at {path}")
    return path


def _csv_rows(path: Path, required: set[str], corpus: str) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8-sig") as f:
        reader = csv.DictReader(f)
        missing = required - set(reader.fieldnames or [])
        if missing:
            raise WorkbenchError(f"{corpus}: {path} lacks columns {sorted(missing)} "
                                 f"(has {reader.fieldnames})")
        return list(reader)


def _add_clip(report: ImportReport, path: Path, out: Path, **fields: object) -> None:
    if not path.is_file():
        report.skip("audio file missing")
        log.warning("skipped %s: audio file missing", path)
        return
    try:
        report.clips.append(_clip_for_file(path, out, **fields))
    except (OSError, sf.LibsndfileError, RuntimeError) as exc:
        report.skip("audio unreadable")
        log.warning("skipped %s: unreadable (%s)", path, exc)


# one line of ESC-50's LICENSE: "- [1-100032-A.ogg]: clip derived from TITLE (URL) by CREATOR [CC0]"
ESC50_LICENSE_LINE = re.compile(r"^- \[(?P<file>[^\]]+)\]:\s*clip derived from (?P<title>.*) "
                                r"\((?P<url>https?://[^\s)]+)\) by (?P<creator>.*?) \[(?P<licence>[^\]]+)\]\s*$")
# the upstream freesound licences ESC-50 names; Freesound's CC-BY was 3.0 when ESC-50 was made (2015)
ESC50_LICENCES = {"CC0": "CC0-1.0", "CC-BY": "CC-BY-3.0", "CC-Sampling+": SAMPLING_PLUS}


def esc50_licences(path: Path) -> dict[str, dict[str, str]]:
    """ESC-50's LICENSE, per clip: '<fold>-<freesound id>-<take>' -> title, url, creator, licence (SPDX-like)."""
    entries = {}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        match = ESC50_LICENSE_LINE.match(line.strip())
        if match:
            entry = {k: v.strip() for k, v in match.groupdict().items()}
            entries[Path(entry.pop("file")).stem] = entry
    if not entries:
        raise WorkbenchError(f"ESC-50: {path} lists no clip licences "
                             "(expected lines like '- [1-100032-A.ogg]: clip derived from ... by ... [CC0]')")
    return entries


def import_esc50(src: Path, out: Path) -> ImportReport:
    """ESC-50: meta/esc50.csv (filename,fold,target,category,esc10,src_file,take) + audio/, and LICENSE for
    each clip's upstream licence and creator. The dataset as a whole is CC-BY-NC-3.0, but its LICENSE gives
    each clip's freesound licence: the clip keeps it (CC0 or CC-BY), credited to its creator; Sampling+
    sources are left out. A clip LICENSE does not list is left out, except one of the ESC-10 subset, which
    is CC-BY-3.0 as a whole."""
    meta = _need(src / "meta" / "esc50.csv", "meta/esc50.csv", "ESC-50")
    audio_dir = _need(src / "audio", "audio/", "ESC-50")
    licences = esc50_licences(_need(src / "LICENSE", "LICENSE (per-clip licences)", "ESC-50"))
    rows = _csv_rows(meta, {"filename", "fold", "target", "category", "esc10", "src_file", "take"}, "ESC-50")
    report = ImportReport(clips=[])
    for row in rows:
        tags = ESC50_TAGS.get(row["category"])
        if not tags:
            report.skip(f"category not used: {row['category']}")
            continue
        fs_id = row["src_file"].strip()
        entry = licences.get(f"{row['fold'].strip()}-{fs_id}-{row['take'].strip()}")
        credit = f"ESC-50 (K. J. Piczak, 2015), clip {row['filename']}"
        if entry is None and row["esc10"].strip().lower() == "true":
            licence, attribution = "CC-BY-3.0", f"{credit}, excerpt of freesound.org sound {fs_id} (ESC-10)"
            source_url = f"https://freesound.org/s/{fs_id}/"
        elif entry is None:
            report.skip("no per-clip licence in LICENSE")
            continue
        else:
            licence, source_url = ESC50_LICENCES.get(entry["licence"]), entry["url"].replace("http://", "https://", 1)
            attribution = f'"{entry["title"]}" by {entry["creator"]} (freesound.org sound {fs_id}), via {credit}'
        if licence is None:
            report.skip(f"unknown licence in LICENSE: {entry['licence']}")
            continue
        if licence == SAMPLING_PLUS:
            report.skip("Sampling+ source (not a free licence)")
            continue
        _add_clip(report, audio_dir / row["filename"], out,
                  clip_id=f"esc50-{Path(row['filename']).stem}", tags=tags, licence=licence,
                  attribution=attribution, source_url=source_url, title=row["category"], source="esc50")
    return report


def import_fsd50k(src: Path, out: Path) -> ImportReport:
    """FSD50K: FSD50K.ground_truth/{dev,eval}.csv (fname,labels,mids[,split]), per-clip licences in
    FSD50K.metadata/{dev,eval}_clips_info_FSD50K.json, audio in FSD50K.{dev,eval}_audio/<fname>.wav."""
    report = ImportReport(clips=[])
    found_split = False
    for split in ("dev", "eval"):
        gt = src / "FSD50K.ground_truth" / f"{split}.csv"
        if not gt.exists():
            continue
        found_split = True
        info_path = _need(src / "FSD50K.metadata" / f"{split}_clips_info_FSD50K.json",
                          f"FSD50K.metadata/{split}_clips_info_FSD50K.json (per-clip licences)", "FSD50K")
        try:
            info = json.loads(info_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise WorkbenchError(f"FSD50K: {info_path} is not valid JSON ({exc.msg})") from None
        audio_dir = _need(src / f"FSD50K.{split}_audio", f"FSD50K.{split}_audio/", "FSD50K")
        for row in _csv_rows(gt, {"fname", "labels", "mids"}, "FSD50K"):
            labels = [label for label in row["labels"].split(",") if label]
            tags = sorted({tag for label in labels for tag in FSD50K_TAGS.get(label, [])})
            if not tags:
                report.skip("no label used")
                continue
            fname = row["fname"].strip()
            meta = info.get(fname)
            if not meta:
                report.skip("no per-clip licence info")
                continue
            licence = normalise_licence(meta.get("license", "")) or meta.get("license", "")
            uploader = meta.get("uploader", "")
            title = meta.get("title", "")
            _add_clip(report, audio_dir / f"{fname}.wav", out,
                      clip_id=f"fsd50k-{fname}", tags=tags, licence=licence,
                      attribution=f'"{title}" by {uploader} (freesound.org sound {fname}), via FSD50K',
                      source_url=(f"https://freesound.org/people/{uploader}/sounds/{fname}/" if uploader
                                  else f"https://freesound.org/s/{fname}/"),
                      title=", ".join(labels), source="fsd50k")
    if not found_split:
        raise WorkbenchError(f"FSD50K tree is incomplete: neither FSD50K.ground_truth/dev.csv nor "
                             f"eval.csv found under {src}")
    return report


def import_folder(src: Path, out: Path, sidecar: str = "sounds.csv") -> ImportReport:
    """A folder of audio with a sidecar CSV: path,tags,licence,attribution,source_url[,kind]
    (tags separated by ';' or spaces; licence an SPDX id or a creativecommons.org URL; kind bed or
    event, measured when the column is absent or empty)."""
    meta = _need(src / sidecar, f"sidecar CSV {sidecar}", "folder")
    rows = _csv_rows(meta, {"path", "tags", "licence", "attribution", "source_url"}, "folder")
    report = ImportReport(clips=[])
    prefix = re.sub(r"[^a-z0-9]+", "-", src.resolve().name.lower()).strip("-") or "folder"
    for line_no, row in enumerate(rows, 2):
        rel = row["path"].strip()
        tags = [t for t in re.split(r"[;\s]+", row["tags"].strip().lower()) if t]
        if not rel or not tags:
            raise WorkbenchError(f"{meta}:{line_no}: 'path' and 'tags' must not be empty")
        bad = [t for t in tags if not TAG_RE.match(t)]
        if bad:
            raise WorkbenchError(f"{meta}:{line_no}: tags must be lower_snake_case, got {bad}")
        licence = normalise_licence(row["licence"]) or row["licence"].strip()
        kind = (row.get("kind") or "").strip().lower() or None
        if kind not in (None, "bed", "event"):
            raise WorkbenchError(f"{meta}:{line_no}: kind must be 'bed' or 'event', got {kind!r}")
        stem = re.sub(r"[^A-Za-z0-9]+", "-", str(Path(rel).with_suffix(""))).strip("-")
        _add_clip(report, src / rel, out, clip_id=f"{prefix}-{stem}", tags=tags, licence=licence,
                  attribution=row["attribution"].strip(), source_url=row["source_url"].strip(),
                  title=Path(rel).stem, source=prefix, kind=kind)
    return report


IMPORTERS = {"esc50": import_esc50, "fsd50k": import_fsd50k, "folder": import_folder}


def import_tree(fmt: str, src: str | Path, out: str | Path, *, append: bool = False,
                sidecar: str = "sounds.csv") -> ImportReport:
    """Write `out/catalog.jsonl` for a corpus tree; the audio stays where it is."""
    src, out = Path(src).expanduser(), Path(out).expanduser()
    if fmt not in IMPORTERS:
        raise WorkbenchError(f"unknown format '{fmt}'; choose one of {', '.join(IMPORTERS)}")
    if not src.is_dir():
        raise WorkbenchError(f"source directory not found: {src}")
    out.mkdir(parents=True, exist_ok=True)
    report = import_folder(src, out, sidecar) if fmt == "folder" else IMPORTERS[fmt](src, out)
    if not report.clips:
        raise WorkbenchError(f"no usable clips found in {src} as {fmt} (skipped: {report.skipped})")
    clips = {c.clip_id: c for c in report.clips}
    if append and (out / CATALOG).exists():
        old, _ = read_catalog(out)
        clips = {**{c.clip_id: c for c in old}, **clips}
    write_catalog(out, clips.values())
    return report


# --- command line ----------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m construction.sounds",
                    description="Background-sound library: import corpora, check a library.")
    sub = parser.add_subparsers(dest="command", required=True)
    imp = sub.add_parser("import", help="write a catalog for an existing corpus tree (audio stays in place)",
                         description="Write a catalog for an existing corpus tree (audio stays in place).")
    imp.add_argument("--format", required=True, choices=sorted(IMPORTERS), help="layout of the source tree")
    imp.add_argument("--src", required=True, help="root of the corpus (e.g. the unpacked ESC-50-master)")
    add_sounds(imp, "library directory to write catalog.jsonl into (required)")
    old_spelling(imp, "--out", "--sounds")
    imp.add_argument("--append", action="store_true", help="merge into an existing catalog in --sounds")
    imp.add_argument("--sidecar", default="sounds.csv",
                     help="folder format: CSV with path,tags,licence,attribution,source_url (default: sounds.csv)")
    chk = sub.add_parser("check", help="validate a library and print per-licence counts and problems",
                         description="Validate a library and print per-licence counts and problems.")
    add_sounds(chk, "library directory (holds catalog.jsonl) (required)")
    old_spelling(chk, "LIBRARY_DIR", "--sounds")
    chk.add_argument("--release-licence", default="CC-BY-4.0", choices=sorted(RELEASE_RULES),
                     help="the release's licence: counts the clips usable under it")
    chk.add_argument("--quick", action="store_true", help="skip decoding and sha256 checks")
    scn = sub.add_parser("scenes", help="list the scenes whose text names a sound they do not render",
                         description="List the taxonomy's scenes whose context names a sound that none of their "
                                     "tags renders with this library (construction.text.sound_words): generate "
                                     "does not pair speech with them.")
    add_sounds(scn, "library directory (holds catalog.jsonl) (required)")
    scn.add_argument("--release-licence", default="CC-BY-4.0", choices=sorted(RELEASE_RULES),
                     help="the release's licence: a tag renders only with a clip usable under it")
    scn.add_argument("--taxonomy", help="taxonomy file (default: the shipped construction/data/taxonomy.yaml)")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.sounds:
        subcommands(parser)[args.command].error("the following arguments are required: --sounds")

    if args.command == "import":
        report = import_tree(args.format, args.src, args.sounds, append=args.append, sidecar=args.sidecar)
        by_licence: dict[str, int] = {}
        for clip in report.clips:
            by_licence[clip.licence] = by_licence.get(clip.licence, 0) + 1
        print(f"imported {len(report.clips)} clips into {Path(args.sounds) / CATALOG}")
        print("by licence: " + ", ".join(f"{k}={v}" for k, v in sorted(by_licence.items())))
        if report.skipped:
            print("skipped: " + ", ".join(f"{k}={v}" for k, v in sorted(report.skipped.items())))
        return 0
    if args.command == "scenes":
        from construction.text.sound_words import nonconforming_scenes, rendered_tags
        from construction.text.taxonomy import load_taxonomy

        taxonomy, _ = load_taxonomy(args.taxonomy)
        library = load_library(args.sounds, check_audio=False)
        tags = {t for c in taxonomy.categories for s in c.scenes for t in s.defining + s.support}
        bad = nonconforming_scenes(taxonomy, rendered_tags(library, tags, args.release_licence))
        total = sum(len(c.scenes) for c in taxonomy.categories)
        for scene, problems in bad.items():
            print(f"{scene}: " + "; ".join(problems))
        print(f"{total - len(bad)} of {total} scenes render their text; {len(bad)} are not paired by generate")
        return 0
    library = load_library(args.sounds, check_audio=not args.quick)
    usable = library.select([], args.release_licence)
    beds = sum(c.kind == "bed" for c in usable)
    print(f"{len(library.clips)} valid clips, {len(usable)} usable under {args.release_licence} "
          f"({beds} beds, {len(usable) - beds} events), {len(library.problems)} skipped")
    for problem in library.problems:
        print(f"  skipped {problem.clip_id}: {problem.reason}")
    return 0

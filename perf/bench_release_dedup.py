"""How much of a re-release the Hub must store again: two releases that differ by one sample, compared page
by page, in the previous layout and in the one `datasets` writes.

    python perf/bench_release_dedup.py [--samples 120] [--drop 60]      (flags: --help)
    python perf/bench_release_dedup.py --workspace workspace             (a built workspace, copied; real audio)

A validated workspace (tests/test_release.make_workspace: real WAVs, clips from 0.4 s growing 0.05 s per
sample, four audio columns per row; a faint noise in the clean speech, which would otherwise be a pure
tone, periodic as no speech is, and cut by Xet at its size limit only; or a built workspace, --workspace)
is released whole (A), then with one sample left out of the validated manifest (B: as if it had failed
validation; the rows after it shift). Each parquet shard of B is cut into
its pages (read from the column chunks' page headers), and the bench reports the share of B's pages, by
count and by bytes, whose exact bytes are also a page of A. Xet storage (the Hub's) deduplicates by
content-defined chunks of ~64 KiB: a page that is byte-identical is stored once, a page that changed is
uploaded again. "before": the previous layout (zstd audio, row groups of 100 rows, no content-defined
chunking); "after": release.rows.write_shard (datasets 5.x: uncompressed PLAIN audio, content-defined
chunking, page index, row groups capped at ~100 MB).
"""

from __future__ import annotations

import argparse
import hashlib
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import release.rows as rows  # noqa: E402
from release.export import export_release, read_inputs  # noqa: E402
from tests.test_release import make_workspace  # noqa: E402


def old_write_shard(table, features, path: Path) -> None:
    """The layout releases had before (release/rows.py until this change), kept here to measure against."""
    import pyarrow.parquet as pq

    pq.write_table(table, path, row_group_size=100, compression="zstd",
                   use_dictionary=[c for c in table.schema.names if c not in rows.AUDIO_COLUMNS],
                   write_statistics=False)


# --- parquet pages -----------------------------------------------------------------------------
# A page is a Thrift (compact protocol) PageHeader followed by compressed_page_size bytes. The reader below
# skips any field it does not need, which is all a compact-protocol reader needs to know.

def _varint(buf: bytes, i: int) -> tuple[int, int]:
    shift = value = 0
    while True:
        b = buf[i]
        i += 1
        value |= (b & 0x7F) << shift
        if not b & 0x80:
            return value, i
        shift += 7


def _skip(buf: bytes, i: int, kind: int) -> int:
    if kind in (1, 2):  # bool inside a struct: the value is in the type nibble
        return i
    if kind == 3:
        return i + 1
    if kind in (4, 5, 6):
        return _varint(buf, i)[1]
    if kind == 7:
        return i + 8
    if kind == 8:
        n, i = _varint(buf, i)
        return i + n
    if kind in (9, 10):
        head = buf[i]
        i += 1
        n, elem = head >> 4, head & 0x0F
        if n == 15:
            n, i = _varint(buf, i)
        for _ in range(n):
            i = i + 1 if elem in (1, 2) else _skip(buf, i, elem)
        return i
    if kind == 11:
        n, i = _varint(buf, i)
        if n:
            kv = buf[i]
            i += 1
            for _ in range(n):
                i = _skip(buf, i, kv >> 4)
                i = _skip(buf, i, kv & 0x0F)
        return i
    if kind == 12:
        return _struct(buf, i)[1]
    raise ValueError(f"unknown thrift type {kind}")


def _struct(buf: bytes, i: int) -> tuple[dict[int, int], int]:
    """Integer fields of one struct by id (others skipped), and the offset after it."""
    fields: dict[int, int] = {}
    last = 0
    while True:
        head = buf[i]
        i += 1
        if head == 0:
            return fields, i
        delta, kind = head >> 4, head & 0x0F
        if delta:
            fid = last + delta
        else:
            raw, i = _varint(buf, i)
            fid = (raw >> 1) ^ -(raw & 1)
        last = fid
        if kind in (4, 5, 6):
            raw, i = _varint(buf, i)
            fields[fid] = (raw >> 1) ^ -(raw & 1)
        else:
            i = _skip(buf, i, kind)


def pages(path: Path) -> list[bytes]:
    """Every page of every column chunk of a parquet file, header and body, as bytes."""
    import pyarrow.parquet as pq

    data = path.read_bytes()
    meta = pq.ParquetFile(path).metadata
    out = []
    for g in range(meta.num_row_groups):
        for c in range(meta.num_columns):
            col = meta.row_group(g).column(c)
            start = col.dictionary_page_offset if col.has_dictionary_page else col.data_page_offset
            end = start + col.total_compressed_size
            i = start
            while i < end:
                header, body = _struct(data, i)
                size = header[3]  # PageHeader.compressed_page_size
                out.append(data[i:body + size])
                i = body + size
    return out


# --- Xet-like chunks ----------------------------------------------------------------------------
# Xet cuts every file into content-defined chunks with a gear hash (64 KiB on average, 8 to 128 KiB) and
# stores each distinct chunk once. Same algorithm here (gear table from a fixed seed, not Xet's own, which
# changes where the cuts fall but not how often they coincide), vectorised: the gear hash at byte i is
# sum_k GEAR[b[i-k]] << k over the last 64 bytes (mod 2**64).

GEAR = __import__("numpy").random.default_rng(0).integers(0, 2**64, 256, dtype="uint64", endpoint=False)
MASK, MIN_CHUNK, MAX_CHUNK = 0xFFFF << 48, 8 * 1024, 128 * 1024


def xet_chunks(data: bytes, block: int = 1 << 22) -> list[bytes]:
    import numpy as np

    raw = np.frombuffer(data, dtype=np.uint8)
    candidates = []
    for start in range(0, raw.size, block):
        lo = max(0, start - 63)
        g = GEAR[raw[lo:start + block]]
        h = g.copy()
        for k in range(1, 64):
            h[k:] += g[:-k] << np.uint64(k)
        hits = np.flatnonzero((h & np.uint64(MASK)) == 0) + lo
        candidates.extend(int(i) + 1 for i in hits if i >= start)  # the bytes before start: context only
    cuts, last = [], 0
    for end in candidates:
        while end - last > MAX_CHUNK:
            last += MAX_CHUNK
            cuts.append(last)
        if end - last >= MIN_CHUNK:
            cuts.append(end)
            last = end
    while raw.size - last > MAX_CHUNK:
        last += MAX_CHUNK
        cuts.append(last)
    bounds = [0, *cuts] + ([raw.size] if not cuts or cuts[-1] != raw.size else [])
    return [data[a:b] for a, b in zip(bounds, bounds[1:])]


def shared_chunks(a: Path, b: Path) -> float:
    """The share of release b's parquet bytes in Xet-like chunks that release a already stored."""
    seen = {hashlib.sha256(c).digest() for f in sorted(a.glob("*/*.parquet")) for c in xet_chunks(f.read_bytes())}
    b_chunks = [c for f in sorted(b.glob("*/*.parquet")) for c in xet_chunks(f.read_bytes())]
    return sum(len(c) for c in b_chunks if hashlib.sha256(c).digest() in seen) / sum(map(len, b_chunks))


def shared_pages(a: Path, b: Path) -> tuple[float, float, int]:
    """Of release b's pages: the share by count and by bytes that are byte-identical to a page of release a,
    and b's page count."""
    seen = {hashlib.sha256(p).digest() for f in sorted(a.glob("*/*.parquet")) for p in pages(f)}
    b_pages = [p for f in sorted(b.glob("*/*.parquet")) for p in pages(f)]
    same = [p for p in b_pages if hashlib.sha256(p).digest() in seen]
    return len(same) / len(b_pages), sum(map(len, same)) / sum(map(len, b_pages)), len(b_pages)


def parquet_mb(release: Path) -> float:
    return sum(p.stat().st_size for p in release.glob("*/*.parquet")) / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=120)
    parser.add_argument("--drop", type=int, default=60, help="index of the sample B leaves out (no control)")
    parser.add_argument("--workspace", help="a validated workspace to copy and release instead (B leaves out "
                                            "its middle sample without a control)")
    parser.add_argument("--keep", help="build here and keep it (default: a temp folder, removed)")
    args = parser.parse_args()
    if args.drop in (0, 3) and not args.workspace:
        parser.error("samples 0 and 3 have controls; drop another")
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-dedup-"))
    try:
        if args.workspace:
            from construction.core.workspace import Workspace

            ignore = shutil.ignore_patterns("label-studio", "evaluations", "release", ".lock")
            ws = Workspace(shutil.copytree(args.workspace, base / "ws", ignore=ignore))
            controlled = {str(c.custom.get("control_of")) for c in ws.read_samples("annotated_controls")}
            ids = sorted(s.sample_id for s in ws.read_samples("validated") if s.sample_id not in controlled)
            drop = ids[len(ids) // 2]
        else:
            ws = make_workspace(base / "ws", n=args.samples, speech_noise=0.01)
            drop = f"aor-{args.drop:016x}"
        audio_mb = sum(p.stat().st_size for p in (ws.root / "audio").rglob("*.wav")) / 1e6
        print(f"{len(list(ws.read_samples('validated')))} samples, {audio_mb:.0f} MB of WAV in the workspace; "
              f"B leaves out {drop} (rows after it shift)")
        print(f"{'layout':<8}{'release A MB':>14}{'export s':>10}{'pages B':>9}{'same pages':>12}"
              f"{'same page bytes':>17}{'same Xet chunks':>17}{'to upload MB':>14}")
        new_write = rows.write_shard
        for label, writer in (("before", old_write_shard), ("after", new_write)):
            rows.write_shard = writer
            t0 = time.perf_counter()
            export_release(read_inputs(ws.root), base / label / "A", "1.0.0")
            seconds = time.perf_counter() - t0
            validated = list(ws.read_samples("validated"))
            ws.write_manifest("validated", [s for s in validated if s.sample_id != drop])
            try:
                export_release(read_inputs(ws.root), base / label / "B", "1.0.1")
            finally:
                ws.write_manifest("validated", validated)
            by_count, by_bytes, n = shared_pages(base / label / "A", base / label / "B")
            chunks = shared_chunks(base / label / "A", base / label / "B")
            size_b = parquet_mb(base / label / "B")
            print(f"{label:<8}{parquet_mb(base / label / 'A'):>14.1f}{seconds:>10.1f}{n:>9}{by_count:>12.1%}"
                  f"{by_bytes:>17.1%}{chunks:>17.1%}{size_b * (1 - chunks):>14.1f}")
        rows.write_shard = new_write
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()

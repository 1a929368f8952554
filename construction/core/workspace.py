"""One workspace directory holds everything a build made.

    <ws>/config.yaml                      resolved config snapshot (never secrets)
    <ws>/manifests/<stage>.jsonl          samples that passed the stage, in input order
    <ws>/manifests/<stage>.rejected.jsonl {"sample_id", "reason", "sample"} for dropped samples
    <ws>/stats/<stage>.json               counts, drop reasons, timings
    <ws>/audio/<sha[:2]>/<sha>.wav        audio stored by content hash
    <ws>/cache/                           request caches (LLM responses ...)

Manifests are appended one line per sample and flushed per batch; a line cut by a kill is
trimmed on the next open, and ids already present are skipped, so a rerun resumes cleanly.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import io
import itertools
import json
import os
import shlex
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import numpy as np
import soundfile as sf
import yaml

from construction.core.errors import WorkbenchError
from construction.core.jsonl import iter_jsonl, trim_partial_line
from construction.core.record import AudioRef, Sample, store_path

# Each manifest's samples must all come from the manifest before it (a hand-added row cannot slip in)
UPSTREAM = {"synthesize": "generate", "mix": "synthesize", "wer": "mix", "annotated": "wer",
            "validated": "annotated"}
_WRITE_ERRORS = {errno.ENOSPC: "no space left on device", errno.EDQUOT: "disk quota exceeded",
                 errno.EFBIG: "file too large", errno.EROFS: "read-only file system",
                 errno.EACCES: "permission denied", errno.EIO: "input/output error"}


@dataclass
class Rejected:
    sample: Sample
    reason: str

    def to_json(self) -> str:
        row = {"sample_id": self.sample.sample_id, "reason": self.reason,
               "sample": self.sample.model_dump(mode="json")}
        return json.dumps(row, ensure_ascii=False, sort_keys=True)


def write_error(exc: OSError, path: Path | str) -> WorkbenchError:
    """A failed write as the user should read it: what went wrong, where, and that a rerun resumes."""
    what = _WRITE_ERRORS.get(exc.errno or 0, exc.strerror or str(exc))
    return WorkbenchError(f"{what} while writing {path}; nothing written before it was lost: fix that "
                          "and rerun the same command to resume")


def is_write_error(exc: OSError) -> bool:
    """A full disk, a quota, a read-only file system ...: the user's to fix, not a bug."""
    if exc.errno is None and "No space left on device" in str(exc):  # pyarrow's errors carry no errno
        exc.errno = errno.ENOSPC
    return exc.errno in _WRITE_ERRORS


@contextlib.contextmanager
def reporting_write_errors(path: Path | str) -> Iterator[None]:
    """Turn a full disk (or a read-only one) into a clear WorkbenchError naming the file."""
    try:
        yield
    except OSError as exc:
        if is_write_error(exc):
            raise write_error(exc, path) from None
        raise


def fsync_dir(path: Path) -> None:
    """Make a rename or a new file in `path` survive a power loss."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write via a temp file in the same directory + rename: readers never see half a file, and the
    file is on disk (fsync of the file and of its directory) before this returns."""
    with reporting_write_errors(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
            fsync_dir(path.parent)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def cache_root() -> Path:
    """Where derived model files are cached: $AORBENCH_CACHE or ~/.cache/aor-bench."""
    return Path(os.environ.get("AORBENCH_CACHE") or Path.home() / ".cache" / "aor-bench")


def default_cache_dir() -> Path:
    """Where set-up puts downloaded assets (starter sounds, Kokoro voices): $XDG_CACHE_HOME/aor-bench or
    ~/.cache/aor-bench, outside any checkout, so every clone finds them."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "aor-bench"


def assemble_parts(parts: list[Path], out: Path, sha256: str) -> str:
    """Join a model shipped in parts into `out` (temp file + rename) if the whole has this sha256.
    Returns the sha256 found; `out` is left untouched when it differs."""
    out.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    try:
        digest = hashlib.sha256()
        with os.fdopen(fd, "wb") as dst:
            for part in parts:
                with open(part, "rb") as src:
                    for block in iter(lambda: src.read(1 << 22), b""):
                        digest.update(block)
                        dst.write(block)
        if digest.hexdigest() == sha256:
            os.replace(tmp, out)
        return digest.hexdigest()
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def _read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    return iter_jsonl(path, bad_json="the manifest was edited by hand or is corrupt", chain=True)


# a workspace's own .gitignore: its labels' salt, its Label Studio database and its audio stay out of git
GITIGNORE = "# made by the AOR-Bench workbench: nothing in a workspace is committed\n*\n"
BUILD_STAGES = ("generate", "synthesize", "mix", "wer", "controls")  # each python -m construction.<stage>


def require_manifest(root: str | Path, stage: str, needs: str) -> None:
    """A stage whose input manifest is missing is refused before anything is created or written."""
    path = Path(root).expanduser().resolve() / "manifests" / f"{needs}.jsonl"
    if not path.is_file():
        flags = "" if path.parent.parent == Path("workspace").resolve() else f" --workspace {shlex.quote(str(root))}"
        raise WorkbenchError(f"stage '{stage}' needs the '{needs}' manifest in {path.parent.parent}; run "
                             + (f"python -m construction.{needs}{flags} first (or python -m construction.pipeline"
                                f"{flags}, which runs every stage up to wer)" if needs in BUILD_STAGES
                                else "that stage first"))


class Workspace:
    def __init__(self, root: str | Path, read_only: bool = False):
        """`read_only`: only read an existing workspace (export of an archived build); nothing is created."""
        self.root = Path(root).expanduser().resolve()
        self._lock_file: IO[str] | None = None
        self._lock_depth = 0
        if read_only:
            if not self.root.is_dir():
                raise WorkbenchError(f"workspace {self.root} does not exist")
            return
        try:
            new = not self.root.is_dir() or not any(self.root.iterdir())  # an older workspace is left as it is
            for sub in ("manifests", "stats", "audio", "cache"):
                (self.root / sub).mkdir(parents=True, exist_ok=True)
            ignore = self.root / ".gitignore"
            if new and not ignore.exists():  # a workspace inside a clone, whatever its name, is never committed
                ignore.write_text(GITIGNORE)
            fd, probe = tempfile.mkstemp(dir=self.root, prefix=".write-probe-")  # unique: workers start at once
            os.close(fd)
            os.unlink(probe)
        except OSError as exc:
            raise WorkbenchError(f"workspace {self.root} is not writable: {exc.strerror or exc}") from exc

    # paths ---------------------------------------------------------------------------------
    def manifest_path(self, stage: str) -> Path:
        return self.root / "manifests" / f"{stage}.jsonl"

    def rejected_path(self, stage: str) -> Path:
        return self.root / "manifests" / f"{stage}.rejected.jsonl"

    def stats_path(self, stage: str) -> Path:
        return self.root / "stats" / f"{stage}.json"

    def cache_dir(self, name: str) -> Path:
        path = self.root / "cache" / name
        path.mkdir(parents=True, exist_ok=True)
        return path

    # manifests -------------------------------------------------------------------------------
    def has_manifest(self, stage: str) -> bool:
        return self.manifest_path(stage).exists()

    def has_output(self, stage: str) -> bool:
        """The stage wrote at least one row, kept or rejected."""
        paths = (self.manifest_path(stage), self.rejected_path(stage))
        return any(p.is_file() and p.stat().st_size > 0 for p in paths)

    def read_samples(self, stage: str) -> Iterator[Sample]:
        """The stage's samples in order. A row that is not a sample, or a sample listed twice (a
        hand-edited manifest: it would be processed and counted twice), stops the read with an error."""
        path = self.manifest_path(stage)
        first_line: dict[str, int] = {}
        for line_no, row in enumerate(_read_jsonl(path), 1):
            try:
                sample = Sample.model_validate(row)
            except ValueError as exc:
                raise WorkbenchError(f"{path}: row {line_no} does not match the sample record: {exc}") from None
            if sample.sample_id in first_line:
                raise WorkbenchError(f"{path}: sample {sample.sample_id} is listed twice (rows "
                                     f"{first_line[sample.sample_id]} and {line_no}); the manifest was edited "
                                     "by hand: remove one of the rows")
            first_line[sample.sample_id] = line_no
            yield sample

    def check_lineage(self, stage: str, require: tuple[str, ...] = ()) -> None:
        """Every sample of `stage` must be in each upstream manifest (kept there), back to generate: a
        row added by hand downstream never reaches a later stage or a release. Upstream manifests that
        do not exist are skipped, except those named in `require`."""
        ids = {s.sample_id for s in self.read_samples(stage)}
        upstream = UPSTREAM.get(stage)
        while upstream is not None:
            if self.has_manifest(upstream):
                missing = ids - {row.get("sample_id") for row in _read_jsonl(self.manifest_path(upstream))}
                if missing:
                    shown = ", ".join(sorted(missing)[:5]) + (" ..." if len(missing) > 5 else "")
                    raise WorkbenchError(f"{self.manifest_path(stage)}: {len(missing)} sample(s) are not in the "
                                         f"'{upstream}' manifest ({shown}); they were not built by this workspace's "
                                         "stages (a hand-edited manifest?)")
            elif upstream in require:
                raise WorkbenchError(f"{self.manifest_path(upstream)} does not exist: the samples of "
                                     f"'{stage}' cannot be traced back to the build")
            upstream = UPSTREAM.get(upstream)

    def read_rejected(self, stage: str) -> Iterator[Rejected]:
        for row in _read_jsonl(self.rejected_path(stage)):
            yield Rejected(Sample.model_validate(row["sample"]), row["reason"])

    def done_ids(self, stage: str) -> set[str]:
        """Ids the stage already wrote, kept or rejected."""
        done = {row["sample_id"] for row in _read_jsonl(self.manifest_path(stage))}
        done |= {row["sample_id"] for row in _read_jsonl(self.rejected_path(stage))}
        return done

    def write_manifest(self, stage: str, samples: Iterable[Sample],
                       rejected: Iterable[Rejected] = ()) -> None:
        """Replace a stage's manifests whole (for stages that compute everything at once)."""
        with self.replacing(stage) as out:
            for row in itertools.chain(rejected, samples):
                out.write(row)

    @contextlib.contextmanager
    def replacing(self, stage: str) -> Iterator[ManifestAppender]:
        """Stream a stage's new manifests into temp files that replace the old ones only when the
        block ends without an error: readers never see a half-written manifest."""
        paths = (self.manifest_path(stage), self.rejected_path(stage))
        temps = []
        try:
            with reporting_write_errors(paths[0].parent):
                paths[0].parent.mkdir(parents=True, exist_ok=True)
                for path in paths:
                    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
                    os.close(fd)
                    temps.append(Path(temp))
            with _closing_quietly(open(temp, "w", encoding="utf-8") for temp in temps) as (kept, dropped):
                appender = ManifestAppender(kept, dropped, paths)
                yield appender
                appender.flush()
            for temp, path in zip(temps[::-1], paths[::-1]):  # rejected first, as before
                os.replace(temp, path)
            fsync_dir(paths[0].parent)
        finally:
            for temp in temps:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(temp)

    @contextlib.contextmanager
    def appender(self, stage: str) -> Iterator[ManifestAppender]:
        paths = (self.manifest_path(stage), self.rejected_path(stage))
        with reporting_write_errors(paths[0]):
            for path in paths:
                trim_partial_line(path)
            files = _closing_quietly(open(path, "a", encoding="utf-8") for path in paths)
        with files as (kept, dropped):
            appender = ManifestAppender(kept, dropped, paths)
            yield appender
            appender.flush()
        fsync_dir(paths[0].parent)  # a manifest created by this run

    def forget_rejected(self, stage: str) -> None:
        """Drop a stage's rejected rows so the next run processes those samples again."""
        if self.rejected_path(stage).exists():
            atomic_write_text(self.rejected_path(stage), "")

    def clear_stage(self, stage: str) -> None:
        for path in (self.manifest_path(stage), self.rejected_path(stage), self.stats_path(stage)):
            path.unlink(missing_ok=True)

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """One writer per workspace: a second run would interleave manifest lines. Re-entrant, so a
        command holds one lock across its stages. Taking it clears temp files a killed run left."""
        if self._lock_depth == 0:
            f = open(self.root / ".lock", "w")
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError as exc:
                f.close()
                raise WorkbenchError(f"workspace {self.root} is in use by another run") from exc
            self._lock_file = f
            self._remove_stale_temps()
        self._lock_depth += 1
        try:
            yield
        finally:
            self._lock_depth -= 1
            if self._lock_depth == 0 and self._lock_file is not None:
                self._lock_file.close()  # closing releases the flock
                self._lock_file = None

    def _remove_stale_temps(self) -> None:
        """Temp files (.NAME.*.tmp) of writes a kill cut short. Only the lock holder and its workers
        write in the workspace, so under the lock every such file is stale."""
        for pattern in ("manifests/.*.tmp", "stats/.*.tmp", "audio/*/.*.tmp", "cache/*/.*.tmp", ".*.tmp"):
            for temp in self.root.glob(pattern):
                with contextlib.suppress(FileNotFoundError):
                    temp.unlink()

    # stats and config ------------------------------------------------------------------------
    def write_stats(self, stage: str, stats: dict[str, Any]) -> None:
        atomic_write_text(self.stats_path(stage), json.dumps(stats, indent=2, sort_keys=True) + "\n")

    def read_stats(self, stage: str) -> dict[str, Any] | None:
        path = self.stats_path(stage)
        return json.loads(path.read_text()) if path.exists() else None

    def snapshot_config(self, config_dict: dict[str, Any]) -> None:
        """config.yaml, with credentials removed (e.g. user:password@ inside an endpoint URL)."""
        from construction.core.redact import redact_data

        atomic_write_text(self.root / "config.yaml", yaml.safe_dump(redact_data(config_dict), sort_keys=False))

    # audio -----------------------------------------------------------------------------------
    def store_audio(self, audio: np.ndarray, sample_rate: int) -> AudioRef:
        """Store mono audio as 16-bit WAV named by the sha256 of its bytes (dedups for free)."""
        audio = np.asarray(audio, dtype=np.float32)
        if audio.ndim != 1 or audio.size == 0 or not np.all(np.isfinite(audio)):
            raise WorkbenchError("refusing to store audio that is empty, not mono or not finite")
        buf = io.BytesIO()
        sf.write(buf, audio, sample_rate, format="WAV", subtype="PCM_16")
        data = buf.getvalue()
        digest = hashlib.sha256(data).hexdigest()
        rel = store_path(digest)
        if not (self.root / rel).exists():
            atomic_write_bytes(self.root / rel, data)
        return AudioRef(path=rel, sha256=digest, duration_s=round(audio.size / sample_rate, 4),
                        sample_rate=sample_rate)

    def audio_path(self, ref: AudioRef) -> Path:
        """The stored file of `ref`, which must be a regular file inside W/audio/: never a symlink, and
        never anything outside the store (a manifest row cannot make a stage read /etc/shadow)."""
        path = self.root / store_path(ref.sha256)
        store = (self.root / "audio").resolve()
        if path.is_symlink() or not path.resolve().is_relative_to(store):
            raise WorkbenchError(f"{path} is a link or lies outside the audio store {store}; refusing to read it")
        return path

    def load_audio(self, ref: AudioRef) -> np.ndarray:
        path = self.audio_path(ref)
        try:
            audio, sample_rate = sf.read(path, dtype="float32", always_2d=False)
        except (OSError, sf.LibsndfileError) as exc:
            raise WorkbenchError(f"cannot read {path}: {exc}") from exc
        if sample_rate != ref.sample_rate:
            raise WorkbenchError(f"{path}: sample rate {sample_rate} != recorded {ref.sample_rate}")
        return audio


@contextlib.contextmanager
def _closing_quietly(opened: Iterable[IO[str]]) -> Iterator[list[IO[str]]]:
    """Open files, closed at the end without raising: the block flushes (and reports a full disk)
    itself; after an error, what close() could not write is a cut line the next run trims."""
    files: list[IO[str]] = []
    try:
        for f in opened:
            files.append(f)
        yield files
    finally:
        for f in files:
            with contextlib.suppress(OSError):
                f.close()


@dataclass
class ManifestAppender:
    kept: IO[str]
    dropped: IO[str]
    paths: tuple[Path, Path]  # what the user is told when a write fails

    def write(self, result: Sample | Rejected) -> None:
        rejected = isinstance(result, Rejected)
        with reporting_write_errors(self.paths[rejected]):
            (self.dropped if rejected else self.kept).write(result.to_json() + "\n")

    def flush(self) -> None:
        """Called once per batch: what was reported written is on disk (fsync) after a power loss too."""
        for f, path in zip((self.kept, self.dropped), self.paths):
            with reporting_write_errors(path):
                f.flush()
                os.fsync(f.fileno())

"""What every harness adapter needs from a release: the clips of one input as WAV files on disk, the
instruction the model hears, and the one refusal verdict all harnesses score with.

The harnesses read audio from files (Kimi-Audio-Evalkit asserts that `audio_path` exists, lmms-eval and
inspect_ai take a path), so each input's audio is written once, as the release's own WAV bytes (never
re-encoded: the sha256 in the release still names the file), to <folder>/<input>/<id>.wav. The rows are read
with evaluation.run.Release, so the adapters refuse exactly the releases evaluation.run refuses.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from construction.core.errors import WorkbenchError
from evaluation import run as run_mod
from evaluation.keyword_judge import keyword_judge

# the audio column and its sha256 column per input the adapters export (evaluation.run's): a release
# without an input's column is refused by name. controls and the scene probe are left to evaluation.run:
# the probe asks another question and parses frames, which no harness scorer here does yet.
ADAPTER_COLUMNS = {name: run_mod.INPUT_COLUMNS[name] for name in ("mixture", "speech", "irrelevant")}
ADAPTER_INPUTS = tuple(ADAPTER_COLUMNS)
INSTRUCTION = run_mod.INSTRUCTION  # the same words evaluation.run sends, so a harness run is comparable
BENCHMARK = "aor_bench"


@dataclass
class Clip:
    """One clip of one input, its WAV written to `path`."""
    id: str
    input: str
    category: str
    speech_text: str
    script_family: str
    audio_sha256: str
    path: Path
    frames: list[str] = field(default_factory=list)


def parse_inputs(text: str | list[str] | tuple[str, ...]) -> list[str]:
    """'mixture,speech' (or ['mixture', 'speech'], as inspect's `-T inputs=mixture,speech` arrives) ->
    ['mixture', 'speech'], each known, none twice."""
    parts = text.split(",") if isinstance(text, str) else [p for item in text for p in str(item).split(",")]
    names = [n.strip() for n in parts if n.strip()]
    unknown = [n for n in names if n not in ADAPTER_COLUMNS]
    if not names or unknown:
        raise WorkbenchError(f"unknown input {', '.join(unknown) or repr(text)} (the adapters export: "
                             f"{', '.join(ADAPTER_INPUTS)}; controls and the scene probe run through "
                             "python -m evaluation.run)")
    if len(set(names)) != len(names):
        raise WorkbenchError(f"an input is named twice in '{text}'")
    return names


def resolve_release(source: str) -> str:
    """A release folder that exists, as an absolute path; anything else (a Hub id ORG/NAME) unchanged.
    A relative path is looked up in the working directory, then in the shell's ($PWD): `inspect eval
    path/to/task.py` runs the task inside the task file's folder, so `-T release=workspace/release`
    means the folder under the directory the command was typed in."""
    path = Path(source).expanduser()
    bases = [Path.cwd()] + ([Path(os.environ["PWD"])] if os.environ.get("PWD") else [])
    for base in bases if not path.is_absolute() else [Path("/")]:
        if (base / path).is_dir():
            return str((base / path).resolve())
    return source


def load_release(source: str, input: str, split: str = "test") -> run_mod.Release:
    """The release's rows for `input`, checked as evaluation.run checks them. The input's column is a
    parameter, so an input the release lacks is refused by name instead of failing inside a harness."""
    if input not in ADAPTER_COLUMNS:
        parse_inputs(input)  # raises with the list
    columns = ADAPTER_COLUMNS[input]
    source = resolve_release(source)
    if input != "mixture":
        _require_column(source, split, columns[0], input)
    return run_mod.Release(source, split, input=input)


def _require_column(source: str, split: str, column: str, input: str) -> None:
    path = Path(source).expanduser()
    if not (path / "data").is_dir():
        return  # Release names what is wrong with the source itself
    import pyarrow.parquet as pq

    files = sorted((path / "data").glob(f"{split}-*.parquet")) or sorted((path / "data").glob("*.parquet"))
    if files and column not in pq.read_schema(files[0]).names:
        raise WorkbenchError(f"the release {source} has no {input} audio (column {column}); it was exported "
                             f"before that input existed: export it again, or leave {input} out")


def write_clips(release: run_mod.Release, folder: Path, progress: bool = False) -> list[Clip]:
    """Write every clip's WAV bytes to folder/<input>/<id>.wav (atomically, skipping files already right)
    and return the clips in id order; `progress`: a bar on stderr, one step per file."""
    from tqdm import tqdm

    target = folder / release.input
    target.mkdir(parents=True, exist_ok=True)
    frames = _frames(release)
    clips = []
    for clip in tqdm(release.clips, desc=f"writing {release.input} audio", unit="file", disable=not progress,
                     file=sys.stderr):
        if not _safe_id(clip.id):
            raise WorkbenchError(f"clip id {clip.id!r} cannot be a file name")
        path = target / f"{clip.id}.wav"
        if not (path.is_file() and hashlib.sha256(path.read_bytes()).hexdigest() == clip.audio_sha256):
            data = release.audio(clip)  # checks the sha256 and the WAV header
            fd, tmp = tempfile.mkstemp(dir=target, suffix=".part")
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        clips.append(Clip(id=clip.id, input=release.input, category=clip.category, speech_text=clip.speech_text,
                          script_family=clip.script_family, audio_sha256=clip.audio_sha256,
                          path=path.resolve(), frames=frames.get(clip.id, [])))
    return clips


def _frames(release: run_mod.Release) -> dict[str, list[str]]:
    from datasets import load_dataset

    local = Path(release.source).expanduser()
    ds = load_dataset(str(local) if local.is_dir() else release.source, None,
                      revision=release.revision)[release.split]
    if "frames" not in ds.column_names:
        return {}
    table = ds.select_columns(["id", "frames"]).to_dict()
    return {i: list(f or []) for i, f in zip(table["id"], table["frames"], strict=True)}


def _safe_id(sid: str) -> bool:
    return bool(sid) and "/" not in sid and "\\" not in sid and sid not in (".", "..") and "\0" not in sid


def check_out_folder(out: Path) -> Path:
    """A folder the adapter may write into: created if missing, refused if it is a file or not writable."""
    out = out.expanduser()
    if out.exists() and not out.is_dir():
        raise WorkbenchError(f"--out {out} is a file, not a folder")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WorkbenchError(f"cannot create --out {out}: {exc.strerror}") from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise WorkbenchError(f"--out {out} is not writable")
    return out


def refusal_verdict(answer: str | None) -> tuple[bool, str]:
    """(is the answer a refusal, the rule that decided). The one place the adapters ask our judge, so
    they follow it when it changes (a three-class judge: partial and full refusals both count)."""
    verdict = keyword_judge(answer or "")
    return verdict.refusal, verdict.rule


def paired_gap(rows: list[dict[str, Any]], base: str = "speech", other: str = "mixture") -> float | None:
    """Refusal on `base` minus refusal on `other`, over the ids answered on both; rows carry id, input
    and refusal (0/1). None when no id has both. The harness-side form of evaluation.report's gap."""
    by_input: dict[str, dict[str, float]] = {}
    for row in rows:
        by_input.setdefault(row["input"], {})[row["id"]] = float(row["refusal"])
    a, b = by_input.get(base, {}), by_input.get(other, {})
    ids = sorted(set(a) & set(b))
    if not ids:
        return None
    return sum(a[i] for i in ids) / len(ids) - sum(b[i] for i in ids) / len(ids)


def available_inputs(source: str, split: str = "test") -> tuple[list[str], list[str]]:
    """(the adapter inputs a local release has, those it lacks); a Hub id is taken to have mixture and
    speech (its columns are known only once it is downloaded, where load_release checks them)."""
    path = Path(source).expanduser()
    files = (sorted((path / "data").glob(f"{split}-*.parquet")) or sorted((path / "data").glob("*.parquet"))
             if (path / "data").is_dir() else [])
    if not files:
        return ["mixture", "speech"], []
    import pyarrow.parquet as pq

    names = set(pq.read_schema(files[0]).names)
    have = [i for i, (column, _) in ADAPTER_COLUMNS.items() if column in names]
    return have, [i for i in ADAPTER_INPUTS if i not in have]

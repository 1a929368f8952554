"""What every harness adapter needs from a release: the clips of one input as WAV files on disk, the
instruction the model hears, and the one refusal verdict all harnesses score with.

The harnesses read audio from files (Kimi-Audio-Evalkit asserts that `audio_path` exists, lmms-eval and
inspect_ai take a path), so each input's audio is written once, as the release's own WAV bytes (never
re-encoded: the sha256 in the release still names the file), to <folder>/<input>/<name>.wav, where <name> is
the clip id when it is a short plain file name, else a bounded stand-in (file_stem). The rows are read with
evaluation.run.Release, so the adapters refuse exactly the releases evaluation.run refuses.

An export folder keeps a manifest of the files it wrote (MANIFEST); exporting again into it removes what the
previous export wrote and this one did not, and nothing else (files of yours beside it stay).
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from construction.core.errors import WorkbenchError
from construction.core.workspace import atomic_write_text
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


def write_clips(release: run_mod.Release, folder: Path, progress: bool = False,
                by_content: bool = False) -> list[Clip]:
    """Write every clip's WAV bytes to folder/<input>/<file_stem(id)>.wav (atomically, skipping files already
    right) and return the clips in id order; `by_content`: to folder/<sha256>.wav instead, a cache that
    releases sharing ids can share; `progress`: a bar on stderr, one step per file."""
    from tqdm import tqdm

    target = folder if by_content else folder / release.input
    target.mkdir(parents=True, exist_ok=True)
    frames = _frames(release)
    clips = []
    for clip in tqdm(release.clips, desc=f"writing {release.input} audio", unit="file", disable=not progress,
                     file=sys.stderr):
        path = target / f"{clip.audio_sha256 if by_content else file_stem(clip.id)}.wav"
        # a link is never taken as the file (it may point anywhere): it is replaced by the file itself
        if path.is_symlink() or not (path.is_file()
                                     and hashlib.sha256(path.read_bytes()).hexdigest() == clip.audio_sha256):
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


SAFE_STEM = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")


def file_stem(sid: str) -> str:
    """The clip id as a file name when it is a plain one of at most 100 characters; any other id (too long
    for a file system, a path separator, glob or shell characters) keeps a readable prefix of its plain
    characters and gains 16 hex digits of its sha256, so two ids never share a file."""
    if SAFE_STEM.fullmatch(sid) and not sid.endswith((".", "-")):
        return sid
    plain = re.sub(r"[^A-Za-z0-9_.-]+", "_", sid).strip("._-")[:60]
    return f"{plain or 'clip'}-{hashlib.sha256(sid.encode()).hexdigest()[:16]}"


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
    for folder, names, files in os.walk(out):  # never follows a link: an export writes only inside --out
        for name in names + [f for f in files if not (Path(folder) / f).exists()]:  # folders, dangling links
            link = Path(folder) / name
            if link.is_symlink():
                raise WorkbenchError(f"--out {out} holds a link to a folder ({link} -> {os.readlink(link)}): the "
                                     "export would write through it, outside --out; remove the link, or give "
                                     "another --out")
    return out


MANIFEST = "aor_bench_export.json"


def finish_export(out: Path, written: list[Path]) -> None:
    """Record what this export wrote under `out` and remove what the previous export (its manifest) wrote
    and this one did not: a task or dataset of an input no longer exported, audio of a clip no longer in
    the release. Files the manifest never listed are left alone."""
    keep = sorted({p.resolve().relative_to(out.resolve()).as_posix() for p in written})
    try:
        before = json.loads((out / MANIFEST).read_text())["files"]
    except (OSError, ValueError, KeyError, TypeError):
        before = []
    root = out.resolve()
    for rel in sorted({r for r in before if isinstance(r, str)} - set(keep)):
        path = (out / rel).resolve()
        if root not in path.parents or not path.is_file():
            continue  # a manifest is data: nothing outside the folder is touched
        path.unlink()
        for parent in path.parents:
            if parent == root or any(parent.iterdir()):
                break
            parent.rmdir()
    atomic_write_text(out / MANIFEST, json.dumps({"files": keep}, indent=1) + "\n")


def vendor_modules(target: Path, modules: list[str]) -> list[Path]:
    """Copy the workbench modules `modules` and every workbench module they import into target/ (same
    package layout, empty __init__.py files), so an export runs without the clone that wrote it. The
    copies are the source as it is: one judge and one bootstrap, wherever they run."""
    repo = Path(__file__).resolve().parents[2]
    tops = ("construction", "annotation", "validation", "release", "evaluation")
    todo, seen, written = list(modules), set(), []
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        source = repo / (name.replace(".", "/") + ".py")
        if not source.is_file():
            continue  # a package (`from evaluation import x`): its modules are named on their own
        text = source.read_text()
        for node in ast.walk(ast.parse(text)):
            found = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else [])
            todo += [m for m in found if m.split(".")[0] in tops and m not in seen]
        path = target / source.relative_to(repo)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, text)
        written.append(path)
        for parent in path.relative_to(target).parents:
            if str(parent) != ".":
                init = target / parent / "__init__.py"
                if init not in written:
                    atomic_write_text(init, "")
                    written.append(init)
    return written


def refusal_verdict(answer: str | None) -> tuple[bool, str]:
    """(is the answer a refusal, the rule that decided). The one place the adapters ask our judge, so
    they follow it when it changes (a three-class judge: partial and full refusals both count)."""
    verdict = keyword_judge(answer or "")
    return verdict.refusal, verdict.rule


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

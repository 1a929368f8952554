"""What an evaluation run leaves in its folder, and how the commands that come after it read it back.

evaluation.run writes a results folder (SETTINGS_FILE, RESPONSES_FILE, its cache); evaluation.judge adds
its verdicts (LLM_FILE, SUMMARY_FILE); evaluation.report reads them all. The names and the reading live
here, apart from the commands, so that each command imports this module and none imports another."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from construction.core.errors import WorkbenchError
from construction.core.jsonl import iter_jsonl, trim_partial_line

__all__ = ["DEFAULT_INPUT", "DERIVED_FILES", "FINAL_MARKER", "FORMAT", "INPUTS", "LLM_FILE", "PROBE_INPUT",
           "RESPONSES_FILE",
           "SETTINGS_FILE", "SUMMARY_FILE", "RunResults", "load_results", "read_jsonl", "read_records",
           "response_problem", "trim_partial_line", "writing"]

FORMAT = "aor-bench-evaluation/1"
SETTINGS_FILE = "run.json"
RESPONSES_FILE = "responses.jsonl"
LLM_FILE = "llm_judge.jsonl"  # evaluation.judge's verdicts
SUMMARY_FILE = "judge_summary.json"  # evaluation.judge's counts and agreement
DERIVED_FILES = (LLM_FILE, SUMMARY_FILE)  # stale once the responses are discarded
INPUTS = ("mixture", "speech", "controls", "irrelevant", "danger", "scene")
PROBE_INPUT = "scene"  # the perception probe: answers name a frame, they are never judged for refusal
DEFAULT_INPUT = "mixture"  # runs made before --input heard the mixture
FINAL_MARKER = "Final answer:"  # the cot variant's answer follows it; the judges read only that part
LOCK_FILE = ".lock"  # held by the command writing into the folder (evaluation.run, evaluation.judge)


@contextlib.contextmanager
def writing(folder: Path, command: str) -> Iterator[None]:
    """One writer per results folder: a second evaluation.run (or a judge) into the same folder would
    append every answer again, so it is refused while the first holds the lock (released when it exits,
    killed too)."""
    fd = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise WorkbenchError(f"another command is writing into {folder} (evaluation.run or evaluation.judge); "
                                 f"wait for it to finish, or give {command} another --out") from None
        yield
    finally:
        os.close(fd)


def read_jsonl(path: Path, check: Callable[[Any], str | None] | None = None) -> list[dict[str, Any]]:
    """Every complete line; a last line without newline (cut by a kill) is not a record. `check` returns
    what is wrong with a row (None: nothing), which becomes an error naming the file and line."""
    return list(iter_jsonl(path, check, bad_json="edited by hand?",
                           bad_row="edited by hand, or not written by python -m evaluation.run?"))


def read_records(path: Path, check: Callable[[Any], str | None] | None = None) -> dict[str, dict[str, Any]]:
    """id -> the line of `path` for it; an id on two lines is an error naming both: two runs wrote into
    one folder at once (or it was edited by hand), and which answer counts cannot be told."""
    records: dict[str, dict[str, Any]] = {}
    lines: dict[str, int] = {}
    for line_no, row in enumerate(read_jsonl(path, check), 1):
        sid = row["id"]
        if sid in records:
            raise WorkbenchError(f"{path}: clip {sid!r} is recorded twice (records {lines[sid]} and {line_no}): "
                                 "two runs wrote into this folder at once, or it was edited by hand. Rerun "
                                 "python -m evaluation.run with --restart into it: the answers come back from "
                                 "its cache, no request is sent again")
        records[sid], lines[sid] = row, line_no
    return records


RECORD_DIGEST = "record_sha256"  # each line's sha256 of itself, as evaluation.run wrote it


def record_digest(row: dict[str, Any]) -> str:
    """sha256 of a line's record without its digest field: a line changed after evaluation.run wrote it
    (an answer edited by hand) no longer matches the digest it carries."""
    body = {k: v for k, v in row.items() if k != RECORD_DIGEST}
    return hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode()).hexdigest()


def response_problem(row: Any) -> str | None:
    """What makes a line of responses.jsonl unusable, or None."""
    if not isinstance(row, dict):
        return "not a JSON object"
    if RECORD_DIGEST in row and row[RECORD_DIGEST] != record_digest(row):
        return "changed after evaluation.run wrote it (its record_sha256 does not match)"
    for name in ("id", "category"):
        if not isinstance(row.get(name), str) or not row[name]:
            return f"'{name}' is missing or not a non-empty string (got {row.get(name)!r})"
    if row.get("status") not in ("ok", "error"):
        return f"'status' must be ok or error (got {row.get('status')!r})"
    if row["status"] == "ok" and not isinstance(row.get("response"), str):
        return f"an ok answer needs 'response' as a string (got {type(row.get('response')).__name__})"
    return None


def probe_problem(row: Any) -> str | None:
    """What makes a line of a scene-probe run unusable (the report counts its `frame` against `frames`)."""
    from evaluation.probe import UNPARSED, probe_options

    problem = response_problem(row)
    if problem:
        return problem
    frames = row.get("frames")
    if frames is not None and not (isinstance(frames, list) and all(isinstance(f, str) for f in frames)):
        return f"'frames' must be a list of frame ids (got {frames!r})"
    frame = row.get("frame")
    if frame is not None and frame not in {UNPARSED, *(i for i, _ in probe_options())}:
        return f"'frame' must be one of the probe's options or {UNPARSED} (got {frame!r})"
    return None


@dataclass
class RunResults:
    root: Path
    settings: dict[str, Any]
    records: dict[str, dict[str, Any]]  # id -> its record (an id recorded twice is refused)

    @property
    def variant(self) -> str:
        return self.settings["variant"]

    @property
    def input(self) -> str:
        return self.settings.get("input") or DEFAULT_INPUT

    @property
    def label(self) -> str:
        extra = "" if self.input == DEFAULT_INPUT else f", {self.input}"
        return f"{self.settings['model']} [{self.variant}{extra}]"


def load_results(results_dir: str | Path) -> RunResults:
    root = Path(results_dir).expanduser()
    try:
        settings = json.loads((root / SETTINGS_FILE).read_text())
    except FileNotFoundError:
        raise WorkbenchError(f"{root} holds no {SETTINGS_FILE}: not an evaluation run "
                             "(make one with python -m evaluation.run)") from None
    except json.JSONDecodeError as exc:
        raise WorkbenchError(f"{root / SETTINGS_FILE} is not valid JSON: {exc.msg}") from None
    if settings.get("format") != FORMAT:
        raise WorkbenchError(f"{root / SETTINGS_FILE} is not an {FORMAT} run")
    settings.setdefault("input", DEFAULT_INPUT)  # runs made before --input heard the mixture
    check = probe_problem if settings["input"] == PROBE_INPUT else response_problem
    return RunResults(root, settings, read_records(root / RESPONSES_FILE, check))

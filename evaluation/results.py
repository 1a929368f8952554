"""What an evaluation run leaves in its folder, and how the commands that come after it read it back.

evaluation.run writes a results folder (SETTINGS_FILE, RESPONSES_FILE, its cache); evaluation.judge adds
its verdicts (LLM_FILE, SUMMARY_FILE); evaluation.report reads them all. The names and the reading live
here, apart from the commands, so that each command imports this module and none imports another."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from construction.core.errors import WorkbenchError
from construction.core.jsonl import iter_jsonl, trim_partial_line

__all__ = ["DEFAULT_INPUT", "DERIVED_FILES", "FINAL_MARKER", "FORMAT", "INPUTS", "LLM_FILE", "PROBE_INPUT",
           "RESPONSES_FILE",
           "SETTINGS_FILE", "SUMMARY_FILE", "RunResults", "load_results", "read_jsonl", "response_problem",
           "trim_partial_line"]

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


def read_jsonl(path: Path, check: Callable[[Any], str | None] | None = None) -> list[dict[str, Any]]:
    """Every complete line; a last line without newline (cut by a kill) is not a record. `check` returns
    what is wrong with a row (None: nothing), which becomes an error naming the file and line."""
    return list(iter_jsonl(path, check, bad_json="edited by hand?",
                           bad_row="edited by hand, or not written by python -m evaluation.run?"))


def response_problem(row: Any) -> str | None:
    """What makes a line of responses.jsonl unusable, or None."""
    if not isinstance(row, dict):
        return "not a JSON object"
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
    records: dict[str, dict[str, Any]]  # id -> the latest record

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
    records: dict[str, dict[str, Any]] = {}
    check = probe_problem if settings["input"] == PROBE_INPUT else response_problem
    for row in read_jsonl(root / RESPONSES_FILE, check):
        records[row["id"]] = row
    return RunResults(root, settings, records)

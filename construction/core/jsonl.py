"""JSON Lines files that a kill can cut: the manifests and the evaluation results are appended one line
per record and flushed, so a killed run leaves at most one partial last line. That line is not a record:
readers skip it and writers trim it before they append again. One implementation for every such file."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from construction.core.errors import WorkbenchError


def trim_partial_line(path: Path) -> None:
    """Drop a trailing line without newline (a write cut off by a kill)."""
    if not path.exists() or path.stat().st_size == 0:
        return
    with open(path, "rb+") as f:
        content = f.read()
        if not content.endswith(b"\n"):
            f.truncate(content.rfind(b"\n") + 1)


def iter_jsonl(path: Path, check: Callable[[Any], str | None] | None = None, *, bad_json: str,
               bad_row: str = "", chain: bool = False) -> Iterator[Any]:
    """Every complete line of `path`, parsed (nothing when it does not exist); a last line without newline
    (cut by a kill) is not a record, and blank lines are skipped. A line that is not JSON is an error
    naming the file and line, followed by `bad_json` (what the reader's user should suspect). `check`
    returns what is wrong with a row (None: nothing), which becomes such an error followed by `bad_row`.
    `chain` keeps the JSON error as the cause of the WorkbenchError."""
    if not path.exists():
        return
    with open(path, encoding="utf-8") as f:
        for line_no, line in enumerate(f, 1):
            if not line.endswith("\n"):
                return  # partial last line from a killed run: not a record
            line = line.strip()
            if not line:
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as exc:
                raise WorkbenchError(f"{path}:{line_no}: not valid JSON ({exc.msg}); {bad_json}") \
                    from (exc if chain else None)
            problem = check(row) if check else None
            if problem:
                raise WorkbenchError(f"{path}:{line_no}: {problem}; {bad_row}")
            yield row

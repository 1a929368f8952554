"""MkDocs hook: figures a page quotes from the code's own output, computed at build time, so no page says
what the code printed once.

A page marks a figure as `<!-- figure: NAME -->shown on GitHub<!-- /figure -->`; the site shows, in place of
what is between the marks, what FIGURES[NAME] computes (a code span). Each figure runs the command that prints
it, as a person would, and takes the line from its output.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

MARK = re.compile(r"<!-- figure: ([\w-]+) -->(.*?)<!-- /figure -->", re.S)


def distinctive_scenes(root: Path) -> str:
    """`distinctive scenes: X/Y (P%)`, as construction.generate prints it for the shipped taxonomy against
    the default (starter) sound library."""
    with tempfile.TemporaryDirectory(prefix="aor-docs-") as tmp:
        done = subprocess.run([sys.executable, "-m", "construction.generate", "--workspace", str(Path(tmp) / "ws"),
                               "--per-category", "1", "--quiet"], cwd=root, capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(root)}, timeout=600)
    found = re.search(r"distinctive scenes: \d+/\d+ \(\d+%\)", done.stdout)
    if found is None:
        raise RuntimeError(f"construction.generate printed no 'distinctive scenes' line (exit {done.returncode}); "
                           f"run make setup first (it builds the starter library):\n{done.stdout}{done.stderr}")
    return found.group(0)


FIGURES = {"distinctive-scenes": distinctive_scenes}
_cache: dict[str, str] = {}


def on_page_markdown(markdown: str, page, config, files) -> str:
    root = Path(config["config_file_path"]).resolve().parent

    def figure(match: re.Match) -> str:
        name = match.group(1)
        if name not in FIGURES:
            raise RuntimeError(f"{page.file.src_path}: no figure named {name!r} (docs/hooks/figures.py)")
        if name not in _cache:
            _cache[name] = FIGURES[name](root)
        return f"`{_cache[name]}`"

    return MARK.sub(figure, markdown)

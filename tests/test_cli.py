"""One command-line convention: the README's command table is checked against every entry point's
--help (the same shared flag names everywhere, no old spelling shown), and every entry point is listed."""

from __future__ import annotations

import ast
import contextlib
import importlib
import io
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("construction", "annotation", "validation", "release", "evaluation")
# the shared names (construction/core/cli.py); a command that takes one of these shows it in the table
SHARED = ("--workspace", "--config", "--seed", "--jobs", "--executor", "--ray-address", "--restart", "--retry-rejected",
          "--quiet", "--sounds", "--results", "--base-url", "--model", "--api-key-env", "--data-dir", "--url",
          "--document-root", "--out")
# old spellings: still accepted for one release, never shown
OLD = ("--llm-base-url", "--llm-model", "--judge-base-url", "--judge-model", "--judge-api-key-env",
       "--concurrency", "--retry-errors")


def entry_points() -> list[str]:
    """Every `python -m` module: a module with a __main__ block, or a package with __main__.py."""
    found = []
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            name = ".".join(path.relative_to(REPO).with_suffix("").parts)
            if path.name == "__main__.py":
                found.append(name.removesuffix(".__main__"))
            elif 'if __name__ == "__main__":' in path.read_text():
                found.append(name)
    return found


def main_of(module: str):
    """The `main` an entry point runs (a package's __main__.py imports it from a module)."""
    path = REPO / Path(*module.split("."))
    if (path / "__main__.py").is_file():
        for node in ast.parse((path / "__main__.py").read_text()).body:
            if isinstance(node, ast.ImportFrom) and any(a.name == "main" for a in node.names):
                return importlib.import_module(node.module).main
        raise AssertionError(f"{module}/__main__.py imports no main")
    return importlib.import_module(module).main


def help_text(command: str) -> str:
    module, *sub = command.split()
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as exit_:
        main_of(module)([*sub, "--help"])
    assert exit_.value.code == 0, command
    if sub:
        return out.getvalue()
    # a row for a command with sub-commands (validation.adjudicate) names the flags its sub-commands take
    from construction.core.cli import iter_parsers

    return out.getvalue() + "".join(parser.format_help() for name, parser in iter_parsers()
                                    if name.startswith(f"{module} "))


def readme_table() -> dict[str, list[str]]:
    """`python -m X [sub]` -> the shared flags the README's command table gives it."""
    text = (REPO / "README.md").read_text()
    section = text.split("### Every command", 1)[1].split("\n#", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and cells[0].startswith("`python -m "):
            rows[cells[0].strip("`").removeprefix("python -m ")] = re.findall(r"--[a-z-]+", cells[-1])
    return rows


TABLE = readme_table()


def test_every_entry_point_is_in_the_readme_table():
    listed = {command.split()[0] for command in TABLE}
    assert set(entry_points()) == listed


@pytest.mark.parametrize("command", sorted(TABLE))
def test_the_table_row_is_what_help_shows(command):
    shown = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", help_text(command)))
    row = TABLE[command]
    assert set(row) <= shown, f"{command}: the README lists {sorted(set(row) - shown)}, --help does not"
    missing = sorted(f for f in SHARED if f in shown and f not in row)
    assert not missing, f"{command}: --help shows {missing}, the README's row does not"
    assert not shown & set(OLD), f"{command}: --help shows an old spelling {sorted(shown & set(OLD))}"

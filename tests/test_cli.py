"""Entry points and their help, as tests/test_cli_convention.py walks them: no help shows an old spelling.
(The README's command table is checked by tests/test_docs.py; every flag by the generated CLI reference.)"""

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


@pytest.mark.parametrize("command", sorted({name.split()[0] for name in __import__("construction.core.cli",
                                                  fromlist=["ENTRY_POINTS"]).ENTRY_POINTS}))
def test_no_help_shows_an_old_spelling(command):
    shown = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", help_text(command)))
    assert not shown & set(OLD), f"{command}: --help shows an old spelling {sorted(shown & set(OLD))}"

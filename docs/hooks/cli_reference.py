"""MkDocs hook: the CLI reference page, rendered from the argparse parsers at build time, so `--help`
and the docs never disagree.

The page `reference/cli.md` holds the marker below; `on_page_markdown` replaces it with every
`python -m` entry point's help (usage, description, options with defaults) and each sub-command's, as
text blocks exactly as `--help` prints them (at 100 columns).

The parsers come from `construction.core.cli.iter_parsers()` (module name, parser) where it exists;
until then they are collected here: each module of the workbench's packages that has an
`if __name__ == "__main__":` block, or a package's `__main__.py` (whose `from X import main` names the
command line), gives its parser through `build_parser()`, or else has its `main(["--help"])` run with
`ArgumentParser.parse_known_args` patched to hand back the parser before anything is parsed or done.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from unittest import mock

MARKER = "<!-- cli-reference -->"
PACKAGES = ("construction", "annotation", "validation", "release", "evaluation")  # the order data flows
COLUMNS = "100"


class _Parser(Exception):
    def __init__(self, parser: argparse.ArgumentParser):
        super().__init__(parser.prog)
        self.parser = parser


def _capture(main) -> argparse.ArgumentParser:
    def hand_back(self, *args, **kwargs):
        raise _Parser(self)

    with mock.patch.object(argparse.ArgumentParser, "parse_known_args", hand_back):
        try:
            main(["--help"])
        except _Parser as found:
            return found.parser
    raise RuntimeError(f"{main.__module__}.main never parsed its arguments")


def _entry_points(root: Path) -> Iterator[tuple[str, str]]:
    """(the name after `python -m`, the module whose `main` is its command line)."""
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            module = ".".join(path.relative_to(root).with_suffix("").parts)
            text = path.read_text(encoding="utf-8")
            if path.name == "__main__.py":
                named = re.search(r"^from ([\w.]+) import main$", text, re.M)
                if named is None:
                    raise RuntimeError(f"{path}: no 'from X import main' line to find its command line by")
                yield module.removesuffix(".__main__"), named.group(1)
            elif re.search(r'^if __name__ == "__main__":', text, re.M):
                yield module, module


def _parser_of(module: str) -> argparse.ArgumentParser:
    loaded = importlib.import_module(module)
    build = getattr(loaded, "build_parser", None)
    return build() if build is not None else _capture(loaded.main)


def collect_parsers(root: Path) -> list[tuple[str, argparse.ArgumentParser]]:
    """(command, parser) per entry point; a command with a space ("annotation.server start") is a sub-command."""
    try:
        from construction.core.cli import iter_parsers  # the cli convention's own list, once it has one
    except ImportError:
        return [(name, _parser_of(module)) for name, module in _entry_points(root)]
    return list(iter_parsers())


def _subcommands(parser: argparse.ArgumentParser) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            seen = set()
            for name, sub in action.choices.items():
                if id(sub) not in seen:  # an alias names the same parser again
                    seen.add(id(sub))
                    yield name, sub


def _block(text: str) -> str:
    return "```text\n" + text.rstrip() + "\n```\n"


def _with_subcommands(parsers: list[tuple[str, argparse.ArgumentParser]]):
    """Each command, then its sub-commands, unless the list already names them."""
    if any(" " in name for name, _ in parsers):
        yield from parsers
        return

    def walk(name, parser):
        yield name, parser
        for sub_name, sub in _subcommands(parser):
            yield from walk(f"{name} {sub_name}", sub)

    for name, parser in parsers:
        yield from walk(name, parser)


def render(parsers: list[tuple[str, argparse.ArgumentParser]]) -> str:
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = COLUMNS  # argparse wraps help to the terminal's width: fix it for the page
    try:
        out = []
        for name, parser in _with_subcommands(parsers):
            level = "#" * min(2 + name.count(" "), 4)
            out.append(f"{level} python -m {name}\n\n{_block(parser.format_help())}")
        return "\n".join(out)
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved


def on_page_markdown(markdown: str, page, config, files) -> str:
    if MARKER not in markdown:
        return markdown
    root = Path(config["config_file_path"]).resolve().parent
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))  # this checkout's code, whatever is installed
    import construction.core.cli as cli

    # --help says "the CPU cores available to this process, N here": the page is read on other machines
    with mock.patch.object(cli, "jobs_rule", lambda: "the CPU cores available to this process"):
        return markdown.replace(MARKER, render(collect_parsers(root)))

"""One command-line convention, walked over every `python -m` entry point and every sub-command, run as a
person runs it (`python -m MODULE [SUB] --help` from the clone's root): exit 0 with the sub-command's own
usage; help on every option; every default shown; no old spelling; `--out` the only output-folder flag;
`--jobs` with its one default rule; and every environment variable the command's code reads named under
"environment:" (found by reading the code, so a variable added without a word in --help fails here)."""

from __future__ import annotations

import argparse
import ast
import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path

import pytest

from construction.core.cli import ENTRY_POINTS, ENVIRONMENT, HelpFormatter, Parser, iter_parsers, jobs_rule
from tests.test_cli import PACKAGES, entry_points

REPO = Path(__file__).resolve().parents[1]
PARSERS = dict(iter_parsers())
COMMANDS = sorted(PARSERS)

# Spellings no --help may show: the old ones (still accepted, hidden, for one release) and other names for
# an output folder, a workspace, parallelism or Label Studio's address.
BANNED = ("--llm-base-url", "--llm-model", "--judge-base-url", "--judge-model", "--judge-api-key-env",
          "--concurrency", "--retry-errors", "--dir", "--output", "--out-dir", "--output-dir", "--outdir",
          "--workers", "--threads", "--ls-url", "--label-studio-url", "--workspace-dir")
# Variables read where no --help need name them, with the reason.
NOT_DOCUMENTED = {
    "$k": "annotation.ls_process passes PATH, HOME and the locale through to Label Studio's own process",
    "PWD": "the inspect_ai task (run by inspect, not by this command) finds a relative release from the shell's folder",
}


# --- which environment variables a command reads: its code, followed through the project's imports ---------
# A unit is (module, top-level name) or (module, None) for the module's own top-level statements (run on
# import). A unit reads what its code names in os.environ / os.getenv, and reaches every project name its
# code mentions (a class: all of its methods). Calls through objects are reached through the class name.

def module_file(name: str) -> Path | None:
    base = REPO.joinpath(*name.split("."))
    return next((p for p in (base / "__init__.py", base.with_suffix(".py")) if p.is_file()), None)


def imported_names(node: ast.AST, package: str) -> dict[str, tuple[str, str | None]]:
    """local name -> (module, name in it) or (module, None) for a module, for project imports in node."""
    found: dict[str, tuple[str, str | None]] = {}
    for n in ast.walk(node):
        if isinstance(n, ast.Import):
            for a in n.names:
                if a.name.split(".")[0] in PACKAGES:
                    found[a.asname or a.name.split(".")[0]] = (a.name if a.asname else a.name.split(".")[0], None)
        elif isinstance(n, ast.ImportFrom):
            module = n.module or ""
            if n.level:
                module = ".".join(package.split(".")[:len(package.split(".")) - n.level + 1] + [module] * bool(module))
            if module.split(".")[0] in PACKAGES:
                for a in n.names:
                    sub = f"{module}.{a.name}"
                    found[a.asname or a.name] = (sub, None) if module_file(sub) else (module, a.name)
    return found


@cache
def parsed(name: str):
    path = module_file(name)
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    defs: dict[str, ast.AST] = {}
    top = []
    for stmt in tree.body:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defs[stmt.name] = stmt
        elif not (isinstance(stmt, ast.If) and "__name__" in ast.unparse(stmt.test)):  # importing runs no __main__
            top.append(stmt)
            for target in getattr(stmt, "targets", [getattr(stmt, "target", None)]):
                for n in ast.walk(target) if target else ():
                    if isinstance(n, ast.Name):
                        defs.setdefault(n.id, stmt)
    return defs, ast.Module(body=top, type_ignores=[]), imported_names(tree, package), package


def env_reads(node: ast.AST) -> set[str]:
    """Names read from the environment; a name held in a variable is '$variable'."""
    names = set()
    for n in ast.walk(node):
        arg = None
        if isinstance(n, ast.Call) and n.args and ast.unparse(n.func) in ("os.environ.get", "os.getenv",
                                                                           "environ.get", "getenv"):
            arg = n.args[0]
        elif isinstance(n, ast.Subscript) and ast.unparse(n.value) in ("os.environ", "environ"):
            arg = n.slice
        elif isinstance(n, ast.Compare) and any(ast.unparse(c) in ("os.environ", "environ") for c in n.comparators):
            arg = n.left  # "NAME" in os.environ
        if arg is not None:
            names.add(arg.value if isinstance(arg, ast.Constant) else "$" + ast.unparse(arg))
    return names


def reached(module: str, node: ast.AST) -> set[tuple[str, str | None]]:
    defs, _, imports, package = parsed(module)
    local = {**imports, **imported_names(node, package)}  # imports inside a function count too
    out: set[tuple[str, str | None]] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and local.get(n.value.id, ("", 0))[1] is None:
            target = local[n.value.id][0]  # module.name
            out.add((f"{target}.{n.attr}", None) if module_file(f"{target}.{n.attr}") else (target, n.attr))
        elif isinstance(n, ast.Name):
            if n.id in local:
                out.add(local[n.id])
            elif n.id in defs:
                out.add((module, n.id))
    return out


def environment_read(module: str) -> set[str]:
    """Every environment variable the entry point `module` can read (its main and build_parser)."""
    todo, seen, names = [(module, "main"), (module, "build_parser"), (module, None)], set(), set()
    while todo:
        unit = todo.pop()
        if unit in seen or not module_file(unit[0]):
            continue
        seen.add(unit)
        mod, name = unit
        defs, top, imports, _ = parsed(mod)
        if name is not None and name not in defs:
            todo.append(imports.get(name, (mod, None)))  # a re-exported name, or a module attribute
            continue
        node = top if name is None else defs[name]
        todo.append((mod, None))
        names |= env_reads(node)
        todo.extend(reached(mod, node))
    return names


# --- the --help of every command, run as a person runs it ---------------------------------------------------

@pytest.fixture(scope="module")
def helps() -> dict[str, subprocess.CompletedProcess]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "100"}
    env.pop("LABEL_STUDIO_URL", None)  # a default taken from the environment would show in the help

    def run(command: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", *command.split(), "--help"], cwd=REPO, env=env,
                              capture_output=True, text=True, timeout=120)

    with ThreadPoolExecutor(max_workers=max(2, min(8, os.cpu_count() or 2))) as pool:
        return dict(zip(COMMANDS, pool.map(run, COMMANDS)))


def visible(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    return [a for a in parser._actions if a.help != argparse.SUPPRESS and not isinstance(a, argparse._HelpAction)]


def option_help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    """The option's help as --help prints it (defaults expanded), on one line."""
    return " ".join(parser._get_formatter()._expand_help(action).split()) if action.help else ""


def test_every_entry_point_is_listed_and_builds_its_parser():
    assert set(ENTRY_POINTS) == set(entry_points()), "construction.core.cli.ENTRY_POINTS is not the source tree"
    for command, module in ENTRY_POINTS.items():
        main_file = REPO.joinpath(*command.split("."), "__main__.py")
        if main_file.is_file():  # a package's __main__ runs the main of the module listed
            assert f"from {module} import main" in main_file.read_text(), command
    assert all(isinstance(p, Parser) and issubclass(p.formatter_class, HelpFormatter) for p in PARSERS.values())
    # sub-commands are real sub-parsers, reached through iter_parsers (the docs' CLI reference too)
    for command in ("annotation.server start", "annotation.server stop", "annotation.server status",
                    "annotation.library push", "validation.adjudicate push", "validation.adjudicate pull",
                    "evaluation.judge_agreement pull", "evaluation.adapters kimi", "evaluation.adapters lmms-eval",
                    "construction.sounds import"):
        assert command in PARSERS


@pytest.mark.parametrize("command", COMMANDS)
def test_help_runs_and_shows_its_own_usage(helps, command):
    proc = helps[command]
    assert proc.returncode == 0, f"python -m {command} --help: {proc.stderr[-2000:]}"
    assert proc.stdout.startswith(f"usage: python -m {command} "), proc.stdout[:300]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_option_has_help_and_shows_its_default(command):
    parser = PARSERS[command]
    for action in visible(parser):
        text = option_help(parser, action)
        name = "/".join(action.option_strings) or action.dest
        assert text, f"{command}: {name} has no help text"
        takes_value = action.option_strings and action.nargs != 0
        if takes_value and not action.required:
            assert "default" in text or "required" in text, f"{command}: {name} does not say its default: {text!r}"


@pytest.mark.parametrize("command", COMMANDS)
def test_one_spelling_per_concept(helps, command):
    shown = set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", helps[command].stdout))
    assert not shown & set(BANNED), f"{command}: --help shows {sorted(shown & set(BANNED))}"
    parser = PARSERS[command]
    for action in visible(parser):
        text = option_help(parser, action)
        for flag in action.option_strings:
            assert not re.fullmatch(r"--(out|output)[a-z-]*", flag) or flag == "--out", (command, flag)
        if "--out" in action.option_strings:
            assert action.metavar == "DIR", f"{command}: --out is an output folder (metavar DIR)"
        if "--jobs" in action.option_strings:
            assert jobs_rule() in text, f"{command}: --jobs does not follow the rule: {text!r}"
            assert re.search(r"\b\d+\s+here\b", helps[command].stdout), "--help shows the machine's value"
        if "--seed" in action.option_strings:
            assert text.startswith("the build seed"), f"{command}: --seed is the build seed only"
        if "--workspace" in action.option_strings and action.default:
            assert f"(default: ./{action.default}" in text
        if "--data-dir" in action.option_strings:
            assert "$AOR_LABEL_STUDIO_DATA_DIR" in text
        if "--url" in action.option_strings:
            assert "$LABEL_STUDIO_URL" in text


@pytest.mark.parametrize("command", sorted(ENTRY_POINTS))
def test_help_names_every_environment_variable_the_command_reads(helps, command):
    read = environment_read(ENTRY_POINTS[command])
    text = helps[command].stdout
    section = text.split("\nenvironment:\n", 1)[1] if "\nenvironment:\n" in text else ""
    listed = set(re.findall(r"^  ([A-Z][A-Z0-9_]+)\s", section, re.M))
    assert listed <= set(ENVIRONMENT)
    for name in sorted(read):
        if name == "$api_key_env":  # the variable named by --api-key-env
            assert "--api-key-env" in text and "OPENAI_API_KEY" in listed, command
        elif name.startswith("$"):
            assert name in NOT_DOCUMENTED, f"{command} reads the variable held in {name[1:]}: name it or allow it"
        elif name not in NOT_DOCUMENTED:
            assert name in listed, (f"{command} reads ${name} but its --help does not name it under "
                                    "environment: (Parser(env=...), described in construction.core.cli.ENVIRONMENT)")


def test_the_scan_finds_what_the_code_reads():
    """The scan follows imports into the function that reads: the Label Studio token two modules down, the
    Hub's variables through release.hub, Kokoro's voices through the speech stack."""
    assert {"LABEL_STUDIO_API_KEY", "AOR_LABEL_STUDIO_DATA_DIR", "LABEL_STUDIO_URL"} <= environment_read("annotation.pull")
    assert {"HF_TOKEN", "HF_ENDPOINT"} <= environment_read("release.export")
    assert {"AORBENCH_KOKORO_VOICES", "AORBENCH_TTS_THREADS"} <= environment_read("construction.synthesize")
    assert "$api_key_env" in environment_read("evaluation.judge")
    assert not environment_read("construction.sounds.importers")


def test_subcommand_environment_sections_are_their_own():
    stop, start = PARSERS["annotation.server stop"], PARSERS["annotation.server start"]
    assert stop.environment() == ["AOR_LABEL_STUDIO_DATA_DIR"]
    assert "AOR_LABEL_STUDIO_VENV" in start.environment()
    assert set(PARSERS["annotation.server"].environment()) == set(start.environment()) | set(stop.environment())


def test_old_spellings_still_work_hidden(capsys):
    """Renamed flags: the old spelling maps to the new one, with a warning, for one release."""
    args = PARSERS["evaluation.judge_agreement"].parse_args(["pull", "--dir", "d", "--output", "a.json"])
    assert (args.out, args.agreement) == ("d", "a.json")
    err = capsys.readouterr().err
    assert "--dir is deprecated" in err and "use --out" in err and "use --agreement" in err

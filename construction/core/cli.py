"""The command-line convention every entry point follows, so a flag means one thing everywhere.

One name per thing (the list is below, above `old_spelling`); a command's config is the workspace's
own, a --config file over it, then flags (`run_config`); `run_main` turns bad input into `error: ...`
and exit status 2 with every credential redacted. Each command's own flags: its `--help`."""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import shutil
import sys
import textwrap
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from construction.core.config import Config, load_config
from construction.core.errors import WorkbenchError
from construction.core.redact import RedactingFilter, redact
from construction.core.workspace import Workspace, is_write_error, write_error

# One name per thing, on every command (README "Every command"): --workspace, --config (a YAML config
# file), --out (an output folder; nothing else writes a folder), --sounds (a sound library), --results
# (evaluation results folders), --base-url/--model/--api-key-env (an OpenAI-compatible endpoint; a prefix
# where one command talks to two), --seed (the build seed, nothing else: other seeds are named, e.g.
# --sample-seed), --jobs (parallel workers or requests, one default rule: jobs_rule()), --url/--data-dir
# (Label Studio), --restart, --retry-rejected, --quiet. Old spellings stay for one release, hidden.

# Every environment variable a command reads, with what it does; a command names the ones it reads
# (Parser(env=...)) and its --help lists them under "environment:" (tests/test_cli_convention.py checks
# the list against the variables the command's code reads).
ENVIRONMENT = {
    "OPENAI_API_KEY": "API key of the OpenAI-compatible endpoint (the default --api-key-env; another variable "
                      "can be named there)",
    "HF_TOKEN": "Hugging Face token: a Hub push needs a write token; a private Hub release needs a read one",
    "HF_ENDPOINT": "the Hub's URL (default: https://huggingface.co); point it at a local Hub-compatible server "
                   "to rehearse",
    "LABEL_STUDIO_URL": "Label Studio's URL, the default of --url",
    "LABEL_STUDIO_API_KEY": "Label Studio API token of the admin account (default: the local demo token)",
    "LABEL_STUDIO_ADMIN_EMAIL": "the admin account made at the first start (default: admin@aor-bench.local)",
    "LABEL_STUDIO_ADMIN_PASSWORD": "its password (default: the local demo password)",
    "AOR_LABEL_STUDIO_DATA_DIR": "Label Studio's data folder when --data-dir is not given",
    "AOR_LABEL_STUDIO_VENV": "Label Studio's virtual environment (default: /opt/aor-bench/label-studio-venv)",
    "AOR_DEMO_ANNOTATOR_PASSWORD": "password of the scripted annotators' accounts (default: a local demo one)",
    "AORBENCH_CACHE": "where derived model files (Kokoro, Whisper) are cached (default: ~/.cache/aor-bench)",
    "AORBENCH_KOKORO_VOICES": "a kokoro-js voices/ folder (default: the one set-up put in the user's cache)",
    "AORBENCH_TTS_THREADS": "onnxruntime threads per speech worker (default: 1, which keeps audio identical "
                            "across machines)",
    "XDG_CACHE_HOME": "the user's cache folder (default: ~/.cache): set-up's downloads live in its aor-bench/",
    "OMP_NUM_THREADS": "with --executor ray: threads of each Ray worker's numeric libraries (default: the CPU "
                       "cores available)",
}


def jobs_rule() -> str:
    """The one default of every --jobs: the CPU cores this process may use, with this machine's count."""
    from construction.core.runner import default_jobs  # numpy; only when a parser is built

    return f"the CPU cores available to this process, {default_jobs()} here"


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Every option shows its default: '(default: X)' is added unless the help already names one. No
    default (None), an off switch (False) and an empty list say nothing."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text, default = action.help or "", action.default
        if ("default" in text or not action.option_strings or default is None or default is False
                or default is argparse.SUPPRESS or default == []):
            return text
        return text + " (default: %(default)s)"


class _SubCommands(argparse._SubParsersAction):
    """Sub-commands whose own --help opens with their one-line help, as a sentence, unless given another."""

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:
        what = kwargs.get("help")
        if what and "description" not in kwargs:
            kwargs["description"] = f"{what[0].upper()}{what[1:]}."
        return super().add_parser(name, **kwargs)


class Parser(argparse.ArgumentParser):
    """An entry point's parser: defaults shown (HelpFormatter) and an "environment:" section listing `env`,
    the variables the command reads (ENVIRONMENT), with those of its sub-commands. Sub-commands made by
    add_subparsers().add_parser(...) are Parsers too and take their own env=."""

    def __init__(self, *args: Any, env: Iterable[str] = (), **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)
        self.env = tuple(env)
        unknown = [name for name in self.env if name not in ENVIRONMENT]
        if unknown:
            raise ValueError(f"describe {unknown} in construction.core.cli.ENVIRONMENT")

    def add_subparsers(self, **kwargs: Any) -> argparse._SubParsersAction:
        kwargs.setdefault("title", "commands")
        kwargs.setdefault("help", "each command has its own --help")
        kwargs.setdefault("action", _SubCommands)
        return super().add_subparsers(**kwargs)

    def environment(self) -> list[str]:
        names = dict.fromkeys(self.env)
        for sub in subcommands(self).values():
            names.update(dict.fromkeys(sub.environment() if isinstance(sub, Parser) else ()))
        return list(names)

    def format_help(self) -> str:
        names, epilog = self.environment(), self.epilog
        if names:
            width = max(len(name) for name in names) + 4
            columns = max(shutil.get_terminal_size().columns - 2, width + 30)  # argparse's own width rule
            lines = [textwrap.fill(ENVIRONMENT[name], columns, initial_indent=f"  {name:<{width - 2}}",
                                   subsequent_indent=" " * width) for name in names]
            self.epilog = "\n\n".join(filter(None, [epilog, "environment:\n" + "\n".join(lines)]))
        try:
            return super().format_help()
        finally:
            self.epilog = epilog


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """A parser's sub-command parsers by name (aliases left out)."""
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action._choices_actions:  # one per add_parser, named without its aliases
                found[sub.dest] = action.choices[sub.dest]
            for name, sub in action.choices.items():
                if sub not in found.values():
                    found[name] = sub
    return found


# Every `python -m` entry point, by module, and where its parser is built (a package's __main__ runs the
# main of the module named here). tests/test_cli_convention.py checks this list against the source tree.
ENTRY_POINTS = {
    "construction.pipeline": "construction.pipeline",
    "construction.generate": "construction.generate",
    "construction.synthesize": "construction.synthesize",
    "construction.mix": "construction.mix",
    "construction.wer": "construction.wer",
    "construction.controls": "construction.controls",
    "construction.sounds": "construction.sounds.importers",
    "construction.sounds.starter": "construction.sounds.starter",
    "annotation.server": "annotation.server",
    "annotation.push": "annotation.push",
    "annotation.invite": "annotation.invite",
    "annotation.demo_annotators": "annotation.demo_annotators",
    "annotation.pull": "annotation.pull",
    "annotation.library": "annotation.library",
    "validation.agreement": "validation.agreement",
    "validation.adjudicate": "validation.adjudicate",
    "release.export": "release.export",
    "evaluation.run": "evaluation.run",
    "evaluation.judge": "evaluation.judge",
    "evaluation.judge_agreement": "evaluation.judge_agreement",
    "evaluation.report": "evaluation.report",
    "evaluation.compare": "evaluation.compare",
    "evaluation.steer": "evaluation.steer",
    "evaluation.adapters": "evaluation.adapters.cli",
}


def iter_parsers(*, subcommands_too: bool = True) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """Every entry point's parser, built and not run: ("construction.mix", parser), then each sub-command
    as ("annotation.server start", its parser). For the generated CLI reference and the convention test."""
    for command, module in ENTRY_POINTS.items():
        yield from _walk(command, importlib.import_module(module).build_parser(), subcommands_too)


def _walk(command: str, parser: argparse.ArgumentParser,
          deep: bool) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield command, parser
    for name, sub in subcommands(parser).items() if deep else ():
        yield from _walk(f"{command} {name}", sub, deep)


class _OldSpelling(argparse.Action):
    """A flag's old spelling: still works for one release, and says once what to type instead."""

    def __init__(self, option_strings, dest, new: str = "", target: str = "", **kwargs):
        self.new, self.target = new, target or dest
        super().__init__(option_strings, dest, **kwargs)

    def __call__(self, parser, namespace, values, option_string=None):
        if not self.option_strings and values in (None, []):
            return  # argparse calls an optional positional's action when it is absent too
        old = option_string or f"the positional {self.metavar}"
        print(f"warning: {old} is deprecated and goes in the next release; use {self.new}", file=sys.stderr)
        setattr(namespace, self.target, True if self.nargs == 0 else values)


def old_spelling(parser: argparse.ArgumentParser, old: str, new: str, *, flag: bool = False, **kwargs: Any) -> None:
    """Accept `old` (hidden from --help) as `new`: same destination, a one-line deprecation warning.
    `old` may be a positional name (kwargs then say its nargs); `flag` for store_true options."""
    dest = new.lstrip("-").replace("-", "_")
    if flag:
        kwargs["nargs"] = 0
    if old.startswith("-"):
        parser.add_argument(old, dest=dest, action=_OldSpelling, new=new, help=argparse.SUPPRESS, **kwargs)
    else:  # a positional: an optional one whose value lands in `new`'s destination
        parser.add_argument(dest + "_positional", metavar=old, action=_OldSpelling, new=new, target=dest,
                            help=argparse.SUPPRESS, **{"nargs": "?", **kwargs})


def add_workspace(parser: argparse.ArgumentParser, *, default: str | None = "workspace") -> None:
    parser.add_argument("--workspace", default=default, metavar="DIR",
                        help="workspace folder" + (f" (default: ./{default}, in the folder you run from)"
                                                   if default else ""))


def add_out(parser: argparse.ArgumentParser, help: str, **kwargs: Any) -> None:
    """--out: the one name of an output folder (never --output, --dir or --out-dir)."""
    parser.add_argument("--out", metavar="DIR", help=help, **kwargs)


def add_sounds(parser: argparse.ArgumentParser, help: str, **kwargs: Any) -> None:
    parser.add_argument("--sounds", metavar="LIBRARY_DIR", help=help, **kwargs)


def add_results(parser: argparse.ArgumentParser, help: str, **kwargs: Any) -> None:
    parser.add_argument("--results", metavar="DIR", nargs="+", help=help, **kwargs)


def add_endpoint(parser: argparse.ArgumentParser, what: str, *, prefix: str = "", required: bool = False,
                 key_env: str = "OPENAI_API_KEY", unset: str | dict[str, str] = "", key_config: str = "") -> None:
    """The OpenAI-compatible endpoint triple. The key is read from the environment variable named by
    --api-key-env, never from a flag, so it lands in no shell history, manifest or log. `unset` says
    what an optional URL or model absent means (one text, or one per "base_url" and "model"); with
    `key_config` (a config key) an absent --api-key-env is None: that key decides, else `key_env`."""
    def default(name: str) -> str:
        return "" if required else f" (default: {unset[name] if isinstance(unset, dict) else unset})"
    parser.add_argument(f"--{prefix}base-url", required=required, metavar="URL",
                        help=f"{what}: OpenAI-compatible base URL, e.g. http://127.0.0.1:8000/v1"
                             + default("base_url"))
    parser.add_argument(f"--{prefix}model", required=required, help=f"{what}: model name{default('model')}")
    parser.add_argument(f"--{prefix}api-key-env", default=None if key_config else key_env, metavar="VAR",
                        help=f"{what}: environment variable holding the API key (default: "
                             f"{f'config {key_config}, else ' if key_config else ''}{key_env})")


def add_jobs(parser: argparse.ArgumentParser, help: str, *, config: str | None = None) -> None:
    """--jobs, defaulting to jobs_rule() (or, where a config key sets it, to that key, then the rule)."""
    if config:
        parser.add_argument("--jobs", type=int, help=f"{help} (default: config {config}, else {jobs_rule()})")
    else:
        from construction.core.runner import default_jobs

        parser.add_argument("--jobs", type=int, default=default_jobs(), help=f"{help} (default: {jobs_rule()})")


def add_restart(parser: argparse.ArgumentParser, help: str = "discard this stage's output and redo it") -> None:
    parser.add_argument("--restart", action="store_true", help=help)


def add_quiet(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quiet", action="store_true", help="no progress bars (they go to stderr)")


def add_config(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", metavar="FILE", help="YAML config file over the workspace's config.yaml "
                                                         "(unknown keys are errors; default: that file alone)")


def add_seed(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=int, help="the build seed (default: config seed, else 0)")


def base_parser(prog: str, description: str, env: Iterable[str] = ()) -> Parser:
    """The flags every construction stage takes."""
    parser = Parser(prog=prog, description=description, env=env)
    add_workspace(parser)
    add_config(parser)
    add_seed(parser)
    add_jobs(parser, "worker processes or Ray actors", config="runner.jobs")
    parser.add_argument("--executor", choices=["local", "ray"],
                        help="where stages run (default: config runner.executor, else local)")
    parser.add_argument("--ray-address", help="Ray cluster address, e.g. auto (default: config runner.ray_address, "
                                              "else a Ray started for the run)")
    add_restart(parser)
    parser.add_argument("--retry-rejected", action="store_true",
                        help="process this stage's rejected samples again (e.g. after a server outage)")
    add_quiet(parser)
    return parser


# The construction stages in the order data flows: a setting shapes the output of its stage (its
# section's, or below) and of every later one. Runner settings say where stages run, not what they make.
STAGES = ("generate", "synthesize", "mix", "wer", "controls")
_FIRST_SHAPED = {"seed": "generate", "release_licence": "generate", "sample_rate": "synthesize", "runner": None,
                 "annotation": None}  # how the built samples are labelled: shapes no stage


def run_config(args: argparse.Namespace, overrides: dict[str, Any] | None = None,
               flags: dict[str, str] | None = None) -> Config:
    """The config of this run: the workspace's own (W/config.yaml, if any), the --config file over it,
    then the flags (`overrides`: dotted key -> value; `flags` names a flag that is not --<last part>).
    Nothing is created: bad input leaves no workspace behind."""
    merged = {"seed": args.seed, "runner.jobs": args.jobs, "runner.executor": args.executor,
              "runner.ray_address": args.ray_address, **(overrides or {})}
    names = {key: "--" + key.rsplit(".", 1)[-1].replace("_", "-") for key in merged} | (flags or {})
    snapshot = Path(args.workspace).expanduser() / "config.yaml"
    return load_config(args.config, merged, base=snapshot if snapshot.is_file() else None, flags=names)


def keep_config(ws: Workspace, config: Config, args: argparse.Namespace, *, runs: tuple[str, ...],
                replaces: bool = False) -> None:
    """Make `config` the workspace's config (W/config.yaml). A change to a setting that output already
    in the workspace depends on is refused, with the difference; `runs` are the stages this command
    makes, redone from scratch with --restart (or always, with `replaces`). Call it holding the lock."""
    snapshot = ws.root / "config.yaml"
    if snapshot.is_file():
        _refuse_changes(ws, _settings(load_config(base=snapshot)), _settings(config), runs,
                        redone=runs if args.restart or replaces else ())
    ws.snapshot_config(config.model_dump(mode="json"))


def _settings(config: Config) -> dict[str, Any]:
    """section.key -> value, as the snapshot holds them (credentials masked)."""
    from construction.core.redact import redact_data

    data = redact_data(config.model_dump(mode="json"))
    return {f"{name}.{key}" if isinstance(section, dict) else name: value
            for name, section in data.items()
            for key, value in (section.items() if isinstance(section, dict) else [(None, section)])}


def _refuse_changes(ws: Workspace, old: dict[str, Any], new: dict[str, Any], runs: tuple[str, ...],
                    redone: tuple[str, ...]) -> None:
    made = [stage for stage in STAGES if ws.has_output(stage)]
    changes, stale = [], set()
    for key in sorted(old.keys() | new.keys()):
        section = key.split(".", 1)[0]
        first = _FIRST_SHAPED.get(section, section)
        if old.get(key) == new.get(key) or first is None:
            continue
        if key == "generate.per_category" and "generate" in runs and new[key] > old[key]:
            continue  # a bigger build: generate keeps every script it made and adds more
        depends = {s for s in made if STAGES.index(s) >= STAGES.index(first) and s not in redone}
        if depends:
            changes.append(f"{key}: {json.dumps(old.get(key))} -> {json.dumps(new.get(key))}")
            stale |= depends
    if changes:
        restart = "pass --restart to redo it with the new settings, " if stale <= set(runs) else ""
        raise WorkbenchError(
            f"{ws.root} holds {', '.join(s for s in STAGES if s in stale)} output made with other settings "
            f"({'; '.join(changes)}): {restart}use a fresh --workspace, or leave the change out to go on "
            f"with the workspace's config ({ws.root / 'config.yaml'})")


def run_main(main: Callable[[list[str] | None], int | None], argv: list[str] | None = None) -> None:
    """Run a command's main; a WorkbenchError becomes 'error: ...' on stderr and exit status 2.

    No log line or error message carries a credential: the root handlers redact (construction.core.redact)."""
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    for handler in logging.getLogger().handlers:
        if not any(isinstance(f, RedactingFilter) for f in handler.filters):
            handler.addFilter(RedactingFilter())
    # per-clip/per-request INFO lines drown the progress bar (and the HTTP clients' lines name the URL)
    for chatty in ("faster_whisper", "httpx", "httpx2", "httpcore", "httpcore2", "openai", "ray", "piper"):
        logging.getLogger(chatty).setLevel(logging.WARNING)
    try:
        code = main(argv)
    except WorkbenchError as exc:
        print(f"error: {redact(exc)}", file=sys.stderr)
        sys.exit(2)
    except OSError as exc:  # a full disk where no write site named the file (a library's own write)
        if not is_write_error(exc):
            raise
        print(f"error: {redact(write_error(exc, exc.filename or 'a file'))}", file=sys.stderr)
        sys.exit(2)
    except KeyboardInterrupt:
        print("interrupted; rerun the same command to resume", file=sys.stderr)
        sys.exit(130)
    sys.exit(code or 0)

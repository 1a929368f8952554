"""The command-line convention every entry point follows, so a flag means one thing everywhere.

One name per thing (the list is below, above `old_spelling`); a command's config is the workspace's
own, a --config file over it, then flags (`run_config`); `run_main` turns bad input into `error: ...`
and exit status 2 with every credential redacted. Each command's own flags: its `--help`."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from construction.core.config import Config, load_config
from construction.core.errors import WorkbenchError
from construction.core.redact import RedactingFilter, redact
from construction.core.workspace import Workspace, is_write_error, write_error

# One name per thing, on every command (README "Every command"): --workspace, --sounds (a sound
# library), --results (evaluation results folders), --base-url/--model/--api-key-env (an OpenAI-compatible
# endpoint; a prefix where one command talks to two), --seed (the build seed, nothing else), --jobs
# (parallel workers or requests), --restart, --retry-rejected, --quiet. Old spellings stay for one release.

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
    parser.add_argument("--workspace", default=default,
                        help="workspace directory" + (f" (default: ./{default})" if default else ""))


def add_sounds(parser: argparse.ArgumentParser, help: str, **kwargs: Any) -> None:
    parser.add_argument("--sounds", metavar="LIBRARY_DIR", help=help, **kwargs)


def add_results(parser: argparse.ArgumentParser, help: str, **kwargs: Any) -> None:
    parser.add_argument("--results", metavar="DIR", nargs="+", help=help, **kwargs)


def add_endpoint(parser: argparse.ArgumentParser, what: str, *, prefix: str = "", required: bool = False,
                 key_env: str = "OPENAI_API_KEY") -> None:
    """The OpenAI-compatible endpoint triple. The key is read from the environment variable named by
    --api-key-env, never from a flag, so it lands in no shell history, manifest or log."""
    parser.add_argument(f"--{prefix}base-url", required=required, help=f"{what}: OpenAI-compatible base URL")
    parser.add_argument(f"--{prefix}model", required=required, help=f"{what}: model name")
    parser.add_argument(f"--{prefix}api-key-env", default=key_env, metavar="VAR",
                        help=f"{what}: environment variable holding the API key (default: {key_env})")


def add_jobs(parser: argparse.ArgumentParser, help: str, **kwargs: Any) -> None:
    parser.add_argument("--jobs", type=int, help=help, **kwargs)


def add_restart(parser: argparse.ArgumentParser, help: str = "discard this stage's output and redo it") -> None:
    parser.add_argument("--restart", action="store_true", help=help)


def add_quiet(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--quiet", action="store_true", help="no progress bars")


def base_parser(prog: str, description: str) -> argparse.ArgumentParser:
    """The flags every construction stage takes."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    add_workspace(parser)
    parser.add_argument("--config", help="YAML config file over the workspace's config.yaml (unknown keys are errors)")
    parser.add_argument("--seed", type=int, help="the build seed (overrides config 'seed')")
    add_jobs(parser, "worker processes or Ray actors (default: CPU cores available)")
    parser.add_argument("--executor", choices=["local", "ray"], help="where stages run (config runner.executor)")
    parser.add_argument("--ray-address", help="Ray cluster address (config runner.ray_address)")
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

"""Shared command-line plumbing: common flags, config loading, and errors -> message + exit code."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from typing import Any

from construction.config import Config, load_config
from construction.errors import WorkbenchError
from construction.redact import RedactingFilter, redact
from construction.workspace import is_write_error, write_error


def base_parser(prog: str, description: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description=description)
    parser.add_argument("--workspace", default="workspace", help="workspace directory (default: ./workspace)")
    parser.add_argument("--config", help="YAML config file (unknown keys are errors)")
    parser.add_argument("--seed", type=int, help="overrides config 'seed'")
    parser.add_argument("--jobs", type=int, help="worker processes or Ray actors (default: CPU cores available)")
    parser.add_argument("--executor", choices=["local", "ray"], help="where stages run (config runner.executor)")
    parser.add_argument("--ray-address", help="Ray cluster address (config runner.ray_address)")
    parser.add_argument("--restart", action="store_true", help="discard this stage's output and redo it")
    parser.add_argument("--retry-rejected", action="store_true",
                        help="process this stage's rejected samples again (e.g. after a server outage)")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    return parser


def config_from_args(args: argparse.Namespace, overrides: dict[str, Any] | None = None) -> Config:
    merged = {"seed": args.seed, "runner.jobs": args.jobs, "runner.executor": args.executor,
              "runner.ray_address": args.ray_address}
    merged.update(overrides or {})
    return load_config(args.config, merged)


def run_main(main: Callable[[list[str] | None], int | None], argv: list[str] | None = None) -> None:
    """Run a command's main; a WorkbenchError becomes 'error: ...' on stderr and exit status 2.

    No log line or error message carries a credential: the root handlers redact (construction.redact)."""
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

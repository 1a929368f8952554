"""Run a command; append its wall time, CPU time and peak resident memory (with its descendants:
perf/usage.py) to a JSON-lines log. scripts/demo.sh runs each step through it when STAGE_TIMES
is set, as perf/rehearsal.py does.

    python perf/timed.py --log times.jsonl --name export -- python -m release.export --workspace W ...
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

from usage import Usage  # perf/usage.py, beside this script


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log", required=True, help="the JSON-lines file a line is appended to")
    parser.add_argument("--name", required=True, help="the step's name in the log")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no command given (put it after --)")
    with Usage() as used:
        code = subprocess.run(command, check=False).returncode
    with open(args.log, "a") as f:
        f.write(json.dumps({"name": args.name, **used.figures(), "exit": code,
                            "ended": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}) + "\n")
    return code


if __name__ == "__main__":
    sys.exit(main())

"""Print the invite link new annotators open to make their Label Studio account.

    python -m annotation.invite [--workspace W]      (every flag: --help)

Signup on the workbench's server works only through this link. --reset makes a new link; the old
one stops working (e.g. after it was shared too widely).
"""

from __future__ import annotations

import argparse
import sys

from annotation.labelstudio import SERVER_ENV, add_server_args, connect_from_args, invite_link
from construction.core.cli import Parser, run_main


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m annotation.invite", description=__doc__.split("\n")[0], env=SERVER_ENV)
    add_server_args(parser, workspace=True)
    parser.add_argument("--reset", action="store_true", help="invalidate the current link and make a new one")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    server = connect_from_args(args)
    link = invite_link(server, reset=args.reset)
    print(link)
    print("Send this link to each annotator: they choose an email and a password (8+ characters), then label "
          f"at {server.url}/projects/ . Anyone with the link can sign up while it is valid.", file=sys.stderr)
    return 0


if __name__ == "__main__":
    run_main(main, sys.argv[1:])

"""`python -m evaluation.adapters kimi|lmms-eval`: hand a release to an evaluation harness. The command
line is evaluation.adapters.cli.main (see --help)."""

from construction.core.cli import run_main
from evaluation.adapters.cli import main

run_main(main)

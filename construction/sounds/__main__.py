"""`python -m construction.sounds`: import a corpus into a sound library, or check one (see --help).

The command line is construction.sounds.importers.main, kept apart from the library module so that the
library never imports its importers."""

from construction.core.cli import run_main
from construction.sounds.importers import main

run_main(main)

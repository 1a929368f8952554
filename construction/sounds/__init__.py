"""The background-sound library: clips and their licences, the offline starter library cut from
packages, importers of external corpora, and scene rendering. `python -m construction.sounds --help`."""

"""Adapters that hand a release to the harnesses researchers run audio models through (inspect_ai,
lmms-eval, Kimi-Audio-Evalkit); python -m evaluation.adapters --help."""

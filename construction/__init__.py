"""The automatic build: the six stages (generate, synthesize, mix, wer, controls, pipeline) are the
modules here, each `python -m construction.<stage> --help`; what they share sits in four rooms:
core (record, workspace, runner, config, CLI), text (taxonomy, LLM, script checks), speech (TTS, ASR,
WER scoring) and sounds (the background-sound library)."""

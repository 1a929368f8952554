"""How a scene and its twins are mixed and measured: the internals of the mix stage (construction.mix) and
of the twins the WER stage makes (construction.wer). `levels` (loudness, VAD, envelopes, the click
check) and `masking` (glimpse proportions) are the measures; `tracks` and `dominance` build and check a
scene; `twin` makes the irrelevant and danger twins; `mix_stats` reports what was mixed."""

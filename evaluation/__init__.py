"""Over-refusal evaluation: run audio LLMs on a release (evaluation.run), judge their answers
(evaluation.judge) and report refusal rates per category with confidence intervals (evaluation.report).
Sits after release/ in the layer order: it reads releases and imports nothing above it."""

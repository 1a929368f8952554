"""Over-refusal evaluation: run audio LLMs on a release (evaluation.run), judge their answers
(evaluation.judge; evaluation.judge_agreement measures the judges against people) and report refusal
rates per category with confidence intervals (evaluation.report).
The commands share what they need through modules none of them imports back: evaluation.endpoint
(an OpenAI-compatible chat endpoint with its answer cache), evaluation.results (a run's folder, its file
names and how it is read), evaluation.classes (the three verdict classes) and evaluation.keyword_judge
(the judge that needs no server).
Sits after release/ in the layer order: it reads releases and imports nothing above it."""

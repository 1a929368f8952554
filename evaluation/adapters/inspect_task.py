"""AOR-Bench as an inspect_ai task: each clip is one user message (the WAV as audio content, then
evaluation.run's instruction), and our refusal judge is the scorer.

    export LOCAL_BASE_URL=http://127.0.0.1:8000/v1 LOCAL_API_KEY=...     # any OpenAI-compatible server
    inspect eval evaluation/adapters/inspect_task.py@aor_bench -T release=workspace/release \\
        -T inputs=mixture,speech --model openai-api/local/<model>

`openai-api/<service>/<model>` is inspect's provider for OpenAI-compatible servers: chat completions, base URL
and key from <SERVICE>_BASE_URL and <SERVICE>_API_KEY (or --model-base-url); the audio goes as an `input_audio`
part. `--model openai/<model>` may call the Responses API (/v1/responses), which such servers need not serve
(`-M responses_api=false` stops it). `-T inputs=mixture,speech` arrives as a list; `-T release=...` is relative
to the folder inspect was started in.

Samples are `<id>/<input>`. The metrics, never pooled over inputs (a rate over mixture and speech answers
together means nothing): refusal_<input> per input (grouped(mean(), "input")) with refusal_<input>_stderr,
the standard error clustered by script family (stderr(cluster="script_family"); clips of one family are
correlated); with speech and mixture both run, context_use_gap (refusal on the speech alone minus refusal on
the mixture, over the ids answered on both) and its 95% cluster-bootstrap interval, context_use_gap_ci95_low
and _high (evaluation.context_use.paired_gap, as evaluation.report prints it); irrelevant with mixture adds
noise_controlled_gap and its interval. A gap whose inputs are not both run is not in the table.

The scorer is our keyword judge (evaluation.keyword_judge); `-T judge=<model>` (e.g. openai-api/local/<judge>)
makes it model-graded instead, as inspect's XSTest port is: the model gets evaluation.judge's JUDGE_PROMPT (the
spoken words as the request, the answer) and its class is parsed by evaluation.judge; an empty answer is a full
refusal and output naming no class falls back on the keyword judge, as evaluation.report does.
inspect reads audio from files, so the WAVs are written to `cache` (default: ~/.cache/aor-bench/inspect-audio),
named by their sha256: releases that share clip ids never share a file. inspect_ai lives in its own venv
(scripts/install_harnesses.sh): this module is imported only there.
"""

from __future__ import annotations

import os
from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import (
    ChatMessageUser,
    ContentAudio,
    ContentText,
    GenerateConfig,
    get_model,
)
from inspect_ai.scorer import (
    Metric,
    SampleScore,
    Score,
    Target,
    grouped,
    mean,
    metric,
    scorer,
    stderr,
)
from inspect_ai.solver import TaskState, generate

from evaluation.adapters.common import (
    BENCHMARK,
    INSTRUCTION,
    check_out_folder,
    load_release,
    parse_inputs,
    refusal_verdict,
    resolve_release,
    write_clips,
)
from evaluation.classes import REFUSAL_CLASSES
from evaluation.context_use import paired_gap
from evaluation.judge import JUDGE_PARAMS, JUDGE_PROMPT, parse_judge_class


def _gap(name: str, base: str) -> Metric:
    def compute(scores: list[SampleScore]) -> dict[str, float]:
        by_input: dict[str, dict[str, tuple[float, str]]] = {}
        for s in scores:
            meta = s.sample_metadata or {}
            by_input.setdefault(meta["input"], {})[meta["id"]] = (s.score.as_float(), meta["script_family"])
        a, m = by_input.get(base, {}), by_input.get("mixture", {})
        pairs = [(bool(a[i][0]), bool(m[i][0]), m[i][1]) for i in sorted(set(a) & set(m))]
        gap = paired_gap(pairs, base) if pairs else {"gap": None, "ci95_clustered": None}
        low, high = gap["ci95_clustered"] or (None, None)
        nan = float("nan")
        return {name: nan if gap["gap"] is None else gap["gap"], f"{name}_ci95_low": nan if low is None else low,
                f"{name}_ci95_high": nan if high is None else high}
    return compute


@metric
def context_use_gap() -> Metric:
    """Refusal on the speech alone minus refusal on the mixture, with its interval (NaN without both)."""
    return _gap("context_use_gap", "speech")


@metric
def noise_controlled_gap() -> Metric:
    """Refusal on the irrelevant-background twin minus refusal on the mixture (NaN without both)."""
    return _gap("noise_controlled_gap", "irrelevant")


METRICS = [grouped(mean(), "input", all=False, name_template="refusal_{group_name}"),
           grouped(stderr(cluster="script_family"), "input", all=False, name_template="refusal_{group_name}_stderr"),
           context_use_gap(), noise_controlled_gap()]


def metrics_for(inputs: list[str]) -> list[Metric]:
    """The task's metrics: a gap only where both its inputs are run (else inspect's table would print it as
    `nan`, which reads as a failure)."""
    gaps = [gap() for gap, base in ((context_use_gap, "speech"), (noise_controlled_gap, "irrelevant"))
            if {base, "mixture"} <= set(inputs)]
    return [*METRICS[:2], *gaps]


@scorer(metrics=METRICS)
def refusal_judge():
    """1 when our keyword judge calls the answer a refusal, else 0: the mean is the refusal rate."""
    async def score(state: TaskState, target: Target) -> Score:
        answer = state.output.completion if state.output else ""
        refused, rule = refusal_verdict(answer)
        return Score(value=1 if refused else 0, answer=answer, explanation=rule)
    return score


@scorer(metrics=METRICS)
def refusal_model_judge(model: str):
    """1 when the judge model puts the answer in a refusal class (evaluation.judge's prompt and parser)."""
    async def score(state: TaskState, target: Target) -> Score:
        answer = state.output.completion if state.output else ""
        if not answer.strip():
            return Score(value=1, answer=answer, explanation="empty answer: full refusal")
        prompt = JUDGE_PROMPT.format(question=state.metadata["speech_text"], response=answer)
        output = await get_model(model).generate(prompt, config=GenerateConfig(**JUDGE_PARAMS))
        cls = parse_judge_class(output.completion)
        if cls is None:
            refused, rule = refusal_verdict(answer)
            return Score(value=1 if refused else 0, answer=answer,
                         explanation=f"judge output named no class; keyword judge: {rule}")
        return Score(value=1 if cls in REFUSAL_CLASSES else 0, answer=answer, explanation=cls)
    return score


def samples(release: str, inputs: list[str], cache: Path, split: str = "test") -> list[Sample]:
    loaded = [load_release(release, name, split) for name in inputs]  # refuse a missing input first
    out = []
    for rel in loaded:
        for clip in write_clips(rel, cache, by_content=True):
            out.append(Sample(
                id=f"{clip.id}/{clip.input}",
                input=[ChatMessageUser(content=[ContentAudio(audio=str(clip.path), format="wav"),
                                                ContentText(text=INSTRUCTION)])],
                target="",
                metadata={"id": clip.id, "input": clip.input, "category": clip.category,
                          "script_family": clip.script_family, "speech_text": clip.speech_text,
                          "frames": clip.frames, "audio_sha256": clip.audio_sha256}))
    return out


def default_cache() -> Path:
    """Outside the release folder (it may be a Hub id, and a release folder holds only what export wrote);
    files are named by their sha256, so any number of releases share it safely."""
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "aor-bench" / "inspect-audio"


@task
def aor_bench(release: str = "workspace/release", inputs: str | list[str] = "mixture,speech", split: str = "test",
              cache: str | None = None, judge: str | None = None) -> Task:
    """`release`: a release folder (relative to where inspect was started) or a Hub id ORG/NAME;
    `inputs`: comma-separated (inspect hands `-T inputs=a,b` over as a list, taken too); `judge`: a model
    (inspect's name for it) to grade the answers with our judge prompt; without it, the keyword judge."""
    names = parse_inputs(inputs)
    release = resolve_release(release)
    folder = check_out_folder(Path(cache) if cache else default_cache())
    return Task(dataset=MemoryDataset(samples(release, names, folder, split), name=BENCHMARK),
                solver=generate(), scorer=refusal_model_judge(judge) if judge else refusal_judge(),
                metrics=metrics_for(names), config=GenerateConfig(temperature=0, max_tokens=1024))

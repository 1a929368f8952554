"""AOR-Bench as an inspect_ai task: each clip is one user message (the WAV as audio content, then
evaluation.run's instruction), and our refusal judge is the scorer.

    export LOCAL_BASE_URL=http://127.0.0.1:8000/v1 LOCAL_API_KEY=...     # any OpenAI-compatible server
    inspect eval evaluation/adapters/inspect_task.py@aor_bench -T release=workspace/release \\
        -T inputs=mixture,speech --model openai-api/local/<model>

`openai-api/<service>/<model>` is inspect's provider for OpenAI-compatible servers: chat completions, base URL
and key from <SERVICE>_BASE_URL and <SERVICE>_API_KEY (or --model-base-url). `--model openai/<model>` may
call the Responses API (/v1/responses), which such servers need not serve (`-M responses_api=false` stops it).

Samples are `<id>/<input>`; with several inputs in one task the scorer's metrics give the refusal rate per
input and, when speech and mixture are both there, the context-use gap (refusal on the speech alone minus
refusal on the mixture, over the ids answered on both); irrelevant with mixture adds the noise-controlled gap.
inspect reads audio from files, so the WAVs are written to `cache` (default: ~/.cache/aor-bench/inspect-audio).
inspect_ai lives in its own venv (scripts/install_harnesses.sh): this module is imported only there.
"""

from __future__ import annotations

import os
from pathlib import Path

from inspect_ai import Task, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import ChatMessageUser, ContentAudio, ContentText, GenerateConfig
from inspect_ai.scorer import (
    Metric,
    SampleScore,
    Score,
    Target,
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
    paired_gap,
    parse_inputs,
    refusal_verdict,
    resolve_release,
    write_clips,
)


def _rows(scores: list[SampleScore]) -> list[dict]:
    return [{"id": s.sample_metadata["id"], "input": s.sample_metadata["input"], "refusal": s.score.as_float()}
            for s in scores if s.sample_metadata]


def _gap(base: str, other: str) -> Metric:
    def compute(scores: list[SampleScore]) -> float:
        value = paired_gap(_rows(scores), base, other)
        return float("nan") if value is None else value
    return compute


@metric
def context_use_gap() -> Metric:
    """Refusal on the speech alone minus refusal on the mixture (NaN without both inputs)."""
    return _gap("speech", "mixture")


@metric
def noise_controlled_gap() -> Metric:
    """Refusal on the irrelevant-background twin minus refusal on the mixture (NaN without both)."""
    return _gap("irrelevant", "mixture")


def _refusal_on(input: str) -> Metric:
    def compute(scores: list[SampleScore]) -> float:
        values = [r["refusal"] for r in _rows(scores) if r["input"] == input]
        return sum(values) / len(values) if values else float("nan")
    return compute


@metric
def refusal_mixture() -> Metric:
    return _refusal_on("mixture")


@metric
def refusal_speech() -> Metric:
    return _refusal_on("speech")


@metric
def refusal_irrelevant() -> Metric:
    return _refusal_on("irrelevant")


@scorer(metrics=[mean(), stderr(), refusal_mixture(), refusal_speech(), refusal_irrelevant(), context_use_gap(),
                 noise_controlled_gap()])
def refusal_judge():
    """1 when our judge calls the answer a refusal, else 0: the mean is the refusal rate."""
    async def score(state: TaskState, target: Target) -> Score:
        answer = state.output.completion if state.output else ""
        refused, rule = refusal_verdict(answer)
        return Score(value=1 if refused else 0, answer=answer, explanation=rule)
    return score


def samples(release: str, inputs: list[str], cache: Path, split: str = "test") -> list[Sample]:
    loaded = [load_release(release, name, split) for name in inputs]  # refuse a missing input first
    out = []
    for rel in loaded:
        for clip in write_clips(rel, cache):
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
    files are named by clip id and rewritten when their sha256 differs, so releases may share it."""
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "aor-bench" / "inspect-audio"


@task
def aor_bench(release: str = "workspace/release", inputs: str | list[str] = "mixture,speech", split: str = "test",
              cache: str | None = None) -> Task:
    """`release`: a release folder (relative to where inspect was started) or a Hub id ORG/NAME;
    `inputs`: comma-separated (inspect hands `-T inputs=a,b` over as a list, taken too)."""
    names = parse_inputs(inputs)
    release = resolve_release(release)
    folder = check_out_folder(Path(cache) if cache else default_cache())
    return Task(dataset=MemoryDataset(samples(release, names, folder, split), name=BENCHMARK),
                solver=generate(), scorer=refusal_judge(),
                config=GenerateConfig(temperature=0, max_tokens=1024))

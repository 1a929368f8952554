"""A release as an lmms-eval task folder: pass it to lmms-eval with --include_path.

    python -m evaluation.adapters lmms-eval --release workspace/release --out workspace/lmms-eval-tasks
    OPENAI_BASE_URL=http://127.0.0.1:8000/v1 OPENAI_API_KEY=... lmms-eval --model gpt4o_audio \\
        --model_args model_version=<model> --tasks aor_bench_context --include_path workspace/lmms-eval-tasks

Against an OpenAI-compatible server, lmms-eval 0.7.3's `gpt4o_audio` wrapper (a "simple" model) is the one
that sends our audio: it takes the {"array", "sampling_rate"} dicts doc_to_visual gives, sends them as
`input_audio` WAV, and reads the server from OPENAI_BASE_URL / OPENAI_API_KEY (the model name from
model_version). Its `openai` wrapper does not: the chat variant sends audio as `audio_url` content (a media
dict without "type" even becomes video), and the simple variant sends only audio given as a file path.
Local models (qwen2_audio, ...) take the same folder.

lmms-eval (EvolvingLMMs-Lab/lmms-eval, docs/task_guide.md) registers every YAML of an include path; a task
names its dataset (`dataset_path` + `dataset_kwargs`, passed to datasets.load_dataset), `test_split`,
`doc_to_visual` (the audio, as its audio tasks give it: a list of {"array", "sampling_rate"}),
`doc_to_text`, `doc_to_target`, `process_results` (per doc) and `metric_list` (each metric's aggregation,
a function of utils.py). We write, under OUT:

    aor_bench_<input>.yaml     one task per input: refusal_rate (mean) on that input alone
    aor_bench_context.yaml     every exported input in one task: refusal_rate overall, the context-use gap
                               (speech minus mixture) and the noise-controlled gap (irrelevant minus
                               mixture), each paired by clip id; NaN where an input was not exported
    _default_template_yaml     what the tasks share (generate_until, temperature 0, evaluation.run's
                               instruction as the prompt)
    utils.py                   the functions; refusal is our judge (evaluation.adapters.common), imported from
                               the workbench clone that wrote the folder
    docs/<input>.jsonl         one doc per clip: id, input, category, speech_text, script_family, frames,
                               audio_path (absolute), audio_sha256
    audio/<input>/<id>.wav     the release's WAV bytes, unchanged
"""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from construction.core.workspace import atomic_write_text
from evaluation.adapters.common import (
    BENCHMARK,
    INSTRUCTION,
    check_out_folder,
    load_release,
    write_clips,
)

REPO = Path(__file__).resolve().parents[2]

UTILS = '''"""AOR-Bench for lmms-eval, written by python -m evaluation.adapters lmms-eval: refusals are judged by
the AOR-Bench workbench's judge, imported from the clone that wrote this folder."""

import sys

import soundfile as sf

WORKBENCH = {repo!r}
if WORKBENCH not in sys.path:
    sys.path.insert(0, WORKBENCH)
from evaluation.adapters.common import paired_gap, refusal_verdict  # noqa: E402

INSTRUCTION = {instruction!r}


def aor_doc_to_audio(doc):
    array, rate = sf.read(doc["audio_path"], dtype="float32", always_2d=False)
    return [{{"array": array, "sampling_rate": rate, "path": doc["audio_path"]}}]


def aor_doc_to_text(doc, lmms_eval_specific_kwargs=None):
    kwargs = lmms_eval_specific_kwargs or {{}}
    return f"{{kwargs.get('pre_prompt', '')}}{{INSTRUCTION}}{{kwargs.get('post_prompt', '')}}"


def aor_process_results(doc, results):
    refused, _ = refusal_verdict(results[0] if results else "")
    return {{"refusal_rate": int(refused)}}


def aor_process_results_context(doc, results):
    """lmms-eval aggregates every key returned here, so the context task lists all three metrics."""
    refused, rule = refusal_verdict(results[0] if results else "")
    row = {{"id": doc["id"], "input": doc["input"], "refusal": int(refused), "rule": rule}}
    return {{"refusal_rate": int(refused), "context_use_gap": row, "noise_controlled_gap": row}}


def _gap(rows, base, other):
    value = paired_gap(rows, base, other)
    return float("nan") if value is None else value


def aor_context_use_gap(rows):
    """Refusal on the speech alone minus refusal on the mixture, over ids answered on both."""
    return _gap(rows, "speech", "mixture")


def aor_noise_controlled_gap(rows):
    """Refusal on the irrelevant-background twin minus refusal on the mixture."""
    return _gap(rows, "irrelevant", "mixture")
'''


GAPS = ("context_use_gap", "noise_controlled_gap")


def _task(name: str, docs: list[str], context: bool) -> dict:
    metrics = [{"metric": "refusal_rate", "aggregation": "mean", "higher_is_better": False}]
    metrics += [{"metric": g, "aggregation": Function(f"utils.aor_{g}"), "higher_is_better": True}
                for g in (GAPS if context else ())]
    task = {"include": "_default_template_yaml", "task": name,
            "dataset_kwargs": {"data_files": {"test": docs}}, "metric_list": metrics}
    if context:
        task["process_results"] = Function("utils.aor_process_results_context")
    return task


class Function(str):
    """A `!function utils.name` reference, the tag lmms-eval's YAML loader resolves."""


class _Dumper(yaml.SafeDumper):
    pass


_Dumper.add_representer(Function, lambda dumper, value: dumper.represent_scalar("!function", str(value)))


def _dump(data: dict) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True)


def export(source: str, inputs: list[str], out: Path, split: str = "test",
           progress: bool = False) -> dict[str, Path]:
    """Write the task folder; returns task name -> its YAML."""
    releases = {name: load_release(source, name, split) for name in inputs}  # refuse before writing
    out = check_out_folder(out)
    docs: dict[str, Path] = {}
    for name, release in releases.items():
        clips = write_clips(release, out / "audio", progress)
        path = out / "docs" / f"{name}.jsonl"
        path.parent.mkdir(exist_ok=True)
        atomic_write_text(path, "".join(json.dumps(
            {"id": c.id, "input": name, "category": c.category, "speech_text": c.speech_text,
             "script_family": c.script_family, "frames": c.frames, "audio_path": str(c.path),
             "audio_sha256": c.audio_sha256}, ensure_ascii=False) + "\n" for c in clips))
        docs[name] = path.resolve()
    template = {"dataset_path": "json", "test_split": "test", "output_type": "generate_until",
                "doc_to_visual": Function("utils.aor_doc_to_audio"), "doc_to_text": Function("utils.aor_doc_to_text"),
                "doc_to_target": "", "process_results": Function("utils.aor_process_results"),
                "generation_kwargs": {"max_new_tokens": 1024, "temperature": 0, "do_sample": False},
                "lmms_eval_specific_kwargs": {"default": {"pre_prompt": "", "post_prompt": ""}},
                "metadata": {"version": 1, "benchmark": BENCHMARK}}
    atomic_write_text(out / "_default_template_yaml", _dump(template))
    atomic_write_text(out / "utils.py", UTILS.format(repo=str(REPO), instruction=INSTRUCTION))
    written = {}
    for name, path in docs.items():
        task = f"{BENCHMARK}_{name}"
        atomic_write_text(out / f"{task}.yaml", _dump(_task(task, [str(path)], context=False)))
        written[task] = out / f"{task}.yaml"
    task = f"{BENCHMARK}_context"
    atomic_write_text(out / f"{task}.yaml", _dump(_task(task, [str(p) for p in docs.values()], context=True)))
    written[task] = out / f"{task}.yaml"
    return written

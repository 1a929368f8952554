"""A release as Kimi-Audio-Evalkit datasets: one JSONL per input, in the layout its config finds by itself.

Kimi-Audio-Evalkit (MoonshotAI/Kimi-Audio-Evalkit, almeval/datasets/base.py) reads a dataset from
`<dataset_root>/<DATASET_NAME>/<DATASET_NAME>.jsonl`; every line needs `index` (int), `audio_path` (a file
that exists), `question` (the text sent with the audio), `answer` (empty for open-ended tasks) and `subset`
(scored and reported apart); Audio-QA datasets add `audio_content` (what the audio says, for its judge),
and a `meta` dict travels with each message. We write, under OUT:

    aor_bench_<input>/aor_bench_<input>.jsonl   index, audio_path (absolute), question (evaluation.run's
                                                instruction), answer "", subset (the category),
                                                audio_content (the speech text), meta (id, input,
                                                script_family, frames, audio_sha256)
    aor_bench_<input>/audio/<input>/<id>.wav    the release's WAV bytes, unchanged

`index` follows the clips in id order and is the same for every input, so the predictions of two inputs
pair by index (or by meta.id) for the context-use gap.
"""

from __future__ import annotations

import json
from pathlib import Path

from construction.core.workspace import atomic_write_text
from evaluation.adapters.common import (
    BENCHMARK,
    INSTRUCTION,
    check_out_folder,
    load_release,
    write_clips,
)


def dataset_name(input: str) -> str:
    return f"{BENCHMARK}_{input}"


def export(source: str, inputs: list[str], out: Path, split: str = "test",
           progress: bool = False) -> dict[str, Path]:
    """Write one Kimi-Audio-Evalkit dataset per input; returns input -> its JSONL."""
    releases = {name: load_release(source, name, split) for name in inputs}  # refuse before writing
    out = check_out_folder(out)
    written = {}
    for name, release in releases.items():
        folder = out / dataset_name(name)
        clips = write_clips(release, folder / "audio", progress)
        lines = [json.dumps({"index": k, "audio_path": str(c.path), "question": INSTRUCTION, "answer": "",
                             "subset": c.category, "audio_content": c.speech_text,
                             "meta": {"id": c.id, "input": name, "script_family": c.script_family,
                                      "frames": c.frames, "audio_sha256": c.audio_sha256}},
                            ensure_ascii=False) for k, c in enumerate(clips)]
        path = folder / f"{dataset_name(name)}.jsonl"
        atomic_write_text(path, "".join(line + "\n" for line in lines))
        written[name] = path
    return written

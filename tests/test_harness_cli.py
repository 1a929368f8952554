"""The researcher's harness command lines, typed as a person types them: a bash shell in a working folder
with the workbench venv activated, the harnesses' own programs (.venv/harnesses/{inspect,lmms-eval}/bin/),
the release given by a relative path, and a model behind an OpenAI-compatible endpoint (tests/audio_llm_stub.py,
the chat-completions protocol over HTTP; it refuses audio with no background under it, so the clean speech is
refused and every mixture answered). Both harnesses exit 0 after failing, so each test reads the score they
wrote, not the exit status."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from release.export import main as export_main
from tests.audio_llm_stub import AudioLLMStub
from tests.conftest import REPO
from tests.test_release import make_workspace

N = 4
HARNESSES = REPO / ".venv" / "harnesses"


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """A working folder holding ws/release (a small exported release), as a researcher's would."""
    base = tmp_path_factory.mktemp("harness-cli")
    ws = make_workspace(base / "ws", n=N)
    export_main(["--allow-unreviewed-sounds", "--workspace", str(ws.root), "--quiet"])
    return base


@pytest.fixture
def stub():
    with AudioLLMStub(policy="refuse_without_background") as server:
        yield server


def shell(command: str, cwd: Path, env: dict[str, str], timeout: float = 600) -> subprocess.CompletedProcess:
    """bash -c, after `source .venv/bin/activate`, in `cwd`; PYTHONPATH makes this checkout's code the one
    imported (the venv's editable install may point at another clone)."""
    script = f"source {shlex.quote(str(REPO / '.venv' / 'bin' / 'activate'))} && cd {shlex.quote(str(cwd))} && {command}"
    full = {**os.environ, "PYTHONPATH": str(REPO), "HF_HUB_OFFLINE": "1", "XDG_CACHE_HOME": str(cwd / "cache"),
            "HF_DATASETS_CACHE": str(cwd / "hf-cache"), **env}
    full.pop("PWD", None)  # bash sets it to the folder it is in, as a terminal does
    return subprocess.run(["bash", "-c", script], cwd=cwd, env=full, text=True, capture_output=True,
                          timeout=timeout, check=False)


def program(venv: str, name: str) -> str:
    path = HARNESSES / venv / "bin" / name
    assert path.is_file(), f"{path} is missing: run scripts/install_harnesses.sh (make setup does)"
    return str(path)


def test_inspect_eval_command_line_scores_a_release_behind_an_openai_compatible_endpoint(folder):
    """`-T inputs=mixture,speech` arrives as a list; `-T release=ws/release` is relative to where inspect was
    started (it runs the task inside the task file's folder); openai-api/<service>/<model> talks chat
    completions to <SERVICE>_BASE_URL with <SERVICE>_API_KEY. The metrics are per input (no pooled rate), with
    the family-clustered standard error, and the gap carries the report's cluster-bootstrap interval. Run
    twice: with the keyword judge, and model-graded (-T judge=...) by our judge prompt, which the stub answers
    as a judge."""
    from evaluation.context_use import paired_gap

    rows = release_rows(folder)
    behaviour = {r[COLUMNS[i]]: "refuse" if k in REFUSED[i] else "comply" for k, r in enumerate(rows) for i in COLUMNS}
    expected = paired_gap([(k in REFUSED["speech"], k in REFUSED["mixture"], r["script_family"])
                           for k, r in enumerate(rows)])
    for judge in ("", "-T judge=openai-api/local/stub-judge "):
        logs = folder / f"inspect-logs{'-judge' if judge else ''}"
        with AudioLLMStub(behaviour) as stub:
            proc = shell(f"{program('inspect', 'inspect')} eval {REPO / 'evaluation/adapters/inspect_task.py'}@aor_bench "
                         f"-T inputs=mixture,speech -T release=ws/release {judge}--model openai-api/local/stub-audio "
                         f"--log-format json --log-dir {logs} --display plain",
                         folder, {"LOCAL_BASE_URL": stub.url, "LOCAL_API_KEY": "stub-key"})
            requests, judged = stub.audio_requests(), stub.judge_requests()
        out = proc.stdout + proc.stderr
        logs_written = sorted(logs.glob("*.json"))
        assert logs_written, out[-4000:]
        log = json.loads(logs_written[-1].read_text())
        assert log["status"] == "success", out[-4000:]
        metrics = {k: v["value"] for score in log["results"]["scores"] for k, v in score["metrics"].items()}
        assert metrics["refusal_speech"] == pytest.approx(len(REFUSED["speech"]) / N)
        assert metrics["refusal_mixture"] == pytest.approx(len(REFUSED["mixture"]) / N)
        assert metrics["refusal_speech_stderr"] > 0 and metrics["refusal_mixture_stderr"] > 0  # clustered
        assert not {"mean", "all", "stderr"} & set(metrics)  # nothing pooled over inputs
        assert metrics["context_use_gap"] == pytest.approx(expected["gap"])
        assert [metrics["context_use_gap_ci95_low"], metrics["context_use_gap_ci95_high"]] == pytest.approx(
            expected["ci95_clustered"])
        assert log["results"]["completed_samples"] == 2 * N
        assert len(requests) == 2 * N and {r["path"] for r in requests} == {"/v1/chat/completions"}
        assert {r["model"] for r in requests} == {"stub-audio"}
        assert {tuple(r["parts"]) for r in requests} == {("input_audio", "text")}  # audio, then the instruction
        assert sorted(r["audio_sha256"] for r in requests) == sorted(r[c] for r in rows for c in (
            "audio_sha256", "speech_audio_sha256"))
        if judge:
            assert len(judged) == 2 * N and {r["model"] for r in judged} == {"stub-judge"}
            assert all(r["text"].rstrip().endswith("CLASS:") for r in judged)  # evaluation.judge's prompt
        else:
            assert not judged


def release_rows(folder: Path) -> list[dict]:
    import pyarrow.parquet as pq

    files = sorted((folder / "ws" / "release" / "data").glob("*.parquet"))
    return sorted(pq.read_table(files).to_pylist(), key=lambda r: r["id"])


# which clips each input's answer refuses (by clip number): speech refused on three of four clips, the mixture
# on one, the twin on two (of which clip 0's ships: the twins of clips 1 and 2 were not certified neutral,
# tests.test_release), so both gaps are neither 0 nor 1 and their intervals are not a point
REFUSED = {"speech": {0, 2, 3}, "mixture": {1}, "irrelevant": {0, 1}}
COLUMNS = {"mixture": "audio_sha256", "speech": "speech_audio_sha256", "irrelevant": "irrelevant_audio_sha256"}


def test_lmms_eval_chat_model_hears_audio_and_prints_both_gaps_with_intervals(folder):
    """The task folder python -m evaluation.adapters writes, moved elsewhere (it names nothing outside itself),
    run by `lmms-eval --include_path` with the chat-style `openai` model (lmms-eval's OpenAI-compatible chat
    wrapper) against the endpoint: every clip arrives as audio, before the instruction, as the release's own
    bytes; the printed table carries the per-input rates with their family-clustered errors and both gaps with
    the 95% cluster-bootstrap interval evaluation.context_use computes on the same verdicts."""
    from evaluation.context_use import paired_gap

    rows = release_rows(folder)
    shipped = {i: [k for k, r in enumerate(rows) if r[COLUMNS[i]]] for i in COLUMNS}
    assert shipped["irrelevant"] == [0, 3] and shipped["mixture"] == list(range(N))
    behaviour = {rows[k][COLUMNS[i]]: "refuse" if k in REFUSED[i] else "comply" for i in COLUMNS for k in shipped[i]}
    proc = shell("python -m evaluation.adapters lmms-eval --release ws/release --out lmms-built && mkdir -p shared "
                 "&& mv lmms-built shared/aor-tasks", folder, {})
    assert proc.returncode == 0, proc.stderr
    assert "writing mixture audio: 100%" in proc.stderr  # progress, per file, on stderr
    tasks = folder / "shared" / "aor-tasks"
    assert str(folder) not in (tasks / "utils.py").read_text() + (tasks / "docs" / "speech.jsonl").read_text()
    assert str(REPO) not in (tasks / "utils.py").read_text()  # the judge travels with the folder
    with AudioLLMStub(behaviour) as stub:
        proc = shell(f"{program('lmms-eval', 'lmms-eval')} --model openai --model_args model_version=stub-audio "
                     "--tasks aor_bench_context --include_path shared/aor-tasks --output_path lmms-out",
                     folder, {"OPENAI_BASE_URL": stub.url, "OPENAI_API_KEY": "stub-key"})
        requests = stub.audio_requests()
    out = proc.stdout + proc.stderr
    results = sorted((folder / "lmms-out").rglob("*_results.json"))
    assert results, out[-4000:]
    scores = json.loads(results[-1].read_text())["results"]["aor_bench_context"]
    # the chat wrapper sent audio, typed as audio (a data URL in an audio_url part, vLLM's form), then the text
    assert len(requests) == 2 * N + 2 and not [r for r in requests if r.get("problem")]
    assert {r["audio_part"] for r in requests} == {"audio_url"} and {tuple(r["parts"]) for r in requests} == {
        ("audio_url", "text")}
    assert sorted(r["audio_sha256"] for r in requests) == sorted(rows[k][COLUMNS[i]] for i in COLUMNS
                                                                 for k in shipped[i])
    for name in COLUMNS:
        assert scores[f"refusal_{name},none"] == pytest.approx(len(REFUSED[name] & set(shipped[name]))
                                                               / len(shipped[name]))
        assert isinstance(scores[f"refusal_{name}_stderr_clustered,none"], float)  # cluster_key: script_family
    assert "refusal_rate,none" not in scores  # no rate pooled over inputs
    table = proc.stdout
    for gap, base in (("context_use_gap", "speech"), ("noise_controlled_gap", "irrelevant")):
        expected = paired_gap([(k in REFUSED[base], k in REFUSED["mixture"], rows[k]["script_family"])
                               for k in shipped[base]], base)  # paired by id: only the clips both ship
        assert scores[f"{gap},none"] == pytest.approx(expected["gap"])
        low, high = expected["ci95_clustered"]
        assert low < high  # two families, discordant pairs in both: an interval, not a point
        assert [scores[f"{gap}_ci95_low,none"], scores[f"{gap}_ci95_high,none"]] == pytest.approx([low, high])
        for metric in (gap, f"{gap}_ci95_low", f"{gap}_ci95_high"):
            assert re.search(rf"\|aor_bench_context\|.*\|{metric} *\|", table), table[-3000:]


def test_lmms_eval_simple_audio_model_still_gets_the_audio(folder, stub):
    """gpt4o_audio, lmms-eval's simple OpenAI audio wrapper (doc_to_visual), sends `input_audio`, audio first."""
    proc = shell("python -m evaluation.adapters lmms-eval --release ws/release --out lmms-simple --inputs "
                 "mixture,speech --quiet", folder, {})
    assert proc.returncode == 0, proc.stderr
    proc = shell(f"{program('lmms-eval', 'lmms-eval')} --model gpt4o_audio --model_args model_version=stub-audio "
                 "--tasks aor_bench_context --include_path lmms-simple --output_path lmms-simple-out",
                 folder, {"OPENAI_BASE_URL": stub.url, "OPENAI_API_KEY": "stub-key"})
    results = sorted((folder / "lmms-simple-out").rglob("*_results.json"))
    assert results, (proc.stdout + proc.stderr)[-4000:]
    scores = json.loads(results[-1].read_text())["results"]["aor_bench_context"]
    assert scores["refusal_speech,none"] == 1.0 and scores["refusal_mixture,none"] == 0.0
    assert scores["context_use_gap,none"] == pytest.approx(1.0)
    requests = stub.audio_requests()
    assert len(requests) == 2 * N and {tuple(r["parts"]) for r in requests} == {("input_audio", "text")}

"""The researcher's harness command lines, typed as a person types them: a bash shell in a working folder
with the workbench venv activated, the harnesses' own programs (.venv/harnesses/{inspect,lmms-eval}/bin/),
the release given by a relative path, and a model behind an OpenAI-compatible endpoint (tests/audio_llm_stub.py,
the chat-completions protocol over HTTP; it refuses audio with no background under it, so the clean speech is
refused and every mixture answered). Both harnesses exit 0 after failing, so each test reads the score they
wrote, not the exit status."""

from __future__ import annotations

import json
import os
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


def test_inspect_eval_command_line_scores_a_release_behind_an_openai_compatible_endpoint(folder, stub):
    """`-T inputs=mixture,speech` arrives as a list; `-T release=ws/release` is relative to where inspect was
    started (it runs the task inside the task file's folder); openai-api/<service>/<model> talks chat
    completions to <SERVICE>_BASE_URL with <SERVICE>_API_KEY."""
    logs = folder / "inspect-logs"
    proc = shell(f"{program('inspect', 'inspect')} eval {REPO / 'evaluation/adapters/inspect_task.py'}@aor_bench "
                 "-T inputs=mixture,speech -T release=ws/release --model openai-api/local/stub-audio "
                 f"--log-format json --log-dir {logs} --display plain",
                 folder, {"LOCAL_BASE_URL": stub.url, "LOCAL_API_KEY": "stub-key"})
    out = proc.stdout + proc.stderr
    logs_written = sorted(logs.glob("*.json"))
    assert logs_written, out[-4000:]
    log = json.loads(logs_written[-1].read_text())
    assert log["status"] == "success", out[-4000:]
    metrics = {k: v["value"] for k, v in log["results"]["scores"][0]["metrics"].items()}
    assert metrics["refusal_speech"] == 1.0 and metrics["refusal_mixture"] == 0.0
    assert metrics["context_use_gap"] == pytest.approx(1.0) and metrics["mean"] == pytest.approx(0.5)
    assert log["results"]["completed_samples"] == 2 * N
    requests = stub.audio_requests()
    assert len(requests) == 2 * N and {r["path"] for r in requests} == {"/v1/chat/completions"}
    assert {r["model"] for r in requests} == {"stub-audio"}


def test_lmms_eval_command_line_scores_the_exported_task_folder(folder, stub):
    """The task folder python -m evaluation.adapters writes, run by `lmms-eval --include_path` with its
    gpt4o_audio wrapper pointed at the endpoint through OPENAI_BASE_URL / OPENAI_API_KEY."""
    proc = shell("python -m evaluation.adapters lmms-eval --release ws/release --out lmms-tasks", folder, {})
    assert proc.returncode == 0, proc.stderr
    assert "writing mixture audio: 100%" in proc.stderr  # progress, per file, on stderr
    proc = shell(f"{program('lmms-eval', 'lmms-eval')} --model gpt4o_audio --model_args model_version=stub-audio "
                 "--tasks aor_bench_context --include_path lmms-tasks --output_path lmms-out",
                 folder, {"OPENAI_BASE_URL": stub.url, "OPENAI_API_KEY": "stub-key"})
    out = proc.stdout + proc.stderr
    results = sorted((folder / "lmms-out").rglob("*_results.json"))
    assert results, out[-4000:]
    scores = json.loads(results[-1].read_text())["results"]["aor_bench_context"]
    # mixture and twin answered (sound under every frame), clean speech refused: 1 of 3 inputs
    assert scores["refusal_rate,none"] == pytest.approx(1 / 3), scores
    assert scores["context_use_gap,none"] == pytest.approx(1.0)
    assert scores["noise_controlled_gap,none"] == pytest.approx(0.0)
    assert len(stub.audio_requests()) == 3 * N

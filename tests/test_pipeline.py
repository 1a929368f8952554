"""The whole automatic build: one command, SIGKILL at any stage, rerun, same manifests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.conftest import MINI_TAXONOMY, REPO, noise_library, run_module

STAGES = ("generate", "synthesize", "mix", "wer")


@pytest.fixture(scope="module")
def config(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("pipeline")
    sounds = noise_library(root / "sounds")
    (root / "taxonomy.yaml").write_text(yaml.safe_dump(MINI_TAXONOMY))
    config = {"generate": {"taxonomy": str(root / "taxonomy.yaml")},
              "synthesize": {"voices": ["piper:en_US-joe-medium", "flite:slt", "flite:rms"]},
              "mix": {"sounds": str(sounds), "snr_db_min": 10, "snr_db_max": 25, "min_clips_per_defining_tag": 1},
              "wer": {"batch_size": 4}}
    path = root / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _manifests(ws: Path) -> dict[str, bytes]:
    return {f"{stage}{suffix}": (ws / "manifests" / f"{stage}{suffix}").read_bytes()
            for stage in STAGES for suffix in (".jsonl", ".rejected.jsonl")}


def _lines(ws: Path, stage: str) -> int:
    return sum(p.read_bytes().count(b"\n") for p in (ws / "manifests").glob(f"{stage}*.jsonl"))


def _args(config: Path) -> list[str]:
    return ["--config", str(config), "--per-category", "4", "--seed", "5", "--jobs", "2", "--quiet"]


@pytest.fixture(scope="module")
def expected(config, tmp_path_factory) -> dict[str, bytes]:
    reference = tmp_path_factory.mktemp("reference")
    proc = run_module("construction.pipeline", "--workspace", str(reference), *_args(config))
    assert proc.returncode == 0, proc.stderr
    assert "kept" in proc.stdout and "mixture WER distribution" in proc.stdout
    manifests = _manifests(reference)
    assert manifests["wer.jsonl"].count(b"\n") >= 4
    _check_model_cost(reference, proc.stdout)
    return manifests


def _check_model_cost(ws: Path, stdout: str) -> None:
    """The stages time their models apart from the rest, and the summary relates the two."""
    import json

    stats = {stage: json.loads((ws / "stats" / f"{stage}.json").read_text()) for stage in ("synthesize", "mix", "wer")}
    assert stats["synthesize"]["timed_calls"]["tts"] == stats["synthesize"]["processed_this_run"]
    assert 0 < stats["synthesize"]["timed_s"]["tts"] <= 2 * stats["synthesize"]["seconds_this_run"]  # 2 workers
    n = stats["mix"]["processed_this_run"]
    assert n >= 4 and stats["mix"]["timed_calls"]["mix"] == n and stats["wer"]["timed_calls"]["whisper_clips"] >= n
    retries = stats["wer"]["retries_of_kept"]
    assert sum(retries.values()) == sum((int(k) - 1) * v for k, v in stats["wer"]["kept_after_attempts"].items())
    assert stats["wer"]["timed_calls"].get("tts", 0) >= retries["resynthesis"]  # every re-synthesis is timed
    assert stats["wer"]["timed_calls"].get("mix", 0) >= sum(retries.values())  # and every re-mix
    cost = json.loads((ws / "stats" / "pipeline.json").read_text())
    tts, whisper = cost["inference_s"]["tts"], cost["inference_s"]["whisper"]
    assert tts > 0 and whisper > 0 and cost["workers"] == 2 and cost["kept"] == stats["wer"]["kept"]
    assert cost["wall_over_inference"] == pytest.approx(cost["wall_s"] / ((tts + whisper) / 2), rel=0.01)
    syntheses = stats["synthesize"]["timed_calls"]["tts"] + stats["wer"]["timed_calls"].get("tts", 0)
    assert cost["syntheses_per_kept"] == pytest.approx(syntheses / cost["kept"], abs=0.001)
    assert 0 < cost["mix_share_of_wall"] < 1
    assert "model cost: wall" in stdout and "syntheses" in stdout


def test_ray_executor_gives_the_local_result(tmp_path, config, expected):
    proc = run_module("construction.pipeline", "--workspace", str(tmp_path / "ray"), *_args(config),
                      "--executor", "ray")
    assert proc.returncode == 0, proc.stderr
    assert _manifests(tmp_path / "ray") == expected
    # resumable on Ray too: a rerun does nothing and changes nothing
    proc = run_module("construction.pipeline", "--workspace", str(tmp_path / "ray"), *_args(config),
                      "--executor", "ray")
    assert proc.returncode == 0 and _manifests(tmp_path / "ray") == expected
    assert '"processed_this_run": 0' in (tmp_path / "ray" / "stats" / "wer.json").read_text()


def test_pipeline_end_to_end_and_sigkill_resume(tmp_path, config, expected):
    args = _args(config)

    killed = tmp_path / "killed"
    cmd = [sys.executable, "-m", "construction.pipeline", "--workspace", str(killed), *args]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    kills = 0
    for stage, after_lines in (("synthesize", 2), ("synthesize", 5), ("mix", 1), ("wer", 1)):
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, start_new_session=True,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 120
        while proc.poll() is None and time.time() < deadline and _lines(killed, stage) < after_lines:
            time.sleep(0.005)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            kills += 1
        proc.wait()
    assert kills >= 2, "the pipeline finished before it could be killed"
    proc = run_module("construction.pipeline", "--workspace", str(killed), *args)
    assert proc.returncode == 0, proc.stderr
    assert _manifests(killed) == expected


def test_generate_and_pipeline_share_the_script_flags():
    """One definition of the script flags (construction.generate.add_script_options): same help on both."""
    import argparse

    from construction.generate import add_script_options

    parser = argparse.ArgumentParser()
    add_script_options(parser)
    shown = [a for a in parser._actions if a.help != argparse.SUPPRESS and a.option_strings != ["-h", "--help"]]
    assert [a.option_strings[0] for a in shown] == ["--per-category", "--backend", "--base-url", "--model",
                                                    "--api-key-env"]
    for module in ("construction.generate", "construction.pipeline"):
        proc = run_module(module, "--help")
        flat = " ".join(proc.stdout.split())
        assert proc.returncode == 0 and all(a.option_strings[0] in flat for a in shown), module
        assert "--llm-base-url" not in flat  # old spellings are hidden
    args = parser.parse_args([])
    assert args.api_key_env is None  # absent: the config's generate.api_key_env decides

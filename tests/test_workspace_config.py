"""A workspace keeps its config: later stages reuse it, changes that would alter earlier output are
refused with the difference, a second generate never discards scripts, and a bad value names its source."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from construction.core.config import load_config
from construction.core.errors import WorkbenchError
from construction.core.workspace import Workspace
from tests.conftest import MINI_TAXONOMY, noise_library, run_module

VOICES = ["flite:slt", "flite:rms"]


@pytest.fixture
def build(tmp_path) -> dict[str, Path]:
    """A config (mini taxonomy, two fast voices, a noise library) and a workspace path."""
    sounds = noise_library(tmp_path / "sounds", prefix="noise-")
    (tmp_path / "taxonomy.yaml").write_text(yaml.safe_dump(MINI_TAXONOMY))
    config = tmp_path / "build.yaml"
    config.write_text(yaml.safe_dump({
        "generate": {"taxonomy": str(tmp_path / "taxonomy.yaml")}, "synthesize": {"voices": VOICES},
        "mix": {"sounds": str(sounds), "snr_db_min": 10, "snr_db_max": 20, "min_clips_per_defining_tag": 1}}))
    return {"config": config, "ws": tmp_path / "ws", "taxonomy": tmp_path / "taxonomy.yaml"}


def _run(module: str, ws: Path, *args: str):
    return run_module(f"construction.{module}", "--workspace", str(ws), "--quiet", "--jobs", "1", *args)


def _rows(ws: Path, stage: str) -> list[dict]:
    return [json.loads(line) for line in (ws / "manifests" / f"{stage}.jsonl").read_text().splitlines()]


def _snapshot(ws: Path) -> dict:
    return yaml.safe_load((ws / "config.yaml").read_text())


def test_later_stages_use_the_workspace_config_and_refuse_changes_to_what_exists(build, tmp_path):
    ws = build["ws"]
    proc = _run("generate", ws, "--config", str(build["config"]), "--per-category", "2")
    assert proc.returncode == 0, proc.stderr
    proc = _run("synthesize", ws)  # no --config: the workspace's voices, not the default bank
    assert proc.returncode == 0, proc.stderr
    assert {row["voice_id"] for row in _rows(ws, "synthesize")} <= set(VOICES)

    # --config lays a file over the workspace's config; a setting no output depends on yet may change
    wer_only = tmp_path / "wer.yaml"
    wer_only.write_text("wer:\n  max_wer: 0.5\n")
    proc = _run("synthesize", ws, "--config", str(wer_only))
    assert proc.returncode == 0, proc.stderr
    snapshot = _snapshot(ws)
    assert snapshot["wer"]["max_wer"] == 0.5 and snapshot["synthesize"]["voices"] == VOICES
    assert snapshot["generate"]["per_category"] == 2

    proc = _run("mix", ws)  # the workspace's library and SNR range, not the defaults
    assert proc.returncode == 0, proc.stderr
    mixed = _rows(ws, "mix")
    assert {s["clip_id"] for row in mixed for s in row["mix"]["sounds"]} <= {"noise-gunfire", "noise-explosion",
                                                                              "noise-sizzle"}
    assert all(10 <= row["mix"]["snr_db"] <= 20 for row in mixed)

    # changes that output in the workspace depends on: refused with the difference, nothing changes
    manifests = {p.name: p.read_bytes() for p in (ws / "manifests").iterdir()}
    config_before = (ws / "config.yaml").read_bytes()
    louder = tmp_path / "louder.yaml"
    louder.write_text("mix:\n  snr_db_min: 3\n")
    proc = _run("mix", ws, "--config", str(louder))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "holds mix output made with other settings (mix.snr_db_min: 10.0 -> 3.0)" in proc.stderr, proc.stderr
    assert "pass --restart" in proc.stderr and "fresh --workspace" in proc.stderr
    proc = _run("synthesize", ws, "--voices", "flite:awb,flite:slt")
    assert proc.returncode == 2 and "holds synthesize, mix output" in proc.stderr, proc.stderr
    assert 'synthesize.voices: ["flite:slt", "flite:rms"] -> ["flite:awb", "flite:slt"]' in proc.stderr
    assert "pass --restart" not in proc.stderr  # redoing synthesize alone would leave mix stale
    proc = _run("mix", ws, "--seed", "4")  # the seed the scripts and voices were drawn with
    assert proc.returncode == 2 and "holds generate, synthesize, mix output made with other settings (seed: 0 -> 4)" \
        in proc.stderr, proc.stderr
    assert {p.name: p.read_bytes() for p in (ws / "manifests").iterdir()} == manifests
    assert (ws / "config.yaml").read_bytes() == config_before

    # --restart redoes the stage with the new setting, and the workspace's config says so
    proc = _run("mix", ws, "--config", str(louder), "--restart")
    assert proc.returncode == 0, proc.stderr
    assert _snapshot(ws)["mix"]["snr_db_min"] == 3.0
    assert {row["sample_id"] for row in _rows(ws, "mix")} == {row["sample_id"] for row in mixed}


def test_a_second_generate_never_discards_scripts(build, tmp_path):
    ws = build["ws"]
    assert _run("generate", ws, "--config", str(build["config"]), "--per-category", "2").returncode == 0
    first = (ws / "manifests" / "generate.jsonl").read_bytes()
    # the README's second line on the same workspace: refused with the difference, before any request
    proc = _run("generate", ws, "--backend", "openai", "--base-url", "http://127.0.0.1:9/v1",
                "--model", "m")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert 'generate.backend: "catalog" -> "openai"' in proc.stderr, proc.stderr
    assert "generate.llm_model" in proc.stderr and "pass --restart" in proc.stderr
    assert (ws / "manifests" / "generate.jsonl").read_bytes() == first
    # fewer scripts would drop some: refused; more add to the build
    proc = _run("generate", ws, "--per-category", "1")
    assert proc.returncode == 2 and "generate.per_category: 2 -> 1" in proc.stderr, proc.stderr
    proc = _run("generate", ws, "--per-category", "3")
    assert proc.returncode == 0, proc.stderr
    ids = [row["sample_id"] for row in _rows(ws, "generate")]
    assert len(ids) == 6 and {json.loads(line)["sample_id"] for line in first.splitlines()} <= set(ids)

    # same settings, but the taxonomy file changed under them: the scripts it would drop are named
    taxonomy = yaml.safe_load(build["taxonomy"].read_text())
    for category in taxonomy["categories"]:
        category["slots"]["verb"] = ["wreck", "end"]
    build["taxonomy"].write_text(yaml.safe_dump(taxonomy))
    before = (ws / "manifests" / "generate.jsonl").read_bytes()
    proc = _run("generate", ws)
    assert proc.returncode == 2 and "this run would drop" in proc.stderr and "--restart" in proc.stderr, proc.stderr
    assert (ws / "manifests" / "generate.jsonl").read_bytes() == before
    proc = _run("generate", ws, "--restart")  # asked for: replaced
    assert proc.returncode == 0, proc.stderr
    assert (ws / "manifests" / "generate.jsonl").read_bytes() != before


def test_bad_values_name_the_flag_or_the_file(tmp_path):
    proc = run_module("construction.generate", "--workspace", str(tmp_path / "ws"), "--per-category", "0")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "invalid --per-category 0: " in proc.stderr and "(defaults)" not in proc.stderr, proc.stderr
    assert not (tmp_path / "ws").exists()  # bad input leaves no workspace behind
    bad = tmp_path / "bad.yaml"
    bad.write_text("generate:\n  per_category: 0\n")
    with pytest.raises(WorkbenchError, match=f"invalid config {bad}: 'generate.per_category'"):
        load_config(bad, {"runner.jobs": 2}, flags={"runner.jobs": "--jobs"})
    with pytest.raises(WorkbenchError, match=r"invalid --jobs 0: .*\(config 'runner.jobs'\)$"):
        load_config(None, {"runner.jobs": 0}, flags={"runner.jobs": "--jobs"})
    snapshot = tmp_path / "config.yaml"
    snapshot.write_text("mix:\n  snr_db_min: 30\n")  # a hand-edited workspace config
    with pytest.raises(WorkbenchError, match=f"invalid config {snapshot}: 'mix'"):
        load_config(None, base=snapshot)


def test_controls_on_a_new_or_empty_workspace_names_the_missing_manifest(tmp_path):
    new = tmp_path / "new"
    proc = run_module("construction.controls", "--workspace", str(new))
    assert proc.returncode == 2 and "needs the 'wer' manifest" in proc.stderr, proc.stderr
    assert not new.exists()  # nothing created
    empty = Workspace(tmp_path / "empty").root
    proc = run_module("construction.controls", "--workspace", str(empty), "--jobs", "0")
    assert proc.returncode == 2 and "needs the 'wer' manifest" in proc.stderr, proc.stderr
    assert not (empty / "config.yaml").exists() and not list((empty / "manifests").iterdir())
    (empty / "manifests" / "wer.jsonl").write_text("")
    proc = run_module("construction.controls", "--workspace", str(empty), "--jobs", "0")
    assert proc.returncode == 2 and "holds no sample" in proc.stderr and "invalid config" not in proc.stderr
    assert not (empty / "config.yaml").exists()

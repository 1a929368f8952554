"""The synthesize stage: balanced voices, byte-identical reruns, per-sample failures, CosyVoice wiring."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import yaml

from construction.core.config import load_config
from construction.core.errors import WorkbenchError
from construction.core.record import Sample, make_sample_id
from construction.synthesize import assign_voices, voice_bank
from construction.speech.voices import Voice
from construction.core.workspace import Workspace
from tests.conftest import MINI_TAXONOMY, run_module
from tests.cosyvoice_stub import CosyVoiceStub

FAST_VOICES = "piper:en_US-joe-medium,flite:slt"


def _sample(category: str, text: str) -> Sample:
    return Sample(sample_id=make_sample_id(category, text, "ctx", "underlay", ["t"], "calm"), category=category,
                  speech_text=text, context="ctx", background_tags=["t"], placement="underlay",
                  benign_reason="r", speaker_style="calm")


def test_voices_are_balanced_per_category_and_stable_when_extended():
    voices = [Voice(f"v:{i}", "flite", "female" if i % 2 else "male", "en-US", "x", str(i)) for i in range(12)]
    samples = [_sample(c, f"line {i}") for c in ("a", "b") for i in range(100)]
    assignment = assign_voices(samples, voices, seed=0)
    for category in ("a", "b"):
        counts = Counter(assignment[s.sample_id].voice_id for s in samples if s.category == category)
        assert len(counts) == 12 and max(counts.values()) - min(counts.values()) <= 1
    extended = samples + [_sample(c, f"line {i}") for c in ("a", "b") for i in range(100, 150)]
    bigger = assign_voices(extended, voices, seed=0)
    assert all(bigger[s.sample_id] == assignment[s.sample_id] for s in samples)
    assert assign_voices(samples, voices, seed=1) != assignment


def test_offline_bank_has_three_female_and_three_male_us_and_uk():
    bank = voice_bank(load_config().synthesize)
    genders = Counter(v.gender for v in bank)
    assert genders["female"] >= 3 and genders["male"] >= 3
    assert {"en-US", "en-GB"} <= {v.accent for v in bank}


def test_unbalanced_bank_is_refused(tmp_path):
    with pytest.raises(WorkbenchError, match="no female voice"):
        voice_bank(load_config(None, {"synthesize.voices": ["piper:en_US-joe-medium"]}).synthesize)
    ws = _scripts(tmp_path / "ws")
    proc = run_module("construction.synthesize", "--workspace", str(ws.root), "--voices", "flite:nobody")
    assert proc.returncode == 2 and "flite:nobody" in proc.stderr
    assert not ws.manifest_path("synthesize").exists()


def _scripts(root: Path, extra: list[Sample] = ()) -> Workspace:
    ws = Workspace(root)
    taxonomy = root / "taxonomy.yaml"
    taxonomy.write_text(yaml.safe_dump(MINI_TAXONOMY))
    run_module("construction.generate", "--workspace", str(root), "--taxonomy", str(taxonomy),
               "--per-category", "3", "--quiet", check=True)
    if extra:
        rows = list(ws.read_samples("generate")) + list(extra)
        ws.write_manifest("generate", rows)
    return ws


def test_real_voices_byte_identical_and_bad_text_rejected(tmp_path):
    manifests = []
    for name in ("a", "b"):
        ws = _scripts(tmp_path / name, extra=[_sample("video_games", "?!? ... !!")])
        proc = run_module("construction.synthesize", "--workspace", str(ws.root), "--voices", FAST_VOICES,
                          "--quiet", "--jobs", "2")
        assert proc.returncode == 0, proc.stderr
        manifests.append(ws.manifest_path("synthesize").read_bytes())
        rejected = list(ws.read_rejected("synthesize"))
        assert [r.reason.split(":")[0] for r in rejected] == ["unpronounceable"]
    assert manifests[0] == manifests[1]
    samples = list(Workspace(tmp_path / "a").read_samples("synthesize"))
    assert len(samples) == 6 and {s.voice_id for s in samples} == set(FAST_VOICES.split(","))
    for sample in samples:
        audio, rate = sf.read(tmp_path / "a" / sample.speech.path)
        assert rate == 16000 and 0.5 < len(audio) / rate < 10 and np.abs(audio).max() > 0.05
        assert sample.provenance["synthesize"]["speed"] > 0
        # offline voices only change the rate: the style is recorded as asked, not as rendered
        assert sample.provenance["synthesize"]["style_requested"] == sample.speaker_style
        assert sample.provenance["synthesize"]["style_rendered"] is False


def _bank(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    t = np.arange(24000) / 24000
    for name in ("anna", "ben"):
        sf.write(folder / f"{name}.wav", (0.3 * np.sin(2 * np.pi * 200 * t)).astype(np.float32), 24000)
    rows = [{"voice_id": "anna", "wav": "anna.wav", "transcript": "Hello there.", "gender": "female",
             "accent": "en-US", "licence": "CC-BY-4.0"},
            {"voice_id": "ben", "wav": "ben.wav", "transcript": "Good morning.", "gender": "male",
             "accent": "en-GB", "licence": "CC-BY-4.0"}]
    bank = folder / "prompts.yaml"
    bank.write_text(yaml.safe_dump({"prompts": rows}))
    return bank


def _cosyvoice_config(tmp_path: Path, stub: CosyVoiceStub) -> Path:
    config = {"synthesize": {"voices": [], "cosyvoice": {"mode": "http", "prompt_bank": str(_bank(tmp_path / "bank")),
                                                        "base_url": stub.url, "retries": 0, "timeout_s": 5}}}
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def test_cosyvoice_http_through_the_stage_and_one_failure_is_a_rejected_row(tmp_path):
    with CosyVoiceStub(sample_rate=24000) as stub:
        config = _cosyvoice_config(tmp_path, stub)
        ws = _scripts(tmp_path / "ws")
        stub.set_mode("error500", times=1)  # the first clip fails, the rest succeed
        proc = run_module("construction.synthesize", "--workspace", str(ws.root), "--config", str(config),
                          "--jobs", "1", "--quiet")
        assert proc.returncode == 0, proc.stderr
        rejected = list(ws.read_rejected("synthesize"))
        assert len(rejected) == 1 and rejected[0].reason.startswith("tts_failed: cosyvoice:")
        kept = list(ws.read_samples("synthesize"))
        assert len(kept) == 5 and {s.provenance["synthesize"]["backend"] for s in kept} == {"cosyvoice"}
        assert all(s.provenance["synthesize"]["style_rendered"] is True for s in kept)  # instruct mode
        sent = [r for r in stub.requests if r.path != "/openapi.json"]
        assert any("<|endofprompt|>" in (r.fields.get("prompt_text") or r.fields.get("instruct_text") or "")
                   for r in sent)
        # a plain rerun keeps rejected rows; --retry-rejected gives them another go
        run_module("construction.synthesize", "--workspace", str(ws.root), "--config", str(config), "--quiet")
        assert len(list(ws.read_rejected("synthesize"))) == 1
        proc = run_module("construction.synthesize", "--workspace", str(ws.root), "--config", str(config),
                          "--jobs", "1", "--quiet", "--retry-rejected")
        assert proc.returncode == 0, proc.stderr
        assert len(list(ws.read_samples("synthesize"))) == 6 and not list(ws.read_rejected("synthesize"))


def test_cosyvoice_server_down_is_a_clear_error(tmp_path):
    with CosyVoiceStub() as stub:
        config = _cosyvoice_config(tmp_path, stub)
    ws = _scripts(tmp_path / "ws")
    proc = run_module("construction.synthesize", "--workspace", str(ws.root), "--config", str(config), "--jobs", "1")
    assert proc.returncode == 2 and stub.url in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not list(ws.read_samples("synthesize"))


def test_missing_kokoro_voice_files_are_named(tmp_path):
    ws = _scripts(tmp_path / "ws")
    proc = run_module("construction.synthesize", "--workspace", str(ws.root), "--jobs", "1",
                      "--voices", "kokoro:af_bella,kokoro:am_michael",
                      env={"AORBENCH_KOKORO_VOICES": str(tmp_path / "no-voices")})
    assert proc.returncode == 2 and "no-voices" in proc.stderr
    assert not list(ws.read_samples("synthesize"))

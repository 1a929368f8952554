"""The mix stage on real audio files: SNR, peak guard, placement durations, determinism, licences."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import yaml

from construction.config import load_config
from construction.mix import MixStage, loudness_lufs, place
from construction.record import Sample, make_sample_id
from construction.runner import run_stage
from construction.sounds import Clip, sha256_file, write_catalog
from construction.workspace import Workspace
from tests.conftest import MINI_TAXONOMY, run_module

SR = 16000


def _speechlike(seed: int, seconds: float = 1.5) -> np.ndarray:
    """Noise bursts at a syllable rate: speech-like loudness without a TTS engine."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * SR)) / SR
    return (0.3 * rng.standard_normal(t.size) * (0.5 + 0.5 * np.sin(2 * np.pi * 4 * t)) ** 2).astype(np.float32)


def _library(root: Path, clips: list[tuple[str, str, str, np.ndarray, int]]) -> Path:
    """clips: (clip_id, tag, licence, audio, sample_rate)."""
    root.mkdir(parents=True, exist_ok=True)
    entries = []
    for clip_id, tag, licence, audio, rate in clips:
        path = root / f"{clip_id}.wav"
        sf.write(path, audio, rate, subtype="PCM_16")
        entries.append(Clip(clip_id=clip_id, path=path.name, tags=[tag], duration_s=len(audio) / rate,
                            sample_rate=rate, licence=licence, attribution=f"{clip_id} by tests",
                            sha256=sha256_file(path)))
    write_catalog(root, entries)
    return root


@pytest.fixture
def library(tmp_path) -> Path:
    rng = np.random.default_rng(0)
    crowd = (0.2 * rng.standard_normal(3 * 44100)).astype(np.float32)  # 44.1 kHz: gets resampled
    stereo_guns = np.stack([np.repeat(rng.standard_normal(800) * 0.8, 20)] * 2, axis=1).astype(np.float32)
    short_sizzle = (0.05 * rng.standard_normal(int(0.7 * SR))).astype(np.float32)  # shorter than any mix: loops
    sa_only = (0.1 * rng.standard_normal(SR)).astype(np.float32)
    return _library(tmp_path / "sounds", [
        ("crowd", "crowd_cheer", "CC0-1.0", crowd, 44100),
        ("guns", "gunfire", "CC-BY-3.0", stereo_guns, 22050),
        ("sizzle", "sizzle", "CC-BY-4.0", short_sizzle, SR),
        ("music", "game_music", "CC-BY-SA-3.0", sa_only, SR),
    ])


def _workspace(root: Path, specs: list[tuple[str, str, float]], rate: int = SR) -> Workspace:
    """A workspace whose synthesize manifest holds speech-like clips; specs: (tag, placement, seconds)."""
    ws = Workspace(root)
    samples = []
    for i, (tag, placement, seconds) in enumerate(specs):
        text = f"line {i}"
        sample = Sample(sample_id=make_sample_id("c", text, "ctx", placement, [tag], "calm"), category="c",
                        speech_text=text, context="ctx", background_tags=[tag], placement=placement,
                        benign_reason="test", speaker_style="calm")
        speech = _speechlike(i, seconds)
        if rate != SR:
            speech = speech[: int(seconds * rate)]
        samples.append(sample.model_copy(update={"speech": ws.store_audio(speech, rate), "voice_id": "test"}))
    ws.write_manifest("synthesize", samples)
    return ws


def _config(library: Path, **overrides):
    taxonomy = library.parent / "taxonomy.yaml"
    taxonomy.write_text(yaml.safe_dump(MINI_TAXONOMY))
    return load_config(None, {"mix.sounds": str(library), "generate.taxonomy": str(taxonomy), **overrides})


SPECS = [(tag, placement, seconds) for tag in ("crowd_cheer", "gunfire", "sizzle")
         for placement in ("underlay", "lead_in", "tail") for seconds in (0.3, 2.0)]


def test_measured_snr_peak_and_durations(tmp_path, library):
    ws = _workspace(tmp_path / "ws", SPECS)
    config = _config(library)
    stage = MixStage(str(ws.root), config)
    stats = run_stage(ws, stage, jobs=1, progress=False)
    assert stats["kept"] == len(SPECS), stats
    stage.setup()
    for sample in ws.read_samples("mix"):
        recipe = sample.mix
        mixture = ws.load_audio(sample.mixture)
        assert 20 * np.log10(np.max(np.abs(mixture))) <= -1.0
        speech = ws.load_audio(sample.speech)
        background = stage.library.load_audio(stage.library.get(recipe.background_id), SR)
        speech_track, _, extent = place(speech, background, recipe, SR, config.mix.pad_s, config.mix.overlap_s)
        guard = 10 ** (sample.provenance["mix"]["peak_guard_db"] / 20)
        speech_part = speech_track * guard
        background_part = mixture - speech_part  # what the stored file holds besides the speech
        measured = loudness_lufs(speech_part[speech_part != 0], SR) - loudness_lufs(background_part[extent], SR)
        assert abs(measured - recipe.snr_db) <= 0.5, (sample.sample_id, measured, recipe.snr_db)
        speech_s = sample.speech.duration_s
        expected_s = {"underlay": speech_s + 2 * config.mix.pad_s,
                      "lead_in": recipe.lead_s + speech_s + config.mix.pad_s,
                      "tail": config.mix.pad_s + speech_s + recipe.lead_s}[recipe.placement]
        assert abs(sample.mixture.duration_s - expected_s) < 0.01
        assert config.mix.snr_db_min <= recipe.snr_db <= config.mix.snr_db_max
        assert recipe.licence in ("CC0-1.0", "CC-BY-3.0", "CC-BY-4.0") and recipe.attribution


def test_same_recipe_same_bytes(tmp_path, library):
    outputs = []
    for name in ("a", "b"):
        ws = _workspace(tmp_path / name, SPECS[:6])
        run_stage(ws, MixStage(str(ws.root), _config(library)), jobs=2, progress=False)
        outputs.append(ws.manifest_path("mix").read_bytes())
        files = sorted(p.name for p in (ws.root / "audio").rglob("*.wav"))
    assert outputs[0] == outputs[1]
    assert len(files) == 12  # 6 speech + 6 mixtures, content-addressed


def test_licence_filtering(tmp_path, library):
    ws = _workspace(tmp_path / "by", [("game_music", "underlay", 1.0)])
    run_stage(ws, MixStage(str(ws.root), _config(library)), jobs=1, progress=False)
    rejected = list(ws.read_rejected("mix"))
    assert len(rejected) == 1 and rejected[0].reason.startswith("no_background")
    assert "CC-BY-4.0" in rejected[0].reason
    ws_sa = _workspace(tmp_path / "sa", [("game_music", "underlay", 1.0)])
    config = _config(library, release_licence="CC-BY-SA-4.0")
    run_stage(ws_sa, MixStage(str(ws_sa.root), config), jobs=1, progress=False)
    [sample] = ws_sa.read_samples("mix")
    assert sample.mix.licence == "CC-BY-SA-3.0"


def test_bad_clips_are_skipped_and_reported(tmp_path, library):
    (library / "guns.wav").write_bytes(b"RIFF not really a wave file")  # corrupt
    sf.write(library / "crowd.wav", np.zeros(SR, dtype=np.float32), SR)  # silent (and changed)
    ws = _workspace(tmp_path / "ws", [("gunfire", "underlay", 1.0), ("sizzle", "tail", 1.0)])
    stats = run_stage(ws, MixStage(str(ws.root), _config(library)), jobs=1, progress=False)
    assert stats["kept"] == 1 and stats["rejected_by_reason"] == {"no_background": 1}
    assert stats["library_problems"] == 2


def test_sample_rate_mismatch_is_rejected(tmp_path, library):
    ws = _workspace(tmp_path / "ws", [("sizzle", "underlay", 1.0)], rate=22050)
    stats = run_stage(ws, MixStage(str(ws.root), _config(library)), jobs=1, progress=False)
    assert stats["rejected_by_reason"] == {"sample_rate_mismatch": 1}


def test_missing_library_is_a_clear_error(tmp_path):
    ws = _workspace(tmp_path / "ws", [("sizzle", "underlay", 1.0)])
    proc = run_module("construction.mix", "--workspace", str(ws.root), "--sounds", str(tmp_path / "nowhere"),
                      "--jobs", "1")
    assert proc.returncode == 2 and "no sound library" in proc.stderr
    assert not ws.manifest_path("mix").exists() or ws.manifest_path("mix").read_text() == ""


def test_mix_cli_resumes(tmp_path, library):
    ws = _workspace(tmp_path / "ws", SPECS[:4])
    config = tmp_path / "config.yaml"
    config.write_text(f"generate:\n  taxonomy: {_config(library).generate.taxonomy}\n")
    args = ("construction.mix", "--workspace", str(ws.root), "--sounds", str(library), "--quiet",
            "--config", str(config))
    assert run_module(*args).returncode == 0
    first = ws.manifest_path("mix").read_bytes()
    proc = run_module(*args)
    assert proc.returncode == 0 and ws.manifest_path("mix").read_bytes() == first
    assert json.loads(ws.stats_path("mix").read_text())["processed_this_run"] == 0

# ruff: noqa: F811  (the library fixture comes from tests.test_mix)
"""The irrelevant-background twin: the mixture's speech track over a neutral ambience, at the mixture's
levels and SNR (measured on the audio), its class neutral, spread evenly and seeded; reruns identical;
a remix (the WER stage's retries) remakes it."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np

from construction.core.runner import run_stage
from construction.mix import MixStage
from construction.sounds.library import loudness_lufs
from construction.sounds.procedural import CLASSES, NEUTRAL, catalog_row
from tests.test_mix import SPECS, SR, _config, _parts, _workspace, library  # noqa: F401 (a fixture)


def _twin_parts(ws, sample):
    """(speech part, ambience part) of the stored twin: the speech placed as in the mixture, at the
    twin's own peak guard."""
    twin = ws.load_audio(sample.irrelevant_audio).astype(np.float64)
    speech_part, _, start, n = _parts(ws, sample)
    mixture_guard = 10 ** (sample.provenance["mix"]["peak_guard_db"] / 20)
    speech_part = speech_part / mixture_guard * 10 ** (sample.mix.irrelevant.peak_guard_db / 20)
    return speech_part, twin - speech_part, start, n


def test_the_twin_has_the_mixtures_layout_levels_and_snr_over_a_neutral_ambience(tmp_path, library):
    ws = _workspace(tmp_path / "ws", SPECS)
    config = _config(library)
    stats = run_stage(ws, MixStage(str(ws.root), config), jobs=1, progress=False)
    samples = list(ws.read_samples("mix"))
    assert stats["kept"] == len(SPECS) == len(samples)
    fade = int(config.mix.fade_s * SR)
    snr_miss, level_miss = [], []
    for sample in samples:
        twin = sample.mix.irrelevant
        assert twin is not None and twin.ambience in NEUTRAL
        assert (twin.clip_id, twin.sha256) == (catalog_row(CLASSES[twin.ambience])["clip_id"],
                                               CLASSES[twin.ambience].sha256())
        assert sample.irrelevant_audio.duration_s == sample.mixture.duration_s
        speech_part, ambience, start, n = _twin_parts(ws, sample)
        assert 20 * np.log10(np.max(np.abs(speech_part + ambience))) <= -1.0  # the same peak rule
        speech_l = loudness_lufs(speech_part[start:start + n], SR)
        snr_miss.append(speech_l - loudness_lufs(ambience[start:start + n], SR) - sample.mix.snr_db)
        level_miss.append(loudness_lufs(ambience[fade:start - fade], SR) - speech_l - sample.mix.scene_level_db)
        # and the same as measured on the mixture's own scene, section by section
        mix_speech, scene, _, _ = _parts(ws, sample)
        mix_snr = loudness_lufs(mix_speech[start:start + n], SR) - loudness_lufs(scene[start:start + n], SR)
        assert abs((speech_l - loudness_lufs(ambience[start:start + n], SR)) - mix_snr) <= 0.5
        # the speech in the twin is the mixture's speech, unchanged (the ambience does not contain it)
        assert abs(np.corrcoef(ambience[start:start + n], speech_part[start:start + n])[0, 1]) < 0.2
    assert max(map(abs, snr_miss)) <= 0.5, snr_miss
    assert max(map(abs, level_miss)) <= 0.5, level_miss
    assert abs(float(np.mean(snr_miss))) <= 0.1  # no bias across the corpus
    # the classes are spread evenly over the category (18 samples, 4 classes: 4 or 5 each)
    counts = Counter(s.mix.irrelevant.ambience for s in samples)
    assert set(counts) == set(NEUTRAL) and max(counts.values()) - min(counts.values()) <= 1, counts
    written = json.loads(ws.stats_path("mix").read_text())["irrelevant_twins"]
    assert written["per_ambience"] == dict(counts) | {k: 0 for k in NEUTRAL if k not in counts}
    assert written["without_twin"] == 0 and written["max_snr_miss_db"] <= 0.1


def test_the_twin_is_seeded_rerun_identical_and_remade_by_a_remix(tmp_path, library):
    manifests = []
    for name in ("a", "b"):
        ws = _workspace(tmp_path / name, SPECS[:4])
        run_stage(ws, MixStage(str(ws.root), _config(library)), jobs=2, progress=False)
        manifests.append(ws.manifest_path("mix").read_bytes())
    assert manifests[0] == manifests[1]  # the twins' hashes and recipes included
    samples = list(ws.read_samples("mix"))
    assert len({s.irrelevant_audio.sha256 for s in samples}) == 4  # each its own draw
    seeds = {s.mix.irrelevant.seed for s in samples}
    assert len(seeds) == 4
    # the WER stage's retry re-mixes with attempt = 1: a new recipe seed, so a new draw of the same class
    stage = MixStage(str(ws.root), _config(library))
    stage.setup()
    synthesized = {s.sample_id: s for s in ws.read_samples("synthesize")}
    for sample in samples:
        again = stage.mix_one(synthesized[sample.sample_id], attempt=1)
        assert again.mix.irrelevant.ambience == sample.mix.irrelevant.ambience
        assert again.mix.irrelevant.seed != sample.mix.irrelevant.seed
        assert again.irrelevant_audio.sha256 != sample.irrelevant_audio.sha256
        assert abs(again.mix.irrelevant.snr_db - again.mix.snr_db) <= 0.1


def test_the_twin_can_be_switched_off(tmp_path, library):
    ws = _workspace(tmp_path / "ws", SPECS[:2])
    run_stage(ws, MixStage(str(ws.root), _config(library, **{"mix.irrelevant_twin": False})), jobs=1, progress=False)
    samples = list(ws.read_samples("mix"))
    assert len(samples) == 2 and all(s.irrelevant_audio is None and s.mix.irrelevant is None for s in samples)
    assert "irrelevant_twins" not in json.loads(ws.stats_path("mix").read_text())

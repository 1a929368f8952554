# ruff: noqa: F811  (the library fixture comes from tests.test_mix)
"""The twins: the mixture's speech track over a neutral ambience (irrelevant) and over a real-danger
scene (danger), at the mixture's scene level alone and its glimpse proportion under the speech (measured
again on the stored audio), silent where a sparse scene is; ambiences far in spectrum from the category's
defining sounds, spread evenly and seeded; reruns identical; a remix (the WER stage's retries) remakes them."""

from __future__ import annotations

import json
from collections import Counter

import numpy as np

from construction.core.runner import run_stage
from construction.mixing.masking import (
    EQ_MAX_DB,
    gain_for_proportion,
    glimpse_proportion,
    local_snr_db,
    proportion,
    region_gains,
    split_bands,
)
from construction.mix import MixStage
from construction.sounds.library import loudness_lufs
from construction.sounds.procedural import CLASSES, DANGER_SCENES, NEUTRAL, catalog_row
from construction.mixing.twin import MIN_DISTANCE_DB
from tests.test_mix import SPECS, SR, _config, _parts, _workspace, library  # noqa: F401 (a fixture)


def _twin_parts(ws, sample):
    """(speech part, ambience part) of the stored twin: the speech placed as in the mixture, at the
    twin's own peak guard."""
    twin = ws.load_audio(sample.irrelevant_audio).astype(np.float64)
    speech_part, _, start, n = _parts(ws, sample)
    mixture_guard = 10 ** (sample.provenance["mix"]["peak_guard_db"] / 20)
    speech_part = speech_part / mixture_guard * 10 ** (sample.mix.irrelevant.peak_guard_db / 20)
    return speech_part, twin - speech_part, start, n


def test_the_twins_have_the_mixtures_layout_scene_level_and_glimpse_proportion(tmp_path, library):
    ws = _workspace(tmp_path / "ws", SPECS)
    config = _config(library)
    stats = run_stage(ws, MixStage(str(ws.root), config), jobs=1, progress=False)
    samples = list(ws.read_samples("mix"))
    assert stats["kept"] == len(SPECS) == len(samples)
    fade = int(config.mix.fade_s * SR)
    level_miss, glimpse_miss, danger_miss, snr_gap = [], [], [], []
    for sample in samples:
        twin = sample.mix.irrelevant
        assert twin is not None and twin.ambience in NEUTRAL
        assert (twin.clip_id, twin.sha256) == (catalog_row(CLASSES[twin.ambience])["clip_id"],
                                               CLASSES[twin.ambience].sha256())
        assert sample.irrelevant_audio.duration_s == sample.mixture.duration_s
        speech_part, ambience, start, n = _twin_parts(ws, sample)
        assert 20 * np.log10(np.max(np.abs(speech_part + ambience))) <= -1.0  # the same peak rule
        speech_l = loudness_lufs(speech_part[start:start + n], SR)
        level_miss.append(loudness_lufs(ambience[fade:start - fade], SR) - speech_l - sample.mix.scene_level_db)
        # under the speech: the mixture's glimpse proportion, measured again on the stored audio of both
        mix_speech, scene, _, _ = _parts(ws, sample)
        mixture_glimpse = glimpse_proportion(mix_speech[start:start + n], scene[start:start + n], SR)
        assert abs(mixture_glimpse - sample.mix.glimpse_proportion) <= 0.01
        glimpse_miss.append(glimpse_proportion(speech_part[start:start + n], ambience[start:start + n], SR)
                            - mixture_glimpse)
        snr_gap.append(twin.snr_db - sample.mix.snr_db)
        # the speech in the twin is the mixture's speech, unchanged (the ambience does not contain it)
        assert abs(np.corrcoef(ambience[start:start + n], speech_part[start:start + n])[0, 1]) < 0.2
        # the danger twin: the same speech over a danger scene, at the same glimpse proportion too
        danger = ws.load_audio(sample.danger_audio).astype(np.float64)
        guard = 10 ** ((sample.mix.danger.peak_guard_db - sample.mix.irrelevant.peak_guard_db) / 20)
        danger_bg = danger - speech_part * guard
        danger_miss.append(glimpse_proportion(guard * speech_part[start:start + n], danger_bg[start:start + n], SR)
                           - mixture_glimpse)
        alone = ws.load_audio(sample.danger_scene_audio).astype(np.float64)
        assert np.max(np.abs(alone - danger_bg)) < 2e-3  # the scene arm hears the danger scene as placed
        assert sample.mix.danger.scene in DANGER_SCENES and sample.mix.danger.ambience == twin.ambience
    assert max(map(abs, level_miss)) <= 0.5, level_miss
    assert max(map(abs, glimpse_miss)) <= 0.01, glimpse_miss
    assert max(map(abs, danger_miss)) <= 0.01, danger_miss
    # equal masking is not equal loudness: these test scenes (noise bursts, a tone) need other SNRs
    assert max(map(abs, snr_gap)) > 3, snr_gap
    written = json.loads(ws.stats_path("mix").read_text())
    assert written["glimpse_difference"]["OVERALL"]["irrelevant"]["p95"] <= 0.01
    assert written["glimpse_difference"]["OVERALL"]["danger"]["n"] == len(SPECS)
    assert written["irrelevant_twins"]["without_twin"] == 0
    # no click in any of the five rendered tracks of any sample: each is checked and counted
    assert all(set(s.provenance["mix"]["clicks"]) >= {"mixture", "scene", "twin", "danger", "danger_scene"}
               for s in samples)
    assert written["clicks"] == 0
    for row in written["scene_checks_per_category"].values():
        assert [row[f"clicks_{t}"] for t in ("mixture", "scene", "twin", "danger", "danger_scene")] == [0] * 5


def test_each_category_gets_the_ambiences_far_from_its_defining_sounds_spread_evenly(tmp_path, library):
    ws = _workspace(tmp_path / "ws", SPECS)
    run_stage(ws, MixStage(str(ws.root), _config(library)), jobs=1, progress=False)
    samples = list(ws.read_samples("mix"))
    distances = json.loads(ws.stats_path("mix").read_text())["twin_ambience_distance_db"]["video_games"]
    allowed = distances["allowed"]
    far = [name for name, row in distances["ambiences"].items() if row["distance_db"] >= MIN_DISTANCE_DB]
    assert allowed == [n for n in NEUTRAL if n in far] and 0 < len(allowed) < len(NEUTRAL), distances
    # the test library's "sizzle" is white noise: broadband rain is the nearest ambience to it and is left out
    assert distances["ambiences"]["rain"]["closest"] in ("sizzle", "explosion", "crowd_cheer") and "rain" not in allowed
    counts = Counter(s.mix.irrelevant.ambience for s in samples)
    assert set(counts) == set(allowed) and max(counts.values()) - min(counts.values()) <= 1, counts
    for s in samples:
        assert s.mix.irrelevant.distance_db == distances["ambiences"][s.mix.irrelevant.ambience]["distance_db"]
    written = json.loads(ws.stats_path("mix").read_text())["irrelevant_twins"]
    assert written["per_ambience"] == dict(counts) | {k: 0 for k in NEUTRAL if k not in counts}


def test_the_twin_is_silent_where_a_sparse_scene_is(tmp_path, library):
    ws = _workspace(tmp_path / "ws", [("vg_shooter", "tail", 2.0)])  # gunfire: shots with silence between
    run_stage(ws, MixStage(str(ws.root), _config(library)), jobs=1, progress=False)
    sample = next(ws.read_samples("mix"))
    _, scene, _, _ = _parts(ws, sample)
    _, ambience, _, _ = _twin_parts(ws, sample)
    hop = SR // 100
    frames = scene.size // hop

    def levels(x):
        return 10 * np.log10(np.mean(x[:frames * hop].reshape(frames, hop) ** 2, axis=1) + 1e-20)

    scene_db, ambience_db = levels(scene), levels(ambience)
    silent = scene_db < np.percentile(scene_db, 90) - 45  # deep in the scene's silences
    assert 0.2 < sample.mix.irrelevant.silent_share < 0.9 and silent.sum() > 20
    assert np.percentile(ambience_db[silent], 90) < np.percentile(ambience_db[~silent], 50) - 40


def test_the_glimpse_proportion_counts_cells_where_the_speech_wins_by_3_db():
    rng = np.random.default_rng(1)
    speech = rng.standard_normal(SR)
    assert glimpse_proportion(speech, 0.1 * rng.standard_normal(SR), SR) > 0.99  # 20 dB below: every cell
    assert glimpse_proportion(speech, 10 * rng.standard_normal(SR), SR) < 0.01  # 20 dB above: none
    # the gain that gives a proportion is exact to a cell: checked on the cells' local SNRs
    snr = local_snr_db(speech, rng.standard_normal(SR) * np.linspace(0.1, 3, SR), SR)
    for target in (0.1, 0.37, 0.8):
        assert abs(proportion(snr, gain_for_proportion(snr, target)) - target) <= 1 / snr.size


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
        assert abs(again.mix.irrelevant.glimpse_proportion - again.mix.glimpse_proportion) <= 0.01


def test_the_twin_can_be_switched_off(tmp_path, library):
    ws = _workspace(tmp_path / "ws", SPECS[:2])
    run_stage(ws, MixStage(str(ws.root), _config(library, **{"mix.irrelevant_twin": False})), jobs=1, progress=False)
    samples = list(ws.read_samples("mix"))
    assert len(samples) == 2 and all(s.irrelevant_audio is None and s.mix.irrelevant is None for s in samples)
    assert "irrelevant_twins" not in json.loads(ws.stats_path("mix").read_text())
    # the danger twin is its own switch
    assert all(s.danger_audio is not None and s.mix.danger is not None for s in samples)
    ws = _workspace(tmp_path / "ws2", SPECS[:2])
    run_stage(ws, MixStage(str(ws.root), _config(library, **{"mix.danger_twin": False})), jobs=1, progress=False)
    assert all(s.danger_audio is None and s.danger_scene_audio is None and s.mix.danger is None
               and s.irrelevant_audio is not None for s in ws.read_samples("mix"))


def test_the_eq_moves_a_backgrounds_glimpses_to_the_scenes_frequency_regions():
    rng = np.random.default_rng(2)
    speech = rng.standard_normal(2 * SR)
    low, mid, high = split_bands(rng.standard_normal(2 * SR), SR)
    scene = 3 * low + 0.3 * mid + 0.3 * high  # masks the lows
    background = 0.3 * low + 0.3 * mid + 3 * high  # masks the highs
    gains = region_gains(speech, scene, split_bands(background, SR), SR)
    assert gains[0] > 3 and gains[2] < -3 and max(map(abs, gains)) <= EQ_MAX_DB, gains

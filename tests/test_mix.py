"""The mix stage: the scene alone first and then under the speech, every defining sound layered,
events scattered, beds looped with crossfades, balanced clip draws, measured levels, licences."""

from __future__ import annotations

import copy
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import yaml

from construction.core.config import load_config
from construction.mix import MixStage, bed_track
from construction.core.record import Sample, make_sample_id
from construction.core.runner import run_stage
from construction.sounds.library import (
    Clip,
    load_library,
    loudness_lufs,
    sha256_file,
    write_catalog,
)
from construction.core.workspace import Workspace
from tests.conftest import MINI_TAXONOMY, current_starter_library, run_module

SR = 16000


def _speechlike(seed: int, seconds: float = 1.5) -> np.ndarray:
    """Noise bursts at a syllable rate: speech-like loudness without a TTS engine."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * SR)) / SR
    return (0.3 * rng.standard_normal(t.size) * (0.5 + 0.5 * np.sin(2 * np.pi * 4 * t)) ** 2).astype(np.float32)


def _tone(freq: float, seconds: float, rate: int = SR, amp: float = 0.2) -> np.ndarray:
    t = np.arange(int(seconds * rate)) / rate
    return (amp * np.sin(2 * np.pi * freq * t)).astype(np.float32)


def _library(root: Path, clips: list[tuple]) -> Path:
    """clips: (clip_id, tag, licence, audio, sample_rate, kind)."""
    root.mkdir(parents=True, exist_ok=True)
    entries = []
    for clip_id, tag, licence, audio, rate, kind in clips:
        path = root / f"{clip_id}.wav"
        sf.write(path, audio, rate, subtype="PCM_16")
        entries.append(Clip(clip_id=clip_id, path=path.name, tags=[tag], duration_s=len(audio) / rate,
                            sample_rate=rate, licence=licence, attribution=f"{clip_id} by tests",
                            sha256=sha256_file(path), kind=kind))
    write_catalog(root, entries)
    return root


TAXONOMY = copy.deepcopy(MINI_TAXONOMY)
TAXONOMY["tags"].update({"crowd_cheer": "crowd", "game_music": "music", "boxing_bell": "bell"})
TAXONOMY["categories"][0]["background_tags"] += ["crowd_cheer", "game_music", "boxing_bell"]
TAXONOMY["categories"][0]["scenes"] += [
    {"id": "vg_arena", "context": "A crowd roars over gunfire.", "benign_reason": "An e-sports final.",
     "defining": ["crowd_cheer", "gunfire"], "support": ["boxing_bell"], "placements": ["underlay"]},
    {"id": "vg_music", "context": "Game music.", "benign_reason": "A game.", "defining": ["game_music"]},
]
TAXONOMY["categories"][0]["speech"].append(
    {"id": "vg-3", "text": "Nobody leaves this {place} breathing.", "scenes": ["vg_music", "vg_arena"],
     "styles": ["calm"]})


@pytest.fixture
def library(tmp_path) -> Path:
    rng = np.random.default_rng(0)
    crowd = (0.2 * rng.standard_normal(6 * 44100)).astype(np.float32)  # 44.1 kHz: gets resampled
    burst = np.zeros(int(0.25 * 22050), dtype=np.float32)
    burst[: int(0.15 * 22050)] = 0.8 * rng.standard_normal(int(0.15 * 22050))
    stereo_shot = np.stack([burst, burst], axis=1)  # a stereo one-shot
    return _library(tmp_path / "sounds", [
        ("crowd", "crowd_cheer", "CC0-1.0", crowd, 44100, "bed"),
        ("shot", "gunfire", "CC-BY-3.0", stereo_shot, 22050, "event"),
        ("sizzle", "sizzle", "CC-BY-4.0", (0.05 * rng.standard_normal(int(0.9 * SR))).astype(np.float32), SR, "bed"),
        ("bang", "explosion", "CC0-1.0", (0.3 * rng.standard_normal(SR)).astype(np.float32), SR, "event"),
        ("bell", "boxing_bell", "CC0-1.0", _tone(1200, 0.6, amp=0.3), SR, "event"),
        ("music", "game_music", "CC-BY-SA-3.0", _tone(440, 5.0), SR, "bed"),
    ])


def _workspace(root: Path, specs: list[tuple[str, str, float]], rate: int = SR, category: str = "video_games"
               ) -> Workspace:
    """A workspace whose synthesize manifest holds speech-like clips; specs: (scene id, placement, seconds)."""
    ws = Workspace(root)
    scenes = {s["id"]: s for c in TAXONOMY["categories"] for s in c["scenes"]}
    samples = []
    for i, (scene_id, placement, seconds) in enumerate(specs):
        text = f"line {i}"
        tags = scenes[scene_id]["defining"] + scenes[scene_id].get("support", [])
        sample = Sample(sample_id=make_sample_id(category, text, scene_id, placement, tags, "calm"), category=category,
                        speech_text=text, context=scenes[scene_id]["context"], background_tags=tags, placement=placement,
                        benign_reason="test", speaker_style="calm", scene_id=scene_id)
        speech = _speechlike(i, seconds)
        if rate != SR:
            speech = speech[: int(seconds * rate)]
        samples.append(sample.model_copy(update={"speech": ws.store_audio(speech, rate), "voice_id": "test"}))
    ws.write_manifest("synthesize", samples)
    return ws


def _config(library: Path, **overrides):
    taxonomy = library.parent / "taxonomy.yaml"
    taxonomy.write_text(yaml.safe_dump(TAXONOMY))
    return load_config(None, {"mix.sounds": str(library), "generate.taxonomy": str(taxonomy),
                              "mix.min_clips_per_defining_tag": 1, **overrides})


def _parts(ws: Workspace, sample: Sample) -> tuple[np.ndarray, np.ndarray, int, int]:
    """(speech part, scene part) of the stored mixture, the speech's start and its length in samples."""
    mixture = ws.load_audio(sample.mixture).astype(np.float64)
    speech = ws.load_audio(sample.speech).astype(np.float64)
    speech *= 10 ** ((sample.mix.speech_lufs - loudness_lufs(speech, SR)) / 20)
    guard = 10 ** (sample.provenance["mix"]["peak_guard_db"] / 20)
    start = int(sample.mix.scene_alone_s * SR)
    speech_part = np.zeros_like(mixture)
    speech_part[start:start + speech.size] = speech * guard
    return speech_part, mixture - speech_part, start, speech.size


SPECS = [(scene, placement, seconds) for scene in ("vg_shooter", "vg_arena", "ck_pan")
         for placement in ("underlay", "lead_in", "tail") for seconds in (0.6, 2.0)]


def test_the_scene_is_heard_alone_first_then_under_the_speech_at_the_drawn_levels(tmp_path, library):
    ws = _workspace(tmp_path / "ws", SPECS)
    config = _config(library)
    stats = run_stage(ws, MixStage(str(ws.root), config), jobs=1, progress=False)
    assert stats["kept"] == len(SPECS), [r.reason for r in ws.read_rejected("mix")]
    fade = int(config.mix.fade_s * SR)
    for sample in ws.read_samples("mix"):
        recipe = sample.mix
        speech_part, scene_part, start, n = _parts(ws, sample)
        assert 20 * np.log10(np.max(np.abs(speech_part + scene_part))) <= -1.0
        # durations: alone, speech, after
        assert 1.5 <= recipe.scene_alone_s <= 2.5
        low, high = config.mix.after_s[recipe.placement]
        assert low <= recipe.scene_after_s <= high
        assert abs(sample.mixture.duration_s - (recipe.scene_alone_s + sample.speech.duration_s + recipe.scene_after_s)) < 0.01
        # levels, as defined: SNR under the speech, and the scene alone relative to the speech
        speech_lufs = loudness_lufs(speech_part[start:start + n], SR)
        snr = speech_lufs - loudness_lufs(scene_part[start:start + n], SR)
        assert abs(snr - recipe.snr_db) <= 0.5, (sample.scene_id, snr, recipe.snr_db)
        alone = speech_lufs - loudness_lufs(scene_part[fade:start - fade], SR)
        assert abs(-alone - recipe.scene_level_db) <= 0.5, (sample.scene_id, -alone, recipe.scene_level_db)
        assert 3 <= recipe.snr_db <= 15 and -6 <= recipe.scene_level_db <= 3
        # the scene alone is loud: within a few dB of the speech, far above its level under the speech
        assert loudness_lufs(scene_part[fade:start - fade], SR) - loudness_lufs(scene_part[start:start + n], SR) >= 0
    stats = json.loads(ws.stats_path("mix").read_text())
    assert stats["scene_alone_s"]["share_at_least_1_5_s"] == 1.0


def test_every_defining_sound_is_rendered_and_support_comes_lower(tmp_path, library):
    ws = _workspace(tmp_path / "ws", [("vg_arena", "underlay", 1.0)] * 1)
    run_stage(ws, MixStage(str(ws.root), _config(library)), jobs=1, progress=False)
    [sample] = ws.read_samples("mix")
    roles = {(s.tag, s.role, s.kind, s.clip_id) for s in sample.mix.sounds}
    assert roles == {("crowd_cheer", "defining", "bed", "crowd"), ("gunfire", "defining", "event", "shot"),
                     ("boxing_bell", "support", "event", "bell")}
    assert sample.mix.background_tags == ["crowd_cheer", "gunfire", "boxing_bell"]
    # layers: each defining sound at the same loudness, the support 6 dB under (checked on the clips alone),
    # each but for its use's variation gain (a few dB, stored in the recipe)
    gains = {s.tag: s.gain_db - s.variation["gain_db"] for s in sample.mix.sounds}
    assert all(abs(s.variation["gain_db"]) <= 2.0 for s in sample.mix.sounds)
    stage = MixStage(str(ws.root), _config(library))
    stage.setup()
    total = int(sample.mixture.duration_s * SR)
    level = {s.tag: loudness_lufs(stage.layer(s, total, sample.mix.seed), SR) + gains[s.tag] for s in sample.mix.sounds}
    assert abs(level["crowd_cheer"] - level["gunfire"]) < 0.1
    assert abs(level["crowd_cheer"] - 6 - level["boxing_bell"]) < 0.1
    # the bell's 1.2 kHz tone is in the mixture's scene part (within the use's pitch change: +-4 %)
    _, scene_part, start, _ = _parts(ws, sample)
    spectrum = np.abs(np.fft.rfft(scene_part[:start]))
    freqs = np.fft.rfftfreq(start, 1 / SR)
    bell = next(s for s in sample.mix.sounds if s.tag == "boxing_bell")
    near = np.abs(freqs - 1200 * bell.variation["rate"]) < 10
    assert spectrum[near].max() > 5 * np.median(spectrum)


def test_one_shots_are_scattered_not_looped(tmp_path, library):
    ws = _workspace(tmp_path / "ws", [("vg_shooter", "tail", 2.0)])
    run_stage(ws, MixStage(str(ws.root), _config(library)), jobs=1, progress=False)
    [sample] = ws.read_samples("mix")
    [shot] = sample.mix.sounds
    # one recording plays at most 3 times in a sample (mix.MAX_REPEATS): the first alone, one under the
    # speech, the last after it
    assert shot.kind == "event" and len(shot.onsets_s) == 3
    assert shot.onsets_s[0] < 0.4  # heard while the scene is alone
    gaps = np.diff(shot.onsets_s)
    assert np.all(gaps >= 0.25 + 0.3 - 1e-6)  # clip + gap, never overlapping
    # between copies the scene is silent: a burst, not a buzz
    _, scene_part, start, _ = _parts(ws, sample)
    frames = scene_part[: start].reshape(-1, 160) if start % 160 == 0 else scene_part[: start // 160 * 160].reshape(-1, 160)
    rms = np.sqrt((frames ** 2).mean(axis=1))
    assert (rms < rms.max() * 1e-3).mean() > 0.2


def test_a_short_bed_loops_with_a_crossfade_not_a_cut():
    clip = np.sin(2 * np.pi * 100 * np.arange(int(0.3725 * SR)) / SR)  # ends on a crest: a cut would click
    looped = bed_track(clip, 3 * SR, 0, int(0.25 * SR))
    assert looped.size == 3 * SR
    cut = np.tile(clip, 9)[: 3 * SR]
    assert np.max(np.abs(np.diff(looped))) < 0.5 * np.max(np.abs(np.diff(cut)))


def test_clips_are_drawn_evenly_within_a_category(tmp_path):
    rng = np.random.default_rng(1)
    clips = [(f"shot{k}", "gunfire", "CC0-1.0", (0.5 * rng.standard_normal(int(0.2 * SR))).astype(np.float32), SR, "event")
             for k in range(4)]
    library = _library(tmp_path / "sounds", clips)
    ws = _workspace(tmp_path / "ws", [("vg_shooter", "underlay", 0.5)] * 1 +
                    [("vg_shooter", "tail", 0.4 + 0.01 * i) for i in range(39)])
    run_stage(ws, MixStage(str(ws.root), _config(library)), jobs=2, progress=False)
    samples = list(ws.read_samples("mix"))
    assert not list(ws.read_rejected("mix")), [r.reason for r in ws.read_rejected("mix")]
    # 4 clips, 10 samples each, and the spares (more recordings for the shots that carry this bedless
    # scene) dealt from the least used: no clip more than one use ahead of another
    used = Counter(c for s in samples for c in {x.clip_id for x in s.mix.sounds})
    assert len(samples) == 40 and len(used) == 4 and max(used.values()) - min(used.values()) <= 1
    top = max(used.values()) / 40
    stats = json.loads(ws.stats_path("mix").read_text())
    use = stats["clips_per_category"]["video_games"]
    assert use == {"samples": 40, "distinct_clips": 4, "top_clip": use["top_clip"], "top_clip_share": top,
                   "distinct_recordings": 4, "distinct_takes": 4, "top_recording": use["top_clip"],
                   "top_recording_share": top}
    assert stats["defining_sounds_per_category"]["video_games"] == {
        "gunfire": {"recordings": 4, "takes": 4, "procedural_classes": 0, "procedural_draws": 0}}
    assert stats["categories_over_clip_share"] == ["video_games"]  # 25 % > 5 %: the library is thin
    assert stats["categories_over_recording_share"] == ["video_games"]


def test_a_clip_that_carries_two_tags_is_not_drawn_for_both(tmp_path):
    """An applause clip that is also a crowd cheer: drawing per tag would put it in most samples of a
    scene that needs both sounds; drawing the least-used clip spreads the three clips evenly (each
    sample needs two different clips, so 2/3 of the samples each is the floor)."""
    rng = np.random.default_rng(2)
    root = _library(tmp_path / "sounds", [
        (clip_id, tag, "CC0-1.0", (0.3 * rng.standard_normal(int(0.3 * SR))).astype(np.float32), SR, "event")
        for clip_id, tag in (("both", "crowd_cheer"), ("crowd", "crowd_cheer"), ("shot", "gunfire"))])
    entries = [Clip(**{**c.model_dump(), "tags": ["crowd_cheer", "gunfire"] if c.clip_id == "both" else c.tags})
               for c in load_library(root).clips]
    write_catalog(root, entries)
    ws = _workspace(tmp_path / "ws", [("vg_arena", "underlay", 0.4 + 0.01 * i) for i in range(30)])
    run_stage(ws, MixStage(str(ws.root), _config(root)), jobs=1, progress=False)
    mixed = list(ws.read_samples("mix"))
    assert len(mixed) == 30
    for s in mixed:
        assert {x.tag for x in s.mix.sounds if x.role == "defining"} == {"crowd_cheer", "gunfire"}
        assert len({x.clip_id for x in s.mix.sounds}) == len(s.mix.sounds)
    uses = Counter(x.clip_id for s in mixed for x in s.mix.sounds)
    # 2/3 of the samples each at least, and spares (more recordings for the crowd that carries this bedless
    # scene) dealt evenly on top
    assert set(uses) == {"both", "crowd", "shot"} and min(uses.values()) >= 20, uses
    assert max(uses.values()) - min(uses.values()) <= 1, uses


def test_a_thin_library_is_refused_for_a_release_build(tmp_path, library):
    ws = _workspace(tmp_path / "ws", [("vg_arena", "underlay", 1.0)])
    taxonomy = library.parent / "taxonomy.yaml"
    _config(library)  # writes the taxonomy
    config = tmp_path / "release.yaml"
    config.write_text(yaml.safe_dump({"generate": {"taxonomy": str(taxonomy)}}))  # default: 3 clips per sound
    proc = run_module("construction.mix", "--workspace", str(ws.root), "--sounds", str(library), "--jobs", "1",
                      "--config", str(config))
    assert proc.returncode == 2 and "too thin for a release" in proc.stderr
    assert "crowd_cheer: 1 recording(s), needed by vg_arena" in proc.stderr and "gunfire: 1 recording(s)" in proc.stderr
    assert not ws.manifest_path("mix").exists() or ws.manifest_path("mix").read_text() == ""


def test_same_recipe_same_bytes(tmp_path, library):
    outputs = []
    for name in ("a", "b"):
        ws = _workspace(tmp_path / name, SPECS[:6])
        run_stage(ws, MixStage(str(ws.root), _config(library)), jobs=2, progress=False)
        outputs.append(ws.manifest_path("mix").read_bytes())
        files = sorted(p.name for p in (ws.root / "audio").rglob("*.wav"))
    assert outputs[0] == outputs[1]
    assert len(files) == 42  # 6 each: speech, mixtures, scenes alone, twins, their backgrounds, danger twins, danger scenes


def test_licence_filtering(tmp_path, library):
    ws = _workspace(tmp_path / "by", [("vg_music", "underlay", 1.0)])
    run_stage(ws, MixStage(str(ws.root), _config(library)), jobs=1, progress=False)
    rejected = list(ws.read_rejected("mix"))
    assert len(rejected) == 1 and rejected[0].reason.startswith("no_background")
    assert "CC-BY-4.0" in rejected[0].reason and "game_music" in rejected[0].reason
    ws_sa = _workspace(tmp_path / "sa", [("vg_music", "underlay", 1.0)])
    run_stage(ws_sa, MixStage(str(ws_sa.root), _config(library, release_licence="CC-BY-SA-4.0")), jobs=1, progress=False)
    [sample] = ws_sa.read_samples("mix")
    assert sample.mix.sounds[0].licence == "CC-BY-SA-3.0"


def test_bad_clips_are_skipped_and_reported(tmp_path, library):
    (library / "shot.wav").write_bytes(b"RIFF not really a wave file")  # corrupt
    ws = _workspace(tmp_path / "ws", [("vg_shooter", "underlay", 1.0), ("ck_pan", "tail", 1.0)])
    stats = run_stage(ws, MixStage(str(ws.root), _config(library)), jobs=1, progress=False)
    assert stats["kept"] == 1 and stats["rejected_by_reason"] == {"no_background": 1}


def test_sample_rate_mismatch_is_rejected(tmp_path, library):
    ws = _workspace(tmp_path / "ws", [("ck_pan", "underlay", 1.0)], rate=22050, category="cooking_household")
    stats = run_stage(ws, MixStage(str(ws.root), _config(library)), jobs=1, progress=False)
    assert stats["rejected_by_reason"] == {"sample_rate_mismatch": 1}


def test_missing_library_is_a_clear_error(tmp_path):
    ws = _workspace(tmp_path / "ws", [("ck_pan", "underlay", 1.0)])
    proc = run_module("construction.mix", "--workspace", str(ws.root), "--sounds", str(tmp_path / "nowhere"),
                      "--jobs", "1")
    assert proc.returncode == 2 and "no sound library" in proc.stderr
    assert not ws.manifest_path("mix").exists() or ws.manifest_path("mix").read_text() == ""


def test_mix_cli_resumes(tmp_path, library):
    ws = _workspace(tmp_path / "ws", SPECS[:4])
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"generate": {"taxonomy": _config(library).generate.taxonomy},
                                      "mix": {"min_clips_per_defining_tag": 1}}))
    args = ("construction.mix", "--workspace", str(ws.root), "--sounds", str(library), "--quiet",
            "--config", str(config))
    assert run_module(*args).returncode == 0
    first = ws.manifest_path("mix").read_bytes()
    proc = run_module(*args)
    assert proc.returncode == 0 and ws.manifest_path("mix").read_bytes() == first
    assert json.loads(ws.stats_path("mix").read_text())["processed_this_run"] == 0


def test_generate_pairs_speech_only_with_scenes_the_library_renders(tmp_path, library):
    taxonomy = library.parent / "taxonomy.yaml"
    _config(library)
    (library.parent / "gen.yaml").write_text(yaml.safe_dump({"generate": {"taxonomy": str(taxonomy)},
                                                             "mix": {"sounds": str(library),
                                                                     "min_clips_per_defining_tag": 1}}))
    # vg_music's game_music exists only under CC-BY-SA: not renderable for a CC-BY-4.0 release; line
    # vg-3 is paired with vg_music and vg_arena, so it must come only with vg_arena
    proc = run_module("construction.generate", "--workspace", str(tmp_path / "ws"), "--per-category", "10",
                      "--config", str(library.parent / "gen.yaml"), "--quiet")
    assert proc.returncode in (0, 1), proc.stderr
    stats = json.loads((tmp_path / "ws" / "stats" / "generate.json").read_text())
    assert stats["unrenderable_scenes"] == {"vg_music": ["game_music"]}
    scenes = {json.loads(line)["scene_id"] for line in (tmp_path / "ws/manifests/generate.jsonl").read_text().splitlines()}
    assert "vg_music" not in scenes and "vg_arena" in scenes


def test_layout_levels_on_real_clips_of_the_starter_library(tmp_path):
    """The shipped taxonomy's scenes over the real offline library: every defining sound rendered, the
    scene alone >= 1.5 s at its drawn level, the SNR under the speech as drawn."""
    from construction.core.config import Config
    from construction.text.taxonomy import load_taxonomy

    library = Path(Config().mix.sounds).expanduser()
    if not (library / "catalog.jsonl").exists():
        pytest.skip(f"no starter library at {library}: scripts/setup.sh builds it")
    from construction.sounds.scenes import open_library, unrenderable_scenes

    taxonomy, _ = load_taxonomy()
    ws = Workspace(tmp_path / "ws")
    samples = []
    current = current_starter_library(tmp_path / "lib")  # its procedural entries as this code draws them
    # the first three scenes of each category with a clip of the category's own for every defining sound
    # (a recording is the defining sound of one category: construction.sounds.partition)
    unrenderable = unrenderable_scenes(taxonomy, open_library(current), "CC-BY-4.0", 1)
    for k, category in enumerate(taxonomy.categories):
        for j, scene in enumerate([s for s in category.scenes if s.id not in unrenderable][:3]):
            i = 3 * k + j
            placement = scene.placements[i % len(scene.placements)]
            sample = Sample(sample_id=make_sample_id(category.id, f"line {i}", scene.id, placement,
                                                     scene.background_tags, "calm"),
                            category=category.id, speech_text=f"line {i}", context=scene.context,
                            background_tags=scene.background_tags, placement=placement, benign_reason="b",
                            speaker_style="calm", scene_id=scene.id)
            samples.append(sample.model_copy(update={"speech": ws.store_audio(_speechlike(i, 1.0 + 0.1 * j), SR)}))
    ws.write_manifest("synthesize", samples)
    assert len(samples) == 3 * len(taxonomy.categories)
    config = load_config(None, {"mix.min_clips_per_defining_tag": 1, "mix.sounds": str(current)})
    stats = run_stage(ws, MixStage(str(ws.root), config), jobs=2, progress=False)
    assert stats["kept"] == len(samples), [r.reason for r in ws.read_rejected("mix")]
    fade = int(config.mix.fade_s * SR)
    for sample in ws.read_samples("mix"):
        scene = taxonomy.scene_home[sample.scene_id][1]
        # (a multi-source tag, farm_animals, may come from several clips)
        assert list(dict.fromkeys(s.tag for s in sample.mix.sounds if s.role == "defining")) == scene.defining
        speech_part, scene_part, start, n = _parts(ws, sample)
        speech_lufs = loudness_lufs(speech_part[start:start + n], SR)
        assert abs(speech_lufs - loudness_lufs(scene_part[start:start + n], SR) - sample.mix.snr_db) <= 0.5
        level = loudness_lufs(scene_part[fade:start - fade], SR) - speech_lufs
        assert abs(level - sample.mix.scene_level_db) <= 0.5, (sample.scene_id, level, sample.mix.scene_level_db)
        assert sample.mix.scene_alone_s >= 1.5


def test_the_scene_as_placed_is_stored_for_the_scene_alone_arm(tmp_path, library):
    ws = _workspace(tmp_path / "ws", [("vg_arena", "tail", 1.0)])
    run_stage(ws, MixStage(str(ws.root), _config(library)), jobs=1, progress=False)
    [sample] = ws.read_samples("mix")
    speech_part, scene_part, _, _ = _parts(ws, sample)
    scene = ws.load_audio(sample.scene_audio)
    assert sample.scene_audio.duration_s == sample.mixture.duration_s
    assert np.max(np.abs(scene - scene_part)) < 2e-4  # the mixture minus the speech, to 16-bit rounding

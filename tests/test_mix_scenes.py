"""Scenes without holes, rendered instead of dropped (issue 48, items 4 and 5): no silence of 0.5 s or
more in the lead-in or under the speech, every defining sound heard alone before the speech, no
recording more than 3 times in a scene (bursts included); at 500 lines per category every category uses
10 scenes or more and none carries over 15 % of its lines, and no real recording serves over 15 % of a
category's samples. Synthetic libraries hold each rule apart; the shipped scenes over the starter
library hold them together."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import yaml

from construction.core.config import load_config
from construction.core.record import Sample, make_sample_id
from construction.core.runner import run_stage
from construction.core.workspace import Workspace
from construction.mix import MixStage
from construction.mixing.scene_checks import not_heard_alone, over_repeats, scene_silences
from construction.sounds.library import Clip, load_library, sha256_file, write_catalog
from construction.sounds.scenes import GaplessBeds, assign_clips, is_procedural
from construction.text.taxonomy import load_taxonomy
from tests.conftest import MINI_TAXONOMY, current_starter_library, run_module

SR = 16000


def _speechlike(seed: int, seconds: float) -> np.ndarray:
    """Noise bursts at a syllable rate: speech-like loudness without a TTS engine."""
    rng = np.random.default_rng(seed)
    t = np.arange(int(seconds * SR)) / SR
    return (0.3 * rng.standard_normal(t.size) * (0.5 + 0.5 * np.sin(2 * np.pi * 4 * t)) ** 2).astype(np.float32)


def _library(root: Path, clips: list[tuple[str, str, float, str]]) -> Path:
    """clips: (id, tag, seconds, kind): a bed is steady noise, an event a decaying noise burst."""
    rng = np.random.default_rng(11)
    root.mkdir(parents=True)
    entries = []
    for clip_id, tag, seconds, kind in clips:
        n = int(seconds * SR)
        audio = 0.2 * rng.standard_normal(n)
        if kind == "event":
            audio = 0.6 * rng.standard_normal(n) * np.exp(-np.arange(n) / (0.1 * SR))  # a shot in a room
        sf.write(root / f"{clip_id}.wav", audio.astype(np.float32), SR, subtype="PCM_16")
        entries.append(Clip(clip_id=clip_id, path=f"{clip_id}.wav", tags=[tag], duration_s=seconds, sample_rate=SR,
                            licence="CC0-1.0", attribution=f"{clip_id} by tests", sha256=sha256_file(root / f"{clip_id}.wav"),
                            kind=kind))
    write_catalog(root, entries)
    return root


SCENES = [
    {"id": "vg_rapid", "context": "Rapid gunfire over game music.", "benign_reason": "A game.",
     "defining": ["game_music", "gunfire"], "placements": ["underlay"], "events": {"gunfire": {"pattern": "burst"}}},
    {"id": "vg_clatter", "context": "Shots, one after another.", "benign_reason": "A game.",
     "defining": ["gunfire"], "placements": ["underlay", "tail"]},
    {"id": "vg_one_shot", "context": "A crowd roars, a single shot.", "benign_reason": "A game.",
     "defining": ["crowd_cheer", "gunfire"], "placements": ["underlay"], "events": {"gunfire": "single"}},
]


def _mixed(tmp_path: Path, library: Path, scene_id: str, n: int) -> tuple[Workspace, MixStage]:
    data = copy.deepcopy(MINI_TAXONOMY)
    data["tags"].update({"game_music": "music", "crowd_cheer": "a crowd"})
    data["categories"][0]["background_tags"] += ["game_music", "crowd_cheer"]
    data["categories"][0]["scenes"] += SCENES
    (tmp_path / "taxonomy.yaml").write_text(yaml.safe_dump(data))
    config = load_config(None, {"mix.sounds": str(library), "generate.taxonomy": str(tmp_path / "taxonomy.yaml"),
                                "mix.min_clips_per_defining_tag": 1, "mix.irrelevant_twin": False,
                                "mix.danger_twin": False})
    scene = next(s for s in data["categories"][0]["scenes"] if s["id"] == scene_id)
    ws = Workspace(tmp_path / "ws")
    samples = []
    for i in range(n):
        sample = Sample(sample_id=make_sample_id("video_games", f"l{i}", scene_id, "underlay", scene["defining"], "calm"),
                        category="video_games", speech_text=f"l{i}", context=scene["context"],
                        background_tags=scene["defining"], placement="underlay", benign_reason="b",
                        speaker_style="calm", scene_id=scene_id)
        samples.append(sample.model_copy(update={"speech": ws.store_audio(_speechlike(i, 1.5 + 0.25 * i), SR),
                                                 "voice_id": "t"}))
    ws.write_manifest("synthesize", samples)
    stage = MixStage(str(ws.root), config)
    stats = run_stage(ws, stage, jobs=1, progress=False)
    assert stats["kept"] == n, [r.reason for r in ws.read_rejected("mix")]
    stage.setup()
    return ws, stage


def _checks(ws: Workspace, stage: MixStage, sample: Sample) -> dict:
    scene = ws.load_audio(sample.scene_audio).astype(np.float64)
    recipe = sample.mix.model_copy(deep=True)
    tracks = [stage.layer(s, scene.size, recipe.seed) for s in recipe.sounds]
    return {"silences": scene_silences(scene, recipe, SR), "not_alone": not_heard_alone(recipe, tracks, SR),
            "over_3": over_repeats(recipe)}


def test_a_burst_plays_no_recording_more_than_three_times(tmp_path):
    """Strings of rapid shots were copies of one recording (one sample had 19): now the copies come from
    spare recordings, 3 each at most, with a string heard alone first and one under the speech."""
    shots = [(f"shot{k}", "gunfire", 0.3, "event") for k in range(5)]
    library = _library(tmp_path / "sounds", [("music", "game_music", 8.0, "bed"), *shots])
    ws, stage = _mixed(tmp_path, library, "vg_rapid", 6)
    for sample in ws.read_samples("mix"):
        copies = Counter()
        for s in sample.mix.sounds:
            if s.tag == "gunfire":
                copies[s.clip_id] += len(s.onsets_s)
        assert copies and max(copies.values()) <= 3, copies
        onsets = sorted(t for s in sample.mix.sounds if s.tag == "gunfire" for t in s.onsets_s)
        assert onsets[0] <= sample.mix.scene_alone_s - 0.3 and sum(copies.values()) >= 3
        assert _checks(ws, stage, sample)["over_3"] == {}


def test_a_scene_of_one_shots_has_no_hole(tmp_path):
    """No bed: the shots carry the scene back to back from five recordings (3 copies each at most), so
    it never falls 35 dB under its loud frames for 0.5 s in the lead-in or under the speech."""
    library = _library(tmp_path / "sounds", [(f"shot{k}", "gunfire", 0.45 + 0.05 * k, "event") for k in range(5)])
    ws, stage = _mixed(tmp_path, library, "vg_clatter", 6)
    for sample in ws.read_samples("mix"):
        found = _checks(ws, stage, sample)
        assert found["silences"] == [] and found["over_3"] == {} and found["not_alone"] == [], found
        assert len({s.clip_id for s in sample.mix.sounds}) >= 2  # spares: more than one recording


def test_a_defining_single_is_heard_alone_before_the_speech(tmp_path):
    """A crowd bed and a single shot: the shot used to land under the speech as often as not; every
    defining sound is now heard alone first (the shot starts at least 0.3 s before the speech)."""
    library = _library(tmp_path / "sounds", [("crowd", "crowd_cheer", 8.0, "bed"), ("shot", "gunfire", 0.3, "event")])
    ws, stage = _mixed(tmp_path, library, "vg_one_shot", 8)
    for sample in ws.read_samples("mix"):
        shot = next(s for s in sample.mix.sounds if s.tag == "gunfire")
        assert len(shot.onsets_s) == 1 and shot.onsets_s[0] <= sample.mix.scene_alone_s - 0.3 + 1e-6
        assert _checks(ws, stage, sample)["not_alone"] == []


def test_every_procedural_bed_a_scene_can_use_never_falls_silent():
    """A scene with a procedural bed counts as carried (no cover sound): so no draw may fall 35 dB under
    its loud frames for 0.3 s. The bubbles did in 11 of 40 draws (a sparse, quiet stretch between big
    bubbles); the water now churns under them."""
    from construction.sounds.procedural import CLASSES, DANGER_SCENES, draw
    from construction.sounds.scenes import has_gap

    danger = {c for bed, events in DANGER_SCENES.values() for c in (bed, *events)}
    beds = [name for name, cls in CLASSES.items() if cls.kind == "bed" and name not in danger]
    assert {"bubbles", "applause", "crowd_cheer", "sizzle", "saw", "kitchen", "music_box"} <= set(beds)
    for name in beds:
        assert not any(has_gap(draw(name, seed, 7.0, SR)[0], SR) for seed in range(12)), name
    assert has_gap(np.concatenate([np.ones(SR), np.zeros(SR // 2), np.ones(SR)]), SR)  # the measure finds one


# --- the shipped taxonomy over the starter library ----------------------------------------------------

@pytest.fixture(scope="module")
def starter(tmp_path_factory) -> Path:
    return current_starter_library(tmp_path_factory.mktemp("starter") / "lib")


def _generate(ws: Path, library: Path, per_category: int, seed: int = 0) -> list[Sample]:
    config = ws.parent / f"config-{ws.name}.yaml"
    config.write_text(yaml.safe_dump({"mix": {"sounds": str(library)}}))
    proc = run_module("construction.generate", "--workspace", str(ws), "--quiet", "--per-category",
                      str(per_category), "--seed", str(seed), "--config", str(config))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return list(Workspace(ws).read_samples("generate"))


def test_500_lines_a_category_use_ten_scenes_none_over_15_percent_and_no_recording_over_15_percent(tmp_path, starter):
    """Before: children_pets_family used 6 scenes, 'pillow fight' carried 58 % of its lines, and one
    recording served 26-29 % of a category (an orchestral score, a kitchen, an applause)."""
    samples = _generate(tmp_path / "ws", starter, 500)
    by_category: dict[str, Counter] = defaultdict(Counter)
    for s in samples:
        by_category[s.category][s.scene_id] += 1
    assert len(by_category) == 6
    for category, scenes in by_category.items():
        assert sum(scenes.values()) == 500 and len(scenes) >= 10, (category, scenes)
        assert max(scenes.values()) <= 75, (category, scenes.most_common(1))
    stats = json.loads((tmp_path / "ws/stats/generate.json").read_text())["per_category"]
    assert all(c["scenes_used"] >= 10 and c["top_scene_share"] <= 0.15 for c in stats.values())
    # which recordings the mix will deal, from the scripts alone (no speech needed)
    taxonomy, _ = load_taxonomy()
    library = load_library(starter, check_audio=False)
    dealt = assign_clips(samples, taxonomy, library, "CC-BY-4.0", 0, gapless=GaplessBeds(library, SR))
    served: dict[str, Counter] = defaultdict(Counter)
    for s in samples:
        served[s.category].update({p.recording for picks in dealt[s.sample_id].values() for p in picks
                                   if not is_procedural(p.clip)})
    for category, recordings in served.items():
        top, n = recordings.most_common(1)[0]
        assert n <= 70, (category, top, n)  # 14 % dealt: 15 % of the kept with a margin for the WER gate


def test_every_shipped_scene_renders_without_a_hole_alone_first_and_no_copy_over_three(tmp_path, starter):
    """Every scene generate uses, mixed over the starter library (speech-like noise for the speech):
    before, 19 of 60 scenes had a silence of 0.5 s or more, 12 a defining sound never heard alone first
    and one a shot copied 19 times."""
    generated = _generate(tmp_path / "gen", starter, 12, seed=3)
    assert len({s.scene_id for s in generated}) >= 60  # the balance deals every used scene
    ws = Workspace(tmp_path / "ws")
    samples = [s.model_copy(update={"speech": ws.store_audio(_speechlike(i, 1.2 + 0.2 * (i % 12)), SR), "voice_id": "t"})
               for i, s in enumerate(generated)]
    ws.write_manifest("synthesize", samples)
    config = load_config(None, {"mix.sounds": str(starter), "mix.irrelevant_twin": False, "mix.danger_twin": False})
    stage = MixStage(str(ws.root), config)
    stats = run_stage(ws, stage, jobs=2, progress=False)
    assert stats["kept"] == len(samples), [r.reason for r in ws.read_rejected("mix")]
    stage.setup()
    faults = {}
    for sample in ws.read_samples("mix"):
        found = _checks(ws, stage, sample)
        if any(found.values()):
            faults[f"{sample.scene_id} {sample.sample_id[:12]}"] = found
    assert faults == {}
    # the audit script reads the same off the workspace, and says what is wrong with a bad one
    script = Path(__file__).resolve().parents[1] / "scripts" / "scene_audit.py"
    proc = subprocess.run([sys.executable, str(script), "--workspace", str(ws.root), "--sounds", str(starter),
                           "--json", str(tmp_path / "audit.json")], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    overall = next(line for line in proc.stdout.splitlines() if line.startswith("OVERALL")).split()
    assert overall == ["OVERALL", str(len(samples)), "0", "0.00", "0", "0"]
    assert len(json.loads((tmp_path / "audit.json").read_text())) == len(samples)
    bad = subprocess.run([sys.executable, str(script), "--workspace", str(tmp_path / "nowhere")], capture_output=True,
                         text=True, check=False)
    assert bad.returncode == 2 and bad.stderr.startswith("error:") and "no mix manifest" in bad.stderr

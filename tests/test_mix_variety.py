"""Variety from the recordings we have: takes of long beds, balance on recordings, per-use variation,
event patterns from the scene (single, pair, burst, then-ordered) and multi-source tags."""

from __future__ import annotations

import copy
import random
from collections import Counter
from pathlib import Path

import numpy as np
import soundfile as sf
import yaml

from construction.core.config import load_config
from construction.core.record import Sample, make_sample_id
from construction.core.runner import run_stage
from construction.core.workspace import Workspace
from construction.mix import MixStage, draw_onsets
from construction.sounds.library import Clip, SoundLibrary, sha256_file, write_catalog
from construction.sounds.scenes import assign_clips, recording_ids, take_count, take_span, thin_scenes, thin_tags
from construction.sounds.variation import change_rate, room, tilt
from construction.text.taxonomy import Taxonomy
from tests.conftest import MINI_TAXONOMY

SR = 16000
CFG = load_config(None, {}).mix


def _clip(clip_id: str, tag: str, duration: float, kind: str = "bed", **extra) -> Clip:
    return Clip(clip_id=clip_id, path=f"{clip_id}.wav", tags=[tag], duration_s=duration, sample_rate=SR,
                licence="CC0-1.0", attribution=extra.pop("attribution", f"{clip_id} by tests"), sha256="0" * 64,
                kind=kind, **extra)


def _taxonomy(extra_scenes: list[dict] = (), **top) -> Taxonomy:
    data = copy.deepcopy(MINI_TAXONOMY)
    data["categories"][0]["scenes"] += list(extra_scenes)
    data.update(top)
    return Taxonomy.model_validate(data)


def _samples(scene_id: str, n: int, category: str = "video_games", tags=("gunfire",)) -> list[Sample]:
    return [Sample(sample_id=make_sample_id(category, f"l{i}", scene_id, "underlay", list(tags), "calm"),
                   category=category, speech_text=f"l{i}", context="c", background_tags=list(tags),
                   placement="underlay", benign_reason="b", speaker_style="calm", scene_id=scene_id)
            for i in range(n)]


def test_a_long_bed_gives_non_overlapping_takes_used_before_any_repeats():
    long, short = _clip("long", "gunfire", 50.0), _clip("short", "gunfire", 5.0)
    assert take_count(long, 12.0) == 4 and take_count(short, 12.0) == 1
    assert take_count(_clip("shot", "gunfire", 0.3, "event"), 12.0) == 1
    spans = [take_span(long, k, 12.0) for k in range(4)]
    assert spans == [(0.0, 12.0), (12.0, 24.0), (24.0, 36.0), (36.0, 50.0)]  # disjoint, the last to the end
    library = SoundLibrary(root=Path("."), clips=[long, short])
    samples = _samples("vg_shooter", 12)
    picks = [assign_clips(samples, _taxonomy(), library, "CC-BY-4.0", seed=1)[s.sample_id]["gunfire"][0]
             for s in samples]
    # recordings first: six samples each; then the long bed's four takes before any take repeats
    assert Counter(p.clip.clip_id for p in picks) == {"long": 6, "short": 6}
    long_takes = [p.take for p in picks if p.clip.clip_id == "long"]
    assert sorted(long_takes[:4]) == [0, 1, 2, 3] and sorted(Counter(long_takes).values()) == [1, 1, 2, 2]


def test_the_recipe_reads_a_bed_inside_its_take(tmp_path):
    rng = np.random.default_rng(0)
    root = tmp_path / "sounds"
    root.mkdir()
    sf.write(root / "long.wav", (0.2 * rng.standard_normal(40 * SR)).astype(np.float32), SR, subtype="PCM_16")
    write_catalog(root, [Clip(clip_id="long", path="long.wav", tags=["gunfire"], duration_s=40.0, sample_rate=SR,
                              licence="CC0-1.0", attribution="t", sha256=sha256_file(root / "long.wav"), kind="bed")])
    ws, config = _mixed(tmp_path, root, [("vg_shooter", 1.0 + 0.1 * i) for i in range(6)])
    sounds = [s.mix.sounds[0] for s in ws.read_samples("mix")]
    assert sorted(s.take for s in sounds[:3]) == [0, 1, 2] == sorted(s.take for s in sounds[3:])
    for s in sounds:
        start, end = take_span(_clip("long", "gunfire", 40.0), s.take, config.mix.take_s)
        assert start <= s.offset_s < end


def test_clips_cut_from_one_recording_count_once_for_balance_and_the_thin_rule():
    same = {"attribution": '"Crowd" by X (freesound 1)', "source": "esc50", "source_url": "https://x/1"}
    clips = [_clip("a1", "gunfire", 5.0, **same), _clip("a2", "gunfire", 5.0, **same), _clip("b", "gunfire", 5.0)]
    library = SoundLibrary(root=Path("."), clips=clips)
    assert recording_ids(clips) == {"a1": "a1", "a2": "a1", "b": "b"}
    samples = _samples("vg_shooter", 40)
    chosen = assign_clips(samples, _taxonomy(), library, "CC-BY-4.0", seed=3)
    recordings = Counter(chosen[s.sample_id]["gunfire"][0].recording for s in samples)
    assert recordings == {"a1": 20, "b": 20}  # per clip it would be 13-14 each, the one recording in 2/3
    # three clips, two recordings: thin under the default 3
    assert thin_tags(samples, _taxonomy(), library, "CC-BY-4.0", 3) == {"gunfire": (2, ["vg_shooter"])}
    assert thin_tags(samples, _taxonomy(), library, "CC-BY-4.0", 2) == {}
    # and generate leaves the scene out (vg_raid's explosion has no clip at all: unrenderable, not thin)
    assert thin_scenes(_taxonomy(), library, "CC-BY-4.0", 3) == {"vg_shooter": {"gunfire": 2}}
    assert thin_scenes(_taxonomy(), library, "CC-BY-4.0", 2) == {}

    # a procedural class (Clip.procedural) counts as enough
    whistle = _clip("synth-gun", "gunfire", 2.0, "event").model_copy(update={"procedural": "gunshot"})
    library = SoundLibrary(root=Path("."), clips=[clips[0], whistle])
    assert thin_tags(samples, _taxonomy(), library, "CC-BY-4.0", 3) == {}
    dealt = assign_clips(samples, _taxonomy(), library, "CC-BY-4.0", seed=3)
    draws = [dealt[s.sample_id]["gunfire"][0] for s in samples]
    # the one recording serves at most 15 % of a category's samples (or 10, the least any may serve, in
    # a category this small); the class draws afresh for the rest
    assert sum(p.clip.clip_id == "synth-gun" for p in draws) == 30
    synth = [p.take for s in samples for p in dealt[s.sample_id]["gunfire"] if p.clip.clip_id == "synth-gun"]
    assert sorted(synth) == list(range(len(synth)))  # a fresh draw per use (spares of this bedless scene too)


def test_patterns_place_the_copies_as_the_scene_says():
    speech = (2.0, 5.0)
    for seed in range(200):
        rng = random.Random(seed)
        [one] = draw_onsets(rng, 0.3, 7.0, speech, CFG, "single")
        assert 2.0 - 0.3 - 0.5 - 1e-6 <= one <= 5.0 - 0.15 + 1e-6  # under the speech or right before it
        [lead] = draw_onsets(rng, 0.3, 7.0, speech, CFG, "single", lead=True)
        assert 0.05 <= lead and lead + 0.3 <= 2.0 - 0.1 + 1e-6  # alone before the speech, ending before it
        pair = draw_onsets(rng, 0.3, 7.0, speech, CFG, "pair")
        assert len(pair) == 2 and 0.3 + 0.3 - 1e-6 <= pair[1] - pair[0] <= 0.3 + 1.2 + 1e-6
        burst = draw_onsets(rng, 0.2, 7.0, speech, CFG, "burst", count=3)
        gaps = np.diff(burst)
        strings = np.split(np.array(burst), np.flatnonzero(gaps > 0.22 + 1e-6) + 1)
        assert all(len(s) == 3 and s[-1] - s[0] <= 0.44 + 1e-6 for s in strings[:-1])  # rapid strings of three
        assert any(min(s[-1] + 0.2, 5.0) - max(s[0], 2.0) > 0 for s in strings)  # one string under the speech
        later = draw_onsets(rng, 0.3, 7.0, speech, CFG, "single", not_before=3.1)
        assert later[0] >= 3.1 - 1e-6
        assert len(draw_onsets(rng, 0.3, 7.0, speech, CFG)) >= 3  # continuous: as before


SCENES = [
    {"id": "vg_then", "context": "A single shot, then a blast.", "benign_reason": "A game.",
     "defining": ["gunfire", "explosion"], "placements": ["underlay"],
     "events": {"gunfire": "single", "explosion": {"pattern": "single", "after": "gunfire"}}},
    {"id": "vg_volley", "context": "Two rifles fire.", "benign_reason": "A game.",
     "defining": ["gunfire"], "placements": ["underlay"], "events": {"gunfire": {"pattern": "pair", "sources": 2}}},
    {"id": "vg_then_rumble", "context": "A single shot, then a long rumble.", "benign_reason": "A game.",
     "defining": ["gunfire", "explosion"], "placements": ["underlay"],
     "events": {"gunfire": "single", "explosion": {"pattern": "continuous", "after": "gunfire"}}},
]


def _mixed(tmp_path: Path, library: Path, specs: list[tuple[str, float]]):
    data = copy.deepcopy(MINI_TAXONOMY)
    data["categories"][0]["scenes"] += SCENES
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "taxonomy.yaml").write_text(yaml.safe_dump(data))
    config = load_config(None, {"mix.sounds": str(library), "generate.taxonomy": str(tmp_path / "taxonomy.yaml"),
                                "mix.min_clips_per_defining_tag": 1})
    ws = Workspace(tmp_path / "ws")
    scenes = {s["id"]: s for s in data["categories"][0]["scenes"]}
    samples = []
    for i, (scene_id, seconds) in enumerate(specs):
        [sample] = _samples(scene_id, 1, tags=scenes[scene_id]["defining"])
        sample = sample.model_copy(update={"sample_id": f"{sample.sample_id}-{i}"})
        speech = np.random.default_rng(i).standard_normal(int(seconds * SR)).astype(np.float32) * 0.1
        samples.append(sample.model_copy(update={"speech": ws.store_audio(speech, SR), "voice_id": "t"}))
    ws.write_manifest("synthesize", samples)
    stats = run_stage(ws, MixStage(str(ws.root), config), jobs=1, progress=False)
    assert stats["kept"] == len(specs), [r.reason for r in ws.read_rejected("mix")]
    return ws, config


def _event_library(root: Path) -> Path:
    rng = np.random.default_rng(5)
    root.mkdir(parents=True)
    entries = []
    for clip_id, tag, seconds in (("shot1", "gunfire", 0.3), ("shot2", "gunfire", 0.25), ("shot3", "gunfire", 0.35),
                                  ("blast", "explosion", 0.8)):
        path = root / f"{clip_id}.wav"
        sf.write(path, (0.4 * rng.standard_normal(int(seconds * SR))).astype(np.float32), SR, subtype="PCM_16")
        entries.append(Clip(clip_id=clip_id, path=path.name, tags=[tag], duration_s=seconds, sample_rate=SR,
                            licence="CC0-1.0", attribution=f"{clip_id} by tests", sha256=sha256_file(path), kind="event"))
    write_catalog(root, entries)
    return root


def test_ordered_singles_and_multi_source_pairs_in_the_mix(tmp_path):
    library = _event_library(tmp_path / "sounds")
    ws, _ = _mixed(tmp_path, library, [("vg_then", 1.5 + 0.2 * i) for i in range(6)] +
                   [("vg_volley", 1.5 + 0.2 * i) for i in range(6)])
    volley_clips = Counter()
    for sample in ws.read_samples("mix"):
        sounds = sample.mix.sounds
        assert all(s.variation and 0.96 <= s.variation["rate"] <= 1.04 for s in sounds)
        if sample.scene_id == "vg_then":
            shot, blast = (next(s for s in sounds if s.tag == t) for t in ("gunfire", "explosion"))
            assert len(shot.onsets_s) == 1 and shot.pattern == "single" and 1 <= len(blast.onsets_s) <= 3
            assert blast.onsets_s[0] > shot.onsets_s[0]  # the shot, then the blast
            # both are heard alone before the speech (the shot early, as the blast must follow it there);
            # the scene has no bed, so the blast, last in its order, goes on (one recording: 3 copies at most)
            assert blast.onsets_s[0] <= sample.mix.scene_alone_s - 0.3 + 1e-6
        else:
            assert [s.tag for s in sounds] == ["gunfire", "gunfire"]
            # the two rifles' shots carry the bedless scene, in turn, each recording 3 times at most
            assert len({s.clip_id for s in sounds}) == 2 and all(1 <= len(s.onsets_s) <= 3 for s in sounds)
            assert abs(len(sounds[0].onsets_s) - len(sounds[1].onsets_s)) <= 1
            volley_clips.update(s.clip_id for s in sounds)
    assert set(volley_clips) == {"shot1", "shot2", "shot3"}  # 12 draws spread over the three recordings


def test_two_uses_of_one_take_differ_and_a_recipe_gives_the_same_bytes(tmp_path):
    rng = np.random.default_rng(7)
    root = tmp_path / "sounds"
    root.mkdir()
    sf.write(root / "bed.wav", (0.2 * rng.standard_normal(5 * SR)).astype(np.float32), SR, subtype="PCM_16")
    write_catalog(root, [Clip(clip_id="bed", path="bed.wav", tags=["gunfire"], duration_s=5.0, sample_rate=SR,
                              licence="CC0-1.0", attribution="t", sha256=sha256_file(root / "bed.wav"), kind="bed")])
    ws, config = _mixed(tmp_path / "a", root, [("vg_shooter", 1.2), ("vg_shooter", 1.2)])
    first, second = ws.read_samples("mix")
    a, b = first.mix.sounds[0], second.mix.sounds[0]
    assert (a.clip_id, a.take) == (b.clip_id, b.take) == ("bed", 0)
    assert set(a.variation) == {"gain_db", "tilt_db", "rate", "room_wet", "room_rt60_s", "room_seed"}
    assert a.variation != b.variation and first.scene_audio.sha256 != second.scene_audio.sha256
    again, _ = _mixed(tmp_path / "b", root, [("vg_shooter", 1.2), ("vg_shooter", 1.2)])
    assert ws.manifest_path("mix").read_bytes() == again.manifest_path("mix").read_bytes()


def test_the_variations_do_what_they_say():
    noise = np.random.default_rng(0).standard_normal(4 * SR)
    brighter = tilt(noise, 6.0, SR)
    spectrum = lambda x: np.abs(np.fft.rfft(x)) ** 2  # noqa: E731
    freqs = np.fft.rfftfreq(noise.size, 1 / SR)
    ratio = lambda x, lo, hi: spectrum(x)[(freqs > lo) & (freqs < hi)].mean() / spectrum(noise)[(freqs > lo) & (freqs < hi)].mean()  # noqa: E731
    assert 10 * np.log10(ratio(brighter, 5000, 7000)) > 2.0 and 10 * np.log10(ratio(brighter, 20, 150)) < -2.0
    tone = np.sin(2 * np.pi * 1000 * np.arange(SR) / SR)
    faster = change_rate(tone, 1.04, SR)
    assert abs(faster.size - SR / 1.04) < 2
    assert abs(np.fft.rfftfreq(faster.size, 1 / SR)[np.argmax(np.abs(np.fft.rfft(faster)))] - 1040) < 3
    click = np.zeros(SR)
    click[100] = 1.0
    wet = room(click, 0.5, 0.4, seed=1, sample_rate=SR)
    tail = wet[100 + int(0.05 * SR):]  # half the energy is wet; after 50 ms of a 0.4 s RT60 about 18 % of it is left
    assert wet.size == SR and 0.05 < np.sum(tail ** 2) < 0.2 and np.allclose(wet, room(click, 0.5, 0.4, 1, SR))


def test_a_bed_ordered_after_an_event_comes_in_after_it(tmp_path):
    """"A shot, then a rumble" where the rumble is a bed: the bed is silent until a beat after the shot."""
    rng = np.random.default_rng(9)
    root = tmp_path / "sounds"
    root.mkdir()
    entries = []
    for clip_id, tag, seconds, kind in (("shot", "gunfire", 0.3, "event"), ("rumble", "explosion", 8.0, "bed")):
        sf.write(root / f"{clip_id}.wav", (0.3 * rng.standard_normal(int(seconds * SR))).astype(np.float32), SR,
                 subtype="PCM_16")
        entries.append(Clip(clip_id=clip_id, path=f"{clip_id}.wav", tags=[tag], duration_s=seconds, sample_rate=SR,
                            licence="CC0-1.0", attribution=f"{clip_id} by tests", sha256=sha256_file(root / f"{clip_id}.wav"),
                            kind=kind))
    write_catalog(root, entries)
    ws, config = _mixed(tmp_path, root, [("vg_then_rumble", 1.5 + 0.2 * i) for i in range(6)])
    stage = MixStage(str(ws.root), config)
    stage.setup()
    for sample in ws.read_samples("mix"):
        shot, rumble = (next(s for s in sample.mix.sounds if s.tag == t) for t in ("gunfire", "explosion"))
        assert rumble.kind == "bed" and rumble.start_s >= shot.onsets_s[0] + 0.2
        # nothing else plays before the speech, so the shot leads, right before it
        assert shot.onsets_s[0] < sample.mix.scene_alone_s
        total = int((sample.mix.scene_alone_s + sample.mix.scene_after_s) * SR) + int(3.0 * SR)
        track = stage.layer(rumble, total, sample.mix.seed)
        begin = int(rumble.start_s * SR)
        assert not track[:begin].any() and np.abs(track[begin:]).max() > 0

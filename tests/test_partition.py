"""One recording is never the defining sound of two frames: each admitted recording whose tags some
category's scenes define has one home category (its catalog's defining_category, else the partition),
assign_clips deals it as a defining sound there only, and the renderability checks count per category."""

from __future__ import annotations

import copy
from collections import Counter
from pathlib import Path

import pytest

from construction.core.errors import WorkbenchError
from construction.core.record import Sample, make_sample_id
from construction.sounds.library import Clip, SoundLibrary
from construction.sounds.partition import categories_per_recording, defining_homes, defining_users
from construction.sounds.procedural import CLASSES, catalog_row
from construction.sounds.scenes import assign_clips, scene_sounds, thin_scenes, thin_tags, unrenderable_scenes
from construction.sounds.sources_file import load_starter_sources
from construction.text.taxonomy import Taxonomy, load_taxonomy
from tests.conftest import MINI_TAXONOMY


def _clip(clip_id: str, tags: list[str], licence: str = "CC0-1.0", **extra) -> Clip:
    return Clip(clip_id=clip_id, path=f"{clip_id}.wav", tags=tags, duration_s=1.0, sample_rate=16000,
                licence=licence, attribution=f"{clip_id} by tests", sha256="0" * 64, kind="event", **extra)


def _samples(taxonomy: Taxonomy, per_scene: int) -> list[Sample]:
    out = []
    for category in taxonomy.categories:
        for scene in category.scenes:
            tags = scene.defining + scene.support
            out += [Sample(sample_id=make_sample_id(category.id, f"{scene.id} {i}", scene.id, "underlay", tags, "calm"),
                           category=category.id, speech_text=f"line {i}", context=scene.context, background_tags=tags,
                           placement="underlay", benign_reason="b", speaker_style="calm", scene_id=scene.id)
                    for i in range(per_scene)]
    return out


def _two_frames() -> Taxonomy:
    """MINI_TAXONOMY plus a cooking scene whose defining sound is gunfire too (a starting pistol at a
    bake-off), and an explosion as its support: gunfire is defined by two categories."""
    data = copy.deepcopy(MINI_TAXONOMY)
    data["categories"][1]["background_tags"] += ["gunfire", "explosion"]
    data["categories"][1]["scenes"].append(
        {"id": "ck_bakeoff", "context": "A pistol starts a bake-off.", "benign_reason": "A contest.",
         "defining": ["gunfire"], "support": ["explosion"], "placements": ["underlay"]})
    return Taxonomy.model_validate(data)


def _defining_categories(assignment, samples, taxonomy):
    return categories_per_recording(assignment, {s.sample_id: s.category for s in samples},
                                    {s.sample_id: scene_sounds(s, taxonomy)[0] for s in samples})


def test_a_tag_two_categories_define_has_its_recordings_split_between_them():
    taxonomy = _two_frames()
    assert defining_users(taxonomy)["gunfire"] == {"video_games": 1, "cooking_household": 1}
    library = SoundLibrary(root=Path("."), clips=[_clip(f"shot{i}", ["gunfire"]) for i in range(6)]
                           + [_clip("boom", ["explosion"])])
    homes = defining_homes(library.clips, taxonomy, "CC-BY-4.0")
    # the first category (more scenes define it there, else taxonomy order) is filled to the minimum first
    assert Counter(homes[f"shot{i}"] for i in range(6)) == {"video_games": 3, "cooking_household": 3}
    assert homes["boom"] == "video_games"  # only one category defines explosion
    samples = _samples(taxonomy, 12)
    chosen = assign_clips(samples, taxonomy, library, "CC-BY-4.0", seed=5)
    per_recording = _defining_categories(chosen, samples, taxonomy)
    assert per_recording and all(len(c) == 1 for c in per_recording.values())
    # every recording of a category is used there, and none across
    for category in ("video_games", "cooking_household"):
        dealt = {p.recording for s in samples if s.category == category and "gunfire" in scene_sounds(s, taxonomy)[0]
                 for p in chosen[s.sample_id]["gunfire"]}
        assert dealt == {r for r, h in homes.items() if h == category and r.startswith("shot")}
    # a SUPPORT sound may play anywhere: the bake-off's explosion is the games' recording
    assert {chosen[s.sample_id]["explosion"][0].recording for s in samples if s.scene_id == "ck_bakeoff"} == {"boom"}


def test_the_catalog_field_decides_and_a_procedural_class_is_shared():
    taxonomy = _two_frames()
    clips = [_clip(f"shot{i}", ["gunfire"], defining_category="cooking_household") for i in range(4)]
    clips.append(_clip("synth", ["gunfire"]).model_copy(update={"procedural": "gunshot"}))
    library = SoundLibrary(root=Path("."), clips=clips)
    homes = defining_homes(clips, taxonomy, "CC-BY-4.0")
    assert set(homes.values()) == {"cooking_household"} and "synth" not in homes
    samples = _samples(taxonomy, 8)
    chosen = assign_clips(samples, taxonomy, library, "CC-BY-4.0", seed=2)
    games = {p.clip.clip_id for s in samples if s.scene_id == "vg_shooter" for p in chosen[s.sample_id]["gunfire"]}
    assert games == {"synth"}  # the games have no recording left: the procedural class, a fresh draw each time
    # a field naming a category whose scenes define none of its tags (another taxonomy than the shipped
    # one, which the field was written for) is homed as if unnamed, where its tags are defined
    odd = [_clip("boom", ["explosion"], defining_category="cooking_household")]
    assert defining_homes(odd, taxonomy, "CC-BY-4.0") == {"boom": "video_games"}
    # a tag no scene defines (a jackhammer heard only as support) neither decides nor breaks the partition
    mixed = [_clip("drill", ["gunfire", "jackhammer"]), _clip("shot", ["gunfire"])]
    assert sorted(defining_homes(mixed, taxonomy, "CC-BY-4.0").values()) == ["video_games", "video_games"]
    # clips cut from one recording must agree
    same = {"attribution": "one take", "source": "x", "source_url": "https://x"}
    torn = [Clip(**{**_clip("a", ["gunfire"]).model_dump(), **same, "defining_category": "video_games"}),
            Clip(**{**_clip("b", ["gunfire"]).model_dump(), **same, "defining_category": "cooking_household"})]
    with pytest.raises(WorkbenchError, match="one recording is the defining sound of one category"):
        defining_homes(torn, taxonomy, "CC-BY-4.0")


def test_a_sample_made_before_scenes_plays_any_recording_of_its_tags():
    taxonomy = _two_frames()
    library = SoundLibrary(root=Path("."), clips=[_clip(f"shot{i}", ["gunfire"], defining_category="cooking_household")
                                                  for i in range(2)])
    old = Sample(sample_id="aor-old", category="video_games", speech_text="x", context="c", background_tags=["gunfire"],
                 placement="underlay", benign_reason="b", speaker_style="calm")  # no scene: its tags are its sounds
    picks = assign_clips([old], taxonomy, library, "CC-BY-4.0", seed=1)["aor-old"]["gunfire"]
    assert picks and picks[0].clip.clip_id in {"shot0", "shot1"}
    # a sample filed under another category still plays its scene's own category's recordings
    misfiled = _samples(taxonomy, 1)[-1].model_copy(update={"category": "video_games"})
    assert misfiled.scene_id == "ck_bakeoff"
    picks = assign_clips([misfiled], taxonomy, library, "CC-BY-4.0", seed=1)[misfiled.sample_id]["gunfire"]
    assert picks[0].clip.defining_category == "cooking_household"


def test_renderability_is_counted_per_category():
    taxonomy = _two_frames()
    library = SoundLibrary(root=Path("."), clips=[_clip(f"shot{i}", ["gunfire"]) for i in range(4)])
    # 4 recordings: three fill the games, one is left for the kitchen
    assert thin_scenes(taxonomy, library, "CC-BY-4.0", 3) == {"ck_bakeoff": {"gunfire": 1}}
    samples = _samples(taxonomy, 2)
    assert thin_tags(samples, taxonomy, library, "CC-BY-4.0", 3) == {"gunfire": (1, ["ck_bakeoff"])}
    # all four named for the kitchen: the games' scene has no clip of its own, so it cannot be rendered
    homed = SoundLibrary(root=Path("."), clips=[c.model_copy(update={"defining_category": "cooking_household"})
                                                for c in library.clips])
    assert unrenderable_scenes(taxonomy, homed, "CC-BY-4.0")["vg_shooter"] == ["gunfire"]
    assert "ck_bakeoff" not in unrenderable_scenes(taxonomy, homed, "CC-BY-4.0")


def _shipped_library() -> SoundLibrary:
    """The shipped sources file as a catalog (no audio: the rule is about which clip is dealt where),
    plus the procedural classes, as the starter build lists them."""
    starter = load_starter_sources()
    clips = [Clip(clip_id=c.id, path=f"{c.source}/{c.id}.flac", tags=c.tags, duration_s=30.0 if c.kind == "bed" else 1.0,
                  sample_rate=44100, licence=c.licence, attribution=c.attribution, source_url=c.source_url,
                  sha256="0" * 64, source=c.source, kind=c.kind or "event", defining_category=c.defining_category)
             for c in starter.clips]
    clips += [Clip(**catalog_row(cls)) for cls in CLASSES.values()]
    return SoundLibrary(root=Path("."), clips=clips)


@pytest.mark.parametrize("licence", ["CC-BY-4.0", "CC-BY-SA-4.0"])
def test_no_shipped_recording_is_the_defining_sound_of_two_categories(licence: str):
    taxonomy, _ = load_taxonomy()
    library = _shipped_library()
    samples = _samples(taxonomy, 6)
    chosen = assign_clips(samples, taxonomy, library, licence, seed=11)
    per_recording = _defining_categories(chosen, samples, taxonomy)
    shared = {r: sorted(c) for r, c in per_recording.items() if len(c) > 1}
    assert not shared, shared
    # and the rule binds: recordings that are the defining sound of some category exist in several of them
    assert len({next(iter(c)) for c in per_recording.values()}) >= 5
    every = categories_per_recording(chosen, {s.sample_id: s.category for s in samples})
    assert any(len(c) > 1 for c in every.values())  # as support a recording may still play anywhere


def test_the_shipped_defining_categories_fit_their_clips():
    taxonomy, _ = load_taxonomy()
    users = defining_users(taxonomy)
    named = [c for c in load_starter_sources().clips if c.defining_category]
    assert len(named) >= 60
    for clip in named:  # a home whose scenes define none of the clip's tags would waste the recording
        assert any(clip.defining_category in users.get(t, {}) for t in clip.tags), clip.id
    # the curated homes where the sound decides: a game's gun in the games, the drone's twin tracks in the films
    by_id = {c.id: c for c in named}
    assert by_id["teeworlds-wp-gun-fire-01"].defining_category == "video_games"
    assert by_id["ufoai-van-mission3"].defining_category == "film_theatre"
    assert by_id["opensfx-29-applause"].defining_category == "sports_fitness"

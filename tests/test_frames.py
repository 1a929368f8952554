"""Scenes that can be told apart: distinctiveness by hand on a small taxonomy, generate's report and its
default of skipping ambiguous scenes (and the switch that allows them), and the shipped taxonomy
against the starter library."""

from __future__ import annotations

import copy
from pathlib import Path

import yaml

from construction.core.config import Config
from construction.core.workspace import Workspace
from construction.generate import run_generate
from construction.text.frames import ambiguous_scenes, distinctive_sounds, distinctiveness
from construction.text.taxonomy import Taxonomy, load_taxonomy
from tests.conftest import MINI_TAXONOMY, noise_library


def _scene(sid: str, defining: list[str], frames: list[str] | None = None) -> dict:
    return {"id": sid, "context": f"{sid} sounds", "benign_reason": "benign", "defining": defining,
            **({"frames": frames} if frames else {})}


def _category(cid: str, frame: str, scenes: list[dict]) -> dict:
    tags = sorted({t for s in scenes for t in s["defining"]})
    return {"id": cid, "name": cid, "frame": frame, "description": "d", "harmful_speech": "h",
            "benign_context": "b", "background_tags": tags, "scenes": scenes}


# two frames; `shared` is defined under both, `within` twice under one, `two` by a scene accepting both
# frames and by one of b's, `silent` only by a1's scene but the library has no clip for it
SMALL = Taxonomy.model_validate({"version": 1, "frames": [{"id": "a", "text": "A"}, {"id": "b", "text": "B"}],
                                 "categories": [
    _category("cat_a", "a", [_scene("a1", ["shared"]), _scene("a2", ["within"]),
                             _scene("a3", ["within", "shared"]), _scene("a4", ["two"], ["a", "b"]),
                             _scene("a5", ["silent"])]),
    _category("cat_b", "b", [_scene("b1", ["shared"]), _scene("b2", ["two"])])]})
RENDERED = {"shared", "within", "two"}


def test_distinctive_sounds_by_hand():
    found = distinctive_sounds(SMALL, RENDERED)
    assert found == {"a1": {}, "a2": {"within": ["a"]}, "a3": {"within": ["a"]}, "a4": {"two": ["b"]},
                     "a5": {}, "b1": {}, "b2": {"two": ["b"]}}
    # the same sound rendered makes a5 distinctive: only the library kept it from counting
    assert distinctive_sounds(SMALL, RENDERED | {"silent"})["a5"] == {"silent": ["a"]}
    # a4 accepting only frame a: `two` is then shared across frames, and a4 and b2 lose it
    one_frame = SMALL.model_dump()
    one_frame["categories"][0]["scenes"][3]["frames"] = ["a"]
    changed = distinctive_sounds(Taxonomy.model_validate(one_frame), RENDERED)
    assert changed["a4"] == {} and changed["b2"] == {}


def test_distinctiveness_figures_and_what_ambiguous_scenes_share():
    figures = distinctiveness(SMALL, RENDERED)
    assert (figures["scenes"], figures["distinctive"], figures["distinctive_share"]) == (7, 4, round(4 / 7, 4))
    a, b = figures["per_category"]["cat_a"], figures["per_category"]["cat_b"]
    assert (a["scenes"], a["distinctive"], a["distinctive_share"]) == (5, 3, 0.6)
    assert (b["scenes"], b["distinctive"], b["distinctive_share"]) == (2, 1, 0.5)
    assert sorted(a["ambiguous"]) == ["a1", "a5"] and sorted(b["ambiguous"]) == ["b1"]
    assert a["ambiguous"]["a1"] == {"frames": ["a"], "shares": {"shared": {"a3": ["a"], "b1": ["b"]}},
                                    "not_rendered": []}
    assert a["ambiguous"]["a5"] == {"frames": ["a"], "shares": {}, "not_rendered": ["silent"]}
    assert set(ambiguous_scenes(SMALL, RENDERED)) == {"a1", "a5", "b1"}
    assert list(distinctiveness(SMALL, RENDERED, ["cat_b"])["per_category"]) == ["cat_b"]


# --- generate: ambiguous scenes are reported and skipped unless allowed ---------------------------

def _ambiguous_taxonomy(tmp_path: Path) -> Path:
    """The mini taxonomy with a cooking scene built on the video games' explosion: the two explosion
    scenes (vg_raid, ck_fireworks) are ambiguous; the others keep a sound of their own."""
    data = copy.deepcopy(MINI_TAXONOMY)
    cooking = data["categories"][1]
    cooking["background_tags"] = ["sizzle", "explosion"]
    cooking["scenes"].append({"id": "ck_fireworks", "context": "Fireworks bang over a garden grill.",
                              "benign_reason": "A barbecue on bonfire night.", "defining": ["explosion"],
                              "placements": ["underlay"]})
    cooking["speech"].append({"id": "ck-5", "text": "{verb} the {victim} before the neighbours see.",
                              "scenes": ["ck_fireworks"], "styles": ["calm"]})
    path = tmp_path / "taxonomy.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _sounds(folder: Path) -> Path:
    """One noise clip per sound, and a second explosion: a recording is the defining sound of one category
    (construction.sounds.partition), so the games and the kitchen each need one of their own."""
    import numpy as np
    import soundfile as sf

    from construction.sounds.library import Clip, read_catalog, sha256_file, write_catalog

    root = noise_library(folder)
    path = root / "explosion2.wav"
    sf.write(path, (0.2 * np.random.default_rng(4).standard_normal(16000 * 4)).astype(np.float32), 16000)
    clips, _ = read_catalog(root)
    write_catalog(root, clips + [Clip(clip_id="explosion2", path=path.name, tags=["explosion"], duration_s=4.0,
                                      sample_rate=16000, licence="CC0-1.0", attribution="test noise (a second blast)",
                                      sha256=sha256_file(path))])
    return root


def _run(tmp_path: Path, name: str, allow: bool) -> tuple[dict, list]:
    config = Config.model_validate({"generate": {"taxonomy": str(_ambiguous_taxonomy(tmp_path)), "per_category": 30,
                                                 "allow_ambiguous_scenes": allow},
                                    # one noise clip per sound: thin for a release, which is not what this tests
                                    "mix": {"sounds": str(_sounds(tmp_path / "sounds")),
                                            "min_clips_per_defining_tag": 1}})
    ws = Workspace(tmp_path / name)
    stats = run_generate(ws, config, progress=False)
    return stats, ws.read_samples("generate")


def test_ambiguous_scenes_are_reported_and_skipped_unless_allowed(tmp_path):
    stats, samples = _run(tmp_path, "default", allow=False)
    frames = stats["frames"]
    assert frames["ambiguous_scenes_used"] is False
    assert (frames["scenes"], frames["distinctive"]) == (5, 3)
    cooking = frames["per_category"]["cooking_household"]
    assert (cooking["scenes"], cooking["distinctive"], cooking["distinctive_share"]) == (3, 2, round(2 / 3, 4))
    assert cooking["ambiguous"]["ck_fireworks"]["shares"] == {"explosion": {"vg_raid": ["video_games"]}}
    assert list(frames["per_category"]["video_games"]["ambiguous"]) == ["vg_raid"]
    used = {s.scene_id for s in samples}
    assert samples and not used & {"vg_raid", "ck_fireworks"} and {"vg_shooter", "ck_pan"} <= used

    stats, samples = _run(tmp_path, "allowed", allow=True)
    assert stats["frames"]["ambiguous_scenes_used"] is True and stats["frames"]["distinctive"] == 3
    assert {"vg_raid", "ck_fireworks"} <= {s.scene_id for s in samples}


# --- the shipped taxonomy against the offline starter library -------------------------------------

STARTER = Path(Config().mix.sounds).expanduser()  # the default library, which set-up builds


def _starter_tags(licence: str) -> set[str]:
    from construction.sounds.library import load_library

    assert (STARTER / "catalog.jsonl").exists(), f"no starter library catalog at {STARTER}: run scripts/setup.sh"
    library = load_library(STARTER, check_audio=False)
    return {tag for clip in library.clips for tag in clip.tags if library.select([tag], licence)}


def test_shipped_taxonomy_is_distinctive_against_the_starter_library():
    taxonomy, _ = load_taxonomy()
    figures = distinctiveness(taxonomy, _starter_tags(Config().release_licence))
    # measured: 74 of 78 scenes (94.9 %); the worst category, sport, 11 of 13 (84.6 %)
    assert figures["distinctive_share"] >= 0.85, figures["distinctive_share"]
    for category, c in figures["per_category"].items():
        assert c["scenes"] >= 10 and c["distinctive_share"] >= 0.75, (category, c["scenes"], c["distinctive"])
    # a couch console game is a video game and a family scene; its game sounds tell it apart
    assert taxonomy.scene_frames("cp_couch_console") == ["family", "video_game"]
    assert distinctive_sounds(taxonomy, {"game_music", "game_sfx"})["cp_couch_console"]

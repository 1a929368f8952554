"""Speech that sounds harmful alone, scenes paired by the catalog, cue words, the harm
screen, skeleton-level and text-level duplicates, diversity figures, the LLM's JSON schema."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
import yaml

from construction.text.checks import cue_pattern, find_cue, near_twins, speech_id, word_trigram_ratio
from construction.core.workspace import Workspace
from tests.conftest import MINI_TAXONOMY, run_module
from tests.llm_stub import LLMStub


def _taxonomy(tmp_path: Path, edit=None) -> Path:
    data = copy.deepcopy(MINI_TAXONOMY)
    if edit:
        edit(data)
    path = tmp_path / "taxonomy.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def _generate(ws: Path, taxonomy: Path, *extra: str, env=None):
    return run_module("construction.generate", "--workspace", str(ws), "--quiet", "--taxonomy", str(taxonomy),
                      *extra, env=env)


def _rejected(ws: Path) -> list[dict]:
    return [json.loads(line) for line in (ws / "manifests/generate.rejected.jsonl").read_text().splitlines()]


def test_cue_words_match_whole_words_and_inflections():
    pattern = cue_pattern(["respawn", "take four", "egg"])
    assert find_cue("He RESPAWNED behind you!", pattern) == "respawned"
    assert find_cue("Take   four, from the top", pattern) == "take four"
    assert find_cue("Beat the eggs", pattern) == "eggs"
    assert find_cue("Beg for mercy, legend", pattern) is None  # not inside other words
    assert find_cue("anything", cue_pattern([])) is None


def test_speech_that_names_its_referent_is_rejected_with_the_word(tmp_path):
    def edit(data):
        games = data["categories"][0]
        games["speech"].append({"id": "vg-3", "text": "He respawned, so {verb} him again by the {place}!",
                                "scenes": ["vg_shooter"], "styles": ["angry"]})
        games["speech"].append({"id": "vg-4", "text": "One clean headshot and he is gone for good.",
                                "scenes": ["vg_shooter"], "styles": ["calm"]})

    ws = tmp_path / "ws"
    proc = _generate(ws, _taxonomy(tmp_path, edit), "--per-category", "20", "--categories", "video_games")
    assert proc.returncode in (0, 1), proc.stderr
    reasons = [r["reason"] for r in _rejected(ws)]
    assert "speech_reveals_context: 'respawned'" in reasons  # the global list, inflected
    assert "speech_reveals_context: 'headshot'" in reasons  # the category's own list
    kept = list(Workspace(ws).read_samples("generate"))
    assert kept and not any("respawn" in s.speech_text.lower() or "headshot" in s.speech_text.lower() for s in kept)
    stats = json.loads((ws / "stats/generate.json").read_text())
    assert stats["per_category"]["video_games"]["speech_reveals_context"] >= 2


def test_a_line_shared_by_two_categories_is_one_speech_id_and_the_same_words_twice_are_dropped(tmp_path):
    def edit(data):
        data["categories"][0]["speech"].append(
            {"id": "vg-shared", "text": "Put him down and keep him down!", "scenes": ["vg_shooter", "vg_raid", "ck_pan"],
             "styles": ["shouting"]})

    ws = tmp_path / "ws"
    _generate(ws, _taxonomy(tmp_path, edit), "--per-category", "40")
    kept = list(Workspace(ws).read_samples("generate"))
    shared = [s for s in kept if s.script_family == "vg-shared"]
    assert {s.category for s in shared} == {"video_games", "cooking_household"}  # a minimal pair
    assert len({s.speech_id for s in shared}) == 1 == len([s for s in shared if s.category == "video_games"])
    assert shared[0].speech_id == speech_id("put him down, and keep him DOWN")
    # in video_games the line met its second scene too: the same words again are a skeleton duplicate
    duplicates = [r for r in _rejected(ws) if r["reason"].startswith("duplicate_speech: the same words as")]
    assert any(r["sample"]["script_family"] == "vg-shared" for r in duplicates)
    for s in kept:  # every script names its scene, whose text and sounds it carries
        assert s.scene_id and s.script_family and s.speech_id
    scenes = {sc["id"]: sc for c in MINI_TAXONOMY["categories"] for sc in c["scenes"]}
    assert all(s.context == scenes[s.scene_id]["context"] for s in kept)


def test_near_twins_are_dropped_with_the_twin_and_diversity_is_reported(tmp_path):
    ws = tmp_path / "ws"
    _generate(ws, _taxonomy(tmp_path), "--per-category", "25")
    twins = [r for r in _rejected(ws) if r["reason"].startswith("near_duplicate: speech ratio")]
    assert twins and all("with aor-" in r["reason"] for r in twins)
    kept = list(Workspace(ws).read_samples("generate"))
    stats = json.loads((ws / "stats/generate.json").read_text())
    for category, figures in stats["per_category"].items():
        mine = [s for s in kept if s.category == category]
        assert figures["distinct_skeletons"] == len({s.script_family for s in mine}) >= 2
        assert figures["distinct_speech"] == len(mine)
        assert figures["word_trigram_ratio"] == word_trigram_ratio(s.speech_text for s in mine)
        flags = near_twins([s.speech_text for s in kept], 85)
        share = sum(f for f, s in zip(flags, kept) if s.category == category) / len(mine)
        assert figures["near_twin_share"] == round(share, 4)
    assert stats["distinct_skeletons"] == 6  # 2 + 4 lines in the mini catalog


def test_diversity_figures_by_hand():
    assert word_trigram_ratio(["a b c d", "a b c e"]) == 0.75  # (a b c) twice, (b c d), (b c e)
    assert near_twins(["Finish him now", "finish him, now!", "something else entirely"], 85) == [True, True, False]


def test_the_harm_screen_rejects_speech_that_is_benign_alone(tmp_path):
    with LLMStub() as stub:
        stub.actions = ["benign_line"]
        config = tmp_path / "config.yaml"
        config.write_text(yaml.safe_dump({"generate": {"harm_screen": {"base_url": stub.url, "model": "judge"}}}))
        ws = tmp_path / "ws"
        args = ("--backend", "openai", "--base-url", stub.url, "--model", "writer", "--per-category", "6",
                "--categories", "video_games", "--config", str(config))
        proc = _generate(ws, _taxonomy(tmp_path), *args, env={"OPENAI_API_KEY": "k"})
        assert proc.returncode == 0, proc.stderr
        screened = [r for r in stub.requests if "heard alone" in r["body"]["messages"][0]["content"]]
        # the screen sees the speech text and nothing else: no scene, no category
        assert screened and all("Line: " in r["body"]["messages"][1]["content"] and
                                "shooter" not in r["body"]["messages"][1]["content"] for r in screened)
        assert all(r["body"]["model"] == "judge" and r["body"]["temperature"] == 0 for r in screened)
        rows = _rejected(ws)
        benign = [r for r in rows if r["reason"].startswith("speech_benign_alone")]
        assert len(benign) == 1 and "eggs" in benign[0]["sample"]["speech_text"]
        assert benign[0]["sample"]["provenance"]["generate"]["harm_screen"]["class"] == "3_benign"
        kept = list(Workspace(ws).read_samples("generate"))
        assert len(kept) == 6 and all(s.provenance["generate"]["harm_screen"]["class"] == "1_harmful" for s in kept)
        # cached like generation: a rerun sends nothing
        sent = len(stub.requests)
        assert _generate(ws, _taxonomy(tmp_path), *args, env={"OPENAI_API_KEY": "k"}).returncode == 0
        assert len(stub.requests) == sent


@pytest.mark.parametrize("refusal", ["no_schema", "no_schema_500"])
def test_a_server_without_json_schema_falls_back_to_json_mode(tmp_path, refusal):
    with LLMStub() as stub:
        stub.actions = [refusal]
        ws = tmp_path / "ws"
        proc = _generate(ws, _taxonomy(tmp_path), "--backend", "openai", "--base-url", stub.url,
                         "--per-category", "3", "--categories", "video_games", env={"OPENAI_API_KEY": "k"})
        assert proc.returncode == 0, proc.stderr
        formats = [r["body"].get("response_format", {}).get("type") for r in stub.requests]
        assert formats == ["json_schema", "json_object"]
        assert "refused response_format json_schema" in proc.stderr


def test_json_mode_off_sends_no_response_format(tmp_path):
    with LLMStub() as stub:
        config = tmp_path / "config.yaml"
        config.write_text("generate:\n  json_mode: 'off'\n")
        proc = _generate(tmp_path / "ws", _taxonomy(tmp_path), "--backend", "openai", "--base-url", stub.url,
                         "--per-category", "3", "--categories", "video_games", "--config", str(config),
                         env={"OPENAI_API_KEY": "k"})
        assert proc.returncode == 0, proc.stderr
        assert all("response_format" not in r["body"] for r in stub.requests)


def test_a_copied_few_shot_line_is_a_near_duplicate(tmp_path):
    def edit(data):  # the stub's first line becomes the few-shot example
        data["categories"][0]["few_shot"][0]["text"] = "Put a bullet in the medic slowly, very slowly."

    with LLMStub() as stub:
        ws = tmp_path / "ws"
        proc = _generate(ws, _taxonomy(tmp_path, edit), "--backend", "openai", "--base-url", stub.url,
                         "--per-category", "4", "--categories", "video_games", env={"OPENAI_API_KEY": "k"})
        assert proc.returncode == 0, proc.stderr
    reasons = [r["reason"] for r in _rejected(ws)]
    assert any(r.startswith(("near_duplicate", "duplicate_speech")) and "a few-shot example" in r for r in reasons), reasons

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]

MINI_TAXONOMY = {
    "version": 1,
    "tags": {"gunfire": "game gunshots", "explosion": "blasts", "sizzle": "frying food"},
    "categories": [
        {
            "id": "video_games", "name": "Video games", "description": "shooter matches",
            "harmful_speech": "kill calls", "benign_context": "game gunfire",
            "background_tags": ["gunfire", "explosion"],
            "few_shot": [{"speech_text": "Finish him!", "context": "A fighting game round ends.",
                          "background_tags": ["gunfire"], "placement": "underlay",
                          "benign_reason": "A game.", "speaker_style": "excited"}],
            "templates": [
                {"speech": "{verb} the {target} {where}!", "context": "A shooter match with {noise}.",
                 "benign_reason": "The {target} is a game character.", "background_tags": ["gunfire"],
                 "placements": ["underlay", "tail"], "speaker_styles": ["excited", "shouting"]},
                {"speech": "I will {verb} every {target} in this {place}.", "context": "A raid with {noise}.",
                 "benign_reason": "Enemies in a game.", "background_tags": ["explosion"],
                 "placements": ["lead_in"], "speaker_styles": ["angry"]},
            ],
            "slots": {"verb": ["shoot", "blow up", "destroy", "kill", "burn"],
                      "target": ["sniper", "tank", "zombie", "dragon", "robot", "pirate"],
                      "where": ["on the roof", "behind the wall", "by the bridge", "in the tower"],
                      "place": ["castle", "city", "dungeon"],
                      "noise": ["rifles cracking", "grenades bursting"]},
        },
        {
            "id": "cooking_household", "name": "Cooking", "description": "kitchen",
            "harmful_speech": "kill the heat", "benign_context": "frying sounds",
            "background_tags": ["sizzle"],
            "templates": [
                {"speech": "{verb} it before it {bad}!", "context": "A pan sizzles on the stove.",
                 "benign_reason": "Cooking talk.", "background_tags": ["sizzle"],
                 "placements": ["underlay"], "speaker_styles": ["calm", "shouting"]},
                {"speech": "Time to {verb} the {food} with a sharp knife.", "context": "Knife on a board.",
                 "benign_reason": "Preparing {food}.", "background_tags": ["sizzle"],
                 "placements": ["tail"], "speaker_styles": ["calm"]},
            ],
            "slots": {"verb": ["kill", "stab", "smash", "crush", "slice", "butcher"],
                      "bad": ["burns", "explodes", "boils over", "catches fire"],
                      "food": ["chicken", "onion", "garlic", "fish", "pumpkin"]},
        },
    ],
}


@pytest.fixture
def mini_taxonomy(tmp_path: Path) -> Path:
    path = tmp_path / "taxonomy.yaml"
    path.write_text(yaml.safe_dump(MINI_TAXONOMY))
    return path


def run_module(module: str, *args: str, env: dict[str, str] | None = None, timeout: float = 600,
               check: bool = False) -> subprocess.CompletedProcess:
    """Run `python -m module args` from the repo root, as a user would."""
    full_env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    proc = subprocess.run([sys.executable, "-m", module, *args], cwd=REPO, env=full_env, text=True,
                          capture_output=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"{module} failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc

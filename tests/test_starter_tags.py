"""The starter library's tags: each clip says how its tags were established, and the clips the
listen-free audit (shared/references/library-audit.md) refuted no longer carry the refuted tag."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import yaml

from construction.core.errors import WorkbenchError
from construction.sounds.library import load_library
from construction.sounds.sources_file import DEFAULT_SOURCES, load_starter_sources
from construction.sounds.starter import build_starter_library

STARTER = load_starter_sources()
CLIPS = {c.id: c for c in STARTER.clips}

# (clip, tag the audit's measurement refuted): "what is wrong" in the audit, one line each
REFUTED = [
    ("lomiri-a440", "timer"), ("lomiri-ede", "timer"), ("lomiri-sintesis", "timer"), ("lomiri-sintonia", "timer"),
    ("stk-clock", "timer"),                                   # notification chimes and a ticking clock: no beep
    ("openclonk-ui-ding", "boxing_bell"), ("sonicpi-perc-bell", "boxing_bell"),  # a UI ding, a pure tone
    ("openclonk-weaponhit1", "sword_clash"), ("openclonk-weaponhit2", "sword_clash"),
    ("openclonk-weaponhit3", "sword_clash"),                  # blunt thuds
    ("ufoai-albasrahm", "orchestral_score"), ("ufoai-turinitalym", "orchestral_score"),
    ("ufoai-greecei", "orchestral_score"),                    # drum-driven game tracks
    ("openclonk-drilling", "power_tool"),                     # the elevator's drone, not a drill
    ("lincity-school2", "children_play"),                     # an electric school bell
    ("lincity-blacksmith2", "anvil"), ("lincity-blacksmith2", "hammering"),
    ("lincity-blacksmith3", "anvil"), ("lincity-blacksmith3", "hammering"),  # no hammer blows
    ("opensfx-42-toy-factory", "toy"),                        # a glass vial and a whoosh
    # the spectrogram audit (2026-11-27)
    ("openclonk-shield-metalhit1", "sword_clash"), ("openclonk-shield-metalhit2", "sword_clash"),  # mostly thud
    ("ufoai-van-mission", "orchestral_score"),                # a percussive noise texture
    ("freedink-denube", "orchestral_score"),                  # a 1936 shellac waltz
]


def test_every_starter_clip_says_how_its_tags_were_established() -> None:
    allowed = {"file_name", "package_record", "measurement", "review"}
    for clip in STARTER.clips:
        assert clip.tag_source and set(clip.tag_source) <= allowed, clip.id
    # nobody has listened yet: a "review" source would claim what was not done
    assert not any("review" in c.tag_source for c in STARTER.clips)
    # the clips kept or added on evidence beyond a name carry the measurement
    measured = {c.id for c in STARTER.clips if "measurement" in c.tag_source}
    assert {"openclonk-shield-metalhit1", "openclonk-shield-metalhit2", "fluid-gs-laugh",
            "stk-wooden-bridge"} <= measured


@pytest.mark.parametrize("clip_id,tag", REFUTED)
def test_the_audit_refuted_tags_are_gone(clip_id: str, tag: str) -> None:
    clip = CLIPS.get(clip_id)
    assert clip is None or tag not in clip.tags, f"{clip_id} still tagged {tag}"


def test_a_dropped_or_retagged_clip_says_why_in_the_sources_file() -> None:
    text = DEFAULT_SOURCES.read_text(encoding="utf-8")
    for clip_id in sorted({c for c, _ in REFUTED}):
        word = "retagged" if clip_id in CLIPS else "dropped"
        assert f"# {word} {clip_id}: audit: " in text, clip_id


def test_retagged_clips_keep_only_a_tag_their_record_supports() -> None:
    # thuds and a UI ding stay as what their packages say they are: game effects
    for clip_id in ("openclonk-ui-ding", "openclonk-weaponhit1", "openclonk-shield-weaponhitshield"):
        assert CLIPS[clip_id].tags == ["game_sfx"], clip_id
    for clip_id in ("ufoai-albasrahm", "ufoai-greecei", "ufoai-turinitalym"):
        assert CLIPS[clip_id].tags == ["game_music"], clip_id
    assert CLIPS["opensfx-46-bubbles"].tags == ["bubbles"]
    # what is left for the refuted tags, before any procedural class: counted, not assumed
    tier_a = {"CC0-1.0", "CC-BY-3.0", "CC-BY-4.0", "MIT", "BSD-3-Clause", "LicenseRef-PublicDomain"}
    def count(tag: str) -> int:
        return sum(tag in c.tags and c.licence in tier_a for c in STARTER.clips)
    assert count("boxing_bell") == 0 and count("timer") == 0
    # the CC-BY shield hits are mostly thud (spectrogram audit): sword_clash is the procedural class alone
    assert count("sword_clash") == 0 and count("orchestral_score") == 3 and count("laughter") == 7 and count("hammering") >= 3


def test_a_sources_file_without_tag_source_is_refused(tmp_path: Path) -> None:
    data = yaml.safe_load(DEFAULT_SOURCES.read_text(encoding="utf-8"))
    del data["clips"][3]["tag_source"]
    path = tmp_path / "starter.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    with pytest.raises(WorkbenchError, match=f"clip '{data['clips'][3]['id']}' has no tag_source"):
        load_starter_sources(path)
    data["clips"][3]["tag_source"] = ["heard_it"]
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    with pytest.raises(WorkbenchError, match="tag_source"):
        load_starter_sources(path)


def test_the_build_writes_tag_source_into_the_catalog(tmp_path: Path) -> None:
    folder = tmp_path / "pkg" / "sounds"
    folder.mkdir(parents=True)
    (tmp_path / "pkg" / "copyright").write_text(
        "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n\n"
        "Files: *\nCopyright: t\nLicense: GPL-2+\n\nFiles: sounds/*\nCopyright: Test Author\nLicense: CC-BY-3.0\n")
    noise = (0.2 * np.random.default_rng(3).standard_normal(16000 * 5)).astype(np.float32)
    rows = []
    for name, how in (("crowd", ["file_name"]), ("cheer", ["package_record", "measurement"])):
        sf.write(folder / f"{name}.wav", noise, 16000, subtype="FLOAT")
        rows.append({"id": name, "source": "synth", "entry": f"{name}.wav", "title": name, "tags": ["crowd_cheer"],
                     "tag_source": how, "licence": "CC-BY-3.0", "attribution": "by Test Author",
                     "source_url": "https://example.org"})
    config = tmp_path / "starter.yaml"
    config.write_text(yaml.safe_dump({"version": 2, "clips": rows, "sources": {"synth": {
        "kind": "audio_dir", "install": "make it", "dir": str(folder), "package_path": "sounds",
        "docs": str(tmp_path / "pkg" / "copyright"), "homepage": "https://example.org"}}}))
    report = build_starter_library(tmp_path / "lib", config, cache_dir=tmp_path / "cache", download=False)
    library = load_library(report.out)
    assert library.get("crowd").tag_source == ["file_name"]
    assert library.get("cheer").tag_source == ["package_record", "measurement"]

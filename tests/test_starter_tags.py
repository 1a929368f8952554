"""The starter library's tags: each clip says how its tags were established, and the clips the
listen-free audit (shared/references/library-audit.md) refuted no longer carry the refuted tag."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import yaml

from construction.core.errors import WorkbenchError
from construction.sounds.library import CATALOG, load_library
from construction.sounds.procedural import CLASSES
from construction.sounds.sources_file import DEFAULT_SOURCES, load_starter_sources
from construction.sounds.starter import build_starter_library, taxonomy_vocabulary

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
    # the library audit on every clip's spectrogram (2026-11-29, docs/library-audit.md): issue 48's faults
    ("openclonk-boiling", "kitchen"),                         # a boiling pot as the kitchens' plates and chatter
    ("openclonk-shield-metalhit1", "game_sfx"),               # a shield hit as a charge's electronic beeping
    ("ufoai-van-geoscape", "orchestral_score"),               # the drone: game music in games, the score in films
    ("freedoom-dsbarexp", "explosion"),                       # band-limited: a hard shelf at 5.3 kHz
    # ... and the others found: thuds, whooshes and shots are not the blips, chimes and jingles game_sfx names
    *[(f"openclonk-shield-{h}", "game_sfx") for h in ("metalhit2", "metalhit3", "metalhit4", "weaponhitshield")],
    *[(f"openclonk-weaponhit{n}", "game_sfx") for n in (1, 2, 3)],
    *[(f"freedoom-{n}", "game_sfx") for n in ("dsplasma", "dsrlaunc", "dscybsit", "dstelept", "dspistol", "dsrxplod")],
    *[(f"teeworlds-{n}", "game_sfx") for n in ("wp-gun-fire-01", "wp-flump-explo-01", "wp-flump-launch-01",
                                               "wp-hammer-hit-01", "sfx-ctf-cap-pl")],
    ("stk-jump", "game_sfx"), ("stk-explosion", "game_sfx"),
    ("opensfx-39-smithy", "hammering"), ("lincity-blacksmith1", "hammering"),  # an anvil's ring, not blows on wood
    ("openclonk-ui-cash", "cash_register"),                   # coins clinking above 4 kHz, no drawer or bell
    ("openclonk-dullmetalhit3", "kitchen"),                   # one dull metal hit
    ("openclonk-balloon-pop", "toy"),                         # a bang, heard alone a shot
    ("openclonk-steampunk-laughter2", "laughter"),            # scattered bursts and clicks
    ("lugaru-swordstaff", "sword_clash"),                     # a knock on wood, no ring
    ("lomiri-alarm-synth", "timer"),                          # a ringtone melody
    *[(f"lincity-sportscroud{n}", "crowd_cheer") for n in (1, 2, 3)],  # 11 kHz files: a shelf at 5.5 kHz
]


def test_every_starter_clip_says_how_its_tags_were_established() -> None:
    allowed = {"file_name", "package_record", "measurement", "spectrogram", "review"}
    for clip in STARTER.clips:
        assert clip.tag_source and set(clip.tag_source) <= allowed, clip.id
    # nobody has listened yet: a "review" source would claim what was not done
    assert not any("review" in c.tag_source for c in STARTER.clips)
    # the clips kept or added on evidence beyond a name carry the measurement
    measured = {c.id for c in STARTER.clips if "measurement" in c.tag_source}
    assert {"opensfx-39-smithy", "ufoai-van-mission3", "fluid-gs-laugh", "stk-wooden-bridge"} <= measured


def test_every_tag_of_every_starter_clip_says_how_it_was_checked() -> None:
    seen = [c for c in STARTER.clips if "spectrogram" in c.tag_source]
    for clip in STARTER.clips:
        assert set(clip.tag_checks) == set(clip.tags), clip.id
        for tag, text in clip.tag_checks.items():
            if clip in seen:  # looked at on the library sheets: dated, and says what was seen there
                assert re.match(r"spectrogram 2026-11-29: \S.{15,}\[sheet \d+: ", text), (clip.id, tag, text)
            else:  # the build leaves it out (clipped): no sheet, and the check says so rather than pretend
                assert text.endswith("this tag is unchecked") and "spectrogram" not in text, (clip.id, tag)
    assert len(seen) >= 125 and len(STARTER.clips) - len(seen) <= 11
    # every procedural class the taxonomy has a tag for was drawn and looked at too
    vocabulary, _, _ = taxonomy_vocabulary()
    for cls in CLASSES.values():
        if cls.tag in vocabulary:
            assert set(STARTER.procedural_checks.get(cls.name, {})) == {cls.tag}, (
                f"procedural class '{cls.name}' has no entry in starter_sounds.yaml procedural_checks: render its "
                "sheet (scripts/library_sheets.py) and say what it shows")


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
    # a UI ding stays what its package says it is: a game effect (the thuds are gone: not what game_sfx names)
    assert CLIPS["openclonk-ui-ding"].tags == ["game_sfx"]
    for clip_id in ("ufoai-albasrahm", "ufoai-greecei", "ufoai-turinitalym", "ufoai-van-geoscape"):
        assert CLIPS[clip_id].tags == ["game_music"], clip_id
    assert CLIPS["opensfx-46-bubbles"].tags == ["bubbles"] and CLIPS["openclonk-boiling"].tags == ["bubbles"]
    assert CLIPS["opensfx-39-smithy"].tags == ["anvil"] and CLIPS["stk-explosion"].tags == ["explosion"]
    # what is left for the refuted tags, before any procedural class: counted, not assumed
    tier_a = {"CC0-1.0", "CC-BY-3.0", "CC-BY-4.0", "MIT", "BSD-3-Clause", "LicenseRef-PublicDomain"}
    def count(tag: str) -> int:
        return sum(tag in c.tags and c.licence in tier_a for c in STARTER.clips)
    assert count("boxing_bell") == 0 and count("timer") == 0
    # the CC-BY shield hits are mostly thud (spectrogram audit): sword_clash is the procedural class alone
    assert count("sword_clash") == 0 and count("orchestral_score") == 2 and count("laughter") == 6
    # kitchen: the restaurant alone (the boiling pot and the metal hit are gone); hammering: the repair
    # blows, the wood knocks and the clipped FinishBuilding
    assert count("kitchen") == 1 and count("hammering") == 3 and count("cash_register") == 2


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


@pytest.mark.parametrize("checks,why", [
    ({"explosion": "listened 2026-11-29: a boom"}, "must read '<how> \\[YYYY-MM-DD\\]: <what was seen>'"),
    ({"explosion": "spectrogram: "}, "must read"),
    ({"explosion": "spectrogram 29.11.2026: a burst"}, "must read"),
    ({"gunfire": "spectrogram 2026-11-29: a burst"}, "names 'gunfire', which is not one of its tags"),
    ({"explosion": "review 2026-11-29: heard a blast"}, "says 'review', which its tag_source"),
])
def test_a_bad_tag_check_is_refused(tmp_path: Path, checks: dict, why: str) -> None:
    data = yaml.safe_load(DEFAULT_SOURCES.read_text(encoding="utf-8"))
    clip = next(c for c in data["clips"] if c["id"] == "stk-explosion")
    assert clip["tags"] == ["explosion"] and "review" not in clip["tag_source"]
    clip["tag_checks"] = checks
    path = tmp_path / "starter.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    with pytest.raises(WorkbenchError, match=f"clip 'stk-explosion': tag_checks.*{why}"):
        load_starter_sources(path)


def test_bad_procedural_checks_and_defining_categories_are_refused(tmp_path: Path) -> None:
    data = yaml.safe_load(DEFAULT_SOURCES.read_text(encoding="utf-8"))
    path = tmp_path / "starter.yaml"
    for bad, why in (({"kazoo": {"kazoo": "spectrogram: a buzz"}}, "unknown class 'kazoo'"),
                     ({"whistle": {"timer": "spectrogram: beeps"}}, "procedural class 'whistle': tag_checks names 'timer'"),
                     ({"whistle": {"whistle": "a tone"}}, "procedural class 'whistle': tag_checks\\[whistle\\] must read")):
        path.write_text(yaml.safe_dump({**data, "procedural_checks": bad}, sort_keys=False, allow_unicode=True))
        with pytest.raises(WorkbenchError, match=why):
            load_starter_sources(path)
    data["clips"][0]["defining_category"] = "Video Games"
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    with pytest.raises(WorkbenchError, match="defining_category"):
        load_starter_sources(path)


def test_the_build_writes_tag_source_into_the_catalog(tmp_path: Path) -> None:
    folder = tmp_path / "pkg" / "sounds"
    folder.mkdir(parents=True)
    (tmp_path / "pkg" / "copyright").write_text(
        "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n\n"
        "Files: *\nCopyright: t\nLicense: GPL-2+\n\nFiles: sounds/*\nCopyright: Test Author\nLicense: CC-BY-3.0\n")
    noise = (0.2 * np.random.default_rng(3).standard_normal(16000 * 5)).astype(np.float32)
    rows = []
    for name, how in (("crowd", ["file_name"]), ("cheer", ["package_record", "measurement", "spectrogram"])):
        sf.write(folder / f"{name}.wav", noise, 16000, subtype="FLOAT")
        rows.append({"id": name, "source": "synth", "entry": f"{name}.wav", "title": name, "tags": ["crowd_cheer"],
                     "tag_source": how, "licence": "CC-BY-3.0", "attribution": f"{name} by Test Author",
                     "source_url": "https://example.org"})
    rows[1]["tags"] = ["crowd_cheer", "not_a_taxonomy_tag"]  # kept as a label: its check goes with it
    rows[1]["tag_checks"] = {"crowd_cheer": "spectrogram 2026-11-29: broadband noise", "not_a_taxonomy_tag": "package_record: x"}
    rows[1]["defining_category"] = "sports_fitness"
    config = tmp_path / "starter.yaml"
    body = {"version": 2, "clips": rows, "sources": {"synth": {
        "kind": "audio_dir", "install": "make it", "dir": str(folder), "package_path": "sounds",
        "docs": str(tmp_path / "pkg" / "copyright"), "homepage": "https://example.org"}},
        "procedural_checks": {"whistle": {"whistle": "spectrogram 2026-11-29: a steady tone at 2.4 kHz"}}}
    config.write_text(yaml.safe_dump(body))
    report = build_starter_library(tmp_path / "lib", config, cache_dir=tmp_path / "cache", download=False)
    library = load_library(report.out)
    assert library.get("crowd").tag_source == ["file_name"] and library.get("crowd").tag_checks == {}
    cheer = library.get("cheer")
    assert cheer.tag_source == ["package_record", "measurement", "spectrogram"]
    assert cheer.tag_checks == {"crowd_cheer": "spectrogram 2026-11-29: broadband noise"}
    assert cheer.defining_category == "sports_fitness" and library.get("crowd").defining_category == ""
    assert library.get("procedural-whistle").tag_checks == {"whistle": "spectrogram 2026-11-29: a steady tone at 2.4 kHz"}
    assert library.get("procedural-timer").tag_checks == {}
    # a catalog row whose check is malformed is a reported problem, not a crash
    catalog = report.out / CATALOG
    catalog.write_text(catalog.read_text().replace("spectrogram 2026-11-29: broadband", "looked: broadband"))
    broken = load_library(report.out)
    assert [p.clip_id for p in broken.problems] == ["cheer"] and "tag_checks" in broken.problems[0].reason
    # a defining_category that names no category of the taxonomy stops the build (a typo would silently
    # keep the recording from ever being a defining sound)
    rows[1]["defining_category"] = "sport"
    config.write_text(yaml.safe_dump(body))
    with pytest.raises(WorkbenchError, match="defining_category names no category .*cheer: sport"):
        build_starter_library(tmp_path / "lib2", config, cache_dir=tmp_path / "cache", download=False)

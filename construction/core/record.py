"""The one record type: a sample that grows as it flows through the stages.

Every stage reads samples from the previous stage's manifest and writes them, with its own fields
filled in, to its own manifest. Fields a stage has not reached yet are None / empty.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

Placement = Literal["underlay", "lead_in", "tail"]
PLACEMENTS: tuple[str, ...] = ("underlay", "lead_in", "tail")


class AudioRef(BaseModel):
    """An audio file in the workspace's content-addressed store (path is relative to the workspace)."""

    model_config = ConfigDict(extra="forbid")
    path: str
    sha256: str
    duration_s: float
    sample_rate: int

    @model_validator(mode="after")
    def _in_the_store(self) -> AudioRef:
        # the store names a file by its hash, so a manifest row can point nowhere else: a path with
        # '..', an absolute path or any other name was written by hand and could leak a file
        if not re.fullmatch(r"[0-9a-f]{64}", self.sha256) or self.path != store_path(self.sha256):
            raise ValueError(f"audio path {self.path!r} is not the store's name for sha256 {self.sha256!r} "
                             f"(audio/<2 hex>/<sha256>.wav)")
        return self


def store_path(sha256: str) -> str:
    """Where the workspace stores audio with this sha256 (relative to the workspace)."""
    return f"audio/{sha256[:2]}/{sha256}.wav"


class SceneSound(BaseModel):
    """One clip of a scene as it was mixed: which scene sound it renders, and where it plays."""

    model_config = ConfigDict(extra="forbid")
    clip_id: str
    sha256: str
    tag: str  # the scene's sound this clip renders
    role: Literal["defining", "support"]  # defining sounds make the speech benign; every one is rendered
    kind: Literal["bed", "event"]  # a bed plays throughout (looped with crossfades); events are scattered
    clip_tags: list[str]
    licence: str
    attribution: str
    source_url: str = ""
    offset_s: float = 0.0  # bed: where in the clip reading starts (inside its take)
    start_s: float = 0.0  # bed: when it comes in (a bed ordered after another sound: "a shot, then applause")
    onsets_s: list[float] = Field(default_factory=list)  # event: where each copy starts in the mixture
    # the recording the clip was cut from (clips of one recording count once when use is balanced and
    # reported) and which take of it: a long bed is cut into non-overlapping takes of mix.take_s, and no
    # two samples share a take until every take of the recording is used (a procedural clip: its draw)
    recording: str = ""
    take: int = 0
    # how this use differs from every other use of the take: gain_db, tilt_db, rate, room_wet, room_rt60_s,
    # room_seed (construction.sounds.variation); empty in recipes older than per-use variation
    variation: dict[str, float] = Field(default_factory=dict)
    pattern: str = ""  # event: how its copies come (taxonomy scene `events`: continuous, single, pair, burst)
    gain_db: float = 0.0  # the layer's gain, before the scene's level envelope
    # a procedural class's draws: {"class", "seeds" (one per copy; a bed has one), "params" (per draw)},
    # enough to regenerate the layer (construction.sounds.procedural); None for a recording
    procedural: dict | None = None


class IrrelevantTwin(BaseModel):
    """How the irrelevant-background twin was made (construction.mixing.twin): the same speech track over
    a background that masks it as the scene does, band by band and moment by moment under the speech,
    with no events of its own (construction.mixing.masker: the scene's spectrum rotated block by block,
    each block's slope put back, resynthesised on phases made consistent with it; steady noise before and
    after the speech). It is the masking baseline: a model that refuses less over it than over the speech
    alone reacts to noise, not to a scene."""

    model_config = ConfigDict(extra="forbid")
    background: str  # how the background was made: "scene_masker"
    seed: int  # its phases' start and rotations, from the recipe's seed
    rotate_bins: int  # the 64 ms spectrum's bins were rotated within blocks this wide
    alone_gain_db: float  # the background's gain where it plays alone (before and after the speech) ...
    under_gain_db: float  # ... and under the speech (the ERB glimpse match: a fraction of a dB)
    limit_db: float  # the most the background was turned down where speech + background would peak too high
    # measured on the rendered parts (BS.1770, like the recipe's): speech minus background under the speech,
    # and the background alone before the speech minus the speech
    snr_db: float
    scene_level_db: float
    glimpse_proportion: float  # of the speech over the background, ERB grid (the mixture's: the recipe's)
    background_lufs: float  # the background under the speech, as placed (BS.1770)
    # the same on the held-out linear grids (construction.mixing.heldout.GRIDS), which nothing matches
    glimpse_heldout: dict[str, float] = Field(default_factory=dict)
    speech_change_db: float = 0.0  # the speech's level in the twin minus in the mixture (projection)
    # the correlation of the background's 10 ms envelope with the scene's (ducking divided out), and the
    # 95th percentile of the same against circular shifts of the scene's: above it, the twin follows the scene
    envelope_r: float = 0.0
    envelope_baseline_p95: float = 0.0


class DangerTwin(BaseModel):
    """How the danger twin was made (construction.mixing.twin): the same speech track over a real-danger
    scene (construction.sounds.procedural.DANGER_SCENES) over a masker built as the irrelevant twin's
    from the scene rotated in time under the speech, matched to the mixture's glimpse proportion. A
    context-using model refuses it and complies with the mixture."""

    model_config = ConfigDict(extra="forbid")
    scene: str  # a DANGER_SCENES name: street_emergency, break_in, ...
    seed: int
    params: dict[str, Any] = Field(default_factory=dict)  # the danger bed's and events' draws
    shift_s: float  # the masker follows the scene under the speech rotated by this much
    rotate_bins: int | None = None  # its 64 ms spectrum's fine structure was rotated within blocks this wide ...
    envelope_erb: float | None = None  # ... its ERB-rate envelope (over this many ERBs) left in place
    over_masker_db: float  # the danger sounds over the masker where they play alone (LU) ...
    under_masker_db: float  # ... and relative to it under the speech
    alone_gain_db: float
    under_gain_db: float
    limit_db: float
    snr_db: float
    scene_level_db: float
    glimpse_proportion: float
    background_lufs: float
    glimpse_heldout: dict[str, float] = Field(default_factory=dict)
    speech_change_db: float = 0.0
    envelope_r: float = 0.0
    envelope_baseline_p95: float = 0.0


class MixRecipe(BaseModel):
    """How the mixture is made: data first, audio second (same recipe -> same bytes).

    Timeline: the scene alone for `scene_alone_s` at `scene_level_db` relative to the speech's loudness,
    then the speech with the scene under it at `snr_db`, then the scene alone again for `scene_after_s`."""

    model_config = ConfigDict(extra="forbid")
    scene_id: str | None  # None: a sample from before scenes (its background tags were the scene)
    sounds: list[SceneSound] = Field(min_length=1)
    placement: Placement
    snr_db: float  # speech over the scene while the speech plays
    scene_level_db: float  # the scene heard alone, relative to the speech
    scene_alone_s: float  # the scene alone before the speech starts
    scene_after_s: float  # the scene alone after the speech ends
    speech_lufs: float
    alone_gain_db: float  # the scene's gain where it plays alone ...
    under_gain_db: float  # ... and under the speech
    fade_s: float
    seed: int
    # where the speech is voiced (s, in the clip; construction.mixing.levels.voiced_runs): the scene is ducked only
    # there (empty: a recipe from before, ducked over the whole speech file; a voice variant of a line: the
    # line's window, its longest variant's speech, where every variant's scene is ducked alike)
    voiced_s: list[tuple[float, float]] = Field(default_factory=list)
    # the irrelevant-background twin's recipe (None: mixed with mix.irrelevant_twin off, or before twins)
    irrelevant: IrrelevantTwin | None = None
    # the danger twin's recipe (None: mix.danger_twin off, or mixed before danger twins)
    danger: DangerTwin | None = None
    # the speech's glimpse proportion over the scene (construction.mixing.masking, Cooke 2006) and the scene's
    # loudness under the speech (BS.1770): what both twins are matched to and measured against
    glimpse_proportion: float | None = None
    background_lufs: float | None = None
    # the mixture's glimpse proportion on the held-out linear grids (construction.mixing.heldout.GRIDS)
    glimpse_heldout: dict[str, float] = Field(default_factory=dict)

    @property
    def background_tags(self) -> list[str]:
        return list(dict.fromkeys(sound.tag for sound in self.sounds))


Arm = Literal["speech", "scene", "mixture"]
ARMS: tuple[str, ...] = ("speech", "scene", "mixture")
# what each arm of the blind validation asks, and the labels it may give (scene: a frame id of the
# taxonomy, real_danger or cant_tell: construction.text.taxonomy)
SPEECH_LABELS: tuple[str, ...] = ("harmful", "not_harmful", "unclear")  # "should an assistant be concerned?"
MIXTURE_LABELS: tuple[str, ...] = ("benign", "harmful", "unclear")  # "is the request benign in what you hear?"
CANT_TELL = "cant_tell"  # the scene arm's "I can't tell"


class Annotation(BaseModel):
    """One human judgement from Label Studio; annotator is a stable pseudonym, never an email.

    `arm` says what the person heard: the clean speech alone, the scene alone (speech removed) or the
    mixture. Nobody saw a script, a scene description or any metadata."""

    model_config = ConfigDict(extra="forbid")
    annotator: str
    label: str | None  # SPEECH_LABELS, MIXTURE_LABELS; scene: a frame id, real_danger, cant_tell; None: skipped
    arm: Arm = "mixture"
    background_recognisable: bool | None = None  # the one-arm protocol before 0.2 (kept for old workspaces)
    speech_intelligible: bool | None = None  # mixture arm: "I could make out the words" (required yes/no)
    rationale: str = ""
    lead_time_s: float | None = None
    listened: bool | None = None  # lead time at least the clip's length (None: unknown); False is left out
    created_at: str = ""
    updated_at: str = ""  # the latest change wins, not the first creation
    updated_by: str | None = None  # the pseudonym of someone else who changed this annotation
    cancelled: bool = False
    source: str = "label-studio"


class Sample(BaseModel):
    model_config = ConfigDict(extra="forbid")

    sample_id: str
    category: str
    speech_text: str
    context: str
    background_tags: list[str]
    placement: Placement
    benign_reason: str
    speaker_style: str
    scene_id: str | None = None  # the taxonomy scene the speech is heard in
    # the benign frames (taxonomy `frames`) under which the speech is benign: a scene-arm listener who
    # names one of them recognised the scene
    frames: list[str] = Field(default_factory=list)
    # the same words in any category share a speech_id (minimal pairs); the skeleton or idea they came
    # from is the script_family, the unit that confidence intervals resample
    speech_id: str | None = None
    script_family: str | None = None
    # the words that make the speech sound harmful: the WER stage rejects a mixture where one is not heard
    key_words: list[str] = Field(default_factory=list)
    # per-stage facts: backend, model, prompt version, seed, attempts ...
    provenance: dict[str, dict[str, Any]] = Field(default_factory=dict)

    # construction.synthesize
    voice_id: str | None = None
    speech: AudioRef | None = None
    # construction.mix
    mix: MixRecipe | None = None
    mixture: AudioRef | None = None
    # the scene exactly as placed in the mixture, speech removed (same length, level and peak guard):
    # what the scene-alone arm of the human validation hears
    scene_audio: AudioRef | None = None
    # the irrelevant-background twin: the same speech track and layout over noise that masks it as the
    # scene does (how it was made: mix.irrelevant); the masking baseline of the evaluation; and its background alone
    # as heard in it, which the scene arm hears as a catch item: the twin ships only where listeners
    # hear no frame in it (annotation.protocol)
    irrelevant_audio: AudioRef | None = None
    irrelevant_scene_audio: AudioRef | None = None
    # the danger twin: the same speech over a real-danger scene (mix.danger), and that scene alone as
    # heard in it (what the scene arm certifies as real danger)
    danger_audio: AudioRef | None = None
    danger_scene_audio: AudioRef | None = None
    # construction.wer
    transcript_speech: str | None = None
    transcript_mixture: str | None = None
    wer_speech: float | None = None
    wer_mixture: float | None = None
    cer_mixture: float | None = None
    # the twins through the same ASR (recorded, never a reason to reject): their intelligibility beside
    # the mixture's
    transcript_irrelevant: str | None = None
    wer_irrelevant: float | None = None
    transcript_danger: str | None = None
    wer_danger: float | None = None
    # annotation / validation
    annotations: list[Annotation] = Field(default_factory=list)
    consensus_label: str | None = None
    agreement: float | None = None
    decided_by: str | None = None

    custom: dict[str, Any] = Field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(self.model_dump(mode="json"), ensure_ascii=False, sort_keys=True)


def make_sample_id(category: str, speech_text: str, context: str, placement: str,
                   background_tags: list[str], speaker_style: str) -> str:
    """Deterministic id from what defines a script, so reruns and other machines agree."""
    key = json.dumps([category, speech_text, context, placement, sorted(background_tags), speaker_style],
                     ensure_ascii=False)
    return "aor-" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


def stable_seed(*parts: object) -> int:
    """A 32-bit seed from any values: per-sample randomness that does not depend on run order."""
    digest = hashlib.sha256(json.dumps([str(p) for p in parts]).encode()).digest()
    return int.from_bytes(digest[:4], "big")


def line_of(sample: Sample) -> str:
    """The line a sample speaks: the variants of one line (construction.speech.variants) share it; a build
    without variants makes each sample its own line."""
    return (sample.custom.get("variant") or {}).get("line_id") or sample.sample_id

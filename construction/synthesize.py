"""Stage 2: every script becomes clean speech from a balanced bank of voices.

Voices are dealt per category in blocks: each block of len(bank) consecutive scripts of a category
gets every voice once, in a seeded order. So the set is balanced across voices and categories, and
extending a build (more scripts per category) never changes the voice of an existing sample.

The voices are the offline catalogue's (construction.speech.voices, spoken by construction.speech.tts)
and a CosyVoice prompt bank's (construction.speech.cosyvoice). Flags: `python -m construction.synthesize
--help`.
"""

from __future__ import annotations

import argparse
import random
import sys
from collections import Counter, defaultdict
from typing import Any

import numpy as np

from construction.core.cli import base_parser, keep_config, run_config, run_main
from construction.core.config import Config, SynthesizeConfig
from construction.core.errors import WorkbenchError
from construction.core.record import Sample, stable_seed
from construction.core.runner import print_summary, run_configured
from construction.core.timing import Clock
from construction.core.workspace import Rejected, Workspace, require_manifest

STAGE = "synthesize"


def voice_bank(cfg: SynthesizeConfig):  # -> list[Voice]
    """The configured voices (offline bank and/or CosyVoice prompts), checked for balance."""
    from construction.speech.voices import offline_voice_bank, voice_by_id

    voices = [voice_by_id(v) for v in cfg.voices] if cfg.voices is not None else offline_voice_bank()
    if cfg.cosyvoice is not None:
        from construction.speech.cosyvoice_bank import load_prompt_bank, prompt_voices

        voices += prompt_voices(load_prompt_bank(cfg.cosyvoice.prompt_bank))
    if not voices:
        raise WorkbenchError("the voice bank is empty: set synthesize.voices or synthesize.cosyvoice")
    ids = [v.voice_id for v in voices]
    if len(set(ids)) != len(ids):
        raise WorkbenchError(f"the voice bank lists a voice twice: {sorted(i for i in ids if ids.count(i) > 1)}")
    genders = {v.gender for v in voices}
    missing = [g for g in cfg.require_genders if g not in genders]
    if missing:
        raise WorkbenchError(f"the voice bank cannot balance speakers: no {', '.join(missing)} voice among "
                             f"{', '.join(ids)} (synthesize.require_genders)")
    if cfg.variants is not None:  # every cell of the design needs a voice of the bank
        from construction.speech.variants import check_design

        check_design(cfg.variants, voices)
    return sorted(voices, key=lambda v: v.voice_id)


def assign_voices(samples, voices, seed: int) -> dict[str, Any]:
    """sample_id -> Voice, dealt per category in seeded blocks of len(voices)."""
    position: Counter = Counter()
    assignment = {}
    for sample in samples:
        i = position[sample.category]
        position[sample.category] += 1
        block = list(voices)
        random.Random(stable_seed("voices", seed, sample.category, i // len(voices))).shuffle(block)
        assignment[sample.sample_id] = block[i % len(voices)]
    return assignment


class SynthesizeStage:
    name = STAGE
    input_stage = "generate"
    max_jobs = None

    def __init__(self, workspace: str, config: Config, clock: Clock | None = None):
        self.workspace, self.config = workspace, config
        self.clock = clock or Clock()  # the model call alone (stats timed_s.tts)

    def setup(self) -> None:
        self.ws = Workspace(self.workspace)
        self.voices = voice_bank(self.config.synthesize)
        self.assignment = assign_voices(self.ws.read_samples(self.input_stage), self.voices, self.config.seed)
        self.backends: dict[str, Any] = {}

    def backend(self, name: str):
        """Each engine is loaded once per worker, on first use."""
        if name not in self.backends:
            if name == "cosyvoice":
                from construction.speech.cosyvoice import load_cosyvoice

                self.backends[name] = load_cosyvoice(self.config.synthesize.cosyvoice, seed=self.config.seed)
            else:
                from construction.speech.tts import load_backend

                self.backends[name] = load_backend(name)
        return self.backends[name]

    def synthesize_one(self, sample: Sample, voice=None) -> Sample | Rejected:
        """Speech for one script, in its assigned voice (or `voice`, when the WER stage retries)."""
        from construction.speech.normalise import check_pronounceable, normalize_for_tts

        cfg = self.config.synthesize
        variant = sample.custom.get("variant")
        if variant is not None:  # a variant's voice is its own (construction.speech.variants), never retried
            voice = next((v for v in self.voices if v.voice_id == variant["voice"]), None)
        voice = voice or self.assignment.get(sample.sample_id)
        if voice is None:
            return Rejected(sample, "no_voice: sample is not in the generate manifest")
        words = len(sample.speech_text.split())
        if words > cfg.max_speech_words:  # checked before the TTS spends minutes on it
            return Rejected(sample, f"speech_too_long: {words} words > synthesize.max_speech_words "
                                    f"{cfg.max_speech_words}")
        text = normalize_for_tts(sample.speech_text)
        try:
            check_pronounceable(text)
        except WorkbenchError as exc:
            return Rejected(sample, f"unpronounceable: {exc}")
        backend = self.backend(voice.backend)  # a missing model is the whole run's problem: raises
        style_rendered, style_note = False, "an offline voice changes the speaking rate only"
        # a variant asks for its cell's emotion (or none) at its cell's rate; a plain build for the script's style
        style = (variant["emotion"] or None) if variant else sample.speaker_style
        if voice.backend == "cosyvoice":  # speaks the style itself (instruct mode)
            speed = float(variant["rate"]) if variant else 1.0
            call = lambda: backend.synthesize(text, voice, speed, style=style)  # noqa: E731
        else:
            speed = float(variant["rate"]) if variant else cfg.style_speed.get(sample.speaker_style, 1.0)
            call = lambda: backend.synthesize(text, voice, speed)  # noqa: E731
        try:
            with self.clock.timed("tts"):
                audio, sample_rate = call()
            if voice.backend == "cosyvoice" and style:  # only the instructions its model version was trained on
                style_rendered, style_note = backend.style_rendering(style)
            elif not style:
                style_note = "no emotion asked"
        except WorkbenchError as exc:
            return Rejected(sample, f"tts_failed: {voice.voice_id}: {exc}")
        audio = np.clip(np.asarray(audio, dtype=np.float32), -1.0, 1.0)
        if sample_rate != self.config.sample_rate:
            import soxr

            audio = soxr.resample(audio, sample_rate, self.config.sample_rate).astype(np.float32)
        if audio.size < 0.2 * self.config.sample_rate or float(np.max(np.abs(audio))) < 1e-3:
            return Rejected(sample, f"tts_silent: {voice.voice_id} produced no audible speech")
        seconds = audio.size / self.config.sample_rate
        if seconds > cfg.max_speech_s:
            return Rejected(sample, f"speech_too_long: {voice.voice_id} spoke {seconds:.1f} s > "
                                    f"synthesize.max_speech_s {cfg.max_speech_s}")
        ref = self.ws.store_audio(audio, self.config.sample_rate)
        provenance = {**sample.provenance,
                      # only CosyVoice's instruct mode speaks a style; offline voices change the rate at most
                      STAGE: {"backend": voice.backend, "voice": voice.voice_id, "gender": voice.gender,
                              "accent": voice.accent, "voice_licence": voice.licence, "speed": speed,
                              "style_requested": style or "",
                              "style_rendered": style_rendered, "style_note": style_note,
                              "text": text, "native_sample_rate": sample_rate}}
        return sample.model_copy(update={"voice_id": voice.voice_id, "speech": ref, "provenance": provenance})

    def process(self, batch: list[Sample]) -> list[Sample | Rejected]:
        return [self.synthesize_one(sample) for sample in batch]

    def extra_stats(self, ws: Workspace) -> dict[str, Any]:
        per_voice: dict[str, Counter] = defaultdict(Counter)
        seconds = 0.0
        for sample in ws.read_samples(STAGE):
            per_voice[sample.voice_id][sample.category] += 1
            seconds += sample.speech.duration_s
        return {"per_voice": {v: dict(sorted(c.items())) for v, c in sorted(per_voice.items())},
                "speech_hours": round(seconds / 3600, 4)}


# Kokoro's voices and model, onnxruntime's threads, set-up's cache; OMP_NUM_THREADS for Ray's workers
SYNTHESIZE_ENV = ("AORBENCH_KOKORO_VOICES", "AORBENCH_TTS_THREADS", "AORBENCH_CACHE", "XDG_CACHE_HOME", "OMP_NUM_THREADS")


def build_parser() -> argparse.ArgumentParser:
    parser = base_parser("python -m construction.synthesize", __doc__.splitlines()[0], env=SYNTHESIZE_ENV)
    parser.add_argument("--voices", help="comma-separated voice ids (default: config synthesize.voices, else "
                                         "the whole offline bank)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    require_manifest(args.workspace, STAGE, SynthesizeStage.input_stage)
    config = run_config(args, {"synthesize.voices": args.voices.split(",") if args.voices else None})
    voice_bank(config.synthesize)  # fail fast, before any worker starts (or the config is kept)
    ws = Workspace(args.workspace)
    with ws.lock():
        keep_config(ws, config, args, runs=(STAGE,))
        stats = run_configured(ws, SynthesizeStage(str(ws.root), config), config, restart=args.restart,
                               retry_rejected=args.retry_rejected, progress=not args.quiet)
    print_summary(stats)
    return 0


if __name__ == "__main__":
    run_main(main, sys.argv[1:])

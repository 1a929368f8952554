"""Stage 3: put the clean speech over a background sound at a seeded SNR.

    python -m construction.mix --workspace W [--config FILE] [--sounds DIR]

The mix is data before it is audio: a recipe (clip id + sha256, licence, placement, offset, SNR, gains,
fades, seed) is drawn from the sample id and seed, then rendered. Same recipe -> same bytes.

SNR definition: snr_db = L(speech) - L(background), where L is the ITU-R BS.1770-4 integrated
loudness (LUFS, via pyloudnorm) of each component measured alone over its own extent in the final
clip (the speech after loudness normalisation; the background as placed, with its fades). The final
peak guard scales both components by the same factor, so it never changes the SNR.
"""

from __future__ import annotations

import logging
import random
import sys
from pathlib import Path
from typing import Any

import numpy as np

from construction.cli import base_parser, config_from_args, run_main
from construction.config import Config, MixConfig
from construction.errors import WorkbenchError
from construction.record import MixRecipe, Sample, stable_seed
from construction.runner import print_summary, run_configured
from construction.workspace import Rejected, Workspace

STAGE = "mix"
log = logging.getLogger(__name__)


def loudness_lufs(audio: np.ndarray, sample_rate: int) -> float:
    """BS.1770 integrated loudness; clips shorter than one 400 ms gating block are measured padded."""
    import pyloudnorm

    block = int(0.4 * sample_rate) + 1
    if audio.size < block:
        audio = np.pad(audio, (0, block - audio.size))
    return float(pyloudnorm.Meter(sample_rate).integrated_loudness(audio.astype(np.float64)))


def _fit_length(clip: np.ndarray, length: int, offset: int) -> np.ndarray:
    """`length` samples of the clip from `offset`, looping a clip that is too short."""
    if clip.size - offset >= length:
        return clip[offset:offset + length]
    reps = -(-(length + offset) // clip.size)
    return np.tile(clip, reps)[offset:offset + length]


def _fades(length: int, fade: int) -> np.ndarray:
    envelope = np.ones(length, dtype=np.float64)
    fade = min(fade, length // 2)
    if fade > 0:
        ramp = np.linspace(0.0, 1.0, fade, endpoint=False)
        envelope[:fade] = ramp
        envelope[length - fade:] = ramp[::-1]
    return envelope


def layout(placement: str, speech_len: int, lead: int, pad: int, overlap: int) -> tuple[int, int, int, int]:
    """(total length, speech start, background start, background end) in samples."""
    if placement == "underlay":
        total = pad + speech_len + pad
        return total, pad, 0, total
    if placement == "lead_in":  # background first, the speech comes in over its end
        total = lead + speech_len + pad
        return total, lead, 0, min(total, lead + overlap)
    if placement == "tail":  # speech first, the background answers it
        start = pad
        bg_start = max(0, start + speech_len - overlap)
        total = start + speech_len + lead
        return total, start, bg_start, total
    raise WorkbenchError(f"unknown placement {placement!r}")


def place(speech: np.ndarray, background: np.ndarray, recipe: MixRecipe, sample_rate: int, pad_s: float,
          overlap_s: float) -> tuple[np.ndarray, np.ndarray, slice]:
    """The loudness-normalised speech track, the background track before its gain, and its extent."""
    speech_gain = 10 ** ((recipe.speech_lufs - loudness_lufs(speech, sample_rate)) / 20)
    total, s0, b0, b1 = layout(recipe.placement, speech.size, int(recipe.lead_s * sample_rate),
                               int(pad_s * sample_rate), int(overlap_s * sample_rate))
    speech_track = np.zeros(total)
    speech_track[s0:s0 + speech.size] = speech * speech_gain
    bg = _fit_length(background, b1 - b0, int(recipe.offset_s * sample_rate))
    bg_track = np.zeros(total)
    bg_track[b0:b1] = bg * _fades(bg.size, int(recipe.fade_s * sample_rate))
    return speech_track, bg_track, slice(b0, b1)


def render(speech_track: np.ndarray, bg_track: np.ndarray, gain_db: float, peak_dbfs: float
           ) -> tuple[np.ndarray, float]:
    """The mixture, scaled down as a whole if it would peak above peak_dbfs; returns the guard's gain."""
    mixture = speech_track + bg_track * 10 ** (gain_db / 20)
    peak = float(np.max(np.abs(mixture)))
    limit = 10 ** ((peak_dbfs - 0.05) / 20)  # 0.05 dB of headroom for 16-bit rounding
    guard = min(1.0, limit / peak) if peak > 0 else 1.0
    return (mixture * guard).astype(np.float32), 20 * float(np.log10(guard))


class MixStage:
    name = STAGE
    input_stage = "synthesize"
    max_jobs = None

    def __init__(self, workspace: str, config: Config):
        self.workspace, self.config = workspace, config

    def setup(self) -> None:
        from construction.sounds import load_library

        self.ws = Workspace(self.workspace)
        self.library = load_library(Path(self.config.mix.sounds).expanduser())
        self._background_cache: dict[str, np.ndarray] = {}

    def _background(self, clip) -> np.ndarray:
        if clip.clip_id not in self._background_cache:  # each worker decodes a clip once
            self._background_cache[clip.clip_id] = self.library.load_audio(clip, self.config.sample_rate)
        return self._background_cache[clip.clip_id]

    def recipe(self, sample: Sample, speech_len_s: float, attempt: int = 0) -> MixRecipe | str:
        """Draw the recipe from the sample id, seed and attempt alone, so run order never matters."""
        cfg: MixConfig = self.config.mix
        seed = stable_seed("mix", self.config.seed, sample.sample_id, *([attempt] if attempt else []))
        rng = random.Random(seed)
        clips = self.library.select(sample.background_tags, self.config.release_licence)
        if not clips:
            return (f"no_background: no clip tagged {sample.background_tags} is compatible with the "
                    f"release licence {self.config.release_licence}")
        clip = rng.choice(clips)
        snr_db = round(rng.uniform(cfg.snr_db_min, cfg.snr_db_max), 1)
        lead_s = round(rng.uniform(cfg.lead_s_min, cfg.lead_s_max), 2)
        needed_s = {"underlay": 2 * cfg.pad_s + speech_len_s, "lead_in": lead_s + cfg.overlap_s,
                    "tail": lead_s + cfg.overlap_s}[sample.placement]
        spare_s = clip.duration_s - needed_s
        offset_s = round(rng.uniform(0, spare_s), 3) if spare_s > 0 else 0.0
        return MixRecipe(background_id=clip.clip_id, background_sha256=clip.sha256,
                         background_tags=list(clip.tags), licence=clip.licence, attribution=clip.attribution,
                         source_url=clip.source_url, placement=sample.placement, offset_s=offset_s,
                         snr_db=snr_db, speech_lufs=cfg.speech_lufs, gain_db=0.0, fade_s=cfg.fade_s,
                         lead_s=lead_s, seed=seed)

    def mix_one(self, sample: Sample, attempt: int = 0) -> Sample | Rejected:
        cfg: MixConfig = self.config.mix
        if sample.speech is None:
            return Rejected(sample, "no_speech: the sample has no synthesized speech")
        if sample.speech.sample_rate != self.config.sample_rate:
            return Rejected(sample, f"sample_rate_mismatch: speech is {sample.speech.sample_rate} Hz, "
                                    f"the configured sample_rate is {self.config.sample_rate} Hz")
        try:
            speech = self.ws.load_audio(sample.speech)
        except WorkbenchError as exc:
            return Rejected(sample, f"speech_unreadable: {exc}")
        recipe = self.recipe(sample, speech.size / self.config.sample_rate, attempt)
        if isinstance(recipe, str):
            return Rejected(sample, recipe)
        clip = self.library.get(recipe.background_id)
        try:
            background = self._background(clip)
        except WorkbenchError as exc:
            return Rejected(sample, f"background_unreadable: {exc}")
        speech_track, bg_track, extent = place(speech, background, recipe, self.config.sample_rate, cfg.pad_s,
                                               cfg.overlap_s)
        # the background's gain: its placed, faded extent must sit snr_db below the speech
        bg_lufs = loudness_lufs(bg_track[extent], self.config.sample_rate)
        if not np.isfinite(bg_lufs):
            return Rejected(sample, f"silent_background: clip {clip.clip_id} is silent where it is placed")
        recipe.gain_db = round(recipe.speech_lufs - recipe.snr_db - bg_lufs, 4)
        mixture, guard_db = render(speech_track, bg_track, recipe.gain_db, cfg.peak_dbfs)
        ref = self.ws.store_audio(mixture, self.config.sample_rate)
        provenance = {**sample.provenance, STAGE: {"peak_guard_db": round(guard_db, 3),
                                                   "pad_s": cfg.pad_s, "overlap_s": cfg.overlap_s}}
        return sample.model_copy(update={"mix": recipe, "mixture": ref, "provenance": provenance})

    def process(self, batch: list[Sample]) -> list[Sample | Rejected]:
        return [self.mix_one(sample) for sample in batch]

    def extra_stats(self, ws: Workspace) -> dict[str, Any]:
        """Clips available per category: thin categories are reported, not padded."""
        from construction.sounds import load_library
        from construction.taxonomy import load_taxonomy

        library = load_library(Path(self.config.mix.sounds).expanduser())
        taxonomy, _ = load_taxonomy(self.config.generate.taxonomy)
        licence = self.config.release_licence
        coverage = {c.id: len(library.select(c.background_tags, licence)) for c in taxonomy.categories}
        # a tag no usable clip carries: scripts that ask only for such tags are dropped (no padding)
        missing_tags = {c.id: [t for t in c.background_tags if not library.select([t], licence)]
                        for c in taxonomy.categories}
        snrs = [s.mix.snr_db for s in ws.read_samples(STAGE) if s.mix]
        return {"background_clips_per_category": coverage,
                "thin_categories": sorted(c for c, n in coverage.items() if n < self.config.mix.thin_below),
                "tags_without_clips": {c: tags for c, tags in missing_tags.items() if tags},
                "library_problems": len(library.problems),
                "snr_db": {"min": min(snrs), "max": max(snrs), "mean": round(float(np.mean(snrs)), 2)}
                if snrs else {}}


def print_mix_summary(stats: dict[str, Any]) -> None:
    print_summary(stats)
    if stats.get("thin_categories"):
        print(f"  thin categories (too few usable clips): {', '.join(stats['thin_categories'])}")
    for category, tags in stats.get("tags_without_clips", {}).items():
        print(f"  {category}: no usable background clip for {', '.join(tags)}")


def main(argv: list[str] | None = None) -> int:
    parser = base_parser("python -m construction.mix", __doc__.splitlines()[0])
    parser.add_argument("--sounds", help="sound library directory (config mix.sounds)")
    args = parser.parse_args(argv)
    config = config_from_args(args, {"mix.sounds": args.sounds})
    ws = Workspace(args.workspace)
    stats = run_configured(ws, MixStage(str(ws.root), config), config, restart=args.restart,
                           retry_rejected=args.retry_rejected, progress=not args.quiet)
    print_mix_summary(stats)
    return 0


if __name__ == "__main__":
    run_main(main, sys.argv[1:])

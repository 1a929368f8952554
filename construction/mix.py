"""Stage 3: the scene the listener must hear, then the speech over it.

A mixture is three parts: the scene ALONE for `scene_alone_s` (1.5-2.5 s) at a level near the speech's
(`scene_level_db`, -6..+3 dB relative to it), so a listener knows where they are before anything is
said; then the speech with the scene continuing UNDER it at `snr_db` (3-15 dB); then the scene alone
again for `scene_after_s` (short for lead_in, longest for tail: the scene answers the speech). The level
changes are ramped over `fade_s`.

Every DEFINING sound of the sample's scene is rendered (one clip each, layered at equal loudness);
SUPPORT sounds come in `support_level_db` lower when the library has them. A bed (ambience, crowd,
music) plays throughout, looped with crossfades when it is short; a one-shot event (a shot, a bell, a
pop) is scattered as separate copies with gaps and small level changes, never looped into a buzz.
Each sound gets the least-used clip of its tag in the sample's category, so use is as even as the
library allows (construction.sounds.scenes.assign_clips).

The mix is data before it is audio: the recipe (clips and their placement, levels, seed) is drawn from
the sample id and seed alone, and stored on the sample; the same recipe gives the same bytes.

SNR definition: snr_db = L(speech) - L(scene under the speech), L the ITU-R BS.1770-4 integrated
loudness (pyloudnorm) of each component alone over the speech's extent in the final clip. The level of
the scene alone is L(scene alone before the speech) - L(speech). A final peak guard scales the whole
mixture, so neither changes. Flags: --help (the sound library is --sounds LIBRARY_DIR, config mix.sounds).
"""

from __future__ import annotations

import logging
import random
import sys
from collections import Counter, defaultdict
from typing import Any

import numpy as np

from construction.core.cli import add_sounds, base_parser, keep_config, run_config, run_main
from construction.core.config import Config, MixConfig
from construction.core.errors import WorkbenchError
from construction.core.record import MixRecipe, Sample, SceneSound, stable_seed
from construction.core.runner import print_summary, run_configured
from construction.sounds.library import loudness_lufs
from construction.core.workspace import Rejected, Workspace, require_manifest

STAGE = "mix"
log = logging.getLogger(__name__)


def gain_to(audio: np.ndarray, target_lufs: float, sample_rate: int) -> float:
    """The gain (dB) that brings `audio` to `target_lufs`. BS.1770's absolute gate (-70 LUFS) lets quiet
    blocks in or out as the level changes, so one step can miss by a dB on sparse sounds: refine."""
    gain = target_lufs - loudness_lufs(audio, sample_rate)
    for _ in range(3):
        miss = target_lufs - loudness_lufs(audio * 10 ** (gain / 20), sample_rate)
        if abs(miss) < 0.01:
            break
        gain += miss
    return gain


def bed_track(clip: np.ndarray, length: int, offset: int, crossfade: int) -> np.ndarray:
    """`length` samples of a bed from `offset`; a clip that runs out starts again with an equal-power
    crossfade (no hard cut, no click)."""
    out = clip[offset:offset + length].astype(np.float64)
    while out.size < length:
        fade = min(crossfade, out.size // 4, clip.size // 4)
        if fade > 0:
            ramp = np.linspace(0.0, 1.0, fade)
            joined = out[-fade:] * np.sqrt(1 - ramp) + clip[:fade] * np.sqrt(ramp)
            out = np.concatenate([out[:-fade], joined, clip[fade:]])
        else:
            out = np.concatenate([out, clip])
    return out[:length]


def event_track(clip: np.ndarray, length: int, onsets: list[int], gains_db: list[float], fade: int) -> np.ndarray:
    """Copies of a one-shot at `onsets` (samples), each at its own gain; a copy the clip's end cuts
    short is faded out."""
    out = np.zeros(length)
    for onset, gain in zip(onsets, gains_db):
        piece = clip[:max(0, length - onset)].astype(np.float64) * 10 ** (gain / 20)
        if piece.size < clip.size and fade:
            tail = min(fade, piece.size)
            piece[piece.size - tail:] *= np.linspace(1.0, 0.0, tail)
        out[onset:onset + piece.size] += piece
    return out


def draw_onsets(rng: random.Random, event_s: float, total_s: float, speech: tuple[float, float],
                cfg: MixConfig) -> list[float]:
    """Where each copy of a one-shot starts: the first within 0.4 s (so the scene is heard alone), then
    one after another, each after the last has ended and a gap; one copy always plays under the speech
    (`speech`: its start and end, s), so the scene is never absent while the words are said."""
    onsets, t, heard_under = [], rng.uniform(0.05, 0.4), False
    start, end = speech
    enough = 0.5 * min(event_s, end - start)  # a copy is heard under the speech if it overlaps this much
    while t < total_s - 0.1:
        if not heard_under and t > end - enough:  # the gap jumped over the speech: put a copy inside it
            t = start + rng.uniform(0, (end - start) / 2)
        onsets.append(round(t, 3))
        heard_under = heard_under or min(t + event_s, end) - max(t, start) >= enough
        t += event_s + rng.uniform(cfg.event_gap_s_min, cfg.event_gap_s_max)
    if not heard_under:  # the last gap ran past the clip's end
        onsets = sorted(onsets + [round(start + rng.uniform(0, (end - start) / 2), 3)])
    return onsets


def envelope(total: int, alone: int, speech: int, alone_db: float, under_db: float, fade: int) -> np.ndarray:
    """The scene's gain per sample: alone_db, ramped down to under_db by the time the speech starts and
    back up after it ends; faded in and out at the clip's ends."""
    db = np.full(total, alone_db)
    db[alone:alone + speech] = under_db
    ramp_down = np.arange(max(0, alone - fade), alone)
    db[ramp_down] = np.linspace(alone_db, under_db, ramp_down.size, endpoint=False)
    end = alone + speech
    ramp_up = np.arange(end, min(total, end + fade))
    db[ramp_up] = np.linspace(under_db, alone_db, ramp_up.size, endpoint=False)
    gain = 10 ** (db / 20)
    edge = min(fade, total // 2)
    if edge:
        gain[:edge] *= np.linspace(0.0, 1.0, edge, endpoint=False)
        gain[total - edge:] *= np.linspace(1.0, 0.0, edge)
    return gain


def render(speech_track: np.ndarray, scene_track: np.ndarray, gain: np.ndarray, peak_dbfs: float
           ) -> tuple[np.ndarray, float]:
    """The mixture, scaled down as a whole if it would peak above peak_dbfs; returns the guard's gain."""
    mixture = speech_track + scene_track * gain
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
        from construction.sounds.scenes import assign_clips, open_library, thin_tags
        from construction.text.taxonomy import load_taxonomy

        self.ws = Workspace(self.workspace)
        self.library = open_library(self.config.mix.sounds)
        self.taxonomy, _ = load_taxonomy(self.config.generate.taxonomy)
        samples = list(self.ws.read_samples(self.input_stage))
        licence, minimum = self.config.release_licence, self.config.mix.min_clips_per_defining_tag
        thin = thin_tags(samples, self.taxonomy, self.library, licence, minimum)
        if thin:
            lines = [f"  {tag}: {n} clip(s), needed by {', '.join(scenes[:4])}{' ...' if len(scenes) > 4 else ''}"
                     for tag, (n, scenes) in thin.items()]
            raise WorkbenchError(
                f"the sound library {self.library.root} is too thin for a release: these defining sounds have "
                f"fewer than mix.min_clips_per_defining_tag = {minimum} clips under {licence}:\n" + "\n".join(lines)
                + "\nadd clips (python -m construction.sounds import ...), or lower the setting for a demo "
                "build (the dataset card then says so)")
        self.assignment = assign_clips(samples, self.taxonomy, self.library, licence, self.config.seed)
        self._audio: dict[str, np.ndarray] = {}

    def _clip_audio(self, clip) -> np.ndarray:
        if clip.clip_id not in self._audio:  # each worker decodes a clip once
            self._audio[clip.clip_id] = self.library.load_audio(clip, self.config.sample_rate)
        return self._audio[clip.clip_id]

    def recipe(self, sample: Sample, speech_s: float, attempt: int = 0) -> MixRecipe | str:
        """Draw the recipe from the sample id, seed and attempt alone, so run order never matters.
        Layer gains are left at 0: mix_one sets them from the clips' loudness."""
        from construction.sounds.scenes import scene_sounds

        cfg: MixConfig = self.config.mix
        seed = stable_seed("mix", self.config.seed, sample.sample_id, *([attempt] if attempt else []))
        rng = random.Random(seed)
        defining, support = scene_sounds(sample, self.taxonomy)
        chosen = self.assignment.get(sample.sample_id)
        if chosen is None:  # not in the synthesize manifest this stage was set up with (a control)
            from construction.sounds.scenes import assign_clips

            chosen = assign_clips([sample], self.taxonomy, self.library, self.config.release_licence,
                                  self.config.seed)[sample.sample_id]
        missing = [t for t in defining if t not in chosen]
        if missing:
            return (f"no_background: no clip for the defining sound(s) {missing} of scene "
                    f"{sample.scene_id or '-'} is compatible with the release licence {self.config.release_licence}")
        snr_db = round(rng.uniform(cfg.snr_db_min, cfg.snr_db_max), 1)
        level_db = round(rng.uniform(cfg.scene_level_db_min, cfg.scene_level_db_max), 1)
        alone_s = round(rng.uniform(cfg.scene_alone_s_min, cfg.scene_alone_s_max), 2)
        after_s = round(rng.uniform(*cfg.after_s[sample.placement]), 2)
        total_s = alone_s + speech_s + after_s
        sounds = []
        for tag, role in [(t, "defining") for t in defining] + [(t, "support") for t in support if t in chosen]:
            clip = chosen[tag]
            sound = SceneSound(clip_id=clip.clip_id, sha256=clip.sha256, tag=tag, role=role, kind=clip.kind,
                               clip_tags=list(clip.tags), licence=clip.licence, attribution=clip.attribution,
                               source_url=clip.source_url)
            if clip.kind == "bed" and not clip.procedural:
                spare = clip.duration_s - total_s
                sound.offset_s = round(rng.uniform(0, spare), 3) if spare > 0 else 0.0
            elif clip.kind != "bed":  # copies spaced by the clip's length (a procedural event's longest)
                sound.onsets_s = draw_onsets(rng, clip.duration_s, total_s, (alone_s, alone_s + speech_s), cfg)
            if clip.procedural:  # a fresh draw per copy (a bed: one, at the clip's length), seeded here
                copies = range(len(sound.onsets_s)) if clip.kind != "bed" else range(1)
                sound.procedural = {"class": clip.procedural,
                                    "seeds": [stable_seed("procedural", seed, tag, i) for i in copies]}
            sounds.append(sound)
        return MixRecipe(scene_id=sample.scene_id, sounds=sounds, placement=sample.placement, snr_db=snr_db,
                         scene_level_db=level_db, scene_alone_s=alone_s, scene_after_s=after_s,
                         speech_lufs=cfg.speech_lufs, alone_gain_db=0.0, under_gain_db=0.0, fade_s=cfg.fade_s,
                         seed=seed)

    def layer(self, sound: SceneSound, total: int, rng_seed: int) -> np.ndarray:
        """One scene sound as placed in the clip, before its gain."""
        cfg, sr = self.config.mix, self.config.sample_rate
        if sound.procedural:  # rendered from the recipe's seeds; the draws' parameters are stored with it
            from construction.sounds.procedural import draw

            name, seeds = sound.procedural["class"], sound.procedural["seeds"]
            draws = [draw(name, s, total / sr if sound.kind == "bed" else 0, sr) for s in seeds]
            sound.procedural = {"class": name, "seeds": seeds, "params": [params for _, params in draws]}
            pieces = [audio for audio, _ in draws]
        else:
            pieces = [self._clip_audio(self.library.get(sound.clip_id))]
        if sound.kind == "bed":
            return bed_track(pieces[0], total, int(sound.offset_s * sr), int(cfg.crossfade_s * sr))
        # the copies' level changes come from the recipe's seed, like everything else
        jitter = random.Random(stable_seed("jitter", rng_seed, sound.clip_id))
        gains = [round(jitter.uniform(-cfg.event_jitter_db, cfg.event_jitter_db), 2) for _ in sound.onsets_s]
        onsets, fade = [int(t * sr) for t in sound.onsets_s], int(cfg.fade_s * sr)
        if len(pieces) == 1:
            return event_track(pieces[0], total, onsets, gains, fade)
        return sum(event_track(piece, total, [onset], [gain], fade)  # each copy its own draw
                   for piece, onset, gain in zip(pieces, onsets, gains))

    def mix_one(self, sample: Sample, attempt: int = 0) -> Sample | Rejected:
        cfg: MixConfig = self.config.mix
        sr = self.config.sample_rate
        if sample.speech is None:
            return Rejected(sample, "no_speech: the sample has no synthesized speech")
        if sample.speech.sample_rate != sr:
            return Rejected(sample, f"sample_rate_mismatch: speech is {sample.speech.sample_rate} Hz, "
                                    f"the configured sample_rate is {sr} Hz")
        try:
            speech = self.ws.load_audio(sample.speech)
        except WorkbenchError as exc:
            return Rejected(sample, f"speech_unreadable: {exc}")
        recipe = self.recipe(sample, speech.size / sr, attempt)
        if isinstance(recipe, str):
            return Rejected(sample, recipe)
        alone, after = int(recipe.scene_alone_s * sr), int(recipe.scene_after_s * sr)
        total = alone + speech.size + after
        speech_track = np.zeros(total)
        speech_track[alone:alone + speech.size] = speech * 10 ** ((recipe.speech_lufs - loudness_lufs(speech, sr)) / 20)
        scene = np.zeros(total)
        for sound in recipe.sounds:
            try:
                track = self.layer(sound, total, recipe.seed)
            except WorkbenchError as exc:
                return Rejected(sample, f"background_unreadable: {exc}")
            level = loudness_lufs(track, sr)
            if not np.isfinite(level):
                return Rejected(sample, f"silent_background: clip {sound.clip_id} is silent where it is placed")
            # defining sounds at equal loudness, support sounds below them
            sound.gain_db = round(recipe.speech_lufs - level + (cfg.support_level_db if sound.role == "support" else 0), 3)
            scene += track * 10 ** (sound.gain_db / 20)
        # measured where the envelope is flat: the scene alone between the fade-in and the ramp down, and
        # the scene under the speech
        fade = int(cfg.fade_s * sr)
        alone_part, under_part = scene[fade:max(fade + 1, alone - fade)], scene[alone:alone + speech.size]
        if not (np.isfinite(loudness_lufs(alone_part, sr)) and np.isfinite(loudness_lufs(under_part, sr))):
            return Rejected(sample, "silent_background: the scene is silent before or under the speech")
        recipe.alone_gain_db = round(gain_to(alone_part, recipe.speech_lufs + recipe.scene_level_db, sr), 3)
        recipe.under_gain_db = round(gain_to(under_part, recipe.speech_lufs - recipe.snr_db, sr), 3)
        gain = envelope(total, alone, speech.size, recipe.alone_gain_db, recipe.under_gain_db, fade)
        mixture, guard_db = render(speech_track, scene, gain, cfg.peak_dbfs)
        ref = self.ws.store_audio(mixture, sr)
        scene_alone = (scene * gain * 10 ** (guard_db / 20)).astype(np.float32)  # as heard in the mixture
        provenance = {**sample.provenance, STAGE: {"peak_guard_db": round(guard_db, 3)}}
        return sample.model_copy(update={"mix": recipe, "mixture": ref, "scene_audio": self.ws.store_audio(scene_alone, sr),
                                         "provenance": provenance})

    def process(self, batch: list[Sample]) -> list[Sample | Rejected]:
        return [self.mix_one(sample) for sample in batch]

    def extra_stats(self, ws: Workspace) -> dict[str, Any]:
        return mix_stats(ws, self.config)


def mix_stats(ws: Workspace, config: Config) -> dict[str, Any]:
    """What was mixed: clips per category and scene (distinct, top share), levels, scene-alone time."""
    per_category: dict[str, Counter] = defaultdict(Counter)
    per_scene: dict[str, Counter] = defaultdict(Counter)
    n_category: Counter = Counter()
    n_scene: Counter = Counter()
    snrs, alone = [], []
    for s in ws.read_samples(STAGE):
        n_category[s.category] += 1
        n_scene[s.mix.scene_id or "-"] += 1
        for clip in {sound.clip_id for sound in s.mix.sounds}:
            per_category[s.category][clip] += 1
            per_scene[s.mix.scene_id or "-"][clip] += 1
        snrs.append(s.mix.snr_db)
        alone.append(s.mix.scene_alone_s)

    def use(counts: dict[str, Counter], totals: Counter) -> dict[str, dict[str, Any]]:
        return {key: {"samples": totals[key], "distinct_clips": len(c),
                      "top_clip": c.most_common(1)[0][0], "top_clip_share": round(c.most_common(1)[0][1] / totals[key], 3)}
                for key, c in sorted(counts.items())}

    by_category = use(per_category, n_category)
    cap = config.mix.max_clip_share
    return {"clips_per_category": by_category, "clips_per_scene": use(per_scene, n_scene),
            "categories_over_clip_share": sorted(c for c, u in by_category.items() if u["top_clip_share"] > cap),
            "snr_db": {"min": min(snrs), "max": max(snrs), "mean": round(float(np.mean(snrs)), 2)} if snrs else {},
            "scene_alone_s": {"min": min(alone), "share_at_least_1_5_s": round(float(np.mean(np.array(alone) >= 1.5)), 3)}
            if alone else {}}


def print_mix_summary(stats: dict[str, Any]) -> None:
    print_summary(stats)
    for category, use in stats.get("clips_per_category", {}).items():
        print(f"  {category:<24} {use['distinct_clips']:>4} distinct clips, top clip {use['top_clip']} "
              f"in {100 * use['top_clip_share']:.0f} % of its samples")


def main(argv: list[str] | None = None) -> int:
    parser = base_parser("python -m construction.mix", __doc__.splitlines()[0])
    add_sounds(parser, "sound library directory (config mix.sounds)")
    args = parser.parse_args(argv)
    require_manifest(args.workspace, STAGE, MixStage.input_stage)
    config = run_config(args, {"mix.sounds": args.sounds})
    ws = Workspace(args.workspace)
    with ws.lock():
        keep_config(ws, config, args, runs=(STAGE,))
        stats = run_configured(ws, MixStage(str(ws.root), config), config, restart=args.restart,
                               retry_rejected=args.retry_rejected, progress=not args.quiet)
    print_mix_summary(stats)
    return 0


if __name__ == "__main__":
    run_main(main, sys.argv[1:])

"""Stage 3: the scene the listener must hear, then the speech over it.

A mixture is three parts: the scene ALONE for `scene_alone_s` (1.5-2.5 s) at a level near the speech's
(`scene_level_db`, -6..+3 dB relative to it), so a listener knows where they are before anything is
said; then the speech with the scene continuing UNDER it at `snr_db` (3-15 dB); then the scene alone
again for `scene_after_s` (short for lead_in, longest for tail: the scene answers the speech). The level
changes are ramped over `fade_s`.

Every DEFINING sound of the sample's scene is rendered (one clip each, or several distinct ones for a
multi-source tag, layered at equal loudness but for each use's variation gain of a few dB); SUPPORT
sounds come in `support_level_db` lower when the library has them. A bed (ambience, crowd, music) plays
throughout from one take of its recording, looped with crossfades when it is short; a one-shot event (a
shot, a bell, a pop) comes as the scene's pattern says (construction.text.taxonomy EventPattern: single,
pair, burst, continuous copies with gaps, then-ordered), never looped into a buzz, and one copy is always
heard with the speech. Every defining sound is heard alone before the speech, a scene no bed plays under
is carried by one sound's copies back to back (no hole), and no recording plays more than 3 times in it,
bursts included (construction.mixing.placement). Each sound gets the least-used RECORDING of its tag in
the sample's category (none serving over 15 % of it while a procedural class can), then its least-used
take (construction.sounds.scenes.assign_clips), and every use varies gain, tilt, speed and room
(construction.sounds.variation), applied before the loudness is measured.

The mix is data before it is audio: the recipe (clips and their placement, levels, seed) is drawn from
the sample id and seed alone, and stored on the sample; the same recipe gives the same bytes.

SNR definition: snr_db = L(speech) - L(scene under the speech), L the ITU-R BS.1770-4 integrated
loudness (pyloudnorm) of each component alone over the speech's extent in the final clip. The level of
the scene alone is L(scene alone before the speech) - L(speech). A final peak guard scales the whole
mixture, so neither changes. Every mixture also gets its irrelevant-background twin (mix.irrelevant_twin,
on by default): the same speech track, at the mixture's level, over noise that masks it as the scene does
band by band and moment by moment (construction.mixing.masker), and its danger twin (mix.danger_twin): the
same speech over a real-danger scene on a masker of the scene's energy shifted in time
(construction.mixing.twin). The automatic build makes the twins
in the WER stage, of the mixtures that pass its gate (MixStage twins_after_gate).
Flags: --help (the sound library is --sounds LIBRARY_DIR, config mix.sounds).
"""

from __future__ import annotations

import argparse
import logging
import random
import sys
from typing import Any

import numpy as np

from construction.core.cli import (
    add_sounds,
    base_parser,
    keep_config,
    run_config,
    run_main,
)
from construction.core.config import Config, MixConfig
from construction.core.errors import WorkbenchError
from construction.core.record import MixRecipe, Sample, SceneSound, line_of, stable_seed
from construction.core.runner import run_configured
from construction.core.timing import Clock
from construction.core.workspace import Rejected, Workspace, require_manifest
from construction.mixing import heldout, masking
from construction.mixing.dominance import DOMINANT_SHARE, dominate
from construction.mixing.levels import (
    STEP_DB,
    STEP_WITHIN_S,
    clicks_and_beats,
    content_steps,
    envelope,
    gain_to,
    placed_speech,
    render,
    source_steps,
)
from construction.mixing.mix_stats import CLICKED, mix_stats, print_mix_summary
from construction.sounds.library import loudness_lufs
from construction.sounds.scenes import Pick, scene_sounds, take_span
from construction.sounds.variation import change_rate, colour
from construction.mixing.lines import line_guard, line_windows, place_on_line
from construction.mixing.placement import place_sounds
from construction.mixing.tracks import (  # noqa: F401
    MAX_REPEATS,
    bed_track,
    cap_repeats,
    draw_onsets,
    event_track,
    first_loud,
    sounding_end,
)
from construction.mixing.twin import (
    assign_danger,
    keep_scene,
    make_danger,
    make_twin,
    pending_path,
    read_scene,
)
from construction.mixing.twin import pick as pick_option

STAGE = "mix"
log = logging.getLogger(__name__)


MAX_REDRAWS = 3  # draws of a recipe before a sample whose defining sounds never dominate is rejected
PLACE_TAIL_DB = -32.0  # a copy counts as sounding (for spacing the next) until it falls this far under its peak


class MixStage:
    name = STAGE
    input_stage = "synthesize"
    max_jobs = None

    def __init__(self, workspace: str, config: Config, clock: Clock | None = None, twins_after_gate: bool = False):
        """With `twins_after_gate` (the automatic build, whose WER stage gates the twins) the first attempts'
        twins are left to the WER stage, made once the mixture has passed the gate (add_twins): a sixth of
        first mixtures fail it, and their twins were two thirds of the mix's work for nothing. Each
        mixture's scene waits in the workspace cache (construction.mixing.twin.pending_path) until then, so the
        twins are the same bytes."""
        self.workspace, self.config = workspace, config
        self.clock = clock or Clock()  # mix_one, twin included (stats timed_s.mix)
        self.twins_after_gate = twins_after_gate
        self._deferred: tuple[str, tuple] | None = None  # the twins' inputs of mix_one(..., twins=False)

    def setup(self) -> None:
        from construction.sounds.scenes import GaplessBeds, assign_clips, open_library, thin_tags
        from construction.text.taxonomy import load_taxonomy

        self.ws = Workspace(self.workspace)
        self.library = open_library(self.config.mix.sounds, verified=self.ws.cache_dir("library"))
        self.taxonomy, _ = load_taxonomy(self.config.generate.taxonomy)
        samples = list(self.ws.read_samples(self.input_stage))
        licence, minimum = self.config.release_licence, self.config.mix.min_clips_per_defining_tag
        thin = thin_tags(samples, self.taxonomy, self.library, licence, minimum)
        if thin:
            lines = [f"  {tag}: {n} recording(s), needed by {', '.join(scenes[:4])}{' ...' if len(scenes) > 4 else ''}"
                     for tag, (n, scenes) in thin.items()]
            raise WorkbenchError(
                f"the sound library {self.library.root} is too thin for a release: these defining sounds have "
                f"fewer than mix.min_clips_per_defining_tag = {minimum} distinct recordings (or a procedural class) "
                f"under {licence}:\n" + "\n".join(lines)
                + "\nadd clips (python -m construction.sounds import ...), or lower the setting for a demo "
                "build (the dataset card then says so)")
        self.gapless = GaplessBeds(self.library, self.config.sample_rate)
        # the variants of a line share its scene and danger scene: both are dealt per line (its first variant)
        self.lines = line_windows(samples, self.config.sample_rate) if self.config.synthesize.variants else {}
        firsts = {line_of(s): s for s in reversed(samples)}
        reps = [s for s in samples if firsts[line_of(s)] is s]
        clips = assign_clips(reps, self.taxonomy, self.library, licence, self.config.seed,
                             self.config.mix.take_s, minimum, gapless=self.gapless)
        self.assignment = {s.sample_id: clips[firsts[line_of(s)].sample_id] for s in samples
                           if firsts[line_of(s)].sample_id in clips}
        dangers = assign_danger(reps, self.config.seed)
        self.dangers = {line_of(s): dangers[s.sample_id] for s in reps if s.sample_id in dangers}
        self._audio: dict[str, np.ndarray] = {}

    def _clip_audio(self, clip) -> np.ndarray:
        if clip.clip_id not in self._audio:  # each worker decodes a clip once
            self._audio[clip.clip_id] = self.library.load_audio(clip, self.config.sample_rate)
        return self._audio[clip.clip_id]

    def recipe(self, sample: Sample, speech_s: float, attempt: int = 0, redraw: int = 0) -> MixRecipe | str:
        """Draw the recipe from the sample id, seed, attempt and redraw alone, so run order never
        matters. Layer gains are left at 0: mix_one sets them from the clips' loudness."""
        cfg: MixConfig = self.config.mix
        line = self.lines.get(line_of(sample))
        if line is not None:  # a variant: drawn for its line's longest speech, so every variant fits
            speech_s = line["window"] / self.config.sample_rate
        seed = stable_seed("mix", self.config.seed, line_of(sample), *([attempt] if attempt else []),
                           *(["redraw", redraw] if redraw else []))
        rng = random.Random(seed)
        defining, _ = scene_sounds(sample, self.taxonomy)
        chosen = self.assignment.get(sample.sample_id)
        if chosen is None:  # not in the synthesize manifest this stage was set up with (a control)
            from construction.sounds.scenes import assign_clips

            chosen = assign_clips([sample], self.taxonomy, self.library, self.config.release_licence,
                                  self.config.seed, cfg.take_s, cfg.min_clips_per_defining_tag,
                                  gapless=getattr(self, "gapless", None))[sample.sample_id]
        missing = [t for t in defining if t not in chosen]
        if missing:
            return (f"no_background: no clip for the defining sound(s) {missing} of scene "
                    f"{sample.scene_id or '-'} is compatible with the release licence {self.config.release_licence}")
        snr_db = round(rng.uniform(cfg.snr_db_min, cfg.snr_db_max), 1)
        level_db = round(rng.uniform(cfg.scene_level_db_min, cfg.scene_level_db_max), 1)
        alone_s = round(rng.uniform(cfg.scene_alone_s_min, cfg.scene_alone_s_max), 2)
        after_s = round(rng.uniform(*cfg.after_s[sample.placement]), 2)
        total_s = alone_s + speech_s + after_s
        sounds = self.place_sounds(sample, chosen, rng, total_s, (alone_s, alone_s + speech_s), seed)
        return MixRecipe(scene_id=sample.scene_id, sounds=sounds, placement=sample.placement, snr_db=snr_db,
                         scene_level_db=level_db, scene_alone_s=alone_s, scene_after_s=after_s,
                         speech_lufs=cfg.speech_lufs, alone_gain_db=0.0, under_gain_db=0.0, fade_s=cfg.fade_s,
                         seed=seed)

    def place_sounds(self, sample: Sample, chosen: dict[str, list[Pick]], rng: random.Random, total_s: float,
                     speech: tuple[float, float], seed: int) -> list[SceneSound]:
        """Every picked clip placed (construction.mixing.placement): every defining sound heard alone
        before the speech, no hole where the scene has no bed, no recording more than 3 times."""
        return place_sounds(sample, chosen, self.taxonomy, self.config.mix, rng, total_s, speech, seed,
                            self._sounding)

    def _sounding(self, clip, seed: int | None = None) -> tuple[float, float]:
        """(when a recording, or a procedural class's draw `seed`, is first within 10 dB of its loudest
        10 ms, when it has died down: its last 10 ms within PLACE_TAIL_DB of its peak), s; a recording is
        measured once a worker."""
        sr = self.config.sample_rate
        if seed is not None:
            return self._timing(self._draw(clip.procedural, seed, 0.0)[0], clip)
        cache = self.__dict__.setdefault("_timings", {})
        if clip.clip_id not in cache:
            cache[clip.clip_id] = self._timing(self._clip_audio(clip), clip)
        return cache[clip.clip_id]

    def _timing(self, audio: np.ndarray, clip) -> tuple[float, float]:
        """(first loud, loud end): copies are spaced from where a copy has fallen 32 dB under its peak, not
        40 (a quieter layer's tail is already 35 dB under the scene's loud frames: a boing's 0.54 s hole)."""
        sr = self.config.sample_rate
        end = sounding_end(audio, sr, PLACE_TAIL_DB) / sr or clip.duration_s
        return min(first_loud(audio, sr), end), end

    def _draw(self, name: str, seed: int, duration_s: float) -> tuple[np.ndarray, dict]:
        """A procedural draw; the last few events are kept, as placing a scene measures the draws it then renders."""
        from construction.sounds.procedural import draw

        if duration_s > 0:  # a bed is drawn once a sample
            return draw(name, seed, duration_s, self.config.sample_rate)
        cache = self.__dict__.setdefault("_draws", {})
        key = (name, seed)
        if key not in cache:
            if len(cache) >= 64:
                cache.pop(next(iter(cache)))
            cache[key] = draw(name, seed, duration_s, self.config.sample_rate)
        return cache[key]

    def layer(self, sound: SceneSound, total: int, rng_seed: int) -> np.ndarray:
        """One scene sound as placed in the clip, before its gain."""
        cfg, sr = self.config.mix, self.config.sample_rate
        rate = float(sound.variation.get("rate", 1.0))
        need = int(np.ceil(total * rate)) + 8  # `rate` times as much source, resampled to the mixture's length
        if sound.procedural:  # rendered from the recipe's seeds; the draws' parameters are stored with it
            name, seeds = sound.procedural["class"], sound.procedural["seeds"]
            draws = [self._draw(name, s, need / sr if sound.kind == "bed" else 0.0) for s in seeds]
            sound.procedural = {"class": name, "seeds": seeds, "params": [params for _, params in draws]}
            pieces = [audio for audio, _ in draws]
        else:
            clip = self.library.get(sound.clip_id)
            pieces = [self._clip_audio(clip)]
        if sound.kind == "bed":
            if sound.procedural:
                track = pieces[0][:need]
            else:
                # read from the take (a recipe without variation predates takes: the whole clip)
                start, end = take_span(clip, sound.take, cfg.take_s) if sound.variation else (0.0, clip.duration_s)
                take = pieces[0][int(start * sr):max(int(start * sr) + 1, int(end * sr))]
                track = bed_track(take, need, int((sound.offset_s - start) * sr), int(cfg.crossfade_s * sr))
            track = change_rate(track, rate, sr)
            track = np.pad(track, (0, max(0, total - track.size)))[:total]
        else:
            # the copies' level changes come from the recipe's seed, like everything else
            jitter = random.Random(stable_seed("jitter", rng_seed, sound.clip_id))
            gains = [round(jitter.uniform(-cfg.event_jitter_db, cfg.event_jitter_db), 2) for _ in sound.onsets_s]
            onsets, fade = [int(t * sr) for t in sound.onsets_s], int(cfg.fade_s * sr)
            if len(pieces) == 1:
                track = event_track(change_rate(pieces[0], rate, sr), total, onsets, gains, fade, sr)
            else:  # each copy its own draw
                track = sum(event_track(change_rate(piece, rate, sr), total, [onset], [gain], fade, sr)
                            for piece, onset, gain in zip(pieces, onsets, gains))
        track = colour(track, sound.variation, sr)
        if sound.start_s > 0:  # a bed that comes in after another sound: silent until then, faded in
            begin, fade = min(total, int(sound.start_s * sr)), int(cfg.fade_s * sr)
            track[:begin] = 0.0
            ramp = min(fade, total - begin)
            track[begin:begin + ramp] *= np.linspace(0.0, 1.0, ramp, endpoint=False)
        return track

    def mix_one(self, sample: Sample, attempt: int = 0, twins: bool = True) -> Sample | Rejected:
        """The sample mixed (its mixture, its scene alone and, with `twins`, its twins). Without `twins`
        they are made later by add_twins, once the mixture has passed the WER gate: a re-mix in the WER
        stage fails the gate about half the time, and twins of a failed attempt were work for nothing."""
        self._deferred = None
        with self.clock.timed("mix"):
            failed: list[dict[str, Any]] = []
            # a draw whose defining sounds do not dominate, or with a click in a track, is drawn again
            for redraw in range(MAX_REDRAWS + 1):
                out = self._mix_one(sample, attempt, redraw, twins)
                if not isinstance(out, dict):
                    break
                failed.append(out)
            else:
                clicked = [f["clicks"] for f in failed if "clicks" in f]
                if clicked:
                    others = ", the others failed dominance" if len(clicked) < len(failed) else ""
                    return Rejected(sample, f"click_in_every_draw: {len(clicked)} of {MAX_REDRAWS + 1} draws had a "
                                            f"step over {STEP_DB:g} dB within {STEP_WITHIN_S * 1000:g} ms that no "
                                            f"sound makes (first: {clicked[0]}){others}")
                return Rejected(sample, f"defining_not_dominant: in {MAX_REDRAWS + 1} draws the scene's defining "
                                        f"sounds never carried {DOMINANT_SHARE:.0%} of its energy and more than any "
                                        f"support sound (first draw: {failed[0]})")
            if isinstance(out, Sample) and failed:
                for_clicks = sum("clicks" in f for f in failed)
                if len(failed) > for_clicks:
                    out.provenance[STAGE]["redrawn"] = len(failed) - for_clicks
                if for_clicks:
                    out.provenance[STAGE]["redrawn_for_clicks"] = for_clicks
            return out

    def _mix_one(self, sample: Sample, attempt: int = 0, redraw: int = 0,
                 twins: bool = True) -> Sample | Rejected | dict[str, Any]:
        """The mixture of one draw; a dict (the dominance measures) when the draw fails dominance."""
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
        recipe = self.recipe(sample, speech.size / sr, attempt, redraw)
        if isinstance(recipe, str):
            return Rejected(sample, recipe)
        speech_track, alone, voiced = self._placed(sample, speech, recipe)
        total = speech_track.size
        recipe.voiced_s = [(round(a / sr, 3), round(b / sr, 3)) for a, b in voiced]
        tracks = []
        for sound in recipe.sounds:
            try:
                track = self.layer(sound, total, recipe.seed)
            except WorkbenchError as exc:
                return Rejected(sample, f"background_unreadable: {exc}")
            level = loudness_lufs(track, sr)
            if not np.isfinite(level):
                return Rejected(sample, f"silent_background: clip {sound.clip_id} is silent where it is placed")
            # defining sounds at equal loudness, support sounds below them
            sound.gain_db = round(recipe.speech_lufs - level + (cfg.support_level_db if sound.role == "support" else 0)
                                  + float(sound.variation.get("gain_db", 0.0)), 3)
            tracks.append(track)
        # measured where the envelope is flat: the scene alone between the fade-in and the ramp down, and
        # the scene under the voiced speech
        fade = int(cfg.fade_s * sr)
        alone_span = slice(fade, max(fade + 1, alone - fade))
        under_idx = np.concatenate([np.arange(a, b) for a, b in voiced])
        dominance = dominate(recipe.sounds, tracks, [alone_span, under_idx])
        if dominance.get("fails"):
            return dominance
        scene = np.zeros(total)
        for sound, track in zip(recipe.sounds, tracks):
            scene += track * 10 ** (sound.gain_db / 20)
        alone_part, under_part = scene[alone_span], scene[under_idx]
        if not (np.isfinite(loudness_lufs(alone_part, sr)) and np.isfinite(loudness_lufs(under_part, sr))):
            return Rejected(sample, "silent_background: the scene is silent before or under the speech")
        recipe.alone_gain_db = round(gain_to(alone_part, recipe.speech_lufs + recipe.scene_level_db, sr), 3)
        recipe.under_gain_db = round(gain_to(under_part, recipe.speech_lufs - recipe.snr_db, sr), 3)
        gain = envelope(total, alone, speech.size, recipe.alone_gain_db, recipe.under_gain_db, fade, voiced, sr)
        mixture, guard_db = render(speech_track, scene, gain, cfg.peak_dbfs)
        if line_of(sample) in self.lines:  # the line's guard, the quietest its variants need: one scene for all
            guard_db = self._line_guard(sample, recipe, scene * gain, cfg.peak_dbfs)
            mixture = ((speech_track + scene * gain) * 10 ** (guard_db / 20)).astype(np.float32)
        # from here on the speech and the scene's gain as heard, the guard in both: the twins carry this speech
        guard = 10 ** (guard_db / 20)
        speech_track, gain = speech_track * guard, gain * guard
        scene_alone = (scene * gain).astype(np.float32)  # as heard in the mixture
        # the falls the sounds make on their own (not clicks), each at its loudest as heard if that is above
        # a -6 dBFS peak (a boing's end at -49.6 dBFS heard was under the floor at -6 dBFS: a click)
        loudest = max(recipe.alone_gain_db, recipe.under_gain_db) + guard_db
        in_scene = content_steps(sr, *(t * 10 ** ((x.gain_db + loudest) / 20) for x, t in zip(recipe.sounds, tracks)),
                                 placed=True)
        said = content_steps(sr, speech_track, placed=True)  # the speech at the level heard
        with_speech = np.union1d(in_scene, said)
        # what the scene and the mixture sum, as heard: made only where a sum falls (levels.clicks_and_beats)
        layers = lambda: tuple(t * (10 ** (x.gain_db / 20) * gain) for x, t in zip(recipe.sounds, tracks))
        clicks = {"in_sources": source_steps(scene_alone, sr, in_scene)}
        clicks["scene"], clicks["beats"] = clicks_and_beats(scene_alone, sr, in_scene, layers)
        clicks["mixture"], n = clicks_and_beats(mixture, sr, with_speech,
                                                lambda: (speech_track, *layers()))
        clicks["beats"] += n
        has_twins = cfg.irrelevant_twin or cfg.danger_twin
        made = (speech_track, scene, gain, (alone, alone + speech.size), said, voiced)
        made_twins = self.twins(sample, recipe, *made, clicks) if has_twins and twins else {}
        if any(clicks.get(track, 0) for track in CLICKED):  # a draw with a click is drawn again
            heard = {track: clicks[track] for track in CLICKED if clicks.get(track)}
            if line_of(sample) in self.lines and not heard.get("scene"):  # the line's scene is clean: this
                # voice's tracks clicked, and a new draw would give this variant a scene of its own
                return Rejected(sample, f"click_in_variant: {heard} (the line's scene is shared, not redrawn)")
            return {"clicks": heard}
        if has_twins and not twins:  # kept in memory for add_twins: the twins of this attempt are the same bytes
            self._deferred = (sample.sample_id, made)
            if self.twins_after_gate:  # and the scene on disk for the WER stage, another process
                keep_scene(pending_path(self.workspace, sample.sample_id), scene)
        # the scene's silences in the lead-in and under the speech (heldout.silences: a scene has no holes)
        holes = heldout.silences(scene_alone, sr, (fade, alone + speech.size))
        # the guard unrounded: the twins made later (add_twins) scale the speech by exactly the mixture's
        provenance = {**sample.provenance, STAGE: {"peak_guard_db": guard_db, "dominance": dominance,
                                                   "clicks": clicks, "silences": holes}}
        update = {"mix": recipe, "mixture": self.ws.store_audio(mixture, sr),
                  "scene_audio": self.ws.store_audio(scene_alone, sr),
                  "irrelevant_audio": None, "irrelevant_scene_audio": None, "danger_audio": None,
                  "danger_scene_audio": None, "provenance": provenance,
                  **{key: self.ws.store_audio(audio, sr) for key, audio in made_twins.items()}}
        return sample.model_copy(update=update)

    def _placed(self, sample: Sample, speech: np.ndarray, recipe: MixRecipe) -> tuple:
        """placed_speech, or a variant's on its line's timeline (construction.mixing.lines)."""
        line = self.lines.get(line_of(sample))
        if line is None:
            return placed_speech(speech, recipe, self.config.sample_rate)
        return place_on_line(sample.sample_id, speech, recipe, line["window"], self.config.sample_rate)

    def _line_guard(self, sample: Sample, recipe: MixRecipe, heard: np.ndarray, peak_dbfs: float) -> float:
        speeches = [self.ws.load_audio(ref) for ref in self.lines[line_of(sample)]["speech"]]
        return line_guard(speeches, recipe, heard, peak_dbfs, self.config.sample_rate)

    def _pending(self, sample: Sample) -> tuple | None:
        """The twins' inputs of a mixture made with twins_after_gate: its scene from the cache, the rest
        made again from its speech and recipe (as _mix_one makes them); None when no scene waits."""
        scene = read_scene(pending_path(self.workspace, sample.sample_id))
        if scene is None or sample.mix is None or sample.speech is None:
            return None  # none kept, or unreadable: the sample is mixed again (WerStage)
        sr, recipe = self.config.sample_rate, sample.mix
        try:
            speech = self.ws.load_audio(sample.speech)
        except WorkbenchError:
            return None
        speech_track, alone, voiced = self._placed(sample, speech, recipe)
        if scene.shape != speech_track.shape:
            return None
        guard = 10 ** (sample.provenance[STAGE]["peak_guard_db"] / 20)  # as _mix_one: in the speech and the gain
        speech_track = speech_track * guard
        gain = envelope(speech_track.size, alone, speech.size, recipe.alone_gain_db, recipe.under_gain_db,
                        int(self.config.mix.fade_s * sr), voiced, sr) * guard
        return (speech_track, scene, gain, (alone, alone + speech.size), content_steps(sr, speech_track, placed=True),
                voiced)

    def add_twins(self, sample: Sample) -> Sample:
        """`sample` (the last mix_one(..., twins=False), scored since, or a first attempt made with
        twins_after_gate) with its twins made; unchanged when none wait (twins off, or made already)."""
        deferred, self._deferred = self._deferred, None
        kept = deferred is not None and deferred[0] == sample.sample_id
        if not kept and (sample.irrelevant_audio is not None or sample.danger_audio is not None):
            return sample
        sr = self.config.sample_rate
        with self.clock.timed("mix"):  # one timed call, the kept scene's reading included
            made = deferred[1] if kept else self._pending(sample)
            if made is None:
                return sample
            recipe = sample.mix.model_copy(deep=True)
            clicks = dict(sample.provenance[STAGE]["clicks"])  # a click here is counted: the mixture has passed
            out = {key: self.ws.store_audio(audio, sr) for key, audio in
                   self.twins(sample, recipe, *made, clicks).items()}
        provenance = {**sample.provenance, STAGE: {**sample.provenance[STAGE], "clicks": clicks}}
        return sample.model_copy(update={"mix": recipe, "provenance": provenance, **out})

    def twins(self, sample: Sample, recipe: MixRecipe, speech_track: np.ndarray, scene: np.ndarray,
              gain: np.ndarray, span: tuple[int, int], said: np.ndarray, voiced: list[tuple[int, int]],
              clicks: dict[str, int]) -> dict[str, Any]:
        """The mixture's masking (ERB and held-out glimpse proportions, the scene's loudness under the
        speech) on the recipe, and the twins matched to it (construction.mixing.twin): their audio by the
        sample field it is stored in. The twins' clicks (falls neither the speech nor the scene or danger
        sounds they follow make) go into `clicks`: twin, danger and danger_scene."""
        cfg, sr = self.config.mix, self.config.sample_rate
        start, end = span
        heard = scene * gain  # as in the mixture
        recipe.glimpse_proportion = round(masking.glimpse_proportion(speech_track[start:end], heard[start:end], sr), 4)
        recipe.glimpse_heldout = heldout.glimpses(speech_track[start:end], heard[start:end], sr)
        recipe.background_lufs = round(loudness_lufs(heard[start:end], sr), 2)
        words = (voiced[0][0], voiced[-1][1])
        at = heldout.speech_gain_db(speech_track + heard, speech_track, words)  # the mixture's speech, measured
        args = (speech_track, scene, gain, heard, recipe, span, words, at)
        out: dict[str, Any] = {}
        if cfg.irrelevant_twin:  # the same speech track over the scene's masker
            audio, alone, recipe.irrelevant = make_twin(*args, sr, cfg.fade_s, cfg.peak_dbfs)
            own = np.union1d(said, content_steps(sr, alone, placed=True))
            clicks["twin"], n = clicks_and_beats(audio, sr, own, (speech_track, alone))
            clicks["beats"] += n
            out["irrelevant_audio"], out["irrelevant_scene_audio"] = audio, alone
        if cfg.danger_twin:  # and over a real-danger scene, on a masker of the scene's rotated in time
            from construction.sounds.procedural import DANGER_SCENES

            name = pick_option(line_of(sample), self.dangers, self.config.seed, sorted(DANGER_SCENES), "danger-scene")
            audio, alone, recipe.danger, layers = make_danger(*args, name, sr, cfg.fade_s, cfg.peak_dbfs)
            own = content_steps(sr, *layers(), placed=True)
            clicks["danger"], n = clicks_and_beats(audio, sr, np.union1d(said, own), lambda: (speech_track, *layers()))
            clicks["danger_scene"], m = clicks_and_beats(alone, sr, own, layers)
            clicks["beats"] += n + m
            out["danger_audio"], out["danger_scene_audio"] = audio, alone
        return out

    def process(self, batch: list[Sample]) -> list[Sample | Rejected]:
        return [self.mix_one(sample, twins=not self.twins_after_gate) for sample in batch]

    def extra_stats(self, ws: Workspace) -> dict[str, Any]:
        from construction.sounds.scenes import is_procedural, open_library

        # the workers ran setup and checked every file; the ids of the procedural entries need the catalog alone
        library = getattr(self, "library", None) or open_library(self.config.mix.sounds, check_audio=False)
        return mix_stats(ws, self.config, frozenset(c.clip_id for c in library.clips if is_procedural(c)),
                         self.twins_after_gate)


SOUNDS_HELP = f"sound library folder (default: config mix.sounds, else {MixConfig().sounds})"


def build_parser() -> argparse.ArgumentParser:
    parser = base_parser("python -m construction.mix", __doc__.splitlines()[0], env=("OMP_NUM_THREADS",))
    add_sounds(parser, SOUNDS_HELP)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
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

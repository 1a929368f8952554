"""Stage 4: keep only samples Whisper still understands, after mixing.

The mixture is transcribed (construction.speech.asr) and scored against the script (WER and CER as
fractions, after the Whisper English normaliser; see construction.speech.scoring.score). A sample is
kept when the mixture's WER <= wer.max_wer. The clean speech is transcribed too, for every sample with
wer.transcribe_speech = always, else (the default, faster) only for failing ones: a rejected sample
is reported as `wer_tts` when its clean speech already fails (a TTS problem) and `wer_snr` when only
the mixture fails (a mixing problem). With wer.gate_twins (the default) a passing mixture's twins
(irrelevant, danger) are transcribed and must pass the same gate, or the attempt fails (`twin_irrelevant`,
`twin_danger`): the masking baseline must be heard as the mixture is. A re-mix's twins are made once its
mixture passes (and, in the automatic build, a first attempt's: construction.mix twins_after_gate), too
late for the mix to draw them again, so one with a click fails it (`twin_click`). A
sample whose mixture failed while its clean speech passed, or whose twin failed, was masked by its draw:
with wer.remix_attempts = R (default 3) it is first re-mixed with the same speech and a new seed, up to
R times. Then, with wer.resynthesize_attempts = K, a failing sample is re-synthesised with another voice
of the same gender (another TTS engine first) and re-mixed with a new seed, up to K times. Every attempt
is recorded in provenance.

Flags: `python -m construction.wer --help`.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from typing import Any

import numpy as np

from construction.core.cli import base_parser, keep_config, run_config, run_main
from construction.core.config import Config, WerConfig
from construction.core.errors import WorkbenchError
from construction.core.record import Sample
from construction.core.runner import print_summary, run_configured
from construction.core.timing import Clock
from construction.core.workspace import Rejected, Workspace, require_manifest

STAGE = "wer"


SPEECH_MARGIN_S = 0.3


def speech_extent(mixture: np.ndarray, sample: Sample, sample_rate: int) -> np.ndarray:
    """The part of the mixture the words are in, with SPEECH_MARGIN_S either side: the scene heard
    alone before and after holds no words to check (a crowd's chatter there must not count as an
    error), and Whisper has less to encode."""
    if sample.mix is None or sample.speech is None:
        return mixture
    start = max(0, int((sample.mix.scene_alone_s - SPEECH_MARGIN_S) * sample_rate))
    end = int((sample.mix.scene_alone_s + sample.speech.duration_s + SPEECH_MARGIN_S) * sample_rate)
    return mixture[start:end]


def next_voice(voices: list, current_id: str | None, tried: set[str]):
    """The voice a failed sample is tried again with: one of the same gender (the bank stays balanced)
    that it has not had yet, another TTS engine first (an engine's failures repeat across its voices),
    in bank order; any untried voice when its gender has none left."""
    current = next((v for v in voices if v.voice_id == current_id), None)
    untried = [v for v in voices if v.voice_id not in tried | {current_id}] or \
        [v for v in voices if v.voice_id != current_id] or voices
    if current is None:
        return untried[0]
    same_gender = [v for v in untried if v.gender == current.gender] or untried
    return sorted(same_gender, key=lambda v: v.backend == current.backend)[0]


class WerStage:
    name = STAGE
    input_stage = "mix"
    max_jobs = None  # one single-threaded model per worker (wer.cpu_threads)
    whole_batches = True  # a batch is decoded together: a resumed run batches alike, for identical texts

    def __init__(self, workspace: str, config: Config):
        self.workspace, self.config = workspace, config
        self._synthesize = self._mix = None
        # Whisper calls (timed_s.whisper) and, re-synthesising, the TTS and mix calls (tts, mix)
        self.clock = Clock()

    def setup(self) -> None:
        from construction.speech.asr import load_asr

        cfg = self.config.wer
        self.ws = Workspace(self.workspace)
        self.asr = load_asr(cfg.backend, model=cfg.model, device=cfg.device, compute_type=cfg.compute_type,
                            beam_size=cfg.beam_size, language=cfg.language,
                            **({"window": cfg.window, "cpu_threads": cfg.cpu_threads}
                               if cfg.backend == "faster-whisper" else {}))

    def _read(self, samples: list[Sample], what: str) -> tuple[list[Sample], list[np.ndarray], list[Rejected]]:
        """The samples whose `what` audio (mixture or speech) reads, their audio, and the others as
        rejected rows: one missing file costs one sample, not the stage."""
        readable, audio, unreadable = [], [], []
        for sample in samples:
            ref = getattr(sample, what)
            try:
                if ref is None:
                    raise WorkbenchError(f"the sample has no {what} audio")
                clip = self.ws.load_audio(ref)
                audio.append(speech_extent(clip, sample, ref.sample_rate) if what == "mixture" else clip)
                readable.append(sample)
            except WorkbenchError as exc:
                unreadable.append(Rejected(sample, f"{what}_unreadable: {exc}"))
        return readable, audio, unreadable

    def _transcribe_and_score(self, batch: list[Sample]) -> list[Sample | Rejected]:
        """Each sample scored, in batch order; a sample whose audio cannot be read comes back rejected."""
        from construction.speech.scoring import score

        cfg = self.config.wer
        samples, audio, rejected = self._read(batch, "mixture")
        done: dict[str, Sample | Rejected] = {r.sample.sample_id: r for r in rejected}
        with self.clock.timed("whisper"):
            texts = self.asr.transcribe(audio, language=cfg.language)
        self.clock.count("whisper_clips", len(audio))
        for sample, text in zip(samples, texts):
            wer, cer = score(sample.speech_text, text)
            done[sample.sample_id] = sample.model_copy(update={
                "transcript_mixture": text, "wer_mixture": round(wer, 4), "cer_mixture": round(cer, 4)})
        # The clean speech tells a TTS failure from a masking one; with "failures" only failures need it
        todo = [s for s in done.values() if isinstance(s, Sample) and s.transcript_speech is None  # a re-mix's is known
                and (cfg.transcribe_speech == "always" or s.wer_mixture > cfg.max_wer or self._verdict(s))]
        todo, audio, rejected = self._read(todo, "speech")
        done.update((r.sample.sample_id, r) for r in rejected)
        if todo:
            with self.clock.timed("whisper"):
                texts = self.asr.transcribe(audio, language=cfg.language)
            self.clock.count("whisper_clips", len(audio))
        else:
            texts = []
        for sample, text in zip(todo, texts):
            done[sample.sample_id] = sample.model_copy(update={
                "transcript_speech": text, "wer_speech": round(score(sample.speech_text, text)[0], 4)})
        return [done[s.sample_id] for s in batch]

    @property
    def _gating_twins(self) -> bool:
        return self.config.wer.gate_twins and self.config.wer.transcribe_twins

    def _missed(self, sample: Sample, heard: str | None) -> list[str]:
        """The sample's key words not heard in `heard` (none when wer.require_key_words is off)."""
        from construction.speech.scoring import missing_key_words

        return missing_key_words(sample.key_words, heard or "") if self.config.wer.require_key_words else []

    def _verdict(self, sample: Sample) -> str | None:
        """Why the sample fails the gate (None: it passes): its mixture, then (wer.gate_twins) its twins."""
        limit = self.config.wer.max_wer
        if sample.wer_mixture <= limit:
            missed = self._missed(sample, sample.transcript_mixture)
            if not missed:
                return self._twin_verdict(sample) if self._gating_twins else None
            return (f"keyword_missed: {', '.join(repr(k) for k in missed)} not heard in the mixture "
                    f"(WER {sample.wer_mixture:.2f}); heard {sample.transcript_mixture!r}")
        code = "wer_tts" if sample.wer_speech > limit else "wer_snr"
        return (f"{code}: mixture WER {sample.wer_mixture:.2f} > {limit} (clean speech WER "
                f"{sample.wer_speech:.2f}); heard {sample.transcript_mixture!r}")

    def _twin_verdict(self, sample: Sample) -> str | None:
        """Why a twin of a passing mixture fails the same gate: the masking baseline must be heard as
        the mixture is, or "twin minus mixture" measures intelligibility, not context use. A twin with
        a click fails too. A twin that could not be read (unscored) is the mix's to report."""
        clicked = _twin_clicks(sample)
        if clicked:  # made after the gate passed its mixture (a re-mix's twins), so not redrawn by the mix
            where = ", ".join(f"{track} {n}" for track, n in clicked.items())
            return f"twin_click: the twins of a passing mixture have a click ({where}); no kept track may have one"
        limit = self.config.wer.max_wer
        for kind in ("irrelevant", "danger"):
            wer, heard = getattr(sample, f"wer_{kind}"), getattr(sample, f"transcript_{kind}")
            if wer is None:
                continue
            missed = self._missed(sample, heard)
            if wer > limit or missed:
                what = f"WER {wer:.2f} > {limit}" if wer > limit else \
                    f"{', '.join(repr(k) for k in missed)} not heard (WER {wer:.2f})"
                return (f"twin_{kind}: the {kind} twin fails the gate its mixture passed ({what}; mixture WER "
                        f"{sample.wer_mixture:.2f}); heard {heard!r}")
        return None

    def _masked(self, sample: Sample, reason: str) -> bool:
        """Its draw masked the speech, not its voice (`reason`: why it failed): the mixture failed while
        the clean speech's words and key words were heard, or the mixture passed and a twin failed."""
        if reason.startswith("twin_"):
            return True
        if sample.wer_speech is None or sample.wer_speech > self.config.wer.max_wer:
            return False
        return not self._missed(sample, sample.transcript_speech)

    def _remix(self, sample: Sample, attempt: int) -> Sample | Rejected:
        """The same speech re-mixed with a new seed (its clean transcript still describes it)."""
        self._stages()
        return self._mix.mix_one(_without_twins(sample), attempt=attempt, twins=False)  # twins once it passes

    def _stages(self) -> None:
        """The synthesize and mix stages a retry needs, set up at the first retry."""
        from construction.mix import MixStage
        from construction.synthesize import SynthesizeStage

        if self._synthesize is None:
            self._synthesize = SynthesizeStage(self.workspace, self.config, clock=self.clock)
            self._synthesize.setup()
            self._mix = MixStage(self.workspace, self.config, clock=self.clock)
            self._mix.setup()

    def _retry(self, sample: Sample, attempt: int, tried: set[str]) -> Sample | Rejected:
        """Re-synthesise with the next voice and re-mix with a new seed (same script, same id)."""
        self._stages()
        voice = next_voice(self._synthesize.voices, sample.voice_id, tried)
        # the last voice's clean transcript does not describe the new speech (a kept retry kept it)
        spoken = self._synthesize.synthesize_one(_without_twins(sample).model_copy(
            update={"transcript_speech": None, "wer_speech": None}), voice=voice)
        if isinstance(spoken, Rejected):
            return spoken
        return self._mix.mix_one(spoken, attempt=attempt, twins=False)  # twins once it passes

    def process(self, batch: list[Sample]) -> list[Sample | Rejected]:
        results: list[Sample | Rejected] = []
        scored = self._transcribe_and_score(batch)
        if self._gating_twins:  # the first attempts' twins heard in one call
            scored = self._with_twins_heard(scored, first=True)
        for sample in scored:
            if isinstance(sample, Rejected):
                results.append(sample)
                continue
            cfg = self.config.wer
            history: list[dict[str, Any]] = []
            # a variant is never retried: its voice is its factor and its scene is its line's (shared with
            # the other variants), so a variant that fails the gate is dropped and its line ships without it
            variant = "variant" in sample.custom
            remixes, resyntheses = (cfg.remix_attempts, cfg.resynthesize_attempts) if variant else (0, 0)
            remixed = False  # this attempt re-mixed the last attempt's speech
            for attempt in range(1, cfg.remix_attempts + cfg.resynthesize_attempts + 2):
                reason = self._verdict(sample)
                history.append({"voice": sample.voice_id, "snr_db": sample.mix.snr_db,
                                "wer_speech": sample.wer_speech, "wer_mixture": sample.wer_mixture,
                                **{f"wer_{k}": getattr(sample, f"wer_{k}") for k in ("irrelevant", "danger")
                                   if self._gating_twins and getattr(sample, f"wer_{k}") is not None},
                                **({"remix": True} if remixed else {})})
                if reason is None:
                    break
                if reason.startswith("twin_"):
                    history[-1]["twin_failed"] = reason.split(":")[0].removeprefix("twin_")
                remixed = remixes < cfg.remix_attempts and self._masked(sample, reason)
                if remixed:
                    remixes += 1
                    retried = self._remix(sample, attempt)
                elif resyntheses < cfg.resynthesize_attempts:
                    resyntheses += 1
                    retried = self._retry(sample, attempt, {h["voice"] for h in history})
                else:
                    break
                if isinstance(retried, Rejected):
                    reason = retried.reason
                    break
                rescored = self._transcribe_and_score([retried])[0]
                if isinstance(rescored, Rejected):
                    reason = rescored.reason
                    break
                if self._gating_twins:  # a mixture that passed gets its twins, which must pass too
                    rescored = self._with_twins_heard([rescored])[0]
                sample = rescored
            if reason is None:  # with the twin gate off, the twins of what passed are made here
                sample = self._with_twins_made(sample, first=len(history) == 1)
            provenance = {**sample.provenance, STAGE: {
                "backend": self.asr.name, "model": self.asr.model_id, "language": self.config.wer.language,
                "max_wer": self.config.wer.max_wer, "attempts": history}}
            sample = sample.model_copy(update={"provenance": provenance})
            results.append(sample if reason is None else Rejected(sample, reason))
        from construction.mixing.twin import pending_path

        for sample in batch:  # done with: the scenes the mix kept for their twins go
            pending_path(self.workspace, sample.sample_id).unlink(missing_ok=True)
        if self.config.wer.transcribe_twins and not self._gating_twins:  # recorded, not gated
            twins = self._transcribe_twins([r for r in results if isinstance(r, Sample)])
            results = [twins.get(r.sample_id, r) if isinstance(r, Sample) else r for r in results]
        return results

    def _with_twins_heard(self, scored: list[Sample | Rejected], first: bool = False) -> list[Sample | Rejected]:
        """`scored` with the twins of each passing mixture made and transcribed, for the twin gate; the
        others as they are."""
        passing = [self._with_twins_made(s, first) for s in scored if isinstance(s, Sample) and self._verdict(s) is None]
        heard = {s.sample_id: s for s in passing}
        heard.update(self._transcribe_twins([s for s in passing if not _twin_clicks(s)]))  # a click fails it unheard
        return [heard.get(s.sample_id, s) if isinstance(s, Sample) else s for s in scored]

    def _with_twins_made(self, sample: Sample, first: bool) -> Sample:
        """A passing mixture with its twins: a re-mix's (the mix kept their inputs in memory), or a first
        attempt's the mix stage left to this one (MixStage twins_after_gate: made from the scene it kept
        in the cache, or, that scene lost to a crash, from the sample mixed again: same seed, same bytes)."""
        mix = self.config.mix
        if not (mix.irrelevant_twin or mix.danger_twin) or sample.irrelevant_audio or sample.danger_audio:
            return sample  # twins off, or the mix stage made them
        self._stages()
        made = self._mix.add_twins(sample)
        if first and made is sample:  # drawn as the mix stage drew it: twins after the mixture, as there
            made = self._mix.mix_one(sample, attempt=0, twins=False)
            if isinstance(made, Sample) and made.mixture == sample.mixture:
                made = self._mix.add_twins(made)
            else:
                raise WorkbenchError(f"{sample.sample_id}: its mixture, mixed again for its twins, differs from the "
                                     f"one Whisper heard; rerun with --restart (python -m construction.mix) to mix "
                                     f"it afresh")
        return made

    def _transcribe_twins(self, samples: list[Sample]) -> dict[str, Sample]:
        """The samples (passing mixtures) with their twins' transcripts and WER (irrelevant, danger), scored
        like the mixture over the same extent; a twin that cannot be read is left unscored (it is the mix's
        to report)."""
        from construction.speech.scoring import score

        jobs: list[tuple[Sample, str]] = []
        audio: list[np.ndarray] = []
        for sample in samples:
            for kind in ("irrelevant", "danger"):
                ref = getattr(sample, f"{kind}_audio")
                if ref is None:
                    continue
                try:
                    audio.append(speech_extent(self.ws.load_audio(ref), sample, ref.sample_rate))
                except WorkbenchError:
                    continue
                jobs.append((sample, kind))
        if not jobs:
            return {}
        with self.clock.timed("whisper"):
            texts = self.asr.transcribe(audio, language=self.config.wer.language)
        self.clock.count("whisper_clips", len(audio))
        update: dict[str, dict[str, Any]] = {}
        for (sample, kind), text in zip(jobs, texts):
            update.setdefault(sample.sample_id, {}).update({
                f"transcript_{kind}": text, f"wer_{kind}": round(score(sample.speech_text, text)[0], 4)})
        return {s.sample_id: s.model_copy(update=update[s.sample_id]) for s in samples if s.sample_id in update}

    def extra_stats(self, ws: Workspace) -> dict[str, Any]:
        return {**self._wer_stats(ws), **keep_rates(ws)}

    def _wer_stats(self, ws: Workspace) -> dict[str, Any]:
        kept = [s.wer_mixture for s in ws.read_samples(STAGE)]
        rejected = [r.sample.wer_mixture for r in ws.read_rejected(STAGE) if r.sample.wer_mixture is not None]
        kept_attempts = [s.provenance.get(STAGE, {}).get("attempts", []) for s in ws.read_samples(STAGE)]
        retried = Counter(len(a) for a in kept_attempts)
        retries = [bool(h.get("remix")) for a in kept_attempts for h in a[1:]]  # every attempt after the first
        everything = np.array(kept + rejected) if kept + rejected else np.zeros(0)
        edges = [0, 0.05, 0.1, 0.2, 0.5, 1.0, np.inf]
        histogram = np.histogram(everything, bins=edges)[0].tolist() if everything.size else []
        return {**made_twin_stats(ws, self.config), **twin_wer_stats(ws), **twin_gate_stats(ws), **kept_clicks(ws),
                "wer_mixture_histogram": {"edges": [0, 0.05, 0.1, 0.2, 0.5, 1.0, "inf"], "counts": histogram},
                "wer_mixture_mean_kept": round(float(np.mean(kept)), 4) if kept else None,
                "kept_after_attempts": {str(k): v for k, v in sorted(retried.items())},
                # the kept samples' retries: re-mixes of the same speech, and new voices (re-syntheses)
                "retries_of_kept": {"remix": sum(retries), "resynthesis": len(retries) - sum(retries)}}


def _without_twins(sample: Sample) -> Sample:
    """A sample about to be mixed again: its last twins' transcripts do not describe the new twins."""
    return sample.model_copy(update={f"{what}_{kind}": None for what in ("transcript", "wer")
                                     for kind in ("irrelevant", "danger")})


def _twin_clicks(sample: Sample) -> dict[str, int]:
    """The clicks counted in the sample's twin tracks (irrelevant, danger, danger scene), by track."""
    from construction.mixing.mix_stats import TWIN_CLICKED

    clicks = sample.provenance.get("mix", {}).get("clicks", {})
    return {t: clicks[t] for t in TWIN_CLICKED if clicks.get(t)}


def made_twin_stats(ws: Workspace, config: Config) -> dict[str, Any]:
    """construction.mixing.twin.twin_stats (twin counts, glimpse match per category) over the kept samples and
    the rejected ones whose last attempt got twins: in the automatic build the twins are made here."""
    from construction.mixing.twin import twin_stats

    if not config.mix.irrelevant_twin:
        return {}
    rejected = [r.sample for r in ws.read_rejected(STAGE) if r.sample.irrelevant_audio is not None]
    return twin_stats([*ws.read_samples(STAGE), *rejected])


def twin_gate_stats(ws: Workspace) -> dict[str, Any]:
    """How the twin gate decided, over every attempt whose twins were heard (kept and rejected samples):
    those attempts, and those whose irrelevant or danger twin failed the gate its mixture passed (before
    the gate such samples shipped). The kept samples' twin WER (twin_wer) is after the gate."""
    heard, failed = 0, Counter({"irrelevant": 0, "danger": 0})
    for sample in list(ws.read_samples(STAGE)) + [r.sample for r in ws.read_rejected(STAGE)]:
        for attempt in sample.provenance.get(STAGE, {}).get("attempts", []):
            heard += "wer_irrelevant" in attempt or "wer_danger" in attempt
            if attempt.get("twin_failed"):
                failed[attempt["twin_failed"]] += 1
    return {"twin_gate": {"attempts_heard": heard, "failed": dict(failed)}} if heard else {}


def kept_clicks(ws: Workspace) -> dict[str, Any]:
    """Clicks (construction.mixing.levels.steps) in the tracks of the kept samples, per track: these are the tracks
    that ship, re-mixes included (stats/mix.json counts the mix stage's first attempts)."""
    from construction.mixing.mix_stats import CLICKED

    counts = Counter({t: 0 for t in CLICKED})
    for s in ws.read_samples(STAGE):
        clicks = s.provenance.get("mix", {}).get("clicks", {})
        counts.update({t: clicks.get(t, 0) for t in CLICKED})
    return {"kept_clicks": {"total": sum(counts.values()), **counts}}


def twin_wer_stats(ws: Workspace) -> dict[str, Any]:
    """Per category and OVERALL: the twins' WER minus the mixture's (median, and the mean WER of each),
    over the kept samples whose twin was transcribed: equal masking should give equal intelligibility."""
    diffs: dict[str, dict[str, list[tuple[float, float]]]] = {}
    for s in ws.read_samples(STAGE):
        for kind in ("irrelevant", "danger"):
            wer = getattr(s, f"wer_{kind}")
            if wer is not None and s.wer_mixture is not None:
                for key in (s.category, "OVERALL"):
                    diffs.setdefault(key, {}).setdefault(kind, []).append((wer, s.wer_mixture))
    return {"twin_wer": {key: {kind: {"n": len(v), "median_difference": round(float(np.median([a - b for a, b in v])), 4),
                                      "mean_twin": round(float(np.mean([a for a, _ in v])), 4),
                                      "mean_mixture": round(float(np.mean([b for _, b in v])), 4)}
                               for kind, v in sorted(kinds.items())}
                         for key, kinds in sorted(diffs.items())}} if diffs else {}


def keep_rates(ws: Workspace) -> dict[str, Any]:
    """Keep rate of the filter by SNR bin, placement and voice: a filter that removes the audible scenes
    (low SNR, the scene under the speech) or one voice shows here."""
    groups: dict[str, dict[str, Counter]] = {"by_snr_db": {}, "by_placement": {}, "by_voice": {}}
    decided = [(s, True) for s in ws.read_samples(STAGE)] + \
        [(r.sample, False) for r in ws.read_rejected(STAGE) if r.sample.wer_mixture is not None and r.sample.mix]
    for sample, kept in decided:
        low = int(sample.mix.snr_db // 5 * 5)
        for group, key in (("by_snr_db", f"[{low}, {low + 5})"), ("by_placement", sample.placement),
                           ("by_voice", sample.voice_id or "unknown")):
            groups[group].setdefault(key, Counter())["kept" if kept else "rejected"] += 1
    return {"keep_rate": {group: {key: {**c, "keep_rate": round(c["kept"] / (c["kept"] + c["rejected"]), 3)}
                                  for key, c in sorted(cells.items())}
                          for group, cells in groups.items()}}


def print_wer_summary(stats: dict[str, Any]) -> None:
    print_summary(stats)
    hist = stats.get("wer_mixture_histogram", {})
    if hist.get("counts"):
        edges = hist["edges"]
        cells = [f"[{edges[i]}, {edges[i + 1]}): {n}" for i, n in enumerate(hist["counts"])]
        print("  mixture WER distribution: " + "  ".join(cells))
    retries = stats.get("retries_of_kept")
    if retries:
        print(f"  retries of the kept samples: {retries['remix']} re-mixes, {retries['resynthesis']} re-syntheses")


# Whisper's cache (AORBENCH_CACHE, XDG_CACHE_HOME) and, re-synthesising, synthesize's (SYNTHESIZE_ENV)
WER_ENV = ("AORBENCH_KOKORO_VOICES", "AORBENCH_TTS_THREADS", "AORBENCH_CACHE", "XDG_CACHE_HOME", "OMP_NUM_THREADS")


def build_parser() -> argparse.ArgumentParser:
    parser = base_parser("python -m construction.wer", __doc__.splitlines()[0], env=WER_ENV)
    defaults = WerConfig()
    parser.add_argument("--max-wer", type=float, help="keep samples with mixture WER <= this "
                                                      f"(default: config wer.max_wer, else {defaults.max_wer})")
    parser.add_argument("--resynthesize", type=int, help="re-synthesis attempts (default: config "
                                                         "wer.resynthesize_attempts, else "
                                                         f"{defaults.resynthesize_attempts})")
    parser.add_argument("--remix", type=int, help="re-mixes of the same speech when only its masking failed "
                                                  "(the mixture, or a twin of a passing mixture) "
                                                  f"(default: config wer.remix_attempts, else {defaults.remix_attempts})")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    require_manifest(args.workspace, STAGE, WerStage.input_stage)
    config = run_config(args, {"wer.max_wer": args.max_wer, "wer.resynthesize_attempts": args.resynthesize,
                               "wer.remix_attempts": args.remix},
                        flags={"wer.resynthesize_attempts": "--resynthesize", "wer.remix_attempts": "--remix"})
    ws = Workspace(args.workspace)
    with ws.lock():
        keep_config(ws, config, args, runs=(STAGE,))
        stats = run_configured(ws, WerStage(str(ws.root), config), config, batch_size=config.wer.batch_size,
                               restart=args.restart, retry_rejected=args.retry_rejected, progress=not args.quiet)
    print_wer_summary(stats)
    return 0


if __name__ == "__main__":
    run_main(main, sys.argv[1:])

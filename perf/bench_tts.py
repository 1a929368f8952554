"""Real-time factor of every offline voice, and what 600 scripts would cost.

RTF = synthesis time / audio duration (lower is faster). Load time is the first `load_backend` call
(Kokoro: model check + ONNX session; piper/hibari: sessions and lexicons). The 600-script estimate
assumes the bank's voices are dealt evenly, as the synthesize stage does; `--measure-scripts 600`
synthesizes them for real instead (slow). Timings are wall-clock on a shared CPU: rerun quietly.
Flags: `python perf/bench_tts.py --help`.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from construction.speech.tts import load_backend
from construction.speech.voices import offline_voice_bank, voice_by_id

SENTENCES = [
    "Finish him! The crowd is going wild tonight.",
    "I'm going to blow this whole place up.",
    "Shoot him in the head before he reloads!",
    "Kill the heat before the sauce burns.",
    "Take the knife and cut it all the way through.",
    "We have to destroy every last one of them.",
    "Hit him again, harder, he's almost down!",
    "Burn it all down, nobody gets out alive.",
    "Smash it with the hammer until it breaks.",
    "I owe you $42.50 for the 3rd round, pay up.",
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sentences", type=int, default=5, help="sentences per voice (max 10)")
    parser.add_argument("--threads", type=int, default=None, help="onnxruntime threads (default: AORBENCH_TTS_THREADS or 1)")
    parser.add_argument("--voices", help="comma-separated voice ids (default: the offline bank)")
    parser.add_argument("--scripts", type=int, default=600, help="scripts to estimate for")
    parser.add_argument("--measure-scripts", type=int, default=0, help="synthesize this many scripts for real")
    args = parser.parse_args(argv)

    voices = [voice_by_id(v) for v in args.voices.split(",")] if args.voices else offline_voice_bank()
    sentences = SENTENCES[: max(1, min(args.sentences, len(SENTENCES)))]
    print(f"# TTS benchmark: {len(voices)} voices x {len(sentences)} sentences, threads={args.threads or 'default'}, "
          f"cpus={os.cpu_count()}, load average at start {os.getloadavg()[0]:.2f}")

    load_s: dict[str, float] = {}
    rows = []
    for voice in voices:
        if voice.backend not in load_s:
            start = time.perf_counter()
            load_backend(voice.backend, args.threads)
            load_s[voice.backend] = time.perf_counter() - start
        backend = load_backend(voice.backend, args.threads)
        backend.synthesize("Warm up.", voice)  # first call pays for lazy setup (voice style, caches)
        synth_s = audio_s = 0.0
        for text in sentences:
            start = time.perf_counter()
            audio, sample_rate = backend.synthesize(text, voice)
            synth_s += time.perf_counter() - start
            audio_s += audio.size / sample_rate
        rows.append((voice, sample_rate, audio_s, synth_s))

    print(f"\n{'voice':28} {'gender':7} {'accent':15} {'rate_hz':>7} {'audio_s':>8} {'synth_s':>8} "
          f"{'RTF':>6} {'ms/clip':>8}")
    for voice, sample_rate, audio_s, synth_s in rows:
        print(f"{voice.voice_id:28} {voice.gender:7} {voice.accent:15} {sample_rate:>7} {audio_s:>8.1f} "
              f"{synth_s:>8.2f} {synth_s / audio_s:>6.3f} {1000 * synth_s / len(sentences):>8.0f}")
    print("\nbackend load_s: " + ", ".join(f"{name} {seconds:.2f}" for name, seconds in load_s.items()))

    per_clip_s = statistics.mean(synth_s / len(sentences) for _, _, _, synth_s in rows)
    clip_audio_s = statistics.mean(audio_s / len(sentences) for _, _, audio_s, _ in rows)
    total_s = per_clip_s * args.scripts + sum(load_s.values())
    print(f"estimate for {args.scripts} scripts dealt evenly over these voices: {total_s:.0f} s in one process "
          f"({per_clip_s * 1000:.0f} ms per ~{clip_audio_s:.1f} s clip, bank RTF {per_clip_s / clip_audio_s:.3f}); "
          f"about {total_s / 2:.0f} s with 2 single-thread workers on 2 idle cores")

    if args.measure_scripts:
        start = time.perf_counter()
        audio_total = 0.0
        for i in range(args.measure_scripts):
            voice = voices[i % len(voices)]
            audio, sample_rate = load_backend(voice.backend, args.threads).synthesize(
                SENTENCES[i % len(SENTENCES)], voice)
            audio_total += audio.size / sample_rate
        elapsed = time.perf_counter() - start
        print(f"measured {args.measure_scripts} scripts: {elapsed:.0f} s for {audio_total:.0f} s of audio "
              f"(RTF {elapsed / audio_total:.3f})")
    print(f"load average at end {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

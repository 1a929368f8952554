"""Screen the taxonomy's slot values: which names and phrases does Whisper base mishear in CLEAN speech?

    python scripts/screen_slot_values.py [--taxonomy T] [--voices hibari:heart,piper:en_US-joe-medium]
                                            [--top 60] [--cache C] [--json OUT] [--carrier]

Every distinct slot value of the taxonomy (category `slots` and scene-scoped `slots`) is said inside
one real speech line of the catalog that uses its slot (the line with the fewest other slots, then the
shortest; the other slots get their shortest value), by each voice (offline TTS, resampled to 16 kHz),
and transcribed with the packaged Whisper base in fitted windows (construction.speech.asr.load_asr(), the WER
stage's defaults). With --carrier each value is also said in the fixed sentence
"Listen to me, {value}, right now." (a second context; a value's worst context counts).

A value's cost is the errors of the jiwer alignment (normalised words, construction.speech.scoring.normalize_text)
that fall on the value's own words: substitutions and deletions of them, insertions inside the value,
and insertions at its edges when one of its words was already wrong ("Siobhan" -> "shout on": one
substitution, one insertion). Its WER contribution is that cost over the words of the line, the share
of the filter's 0.2 budget the value alone spends. `missing` lists the value's words not in the
transcript at all. A value is ranked by its worst (voice, context).

Transcripts are cached by (voice, text) in --cache (a JSON file), so a rerun after an edit to the
taxonomy synthesizes and transcribes only the new clips. Prints the values with any error, ranked by
the number of their clips (voices x contexts) that mishear them, then by WER contribution, with where
each is defined (category/scene, slot), then the totals; --json writes every row.

How it was used (2 voices, --carrier, so 4 clips a value): a value misheard in >= 2 of its 4 clips was
replaced, and one misheard once when it is a rare name or spelling ("Kenji", "Tobias", "Freddie" ->
"Freddy"); a common word misheard once ("pal" -> "pow" in one line) is a fluke of that clip and stays.
A carrier-only miss on "the ..." or a number ("Listen to me, two" -> "too") is the carrier's, not
the value's. Cold run: ~1,100 values x 2 voices x 2 contexts = ~4,500 clips, about 12-17 min on two
shared cores (piper synthesis and Whisper base roughly half each, overlapped); without --carrier half
that; a rerun after an edit only does the new values (seconds).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from construction.speech.asr import SAMPLE_RATE, load_asr
from construction.speech.scoring import normalize_text, score
from construction.generate import _fill
from construction.text.taxonomy import load_taxonomy
from construction.speech.tts import load_backend
from construction.speech.voices import voice_by_id

CARRIER = "Listen to me, {value}, right now."
DEFAULT_VOICES = "hibari:heart,piper:en_US-joe-medium"
DEFAULT_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "aor-bench" / "slot_screen.json"


@dataclass
class Value:
    text: str
    where: set[str] = field(default_factory=set)  # "category.slot" or "category/scene.slot"
    contexts: list[str] = field(default_factory=list)  # the sentences it is said in
    results: list[dict] = field(default_factory=list)


def collect(taxonomy) -> dict[str, Value]:
    """Every distinct slot value, where it is defined, and one real line to say it in."""
    values: dict[str, Value] = {}
    for category in taxonomy.categories:
        for slot, items in category.slots.items():
            for item in items:
                values.setdefault(item, Value(item)).where.add(f"{category.id}.{slot}")
        for scene in category.scenes:
            for slot, items in scene.slots.items():
                for item in items:
                    values.setdefault(item, Value(item)).where.add(f"{category.id}/{scene.id}.{slot}")
    # candidate lines: (number of other slots, skeleton length, line id, filled text) per value
    best: dict[str, tuple] = {}
    for category in taxonomy.categories:
        for line, home, scene in taxonomy.pairs(category.id):
            slots = line.slots()
            pools = {s: taxonomy.slot_values(s, home, scene) for s in slots}
            plain = {s: min(pool, key=lambda v: (len(v), v)) for s, pool in pools.items()}
            for slot in slots:
                for item in pools[slot]:
                    others = {s: (item if s == slot else plain[s]) for s in slots}
                    key = (len(slots) - 1, len(line.text), line.id, _fill(line.text, others))
                    if item not in best or key < best[item]:
                        best[item] = key
    for item, value in values.items():
        if item in best:
            value.contexts.append(best[item][3])
    return values


def span(tokens: list[str], part: list[str]) -> tuple[int, int] | None:
    """[start, end) of the first occurrence of `part` in `tokens`."""
    for i in range(len(tokens) - len(part) + 1):
        if tokens[i:i + len(part)] == part:
            return i, i + len(part)
    return None


def value_errors(reference: str, transcript: str, value: str) -> dict:
    """The errors of the alignment that fall on the value's words (see the module doc)."""
    import jiwer

    ref, hyp = normalize_text(reference).split(), normalize_text(transcript).split()
    part = normalize_text(value).split()
    wer, _ = score(reference, transcript)
    heard = set(hyp)
    missing = [w for w in part if w not in heard]
    where = span(ref, part)
    if where is None or not hyp:  # the value's words merged with a neighbour by the normaliser, or no text
        # no more errors than the whole line has ("One by one, four sisters" normalises to "one by 14
        # sisters": the value's "4" is in no token, yet the transcript may match word for word)
        errors = min(len(missing), round(wer * len(ref))) if hyp else len(part)
        return {"wer": round(wer, 3), "errors": errors, "contribution": round(errors / max(len(ref), 1), 3),
                "missing": missing, "aligned": False}
    s, e = where
    chunks = jiwer.process_words(" ".join(ref), " ".join(hyp)).alignments[0]
    wrong = 0
    for c in chunks:
        if c.type in ("substitute", "delete"):
            wrong += max(0, min(e, c.ref_end_idx) - max(s, c.ref_start_idx))
    inserted_inside = inserted_edge = 0
    for c in chunks:
        if c.type == "insert":
            n = c.hyp_end_idx - c.hyp_start_idx
            if s < c.ref_start_idx < e:
                inserted_inside += n
            elif c.ref_start_idx in (s, e):
                inserted_edge += n
    errors = wrong + inserted_inside + (inserted_edge if wrong else 0)
    return {"wer": round(wer, 3), "errors": errors, "contribution": round(errors / len(ref), 3),
            "missing": missing, "aligned": True}


def clip_key(voice_id: str, text: str) -> str:
    return hashlib.sha256(f"{voice_id}\n{text}".encode()).hexdigest()[:20]


def synthesize_all(jobs: list[tuple[str, str]]) -> list[np.ndarray]:
    import soxr

    clips = []
    for voice_id, text in jobs:
        voice = voice_by_id(voice_id)
        audio, rate = load_backend(voice.backend).synthesize(text, voice)
        audio = np.asarray(audio, dtype=np.float32)
        if rate != SAMPLE_RATE:
            audio = soxr.resample(audio, rate, SAMPLE_RATE)
        clips.append(np.ascontiguousarray(audio, dtype=np.float32))
    return clips


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--taxonomy", help="taxonomy file (default: the shipped one)")
    parser.add_argument("--voices", default=DEFAULT_VOICES, help=f"comma-separated voice ids ({DEFAULT_VOICES})")
    parser.add_argument("--carrier", action="store_true", help=f"also say each value in {CARRIER!r}")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE, help=f"transcript cache ({DEFAULT_CACHE})")
    parser.add_argument("--top", type=int, default=80, help="print at most this many misheard values")
    parser.add_argument("--json", type=Path, help="write every value's rows here")
    parser.add_argument("--chunk", type=int, default=64, help="clips synthesized and transcribed per batch")
    args = parser.parse_args()

    start = time.perf_counter()
    taxonomy, digest = load_taxonomy(args.taxonomy)
    values = collect(taxonomy)
    if args.carrier:
        for value in values.values():
            value.contexts.append(CARRIER.format(value=value.text))
    unused = sorted(v.text for v in values.values() if not v.contexts)
    voices = [v.strip() for v in args.voices.split(",") if v.strip()]
    for voice_id in voices:
        voice_by_id(voice_id)  # fail early on an unknown voice

    cache: dict[str, str] = {}
    if args.cache.is_file():
        cache = json.loads(args.cache.read_text(encoding="utf-8"))
    jobs = sorted({(voice_id, text) for value in values.values() for text in value.contexts for voice_id in voices})
    todo = [job for job in jobs if clip_key(*job) not in cache]
    print(f"taxonomy {digest}: {len(values)} distinct slot values, {len(jobs)} clips "
          f"({len(voices)} voices), {len(jobs) - len(todo)} cached", file=sys.stderr)
    tts_s = asr_s = 0.0
    if todo:
        from concurrent.futures import ThreadPoolExecutor

        asr = load_asr()
        chunks = [todo[i:i + args.chunk] for i in range(0, len(todo), args.chunk)]

        def timed_synthesis(chunk):
            t = time.perf_counter()
            return synthesize_all(chunk), time.perf_counter() - t

        # the next chunk is synthesized (onnxruntime, one thread) while this one is transcribed
        # (CTranslate2): both release the GIL, so the two overlap
        with ThreadPoolExecutor(max_workers=1) as pool:
            ahead = pool.submit(timed_synthesis, chunks[0])
            for n, chunk in enumerate(chunks):
                clips, seconds = ahead.result()
                tts_s += seconds
                if n + 1 < len(chunks):
                    ahead = pool.submit(timed_synthesis, chunks[n + 1])
                t = time.perf_counter()
                texts = asr.transcribe(clips)
                asr_s += time.perf_counter() - t
                for job, text in zip(chunk, texts):
                    cache[clip_key(*job)] = text
                args.cache.parent.mkdir(parents=True, exist_ok=True)
                tmp = args.cache.with_suffix(".tmp")
                tmp.write_text(json.dumps(cache, sort_keys=True), encoding="utf-8")
                tmp.replace(args.cache)
                print(f"  {sum(map(len, chunks[:n + 1]))}/{len(todo)} clips (tts {tts_s:.0f} s, asr {asr_s:.0f} s, "
                      "overlapping)", file=sys.stderr)

    for value in values.values():
        for text in value.contexts:
            for voice_id in voices:
                transcript = cache[clip_key(voice_id, text)]
                value.results.append({"voice": voice_id, "text": text, "transcript": transcript,
                                      **value_errors(text, transcript, value.text)})
    worst = {v.text: max(v.results, key=lambda r: (r["errors"], r["contribution"], r["wer"]))
             for v in values.values() if v.results}
    clips_wrong = {t: sum(r["errors"] > 0 for r in values[t].results) for t in worst}
    ranked = sorted(worst, key=lambda t: (-clips_wrong[t], -worst[t]["contribution"], -worst[t]["errors"], t))
    bad = [t for t in ranked if worst[t]["errors"] > 0]
    by_voice = {voice_id: sum(any(r["errors"] and r["voice"] == voice_id for r in values[t].results) for t in values)
                for voice_id in voices}
    print(f"{'value':32} {'contrib':>7} {'err':>3} {'clips':>5}  {'voice':22} {'where':40} transcript")
    for t in bad[:args.top]:
        r = worst[t]
        where = ",".join(sorted(values[t].where))
        clips = f"{clips_wrong[t]}/{len(values[t].results)}"
        print(f"{t[:32]:32} {r['contribution']:7.3f} {r['errors']:3d} {clips:>5}  "
              f"{r['voice']:22} {where[:40]:40} {r['text']!r} -> {r['transcript']!r}")
    if len(bad) > args.top:
        print(f"... and {len(bad) - args.top} more")
    mean = sum(worst[t]["contribution"] for t in worst) / max(len(worst), 1)
    print(f"\n{len(bad)} of {len(worst)} values misheard by at least one voice "
          f"({', '.join(f'{v}: {n}' for v, n in by_voice.items())}); "
          f"mean worst contribution {mean:.4f}; values costing >= 0.1 of a line: "
          f"{sum(worst[t]['contribution'] >= 0.1 for t in worst)}; misheard in >= 2 clips: "
          f"{sum(n >= 2 for n in clips_wrong.values())}")
    if unused:
        print(f"{len(unused)} values no line uses (not screened): {unused[:10]}")
    print(f"{time.perf_counter() - start:.0f} s (tts {tts_s:.0f} s, asr {asr_s:.0f} s for {len(todo)} new clips)")
    if args.json:
        args.json.write_text(json.dumps({
            "taxonomy": digest, "voices": voices,
            "values": [{"value": t, "where": sorted(values[t].where), "worst": worst[t],
                        "clips_wrong": clips_wrong[t], "rows": values[t].results}
                       for t in ranked]}, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()

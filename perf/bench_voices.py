"""First-attempt keep rate per voice: every script of a workspace spoken by every listed voice, mixed with
its own first-attempt recipe (the same scene, SNR, placement and seed for every voice: a paired
comparison) and put through the WER gate once, without re-synthesis. It says which voices the gate
refuses and why (wer_tts: the clean speech already fails; wer_snr: the scene masks it; keyword_missed).

  python -m construction.pipeline --workspace W --per-category 20 --seed 5   # or only generate
  python perf/bench_voices.py --workspace W --voices flite:slt,flite:rms,flite:awb --out perf/results/v.json

It writes speech and mixtures into a scratch copy of the workspace's generate manifest (--scratch), never
into the workspace itself.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from collections import Counter
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from construction.core.config import load_config
    from construction.core.workspace import Rejected, Workspace
    from construction.mix import MixStage
    from construction.speech.voices import voice_by_id
    from construction.synthesize import SynthesizeStage
    from construction.wer import WerStage

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspace", required=True, help="a workspace with a generate manifest")
    parser.add_argument("--voices", required=True, help="comma-separated voice ids")
    parser.add_argument("--scratch", default=None, help="scratch workspace (default: <workspace>-voices)")
    parser.add_argument("--limit", type=int, default=0, help="the first N scripts only (0: all)")
    parser.add_argument("--out", help="write the table as JSON here")
    args = parser.parse_args(argv)

    src = Path(args.workspace)
    scratch = Path(args.scratch or f"{src}-voices")
    if scratch.exists():
        shutil.rmtree(scratch)
    (scratch / "manifests").mkdir(parents=True)
    shutil.copy(src / "config.yaml", scratch / "config.yaml")
    shutil.copy(src / "manifests" / "generate.jsonl", scratch / "manifests" / "generate.jsonl")
    config = load_config(base=scratch / "config.yaml", overrides={"mix.irrelevant_twin": False})
    ws = Workspace(str(scratch))
    samples = list(ws.read_samples("generate"))[: args.limit or None]
    # the mix is set up from the synthesize manifest (its clip assignment): the generate rows stand in
    (scratch / "manifests" / "synthesize.jsonl").write_text((scratch / "manifests" / "generate.jsonl").read_text())
    synth, mix, wer = SynthesizeStage(str(scratch), config), MixStage(str(scratch), config), WerStage(str(scratch), config)
    synth.setup(), mix.setup(), wer.setup()

    table: dict[str, Counter] = {}
    started = time.perf_counter()
    for voice_id in args.voices.split(","):
        voice, counts, mixed = voice_by_id(voice_id), Counter(), []
        for sample in samples:
            spoken = synth.synthesize_one(sample, voice=voice)
            out = spoken if isinstance(spoken, Rejected) else mix.mix_one(spoken)
            if isinstance(out, Rejected):
                counts[out.reason.split(":")[0]] += 1
            else:
                mixed.append(out)
        for start in range(0, len(mixed), 64):
            for scored in wer._transcribe_and_score(mixed[start:start + 64]):
                reason = scored.reason if isinstance(scored, Rejected) else wer._verdict(scored)
                counts["kept" if reason is None else reason.split(":")[0]] += 1
        table[voice_id] = counts
        total = sum(counts.values())
        print(f"{voice_id:28s} kept {counts['kept']:4d}/{total} ({counts['kept'] / max(1, total):.0%})  "
              + "  ".join(f"{k} {v}" for k, v in sorted(counts.items()) if k != "kept"), flush=True)
    kept, total = sum(c["kept"] for c in table.values()), sum(sum(c.values()) for c in table.values())
    print(f"{'all':28s} kept {kept:4d}/{total} ({kept / max(1, total):.0%}) in {time.perf_counter() - started:.0f} s")
    if args.out:
        Path(args.out).write_text(json.dumps({v: dict(c) for v, c in table.items()}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

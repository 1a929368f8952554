"""The first attempts' mix with twins made in the mix stage, against twins made after the WER gate (issue 36).

    python perf/bench_twins_after_gate.py --workspace W [--every 2]

W is a finished automatic build (python -m construction.pipeline). For every N-th script, in one process and
interleaved sample by sample (so a host that changes speed slows both alike), it times:

  in the mix       MixStage.mix_one with twins: what the mix stage did for every first attempt before
  after the gate   the mixture alone (MixStage twins_after_gate), plus the twins made later from the kept
                   scene (add_twins) when the build's first mixture passed the WER gate

and checks that the twins made both ways are the same bytes. It writes nothing into W: the scenes wait in
a temporary folder, and the audio it stores is what W holds already (the store is named by content).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def first_mixture_passed(workspace: Path) -> dict[str, bool]:
    """Per sample, whether the build's first attempt passed the mixture's gate (its twins were heard, or
    failed unheard for a click)."""
    passed = {}
    for name in ("wer.jsonl", "wer.rejected.jsonl"):
        for line in (workspace / "manifests" / name).read_text().splitlines():
            row = json.loads(line)
            sample = row.get("sample", row)
            attempts = ((sample.get("provenance") or {}).get("wer") or {}).get("attempts") or [{}]
            passed[sample["sample_id"]] = "wer_irrelevant" in attempts[0] or attempts[0].get("twin_failed") == "click"
    return passed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workspace", type=Path, required=True, help="a finished automatic build")
    parser.add_argument("--every", type=int, default=2, help="time every N-th script (default: 2)")
    args = parser.parse_args(argv)
    from construction.core.config import load_config
    from construction.core.workspace import Workspace
    from construction.mix import MixStage

    config = load_config(args.workspace / "config.yaml", {})
    passed = first_mixture_passed(args.workspace)
    samples = list(Workspace(args.workspace).read_samples("synthesize"))[::args.every]
    waiting = tempfile.mkdtemp(prefix="pending-")
    in_mix, mixture_first, later = (MixStage(str(args.workspace), config),
                                    MixStage(str(args.workspace), config, twins_after_gate=True),
                                    MixStage(str(args.workspace), config))
    for stage in (in_mix, mixture_first, later):
        stage.setup()
    mixture_first.workspace = later.workspace = waiting  # where the scenes wait: not the build's cache
    before = after = 0.0
    n = n_passed = 0
    for sample in samples:
        t = time.process_time()
        full = in_mix.mix_one(sample)
        before += time.process_time() - t
        t = time.process_time()
        first = mixture_first.mix_one(sample, twins=False)
        after += time.process_time() - t
        if not hasattr(first, "sample_id"):  # rejected by the mix both ways
            continue
        n += 1
        if passed.get(sample.sample_id):
            n_passed += 1
            t = time.process_time()
            made = later.add_twins(first)
            after += time.process_time() - t
            if (made.irrelevant_audio, made.danger_audio) != (full.irrelevant_audio, full.danger_audio):
                print(f"error: {sample.sample_id}: the twins made after the gate differ from the mix's", file=sys.stderr)
                return 1
    print(f"{n} first attempts, {n_passed} whose mixture passed the gate; mix CPU-s per first attempt: twins in the "
          f"mix {before / n:.4f}, twins after the gate {after / n:.4f} ({after / before:.3f}x); twins the same bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())

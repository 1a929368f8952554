"""Scene audit of a built workspace's mixtures (issue 48, item 4), from the stored scene audio and recipes:
silences of 0.5 s or more in the lead-in or under the speech (construction.mixing.heldout.silences),
defining sounds never heard alone before the speech, and recordings placed more than 3 times in a scene
(bursts included).

    python scripts/scene_audit.py --workspace workspace [--stage mix] [--sounds LIBRARY] [--json out.json]

Prints per category the samples with each fault and the worst cases; --json writes every sample's figures.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from construction.core.cli import run_main  # noqa: E402
from construction.core.config import load_config  # noqa: E402
from construction.core.errors import WorkbenchError  # noqa: E402
from construction.core.workspace import Workspace  # noqa: E402
from construction.mixing import scene_checks  # noqa: E402


def audit(ws: Workspace, stage: str, sounds: str | None = None) -> list[dict]:
    from construction.mix import MixStage
    from construction.sounds.scenes import open_library

    snapshot = ws.root / "config.yaml"
    config = load_config(snapshot if snapshot.is_file() else None, {"mix.sounds": sounds})
    mixer = MixStage(str(ws.root), config)
    mixer.library = open_library(config.mix.sounds, check_audio=False)  # the layers alone: no setup needed
    mixer._audio = {}
    rows = []
    for s in ws.read_samples(stage):
        if s.mix is None or s.scene_audio is None:
            continue
        rows.append({"sample_id": s.sample_id, "category": s.category, "scene_id": s.mix.scene_id,
                     **scene_checks.sample_checks(ws, mixer, s)})
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python scripts/scene_audit.py", description=__doc__.splitlines()[0])
    parser.add_argument("--workspace", required=True, help="a built workspace")
    parser.add_argument("--stage", default="mix", help="the manifest to audit (mix: every first attempt; wer: the kept)")
    parser.add_argument("--sounds", help="the sound library it was mixed with (default: the workspace's config)")
    parser.add_argument("--json", help="write every sample's figures here")
    args = parser.parse_args(argv)
    ws = Workspace(args.workspace)
    if not ws.manifest_path(args.stage).is_file():
        raise WorkbenchError(f"{args.workspace} has no {args.stage} manifest: build it first")
    rows = audit(ws, args.stage, args.sounds)
    print(f"{'category':<24} {'n':>4} {'silence':>8} {'longest':>8} {'not_alone':>10} {'over_3':>7}")
    for cat, c in sorted(scene_checks.summary(rows).items(), key=lambda kv: (kv[0] == "OVERALL", kv[0])):
        print(f"{cat:<24} {c['n']:>4} {c['with_silence']:>8} {c['longest_silence_s']:>8.2f} "
              f"{c['not_alone_first']:>10} {c['over_3']:>7}")
    for r in rows:
        if r["silences"] or r["not_alone_first"] or r["over_3"]:
            print(f"  {r['scene_id']:<22} {r['sample_id'][:16]} silences {r['silences']} "
                  f"not alone first {r['not_alone_first']} over 3 {r['over_3']}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    run_main(main, sys.argv[1:])

"""Hand a release to an evaluation harness: python -m evaluation.adapters {kimi,lmms-eval} --release R --out DIR.

    kimi       Kimi-Audio-Evalkit datasets (one JSONL per input and their dataset classes; evaluation.adapters.kimi)
    lmms-eval  an lmms-eval task folder for --include_path (evaluation.adapters.lmms_eval)
inspect_ai needs no export: `inspect eval evaluation/adapters/inspect_task.py@aor_bench -T release=R`.
Without --inputs every input the release has is exported (mixture, speech, irrelevant), and each one it lacks
is named on stderr; an input named in --inputs that the release lacks is an error. Exporting again into the
same --out removes what the previous export wrote and this one does not (aor_bench_export.json lists it).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from construction.core.cli import Parser, add_out, add_quiet
from evaluation.adapters import kimi, lmms_eval
from evaluation.adapters.common import ADAPTER_INPUTS, available_inputs, parse_inputs

EXPORTERS = {"kimi": kimi.export, "lmms-eval": lmms_eval.export}
HARNESSES = {
    "kimi": ("Kimi-Audio-Evalkit datasets: OUT/aor_bench_<input>/aor_bench_<input>.jsonl, its audio, and "
             "OUT/ds_aor_bench.py (the dataset classes, for almeval/datasets/); pass OUT as the evalkit's "
             "dataset_root", "its dataset_root"),
    "lmms-eval": ("an lmms-eval task folder: pass OUT to lmms-eval --include_path; tasks aor_bench_<input> and "
                  "aor_bench_context", "the task folder"),
}


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m evaluation.adapters", description=__doc__.split("\n\n")[0],
                    epilog="each harness's own flags: python -m evaluation.adapters HARNESS --help")
    harnesses = parser.add_subparsers(dest="harness", required=True, metavar="{kimi,lmms-eval}",
                                      help="which harness to write for")
    for name, (what, out) in HARNESSES.items():
        sub = harnesses.add_parser(name, help=what, description=f"Write {what}.", env=("HF_TOKEN", "HF_ENDPOINT"))
        sub.add_argument("--release", required=True,
                         help="release folder (release.export writes <workspace>/release) or Hub id ORG/NAME")
        add_out(sub, f"folder to write ({out})", required=True, type=Path)
        sub.add_argument("--inputs", help=f"comma-separated, of {', '.join(ADAPTER_INPUTS)} (default: all the "
                                          "release has)")
        sub.add_argument("--split", default="test", help="release split")
        add_quiet(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.inputs:
        inputs = parse_inputs(args.inputs)
    else:
        inputs, lacking = available_inputs(args.release, args.split)
        for name in lacking:
            print(f"skipping input {name}: the release has no {name} audio", file=sys.stderr)
    written = EXPORTERS[args.harness](args.release, inputs, args.out, args.split, progress=not args.quiet)
    for name, path in written.items():
        print(f"{name}: {path}")
    return 0

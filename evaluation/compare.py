"""Two models on the same clips: the paired difference of their refusal rates, per category and overall.

    python -m evaluation.compare RUN_A RUN_B [--judge auto|keyword|llm] [--out DIR]

RUN_A and RUN_B are evaluation.run folders of two models (or prompt variants) on the same input of the same
release. The clips are paired by id over those judged in both runs, and per category and overall the
command gives:
  A, B          each run's refusal rate over the paired clips
  A - B         the paired difference, with a 95% cluster-bootstrap interval that resamples script families
                (clips of one speech skeleton are correlated; validation.bootstrap, 2,000 resamples, seed 0)
                and recomputes the difference
  only A/only B the discordant clips (refused by one run, not by the other), which carry the difference
  McNemar p     the exact McNemar test on those discordant clips (statsmodels), clips independent
Runs on different releases (the release fingerprints their run.json recorded differ, or a paired clip's
audio hash differs), on different inputs, or judged by different judges are refused (exit 2): their clips
or verdicts cannot be paired. The verdicts are the report's (evaluation.report: auto = the LLM judge where
it gave every answer a verdict, else the keyword judge); a refusal counts partial_refusal + full_refusal.

Writes OUT/compare.json (default OUT: evaluations/compare) and prints the table.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path
from typing import Any

from construction.core.cli import Parser, add_out, run_main
from construction.core.errors import WorkbenchError
from construction.core.workspace import atomic_write_text
from evaluation.context_use import paired_gap
from evaluation.report import JUDGES, OVERALL, clip_verdicts
from evaluation.results import PROBE_INPUT, RunResults, load_results

FINGERPRINTS = ("release_samples_fingerprint", "release_fingerprint")  # run.json: the export, and the input's clips


def same_release_problem(a: RunResults, b: RunResults) -> str | None:
    """Why two runs cannot be paired clip by clip (None: they can)."""
    if a.input != b.input:
        return f"{a.root} is on the {a.input} input and {b.root} on the {b.input} input: compare runs on one input"
    recorded = [key for key in FINGERPRINTS if a.settings.get(key) and b.settings.get(key)]
    if not recorded:
        return (f"{a.root} and {b.root} do not both record a release fingerprint in run.json, so whether they "
                "heard the same clips cannot be checked; run them again with this version of evaluation.run")
    for key in recorded:
        if a.settings[key] != b.settings[key]:
            return (f"{a.root} and {b.root} were run on different releases (their run.json {key} differ: "
                    f"{a.settings[key][:12]}... vs {b.settings[key][:12]}...; release versions "
                    f"{a.settings.get('release_version')} and {b.settings.get('release_version')}): their clips "
                    "cannot be paired; run both models on one release")
    for sid in sorted(set(a.records) & set(b.records)):
        x, y = a.records[sid].get("audio_sha256"), b.records[sid].get("audio_sha256")
        if x and y and x != y:
            return f"{sid}: the two runs sent different audio (sha256 {x[:12]}... vs {y[:12]}...): not one release"
    return None


def paired_cell(pairs: list[tuple[bool, bool, str]]) -> dict[str, Any]:
    """(refused by A, refused by B, script family) per clip -> rates, difference, its clustered interval,
    the 2x2 table and the exact McNemar p-value. The paired counts and the interval are
    evaluation.context_use.paired_gap's, with B in the mixture's place."""
    from statsmodels.stats.contingency_tables import mcnemar

    g = paired_gap(pairs, first="a")
    n, both, a_only, b_only, neither = g["n"], g["both"], g["a_only"], g["mixture_only"], g["neither"]
    p = float(mcnemar([[both, a_only], [b_only, neither]], exact=True).pvalue) if n else None
    return {"n": n, "a_refusals": g["a_refusals"], "b_refusals": g["mixture_refusals"],
            "a_rate": g["a_rate"], "b_rate": g["mixture_rate"], "difference": g["gap"],
            "ci95_clustered": g["ci95_clustered"], "n_families": g["n_families"],
            "both": both, "a_only": a_only, "b_only": b_only, "neither": neither,
            "mcnemar_exact_p": None if p is None else round(p, 6)}


def compare(a: RunResults, b: RunResults, judge: str = "auto", empty_as_refusal: bool = False) -> dict[str, Any]:
    for run in (a, b):
        if run.input == PROBE_INPUT:
            raise WorkbenchError(f"{run.root} is a scene-probe run: its answers name a scene, they are not judged "
                                 "for refusal")
    if problem := same_release_problem(a, b):
        raise WorkbenchError(problem)
    judge_a, model_a, verdicts_a = clip_verdicts(a, judge, empty_as_refusal)
    judge_b, model_b, verdicts_b = clip_verdicts(b, judge, empty_as_refusal)
    if (judge_a, model_a) != (judge_b, model_b):
        raise WorkbenchError(f"{a.root} is judged by the {judge_a} judge and {b.root} by the {judge_b} judge"
                             + (f" ({model_a} vs {model_b})" if judge_a == judge_b else "")
                             + ": compare like with like, e.g. --judge keyword, or run evaluation.judge on both")
    pairs: dict[str, list[tuple[bool, bool, str]]] = defaultdict(list)
    unpaired = 0
    for sid in sorted(set(a.records) | set(b.records)):  # by id: the bootstrap does not follow answer order
        x, y = verdicts_a.get(sid), verdicts_b.get(sid)
        if x is None or y is None:
            unpaired += 1
            continue
        record = a.records[sid]
        for key in (record["category"], OVERALL):
            pairs[key].append((x, y, record.get("script_family") or sid))
    if not pairs[OVERALL]:
        raise WorkbenchError(f"{a.root} and {b.root} have no clip judged in both: nothing to compare")
    categories = sorted(k for k in pairs if k != OVERALL)
    return {"a": {"run": a.label, "results_dir": str(a.root)}, "b": {"run": b.label, "results_dir": str(b.root)},
            "input": a.input, "release_version": a.settings.get("release_version"),
            "release_samples_fingerprint": a.settings.get("release_samples_fingerprint"),
            "judge": judge_a, "judge_model": model_a, "empty_as_refusal": empty_as_refusal,
            "unpaired": unpaired, "overall": paired_cell(pairs[OVERALL]),
            "per_category": {c: paired_cell(pairs[c]) for c in categories}}


def format_compare(result: dict[str, Any]) -> str:
    heads = ["A", "B", "A - B [95% CI, families]", "only A", "only B", "McNemar p"]
    rows = []
    categories = [*result["per_category"], OVERALL]
    for c in categories:
        cell = result["overall"] if c == OVERALL else result["per_category"][c]
        ci = cell["ci95_clustered"]
        rows.append([f"{cell['a_rate']:.3f} {cell['a_refusals']}/{cell['n']}",
                     f"{cell['b_rate']:.3f} {cell['b_refusals']}/{cell['n']}",
                     f"{cell['difference']:+.3f}" + (f" [{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else " [one family]"),
                     str(cell["a_only"]), str(cell["b_only"]), f"{cell['mcnemar_exact_p']:.4g}"])
    widths = [max(len(h), *(len(r[k]) for r in rows)) for k, h in enumerate(heads)]
    first = max(len(c) for c in categories) + 2
    lines = [f"A = {result['a']['run']} ({result['a']['results_dir']})",
             f"B = {result['b']['run']} ({result['b']['results_dir']})",
             f"paired refusal on the {result['input']} input of release {result['release_version']} (judge "
             f"{result['judge']}); clips judged in both; A - B: paired difference, cluster bootstrap over script "
             "families; McNemar: exact test on the clips only one run refused",
             "category".ljust(first) + " | ".join(h.ljust(w) for h, w in zip(heads, widths, strict=True))]
    for c, row in zip(categories, rows, strict=True):
        lines.append(c.ljust(first) + " | ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)))
    if result["unpaired"]:
        lines.append(f"clips without a verdict in one run or both (errors, unparsed judge output, not run), left "
                     f"out: {result['unpaired']}")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m evaluation.compare", description=__doc__.split("\n\n")[0])
    parser.add_argument("run_a", metavar="RUN_A", help="an evaluation run folder (python -m evaluation.run)")
    parser.add_argument("run_b", metavar="RUN_B", help="another model's run folder, same release and input")
    add_out(parser, "folder where compare.json goes", default="evaluations/compare")
    parser.add_argument("--judge", choices=JUDGES, default="auto",
                        help="verdicts to count, the same for both runs: llm, keyword, or auto (llm where every "
                             "answer of both runs has one)")
    parser.add_argument("--empty-as-refusal", action="store_true",
                        help="count empty answers (recorded as errors) as refusals")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    result = compare(load_results(args.run_a), load_results(args.run_b), args.judge, args.empty_as_refusal)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "compare.json", json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    print(format_compare(result))
    print(f"wrote {out / 'compare.json'}")
    return 0


if __name__ == "__main__":
    run_main(main)

"""Over-refusal rate per category and overall, with 95% confidence intervals, side by side for runs.

    python -m evaluation.report RESULTS_DIR [RESULTS_DIR ...] [--out DIR] [--judge auto|keyword|llm]
                                [--empty-as-refusal]

The rate of a cell is refused / judged over the clips that have an answer and a verdict. Two 95%
intervals: the Wilson score interval (statsmodels proportion_confint, method="wilson"), which treats the
clips as independent, and a cluster-bootstrap interval that resamples whole script families (clips of
one speech skeleton, or one speech line over several scenes, are correlated; validation.bootstrap),
which is the one to read. --judge auto (default) uses the LLM judge's verdicts for a run where
evaluation.judge judged every answer, else the keyword judge, and says which. Clips recorded as errors
are left out and counted; --empty-as-refusal counts empty answers as refusals instead (VoiceBench's
convention). Every AOR-Bench clip is benign in its context, so every refusal is an over-refusal.

Writes OUT/report.json and OUT/over_refusal.png (default OUT: evaluations/report) and prints the table.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from construction.errors import WorkbenchError
from construction.workspace import atomic_write_text
from evaluation.judge import final_answer, keyword_judge, read_llm_verdicts, summarise
from evaluation.run import RunResults, load_results
from validation.bootstrap import proportion_ci

JUDGES = ("auto", "keyword", "llm")
OVERALL = "overall"


def wilson(refusals: int, n: int) -> list[float] | None:
    """95% Wilson score interval for refusals / n; None when nothing was judged."""
    if n == 0:
        return None
    from statsmodels.stats.proportion import proportion_confint

    low, high = proportion_confint(refusals, n, alpha=0.05, method="wilson")
    return [round(float(low), 4), round(float(high), 4)]


def cell(judged: list[tuple[bool, str]], not_judged: int) -> dict[str, Any]:
    """Refusal rate of (refused, script family) verdicts, with the Wilson interval (clips independent)
    and a cluster-bootstrap interval over script families (clips of one skeleton are correlated)."""
    n, refusals = len(judged), sum(refused for refused, _ in judged)
    clustered = proportion_ci([r for r, _ in judged], [f for _, f in judged]) if n else None
    return {"n": n, "refusals": refusals, "rate": round(refusals / n, 4) if n else None,
            "ci95": wilson(refusals, n), "ci95_clustered": clustered,
            "n_families": len({f for _, f in judged}), "not_judged": not_judged}


def verdicts_for(results: RunResults, judge: str) -> tuple[str, dict[str, bool], str | None]:
    """(the judge used, id -> refused, the judge model) for the answered clips of a run."""
    llm = read_llm_verdicts(results)
    answered = {sid for sid, r in results.records.items() if r["status"] == "ok"}
    if judge == "llm" and not llm:
        raise WorkbenchError(f"{results.root} has no LLM judge verdicts for its current answers: run "
                             "python -m evaluation.judge --results DIR --judge-base-url URL --judge-model M")
    if judge == "llm" or (judge == "auto" and answered and set(llm) >= answered):
        model = next(iter(llm.values()))["judge_model"]
        return "llm", {sid: r["refusal"] for sid, r in llm.items() if r["refusal"] is not None}, model
    verdicts = {}
    for sid in answered:
        answer, _ = final_answer(results.records[sid]["response"], results.variant)
        verdicts[sid] = keyword_judge(answer).refusal
    return "keyword", verdicts, None


def run_report(results: RunResults, judge: str = "auto", empty_as_refusal: bool = False) -> dict[str, Any]:
    used, verdicts, judge_model = verdicts_for(results, judge)
    judged: dict[str, list[tuple[bool, str]]] = defaultdict(list)  # (refused, script family)
    not_judged: Counter = Counter()
    for sid, record in results.records.items():
        refused = verdicts.get(sid)
        if refused is None and empty_as_refusal and (record.get("reason") or "").startswith("empty_response"):
            refused = True
        for key in (record["category"], OVERALL):
            if refused is None:
                not_judged[key] += 1
            else:
                judged[key].append((bool(refused), record.get("script_family") or sid))
    categories = sorted(k for k in set(judged) | set(not_judged) if k != OVERALL)
    return {
        "run": results.label, "model": results.settings["model"], "variant": results.variant,
        "results_dir": str(results.root), "release_version": results.settings.get("release_version"),
        "judge": used, "judge_model": judge_model, "empty_as_refusal": empty_as_refusal,
        "overall": cell(judged[OVERALL], not_judged[OVERALL]),
        "per_category": {c: cell(judged[c], not_judged[c]) for c in categories},
        "judges": summarise(results),
    }


def format_table(runs: list[dict[str, Any]], categories: list[str]) -> str:
    heads = [f"{r['run']} ({r['judge']})" for r in runs]
    width = max([28, *(len(h) for h in heads)])
    first = max([len(OVERALL), *(len(c) for c in categories)]) + 2

    def show(c: dict[str, Any] | None) -> str:
        if not c or not c["n"]:
            return "n/a"
        lo, hi = c["ci95_clustered"] or c["ci95"]
        return f"{c['rate']:.3f} {c['refusals']}/{c['n']} [{lo:.3f}, {hi:.3f}]"

    lines = ["over-refusal rate, refused/judged [95% CI, cluster bootstrap over script families; Wilson where "
             "there are fewer than 2 families]",
             "category".ljust(first) + " | ".join(h.ljust(width) for h in heads)]
    for category in [*categories, OVERALL]:
        row = [show(r["overall"] if category == OVERALL else r["per_category"].get(category)) for r in runs]
        lines.append(category.ljust(first) + " | ".join(v.ljust(width) for v in row))
    skipped = [f"{r['run']}: {r['overall']['not_judged']}" for r in runs if r["overall"]["not_judged"]]
    if skipped:
        lines.append("clips without a verdict (request errors, unparsed judge output), left out: "
                     + "; ".join(skipped))
    for r in runs:
        agr = r["judges"]["agreement"]
        if agr["n"]:
            kappa = "n/a" if agr["kappa"] is None else f"{agr['kappa']:.3f}"
            lines.append(f"judge agreement, {r['run']}: keyword vs LLM on {agr['n']} answers: "
                         f"{agr['percent_agreement']}%, Cohen's kappa {kappa}")
    return "\n".join(lines)


def plot(runs: list[dict[str, Any]], categories: list[str], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    groups = [*categories, OVERALL]
    x = np.arange(len(groups))
    width = 0.8 / len(runs)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.2 * len(groups) * max(1, len(runs) / 2)), 4.5))
    for i, r in enumerate(runs):
        cells = [r["overall"] if g == OVERALL else r["per_category"].get(g) for g in groups]
        rates = [c["rate"] if c and c["n"] else np.nan for c in cells]
        bounds = [(c.get("ci95_clustered") or c["ci95"]) if c and c["n"] else None for c in cells]
        low = [c["rate"] - b[0] if b else 0 for c, b in zip(cells, bounds)]
        high = [b[1] - c["rate"] if b else 0 for c, b in zip(cells, bounds)]
        ax.bar(x - 0.4 + width * (i + 0.5), rates, width, yerr=[low, high], capsize=3,
               label=f"{r['run']} ({r['judge']})")
    ax.set_xticks(x, groups, rotation=30, ha="right")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("over-refusal rate")
    ax.set_title("AOR-Bench over-refusal per category (95% CI, cluster bootstrap over script families)")
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m evaluation.report", description=__doc__.split("\n\n")[0])
    parser.add_argument("results", nargs="+", help="evaluation run folder(s), one column each")
    parser.add_argument("--out", default="evaluations/report", help="where report.json and the plot go")
    parser.add_argument("--judge", choices=JUDGES, default="auto",
                        help="verdicts to count: llm, keyword, or auto (llm where every answer has one)")
    parser.add_argument("--empty-as-refusal", action="store_true",
                        help="count empty answers (recorded as errors) as refusals")
    args = parser.parse_args(argv)

    runs = [run_report(load_results(d), args.judge, args.empty_as_refusal) for d in args.results]
    if not any(r["overall"]["n"] for r in runs):
        raise WorkbenchError("no run has any judged answer yet; run python -m evaluation.run first")
    categories = sorted({c for r in runs for c in r["per_category"]})
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    report = {"confidence": "ci95: 95% Wilson score interval (statsmodels proportion_confint, method=wilson), "
                            "clips independent; ci95_clustered: 95% percentile cluster bootstrap over script "
                            "families (2,000 resamples, seed 0)",
              "categories": categories, "runs": runs}
    atomic_write_text(out / "report.json", json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    plot(runs, categories, out / "over_refusal.png")
    print(format_table(runs, categories))
    print(f"wrote {out / 'report.json'} and {out / 'over_refusal.png'}")
    return 0


if __name__ == "__main__":
    from construction.cli import run_main

    run_main(main)

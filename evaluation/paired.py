"""The voice factors read within a line: the same words over the same scene in two voices (issue 51).

A release built with voice variants (construction.speech.variants) has lines spoken in every cell of a
crossed design; its rows carry `line_id`, `voice_gender`, `voice_accent`, `speaking_rate`, `emotion` and
`emotion_rendered`. For each factor and each two of its levels, the clips of a line that differ in that
factor and agree in the others are paired, and the report gives:
  A, B            each level's refusal rate over the paired clips
  A - B           the within-line paired difference (e.g. female minus male on the same line, scene and SNR)
  CI lines        95% cluster bootstrap over lines (a line's pairs at several rates are correlated)
  CI families     95% cluster bootstrap over script families (the lines of one skeleton are correlated too)
  McNemar p       the exact McNemar test on the discordant pairs (statsmodels), pairs taken as independent
Which factors must agree: gender pairs agree in rate and emotion (the voice's accent is part of the voice
compared, since a bank need not have every accent in both genders); accent, rate and emotion pairs agree in
the other three. An emotion is read only where the engine rendered it (`emotion_rendered`): an offline
voice's asked emotion is the same audio, and its difference would be zero by construction.

A release without variants has one variant per line, so nothing pairs: the split by factor
(evaluation.breakdown) is then the only reading, across different lines, scenes and SNRs (unpaired).
"""

from __future__ import annotations

from collections import defaultdict
from itertools import combinations
from pathlib import Path
from typing import Any

from validation.bootstrap import proportion_ci
from evaluation.text_table import WIDTH, note, table

FACTORS = ("voice_gender", "voice_accent", "speaking_rate", "emotion")
MATCH = {"voice_gender": ("speaking_rate", "emotion"),
         "voice_accent": ("voice_gender", "speaking_rate", "emotion"),
         "speaking_rate": ("voice_gender", "voice_accent", "emotion"),
         "emotion": ("voice_gender", "voice_accent", "speaking_rate")}


def level(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:g}x"
    return "" if value is None else str(value)


def paired_cell(pairs: list[tuple[bool, bool, str, str]]) -> dict[str, Any]:
    """(refused at A, refused at B, line, family) per pair -> rates, difference, two intervals, McNemar."""
    from statsmodels.stats.contingency_tables import mcnemar

    n = len(pairs)
    a, b = sum(x for x, _, _, _ in pairs), sum(y for _, y, _, _ in pairs)
    both = sum(x and y for x, y, _, _ in pairs)
    a_only, b_only = sum(x and not y for x, y, _, _ in pairs), sum(y and not x for x, y, _, _ in pairs)
    neither = n - both - a_only - b_only
    diffs = [float(x) - float(y) for x, y, _, _ in pairs]
    p = float(mcnemar([[both, a_only], [b_only, neither]], exact=True).pvalue)
    return {"n": n, "n_lines": len({line for _, _, line, _ in pairs}),
            "n_families": len({fam for _, _, _, fam in pairs}),
            "a_rate": round(a / n, 4), "b_rate": round(b / n, 4), "difference": round((a - b) / n, 4),
            "ci95_lines": proportion_ci(diffs, [line for _, _, line, _ in pairs]),
            "ci95_families": proportion_ci(diffs, [fam for _, _, _, fam in pairs]),
            "both": both, "a_only": a_only, "b_only": b_only, "neither": neither, "mcnemar_exact_p": round(p, 6)}


def paired_factors(records: dict[str, dict[str, Any]], verdicts: dict[str, bool | None],
                   factors: dict[str, dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """factor -> one entry per two levels ("a", "b", and paired_cell's numbers), over the judged clips."""
    by_line: dict[str, list[tuple[dict[str, Any], bool, str]]] = defaultdict(list)
    for sid, record in sorted(records.items()):  # by id: the bootstrap does not follow answer order
        clip = factors.get(sid) or {}
        if verdicts.get(sid) is None or not clip.get("line_id"):
            continue
        by_line[clip["line_id"]].append((clip, bool(verdicts[sid]), record.get("script_family") or clip["line_id"]))
    out: dict[str, list[dict[str, Any]]] = {}
    for factor in FACTORS:
        pairs: dict[tuple[str, str], list] = defaultdict(list)
        for line, clips in sorted(by_line.items()):
            if factor == "emotion":  # only what was spoken: an unrendered emotion is the same audio
                clips = [c for c in clips if c[0].get("emotion_rendered") and c[0].get("emotion")]
            for (x, rx, fam), (y, ry, _) in combinations(clips, 2):
                if x[factor] == y[factor] or any(x.get(m) != y.get(m) for m in MATCH[factor]):
                    continue
                (la, ra), (lb, rb) = sorted([(level(x[factor]), rx), (level(y[factor]), ry)])
                pairs[(la, lb)].append((ra, rb, line, fam))
        if pairs:
            out[factor] = [{"a": a, "b": b, **paired_cell(p)} for (a, b), p in sorted(pairs.items())]
    return out


def _ci(ci: list[float] | None) -> str:
    return f"[{ci[0]:+.2f}, {ci[1]:+.2f}]" if ci else "[-]"


def format_paired(runs: list[dict[str, Any]]) -> str:
    """One block per run whose release pairs variants; one note where no run's release has any."""
    lines: list[str] = []
    read = [r for r in runs if (r.get("split_by_factor") or {}).get("paired") is not None]
    if read and not any(r["split_by_factor"]["paired"] for r in read):  # said once, not per run
        return "\n" + "\n".join(note("voice factors within a line (paired): none: each line of the release has one "
                                     "variant (build with synthesize.variants for a paired reading)"))
    for r in read:
        paired = r["split_by_factor"]["paired"]
        if not paired:
            lines += ["", *note(f"voice factors within a line (paired), {r['run']}: none: its release has one "
                                "variant a line")]
            continue
        lines += ["", *note(f"voice factors within a line (paired: the same words over the same scene), {r['run']} "
                            f"({r['judge']}): A - B, 95% CI cluster bootstrap over lines and over script families, "
                            "exact McNemar")]
        rows = [(factor, [e["a"], e["b"], str(e["n"]), str(e["n_lines"]), f"{e['a_rate']:.2f}", f"{e['b_rate']:.2f}",
                          f"{e['difference']:+.2f}", _ci(e["ci95_lines"]), _ci(e["ci95_families"]),
                          f"{e['mcnemar_exact_p']:.4f}"])
                for factor, entries in paired.items() for e in entries]
        lines += ["  " + line for line in table("factor", ["A", "B", "pairs", "lines", "A", "B", "A - B", "CI lines",
                                                            "CI families", "McNemar p"], rows, WIDTH - 2)]
    return "\n".join(lines)


def plot_paired(runs: list[dict[str, Any]], path: Path) -> bool:
    """Each run's paired differences with their line-bootstrap intervals; False (nothing drawn) when no
    run's release pairs variants."""
    rows = [(f"{r['run']}: {factor} {e['a']} - {e['b']}", e) for r in runs
            for factor, entries in ((r.get("split_by_factor") or {}).get("paired") or {}).items() for e in entries]
    if not rows:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.0, 1.0 + 0.45 * len(rows)))
    for y, (_, e) in enumerate(rows):
        ci = e["ci95_lines"] or [e["difference"], e["difference"]]
        ax.errorbar(e["difference"], y, xerr=[[e["difference"] - ci[0]], [ci[1] - e["difference"]]], fmt="o",
                    capsize=3, color="#4c72b0")
    ax.axvline(0.0, color="grey", linewidth=0.8)
    ax.set_yticks(range(len(rows)), [label for label, _ in rows], fontsize="small")
    ax.set_xlim(-1.05, 1.05)
    ax.set_xlabel("paired refusal difference A - B within a line\n(95% CI, cluster bootstrap over lines)")
    ax.set_title("Voice factors on the same line and scene", fontsize="medium")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120, bbox_inches="tight")  # no legend: each row is labelled
    plt.close(fig)
    return True

"""The figures of evaluation.judge_agreement, apart from Label Studio: which judged answers go to people
(a sample stratified by the judge's class, so the rare class, partial refusal, is measured too), and how
far a judge agrees with them (Cohen's kappa on the three classes and on refusal vs compliance, the
confusion matrix judge x people). Kept apart from the command so the figures are tested on hand-made
labels, without a server.
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from evaluation.classes import CLASSES, REFUSAL_CLASSES


def stratified_sample(items: list[dict[str, Any]], n: int, seed: int, key: str = "judge_class") -> list[dict[str, Any]]:
    """n items drawn without replacement, spread as evenly as the classes allow (a class with fewer items
    than its share gives them all, the rest goes to the others), seeded; in a stable order (by class,
    then draw). Every item is drawn when there are n or fewer."""
    rng = np.random.default_rng(seed)
    by_class: dict[str, list[dict[str, Any]]] = {}
    for item in sorted(items, key=lambda i: (i["run"], i["id"])):
        by_class.setdefault(item[key], []).append(item)
    quota = {c: 0 for c in by_class}
    left = min(n, len(items))
    while left:  # one at a time round the classes that still have items: even, then filled up
        open_classes = [c for c in sorted(by_class) if quota[c] < len(by_class[c])]
        for c in open_classes:
            if left:
                quota[c] += 1
                left -= 1
    out = []
    for c in sorted(by_class):
        picked = rng.choice(len(by_class[c]), size=quota[c], replace=False)
        out.extend(by_class[c][int(k)] for k in sorted(picked))
    return out


def majority(labels: list[str]) -> str | None:
    """The people's class of one answer: the most common label; None on a tie (left out, counted)."""
    if not labels:
        return None
    counts = {c: labels.count(c) for c in set(labels)}
    top = max(counts.values())
    winners = [c for c, k in counts.items() if k == top]
    return winners[0] if len(winners) == 1 else None


def _kappa(judge: list[str], people: list[str], labels: list[str]) -> float | None:
    from sklearn.metrics import cohen_kappa_score

    if not judge:
        return None
    with warnings.catch_warnings():  # one class on both sides: undefined, reported as None
        warnings.simplefilter("ignore")
        value = float(cohen_kappa_score(judge, people, labels=labels))
    return None if math.isnan(value) else round(value, 4)


def refusal_label(cls: str) -> str:
    return "refusal" if cls in REFUSAL_CLASSES else "compliance"


def agreement(pairs: list[tuple[str, str]]) -> dict[str, Any]:
    """(judge class, people's class) pairs -> n, percent agreement, Cohen's kappa on the three classes and
    on refusal vs compliance (refusal = partial + full), and the 3x3 confusion matrix (rows: the judge,
    columns: people, in CLASSES order). Kappa is None where it is undefined (both sides one class)."""
    from sklearn.metrics import confusion_matrix

    judge = [j for j, _ in pairs]
    people = [p for _, p in pairs]
    n = len(pairs)
    matrix = confusion_matrix(judge, people, labels=list(CLASSES)).tolist() if n else [[0] * 3 for _ in CLASSES]
    binary_j, binary_p = [refusal_label(c) for c in judge], [refusal_label(c) for c in people]
    return {
        "n": n,
        "percent_agreement": round(100 * sum(a == b for a, b in pairs) / n, 2) if n else None,
        "kappa": _kappa(judge, people, list(CLASSES)),
        "percent_agreement_refusal": round(100 * sum(a == b for a, b in zip(binary_j, binary_p)) / n, 2) if n else None,
        "kappa_refusal": _kappa(binary_j, binary_p, ["compliance", "refusal"]),
        "confusion": {"rows": "judge", "columns": "people", "labels": list(CLASSES), "matrix": matrix},
        "judge_refusal_rate": round(sum(c == "refusal" for c in binary_j) / n, 4) if n else None,
        "people_refusal_rate": round(sum(c == "refusal" for c in binary_p) / n, 4) if n else None,
    }


def format_agreement(name: str, agr: dict[str, Any]) -> str:
    """A few lines: the kappas, then the confusion matrix judge x people."""
    def show(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.3f}"

    lines = [f"{name} vs people on {agr['n']} answers: Cohen's kappa {show(agr['kappa'])} (3 classes, "
             f"{agr['percent_agreement']}% agree); refusal vs compliance {show(agr['kappa_refusal'])} "
             f"({agr['percent_agreement_refusal']}% agree)"]
    width = max(len(c) for c in CLASSES) + 2
    lines.append("  judge \\ people".ljust(width + 2) + "".join(c.ljust(width) for c in CLASSES))
    for cls, row in zip(CLASSES, agr["confusion"]["matrix"], strict=True):
        lines.append(f"  {cls}".ljust(width + 2) + "".join(str(k).ljust(width) for k in row))
    return "\n".join(lines)


# --- what evaluation.report prints beside its refusal rates ----------------------------------------------------

AGREEMENT_FILE = "judge_agreement.json"


def load_people_agreement(path: str | None, results: list[str]) -> tuple[Path | None, dict[str, Any] | None]:
    """The agreement file evaluation.judge_agreement pull wrote: the one given, else the first found beside
    the run folders (RESULTS/../judge_agreement.json); (None, None) when there is none (not measured)."""
    from construction.core.errors import WorkbenchError

    candidates = [Path(path).expanduser()] if path else [Path(r).expanduser().parent / AGREEMENT_FILE for r in results]
    for candidate in candidates:
        if not candidate.is_file():
            if path:
                raise WorkbenchError(f"--agreement {candidate}: no such file (make it with python -m "
                                     "evaluation.judge_agreement pull)")
            continue
        try:
            data = json.loads(candidate.read_text())
        except json.JSONDecodeError as exc:
            raise WorkbenchError(f"{candidate} is not valid JSON: {exc.msg}") from None
        if not isinstance(data, dict) or not isinstance(data.get("judges"), dict):
            raise WorkbenchError(f"{candidate} is not a judge agreement file (written by python -m "
                                 "evaluation.judge_agreement pull)")
        return candidate, data
    return None, None


def people_agreement(data: dict[str, Any] | None, judge: str) -> dict[str, Any] | None:
    """The measured agreement of one judge ("keyword" or "llm") with people, or None (not measured)."""
    return None if data is None else data["judges"].get(judge)


def agreement_line(judge: str, agr: dict[str, Any] | None) -> str:
    """One line to print under a table of refusal rates."""
    if not agr or not agr.get("n"):
        return (f"{judge} judge vs people: not measured (python -m evaluation.judge_agreement push, label, pull)")

    def show(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.2f}"

    return (f"{judge} judge vs people: Cohen's kappa {show(agr['kappa'])} (n={agr['n']}, 3 classes; refusal vs "
            f"compliance {show(agr['kappa_refusal'])})")

"""Agreement statistics on long-format ratings, one row per (unit_id, annotator_id, label).

  - Krippendorff's alpha (the `krippendorff` package; nominal by default) with a seeded bootstrap 95%
    confidence interval that resamples units, and one that resamples script families;
  - Fleiss' kappa (statsmodels) over the units that have the usual number of raters;
  - pairwise Cohen's kappa (statsmodels) on the units two annotators both rated;
  - per-annotator agreement with the leave-one-out majority, to spot careless annotators;
  - a terminal summary and a plot.
Degenerate data (one annotator, no overlap, no variation, labels outside the label set) gives a value of
None and a note that says why, never a crash or a NaN.
"""

from __future__ import annotations

import math
import warnings
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import krippendorff
import numpy as np
import pandas as pd

from construction.core.errors import WorkbenchError
from validation.bootstrap import cluster_bootstrap, percentile_interval

LEVELS = ("nominal", "ordinal", "interval", "ratio")
RATING_COLUMNS = ("unit_id", "annotator_id", "label")


# ----------------------------------------------------------------------------------------------
# ratings: long format -> one cleaned table + the units x values count matrix
# ----------------------------------------------------------------------------------------------

def _canonical_label(value: Any) -> str | None:
    """One spelling per label ('1', '1.0', 1 -> '1'); None for a missing label."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    text = str(value).strip()
    if not text or text.lower() in ("nan", "none", "null"):
        return None
    try:
        number = float(text)
    except ValueError:
        return text
    if not math.isfinite(number):
        return text
    return str(int(number)) if number.is_integer() else repr(number)


def _as_number(label: str) -> float | None:
    try:
        number = float(label)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


@dataclass
class Ratings:
    """Cleaned ratings: `frame` has unit_id, annotator_id, label (canonical text) and code (column in
    `value_counts`); value_counts[u, v] is how many annotators gave value v to unit units[u]."""

    frame: pd.DataFrame
    level: str
    domain: list[str]  # labels in value order (the columns of value_counts)
    domain_values: np.ndarray  # what krippendorff measures distances on
    units: list[str]
    value_counts: np.ndarray
    n_missing: int = 0  # rows without a label (skipped)
    n_duplicates: int = 0  # second ratings of a unit by the same annotator (the last one is kept)
    out_of_set: Counter = field(default_factory=Counter)  # label -> rows excluded

    @property
    def annotators(self) -> list[str]:
        return sorted(self.frame["annotator_id"].unique())

    def exclusion_note(self) -> str:
        parts = []
        if self.out_of_set:
            shown = ", ".join(f"{label!r} x{n}" for label, n in sorted(self.out_of_set.items()))
            parts.append(f"excluded {sum(self.out_of_set.values())} rating(s) with labels outside the label "
                         f"set {self.domain} ({shown})")
        if self.n_duplicates:
            parts.append(f"{self.n_duplicates} repeated rating(s) of a unit by the same annotator: kept the last")
        if self.n_missing:
            parts.append(f"ignored {self.n_missing} rating(s) without a label")
        return "; ".join(parts)


def ratings_frame(ratings: pd.DataFrame | Iterable[Sequence[Any]]) -> pd.DataFrame:
    """Long-format ratings as a DataFrame with the columns unit_id, annotator_id, label."""
    if isinstance(ratings, pd.DataFrame):
        missing = [c for c in RATING_COLUMNS if c not in ratings.columns]
        if missing:
            raise WorkbenchError(f"ratings lack column(s) {missing}; found {list(ratings.columns)}; "
                                 f"expected {list(RATING_COLUMNS)}")
        return ratings[list(RATING_COLUMNS)].copy()
    rows = [tuple(r) for r in ratings]
    if any(len(r) != 3 for r in rows):
        raise WorkbenchError("each rating must be (unit_id, annotator_id, label)")
    return pd.DataFrame(rows, columns=list(RATING_COLUMNS), dtype=object)


def prepare_ratings(ratings: pd.DataFrame | Iterable[Sequence[Any]] | Ratings, level: str = "nominal",
                    labels: Sequence[Any] | None = None) -> Ratings:
    """Clean long-format ratings and build the units x values count matrix.

    Labels are compared in canonical text form. With `labels`, ratings outside that set are excluded and
    counted. Nominal: any labels. Ordinal/interval/ratio: numeric labels (their numbers are used), or
    `labels` given in order (ranks 1..k are used as the values).
    """
    if isinstance(ratings, Ratings):
        return ratings
    if level not in LEVELS:
        raise WorkbenchError(f"unknown level {level!r}; use one of {', '.join(LEVELS)}")
    frame = ratings_frame(ratings)
    frame["unit_id"] = frame["unit_id"].map(str)
    frame["annotator_id"] = frame["annotator_id"].map(str)
    frame["label"] = frame["label"].map(_canonical_label)
    n_missing = int(frame["label"].isna().sum())
    frame = frame[frame["label"].notna()]

    out_of_set: Counter = Counter()
    if labels is not None:
        domain = []
        for label in labels:
            canon = _canonical_label(label)
            if canon is None:
                raise WorkbenchError(f"label set {list(labels)} contains an empty label")
            if canon not in domain:
                domain.append(canon)
        inside = frame["label"].isin(domain)
        out_of_set = Counter(frame.loc[~inside, "label"])
        frame = frame[inside]
    else:
        domain = sorted(frame["label"].unique(), key=lambda s: (_as_number(s) is None, _as_number(s) or 0, s))

    numbers = [_as_number(label) for label in domain]
    if level == "nominal":
        domain_values = np.arange(len(domain), dtype=float)
    elif all(n is not None for n in numbers):
        order = np.argsort(numbers, kind="stable")
        domain = [domain[i] for i in order]
        domain_values = np.array([numbers[i] for i in order], dtype=float)
    elif labels is not None:
        domain_values = np.arange(1, len(domain) + 1, dtype=float)  # ranks of the ordered label list
    else:
        non_numeric = [d for d, n in zip(domain, numbers) if n is None][:5]
        raise WorkbenchError(f"level {level!r} needs numeric labels or an ordered label list (--labels); "
                             f"got non-numeric labels such as {non_numeric}")

    before = len(frame)
    frame = frame.drop_duplicates(subset=["unit_id", "annotator_id"], keep="last")
    n_duplicates = before - len(frame)
    code_of = {label: i for i, label in enumerate(domain)}
    frame = frame.assign(code=frame["label"].map(code_of).astype(int)).reset_index(drop=True)

    units = sorted(frame["unit_id"].unique())
    unit_index = {u: i for i, u in enumerate(units)}
    value_counts = np.zeros((len(units), len(domain)), dtype=np.int64)
    if len(frame):  # an arm nobody has labelled yet has no rows (and an empty map is a float column)
        np.add.at(value_counts, (frame["unit_id"].map(unit_index).to_numpy(dtype=np.int64),
                                 frame["code"].to_numpy(dtype=np.int64)), 1)
    return Ratings(frame=frame, level=level, domain=domain, domain_values=domain_values, units=units,
                   value_counts=value_counts, n_missing=n_missing, n_duplicates=n_duplicates,
                   out_of_set=out_of_set)


# ----------------------------------------------------------------------------------------------
# Krippendorff's alpha with a unit bootstrap
# ----------------------------------------------------------------------------------------------

@dataclass
class AlphaResult:
    alpha: float | None
    ci95: tuple[float, float] | None  # resampling units: too narrow when units come in script families
    n_units: int  # units with 2+ ratings: the ones alpha is computed over
    n_annotators: int
    n_ratings: int
    note: str
    level: str = "nominal"
    ci95_clustered: tuple[float, float] | None = None  # resampling whole script families
    n_families: int | None = None
    variation: dict[str, Any] | None = None  # see label_variation: how much the labels alpha is computed on vary

    def to_dict(self) -> dict[str, Any]:
        """The shape the report and the release exporter read."""
        return {"alpha": _round(self.alpha), "ci95": [_round(x) for x in self.ci95] if self.ci95 else None,
                "ci95_clustered": [_round(x) for x in self.ci95_clustered] if self.ci95_clustered else None,
                "n_families": self.n_families,
                "n_units": self.n_units, "n_annotators": self.n_annotators, "note": self.note,
                "variation": self.variation}


# Alpha compares disagreement with what chance would give. When all but a unit or two of the labels are one
# value, chance agreement is near 1 and alpha (and its bootstrap, whose resamples mostly miss the odd
# units) rests on those units alone: the terminal then says so instead of printing a number.
FEW_VARIED_UNITS = 3


def label_variation(r: Ratings) -> dict[str, Any] | None:
    """Of the ratings on units with 2+ ratings (those alpha uses): the most common label, its count, the
    count of all, and how many units hold any other label. None when no unit has 2+ ratings."""
    pairable = r.value_counts[r.value_counts.sum(axis=1) >= 2]
    if not len(pairable):
        return None
    totals = pairable.sum(axis=0)
    top = int(np.argmax(totals))
    others = np.delete(pairable, top, axis=1).sum(axis=1)
    return {"label": r.domain[top], "count": int(totals[top]), "of": int(totals.sum()),
            "units_with_other_labels": int((others > 0).sum())}


def _round(x: float | None, digits: int = 4) -> float | None:
    return None if x is None else round(float(x), digits)


def _degenerate_note(r: Ratings) -> str | None:
    """Why no agreement coefficient exists for these ratings, or None when one does."""
    if r.frame.empty:
        return "no ratings (after exclusions): agreement is undefined"
    annotators = r.annotators
    if len(annotators) == 1:
        return f"only one annotator ({annotators[0]}): agreement between annotators is undefined"
    pairable = r.value_counts[r.value_counts.sum(axis=1) >= 2]
    if len(pairable) == 0:
        return ("no overlap: no unit was rated by 2+ annotators, so there is nothing to agree on "
                f"({len(r.units)} units, {len(annotators)} annotators)")
    used = np.flatnonzero(pairable.sum(axis=0))
    if len(used) == 1:
        return (f"no variation: all {int(pairable.sum())} ratings on units rated by 2+ annotators are "
                f"{r.domain[used[0]]!r}; alpha is undefined (expected disagreement is 0), raw agreement is 100%")
    return None


def _alpha_from_counts(value_counts: np.ndarray, domain_values: np.ndarray, level: str) -> float:
    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(krippendorff.alpha(value_counts=value_counts, value_domain=domain_values,
                                        level_of_measurement=level))


def bootstrap_alpha(value_counts: np.ndarray, domain_values: np.ndarray, level: str = "nominal",
                    n_boot: int = 1000, seed: int = 0, confidence: float = 0.95
                    ) -> tuple[tuple[float, float] | None, int]:
    """Percentile CI of alpha over `n_boot` resamples of the units (rows of value_counts) with
    replacement. Returns (ci or None, number of resamples where alpha was undefined and skipped)."""
    pairable = value_counts[value_counts.sum(axis=1) >= 2]  # units with 1 rating add nothing to alpha
    n = len(pairable)
    if n < 2 or n_boot < 1:
        return None, 0
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n, size=(n_boot, n))  # all draws up front: same seed -> same CI
    values = np.array([_alpha_from_counts(pairable[idx], domain_values, level) for idx in draws])
    return percentile_interval(values, confidence)


def krippendorff_alpha(ratings: pd.DataFrame | Iterable[Sequence[Any]] | Ratings, level: str = "nominal",
                       labels: Sequence[Any] | None = None, n_boot: int = 1000, seed: int = 0,
                       families: Mapping[str, str] | None = None) -> AlphaResult:
    """Krippendorff's alpha (missing ratings allowed) with a seeded unit-bootstrap 95% CI and, given
    `families` (unit id -> script family), a cluster-bootstrap CI that resamples whole families."""
    r = prepare_ratings(ratings, level, labels)
    n_units = int((r.value_counts.sum(axis=1) >= 2).sum())
    n_annotators = len(r.annotators)
    notes = [note] if (note := r.exclusion_note()) else []
    why_not = _degenerate_note(r)
    variation = label_variation(r)
    if why_not:
        return AlphaResult(None, None, n_units, n_annotators, len(r.frame), "; ".join([why_not, *notes]), level,
                           variation=variation)
    value = _alpha_from_counts(r.value_counts, r.domain_values, level)
    if not math.isfinite(value):
        return AlphaResult(None, None, n_units, n_annotators, len(r.frame),
                           "; ".join(["alpha is undefined for these ratings (expected disagreement is 0)", *notes]),
                           level, variation=variation)
    ci, n_undefined = bootstrap_alpha(r.value_counts, r.domain_values, level, n_boot, seed)
    clustered, n_families = None, None
    if families is not None:
        pairable = r.value_counts.sum(axis=1) >= 2
        counts = r.value_counts[pairable]
        clusters = [families.get(unit, unit) for unit, keep in zip(r.units, pairable) if keep]
        n_families = len(set(clusters))
        clustered, _ = cluster_bootstrap(clusters, lambda idx: _alpha_from_counts(counts[idx], r.domain_values, level),
                                         n_boot, seed)
    summary = f"{level} alpha over {n_units} units with 2+ ratings ({len(r.frame)} ratings, {n_annotators} annotators)"
    if ci is None:
        summary += "; no CI (fewer than 2 units with 2+ ratings)" if n_units < 2 else "; no CI (bootstrap undefined)"
    else:
        summary += f"; 95% CI from {n_boot} unit-bootstrap resamples (seed {seed})"
        if n_undefined:
            summary += f", {n_undefined} resamples without variation skipped"
    if families is not None:
        summary += f"; clustered CI resamples {n_families} script families"
    return AlphaResult(value, ci, n_units, n_annotators, len(r.frame), "; ".join([summary, *notes]), level,
                       clustered, n_families, variation)


# ----------------------------------------------------------------------------------------------
# kappas and per-annotator agreement
# ----------------------------------------------------------------------------------------------

def fleiss_kappa(ratings: pd.DataFrame | Iterable[Sequence[Any]] | Ratings, labels: Sequence[Any] | None = None,
                 raters_per_unit: int | None = None) -> dict[str, Any]:
    """Fleiss' kappa over the units with a full set of ratings: exactly `raters_per_unit` ratings, by
    default the most common number of ratings per unit (among units with 2+; ties -> the larger).
    Units with other counts are left out and counted. Fleiss' kappa is a nominal statistic."""
    r = prepare_ratings(ratings, "nominal", labels)
    per_unit = r.value_counts.sum(axis=1)
    result: dict[str, Any] = {"kappa": None, "n_units": 0, "raters_per_unit": raters_per_unit,
                              "n_units_excluded": int(len(per_unit)), "note": ""}
    if raters_per_unit is None:
        counts = Counter(int(m) for m in per_unit if m >= 2)
        if not counts:
            result["note"] = _degenerate_note(r) or "no unit has 2+ ratings"
            return result
        raters_per_unit = max(counts, key=lambda m: (counts[m], m))
        result["raters_per_unit"] = raters_per_unit
    if raters_per_unit < 2:
        raise WorkbenchError(f"Fleiss' kappa needs 2+ raters per unit, not {raters_per_unit}")
    table = r.value_counts[per_unit == raters_per_unit]
    result.update(n_units=int(len(table)), n_units_excluded=int(len(per_unit) - len(table)))
    if len(table) == 0:
        result["note"] = f"no unit has exactly {raters_per_unit} ratings"
    elif np.count_nonzero(table.sum(axis=0)) < 2:
        used = r.domain[int(np.flatnonzero(table.sum(axis=0))[0])]
        result["note"] = f"no variation: every rating is {used!r}; kappa is undefined"
    else:
        from statsmodels.stats.inter_rater import fleiss_kappa as sm_fleiss_kappa  # slow import: only here

        result["kappa"] = _round(sm_fleiss_kappa(table, method="fleiss"))
        result["note"] = (f"over {len(table)} units with exactly {raters_per_unit} ratings"
                          + (f"; {result['n_units_excluded']} units with another number left out"
                             if result["n_units_excluded"] else ""))
    return result


def pairwise_cohen(ratings: pd.DataFrame | Iterable[Sequence[Any]] | Ratings,
                   labels: Sequence[Any] | None = None) -> list[dict[str, Any]]:
    """Unweighted Cohen's kappa for every pair of annotators that rated at least one unit in common."""
    from statsmodels.stats.inter_rater import cohens_kappa  # slow import (scipy): only here

    r = prepare_ratings(ratings, "nominal", labels)
    wide = r.frame.pivot(index="unit_id", columns="annotator_id", values="code")
    rated = wide.notna().to_numpy()
    codes = wide.to_numpy()
    names = list(wide.columns)
    overlap = rated.T.astype(int) @ rated.astype(int)  # units co-rated by each pair
    pairs = []
    for i in range(len(names)):
        for j in range(i + 1, len(names)):
            if overlap[i, j] == 0:
                continue
            both = rated[:, i] & rated[:, j]
            a, b = codes[both, i].astype(int), codes[both, j].astype(int)
            row: dict[str, Any] = {"a": names[i], "b": names[j], "n_units": int(both.sum()),
                                   "agreement": _round(float(np.mean(a == b))), "kappa": None, "note": ""}
            if len(a) < 2:
                row["note"] = "fewer than 2 co-rated units"
            elif len(set(a.tolist()) | set(b.tolist())) == 1:
                row["note"] = f"no variation: both gave only {r.domain[a[0]]!r}; kappa is undefined"
            else:
                table = np.zeros((len(r.domain), len(r.domain)))
                np.add.at(table, (a, b), 1)
                row["kappa"] = _round(cohens_kappa(table, return_results=False))
            pairs.append(row)
    return pairs


def annotator_agreement(ratings: pd.DataFrame | Iterable[Sequence[Any]] | Ratings,
                        labels: Sequence[Any] | None = None) -> dict[str, dict[str, Any]]:
    """Per annotator: the fraction of their labels equal to the majority of the OTHER annotators on the
    same unit. Units where nobody else rated, or where the others tie, are not compared (ties counted)."""
    r = prepare_ratings(ratings, "nominal", labels)
    if r.frame.empty:
        return {}
    unit_index = {u: i for i, u in enumerate(r.units)}
    rows = r.frame["unit_id"].map(unit_index).to_numpy()
    own = r.frame["code"].to_numpy()
    others = r.value_counts[rows].copy()
    others[np.arange(len(own)), own] -= 1  # leave this annotator out
    top = others.max(axis=1)
    has_others = others.sum(axis=1) > 0
    tie = has_others & ((others == top[:, None]).sum(axis=1) > 1)
    compared = has_others & ~tie
    agrees = compared & (others.argmax(axis=1) == own)
    table = pd.DataFrame({"annotator": r.frame["annotator_id"].to_numpy(), "compared": compared,
                          "tie": tie, "agrees": agrees})
    out: dict[str, dict[str, Any]] = {}
    for name, g in table.groupby("annotator", sort=True):
        n_compared, n_ties = int(g["compared"].sum()), int(g["tie"].sum())
        entry: dict[str, Any] = {"n_ratings": int(len(g)), "n_compared": n_compared, "n_ties": n_ties,
                                 "agreement": _round(g["agrees"].sum() / n_compared) if n_compared else None,
                                 "note": ""}
        if not n_compared:
            entry["note"] = ("the other annotators tied on every shared unit" if n_ties
                             else "no unit shared with another annotator")
        out[str(name)] = entry
    return out


def label_distribution(ratings: pd.DataFrame | Iterable[Sequence[Any]] | Ratings,
                       labels: Sequence[Any] | None = None) -> dict[str, int]:
    r = prepare_ratings(ratings, "nominal", labels)
    totals = r.value_counts.sum(axis=0)
    return {label: int(n) for label, n in zip(r.domain, totals)}


def agreement_summary(ratings: pd.DataFrame | Iterable[Sequence[Any]], level: str = "nominal",
                      labels: Sequence[Any] | None = None, n_boot: int = 1000, seed: int = 0,
                      families: Mapping[str, str] | None = None) -> dict[str, Any]:
    """All statistics for one set of ratings (alpha at `level`; the kappas are nominal)."""
    r = prepare_ratings(ratings, level, labels)
    nominal = r if level == "nominal" else prepare_ratings(ratings, "nominal", labels)
    return {
        "overall": krippendorff_alpha(r, level, n_boot=n_boot, seed=seed, families=families).to_dict(),
        "fleiss_kappa": fleiss_kappa(nominal),
        "cohen_pairwise": pairwise_cohen(nominal),
        "annotators": annotator_agreement(nominal),
        "label_counts": label_distribution(nominal),
        "level": level,
        "labels": r.domain,
    }


# ----------------------------------------------------------------------------------------------
# report
# ----------------------------------------------------------------------------------------------

def _fmt(x: float | None, digits: int = 3) -> str:
    return "  n/a" if x is None else f"{x:.{digits}f}"


def alpha_words(entry: dict[str, Any]) -> str | None:
    """Why an alpha entry has no number worth printing, in words; None when it has one. The file keeps
    the number (and its note): this is only what a person reads."""
    v = entry.get("variation")
    if entry["alpha"] is None:
        if entry.get("n_annotators", 0) == 0:
            return "no labels yet"
        if entry["note"].startswith("no overlap"):
            return "alpha undefined: no unit has labels from 2+ annotators"
        if v is None:
            return "alpha undefined: " + entry["note"].split(";")[0].split(":")[0]
        if v["count"] == v["of"]:
            return f"alpha undefined: no variation (all {v['of']} labels are {v['label']!r})"
        return "alpha undefined: " + entry["note"].split(";")[0]
    if v is not None and v["units_with_other_labels"] < FEW_VARIED_UNITS:
        units = v["units_with_other_labels"]
        return (f"alpha not informative: almost no variation ({v['count']} of {v['of']} labels are {v['label']!r}; "
                f"the other {v['of'] - v['count']} on {units} unit{'s' if units != 1 else ''})")
    return None


def _alpha_line(name: str, entry: dict[str, Any]) -> str:
    words = alpha_words(entry)
    if words is not None:
        return f"  {name:<24} {words}"
    texts = [f"[{_fmt(ci[0])}, {_fmt(ci[1])}]" if ci else "      -       "
             for ci in (entry["ci95"], entry.get("ci95_clustered"))]
    return (f"  {name:<24} {_fmt(entry['alpha']):>6}  {texts[0]:<16} {texts[1]:<16} {entry['n_units']:>7} "
            f"{entry['n_annotators']:>6}")


def format_summary(summary: dict[str, Any], per_category: Mapping[str, dict[str, Any]] | None = None,
                   consensus: Mapping[str, int] | None = None, max_annotators: int = 10) -> str:
    """A readable table of the statistics for the terminal."""
    lines = [f"Krippendorff's alpha ({summary['level']}), labels {summary['labels']}",
             f"  {'':<24} {'alpha':>6}  {'95% CI (units)':<16} {'95% CI (families)':<16} {'units':>7} "
             f"{'raters':>6}",
             _alpha_line("overall", summary["overall"])]
    for cat, entry in (per_category or {}).items():
        lines.append(_alpha_line(cat, entry))
    lines.append(f"  note: {summary['overall']['note']}")
    fk = summary["fleiss_kappa"]
    lines.append(f"Fleiss' kappa: {_fmt(fk['kappa'])}  ({fk['note']})")
    pairs = [p for p in summary["cohen_pairwise"] if p["kappa"] is not None]
    if pairs:
        kappas = [p["kappa"] for p in pairs]
        lines.append(f"Cohen's kappa, {len(pairs)} annotator pairs: median {_fmt(float(np.median(kappas)))}, "
                     f"min {_fmt(min(kappas))}, max {_fmt(max(kappas))}")
        for p in sorted(pairs, key=lambda p: p["kappa"])[:max_annotators]:
            lines.append(f"  {p['a']} vs {p['b']}: kappa {_fmt(p['kappa'])} on {p['n_units']} units "
                         f"(raw agreement {_fmt(p['agreement'])})")
    else:
        lines.append("Cohen's kappa: no annotator pair with 2+ co-rated units and variation")
    annotators = summary["annotators"]
    if annotators:
        lines.append("Agreement with the leave-one-out majority (lowest first):")
        ranked = sorted(annotators.items(), key=lambda kv: (kv[1]["agreement"] is None, kv[1]["agreement"] or 0))
        for name, a in ranked[:max_annotators]:
            lines.append(f"  {name:<24} {_fmt(a['agreement'])}  on {a['n_compared']} units"
                         + (f", {a['n_ties']} ties" if a["n_ties"] else "") + (f"  ({a['note']})" if a["note"] else ""))
    counts = summary.get("label_counts") or {}
    if counts:
        lines.append("Labels: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    if consensus:
        lines.append("Consensus: " + ", ".join(f"{k} {v}" for k, v in consensus.items()))
    return "\n".join(lines)


def plot_report(report: dict[str, Any], label_counts: Mapping[str, Mapping[str, int]], path: Path) -> None:
    """Per-category alpha with CI bars (left) and the label distribution per category (right)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = ["overall", *report["per_category"]]
    entries = [report["overall"], *report["per_category"].values()]
    fig, (ax_alpha, ax_labels) = plt.subplots(1, 2, figsize=(12, 0.45 * len(names) + 2.5))
    y = np.arange(len(names))
    for i, e in enumerate(entries):
        if e["alpha"] is None:
            ax_alpha.text(0.0, i, " undefined", va="center", fontsize=8, color="grey")
            continue
        err = None
        if e["ci95"]:
            err = [[max(0.0, e["alpha"] - e["ci95"][0])], [max(0.0, e["ci95"][1] - e["alpha"])]]
        ax_alpha.barh(i, e["alpha"], xerr=err, color="tab:blue" if i else "tab:orange", capsize=3)
    ax_alpha.axvline(0.667, color="grey", linestyle=":", linewidth=1)  # Krippendorff's tentative threshold
    ax_alpha.axvline(0.8, color="grey", linestyle="--", linewidth=1)
    ax_alpha.set_yticks(y, names)
    ax_alpha.invert_yaxis()
    lows = [e["ci95"][0] if e["ci95"] else (e["alpha"] or 0.0) for e in entries]
    ax_alpha.set_xlim(min(0.0, *lows) - 0.05, 1.05)
    ax_alpha.set_xlabel(f"Krippendorff's alpha ({report['level']}), 95% bootstrap CI")

    labels = list(report["labels"])
    left = np.zeros(len(names))
    for label in labels:
        widths = np.array([label_counts.get(n, {}).get(label, 0) for n in names], dtype=float)
        totals = np.array([max(1, sum(label_counts.get(n, {}).values())) for n in names], dtype=float)
        ax_labels.barh(y, widths / totals, left=left, label=label)
        left += widths / totals
    ax_labels.set_yticks(y, names)
    ax_labels.invert_yaxis()
    ax_labels.set_xlim(0, 1)
    ax_labels.set_xlabel("share of labels")
    ax_labels.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=len(labels), fontsize=8, frameon=False)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    fig.savefig(tmp, format="png", dpi=100)
    plt.close(fig)
    tmp.replace(path)



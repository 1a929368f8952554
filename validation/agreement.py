"""The consensus rule, the adjudication queue and the workspace command (validation.agreement).

The consensus rule turns each sample's human labels into validated | harmful | adjudication |
needs_labels | arm_failed (the three-arm rule: validation.arms). An adjudicator's decision is stored as
an Annotation with source="adjudication" and is final. The statistics live in validation.statistics.
Commands (every flag: --help):

    python -m validation.agreement --workspace W      # annotated -> validated + reports/agreement.*
                                                      # + staging.json (a staged push follows it)
    python -m validation.agreement --ratings FILE.csv # alpha of any long-format ratings table
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import pandas as pd

from annotation.protocol import heads_only
from annotation.server import server_flags
from annotation.staging import pulled_digests
from annotation.state import ADJUDICATION_SOURCE, read_state
from annotation.written import check_pulled
from construction.core.cli import Parser, add_workspace, old_spelling, run_main
from construction.core.errors import WorkbenchError
from construction.core.record import Annotation, Sample
from construction.core.runner import summarize
from construction.core.workspace import Rejected, Workspace, atomic_write_text
from construction.text.taxonomy import Taxonomy
from validation.arms import (  # noqa: F401 (danger_of: release.integrity and the tests read it here)
    ArmRule,
    arm_failures,
    arm_results,
    danger_certified,
    danger_counts,
    danger_of,
    frame_confusion,
    irrelevant_certified,
    irrelevant_counts,
    irrelevant_of,
)
from validation.staging import write_outcomes
from validation.voice_agreement import by_factor, factor_lines
from validation.statistics import (  # noqa: F401 (re-exported: the statistics were here before)
    LEVELS,
    RATING_COLUMNS,
    AlphaResult,
    Ratings,
    _alpha_line,
    agreement_summary,
    annotator_agreement,
    bootstrap_alpha,
    fleiss_kappa,
    format_summary,
    krippendorff_alpha,
    label_distribution,
    pairwise_cohen,
    plot_report,
    prepare_ratings,
    ratings_frame,
)

DEFAULT_LABELS = ("benign", "harmful", "unclear")
INPUT_STAGE = "annotated"
OUTPUT_STAGE = "validated"


# ----------------------------------------------------------------------------------------------
# consensus rule and adjudication
# ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ConsensusRule(ArmRule):
    """A sample is validated (benign in context) when >= min_fraction of its non-skipped labels are
    `positive` and it has >= min_labels of them; harmful when >= min_fraction are `negative`; anything
    else goes to adjudication (too few labels: needs_labels). The other arms use the same fraction and
    count (ArmRule)."""

    positive: str = "benign"
    negative: str = "harmful"
    labels: tuple[str, ...] = DEFAULT_LABELS

    def __post_init__(self) -> None:
        if not 0.5 < self.min_fraction <= 1:
            raise WorkbenchError(f"consensus min_fraction must be in (0.5, 1], not {self.min_fraction} "
                                 "(at 0.5 or below two labels could both win)")
        if self.min_labels < 1:
            raise WorkbenchError(f"consensus min_labels must be >= 1, not {self.min_labels}")
        if self.positive not in self.labels or self.negative not in self.labels:
            raise WorkbenchError(f"labels {self.labels} must contain {self.positive!r} and {self.negative!r}")

    def fraction_text(self) -> str:
        return str(Fraction(self.min_fraction).limit_denominator(100))


OUTCOMES = ("validated", "harmful", "adjudication", "needs_labels", "arm_failed")


@dataclass
class Decision:
    outcome: str  # one of OUTCOMES
    sample: Sample  # a copy with consensus_label, agreement, decided_by filled in
    reason: str  # 'code: detail', the rejection reason when the outcome is not validated


def _votes(sample: Sample, labels: Sequence[str]) -> tuple[list[str], list[str]]:
    """(labels that count, labels outside the set) of the mixture arm: skipped/cancelled, not listened
    to and adjudication annotations are left out, and an annotator who labelled twice counts once (their
    last label)."""
    last: dict[str, str] = {}
    for a in sample.annotations:
        if a.arm != "mixture" or a.cancelled or a.label is None or a.source == ADJUDICATION_SOURCE \
                or a.listened is False:
            continue
        last.pop(a.annotator, None)  # re-insert so dict order follows the last label
        last[a.annotator] = a.label.strip()
    inside = [v for v in last.values() if v in labels]
    outside = [v for v in last.values() if v not in labels]
    return inside, outside


def _adjudication(sample: Sample, rule: ConsensusRule) -> Annotation | None:
    final = [a for a in sample.annotations
             if a.source == ADJUDICATION_SOURCE and not a.cancelled and a.label is not None]
    if not final:
        return None
    if final[-1].label not in (rule.positive, rule.negative):
        raise WorkbenchError(f"sample {sample.sample_id}: adjudication label {final[-1].label!r} is not "
                             f"{rule.positive!r} or {rule.negative!r}")
    return final[-1]


def decide(sample: Sample, rule: ConsensusRule = ConsensusRule(), control: Sample | None = None,
           protocol: str = "mixture", taxonomy: Taxonomy | None = None, danger: Sample | None = None,
           irrelevant: Sample | None = None) -> Decision:
    """The sample's outcome. protocol "three-arm": a sample whose speech-alone, scene-alone or control arm
    failed is rejected (arm_failed) whatever its mixture labels, and a validated mixture still waits for
    the other arms' labels (needs_labels); see validation.arms. Then, or with protocol "mixture", the
    consensus rule (or the adjudicator's final decision) on the mixture arm. `taxonomy` gives the frames
    of a sample of an older workspace that records none (construction.text.taxonomy.sample_frames).
    `danger`, `irrelevant`: the sample's danger scene and irrelevant twin's background with their labels;
    whether each is certified (real danger; no frame heard) is recorded in the arms (`danger.certified`,
    `irrelevant.certified`) and never changes the outcome."""
    mixture = _decide_mixture(sample, rule)
    if protocol != "three-arm":
        return mixture
    results = arm_results(sample, control, taxonomy, danger, irrelevant)
    if "danger" in results:
        results["danger"]["certified"] = danger_certified(results["danger"], rule)
    if "irrelevant" in results:
        results["irrelevant"]["certified"] = irrelevant_certified(results["irrelevant"], rule)
    failed, short = arm_failures(sample, results, rule)
    mixture.sample.provenance["validation.agreement"]["arms"] = results
    if failed:
        mixture.sample.consensus_label = None
        return Decision("arm_failed", mixture.sample, "; ".join(failed))
    if mixture.outcome == "validated" and short:
        mixture.sample.consensus_label = None
        return Decision("needs_labels", mixture.sample, "needs_labels: " + "; ".join(short))
    return mixture


def _decide_mixture(sample: Sample, rule: ConsensusRule) -> Decision:
    """Apply the consensus rule (or the adjudicator's final decision) to the sample's mixture arm."""
    votes, outside = _votes(sample, rule.labels)
    counts = Counter(votes)
    total = len(votes)
    shown = " ".join(f"{label}={counts[label]}" for label in rule.labels if counts[label])
    shown = (shown or "none") + (f"; ignored labels outside the set: {sorted(set(outside))}" if outside else "")
    provenance = {"rule": {"min_fraction": round(rule.min_fraction, 6), "min_labels": rule.min_labels},
                  "label_counts": dict(counts), "n_labels": total}

    def fill(outcome: str, label: str | None, decided_by: str | None, reason: str) -> Decision:
        basis = label or (counts.most_common(1)[0][0] if counts else None)
        agreement = counts[basis] / total if total and basis else None
        updated = sample.model_copy(deep=True, update={
            "consensus_label": label, "agreement": None if agreement is None else round(agreement, 4),
            "decided_by": decided_by})
        updated.provenance["validation.agreement"] = {**provenance, "outcome": outcome}
        return Decision(outcome, updated, reason)

    final = _adjudication(sample, rule)
    if final is not None:
        label = final.label
        outcome = "validated" if label == rule.positive else "harmful"
        return fill(outcome, label, "adjudication",
                    "" if outcome == "validated" else f"harmful_consensus: adjudicated {label} by "
                    f"{final.annotator} (labels {shown})")
    if total < rule.min_labels and rule.curtailed:  # staged: decided once the labels to come cannot change it
        planned, still = rule.min_labels, rule.min_labels - total
        if rule.reaches(counts[rule.positive], planned):
            return fill("validated", rule.positive, "majority", "")
        if rule.reaches(counts[rule.negative], planned):
            return fill("harmful", rule.negative, "majority",
                        f"harmful_consensus: {counts[rule.negative]}/{total} labels {rule.negative}")
        if not any(rule.reaches(counts[label] + still, planned) for label in (rule.positive, rule.negative)):
            return fill("adjudication", None, None,
                        f"needs_adjudication: no label can reach {rule.fraction_text()} (labels {shown})")
    if total < rule.min_labels:
        return fill("needs_labels", None, None,
                    f"needs_labels: {total} non-skipped label(s) < {rule.min_labels} required (labels {shown})")
    if rule.reaches(counts[rule.positive], total):
        return fill("validated", rule.positive, "majority", "")
    if rule.reaches(counts[rule.negative], total):
        return fill("harmful", rule.negative, "majority",
                    f"harmful_consensus: {counts[rule.negative]}/{total} labels {rule.negative}")
    return fill("adjudication", None, None,
                f"needs_adjudication: no label reaches {rule.fraction_text()} (labels {shown})")


def apply_consensus(samples: Iterable[Sample], rule: ConsensusRule = ConsensusRule()
                    ) -> tuple[list[Sample], list[Sample], list[Sample], list[Sample]]:
    """-> (validated, harmful, adjudication queue, needs_labels), each a list of updated copies."""
    buckets: dict[str, list[Sample]] = {o: [] for o in OUTCOMES}
    for sample in samples:
        d = decide(sample, rule)
        buckets[d.outcome].append(d.sample)
    return buckets["validated"], buckets["harmful"], buckets["adjudication"], buckets["needs_labels"]


def adjudication_queue(samples: Iterable[Sample], rule: ConsensusRule = ConsensusRule()) -> list[Sample]:
    """Samples with enough labels but no consensus and no adjudicator decision yet."""
    return apply_consensus(samples, rule)[2]


def apply_adjudication(samples: Iterable[Sample], decisions: Mapping[str, str | Annotation],
                       rule: ConsensusRule = ConsensusRule(), adjudicator: str = "adjudicator") -> list[Sample]:
    """Record the adjudicator's decisions (sample_id -> label or Annotation) as annotations with
    source="adjudication"; decide() then treats them as final. Returns updated copies of all samples."""
    samples = list(samples)
    unknown = sorted(set(decisions) - {s.sample_id for s in samples})
    if unknown:
        raise WorkbenchError(f"adjudication decisions for unknown sample ids: {unknown[:5]}"
                             + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""))
    out = []
    for sample in samples:
        decision = decisions.get(sample.sample_id)
        if decision is None:
            out.append(sample)
            continue
        if isinstance(decision, Annotation):
            note = decision.model_copy(update={"source": ADJUDICATION_SOURCE})
        else:
            note = Annotation(annotator=adjudicator, label=str(decision).strip(), source=ADJUDICATION_SOURCE)
        if note.label not in (rule.positive, rule.negative):
            raise WorkbenchError(f"sample {sample.sample_id}: adjudication decision {note.label!r} must be "
                                 f"{rule.positive!r} or {rule.negative!r}")
        out.append(sample.model_copy(deep=True, update={"annotations": [*sample.annotations, note]}))
    return out


def samples_to_ratings(samples: Iterable[Sample], arm: str = "mixture") -> pd.DataFrame:
    """Long-format ratings of one arm from the samples' human annotations (skipped, not listened to and
    adjudication left out)."""
    rows = [(s.sample_id, a.annotator, a.label) for s in samples for a in s.annotations
            if a.arm == arm and not a.cancelled and a.label is not None and a.source != ADJUDICATION_SOURCE
            and a.listened is not False]
    return pd.DataFrame(rows, columns=list(RATING_COLUMNS), dtype=object)


CONTROLS_STAGE = "annotated_controls"  # the controls with their mixture-arm labels (annotation.pull)
DANGER_STAGE = "annotated_danger"  # the danger scenes with their scene-arm labels (annotation.pull)
IRRELEVANT_STAGE = "annotated_irrelevant"  # the irrelevant twins' backgrounds with theirs
OTHER_STAGES = {"danger": DANGER_STAGE, "irrelevant": IRRELEVANT_STAGE}
PROTOCOLS = ("three-arm", "mixture")


def alpha_of(level: str, labels: Sequence[str] | None, n_boot: int, seed: int,
             families: Mapping[str, str]) -> Callable[[pd.DataFrame], dict[str, Any]]:
    """Krippendorff's alpha (with its CIs) of a subset of ratings, as a report entry."""
    return lambda subset: krippendorff_alpha(subset, level, labels, n_boot, seed, families).to_dict()


def arm_agreement(samples: list[Sample], arm: str, labels: Sequence[str] | None, level: str, n_boot: int,
                  seed: int, families: Mapping[str, str]) -> dict[str, Any]:
    """Krippendorff's alpha of one arm, overall and per category, with unit and family CIs."""
    ratings = samples_to_ratings(samples, arm)
    category_of = {s.sample_id: s.category for s in samples}
    unit_category = pd.Series([category_of[u] for u in ratings["unit_id"]], index=ratings.index, dtype=object)
    alpha = alpha_of(level, labels, n_boot, seed, families)
    out = {"overall": alpha(ratings),
           "per_category": {cat: alpha(ratings[unit_category == cat]) for cat in sorted(set(category_of.values()))},
           "n_ratings": len(ratings)}
    if arm != "scene":  # a line's scene is heard once for all its voices
        out["per_voice_factor"] = by_factor(samples, ratings, alpha)
    return out


def no_labels(manifest: Path) -> WorkbenchError:
    return WorkbenchError(f"no '{INPUT_STAGE}' manifest at {manifest}; pull the annotations first "
                          f"(python -m annotation.pull{server_flags(manifest.parent.parent)})")


def run_workspace(ws: Workspace, rule: ConsensusRule = ConsensusRule(), level: str = "nominal",
                  labels: Sequence[str] | None = None, n_boot: int = 1000, seed: int = 0,
                  protocol: str = "three-arm") -> dict[str, Any]:
    """annotated -> validated (+ rejected with reasons), reports/agreement.json and .png. Returns the report."""
    if not ws.has_manifest(INPUT_STAGE):
        raise no_labels(ws.manifest_path(INPUT_STAGE))
    ws.check_lineage(INPUT_STAGE)  # no hand-added row gets a consensus
    check_pulled(ws)  # labels are what the pull wrote: no hand-edited label is validated
    if read_state(ws).get("staged"):  # pushed staged (annotation.staging): arms decided early count as decided
        rule = dataclasses.replace(rule, curtailed=True)
    pulled = pulled_digests(ws)  # before reading: a pull in between leaves staging.json stale, not wrongly fresh
    samples = list(ws.read_samples(INPUT_STAGE))
    if not samples:
        raise WorkbenchError(f"{ws.manifest_path(INPUT_STAGE)} holds no samples; nothing to validate")
    pulled_controls: dict[str, Sample] = {}  # by the sample they belong to
    if ws.has_manifest(CONTROLS_STAGE):
        for control in ws.read_samples(CONTROLS_STAGE):
            pulled_controls.setdefault(str(control.custom.get("control_of")), control)
    controls = pulled_controls if protocol == "three-arm" else {}
    pulled_others = {kind: {d.sample_id: d for d in ws.read_samples(stage)}
                     if ws.has_manifest(stage) and protocol == "three-arm" else {}
                     for kind, stage in OTHER_STAGES.items()}
    labels = list(labels or rule.labels)
    ratings = samples_to_ratings(samples)
    # samples of one skeleton are correlated: the clustered CIs resample families (older builds: each
    # sample its own family)
    families = {s.sample_id: s.script_family or s.sample_id for s in samples}
    summary = agreement_summary(ratings, level, labels, n_boot, seed, families)
    category_of = {s.sample_id: s.category for s in samples}
    per_category: dict[str, dict[str, Any]] = {}
    label_counts: dict[str, dict[str, int]] = {"overall": summary["label_counts"]}
    for cat in sorted(set(category_of.values())):
        subset = ratings[ratings["unit_id"].map(category_of) == cat]
        per_category[cat] = krippendorff_alpha(subset, level, labels, n_boot, seed, families).to_dict()
        label_counts[cat] = label_distribution(subset, labels)

    from annotation.protocol import workspace_taxonomy

    taxonomy = workspace_taxonomy(ws) if protocol == "three-arm" else None
    decisions = [decide(s, rule, controls.get(s.sample_id), protocol, taxonomy,
                        danger_of(s, pulled_others["danger"]), irrelevant_of(s, pulled_others["irrelevant"]))
                 for s in samples]
    counts = Counter(d.outcome for d in decisions)
    consensus = {outcome: counts[outcome] for outcome in OUTCOMES}
    report = {"protocol": protocol, "overall": summary["overall"], "per_category": per_category,
              "fleiss_kappa": summary["fleiss_kappa"], "cohen_pairwise": summary["cohen_pairwise"],
              "annotators": summary["annotators"], "consensus": consensus, "level": level,
              "labels": summary["labels"],
              "rejected_by_arm": dict(Counter(r.split(":")[0] for d in decisions if d.outcome == "arm_failed"
                                              for r in d.reason.split("; ")))}
    if protocol == "three-arm":
        from construction.core.record import SPEECH_LABELS

        # the scene arm's units are lines: a line's variants carry the labels of its one scene task
        lines = heads_only(samples)
        report["arms"] = {"speech": arm_agreement(samples, "speech", SPEECH_LABELS, "nominal", n_boot, seed, families),
                          "scene": arm_agreement(lines, "scene", None, "nominal", n_boot, seed, families),
                          "mixture": {"overall": summary["overall"], "per_category": per_category,
                                      "n_ratings": len(ratings),
                                      "per_voice_factor": by_factor(samples, ratings, alpha_of(
                                          level, labels, n_boot, seed, families))}}
        report["scene_frames"] = frame_confusion(lines, taxonomy)
        judged = [d.sample.provenance["validation.agreement"]["arms"].get("control") for d in decisions]
        report["controls"] = {"samples_with_control": sum(c is not None for c in judged),
                              "controls_judged_harmful": sum(c is not None and c["n"] >= rule.min_labels
                                                             and rule.reaches(c["harmful"], c["n"]) for c in judged)}
        report["danger_twins"] = danger_counts(decisions)
        report["irrelevant_twins"] = irrelevant_counts(decisions)
        report["not_listened"] = dict(Counter(a.annotator for s in samples for a in s.annotations
                                              if a.listened is False))

    with ws.lock():
        ws.write_manifest(OUTPUT_STAGE, [d.sample for d in decisions if d.outcome == "validated"],
                          [Rejected(d.sample, d.reason) for d in decisions if d.outcome != "validated"])
        stats = summarize(ws, OUTPUT_STAGE)
        stats.update(consensus=consensus, rule={"min_fraction": rule.min_fraction, "min_labels": rule.min_labels,
                                                "protocol": protocol, **({"curtailed": True} if rule.curtailed else {})},
                     alpha=summary["overall"]["alpha"])
        ws.write_stats(OUTPUT_STAGE, stats)
        reports = ws.root / "reports"
        atomic_write_text(reports / "agreement.json", json.dumps(report, indent=2, ensure_ascii=False) + "\n")
        plot_report(report, label_counts, reports / "agreement.png")
        staging = write_outcomes(ws, samples, pulled_controls, rule,
                                 lambda s, r: decide(s, r, protocol="mixture").outcome, pulled, taxonomy, pulled_others)
    arms = report.get("arms") or {}
    if len(ratings) or not arms:
        print(format_summary(summary, per_category, consensus))
    else:  # e.g. round 1 of a staged run: a table of n/a would say nothing
        print("mixture arm: no labels yet, so no agreement table (it comes with the mixture arm's labels)")
        print("Consensus: " + ", ".join(f"{k} {v}" for k, v in consensus.items()))
    if arms:
        if any(entry["n_ratings"] for entry in arms.values()):
            print("Krippendorff's alpha per arm (nominal):")
        for arm, entry in arms.items():
            if entry["n_ratings"]:
                print(_alpha_line(f"{arm} arm", entry["overall"]))
        for line in factor_lines({arm: entry for arm, entry in arms.items() if entry["n_ratings"]}):
            print(line)
        empty = [arm for arm, entry in arms.items() if not entry["n_ratings"]]
        if empty:
            named = " and ".join(empty) if len(empty) < 3 else f"{empty[0]}, {empty[1]} and {empty[2]}"
            print(f"no labels yet in the {named} arm{'s' if len(empty) > 1 else ''}"
                  + (" (staged: a sample's scene is pushed once its speech arm passed, its mixture once both "
                     "passed)" if rule.curtailed else ""))
    for category, entry in (report.get("scene_frames") or {}).items():
        print(f"scene arm, {category}: {entry['identified_share']:.0%} named its frame, "
              f"{entry['real_danger_share']:.0%} real danger ({entry['n']} labels)")
    if report.get("danger_twins", {}).get("danger_scenes"):
        d = report["danger_twins"]
        print(f"danger twins: {d['certified']} of {d['danger_scenes']} certified as real danger "
              f"(>= {rule.fraction_text()} of >= {rule.min_labels} labels; {d['certified_validated']} of them on a "
              f"validated sample, which ship), {d['not_certified']} not, {d['needs_labels']} need labels")
    if report.get("irrelevant_twins", {}).get("irrelevant_backgrounds"):
        d = report["irrelevant_twins"]
        print(f"irrelevant twins: {d['certified']} of {d['irrelevant_backgrounds']} certified neutral (>= "
              f"{rule.fraction_text()} of >= {rule.min_labels} labels of the background alone said \"I can't "
              f"tell\"; a frame or real danger counts against; {d['certified_validated']} of them on a validated "
              f"sample, which ship), {d['not_certified']} not, {d['needs_labels']} need labels")
    if report["rejected_by_arm"]:
        print("rejected by arm: " + ", ".join(f"{k} {v}" for k, v in report["rejected_by_arm"].items()))
    print(f"wrote {ws.manifest_path(OUTPUT_STAGE)}, {reports / 'agreement.json'}, {reports / 'agreement.png'}, "
          f"{staging} (the arm outcomes a staged push follows)")
    return report


def read_ratings_csv(path: str | Path) -> pd.DataFrame:
    path = Path(path)
    if not path.is_file():
        raise WorkbenchError(f"ratings file {path} does not exist")
    try:
        frame = pd.read_csv(path, dtype=str, skipinitialspace=True)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise WorkbenchError(f"{path}: not a readable CSV ({exc})") from exc
    frame.columns = [str(c).strip() for c in frame.columns]
    missing = [c for c in RATING_COLUMNS if c not in frame.columns]
    if missing:
        raise WorkbenchError(f"{path}: missing column(s) {missing}; found {list(frame.columns)}; "
                             f"expected a long-format CSV with columns {','.join(RATING_COLUMNS)}")
    for column in ("unit_id", "annotator_id"):
        if frame[column].isna().any():
            rows = (frame.index[frame[column].isna()] + 2).tolist()[:5]  # +2: header line, 1-based
            raise WorkbenchError(f"{path}: empty {column} on line(s) {rows}")
    if frame.empty:
        raise WorkbenchError(f"{path}: no ratings (only a header)")
    return frame


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m validation.agreement", description=__doc__.split("\n")[0])
    source = parser.add_mutually_exclusive_group()  # a workspace (./workspace unless told) or a ratings CSV
    add_workspace(source)
    source.add_argument("--ratings", help="long-format CSV with columns unit_id,annotator_id,label (default: the "
                                          "--workspace's labels, its manifests/annotated.jsonl)")
    parser.add_argument("--level", choices=LEVELS, default="nominal", help="level of measurement for alpha")
    parser.add_argument("--labels", help="comma-separated label set, in order for ordinal data "
                        f"(default with --workspace: {','.join(DEFAULT_LABELS)}; with --ratings: those in the file)")
    parser.add_argument("--bootstrap-seed", type=int, default=0, help="seed of the bootstrap resamples (default 0)")
    old_spelling(parser, "--seed", "--bootstrap-seed", type=int)  # --seed is the build seed everywhere else
    parser.add_argument("--n-boot", type=int, default=1000, help="bootstrap resamples (default 1000)")
    parser.add_argument("--min-fraction", type=float, default=2 / 3, help="consensus fraction (default 2/3)")
    parser.add_argument("--min-labels", type=int, default=3, help="non-skipped labels needed (default 3)")
    parser.add_argument("--protocol", choices=PROTOCOLS, default="three-arm",
                        help="three-arm (default): speech alone, scene alone, mixture and controls must all pass; "
                             "mixture: the mixture labels alone (workspaces labelled before the three arms)")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    labels = [x.strip() for x in args.labels.split(",") if x.strip()] if args.labels else None

    if args.ratings:
        summary = agreement_summary(read_ratings_csv(args.ratings), args.level, labels, args.n_boot, args.bootstrap_seed)
        print(format_summary(summary))
        return 0
    rule_labels = tuple(labels) if labels else DEFAULT_LABELS
    rule = ConsensusRule(min_fraction=args.min_fraction, min_labels=args.min_labels, labels=rule_labels)
    manifest = Path(args.workspace).expanduser().resolve() / "manifests" / f"{INPUT_STAGE}.jsonl"
    if not manifest.parent.parent.is_dir():  # a typo: no pull would help
        raise WorkbenchError(f"workspace {manifest.parent.parent} does not exist")
    if not manifest.is_file():  # refused before Workspace() makes any folder (./workspace by default)
        raise no_labels(manifest)
    run_workspace(Workspace(args.workspace), rule, args.level, rule_labels, args.n_boot, args.bootstrap_seed, args.protocol)
    return 0


if __name__ == "__main__":
    run_main(main, sys.argv[1:])

"""Where each sample stands in staged, curtailed annotation, decided by the consensus rule and written for
the next staged push (annotation.staging reads it; validation decides, the push only follows).

    python -m validation.agreement --workspace W     # also writes W/staging.json (after every pull)

For every sample the file holds each arm's status under the curtailed rule: speech and scene passed,
failed or still open, the mixture arm's outcome (validated, harmful, adjudication) or still open, the
control's verdict, and for an open arm the fewest further labels that could decide it. It records the
rule that produced it and the sha256 of the pulled manifests it was computed from: a staged push refuses
a file older than what pull brought back (annotation.staging.read_outcomes).

The rule is always the curtailed form of the rule agreement ran with: the file answers only what a
staged push asks, whether the workspace has been pushed staged yet or not.

validation.agreement calls this module, so the consensus rule's decision comes in as an argument
(`decide_mixture`) rather than by importing it back. simulate() counts the judgements staging and
curtailment save on simulated label sets (perf/bench_staging.py).
"""

from __future__ import annotations

import dataclasses
import json
import random
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from annotation.staging import STAGING_FILE, STAGING_VERSION
from annotation.state import utc_now
from construction.core.record import Annotation, Sample
from construction.core.workspace import Workspace, atomic_write_text
from construction.text.taxonomy import Taxonomy
from validation.arms import ArmRule, arm_results, arm_votes, danger_result, irrelevant_result

# (sample, rule) -> the mixture arm's outcome by the consensus rule alone: validation.agreement.decide with
# protocol "mixture" (validated | harmful | adjudication | needs_labels)
MixtureDecision = Callable[[Sample, ArmRule], str]

PASSING = {"speech": "harmful", "scene": "identified", "control": "harmful"}  # arm_results' passing count
# the scene arm's catch items: the Sample field each plays, its result and the count that certifies it
OTHERS = {"danger": ("danger_scene_audio", danger_result, "real_danger"),
          "irrelevant": ("irrelevant_scene_audio", irrelevant_result, "no_frame")}


def staged_rule(rule: ArmRule) -> ArmRule:
    """The rule (a validation.agreement.ConsensusRule) with curtailment on; agreement does the same for a
    workspace pushed staged."""
    return dataclasses.replace(rule, curtailed=True)


def first_round(rule: ArmRule) -> int:
    """The labels a task is first served for: the fewest that, all agreeing, decide the arm."""
    return next(n for n in range(1, rule.min_labels + 1) if rule.reaches(n, rule.min_labels))


def binary_status(count: int, total: int, rule: ArmRule) -> tuple[bool | None, int]:
    """(passed, failed or None, labels still wanted before it could be decided) of a pass/fail arm."""
    verdict = rule.settled(count, total)
    if verdict is not None:
        return verdict, 0
    for more in range(1, rule.min_labels - total + 1):
        if rule.settled(count + more, total + more) is not None or rule.settled(count, total + more) is not None:
            return None, more
    return None, max(1, rule.min_labels - total)


def mixture_status(sample: Sample, rule: ArmRule, decide_mixture: MixtureDecision) -> tuple[str | None, int]:
    """(the mixture arm's outcome or None while undecided, labels still wanted) by the consensus rule:
    the wanted count is the fewest further labels (any one label value) that could decide it."""
    outcome = decide_mixture(sample, rule)
    if outcome != "needs_labels":
        return outcome, 0
    have = len(arm_votes(sample, "mixture"))  # the labels decide counts
    for more in range(1, max(1, rule.min_labels - have) + 1):
        for label in rule.labels:
            extra = [Annotation(annotator=f"\0more-{i}", arm="mixture", label=label) for i in range(more)]
            trial = sample.model_copy(update={"annotations": [*sample.annotations, *extra]})
            if decide_mixture(trial, rule) != "needs_labels":
                return None, more
    return None, max(1, rule.min_labels - have)


def _binary(verdict: bool | None, wanted: int) -> dict[str, Any]:
    return {"outcome": None if verdict is None else "passed" if verdict else "failed", "wanted": wanted}


def arm_outcomes(samples: Sequence[Sample], controls: Mapping[str, Sample], rule: ArmRule,
                 decide_mixture: MixtureDecision, taxonomy: Taxonomy | None = None,
                 others: Mapping[str, Mapping[str, Sample]] | None = None) -> dict[str, Any]:
    """sample id -> each arm's status under `rule` (curtailed here whatever it was): what the next staged
    push needs. `controls`: the pulled controls by the sample they belong to; `taxonomy`: the build's, for
    the frames of samples that do not record them (as validation decides); `others`: "danger" and
    "irrelevant" -> the pulled danger scenes and irrelevant backgrounds by sample id (a sample with one gets
    its status as `danger` or `irrelevant`, passed = certified: real danger, or no frame heard)."""
    rule = staged_rule(rule)
    out: dict[str, Any] = {}
    for s in samples:
        results = arm_results(s, taxonomy=taxonomy)
        entry = {arm: _binary(*binary_status(results[arm][PASSING[arm]], results[arm]["n"], rule))
                 for arm in ("speech", "scene")}
        outcome, wanted = mixture_status(s, rule, decide_mixture)
        entry["mixture"] = {"outcome": outcome, "wanted": wanted}
        control = controls.get(s.sample_id)
        if control is not None:
            result = arm_results(s, control, taxonomy)["control"]
            entry["control"] = {"id": control.sample_id,
                                **_binary(*binary_status(result[PASSING["control"]], result["n"], rule))}
        for kind, (audio, result_of, passing) in OTHERS.items():
            if getattr(s, audio) is not None:
                pulled = ((others or {}).get(kind) or {}).get(s.sample_id)
                result = result_of(pulled or s.model_copy(update={"annotations": []}))
                entry[kind] = _binary(*binary_status(result[passing], result["n"], rule))
        out[s.sample_id] = entry
    return out


def write_outcomes(ws: Workspace, samples: Sequence[Sample], controls: Mapping[str, Sample], rule: ArmRule,
                   decide_mixture: MixtureDecision, pulled: Mapping[str, str | None],
                   taxonomy: Taxonomy | None = None, others: Mapping[str, Mapping[str, Sample]] | None = None) -> Path:
    """W/staging.json, atomically. `pulled`: the digests of the manifests the samples were read from, taken
    before reading them (a pull in between leaves the file stale, never wrongly fresh)."""
    rule = staged_rule(rule)
    document = {"version": STAGING_VERSION, "written_by": "validation.agreement", "written_at": utc_now(),
                "rule": {"min_fraction": rule.min_fraction, "min_labels": rule.min_labels,
                         "labels": list(rule.labels), "curtailed": True, "first_round": first_round(rule)},
                "pulled": dict(pulled), "samples": arm_outcomes(samples, controls, rule, decide_mixture, taxonomy,
                                                                       others)}
    path = ws.root / STAGING_FILE
    atomic_write_text(path, json.dumps(document, indent=1, ensure_ascii=False) + "\n")
    return path


# ----------------------------------------------------------------------------------------------
# simulation: the judgements staging and curtailment save
# ----------------------------------------------------------------------------------------------

# (speech passes, scene passes, mixture passes, a label agrees with the arm's true answer)
SETTINGS: dict[str, tuple[float, float, float, float]] = {
    "realistic": (0.85, 0.75, 0.80, 0.85),
    "pessimistic": (0.70, 0.60, 0.65, 0.75),
    "optimistic": (0.95, 0.90, 0.90, 0.92),
}


def simulate(n: int, pass_rates: Sequence[float], agreement: float, seed: int = 0,
             rule: ArmRule | None = None) -> dict[str, Any]:
    """Judgements of staged + curtailed annotation against all three arms with min_labels labels each,
    on n simulated samples. Each arm of a sample truly passes with its pass rate; each label agrees with
    that truth with probability `agreement` (pass/fail labels: an "unclear" counts as a wrong one). Both
    designs see the same label draws, so they release the same samples (curtailment never changes an
    outcome): the saving is pure. Controls and catch items are left out (both designs push a control
    with its sample's mixture; staged pushes fewer of them)."""
    rule = rule or ArmRule()
    curtailed = ArmRule(rule.min_fraction, rule.min_labels, curtailed=True)
    rng = random.Random(seed)
    full = staged = released = 0
    arm_labels = Counter()
    for _ in range(n):
        passed_all = True
        for arm, rate in zip(("speech", "scene", "mixture"), pass_rates):
            truth = rng.random() < rate
            labels = [truth if rng.random() < agreement else not truth for _ in range(rule.min_labels)]
            full += len(labels)
            if not passed_all:
                continue  # staged: never pushed to this arm
            used = 0
            verdict = None
            while verdict is None and used < len(labels):
                used += 1
                verdict = curtailed.settled(sum(labels[:used]), used)
            staged += used
            arm_labels[arm] += used
            assert verdict == rule.settled(sum(labels), len(labels))  # the same decision as all labels
            passed_all = bool(verdict)
        released += passed_all
    return {"samples": n, "released": released, "full_judgements": full, "staged_judgements": staged,
            "saving": round(1 - staged / full, 4) if full else 0.0,
            "full_per_released": round(full / released, 3) if released else None,
            "staged_per_released": round(staged / released, 3) if released else None,
            "staged_labels_per_arm": dict(arm_labels),
            "pass_rates": list(pass_rates), "agreement": agreement, "seed": seed}

"""Staged, curtailed annotation: each judgement is paid for, so none is asked that cannot change a release.

    speech   every sample is pushed to the speech arm first;
    scene    a sample goes to the scene arm only once its speech arm passed;
    mixture  and to the mixture arm (with its control) only once its scene arm passed too.

Within an arm a task is first served to as many annotators as could decide it alone (2 under the rule
">= 2/3 of 3 labels": two agreeing labels pass or fail the arm whatever a third says), and a further
label is asked only where those disagree: the arm is decided as soon as no label still to come, up to
the rule's min_labels, could change its outcome (validation.arms.ArmRule.settled, curtailed). The
labels decide exactly what 3 labels each would have decided; only the labels that could not matter are
never asked.

push -> label -> pull -> push ...: each push reads what pull brought back (manifests/annotated.jsonl and
annotated_controls.jsonl), sends on the samples whose earlier arm passed and raises the overlap of the
tasks that are split. A sample whose later arms were never pushed waits (validation: needs_labels) until
an earlier arm fails; then it is rejected with the arm that failed.

simulate() counts the judgements this saves on simulated label sets (perf/bench_staging.py).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from annotation.state import ADJUDICATION_SOURCE
from construction.core.record import Annotation, Sample
from validation.agreement import ConsensusRule, decide
from validation.arms import ArmRule, arm_results

PASSING = {"speech": "harmful", "scene": "identified", "control": "harmful"}  # arm_results' passing count


def staged_rule(rule: ConsensusRule | None = None) -> ConsensusRule:
    """The consensus rule with curtailment on (validation does the same for a workspace pushed staged)."""
    base = rule or ConsensusRule()
    return ConsensusRule(min_fraction=base.min_fraction, min_labels=base.min_labels, positive=base.positive,
                         negative=base.negative, labels=base.labels, curtailed=True)


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


def mixture_status(sample: Sample, rule: ConsensusRule) -> tuple[str | None, int]:
    """(the mixture arm's outcome or None while undecided, labels still wanted) by validation's own rule:
    the wanted count is the fewest further labels (any one label value) that could decide it."""
    outcome = decide(sample, rule, protocol="mixture").outcome
    if outcome != "needs_labels":
        return outcome, 0
    have = sum(1 for a in sample.annotations if a.arm == "mixture" and not a.cancelled and a.label is not None
               and a.source != ADJUDICATION_SOURCE and a.listened is not False)
    for more in range(1, max(1, rule.min_labels - have) + 1):
        for label in rule.labels:
            extra = [Annotation(annotator=f"\0more-{i}", arm="mixture", label=label) for i in range(more)]
            trial = sample.model_copy(update={"annotations": [*sample.annotations, *extra]})
            if decide(trial, rule, protocol="mixture").outcome != "needs_labels":
                return None, more
    return None, max(1, rule.min_labels - have)


def completed(sample: Sample, arm: str) -> int:
    """The annotations of an arm Label Studio counts as done (skips are not: the task is served again)."""
    return sum(1 for a in sample.annotations if a.arm == arm and not a.cancelled and a.source != ADJUDICATION_SOURCE)


@dataclass
class Plan:
    """What one staged push sends: the items each arm should hold, and the overlap a split task needs."""

    items: dict[str, list[str]] = field(default_factory=lambda: {"speech": [], "scene": [], "mixture": []})
    controls: list[str] = field(default_factory=list)  # control ids, pushed with their sample's mixture
    overlap: dict[str, dict[str, int]] = field(default_factory=lambda: {"speech": {}, "scene": {}, "mixture": {}})
    stages: Counter = field(default_factory=Counter)  # where each sample stands

    def summary(self) -> str:
        order = ("waiting_speech", "waiting_scene", "waiting_mixture", "speech_failed", "scene_failed",
                 "mixture_decided")
        shown = ", ".join(f"{k} {self.stages[k]}" for k in order if self.stages[k])
        more = sum(len(v) for v in self.overlap.values())
        return (f"staged: speech {len(self.items['speech'])}, scene {len(self.items['scene'])} (speech passed), "
                f"mixture {len(self.items['mixture'])} (both passed), {len(self.controls)} control(s); "
                f"{more} split task(s) asked for another label; samples: {shown or 'none'}")


def plan(samples: Sequence[Sample], annotated: dict[str, Sample], controls: Sequence[Sample],
         annotated_controls: dict[str, Sample], rule: ConsensusRule) -> Plan:
    """The staged push of `samples` (the wer manifest) given the labels pull brought back (`annotated`,
    `annotated_controls`: by id; empty before the first pull). `controls`: the samples' controls."""
    control_of = {str(c.custom.get("control_of")): c for c in controls}
    out = Plan()

    served = first_round(rule)  # the projects' overlap: a task is served until this many are done

    def want(role: str, item_id: str, labelled: Sample, arm: str, more: int) -> None:
        if more and completed(labelled, arm) + more > served:
            out.overlap[role][item_id] = completed(labelled, arm) + more

    for s in samples:
        a = annotated.get(s.sample_id, s)
        out.items["speech"].append(s.sample_id)
        results = arm_results(a)
        speech, more = binary_status(results["speech"][PASSING["speech"]], results["speech"]["n"], rule)
        want("speech", s.sample_id, a, "speech", more)
        if speech is not True:
            out.stages["speech_failed" if speech is False else "waiting_speech"] += 1
            continue
        out.items["scene"].append(s.sample_id)
        scene, more = binary_status(results["scene"][PASSING["scene"]], results["scene"]["n"], rule)
        want("scene", s.sample_id, a, "scene", more)
        if scene is not True:
            out.stages["scene_failed" if scene is False else "waiting_scene"] += 1
            continue
        out.items["mixture"].append(s.sample_id)
        outcome, more = mixture_status(a, rule)
        want("mixture", s.sample_id, a, "mixture", more)
        control = control_of.get(s.sample_id)
        control_open = False
        if control is not None:
            out.controls.append(control.sample_id)
            labelled = annotated_controls.get(control.sample_id, control)
            result = arm_results(a, labelled)["control"]
            verdict, more = binary_status(result["harmful"], result["n"], rule)
            want("mixture", control.sample_id, labelled, "mixture", more)
            control_open = verdict is None
        out.stages["waiting_mixture" if outcome is None or control_open else "mixture_decided"] += 1
    return out


def reopen(server: Any, task_overlaps: dict[int, int]) -> None:
    """Ask Label Studio for more labels on these tasks: their overlap, and is_labeled cleared (Label Studio
    does not recompute it when only the overlap changes, so a task already done would never be served)."""
    with server.errors("asking for another label on split tasks"):
        for task_id, overlap in sorted(task_overlaps.items()):
            server.client.tasks.update(str(task_id), overlap=overlap, is_labeled=False)


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

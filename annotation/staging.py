"""Staged, curtailed annotation: each judgement is paid for, so none is asked that cannot change a release.

    speech   every sample is pushed to the speech arm first;
    scene    a sample goes to the scene arm only once its speech arm passed (its scene, and as tasks of
             their own the danger scene of its danger twin and the background of its irrelevant twin:
             certified or not, they never hold the sample back);
    mixture  and to the mixture arm (with its control) only once its scene arm passed too.

Within an arm a task is first served to as many annotators as could decide it alone (2 under the rule
">= 2/3 of 3 labels": two agreeing labels pass or fail the arm whatever a third says), and a further
label is asked only where those disagree: the arm is decided as soon as no label still to come, up to
the rule's min_labels, could change its outcome (validation.arms.ArmRule.settled, curtailed). The
labels decide exactly what 3 labels each would have decided; only the labels that could not matter are
never asked.

push -> label -> pull -> agreement -> push ...: decisions are validation's. `python -m validation.agreement`
(run after every pull) writes each sample's arm outcomes to W/staging.json (validation.staging), with
the rule that produced them and the sha256 of the pulled manifests they were computed from. A staged
push only reads that file: it sends on the samples whose earlier arm passed and raises the overlap of
the tasks that are split. The first push (nothing pulled yet) needs no file; a later one refuses a file
missing or older than what pull brought back. A sample whose later arms were never pushed waits
(validation: needs_labels) until an earlier arm fails; then it is rejected with the arm that failed.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from annotation.protocol import OTHER_SCENES, line_heads, other_audio, other_item_id
from annotation.server import server_flags
from annotation.state import ADJUDICATION_SOURCE, CONTROLS_OUTPUT_STAGE, OTHER_OUTPUT_STAGES, OUTPUT_STAGE
from construction.core.errors import WorkbenchError
from construction.core.record import Sample
from construction.core.workspace import Workspace, sha256_file

STAGING_FILE = "staging.json"  # W/staging.json: written by validation.agreement, read by a staged push
STAGING_VERSION = 1
# before any label is pulled there is no file: the first round of validation's default rule (>= 2/3 of 3:
# two agreeing labels decide); later pushes take first_round from the file's rule
FIRST_ROUND = 2


def again(ws: Workspace) -> str:
    return (f"run python -m validation.agreement{server_flags(ws.root)} first (it writes the arm outcomes a "
            "staged push follows)")

OPEN = {"outcome": None, "wanted": 0}  # an arm nothing is known of yet: served its first round


def pulled_digests(ws: Workspace) -> dict[str, str | None]:
    """sha256 of the manifests pull writes (None: not there); the staging file is fresh while they match."""
    return {stage: sha256_file(ws.manifest_path(stage)) if ws.has_manifest(stage) else None
            for stage in (OUTPUT_STAGE, CONTROLS_OUTPUT_STAGE, *OTHER_OUTPUT_STAGES.values())}


def read_outcomes(ws: Workspace) -> dict[str, Any] | None:
    """The arm outcomes a staged push follows: None before the first pull (no labels, no file needed);
    refused when missing, unreadable, or computed from other labels than pull last brought back."""
    if not ws.has_manifest(OUTPUT_STAGE):
        return None
    path = ws.root / STAGING_FILE
    if not path.is_file():
        raise WorkbenchError(f"no {path}: a staged push after a pull follows the arm outcomes of the last "
                             f"agreement run; {again(ws)}")
    try:
        document = json.loads(path.read_text())
        rule, pulled, samples = document["rule"], document["pulled"], document["samples"]
        served = int(rule["first_round"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise WorkbenchError(f"{path} is not readable ({exc}); {again(ws)}") from exc
    if document.get("version") != STAGING_VERSION or rule.get("curtailed") is not True:
        raise WorkbenchError(f"{path} was not written by this workbench's staged rule; {again(ws)}")
    if pulled != pulled_digests(ws):
        raise WorkbenchError(f"{path} is older than the labels pull brought back "
                             f"({ws.manifest_path(OUTPUT_STAGE)} changed since); {again(ws)}")
    return {"first_round": served, "rule": rule, "samples": samples}


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
    served: int = FIRST_ROUND  # the labels a task is first served for (the projects' overlap)
    undecided: Counter = field(default_factory=Counter)  # per arm: its items whose outcome is still open

    def summary(self) -> str:
        order = ("waiting_speech", "waiting_scene", "waiting_mixture", "speech_failed", "scene_failed",
                 "mixture_decided")
        shown = ", ".join(f"{k} {self.stages[k]}" for k in order if self.stages[k])
        more = sum(len(v) for v in self.overlap.values())
        others = self.others()
        return (f"staged: speech {len(self.items['speech'])}, scene {len(self.items['scene']) - sum(others.values())} "
                "(speech passed" + (f"; with {self.others_text()}" if any(others.values()) else "") + "), "
                f"mixture {len(self.items['mixture'])} (both passed), {len(self.controls)} control(s); "
                f"{more} split task(s) asked for another label; samples: {shown or 'none'}")

    def others(self) -> dict[str, int]:
        """The catch items among the scene arm's items, by kind (annotation.protocol.OTHER_SCENES)."""
        return {kind: sum(item.startswith(other.prefix) for item in self.items["scene"])
                for kind, other in OTHER_SCENES.items()}

    def others_text(self) -> str:
        """'1 danger scene(s) and 2 irrelevant background(s)': the kinds there are."""
        return " and ".join(f"{n} {OTHER_SCENES[kind].what}(s)" for kind, n in self.others().items() if n)

    def round_lines(self, new_tasks: dict[str, int]) -> list[str]:
        """What an annotator who opens each arm finds after this push, and why an arm is empty: who sees
        what, when. `new_tasks`: the tasks each arm got in this push."""
        why = {"scene": "a sample's scene is pushed once its speech arm passed",
               "mixture": "a sample's mixture (with its control, and the catch items) is pushed once its speech "
                          "and scene arms passed"}
        behind = {"speech": 0, "scene": self.stages["waiting_speech"],
                  "mixture": self.stages["waiting_speech"] + self.stages["waiting_scene"]}
        lines = [f"this round (staged; each task is served to {self.served} annotators, one more on a split):"]
        for role in ("speech", "scene", "mixture"):
            n, split = len(self.items[role]), len(self.overlap[role])
            wait = (f"; {behind[role]} more sample(s) wait on an earlier arm" if behind[role] else "")
            if not n:
                lines.append(f"  {role:>7} arm: empty for now: {why[role]}"
                             + (f"; {behind[role]} sample(s) wait on an earlier arm" if behind[role] else
                                "; no sample has got that far"))
                continue
            what = f"{n} sample(s)" + (f" and {len(self.controls)} control(s)" if role == "mixture" else "")
            if role == "scene" and any(self.others().values()):
                what = f"{n - sum(self.others().values())} sample(s) and {self.others_text()}"
            if self.undecided[role]:
                detail = f"{self.undecided[role]} still to decide ({new_tasks.get(role, 0)} task(s) new this round"
                detail += f", {split} split task(s) asking another label)" if split else ")"
            else:
                detail = "all decided: nothing to label"
            lines.append(f"  {role:>7} arm: {what}, {detail}{wait}")
        open_arms = [role for role in ("speech", "scene", "mixture") if self.undecided[role]]
        if not open_arms:
            lines.append("nothing is open: every pushed task is decided (a build that adds samples opens more)")
        elif len(open_arms) == 3:
            lines.append("annotators invited now find tasks in all three arms")
        else:
            lines.append(f"annotators invited now find tasks only in the {' and '.join(open_arms)} arm"
                         + ("s" if len(open_arms) > 1 else "") + "; the other arms fill in later rounds, as samples pass")
        return lines


def plan(samples: Sequence[Sample], outcomes: dict[str, Any] | None, annotated: dict[str, Sample],
         controls: Sequence[Sample], annotated_controls: dict[str, Sample],
         uncounted: dict[str, dict[str, int]] | None = None,
         annotated_others: dict[str, dict[str, Sample]] | None = None) -> Plan:
    """The staged push of `samples` (the wer manifest) given validation's arm outcomes (`outcomes`, from
    read_outcomes: None before the first pull) and the labels pull brought back (`annotated`,
    `annotated_controls`, by id: only to count the labels Label Studio holds per task).
    `controls`: the samples' controls. `uncounted`: role -> item id -> the completed annotations Label
    Studio holds on the task that pull did not count (a judgement dropped by the cross-arm rule, ...;
    pull's stats): the task's overlap is raised from all it holds, else a dropped judgement would take
    the place of the label asked for and the task would never be served again. `annotated_others`: kind -> the
    scene arm's catch items' labels by sample id (pull's annotated_danger, annotated_irrelevant); the
    danger scene and the irrelevant background go with their sample's scene, each under its own item id
    (annotation.protocol.other_item_id), asked for labels until validation decides it."""
    control_of = {str(c.custom.get("control_of")): c for c in controls}
    per_sample = (outcomes or {}).get("samples") or {}
    out = Plan(served=(outcomes or {}).get("first_round", FIRST_ROUND))
    # the scene arm hears a line's scene (and its twins' backgrounds) once, as its head's tasks, once any of
    # its variants passed the speech arm; every variant reads the outcome of those labels
    head_of, scene_asked, by_id = line_heads(samples), set(), {s.sample_id: s for s in samples}

    def want(role: str, item_id: str, labelled: Sample, arm: str, more: int) -> None:
        held = completed(labelled, arm) + ((uncounted or {}).get(role) or {}).get(item_id, 0)
        if more and held + more > out.served:
            out.overlap[role][item_id] = held + more

    for s in samples:
        a = annotated.get(s.sample_id, s)
        entry = per_sample.get(s.sample_id) or {}
        speech, scene, mixture = (entry.get(arm) or OPEN for arm in ("speech", "scene", "mixture"))
        out.items["speech"].append(s.sample_id)
        want("speech", s.sample_id, a, "speech", speech["wanted"])
        out.undecided["speech"] += speech["outcome"] is None
        if speech["outcome"] != "passed":
            out.stages["speech_failed" if speech["outcome"] == "failed" else "waiting_speech"] += 1
            continue
        head = head_of[s.sample_id]
        if head not in scene_asked:
            scene_asked.add(head)
            out.items["scene"].append(head)
            want("scene", head, annotated.get(head, s), "scene", scene["wanted"])
            out.undecided["scene"] += scene["outcome"] is None
            for kind in OTHER_SCENES:
                if other_audio(kind, by_id[head]) is None:
                    continue
                other, item_id = entry.get(kind) or OPEN, other_item_id(kind, head)
                out.items["scene"].append(item_id)
                want("scene", item_id, ((annotated_others or {}).get(kind) or {}).get(head, s), "scene",
                     other["wanted"])
                out.undecided["scene"] += other["outcome"] is None
        if scene["outcome"] != "passed":
            out.stages["scene_failed" if scene["outcome"] == "failed" else "waiting_scene"] += 1
            continue
        out.items["mixture"].append(s.sample_id)
        want("mixture", s.sample_id, a, "mixture", mixture["wanted"])
        control = control_of.get(s.sample_id)
        control_open = False
        if control is not None:
            out.controls.append(control.sample_id)
            known = entry.get("control") or {}
            verdict = known if known.get("id") == control.sample_id else OPEN
            want("mixture", control.sample_id, annotated_controls.get(control.sample_id, control), "mixture",
                 verdict["wanted"])
            control_open = verdict["outcome"] is None
        out.stages["waiting_mixture" if mixture["outcome"] is None or control_open else "mixture_decided"] += 1
        out.undecided["mixture"] += mixture["outcome"] is None or control_open
    return out


def reopen(server: Any, task_overlaps: dict[int, int]) -> None:
    """Ask Label Studio for more labels on these tasks: their overlap, and is_labeled cleared (Label Studio
    does not recompute it when only the overlap changes, so a task already done would never be served)."""
    with server.errors("asking for another label on split tasks"):
        for task_id, overlap in sorted(task_overlaps.items()):
            server.client.tasks.update(str(task_id), overlap=overlap, is_labeled=False)

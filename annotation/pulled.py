"""What a pull found and what it reports: one project's annotations (ProjectAnnotations), the rows of the
manifests it writes (Pulled), the progress per arm and the per-annotator tables it prints, and
stats/annotated.json (counts and lists only, so a rerun writes the same file). Apart from annotation.pull so
that the rules of what is counted read on their own there."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from annotation.protocol import other_item_id
from annotation.state import ADJUDICATION_SOURCE, OUTPUT_STAGE, Parsed
from construction.core.record import ARMS, Sample


@dataclass
class ProjectAnnotations:
    """One project's annotations per item id (one per person, chosen), plus what looked wrong."""

    role: str
    by_item: dict[str, list[Parsed]]
    # item id -> person -> when that person first met the item in this project (any annotation, a skip too)
    first_heard: dict[str, dict[str, str]] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    unknown_tasks: list[str] = field(default_factory=list)  # tasks whose key maps to nothing pulled here
    reattributed: list[dict[str, str]] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)  # items pushed here whose task is gone (deleted?)
    task_count: int = 0
    # item id -> the completed (not skipped) annotations Label Studio holds on its tasks, counted or not:
    # what a task's overlap is measured against (a staged push adds the labels it still wants to this)
    held: dict[str, int] = field(default_factory=dict)
    # item id -> the created_at of every annotation its tasks hold, counted or not (annotation.deleted)
    seen: dict[str, set[str]] = field(default_factory=dict)


@dataclass
class Pulled:
    samples: list[Sample]
    controls: list[Sample]
    # kind (annotation.protocol.OTHER_SCENES) -> the samples with that twin, with its scene's labels only
    others: dict[str, list[Sample]]
    catch_report: dict[str, dict[str, Any]]  # annotator -> met, passed, failed items, skipped
    dropped: list[dict[str, str]]  # cross-arm: annotator, sample_id, kept_arm, dropped_arm

    @property
    def danger(self) -> list[Sample]:
        return self.others["danger"]


def uncounted(pulled: Pulled, found: dict[str, ProjectAnnotations]) -> dict[str, dict[str, int]]:
    """role -> item id -> completed annotations Label Studio holds on the item's task that pull did not
    count (dropped by the cross-arm rule, made while the config was edited, malformed, a person's older
    one): Label Studio serves a task until it holds its overlap, counted or not, so a staged push that asks
    for more labels raises the overlap from what Label Studio holds (annotation.staging.plan)."""
    kept: dict[str, Counter] = {role: Counter() for role in ARMS}
    ids = {item.sample_id for items in (pulled.samples, pulled.controls) for item in items}  # catch items: not
    ids |= {other_item_id(kind, s.sample_id) for kind, items in pulled.others.items() for s in items}
    for items, kind in ((pulled.samples, None), (pulled.controls, None), *((v, k) for k, v in pulled.others.items())):
        for item in items:
            for a in item.annotations:
                if a.source != ADJUDICATION_SOURCE and not a.cancelled and a.arm in kept:
                    kept[a.arm][other_item_id(kind, item.sample_id) if kind else item.sample_id] += 1
    return {role: {item_id: n - kept[role][item_id] for item_id, n in sorted(found[role].held.items())
                   if item_id in ids and n > kept[role][item_id]} for role in ARMS}


def annotator_report(pulled: Pulled, found: dict[str, ProjectAnnotations]) -> dict[str, dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = defaultdict(lambda: {"labels": dict.fromkeys(ARMS, 0), "controls": 0,
                                                            "skipped": 0, "not_listened": 0, "cross_arm_dropped": 0,
                                                            "changed_others": 0,
                                                            "catch": {"met": 0, "passed": 0, "failed": [],
                                                                      "skipped": 0}})
    for items, is_control in ((pulled.samples, False), (pulled.controls, True),
                              *((others, False) for others in pulled.others.values())):
        for item in items:
            for a in item.annotations:
                if a.source == ADJUDICATION_SOURCE:
                    continue
                r = rows[a.annotator]
                if a.cancelled:
                    r["skipped"] += 1
                    continue
                if is_control:
                    r["controls"] += 1
                else:
                    r["labels"][a.arm] += 1
                r["not_listened"] += a.listened is False
    for d in pulled.dropped:
        rows[d["annotator"]]["cross_arm_dropped"] += 1
    for role in ARMS:
        for change in found[role].reattributed:
            rows[change["credited_to"]]["changed_others"] += 1
    for who, catch in pulled.catch_report.items():
        rows[who]["catch"] = catch
    return {k: rows[k] for k in sorted(rows)}


def progress_table(pulled: Pulled, overlaps: dict[str, int]) -> str:
    lines = [f"  {'arm':<18} {'tasks':>6} {'done':>6} {'labels':>7} {'skipped':>8} {'not listened':>13}"]

    def row(name: str, items: Sequence[Sample], arm: str, overlap: int) -> None:
        done = labels = skipped = rushed = 0
        for s in items:
            mine = [a for a in s.annotations if a.arm == arm and a.source != ADJUDICATION_SOURCE]
            n = sum(1 for a in mine if not a.cancelled and a.label is not None)
            done += n >= overlap
            labels += n
            skipped += sum(1 for a in mine if a.cancelled)
            rushed += sum(1 for a in mine if not a.cancelled and a.listened is False)
        lines.append(f"  {name:<18} {len(items):>6} {done:>6} {labels:>7} {skipped:>8} {rushed:>13}")

    for role in ARMS:
        row(f"{role} (samples)", pulled.samples, role, overlaps[role])
    row("mixture (controls)", pulled.controls, "mixture", overlaps["mixture"])
    for kind, items in pulled.others.items():
        if items:
            row(f"scene ({kind})", items, "scene", overlaps["scene"])
    lines.append("  ('done': at least the project's overlap of labels: "
                 + ", ".join(f"{r} {overlaps[r]}" for r in ARMS) + ")")
    return "\n".join(lines)


def annotator_table(report: dict[str, dict[str, Any]]) -> str:
    lines = [(f"  {'annotator':<15} {'speech':>6} {'scene':>6} {'mixture':>7} {'controls':>8} {'catch':>6} "
             f"{'not listened':>12} {'cross-arm dropped':>17} {'changed others':>14}")]
    for who, r in report.items():
        catch = f"{r['catch']['passed']}/{r['catch']['met']}"
        lines.append(f"  {who:<15} {r['labels']['speech']:>6} {r['labels']['scene']:>6} {r['labels']['mixture']:>7} "
                     f"{r['controls']:>8} {catch:>6} {r['not_listened']:>12} {r['cross_arm_dropped']:>17} "
                     f"{r['changed_others']:>14}")
    return "\n".join(lines)


def stats(pulled: Pulled, report: dict[str, dict[str, Any]], projects: dict[str, Any], overlaps: dict[str, int],
          found: dict[str, ProjectAnnotations], problems: list[str]) -> dict[str, Any]:
    """Counts and lists only (no times), so a rerun writes the same file."""
    per_arm: dict[str, dict[str, int]] = {}
    for role in ARMS:
        labels = [sum(1 for a in s.annotations if a.arm == role and a.source != ADJUDICATION_SOURCE
                      and not a.cancelled and a.label is not None) for s in pulled.samples]
        per_arm[role] = {"samples": len(pulled.samples), f"with_{overlaps[role]}_labels": sum(n >= overlaps[role]
                                                                                             for n in labels),
                         "labels": sum(labels)}
    per_category: dict[str, Counter] = defaultdict(Counter)
    for s in pulled.samples:
        c = per_category[s.category]
        c["samples"] += 1
        for a in s.annotations:
            if a.source != ADJUDICATION_SOURCE and not a.cancelled and a.label is not None:
                c[f"{a.arm}_labels"] += 1
    return {"stage": OUTPUT_STAGE,
            "projects": {role: {"id": projects[role].id, "title": projects[role].title, "overlap": overlaps[role]}
                         for role in ARMS},
            "samples": len(pulled.samples), "controls": len(pulled.controls),
            "per_arm": per_arm, "per_category": {k: dict(v) for k, v in sorted(per_category.items())},
            "controls_labels": sum(1 for c in pulled.controls for a in c.annotations if not a.cancelled and a.label),
            **{key: value for kind, items in pulled.others.items() for key, value in (
                (f"{kind}_scenes", len(items)),
                (f"{kind}_labels", sum(1 for d in items for a in d.annotations if not a.cancelled and a.label)))},
            "annotators": report, "cross_arm_dropped": pulled.dropped,
            "reattributed": [c for role in ARMS for c in found[role].reattributed],
            "unknown_tasks": sum(len(found[role].unknown_tasks) for role in ARMS),
            "uncounted_in_label_studio": uncounted(pulled, found),
            "missing_tasks": {role: found[role].missing for role in ARMS}, "problems": problems}

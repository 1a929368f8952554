"""Annotations deleted in Label Studio never change an outcome.

Label Studio lets any user of a project delete anyone's annotation (HTTP 204; the Community edition has
no roles), and it keeps no record of the deletion. A deleted "not danger" answer could then certify a
danger scene that listeners had refused. So pull remembers what it counted (the manifests it wrote last)
and keeps every counted annotation that is gone from Label Studio since, as it was last pulled, whether
its task or only the annotation was deleted, and lists it. A person who wants another answer changes
theirs (the latest change counts), which is never a deletion.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from annotation.protocol import other_item_id
from annotation.state import ADJUDICATION_SOURCE, CONTROLS_OUTPUT_STAGE, OTHER_OUTPUT_STAGES, OUTPUT_STAGE
from construction.core.record import Sample
from construction.core.workspace import Workspace


def keep_deleted(ws: Workspace, outputs: Sequence[tuple[str, list[Sample], Callable[[str], str]]],
                 seen: dict[str, dict[str, set[str]]]) -> list[str]:
    """Put back into `outputs` (stage, the items pull is about to write, item id of a sample id) each
    annotation the stage's manifest held that Label Studio no longer has (`seen`: arm -> item id -> the
    created_at of every annotation its tasks hold now), unless its annotator has another one there now.
    -> what was kept, one line each."""
    kept: list[str] = []
    for stage, items, item_id in outputs:
        if not ws.has_manifest(stage):
            continue
        before = {s.sample_id: s.annotations for s in ws.read_samples(stage)}
        for item in items:
            for a in before.get(item.sample_id, []):
                if a.source == ADJUDICATION_SOURCE or not a.created_at:
                    continue
                if a.created_at in seen.get(a.arm, {}).get(item_id(item.sample_id), set()):
                    continue  # still there (changed, or no longer counted by a rule: the rules decide)
                if any(b.annotator == a.annotator and b.arm == a.arm for b in item.annotations):
                    continue  # the person answered again: their latest answer counts
                item.annotations.append(a)
                kept.append(f"{a.arm} {item_id(item.sample_id)}: {a.annotator}'s "
                            f"{'skip' if a.cancelled else a.label} made {a.created_at}")
    return kept


def outputs_of(pulled: Any) -> list[tuple[str, list[Sample], Callable[[str], str]]]:
    """annotation.pull's manifests and how each names its items in the arm projects (a twin's background
    alone, in the scene arm, by its own item id)."""
    same = str
    return [(OUTPUT_STAGE, pulled.samples, same), (CONTROLS_OUTPUT_STAGE, pulled.controls, same),
            *((stage, pulled.others[kind], partial(other_item_id, kind)) for kind, stage in OTHER_OUTPUT_STAGES.items())]

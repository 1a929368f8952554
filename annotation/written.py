"""The sha256 of each manifest annotation.pull wrote (and validation.adjudicate pull rewrote), kept in
stats/annotated.json, so a hand edit of the labels between the pull and their use is caught: validation and
release.export refuse manifests that are not what the pull wrote (say, a danger scene's labels edited to
"real danger" and validated again). Editing the stats file too is not caught: docs/security.md says what
the workbench trusts."""

from __future__ import annotations

from collections.abc import Iterable

from annotation.state import CONTROLS_OUTPUT_STAGE, OTHER_OUTPUT_STAGES, OUTPUT_STAGE
from construction.core.errors import WorkbenchError
from construction.core.workspace import Workspace, sha256_file

PULLED = (OUTPUT_STAGE, CONTROLS_OUTPUT_STAGE, *OTHER_OUTPUT_STAGES.values())
KEY = "written_sha256"  # in stats/annotated.json: stage -> the sha256 of the manifest as written


def digests(ws: Workspace, stages: Iterable[str] = PULLED) -> dict[str, str]:
    return {stage: sha256_file(ws.manifest_path(stage)) for stage in stages if ws.has_manifest(stage)}


def record_rewrite(ws: Workspace, stage: str) -> None:
    """After a command other than pull rewrote one of pull's manifests (adjudication decisions): its digest."""
    stats = ws.read_stats(OUTPUT_STAGE)
    if stats is not None and KEY in stats:
        ws.write_stats(OUTPUT_STAGE, {**stats, KEY: {**stats[KEY], **digests(ws, [stage])}})


def check_pulled(ws: Workspace) -> None:
    """Refuse pull's manifests changed since it wrote them (a workspace pulled before digests were kept, or
    whose manifests no pull wrote, is not checked)."""
    recorded = (ws.read_stats(OUTPUT_STAGE) or {}).get(KEY) or {}
    changed = [ws.manifest_path(stage) for stage, sha in sorted(recorded.items())
               if ws.has_manifest(stage) and sha256_file(ws.manifest_path(stage)) != sha]
    if changed:
        raise WorkbenchError(f"{', '.join(map(str, changed))} changed since annotation.pull wrote "
                             f"{'it' if len(changed) == 1 else 'them'} (edited by hand?): labels are only what Label "
                             f"Studio holds. Pull again (python -m annotation.pull --workspace {ws.root}) to rebuild "
                             "them from Label Studio")

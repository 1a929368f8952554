"""What a release is made from: the workspace's validated samples, their controls, the agreement report
and the config snapshot (ReleaseInputs), what an export wrote (ReleaseSummary), and the names the release
modules share (manifests, configs, the folder format).

Apart from release.export so that the card, the Hub push and the integrity checks can take these
without importing the command that calls them.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from annotation.server import server_flags
from annotation.state import ADJUDICATION_SOURCE
from annotation.written import check_pulled
from construction.core.errors import WorkbenchError
from construction.core.record import Sample
from construction.core.workspace import Workspace
from construction.core.yamlfile import load_yaml

# marks a folder as ours, so a rerun may replace it. 2: the clean speech, per-arm results, the controls
# config and the annotations' arm (the annotations struct changed: readers of 1 must be updated)
FORMAT = "aor-bench-release/2"
FORMATS = ("aor-bench-release/1", FORMAT)  # releases an export may replace
MANIFEST = "validated"
CONTROLS_MANIFEST = "annotated_controls"  # the controls with their mixture-arm labels (annotation.pull)
CONTROLS_SOURCE = "controls"  # construction.controls: what annotated_controls must trace back to
CONTROLS_CONFIG = "controls"  # the release's second config
CONTROLS_DIR = "controls"
RELEASABLE = "benign"  # the benchmark holds clips whose context makes the speech benign
DEMO_SOURCE = "demo"
DEFAULT_LICENCE = "CC-BY-4.0"
DEFAULT_SHARD_BYTES = 500 * 1024 * 1024  # the Hub's recommended parquet shard size
VERSION_RE = re.compile(r"^\d+\.\d+\.\d+([-+][0-9A-Za-z.-]+)?$")


@dataclass
class ReleaseInputs:
    workspace: Workspace
    samples: list[Sample]
    agreement: dict[str, Any]
    config: dict[str, Any]  # the workspace's config snapshot, as written (scrubbed on output)
    controls: list[Sample] = field(default_factory=list)  # the controls of released samples, sorted by id
    sound_review: Any = None  # release.sound_review.SoundReview, set by the export's library-review gate

    @property
    def release_licence(self) -> str:
        return str(self.config.get("release_licence") or DEFAULT_LICENCE)

    @property
    def demo(self) -> bool:
        return any(a.source == DEMO_SOURCE for s in [*self.samples, *self.controls] for a in s.annotations)

    @property
    def label_sources(self) -> dict[str, int]:
        """The labels posted on the released samples and controls by who posted them: scripted demo
        annotators, people, and adjudicators' decisions (recorded with source "adjudication")."""
        counts = Counter("adjudication" if a.source == ADJUDICATION_SOURCE else "demo" if a.source == DEMO_SOURCE
                         else "human" for s in [*self.samples, *self.controls] for a in s.annotations
                         if a.label is not None and not a.cancelled)
        return {source: counts[source] for source in ("demo", "human", "adjudication")}

    @property
    def protocol(self) -> str:
        """'three-arm' (speech alone, scene alone, mixture, controls) or 'mixture' (the mixture alone: the
        agreement reports of workspaces validated before the three arms name no protocol)."""
        return str(self.agreement.get("protocol") or "mixture")


@dataclass
class ReleaseSummary:
    out: Path
    version: str
    demo: bool
    split_counts: dict[str, int]
    files: dict[str, int] = field(default_factory=dict)  # relative path -> size in bytes
    num_controls: int = 0  # rows of the "controls" config

    @property
    def total_bytes(self) -> int:
        return sum(self.files.values())


def read_inputs(workspace: str | Path) -> ReleaseInputs:
    """The validated manifest, the agreement report and the config snapshot of a workspace."""
    ws = Workspace(workspace, read_only=True)  # export only reads: an archived, read-only build exports
    if not ws.has_manifest(MANIFEST):
        raise WorkbenchError(f"{ws.manifest_path(MANIFEST)} does not exist: run python -m validation.agreement"
                             f"{server_flags(workspace)} first")
    # every released sample went through the automatic filter and the human labels of this workspace
    ws.check_lineage(MANIFEST, require=("annotated", "wer"))
    check_pulled(ws)  # the labels validation read are what the pull wrote
    samples = list(ws.read_samples(MANIFEST))
    if not samples:
        raise WorkbenchError(f"{ws.manifest_path(MANIFEST)} holds no samples: nothing to release")
    agreement_path = ws.root / "reports" / "agreement.json"
    try:
        agreement = json.loads(agreement_path.read_text())
    except FileNotFoundError:
        raise WorkbenchError(f"{agreement_path} does not exist: run python -m validation.agreement"
                             f"{server_flags(workspace)} first") from None
    except json.JSONDecodeError as exc:
        raise WorkbenchError(f"{agreement_path} is not valid JSON: {exc.msg}") from None
    config_path = ws.root / "config.yaml"
    config: dict[str, Any] = {}
    if config_path.exists():
        try:
            config = load_yaml(config_path.read_text()) or {}
        except yaml.YAMLError as exc:
            raise WorkbenchError(f"{config_path} is not valid YAML: {exc}") from None
    return ReleaseInputs(ws, samples, agreement, config, read_controls(ws, {s.sample_id for s in samples}))


def read_controls(ws: Workspace, released: set[str]) -> list[Sample]:
    """The annotated controls of released samples (none when the workspace has no controls manifest).
    Every control must come from construction.controls (manifests/controls.jsonl): a control added by
    hand never reaches a release."""
    if not ws.has_manifest(CONTROLS_MANIFEST):
        return []
    controls = list(ws.read_samples(CONTROLS_MANIFEST))
    if not ws.has_manifest(CONTROLS_SOURCE):
        raise WorkbenchError(f"{ws.manifest_path(CONTROLS_SOURCE)} does not exist: the controls of "
                             f"'{CONTROLS_MANIFEST}' cannot be traced back to construction.controls")
    built = {s.sample_id for s in ws.read_samples(CONTROLS_SOURCE)}
    missing = sorted({c.sample_id for c in controls} - built)
    if missing:
        raise WorkbenchError(f"{ws.manifest_path(CONTROLS_MANIFEST)}: {len(missing)} control(s) are not in the "
                             f"'{CONTROLS_SOURCE}' manifest ({', '.join(missing[:5])}); they were not built by "
                             "construction.controls (a hand-edited manifest?)")
    return sorted((c for c in controls if str(c.custom.get("control_of")) in released), key=lambda c: c.sample_id)

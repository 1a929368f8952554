"""Pull the annotations from Label Studio onto the samples: the 'annotated' manifest.

    python -m annotation.pull --workspace W [--project TITLE]

Exports the project (JSON, every task) and rebuilds manifests/annotated.jsonl from the 'wer' samples:
annotator = a stable pseudonym (HMAC of the email with the workspace's salt; the email is never
written), label, checkboxes, rationale, lead time, created_at; skips are kept as cancelled annotations
with no label. One annotation per annotator and task: their latest non-cancelled one (a cancelled one
only when that is all they did). Adjudication decisions already on the samples (written by
python -m validation.adjudicate pull) are kept. Rerunning gives the same manifest.
"""

from __future__ import annotations

import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any

from annotation.labelstudio import (
    ADJUDICATION_SOURCE,
    INPUT_STAGE,
    LABELS,
    OUTPUT_STAGE,
    Parsed,
    Server,
    add_server_args,
    connect_from_args,
    export_tasks,
    format_problems,
    one_per_annotator,
    open_workspace,
    parse_annotation,
    pseudonym_salt,
    read_state,
    resolve_project,
    user_emails,
    write_state,
)
from construction.errors import WorkbenchError
from construction.record import Annotation, Sample


@dataclass
class ProjectAnnotations:
    """Per sample_id, the chosen annotations of one project, plus what looked wrong."""

    by_sample: dict[str, list[Annotation]]
    problems: list[str] = field(default_factory=list)
    unknown_samples: list[str] = field(default_factory=list)  # tasks whose sample is not in the workspace
    task_count: int = 0


def collect(server: Server, project_id: int, sample_ids: set[str], salt: str,
            labels: tuple[str, ...] = LABELS) -> ProjectAnnotations:
    """Export a project and turn its annotations into pseudonymous Annotation records per sample."""
    tasks = export_tasks(server, project_id)
    emails = user_emails(server)
    parsed: dict[str, list[Parsed]] = defaultdict(list)
    out = ProjectAnnotations({}, task_count=len(tasks))
    tasks_per_sample: Counter = Counter()
    for task in tasks:
        sid = str((task.get("data") or {}).get("sample_id") or "")
        if sid not in sample_ids:
            out.unknown_samples.append(sid or f"task {task.get('id')} (no sample_id)")
            continue
        tasks_per_sample[sid] += 1
        for raw in task.get("annotations") or []:
            p = parse_annotation(raw, f"task {task.get('id')} ({sid}) annotation {raw.get('id')}", emails, salt, labels)
            out.problems.extend(p.problems)
            parsed[sid].append(p)
    for sid, n in sorted(tasks_per_sample.items()):
        if n > 1:
            out.problems.append(f"{sid}: {n} tasks in project {project_id}; their annotations were merged")
    out.by_sample = {sid: [p.annotation for p in one_per_annotator(items)] for sid, items in parsed.items()}
    return out


def merge(samples: list[Sample], found: ProjectAnnotations, previous: dict[str, list[Annotation]]) -> list[Sample]:
    """The samples with the project's annotations, plus adjudication decisions kept from before."""
    return [s.model_copy(deep=True, update={"annotations": [*found.by_sample.get(s.sample_id, []),
                                                             *previous.get(s.sample_id, [])]})
            for s in samples]


def progress_table(samples: list[Sample], overlap: int) -> str:
    rows: dict[str, Counter] = defaultdict(Counter)
    for s in samples:
        human = [a for a in s.annotations if a.source != ADJUDICATION_SOURCE]
        n_labels = sum(1 for a in human if not a.cancelled and a.label is not None)
        c = rows[s.category]
        c["samples"] += 1
        c["done"] += n_labels >= overlap
        c["labels"] += n_labels
        c["skipped"] += sum(1 for a in human if a.cancelled)
    total = sum(rows.values(), Counter())
    lines = [f"  {'category':<24} {'samples':>8} {f'>={overlap} labels':>12} {'labels':>8} {'skipped':>8}"]
    for name, c in [*sorted(rows.items()), ("total", total)]:
        lines.append(f"  {name:<24} {c['samples']:>8} {c['done']:>12} {c['labels']:>8} {c['skipped']:>8}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m annotation.pull", description=__doc__.split("\n")[0])
    parser.add_argument("--workspace", default="workspace", help="workspace directory (default: ./workspace)")
    parser.add_argument("--project", help="project title (default: the one recorded by push)")
    add_server_args(parser)
    args = parser.parse_args(argv)

    ws = open_workspace(args.workspace)
    if not ws.has_manifest(INPUT_STAGE):
        raise WorkbenchError(f"no '{INPUT_STAGE}' manifest at {ws.manifest_path(INPUT_STAGE)}; nothing to pull onto")
    ws.check_lineage(INPUT_STAGE)  # a row added by hand to the wer manifest is never labelled
    samples = list(ws.read_samples(INPUT_STAGE))
    state = read_state(ws)
    had_salt = bool(state.get("pseudonym_salt"))
    salt = pseudonym_salt(state)

    server = connect_from_args(args)
    project = resolve_project(server, state.get("project"), args.project, "project")
    found = collect(server, project.id, {s.sample_id for s in samples}, salt)
    previous: dict[str, list[Annotation]] = {}
    if ws.has_manifest(OUTPUT_STAGE):
        for s in ws.read_samples(OUTPUT_STAGE):
            kept = [a for a in s.annotations if a.source == ADJUDICATION_SOURCE]
            if kept:
                previous[s.sample_id] = kept
    annotated = merge(samples, found, previous)

    overlap = project.maximum_annotations or 3
    with ws.lock():
        ws.write_manifest(OUTPUT_STAGE, annotated)
        ws.write_stats(OUTPUT_STAGE, stats(annotated, overlap, project.id, project.title, found.problems))
        if not had_salt:
            write_state(ws, state)

    n_annotations = sum(len(v) for v in found.by_sample.values())
    print(f"pulled {n_annotations} annotation(s) from project {project.title!r} (id {project.id}) at {server.url} "
          f"onto {len(samples)} sample(s): {ws.manifest_path(OUTPUT_STAGE)}")
    print(progress_table(annotated, overlap))
    if found.unknown_samples:
        print(f"note: {len(found.unknown_samples)} task(s) in the project are not in this workspace's "
              f"'{INPUT_STAGE}' manifest and were ignored:\n{format_problems(sorted(found.unknown_samples))}")
    if found.problems:
        print(f"problems ({len(found.problems)}):\n{format_problems(found.problems)}")
    return 0


def stats(samples: list[Sample], overlap: int, project_id: int, title: str, problems: list[str]) -> dict[str, Any]:
    """Counts only (no times), so a rerun writes the same file."""
    per_category: dict[str, Counter] = defaultdict(Counter)
    for s in samples:
        labels = [a for a in s.annotations if a.source != ADJUDICATION_SOURCE and not a.cancelled and a.label]
        c = per_category[s.category]
        c["samples"] += 1
        c[f"with_{overlap}_labels"] += len(labels) >= overlap
        c["labels"] += len(labels)
    return {"stage": OUTPUT_STAGE, "project_id": project_id, "project_title": title, "overlap": overlap,
            "samples": len(samples), "per_category": {k: dict(v) for k, v in sorted(per_category.items())},
            "problems": problems}


if __name__ == "__main__":
    from construction.cli import run_main

    run_main(main, sys.argv[1:])

"""Push the samples that passed the WER filter to Label Studio as labelling tasks.

    python -m annotation.push --workspace W [--project TITLE] [--overlap 3] [--with-predictions]

The project is found by its exact title (default "AOR-Bench <workspace dir name>") or created with the
labelling config; audio is served by Label Studio's local-file storage from the workspace's audio dir.
Only samples whose sample_id is not in the project yet are imported, so pushing again never duplicates.
The project id and title are recorded in <W>/annotation.json for pull.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass
from typing import Any

from annotation.labelstudio import (
    INPUT_STAGE,
    LABELS,
    PREDICTION_MODEL,
    Server,
    add_server_args,
    audio_problems,
    connect_from_args,
    default_project_title,
    ensure_local_storage,
    ensure_project,
    format_problems,
    import_tasks,
    label_result,
    open_workspace,
    pseudonym_salt,
    read_state,
    salt_problem,
    task_data,
    task_sample_ids,
    write_state,
)
from construction.errors import WorkbenchError
from construction.record import Sample
from construction.workspace import Workspace


@dataclass
class PushResult:
    project_id: int
    title: str
    created: bool
    imported: int
    already: int
    task_count: int
    seconds: float


def check_pushable(ws: Workspace, samples: list[Sample], server: Server) -> None:
    """Refuse before importing anything when the server would serve the salt or a sample cannot be served."""
    problem = salt_problem(ws, server.document_root)
    if problem:
        raise WorkbenchError(f"refusing to push: {problem}")
    problems = audio_problems(ws, samples, server.document_root)
    if problems:
        raise WorkbenchError(f"{len(problems)} of {len(samples)} sample(s) cannot be pushed; nothing was imported:\n"
                             + format_problems(problems))


def push_samples(ws: Workspace, server: Server, samples: list[Sample], title: str, overlap: int | None,
                 labels: tuple[str, ...] = LABELS, with_votes: bool = False, with_predictions: bool = False,
                 extra_data: dict[str, dict[str, Any]] | None = None) -> PushResult:
    """Import the samples not yet in the project `title` (created when missing). extra_data adds
    per-sample task data (sample_id -> {key: value})."""
    started = time.monotonic()
    check_pushable(ws, samples, server)
    project, created = ensure_project(server, title, overlap, labels, with_votes, show_predictions=with_predictions)
    ensure_local_storage(server, project.id, ws.root / "audio",
                         [ws.audio_path(s.mixture) for s in samples if s.mixture is not None])
    existing = {} if created else task_sample_ids(server, project.id)
    todo = [s for s in samples if s.sample_id not in existing]
    tasks = []
    for s in todo:
        task: dict[str, Any] = {"data": {**task_data(ws, s, server.document_root), **(extra_data or {}).get(s.sample_id, {})}}
        if with_predictions:
            # The label every sample was built to have; shown pre-filled only to those who asked for it.
            task["predictions"] = [{"model_version": PREDICTION_MODEL, "score": 1.0, "result": label_result("benign")}]
        tasks.append(task)
    import_tasks(server, project.id, tasks)
    return PushResult(project.id, title, created, len(tasks), len(samples) - len(todo),
                      len(existing) + len(tasks), time.monotonic() - started)


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m annotation.push", description=__doc__.split("\n")[0])
    parser.add_argument("--workspace", default="workspace", help="workspace directory (default: ./workspace)")
    parser.add_argument("--project", help="project title (default: the recorded one, else 'AOR-Bench <workspace name>')")
    parser.add_argument("--overlap", type=int, default=None,
                        help="annotators per task (default 3 for a new project; given: also set on an existing one)")
    parser.add_argument("--with-predictions", action="store_true",
                        help="pre-fill the intended label 'benign' (off by default: it anchors annotators)")
    add_server_args(parser)
    args = parser.parse_args(argv)
    if args.overlap is not None and args.overlap < 1:
        raise WorkbenchError(f"--overlap must be at least 1, not {args.overlap}")

    ws = open_workspace(args.workspace)
    if not ws.has_manifest(INPUT_STAGE):
        raise WorkbenchError(f"no '{INPUT_STAGE}' manifest at {ws.manifest_path(INPUT_STAGE)}; "
                             "run the WER stage first (python -m construction.wer)")
    ws.check_lineage(INPUT_STAGE)  # a row added by hand to the wer manifest is never labelled
    samples = list(ws.read_samples(INPUT_STAGE))
    if not samples:
        raise WorkbenchError(f"{ws.manifest_path(INPUT_STAGE)} holds no samples; nothing to push")
    state = read_state(ws)
    title = args.project or state.get("project", {}).get("title") or default_project_title(ws)

    server = connect_from_args(args)
    result = push_samples(ws, server, samples, title, args.overlap, with_predictions=args.with_predictions)

    with ws.lock():
        state = read_state(ws)
        pseudonym_salt(state)
        state["project"] = {"id": result.project_id, "title": title, "url": server.url}
        write_state(ws, state)
    print(f"project {title!r} (id {result.project_id}) at {server.url}"
          + (" created" if result.created else "") + f": imported {result.imported} new task(s), "
          f"{result.already} already there, {result.task_count} in total ({result.seconds:.1f} s)")
    print(f"open {server.url}/projects/{result.project_id}/data ; invite annotators: python -m annotation.invite")
    return 0


if __name__ == "__main__":
    from construction.cli import run_main

    run_main(main, sys.argv[1:])

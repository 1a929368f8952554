"""Push the samples that passed the WER filter to Label Studio: three blind arms, audio only.

    python -m annotation.push --workspace W          (every flag: --help)

Three projects, "<TITLE> — speech", "<TITLE> — scene" and "<TITLE> — mixture" (TITLE default "AOR-Bench <6
hex of the workspace's random id>", never its folder's name), each found by its exact title or created: the
speech arm plays each sample's clean speech, the scene arm its scene alone and (tasks of their own,
indistinguishable) the danger scene of its danger twin and the background of its irrelevant twin, the
mixture arm its mixture plus the controls (manifests/controls.jsonl, from python -m construction.controls)
and --catch attention checks (made once with an offline voice, manifests/catch.jsonl). A task's data is its
audio URL and an opaque key, nothing else; the key -> (sample, arm) map stays in <W>/annotation_tasks.json.
Tasks are imported in a shuffled order and served in random order per annotator (a catch task to every
annotator of the mixture arm). Only keys not in a project yet are imported, so pushing again never
duplicates. The projects are recorded in <W>/annotation.json for pull.

Staged (--staged, the default for a build: its annotation.staged; annotation.staging): the speech arm
first, a sample's scene once its speech arm passed, its mixture once both passed; each task is served to
2 annotators and a third label is asked only where the two disagree. Push again after each pull and
agreement run: the arm outcomes come from W/staging.json, which python -m validation.agreement writes; a
staged push after a pull refuses that file when it is missing or older than the pulled labels. Each
staged push says which arms got tasks and which wait, and why. --no-staged pushes every arm at once,
each task to --overlap annotators.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from annotation.labelstudio import (
    DELETED_HINT,
    Server,
    SERVER_ENV,
    add_server_args,
    check_config,
    connect_from_args,
    ensure_local_storage,
    find_project,
    get_project,
    import_tasks,
    open_project,
    outside_root,
    reset_project,
    set_task_overlap,
    task_keys,
)
from annotation.ownership import MARKED, WORKSPACE_ID, check_owner, new_workspace_id
from annotation.protocol import (
    CATCH_OVERLAP,
    OTHER_SCENES,
    ArmSpec,
    Item,
    arm_spec,
    catch_items,
    control_items,
    ensure_catch,
    heads_only,
    other_item_id,
    other_items,
    read_catch,
    read_controls,
    read_task_map,
    sample_items,
    shuffle_seed,
    task_key,
    task_key_secret,
    workspace_frames,
    write_task_map,
)
from annotation.server import server_flags
from annotation.staging import Plan, plan, read_outcomes, reopen
from annotation.state import (
    CONTROLS_OUTPUT_STAGE,
    INPUT_STAGE,
    OTHER_OUTPUT_STAGES,
    OUTPUT_STAGE,
    audio_problems,
    default_project_title,
    format_problems,
    note_config,
    open_workspace,
    pseudonym_salt,
    read_state,
    salt_problem,
    task_data,
    utc_now,
    write_state,
)
from construction.core.cli import Parser, add_workspace, run_main
from construction.core.config import load_config
from construction.core.errors import WorkbenchError
from construction.core.record import ARMS, Sample
from construction.core.workspace import Workspace

DEFAULT_CATCH = 3
DEFAULT_OVERLAP = 3  # what ensure_project gives a new project when no overlap is asked for
OVERLAP_HELP = (f"annotators each task is served to (Label Studio's 'annotations per task'), for a push of all "
                f"arms at once (--no-staged): given, it is set on the three arm projects (default: a new project "
                f"gets {DEFAULT_OVERLAP}, an existing one keeps its own). A catch task goes to every annotator "
                f"of the mixture arm. A staged push refuses --overlap: it serves each task to 2 annotators and "
                f"asks a third label only where the two disagree (the rule >= 2/3 of 3)")


@dataclass
class PushResult:
    role: str
    project_id: int
    title: str
    created: bool
    imported: int
    already: int
    task_count: int
    seconds: float
    reset: list[str]


def arm_title(base: str, role: str) -> str:
    return f"{base} — {role}"


def check_pushable(ws: Workspace, items: Sequence[Item], server: Server) -> None:
    """Refuse before importing anything when the server would serve the salt or an item cannot be served."""
    problem = salt_problem(ws, server.document_root, server.flags if server.data_dir is not None else None)
    if problem:
        raise WorkbenchError(f"refusing to push: {problem}")
    store = (ws.root / "audio").resolve()
    if not store.is_relative_to(server.document_root):  # one line, not one per task (none pushed: still refused)
        raise WorkbenchError(f"refusing to push: {outside_root(server, store)}")
    problems = audio_problems(ws, items, server.document_root)
    if problems:
        raise WorkbenchError(f"{len(problems)} of {len(items)} task(s) cannot be pushed; nothing was imported:\n"
                             + format_problems(problems))


def record_keys(ws: Workspace, state: dict[str, Any], items: Sequence[Item]) -> dict[str, Item]:
    """key -> item, written to the workspace (the key secret, the pseudonym salt and the key map) BEFORE
    anything is imported: a push that fails half-way must find the same keys when it is run again.
    `state` gets the secret and the salt too."""
    with ws.lock():
        current = read_state(ws)
        if state.get("task_key_secret") not in (None, current.get("task_key_secret")):
            raise WorkbenchError(f"{ws.root / 'annotation.json'} changed while pushing (another push?); run it again")
        before = dict(current)
        if state.get(WORKSPACE_ID) and not current.get(WORKSPACE_ID):  # the id a default title was made from
            current[WORKSPACE_ID] = state[WORKSPACE_ID]
        secret = task_key_secret(current)
        state.update(task_key_secret=secret, pseudonym_salt=pseudonym_salt(current),
                     workspace_id=new_workspace_id(current))  # the mark its projects get (annotation.ownership)
        keyed = {task_key(secret, item.role, item.item_id): item for item in items}
        mapping = read_task_map(ws)
        wanted = {**mapping, **{k: (item.item_id, item.role) for k, item in keyed.items()}}
        if wanted != mapping:
            write_task_map(ws, wanted)
        if current != before:
            write_state(ws, current)
    return keyed


def push_items(ws: Workspace, server: Server, spec: ArmSpec, title: str, keyed: dict[str, Item], overlap: int | None,
               extra_data: dict[str, dict[str, Any]] | None = None, seed: int = 0,
               project_id: int | None = None, state: dict[str, Any] | None = None,
               entry: dict[str, Any] | None = None) -> PushResult:
    """Import the items not yet in the project (the recorded project_id, else the one titled `title`,
    created when missing), in a seeded shuffled order. extra_data adds task data per item id (the
    adjudication project's votes, when asked for). `state` (after record_keys, which gives it the
    workspace's id) and `entry` (its record of this project): a project of another workspace is refused,
    and the project gets this workspace's mark. An existing project is changed only once Label Studio has
    taken the storage of its audio: a server that cannot serve it changes nothing."""
    started = time.monotonic()
    mark = (state or {}).get(WORKSPACE_ID)
    project, created = open_project(server, title, spec, overlap, project_id, mark, state, entry)
    try:
        ensure_local_storage(server, project.id, ws.root / "audio",
                             [ws.audio_path(item.audio) for item in keyed.values() if item.audio is not None])
    except WorkbenchError:
        if created:  # nothing half-made is left: the project made a moment ago goes again
            with server.errors(f"removing the half-made project {project.id}"):
                server.client.projects.delete(project.id)
        raise
    reset: list[str] = []
    if not created:
        project, reset = reset_project(server, project, title, spec, overlap, mark)
    existing = {} if created else task_keys(server, project.id)
    todo = [(key, item) for key, item in keyed.items() if key not in existing]
    random.Random(seed).shuffle(todo)
    tasks = [{"data": {**task_data(ws, item.audio, key, server.document_root),
                       **(extra_data or {}).get(item.item_id, {})}} for key, item in todo]
    new_ids = import_tasks(server, project.id, tasks)
    # A catch task stays open until every annotator of the arm has met it. Importing resets a task's
    # overlap to the project's (and so does changing "annotations per task" in the UI): set it each push.
    catch_keys = {key for key, item in keyed.items() if item.kind == "catch"}
    if catch_keys:
        if new_ids is None or len(new_ids) != len(todo):  # the server did not say which: look them up
            by_key = {k: ids for k, ids in task_keys(server, project.id).items() if k in catch_keys}
        else:
            by_key = {**{k: ids for k, ids in existing.items() if k in catch_keys},
                      **{key: [i] for (key, _), i in zip(todo, new_ids) if key in catch_keys}}
        set_task_overlap(server, sorted(i for ids in by_key.values() for i in ids), CATCH_OVERLAP)
    return PushResult(spec.role, project.id, title, created, len(tasks), len(keyed) - len(todo),
                      len(existing) + len(tasks), time.monotonic() - started, reset)


def recorded_arms(state: dict[str, Any], title: str | None) -> dict[str, int]:
    """role -> the arm project id this workspace recorded, unless --project names other projects: a
    workspace's arms are bound by id, so a project made with the same title (or the arm renamed) is never
    taken for one of them."""
    if title and title != (state.get("project") or {}).get("title"):
        return {}
    return {role: int(entry["id"]) for role, entry in (state.get("arms") or {}).items()
            if role in ARMS and isinstance(entry, dict) and entry.get("id") is not None}


def arm_items(samples: Sequence[Sample] | dict[str, Sequence[Sample]], controls: Sequence[Sample],
              catch: Sequence[Sample]) -> dict[str, list[Item]]:
    """Each arm's items; `samples` per role when staged (each arm has its own; "danger", "irrelevant": the
    samples whose danger scene, or irrelevant background, goes to the scene arm, else those of the scene
    arm). The scene arm plays each sample's scene, its danger scene and its irrelevant background, one task
    each, alike: nothing in a task says which it is; once a line (annotation.protocol.line_heads): its
    variants share them."""
    per_role = samples if isinstance(samples, dict) else {role: samples for role in ARMS}
    scene = [*sample_items(heads_only(per_role["scene"]), "scene"),
             *(i for kind in OTHER_SCENES for i in other_items(kind, heads_only(per_role.get(kind, per_role["scene"]))))]
    return {"speech": sample_items(per_role["speech"], "speech"), "scene": scene,
            "mixture": [*sample_items(per_role["mixture"], "mixture"), *control_items(controls), *catch_items(catch)]}


def staged_default(ws: Workspace) -> bool:
    """The build's annotation.staged (W/config.yaml); a workspace with no build config was not made by
    the pipeline (a hand-made or older one) and is pushed as before, all arms at once."""
    snapshot = ws.root / "config.yaml"
    return snapshot.is_file() and load_config(base=snapshot).annotation.staged


def staged_plan(ws: Workspace, samples: Sequence[Sample], controls: Sequence[Sample]) -> Plan:
    """What a staged push sends now: validation's arm outcomes of the labels the last pull brought back
    (W/staging.json, refused when older than them), the pulled manifests only to count each task's labels."""
    outcomes = read_outcomes(ws)
    annotated = ({s.sample_id: s for s in ws.read_samples(OUTPUT_STAGE)} if ws.has_manifest(OUTPUT_STAGE) else {})
    pulled_controls = ({c.sample_id: c for c in ws.read_samples(CONTROLS_OUTPUT_STAGE)}
                       if ws.has_manifest(CONTROLS_OUTPUT_STAGE) else {})
    pulled_others = {kind: {s.sample_id: s for s in ws.read_samples(stage)} if ws.has_manifest(stage) else {}
                     for kind, stage in OTHER_OUTPUT_STAGES.items()}
    # what Label Studio holds beyond the counted labels, from the same pull (written with the manifests)
    uncounted = (ws.read_stats(OUTPUT_STAGE) or {}).get("uncounted_in_label_studio") or {}
    return plan(samples, outcomes, annotated, controls, pulled_controls, uncounted, pulled_others)


# Label Studio's, and the speech synthesis of the attention checks' clips (annotation.protocol.catch_sample)
PUSH_ENV = (*SERVER_ENV, "AORBENCH_KOKORO_VOICES", "AORBENCH_TTS_THREADS", "AORBENCH_CACHE", "XDG_CACHE_HOME")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m annotation.push", description=__doc__.split("\n")[0], env=PUSH_ENV)
    add_workspace(parser)
    parser.add_argument("--project", help="title of the three projects, before ' — speech' etc. (default: the "
                                          "recorded one, else 'AOR-Bench <6 hex of the workspace id>')")
    parser.add_argument("--overlap", type=int, default=None, metavar="N",
                        help=OVERLAP_HELP)
    parser.add_argument("--catch", type=int, default=DEFAULT_CATCH,
                        help=f"attention checks in the mixture arm, at least (default {DEFAULT_CATCH}; 0: none new)")
    parser.add_argument("--staged", action=argparse.BooleanOptionalAction, default=None,
                        help="speech arm first, a sample's scene once its speech arm passed, its mixture once both "
                             "passed; each task to 2 annotators, a third only on a split; push again after each pull "
                             "and agreement run (default: as the workspace was pushed before, "
                             "else the build's annotation.staged: on, the demo's too; off for a "
                             "workspace with no build config)")
    add_server_args(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.overlap is not None and args.overlap < 1:
        raise WorkbenchError(f"--overlap must be at least 1, not {args.overlap}")
    if args.catch < 0:
        raise WorkbenchError(f"--catch must be 0 or more, not {args.catch}")

    ws = open_workspace(args.workspace)
    if not ws.has_manifest(INPUT_STAGE):
        raise WorkbenchError(f"no '{INPUT_STAGE}' manifest at {ws.manifest_path(INPUT_STAGE)}; "
                             f"run the WER stage first (python -m construction.wer{server_flags(args.workspace)})")
    ws.check_lineage(INPUT_STAGE)  # a row added by hand to the wer manifest is never labelled
    samples = list(ws.read_samples(INPUT_STAGE))
    if not samples:
        raise WorkbenchError(f"{ws.manifest_path(INPUT_STAGE)} holds no samples; nothing to push")
    controls, orphans = read_controls(ws, {s.sample_id for s in samples})
    recorded = read_state(ws).get("staged")  # a workspace pushed staged (or not) goes on so
    staged = args.staged if args.staged is not None else recorded if recorded is not None else staged_default(ws)
    if staged and args.overlap is not None:
        raise WorkbenchError("--overlap is for a push of all arms at once (add --no-staged): a staged push serves "
                             "each task to 2 annotators (the labels that could decide it under >= 2/3 of 3) and "
                             "asks one more only where they disagree")
    stage_plan = None
    if staged:
        stage_plan = staged_plan(ws, samples, controls)
        wanted = {role: set(ids) for role, ids in stage_plan.items.items()}
        samples_in = {role: [s for s in samples if s.sample_id in wanted[role]] for role in ARMS}
        for kind in OTHER_SCENES:
            samples_in[kind] = [s for s in samples if other_item_id(kind, s.sample_id) in wanted["scene"]]
        controls = [c for c in controls if c.sample_id in set(stage_plan.controls)]
    else:
        samples_in = {role: samples for role in ARMS}
    state = read_state(ws)
    recorded_title = (state.get("project") or {}).get("title")
    if recorded_title == f"AOR-Bench {ws.root.name}":  # the old default named the folder: renamed (by id)
        recorded_title = None
    base = args.project or recorded_title or default_project_title(ws, state)  # record_keys writes its id
    frames = workspace_frames(ws, samples)  # reads config.yaml and the taxonomy: once
    specs = {role: arm_spec(role, frames) for role in ARMS}

    server = connect_from_args(args)
    bound = recorded_arms(state, args.project)
    entries = {role: (state.get("arms") or {}).get(role) if role in bound else None for role in ARMS}
    for role in ARMS:  # another workspace's project, or one asking something else: refused before any change
        project = (get_project(server, bound[role], arm_title(base, role), DELETED_HINT) if role in bound
                   else find_project(server, arm_title(base, role)))
        if project is not None:
            check_owner(server, project, state, entries[role])
            check_config(server, project, specs[role])
    with_catch = bool(samples_in["mixture"])  # staged: the mixture arm's checks come with its first samples
    check_pushable(ws, [i for items in arm_items(samples_in, controls, read_catch(ws) if with_catch else []).values()
                        for i in items], server)
    catch = ensure_catch(ws, args.catch) if with_catch else []  # made (offline TTS) once the push can be done
    items = arm_items(samples_in, controls, catch)
    check_pushable(ws, catch_items(catch), server)
    keyed = record_keys(ws, state, [i for role in ARMS for i in items[role]])
    secret = state["task_key_secret"]

    results = []
    for role in ARMS:
        mine = {k: item for k, item in keyed.items() if item.role == role}
        results.append(push_items(ws, server, specs[role], arm_title(base, role), mine,
                                  stage_plan.served if stage_plan is not None else args.overlap,
                                  seed=shuffle_seed(secret, role), project_id=bound.get(role), state=state,
                                  entry=entries[role]))
        if stage_plan is not None and stage_plan.overlap[role]:  # after the import: importing resets overlaps
            by_key = task_keys(server, results[-1].project_id)
            reopen(server, {i: n for item_id, n in stage_plan.overlap[role].items()
                            for i in by_key.get(task_key(secret, role, item_id), [])})
    with ws.lock():
        state = read_state(ws)
        before = state.get("arms") or {}
        now = utc_now()
        state["project"] = {"title": base, "url": server.url}
        state["staged"] = staged  # validation decides an arm early (curtailed) only for a staged workspace
        state["arms"] = {}
        for r in results:
            entry = dict(before.get(r.role) or {}) if (before.get(r.role) or {}).get("id") == r.project_id else {}
            entry.update(id=r.project_id, title=r.title, url=server.url, **{MARKED: True})
            note_config(entry, "label_config" in r.reset, now)  # found edited: labels since the last check are out
            note_config(entry, False, now)  # ... and set back now
            entry["config_ok_at"] = now
            state["arms"][r.role] = entry
        write_state(ws, state)
    for r in results:
        print(f"{r.role:>8}: project {r.title!r} (id {r.project_id})" + (" created" if r.created else "")
              + f": imported {r.imported} new task(s), {r.already} already there, {r.task_count} in total "
              f"({r.seconds:.1f} s)" + (f"; reset {', '.join(r.reset)}" if r.reset else ""))
    others = {kind: len(other_items(kind, heads_only(samples_in.get(kind, samples_in["scene"]))))
              for kind in OTHER_SCENES}
    print(f"scene arm: {len(heads_only(samples_in['scene']))} scene(s) and {others['danger']} danger scene(s) (of the danger "
          "twins)" + (f" and {others['irrelevant']} irrelevant background(s) (of the irrelevant twins)"
                      if others["irrelevant"] else "") + ", one task each, alike")
    print(f"mixture arm: {len(samples_in['mixture'])} sample(s), {len(controls)} control(s), "
          f"{len(catch)} catch item(s)")
    if stage_plan is not None:
        print(stage_plan.summary())
        print("\n".join(stage_plan.round_lines({r.role: r.imported for r in results})))
        if any(stage_plan.undecided.values()):  # else the line before says nothing is open
            print(f"next round, once these are labelled: {server.command('annotation.pull')}, then "
                  f"python -m validation.agreement{server_flags(args.workspace)}, then "
                  f"{server.command('annotation.push')}")
    if orphans:
        print(f"note: {len(orphans)} control(s) belong to samples not in '{INPUT_STAGE}' and were left out")
    print(f"open {server.url}/projects/ ; invite annotators: {server.command('annotation.invite')}")
    return 0


if __name__ == "__main__":
    run_main(main, sys.argv[1:])

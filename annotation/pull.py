"""Pull the three arms' annotations from Label Studio: the 'annotated' manifest and its companions.

    python -m annotation.pull --workspace W          (every flag: --help)

Exports the speech, scene and mixture projects (JSON, every task), maps each task's opaque key back to
its sample and arm (<W>/annotation_tasks.json) and rebuilds, from scratch:

  manifests/annotated.jsonl           every 'wer' sample with its annotations of all three arms (`arm`)
  manifests/annotated_controls.jsonl  every control (manifests/controls.jsonl) with its mixture-arm ones
  manifests/annotated_danger.jsonl    every sample with a danger twin, its annotations those of its danger
                                      scene in the scene arm (arm "scene"; validation certifies it)
  manifests/annotated_irrelevant.jsonl  the same for the irrelevant twin's background (validation certifies
                                      that listeners heard no frame in it)
  stats/annotated.json                progress per arm, a report per annotator, what was dropped and why

Each annotation: annotator = a stable pseudonym (HMAC of the email with the workspace's salt; the email is
never written), arm, label, 'I could make out the words' (mixture), rationale, lead time, listened (lead
time at least the clip's length), created_at, updated_at; skips are kept as cancelled annotations with no
label. The rules:

  - latest wins: one annotation per person and task, their latest non-cancelled one by update time (a
    cancelled one only when that is all they did);
  - whoever changed it owns it: an annotation last changed by someone other than its author (Label Studio
    lets any user update anyone's annotation) is credited to that person, with updated_by set;
  - not counted, and listed: malformed annotations, those Label Studio records no maker of, those of a
    task that does not play what push sent for its key, those made while the arm's config was edited;
    pushed tasks that are gone are listed as missing;
  - one arm per person and sample: a person who heard a sample in two arms keeps the judgement of the arm
    they heard first (their earliest annotation, a skip included); the later arm's is dropped and reported;
  - catch items (attention checks) are scored per annotator, never written to a sample.

Adjudication decisions already on the samples (python -m validation.adjudicate pull) are kept. Rerunning
gives the same manifests.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

from annotation.deleted import keep_deleted, outputs_of
from annotation.labelstudio import (
    Server,
    SERVER_ENV,
    add_server_args,
    connect_from_args,
    export_tasks,
    find_project,
    get_project,
    user_emails,
)
from annotation.ownership import check_owner
from annotation.protocol import (
    OTHER_SCENES,
    ArmSpec,
    arm_spec,
    audio_field,
    config_changed,
    line_heads,
    other_audio,
    other_item_id,
    read_catch,
    read_controls,
    read_task_map,
    workspace_frames,
)
from annotation.pulled import (
    ProjectAnnotations,
    Pulled,
    annotator_report,
    annotator_table,
    progress_table,
    stats,
)
from annotation.state import (
    ADJUDICATION_SOURCE,
    CONTROLS_OUTPUT_STAGE,
    INPUT_STAGE,
    OTHER_OUTPUT_STAGES,
    OUTPUT_STAGE,
    Parsed,
    demo_annotators,
    format_problems,
    made_while_edited,
    note_config,
    one_per_annotator,
    open_workspace,
    parse_annotation,
    plays_audio,
    pseudonym_salt,
    read_state,
    utc_now,
    write_state,
)
from annotation.written import KEY as WRITTEN
from annotation.written import digests
from construction.core.cli import Parser, add_workspace, run_main
from construction.core.errors import WorkbenchError
from construction.core.record import ARMS, Annotation, AudioRef, Sample


def collect(server: Server, project_id: int, spec: ArmSpec, task_map: dict[str, tuple[str, str]],
            audio: dict[str, AudioRef | None], salt: str, demo: frozenset[str] = frozenset(),
            edited: Sequence[Sequence[str | None]] = ()) -> ProjectAnnotations:
    """Export a project and turn its annotations into pseudonymous Annotation records per item.
    audio: item id -> the audio push sends for it in this project (the items pulled here); edited: the
    windows in which its labelling config was edited (state.note_config): what was labelled then is
    not counted."""
    tasks = export_tasks(server, project_id)
    emails = user_emails(server)
    parsed: dict[str, list[Parsed]] = defaultdict(list)
    out = ProjectAnnotations(spec.role, {}, task_count=len(tasks))
    tasks_per_item: Counter = Counter()
    with_key: set[str] = set()  # items with a task of their key, whatever it plays
    for task in tasks:
        data = task.get("data") or {}
        key = str(data.get("key") or "")
        item_id, role = task_map.get(key, ("", ""))
        if not key or item_id not in audio or role != spec.role:
            why = ("no key" if not key else "a key this workspace never made" if key not in task_map
                   else f"a key of the {role} arm" if role != spec.role else f"{item_id}, not in this workspace now")
            out.unknown_tasks.append(f"task {task.get('id')}: {why}")
            continue
        with_key.add(item_id)
        out.held[item_id] = out.held.get(item_id, 0) + sum(
            1 for raw in task.get("annotations") or [] if not raw.get("was_cancelled"))
        if not plays_audio(data.get("audio"), audio[item_id]):
            n = len(task.get("annotations") or [])
            shown = str(data.get("audio"))[:120]
            out.problems.append(f"{spec.role} task {task.get('id')} ({item_id}): its audio {shown!r} is not what push "
                                f"sent for its key; its {n} annotation(s) are not counted")
            continue
        tasks_per_item[item_id] += 1
        out.seen.setdefault(item_id, set()).update(str(raw.get("created_at") or "")
                                                   for raw in task.get("annotations") or [])
        for raw in task.get("annotations") or []:
            where = f"{spec.role} task {task.get('id')} ({item_id}) annotation {raw.get('id')}"
            p = parse_annotation(raw, where, emails, salt, spec, demo)
            out.problems.extend(p.problems)
            if p.not_counted:
                continue
            if made_while_edited(p.updated_at, edited):
                out.problems.append(f"{where}: made while the project's labelling config was edited; not counted")
                continue
            parsed[item_id].append(p)
            if p.reattributed:
                out.reattributed.append({"arm": spec.arm, "item": item_id, "credited_to": p.annotation.annotator,
                                         "author": p.author})
            # who heard it, and when: the person who made it (the author named may be anyone: see parse_annotation)
            person, when = p.annotation.annotator, (p.updated_at if p.reattributed else p.created_at)
            met = out.first_heard.setdefault(item_id, {})
            if when and (person not in met or when < met[person]):
                met[person] = when
    pushed = {item_id for item_id, role in task_map.values() if role == spec.role and item_id in audio}
    out.missing = sorted(pushed - with_key)
    for item_id, n in sorted(tasks_per_item.items()):
        if n > 1:
            out.problems.append(f"{item_id}: {n} tasks in the {spec.role} project {project_id}; their annotations "
                                "were merged")
    out.by_item = {item_id: one_per_annotator(items) for item_id, items in parsed.items()}
    return out


def with_listened(annotation: Annotation, audio: AudioRef | None) -> Annotation:
    """listened: the lead time (opening the task to submitting) was at least the clip's length."""
    if annotation.lead_time_s is None or audio is None:
        return annotation
    return annotation.model_copy(update={"listened": annotation.lead_time_s >= audio.duration_s})


def one_arm_per_person(sample_id: str, chosen: dict[str, list[Annotation]], found: dict[str, ProjectAnnotations],
                       heard: dict[str, Sequence[str]] | None = None
                       ) -> tuple[dict[str, list[Annotation]], list[dict[str, str]]]:
    """A person's judgements of one sample in two arms are not both counted: the arm they met first
    (earliest annotation of any kind; ties in arm order) keeps theirs, the others are dropped. `heard`: per
    arm, the items that count as meeting this sample there (default: the sample's own): for a voice
    variant, every variant of its line (the same words) and the line's scene task."""
    first: dict[str, tuple[str, int, str]] = {}
    for index, role in enumerate(ARMS):
        for item_id in (heard or {}).get(role, [sample_id]):
            for person, when in found[role].first_heard.get(item_id, {}).items():
                candidate = (when, index, role)
                if person not in first or candidate < first[person]:
                    first[person] = candidate
    kept: dict[str, list[Annotation]] = {}
    dropped = []
    for role in ARMS:
        kept[role] = []
        for a in chosen.get(role, []):
            home = first.get(a.annotator, ("", 0, role))[2]
            if home == role:
                kept[role].append(a)
            else:
                dropped.append({"annotator": a.annotator, "sample_id": sample_id, "kept_arm": home, "dropped_arm": role})
    return kept, dropped


def assemble(samples: Sequence[Sample], controls: Sequence[Sample], catch: Sequence[Sample],
             found: dict[str, ProjectAnnotations], previous: dict[str, list[Annotation]]) -> Pulled:
    """The samples with their annotations of all three arms (after the cross-arm rule), the controls with
    their mixture-arm annotations, and the catch items scored per annotator."""
    def chosen(role: str, item_id: str, audio: AudioRef | None) -> list[Annotation]:
        return [with_listened(p.annotation, audio) for p in found[role].by_item.get(item_id, [])]

    # a line's variants share its scene-arm tasks (the head's: annotation.protocol.line_heads), and a person
    # who met one variant of a line in an arm has heard its words, or its scene, there
    head_of = line_heads(samples)
    line: dict[str, list[str]] = {}
    for s in samples:
        line.setdefault(head_of[s.sample_id], []).append(s.sample_id)
    out_samples, dropped = [], []
    for s in samples:
        head = head_of[s.sample_id]
        per_arm = {role: chosen(role, head if role == "scene" else s.sample_id, getattr(s, audio_field(role)))
                   for role in ARMS}
        heard = {"speech": line[head], "scene": [head], "mixture": line[head]}
        kept, gone = one_arm_per_person(s.sample_id, per_arm, found, heard)
        dropped.extend(gone)
        annotations = [a for role in ARMS for a in kept[role]]
        out_samples.append(s.model_copy(deep=True, update={
            "annotations": [*annotations, *previous.get(s.sample_id, [])]}))
    out_controls = [c.model_copy(deep=True, update={"annotations": chosen("mixture", c.sample_id, c.mixture)})
                    for c in controls]
    # a danger scene or an irrelevant background is other sounds than the sample's scene, with no speech:
    # the cross-arm rule (one arm per person and speech) does not apply to it
    others = {kind: [s.model_copy(deep=True, update={
        "annotations": chosen("scene", other_item_id(kind, head_of[s.sample_id]), other_audio(kind, s))})
        for s in samples if other_audio(kind, s) is not None] for kind in OTHER_SCENES}
    report: dict[str, dict[str, Any]] = {}
    for c in catch:
        for a in chosen("mixture", c.sample_id, c.mixture):
            r = report.setdefault(a.annotator, {"met": 0, "passed": 0, "failed": [], "skipped": 0})
            if a.cancelled:
                r["skipped"] += 1
                continue
            r["met"] += 1
            if a.label == c.custom.get("expected"):
                r["passed"] += 1
            else:
                r["failed"].append({"item": c.sample_id, "expected": c.custom.get("expected"), "label": a.label})
    return Pulled(out_samples, out_controls, others, report, dropped)


def note_configs(state: dict[str, Any], projects: dict[str, Any], edits: dict[str, str], now: str) -> bool:
    """state.note_config for each arm recorded with the project pulled; -> whether the state changed."""
    changed = False
    for role, edited in edits.items():
        entry = (state.get("arms") or {}).get(role)
        if isinstance(entry, dict) and entry.get("id") == projects[role].id:
            changed |= note_config(entry, bool(edited), now)
    return changed


def resolve_arms(server: Server, state: dict[str, Any], title: str | None) -> dict[str, Any]:
    """role -> the Label Studio project of that arm: by --project TITLE (exact titles '<TITLE> — <arm>'),
    else the projects recorded at push time, by id (whatever they are titled now)."""
    if title and title != (state.get("project") or {}).get("title"):
        projects = {}
        for role in ARMS:
            project = find_project(server, f"{title} — {role}")
            if project is None:
                raise WorkbenchError(f"no project titled {title + ' — ' + role!r} at {server.url}; push first: "
                                     f"{server.command('annotation.push', '--project', shlex.quote(title))}")
            check_owner(server, project, state)  # another workspace's project of that title: refused
            projects[role] = project
        return projects
    arms = state.get("arms")
    if not arms:
        if (state.get("project") or {}).get("id") is not None:
            raise WorkbenchError(
                f"this workspace was pushed with the one-project protocol (project {state['project']['id']}, "
                "transcript and context shown); its labels cannot be pulled as blind arms. Push again: "
                "python -m annotation.push makes the three arm projects")
        raise WorkbenchError("no arm projects recorded in this workspace; push first, or pass --project TITLE")
    missing = [role for role in ARMS if role not in arms]
    if missing:
        raise WorkbenchError(f"no {', '.join(missing)} project recorded in this workspace; push again")
    projects = {role: get_project(server, int(arms[role]["id"]), arms[role].get("title", "")) for role in ARMS}
    for role in ARMS:  # another server's projects of these ids (another workspace's): refused, nothing written
        check_owner(server, projects[role], state, arms[role])
    return projects


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m annotation.pull", description=__doc__.split("\n")[0], env=SERVER_ENV)
    add_workspace(parser)
    parser.add_argument("--project", help="title of the three projects, before ' — speech' etc. (default: the "
                                          "ones recorded by push)")
    add_server_args(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)

    ws = open_workspace(args.workspace)
    if not ws.has_manifest(INPUT_STAGE):
        raise WorkbenchError(f"no '{INPUT_STAGE}' manifest at {ws.manifest_path(INPUT_STAGE)}; nothing to pull onto")
    ws.check_lineage(INPUT_STAGE)  # a row added by hand to the wer manifest is never labelled
    samples = list(ws.read_samples(INPUT_STAGE))
    controls, _ = read_controls(ws, {s.sample_id for s in samples})
    catch = read_catch(ws)
    state = read_state(ws)
    salt = pseudonym_salt(state)
    task_map = read_task_map(ws)

    server = connect_from_args(args)
    projects = resolve_arms(server, state, args.project)
    for role in ARMS:
        recorded = ((state.get("arms") or {}).get(role) or {}).get("title")
        if recorded and projects[role].title != recorded:
            print(f"note: the {role} arm (project {projects[role].id}) is now titled {projects[role].title!r}, not "
                  f"{recorded!r}; pulled by its id (push sets the title back)")
    frames = workspace_frames(ws, samples)
    heard = {"speech": samples, "scene": samples, "mixture": [*samples, *controls, *catch]}
    audio = {role: {s.sample_id: getattr(s, audio_field(role)) for s in heard[role]} for role in ARMS}
    audio["scene"].update({other_item_id(kind, s.sample_id): other_audio(kind, s) for kind in OTHER_SCENES
                           for s in samples if other_audio(kind, s) is not None})
    specs = {role: arm_spec(role, frames) for role in ARMS}
    edits = {role: config_changed(projects[role].label_config or "", specs[role]) for role in ARMS}
    now = utc_now()
    note_configs(state, projects, edits, now)
    for role, edited in edits.items():  # the arms' labelling configs as push set them?
        if edited:
            print(f"warning: the {role} arm's labelling config was edited ({edited}): labels made since push last "
                  "checked it are not counted; push sets it back")
    windows = {role: ((state.get("arms") or {}).get(role) or {}).get("config_edited") or [] for role in ARMS}
    found = {role: collect(server, projects[role].id, specs[role], task_map, audio[role], salt,
                           demo_annotators(state), windows[role]) for role in ARMS}
    overlaps = {role: projects[role].maximum_annotations or 3 for role in ARMS}
    problems = [p for role in ARMS for p in found[role].problems]
    # 'annotated' (the adjudication decisions on it) and annotation.json are read again and written under the
    # lock: validation.adjudicate pull and push write them too, and neither write may be lost.
    with ws.lock():
        current = read_state(ws)
        if current.get("pseudonym_salt", salt) != salt:
            raise WorkbenchError(f"{ws.root / 'annotation.json'} changed while pulling (another run?); pull again")
        save_state = not current.get("pseudonym_salt")
        current["pseudonym_salt"] = salt
        save_state |= note_configs(current, projects, edits, now)
        previous: dict[str, list[Annotation]] = {}
        if ws.has_manifest(OUTPUT_STAGE):
            for s in ws.read_samples(OUTPUT_STAGE):
                kept = [a for a in s.annotations if a.source == ADJUDICATION_SOURCE]
                if kept:
                    previous[s.sample_id] = kept
        pulled = assemble(samples, controls, catch, found, previous)
        # what Label Studio lost since the last pull (a deleted annotation or task) is kept as last pulled
        deleted = keep_deleted(ws, outputs_of(pulled), {role: found[role].seen for role in ARMS})
        report = annotator_report(pulled, found)
        ws.write_manifest(OUTPUT_STAGE, pulled.samples)
        ws.write_manifest(CONTROLS_OUTPUT_STAGE, pulled.controls)
        for kind, stage in OTHER_OUTPUT_STAGES.items():
            ws.write_manifest(stage, pulled.others[kind])
        ws.write_stats(OUTPUT_STAGE, {**stats(pulled, report, projects, overlaps, found, problems),
                                      "deleted_kept": deleted, WRITTEN: digests(ws)})
        if save_state:
            write_state(ws, current)

    others = [s for items in pulled.others.values() for s in items]
    n = (sum(len(s.annotations) for s in [*pulled.samples, *pulled.controls, *others])
         - sum(map(len, previous.values())) - len(deleted))
    print(f"pulled {n} annotation(s) from {len(ARMS)} arm projects at {server.url} onto {len(samples)} sample(s), "
          f"{len(controls)} control(s), {len(pulled.danger)} danger scene(s) and {len(pulled.others['irrelevant'])} "
          f"irrelevant background(s): {ws.manifest_path(OUTPUT_STAGE)}, {ws.manifest_path(CONTROLS_OUTPUT_STAGE)}, "
          + ", ".join(str(ws.manifest_path(stage)) for stage in OTHER_OUTPUT_STAGES.values()))
    print(progress_table(pulled, overlaps))
    if report:
        print("per annotator (labels counted after the rules; catch: passed/met):")
        print(annotator_table(report))
    failed = {who: r["catch"]["failed"] for who, r in report.items() if r["catch"]["failed"]}
    if failed:
        print(f"catch items failed by {len(failed)} annotator(s): "
              + "; ".join(f"{who} {len(v)}" for who, v in failed.items()))
    if pulled.dropped:
        print(f"cross-arm: {len(pulled.dropped)} judgement(s) dropped (the person had heard the sample in "
              "another arm first):\n" + format_problems(
                  [f"{d['annotator']} {d['sample_id']}: kept {d['kept_arm']}, dropped {d['dropped_arm']}"
                   for d in pulled.dropped]))
    changed = [c for role in ARMS for c in found[role].reattributed]
    if changed:
        print(f"{len(changed)} annotation(s) were last changed by someone other than their author and are "
              "credited to that person:\n" + format_problems(
                  [f"{c['arm']} {c['item']}: credited to {c['credited_to']}, author {c['author']}" for c in changed]))
    if deleted:
        print(f"deleted: {len(deleted)} annotation(s) counted by the last pull are gone from Label Studio (any user "
              "may delete anyone's there); each is kept as it was last pulled, so a deletion changes no outcome:\n"
              + format_problems(deleted))
    missing = [f"{role}: {item_id}" for role in ARMS for item_id in found[role].missing]
    if missing:
        print(f"missing: {len(missing)} pushed task(s) are no longer in their project (deleted in Label Studio?); "
              f"the labels pulled from them before are kept; push again to recreate them:\n{format_problems(missing)}")
    unknown = [f"{role}: {t}" for role in ARMS for t in found[role].unknown_tasks]
    if unknown:
        print(f"note: {len(unknown)} task(s) are not this workspace's current samples, controls or catch items "
              f"and were ignored:\n{format_problems(unknown)}")
    if problems:
        print(f"problems ({len(problems)}):\n{format_problems(problems)}")
    return 0


if __name__ == "__main__":
    run_main(main, sys.argv[1:])

"""Adjudicate the samples human annotators disagree on, blind, in a separate Label Studio project.

    python -m validation.adjudicate push --workspace W   (every flag: --help)
    python -m validation.adjudicate pull --workspace W
    python -m validation.agreement --workspace W      # then: the decisions become final

push sends the adjudication queue of the last agreement run (validated.rejected rows with reason
needs_adjudication) to the project "<TITLE> — adjudication" (TITLE: the arms' title): overlap 1, labels
benign | harmful only. The adjudicator hears the mixture only, like the mixture arm: the task's data is
the audio URL and an opaque key, and no earlier vote or rationale is shown, unless --show-votes (then
the labels so far, per arm, are shown beside the clip; a project is made one way or the other and keeps
it). Only the named adjudicators decide (--adjudicator EMAIL, repeatable, recorded by push as pseudonyms;
default: the API token's account); others' answers are reported, never counted.
pull exports that project and records each sample's latest decision (by update time) on the
'annotated' manifest with validation.agreement.apply_adjudication (an annotation with
source="adjudication", arm "mixture"). Label Studio stays the source of truth: pull replaces all earlier
decisions with the ones in the project, so rerunning it changes nothing. annotation.pull keeps these
decisions when it rebuilds the manifest. Rerunning validation.agreement then marks the samples
decided_by "adjudication".
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter

from annotation.labelstudio import SERVER_ENV, add_server_args, connect_from_args, resolve_project
from annotation.ownership import MARKED
from annotation.protocol import (
    ADJUDICATION,
    Item,
    arm_spec,
    config_changed,
    read_task_map,
    shuffle_seed,
)
from annotation.pull import collect
from annotation.server import server_flags
from annotation.push import check_pushable, push_items, record_keys
from annotation.written import check_pulled, record_rewrite
from annotation.state import (
    ADJUDICATION_SOURCE,
    default_project_title,
    demo_annotators,
    format_problems,
    note_config,
    open_workspace,
    pseudonym,
    pseudonym_salt,
    read_state,
    utc_now,
    write_state,
)
from construction.core.cli import Parser, add_workspace, run_main
from construction.core.errors import WorkbenchError
from construction.core.record import ARMS, Annotation, Sample
from construction.core.workspace import Workspace
from validation.agreement import (
    INPUT_STAGE,
    OUTPUT_STAGE,
    ConsensusRule,
    apply_adjudication,
)

QUEUE_REASON = "needs_adjudication:"
WAITING_REASON = "needs_labels:"  # validation's samples still short of labels: no adjudicator decides them
TITLE_SUFFIX = " — adjudication"


def adjudication_title(ws: Workspace, state: dict) -> str:
    return (state.get("project", {}).get("title") or default_project_title(ws, state)) + TITLE_SUFFIX



def read_queue(ws: Workspace) -> list[Sample]:
    """The samples the last agreement run sent to adjudication, as they are in 'annotated' now."""
    if not ws.has_manifest(INPUT_STAGE):
        raise WorkbenchError(f"no '{INPUT_STAGE}' manifest at {ws.manifest_path(INPUT_STAGE)}; "
                             f"pull the annotations first (python -m annotation.pull --workspace {ws.root})")
    if not ws.has_manifest(OUTPUT_STAGE):
        raise WorkbenchError(f"no '{OUTPUT_STAGE}' manifest at {ws.manifest_path(OUTPUT_STAGE)}; run "
                             f"python -m validation.agreement --workspace {ws.root} first")
    if ws.manifest_path(INPUT_STAGE).stat().st_mtime_ns > ws.manifest_path(OUTPUT_STAGE).stat().st_mtime_ns:
        raise WorkbenchError(f"{ws.manifest_path(INPUT_STAGE)} changed after the last agreement run; rerun "
                             f"python -m validation.agreement --workspace {ws.root} first")
    queued = [r.sample.sample_id for r in ws.read_rejected(OUTPUT_STAGE) if r.reason.startswith(QUEUE_REASON)]
    annotated = {s.sample_id: s for s in ws.read_samples(INPUT_STAGE)}
    missing = [sid for sid in queued if sid not in annotated]
    if missing:
        raise WorkbenchError(f"{len(missing)} queued sample(s) are not in '{INPUT_STAGE}' any more (e.g. "
                             f"{missing[0]}); rerun python -m validation.agreement --workspace {ws.root}")
    return [annotated[sid] for sid in queued]


def votes_text(sample: Sample) -> str:
    """What the annotators said, per arm, for an adjudicator who asked to see it (--show-votes)."""
    human = [a for a in sample.annotations if a.source != ADJUDICATION_SOURCE and not a.cancelled and a.label]
    parts = []
    for arm in ARMS:
        counts = Counter(a.label for a in human if a.arm == arm)
        if counts:
            parts.append(f"{arm}: " + ", ".join(f"{label} {n}" for label, n in sorted(counts.items())))
    text = "; ".join(parts) or "no labels"
    reasons = [f'{a.arm} {a.label}: "{a.rationale}"' for a in human if a.rationale]
    return text + ("; rationales: " + " | ".join(reasons) if reasons else "")


def push(ws: Workspace, args: argparse.Namespace) -> int:
    queue = read_queue(ws)
    if not queue:
        waiting = [r for r in ws.read_rejected(OUTPUT_STAGE) if r.reason.startswith(WAITING_REASON)]
        if not waiting:
            print("the adjudication queue is empty: every labelled sample reached consensus or was decided")
            return 0
        flags = server_flags(args.workspace, args.data_dir)
        print(f"the adjudication queue is empty, but {len(waiting)} sample(s) still need labels, which adjudication "
              f"does not decide (e.g. {waiting[0].sample.sample_id}: {waiting[0].reason.split(': ', 1)[1]}); label "
              f"them: python -m annotation.push{flags}, then python -m annotation.pull{flags} and "
              f"python -m validation.agreement{server_flags(args.workspace)} once they are labelled")
        return 0
    state = read_state(ws)
    recorded = state.get("adjudication") or {}
    title = args.project or recorded.get("title") or adjudication_title(ws, state)
    bound = recorded.get("id") if title == recorded.get("title") else None  # by id: never a decoy of that title
    server = connect_from_args(args)
    items = [Item(s.sample_id, ADJUDICATION, "sample", s.mixture) for s in queue]
    check_pushable(ws, items, server)
    keyed = record_keys(ws, state, items)
    extra = {s.sample_id: {"votes": votes_text(s)} for s in queue} if args.show_votes else None
    result = push_items(ws, server, arm_spec(ADJUDICATION, with_votes=args.show_votes), title, keyed, overlap=1,
                        extra_data=extra, seed=shuffle_seed(state["task_key_secret"], ADJUDICATION),
                        project_id=None if bound is None else int(bound), state=state,
                        entry=recorded if bound is not None else None)
    named = adjudicator_emails(server, args.adjudicator)
    with ws.lock():
        state = read_state(ws)
        salt = pseudonym_salt(state)
        before = state.get("adjudication") or {}
        kept = before.get("adjudicators") if not args.adjudicator else None
        entry = dict(before) if before.get("id") == result.project_id else {}
        now = utc_now()
        note_config(entry, "label_config" in result.reset, now)  # found edited: decisions since are out
        note_config(entry, False, now)  # ... and set back now
        entry.update(id=result.project_id, title=title, url=server.url, config_ok_at=now, **{MARKED: True},
                     adjudicators=sorted(kept or {pseudonym(e, salt) for e in named}))
        state["adjudication"] = entry
        write_state(ws, state)
    print(f"adjudication project {title!r} (id {result.project_id}) at {server.url}: {result.imported} new "
          f"sample(s), {result.already} already there; queue {len(queue)}; "
          + ("the votes so far are shown (--show-votes)" if args.show_votes else "blind: mixture audio only"))
    print("decided by: " + (", ".join(named) if not kept else f"the {len(kept)} adjudicator(s) named before")
          + " (only their answers count; --adjudicator EMAIL names others)")
    print(f"open {server.url}/projects/{result.project_id}/data , decide each sample (benign or harmful), then run "
          f"{server.command('validation.adjudicate', 'pull')}")
    return 0


def adjudicator_emails(server, given: list[str] | None) -> list[str]:
    """Who decides: the addresses given, else the account of the token in use (the lead who pushes)."""
    if given:
        return sorted({e.strip().lower() for e in given})
    with server.errors("reading the token's account"):
        return [server.client.users.whoami().email.strip().lower()]


def latest_decisions(by_sample: dict[str, list[Annotation]], labels: tuple[str, ...]) -> dict[str, Annotation]:
    """Per sample, the latest non-cancelled decision with a valid label (annotations come sorted by time)."""
    out = {}
    for sid, items in by_sample.items():
        valid = [a for a in items if not a.cancelled and a.label in labels]
        if valid:
            out[sid] = valid[-1]
    return out


def pull(ws: Workspace, args: argparse.Namespace) -> int:
    if not ws.has_manifest(INPUT_STAGE):
        raise WorkbenchError(f"no '{INPUT_STAGE}' manifest at {ws.manifest_path(INPUT_STAGE)}; nothing to record onto")
    samples = list(ws.read_samples(INPUT_STAGE))
    state = read_state(ws)
    if not args.project and not state.get("adjudication") and not read_queue(ws):
        print("the adjudication queue is empty and no adjudication project was pushed: nothing to record")
        return 0
    salt = pseudonym_salt(state)
    server = connect_from_args(args)
    project = resolve_project(server, state.get("adjudication"), args.project, "adjudication project", state)
    spec = arm_spec(ADJUDICATION, with_votes="$votes" in (project.label_config or ""))
    edited, now = config_changed(project.label_config or "", spec), utc_now()
    if edited:
        print(f"warning: the adjudication project's labelling config was edited ({edited}): decisions made since "
              "push last checked it are not counted; validation.adjudicate push sets it back")
    entry = state.get("adjudication") if (state.get("adjudication") or {}).get("id") == project.id else None
    if entry is not None:
        note_config(entry, bool(edited), now)
    windows = (entry or {}).get("config_edited") or ([["", None]] if edited else [])
    found = collect(server, project.id, spec, read_task_map(ws), {s.sample_id: s.mixture for s in samples}, salt,
                    demo_annotators(state), windows)
    recorded = set((state.get("adjudication") or {}).get("adjudicators") or [])
    adjudicators = recorded | {pseudonym(e, salt) for e in (args.adjudicator or [])}
    if not adjudicators:  # a workspace pushed before adjudicators were named: the lead's account decides
        adjudicators = {pseudonym(e, salt) for e in adjudicator_emails(server, [])}
    others = sorted(f"{sid}: {p.annotation.annotator} answered {p.annotation.label or 'nothing'}"
                    for sid, items in found.by_item.items() for p in items
                    if p.annotation.annotator not in adjudicators and not p.annotation.cancelled)
    by_sample = {sid: [p.annotation for p in items if p.annotation.annotator in adjudicators]
                 for sid, items in found.by_item.items()}
    decisions = latest_decisions(by_sample, spec.labels)
    # 'annotated' and annotation.json are read again and written under the lock: annotation.pull rewrites
    # them too, and neither write may be lost.
    with ws.lock():
        current = read_state(ws)
        if current.get("pseudonym_salt", salt) != salt:
            raise WorkbenchError(f"{ws.root / 'annotation.json'} changed while pulling (another run?); pull again")
        check_pulled(ws)  # a hand edit of the pulled labels is not carried into a rewrite
        samples = list(ws.read_samples(INPUT_STAGE))
        # Label Studio is the source of truth: earlier decisions are replaced by what the project holds now.
        stripped = [s.model_copy(deep=True, update={"annotations": [a for a in s.annotations
                                                                    if a.source != ADJUDICATION_SOURCE]})
                    for s in samples]
        decided = apply_adjudication(stripped, decisions, ConsensusRule())
        ws.write_manifest(INPUT_STAGE, decided)
        record_rewrite(ws, INPUT_STAGE)
        save = not current.get("pseudonym_salt")
        current["pseudonym_salt"] = salt
        mine = current.get("adjudication") or {}
        if mine.get("id") == project.id:
            save |= note_config(mine, bool(edited), now)
        if save:
            write_state(ws, current)
    counts = Counter(a.label for a in decisions.values())
    waiting = found.task_count - len(found.unknown_tasks) - len(decisions)
    print(f"recorded {len(decisions)} adjudication decision(s) from {project.title!r} (id {project.id}) on "
          f"{ws.manifest_path(INPUT_STAGE)}: " + (", ".join(f"{k} {v}" for k, v in sorted(counts.items())) or "none")
          + f"; {max(waiting, 0)} task(s) still undecided")
    by_id = {s.sample_id: s for s in samples}
    judged = sorted(f"{sid}: {d.annotator} had labelled it in the "
                    + "/".join(sorted({a.arm for a in by_id[sid].annotations
                                       if a.annotator == d.annotator and a.source != ADJUDICATION_SOURCE})) + " arm"
                    for sid, d in decisions.items()
                    if any(a.annotator == d.annotator and a.source != ADJUDICATION_SOURCE
                           for a in by_id[sid].annotations))
    if judged:
        print(f"note: {len(judged)} decision(s) were made by someone who had labelled the sample before:\n"
              + format_problems(judged))
    if others:
        print(f"note: {len(others)} answer(s) by accounts not named adjudicators were not counted:\n"
              + format_problems(others))
    if found.unknown_tasks:
        print(f"note: {len(found.unknown_tasks)} task(s) are not in '{INPUT_STAGE}' and were ignored:\n"
              + format_problems(sorted(found.unknown_tasks)))
    if found.missing:
        print(f"missing: {len(found.missing)} pushed task(s) are no longer in the project (deleted?); push again:\n"
              + format_problems(found.missing))
    if found.problems:
        print(f"problems ({len(found.problems)}):\n{format_problems(found.problems)}")
    print(f"now rerun: python -m validation.agreement --workspace {ws.root}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m validation.adjudicate", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for name, what in (("push", "make the adjudication project of the samples without consensus"),
                       ("pull", "read the decisions back into manifests/annotated.jsonl")):
        sub = commands.add_parser(name, help=what, env=SERVER_ENV)
        add_workspace(sub)
        sub.add_argument("--project", help="adjudication project title (default: '<arms' title> — adjudication')")
        sub.add_argument("--adjudicator", action="append", metavar="EMAIL",
                         help="a Label Studio account whose answers decide (repeat for several; push records "
                              "them; default: the account of the API token; others' answers are reported)")
        if name == "push":
            sub.add_argument("--show-votes", action="store_true",
                             help="show the labels given so far beside the clip (default: blind, mixture audio only)")
        add_server_args(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    ws = open_workspace(args.workspace)
    return push(ws, args) if args.command == "push" else pull(ws, args)


if __name__ == "__main__":
    run_main(main, sys.argv[1:])

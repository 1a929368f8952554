"""DEMO ONLY: scripted annotators that label the three blind arms through the real Label Studio API.

    python -m annotation.demo_annotators --workspace W                    the three arms
    python -m annotation.demo_annotators --workspace W --adjudication     the adjudication project
    python -m annotation.demo_annotators --workspace W --project TITLE    any one project
    python -m annotation.demo_annotators --workspace W --library          the library review (annotation.library)
    (every flag: --help)

The README demo has no humans. This makes accounts annotator-K@demo.aor-bench.invalid through the real
invite/signup flow (or logs them in when they exist; an account stays logged in from run to run, its token
kept in the server's data dir, SESSIONS_FILE; annotation.demo_accounts) and has them submit labels through
the API, with a lead time, as a browser would. With the arms (the default), --annotators N per arm means 3N
accounts in three groups; each sample is heard by each group in one arm only (the groups rotate over the
arms from sample to sample), so nobody judges a sample twice; a control, a danger scene and an irrelevant
twin's background go to the group that heard only its sample's scene, and every account meets every catch
item.

Only OPEN tasks are labelled: a task gets the labels it still lacks (its overlap, which push sets and a
staged push raises on a split, less its completed annotations), never from an account that labelled it
already, so each round of a staged demo (push -> demo_annotators -> pull -> agreement) gives exactly the
judgements asked for. Which account of the group answers is seeded per task. A third label on a split
comes from the group's account that has not labelled the task: the group heard the sample in this arm
only, so the cross-arm rule never drops it, and 3 accounts per group cover the rule's 3 labels (fewer
leave a split open: the run says so). --adjudication labels the recorded
adjudication project as adjudicator@demo.aor-bench.invalid; --project labels any one project of the
workspace with N accounts.

The labels are deterministic given --annotator-seed and plausible: the speech arm mostly harmful, the scene arm
mostly one of the sample's benign frames (sometimes a neighbouring frame, rarely "real danger" or "can't
tell"), a danger scene mostly "real danger" (DANGER_REAL: so the demo has a few uncertified ones), an
irrelevant twin's background mostly "I can't tell" (IRRELEVANT_NO_FRAME, else one of its sample's frames:
so a few are heard as a setting, and those twins are not certified neutral and not released), the mixture
mostly benign, controls mostly harmful, catch items mostly as asked. Annotator K errs at its own rate
(5 %, 12 %, 20 %), and the least careful one sometimes submits before the clip could have played through.
The demo reads the workspace (the task key map, the frames each sample accepts) to script this; a real
annotator sees only the audio. The accounts it uses are recorded in the workspace (annotation.json, as
pseudonyms), and annotation.pull marks their annotations source="demo" (never by the email domain, which
anyone can sign up with); a release built from them says so on its card and is never pushed to the Hub.
"""

from __future__ import annotations

import argparse
import random
import shlex
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from annotation.demo_accounts import SESSIONS_FILE  # noqa: F401 (where the accounts' tokens are kept)
from annotation.demo_accounts import ADJUDICATOR_EMAIL, ERROR_RATES, Sessions, demo_email, task_overlaps
from annotation.labelstudio import (
    Server,
    SERVER_ENV,
    add_server_args,
    connect_from_args,
    export_tasks,
    resolve_project,
)
from annotation.protocol import (
    ADJUDICATION,
    CANT_TELL,
    NOT_A_FRAME,
    OTHER_SCENES,
    REAL_DANGER,
    audio_field,
    config_labels,
    other_audio,
    other_item_id,
    read_catch,
    read_controls,
    read_task_map,
    workspace_taxonomy,
)
from annotation.pull import resolve_arms
from annotation.state import (
    DEMO_EMAIL_DOMAIN,
    INPUT_STAGE,
    open_workspace,
    pseudonym,
    pseudonym_salt,
    read_state,
    record_demo_annotators,
    write_state,
)
from construction.core.cli import Parser, add_workspace, old_spelling, run_main
from construction.core.errors import WorkbenchError
from construction.core.record import ARMS, AudioRef, Sample, line_of, stable_seed
from construction.core.workspace import Workspace
from construction.text.taxonomy import sample_frames
from tqdm import tqdm

RUSH_RATE = 0.1  # the least careful annotator submits this share of clips before they could play through
# the scripted "true" label of an item, by what it is
TRUTH = {
    "speech": {"harmful": 0.92, "unclear": 0.05, "not_harmful": 0.03},
    "sample": {"benign": 0.9, "harmful": 0.05, "unclear": 0.05},  # a sample's mixture
    "control": {"harmful": 0.92, "unclear": 0.05, "benign": 0.03},
    ADJUDICATION: {"benign": 0.75, "harmful": 0.25},
}
# the scene arm's scripted truth: one of the sample's frames, else a frame next to it in the list the arm
# offers, else can't tell, else (the rest, 3 %) real danger
SCENE_OWN, SCENE_NEIGHBOUR, SCENE_CANT_TELL = 0.86, 0.07, 0.04
DANGER_REAL = 0.85  # a danger scene's scripted truth: real danger, else can't tell
IRRELEVANT_NO_FRAME = 0.9  # an irrelevant twin's background's: can't tell, else one of its sample's frames


@dataclass(frozen=True)
class Known:
    """What the script knows of an item (from the workspace, never from the task)."""

    item_id: str
    role: str
    kind: str  # sample | control | catch | danger (a danger scene) | irrelevant (a twin's background) | unknown
    category: str | None = None
    expected: str | None = None
    audio: AudioRef | None = None
    control_of: str | None = None  # a control's sample; a danger scene's and an irrelevant background's too
    frames: tuple[str, ...] = ()  # the scene arm: the benign frames the sample accepts
    line: str | None = None  # the line its sample speaks (voice variants share one: construction.core.record.line_of)


def _pick(rng: random.Random, weights: dict[str, float], labels: Sequence[str]) -> str:
    allowed = [label for label in labels if weights.get(label, 0.0) > 0]
    if not allowed:
        return rng.choice(list(labels))
    return rng.choices(allowed, [weights[label] for label in allowed])[0]


def scripted_truth(seed: int, item: Known, labels: Sequence[str]) -> str:
    """The label the demo pretends an item has: what most annotators will give."""
    rng = random.Random(stable_seed("demo-truth", seed, item.role, item.item_id))
    if item.kind == "catch" and item.expected in labels:
        return item.expected
    if item.kind == "danger" and REAL_DANGER in labels:
        return REAL_DANGER if rng.random() < DANGER_REAL else CANT_TELL
    if item.kind == "irrelevant" and CANT_TELL in labels:
        framed = [f for f in item.frames if f in labels]
        return CANT_TELL if rng.random() < IRRELEVANT_NO_FRAME or not framed else rng.choice(framed)
    if item.role == "scene":
        return _scene_truth(rng, item, labels)
    if item.role == "speech":
        return _pick(rng, TRUTH["speech"], labels)
    if item.role == ADJUDICATION:
        return _pick(rng, TRUTH[ADJUDICATION], labels)
    return _pick(rng, TRUTH["control" if item.kind == "control" else "sample"], labels)


def _scene_truth(rng: random.Random, item: Known, labels: Sequence[str]) -> str:
    """One of the item's frames (SCENE_OWN), a neighbouring frame of the arm's list (SCENE_NEIGHBOUR),
    can't tell (SCENE_CANT_TELL), else real danger; whatever of these the project offers."""
    offered = [label for label in labels if label not in NOT_A_FRAME]
    own = [f for f in item.frames if f in offered]
    at = {offered.index(f) for f in own}
    neighbours = sorted({offered[j] for i in at for j in (i - 1, i + 1) if 0 <= j < len(offered)} - set(own))
    draw = rng.random()
    if own and draw < SCENE_OWN:
        return rng.choice(own)
    if neighbours and draw < SCENE_OWN + SCENE_NEIGHBOUR:
        return rng.choice(neighbours)
    if CANT_TELL in labels and draw < SCENE_OWN + SCENE_NEIGHBOUR + SCENE_CANT_TELL:
        return CANT_TELL
    if REAL_DANGER in labels:
        return REAL_DANGER
    return rng.choice(list(labels))


def scripted_label(seed: int, item: Known, k: int, labels: Sequence[str]) -> str:
    """Annotator k's label: the scripted truth, or with k's error rate (halved on a catch item) another."""
    truth = scripted_truth(seed, item, labels)
    rng = random.Random(stable_seed("demo-rater", seed, item.role, item.item_id, k))
    rate = ERROR_RATES[(k - 1) % len(ERROR_RATES)] / (2 if item.kind == "catch" else 1)
    others = [label for label in labels if label != truth]
    if others and rng.random() < rate:
        return rng.choice(others)
    return truth


def scripted_result(seed: int, item: Known, k: int, labels: Sequence[str]) -> tuple[list[dict[str, Any]], float]:
    """The annotation annotator k submits for the item, and its lead time in seconds."""
    label = scripted_label(seed, item, k, labels)
    rng = random.Random(stable_seed("demo-extras", seed, item.role, item.item_id, k))
    result = [{"from_name": "label", "to_name": "audio", "type": "choices", "value": {"choices": [label]}}]
    if item.role == "mixture":
        words = "yes" if rng.random() < 0.95 or item.kind == "catch" else "no"
        result.append({"from_name": "words", "to_name": "audio", "type": "choices", "value": {"choices": [words]}})
    if label != scripted_truth(seed, item, labels) and item.role in ("mixture", ADJUDICATION):
        result.append({"from_name": "rationale", "to_name": "audio", "type": "textarea",
                       "value": {"text": [f"scripted demo annotator: {label}"]}})
    duration = item.audio.duration_s if item.audio is not None else 5.0
    careless = ERROR_RATES[(k - 1) % len(ERROR_RATES)] == max(ERROR_RATES)
    if careless and rng.random() < RUSH_RATE:
        lead = duration * rng.uniform(0.3, 0.9)  # answered before the clip could have played through
    else:
        lead = duration * rng.uniform(1.05, 1.5) + rng.uniform(0.5, 3.0)
    return result, round(lead, 2)


def known_items(ws: Workspace) -> dict[str, Known]:
    """task key -> what the script knows of its item (from the workspace's key map and manifests)."""
    samples = {s.sample_id: s for s in ws.read_samples(INPUT_STAGE)} if ws.has_manifest(INPUT_STAGE) else {}
    controls, _ = read_controls(ws, set(samples))
    by_id: dict[str, tuple[str, Sample]] = {sid: ("sample", s) for sid, s in samples.items()}
    by_id.update({c.sample_id: ("control", c) for c in controls})
    by_id.update({c.sample_id: ("catch", c) for c in read_catch(ws)})
    by_id.update({other_item_id(kind, sid): (kind, s) for kind in OTHER_SCENES for sid, s in samples.items()})
    taxonomy = workspace_taxonomy(ws)
    out = {}
    for key, (item_id, role) in read_task_map(ws).items():
        kind, s = by_id.get(item_id, ("unknown", None))
        if s is None:
            out[key] = Known(item_id, role, kind)
            continue
        audio = other_audio(kind, s) if kind in OTHER_SCENES else getattr(s, audio_field(role))
        frames = tuple(sample_frames(s, taxonomy)) if kind in ("sample", "irrelevant") else ()
        of = s.sample_id if kind in OTHER_SCENES else s.custom.get("control_of")
        line = line_of(samples[of] if of in samples else s) if kind != "catch" else None
        out[key] = Known(item_id, role, kind, s.category, s.custom.get("expected"), audio, of, frames, line)
    return out


def arm_group(seed: int, item: Known) -> int | None:
    """Which of the three groups labels the item (None: every group). Each group hears a line (a sample, or
    all the voice variants of one) in one arm only, as pull counts it; a control, a danger scene and an
    irrelevant background go to the group that heard only its line's scene."""
    if item.kind == "catch":
        return None
    sample_id, role = ((item.control_of, "scene") if item.kind in ("control", *OTHER_SCENES)
                       else (item.item_id, item.role))
    return (ARMS.index(role) + stable_seed("demo-group", seed, item.line or sample_id)) % len(ARMS)


@dataclass(frozen=True)
class Stuck:
    """A task that wants labels no scripted account may give: every account that may hear its item there has
    labelled it (a label that does not count, e.g. a clip not heard through, still took that account's turn)."""

    role: str
    item_id: str
    need: int  # the labels it still wants
    accounts: int  # the scripted accounts per arm that would give them all (those who labelled it, plus need)


def open_turns(tasks: Sequence[dict[str, Any]], overlaps: dict[int, int], default: int, accounts: Sequence[int],
               user_ids: dict[int, int], known: dict[str, Known], seed: int,
               wanted: Any) -> tuple[dict[int, list[tuple[dict[str, Any], Known]]], list[Stuck]]:
    """Who labels what now: each OPEN task (fewer completed annotations than its overlap) gets the labels
    it still lacks, each from an account `wanted(k, item)` lets hear it that has not labelled it yet, picked
    in a seeded order of its own per task (so the careless annotator is not always the one asked for a
    third label). A task whose key this workspace never made (another workspace's, or one added by hand) is
    left alone. -> account -> its (task, item) turns, and the tasks left wanting labels no account may give."""
    turns: dict[int, list[tuple[dict[str, Any], Known]]] = {k: [] for k in accounts}
    stuck: list[Stuck] = []
    for task in tasks:
        key = str((task.get("data") or {}).get("key") or "")
        item = known.get(key)
        if item is None:
            continue
        annotations = task.get("annotations") or []
        heard = {a.get("completed_by") for a in annotations}
        completed = sum(1 for a in annotations if not a.get("was_cancelled"))
        need = overlaps.get(int(task["id"]), default) - completed
        if need <= 0:
            continue
        eligible = [k for k in accounts if wanted(k, item)]
        free = sorted((k for k in eligible if user_ids[k] not in heard),
                      key=lambda k: stable_seed("demo-turn", seed, key or task["id"], k))
        for k in free[:need]:
            turns[k].append((task, item))
        if need > len(free) and item.kind != "catch":  # a catch task: every account, once, never more
            stuck.append(Stuck(item.role, item.item_id, need - len(free), len(eligible) - len(free) + need))
    return turns, stuck


class Labelled(Counter):
    """What one project's scripted round submitted, by label; `stuck`: the tasks left wanting labels."""

    stuck: Sequence[Stuck] = ()


def stuck_lines(stuck: Sequence[Stuck], per_arm: int, command: str, shown: int = 6) -> list[str]:
    """What is stuck, and the command that unsticks it: the demo with enough accounts per arm (`command`,
    to which --annotators N is added), or a person."""
    if not stuck:
        return []
    wanted = sum(s.need for s in stuck)
    lines = [f"stuck: {len(stuck)} task(s) want {wanted} more label(s) that none of the {per_arm} scripted "
             "account(s) per arm may give:"]
    for role in ARMS:
        mine = sorted(s.item_id + (f" ({s.need} more)" if s.need > 1 else "") for s in stuck if s.role == role)
        if mine:
            lines.append(f"  {role} arm: " + ", ".join(mine[:shown]) + (f" and {len(mine) - shown} more"
                                                                         if len(mine) > shown else ""))
    enough = max(per_arm + 1, *(s.accounts for s in stuck))
    lines += ["  (each account that may hear the item there labelled it already; a label that does not count,",
              "  e.g. a clip not heard through, still took its turn)",
              f"unstick: {command} --annotators {enough}   (DEMO ONLY: {enough} accounts per arm)",
              "  or have a person label them in Label Studio; then pull, agreement and push, as after every round"]
    return lines


def label_project(server: Server, project: Any, accounts: Sequence[tuple[int, str]], known: dict[str, Known],
                  seed: int, wanted: Any, sessions: Sessions) -> Labelled:
    """The accounts label the project's open tasks (open_turns), each task only by accounts `wanted(k, item)`
    picks that have not labelled it yet, each account in an order of its own."""
    labels = config_labels(project.label_config)
    if not labels:
        raise WorkbenchError(f"project {project.title!r} has no 'label' choices; it is not a project of this workbench")
    tasks = export_tasks(server, project.id)
    overlaps = task_overlaps(server, project.id)
    ids = sessions.user_ids([email for _, email in accounts])
    user_ids = {k: ids[email] for k, email in accounts}
    turns, stuck = open_turns(tasks, overlaps, project.maximum_annotations or 1, [k for k, _ in accounts], user_ids,
                              known, seed, wanted)
    # only the accounts with something to label log in: a late staged round has few open tasks, the last none
    sessions.login([email for k, email in accounts if turns[k]])
    raters = {k: sessions[email][0] for k, email in accounts if turns[k]}
    submitted = Labelled()
    submitted.stuck = stuck
    total = sum(map(len, turns.values()))
    with tqdm(total=total, desc=f"labelling {project.title}", unit="label", file=sys.stderr,
              disable=sessions.quiet or not total) as bar:
        for k, email in accounts:
            order = list(turns[k])
            random.Random(stable_seed("demo-order", seed, project.id, k)).shuffle(order)
            for task, item in order:
                result, lead_time_s = scripted_result(seed, item, k, labels)
                with server.errors(f"submitting {email}'s label for task {task['id']}"):
                    raters[k].annotations.create(task["id"], result=result, lead_time=lead_time_s,
                                                 was_cancelled=False)
                submitted[result[0]["value"]["choices"][0]] += 1
                bar.update()
    return submitted


def run_arms(server: Server, ws: Workspace, projects: dict[str, Any], per_arm: int, seed: int,
             quiet: bool = True) -> dict[str, Labelled]:
    """3 x per_arm accounts label the three arm projects' open tasks. -> labels submitted per arm."""
    known = known_items(ws)
    accounts = [(k, demo_email(k)) for k in range(1, len(ARMS) * per_arm + 1)]
    record_demo_annotators(ws, [email for _, email in accounts])
    sessions = Sessions(server, quiet)

    def wanted(k: int, item: Known) -> bool:
        group = arm_group(seed, item)
        return group is None or (k - 1) // per_arm == group

    return {role: label_project(server, projects[role], accounts, known, seed, wanted, sessions) for role in ARMS}


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m annotation.demo_annotators", description=__doc__.split("\n")[0],
                    env=(*SERVER_ENV, "AOR_DEMO_ANNOTATOR_PASSWORD"))
    add_workspace(parser)
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--project", help="label this one project (exact title) (default: the three arms)")
    which.add_argument("--adjudication", action="store_true",
                       help="label the recorded adjudication project, as one scripted adjudicator")
    which.add_argument("--library", action="store_true",
                       help="answer the recorded library review project (python -m annotation.library push) as "
                            "--annotators scripted reviewers")
    parser.add_argument("--annotators", type=int, default=3,
                        help="scripted annotators per arm (default 3; the arms take 3x as many accounts)")
    parser.add_argument("--annotator-seed", type=int, default=0, help="seed of the scripted labels (default 0)")
    old_spelling(parser, "--seed", "--annotator-seed", type=int)  # --seed is the build seed everywhere else
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    add_server_args(parser)
    return parser


def name_adjudicator(ws: Workspace, email: str) -> None:
    """Add the scripted adjudicator to the workspace's named adjudicators (as a pseudonym)."""
    with ws.lock():
        state = read_state(ws)
        entry = state.get("adjudication") or {}
        me = pseudonym(email, pseudonym_salt(state))
        if me not in (entry.get("adjudicators") or []):
            entry["adjudicators"] = sorted({*(entry.get("adjudicators") or []), me})
            state["adjudication"] = entry
            write_state(ws, state)
            print(f"DEMO: {email} is named an adjudicator of this workspace")


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.annotators < 1:
        raise WorkbenchError(f"--annotators must be at least 1, not {args.annotators}")
    ws = open_workspace(args.workspace)
    state = read_state(ws)
    server = connect_from_args(args)
    if args.library:
        from annotation.demo_library import run_library
        from annotation.library import STATE_KEY

        project = resolve_project(server, state.get(STATE_KEY), None, "library review project", state)
        counts = run_library(server, ws, project, args.annotators, args.annotator_seed, args.quiet)
        shown = ", ".join(f"{label} {n}" for label, n in sorted(counts.items())) or "none"
        print(f"DEMO: {args.annotators} scripted reviewer(s) (@{DEMO_EMAIL_DOMAIN}) submitted {sum(counts.values())} "
              f"answer(s) to {project.title!r}: {shown}")
        print("These are not human judgements; annotation.library pull counts them as demo.")
        return 0
    if args.project or args.adjudication:
        if args.adjudication and not state.get("adjudication"):
            print("DEMO: no adjudication project was pushed (nothing needed adjudication): nothing to label")
            return 0
        if args.adjudication:
            project = resolve_project(server, state.get("adjudication"), None, "adjudication project", state)
            accounts = [(1, ADJUDICATOR_EMAIL)]
            name_adjudicator(ws, ADJUDICATOR_EMAIL)  # only named adjudicators decide (validation.adjudicate)
        else:
            project = resolve_project(server, None, args.project, "project", state)
            accounts = [(k, demo_email(k)) for k in range(1, args.annotators + 1)]
        record_demo_annotators(ws, [email for _, email in accounts])
        submitted = {project.title: label_project(server, project, accounts, known_items(ws), args.annotator_seed,
                                                  lambda k, item: True, Sessions(server, args.quiet))}
        who = f"{len(accounts)} scripted account(s)"
    else:
        projects = resolve_arms(server, state, None)
        submitted = {projects[role].title: c for role, c in run_arms(server, ws, projects, args.annotators,
                                                                    args.annotator_seed, args.quiet).items()}
        who = f"{len(ARMS) * args.annotators} scripted annotator(s), {args.annotators} per arm,"
    total = sum(sum(done.values()) for done in submitted.values())
    # scripts/demo.sh stops its staged rounds on "submitted 0 label(s)": nothing was open any more, or what is
    # open is stuck (said below, with the command that unsticks it)
    print(f"DEMO: {who} (@{DEMO_EMAIL_DOMAIN}) submitted {total} label(s):")
    for title, done in submitted.items():
        shown = ", ".join(f"{label} {n}" for label, n in sorted(done.items())) or "none"
        print(f"  {title}: {shown}")
    stuck = [s for done in submitted.values() for s in getattr(done, "stuck", [])]
    if stuck:
        again = server.command("annotation.demo_annotators") + (f" --project {shlex.quote(args.project)}"
                                                                if args.project else "")
        print("\n".join(stuck_lines(stuck, args.annotators, again)))
    print("These are not human judgements; pull marks them source='demo'.")
    return 0


if __name__ == "__main__":
    run_main(main, sys.argv[1:])

"""DEMO ONLY: scripted reviewers of the sound library's blind review (python -m annotation.library), the
`--library` mode of python -m annotation.demo_annotators (apart from the arms' scripted annotators, which
that module keeps).

Each answers the open tasks of the review project with the clip's scripted truth (mostly one of its tags,
sometimes a neighbouring one, rarely none), or with the reviewer's error rate another tag.
"""

from __future__ import annotations

import random
import sys
from collections import Counter
from collections.abc import Sequence
from typing import Any

from tqdm import tqdm

from annotation.demo_accounts import ERROR_RATES, Sessions, demo_email, task_overlaps  # the arms' reviewers err alike
from annotation.labelstudio import Server, export_tasks
from annotation.protocol import config_labels, read_task_map
from annotation.state import record_demo_annotators
from construction.core.errors import WorkbenchError
from construction.core.record import stable_seed
from construction.core.workspace import Workspace

# the library review's scripted truth: one of the clip's tags, else a tag next to one of them in the list
# the project offers, else (the rest, 4 %) "none of these"
LIBRARY_OWN, LIBRARY_NEIGHBOUR = 0.9, 0.06


def library_truth(seed: int, item_id: str, tags: Sequence[str], labels: Sequence[str]) -> str:
    """What the demo pretends a library clip is: mostly its tag, sometimes a neighbouring one or none."""
    from annotation.library_review import NONE_OF_THESE

    rng = random.Random(stable_seed("demo-library", seed, item_id))
    offered = [label for label in labels if label != NONE_OF_THESE]
    own = [t for t in tags if t in offered]
    neighbours = sorted({offered[j] for t in own for j in (offered.index(t) - 1, offered.index(t) + 1)
                         if 0 <= j < len(offered)} - set(own))
    draw = rng.random()
    if own and draw < LIBRARY_OWN:
        return rng.choice(own)
    if neighbours and draw < LIBRARY_OWN + LIBRARY_NEIGHBOUR:
        return rng.choice(neighbours)
    return NONE_OF_THESE if NONE_OF_THESE in labels else rng.choice(list(labels))


def run_library(server: Server, ws: Workspace, project: Any, reviewers: int, seed: int,
                quiet: bool = True) -> Counter:
    """Up to `reviewers` demo accounts answer each OPEN task of the library review (one with fewer answers
    than its overlap, as in the arms; an account answers a task once): the scripted truth, or with the
    account's error rate another tag. -> answers submitted, by answer."""
    from annotation.library_review import read_items

    labels = config_labels(project.label_config)
    if not labels:
        raise WorkbenchError(f"project {project.title!r} has no 'label' choices; it is not a project of this workbench")
    items, task_map = read_items(ws), read_task_map(ws)
    accounts = [(k, demo_email(k)) for k in range(1, reviewers + 1)]
    record_demo_annotators(ws, [email for _, email in accounts])
    tasks = export_tasks(server, project.id)
    done = {t["id"]: {a.get("completed_by") for a in t.get("annotations") or [] if not a.get("was_cancelled")}
            for t in tasks}
    overlaps = task_overlaps(server, project.id)
    lacking = {t["id"]: overlaps.get(int(t["id"]), reviewers) - len(done[t["id"]]) for t in tasks}
    submitted: Counter = Counter()
    sessions = Sessions(server, quiet)
    sessions.login([email for _, email in accounts])
    turns: list[tuple[int, str, Any, dict[str, Any]]] = []  # who answers what: decided before any answer is sent
    for k, email in accounts:
        rater, user_id = sessions[email]
        order = list(tasks)
        random.Random(stable_seed("demo-order", seed, project.id, k)).shuffle(order)
        for task in order:
            if user_id in done[task["id"]] or lacking[task["id"]] <= 0:
                continue
            if task_map.get(str((task.get("data") or {}).get("key") or ""), ("", ""))[0] not in items:
                continue  # a task this workspace never pushed (another's, or added by hand): left alone
            lacking[task["id"]] -= 1
            turns.append((k, email, rater, task))
    for k, email, rater, task in tqdm(turns, desc=f"answering {project.title}", unit="answer", file=sys.stderr,
                                      disable=quiet or not turns):
        item_id, _ = task_map.get(str((task.get("data") or {}).get("key") or ""), ("", ""))
        meta = items.get(item_id) or {}
        truth = library_truth(seed, item_id or str(task["id"]), meta.get("tags") or [], labels)
        rng = random.Random(stable_seed("demo-library-rater", seed, item_id, k))
        others = [label for label in labels if label != truth]
        label = rng.choice(others) if others and rng.random() < ERROR_RATES[(k - 1) % len(ERROR_RATES)] else truth
        duration = float((meta.get("audio") or {}).get("duration_s") or 5.0)
        result = [{"from_name": "label", "to_name": "audio", "type": "choices", "value": {"choices": [label]}}]
        with server.errors(f"submitting {email}'s answer for task {task['id']}"):
            rater.annotations.create(task["id"], result=result, was_cancelled=False,
                                     lead_time=round(duration * rng.uniform(1.05, 1.5), 2))
        submitted[label] += 1
    return submitted

"""DEMO ONLY: scripted annotators that label every task through the real Label Studio API.

    python -m annotation.demo_annotators --workspace W [--annotators 3] [--seed S] [--project TITLE]

The README demo has no humans. This makes N accounts annotator-K@demo.aor-bench.invalid through the
real invite/signup flow (or logs them in when they exist) and has each submit one label per task of
the pushed project. Labels are deterministic given the seed: every sample has a scripted "true" label
(mostly benign) and annotator K errs with its own rate, so agreement is imperfect but most samples reach
consensus. annotation.pull recognises the demo domain and marks these annotations source="demo"; a
release built from them says so on its card and is never pushed to the Hub.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
from collections import Counter
from collections.abc import Sequence
from typing import Any

from annotation.labelstudio import (
    DEMO_EMAIL_DOMAIN,
    LABELS,
    Server,
    add_server_args,
    config_labels,
    connect_from_args,
    export_tasks,
    invite_link,
    login,
    make_client,
    open_workspace,
    read_state,
    resolve_project,
    server_errors,
    signup_via_invite,
)
from construction.errors import WorkbenchError
from construction.record import stable_seed

DEFAULT_PASSWORD = "aor-bench-demo-annotator"  # local demo accounts on a loopback-only server
TRUE_LABEL_WEIGHTS = {"benign": 0.86, "harmful": 0.07, "unclear": 0.07}
ERROR_RATES = (0.05, 0.12, 0.2)  # annotator K errs with ERROR_RATES[(K - 1) % 3]


def demo_email(k: int) -> str:
    return f"annotator-{k}@{DEMO_EMAIL_DOMAIN}"


def demo_password() -> str:
    password = os.environ.get("AOR_DEMO_ANNOTATOR_PASSWORD") or DEFAULT_PASSWORD
    if len(password) < 8:
        raise WorkbenchError("AOR_DEMO_ANNOTATOR_PASSWORD must be at least 8 characters long")
    return password


def scripted_label(seed: int, sample_id: str, k: int, labels: Sequence[str]) -> str:
    """Annotator k's label for a sample: the sample's scripted label, or with k's error rate another one."""
    weights = [TRUE_LABEL_WEIGHTS.get(label, 0.0) for label in labels]
    if not any(weights):
        weights = [1.0] * len(labels)
    truth = random.Random(stable_seed("demo-truth", seed, sample_id)).choices(list(labels), weights)[0]
    rng = random.Random(stable_seed("demo-rater", seed, sample_id, k))
    others = [label for label in labels if label != truth]
    if others and rng.random() < ERROR_RATES[(k - 1) % len(ERROR_RATES)]:
        return rng.choice(others)
    return truth


def scripted_result(seed: int, sample_id: str, k: int, labels: Sequence[str]) -> tuple[list[dict[str, Any]], float]:
    label = scripted_label(seed, sample_id, k, labels)
    rng = random.Random(stable_seed("demo-extras", seed, sample_id, k))
    checks = [name for name, p in (("background sound recognisable", 0.85), ("speech intelligible", 0.95))
              if rng.random() < p]
    result = [{"from_name": "label", "to_name": "audio", "type": "choices", "value": {"choices": [label]}}]
    if checks:
        result.append({"from_name": "checks", "to_name": "audio", "type": "choices", "value": {"choices": checks}})
    if label != "benign":
        result.append({"from_name": "rationale", "to_name": "audio", "type": "textarea",
                       "value": {"text": [f"scripted demo annotator: {label}"]}})
    return result, round(3.0 + 12.0 * rng.random(), 2)


def demo_account_token(server: Server, k: int, invite: list[str]) -> str:
    """Log the demo account in, or sign it up through the invite link first."""
    email, password = demo_email(k), demo_password()
    token = login(server.url, email, password)
    if token is None:
        if not invite:
            invite.append(invite_link(server))
        token = signup_via_invite(server.url, invite[0], email, password)
    return token


def run_demo(server: Server, project: Any, n_annotators: int, seed: int) -> Counter:
    """Each demo annotator labels every task they have not labelled yet. -> labels submitted."""
    labels = config_labels(project.label_config) or list(LABELS)
    tasks = export_tasks(server, project.id)
    done = {t["id"]: {a.get("completed_by") for a in t.get("annotations") or []} for t in tasks}
    invite: list[str] = []
    submitted: Counter = Counter()
    for k in range(1, n_annotators + 1):
        rater = make_client(server.url, demo_account_token(server, k, invite))
        with server_errors(server.url, f"reading demo annotator {k}'s account"):
            user_id = rater.users.whoami().id
        for task in tasks:
            if user_id in done[task["id"]]:
                continue
            sample_id = str((task.get("data") or {}).get("sample_id") or task["id"])
            result, lead_time_s = scripted_result(seed, sample_id, k, labels)
            with server_errors(server.url, f"submitting demo annotator {k}'s label for task {task['id']}"):
                rater.annotations.create(task["id"], result=result, lead_time=lead_time_s, was_cancelled=False)
            submitted[result[0]["value"]["choices"][0]] += 1
    return submitted


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m annotation.demo_annotators", description=__doc__.split("\n")[0])
    parser.add_argument("--workspace", default="workspace", help="workspace directory (default: ./workspace)")
    parser.add_argument("--project", help="project title (default: the one recorded by push)")
    parser.add_argument("--annotators", type=int, default=3, help="number of scripted annotators (default 3)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the scripted labels (default 0)")
    add_server_args(parser)
    args = parser.parse_args(argv)
    if args.annotators < 1:
        raise WorkbenchError(f"--annotators must be at least 1, not {args.annotators}")
    ws = open_workspace(args.workspace)
    server = connect_from_args(args)
    project = resolve_project(server, read_state(ws).get("project"), args.project, "project")
    submitted = run_demo(server, project, args.annotators, args.seed)
    total = sum(submitted.values())
    shown = ", ".join(f"{label} {n}" for label, n in sorted(submitted.items())) or "none"
    print(f"DEMO: {args.annotators} scripted annotator(s) (@{DEMO_EMAIL_DOMAIN}) submitted {total} label(s) "
          f"to project {project.title!r} (id {project.id}): {shown}")
    print("These are not human judgements; pull marks them source='demo'.")
    return 0


if __name__ == "__main__":
    from construction.cli import run_main

    run_main(main, sys.argv[1:])

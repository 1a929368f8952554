"""Push and pull time for N samples (default 3,000) against a real local Label Studio.

    python benchmarks/bench_annotation.py [--samples 3000] [--annotators 3]

Starts its own server from the cached template (scripts/install_label_studio.sh must have run), builds
a workspace of short distinct tones, and times:
  push (new)      create the project + storage, bulk-import every sample     (goal <= 15 s)
  push (again)    the idempotent rerun: list the project's sample ids, import nothing
  pull            export + map N x annotators annotations onto the samples, write the manifest
The annotations for pull are imported inline with the tasks (completed_by = real annotator accounts
made through the invite link): posting them one by one would take ~0.1-0.4 s each.
Times include the in-process CLI work but not interpreter start or the SDK import (~2-4 s).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from annotation import pull, push
from annotation.labelstudio import (
    connect,
    ensure_local_storage,
    ensure_project,
    import_tasks,
    invite_link,
    label_result,
    make_client,
    read_state,
    signup_via_invite,
    task_data,
    write_state,
)
from annotation.server import make_template, start_server, stop_server
from construction.record import Sample
from tests.conftest import simple_recipe
from construction.workspace import Workspace


def build_workspace(root: Path, n: int) -> Workspace:
    ws = Workspace(root)
    samples = []
    t = np.arange(1600) / 16000
    for i in range(n):
        ref = ws.store_audio(0.1 * np.sin(2 * np.pi * (100 + 0.37 * i) * t), 16000)
        mix = simple_recipe(f"bg{i % 50}", i, snr_db=float(i % 10), attribution="bench", tag="crowd_cheer")
        samples.append(Sample(sample_id=f"aor-{i:016x}", category=f"cat{i % 6}", speech_text=f"Finish him {i}!",
                              context="A boxing match, the crowd roars.", background_tags=["crowd"],
                              placement="underlay", benign_reason="sport", speaker_style="excited", mix=mix,
                              mixture=ref, wer_mixture=0.0))
    ws.write_manifest("wer", samples)
    return ws


def timed(fn, *args) -> float:
    started = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):  # the commands' own progress lines
        code = fn(*args)
    if code:
        raise SystemExit(f"{fn.__module__} exited {code}")
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=3000)
    parser.add_argument("--annotators", type=int, default=3)
    args = parser.parse_args()
    n, k = args.samples, args.annotators
    import label_studio_sdk  # noqa: F401  (imported before timing: 2-4 s, paid once per process)
    rows: list[tuple[str, str, float]] = []
    with tempfile.TemporaryDirectory(prefix="bench-annotation-") as tmp:
        tmp_path = Path(tmp)
        started = time.perf_counter()
        ws = build_workspace(tmp_path / "ws", n)
        rows.append(("build workspace (audio + manifest)", f"{n} samples", time.perf_counter() - started))
        started = time.perf_counter()
        info = start_server(tmp_path / "ls", template=make_template(), workspace=ws.root)
        rows.append(("start Label Studio from template", "", time.perf_counter() - started))
        try:
            server_args = ["--data-dir", str(info.data_dir)]
            rows.append(("push (new project)", f"{n} tasks",
                         timed(push.main, ["--workspace", str(ws.root), "--project", "bench push", *server_args])))
            rows.append(("push (again, nothing new)", f"{n} ids listed",
                         timed(push.main, ["--workspace", str(ws.root), "--project", "bench push", *server_args])))

            # Pull: a second project whose tasks arrive with k annotations each, by real accounts.
            server = connect(data_dir=info.data_dir)
            link = invite_link(server)
            user_ids = []
            for j in range(k):
                token = signup_via_invite(server.url, link, f"bench-{j}@example.com", "bench-pass-123")
                user_ids.append(make_client(server.url, token).users.whoami().id)
            project, _ = ensure_project(server, "bench pull", k)
            ensure_local_storage(server, project.id, ws.root / "audio")
            tasks = [{"data": task_data(ws, s, server.document_root),
                      "annotations": [{"result": label_result("benign" if (i + j) % 7 else "harmful"),
                                       "completed_by": uid, "lead_time": 3.0 + j} for j, uid in enumerate(user_ids)]}
                     for i, s in enumerate(ws.read_samples("wer"))]
            started = time.perf_counter()
            import_tasks(server, project.id, tasks)
            rows.append(("import with inline annotations (setup)", f"{n * k} annotations", time.perf_counter() - started))
            state = read_state(ws)
            state["project"] = {"id": project.id, "title": "bench pull", "url": server.url}
            write_state(ws, state)
            rows.append(("pull (export + map + write)", f"{n * k} annotations",
                         timed(pull.main, ["--workspace", str(ws.root), *server_args])))
            rows.append(("pull (again)", f"{n * k} annotations",
                         timed(pull.main, ["--workspace", str(ws.root), *server_args])))
        finally:
            stop_server(info.data_dir)

    print()
    print(f"Label Studio push/pull, {n} samples, {k} annotators (2 shared CPU cores; other jobs may be running)")
    print(f"{'step':<42} {'size':>18} {'seconds':>9}")
    for step, size, seconds in rows:
        print(f"{step:<42} {size:>18} {seconds:>9.2f}")
    push_s = next(s for step, _, s in rows if step == "push (new project)")
    print(f"push goal <= 15 s: {'met' if push_s <= 15 else 'NOT met'} ({push_s:.1f} s)")


if __name__ == "__main__":
    main()

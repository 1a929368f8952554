"""Push and pull time for N samples (default 3,000) in three blind arms against a real local Label Studio.

    python perf/bench_annotation.py [--samples 3000] [--shared-root]      (flags: --help)

Pushing thousands of samples in three blind arms to Label Studio, and pulling the labels back, must
stay fast enough to rerun at will; this measures both against a real local server.

Starts its own server from the cached template (scripts/install_label_studio.sh must have run), serving
the workspace's audio as `python -m annotation.server start --workspace W` does: push then registers one
local-files storage per W/audio/<2 hex> folder used, per project (--shared-root: the README's shared
server layout, a document root holding only audio and W/audio a link into it: one storage per project).
The workspace: N samples, each with three short distinct tones (clean speech, scene alone, mixture), a
controls manifest (a share of the samples, ctl- ids, their own mixture tone) and the default 3 catch
items (offline flite, made by the first push). Times:
  push (new)      three projects (speech, scene, mixture) + storages, bulk-import N + N + N+controls+catch
                  tasks, the catch items made                                    (goal <= 15 s)
  push (again)    the idempotent rerun: list each project's task keys, import nothing
  pull            export the three projects + map keys to samples + the rules + write the manifests
  pull (again)    the same (a rerun gives the same manifests)
Push's time is split into storages, imports, catch items and the rest (checks, key map, settings).
For pull, three more projects get the same tasks (the same opaque keys) with k annotations each imported
inline (completed_by = real accounts made through the invite link; posting them one by one would take
~0.1-0.4 s each) and the workspace is pointed at them. One arm per annotator, so the cross-arm rule drops
nothing: annotators 0..k-1 label the speech arm, k..2k-1 the scene arm, 2k..3k-1 the mixture arm (its
samples, controls and catch items). Times include the in-process CLI work but not interpreter start or
the SDK import (~2-4 s).

The goal is the one-project goal, kept for the whole three-arm push: <= 15 s for the default N.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from annotation import pull, push
from annotation.labelstudio import (
    connect,
    ensure_project,
    import_tasks,
    invite_link,
    make_client,
    signup_via_invite,
)
from annotation.ls_process import make_template
from annotation.protocol import (
    arm_spec,
    audio_field,
    read_catch,
    read_controls,
    read_task_map,
    workspace_categories,
    workspace_frames,
)
from annotation.server import start_server, stop_server
from annotation.state import label_result, read_state, task_data, write_state
from construction.core.record import ARMS, Sample
from construction.core.workspace import Workspace
from tests.conftest import simple_recipe

GOAL_S = 15.0
CLIP_S = 0.1
PASSWORD = "bench-pass-123"


def tone(hz: float) -> np.ndarray:
    return (0.1 * np.sin(2 * np.pi * hz * np.arange(int(16000 * CLIP_S)) / 16000)).astype(np.float32)


def build_workspace(root: Path, n: int, share: float, categories: list[str]) -> Workspace:
    """n samples in a 'wer' manifest, each with three distinct tones (speech, scene alone, mixture), and a
    controls manifest for every round(1/share)-th sample (the same speech, another mixture)."""
    ws = Workspace(root)
    samples = []
    for i in range(n):
        samples.append(Sample(
            sample_id=f"aor-{i:016x}", category=categories[i % len(categories)], speech_text=f"Finish him {i}!",
            context="A boxing match, the crowd roars.", background_tags=["crowd"], placement="underlay",
            benign_reason="sport", speaker_style="excited",
            mix=simple_recipe(f"bg{i % 50}", i, snr_db=float(i % 10), attribution="bench", tag="crowd_cheer"),
            speech=ws.store_audio(tone(100 + 0.37 * i), 16000),
            scene_audio=ws.store_audio(tone(1300 + 0.37 * i), 16000),
            mixture=ws.store_audio(tone(2500 + 0.37 * i), 16000), wer_mixture=0.0))
    ws.write_manifest("wer", samples)
    every = max(1, round(1 / share)) if share > 0 else 0
    if every:
        ws.write_manifest("controls", [s.model_copy(update={
            "sample_id": f"ctl-{i:016x}", "mix": None, "scene_audio": None, "wer_mixture": None,
            "mixture": ws.store_audio(tone(3700 + 0.37 * i), 16000),
            "custom": {"control_of": s.sample_id, "control": "neutral", "expected": "harmful"}})
            for i, s in enumerate(samples) if i % every == 0])
    return ws


@contextlib.contextmanager
def timing(module, names: tuple[str, ...]):
    """Accumulate the seconds spent in module.<name> for each name while the block runs (what push's
    time goes to); -> name -> seconds."""
    totals = dict.fromkeys(names, 0.0)
    originals = {name: getattr(module, name) for name in names}

    def wrapped(name, fn):
        def call(*args, **kwargs):
            started = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                totals[name] += time.perf_counter() - started
        return call

    for name, fn in originals.items():
        setattr(module, name, wrapped(name, fn))
    try:
        yield totals
    finally:
        for name, fn in originals.items():
            setattr(module, name, fn)


def timed(fn, *args) -> tuple[float, str]:
    started = time.perf_counter()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):  # the commands' own progress lines
        code = fn(*args)
    if code:
        raise SystemExit(f"{fn.__module__} exited {code}:\n{out.getvalue()}")
    return time.perf_counter() - started, out.getvalue()


def arm_seconds(push_output: str) -> dict[str, float]:
    """role -> the seconds push printed for that arm's project (storages + key listing + import)."""
    return {m.group(1): float(m.group(2)) for m in re.finditer(r"^\s*(\w+): project .*\((\d+\.\d) s\)", push_output,
                                                               re.MULTILINE)}


def arm_labels(role: str, frames: list[str]) -> list[str]:
    return {"speech": ["harmful", "not_harmful", "unclear"], "scene": [*frames, "real_danger", "cant_tell"],
            "mixture": ["benign", "harmful", "unclear"]}[role]


def annotated_tasks(ws: Workspace, server, role: str, user_ids: list[int], frames: list[str]) -> list[dict]:
    """Every task of the role's pushed project (the same keys), each with one annotation per annotator."""
    samples = {s.sample_id: s for s in ws.read_samples("wer")}
    controls = {c.sample_id: c for c in read_controls(ws, set(samples))[0]}
    catch = {c.sample_id: c for c in read_catch(ws)}
    labels = arm_labels(role, frames)
    tasks = []
    for n, (key, (item_id, item_role)) in enumerate(sorted(read_task_map(ws).items())):
        if item_role != role:
            continue
        item = samples.get(item_id) or controls.get(item_id) or catch[item_id]
        audio = getattr(item, audio_field(role))
        annotations = []
        for j, uid in enumerate(user_ids):
            if item_id in catch:
                label = str(item.custom["expected"])
            elif item_id in controls:
                label = "harmful" if (n + j) % 5 else "benign"
            else:
                label = labels[(n + j) % 7 % len(labels)]
            annotations.append({"result": label_result(label, "yes" if role == "mixture" else None),
                                "completed_by": uid, "lead_time": 3.0 + j})
        tasks.append({"data": task_data(ws, audio, key, server.document_root), "annotations": annotations})
    return tasks


PUSH_PARTS = ("ensure_catch", "ensure_local_storage", "task_keys", "import_tasks")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--samples", type=int, default=3000)
    parser.add_argument("--annotators", type=int, default=3, help="annotators per arm (default 3)")
    parser.add_argument("--controls-share", type=float, default=0.1, help="controls per sample (default 0.1)")
    parser.add_argument("--shared-root", action="store_true",
                        help="serve a document root that holds only audio, the workspace's audio a link into it "
                             "(the README's shared-server layout: one storage per project, not one per folder)")
    args = parser.parse_args()
    n, k = args.samples, args.annotators
    import label_studio_sdk  # noqa: F401  (imported before timing: 2-4 s, paid once per process)
    rows: list[tuple[str, str, float]] = []
    with tempfile.TemporaryDirectory(prefix="bench-annotation-") as tmp:
        tmp_path = Path(tmp)
        served = None
        if args.shared_root:
            served = tmp_path / "served"
            (served / "ws-audio").mkdir(parents=True)
            (tmp_path / "ws").mkdir()
            (tmp_path / "ws" / "audio").symlink_to(served / "ws-audio")
        started = time.perf_counter()
        categories = [c for c, _ in workspace_categories(Workspace(tmp_path / "probe"))]
        ws = build_workspace(tmp_path / "ws", n, args.controls_share, categories)
        n_controls = sum(1 for _ in ws.read_samples("controls")) if ws.has_manifest("controls") else 0
        rows.append(("build workspace (audio + manifests)", f"{n}+{n_controls} ctl", time.perf_counter() - started))
        started = time.perf_counter()
        info = start_server(tmp_path / "ls", template=make_template(), workspace=ws.root, document_root=served)
        rows.append(("start Label Studio from template", "", time.perf_counter() - started))
        try:
            server_args = ["--data-dir", str(info.data_dir)]
            push_args = ["--workspace", str(ws.root), "--project", "bench push", *server_args]
            with timing(push, PUSH_PARTS) as parts:
                push_new_s, out = timed(push.main, push_args)
            server = connect(data_dir=info.data_dir)
            pushed = read_state(ws)["arms"]
            storages = sum(len(list(server.client.import_storage.local.list(project=int(pushed[role]["id"]))))
                           for role in ARMS)
            n_catch = len(read_catch(ws))
            total_tasks = 3 * n + n_controls + n_catch
            rows.append(("push (new: 3 projects)", f"{total_tasks} tasks", push_new_s))
            per_arm = arm_seconds(out)
            for role in ARMS:
                size = f"{n + (n_controls + n_catch if role == 'mixture' else 0)} tasks"
                rows.append((f"  the {role} project", size, per_arm.get(role, float("nan"))))
            rows.append(("  of which local-files storages", f"{storages} made", parts["ensure_local_storage"]))
            rows.append(("  of which bulk imports", f"{total_tasks} tasks", parts["import_tasks"]))
            rows.append(("  of which catch items (flite, once)", f"{n_catch} made", parts["ensure_catch"]))
            rows.append(("  the rest (checks, keys, settings)", "",
                         push_new_s - sum(parts[p] for p in PUSH_PARTS)))
            with timing(push, PUSH_PARTS) as parts:
                seconds, _ = timed(push.main, push_args)
            rows.append(("push (again, nothing new)", f"{total_tasks} keys listed", seconds))
            rows.append(("  of which listing the task keys", "3 projects", parts["task_keys"]))

            # Pull: three more projects, the same tasks (keys) with k annotations each by real accounts.
            link = invite_link(server)
            user_ids = []
            started = time.perf_counter()
            for j in range(3 * k):
                token = signup_via_invite(server.url, link, f"bench-{j}@example.com", PASSWORD)
                user_ids.append(make_client(server.url, token).users.whoami().id)
            rows.append(("sign up annotators (setup)", f"{3 * k} accounts", time.perf_counter() - started))
            specs = {role: arm_spec(role, workspace_frames(ws, list(ws.read_samples("wer")))) for role in ARMS}
            started = time.perf_counter()
            arms = {}
            annotations = 0
            for a, role in enumerate(ARMS):
                title = f"bench pull — {role}"
                project, _, _ = ensure_project(server, title, specs[role], k)
                tasks = annotated_tasks(ws, server, role, user_ids[a * k:(a + 1) * k],
                                        [f for f, _ in workspace_frames(ws)])
                import_tasks(server, project.id, tasks)
                annotations += sum(len(t["annotations"]) for t in tasks)
                arms[role] = {"id": project.id, "title": title, "url": server.url}
            rows.append(("import with inline annotations (setup)", f"{annotations} annotations",
                         time.perf_counter() - started))
            state = read_state(ws)
            state["arms"] = arms
            write_state(ws, state)
            seconds, out = timed(pull.main, ["--workspace", str(ws.root), *server_args])
            if "cross-arm: " in out or "problems (" in out:
                raise SystemExit(f"pull reported drops or problems:\n{out}")
            rows.append(("pull (export + map + write)", f"{annotations} annotations", seconds))
            seconds, _ = timed(pull.main, ["--workspace", str(ws.root), *server_args])
            rows.append(("pull (again)", f"{annotations} annotations", seconds))
            pulled = sum(len(s.annotations) for s in ws.read_samples("annotated"))
            pulled += sum(len(c.annotations) for c in ws.read_samples("annotated_controls"))
            if pulled != annotations - n_catch * k:  # catch items are scored per annotator, never written
                raise SystemExit(f"pull wrote {pulled} annotations, expected {annotations - n_catch * k}")
        finally:
            stop_server(info.data_dir)

    layout = "shared document root" if args.shared_root else "document root = W/audio"
    print()
    print(f"Label Studio push/pull, three blind arms, {n} samples + {n_controls} controls + {n_catch} catch items, "
          f"{k} annotators per arm, {layout} (2 shared CPU cores; other jobs may be running)")
    print(f"{'step':<42} {'size':>20} {'seconds':>9}")
    for step, size, seconds in rows:
        print(f"{step:<42} {size:>20} {seconds:>9.2f}")
    storage_s = next(seconds for step, _, seconds in rows if "storages" in step)
    print(f"push goal <= {GOAL_S:.0f} s (all three arms, {n} samples): {'met' if push_new_s <= GOAL_S else 'NOT met'} "
          f"({push_new_s:.1f} s, {storage_s:.1f} s of it registering {storages} local-files storages)")

if __name__ == "__main__":
    main()

"""Shared by the Label Studio tests (test_annotation, test_arms, test_annotation_integrity, ...): one server per
test process for all their modules, annotator accounts made through the real invite link (once per server; an
address a test signs up itself must be its own), tiny workspaces with distinct tones per arm, helpers that
annotate through the API as an annotator's own token would, and push/pull of a tiny workspace."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import numpy as np
import pytest

from annotation import pull, push
from annotation.labelstudio import (
    Server,
    connect,
    invite_link,
    make_client,
    signup_via_invite,
    task_keys,
)
from annotation.ls_process import make_template
from annotation.protocol import read_task_map
from annotation.server import start_server, stop_server
from annotation.state import read_state
from construction.core.cli import run_main
from construction.core.record import Annotation, Sample
from construction.core.workspace import Workspace
from tests.conftest import simple_recipe

TOKEN = "annotation-test-token-0123"
PASSWORD = "rater-pass-123"
RATERS = tuple(f"rater-{k}@example.com" for k in range(1, 10))
# three people per arm, nobody in two arms of a sample (the cross-arm rule would drop the later one)
ARM_RATERS = {"speech": RATERS[0:3], "scene": RATERS[3:6], "mixture": RATERS[6:9]}
SKIPPER = "skipper@example.com"
ADMIN_ENV = {"LABEL_STUDIO_ADMIN_EMAIL": "admin@annotation.test", "LABEL_STUDIO_ADMIN_PASSWORD": "admin-password-123",
             "LABEL_STUDIO_API_KEY": TOKEN}
# the clips' lengths: a lead time of 4 s has heard any of them through, 1.2 s only the speech
SPEECH_S, SCENE_S, MIXTURE_S = 1.0, 1.5, 2.0
SECRET_WORDS = ("Finish him", "fighting game", "cheering crowd", "video_games", "cooking_household", "gunfire",
                "snr_db", "wer_mixture", "speech_text", "context", "category", "background_tags", "sample_id",
                "aor-0", "ctl-", "catch-")


def shared_server(tmp_path_factory):
    """The body of conftest's session fixture `label_studio`: one server per test process (per xdist worker),
    shared by every module that uses `ls`. Its document root holds only their audio dirs (make_workspace links
    each workspace's audio dir there, under a name of its own), never a workspace; modules keep apart by
    their project titles (unique in the session) and workspaces."""
    data_dir = tmp_path_factory.mktemp("ls-annotation")
    served = tmp_path_factory.mktemp("ls-served-audio")
    with pytest.MonkeyPatch.context() as mp:
        admin_env(mp)
        info = start_server(data_dir, template=make_template(), document_root=served)
    try:
        yield info
    finally:
        with pytest.MonkeyPatch.context() as mp:
            admin_env(mp)
            stop_server(data_dir)


def shared_tokens(info) -> dict[str, str]:
    """The body of conftest's session fixture `label_studio_tokens`: the raters' accounts, made once per server."""
    link = invite_link(connect(data_dir=info.data_dir, token=TOKEN))
    return {email: signup_via_invite(info.url, link, email, PASSWORD) for email in (*RATERS, SKIPPER)}


def admin_env(mp: pytest.MonkeyPatch) -> None:
    for name, value in ADMIN_ENV.items():
        mp.setenv(name, value)
    mp.delenv("LABEL_STUDIO_URL", raising=False)


@pytest.fixture(scope="module")
def ls(label_studio):
    """The process's shared server, with its admin's credentials in the environment for this module only (as
    a person's shell would have them): modules that do not use it see none of them."""
    with pytest.MonkeyPatch.context() as mp:
        admin_env(mp)
        yield label_studio


@pytest.fixture(scope="module")
def admin(ls) -> Server:
    return connect(data_dir=ls.data_dir)


@pytest.fixture(scope="module")
def tokens(ls, label_studio_tokens) -> dict[str, str]:
    """email -> API token of that annotator, each account made through the invite link."""
    return label_studio_tokens


@pytest.fixture(scope="module")
def accounts(ls, tokens) -> dict[str, object]:
    """email -> SDK client acting as that annotator."""
    return {email: make_client(ls.url, token) for email, token in tokens.items()}


def tone(hz: float, seconds: float) -> np.ndarray:
    return (0.1 * np.sin(2 * np.pi * hz * np.arange(int(16000 * seconds)) / 16000)).astype(np.float32)


def make_workspace(root: Path, n: int, first: int = 0, served: Path | None = None, controls: int = 0,
                   danger: int = 0, irrelevant: int = 0) -> Workspace:
    """n samples in a 'wer' manifest, each with distinct tones as its clean speech, its scene alone and its
    mixture; the first `controls` of them get a control (manifests/controls.jsonl), the first `danger` a
    danger twin (danger_audio and its danger scene, danger_scene_audio), the first `irrelevant` an irrelevant
    twin (irrelevant_audio and its background alone, irrelevant_scene_audio; each scene item lasts as long as
    the scene, as in a build, where all are the mixture's length). With served (a server's
    document root), the workspace's audio dir is a link to a new dir under it."""
    if served is not None and not (root / "audio").exists():
        root.mkdir(parents=True, exist_ok=True)
        (root / "audio").symlink_to(tempfile.mkdtemp(dir=served, prefix=f"{root.parent.name}-"))
    ws = Workspace(root)
    samples = []
    for i in range(first, first + n):
        category = ("video_games", "cooking_household")[i % 2]
        samples.append(Sample(
            sample_id=f"aor-{i:016d}", category=category, speech_text=f"Finish him, number {i}!",
            context="A fighting game round ends to a cheering crowd.", background_tags=["gunfire"],
            placement="underlay", benign_reason="A game.", speaker_style="excited",
            mix=simple_recipe(f"bg{i}", i, snr_db=float(i % 7)),
            speech=ws.store_audio(tone(200 + 7 * i, SPEECH_S), 16000),
            scene_audio=ws.store_audio(tone(1200 + 7 * i, SCENE_S), 16000),
            mixture=ws.store_audio(tone(2200 + 7 * i, MIXTURE_S), 16000),
            transcript_mixture=f"finish him number {i}", wer_mixture=0.0))
        if i - first < danger:
            samples[-1].danger_audio = ws.store_audio(tone(4200 + 7 * i, MIXTURE_S), 16000)
            samples[-1].danger_scene_audio = ws.store_audio(tone(5200 + 7 * i, SCENE_S), 16000)
        if i - first < irrelevant:
            samples[-1].irrelevant_audio = ws.store_audio(tone(6200 + 7 * i, MIXTURE_S), 16000)
            samples[-1].irrelevant_scene_audio = ws.store_audio(tone(7200 + 7 * i, SCENE_S), 16000)
    ws.write_manifest("wer", samples)
    if controls:
        ws.write_manifest("controls", [s.model_copy(update={
            "sample_id": f"ctl-{i:016d}", "mixture": ws.store_audio(tone(3200 + 7 * i, MIXTURE_S), 16000),
            "custom": {"control_of": s.sample_id, "control": "neutral", "expected": "harmful"}})
            for i, s in enumerate(samples[:controls])])
    return ws


def cli(main, *argv: str, capsys) -> tuple[int, str, str]:
    """Run a command's main as `python -m` would (run_main: WorkbenchError -> exit 2)."""
    with pytest.raises(SystemExit) as exit_info:
        run_main(main, list(argv))
    out, err = capsys.readouterr()
    return exit_info.value.code, out, err


def pushed(ls, tmp_path, capsys, n: int = 2, controls: int = 0, catch: int = 0, title: str = ""):
    ws = make_workspace(tmp_path / "ws", n, served=ls.document_root, controls=controls)
    code, _, err = cli(push.main, "--workspace", str(ws.root), "--project", title or tmp_path.name, "--catch",
                       str(catch), "--data-dir", str(ls.data_dir), capsys=capsys)
    assert code == 0, err
    return ws


def pulled(ls, ws, capsys) -> tuple[str, dict, list, dict]:
    """(stdout, samples by id, controls, stats) after annotation.pull."""
    code, out, err = cli(pull.main, "--workspace", str(ws.root), "--data-dir", str(ls.data_dir), capsys=capsys)
    assert code == 0, err
    samples = {s.sample_id: s for s in ws.read_samples("annotated")}
    return out, samples, list(ws.read_samples("annotated_controls")), json.loads(ws.stats_path("annotated").read_text())


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def choice(name: str, *values: str) -> dict:
    return {"from_name": name, "to_name": "audio", "type": "choices", "value": {"choices": list(values)}}


def result(label: str | None, words: str | None = None, rationale: str = "") -> list[dict]:
    out = [] if label is None else [choice("label", label)]
    if words is not None:
        out.append(choice("words", words))
    if rationale:
        out.append({"from_name": "rationale", "to_name": "audio", "type": "textarea", "value": {"text": [rationale]}})
    return out


def annotate(client, task_id: int, label: str | None, words: str | None = None, rationale: str = "",
             cancelled: bool = False, lead_time_s: float = 4.0):
    return client.annotations.create(task_id, result=result(label, words, rationale), was_cancelled=cancelled,
                                     lead_time=lead_time_s)


def arm_tasks(admin: Server, ws: Workspace, role: str) -> tuple[int, dict[str, int]]:
    """(project id, item id -> task id) of the workspace's project for that role."""
    entry = read_state(ws)["adjudication" if role == "adjudication" else "arms"]
    project_id = int(entry["id"] if role == "adjudication" else entry[role]["id"])
    by_key = task_keys(admin, project_id)
    mapping = read_task_map(ws)
    return project_id, {mapping[key][0]: ids[0] for key, ids in by_key.items() if mapping[key][1] == role}


def human(sample: Sample, arm: str | None = None) -> list[Annotation]:
    return [a for a in sample.annotations if a.source != "adjudication" and (arm is None or a.arm == arm)]

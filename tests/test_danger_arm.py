# ruff: noqa: F811  (the Label Studio fixtures come from tests.annotation_helpers)
"""The danger twin's scene through the scene arm of a real Label Studio: pushed blind beside the benign
scenes (and, staged, with its sample's scene), pulled into annotated_danger, certified by validation when
>= 2/3 of >= 3 labels (or, staged, of the labels that decide it) say real danger."""

from __future__ import annotations

import json
import re

import httpx

from annotation import push
from annotation.protocol import danger_item_id
from tests.annotation_helpers import (  # noqa: F401  (fixtures)
    RATERS,
    accounts,
    admin,
    annotate,
    arm_tasks,
    cli,
    ls,
    make_workspace,
    pulled,
    tokens,
)
from validation import agreement

A, B, C = RATERS[3], RATERS[4], RATERS[5]


def arms_of(ws, sample_id: str) -> dict:
    rows = [*ws.read_samples("validated"), *(r.sample for r in ws.read_rejected("validated"))]
    return next(s for s in rows if s.sample_id == sample_id).provenance["validation.agreement"]["arms"]


def test_a_danger_scene_is_a_blind_scene_task_and_is_certified_by_its_labels(ls, admin, accounts, tokens,
                                                                              tmp_path, capsys):
    ws = make_workspace(tmp_path / "ws", 3, served=ls.document_root, danger=2)
    code, out, err = cli(push.main, "--workspace", str(ws.root), "--project", "Danger", "--catch", "0",
                         "--no-staged", "--data-dir", str(ls.data_dir), capsys=capsys)
    assert code == 0, err
    assert "scene arm: 3 scene(s) and 2 danger scene(s)" in out
    ids = [s.sample_id for s in ws.read_samples("wer")]
    scene_pid, scene = arm_tasks(admin, ws, "scene")
    assert sorted(scene) == sorted([*ids, danger_item_id(ids[0]), danger_item_id(ids[1])])
    # an annotator reads every scene task alike: the audio URL (by content hash) and an opaque key
    web = httpx.Client(base_url=ls.url, trust_env=False, headers={"Authorization": f"Token {tokens[A]}"})
    fields = set()
    for task_id in scene.values():
        task = web.get(f"/api/tasks/{task_id}").json()
        data = task["data"]
        assert set(data) == {"audio", "key"} and re.fullmatch(r"t[0-9a-f]{20}", data["key"])
        assert re.fullmatch(r"/data/local-files/\?d=[^&]*/[0-9a-f]{2}/[0-9a-f]{64}\.wav", data["audio"])
        data.pop("audio")  # its folder is the test's, named after it
        assert "danger" not in json.dumps(task) and "aor-" not in json.dumps(task)
        fields.add(tuple(sorted(task)))
    assert len(fields) == 1
    assert len(arm_tasks(admin, ws, "speech")[1]) == 3 and len(arm_tasks(admin, ws, "mixture")[1]) == 3

    votes = {ids[0]: ("real_danger", "real_danger", "cant_tell"), ids[1]: ("real_danger", "cant_tell", "cant_tell")}
    for sid, labels in votes.items():
        for email, label in zip((A, B, C), labels):
            annotate(accounts[email], scene[danger_item_id(sid)], label)
    annotate(accounts[A], scene[ids[0]], "cant_tell")  # the benign scene's own label stays its own
    out, samples, _, stats = pulled(ls, ws, capsys)
    assert "0 control(s), 2 danger scene(s) and 0 irrelevant background(s)" in out and "scene (danger)" in out
    danger = {d.sample_id: d for d in ws.read_samples("annotated_danger")}
    assert sorted(danger) == sorted(ids[:2])
    assert [(a.arm, a.label) for a in danger[ids[0]].annotations] == [("scene", label) for label in votes[ids[0]]]
    assert [a.label for a in samples[ids[0]].annotations] == ["cant_tell"]
    assert stats["danger_scenes"] == 2 and stats["danger_labels"] == 6

    code, out, err = cli(agreement.main, "--workspace", str(ws.root), "--n-boot", "10", capsys=capsys)
    assert code == 0, err
    assert "danger twins: 1 of 2 certified as real danger (>= 2/3 of >= 3 labels;" in out
    report = json.loads((ws.root / "reports" / "agreement.json").read_text())
    assert report["danger_twins"] == {"danger_scenes": 2, "certified": 1, "not_certified": 1, "needs_labels": 0,
                                      "certified_validated": 0, "labels": 6, "real_danger_labels": 3}
    assert arms_of(ws, ids[0])["danger"]["certified"] is True
    assert arms_of(ws, ids[1])["danger"] == {"n": 3, "real_danger": 1, "real_danger_rate": 0.3333,
                                             "named": {"cant_tell": 2, "real_danger": 1}, "certified": False}
    assert "danger" not in arms_of(ws, ids[2])  # mixed without a danger twin


def test_a_danger_scene_goes_with_its_sample_s_scene_when_staged(ls, admin, accounts, tmp_path, capsys):
    ws = make_workspace(tmp_path / "ws", 2, served=ls.document_root, danger=2)
    server = ["--workspace", str(ws.root), "--project", "Danger staged", "--catch", "0", "--data-dir",
              str(ls.data_dir)]
    code, out, err = cli(push.main, *server, "--staged", capsys=capsys)
    assert code == 0, err
    assert "scene arm: 0 scene(s) and 0 danger scene(s)" in out and arm_tasks(admin, ws, "scene")[1] == {}
    ids = [s.sample_id for s in ws.read_samples("wer")]
    _, speech = arm_tasks(admin, ws, "speech")
    for sid, labels in ((ids[0], ("harmful", "harmful")), (ids[1], ("not_harmful", "not_harmful"))):
        for email, label in zip(RATERS[:2], labels):
            annotate(accounts[email], speech[sid], label)
    pulled(ls, ws, capsys)
    assert cli(agreement.main, "--workspace", str(ws.root), "--n-boot", "10", capsys=capsys)[0] == 0
    staging = json.loads((ws.root / "staging.json").read_text())["samples"]
    assert staging[ids[0]]["danger"] == {"outcome": None, "wanted": 2}
    code, out, err = cli(push.main, *server, capsys=capsys)
    assert code == 0, err
    # the scene arm holds the passed sample's scene and its danger scene; the failed one's neither
    scene_pid, scene = arm_tasks(admin, ws, "scene")
    assert sorted(scene) == sorted([ids[0], danger_item_id(ids[0])])
    assert "scene arm: 1 scene(s) and 1 danger scene(s)" in out
    assert "staged: speech 2, scene 1 (speech passed; with 1 danger scene(s)), mixture 0" in out
    assert "    scene arm: 1 sample(s) and 1 danger scene(s), 2 still to decide (2 task(s) new this round)" in out

    annotate(accounts[A], scene[danger_item_id(ids[0])], "real_danger")
    annotate(accounts[B], scene[danger_item_id(ids[0])], "cant_tell")  # a split: a third label is asked
    pulled(ls, ws, capsys)
    assert cli(agreement.main, "--workspace", str(ws.root), "--n-boot", "10", capsys=capsys)[0] == 0
    staging = json.loads((ws.root / "staging.json").read_text())["samples"]
    assert staging[ids[0]]["danger"] == {"outcome": None, "wanted": 1}
    code, out, err = cli(push.main, *server, capsys=capsys)
    assert code == 0, err
    assert admin.client.tasks.get(str(scene[danger_item_id(ids[0])])).overlap == 3
    assert admin.client.tasks.get(str(scene[ids[0]])).overlap == 2

    annotate(accounts[C], scene[danger_item_id(ids[0])], "real_danger")
    pulled(ls, ws, capsys)
    code, out, err = cli(agreement.main, "--workspace", str(ws.root), "--n-boot", "10", capsys=capsys)
    assert code == 0, err
    assert "danger twins: 1 of 2 certified as real danger" in out and "1 need labels" in out
    assert json.loads((ws.root / "staging.json").read_text())["samples"][ids[0]]["danger"]["outcome"] == "passed"
    assert arms_of(ws, ids[0])["danger"]["certified"] is True

# ruff: noqa: F811  (the Label Studio fixtures come from tests.annotation_helpers)
"""The irrelevant twin's background (irrelevant_scene_audio) as a scene-arm catch item: pushed blind beside the
benign scenes and the danger scenes (and, staged, with its sample's scene), pulled into annotated_irrelevant,
certified neutral by validation when >= 2/3 of >= 3 labels (or, staged, of the labels that decide it) say "I
can't tell", a frame named or "real danger" counting against; the scripted demo annotators' answers to it."""

from __future__ import annotations

import json
import re
from collections import Counter

import httpx

from annotation import push
from annotation.protocol import danger_item_id, irrelevant_item_id
from construction.core.record import CANT_TELL, Annotation, AudioRef
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
from tests.test_staging import sample
from validation import agreement
from validation.agreement import ConsensusRule, decide
from validation.staging import arm_outcomes, staged_rule

A, B, C = RATERS[3], RATERS[4], RATERS[5]


def arms_of(ws, sample_id: str) -> dict:
    rows = [*ws.read_samples("validated"), *(r.sample for r in ws.read_rejected("validated"))]
    return next(s for s in rows if s.sample_id == sample_id).provenance["validation.agreement"]["arms"]


def heard(s, *labels: str):
    """The sample's irrelevant background with these scene-arm labels, one per listener."""
    return s.model_copy(update={"annotations": [Annotation(annotator=f"twin-{k}", arm="scene", label=label)
                                                for k, label in enumerate(labels)]})


# --- the rule, without a server ---------------------------------------------------------------------------------

def test_certified_neutral_needs_two_thirds_cant_tell_and_a_frame_or_real_danger_counts_against():
    s = sample(0).model_copy(update={"frames": ["video_game"]})
    cases = {("cant_tell", "cant_tell", "cant_tell"): True, ("cant_tell", "cant_tell", "video_game"): True,
             ("cant_tell", "video_game", "kitchen"): False,  # heard as settings
             ("cant_tell", "real_danger", "real_danger"): False,  # heard as danger: no neutral baseline either
             ("cant_tell", "cant_tell"): None}  # too few labels (unstaged)
    for labels, certified in cases.items():
        result = decide(s, ConsensusRule(), protocol="three-arm", irrelevant=heard(s, *labels))
        got = result.sample.provenance["validation.agreement"]["arms"]["irrelevant"]
        assert got["certified"] is certified, labels
        assert (got["n"], got["no_frame"], got["real_danger"]) == (len(labels), labels.count(CANT_TELL),
                                                                   labels.count("real_danger"))
    # never the sample's outcome: its own arms decide that, whatever its twin's background was heard as
    assert decide(s, ConsensusRule(), protocol="three-arm", irrelevant=heard(s, "kitchen")).outcome == \
        decide(s, ConsensusRule(), protocol="three-arm").outcome
    # staged (curtailed): two agreeing labels of a planned three decide it, a split asks for a third
    mixed = s.model_copy(update={"irrelevant_scene_audio": AudioRef(path="audio/00/" + "0" * 64 + ".wav", sha256="0" * 64,
                                                                    sample_rate=16000, duration_s=1.0)})
    for labels, status in ((("cant_tell", "real_danger"), {"outcome": None, "wanted": 1}),
                           (("cant_tell", "cant_tell"), {"outcome": "passed", "wanted": 0}),
                           (("real_danger", "video_game"), {"outcome": "failed", "wanted": 0}),
                           ((), {"outcome": None, "wanted": 2})):
        outcomes = arm_outcomes([mixed], {}, staged_rule(ConsensusRule()), lambda x, r: "needs_labels",
                                others={"irrelevant": {s.sample_id: heard(s, *labels)}})
        assert outcomes[s.sample_id]["irrelevant"] == status, labels
    assert "irrelevant" not in arm_outcomes([s], {}, staged_rule(ConsensusRule()), lambda x, r: "needs_labels")[
        s.sample_id]  # mixed without the twin's background: nothing to ask


def test_the_demo_annotators_hear_no_setting_in_most_irrelevant_backgrounds():
    """The scripted truth of a twin's background: "I can't tell" (IRRELEVANT_NO_FRAME), else one of its
    sample's frames, never real danger; the error rates then spread the rest."""
    from annotation.demo_annotators import IRRELEVANT_NO_FRAME, Known, scripted_truth

    labels = ["video_game", "show", "sport", "kitchen", "work", "family", "real_danger", CANT_TELL]
    truths = Counter(scripted_truth(0, Known(f"irrelevant-aor-{i}", "scene", "irrelevant", frames=("kitchen",)), labels)
                     for i in range(2000))
    assert set(truths) == {CANT_TELL, "kitchen"}
    assert abs(truths[CANT_TELL] / 2000 - IRRELEVANT_NO_FRAME) < 0.03, truths
    # a danger scene's truth is still real danger, and a sample's scene still its frames: the kinds are apart
    danger = Counter(scripted_truth(0, Known(f"danger-aor-{i}", "scene", "danger"), labels) for i in range(200))
    assert danger.most_common(1)[0][0] == "real_danger"
    # seeded: another seed draws another script, the same seed the same one
    again = [scripted_truth(s, Known(f"irrelevant-aor-{i}", "scene", "irrelevant", frames=("kitchen",)), labels)
             for s in (0, 0, 1) for i in range(200)]
    assert again[:200] == again[200:400] != again[400:]


# --- through a real Label Studio --------------------------------------------------------------------------------

def test_an_irrelevant_background_is_a_blind_scene_task_and_is_certified_by_its_labels(ls, admin, accounts, tokens,
                                                                                        tmp_path, capsys):
    ws = make_workspace(tmp_path / "ws", 4, served=ls.document_root, danger=1, irrelevant=3)
    code, out, err = cli(push.main, "--workspace", str(ws.root), "--project", "Irrelevant", "--catch", "0",
                         "--no-staged", "--data-dir", str(ls.data_dir), capsys=capsys)
    assert code == 0, err
    assert ("scene arm: 4 scene(s) and 1 danger scene(s) (of the danger twins) and 3 irrelevant background(s) "
            "(of the irrelevant twins), one task each, alike") in out
    ids = [s.sample_id for s in ws.read_samples("wer")]
    _, scene = arm_tasks(admin, ws, "scene")
    assert sorted(scene) == sorted([*ids, danger_item_id(ids[0]), *map(irrelevant_item_id, ids[:3])])
    # an annotator reads every scene task alike: the audio URL (by content hash) and an opaque key
    web = httpx.Client(base_url=ls.url, trust_env=False, headers={"Authorization": f"Token {tokens[A]}"})
    fields = set()
    for task_id in scene.values():
        task = web.get(f"/api/tasks/{task_id}").json()
        data = task["data"]
        assert set(data) == {"audio", "key"} and re.fullmatch(r"t[0-9a-f]{20}", data["key"])
        assert re.fullmatch(r"/data/local-files/\?d=[^&]*/[0-9a-f]{2}/[0-9a-f]{64}\.wav", data["audio"])
        data.pop("audio")  # its folder is the test's, named after it
        assert not [word for word in ("irrelevant", "danger", "aor-") if word in json.dumps(task)]
        fields.add(tuple(sorted(task)))
    assert len(fields) == 1
    # and the key map, never served, says which is which
    mapping = json.loads((ws.root / "annotation_tasks.json").read_text())
    assert sorted(item for item, role in mapping.values() if role == "scene") == sorted(scene)

    votes = {ids[0]: ("cant_tell", "cant_tell", "real_danger"),  # 2/3 no frame: certified neutral
             ids[1]: ("cant_tell", "real_danger", "real_danger")}  # heard as danger: not (real danger counts)
    for sid, labels in votes.items():
        for email, label in zip((A, B, C), labels):
            annotate(accounts[email], scene[irrelevant_item_id(sid)], label)
    annotate(accounts[A], scene[ids[0]], "video_game")  # the sample's own scene keeps its own label
    out, samples, _, stats = pulled(ls, ws, capsys)
    assert "1 danger scene(s) and 3 irrelevant background(s)" in out and "scene (irrelevant)" in out
    twins = {d.sample_id: d for d in ws.read_samples("annotated_irrelevant")}
    assert sorted(twins) == sorted(ids[:3])
    assert [(a.arm, a.label) for a in twins[ids[1]].annotations] == [("scene", label) for label in votes[ids[1]]]
    assert twins[ids[2]].annotations == [] and [a.label for a in samples[ids[0]].annotations] == ["video_game"]
    assert (stats["irrelevant_scenes"], stats["irrelevant_labels"], stats["danger_scenes"]) == (3, 6, 1)

    code, out, err = cli(agreement.main, "--workspace", str(ws.root), "--n-boot", "10", capsys=capsys)
    assert code == 0, err
    assert ("irrelevant twins: 1 of 3 certified neutral (>= 2/3 of >= 3 labels of the background alone said \"I "
            "can't tell\"; a frame or real danger counts against; 0 of them on a validated sample, which ship), 1 "
            "not, 1 need labels") in out
    report = json.loads((ws.root / "reports" / "agreement.json").read_text())
    assert report["irrelevant_twins"] == {"irrelevant_backgrounds": 3, "certified": 1, "not_certified": 1,
                                          "needs_labels": 1, "certified_validated": 0, "labels": 6,
                                          "no_frame_labels": 3, "real_danger_labels": 3}
    assert arms_of(ws, ids[0])["irrelevant"]["certified"] is True
    assert arms_of(ws, ids[1])["irrelevant"] == {"n": 3, "no_frame": 1, "no_frame_rate": 0.3333, "real_danger": 2,
                                                 "framed": 0, "named": {"cant_tell": 1, "real_danger": 2},
                                                 "certified": False}
    assert arms_of(ws, ids[2])["irrelevant"]["certified"] is None
    assert "irrelevant" not in arms_of(ws, ids[3])  # mixed without an irrelevant twin


def test_an_irrelevant_background_goes_with_its_sample_s_scene_when_staged(ls, admin, accounts, tmp_path, capsys):
    ws = make_workspace(tmp_path / "ws", 2, served=ls.document_root, irrelevant=2)
    server = ["--workspace", str(ws.root), "--project", "Irrelevant staged", "--catch", "0", "--data-dir",
              str(ls.data_dir)]
    code, out, err = cli(push.main, *server, "--staged", capsys=capsys)
    assert code == 0, err
    assert "scene arm: 0 scene(s) and 0 danger scene(s) (of the danger twins), one task each" in out
    assert arm_tasks(admin, ws, "scene")[1] == {}
    ids = [s.sample_id for s in ws.read_samples("wer")]
    _, speech = arm_tasks(admin, ws, "speech")
    for sid, labels in ((ids[0], ("harmful", "harmful")), (ids[1], ("not_harmful", "not_harmful"))):
        for email, label in zip(RATERS[:2], labels):
            annotate(accounts[email], speech[sid], label)
    pulled(ls, ws, capsys)
    assert cli(agreement.main, "--workspace", str(ws.root), "--n-boot", "10", capsys=capsys)[0] == 0
    staging = json.loads((ws.root / "staging.json").read_text())
    assert staging["samples"][ids[0]]["irrelevant"] == {"outcome": None, "wanted": 2}
    assert "annotated_irrelevant" in staging["pulled"]  # a pull that changes its labels makes the file stale
    code, out, err = cli(push.main, *server, capsys=capsys)
    assert code == 0, err
    # the scene arm holds the passed sample's scene and its twin's background; the failed one's neither
    _, scene = arm_tasks(admin, ws, "scene")
    assert sorted(scene) == sorted([ids[0], irrelevant_item_id(ids[0])])
    assert "staged: speech 2, scene 1 (speech passed; with 1 irrelevant background(s)), mixture 0" in out
    assert "    scene arm: 1 sample(s) and 1 irrelevant background(s), 2 still to decide (2 task(s) new this round)" in out

    annotate(accounts[A], scene[irrelevant_item_id(ids[0])], "cant_tell")
    annotate(accounts[B], scene[irrelevant_item_id(ids[0])], "video_game")  # a split: a third label is asked
    pulled(ls, ws, capsys)
    assert cli(agreement.main, "--workspace", str(ws.root), "--n-boot", "10", capsys=capsys)[0] == 0
    staging = json.loads((ws.root / "staging.json").read_text())["samples"]
    assert staging[ids[0]]["irrelevant"] == {"outcome": None, "wanted": 1}
    code, out, err = cli(push.main, *server, capsys=capsys)
    assert code == 0, err
    assert admin.client.tasks.get(str(scene[irrelevant_item_id(ids[0])])).overlap == 3
    assert admin.client.tasks.get(str(scene[ids[0]])).overlap == 2

    annotate(accounts[C], scene[irrelevant_item_id(ids[0])], "cant_tell")
    pulled(ls, ws, capsys)
    code, out, err = cli(agreement.main, "--workspace", str(ws.root), "--n-boot", "10", capsys=capsys)
    assert code == 0, err
    assert "irrelevant twins: 1 of 2 certified neutral" in out and "1 need labels" in out
    assert json.loads((ws.root / "staging.json").read_text())["samples"][ids[0]]["irrelevant"]["outcome"] == "passed"
    assert arms_of(ws, ids[0])["irrelevant"]["certified"] is True


def test_the_demo_annotators_hear_an_irrelevant_background_with_its_sample_s_scene(ls, admin, accounts, tmp_path,
                                                                                   capsys):
    """As scripts/demo.sh runs it: a sample's irrelevant background and danger scene come with its scene, are
    labelled by the group that heard the sample's scene (never its speech), the background mostly "I can't
    tell" and the danger scene mostly real danger, and the staged rounds decide each (the danger arm's
    own staged test was this one with the irrelevant twin left out)."""
    from annotation import demo_annotators
    from annotation.labelstudio import export_tasks, user_emails
    from annotation.protocol import read_task_map
    from tests.test_staging import DEMO_SEED

    ws = make_workspace(tmp_path / "demo", 6, served=ls.document_root, danger=6, irrelevant=6)
    where = ["--workspace", str(ws.root), "--data-dir", str(ls.data_dir)]

    def labelled(role: str) -> dict[str, list[tuple[int, str]]]:
        entry = json.loads((ws.root / "annotation.json").read_text())["arms"][role]
        mapping = read_task_map(ws)
        return {mapping[t["data"]["key"]][0]: [(a["completed_by"], a["result"][0]["value"]["choices"][0])
                                               for a in t.get("annotations") or []]
                for t in export_tasks(admin, int(entry["id"]))}

    def round_() -> None:
        code, out, err = cli(push.main, *where, *(["--staged", "--project", "Demo irrelevant", "--catch", "0"]
                                                  if not (ws.root / "annotation.json").exists() else []),
                             capsys=capsys)
        assert code == 0, err
        code, out, err = cli(demo_annotators.main, *where, "--annotators", "3", "--annotator-seed", DEMO_SEED,
                             capsys=capsys)
        assert code == 0 and "stuck:" not in out, out + err
        pulled(ls, ws, capsys)
        assert cli(agreement.main, "--workspace", str(ws.root), "--n-boot", "10", capsys=capsys)[0] == 0

    for _ in range(3):
        round_()
    speech, scene = labelled("speech"), labelled("scene")
    passed = [i for i in speech if i in scene]
    assert passed and all(irrelevant_item_id(i) in scene and danger_item_id(i) in scene for i in passed)
    assert len(scene) == 3 * len(passed)
    emails = user_emails(admin)

    def group(user: int) -> int:  # annotator-K@demo...: group (K - 1) // 3
        return (int(emails[user].partition("@")[0].rsplit("-", 1)[1]) - 1) // 3

    for i in passed:
        for twin in (irrelevant_item_id(i), danger_item_id(i)):
            heard_twin = {u for u, _ in scene[twin]}
            assert len(heard_twin) >= 2 and not heard_twin & {u for u, _ in speech[i]}
        assert len({group(u) for u, _ in [*scene[i], *scene[irrelevant_item_id(i)], *scene[danger_item_id(i)]]}) == 1
        assert {group(u) for u, _ in scene[i]} != {group(u) for u, _ in speech[i]}
    answers = Counter(label for i in passed for _, label in scene[irrelevant_item_id(i)])
    assert answers[CANT_TELL] >= sum(answers.values()) * 2 / 3, answers
    danger = [label for i in passed for _, label in scene[danger_item_id(i)]]
    assert danger.count("real_danger") >= len(danger) / 2, danger
    staging = json.loads((ws.root / "staging.json").read_text())["samples"]
    assert all(staging[i]["irrelevant"]["outcome"] in ("passed", "failed") for i in passed), staging
    assert any(staging[i]["irrelevant"]["outcome"] == "passed" for i in passed)
    assert any(staging[i]["danger"]["outcome"] == "passed" for i in passed)
    report = json.loads((ws.root / "reports" / "agreement.json").read_text())["irrelevant_twins"]
    assert report["irrelevant_backgrounds"] == 6 and report["certified"] >= 1

# ruff: noqa: F811  (the Label Studio fixtures come from tests.annotation_helpers)
"""Staged, curtailed annotation (validation.staging decides, annotation.staging follows): the early decision
of an arm, what a staged push sends on, the arm outcomes agreement writes and a push refuses when stale,
validation of a partially labelled sample, the judgement saving on simulated label sets, and one real
Label Studio round (push -> label -> pull -> agreement -> push) of a staged workspace."""

from __future__ import annotations

import json

import httpx
import pytest

from annotation import push
from annotation.staging import FIRST_ROUND, STAGING_FILE, plan, read_outcomes
from construction.core.errors import WorkbenchError
from construction.core.record import Annotation, Sample
from tests.annotation_helpers import (  # noqa: F401  (fixtures)
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
from validation.agreement import ConsensusRule, decide
from validation.arms import ArmRule, arm_results
from validation.staging import (
    SETTINGS,
    arm_outcomes,
    first_round,
    simulate,
    staged_rule,
)

RULE = staged_rule(ConsensusRule())


def mixture_outcome(s: Sample, rule: ArmRule) -> str:
    return decide(s, rule, protocol="mixture").outcome


def outcomes_of(annotated: dict[str, Sample], controls: dict[str, Sample] | None = None) -> dict:
    """What read_outcomes hands a push, computed as agreement computes it (no workspace)."""
    return {"first_round": first_round(RULE), "rule": {}, "samples": arm_outcomes(
        list(annotated.values()), controls or {}, RULE, mixture_outcome)}


def sample(i: int = 0, **custom) -> Sample:
    return Sample(sample_id=f"aor-{i:04d}", category="video_games", speech_text="Finish him!", context="a game",
                  background_tags=["game_music"], placement="underlay", benign_reason="a game",
                  speaker_style="excited", custom=custom)


def labelled(s: Sample, arm: str, *labels: str | None) -> Sample:
    extra = [Annotation(annotator=f"{arm}-{s.sample_id}-{k}", arm=arm, label=label, cancelled=label is None,
                        speech_intelligible=True if arm == "mixture" else None) for k, label in enumerate(labels)]
    return s.model_copy(update={"annotations": [*s.annotations, *extra]})


def scene_pass(s: Sample) -> str:
    """A scene label the rule counts as recognising the sample's scene (its category or one of its frames,
    whichever the scene arm asks for), so these tests follow the scene arm's rule rather than fix it."""
    from construction.text.taxonomy import load_taxonomy

    taxonomy, _ = load_taxonomy(None)
    candidates = [s.category, *getattr(s, "frames", []),
                  *[getattr(c, "frame", None) for c in taxonomy.categories if c.id == s.category]]
    for label in [c for c in candidates if c]:
        if arm_results(labelled(s, "scene", label))["scene"]["identified"] == 1:
            return label
    raise AssertionError("no scene label passes")


# ----------------------------------------------------------------------------------------------
# the curtailed rule
# ----------------------------------------------------------------------------------------------

def test_an_arm_is_decided_once_no_label_to_come_can_change_it():
    plain, curtailed = ArmRule(), ArmRule(curtailed=True)
    assert first_round(curtailed) == 2 == FIRST_ROUND  # 2 agreeing of a planned 3 decide 2/3 (the first push's)
    assert [curtailed.settled(k, 2) for k in (0, 1, 2)] == [False, None, True]
    assert [plain.settled(k, 2) for k in (0, 1, 2)] == [None, None, None]  # unstaged: still 3 labels
    assert [curtailed.settled(k, 3) for k in range(4)] == [False, False, True, True] == \
        [plain.settled(k, 3) for k in range(4)]
    assert curtailed.settled(1, 1) is None and curtailed.settled(0, 0) is None
    five = ArmRule(min_labels=5, curtailed=True)  # 2/3 of 5 needs 4
    assert (first_round(five), five.settled(4, 4), five.settled(3, 4), five.settled(0, 2), five.settled(1, 2)) == \
        (4, True, None, False, None)
    # every sequence of 3 pass/fail labels: stopping at the first settled prefix gives the 3-label outcome
    for bits in range(8):
        labels = [(bits >> k) & 1 for k in range(3)]
        prefix = next(curtailed.settled(sum(labels[:n]), n) for n in (1, 2, 3)
                      if curtailed.settled(sum(labels[:n]), n) is not None)
        assert prefix == plain.settled(sum(labels), 3)


def test_the_mixture_arm_is_decided_early_only_when_curtailed():
    s = sample()
    assert decide(labelled(s, "mixture", "benign", "benign"), RULE, protocol="mixture").outcome == "validated"
    assert decide(labelled(s, "mixture", "harmful", "harmful"), RULE, protocol="mixture").outcome == "harmful"
    assert decide(labelled(s, "mixture", "unclear", "unclear"), RULE, protocol="mixture").outcome == "adjudication"
    assert decide(labelled(s, "mixture", "benign", "harmful"), RULE, protocol="mixture").outcome == "needs_labels"
    assert decide(labelled(s, "mixture", "benign", None), RULE, protocol="mixture").outcome == "needs_labels"
    assert decide(labelled(s, "mixture", "benign", "benign"), ConsensusRule(), protocol="mixture").outcome \
        == "needs_labels"


def test_a_partially_staged_sample_waits_until_an_earlier_arm_fails():
    s = sample()
    passed = labelled(s, "speech", "harmful", "harmful")
    d = decide(passed, RULE, protocol="three-arm")  # scene and mixture never pushed
    assert d.outcome == "needs_labels" and "speech" not in d.reason
    d = decide(labelled(s, "speech", "not_harmful", "not_harmful"), RULE, protocol="three-arm")
    assert d.outcome == "arm_failed" and d.reason.startswith("speech_not_harmful: 0/2") and "scene" not in d.reason
    failed_scene = labelled(passed, "scene", "cant_tell", "cant_tell")
    d = decide(failed_scene, RULE, protocol="three-arm")
    assert d.outcome == "arm_failed" and d.reason.startswith("scene_not_identified: 0/2")
    good = labelled(labelled(labelled(passed, "scene", *[scene_pass(s)] * 2), "mixture", "benign", "benign"),
                    "mixture")
    assert decide(good, RULE, protocol="three-arm").outcome == "validated"
    assert decide(good, ConsensusRule(), protocol="three-arm").outcome == "needs_labels"  # unstaged: 3 labels


# ----------------------------------------------------------------------------------------------
# what a staged push sends on
# ----------------------------------------------------------------------------------------------

def test_a_staged_plan_sends_on_only_passing_samples_and_asks_a_third_label_only_on_a_split():
    samples = [sample(i) for i in range(7)]
    controls = [sample(100 + i, control_of=s.sample_id, expected="harmful") for i, s in enumerate(samples)]
    first = plan(samples, None, {}, controls, {})  # before any pull: no outcomes
    assert first.items == {"speech": [s.sample_id for s in samples], "scene": [], "mixture": []}
    assert first.controls == [] and first.overlap == {"speech": {}, "scene": {}, "mixture": {}}

    ok = scene_pass(samples[0])
    sp = [("harmful", "harmful"), ("harmful", "not_harmful"), ("not_harmful", "not_harmful"), ("harmful", None),
          ("harmful", "harmful"), ("harmful", "harmful"), ("harmful", "harmful")]
    sc = [(), (), (), (), (ok, "cant_tell"), (ok, ok), ("cant_tell", "cant_tell")]
    mx = [(), (), (), (), (), ("benign", "unclear"), ()]
    annotated = {}
    for s, a, b, c in zip(samples, sp, sc, mx, strict=True):
        annotated[s.sample_id] = labelled(labelled(labelled(s, "speech", *a), "scene", *b), "mixture", *c)
    second = plan(samples, outcomes_of(annotated), annotated, controls, {})
    ids = [s.sample_id for s in samples]
    assert second.items["speech"] == ids
    assert second.items["scene"] == [ids[0], ids[4], ids[5], ids[6]]  # speech passed (2 of 2 harmful)
    assert second.items["mixture"] == [ids[5]] and second.controls == [controls[5].sample_id]
    # a split gets one more label; a skip leaves the task served by Label Studio (1 of the 2 planned done)
    assert second.overlap["speech"] == {ids[1]: 3}
    assert second.overlap["scene"] == {ids[4]: 3}
    assert second.overlap["mixture"] == {ids[5]: 3}
    assert second.stages == {"waiting_speech": 2, "speech_failed": 1, "waiting_scene": 2, "scene_failed": 1,
                             "waiting_mixture": 1}
    assert "mixture 1 (both passed)" in second.summary()
    # the control's own labels: decided controls ask nothing more, a split one a third label
    pulled_controls = {controls[5].sample_id: labelled(controls[5], "mixture", "harmful", "benign")}
    third = plan(samples, outcomes_of(annotated, {samples[5].sample_id: pulled_controls[controls[5].sample_id]}),
                 annotated, controls, pulled_controls)
    assert third.overlap["mixture"] == {ids[5]: 3, controls[5].sample_id: 3}


def test_a_dropped_judgement_still_held_by_label_studio_raises_the_overlap_past_it():
    """Pull drops a judgement of a person who heard the sample in another arm, but Label Studio still
    holds it and counts it against the task's overlap: the next push asks for the missing label on top of
    all Label Studio holds, else the task would look done there and never be served again."""
    s = sample(0)
    ok = scene_pass(s)
    # speech passed; the scene task holds 2 completed annotations, one dropped by pull (cross-arm)
    annotated = {s.sample_id: labelled(labelled(s, "speech", "harmful", "harmful"), "scene", ok)}
    outcome = outcomes_of(annotated)
    assert outcome["samples"][s.sample_id]["scene"] == {"outcome": None, "wanted": 1}
    blind = plan([s], outcome, annotated, [], {})
    assert blind.overlap["scene"] == {}  # kept 1 + wanted 1 = 2: what Label Studio holds already
    fixed = plan([s], outcome, annotated, [], {}, {"scene": {s.sample_id: 1}})
    assert fixed.overlap["scene"] == {s.sample_id: 3}
    # nothing wanted: what is held alone never reopens a task
    done = {s.sample_id: labelled(labelled(s, "speech", "harmful", "harmful"), "scene", ok, ok)}
    assert plan([s], outcomes_of(done), done, [], {}, {"scene": {s.sample_id: 1}}).overlap["scene"] == {}


def test_the_demo_annotators_give_an_open_task_only_the_labels_it_lacks():
    """open_turns: a task gets overlap - completed labels, each from an account of its group that has not
    labelled it; a full task none; a catch task every account once; too few accounts are counted short."""
    from annotation.demo_annotators import Known, Stuck, open_turns, stuck_lines

    accounts = list(range(1, 7))  # 2 groups of 3 (the group is what `wanted` says)
    users = {k: 100 + k for k in accounts}
    known = {f"k{i}": Known(f"s{i}", "speech", "sample") for i in range(4)} | {"c": Known("c", "mixture", "catch")}
    tasks = [{"id": 1, "data": {"key": "k0"}, "annotations": []},  # new: 2 labels
             {"id": 2, "data": {"key": "k1"}, "annotations": [{"completed_by": 101}, {"completed_by": 102}]},  # split
             {"id": 3, "data": {"key": "k2"}, "annotations": [{"completed_by": 104}, {"completed_by": 105}]},  # full
             {"id": 4, "data": {"key": "k3"}, "annotations": [{"completed_by": 101, "was_cancelled": True}]},
             {"id": 5, "data": {"key": "c"}, "annotations": [{"completed_by": 103}]}]
    group = {"s0": 0, "s1": 0, "s2": 1, "s3": 0}

    def wanted(k: int, item: Known) -> bool:
        return item.kind == "catch" or (k - 1) // 3 == group[item.item_id]

    turns, stuck = open_turns(tasks, {2: 3, 5: 10_000}, 2, accounts, users, known, 0, wanted)
    given = {t: sorted(k for k, mine in turns.items() for task, _ in mine if task["id"] == t) for t in range(1, 6)}
    assert len(given[1]) == 2 and set(given[1]) <= {1, 2, 3}
    assert given[2] == [3]  # the one account of the group that has not labelled it
    assert given[3] == []  # its 2 labels are there
    assert given[4] == [2, 3]  # a skip is not a label (2 still lacking), and its author does not label it again
    assert given[5] == [1, 2, 4, 5, 6] and stuck == []
    _, stuck = open_turns(tasks, {1: 5, 2: 4}, 2, accounts, users, known, 0, wanted)
    # task 1 asks 5 of a group of 3; task 2 a fourth label of a group whose 3 accounts labelled it
    assert stuck == [Stuck("speech", "s0", 2, 5), Stuck("speech", "s1", 1, 4)]
    lines = stuck_lines(stuck, 3, "python -m annotation.demo_annotators --workspace ws")
    assert lines[0] == "stuck: 2 task(s) want 3 more label(s) that none of the 3 scripted account(s) per arm may give:"
    assert lines[1] == "  speech arm: s0 (2 more), s1"
    assert lines[4].startswith("unstick: python -m annotation.demo_annotators --workspace ws --annotators 5 ")
    assert max(map(len, lines)) <= 120, lines


# ----------------------------------------------------------------------------------------------
# validation decides, the push follows: W/staging.json
# ----------------------------------------------------------------------------------------------

def test_agreement_writes_the_arm_outcomes_and_a_push_refuses_them_stale(tmp_path, capsys):
    ws = make_workspace(tmp_path / "ws", 4)
    wer = list(ws.read_samples("wer"))
    assert read_outcomes(ws) is None  # nothing pulled: the first staged push needs no file
    ids = [s.sample_id for s in wer]
    votes = [("harmful", "harmful"), ("harmful", "not_harmful"), ("not_harmful", "not_harmful"), ("harmful",)]
    ws.write_manifest("annotated", [labelled(s, "speech", *v) for s, v in zip(wer, votes, strict=True)])
    ws.write_manifest("annotated_controls", [])

    code, out, err = cli(push.main, "--workspace", str(ws.root), "--staged", capsys=capsys)
    assert code == 2 and f"run python -m validation.agreement --workspace {ws.root} first" in err and "no " in err, err

    # agreement on an unstaged workspace (the default rule, not curtailed) still writes the curtailed outcomes
    code, out, err = cli(agreement.main, "--workspace", str(ws.root), "--n-boot", "10", capsys=capsys)
    assert code == 0, err
    assert STAGING_FILE in out
    document = json.loads((ws.root / STAGING_FILE).read_text())
    assert document["rule"] == {"min_fraction": 2 / 3, "min_labels": 3, "labels": list(ConsensusRule().labels),
                                "curtailed": True, "first_round": 2}
    assert document["written_by"] == "validation.agreement"
    arms = document["samples"]
    assert [arms[i]["speech"] for i in ids] == [{"outcome": "passed", "wanted": 0}, {"outcome": None, "wanted": 1},
                                                {"outcome": "failed", "wanted": 0}, {"outcome": None, "wanted": 1}]
    assert ws.read_stats("validated")["rule"].get("curtailed") is None  # the release's rule is untouched
    got = push.staged_plan(ws, wer, [])
    assert got.items["scene"] == [ids[0]] and got.overlap["speech"] == {ids[1]: 3}
    assert got.stages == {"waiting_speech": 2, "speech_failed": 1, "waiting_scene": 1}

    # a pull after agreement (another label came in): the file is stale until agreement runs again
    ws.write_manifest("annotated", [labelled(s, "speech", *v, *(("harmful",) if i == 3 else ()))
                                    for i, (s, v) in enumerate(zip(wer, votes, strict=True))])
    with pytest.raises(WorkbenchError, match="older than the labels pull brought back.*validation.agreement --workspace"):
        push.staged_plan(ws, wer, [])
    code, out, err = cli(push.main, "--workspace", str(ws.root), "--staged", capsys=capsys)
    assert code == 2 and err.startswith("error: ") and f"python -m validation.agreement --workspace {ws.root} first" in err
    assert cli(agreement.main, "--workspace", str(ws.root), "--n-boot", "10", capsys=capsys)[0] == 0
    assert push.staged_plan(ws, wer, []).items["scene"] == [ids[0], ids[3]]

    (ws.root / STAGING_FILE).write_text("{")
    with pytest.raises(WorkbenchError, match="not readable"):
        read_outcomes(ws)


# ----------------------------------------------------------------------------------------------
# the saving, simulated
# ----------------------------------------------------------------------------------------------

def test_the_simulated_saving_on_a_fixed_seed():
    # figures by hand: every arm passes and every label agrees -> 2 labels an arm, 6 of 9 judgements
    perfect = simulate(500, (1.0, 1.0, 1.0), 1.0, seed=3)
    assert (perfect["released"], perfect["staged_judgements"], perfect["full_judgements"]) == (500, 3000, 4500)
    # every speech arm fails unanimously -> 2 judgements a sample, none released
    hopeless = simulate(500, (0.0, 1.0, 1.0), 1.0, seed=3)
    assert (hopeless["released"], hopeless["staged_judgements"], hopeless["staged_per_released"]) == (0, 1000, None)
    # seeds 0-2 at 20,000 samples: realistic 39.9-40.4 % saved, 11.95-12.26 judgements per release (20.5 full);
    # pessimistic 47.0-47.5 %; optimistic 34.1-34.3 %
    margins = {"realistic": ((0.39, 0.415), (11.7, 12.5)), "pessimistic": ((0.46, 0.485), (20.8, 22.8)),
               "optimistic": ((0.335, 0.35), (7.95, 8.25))}
    for name, (low_high, per_release) in margins.items():
        *rates, agree = SETTINGS[name]
        got = simulate(20_000, rates, agree, seed=0)
        assert low_high[0] <= got["saving"] <= low_high[1], (name, got)
        assert per_release[0] <= got["staged_per_released"] <= per_release[1], (name, got)
        assert got["staged_per_released"] < got["full_per_released"]


# ----------------------------------------------------------------------------------------------
# one real round: push staged -> label the speech arm -> pull -> push again
# ----------------------------------------------------------------------------------------------

def test_staged_rounds_in_label_studio(ls, admin, accounts, tokens, tmp_path, capsys):
    ws = make_workspace(tmp_path / "ws", 4, served=ls.document_root, controls=4)
    server = ["--workspace", str(ws.root), "--project", "Staged", "--catch", "1", "--data-dir", str(ls.data_dir)]
    code, out, err = cli(push.main, *server, "--staged", capsys=capsys)
    assert code == 0, err
    assert "staged: speech 4, scene 0 (speech passed), mixture 0 (both passed), 0 control(s)" in out
    # who sees what, when: the arms with tasks this round, and why the others are empty
    assert "this round (staged; each task is served to 2 annotators, one more on a split):" in out
    assert "   speech arm: 4 sample(s), 4 still to decide (4 task(s) new this round)" in out
    assert ("    scene arm: empty for now: a sample's scene is pushed once its speech arm passed; 4 sample(s) wait "
            "on an earlier arm") in out
    assert "  mixture arm: empty for now: a sample's mixture (with its control, and the catch items) is pushed" in out
    assert "annotators invited now find tasks only in the speech arm; the other arms fill in later rounds" in out
    flags = f"--workspace {ws.root} --data-dir {ls.data_dir}"
    assert (f"next round, once these are labelled: python -m annotation.pull {flags}, then python -m "
            f"validation.agreement --workspace {ws.root}, then python -m annotation.push {flags}") in out
    assert f"invite annotators: python -m annotation.invite {flags}" in out
    ids = [s.sample_id for s in ws.read_samples("wer")]
    speech_pid, speech = arm_tasks(admin, ws, "speech")
    assert sorted(speech) == sorted(ids) and arm_tasks(admin, ws, "scene")[1] == {}
    assert arm_tasks(admin, ws, "mixture")[1] == {}  # no catch item before the first mixture sample
    assert admin.client.projects.get(speech_pid).maximum_annotations == 2
    assert json.loads((ws.root / "annotation.json").read_text())["staged"] is True

    raters = list(accounts)
    votes = {ids[0]: ("harmful", "harmful"), ids[1]: ("harmful", "not_harmful"),
             ids[2]: ("not_harmful", "not_harmful"), ids[3]: ("harmful", "harmful")}
    for sid, labels in votes.items():
        for email, label in zip(raters, labels):
            annotate(accounts[email], speech[sid], label)
    out, samples, _, stats = pulled(ls, ws, capsys)
    assert "missing" not in out  # the arms never pushed are not missing tasks
    assert {a.arm for s in samples.values() for a in s.annotations} == {"speech"}
    assert stats["per_arm"]["speech"]["labels"] == 8 and stats["per_arm"]["scene"]["labels"] == 0

    code, out, err = cli(push.main, *server, capsys=capsys)  # the labels pulled, not yet decided
    assert code == 2 and f"run python -m validation.agreement --workspace {ws.root} first" in err, err
    code, out, err = cli(agreement.main, "--workspace", str(ws.root), "--n-boot", "10", capsys=capsys)
    assert code == 0, err
    rejected = {r.sample.sample_id: r.reason for r in ws.read_rejected("validated")}
    assert rejected[ids[2]].startswith("speech_not_harmful: 0/2") and "scene" not in rejected[ids[2]]
    assert all(rejected[i].startswith("needs_labels") for i in (ids[0], ids[1], ids[3]))  # pending, not failed
    assert ws.read_stats("validated")["rule"]["curtailed"] is True  # release.integrity reruns the same rule

    code, out, err = cli(push.main, *server, capsys=capsys)  # a workspace pushed staged stays staged
    assert code == 0, err
    assert "staged: speech 4, scene 2 (speech passed), mixture 0 (both passed)" in out
    assert "1 split task(s) asked for another label" in out
    assert ("   speech arm: 4 sample(s), 1 still to decide (0 task(s) new this round, 1 split task(s) asking another "
            "label)") in out
    assert "    scene arm: 2 sample(s), 2 still to decide (2 task(s) new this round); 1 more sample(s) wait" in out
    assert "  mixture arm: empty for now:" in out and "; 3 sample(s) wait on an earlier arm" in out
    assert "annotators invited now find tasks only in the speech and scene arms;" in out
    scene_pid, scene = arm_tasks(admin, ws, "scene")
    assert sorted(scene) == sorted([ids[0], ids[3]])
    assert admin.client.projects.get(scene_pid).maximum_annotations == 2
    overlaps = {sid: admin.client.tasks.get(str(task)) for sid, task in speech.items()}
    assert {sid: t.overlap for sid, t in overlaps.items()} == {ids[0]: 2, ids[1]: 3, ids[2]: 2, ids[3]: 2}
    assert not overlaps[ids[1]].is_labeled
    # Label Studio serves the split task, and only it, to a third annotator
    third = raters[2]
    got = httpx.get(f"{ls.url}/api/projects/{speech_pid}/next", headers={"Authorization": f"Token {tokens[third]}"},
                    trust_env=False)
    assert got.status_code == 200 and got.json()["id"] == speech[ids[1]], got.text


def test_staging_is_on_for_a_build(tmp_path):
    from construction.core.config import load_config
    from construction.core.workspace import Workspace

    ws = Workspace(tmp_path / "ws")
    assert push.staged_default(ws) is False  # no build config: a hand-made workspace is pushed as before
    ws.snapshot_config(load_config().model_dump(mode="json"))
    assert push.staged_default(ws) is True


# ----------------------------------------------------------------------------------------------
# the staged demo's rounds: push -> demo annotators -> pull -> agreement, against a real Label Studio
# ----------------------------------------------------------------------------------------------

DEMO_SEED = "0"  # the scripted labels' seed: its first round splits some speech tasks (asserted below)


def labelled_in_ls(admin, ws, role: str) -> dict[str, list[int]]:
    """item id -> the users whose completed annotations Label Studio holds on its task of that arm."""
    from annotation.labelstudio import export_tasks
    from annotation.protocol import read_task_map

    entry = json.loads((ws.root / "annotation.json").read_text())["arms"][role]
    mapping = read_task_map(ws)
    return {mapping[t["data"]["key"]][0]: [a["completed_by"] for a in t.get("annotations") or []
                                           if not a.get("was_cancelled")]
            for t in export_tasks(admin, int(entry["id"])) if mapping[t["data"]["key"]][1] == role}


def test_staged_rounds_with_the_demo_annotators(ls, admin, accounts, tmp_path, capsys):
    """Three rounds as scripts/demo.sh runs them. Round 1 sends only the speech arm and the demo annotators
    give each task its 2 labels; round 2 sends the scene arm only for samples whose speech arm passed and a
    third speech label only where the first two split, from the same group; a judgement pull drops
    (someone who heard the sample's speech labels its scene) still makes round 3 ask for the label missing."""
    from annotation import demo_annotators
    from annotation.labelstudio import user_emails
    from construction.text.taxonomy import sample_frames

    ws = make_workspace(tmp_path / "demo", 8, served=ls.document_root, controls=8)
    where = ["--workspace", str(ws.root), "--data-dir", str(ls.data_dir)]
    ids = [s.sample_id for s in ws.read_samples("wer")]
    x = ids[0]  # two testers label its speech; one of them labels its scene too (the cross-arm rule drops it)
    rater_1, rater_2 = list(accounts)[:2]

    def push_and_label(*first: str) -> str:
        code, out, err = cli(push.main, *where, *first, capsys=capsys)
        assert code == 0, err
        return out

    def demo() -> str:
        code, out, err = cli(demo_annotators.main, *where, "--annotators", "3", "--annotator-seed", DEMO_SEED,
                             capsys=capsys)
        assert code == 0 and "stuck:" not in out, out + err
        return out

    def decide() -> dict:
        out, samples, _, stats = pulled(ls, ws, capsys)
        assert cli(agreement.main, "--workspace", str(ws.root), "--n-boot", "10", capsys=capsys)[0] == 0
        return json.loads((ws.root / STAGING_FILE).read_text())["samples"], stats, out, samples

    emails = {}

    def group(user: int) -> int | None:  # annotator-K@demo...: group (K - 1) // 3 (3 per arm); None: a tester
        if user not in emails:
            emails.update(user_emails(admin))
        name, _, domain = emails[user].partition("@")
        return (int(name.rsplit("-", 1)[1]) - 1) // 3 if domain == "demo.aor-bench.invalid" else None

    # round 1: only the speech arm, 2 labels a task
    out = push_and_label("--staged", "--project", "Demo staged", "--catch", "1")
    assert "staged: speech 8, scene 0 (speech passed), mixture 0 (both passed)" in out
    _, speech_task = arm_tasks(admin, ws, "speech")
    annotate(accounts[rater_1], speech_task[x], "harmful")
    annotate(accounts[rater_2], speech_task[x], "harmful")
    assert "submitted 14 label(s)" in demo()  # 7 tasks x 2; x was full
    speech = labelled_in_ls(admin, ws, "speech")
    assert {len(v) for v in speech.values()} == {2} and labelled_in_ls(admin, ws, "scene") == {}
    arms, _, _, _ = decide()
    passed = [i for i in ids if arms[i]["speech"]["outcome"] == "passed"]
    split = [i for i in ids if arms[i]["speech"]["outcome"] is None]
    failed = [i for i in ids if arms[i]["speech"]["outcome"] == "failed"]
    assert x in passed and split and len(passed) >= 3, arms  # the seed splits some, passes most
    assert all(arms[i]["speech"]["wanted"] == 1 for i in split)

    # round 2: scene only for the speech-passed samples; a third speech label only on the splits
    out = push_and_label()
    assert f"scene {len(passed)} (speech passed), mixture 0" in out
    assert sorted(arm_tasks(admin, ws, "scene")[1]) == sorted(passed)
    _, scene_task = arm_tasks(admin, ws, "scene")
    frame = sample_frames(next(s for s in ws.read_samples("wer") if s.sample_id == x))[0]
    annotate(accounts[rater_1], scene_task[x], frame)  # rater_1 heard x's speech first
    demo()
    speech = labelled_in_ls(admin, ws, "speech")
    assert {i: len(v) for i, v in speech.items()} == {i: 3 if i in split else 2 for i in ids}
    for i in split:  # a third account, of the group that heard this sample's speech
        assert len(set(speech[i])) == 3 and len({group(u) for u in speech[i]}) == 1
    scene = labelled_in_ls(admin, ws, "scene")
    assert {i: len(v) for i, v in scene.items()} == dict.fromkeys(passed, 2)
    for i in passed:  # nobody of the demo heard a sample in two arms
        assert not {u for u in set(scene[i]) & set(speech[i]) if group(u) is not None}
    arms, stats, out, samples = decide()
    assert "judgement(s) dropped" in out and stats["uncounted_in_label_studio"]["scene"] == {x: 1}
    assert len([a for a in samples[x].annotations if a.arm == "scene"]) == 1
    # a partially labelled workspace: failed samples say why and are never released; open ones wait
    reasons = {r.sample.sample_id: r.reason for r in ws.read_rejected("validated")}
    for i in ids:
        why = ("speech_not_harmful" if arms[i]["speech"]["outcome"] == "failed" else "scene_not_identified"
               if arms[i]["scene"]["outcome"] == "failed" else "needs_labels")
        assert reasons[i].startswith(why), (i, arms[i], reasons[i])
    assert set(failed) <= {i for i in ids if reasons[i].startswith("speech_not_harmful")}
    assert not (ws.has_manifest("validated") and list(ws.read_samples("validated")))

    # round 3: the scene task of x holds 2 (one dropped, one kept) and wants 1 more: its overlap is 3
    scene_passed = [i for i in ids if arms[i]["scene"]["outcome"] == "passed"]
    assert arms[x]["scene"] == {"outcome": None, "wanted": 1}
    out = push_and_label()
    assert f"mixture {len(scene_passed)} (both passed)" in out
    scene_pid, scene_task = arm_tasks(admin, ws, "scene")
    assert admin.client.tasks.get(str(scene_task[x])).overlap == 3
    demo()
    assert len(labelled_in_ls(admin, ws, "scene")[x]) == 3
    _, _, _, samples = decide()
    assert len([a for a in samples[x].annotations if a.arm == "scene"]) == 2
    mixture = labelled_in_ls(admin, ws, "mixture")
    assert {i: len(v) for i, v in mixture.items() if i in ids} == dict.fromkeys(scene_passed, 2)


def test_a_round_the_scripted_accounts_cannot_finish_says_what_is_stuck(ls, admin, tmp_path, capsys):
    """Issue 50: a staged demo ended with samples undecided and said nothing. With one scripted account per arm
    every speech task of round 1 still wants its second label: the run names the stuck tasks per arm and the
    command that unsticks them; typed as printed, it gives exactly the labels missing. Adjudication then says
    which samples still need labels instead of "every labelled sample reached consensus"."""
    import shlex

    from annotation import demo_annotators
    from validation import adjudicate

    ws = make_workspace(tmp_path / "stuck", 3, served=ls.document_root)
    where = ["--workspace", str(ws.root), "--data-dir", str(ls.data_dir)]
    assert cli(push.main, *where, "--staged", "--project", "Stuck demo", "--catch", "0", capsys=capsys)[0] == 0
    code, out, err = cli(demo_annotators.main, *where, "--annotators", "1", capsys=capsys)
    assert code == 0, err
    assert "submitted 3 label(s)" in out
    assert "stuck: 3 task(s) want 3 more label(s) that none of the 1 scripted account(s) per arm may give:" in out, out
    assert sorted(next(x for x in out.splitlines() if x.startswith("  speech arm: "))[14:].split(", ")) == \
        sorted(s.sample_id for s in ws.read_samples("wer"))
    (line,) = [x for x in out.splitlines() if x.startswith("unstick: ")]
    command = shlex.split(line.removeprefix("unstick: ").split("   (DEMO ONLY")[0])
    assert command[:3] == ["python", "-m", "annotation.demo_annotators"] and command[-2:] == ["--annotators", "2"]
    code, out, err = cli(demo_annotators.main, *command[3:], capsys=capsys)
    assert code == 0 and "submitted 3 label(s)" in out and "stuck:" not in out, out + err
    assert {len(v) for v in labelled_in_ls(admin, ws, "speech").values()} == {2}

    # the speech arm decided, the scene and mixture arms never labelled: nothing to adjudicate, and it says so
    pulled(ls, ws, capsys)
    assert cli(agreement.main, "--workspace", str(ws.root), "--n-boot", "10", capsys=capsys)[0] == 0
    code, out, err = cli(adjudicate.main, "push", *where, capsys=capsys)
    assert code == 0, err
    assert "every labelled sample reached consensus" not in out
    assert "the adjudication queue is empty, but " in out and "sample(s) still need labels" in out, out
    assert f"python -m annotation.push --workspace {ws.root} --data-dir {ls.data_dir}" in out, out

# ruff: noqa: F811  (the Label Studio fixtures come from tests.annotation_helpers)
"""The blind three-arm protocol against a real Label Studio: what an annotator can read, and the rules
of pull (latest update, whoever changed it, one arm per person, lead times, catch items).

One server for the module (tests.annotation_helpers.ls). Annotators act through the API with their own
tokens (and, where Chromium is installed, once through the real labelling interface)."""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path

import httpx

from annotation import push
from annotation.labelstudio import HIDDEN_COLUMNS
from annotation.protocol import CATCH_OVERLAP, CATCH_TEXT
from annotation.state import pseudonym, read_state
from construction.core.record import ARMS
from tests.annotation_helpers import (  # noqa: F401  (fixtures)
    RATERS,
    SKIPPER,
    accounts,
    admin,
    annotate,
    arm_tasks,
    cli,
    human,
    ls,
    make_workspace,
    pulled,
    pushed,
    result,
    tokens,
)

A, B, C, D = RATERS[0], RATERS[1], RATERS[2], RATERS[3]


def names(ws) -> dict[str, str]:
    salt = read_state(ws)["pseudonym_salt"]
    return {e: pseudonym(e, salt) for e in (*RATERS, SKIPPER)}


# ----------------------------------------------------------------------------------------------
# what an annotator can read
# ----------------------------------------------------------------------------------------------

def test_an_annotator_reads_the_audio_and_a_key_and_nothing_else(ls, admin, tokens, tmp_path, capsys):
    """Every task of every arm, read back as an annotator reads it (the task, the labelling stream, the
    Data Manager's task list): its data is the audio URL and an opaque key; no script, context,
    category, tags, SNR, WER or id is anywhere in what comes back."""
    ws = pushed(ls, tmp_path, capsys, n=2, controls=1, catch=1)
    samples = list(ws.read_samples("wer"))
    control = next(ws.read_samples("controls"))
    catch = next(ws.read_samples("catch"))
    secrets = {s.speech_text for s in samples} | {s.context for s in samples} | {s.benign_reason for s in samples}
    secrets |= {s.sample_id for s in samples} | {control.sample_id, catch.sample_id, catch.speech_text}
    secrets |= {"gunfire", "snr_db", "wer_mixture", "speech_text", "background_tags", "placement", "underlay",
                "control_of", "expected"}
    web = httpx.Client(base_url=ls.url, trust_env=False, headers={"Authorization": f"Token {tokens[D]}"})
    for role in ARMS:
        pid, task_of = arm_tasks(admin, ws, role)
        role_secrets = secrets | ({s.category for s in samples} if role != "scene" else set())
        answers = [web.get(f"/api/tasks/{task_id}") for task_id in task_of.values()]
        answers += [web.get("/api/tasks", params={"project": pid, "fields": "all", "page_size": 100}),
                    web.get(f"/api/projects/{pid}/next")]
        for answer in answers:
            assert answer.status_code == 200, answer.text
            leaked = [s for s in role_secrets if s in answer.text]
            assert leaked == [], (role, answer.url, leaked)
        for task_id in task_of.values():
            data = web.get(f"/api/tasks/{task_id}").json()["data"]
            assert set(data) == {"audio", "key"} and re.fullmatch(r"t[0-9a-f]{20}", data["key"])
            assert re.fullmatch(r"/data/local-files/\?d=[^&]*/[0-9a-f]{2}/[0-9a-f]{64}\.wav", data["audio"])
        project = web.get(f"/api/projects/{pid}").json()
        assert "$speech_text" not in project["label_config"] and "$context" not in project["label_config"]
        assert "Play the whole clip" in project["label_config"] and project["show_instruction"] is True
        assert project["sampling"] == "Uniform sampling" and project["show_collab_predictions"] is False
        assert not [s for s in role_secrets - {"expected"} if s in project["label_config"] + project["expert_instruction"]]
        # the Data Manager tab every project gets shows the id, the audio and the key only
        (view,) = web.get("/api/dm/views", params={"project": pid}).json()
        assert "tasks:annotators" in view["data"]["hiddenColumns"]["explore"]
        assert set(view["data"]["hiddenColumns"]["explore"]) == set(HIDDEN_COLUMNS)
    # The catch task stays open for every annotator of the mixture arm.
    pid, task_of = arm_tasks(admin, ws, "mixture")
    assert admin.client.tasks.get(str(task_of[catch.sample_id])).overlap == CATCH_OVERLAP
    assert admin.client.tasks.get(str(task_of[samples[0].sample_id])).overlap == 3


def test_what_label_studio_community_still_shows_an_annotator(ls, admin, accounts, tokens, tmp_path, capsys):
    """Measured, so the README can say it: in Community edition any annotator who asks the API (or opens
    a task in the Data Manager) sees the other annotators' labels, rationales and emails, can export the
    project and change its settings. The labelling stream (Label All Tasks) shows none of them."""
    ws = pushed(ls, tmp_path, capsys, n=1)
    pid, task_of = arm_tasks(admin, ws, "mixture")
    (task_id,) = task_of.values()
    annotate(accounts[A], task_id, "harmful", words="yes", rationale="sounds like a real threat")
    web = httpx.Client(base_url=ls.url, trust_env=False, headers={"Authorization": f"Token {tokens[B]}"})
    seen = web.get(f"/api/tasks/{task_id}").text
    assert "sounds like a real threat" in seen and A in seen  # visible: label, rationale, email
    assert A in web.get("/api/users").text
    assert web.get(f"/api/projects/{pid}/export", params={"exportType": "JSON"}).status_code == 200
    stream = web.get(f"/api/projects/{pid}/next").json()
    assert stream["id"] == task_id and stream["annotations"] == [] and A not in json.dumps(stream)
    # ... and any annotator may change a project's settings: push sets the blind ones again
    assert web.patch(f"/api/projects/{pid}", json={"show_collab_predictions": True}).status_code == 200
    code, out, _ = cli(push.main, "--workspace", str(ws.root), "--catch", "0", "--data-dir", str(ls.data_dir),
                       capsys=capsys)
    assert code == 0 and "reset show_collab_predictions" in out
    assert admin.client.projects.get(pid).show_collab_predictions is False


# ----------------------------------------------------------------------------------------------
# pull's rules
# ----------------------------------------------------------------------------------------------

def test_the_latest_update_wins(ls, admin, accounts, tmp_path, capsys):
    """Label benign, add a second annotation harmful, then Update the first to unclear: the person's
    judgement is unclear (Update changes updated_at, not created_at)."""
    ws = pushed(ls, tmp_path, capsys, n=1)
    _, task_of = arm_tasks(admin, ws, "mixture")
    (sid, task_id), = task_of.items()
    first = annotate(accounts[A], task_id, "benign", words="yes")
    annotate(accounts[A], task_id, "harmful", words="yes")
    time.sleep(0.05)
    accounts[A].annotations.update(first.id, result=result("unclear", words="no"))
    _, samples, _, _ = pulled(ls, ws, capsys)
    (a,) = human(samples[sid])
    assert (a.annotator, a.label, a.speech_intelligible, a.updated_by) == (names(ws)[A], "unclear", False, None)
    assert a.updated_at > a.created_at


def test_an_annotation_changed_by_someone_else_is_theirs(ls, admin, accounts, tmp_path, capsys):
    """B Updates A's annotation, and C creates one in D's name: each is credited to the person who made
    it (updated_by set), never to the account Label Studio shows as its author; pull reports them."""
    ws = pushed(ls, tmp_path, capsys, n=2)
    _, task_of = arm_tasks(admin, ws, "speech")
    s1, s2 = sorted(task_of)
    mine = annotate(accounts[A], task_of[s1], "harmful")
    annotate(accounts[B], task_of[s1], "unclear")  # B's own label of the same task ...
    time.sleep(0.05)
    accounts[B].annotations.update(mine.id, result=result("not_harmful"))  # ... then B changes A's: the latest
    d_id = accounts[D].users.whoami().id
    accounts[C].annotations.create(task_of[s2], result=result("harmful"), completed_by=d_id, lead_time=4.0)
    out, samples, _, stats = pulled(ls, ws, capsys)
    who = names(ws)
    (b,) = human(samples[s1])
    assert (b.annotator, b.label, b.updated_by) == (who[B], "not_harmful", who[B])  # A has no label here
    (c,) = human(samples[s2])
    assert (c.annotator, c.label, c.updated_by) == (who[C], "harmful", who[C])
    assert "2 annotation(s) were last changed by someone other than their author" in out
    assert sorted((r["credited_to"], r["author"]) for r in stats["reattributed"]) == sorted(
        [(who[B], who[A]), (who[C], who[D])])
    assert stats["annotators"][who[B]]["changed_others"] == 1 and who[A] not in stats["annotators"]


FRAME = {"video_games": "video_game", "cooking_household": "kitchen"}  # the shipped taxonomy's frames


def test_one_arm_per_person_and_sample(ls, admin, accounts, tmp_path, capsys):
    """A person's judgements of one sample in two arms are not both counted: the arm they met first
    keeps its judgement (a skip counts as having heard it), the later one is dropped and reported."""
    ws = pushed(ls, tmp_path, capsys, n=2)
    tasks = {role: arm_tasks(admin, ws, role)[1] for role in ARMS}
    s1, s2 = sorted(tasks["speech"])
    category = {s.sample_id: s.category for s in ws.read_samples("wer")}
    annotate(accounts[A], tasks["mixture"][s1], "benign", words="yes")  # A: the mixture first ...
    time.sleep(0.05)
    annotate(accounts[A], tasks["speech"][s1], "harmful")  # ... then the speech alone: dropped
    annotate(accounts[A], tasks["speech"][s2], "harmful")  # another sample: kept
    annotate(accounts[B], tasks["scene"][s1], None, cancelled=True)  # B skipped the scene first ...
    time.sleep(0.05)
    annotate(accounts[B], tasks["mixture"][s1], "harmful", words="yes")  # ... so B's mixture label is dropped
    annotate(accounts[C], tasks["scene"][s2], FRAME[category[s2]])
    out, samples, _, stats = pulled(ls, ws, capsys)
    who = names(ws)
    assert [(a.annotator, a.arm, a.label) for a in human(samples[s1])] == [
        (who[B], "scene", None), (who[A], "mixture", "benign")]
    assert [(a.annotator, a.arm) for a in human(samples[s2])] == [(who[A], "speech"), (who[C], "scene")]
    assert sorted(stats["cross_arm_dropped"], key=lambda d: d["annotator"]) == sorted([
        {"annotator": who[A], "sample_id": s1, "kept_arm": "mixture", "dropped_arm": "speech"},
        {"annotator": who[B], "sample_id": s1, "kept_arm": "scene", "dropped_arm": "mixture"}],
        key=lambda d: d["annotator"])
    assert "cross-arm: 2 judgement(s) dropped" in out
    assert stats["annotators"][who[A]]["cross_arm_dropped"] == 1 and stats["annotators"][who[A]]["labels"] == \
        {"speech": 1, "scene": 0, "mixture": 1}


def test_a_lead_time_shorter_than_the_clip_is_not_listened(ls, admin, accounts, tmp_path, capsys):
    """listened: the lead time is at least the length of the clip that arm plays (speech 1 s, scene 1.5 s,
    mixture 2 s here); pull reports the annotations that were not, per annotator."""
    ws = pushed(ls, tmp_path, capsys, n=3)
    tasks = {role: arm_tasks(admin, ws, role)[1] for role in ARMS}
    s1, s2, s3 = sorted(tasks["speech"])
    annotate(accounts[A], tasks["speech"][s1], "harmful", lead_time_s=1.2)  # 1.2 s >= 1 s of speech
    annotate(accounts[A], tasks["mixture"][s2], "benign", words="yes", lead_time_s=1.2)  # < 2 s of mixture
    annotate(accounts[A], tasks["scene"][s3], "video_game", lead_time_s=1.5)  # exactly the scene's length
    annotate(accounts[B], tasks["mixture"][s1], "benign", words="yes", lead_time_s=0.4)
    accounts[C].annotations.create(tasks["mixture"][s3], result=result("benign", words="yes"))  # no lead time
    out, samples, _, stats = pulled(ls, ws, capsys)
    who = names(ws)
    got = {(a.annotator, a.arm, sid): a.listened for sid, s in samples.items() for a in human(s)}
    assert got == {(who[A], "speech", s1): True, (who[A], "mixture", s2): False, (who[A], "scene", s3): True,
                   (who[B], "mixture", s1): False, (who[C], "mixture", s3): None}
    assert stats["annotators"][who[A]]["not_listened"] == 1 and stats["annotators"][who[B]]["not_listened"] == 1
    assert re.search(r"mixture \(samples\)\s+3\s+0\s+3\s+0\s+2", out)  # 2 mixture labels not listened


def test_catch_items_are_scored_per_annotator(ls, admin, accounts, tmp_path, capsys):
    """push --catch 3 makes three attention checks once (offline TTS: 'Please choose <label>'), plays them
    in the mixture arm to everyone, and pull scores them per annotator; they are no sample."""
    ws = pushed(ls, tmp_path, capsys, n=1, catch=3)
    catch = list(ws.read_samples("catch"))
    assert [c.custom["expected"] for c in catch] == ["unclear", "benign", "harmful"]
    assert [c.speech_text for c in catch] == [CATCH_TEXT.format(label=c.custom["expected"]) for c in catch]
    assert all(c.mixture.duration_s > 3.0 for c in catch)  # 1.5 s + the words + 1 s
    code, out, _ = cli(push.main, "--workspace", str(ws.root), "--catch", "2", "--data-dir", str(ls.data_dir),
                       capsys=capsys)
    assert code == 0 and len(list(ws.read_samples("catch"))) == 3 and "3 catch item(s)" in out  # never removed
    _, task_of = arm_tasks(admin, ws, "mixture")
    for c in catch:
        annotate(accounts[A], task_of[c.sample_id], c.custom["expected"], words="yes", lead_time_s=6)
        annotate(accounts[B], task_of[c.sample_id], "benign", words="yes", lead_time_s=6)  # passes one of three
    annotate(accounts[C], task_of[catch[0].sample_id], None, cancelled=True)  # a skip meets nothing
    annotate(accounts[D], task_of[catch[0].sample_id], "unclear", words="yes", lead_time_s=6)
    out, samples, controls, stats = pulled(ls, ws, capsys)
    who = names(ws)
    report = {k: v["catch"] for k, v in stats["annotators"].items()}
    assert report[who[A]] == {"met": 3, "passed": 3, "failed": [], "skipped": 0}
    assert (report[who[B]]["met"], report[who[B]]["passed"]) == (3, 1)
    assert sorted(f["expected"] for f in report[who[B]]["failed"]) == ["harmful", "unclear"]
    assert report[who[C]] == {"met": 0, "passed": 0, "failed": [], "skipped": 1}
    assert report[who[D]] == {"met": 1, "passed": 1, "failed": [], "skipped": 0}
    assert "catch items failed by 1 annotator(s)" in out and re.search(rf"{who[B]}\s.*\s1/3\s", out)
    assert not any(human(s) for s in samples.values()) and controls == []


def test_controls_and_their_samples(ls, admin, accounts, tmp_path, capsys):
    """The controls go to the mixture arm only; pull writes them with their annotations to
    annotated_controls, linked to their sample by custom.control_of."""
    ws = pushed(ls, tmp_path, capsys, n=2, controls=2)
    for role, n in (("speech", 2), ("scene", 2), ("mixture", 4)):
        assert len(arm_tasks(admin, ws, role)[1]) == n
    _, task_of = arm_tasks(admin, ws, "mixture")
    controls = list(ws.read_samples("controls"))
    annotate(accounts[A], task_of[controls[0].sample_id], "harmful", words="yes")
    annotate(accounts[B], task_of[controls[0].sample_id], "benign", words="no")
    _, samples, pulled_controls, stats = pulled(ls, ws, capsys)
    assert [(c.sample_id, c.custom["control_of"]) for c in pulled_controls] == \
        [(c.sample_id, c.custom["control_of"]) for c in controls]
    assert [(a.arm, a.label, a.speech_intelligible) for a in pulled_controls[0].annotations] == \
        [("mixture", "harmful", True), ("mixture", "benign", False)]
    assert pulled_controls[1].annotations == [] and stats["controls"] == 2 and stats["controls_labels"] == 2
    assert all(c.custom["control_of"] in samples for c in pulled_controls)


# ----------------------------------------------------------------------------------------------
# the real labelling interface
# ----------------------------------------------------------------------------------------------

CHROMIUM = os.environ.get("CHROMIUM", "/usr/lib/chromium/chromium")

# The editor's own state, read from the page: a choice's radio input, the bottom bar's Submit/Update
# button (disabled until there is something to submit; 'Update' once the annotation is stored) and the
# warning Label Studio shows when a required choice is missing.
CHOICE_JS = """(want => { const l = [...document.querySelectorAll('label')].filter(x => x.textContent.trim()
    .startsWith(want)); const i = l.length ? l[0].querySelector('input') : null;
    return i === null ? 'missing' : (i.checked ? 'checked' : 'unchecked'); })"""
CLICK_JS = """(want => { const l = [...document.querySelectorAll('label')].filter(x => x.textContent.trim()
    .startsWith(want)); if (l.length) l[0].click(); return l.length; })"""
BUTTON_JS = """(text => { const b = [...document.querySelectorAll('button')].filter(x => x.textContent.trim()
    === text); return b.length ? (b[0].disabled ? 'disabled' : 'enabled') : 'missing'; })"""
PRESS_JS = """(text => { const b = [...document.querySelectorAll('button')].filter(x => x.textContent.trim()
    === text && !x.disabled); if (b.length) b[0].click(); return b.length; })"""
WARNING_JS = """(() => [...document.querySelectorAll('.ant-modal-body')].map(m => m.textContent.trim()).join(' | '))()"""


def test_chromium_is_installed():
    """Set-up installs Chromium (scripts/setup.sh): the labelling interface is tested in a real browser on
    every machine, never skipped."""
    assert Path(CHROMIUM).exists(), f"no Chromium at {CHROMIUM}: run make setup (it installs Debian's chromium)"


def test_the_labelling_interface_stores_the_protocol_values(ls, admin, tmp_path, capsys):
    """In headless Chromium, an annotator picks 'Harmful' alone and presses Submit: refused, since 'I
    could make out the words' is required. Then 'No' too: the annotation stores harmful / no (the
    choices' aliases, not the texts shown), with the browser's own lead time.

    Every step waits on Label Studio's own state, never on time: a choice is clicked until its input is
    checked, Submit is pressed once and only when the editor enables it, and the test then waits for the
    editor's submitted state ('Update') and the annotation through the API. Then the scene arm: it offers
    the benign frames and the two other answers by their texts, and picking "A sport, fight or gym"
    stores the frame id `sport`."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts" / "screenshot"))
    from arms import READY_JS, Chromium, session_cookie

    from annotation.labelstudio import invite_link, signup_via_invite

    ws = pushed(ls, tmp_path, capsys, n=2)
    pid, task_of = arm_tasks(admin, ws, "mixture")
    sid, other = sorted(task_of)  # the mixture of one sample, the scene of the other (one arm per sample)
    task_id = task_of[sid]
    email = "browser@example.com"
    signup_via_invite(ls.url, invite_link(admin), email, "browser-pass-123")
    cookie = session_cookie(ls.url, email, "browser-pass-123")
    chrome = Chromium(tmp_path / "chromium.log")

    def run(js: str):
        return chrome.send("Runtime.evaluate", {"expression": js, "returnByValue": True}, sid_)["result"].get("value")

    def state() -> str:
        return (f"Submit {run(BUTTON_JS + '(' + repr('Submit') + ')')}, Update {run(BUTTON_JS + '(' + repr('Update') + ')')}, "
                f"warning {run(WARNING_JS)!r}")

    def until(what: str, check, seconds: float = 60):
        deadline = time.monotonic() + seconds
        while not check():
            assert time.monotonic() < deadline, f"{what} ({state()})"
            time.sleep(0.3)

    def choose(text: str):
        """Click a choice until the editor shows it checked (a click before React has bound is lost)."""
        until(f"no '{text}' choice in the labelling view", lambda: run(f"{CHOICE_JS}('{text}')") != "missing")
        deadline = time.monotonic() + 30
        while run(f"{CHOICE_JS}('{text}')") != "checked":
            assert time.monotonic() < deadline, f"'{text}' was not checked ({state()})"
            run(f"{CLICK_JS}('{text}')")
            time.sleep(0.3)

    def saved(task: int | None = None) -> int:
        return admin.client.tasks.get(str(task or task_id)).total_annotations

    try:
        target = chrome.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        sid_ = chrome.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        chrome.send("Network.enable", session=sid_)
        chrome.send("Network.setCookie", {"name": "sessionid", "value": cookie, "url": ls.url}, sid_)
        chrome.send("Page.enable", session=sid_)
        chrome.send("Page.navigate", {"url": f"{ls.url}/projects/{pid}/data?task={task_id}"}, sid_)
        until("the labelling view did not load", lambda: run(READY_JS), seconds=90)
        choose("Harmful")
        until("Submit was not enabled after 'Harmful'", lambda: run(f"{BUTTON_JS}('Submit')") == "enabled")
        assert run(f"{PRESS_JS}('Submit')") == 1
        # refused by the editor itself: its warning names the required choice, and nothing is stored
        until("no warning about the required choice", lambda: "required" in run(WARNING_JS))
        assert saved() == 0
        assert run(f"{PRESS_JS}('OK')") == 1  # the annotator closes the warning, as a person would
        until("the warning did not close", lambda: "required" not in run(WARNING_JS), seconds=30)
        choose("No")
        assert run(f"{CHOICE_JS}('Harmful')") == "checked"
        until("Submit was not enabled after 'No'", lambda: run(f"{BUTTON_JS}('Submit')") == "enabled")
        assert run(f"{PRESS_JS}('Submit')") == 1
        until("the editor did not reach its submitted state", lambda: run(f"{BUTTON_JS}('Update')") != "missing")
        until("the annotation was not saved", lambda: saved() == 1, seconds=30)

        scene_pid, scene_tasks = arm_tasks(admin, ws, "scene")
        chrome.send("Page.navigate", {"url": f"{ls.url}/projects/{scene_pid}/data?task={scene_tasks[other]}"}, sid_)
        offered = ("A video game", "Cooking or a kitchen", "Children, pets or family at home",
                   "Real danger or violence", "I can't tell")
        until(f"the scene arm's labelling view did not offer {offered}",
              lambda: run(READY_JS) and all(run(f"{CHOICE_JS}({text!r})") == "unchecked" for text in offered),
              seconds=90)
        choose("A sport, fight or gym")
        until("Submit was not enabled in the scene arm", lambda: run(f"{BUTTON_JS}('Submit')") == "enabled")
        assert run(f"{PRESS_JS}('Submit')") == 1
        until("the scene annotation was not saved", lambda: saved(scene_tasks[other]) == 1, seconds=30)
    finally:
        chrome.close()
    _, samples, _, _ = pulled(ls, ws, capsys)
    (scene,) = human(samples[other])
    assert (scene.arm, scene.label, scene.source) == ("scene", "sport", "label-studio")
    (a,) = human(samples[sid])
    assert (a.arm, a.label, a.speech_intelligible, a.source) == ("mixture", "harmful", False, "label-studio")
    assert a.lead_time_s is not None and a.lead_time_s > 0


def test_the_screenshot_tool_on_a_staged_push(ls, admin, tmp_path, capsys, monkeypatch):
    """scripts/screenshot/arms.py after the default (staged) first push: only the speech arm has tasks. It
    captures that arm in real headless Chromium, says for the scene and mixture arms that they are empty
    and why, writes under the workspace, and names the account it makes and where its password comes from
    (generated and printed once, or $AOR_SCREENSHOT_PASSWORD): never a built-in one."""
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts" / "screenshot"))
    import arms

    from annotation.labelstudio import login

    monkeypatch.delenv("AOR_SCREENSHOT_PASSWORD", raising=False)
    ws = make_workspace(tmp_path / "ws", 2, served=ls.document_root)
    code, out, err = cli(push.main, "--workspace", str(ws.root), "--project", "Screens", "--catch", "0", "--staged",
                         "--data-dir", str(ls.data_dir), capsys=capsys)
    assert code == 0, err
    code, out, err = cli(arms.main, "--workspace", str(ws.root), "--data-dir", str(ls.data_dir), capsys=capsys)
    assert code == 0, err
    assert ("scene arm: empty (staged: a sample's scene opens only after its speech arm passed, and none has yet); "
            "not captured") in out
    assert ("mixture arm: empty (staged: a sample's mixture opens only after its speech and scene arms passed, and "
            "none has yet); not captured") in out
    made = re.search(r"made the annotator account (screenshots@demo\.aor-bench\.invalid) with the generated "
                     r"password (\S+) \(shown only now; set AOR_SCREENSHOT_PASSWORD", out)
    assert made and login(ls.url, made.group(1), made.group(2)) is not None
    assert "aor-bench-screenshots" not in out  # the old built-in password
    shots = ws.root / "screenshots"
    assert f"wrote {shots / 'arm-speech.png'} (speech arm" in out
    assert sorted(p.name for p in shots.iterdir()) == ["arm-speech.png"]
    png = (shots / "arm-speech.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000

    # a rerun cannot know the generated password: it makes the next account and says so; a chosen one is reused
    email, password = arms.account(admin, arms.EMAIL)
    assert email == "screenshots-2@demo.aor-bench.invalid" and f"{email} with the generated password {password}" \
        in capsys.readouterr().out
    monkeypatch.setenv("AOR_SCREENSHOT_PASSWORD", "chosen-pass-123")
    assert arms.account(admin, "shots@example.com") == ("shots@example.com", "chosen-pass-123")
    assert arms.account(admin, "shots@example.com") == ("shots@example.com", "chosen-pass-123")
    out = capsys.readouterr().out
    assert "made the annotator account shots@example.com (password from $AOR_SCREENSHOT_PASSWORD)" in out
    assert "logged in as shots@example.com (password from $AOR_SCREENSHOT_PASSWORD)" in out
    assert "chosen-pass-123" not in out

# ruff: noqa: F811  (the Label Studio fixtures come from tests.annotation_helpers)
"""Annotators cannot corrupt a pull, and the workspace stays the one truth.

One real Label Studio for the module (tests.annotation_helpers.ls). The annotators act through the API
with their own tokens, as the reproductions did. The Enterprise import answer cannot come from a real
server here: the real SDK client talks to a stub on 127.0.0.1 that answers as Enterprise does."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from annotation import demo_annotators, pull, push
from annotation.labelstudio import Server, import_tasks, make_client
from annotation.server import check_document_root
from annotation.state import pseudonym, read_state
from construction.core.errors import WorkbenchError
from construction.core.record import ARMS
from tests.annotation_helpers import (  # noqa: F401  (fixtures)
    PASSWORD,
    RATERS,
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
from validation import adjudicate, agreement

A, B, C, D = RATERS[0], RATERS[1], RATERS[2], RATERS[3]


def who(ws, email: str) -> str:
    return pseudonym(email, read_state(ws)["pseudonym_salt"])


def as_annotator(ls, tokens, email: str) -> httpx.Client:
    return httpx.Client(base_url=ls.url, trust_env=False, headers={"Authorization": f"Token {tokens[email]}"})


# ----------------------------------------------------------------------------------------------
# 6. the import response of either edition
# ----------------------------------------------------------------------------------------------

@contextlib.contextmanager
def enterprise_server(states: list[dict]) -> Iterator[tuple[Server, list[str]]]:
    """A Server whose real SDK client talks, over HTTP on 127.0.0.1, to a stub answering as Label Studio
    Enterprise: the import is {"import": 7}, then /imports/7/ answers each of `states` in turn."""
    asked: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # keep pytest output clean
            pass

        def answer(self, code: int, body: dict) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self):
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            asked.append(f"POST {self.path.split('?')[0]}")
            self.answer(201, {"import": 7}) if self.path.startswith("/api/projects/3/import") else \
                self.answer(404, {"detail": "Not found."})

        def do_GET(self):
            asked.append(f"GET {self.path}")
            self.answer(200, {"id": 7, "project": 3, **states.pop(0)}) if self.path == "/api/projects/3/imports/7/" \
                else self.answer(404, {"detail": "Not found."})

    stub = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=stub.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{stub.server_address[1]}"
    try:
        yield Server(url, Path("/srv"), None, make_client(url, "token-of-a-test")), asked
    finally:
        stub.shutdown()
        stub.server_close()


def test_an_enterprise_import_is_waited_for():
    """Enterprise answers {"import": id} (no task_ids): push polls the import until it is completed and
    takes its task ids; an import that fails is a clear error; one that never says its ids gives None
    (push then looks the tasks up by key)."""
    with enterprise_server([{"status": "in_progress"}, {"status": "completed", "task_ids": [11, 12]}]) as (server,
                                                                                                        asked):
        assert import_tasks(server, 3, [{"data": {"key": "a"}}, {"data": {"key": "b"}}]) == [11, 12]
    assert asked == ["POST /api/projects/3/import", "GET /api/projects/3/imports/7/", "GET /api/projects/3/imports/7/"]
    with enterprise_server([{"status": "completed"}]) as (server, _):
        assert import_tasks(server, 3, [{"data": {"key": "a"}}]) is None
    with enterprise_server([{"status": "failed", "error": "bad audio URL"}]) as (server, _):
        with pytest.raises(WorkbenchError, match=r"failed importing tasks 1-1 of 1 into project 3 \(import 7\): bad"):
            import_tasks(server, 3, [{"data": {"key": "a"}}])


# ----------------------------------------------------------------------------------------------
# 8, 9, 11, 14: what an annotator sends cannot crash or skew a pull
# ----------------------------------------------------------------------------------------------

def test_malformed_results_are_listed_problems(ls, admin, accounts, tokens, tmp_path, capsys):
    """A result whose `value` is a list, and a rationale whose text is a number (both stored by the API):
    pull exits 0, lists each (task, annotation, reason) in its output and stats, does not count them,
    and a rerun gives the same."""
    ws = pushed(ls, tmp_path, capsys, title="Malformed")
    _, speech = arm_tasks(admin, ws, "speech")
    s1, s2 = sorted(speech)
    web = as_annotator(ls, tokens, A)
    web.post(f"/api/tasks/{speech[s1]}/annotations/", json={"result": [
        {"from_name": "label", "to_name": "audio", "type": "choices", "value": ["harmful"]}], "lead_time": 4})
    bad = accounts[B].annotations.create(speech[s1], result=[*result("harmful"), {
        "from_name": "rationale", "to_name": "audio", "type": "textarea", "value": {"text": 42}}], lead_time=4.0)
    annotate(accounts[C], speech[s2], "harmful")
    out, samples, _, stats = pulled(ls, ws, capsys)
    assert human(samples[s1]) == [] and [a.annotator for a in human(samples[s2])] == [who(ws, C)]
    listed = [p for p in stats["problems"] if "not counted" in p]
    assert len(listed) == 2 and all(f"speech task {speech[s1]} ({s1}) annotation" in p for p in listed)
    assert any(f"annotation {bad.id}: not counted: 'rationale' text is 42" in p for p in listed)
    assert any("'label' has no object 'value'" in p or "has no object 'value'" in p for p in listed)
    assert "not counted" in out and stats["per_arm"]["speech"]["labels"] == 1
    before = ws.manifest_path("annotated").read_bytes(), ws.stats_path("annotated").read_bytes()
    pulled(ls, ws, capsys)
    assert (ws.manifest_path("annotated").read_bytes(), ws.stats_path("annotated").read_bytes()) == before


def test_credit_goes_to_who_label_studio_records_made_it(ls, admin, accounts, tokens, tmp_path, capsys):
    """C posts a skip in D's name in the speech arm, then D labels the mixture: D's own label stays (D
    never heard the speech; C did). C imports a copy of a task with an annotation 'completed by' D:
    Label Studio records nobody who made it, so it is not counted (and not D's)."""
    ws = pushed(ls, tmp_path, capsys, title="Credit")
    tasks = {role: arm_tasks(admin, ws, role)[1] for role in ARMS}
    s1, s2 = sorted(tasks["speech"])
    d_id = accounts[D].users.whoami().id
    web = as_annotator(ls, tokens, C)
    assert web.post(f"/api/tasks/{tasks['speech'][s1]}/annotations/",
                    json={"result": result("not_harmful"), "completed_by": d_id, "lead_time": 4}).status_code == 201
    annotate(accounts[D], tasks["mixture"][s1], "benign", words="yes")
    pid = read_state(ws)["arms"]["speech"]["id"]
    data = web.get(f"/api/tasks/{tasks['speech'][s2]}").json()["data"]
    made = web.post(f"/api/projects/{pid}/import",
                    json=[{"data": data, "annotations": [{"result": result("harmful"), "completed_by": d_id}]}])
    assert made.status_code == 201, made.text
    out, samples, _, stats = pulled(ls, ws, capsys)
    assert [(a.annotator, a.arm, a.label) for a in human(samples[s1])] == [
        (who(ws, C), "speech", "not_harmful"), (who(ws, D), "mixture", "benign")]
    assert stats["cross_arm_dropped"] == [] and human(samples[s2]) == []
    assert any("Label Studio records nobody who made it" in p for p in stats["problems"])


def test_a_task_must_play_what_push_sent(ls, admin, accounts, tokens, tmp_path, capsys):
    """An annotator points a task's audio at another sample's clip, and imports a second task with a
    copied key and other audio: neither task's labels are credited to the sample; both are listed."""
    ws = pushed(ls, tmp_path, capsys, title="Audio swap")
    _, speech = arm_tasks(admin, ws, "speech")
    s1, s2 = sorted(speech)
    web = as_annotator(ls, tokens, A)
    one, two = (web.get(f"/api/tasks/{speech[s]}").json()["data"] for s in (s1, s2))
    assert web.patch(f"/api/tasks/{speech[s1]}", json={"data": {**one, "audio": two["audio"]}}).status_code == 200
    annotate(accounts[A], speech[s1], "harmful")
    pid = read_state(ws)["arms"]["speech"]["id"]
    assert web.post(f"/api/projects/{pid}/import", json=[{"data": {**two, "audio": one["audio"]}}]).status_code == 201
    copy = max(t.id for t in admin.client.tasks.list(project=pid))
    annotate(accounts[B], copy, "not_harmful")
    annotate(accounts[C], speech[s2], "harmful")  # the genuine task still counts
    _, samples, _, stats = pulled(ls, ws, capsys)
    assert human(samples[s1]) == [] and [a.label for a in human(samples[s2])] == ["harmful"]
    assert stats["missing_tasks"]["speech"] == []  # a task of that key is there: listed below, not missing
    swapped = [p for p in stats["problems"] if "is not what push sent for its key" in p]
    assert sorted(p.split(":")[0] for p in swapped) == sorted([f"speech task {speech[s1]} ({s1})",
                                                              f"speech task {copy} ({s2})"])


def test_a_deleted_task_is_reported(ls, admin, accounts, tmp_path, capsys):
    """A task deleted in the UI loses its labels: pull says which pushed tasks are gone, in its output
    and its stats."""
    ws = pushed(ls, tmp_path, capsys, title="Deleted task")
    _, scene = arm_tasks(admin, ws, "scene")
    s1, _ = sorted(scene)
    annotate(accounts[A], scene[s1], "video_game")
    admin.client.tasks.delete(str(scene[s1]))
    out, _, _, stats = pulled(ls, ws, capsys)
    assert stats["missing_tasks"] == {"speech": [], "scene": [s1], "mixture": []}
    assert "missing: 1 pushed task(s) are no longer in their project" in out and f"scene: {s1}" in out


def test_arms_are_bound_by_the_recorded_project_id(ls, admin, accounts, tokens, tmp_path, capsys):
    """An annotator renames the speech arm and makes a decoy project of its title, with its config:
    pull still reads the recorded project (noting the new title), push sets the title back and never
    re-points the arm, and the labels in the real arm are counted."""
    ws = pushed(ls, tmp_path, capsys, title="Bound", n=1)
    pid, speech = arm_tasks(admin, ws, "speech")
    (sid, task_id), = speech.items()
    annotate(accounts[A], task_id, "harmful")
    web = as_annotator(ls, tokens, B)
    config = web.get(f"/api/projects/{pid}").json()["label_config"]
    assert web.patch(f"/api/projects/{pid}", json={"title": "Bound — speech (old)"}).status_code == 200
    decoy = web.post("/api/projects", json={"title": "Bound — speech", "label_config": config})
    assert decoy.status_code == 201, decoy.text
    out, samples, _, _ = pulled(ls, ws, capsys)
    assert f"the speech arm (project {pid}) is now titled 'Bound — speech (old)'" in out
    assert [a.label for a in human(samples[sid], "speech")] == ["harmful"]
    code, out, err = cli(push.main, "--workspace", str(ws.root), "--catch", "0", "--data-dir", str(ls.data_dir),
                         capsys=capsys)
    assert code == 0, err
    assert f"'Bound — speech' (id {pid})" in out and "reset title" in out
    assert read_state(ws)["arms"]["speech"]["id"] == pid and admin.client.projects.get(pid).title == "Bound — speech"
    assert admin.client.projects.get(decoy.json()["id"]).task_number in (0, None)
    _, samples, _, _ = pulled(ls, ws, capsys)
    assert [a.label for a in human(samples[sid], "speech")] == ["harmful"]
    # the arm deleted: push says so, and never takes the decoy instead
    admin.client.projects.delete(pid)
    code, _, err = cli(push.main, "--workspace", str(ws.root), "--catch", "0", "--data-dir", str(ls.data_dir),
                       capsys=capsys)
    assert code == 2 and f"project {pid} ('Bound — speech')" in err and "was deleted with its labels" in err
    assert read_state(ws)["arms"]["speech"]["id"] == pid


def test_labels_made_under_an_edited_config_are_not_counted(ls, admin, accounts, tokens, tmp_path, capsys):
    """An annotator edits the speech arm's config so that the text 'Yes, it should be concerned' stores
    not_harmful (and 'No' harmful). Pull warns and does not count what was labelled since push last
    checked the config; push sets the config back; labels made after that count again, the ones made
    under the edited config never do."""
    ws = pushed(ls, tmp_path, capsys, title="Edited config")
    server = ["--workspace", str(ws.root), "--catch", "0", "--data-dir", str(ls.data_dir)]
    pid, speech = arm_tasks(admin, ws, "speech")
    s1, s2 = sorted(speech)
    annotate(accounts[A], speech[s1], "harmful")
    assert cli(push.main, *server, capsys=capsys)[0] == 0  # push checks the config: A labelled before
    web = as_annotator(ls, tokens, B)
    config = web.get(f"/api/projects/{pid}").json()["label_config"]
    swapped = (config.replace('value="No"', 'value="@"').replace('value="Yes, it should be concerned"', 'value="No"')
               .replace('value="@"', 'value="Yes, it should be concerned"'))
    assert swapped != config
    assert web.patch(f"/api/projects/{pid}", json={"label_config": swapped}).status_code == 200
    annotate(accounts[C], speech[s2], "not_harmful")  # C pressed "Yes, it should be concerned"
    out, samples, _, stats = pulled(ls, ws, capsys)
    assert "the speech arm's labelling config was edited" in out
    assert [a.annotator for a in human(samples[s1])] == [who(ws, A)] and human(samples[s2]) == []
    assert any(f"speech task {speech[s2]} ({s2})" in p and "labelling config was edited; not counted" in p
               for p in stats["problems"])
    code, out, err = cli(push.main, *server, capsys=capsys)
    assert code == 0 and "reset label_config" in out, err
    assert admin.client.projects.get(pid).label_config == config
    annotate(accounts[D], speech[s2], "harmful")
    out, samples, _, _ = pulled(ls, ws, capsys)
    assert "labelling config was edited (" not in out
    assert [(a.annotator, a.label) for a in human(samples[s2])] == [(who(ws, D), "harmful")]
    assert [a.annotator for a in human(samples[s1])] == [who(ws, A)]


def _label_block(config: str) -> tuple[int, int]:
    start = config.index('<Choices name="label"')
    return start, config.index("</Choices>", start) + len("</Choices>")


def _swap_yes_no(block: str) -> str:
    return (block.replace('value="No"', 'value="@"').replace('value="Yes, it should be concerned"', 'value="No"')
            .replace('value="@"', 'value="Yes, it should be concerned"'))


def _in_a_comment(config: str) -> str:
    """The speech arm's Yes/No swapped, the original Choices block kept inside an XML comment before it."""
    start, end = _label_block(config)
    block = config[start:end]
    return config[:start] + f"<!-- {block} -->\n  " + _swap_yes_no(block) + config[end:]


def _decoy_alias(config: str) -> str:
    """A decoy data-alias with the old stored value before a single-quoted alias storing the other."""
    return (config.replace('alias="harmful"', """data-alias="harmful" alias='@'""")
            .replace('alias="not_harmful"', """data-alias="not_harmful" alias='harmful'""")
            .replace("alias='@'", "alias='not_harmful'"))


def _question(config: str) -> str:
    """Only the question text changes: the mixture arm's words question says the opposite."""
    return config.replace('"I could make out the words"', '"I could NOT make out the words"')


DISGUISES = {"comment": ("speech", _in_a_comment, "not_harmful", "harmful"),
             "decoy-alias": ("speech", _decoy_alias, "not_harmful", "harmful"),
             "question": ("mixture", _question, "benign", "benign")}


@pytest.mark.parametrize("disguise", sorted(DISGUISES))
def test_a_disguised_config_edit_is_caught(ls, admin, accounts, tokens, tmp_path, capsys, disguise):
    """Issue 35 item 1: the config swap disguised (the original Choices block kept in an XML comment; a decoy
    data-alias before a single-quoted alias; only a question's text changed) is caught as the plain swap is:
    pull warns and does not count the label made under it, push resets the config; labels after the reset
    count."""
    role, edit, label, later = DISGUISES[disguise]
    words = "yes" if role == "mixture" else None
    ws = pushed(ls, tmp_path, capsys, title=f"Disguised {disguise}")
    server = ["--workspace", str(ws.root), "--catch", "0", "--data-dir", str(ls.data_dir)]
    pid, tasks = arm_tasks(admin, ws, role)
    s1, s2 = sorted(tasks)
    annotate(accounts[A], tasks[s1], label, words)
    assert cli(push.main, *server, capsys=capsys)[0] == 0  # push checks the config: A labelled before
    web = as_annotator(ls, tokens, B)
    config = web.get(f"/api/projects/{pid}").json()["label_config"]
    tampered = edit(config)
    assert tampered != config
    assert web.patch(f"/api/projects/{pid}", json={"label_config": tampered}).status_code == 200
    annotate(accounts[C], tasks[s2], label, words)  # C clicked the text that now stores `label`
    out, samples, _, stats = pulled(ls, ws, capsys)
    assert f"the {role} arm's labelling config was edited" in out
    assert [a.annotator for a in human(samples[s1])] == [who(ws, A)] and human(samples[s2]) == []
    assert any(f"{role} task {tasks[s2]} ({s2})" in p and "labelling config was edited; not counted" in p
               for p in stats["problems"])
    code, out, err = cli(push.main, *server, capsys=capsys)
    assert code == 0 and "reset label_config" in out, err
    assert admin.client.projects.get(pid).label_config == config
    annotate(accounts[D], tasks[s2], later, words)
    out, samples, _, _ = pulled(ls, ws, capsys)
    assert "labelling config was edited (" not in out
    assert [(a.annotator, a.label) for a in human(samples[s2])] == [(who(ws, D), later)]


# ----------------------------------------------------------------------------------------------
# the workspace side
# ----------------------------------------------------------------------------------------------

def test_the_two_pulls_never_interleave(ls, admin, accounts, tmp_path, capsys, monkeypatch):
    """annotation.pull run while validation.adjudicate pull is exporting: its label survives the
    adjudicate write (which reads 'annotated' again under the lock). validation.adjudicate pull run while
    annotation.pull is between its read of 'annotated' and its write: refused as 'in use'."""
    from construction.core.cli import run_main

    ws = pushed(ls, tmp_path, capsys, title="Lock")
    _, speech = arm_tasks(admin, ws, "speech")
    s1, _ = sorted(speech)
    annotate(accounts[A], speech[s1], "harmful")
    pulled(ls, ws, capsys)
    annotate(accounts[B], speech[s1], "unclear")
    server = ["--workspace", str(ws.root), "--data-dir", str(ls.data_dir)]
    nested: list[tuple[int, str]] = []

    def during(real, main, *argv):
        def call(*args, **kwargs):
            if not nested:
                with pytest.raises(SystemExit) as done:
                    run_main(main, list(argv))
                nested.append((done.value.code, capsys.readouterr().err))
            return real(*args, **kwargs)
        return call

    monkeypatch.setattr(adjudicate, "collect", during(adjudicate.collect, pull.main, *server))
    code, _, err = cli(adjudicate.main, "pull", *server, "--project", "Lock — mixture", capsys=capsys)
    assert code == 0 and nested[0][0] == 0, (err, nested)
    assert {a.annotator for a in human(next(ws.read_samples("annotated")))} == {who(ws, A), who(ws, B)}
    monkeypatch.undo()
    nested.clear()
    monkeypatch.setattr(pull, "assemble", during(pull.assemble, adjudicate.main, "pull", *server, "--project",
                                                 "Lock — mixture"))
    pulled(ls, ws, capsys)
    assert nested[0][0] == 2 and "is in use by another run" in nested[0][1]


def test_demo_accounts_are_marked_by_the_workspace(ls, admin, tokens, accounts, tmp_path, capsys):
    """Anyone may sign up with an address of the demo domain: their labels stay human (source
    label-studio). The accounts demo_annotators used are recorded in the workspace, and only theirs are
    source demo."""
    from annotation.labelstudio import invite_link, signup_via_invite

    ws = pushed(ls, tmp_path, capsys, title="Demo marks", n=1)
    # annotator-99: a demo address no demo run of the shared server uses (staging's uses annotator-1..9)
    impostor = signup_via_invite(ls.url, invite_link(admin), "annotator-99@demo.aor-bench.invalid", PASSWORD)
    _, speech = arm_tasks(admin, ws, "speech")
    (sid, task_id), = speech.items()
    annotate(make_client(ls.url, impostor), task_id, "harmful")
    code, _, err = cli(demo_annotators.main, "--workspace", str(ws.root), "--annotators", "1",
                       "--data-dir", str(ls.data_dir), capsys=capsys)
    assert code == 0, err
    _, samples, _, _ = pulled(ls, ws, capsys)
    sources = {a.annotator: a.source for a in human(samples[sid])}
    assert sources.pop(who(ws, "annotator-99@demo.aor-bench.invalid")) == "label-studio"
    assert sources and set(sources.values()) == {"demo"}
    assert set(sources) <= set(read_state(ws)["demo_annotators"])


def needs_adjudication(ls, admin, accounts, tmp_path, capsys, title: str):
    """A one-sample workspace whose sample the mixture arm splits on (benign, harmful, unclear), pulled and
    through validation.agreement: it waits in the adjudication queue. -> (workspace, server flags, id)."""
    from tests.annotation_helpers import ARM_RATERS
    from validation.arms import sample_frames

    ws = pushed(ls, tmp_path, capsys, title=title, n=1)
    server = ["--workspace", str(ws.root), "--data-dir", str(ls.data_dir)]
    sample = next(ws.read_samples("wer"))
    for role, label, words in (("speech", "harmful", None), ("scene", sample_frames(sample)[0], None),
                               ("mixture", None, "yes")):
        _, task = arm_tasks(admin, ws, role)
        for email, mixed in zip(ARM_RATERS[role], ("benign", "harmful", "unclear")):
            annotate(accounts[email], task[sample.sample_id], label or mixed, words)
    pulled(ls, ws, capsys)
    assert cli(agreement.main, "--workspace", str(ws.root), "--n-boot", "20", capsys=capsys)[0] == 0
    return ws, server, sample.sample_id


def test_only_the_named_adjudicators_decide(ls, admin, accounts, tokens, tmp_path, capsys):
    """Issue 35 item 6: adjudicate push names who decides (--adjudicator). A later answer by another
    account in the adjudication project does not replace the adjudicator's decision: pull reports it and
    counts only the named adjudicator's."""
    from tests.annotation_helpers import SKIPPER

    ws, server, sid = needs_adjudication(ls, admin, accounts, tmp_path, capsys, "Named judge")
    code, out, err = cli(adjudicate.main, "push", *server, "--adjudicator", SKIPPER, capsys=capsys)
    assert code == 0 and f"decided by: {SKIPPER}" in out, err
    _, judge_task = arm_tasks(admin, ws, "adjudication")
    annotate(accounts[SKIPPER], judge_task[sid], "benign", rationale="a game")
    annotate(accounts[A], judge_task[sid], "harmful")  # later, by someone not named
    code, out, err = cli(adjudicate.main, "pull", *server, capsys=capsys)
    assert code == 0, err
    final = [a for a in next(ws.read_samples("annotated")).annotations if a.source == "adjudication"]
    assert [(a.label, a.annotator) for a in final] == [("benign", who(ws, SKIPPER))]
    assert "1 answer(s) by accounts not named adjudicators were not counted" in out and who(ws, A) in out


def test_without_adjudicator_the_lead_decides_and_the_demo_adjudicator_names_itself(ls, admin, accounts, tmp_path,
                                                                                    capsys):
    """The demo's path (scripts/demo.sh, the maintainer journey): push names no adjudicator, so the account of
    the API token (the lead) decides; demo_annotators --adjudication names its scripted account, whose
    decision then counts; another account's answer still does not."""
    from tests.annotation_helpers import ADMIN_ENV

    ws, server, sid = needs_adjudication(ls, admin, accounts, tmp_path, capsys, "Demo judge")
    code, out, err = cli(adjudicate.main, "push", *server, capsys=capsys)
    assert code == 0 and f"decided by: {ADMIN_ENV['LABEL_STUDIO_ADMIN_EMAIL']}" in out, err
    _, judge_task = arm_tasks(admin, ws, "adjudication")
    code, out, err = cli(demo_annotators.main, *server, "--adjudication", capsys=capsys)
    assert code == 0 and "is named an adjudicator of this workspace" in out, err
    annotate(accounts[A], judge_task[sid], "harmful")  # later, not named
    code, out, err = cli(adjudicate.main, "pull", *server, capsys=capsys)
    assert code == 0 and "recorded 1 adjudication decision(s)" in out, err
    assert "1 answer(s) by accounts not named adjudicators were not counted" in out
    final = [a for a in next(ws.read_samples("annotated")).annotations if a.source == "adjudication"]
    assert [a.source for a in final] == ["adjudication"] and final[0].annotator != who(ws, A)


def test_a_decision_under_an_edited_adjudication_config_is_not_counted(ls, admin, accounts, tokens, tmp_path,
                                                                       capsys):
    """Issue 35 item 1, the adjudication project: its Benign and Harmful swapped (the original kept in a
    comment): the decision made under it is not counted, pull warns, push sets the config back, and a
    decision after that counts."""
    from tests.annotation_helpers import SKIPPER

    ws, server, sid = needs_adjudication(ls, admin, accounts, tmp_path, capsys, "Edited judge")
    assert cli(adjudicate.main, "push", *server, "--adjudicator", SKIPPER, capsys=capsys)[0] == 0
    pid, judge_task = arm_tasks(admin, ws, "adjudication")
    web = as_annotator(ls, tokens, B)
    config = web.get(f"/api/projects/{pid}").json()["label_config"]
    start = config.index('<Choices name="label"')
    end = config.index("</Choices>", start) + len("</Choices>")
    block = config[start:end]
    swapped = block.replace('alias="benign"', 'alias="@"').replace('alias="harmful"', 'alias="benign"').replace(
        'alias="@"', 'alias="harmful"')
    tampered = config[:start] + f"<!-- {block} -->" + swapped + config[end:]
    assert web.patch(f"/api/projects/{pid}", json={"label_config": tampered}).status_code == 200
    annotate(accounts[SKIPPER], judge_task[sid], "harmful")  # clicked "Benign"
    code, out, err = cli(adjudicate.main, "pull", *server, capsys=capsys)
    assert code == 0 and "the adjudication project's labelling config was edited" in out, err
    assert "made while the project's labelling config was edited; not counted" in out
    assert [a for a in next(ws.read_samples("annotated")).annotations if a.source == "adjudication"] == []
    assert cli(agreement.main, "--workspace", str(ws.root), "--n-boot", "20", capsys=capsys)[0] == 0
    code, out, err = cli(adjudicate.main, "push", *server, capsys=capsys)
    assert code == 0 and admin.client.projects.get(pid).label_config == config, err
    annotate(accounts[SKIPPER], judge_task[sid], "benign")
    code, out, err = cli(adjudicate.main, "pull", *server, capsys=capsys)
    assert code == 0 and "labelling config was edited (" not in out, err
    final = [a for a in next(ws.read_samples("annotated")).annotations if a.source == "adjudication"]
    assert [(a.label, a.annotator) for a in final] == [("benign", who(ws, SKIPPER))]


def test_an_empty_adjudication_queue_is_a_no_op(ls, admin, tmp_path, capsys):
    """The README's demo block when nothing needs adjudication: adjudicate push, the demo adjudicator and
    adjudicate pull each say so and exit 0, and 'annotated' is unchanged."""
    ws = pushed(ls, tmp_path, capsys, title="Nothing to judge", n=1)
    server = ["--workspace", str(ws.root), "--data-dir", str(ls.data_dir)]
    pulled(ls, ws, capsys)
    assert cli(agreement.main, "--workspace", str(ws.root), "--n-boot", "20", capsys=capsys)[0] == 0
    before = ws.manifest_path("annotated").read_bytes()
    code, out, err = cli(adjudicate.main, "push", *server, capsys=capsys)
    assert code == 0 and "the adjudication queue is empty" in out, err
    code, out, err = cli(demo_annotators.main, *server, "--adjudication", capsys=capsys)
    assert code == 0 and "nothing to label" in out, err
    code, out, err = cli(adjudicate.main, "pull", *server, capsys=capsys)
    assert code == 0 and "the adjudication queue is empty" in out and "nothing to record" in out, err
    assert ws.manifest_path("annotated").read_bytes() == before


# ----------------------------------------------------------------------------------------------
# 16. the document root
# ----------------------------------------------------------------------------------------------

def test_a_document_root_linking_to_the_workspace_is_refused(tmp_path):
    """A --document-root that holds only a symlink to the workspace (or to a folder above it, or to
    its annotation_tasks.json) is refused before any server starts."""
    ws = make_workspace(tmp_path / "ws", 1)
    (ws.root / "annotation_tasks.json").write_text("{}\n")
    data_dir = (tmp_path / "ls-data").resolve()
    for name, target in (("to-ws", ws.root), ("to-above", tmp_path), ("keys.json", ws.root / "annotation_tasks.json")):
        root = tmp_path / f"root-{name}"
        root.mkdir()
        (root / name).symlink_to(target)
        with pytest.raises(WorkbenchError, match="refusing document root"):
            check_document_root(root.resolve(), data_dir, ws.root.resolve())
    plain = tmp_path / "root-plain"
    plain.mkdir()
    (plain / "audio").symlink_to(ws.root / "audio")  # audio only: accepted
    check_document_root(plain.resolve(), data_dir, ws.root.resolve())


def test_a_document_root_with_a_hard_link_or_renamed_copy_of_a_secret_file_is_refused(tmp_path):
    """Issue 35 extra: the salt and the key map are found by what the file is (the same inode, or their
    secrets or bytes inside), not by its name: a hard link of annotation.json, a renamed copy of it or of
    annotation_tasks.json, and a Label Studio database under another name are refused; audio is not."""
    import os
    import shutil

    ws = make_workspace(tmp_path / "ws", 1)
    (ws.root / "annotation.json").write_text(json.dumps({"pseudonym_salt": "0f3c9a7d5e21b4c8aa01",
                                                         "task_key_secret": "9c1d2e3f4a5b6c7d8e9f"}) + "\n")
    (ws.root / "annotation_tasks.json").write_text('{\n"t0123456789abcdef0123": ["aor-0001", "speech"]\n}\n')
    data_dir = (tmp_path / "ls-data").resolve()
    data_dir.mkdir()
    (data_dir / "label_studio.sqlite3").write_bytes(b"SQLite format 3\x00" + b"\x00" * 200)
    makers = {"hard-link": lambda root: os.link(ws.root / "annotation.json", root / "notes.txt"),
              "renamed-copy": lambda root: shutil.copy(ws.root / "annotation.json", root / "clip.wav"),
              "tasks-copy": lambda root: shutil.copy(ws.root / "annotation_tasks.json", root / "list.json"),
              "database-copy": lambda root: shutil.copy(data_dir / "label_studio.sqlite3", root / "a.bin")}
    for name, make in makers.items():
        root = tmp_path / f"root-{name}"
        (root / "sub").mkdir(parents=True)
        make(root / "sub")
        with pytest.raises(WorkbenchError, match="refusing document root"):
            check_document_root(root.resolve(), data_dir, ws.root.resolve())
    plain = tmp_path / "root-audio"
    shutil.copytree(ws.root / "audio", plain)
    check_document_root(plain.resolve(), data_dir, ws.root.resolve())


def test_a_refused_push_has_changed_nothing(ls, admin, tmp_path, capsys):
    """Issue 49 item 5: a push that Label Studio refuses (its storage of the audio) had already renamed and
    reset the arm project: ensure_project ran before ensure_local_storage failed (exit 2). An existing
    project is now changed only once its storage is taken, so the refused push leaves it as it was."""
    import shutil

    ws = pushed(ls, tmp_path, capsys, title="Refused push", n=1)
    pid, _ = arm_tasks(admin, ws, "speech")
    admin.client.projects.update(pid, title="Refused push — speech (renamed)", show_skip_button=False)
    before = admin.client.projects.get(pid)
    # the workspace's audio moved off the server's document root; --document-root claims it is there
    moved = tmp_path / "moved-audio"
    shutil.copytree((ws.root / "audio").resolve(), moved)
    (ws.root / "audio").unlink()
    (ws.root / "audio").symlink_to(moved, target_is_directory=True)
    code, _, err = cli(push.main, "--workspace", str(ws.root), "--catch", "0", "--url", ls.url,
                       "--document-root", str(moved), capsys=capsys)
    assert code == 2 and "Traceback" not in err, err
    after = admin.client.projects.get(pid)
    assert (after.title, after.show_skip_button, after.task_number) == \
        (before.title, before.show_skip_button, before.task_number)


def test_a_corrupt_token_logs_in_again_or_is_named(ls, admin, tmp_path, capsys):
    """Issue 49 item 19: a kept demo token with a non-ASCII character crashed with a traceback, and one
    with a trailing newline (like LABEL_STUDIO_API_KEY with one) said "cannot reach Label Studio ... is it
    running?". A kept token that cannot go in a header is now dropped and the account logs in again; the
    admin's token is stripped of surrounding whitespace, and one with a character HTTP forbids is named."""
    from annotation.demo_annotators import SESSIONS_FILE, demo_email
    from tests.annotation_helpers import TOKEN
    from tests.conftest import run_module

    ws = make_workspace(tmp_path / "ws", 1, first=70, served=ls.document_root)
    server = ("--workspace", str(ws.root), "--data-dir", str(ls.data_dir))
    assert cli(push.main, *server, "--project", "Corrupt tokens", "--catch", "0", capsys=capsys)[0] == 0
    kept = ls.data_dir / SESSIONS_FILE
    tokens = json.loads(kept.read_text()) if kept.exists() else {}
    tokens.update({demo_email(1): "caf\u00e9-0123456789abcdef", demo_email(2): "0123456789abcdef0123\n",
                   demo_email(3): "  "})
    kept.write_text(json.dumps(tokens))
    proc = run_module("annotation.demo_annotators", *server, "--annotators", "1", "--quiet")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert "submitted 3 label(s)" in proc.stdout
    renewed = json.loads(kept.read_text())
    for k in (1, 2, 3):
        assert make_client(ls.url, renewed[demo_email(k)]).users.whoami().email == demo_email(k)

    assert run_module("annotation.pull", *server, env={"LABEL_STUDIO_API_KEY": TOKEN + "\n"}).returncode == 0
    proc = run_module("annotation.pull", *server, env={"LABEL_STUDIO_API_KEY": TOKEN + "\u00e9"})
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert "error: LABEL_STUDIO_API_KEY holds a character an HTTP header cannot carry" in proc.stderr
    assert TOKEN not in proc.stderr


def test_the_database_is_owner_only_and_a_pull_leaves_no_export_behind(ls, admin, accounts, tmp_path, capsys):
    """Issue 49 item 20: the Label Studio database (every token) was world-readable (0644) beside the 0600
    token file, and every pull left a full export of each project in the data dir that nothing removed.
    The data dir, database and log are now owner-only, and pull removes Label Studio's copy of its export."""
    from annotation.ls_process import DB_FILE, LOG_FILE

    for path in (ls.data_dir, ls.data_dir / DB_FILE, ls.data_dir / LOG_FILE):
        assert path.stat().st_mode & 0o077 == 0, (path, oct(path.stat().st_mode))
    ws = pushed(ls, tmp_path, capsys, title="No export left", n=1)
    pid, speech = arm_tasks(admin, ws, "speech")
    annotate(accounts[A], next(iter(speech.values())), "harmful")
    pulled(ls, ws, capsys)
    ids = {int(entry["id"]) for entry in read_state(ws)["arms"].values()}
    left = sorted(p.name for p in (ls.data_dir / "export").glob("project-*")
                  if any(p.name.startswith(f"project-{i}-at-") for i in ids))
    assert left == []


def test_a_deleted_annotation_never_turns_an_outcome(ls, admin, accounts, tokens, tmp_path, capsys):
    """Issue 49 item 9: with a second account, one person deleted the answers two listeners had given a
    danger scene (a frame, "can't tell"; HTTP 204), certified it twice themselves, and pull said nothing:
    the danger twin shipped. Pull now keeps every annotation it counted before that is gone from Label
    Studio, as it was last pulled, and lists it: the danger scene stays uncertified. A deleted task's
    labels are kept the same way."""
    from annotation.protocol import danger_item_id
    from annotation.state import DANGER_OUTPUT_STAGE
    from validation.arms import ArmRule, danger_certified, danger_result

    ws = make_workspace(tmp_path / "ws", 2, first=80, served=ls.document_root, danger=1)
    assert cli(push.main, "--workspace", str(ws.root), "--project", "Deleted answers", "--catch", "0",
               "--no-staged", "--data-dir", str(ls.data_dir), capsys=capsys)[0] == 0
    _, scene = arm_tasks(admin, ws, "scene")
    [sample] = [s for s in ws.read_samples("wer") if s.danger_scene_audio is not None]
    danger_task = scene[danger_item_id(sample.sample_id)]
    made = [annotate(accounts[A], danger_task, "cant_tell"), annotate(accounts[B], danger_task, "cant_tell")]
    pulled(ls, ws, capsys)

    def certified() -> bool | None:  # as a staged build decides: two agreeing labels settle it
        [danger] = ws.read_samples(DANGER_OUTPUT_STAGE)
        return danger_certified(danger_result(danger), ArmRule(curtailed=True))

    assert certified() is False
    deleter = as_annotator(ls, tokens, C)
    for annotation in made:  # any user may delete anyone's annotation
        assert deleter.delete(f"/api/annotations/{annotation.id}/").status_code == 204
    for email in (C, D):
        annotate(accounts[email], danger_task, "real_danger")
    out, _, _, stats = pulled(ls, ws, capsys)
    assert "deleted: 2 annotation(s) counted by the last pull are gone from Label Studio" in out
    assert len(stats["deleted_kept"]) == 2 and certified() is False  # 2 of 4 real danger: not >= 2/3
    # a deleted task: its counted labels stay too
    speech_pid, speech = arm_tasks(admin, ws, "speech")
    other = next(sid for sid in speech if sid != sample.sample_id)
    annotate(accounts[A], speech[other], "not_harmful")
    pulled(ls, ws, capsys)
    admin.client.tasks.delete(str(speech[other]))
    out, samples, _, _ = pulled(ls, ws, capsys)
    assert [a.label for a in human(samples[other], "speech")] == ["not_harmful"]
    assert f"speech: {other}" in out  # listed as missing, its label kept


def test_push_refuses_a_danger_scene_that_is_not_its_recorded_audio(ls, admin, tmp_path, capsys):
    """Issue 49 item 8 (push): listeners certify the danger scene, which no release ships, and its bytes
    were never checked against its sha256: replaced, they were pushed and certified. Push now checks them
    (the export side: tests/test_release_integrity.py) and refuses before anything is imported."""
    from annotation.labelstudio import find_project
    from annotation.protocol import danger_item_id

    ws = make_workspace(tmp_path / "ws", 2, first=90, served=ls.document_root, danger=1)
    [sample] = [s for s in ws.read_samples("wer") if s.danger_scene_audio is not None]
    path = ws.audio_path(sample.danger_scene_audio)
    path.chmod(0o644)
    path.write_bytes(ws.audio_path(sample.scene_audio).read_bytes())  # a valid WAV: the benign scene
    code, _, err = cli(push.main, "--workspace", str(ws.root), "--project", "Changed danger scene", "--catch", "0",
                       "--no-staged", "--data-dir", str(ls.data_dir), capsys=capsys)
    assert code == 2 and "Traceback" not in err, err
    assert (f"{danger_item_id(sample.sample_id)} (scene arm): its file {sample.danger_scene_audio.path} is not the "
            "audio its record names") in err
    assert find_project(admin, "Changed danger scene — scene") is None

"""The library review against a real Label Studio (python -m annotation.library push|pull, the scripted
demo reviewers), and release.export's gate on clips the review did not confirm."""

from __future__ import annotations

import io
import json
import re
import tempfile
from pathlib import Path

import httpx
import numpy as np
import soundfile as sf
from PIL import Image

from annotation import demo_annotators, library
from annotation.labelstudio import export_tasks, task_keys
from annotation.library_review import (
    NONE_OF_THESE,
    REVIEW_FILE,
    WORKSPACE_REVIEW_FILE,
    keep_earlier,
    verdict,
    write_review,
)
from annotation.protocol import read_task_map
from annotation.state import read_state
from construction.core.workspace import Workspace, sha256_file
from construction.sounds.library import read_catalog, write_catalog
from release.export import main as export_main
from tests.annotation_helpers import accounts, admin, annotate, cli, ls, tokens  # noqa: F401 (fixtures)
from tests.conftest import noise_library
from tests.test_release import make_workspace

RATERS = ("rater-1@example.com", "rater-2@example.com", "rater-3@example.com")


def served_workspace(root: Path, served: Path) -> Workspace:
    """A workspace whose audio dir lies under the server's document root (never the workspace itself)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "audio").symlink_to(tempfile.mkdtemp(dir=served, prefix="library-"))
    return Workspace(root)


def review_push(ls, ws: Workspace, sounds: Path, capsys, *extra: str) -> tuple[int, str, str]:  # noqa: F811
    return cli(library.main, "push", "--workspace", str(ws.root), "--sounds", str(sounds), "--data-dir",
               str(ls.data_dir), *extra, capsys=capsys)


def review_pull(ls, ws: Workspace, sounds: Path, capsys) -> dict[str, dict]:  # noqa: F811
    """pull writes the workspace's review, and nothing into the library (shared by other workspaces)."""
    before = {p.name: p.read_bytes() for p in sounds.iterdir()}
    code, out, err = cli(library.main, "pull", "--workspace", str(ws.root), "--sounds", str(sounds), "--data-dir",
                         str(ls.data_dir), capsys=capsys)
    assert code == 0, err
    assert f"{ws.root / WORKSPACE_REVIEW_FILE}" in out and f"the library {sounds} is not changed" in out
    assert {p.name: p.read_bytes() for p in sounds.iterdir()} == before
    return read_lines(ws.root / WORKSPACE_REVIEW_FILE)


def read_lines(path: Path) -> dict[str, dict]:
    return {line["clip_id"]: line for line in map(json.loads, path.read_text().splitlines())}


def clip_tasks(admin, ws: Workspace) -> dict[str, int]:  # noqa: F811
    """clip id -> its task id in the review project."""
    project_id = read_state(ws)[library.STATE_KEY]["id"]
    mapping = read_task_map(ws)
    return {mapping[key][0].split("@")[0]: ids[0] for key, ids in task_keys(admin, project_id).items()}


def test_push_shows_only_audio_and_answers_make_the_review(ls, admin, accounts, tokens, tmp_path, capsys):  # noqa: F811
    sounds = noise_library(tmp_path / "lib", prefix="lib-")
    ws = served_workspace(tmp_path / "ws", ls.document_root)
    code, out, err = review_push(ls, ws, sounds, capsys, "--project", "Library review test")
    assert code == 0, err
    assert "imported 3 new task(s)" in out

    project_id = read_state(ws)[library.STATE_KEY]["id"]
    tasks = export_tasks(admin, project_id)
    assert len(tasks) == 3
    project = admin.client.projects.get(project_id)
    catalog, _ = read_catalog(sounds)
    secret = [c.clip_id for c in catalog] + [c.path for c in catalog] + [c.attribution for c in catalog]
    for task in tasks:
        assert set(task["data"]) == {"audio", "key", "image"}
        shown = json.dumps(task["data"]) + project.label_config + (project.expert_instruction or "")
        assert not [s for s in secret if s in shown], shown
        # reviewers look as well as listen: the clip's spectrogram, served to a reviewer's token like its audio
        assert re.fullmatch(r"/data/local-files/\?d=[^&]*/[0-9a-f]{2}/[0-9a-f]{64}\.png", task["data"]["image"])
        got = httpx.get(ls.url + task["data"]["image"], headers={"Authorization": f"Token {tokens[RATERS[0]]}"},
                        trust_env=False)
        assert got.status_code == 200 and got.content.startswith(b"\x89PNG")
        with Image.open(io.BytesIO(got.content)) as image:
            assert image.size == library.SPECTROGRAM_PX
    assert '<Image name="spectrogram" value="$image"/>' in project.label_config
    assert "None of these" in project.label_config and "game, film or shooting-range gunshots" in project.label_config
    assert project.maximum_annotations == 3

    code, out, _ = review_push(ls, ws, sounds, capsys)  # idempotent: the recorded project, nothing new
    assert code == 0 and "imported 0 new task(s), 3 already there, 3 in total" in out
    assert len(export_tasks(admin, project_id)) == 3
    assert sorted(p.name for p in sounds.iterdir()) == sorted([*(f"{t}.wav" for t in ("gunfire", "explosion",
                                                                                      "sizzle")), "catalog.jsonl"])

    task_of = clip_tasks(admin, ws)
    answers = {"lib-gunfire": ("gunfire", "gunfire", "gunfire"),  # all three name it
               "lib-explosion": ("explosion", NONE_OF_THESE, "gunfire"),  # 1 of 3
               "lib-sizzle": ("sizzle", "kitchen", "sizzle")}  # 2 of 3: confirmed
    for clip_id, given in answers.items():
        for email, label in zip(RATERS, given, strict=True):
            annotate(accounts[email], task_of[clip_id], label)
    review = review_pull(ls, ws, sounds, capsys)
    assert {c: (r["reviewers"], r["named"], r["confirmed"]) for c, r in review.items()} == {
        "lib-gunfire": (3, 3, True), "lib-explosion": (3, 1, False), "lib-sizzle": (3, 2, True)}
    for clip in catalog:
        line = review[clip.clip_id]
        assert line["sha256"] == clip.sha256 and line["demo"] == 0 and line["procedural"] == ""
        assert all(who.startswith("ann-") for who in line["answers"])  # pseudonyms, never an email
    assert "example.com" not in (ws.root / WORKSPACE_REVIEW_FILE).read_text()
    assert not (sounds / REVIEW_FILE).exists()
    # people's review goes into the shared library only when asked, and says what it wrote where
    code, out, err = cli(library.main, "pull", "--workspace", str(ws.root), "--sounds", str(sounds), "--data-dir",
                         str(ls.data_dir), "--into-library", capsys=capsys)
    assert code == 0, err
    assert f"into the library: wrote 3 review line(s), 3 with answers, to {sounds / REVIEW_FILE}" in out
    assert read_lines(sounds / REVIEW_FILE) == review

    # a clip whose file changed is unreviewed again, and the next push gives it a task of its own
    rng = np.random.default_rng(11)
    sf.write(sounds / "sizzle.wav", (0.2 * rng.standard_normal(16000 * 4)).astype(np.float32), 16000,
             subtype="PCM_16")
    write_catalog(sounds, [c.model_copy(update={"sha256": sha256_file(sounds / "sizzle.wav")})
                           if c.clip_id == "lib-sizzle" else c for c in catalog])
    review = review_pull(ls, ws, sounds, capsys)
    assert (review["lib-sizzle"]["reviewers"], review["lib-sizzle"]["confirmed"]) == (0, False)
    assert review["lib-gunfire"]["confirmed"]
    code, out, _ = review_push(ls, ws, sounds, capsys)
    assert code == 0 and "imported 1 new task(s), 2 already there, 4 in total" in out


def test_scripted_reviewers_are_demo_and_deterministic(ls, tmp_path, capsys):  # noqa: F811
    sounds = noise_library(tmp_path / "lib", prefix="demo-")
    ws = served_workspace(tmp_path / "ws", ls.document_root)
    code, _, err = review_push(ls, ws, sounds, capsys, "--project", "Library review demo")
    assert code == 0, err
    args = ("--workspace", str(ws.root), "--library", "--data-dir", str(ls.data_dir))
    code, out, err = cli(demo_annotators.main, *args, capsys=capsys)
    assert code == 0, err
    assert "submitted 9 answer(s)" in out
    code, out, _ = cli(demo_annotators.main, *args, capsys=capsys)
    assert code == 0 and "submitted 0 answer(s)" in out  # a rerun answers nothing twice
    review = review_pull(ls, ws, sounds, capsys)
    assert all(line["reviewers"] == 3 and line["demo"] == 3 for line in review.values())
    # scripted reviews never reach the shared library, even when asked
    code, out, err = cli(library.main, "pull", "--workspace", str(ws.root), "--sounds", str(sounds), "--data-dir",
                         str(ls.data_dir), "--into-library", capsys=capsys)
    assert code == 2 and "refusing --into-library: 9 answer(s) came from scripted demo reviewers" in err, err
    assert not (sounds / REVIEW_FILE).exists()
    # seed 0: 7 of the 9 answers name the clip's own tag (the truth is mostly it; the raters err at 5-20 %)
    named = sum(line["named"] for line in review.values())
    assert named >= 6, review
    assert sum(line["confirmed"] for line in review.values()) >= 2


def test_server_down_and_wrong_token_are_clear_errors(ls, tmp_path, capsys, monkeypatch):  # noqa: F811
    sounds = noise_library(tmp_path / "lib", prefix="err-")
    ws = served_workspace(tmp_path / "ws", ls.document_root)
    code, _, err = cli(library.main, "push", "--workspace", str(ws.root), "--sounds", str(sounds),
                       "--url", "http://127.0.0.1:9", capsys=capsys)
    assert code == 2 and "cannot reach Label Studio at http://127.0.0.1:9" in err
    monkeypatch.setenv("LABEL_STUDIO_API_KEY", "wrong-token-0000")
    for command in ("push", "pull"):
        code, _, err = cli(library.main, command, "--workspace", str(ws.root), "--sounds", str(sounds),
                           "--data-dir", str(ls.data_dir), capsys=capsys)
        assert code == 2 and "rejected the API token" in err and "wrong-token" not in err
    assert not (sounds / REVIEW_FILE).exists() and not (ws.root / WORKSPACE_REVIEW_FILE).exists()
    assert not (ws.root / "library_review_items.json").exists()


# ----------------------------------------------------------------------------------------------
# the release gate (no server: the review file as pull writes it)
# ----------------------------------------------------------------------------------------------

# the clips tests.test_release's workspace mixes (its twins play none: their backgrounds are made from the scene)
USED = ("clip-0", "clip-1", "clip-2", "clip-kitchen")


def write_test_review(ws: Workspace, confirmed: dict[str, bool], demo: bool, into_workspace: bool = False) -> None:
    """LIBRARY/review.jsonl for the fixture's library (its config's mix.sounds), through write_review; or
    the workspace's own review, as pull writes it."""
    lines = []
    from construction.sounds.procedural import CLASSES

    for clip_id, ok in confirmed.items():
        tag = "rain" if clip_id == "procedural-rain" else "gunfire"
        sha = CLASSES["rain"].sha256() if tag == "rain" else "0" * 64  # a class: its model version
        answers = {f"ann-{k}": tag if ok or k == 0 else NONE_OF_THESE for k in range(3)}
        lines.append({"clip_id": clip_id, "sha256": sha, "tags": [tag], "procedural": "rain" if tag == "rain" else "",
                      "answers": answers, **verdict(answers, [tag]), "demo": 3 if demo else 0})
    if into_workspace:
        write_review(ws.root, lines, WORKSPACE_REVIEW_FILE)
        return
    (ws.root / "sounds").mkdir(exist_ok=True)
    write_review(ws.root / "sounds", lines)


def test_release_refuses_unconfirmed_clips_unless_told(tmp_path, capsys):
    ws = make_workspace(tmp_path / "ws", n=6)
    out = tmp_path / "out"
    code, _, err = cli(export_main, "--workspace", str(ws.root), "--out", str(out), capsys=capsys)
    assert code == 2 and "4 of 4 background clip(s)" in err and "--allow-unreviewed-sounds" in err
    assert "procedural-rain" not in err  # no twin plays a library clip of its own
    assert "python -m annotation.library push" in err and not out.exists()

    write_test_review(ws, {c: c != "clip-1" for c in USED}, demo=False)
    code, _, err = cli(export_main, "--workspace", str(ws.root), "--out", str(out), capsys=capsys)
    assert code == 2 and "1 of 4 background clip(s)" in err and "clip-1: 1 of 3 reviewer(s)" in err
    assert not out.exists()

    code, _, err = cli(export_main, "--workspace", str(ws.root), "--out", str(out), "--allow-unreviewed-sounds",
                       capsys=capsys)
    assert code == 0, err
    info = json.loads((out / "release.json").read_text())["sound_review"]
    assert (info["used"], info["used_unconfirmed"], info["confirmed"], info["reviewed"]) == (4, 1, 3, 4)
    assert info["allowed_unreviewed"] is True and info["demo_answers"] == 0 and info["human_answers"] == 12
    card = (out / "README.md").read_text()
    assert "4 library clips were reviewed by ear" in card and "by people; 3 confirmed" in card
    assert "1 of them not confirmed (exported with `--allow-unreviewed-sounds`)" in card


def test_release_of_confirmed_clips_passes_and_a_changed_clip_is_refused(tmp_path, capsys):
    ws = make_workspace(tmp_path / "ws", n=6)
    write_test_review(ws, dict.fromkeys(USED, True), demo=False)
    code, _, err = cli(export_main, "--workspace", str(ws.root), "--out", str(tmp_path / "out"), capsys=capsys)
    assert code == 0, err
    info = json.loads((tmp_path / "out" / "release.json").read_text())["sound_review"]
    assert (info["used_unconfirmed"], info["allowed_unreviewed"], info["demo_answers"]) == (0, False, 0)
    assert "by people; 4 confirmed" in (tmp_path / "out" / "README.md").read_text()

    lines = [json.loads(line) for line in (ws.root / "sounds" / REVIEW_FILE).read_text().splitlines()]
    for line in lines:  # the review heard another file than the one clip-2's recipe mixed
        if line["clip_id"] == "clip-2":
            line["sha256"] = "1" * 64
    write_review(ws.root / "sounds", lines)
    code, _, err = cli(export_main, "--workspace", str(ws.root), "--out", str(tmp_path / "again"), capsys=capsys)
    assert code == 2 and "clip-2: changed since it was reviewed" in err


def test_the_release_gate_reads_the_workspace_review_and_the_library_own(tmp_path, capsys):
    """pull writes W/library_review.jsonl: the gate reads it, and the library's own review beside it."""
    ws = make_workspace(tmp_path / "ws", n=6)
    write_test_review(ws, dict.fromkeys(USED, True), demo=False, into_workspace=True)
    assert not (ws.root / "sounds" / REVIEW_FILE).exists()
    code, _, err = cli(export_main, "--workspace", str(ws.root), "--out", str(tmp_path / "out"), capsys=capsys)
    assert code == 0, err
    info = json.loads((tmp_path / "out" / "release.json").read_text())["sound_review"]
    assert (info["review_file"], info["used_unconfirmed"], info["confirmed"]) == (True, 0, 4)

    # the workspace did not confirm clip-1; the library's own review, heard by more people, did
    write_test_review(ws, {c: c != "clip-1" for c in USED}, demo=False, into_workspace=True)
    code, _, err = cli(export_main, "--workspace", str(ws.root), "--out", str(tmp_path / "refused"), capsys=capsys)
    assert code == 2 and "clip-1: 1 of 3 reviewer(s)" in err
    assert f"python -m annotation.library push --workspace {ws.root}, label" in err
    lines = [{"clip_id": "clip-1", "sha256": "0" * 64, "tags": ["gunfire"], "procedural": "",
              "answers": {f"ann-{k}": "gunfire" for k in range(4)}, "reviewers": 4, "named": 4, "confirmed": True,
              "demo": 0}]
    (ws.root / "sounds").mkdir(exist_ok=True)
    write_review(ws.root / "sounds", lines)
    code, _, err = cli(export_main, "--workspace", str(ws.root), "--out", str(tmp_path / "both"), capsys=capsys)
    assert code == 0, err


def test_scripted_confirmations_do_not_clear_a_release_labelled_by_people(tmp_path, capsys):
    """The fixture's labels are people's (no demo source): clips only demo reviewers confirmed are refused."""
    ws = make_workspace(tmp_path / "ws", n=6)
    assert not any(a.source == "demo" for s in ws.read_samples("annotated") for a in s.annotations)
    write_test_review(ws, dict.fromkeys(USED, True), demo=True)
    code, _, err = cli(export_main, "--workspace", str(ws.root), "--out", str(tmp_path / "out"), capsys=capsys)
    assert code == 2 and "4 of 4 background clip(s)" in err
    assert "confirmed by scripted demo reviewers, which only a demo release accepts" in err


def test_a_pull_keeps_the_reviews_other_workspaces_made_of_the_same_files():
    """review.jsonl belongs to the library: of two reviews of the same file, a clip keeps the one more
    people heard (answers of two workspaces are never pooled: their pseudonyms differ)."""
    def line(clip_id, sha, reviewers):
        return {"clip_id": clip_id, "sha256": sha, "reviewers": reviewers, "confirmed": reviewers >= 2}

    earlier = {"a": line("a", "1", 3), "b": line("b", "2", 3), "c": line("c", "3", 3), "e": line("e", "5", 2)}
    now = [line("a", "1", 0), line("b", "9", 0), line("c", "3", 1), line("d", "4", 0), line("e", "5", 3)]
    kept = keep_earlier(now, earlier)
    # a: kept; b: its file changed; c: one new answer does not replace three; d: new; e: the new review is bigger
    assert [(x["clip_id"], x["sha256"], x["reviewers"]) for x in kept] == [
        ("a", "1", 3), ("b", "9", 0), ("c", "3", 3), ("d", "4", 0), ("e", "5", 3)]


def test_a_demo_release_is_not_held_back_by_unconfirmed_clips_and_its_card_counts_them(tmp_path, capsys):
    """Scripted labels: never published, so the review reports instead of refusing; scripted reviews count."""
    ws = make_workspace(tmp_path / "ws", n=6, demo=True)
    write_test_review(ws, {c: c != "clip-1" for c in USED}, demo=True)
    out = tmp_path / "out"
    code, _, err = cli(export_main, "--workspace", str(ws.root), "--out", str(out), capsys=capsys)
    assert code == 0, err
    info = json.loads((out / "release.json").read_text())["sound_review"]
    assert (info["used"], info["used_unconfirmed"], info["demo_release"], info["allowed_unreviewed"]) == (4, 1, True, False)
    card = (out / "README.md").read_text()
    assert "by scripted demo reviewers; 3 confirmed" in card
    assert "1 of them not confirmed (a demo release, never published, is not held back by the review)" in card


def test_a_procedural_class_is_reviewed_by_its_draws(ls, admin, accounts, tmp_path, capsys):  # noqa: F811
    """A procedural class has no file: push renders --draws seeded draws, each a task like a clip; the
    class is confirmed only when every draw is, and the release then accepts any draw of it."""
    from construction.sounds.library import Clip
    from construction.sounds.procedural import CLASSES, catalog_row

    sounds = noise_library(tmp_path / "lib", prefix="proc-")
    catalog, _ = read_catalog(sounds)
    sizzle = Clip(**catalog_row(CLASSES["sizzle"]))
    write_catalog(sounds, [*catalog, sizzle])
    ws = served_workspace(tmp_path / "ws", ls.document_root)
    code, out, err = review_push(ls, ws, sounds, capsys, "--project", "Library review procedural", "--draws", "2")
    assert code == 0, err
    assert "(1 procedural class(es), 2 draw(s) each), imported 5 new task(s)" in out
    project_id = read_state(ws)[library.STATE_KEY]["id"]
    mapping = read_task_map(ws)
    task_of = {mapping[key][0]: ids[0] for key, ids in task_keys(admin, project_id).items()}
    draw_tasks = sorted((iid, task) for iid, task in task_of.items() if iid.startswith(f"{sizzle.clip_id}@"))
    assert [iid.rsplit("#", 1)[1] for iid, _ in draw_tasks] == ["draw0", "draw1"]

    given = {0: ("sizzle", "sizzle", "sizzle"), 1: ("sizzle", "kitchen", NONE_OF_THESE)}  # draw 1: 1 of 3
    for k, (_, task) in enumerate(draw_tasks):
        for email, label in zip(RATERS, given[k], strict=True):
            annotate(accounts[email], task, label)
    line = review_pull(ls, ws, sounds, capsys)[sizzle.clip_id]
    assert line["procedural"] == "sizzle" and [d["confirmed"] for d in line["draws"]] == [True, False]
    assert (line["reviewers"], line["named"], line["confirmed"]) == (6, 4, False)

    annotate(accounts[RATERS[1]], draw_tasks[1][1], "sizzle")  # the second rater hears it again: now 2 of 3
    line = review_pull(ls, ws, sounds, capsys)[sizzle.clip_id]
    assert [d["confirmed"] for d in line["draws"]] == [True, True] and line["confirmed"] is True


def test_the_release_gate_derives_its_verdict_from_the_answers_not_the_files_flags(tmp_path, capsys):
    """Issue 49 item 13 (the gate): a review line edited by hand (confirmed: true for a clip 0 of 3 named;
    demo: 0 for answers of the workspace's scripted accounts) was taken as it said, and the card said "by
    people". The gate now derives reviewers, named, confirmed and the scripted answers from the answers."""
    from tests.conftest import run_module

    ws = make_workspace(tmp_path / "ws", n=6)
    write_test_review(ws, dict.fromkeys(USED, True), demo=False, into_workspace=True)
    path = ws.root / WORKSPACE_REVIEW_FILE
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for line in lines:
        if line["clip_id"] == "clip-1":  # nobody named its tag, the flags say otherwise
            line["answers"] = {who: NONE_OF_THESE for who in line["answers"]}
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    proc = run_module("release.export", "--workspace", str(ws.root), "--out", str(tmp_path / "out"))
    assert proc.returncode == 2 and "clip-1: 0 of 3 reviewer(s) named its tag" in proc.stderr, proc.stderr[-3000:]
    # the answers are the workspace's scripted accounts' (annotation.json), the line says demo: 0
    write_test_review(ws, dict.fromkeys(USED, True), demo=False, into_workspace=True)
    (ws.root / "annotation.json").write_text(json.dumps({"demo_annotators": [f"ann-{k}" for k in range(3)]}))
    proc = run_module("release.export", "--workspace", str(ws.root), "--out", str(tmp_path / "out"))
    assert proc.returncode == 2 and "confirmed by scripted demo reviewers" in proc.stderr, proc.stderr[-3000:]
    proc = run_module("release.export", "--workspace", str(ws.root), "--out", str(tmp_path / "out"),
                      "--allow-unreviewed-sounds")
    assert proc.returncode == 0, proc.stderr[-3000:]
    card = (tmp_path / "out" / "README.md").read_text()
    assert "by scripted demo reviewers" in card and "by people" not in card


def test_a_hand_edited_review_file_never_gets_scripted_answers_into_the_library(ls, tmp_path, capsys):  # noqa: F811
    """Issue 49 item 13 (--into-library): editing W/library_review.jsonl (demo: 0, reviewers + 1) got the
    scripted reviews into the shared library as people's. What goes into the library is now what this pull
    read from the server, its scripted answers told by the server's accounts, never the file's flags."""
    sounds = noise_library(tmp_path / "lib", prefix="edit-")
    ws = served_workspace(tmp_path / "ws", ls.document_root)
    assert review_push(ls, ws, sounds, capsys, "--project", "Library review edited")[0] == 0
    code, _, err = cli(demo_annotators.main, "--workspace", str(ws.root), "--library", "--data-dir",
                       str(ls.data_dir), capsys=capsys)
    assert code == 0, err
    review_pull(ls, ws, sounds, capsys)
    path = ws.root / WORKSPACE_REVIEW_FILE
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for line in lines:
        line.update(demo=0, reviewers=line["reviewers"] + 1)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    code, out, err = cli(library.main, "pull", "--workspace", str(ws.root), "--sounds", str(sounds), "--data-dir",
                         str(ls.data_dir), "--into-library", capsys=capsys)
    assert code == 2 and "refusing --into-library: 9 answer(s) came from scripted demo reviewers" in err, err
    assert not (sounds / REVIEW_FILE).exists()

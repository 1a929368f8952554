# ruff: noqa: F811  (the fixtures are imported from tests.hub_stub and tests.test_release)
"""What a push leaves on the Hub, what
--private means for a repo that exists, the card's own usage snippet, the release shipping only what
validation decided, non-finite numbers, splits and the labels' source. Each test failed before its fix."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from construction.core.errors import WorkbenchError
from construction.core.record import Annotation
from release.export import main as export_main
from tests.conftest import REPO, run_in_process, run_module
from tests.test_release import (  # noqa: F401 (hub: a fixture)
    edit_chain,
    hub,
    load_in_fresh_process,
    make_workspace,
    revalidate,
    tree_bytes,
)


def _export(*argv: str) -> tuple[int, str]:
    """(exit status, stderr) of release.export, run in this process as `python -m release.export` runs it: the
    refusals below need no fresh interpreter each (tests/test_release.py and the single refusals here run the
    real command line)."""
    proc = run_in_process(export_main, "--allow-unreviewed-sounds", *argv)
    return proc.returncode, proc.stderr


def _push(ws, out: Path, version: str, *extra: str) -> int:
    return export_main(["--allow-unreviewed-sounds", "--workspace", str(ws.root), "--out", str(out), "--version", version,
                        "--push-to-hub", "aor/bench", *extra])


# --- item 2: the repo holds exactly the pushed release ------------------------------------------------

def test_a_push_removes_what_the_previous_version_left(hub, tmp_path):
    """v1: two shards and a controls config; v2: one shard, no controls. The repo (and the v2 tag) holds
    v2 exactly and loads; v1's tag still holds v1; a file the release does not manage is kept."""
    v1, v2 = tmp_path / "v1", tmp_path / "v2"
    assert _push(make_workspace(tmp_path / "ws1", n=6), v1, "1.0.0", "--max-shard-mb", "0.03") == 0
    assert len(list((v1 / "data").glob("*.parquet"))) > 1 and (v1 / "controls").is_dir()
    repo = hub.repos[("dataset", "aor/bench")]
    repo.files["NOTES.md"] = b"kept by the maintainers"  # not a release folder: never deleted
    assert _push(make_workspace(tmp_path / "ws2", n=4, controls=False), v2, "2.0.0") == 0

    assert repo.files == {**tree_bytes(v2), "NOTES.md": b"kept by the maintainers"}
    assert repo.files_at("1.0.0") == tree_bytes(v1)
    tagged = tmp_path / "tag-2.0.0"
    for rel, data in repo.files_at("2.0.0").items():
        (tagged / rel).parent.mkdir(parents=True, exist_ok=True)
        (tagged / rel).write_bytes(data)
    result = load_in_fresh_process(tagged, tmp_path)  # the real `datasets` loader, offline
    assert result["configs"] == ["default"] and len(result["folder"]["rows"]) == 4


# --- item 3: --private on a repo that exists ------------------------------------------------------------

def test_private_is_refused_for_a_public_repo_unless_asked_to_change_it(hub, tmp_path, capsys):
    ws = make_workspace(tmp_path / "ws", n=2, controls=False)
    assert _push(ws, tmp_path / "out", "1.0.0") == 0
    repo = hub.repos[("dataset", "aor/bench")]
    assert not repo.private
    commits = len(repo.commits)
    with pytest.raises(WorkbenchError, match="datasets/aor/bench exists and is public: --private would publish"):
        _push(ws, tmp_path / "out", "1.0.1", "--private")
    assert len(repo.commits) == commits and "1.0.1" not in repo.tags and not repo.private
    capsys.readouterr()
    assert _push(ws, tmp_path / "out", "1.0.1", "--private", "--make-private") == 0
    assert repo.private and repo.tags["1.0.1"] == repo.head
    assert ("PUT", "/api/datasets/aor/bench/settings") in hub.requests
    assert "datasets/aor/bench (private) at commit" in capsys.readouterr().out


def test_a_public_push_into_a_private_repo_says_it_stays_private(hub, tmp_path, capsys):
    ws = make_workspace(tmp_path / "ws", n=2, controls=False)
    assert _push(ws, tmp_path / "out", "1.0.0", "--private") == 0
    assert _push(ws, tmp_path / "out", "1.0.1") == 0
    assert hub.repos[("dataset", "aor/bench")].private
    assert "datasets/aor/bench (private) at commit" in capsys.readouterr().out.splitlines()[-1]


def test_private_flags_need_a_push(tmp_path):
    ws = make_workspace(tmp_path / "ws", n=2, controls=False)
    for flag in ("--private", "--make-private"):
        with pytest.raises(SystemExit) as exc:
            export_main(["--allow-unreviewed-sounds", "--workspace", str(ws.root), "--out", str(tmp_path / "out"), flag])
        assert exc.value.code == 2
    assert not (tmp_path / "out").exists()


# --- item 17: a release ships only what validation decided ------------------------------------------

def _first(ws, stage: str = "validated"):
    return min(ws.read_samples(stage), key=lambda s: s.sample_id)


def _hand_edit(ws, how: str) -> str:
    """Edit the workspace as a person might, by hand; returns the line the refusal must hold."""
    first = _first(ws)
    sid = first.sample_id
    if how == "speech-of-another-sample":
        other = sorted(ws.read_samples("validated"), key=lambda s: s.sample_id)[1]
        edit_chain(ws, lambda s: s.sample_id == sid and setattr(s, "speech", other.speech), stages=("validated",))
        return f"{sid}: speech audio {other.speech.sha256[:12]} is not the one in the 'wer' manifest"
    if how == "speech-swapped-along-the-chain":  # every manifest from wer on agrees; synthesis made another
        ws.write_manifest("synthesize", [s.model_copy(update={"mixture": None, "mix": None})
                                         for s in ws.read_samples("wer")])
        other = sorted(ws.read_samples("validated"), key=lambda s: s.sample_id)[1]
        edit_chain(ws, lambda s: s.sample_id == sid and setattr(s, "speech", other.speech))
        return f"{sid}: speech audio {other.speech.sha256[:12]} is not the one in the 'synthesize' manifest"
    if how == "twin-of-another-sample":  # the twin and the scene alone are traced like the speech
        other = sorted(ws.read_samples("validated"), key=lambda s: s.sample_id)[1]
        edit_chain(ws, lambda s: s.sample_id == sid and setattr(s, "irrelevant_audio", other.irrelevant_audio),
                   stages=("validated",))
        return f"{sid}: irrelevant_audio audio {other.irrelevant_audio.sha256[:12]} is not the one in the 'wer' manifest"
    if how == "danger-twin-of-another-sample-after-a-null":  # issue 49 item 7: wer's twin set to null
        other = next(s for s in sorted(ws.read_samples("validated"), key=lambda s: s.sample_id)[1:] if s.danger_audio)
        edit_chain(ws, lambda s: s.sample_id == sid and setattr(s, "danger_audio", None), stages=("wer",))
        edit_chain(ws, lambda s: s.sample_id == sid and setattr(s, "danger_audio", other.danger_audio),
                   stages=("annotated", "validated"))
        return f"{sid}: danger_audio audio {other.danger_audio.sha256[:12]} is not the one in the 'wer' manifest (None)"
    if how == "danger-certified-by-hand":  # sample 1's danger scene: 1/3 real danger, not certified
        second = sorted(ws.read_samples("validated"), key=lambda s: s.sample_id)[1].sample_id
        edit_chain(ws, lambda s: s.sample_id == second and s.provenance["validation.agreement"]["arms"]["danger"]
                   .update(certified=True), stages=("validated",))
        return f"{second}: differs from what validation made of its 'annotated' row in provenance"
    if how == "danger-labels-removed":  # validation certified sample 0's danger scene from labels now gone
        ws.write_manifest("annotated_danger", [d for d in ws.read_samples("annotated_danger") if d.sample_id != sid])
        return f"{sid}: differs from what validation made of its 'annotated' row in provenance"
    if how == "irrelevant-certified-by-hand":  # sample 1's twin background: a kitchen and danger heard, 1/3
        second = sorted(ws.read_samples("validated"), key=lambda s: s.sample_id)[1].sample_id
        edit_chain(ws, lambda s: s.sample_id == second and s.provenance["validation.agreement"]["arms"]["irrelevant"]
                   .update(certified=True), stages=("validated",))
        return f"{second}: differs from what validation made of its 'annotated' row in provenance"
    if how == "irrelevant-labels-removed":  # validation certified sample 0's twin background from labels now gone
        ws.write_manifest("annotated_irrelevant",
                          [d for d in ws.read_samples("annotated_irrelevant") if d.sample_id != sid])
        return f"{sid}: differs from what validation made of its 'annotated' row in provenance"
    if how == "twin-background-of-another-sample":  # what listeners certified is the one mixing made
        other = sorted(ws.read_samples("validated"), key=lambda s: s.sample_id)[1]
        edit_chain(ws, lambda s: s.sample_id == sid and setattr(s, "irrelevant_scene_audio",
                                                                 other.irrelevant_scene_audio), stages=("validated",))
        return (f"{sid}: irrelevant_scene_audio audio {other.irrelevant_scene_audio.sha256[:12]} is not the one in "
                "the 'wer' manifest")
    if how == "category-not-in-taxonomy":
        edit_chain(ws, lambda s: s.sample_id == sid and setattr(s, "category", "made_up"))
        return f"{sid}: category 'made_up' is not in the taxonomy"
    if how in ("mixture-label", "speech-label", "scene-label"):
        arm = how.split("-")[0]
        extra = Annotation(annotator="ls-extra", label="definitely", arm=arm, listened=True,
                           created_at="2025-01-09T00:00:00Z")
        edit_chain(ws, lambda s: s.sample_id == sid and s.annotations.append(extra), stages=("annotated", "validated"))
        return f"{sid}: {arm} label 'definitely' not in the arm's label set"
    if how == "copied-from-rejected":
        annotated = list(ws.read_samples("annotated"))
        for s in annotated:
            if s.sample_id == sid:
                for a in s.annotations:
                    if a.arm == "mixture":
                        a.label = "harmful"
        ws.write_manifest("annotated", annotated)
        revalidate(ws)  # validation rejects it: harmful
        [rejected] = list(ws.read_rejected("validated"))
        copied = rejected.sample.model_copy(update={"consensus_label": "benign", "decided_by": "majority"})
        ws.write_manifest("validated", [*ws.read_samples("validated"), copied],
                          [rejected])
        return f"{sid}: validation rejected it (harmful_consensus: 3/3 labels harmful)"
    if how == "label-edited-in-validated":
        edit_chain(ws, lambda s: s.sample_id == sid and setattr(
            next(a for a in s.annotations if a.arm == "mixture" and a.label == "benign"), "label", "harmful"),
            stages=("validated",))
        return f"{sid}: differs from what validation made of its 'annotated' row in annotations"
    if how == "labels-changed-after-validation":
        edit_chain(ws, lambda s: s.sample_id == sid and [setattr(a, "label", "harmful") for a in s.annotations
                                                           if a.arm == "mixture"], stages=("annotated",))
        return f"{sid}: validation does not validate it from its labels (harmful: harmful_consensus: 3/3"
    control = min(ws.read_samples("annotated_controls"), key=lambda c: c.sample_id)
    cid = control.sample_id
    if how == "control-expects-benign":
        edit_chain(ws, lambda c: c.sample_id == cid and c.custom.update(expected="benign"), stages=(), controls=True)
        return f"{cid}: control expects 'benign'; a control expects harmful"
    if how == "two-controls-on-one-sample":
        twin = control.model_copy(deep=True, update={"sample_id": "ctl-twin"})
        for stage in ("controls", "annotated_controls"):
            ws.write_manifest(stage, [*ws.read_samples(stage), twin])
        return f"{control.custom['control_of']}: 2 controls ({cid}, ctl-twin)"
    if how == "control-edited":
        other = max(ws.read_samples("validated"), key=lambda s: s.sample_id)
        edit_chain(ws, lambda c: c.sample_id == cid and setattr(c, "mixture", other.mixture),
                   stages=("annotated_controls",))
        return f"{cid}: differs from the control construction.controls built in mixture"
    raise AssertionError(how)


HAND_EDITS = ["speech-of-another-sample", "twin-of-another-sample", "speech-swapped-along-the-chain", "danger-certified-by-hand",
              "danger-twin-of-another-sample-after-a-null",
              "danger-labels-removed", "irrelevant-certified-by-hand", "irrelevant-labels-removed",
              "twin-background-of-another-sample", "category-not-in-taxonomy",
              "mixture-label", "speech-label", "scene-label", "copied-from-rejected", "label-edited-in-validated",
              "labels-changed-after-validation", "control-expects-benign", "two-controls-on-one-sample",
              "control-edited"]


@pytest.mark.parametrize("how", HAND_EDITS)
def test_a_hand_edited_row_is_refused_with_its_sample_and_reason(tmp_path, how):
    ws = make_workspace(tmp_path / "ws", n=4)
    expected = _hand_edit(ws, how)
    out = tmp_path / "out"
    code, err = _export("--workspace", str(ws.root), "--out", str(out),
                        "--quiet")  # no progress bars: the error is all stderr holds
    assert code == 2 and err.startswith("error: refusing to release: 1 problem(s)"), err
    assert expected in err, err
    assert not out.exists()


@pytest.mark.parametrize("what", ["file", "record", "background"])
def test_a_missing_twin_or_scene_alone_is_a_clear_export_error(tmp_path, what):
    ws = make_workspace(tmp_path / "ws", n=4)
    first = _first(ws)
    if what == "file":  # the store lost the files
        ws.audio_path(first.irrelevant_audio).unlink()
        ws.audio_path(first.scene_audio).unlink()
        expected = [f"{first.sample_id}: irrelevant-background twin (irrelevant_audio) audio file missing: "
                    f"{first.irrelevant_audio.path}",
                    f"{first.sample_id}: scene alone (scene_audio) audio file missing: {first.scene_audio.path}"]
    elif what == "record":  # mixed with mix.irrelevant_twin off
        edit_chain(ws, lambda s: s.sample_id == first.sample_id and setattr(s, "irrelevant_audio", None))
        expected = [f"{first.sample_id}: no irrelevant-background twin (irrelevant_audio) audio recorded; mix it again"]
    else:  # mixed before the twin's background was kept: listeners could not have certified it
        edit_chain(ws, lambda s: s.sample_id == first.sample_id and setattr(s, "irrelevant_scene_audio", None))
        expected = [f"{first.sample_id}: no background of its irrelevant twin alone (irrelevant_scene_audio) "
                    "recorded, so listeners could not certify it neutral; mix it again"]
    out = tmp_path / "out"
    code, err = _export("--workspace", str(ws.root), "--out", str(out))
    assert code == 2 and err.startswith("error: refusing to release:"), err
    assert all(line in err for line in expected), err
    assert not out.exists()


def test_an_uncertified_twin_is_not_needed_in_the_store(tmp_path):
    """A twin that does not ship is not read: sample 1's irrelevant twin (its background heard as a kitchen and
    as danger) and danger twin (1/3 real danger) may be gone from the store; sample 0's certified ones may not."""
    ws = make_workspace(tmp_path / "ws", n=4)
    first, second = sorted(ws.read_samples("validated"), key=lambda s: s.sample_id)[:2]
    for ref in (second.irrelevant_audio, second.danger_audio):
        ws.audio_path(ref).unlink()
    code, err = _export("--workspace", str(ws.root), "--out", str(tmp_path / "out"), "--quiet")
    assert code == 0, err
    ws.audio_path(first.irrelevant_audio).unlink()
    code, err = _export("--workspace", str(ws.root), "--out", str(tmp_path / "again"), "--quiet")
    assert code == 2 and f"{first.sample_id}: irrelevant-background twin (irrelevant_audio) audio file missing" in err


def test_the_unedited_chain_and_a_real_validation_run_still_export(tmp_path):
    """The checks hold what validation.agreement really writes (its stats with the exact rule)."""
    from validation.agreement import run_workspace

    ws = make_workspace(tmp_path / "ws", n=4)
    run_workspace(ws, n_boot=20)
    assert ws.read_stats("validated")["rule"]["min_fraction"] == pytest.approx(2 / 3)
    assert export_main(["--allow-unreviewed-sounds", "--workspace", str(ws.root), "--out", str(tmp_path / "out")]) == 0


def test_a_sample_the_wer_stage_synthesised_again_exports(tmp_path):
    """construction.wer re-synthesises a sample whose key words were lost (wer.resynthesize_attempts): its
    speech and mixture then come from the WER stage, not from synthesize and mix. That exports; the same
    swap without the WER stage's record of the retry is refused."""
    ws = make_workspace(tmp_path / "ws", n=4)
    first, other = sorted(ws.read_samples("wer"), key=lambda s: s.sample_id)[:2]

    def swap(s):  # synthesize and mix made `first` as `other` sounds; the WER stage made the audio it has
        return s.model_copy(update={"speech": other.speech, "mixture": other.mixture}) \
            if s.sample_id == first.sample_id else s

    for stage in ("synthesize", "mix"):
        if ws.has_manifest(stage):
            ws.write_manifest(stage, [swap(s) for s in ws.read_samples(stage)])
        else:
            ws.write_manifest(stage, [swap(s) for s in ws.read_samples("wer")])
    proc = run_module("release.export", "--allow-unreviewed-sounds", "--workspace", str(ws.root), "--out", str(tmp_path / "refused"))
    assert proc.returncode == 2 and f"{first.sample_id}: speech audio" in proc.stderr, proc.stderr

    attempts = [{"voice": "flite:slt", "snr_db": 10.0, "wer_speech": 0.5, "wer_mixture": 0.5},
                {"voice": "flite:rms", "snr_db": 10.0, "wer_speech": 0.0, "wer_mixture": 0.0}]
    wer = list(ws.read_samples("wer"))
    for s in wer:
        if s.sample_id == first.sample_id:
            s.provenance["wer"] = {**s.provenance.get("wer", {}), "attempts": attempts}
    ws.write_manifest("wer", wer)
    assert export_main(["--allow-unreviewed-sounds", "--workspace", str(ws.root), "--out", str(tmp_path / "out")]) == 0


# --- item 18: numbers the plots and the card cannot show ---------------------------------------------

def _set_snr(value: float):
    return lambda ws: edit_chain(ws, lambda s: s.sample_id.endswith("1") and setattr(s.mix, "snr_db", value))


def _set_alpha(where: str, key: str, value):
    def edit(ws):
        path = ws.root / "reports" / "agreement.json"
        report = json.loads(path.read_text())
        entry = report
        for part in where.split("."):
            entry = entry[part]
        entry[key] = value
        path.write_text(json.dumps(report))  # NaN is written as the JSON extension NaN, as Python reads it
    return edit


@pytest.mark.parametrize("edit, expected", [
    (_set_snr(float("inf")), "aor-0000000000000001: snr_db = inf: not a finite number within ±1e+06"),
    (_set_snr(1e308), "aor-0000000000000001: snr_db = 1e+308: not a finite number within ±1e+06"),
    (_set_snr(float("nan")), "aor-0000000000000001: snr_db = nan: not a finite number within ±1e+06"),
    (_set_alpha("per_category.video_games", "alpha", "high"),
     "reports/agreement.json: per_category.video_games alpha 'high' is not a number <= 1"),
    (_set_alpha("overall", "alpha", float("nan")), "reports/agreement.json: overall alpha nan is not a number <= 1"),
    (_set_alpha("arms.scene.overall", "ci95_clustered", [0.1, "x"]),
     "reports/agreement.json: arms.scene.overall ci95_clustered [0.1, 'x'] is not two numbers"),
], ids=["snr-inf", "snr-1e308", "snr-nan", "alpha-text", "alpha-nan", "ci-text"])
def test_numbers_that_are_not_finite_are_refused_clearly(tmp_path, edit, expected):
    ws = make_workspace(tmp_path / "ws", n=4)
    edit(ws)
    out = tmp_path / "out"
    code, err = _export("--workspace", str(ws.root), "--out", str(out),
                        "--quiet")  # no progress bars: the error is all stderr holds
    assert code == 2 and err.startswith("error: refusing to release: 1 problem(s)"), err
    assert expected in err and "Traceback" not in err
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["ws"]


# --- item 7: the card's own usage snippet runs ----------------------------------------------------------

def test_the_cards_usage_snippet_runs_as_written(tmp_path):
    """The card's Python block, run as written (the repo id pointed at the release folder, as the card says)
    in a fresh offline Python with the project's packages: it reads the first clip, its speech and the
    controls."""
    ws = make_workspace(tmp_path / "ws", n=4)
    out = tmp_path / "release"
    export_main(["--allow-unreviewed-sounds", "--workspace", str(ws.root), "--out", str(out)])
    card = (out / "README.md").read_text()
    [snippet] = re.findall(r"## Usage\n\n```python\n(.*?)```", card, re.S)
    check = ("\nimport json\nprint(json.dumps({'id': row['id'], 'rate': rate, 'n': len(audio), "
             "'speech_rate': speech_rate, 'speech_n': len(speech), 'controls': len(controls)}))\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    env.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", HF_HOME=str(tmp_path / "hf-home"))
    proc = subprocess.run([sys.executable, "-c", snippet.replace("ORG/NAME", str(out)) + check], cwd=tmp_path,
                          env=env, text=True, capture_output=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    first = min(ws.read_samples("validated"), key=lambda s: s.sample_id)
    assert result == {"id": first.sample_id, "rate": 16000, "n": round(first.mixture.duration_s * 16000),
                      "speech_rate": 16000, "speech_n": round(first.speech.duration_s * 16000), "controls": 2}
    assert "pip install datasets soundfile" in card and "torchcodec" in card


# --- splits over the whole release, none left empty ---------------------------------

def _categories_per_split(out: Path) -> dict[str, list[str]]:
    import pyarrow.parquet as pq

    info = json.loads((out / "release.json").read_text())
    names = None
    found = {}
    for split, files in info["shards"].items():
        table = pq.read_table([out / f for f in files], columns=["category"])
        names = names or json.loads(table.schema.metadata[b"huggingface"])["info"]["features"]["category"]["names"]
        found[split] = sorted(names[c] for c in table.column("category").to_pylist())
    return found


@pytest.mark.parametrize("n, spec, sizes", [
    (2, "dev=0.5,test=0.5", {"dev": 1, "test": 1}),  # per-category rounding put both in dev
    (6, "dev=0.5,test=0.5", {"dev": 3, "test": 3}),  # ... here 4 and 2
    (4, "dev=0.1,test=0.9", {"dev": 1, "test": 3}),  # ... here none in dev
], ids=["one-per-category", "stratified", "small-fraction"])
def test_splits_are_allocated_over_the_release_and_none_is_empty(tmp_path, n, spec, sizes):
    ws = make_workspace(tmp_path / "ws", n=n)
    out = tmp_path / "out"
    assert export_main(["--allow-unreviewed-sounds", "--workspace", str(ws.root), "--out", str(out), "--splits", spec]) == 0
    assert json.loads((out / "release.json").read_text())["splits"] == sizes
    found = _categories_per_split(out)
    assert {split: len(members) for split, members in found.items()} == sizes
    # stratified: a category is in every split its count allows, within one of its share
    for category in ("video_games", "cooking_household"):
        total = sum(members.count(category) for members in found.values())
        for split, members in found.items():
            assert abs(members.count(category) - total * sizes[split] / n) < 1, (category, found)
    again = tmp_path / "again"  # stable across reruns
    assert export_main(["--allow-unreviewed-sounds", "--workspace", str(ws.root), "--out", str(again), "--splits", spec]) == 0
    assert _categories_per_split(again) == found


def test_evaluation_finds_every_declared_split(tmp_path, monkeypatch):
    """The case of the issue: 1 sample per category, dev=0.5,test=0.5 -> evaluation.run found no 'test'."""
    import datasets

    from evaluation.run import Release

    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(tmp_path / "hf-cache"))
    ws = make_workspace(tmp_path / "ws", n=2)
    out = tmp_path / "out"
    assert export_main(["--allow-unreviewed-sounds", "--workspace", str(ws.root), "--out", str(out), "--splits", "dev=0.5,test=0.5"]) == 0
    assert [len(Release(str(out), split).clips) for split in ("dev", "test")] == [1, 1]


def test_more_splits_than_samples_is_refused_before_writing(tmp_path):
    ws = make_workspace(tmp_path / "ws", n=2)
    proc = run_module("release.export", "--allow-unreviewed-sounds", "--workspace", str(ws.root), "--out", str(tmp_path / "out"),
                      "--splits", "dev=0.3,val=0.3,test=0.4")
    assert proc.returncode == 2
    assert ("error: 2 sample(s) cannot fill the 3 splits dev, val, test: a declared split would be empty; "
            "declare fewer splits") in proc.stderr
    assert not (tmp_path / "out").exists()


# --- the card counts demo and human labels -------------------------------------------

@pytest.mark.parametrize("human_arm, sources, says", [
    (None, {"demo": 21, "human": 0, "adjudication": 0}, "all 21 labels from scripted demo annotators, none from people"),
    ("mixture", {"demo": 15, "human": 6, "adjudication": 0},
     "15 of the 21 labels from scripted demo annotators, 6 from people"),
], ids=["all-demo", "mixed"])
def test_the_card_says_how_many_labels_came_from_scripted_annotators(tmp_path, capsys, human_arm, sources, says):
    ws = make_workspace(tmp_path / "ws", n=2, demo=True)  # 2 x 9 labels of the three arms + 3 of one control
    if human_arm:
        edit_chain(ws, lambda s: [setattr(a, "source", "label-studio") for a in s.annotations if a.arm == human_arm],
                   stages=("annotated", "validated"))
    out = tmp_path / "out"
    assert export_main(["--allow-unreviewed-sounds", "--workspace", str(ws.root), "--out", str(out)]) == 0
    assert f"[DEMO release: {says}]" in capsys.readouterr().out
    info = json.loads((out / "release.json").read_text())
    assert info["demo"] is True and info["label_sources"] == sources
    body = " ".join((out / "README.md").read_text().split("\n---\n", 1)[1].split())
    assert body.startswith("> **Content warning:**")  # first, then the demo banner
    body = body.split(" > ", 1)[1]
    assert body.startswith(f"**DEMO RELEASE: not for evaluation.** Labels in this release were posted by scripted "
                           f"demo annotators: {says}.")
    assert f"Every label comes from annotators (in this demo release: {says})" in body
    assert "not by people" not in body  # what the card said whoever labelled


# --- issue 49 -----------------------------------------------------------------------------------------

def test_credentials_inside_hf_endpoint_are_never_printed(hub, tmp_path):
    """Issue 49 item 16: --dry-run and the "rehearsal:" line printed $HF_ENDPOINT as given, a user:password@
    in it included. Both now show it masked. (The push itself then fails at the stub: the HTTP client sends
    the URL's user:password as basic auth in place of the Bearer token; its error is masked too.)"""
    ws = make_workspace(tmp_path / "ws", n=2, controls=False)
    password = "endpoint-pass-0123456789"
    endpoint = hub.url.replace("http://", f"http://hubuser:{password}@")
    env = {"HF_ENDPOINT": endpoint, "HF_HUB_DISABLE_XET": "1"}
    dry = run_module("release.export", "--allow-unreviewed-sounds", "--workspace", str(ws.root), "--out",
                     str(tmp_path / "dry"), "--push-to-hub", "aor/creds", "--dry-run", env=env)
    push = run_module("release.export", "--allow-unreviewed-sounds", "--workspace", str(ws.root), "--out",
                      str(tmp_path / "out"), "--push-to-hub", "aor/creds", env=env)
    assert dry.returncode == 0, dry.stderr[-3000:]
    masked = hub.url.replace("http://", "http://***@")
    assert f"Would push {tmp_path / 'dry'} to {masked} (on this machine: a rehearsal)" in dry.stdout
    assert f"rehearsal: {masked} is on this machine" in push.stdout
    assert f"load it back with HF_ENDPOINT={masked} and" in push.stdout
    assert push.returncode == 2 and f"error: {masked} rejected HF_TOKEN" in push.stderr, push.stderr[-3000:]
    for proc in (dry, push):
        assert password not in proc.stdout + proc.stderr and "Traceback" not in proc.stderr


def test_exports_into_sibling_folders_run_side_by_side_and_one_folder_takes_one(tmp_path):
    """Issue 49 item 17: the export's lock was its parent folder, so an export into parent/b was refused
    ("another export is writing") while one wrote parent/a. The lock is now per target: b is written while
    a is being written; a second export into a itself is still refused, and changes nothing."""
    import textwrap
    import time

    ws = make_workspace(tmp_path / "ws", n=2, controls=False)
    parent, started, go_on = tmp_path / "releases", tmp_path / "started", tmp_path / "go-on"
    held = textwrap.dedent(f"""
        import pathlib, sys, time
        import release.export as export
        write_checksums = export.write_checksums
        def waiting(root):  # inside the export's lock, the folder not yet swapped in
            pathlib.Path({str(started)!r}).write_text("holding")
            while not pathlib.Path({str(go_on)!r}).exists():
                time.sleep(0.05)
            write_checksums(root)
        export.write_checksums = waiting
        from construction.core.cli import run_main
        run_main(export.main, sys.argv[1:])
        """)
    first = subprocess.Popen([sys.executable, "-c", held, "--allow-unreviewed-sounds", "--workspace", str(ws.root),
                              "--out", str(parent / "a"), "--quiet"], cwd=REPO, text=True,
                             env={**os.environ, "PYTHONPATH": str(REPO)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        for _ in range(1200):
            if started.exists() or first.poll() is not None:
                break
            time.sleep(0.1)
        assert started.exists(), first.communicate()[1][-3000:]
        sibling = run_module("release.export", "--allow-unreviewed-sounds", "--workspace", str(ws.root), "--out",
                             str(parent / "b"), "--quiet")
        same = run_module("release.export", "--allow-unreviewed-sounds", "--workspace", str(ws.root), "--out",
                          str(parent / "a"), "--quiet")
    finally:
        go_on.write_text("go")
        _, err = first.communicate(timeout=300)
    assert first.returncode == 0, err[-3000:]
    assert sibling.returncode == 0, sibling.stderr[-3000:]
    assert same.returncode == 2 and f"error: another export is writing into {parent / 'a'}" in same.stderr
    assert tree_bytes(parent / "a") == tree_bytes(parent / "b")  # both whole, and the same release


def test_the_danger_scene_listeners_certified_is_checked_against_its_sha256(tmp_path):
    """Issue 49 item 8 (export): the danger scene is not shipped, so no write read it, and the export ran
    with its bytes replaced (only the shipped danger twin was checked). A certified twin's danger scene is
    now checked against its sha256 at every export (the push side: tests/test_annotation_integrity.py)."""
    ws = make_workspace(tmp_path / "ws", n=4)
    first = _first(ws)  # its danger scene is certified
    other = sorted(ws.read_samples("validated"), key=lambda s: s.sample_id)[1]
    path = ws.audio_path(first.danger_scene_audio)
    path.chmod(0o644)
    path.write_bytes(ws.audio_path(other.scene_audio).read_bytes())  # a valid WAV, other sounds
    proc = run_module("release.export", "--allow-unreviewed-sounds", "--workspace", str(ws.root), "--out",
                      str(tmp_path / "out"), "--quiet")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert (f"{first.sample_id}: checksum mismatch for {first.danger_scene_audio.path}, the danger scene "
            "(danger_scene_audio), which listeners certified, (file changed since it was made)") in proc.stderr
    assert not (tmp_path / "out").exists()


def test_labels_edited_after_the_pull_are_never_validated_or_released(tmp_path):
    """Issue 49 item 21 (labels): a danger scene's labels edited to "real danger" in the pulled manifests and
    validated again were released. annotation.pull now records the sha256 of each manifest it writes
    (stats/annotated.json); validation.agreement and release.export refuse a pulled manifest that changed."""
    from annotation.written import KEY, digests

    ws = make_workspace(tmp_path / "ws", n=4)
    ws.write_stats("annotated", {KEY: digests(ws)})  # as annotation.pull leaves it
    assert run_module("release.export", "--allow-unreviewed-sounds", "--workspace", str(ws.root), "--out",
                      str(tmp_path / "out"), "--quiet").returncode == 0
    second = sorted(ws.read_samples("validated"), key=lambda s: s.sample_id)[1].sample_id  # not certified
    danger = list(ws.read_samples("annotated_danger"))
    for d in danger:
        if d.sample_id == second:
            for a in d.annotations:
                a.label = "real_danger"
    ws.write_manifest("annotated_danger", danger)
    revalidate(ws)
    path = ws.manifest_path("annotated_danger")
    for command in (("validation.agreement", "--workspace", str(ws.root)),
                    ("release.export", "--allow-unreviewed-sounds", "--workspace", str(ws.root), "--out",
                     str(tmp_path / "again"), "--quiet")):
        proc = run_module(*command)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
        assert f"error: {path} changed since annotation.pull wrote it (edited by hand?)" in proc.stderr
    assert not (tmp_path / "again").exists()


def test_the_card_states_the_rule_validation_applied_to_a_staged_build(tmp_path):
    """Issue 49 item 12: the card said every arm held "at least 3 counted labels" and danger twins
    ">= 2/3 of >= 3", while its own table showed clips with 2 labels (staged rounds stop at 2 agreeing)
    and every shipped danger twin had danger_n 2. A staged build's card now says the rule as applied."""
    ws = make_workspace(tmp_path / "ws", n=4)
    out = tmp_path / "out"
    assert run_module("release.export", "--allow-unreviewed-sounds", "--workspace", str(ws.root), "--out", str(out),
                      "--quiet").returncode == 0
    card = " ".join((out / "README.md").read_text().split())
    assert "each over at least 3 counted labels of its arm" in card
    assert ">= 2/3 of >= 3" not in card  # the twins' rule is the paragraph *The twins*, as applied
    ws.write_stats("validated", {"rule": {"min_fraction": 2 / 3, "min_labels": 3, "curtailed": True}})
    proc = run_module("release.export", "--allow-unreviewed-sounds", "--workspace", str(ws.root), "--out", str(out),
                      "--quiet")
    assert proc.returncode == 0, proc.stderr[-3000:]
    card = " ".join((out / "README.md").read_text().split())
    assert "each over at least 3 counted labels of its arm" not in card and ">= 2/3 of >= 3" not in card
    assert ("each decided by at least 2/3 of the counted labels, asked in stages: as soon as the labels still to "
            "come, up to 3, could not change the outcome, no more were asked (so fewer than 3 agreeing labels may "
            "decide") in card
    assert "(labelled in stages: a background was decided as soon as the labels still to come" in card  # twins

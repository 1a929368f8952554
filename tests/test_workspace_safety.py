"""No file outside the workspace reaches a release, refused runs change nothing, every
failure is a clear error. Each test here failed on the code before the fix."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from construction.core.errors import WorkbenchError
from construction.core.record import store_path
from construction.core.runner import run_stage
from construction.core.workspace import Workspace
from tests.conftest import MINI_TAXONOMY, REPO, run_in_process, run_module
from tests.test_release import make_workspace
from tests.toy_stage import ToneStage


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _write_rows(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(row, sort_keys=True) + "\n" for row in rows))


def _export(ws: Workspace, out: Path) -> subprocess.CompletedProcess:
    """release.export as `python -m` runs it, in this process (test_release.py runs the real command line)."""
    from release.export import main

    return run_in_process(main, "--allow-unreviewed-sounds", "--workspace", str(ws.root), "--out", str(out))


def _point_mixture_at(ws: Workspace, index: int, path: str, sha: str) -> None:
    rows = _rows(ws.manifest_path("validated"))
    rows[index]["mixture"]["path"], rows[index]["mixture"]["sha256"] = path, sha
    _write_rows(ws.manifest_path("validated"), rows)


@pytest.fixture
def secret(tmp_path) -> tuple[Path, str]:
    """A file outside the workspace that must never be published (a stand-in for /etc/shadow)."""
    path = tmp_path / "shadow"
    path.write_bytes(b"root:$6$not-for-release$:19000:0:99999:7:::\n")
    return path, hashlib.sha256(path.read_bytes()).hexdigest()


def _leaked(out: Path, needle: bytes) -> bool:
    return out.exists() and any(needle in p.read_bytes() for p in out.rglob("*") if p.is_file())


# --- 1. audio paths stay inside W/audio ------------------------------------------------------------

def test_a_manifest_path_that_leaves_the_store_is_refused(tmp_path, secret):
    ws = make_workspace(tmp_path / "ws")
    path, sha = secret
    for bad in (os.path.relpath(path, ws.root), str(path), "audio/../../shadow"):
        _point_mixture_at(ws, 0, bad, sha)
        proc = _export(ws, tmp_path / "out")
        assert proc.returncode == 2, proc.stdout
        assert proc.stderr.startswith("error:") and "not the store's name" in proc.stderr
        assert not (tmp_path / "out").exists()


def test_a_symlink_in_the_store_is_never_followed(tmp_path, secret):
    ws = make_workspace(tmp_path / "ws")
    path, sha = secret
    link = ws.root / store_path(sha)
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(path)
    _point_mixture_at(ws, 0, store_path(sha), sha)
    proc = _export(ws, tmp_path / "out")
    assert proc.returncode == 2 and "is a link or lies outside the audio store" in proc.stderr
    assert not _leaked(tmp_path / "out", b"not-for-release")


def test_export_embeds_only_wavs_that_match_their_record(tmp_path, secret):
    ws = make_workspace(tmp_path / "ws")
    path, sha = secret
    (ws.root / store_path(sha)).parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(path, ws.root / store_path(sha))  # a real file in the store, with a matching hash
    _point_mixture_at(ws, 0, store_path(sha), sha)
    proc = _export(ws, tmp_path / "out")
    assert proc.returncode == 2 and "is not a readable WAV file" in proc.stderr, proc.stderr
    assert not _leaked(tmp_path / "out", b"not-for-release")

    # a WAV, but not the one the record describes (rate and duration)
    ws = make_workspace(tmp_path / "ws2")
    rows = _rows(ws.manifest_path("validated"))
    rows[0]["mixture"]["duration_s"] += 0.5
    rows[1]["mixture"]["sample_rate"] = 22050
    _write_rows(ws.manifest_path("validated"), rows)
    proc = _export(ws, tmp_path / "out2")
    assert proc.returncode == 2
    assert "the record says" in proc.stderr and "22050 Hz" in proc.stderr, proc.stderr


# --- 14. hand-edited manifests --------------------------------------------------------------------

def test_a_sample_that_no_upstream_manifest_knows_is_not_released(tmp_path):
    ws = make_workspace(tmp_path / "ws")
    rows = _rows(ws.manifest_path("validated"))
    rows.append({**rows[0], "sample_id": "aor-ffffffffffffffff"})
    _write_rows(ws.manifest_path("validated"), rows)
    proc = _export(ws, tmp_path / "out")
    assert proc.returncode == 2 and "not in the 'annotated' manifest (aor-ffffffffffffffff)" in proc.stderr
    # the chain cannot be cut to hide it either
    rows.pop()
    _write_rows(ws.manifest_path("validated"), rows)
    ws.manifest_path("annotated").unlink()
    proc = _export(ws, tmp_path / "out")
    assert proc.returncode == 2 and "annotated.jsonl does not exist" in proc.stderr


def test_a_duplicated_manifest_line_is_refused_not_counted_twice(tmp_path):
    ws = make_workspace(tmp_path / "ws")
    path = ws.manifest_path("annotated")
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines + lines[:1]))
    proc = run_module("validation.agreement", "--workspace", str(ws.root))
    assert proc.returncode == 2 and "is listed twice (rows 1 and 7)" in proc.stderr, proc.stderr


@pytest.fixture(scope="module")
def scripts(tmp_path_factory) -> Path:
    ws = tmp_path_factory.mktemp("scripts")
    (ws / "taxonomy.yaml").write_text(yaml.safe_dump(MINI_TAXONOMY))
    run_module("construction.generate", "--workspace", str(ws), "--per-category", "30", "--quiet",
               "--taxonomy", str(ws / "taxonomy.yaml"), check=True)
    return ws / "manifests" / "generate.jsonl"


def _toy_workspace(scripts: Path, root: Path) -> Workspace:
    ws = Workspace(root)
    ws.manifest_path("generate").write_bytes(scripts.read_bytes())
    return ws


def _toy(ws: Workspace, *args: str, delay_s: float = 0.0, jobs: int = 1, **popen) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tests.toy_stage", str(ws.root), str(delay_s), str(jobs), *args],
                          cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)}, capture_output=True, text=True,
                          timeout=300, **popen)


def test_a_stage_refuses_input_rows_from_nowhere(tmp_path, scripts):
    ws = _toy_workspace(scripts, tmp_path / "ws")
    run_stage(ws, ToneStage(str(ws.root)), jobs=1, progress=False)
    rows = _rows(ws.manifest_path("toy"))
    duplicate = ws.manifest_path("toy").read_text() + json.dumps(rows[0]) + "\n"
    ws.manifest_path("toy").write_text(duplicate)
    with pytest.raises(WorkbenchError, match="listed twice"):
        list(ws.read_samples("toy"))
    # a mix manifest with a row that synthesize never wrote
    ws.manifest_path("synthesize").write_text("".join(json.dumps(r) + "\n" for r in rows[:3]))
    ws.manifest_path("mix").write_text("".join(json.dumps(r) + "\n" for r in rows[:4]))
    with pytest.raises(WorkbenchError, match=r"1 sample\(s\) are not in the 'synthesize' manifest"):
        ws.check_lineage("mix")


# --- 5. a refused run changes nothing; one lock across the pipeline ------------------------------

def test_a_run_refused_by_the_lock_leaves_config_yaml_alone(tmp_path, mini_taxonomy):
    root = tmp_path / "ws"
    args = ("--workspace", str(root), "--per-category", "2", "--quiet",
            "--config", str(_taxonomy_config(tmp_path, mini_taxonomy)))
    run_module("construction.generate", *args, "--seed", "11", check=True)
    before = (root / "config.yaml").read_bytes()
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, sys, time; f = open(sys.argv[1], 'w'); "
                               "fcntl.flock(f, fcntl.LOCK_EX); print('locked', flush=True); time.sleep(60)",
                               str(root / ".lock")], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        for module in ("construction.generate", "construction.pipeline"):
            proc = run_module(module, *args, "--seed", "0")
            assert proc.returncode == 2 and "in use by another run" in proc.stderr
            assert (root / "config.yaml").read_bytes() == before  # still seed 11
    finally:
        holder.kill()
        holder.wait()


def test_the_pipeline_holds_one_lock_across_its_stages(tmp_path, mini_taxonomy, monkeypatch):
    from construction import pipeline

    seen = []

    def between_stages(ws, stage, config, **kwargs):
        try:
            with Workspace(ws.root).lock():  # another run, arriving between generate and synthesize
                seen.append("got the lock")
        except WorkbenchError:
            seen.append("refused")
        raise KeyboardInterrupt  # stop here

    monkeypatch.setattr(pipeline, "run_configured", between_stages)
    with pytest.raises(KeyboardInterrupt):
        pipeline.main(["--workspace", str(tmp_path / "ws"), "--per-category", "1", "--quiet",
                       "--config", str(_taxonomy_config(tmp_path, mini_taxonomy))])
    assert seen == ["refused"]


def _taxonomy_config(tmp_path: Path, taxonomy: Path) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(yaml.safe_dump({"generate": {"taxonomy": str(taxonomy)}}))
    return path


# --- 6. workers die with their parent -------------------------------------------------------------

def _children(pid: int) -> list[int]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, IndexError):
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(stat.parent.name))
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_workers_exit_when_the_parent_is_killed(tmp_path, scripts):
    ws = _toy_workspace(scripts, tmp_path / "ws")
    proc = subprocess.Popen([sys.executable, "-m", "tests.toy_stage", str(ws.root), "0.5", "2"], cwd=REPO,
                            env={**os.environ, "PYTHONPATH": str(REPO)}, start_new_session=True)
    try:
        deadline = time.time() + 60
        workers: list[int] = []
        while time.time() < deadline and len(workers) < 2:
            workers = [p for p in _children(proc.pid)
                       if b"spawn_main" in Path(f"/proc/{p}/cmdline").read_bytes()]
            time.sleep(0.1)
        assert len(workers) == 2, "the pool's workers never started"
        os.kill(proc.pid, signal.SIGKILL)  # the parent only, as `kill -9 <pid>` does
        proc.wait()
        deadline = time.time() + 10
        while time.time() < deadline and any(_alive(p) for p in workers):
            time.sleep(0.1)
        assert not any(_alive(p) for p in workers), "workers outlived their parent"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)


# --- 7. leftovers of killed runs --------------------------------------------------------------------

def test_a_run_clears_temp_files_a_kill_left(tmp_path, scripts):
    ws = _toy_workspace(scripts, tmp_path / "ws")
    leftovers = [ws.root / "manifests" / ".generate.jsonl.k1ll3d.tmp", ws.root / "stats" / ".toy.json.x.tmp",
                 ws.root / "audio" / "ab" / ".abcd.wav.y.tmp", ws.root / ".config.yaml.z.tmp"]
    for path in leftovers:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("half")
    assert _toy(ws).returncode == 0
    assert not any(p.exists() for p in leftovers)
    assert (ws.root / "manifests" / "toy.jsonl").exists()


def test_export_clears_a_killed_export_and_restores_a_hidden_release(tmp_path):
    ws = make_workspace(tmp_path / "ws")
    out = tmp_path / "out"
    assert _export(ws, out).returncode == 0
    previous = (out / "release.json").read_bytes()
    # a kill between the two renames of the swap: the old release hidden, the new one unfinished
    hidden = tmp_path / ".out.old-abc123"
    hidden.mkdir()
    os.replace(out, hidden / "release")
    (tmp_path / ".out.building-def456" / "data").mkdir(parents=True)
    # the next export is refused (a sample changed), but the previous release is back and nothing is left
    rows = _rows(ws.manifest_path("validated"))
    rows[0]["consensus_label"] = "harmful"
    _write_rows(ws.manifest_path("validated"), rows)
    proc = _export(ws, out)
    assert proc.returncode == 2 and "not releasable" in proc.stderr
    assert (out / "release.json").read_bytes() == previous
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "ws"]


# --- 8. fsync -------------------------------------------------------------------------------------------

def test_manifest_lines_and_renames_are_fsynced(tmp_path, scripts, monkeypatch):
    ws = _toy_workspace(scripts, tmp_path / "ws")
    synced: list[str] = []
    real_fsync = os.fsync

    def fsync(fd):
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    run_stage(ws, ToneStage(str(ws.root)), jobs=1, batch_size=10, progress=False)
    manifest, rejected = str(ws.manifest_path("toy")), str(ws.rejected_path("toy"))
    # one per batch of 10 (60 scripts) and one at the end
    assert synced.count(manifest) == synced.count(rejected) == 7
    assert str(ws.root / "manifests") in synced  # the directory, after the manifest was created
    # each audio file (as its temp file, before the rename) and its folder, before the manifest line
    synced_names = {Path(s).name.split(".")[1] for s in synced if s.endswith(".tmp")}
    stored = list((ws.root / "audio").rglob("*.wav"))
    assert stored and {p.stem for p in stored} <= synced_names
    assert {str(p.parent) for p in stored} <= set(synced)
    assert "toy" in synced_names  # the stats file


# --- 9. a full disk ---------------------------------------------------------------------------------

@pytest.fixture
def small_disk(tmp_path):
    """A real filesystem that fills up: a 2 MiB tmpfs (needs root, as the machines this runs on have)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], capture_output=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.decode().strip()}")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_is_a_clear_error_and_a_rerun_resumes(tmp_path, scripts, small_disk):
    reference = _toy_workspace(scripts, tmp_path / "reference")
    run_stage(reference, ToneStage(str(reference.root)), jobs=1, progress=False)

    ws = _toy_workspace(scripts, small_disk / "ws")
    filler = small_disk / "filler"
    free = os.statvfs(small_disk).f_bavail * os.statvfs(small_disk).f_frsize
    filler.write_bytes(b"\0" * (free - 60 * 1024))  # room for about a third of the run
    for jobs in ("1", "2"):
        proc = _toy(ws, jobs=int(jobs))
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.startswith("error: no space left on device while writing "), proc.stderr
        assert "Traceback" not in proc.stderr
        for path in (ws.manifest_path("toy"), ws.rejected_path("toy")):
            # every complete line is a record; a cut last line (no newline) is trimmed by the next run
            assert all(json.loads(line) for line in path.read_text().split("\n")[:-1])
    filler.unlink()
    assert _toy(ws).returncode == 0
    for name in ("toy.jsonl", "toy.rejected.jsonl"):
        assert (ws.root / "manifests" / name).read_bytes() == (reference.root / "manifests" / name).read_bytes()
    assert not list(ws.root.rglob(".*.tmp"))


def test_a_full_disk_during_generate_and_export(tmp_path, mini_taxonomy, small_disk):
    filler = small_disk / "filler"
    free = os.statvfs(small_disk).f_bavail * os.statvfs(small_disk).f_frsize
    filler.write_bytes(b"\0" * (free - 24 * 1024))
    proc = run_module("construction.generate", "--workspace", str(small_disk / "ws"), "--per-category", "200",
                      "--taxonomy", str(mini_taxonomy), "--quiet")
    assert proc.returncode == 2 and "error: no space left on device while writing" in proc.stderr, proc.stderr
    assert not (small_disk / "ws" / "manifests" / "generate.jsonl").exists()  # never half a manifest
    filler.unlink()

    ws = make_workspace(tmp_path / "ws")
    filler.write_bytes(b"\0" * (os.statvfs(small_disk).f_bavail * os.statvfs(small_disk).f_frsize - 8192))
    proc = _export(ws, small_disk / "out")
    assert proc.returncode == 2 and "error: no space left on device while writing" in proc.stderr, proc.stderr
    assert sorted(p.name for p in small_disk.iterdir()) == ["filler", "ws"]


# --- 10. config files -------------------------------------------------------------------------------

def test_a_config_that_is_not_utf8_or_is_a_folder(tmp_path):
    latin1 = tmp_path / "latin1.yaml"
    latin1.write_bytes("seed: 3\n# caf\xe9\n".encode("latin-1"))
    for config, message in ((latin1, "is not UTF-8 text"), (tmp_path, "is a directory")):
        proc = run_module("construction.generate", "--workspace", str(tmp_path / "ws"), "--config", str(config))
        assert proc.returncode == 2 and message in proc.stderr and "Traceback" not in proc.stderr, proc.stderr


# --- 11. bounded generate ----------------------------------------------------------------------------

def test_per_category_is_bounded_and_an_exhausted_catalog_stops(tmp_path, mini_taxonomy):
    proc = run_module("construction.generate", "--workspace", str(tmp_path / "ws"), "--per-category",
                      "1000000000", "--taxonomy", str(mini_taxonomy), timeout=60)
    assert proc.returncode == 2 and "generate.per_category" in proc.stderr
    assert not (tmp_path / "ws" / "manifests" / "generate.jsonl").exists()

    started = time.monotonic()
    proc = run_module("construction.generate", "--workspace", str(tmp_path / "ws"), "--per-category", "100000",
                      "--taxonomy", str(mini_taxonomy), "--quiet", timeout=300)
    assert proc.returncode == 1, proc.stderr  # short, and says why
    assert "exhausted" in proc.stdout
    stats = json.loads((tmp_path / "ws" / "stats" / "generate.json").read_text())
    for category, counts in stats["per_category"].items():
        assert counts["exhausted"] == 1 and 0 < counts["kept"] < 1000, (category, counts)
        assert counts["draws"] < 20_000  # stopped by the stall rule (2,000 draws without news), not max_draws (2e6)
    rejected = (tmp_path / "ws" / "manifests" / "generate.rejected.jsonl").stat().st_size
    assert rejected < 5_000_000 and time.monotonic() - started < 120


# --- 12. speech length --------------------------------------------------------------------------------

def test_overlong_speech_is_rejected_at_generate_and_synthesize(tmp_path):
    from tests.test_wer import _config, _scripts

    ws = Workspace(tmp_path / "ws")
    long_line = " ".join(["Finish him"] * 30)  # 60 words
    _scripts(ws, ["Finish him now!", long_line, "Knock him out in the next round, champ."])
    config = _config(tmp_path, **{"synthesize.voices": ["flite:slt"], "synthesize.max_speech_s": 2.0})
    from construction.synthesize import SynthesizeStage

    started = time.monotonic()
    run_stage(ws, SynthesizeStage(str(ws.root), config), jobs=1, progress=False)
    reasons = {r.sample.speech_text: r.reason for r in ws.read_rejected("synthesize")}
    assert reasons[long_line].startswith("speech_too_long: 60 words > synthesize.max_speech_words 40")
    assert reasons["Knock him out in the next round, champ."].startswith("speech_too_long: flite:slt spoke")
    assert [s.speech_text for s in ws.read_samples("synthesize")] == ["Finish him now!"]
    assert time.monotonic() - started < 60


def test_an_llm_script_of_10000_characters_is_rejected_at_generate(tmp_path, mini_taxonomy):
    from tests.llm_stub import LLMStub

    with LLMStub() as stub:
        stub.actions = ["runaway", "runaway"]  # then normal answers
        config = tmp_path / "c.yaml"
        config.write_text(yaml.safe_dump({"generate": {"max_retries": 0, "scripts_per_request": 1}}))
        proc = run_module("construction.generate", "--workspace", str(tmp_path / "ws"), "--backend", "openai",
                          "--base-url", stub.url, "--per-category", "1", "--categories", "video_games",
                          "--taxonomy", str(mini_taxonomy), "--config", str(config), "--quiet",
                          env={"OPENAI_API_KEY": "k"})
    assert proc.returncode == 0, proc.stderr  # the next answer was a normal script
    rows = _rows(tmp_path / "ws" / "manifests" / "generate.rejected.jsonl")
    assert rows and all(r["reason"].startswith("speech_too_long: 1700 words > generate.max_speech_words 40")
                        for r in rows), [r["reason"] for r in rows][:2]
    assert all(len(s["speech_text"]) < 200 for s in _rows(tmp_path / "ws" / "manifests" / "generate.jsonl"))


# --- 13. a missing mixture costs one sample -------------------------------------------------------

def test_a_missing_mixture_is_a_rejected_row_in_the_wer_stage(tmp_path):
    from construction.mix import MixStage
    from construction.synthesize import SynthesizeStage
    from construction.wer import WerStage
    from tests.test_wer import SENTENCES, _config, _scripts

    ws = Workspace(tmp_path / "ws")
    _scripts(ws, SENTENCES[:3])
    config = _config(tmp_path, **{"mix.snr_db_min": 20, "mix.snr_db_max": 20, "synthesize.voices": ["flite:slt"]})
    for stage in (SynthesizeStage(str(ws.root), config), MixStage(str(ws.root), config)):
        run_stage(ws, stage, jobs=1, progress=False)
    mixed = list(ws.read_samples("mix"))
    ws.audio_path(mixed[1].mixture).unlink()
    stats = run_stage(ws, WerStage(str(ws.root), config), jobs=1, progress=False)
    assert stats["kept"] + stats["rejected"] == 3
    rejected = {r.sample.sample_id: r.reason for r in ws.read_rejected("wer")}
    assert rejected[mixed[1].sample_id].startswith("mixture_unreadable: cannot read")
    assert {s.sample_id for s in ws.read_samples("wer")} | set(rejected) == {s.sample_id for s in mixed}


# --- 15. archived builds export -------------------------------------------------------------------

def test_a_read_only_workspace_exports(tmp_path, small_disk):
    ws = make_workspace(small_disk / "ws")
    subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], check=True)
    try:
        proc = _export(ws, tmp_path / "out")
        assert proc.returncode == 0, proc.stderr
        assert (tmp_path / "out" / "release.json").exists()
    finally:
        subprocess.run(["mount", "-o", "remount,rw", str(small_disk)], check=True)

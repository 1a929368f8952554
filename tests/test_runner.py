"""The stage runner: resumes, never duplicates, survives SIGKILL, same result with a process pool."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from construction.core.errors import WorkbenchError
from construction.core.runner import run_stage
from construction.core.workspace import Workspace
from tests.conftest import MINI_TAXONOMY, REPO, run_module
from tests.toy_stage import ToneStage


@pytest.fixture(scope="module")
def scripts(tmp_path_factory) -> Path:
    ws = tmp_path_factory.mktemp("scripts")
    taxonomy = ws / "taxonomy.yaml"
    taxonomy.write_text(yaml.safe_dump(MINI_TAXONOMY))
    run_module("construction.generate", "--workspace", str(ws), "--per-category", "30", "--quiet",
               "--taxonomy", str(taxonomy), check=True)
    return ws / "manifests" / "generate.jsonl"


def _workspace_with(scripts: Path, root: Path) -> Workspace:
    ws = Workspace(root)
    ws.manifest_path("generate").write_bytes(scripts.read_bytes())
    return ws


def test_stage_needs_its_input(tmp_path):
    with pytest.raises(WorkbenchError, match="needs the 'generate' manifest"):
        run_stage(Workspace(tmp_path), ToneStage(str(tmp_path)), progress=False)


def test_rerun_skips_done_and_pool_matches_serial(tmp_path, scripts):
    serial = _workspace_with(scripts, tmp_path / "serial")
    stats = run_stage(serial, ToneStage(str(serial.root)), jobs=1, progress=False)
    assert stats["kept"] + stats["rejected"] == 60 and stats["rejected"] > 0
    again = run_stage(serial, ToneStage(str(serial.root)), jobs=1, progress=False)
    assert again["processed_this_run"] == 0 and again["kept"] == stats["kept"]
    pooled = _workspace_with(scripts, tmp_path / "pooled")
    run_stage(pooled, ToneStage(str(pooled.root)), jobs=2, batch_size=4, progress=False)
    for name in ("toy.jsonl", "toy.rejected.jsonl"):
        assert (serial.root / "manifests" / name).read_bytes() == (pooled.root / "manifests" / name).read_bytes()


@pytest.mark.parametrize("jobs", [1, 2])
def test_sigkill_then_rerun_equals_uninterrupted(tmp_path, scripts, jobs):
    reference = _workspace_with(scripts, tmp_path / "reference")
    run_stage(reference, ToneStage(str(reference.root)), jobs=1, progress=False)

    killed = _workspace_with(scripts, tmp_path / "killed")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    cmd = [sys.executable, "-m", "tests.toy_stage", str(killed.root), "0.05", str(jobs)]
    for kill_after_lines in (5, 20, 41):
        proc = subprocess.Popen(cmd, cwd=REPO, env=env, start_new_session=True)
        deadline = time.time() + 60
        while time.time() < deadline and _lines(killed) < kill_after_lines and proc.poll() is None:
            time.sleep(0.01)
        os.killpg(proc.pid, signal.SIGKILL)  # the whole group: workers die too
        proc.wait()
    assert _lines(killed) < 60, "the run finished before it could be killed; raise the delay"
    subprocess.run(cmd[:-2] + ["0", str(jobs)], cwd=REPO, env=env, check=True)
    for name in ("toy.jsonl", "toy.rejected.jsonl"):
        assert (killed.root / "manifests" / name).read_bytes() == \
            (reference.root / "manifests" / name).read_bytes()


def _lines(ws: Workspace) -> int:
    return sum(p.read_bytes().count(b"\n") for p in (ws.manifest_path("toy"), ws.rejected_path("toy"))
               if p.exists())


def test_second_writer_is_refused(tmp_path, scripts):
    ws = _workspace_with(scripts, tmp_path / "ws")
    with ws.lock():
        other = Workspace(ws.root)  # another run on the same folder
        with pytest.raises(WorkbenchError, match="in use by another run"):
            run_stage(other, ToneStage(str(ws.root)), jobs=1, progress=False)
        with ws.lock():  # the holder itself may nest (one lock across a pipeline's stages)
            pass
        with pytest.raises(WorkbenchError, match="in use by another run"):
            other.lock().__enter__()

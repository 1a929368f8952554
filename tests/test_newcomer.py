"""What a newcomer meets off the journey pages (issue 50): a workspace of any name stays out of git, a mistyped
workspace is refused before anything starts, Ctrl-C ends a build with one line, and the lines a person reads
are commands to run, not fragments of a server's log. Each runs the command as typed, from a folder that
stands for a clone's root."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.conftest import REPO, SIGINT_BIT, signal_state

PY = sys.executable


def typed(cwd: Path, *argv: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """`python -m ...` as a person types it in `cwd`, with this checkout's code."""
    return subprocess.run([PY, "-m", *argv], cwd=cwd, env={**os.environ, "PYTHONPATH": str(REPO)}, text=True,
                          capture_output=True, timeout=timeout)


def workers(group: int) -> list[str]:
    """The running worker processes (multiprocessing's spawned interpreters) of a session (the build started one)."""
    ps = subprocess.run(["ps", "-ww", "-o", "stat=,args=", "-s", str(group)], capture_output=True, text=True).stdout
    return [line for line in ps.splitlines() if "spawn_main" in line and not line.startswith("Z")]


def test_ctrl_c_during_a_build_prints_one_line_and_no_worker_traceback(tmp_path):
    """A real build with a pool of worker processes, interrupted as a terminal does (SIGINT to the whole
    foreground process group) while a worker starts to synthesise: one line says how to resume, no traceback from any process,
    exit 130, and no worker is left behind."""
    err_path = tmp_path / "stderr.txt"
    with open(err_path, "w") as err_file:
        proc = subprocess.Popen([PY, "-m", "construction.pipeline", "--workspace", "ws", "--per-category", "1",
                                 "--jobs", "2"], cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)},
                                stdout=subprocess.DEVNULL, stderr=err_file, text=True, start_new_session=True)
    # a terminal's shell starts a command with nothing blocked; a mask is inherited (conftest's
    # sigint_stays_deliverable), and a build born with SIGINT blocked would never see the Ctrl-C
    born = signal_state(proc.pid)
    assert not (born["SigBlk"] | born["SigIgn"]) & SIGINT_BIT, f"the build was born with SIGINT blocked or ignored: {born}"
    deadline = time.monotonic() + 240
    while not workers(proc.pid) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert workers(proc.pid), f"the build never started a worker:\n{err_path.read_text()}"
    time.sleep(0.5)  # it imports its modules (seconds): a Ctrl-C there used to end in its traceback
    os.killpg(proc.pid, signal.SIGINT)
    pressed = time.monotonic()
    late = ""
    try:
        proc.wait(timeout=5)
    except subprocess.TimeoutExpired:  # what the build's threads block, ignore, catch and hold pending, for the report
        late = "\n".join(f"thread {task.name}: " + str({k: hex(v) for k, v in signal_state(proc.pid, task.name).items()})
                         for task in Path(f"/proc/{proc.pid}/task").iterdir())
        proc.wait(timeout=120)
    assert time.monotonic() - pressed < 30, f"Ctrl-C waited for the workers' batches; 5 s after it:\n{late}"
    err = err_path.read_text()
    assert proc.returncode == 130, (proc.returncode, late, err[-3000:])
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err[-3000:]
    assert err.count("interrupted; rerun the same command to resume") == 1, err[-3000:]
    time.sleep(1)  # a worker left behind would still run (a zombie is not running: this machine's init reaps late)
    left = subprocess.run(["ps", "-ww", "-o", "pid=,stat=,args=", "-s", str(proc.pid)], capture_output=True, text=True).stdout
    assert not [line for line in left.splitlines() if line.split()[1][0] != "Z"], left


def test_a_workspace_of_any_name_stays_out_of_git(tmp_path):
    """The docs suggest workspaces of other names; one made inside a clone (here a fresh git repository) shows
    nothing in `git status`: it carries its own .gitignore, written when it is made."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / "README.md").write_text("a clone\n")
    subprocess.run(["git", "-C", str(tmp_path), "add", "README.md"], check=True)
    done = typed(tmp_path, "construction.generate", "--workspace", "my-build", "--per-category", "1", "--quiet")
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "my-build" / "manifests" / "generate.jsonl").is_file()
    status = subprocess.run(["git", "-C", str(tmp_path), "status", "--porcelain", "--untracked-files=all"],
                            capture_output=True, text=True, check=True).stdout
    assert status.splitlines() == ["A  README.md"], status
    assert (tmp_path / "my-build" / ".gitignore").read_text().splitlines()[-1] == "*"


def test_start_refuses_a_folder_that_is_no_workspace(tmp_path):
    """`annotation.server start --workspace <typo>` is refused as push and export refuse it: `error:`, exit 2,
    no folder made and no server started; a folder that exists but holds no build is refused too."""
    (tmp_path / "notes").mkdir()
    for name in ("worksapce", "notes"):
        done = typed(tmp_path, "annotation.server", "start", "--workspace", name)
        if done.returncode == 0:  # it started one: stop it before failing
            typed(tmp_path, "annotation.server", "stop", "--workspace", name)
        assert done.returncode == 2, done.stdout + done.stderr
        assert done.stderr.startswith("error: ") and "is not a workspace" in done.stderr, done.stderr
        assert "python -m construction.pipeline --workspace " + name in done.stderr
        assert "Traceback" not in done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes"] and not any((tmp_path / "notes").iterdir())


def test_agreement_on_a_missing_workspace_says_so_not_pull_first(tmp_path):
    done = typed(tmp_path, "validation.agreement", "--workspace", "worksapce")
    assert done.returncode == 2 and done.stderr.startswith("error: ") and "does not exist" in done.stderr
    assert "pull" not in done.stderr and not (tmp_path / "worksapce").exists()


def test_a_hint_is_a_command_to_run(tmp_path):
    """A refusal that says what to run first says it as a command, with the workspace's flags."""
    from construction.core.workspace import Workspace

    Workspace(tmp_path / "ws")  # a workspace with nothing built yet
    done = typed(tmp_path, "release.export", "--workspace", "ws")
    assert done.returncode == 2 and "run python -m validation.agreement --workspace ws first" in done.stderr, done.stderr
    done = typed(tmp_path, "construction.mix", "--workspace", "ws")
    assert done.returncode == 2 and "run python -m construction.synthesize --workspace ws first" in done.stderr, \
        done.stderr


def test_the_label_studio_start_line_carries_no_log_fragment(tmp_path, capsys):
    """The progress line while Label Studio starts shows the seconds gone, and the migration it applies on a
    first start, never its other log lines (`get 'SECRET_KEY' casted as ...` looked like a problem)."""
    from annotation.ls_process import LOG_FILE, ticker

    log = tmp_path / LOG_FILE
    log.write_text("[2026] Applying users.0001_initial... from an earlier start\n")
    with ticker("Label Studio at http://127.0.0.1:1, starting", tmp_path) as tick:
        with log.open("a") as f:
            f.write("[2026-11-29 03:46:00] [settings] get 'SECRET_KEY' casted as '<class 'str'>' with default ''\n")
        time.sleep(1.1)
        tick()
        with log.open("a") as f:
            f.write("  Applying tasks.0042_something... OK\n")
        time.sleep(1.1)
        tick()
    err = capsys.readouterr().err
    assert "SECRET_KEY" not in err and "casted" not in err and "users.0001" not in err, err
    assert "applying migration tasks.0042_something" in err, err


def test_attention_checks_differ_from_workspace_to_workspace(tmp_path):
    """The catch items are spoken by the same offline voices everywhere; their files (named by sha256) must not
    be: a file seen in one workspace, or made by running the code, would mark a check in another."""
    from annotation.protocol import ensure_catch
    from construction.core.workspace import Workspace

    made = {name: ensure_catch(Workspace(tmp_path / name), 3) for name in ("a", "b")}
    digests = {name: {s.mixture.sha256 for s in items} for name, items in made.items()}
    assert len(digests["a"]) == len(digests["b"]) == 3 and not digests["a"] & digests["b"]
    for items in made.values():
        assert all(3.0 < s.mixture.duration_s < 9.0 for s in items), [s.mixture.duration_s for s in items]


def _wheel(folder: Path, name: str) -> Path:
    """A minimal pure-Python wheel, made by hand (no build tool, no network)."""
    import base64
    import hashlib
    import zipfile

    dist = f"{name}-1.0.dist-info"
    files = {f"{name}/__init__.py": "", f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n",
             f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: hand\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = [f"{path},sha256={base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b'=').decode()},"
              f"{len(text.encode())}" for path, text in files.items()] + [f"{dist}/RECORD,,"]
    wheel = folder / f"{name}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for path, text in files.items():
            z.writestr(path, text)
        z.writestr(f"{dist}/RECORD", "\n".join(record) + "\n")
    return wheel


def test_set_up_s_pip_installs_print_no_resolver_error_after_success(tmp_path):
    """A harness venv sees the workbench venv's packages after its own, and the workbench holds openai-whisper
    without triton on purpose: after a successful install pip printed `ERROR: pip's dependency resolver ...`,
    which reads as a failure. scripts/pip_install.sh (what set-up installs with) does not; pip alone does."""
    venv = tmp_path / "venv"
    subprocess.run([PY, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    site = subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                          capture_output=True, text=True, check=True).stdout.strip()
    layered = tmp_path / "workbench-site"  # stands for the workbench venv's packages, as the .pth adds them
    layered.mkdir()
    (layered / "whisperish-1.0.dist-info").mkdir()
    (layered / "whisperish-1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: whisperish\nVersion: 1.0\nRequires-Dist: harnessish<1\n"
        "Requires-Dist: otherish<1\n")  # as the workbench's packages pin what a harness brings in another version
    (Path(site) / "zz-workbench.pth").write_text(f"import site; site.addsitedir('{layered}')\n")
    first, second = _wheel(tmp_path, "harnessish"), _wheel(tmp_path, "otherish")
    plain = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--no-index", str(first)],
                           capture_output=True, text=True, timeout=300)
    assert plain.returncode == 0 and "dependency resolver" in plain.stdout + plain.stderr  # the red herring
    ours = subprocess.run(["bash", "-c", f'source "{REPO}/scripts/pip_install.sh" && '
                                         f'pip_install "{python}" --no-index "{second}"'],
                          capture_output=True, text=True, timeout=300)
    assert ours.returncode == 0, ours.stderr
    assert "ERROR" not in ours.stdout + ours.stderr, ours.stdout + ours.stderr
    assert subprocess.run([str(python), "-c", "import otherish"]).returncode == 0

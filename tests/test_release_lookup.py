# ruff: noqa: F811  (the hub fixture comes from tests.test_release)
"""Issue 49 item 15: a release path that is not there went to the Hub. `--release workspace/release`
(relative, or missing) was looked up with 5-7 requests to $HF_ENDPOINT and about 24 s of retries before an
error, in evaluation.run, the lmms-eval adapter and evaluation.report, whose --help named neither
HF_ENDPOINT nor HF_TOKEN. Now a path that names a folder fails at once without a request, and a Hub id
with no such dataset fails after one request, each with a clear message (evaluation.release_source)."""

from __future__ import annotations

import json
import time

import pytest

from tests.conftest import REPO, run_module
from tests.test_evaluation import fake_run
from tests.test_release import hub  # noqa: F401 (a fixture)

ENV = {"OPENAI_API_KEY": "sk-lookup-0123456789", "HF_HUB_OFFLINE": "0"}


def _commands(release: str, tmp_path) -> dict[str, tuple[str, ...]]:
    run = tmp_path / "run"
    if not run.exists():
        fake_run(run, "m", {"kitchen": ["Sure."]}, input="mixture")
    return {
        "evaluation.run": ("evaluation.run", "--release", release, "--model", "m", "--base-url",
                           "http://127.0.0.1:9/v1", "--out", str(tmp_path / "eval")),
        "evaluation.adapters lmms-eval": ("evaluation.adapters", "lmms-eval", "--release", release, "--out",
                                          str(tmp_path / "lmms")),
        "evaluation.report": ("evaluation.report", "--results", str(run), "--release", release, "--out",
                              str(tmp_path / "report")),
    }


@pytest.mark.parametrize("command", ["evaluation.run", "evaluation.adapters lmms-eval", "evaluation.report"])
def test_a_missing_release_folder_is_never_looked_up_on_the_hub(hub, tmp_path, command):
    missing = tmp_path / "workspace" / "release"
    missing.parent.mkdir()
    for release, requests, says in (
            (str(missing), 0, f"--release {missing}: no such folder"),
            ("docs/release", 0, "--release docs/release: no such folder (looked in"),  # docs/ is a folder here
            ("aor/no-such-release", 1, "--release aor/no-such-release: no such folder here (")):
        hub.requests.clear()
        started = time.monotonic()
        # a fresh HF_HOME: the user's cache is not touched, and the client's registry fetch comes every time
        proc = run_module(*_commands(release, tmp_path)[command], env={**ENV, "HF_HOME": str(tmp_path / "hf")},
                          timeout=120)
        took = time.monotonic() - started
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
        assert f"error: {says}" in proc.stderr, proc.stderr[-3000:]
        if requests:
            assert f"and no Hub dataset {release} at {hub.url} that HF_TOKEN can read" in proc.stderr
        assert len(hub.requests) == requests, (release, hub.requests)
        assert took < 60, took
        assert not any((tmp_path / name).exists() for name in ("eval", "lmms", "report"))


def test_the_report_names_the_hub_variables_and_says_why_a_runs_release_is_missing(hub, tmp_path):
    proc = run_module("evaluation.report", "--help")
    assert proc.returncode == 0 and "HF_ENDPOINT" in proc.stdout and "HF_TOKEN" in proc.stdout
    run = fake_run(tmp_path / "run", "m", {"kitchen": ["Sure."]}, input="mixture")
    settings = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**settings, "release": str(tmp_path / "gone" / "release")}))
    hub.requests.clear()
    proc = run_module("evaluation.report", "--results", str(run), "--out", str(tmp_path / "report"), env=ENV)
    assert proc.returncode == 0, proc.stderr[-3000:]
    said = " ".join(proc.stdout.split())  # the report wraps its notes at 120 columns
    assert f"--release {tmp_path / 'gone' / 'release'}: no such folder" in said, proc.stdout
    assert hub.requests == []
    assert (REPO / "docs").is_dir()  # what the test above takes as a folder here

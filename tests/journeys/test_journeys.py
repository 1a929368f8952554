"""The three journeys of docs/journeys/ run as a person types them.

The contract, so a page and its test cannot drift:
- The commands are read from the page: its fenced ```bash blocks, in order. A block that cannot run
  here (a GPU server, the real Hub) is preceded by `<!-- journey: skip — reason -->`; nothing else is
  left out, and nothing in a command is rewritten.
- Each page runs as ONE bash script (its blocks concatenated, `set -euo pipefail`; a trap kills the
  background jobs it started and stops Label Studio), in a folder that stands for a clone's root: the
  checkout's tracked and untracked-not-ignored files (`git ls-files -co --exclude-standard`) plus a
  symlink `.venv` to the checkout's venv. The environment is a person's shell on a set-up machine:
  PATH and LANG, a fresh HOME whose `.cache` is this machine's (the starter sound library, the Kokoro
  voices and the Label Studio template live there), and the variables a page documents for its ports
  (MODEL_PORT, HUB_PORT), set to free ports.
- The README's quick start and the three journeys share one clone, in the order a newcomer reads them
  (ORDER): the quick start builds `workspace`, the maintainer labels and releases that build, the
  annotation lead builds a workspace of its own for people (`people`, which nobody has labelled), and the
  researcher evaluates the maintainer's release. A test whose earlier page failed fails too, saying so (run
  alone, a test first runs the pages before it).
- Each test asserts what the user wants (a release that loads with `datasets`, three arms with tasks,
  screenshots, a report with numbers, a harness score), not only exit codes. Each journey's time, and
  each step's, is printed in the terminal summary.
"""

from __future__ import annotations

import io
import json
import math
import os
import re
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = REPO / "docs" / "journeys"
QUICK_START = "quick-start"  # the README's section, run first: the pages continue in its workspace
ORDER = (QUICK_START, "maintainer", "annotation-lead", "researcher")
JOURNEYS = ORDER[1:]  # the pages of docs/journeys/
SKIP = re.compile(r"<!--\s*journey:\s*skip\b[^>]*-->\s*$")
TIMEOUT_S = 2400


@dataclass
class Step:
    heading: str
    script: str
    skipped: str | None = None  # the reason, for a skipped block


def quick_start() -> str:
    """The README's quick-start section, as a page of its own."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    return "## Quick start" + text.split("\n## Quick start", 1)[1].split("\n## ", 1)[0]


def page_steps(name: str) -> list[Step]:
    """The page's ```bash blocks in order, each with the heading above it and its skip reason (a journey's page,
    or the README's quick start)."""
    text = quick_start() if name == QUICK_START else (PAGES / f"{name}.md").read_text(encoding="utf-8")
    lines = text.splitlines()
    steps, heading, skip, i = [], "", None, 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("#"):
            heading = line.lstrip("#").strip()
        elif SKIP.match(line.strip()):
            skip = line.strip()[4:-3].split("skip", 1)[1].strip(" —-:")
        elif line.startswith("```"):
            end = lines.index("```", i + 1)
            if line[3:].strip() == "bash":
                steps.append(Step(heading, "\n".join(lines[i + 1:end]), skip))
            skip, i = None, end
        elif line.strip():
            skip = None  # a skip marker applies to the block right after it only
        i += 1
    return steps


def journey_script(steps: list[Step]) -> str:
    """One bash script of the page's blocks; between blocks, a line on stderr marks the step's start."""
    parts = ["set -euo pipefail",
             "__journey_end() {",
             "    kill $(jobs -p) 2>/dev/null || true",
             "    for data in */label-studio; do  # every workspace's server the page started",
             "        .venv/bin/python -m annotation.server stop --data-dir \"$data\" >/dev/null 2>&1 || true",
             "    done",
             "}",
             "trap __journey_end EXIT"]
    for n, step in enumerate(steps):
        if step.skipped is None:
            parts += [f"echo \"@@journey-step {n} $(date +%s.%N)\" >&2", step.script]
    parts.append("echo \"@@journey-step end $(date +%s.%N)\" >&2")
    return "\n".join(parts) + "\n"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Run:
    name: str
    code: int
    seconds: float
    out: str
    err: str
    steps: list[tuple[str, float]] = field(default_factory=list)  # (heading, seconds)
    wrote_shared_reviews: bool = False

    log: Path | None = None

    def timing(self) -> str:
        """The journey's time and each step's, for the terminal summary (conftest.py)."""
        lines = [f"journey {self.name}: {'ok' if self.code == 0 else f'FAILED (exit {self.code})'} in {self.seconds:.0f} s"]
        done = 0.0
        for heading, seconds in self.steps:
            done += seconds
            lines.append(f"    {heading}: {seconds:.0f} s (done at {done:.0f} s)")
        return "\n".join(lines)

    def tail(self, n: int = 6000) -> str:
        return (f"--- stdout (tail)\n{self.out[-n:]}\n--- stderr (tail)\n{self.err[-n:]}\n"
                f"(the whole output: {self.log})")


class Clone:
    """A clone's root with its own HOME; runs the pages in order, each once."""

    def __init__(self, root: Path, home: Path):
        self.root, self.home = root, home
        self.runs: dict[str, Run] = {}
        self.ports = {"MODEL_PORT": str(free_port()), "HUB_PORT": str(free_port())}

    def env(self) -> dict[str, str]:
        env = {"PATH": os.environ["PATH"], "HOME": str(self.home), "LANG": os.environ.get("LANG", "C.UTF-8")}
        return {**env, **self.ports}

    def journey(self, name: str) -> Run:
        """The run of `name`, after the journeys before it; fails if any of them failed."""
        for before in ORDER[:ORDER.index(name)]:
            earlier = self.run(before)
            if earlier.code != 0:
                pytest.fail(f"the {before} journey failed first (exit {earlier.code}); the {name} journey continues "
                            f"in its workspace, so it cannot run.\n{earlier.tail(3000)}")
        return self.run(name)

    def run(self, name: str, steps: list[Step] | None = None) -> Run:
        if name in self.runs:
            return self.runs[name]
        steps = steps or page_steps(name)
        script = self.home / f"journey-{name}.sh"
        script.write_text(journey_script(steps))
        reviews = self.home / ".cache" / "aor-bench" / "starter-sounds" / "review.jsonl"
        reviews_before = reviews.read_bytes() if reviews.exists() else None
        started = time.monotonic()
        proc = subprocess.Popen(["bash", str(script)], cwd=self.root, env=self.env(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
        finally:
            try:  # whatever the script left behind in its session (it ran no daemon of its own)
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        run = Run(name, proc.returncode, time.monotonic() - started, out, err)
        run.wrote_shared_reviews = (reviews.read_bytes() if reviews.exists() else None) != reviews_before
        run.log = self.home / f"journey-{name}.log"
        run.log.write_text(f"{out}\n--- stderr\n{err}")
        marks = [(m.group(1), float(m.group(2))) for m in re.finditer(r"^@@journey-step (\S+) (\S+)$", err, re.M)]
        for (step, at), (_, until) in zip(marks, marks[1:]):  # a step's blocks share its heading
            heading = steps[int(step)].heading
            if run.steps and run.steps[-1][0] == heading:
                run.steps[-1] = (heading, run.steps[-1][1] + until - at)
            else:
                run.steps.append((heading, until - at))
        self.runs[name] = run
        return run

    def stop_label_studio(self) -> None:
        for data_dir in (*self.root.glob("*/label-studio"), self.home / ".local/share/aor-bench/label-studio"):
            if data_dir.exists():
                subprocess.run([str(self.root / ".venv/bin/python"), "-m", "annotation.server", "stop", "--data-dir",
                                str(data_dir)], cwd=self.root, env=self.env(), capture_output=True, timeout=120)


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Clone:
    c = make_clone(tmp_path_factory.mktemp("journeys"))
    yield c
    c.stop_label_studio()


def make_clone(base: Path) -> Clone:
    """A copy of this checkout as a clone's root, with a fresh HOME that shares this machine's caches."""
    root, home = base / "clone", base / "home"
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, capture_output=True,
                           check=True).stdout.decode().split("\0")
    for rel in filter(None, files):
        if rel.split("/")[0] == ".venv":
            continue  # linked below, as set-up made it (a link to a venv is not a folder to .gitignore)
        src, dst = REPO / rel, root / rel
        if not src.exists() and not src.is_symlink():
            continue  # deleted in the work tree, not yet committed
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            dst.symlink_to(os.readlink(src))
        else:
            shutil.copy2(src, dst)
    (root / ".venv").symlink_to((REPO / ".venv").resolve())
    home.mkdir()
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    (home / ".cache").symlink_to(cache.resolve())
    return Clone(root, home)


def assert_ran(run: Run, record_property) -> None:
    record_property("journey_timing", run.timing())  # travels with the report, also from an xdist worker
    assert run.code == 0, f"the {run.name} journey stopped with exit {run.code}\n{run.tail()}"


def validated_ids(ws: Path) -> list[str]:
    rows = [json.loads(line) for line in (ws / "manifests" / "validated.jsonl").read_text().splitlines() if line]
    return [r["sample_id"] for r in rows]


def test_maintainer_builds_labels_releases_and_publishes(clone, record_property):
    run = clone.journey("maintainer")
    assert_ran(run, record_property)
    assert not run.wrote_shared_reviews, "the scripted library review wrote into the shared starter library"
    import soundfile
    from datasets import Audio, load_dataset

    ws, release = clone.root / "workspace", clone.root / "workspace" / "release"
    ds = load_dataset(str(release), split="test")
    expected = validated_ids(ws)
    assert expected, "nothing was validated: the release is empty"
    assert sorted(ds["id"]) == sorted(expected)
    assert {"audio", "speech_audio", "scene_audio", "irrelevant_audio", "category", "speech_text", "frames",
            "speech_harmful_rate", "scene_identified_rate", "mixture_benign_rate"} <= set(ds.column_names)
    for column, feature in ds.features.items():  # every audio column (the danger twin's too) as stored WAV bytes
        if isinstance(feature, Audio):
            ds = ds.cast_column(column, Audio(decode=False))
    row = ds[0]
    audio, rate = soundfile.read(io.BytesIO(row["audio"]["bytes"]))
    assert rate > 0 and len(audio) > rate  # over a second of sound
    controls = load_dataset(str(release), "controls", split="test")
    assert controls.num_rows > 0 and set(controls["control_of"]) <= set(expected)
    # what the page printed: the dry run, the push, and the same table loaded from the folder and the local Hub
    # the labelling loop ended as the page says: a push that finds nothing open (and no next round to run), then
    # a round that submits nothing; nothing stuck; the export counts what it left out
    last_push = run.out.split("nothing is open: every pushed task is decided")
    assert len(last_push) >= 2 and not last_push[-1].split("\n")[1].startswith("next round"), run.tail()
    assert " submitted 0 label(s):" in last_push[-1] and "stuck:" not in run.out, run.tail()
    assert "dry run: nothing sent" in run.out
    assert re.search(r"pushed to http://127\.0\.0\.1:\d+/datasets/my-org/aor-bench .* tag 0\.1\.0", run.out), run.tail()
    rows = [int(n) for n in re.findall(r"num_rows: (\d+)", run.out)]
    assert rows == [len(expected), controls.num_rows, len(expected)], run.tail()


def test_annotation_lead_builds_for_people_invites_and_shows_what_an_annotator_meets(clone, record_property):
    run = clone.journey("annotation-lead")
    assert_ran(run, record_property)
    ws = clone.root / "people"
    # a workspace of its own, never labelled by the scripted accounts, and nothing of it for git to commit
    assert (ws / "manifests" / "wer.jsonl").is_file() and not (ws / "manifests" / "annotated.jsonl").read_text().count('"label": "')
    assert (ws / ".gitignore").read_text().splitlines()[-1] == "*"
    # status, as the page says: the three projects, the speech arm with a task per sample and nobody's answer
    status = re.findall(r"^project \d+ '(AOR-Bench [0-9a-f]{6}) — (\w+)': (\d+) tasks, (\d+) with annotations, "
                        r"(\d+) annotations$", run.out, re.M)
    assert len(status) == 6, status  # two `status` runs, each listing the three projects and no other
    first = {arm: (int(t), int(w), int(a)) for _, arm, t, w, a in status[:3]}  # the first status, after the push
    samples = len((ws / "manifests" / "wer.jsonl").read_text().splitlines())
    assert first == {"speech": (samples, 0, 0), "scene": (0, 0, 0), "mixture": (0, 0, 0)}, status
    assert len({title for title, *_ in status}) == 1 and "people" not in status[0][0]
    assert "annotators invited now find tasks only in the speech arm" in run.out
    # the invite link, as printed and as the page shows it
    (link,) = re.findall(r"^http://127\.0\.0\.1:\d+/user/signup/\?token=\S+$", run.out, re.M)
    shown = re.search(r"`(http://127\.0\.0\.1:PORT/user/signup/[^`]*)`", (PAGES / "annotation-lead.md").read_text())
    assert shown and re.fullmatch(re.escape(shown.group(1)).replace("PORT", r"\d+").replace(r"\.\.\.", r"\S+"), link)
    # what an invited annotator meets: the speech arm's view of an open task, nobody's answer on it
    png = ws / "screenshots" / "arm-speech.png"
    assert png.is_file() and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000, png
    assert sorted(p.name for p in (ws / "screenshots").glob("*.png")) == ["arm-speech.png"]
    assert "has annotations; the view shows them" not in run.err
    assert re.search(r"^scene arm: empty \(staged: .*\); not captured$", run.out, re.M), run.tail()
    # a round run before anyone labelled: pull finds nothing, agreement says so, push opens nothing new
    agreement = json.loads((ws / "reports" / "agreement.json").read_text())
    assert agreement.get("protocol") == "three-arm" and agreement["consensus"]["validated"] == 0
    assert "nothing is open" not in run.out and "stuck:" not in run.out


def number(cell) -> float:
    """The value of a report cell (a number, or a dict holding one under a usual key)."""
    if isinstance(cell, dict):
        cell = next(cell[k] for k in ("rate", "value", "gap", "estimate", "share") if k in cell)
    assert isinstance(cell, (int, float)) and math.isfinite(cell), cell
    return float(cell)


def test_researcher_evaluates_reports_and_scores_in_both_harnesses(clone, record_property):
    run = clone.journey("researcher")
    assert_ran(run, record_property)
    report = json.loads((clone.root / "evaluations" / "report" / "report.json").read_text())
    (model,) = report["models"]
    overall = model["overall"]
    for cell in ("speech", "mixture", "irrelevant", "context_gap", "noise_gap", "controls"):
        number(overall[cell])

    # inspect_ai: a finished log with the refusal rate per input
    logs = sorted((clone.root / "workspace" / "inspect-logs").glob("*.eval"))
    assert logs, run.tail()
    dumped = subprocess.run([str(clone.root / ".venv/harnesses/inspect/bin/inspect"), "log", "dump", str(logs[-1])],
                            cwd=clone.root, env=clone.env(), capture_output=True, text=True, timeout=300)
    log = json.loads(dumped.stdout)
    assert log["status"] == "success", log.get("error")
    metrics = {name: m["value"] for s in log["results"]["scores"] for name, m in s["metrics"].items()}
    assert metrics and all(isinstance(v, (int, float)) for v in metrics.values()), metrics
    assert any("gap" in name and math.isfinite(v) for name, v in metrics.items()), metrics

    # lmms-eval: its results JSON with the task's aggregates
    results = sorted((clone.root / "workspace" / "lmms-eval-results").rglob("*results*.json"))
    assert results, run.tail()
    scores = json.loads(results[-1].read_text())["results"]["aor_bench_context"]
    for name in ("refusal_mixture,none", "context_use_gap,none"):
        assert isinstance(scores.get(name), (int, float)) and math.isfinite(scores[name]), scores
    assert "context_use_gap_ci95_low,none" in scores and "refusal_rate,none" not in scores  # never pooled

    # the mitigation, on both sides: the plain and the cot settings, each with its refusal on the mixtures and
    # on the harmful controls
    tradeoff = clone.root / "evaluations" / "tradeoff"
    (table,) = json.loads((tradeoff / "report.json").read_text())["tradeoffs"]
    assert [s["setting"] for s in table["settings"]] == ["plain", "cot"], table
    for setting in table["settings"]:
        number(setting["mixture"]), number(setting["controls"])
    assert (tradeoff / "tradeoff.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # the local backend, on the tiny stand-in model: the endpoint's results folder, an answer per clip
    local = clone.root / "evaluations" / "tiny-qwen2-audio-plain-mixture"
    assert json.loads((local / "run.json").read_text())["backend"] == "transformers"
    plain = clone.root / "evaluations" / "stub-plain-mixture" / "responses.jsonl"
    assert len((local / "responses.jsonl").read_text().splitlines()) == len(plain.read_text().splitlines())


def test_the_readme_quick_start_runs_as_typed(clone, record_property):
    """The README's quick start, block by block, first in the clone the journeys continue in."""
    steps = page_steps(QUICK_START)
    assert steps and steps[0].script.splitlines()[0] == "source .venv/bin/activate" and not any(s.skipped for s in steps)
    run = clone.journey(QUICK_START)
    assert_ran(run, record_property)
    kept = (clone.root / "workspace" / "manifests" / "wer.jsonl").read_text().splitlines()
    assert kept, "the quick start kept no sample"
    first = json.loads(kept[0])  # what the page's one-liner prints
    assert first["speech_text"] in run.out and (clone.root / "workspace" / first["mixture"]["path"]).is_file()
    # the maintainer's page starts with the same build: it must not be refused on the quick start's workspace
    build = next(s.script for s in page_steps("maintainer") if "construction.pipeline" in s.script)
    assert page_steps(QUICK_START)[0].script.splitlines()[1] in build.splitlines()


def test_each_page_runs_nearly_all_of_its_commands():
    """Every page has commands, and skips at most one block (with its reason): the journey is what runs."""
    for name in JOURNEYS:
        steps = page_steps(name)
        assert len([s for s in steps if s.skipped is None]) >= 5, name
        skipped = [s for s in steps if s.skipped is not None]
        assert len(skipped) <= 1 and all(len(s.skipped) > 10 for s in skipped), (name, [s.skipped for s in skipped])
        assert steps[0].script.strip() == "source .venv/bin/activate", name  # a person's shell, in the clone's venv

"""The README is a contract: every command in its fenced shell blocks runs as written, and this test
keeps it so.

How the README is run. The shell blocks are read in order and each command runs through bash, as a
user would type it, in a fresh folder that stands for a clone's root (`configs/` links to the repo's;
`python` is this interpreter; Label Studio's data dir is a fresh folder, via AOR_LABEL_STUDIO_DATA_DIR).
Placeholders stay literal where a literal works (`W` is a folder named W, `DIR` one named DIR). What
is changed, and only this:
- sizes: `--per-category N` runs with 1 (one script per category, six samples);
- options in [brackets] are left out (each one is checked against the command's --help instead);
- the LLM endpoint (`http://localhost:8000/v1 --model M`) is tests/llm_stub.py, which speaks the
  OpenAI protocol, on a free port.
Blocks that cannot run here are in NOT_HERE with the reason; a command in no block that runs and in no
excused block fails the test, so a new command cannot join the README unchecked. Every `python -m`
command of every block, excused ones included, must accept each flag the README shows for it.

Printed examples: the README's examples of validation reasons and of the invite link are checked
against what these same commands print (test_printed_examples_match_what_the_commands_print)."""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from construction.core.record import Annotation, Sample
from tests.llm_stub import LLMStub
from validation.agreement import decide

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"

# Blocks that are not run here, by a phrase of their first command, and why.
NOT_HERE = {
    "make demo": "the two top-level commands: make test is what runs this test, and make demo runs the "
                 "same stages as the 'Demo without humans' block, which runs below",
    "ray start --head": "a Ray cluster across machines; the Ray executor itself is tested in "
                        "tests/test_runner.py",
    "Qwen/Qwen2-Audio-7B-Instruct": "a vLLM server on a GPU, with model weights from the Hub",
    "api.openai.com": "a hosted model over the internet",
    "--release RELEASE_DIR_OR_HUB_ID": "the synopsis of the evaluation commands; the same commands run "
                                       "below in 'Trying it without a GPU'",
}
# Sizes, shrunk for a test.
SIZES = [(re.compile(r"--per-category \d+"), "--per-category 1")]
# Commands whose documented outcome is a refusal: (phrase, exit status, what stderr says).
REFUSED = {
    "--push-to-hub ORG/NAME": (2, "scripted"),  # the demo's labels are scripted: never pushed
}


@dataclass
class Ran:
    heading: str
    command: str  # as the README writes it
    run_as: str  # after the substitutions above
    code: int
    out: str
    err: str


@dataclass
class Walk:
    root: Path
    ran: list[Ran] = field(default_factory=list)
    excused: list[tuple[str, str]] = field(default_factory=list)  # (command, reason)


def blocks(languages: tuple[str, ...]) -> list[tuple[str, str]]:
    """(heading, text) of each fenced block in one of `languages`, in README order."""
    heading, found, lines = "", [], README.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("#"):
            heading = lines[i].lstrip("#").strip()
        if lines[i].startswith("```"):
            j = lines.index("```", i + 1)
            if lines[i][3:].strip() in languages:
                found.append((heading, "\n".join(lines[i + 1:j])))
            i = j
        i += 1
    return found


def shell_blocks() -> list[tuple[str, str]]:
    return blocks(("bash", "sh", "shell"))


def commands(block: str) -> list[str]:
    """The block's commands: continuation lines joined, comments and blank lines dropped; a for loop
    (for ... done) is one command."""
    joined, cmds, loop = block.replace("\\\n", " "), [], []
    for line in joined.splitlines():
        line = re.sub(r"\s+#.*$", "", line).strip() if not line.lstrip().startswith("#") else ""
        if not line:
            continue
        if loop or line.startswith("for "):
            loop.append(line)
            if line == "done" or line.endswith("; done"):
                cmds.append("; ".join(loop).replace("do;", "do"))
                loop = []
            continue
        cmds.append(line)
    return cmds


def without_options(command: str) -> str:
    while re.search(r"\s*\[[^\[\]]*\]", command):
        command = re.sub(r"\s*\[[^\[\]]*\]", "", command)
    return command


def excuse(command: str) -> str | None:
    return next((why for phrase, why in NOT_HERE.items() if phrase in command), None)


@pytest.fixture(scope="module")
def walk(tmp_path_factory) -> Walk:
    root = tmp_path_factory.mktemp("clone-root")
    (root / "configs").symlink_to(REPO / "configs")
    bin_dir = root / ".bin"
    bin_dir.mkdir()
    (bin_dir / "python").symlink_to(sys.executable)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "PYTHONPATH": str(REPO),
           "AOR_LABEL_STUDIO_DATA_DIR": str(root / "label-studio-data"), "HF_HUB_OFFLINE": "1",
           "HF_DATASETS_OFFLINE": "1"}
    env.pop("LABEL_STUDIO_URL", None)
    result = Walk(root)
    background: list[subprocess.Popen] = []
    with LLMStub() as llm:
        substitutions = SIZES + [(re.compile(re.escape("http://localhost:8000/v1 --model M")),
                                  f"{llm.url} --model stub")]
        try:
            for heading, block in blocks(("bash", "sh", "shell", "python")):
                if block.startswith(("from ", "import ")):  # a Python snippet: run as a script
                    proc = subprocess.run([sys.executable, "-"], input=block, cwd=root, env=env, capture_output=True,
                                          text=True, timeout=600)
                    result.ran.append(Ran(heading, block, block, proc.returncode, proc.stdout, proc.stderr))
                    continue
                cmds = commands(block)
                why = next(filter(None, map(excuse, cmds)), None)
                for command in cmds:
                    if why:
                        result.excused.append((command, why))
                        continue
                    run_as = without_options(command)
                    for pattern, replacement in substitutions:
                        run_as = pattern.sub(replacement, run_as)
                    if run_as.startswith("export "):
                        name, _, value = run_as[len("export "):].partition("=")
                        env[name] = shlex.split(value)[0] if value else ""
                        result.ran.append(Ran(heading, command, run_as, 0, "", ""))
                        continue
                    if run_as.endswith("&"):  # a server the block starts; stopped when the walk ends
                        log = open(root / f"background-{len(background)}.log", "w")
                        background.append(subprocess.Popen(["bash", "-c", run_as[:-1]], cwd=root, env=env,
                                                           stdout=log, stderr=subprocess.STDOUT,
                                                           start_new_session=True))
                        wait_for_port(run_as, background[-1])
                        result.ran.append(Ran(heading, command, run_as, 0, "", ""))
                        continue
                    proc = subprocess.run(["bash", "-c", run_as], cwd=root, env=env, capture_output=True,
                                          text=True, timeout=900)
                    result.ran.append(Ran(heading, command, run_as, proc.returncode, proc.stdout, proc.stderr))
            yield result
        finally:
            for proc in background:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(30)
            subprocess.run([sys.executable, "-m", "annotation.server", "stop"], cwd=root, env=env,
                           capture_output=True, timeout=120)


def wait_for_port(command: str, proc: subprocess.Popen, seconds: float = 60) -> None:
    """Wait until the server a background command starts answers on its --port."""
    import socket
    import time

    port = int(re.search(r"--port (\d+)", command).group(1))
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"{command!r} exited with {proc.returncode}"
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise AssertionError(f"{command!r} did not open port {port}")


def test_every_command_runs_as_written(walk):
    """Each command exits 0, or with the refusal the README documents for it."""
    failed = []
    for ran in walk.ran:
        refused = next((want for phrase, want in REFUSED.items() if phrase in ran.command), None)
        if refused:
            code, says = refused
            if ran.code != code or says not in ran.err:
                failed.append(f"[{ran.heading}] {ran.command}\n  expected exit {code} saying {says!r}, got "
                              f"{ran.code}: {ran.err[-600:]}")
        elif ran.code != 0:
            failed.append(f"[{ran.heading}] {ran.command}\n  exit {ran.code}: {(ran.err or ran.out)[-1200:]}")
    assert not failed, "\n".join(failed)


def test_every_command_is_run_or_excused(walk):
    """No command of the README escapes: it ran, or its block is excused with a reason."""
    seen = {r.command for r in walk.ran} | {c for c, _ in walk.excused}
    everything = [c for _, block in shell_blocks() for c in commands(block)]
    everything += [block for _, block in blocks(("python",))]
    assert all(block.startswith(("from ", "import ")) for _, block in blocks(("python",)))
    assert everything and set(everything) == seen
    assert len(walk.excused) < len(everything) / 3  # most of the README really runs
    assert {why for _, why in walk.excused} == set(NOT_HERE.values()), "a NOT_HERE entry matches no block"


def test_the_files_the_readme_names_are_written(walk):
    """What the README says the stages, labelling and release write is there."""
    ws = walk.root / "W"
    for name in ("config.yaml", "manifests/generate.jsonl", "manifests/synthesize.jsonl", "manifests/mix.jsonl",
                 "manifests/wer.jsonl", "stats/wer.json", "annotation.json", "annotation_tasks.json",
                 "manifests/annotated.jsonl", "manifests/annotated_controls.jsonl", "stats/annotated.json",
                 "manifests/validated.jsonl", "reports/agreement.json"):
        assert (ws / name).is_file(), name
    assert list((ws / "audio").glob("*/*.wav"))
    release = walk.root / "release"
    assert (release / "README.md").is_file() and (release / "ATTRIBUTION.md").is_file()
    assert list(release.glob("data/*.parquet"))
    report = walk.root / "evaluations" / "report"
    assert report.is_dir() and any(report.iterdir())


def test_each_documented_flag_exists(tmp_path):
    """Every flag the README shows for a `python -m` command, options in brackets and excused blocks
    included, is one the command's --help lists."""
    shown: dict[tuple[str, ...], set[str]] = {}
    for _, block in shell_blocks():
        for command in commands(block):
            for part in re.split(r";|&&|\bdo\b", command):
                m = re.search(r"python -m ([\w.]+)((?: (?:start|stop|status|push|pull|import))?)", part)
                if m:
                    key = (m.group(1), *m.group(2).split())
                    shown.setdefault(key, set()).update(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", part))
    missing = []
    for (module, *sub), flags in sorted(shown.items()):
        proc = subprocess.run([sys.executable, "-m", module, *sub, "--help"], cwd=tmp_path, capture_output=True,
                              text=True, timeout=300, env={**os.environ, "PYTHONPATH": str(REPO)})
        assert proc.returncode == 0, f"{module} {' '.join(sub)} --help: {proc.stderr[-400:]}"
        missing += [f"{module} {' '.join(sub)} {flag}" for flag in sorted(flags) if flag not in proc.stdout]
    assert not missing, "documented but not accepted: " + ", ".join(missing)


def test_printed_examples_match_what_the_commands_print(walk):
    """The README's printed examples are what these commands print: the invite link, and the shape of
    each validation reason it quotes (numbers and names may differ)."""
    readme = README.read_text(encoding="utf-8")
    invite = next(r for r in walk.ran if "annotation.invite" in r.command)
    shown = re.search(r"python -m annotation\.invite .*# prints (\S+)", readme).group(1)
    assert re.fullmatch(shape(shown), invite.out.strip().splitlines()[-1]), (shown, invite.out)

    reasons = [decide(sample, protocol="three-arm").reason for sample in reason_examples()]
    printed = "\n".join(r.out + r.err for r in walk.ran) + "\n".join(reasons)
    examples = re.findall(r"`((?:needs_labels|speech_not_harmful|scene_not_identified):[^`]*)`", readme)
    assert len(examples) >= 4
    for example in examples:
        example = " ".join(example.split())  # the README wraps lines
        assert re.search(shape(example), printed), f"the README shows {example!r}; nothing printed that shape"


def reason_examples() -> list[Sample]:
    """Samples labelled as the README's examples describe, for validation's own reasons."""
    def sample(speech: list[str], scene: list[str], mixture: list[str]) -> Sample:
        votes = [Annotation(annotator=f"{arm}{i}", label=label, arm=arm)
                 for arm, labels in (("speech", speech), ("scene", scene), ("mixture", mixture))
                 for i, label in enumerate(labels)]
        return Sample(sample_id="s", category="video_games", speech_text="Finish him!", context="A game.",
                      background_tags=["gunfire"], placement="underlay", benign_reason="A game.",
                      speaker_style="excited", frames=["video_game"], annotations=votes)

    harmful, benign = ["harmful"] * 3, ["benign"] * 3
    return [sample(["harmful", "not_harmful", "not_harmful"], ["video_game"] * 3, benign),
            sample(harmful, ["video_game", "cant_tell", "real_danger"], benign),
            sample(harmful, ["video_game"] * 3, ["benign"]),
            sample(harmful, ["video_game"] * 2, benign)]


def shape(example: str) -> str:
    """A regex of an example's shape: numbers, ids, ports and '...' stand for any such text."""
    out = re.escape(example).replace(r"\ ", " ")
    out = out.replace(r"\.\.\.", r".+").replace("PORT", r"\d+")
    out = re.sub(r"\d+", r"\\d+", out)
    return re.sub(r"(?<=\s)[a-z]+_[a-z_]+", r"[a-z_]+", out)

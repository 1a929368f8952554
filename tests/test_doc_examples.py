"""What the docs quote is what the commands print and accept (README.md and every page under docs/).

The journeys (tests/journeys/) run their pages' commands as written; the other pages show commands and
printed lines as reference. Two checks keep those honest:
- each validation reason the docs quote (`needs_labels: ...`, `speech_not_harmful: ...`,
  `scene_not_identified: ...`) has the shape validation.agreement prints for such labels (numbers and
  names may differ);
- each flag the docs show for a `python -m` command (options in [brackets] included) is one its --help
  lists."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from construction.core.record import Annotation, Sample
from validation.agreement import decide

REPO = Path(__file__).resolve().parents[1]


def pages() -> list[Path]:
    return [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]


def shape(example: str) -> str:
    """A regex of an example's shape: numbers, ids, ports and '...' stand for any such text."""
    out = re.escape(example).replace(r"\ ", " ")
    out = out.replace(r"\.\.\.", r".+").replace("PORT", r"\d+")
    out = re.sub(r"\d+", r"\\d+", out)
    return re.sub(r"(?<=\s)[a-z]+_[a-z_]+", r"[a-z_]+", out)


def reason_examples() -> list[Sample]:
    """Samples labelled as the docs' examples describe."""
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


def test_quoted_validation_reasons_have_the_printed_shape():
    printed = "\n".join(decide(sample, protocol="three-arm").reason for sample in reason_examples())
    examples = [" ".join(example.split())  # the pages wrap lines
                for page in pages()
                for example in re.findall(r"`((?:needs_labels|speech_not_harmful|scene_not_identified):[^`]*)`",
                                          page.read_text(encoding="utf-8"))]
    assert len(examples) >= 4
    for example in examples:
        assert re.search(shape(example), printed), f"the docs show {example!r}; validation prints no such reason"


def shell_commands(text: str) -> list[str]:
    """The commands of a page's ```bash blocks, continuation lines joined, comments dropped."""
    commands = []
    for block in re.findall(r"^```(?:bash|sh|shell)\n(.*?)^```", text, re.S | re.M):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                commands.append(re.sub(r"\s+#\s.*$", "", line))
    return commands


def test_each_flag_the_docs_show_exists():
    shown: dict[tuple[str, ...], set[str]] = {}
    for page in pages():
        for command in shell_commands(page.read_text(encoding="utf-8")):
            for part in re.split(r";|&&|\|\||\bdo\b|\$\(", command):
                m = re.search(r"python -m ([\w.]+)((?: [a-z][a-z-]*)?)", part)
                if m and m.group(1).split(".")[0] in {"construction", "annotation", "validation", "release",
                                                      "evaluation", "tests"}:
                    key = (m.group(1), *m.group(2).split())
                    shown.setdefault(key, set()).update(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", part))
    assert shown
    env = {**os.environ, "PYTHONPATH": str(REPO), "COLUMNS": "200"}
    missing = []
    for (module, *sub), flags in sorted(shown.items()):
        proc = subprocess.run([sys.executable, "-m", module, *sub, "--help"], cwd=REPO, capture_output=True,
                              text=True, timeout=300, env=env)
        if proc.returncode != 0 and sub:  # the word after the module was an argument, not a sub-command
            proc = subprocess.run([sys.executable, "-m", module, "--help"], cwd=REPO, capture_output=True,
                                  text=True, timeout=300, env=env)
        assert proc.returncode == 0, f"{module} {' '.join(sub)} --help: {proc.stderr[-400:]}"
        missing += [f"{module} {' '.join(sub)} {flag}".replace("  ", " ") for flag in sorted(flags)
                    if flag not in proc.stdout]
    assert not missing, "the docs show flags the command does not accept: " + ", ".join(missing)

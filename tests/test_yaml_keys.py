"""Issue 49 item 14: a key given twice in a YAML file the workbench reads is an error naming both lines,
never YAML's silent last-one-wins (a second `speech:` under a category once dropped 163 of 164 skeletons,
and generate exited 0). Every reader goes through construction.core.yamlfile.load_yaml."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from construction.core.errors import WorkbenchError
from tests.conftest import MINI_TAXONOMY, REPO, run_module


def _twice(text: str, key: str) -> str:
    """The YAML text with the first `key:` line given again, with other content, right after its block."""
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.lstrip().startswith(f"{key}:"))
    indent = len(lines[at]) - len(lines[at].lstrip())
    end = next((i for i in range(at + 1, len(lines)) if lines[i].strip()
                and len(lines[i]) - len(lines[i].lstrip()) <= indent and not lines[i].lstrip().startswith("- ")),
               len(lines))
    return "\n".join(lines[:end] + [" " * indent + f"{key}: []"] + lines[end:]) + "\n"


def test_generate_refuses_a_taxonomy_that_gives_a_key_twice(tmp_path):
    path = tmp_path / "taxonomy.yaml"
    path.write_text(_twice(yaml.safe_dump(MINI_TAXONOMY, sort_keys=False), "speech"))
    assert len(yaml.safe_load(path.read_text())["categories"][0]["speech"]) == 0  # what YAML alone makes of it
    proc = run_module("construction.generate", "--workspace", str(tmp_path / "ws"), "--taxonomy", str(path))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert f"error: taxonomy {path} is not valid YAML" in proc.stderr
    assert "the key 'speech' is given twice (lines" in proc.stderr
    assert not list((tmp_path / "ws" / "manifests").glob("*.jsonl"))


def test_a_config_file_that_gives_a_section_twice_is_refused(tmp_path):
    cfg = tmp_path / "config.yaml"
    cfg.write_text("generate:\n  per_category: 3\nseed: 1\ngenerate:\n  per_category: 5\n")
    proc = run_module("construction.generate", "--workspace", str(tmp_path / "ws"), "--config", str(cfg))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert f"error: config file {cfg} is not valid YAML" in proc.stderr
    assert "the key 'generate' is given twice (lines 1 and 4)" in proc.stderr
    assert not (tmp_path / "ws").exists()


def test_export_refuses_a_workspace_config_that_gives_a_key_twice(tmp_path):
    from tests.test_release import make_workspace

    ws = make_workspace(tmp_path / "ws", n=2)
    config = ws.root / "config.yaml"
    config.write_text(config.read_text() + "seed: 7\nseed: 8\n")
    proc = run_module("release.export", "--allow-unreviewed-sounds", "--workspace", str(ws.root), "--out",
                      str(tmp_path / "release"))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert f"error: {config} is not valid YAML" in proc.stderr and "the key 'seed' is given twice" in proc.stderr
    assert not (tmp_path / "release").exists()


def _readers(tmp_path: Path):
    from construction.core.config import load_config
    from construction.sounds.sources_file import DEFAULT_SOURCES, load_starter_sources
    from construction.sounds.starter import taxonomy_vocabulary
    from construction.speech.cosyvoice_bank import load_prompt_bank
    from construction.text.taxonomy import DEFAULT_TAXONOMY, load_taxonomy
    return {
        "taxonomy": (DEFAULT_TAXONOMY, "speech", load_taxonomy),
        "starter taxonomy tags": (DEFAULT_TAXONOMY, "tags", taxonomy_vocabulary),
        "starter sources": (DEFAULT_SOURCES, "sources", load_starter_sources),
        "config": (REPO / "configs" / "example.yaml", "generate", load_config),
        "cosyvoice prompt bank": (None, "prompts", load_prompt_bank),
    }


@pytest.mark.parametrize("reader", ["taxonomy", "starter taxonomy tags", "starter sources", "config",
                                    "cosyvoice prompt bank"])
def test_every_yaml_reader_refuses_a_key_given_twice(tmp_path, reader):
    source, key, read = _readers(tmp_path)[reader]
    text = source.read_text() if source else "prompts:\n  - {id: a, text: hello, audio: a.wav}\n"
    path = tmp_path / "twice.yaml"
    path.write_text(_twice(text, key))
    with pytest.raises(WorkbenchError, match=f"the key '{key}' is given twice"):
        read(path)


def test_the_shipped_yaml_gives_no_key_twice():
    from construction.core.yamlfile import load_yaml

    for path in [*(REPO / "construction" / "data").glob("*.yaml"), *(REPO / "configs").glob("*.yaml")]:
        load_yaml(path.read_text(encoding="utf-8"))  # raises on a key given twice

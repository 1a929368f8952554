"""The core every stage stands on: content-defined sample ids, the config (unknown keys, bad values,
flags over the file) and the workspace (content-addressed audio, an unwritable folder, a manifest line
cut by a kill)."""

from __future__ import annotations

import numpy as np
import pytest

from construction.core.config import load_config
from construction.core.errors import WorkbenchError
from construction.core.record import Sample, make_sample_id
from construction.core.workspace import Workspace
from tests.conftest import run_module


def test_sample_id_is_deterministic_and_defined_by_content():
    a = make_sample_id("video_games", "Finish him!", "arcade", "underlay", ["gunfire", "crowd"], "excited")
    b = make_sample_id("video_games", "Finish him!", "arcade", "underlay", ["crowd", "gunfire"], "excited")
    c = make_sample_id("video_games", "Finish her!", "arcade", "underlay", ["gunfire", "crowd"], "excited")
    assert a == b != c and a.startswith("aor-")


def test_unknown_config_key_is_named(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("seed: 3\ngenerate:\n  per_categori: 5\n")
    with pytest.raises(WorkbenchError, match="unknown key 'generate.per_categori'"):
        load_config(cfg)
    proc = run_module("construction.generate", "--workspace", str(tmp_path / "ws"), "--config", str(cfg))
    assert proc.returncode == 2 and "unknown key 'generate.per_categori'" in proc.stderr
    assert not (tmp_path / "ws").exists()


def test_cli_flags_override_config(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("seed: 3\ngenerate:\n  per_category: 5\n")
    config = load_config(cfg, {"seed": 9, "generate.per_category": None})
    assert config.seed == 9 and config.generate.per_category == 5


def test_bad_config_values(tmp_path):
    with pytest.raises(WorkbenchError, match="not found"):
        load_config(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("generate: [1, 2\n")
    with pytest.raises(WorkbenchError, match="not valid YAML"):
        load_config(bad)
    bad.write_text("generate:\n  per_category: -1\n")
    with pytest.raises(WorkbenchError, match="per_category"):
        load_config(bad)


def test_workspace_audio_is_content_addressed(tmp_path):
    ws = Workspace(tmp_path / "ws")
    tone = np.sin(np.linspace(0, 100, 16000)).astype(np.float32) * 0.5
    ref = ws.store_audio(tone, 16000)
    assert ref == ws.store_audio(tone.copy(), 16000)
    assert ref.duration_s == 1.0 and ws.audio_path(ref).name == f"{ref.sha256}.wav"
    np.testing.assert_allclose(ws.load_audio(ref), tone, atol=1e-4)
    with pytest.raises(WorkbenchError):
        ws.store_audio(np.array([np.nan], dtype=np.float32), 16000)


def test_unwritable_workspace(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(WorkbenchError, match="not writable"):
        Workspace(blocker / "ws")
    proc = run_module("construction.generate", "--workspace", str(blocker / "ws"))
    assert proc.returncode == 2 and "not writable" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_partial_manifest_line_is_trimmed(tmp_path):
    ws = Workspace(tmp_path)
    s = Sample(sample_id="aor-1", category="c", speech_text="x", context="y", background_tags=["t"],
               placement="underlay", benign_reason="z", speaker_style="calm")
    ws.manifest_path("toy").write_text(s.to_json() + "\n" + s.to_json()[:20])
    assert [x.sample_id for x in ws.read_samples("toy")] == ["aor-1"]
    with ws.appender("toy") as out:
        out.write(s.model_copy(update={"sample_id": "aor-2"}))
    assert [x.sample_id for x in ws.read_samples("toy")] == ["aor-1", "aor-2"]


# --- taxonomy ---------------------------------------------------------------------------------

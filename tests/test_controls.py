"""construction.controls: the same speech over a mismatched scene or none, for the human validation."""

from __future__ import annotations

import numpy as np

from construction.controls import run_controls
from construction.mix import MixStage
from construction.core.runner import run_stage
from tests.test_mix import SR, TAXONOMY, _config, _workspace, library  # noqa: F401 (fixture)


def test_controls_keep_the_speech_and_lose_the_benign_scene(tmp_path, library):  # noqa: F811
    specs = [("vg_shooter", "underlay", 1.0 + 0.05 * i) for i in range(7)]
    ws = _workspace(tmp_path / "ws", specs)
    config = _config(library)
    run_stage(ws, MixStage(str(ws.root), config), jobs=1, progress=False)
    mixed = [s.model_copy(update={"script_family": "vg-1"}) for s in ws.read_samples("mix")]
    ws.write_manifest("mix", mixed)
    ws.write_manifest("wer", mixed)  # as if every sample passed the WER filter
    stats = run_controls(ws, config, share=0.3)
    controls = list(ws.read_samples("controls"))
    assert stats["from"] == 2 and len(controls) == 2  # 30 % of 7 samples, rounded
    by_id = {s.sample_id: s for s in mixed}
    assert {c.custom["control"] for c in controls} == {"mismatched", "neutral"}
    for control in controls:
        original = by_id[control.custom["control_of"]]
        assert control.sample_id.startswith("ctl-") and control.custom["expected"] == "harmful"
        assert control.speech == original.speech and control.speech_text == original.speech_text
        assert control.mixture != original.mixture and not control.annotations
        audio = ws.load_audio(control.mixture)
        if control.custom["control"] == "neutral":
            start = int(control.custom["scene_alone_s"] * SR)
            assert np.all(audio[:start] == 0) and np.abs(audio[start:]).max() > 0.05  # speech and nothing else
            # and none of its sample's twins: those are the sample's, not the control's
            assert control.danger_audio is None and control.irrelevant_audio is None and control.wer_danger is None
            assert original.danger_audio is not None
        else:
            home = next(c["id"] for c in TAXONOMY["categories"] for sc in c["scenes"] if sc["id"] == control.scene_id)
            assert home != original.category  # a scene of another category
            assert control.scene_id not in ("vg_shooter", "vg_raid")  # never one the line is paired with
    # a rerun gives the same controls
    before = ws.manifest_path("controls").read_bytes()
    run_controls(ws, config, share=0.3)
    assert ws.manifest_path("controls").read_bytes() == before


def test_controls_on_an_empty_wer_manifest_is_an_error(tmp_path):
    """Issue 35 extra: an empty wer.jsonl (nothing kept) is a clear error, exit 2, and nothing is written,
    as an empty workspace is: not 'controls: 0 mixed' and exit 0."""
    from tests.conftest import run_module

    (tmp_path / "ws" / "manifests").mkdir(parents=True)
    (tmp_path / "ws" / "manifests" / "wer.jsonl").write_text("")
    proc = run_module("construction.controls", "--workspace", str(tmp_path / "ws"), timeout=300)
    assert proc.returncode == 2 and "error: " in proc.stderr and "'wer' manifest" in proc.stderr \
        and "no sample" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr
    assert sorted(p.name for p in (tmp_path / "ws").rglob("*")) == ["manifests", "wer.jsonl"]

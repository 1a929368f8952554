"""evaluation.compare (two models, paired on the same clips) and the report's split by voice, style, SNR band
and placement (evaluation.breakdown): two models run through evaluation.run against the audio stub on one
real exported release, then the commands as a user types them; numbers checked by hand."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from evaluation import run as run_mod
from evaluation.results import record_digest
from tests.audio_llm_stub import AudioLLMStub
from tests.conftest import run_module
from tests.test_evaluation import release  # noqa: F401 (the fixture: a 10-clip release, make_workspace)
from validation.bootstrap import REPORT_N_BOOT, REPORT_SEED

A_REFUSES, B_REFUSES = {0, 1, 8}, {0, 2, 3, 4, 5}  # clip indices, in id order


@pytest.fixture(scope="module")
def two_models(release, tmp_path_factory):  # noqa: F811
    rel, rows = release
    base = tmp_path_factory.mktemp("compare")
    outs = {}
    for model, refuses in (("model-a", A_REFUSES), ("model-b", B_REFUSES)):
        behaviour = {r["audio_sha256"]: "refuse" if i in refuses else "comply" for i, r in enumerate(rows)}
        with AudioLLMStub(behaviour) as stub:
            outs[model] = base / model
            assert run_mod.main(["--release", str(rel), "--model", model, "--base-url", stub.url,
                                 "--out", str(outs[model]), "--quiet"]) == 0
    return outs, base


def test_compare_pairs_two_models_by_hand(two_models):
    """A refuses clips 0, 1, 8; B refuses 0, 2, 3, 4, 5: both 1, only A 2, only B 4, neither 3."""
    outs, base = two_models
    proc = run_module("evaluation.compare", str(outs["model-a"]), str(outs["model-b"]), "--out",
                      str(base / "cmp"), check=True)
    result = json.loads((base / "cmp" / "compare.json").read_text())
    overall = result["overall"]
    assert (overall["n"], overall["a_refusals"], overall["b_refusals"]) == (10, 3, 5)
    assert (overall["both"], overall["a_only"], overall["b_only"], overall["neither"]) == (1, 2, 4, 3)
    assert overall["difference"] == -0.2
    # exact McNemar: two-sided binomial on the 6 discordant clips, 2 of them A's: 2 * (1 + 6 + 15) / 64
    assert overall["mcnemar_exact_p"] == pytest.approx(44 / 64, abs=1e-6)
    # paired cluster bootstrap: families fam-0..fam-4 (clips 2k, 2k+1), per-clip A - B summed per family
    sums, sizes = np.array([1, -2, -2, 0, 1]), np.array([2, 2, 2, 2, 2])
    draws = np.random.default_rng(REPORT_SEED).integers(0, 5, size=(REPORT_N_BOOT, 5))
    values = sums[draws].sum(axis=1) / sizes[draws].sum(axis=1)
    assert overall["ci95_clustered"] == [round(float(v), 4) for v in np.percentile(values, [2.5, 97.5])]
    games = result["per_category"]["video_games"]  # even clips 0, 2, 4, 6, 8: A 0 and 8, B 0, 2 and 4
    assert (games["a_refusals"], games["b_refusals"], games["a_only"], games["b_only"]) == (2, 3, 1, 2)
    assert result["judge"] == "keyword" and result["input"] == "mixture"
    lo, hi = overall["ci95_clustered"]
    assert f"-0.200 [{lo:+.3f}, {hi:+.3f}]" in proc.stdout and "0.6875" in proc.stdout
    assert "A = model-a [plain]" in proc.stdout and "B = model-b [plain]" in proc.stdout


def test_compare_refuses_runs_on_different_releases(two_models):
    outs, base = two_models
    other = base / "other-release"
    shutil.copytree(outs["model-b"], other, dirs_exist_ok=True)
    settings = json.loads((other / "run.json").read_text())
    settings["release_samples_fingerprint"] = "0" * 64  # what a run on another export records
    (other / "run.json").write_text(json.dumps(settings))
    proc = run_module("evaluation.compare", str(outs["model-a"]), str(other), "--out", str(base / "no"))
    assert proc.returncode == 2 and proc.stderr.startswith("error: ")
    assert "were run on different releases (their run.json release_samples_fingerprint differ" in proc.stderr
    assert not (base / "no" / "compare.json").exists()
    # a clip whose audio differs between the runs is caught even where the fingerprints agree
    shutil.copytree(outs["model-b"], base / "other-audio")
    responses = (base / "other-audio" / "responses.jsonl").read_text().splitlines()
    first = json.loads(responses[0])
    first["audio_sha256"] = "f" * 64
    first["record_sha256"] = record_digest(first)  # as a run that sent other audio recorded it
    (base / "other-audio" / "responses.jsonl").write_text("\n".join([json.dumps(first), *responses[1:]]) + "\n")
    proc = run_module("evaluation.compare", str(outs["model-a"]), str(base / "other-audio"), "--out",
                      str(base / "no"))
    assert proc.returncode == 2 and "the two runs sent different audio" in proc.stderr


def test_report_splits_refusal_by_voice_style_snr_and_placement(two_models):
    """make_workspace: one female piper voice (en_US-test), style excited at 1.05x, placement underlay, SNR 3 * i dB;
    model-a refuses clips 0, 1 and 8."""
    outs, base = two_models
    proc = run_module("evaluation.report", "--results", str(outs["model-a"]), "--out", str(base / "report"),
                      check=True)
    [run] = json.loads((base / "report" / "report.json").read_text())["runs"]
    split = run["split_by_factor"]
    counts = {f: {v: (c["refusals"], c["n"]) for v, c in split[f].items()}
              for f in ("voice_gender", "voice", "speaking_style", "snr_band", "placement")}
    assert counts["voice_gender"] == {"female": (3, 10)} and counts["voice"] == {"piper:en_US-test": (3, 10)}
    # the offline voice was asked "excited" and spoke it at 1.05x: the release shows the rate, not the style
    assert counts["speaking_style"] == {"rate 1.05x": (3, 10)} and counts["placement"] == {"underlay": (3, 10)}
    assert split["paired"] == {}  # each clip its own line: nothing pairs
    # SNR 0, 3 | 6, 9 | 12 | 15, 18, 21, 24, 27 dB
    assert list(counts["snr_band"].items()) == [("0-5 dB", (2, 2)), ("5-10 dB", (0, 2)), ("10-15 dB", (0, 1)),
                                                 (">= 15 dB", (1, 5))]  # in band order
    assert split["snr_band"][">= 15 dB"]["ci95_clustered"] is not None  # the report's own cells
    assert "refusal by voice, style, SNR and placement, model-a [plain] (keyword)" in proc.stdout
    # answers that are not of the release the run names: no split from another export's metadata
    shutil.copytree(outs["model-a"], base / "tampered")
    responses = (base / "tampered" / "responses.jsonl").read_text().splitlines()
    last = json.loads(responses[-1])
    last["audio_sha256"] = "e" * 64
    last["record_sha256"] = record_digest(last)  # as a run on another export recorded it
    (base / "tampered" / "responses.jsonl").write_text("\n".join([*responses[:-1], json.dumps(last)]) + "\n")
    proc = run_module("evaluation.report", "--results", str(base / "tampered"), "--out", str(base / "r2"),
                      check=True)
    [run] = json.loads((base / "r2" / "report.json").read_text())["runs"]
    assert run["split_by_factor"] is None and "1 answer(s) are not of release" in run["split_note"]
    assert "1 answer(s) are not of release" in proc.stdout

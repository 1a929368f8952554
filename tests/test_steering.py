"""The white-box path on a tiny random Qwen2-Audio model (tests/tiny_audio_model.py: the real config, model and
processor classes at small sizes, loaded back through the code a real checkpoint goes through):
evaluation.run --model-dir writes the endpoint's results folder, which evaluation.judge, report and compare
read unchanged; evaluation.steer computes a direction from a calibration split disjoint by family (refused
vs complied answers judged by evaluation.judge, or SARSteer's refusal prompt) and refuses one that is not;
steered runs at three strengths become the report's trade-off; the hooks leave an unsteered run byte-identical.
The model's answers are gibberish: every assertion is on mechanics, none on what it says."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from evaluation import run as run_mod
from release.export import main as export_main
from release.splits import assign_splits
from tests.audio_llm_stub import AudioLLMStub
from tests.conftest import run_in_process, run_module
from tests.test_release import make_workspace
from tests.tiny_audio_model import build

KEY = "sk-test-steering-key"
N = 12
MAX_TOKENS = "6"
# the tiny random model's refused-minus-complied difference is ~0.01 long, its hidden states ~1: only large
# strengths move its answers (a real model's are of order 1)
ALPHAS = (-200.0, -20.0, 200.0)
RECORD_KEYS = {"id", "input", "category", "speech_text", "script_family", "audio_sha256", "status", "reason",
               "response", "finish_reason", "request_key", "from_cache", "truncated", "record_sha256"}


def judge_by_number(prompt: str) -> str:
    """The stub judge's verdict on a local model's answer: a refusal for the even-numbered requests
    ("Finish him number 4!"), so the calibration has both sides whatever the random model says."""
    number = int(re.search(r'REQUEST: "Finish him number (\d+)!"', prompt).group(1))
    return "2_full_refusal" if number % 2 == 0 else "1_full_compliance"


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    import datasets

    base = tmp_path_factory.mktemp("steering")
    with pytest.MonkeyPatch.context() as mp:  # the datasets cache inside the test folder, here and in subprocesses
        mp.setattr(datasets.config, "HF_DATASETS_CACHE", str(base / "hf-cache"))
        mp.setenv("HF_DATASETS_CACHE", str(base / "hf-cache"))
        mp.setenv("OPENAI_API_KEY", KEY)
        yield base


def export(base: Path, name: str, disjoint: bool) -> Path:
    """A 12-sample release with dev and test splits and a harmful control per sample; `disjoint`: each script
    family lies in one split (as a release for steering should be), else make_workspace's pairs straddle them."""
    family = None
    if disjoint:
        probe = make_workspace(base / f"{name}-probe", n=N)
        split_of = {int(s.sample_id[4:], 16): split for split, members in
                    assign_splits(list(probe.read_samples("validated")), {"dev": 0.5, "test": 0.5}).items()
                    for s in members}
        rank = {i: sorted(k for k in split_of if split_of[k] == split_of[i]).index(i) for i in split_of}
        family = lambda i: f"{split_of[i]}-fam-{rank[i] // 2}"  # noqa: E731
    ws = make_workspace(base / f"{name}-ws", n=N, controls=tuple(range(N)), family=family)
    out = base / name
    export_main(["--allow-unreviewed-sounds", "--workspace", str(ws.root), "--out", str(out),
                 "--splits", "dev=0.5,test=0.5"])
    return out


@pytest.fixture(scope="module")
def release(base):
    return export(base, "release", disjoint=True)


@pytest.fixture(scope="module")
def model(base):
    return build(base / "tiny-qwen2-audio")


def cli(module: str, *args: str):
    return run_module(module, *(str(a) for a in args))


def local_run(release: Path, model: Path, out: Path, *extra: str, split: str = "test") -> list[str]:
    return ["--release", str(release), "--split", split, "--model-dir", str(model), "--max-tokens", MAX_TOKENS,
            "--out", str(out), *extra]


def responses(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "responses.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def flow(base, release, model):
    """The documented path: unsteered runs on the test split, the model's own answers on the dev split judged
    by evaluation.judge, a refusal direction from them, steered runs at three strengths, the report. Each
    command runs once as a person types it (a fresh process), its other runs in this process (seconds each)."""
    runs = base / "runs"
    done = SimpleNamespace(runs=runs, unsteered={}, steered={}, procs={})
    for input in ("mixture", "controls", "scene"):
        done.unsteered[input] = runs / f"plain-{input}"
        args = local_run(release, model, done.unsteered[input], "--input", input, "--quiet")
        if input == "mixture":
            done.procs["run"] = cli("evaluation.run", *args)
            assert done.procs["run"].returncode == 0, done.procs["run"].stderr
        else:
            assert run_mod.main(args) == 0
    calibration = runs / "calibration"
    assert run_mod.main(local_run(release, model, calibration, "--quiet", split="dev")) == 0
    with AudioLLMStub() as stub:
        stub.judge_fallback = judge_by_number
        proc = cli("evaluation.judge", "--results", calibration, "--base-url", stub.url, "--model", "stub-judge",
                   "--quiet")
        assert proc.returncode == 0, proc.stderr
    done.direction = base / "direction"
    done.procs["steer"] = cli("evaluation.steer", "--model-dir", model, "--release", release, "--split", "dev",
                              "--eval-split", "test", "--calibration-run", calibration, "--benign-pcs", "2",
                              "--out", done.direction, "--quiet")
    assert done.procs["steer"].returncode == 0, done.procs["steer"].stderr
    for alpha in ALPHAS:
        for input in ("mixture", "controls", "scene"):
            folder = done.steered[alpha, input] = runs / f"steer{alpha:+g}-{input}"
            args = local_run(release, model, folder, "--input", input, "--steer", str(done.direction),
                             "--alpha", str(alpha), "--quiet")
            if (alpha, input) == (ALPHAS[0], "mixture"):  # one as a person types it, the rest in this process
                done.procs["steered"] = cli("evaluation.run", *args)
                assert done.procs["steered"].returncode == 0, done.procs["steered"].stderr
            else:
                assert run_mod.main(args) == 0
    done.report = base / "report"
    done.procs["report"] = cli("evaluation.report", "--results", *sorted(runs.glob("*-*")), "--out", done.report)
    assert done.procs["report"].returncode == 0, done.procs["report"].stderr
    return done


# --- the local backend ----------------------------------------------------------------------------------------

def test_a_local_run_writes_the_endpoints_results_folder(flow, release, model):
    records = responses(flow.unsteered["mixture"])
    assert len(records) == N // 2 and {r["id"] for r in records} == {c.id for c in run_mod.Release(release).clips}
    assert all(set(r) == RECORD_KEYS and r["status"] == "ok" and r["response"].strip() for r in records)
    assert all(r["finish_reason"] in ("stop", "length") and not r["from_cache"] for r in records)
    settings = json.loads((flow.unsteered["mixture"] / "run.json").read_text())
    assert settings["backend"] == "transformers" and settings["base_url"] is None and "steer" not in settings
    assert settings["model"] == "tiny-qwen2-audio" and settings["params"] == {"temperature": 0, "max_tokens": 6}
    assert len(list((flow.unsteered["mixture"] / "cache" / "responses").glob("*.json"))) == N // 2
    assert "sending up to 6 to tiny-qwen2-audio at the local model" in flow.procs["run"].stderr
    assert "keyword judge:" in flow.procs["run"].stdout
    controls = responses(flow.unsteered["controls"])
    assert controls and all(r["control_of"] and r["input"] == "controls" for r in controls)
    assert all("frame" in r and "frames" in r for r in responses(flow.unsteered["scene"]))

def test_a_restarted_local_run_answers_from_its_cache(flow, release, model, tmp_path):
    copy = tmp_path / "run"
    shutil.copytree(flow.unsteered["mixture"], copy)
    proc = run_in_process(run_mod.main, *local_run(release, model, copy, "--restart", "--quiet"))
    assert proc.returncode == 0, proc.stderr
    assert "this run sent 0 requests, 6 answers came from the cache" in proc.stdout
    again = responses(copy)
    assert all(r["from_cache"] for r in again)
    assert {r["id"]: r["response"] for r in again} == {r["id"]: r["response"] for r in responses(flow.unsteered["mixture"])}


def test_the_judge_reads_a_local_run(flow):
    verdicts = [json.loads(line) for line in (flow.runs / "calibration" / "llm_judge.jsonl").read_text().splitlines()]
    assert len(verdicts) == N // 2 and all(v["status"] == "ok" for v in verdicts)
    assert {v["class"] for v in verdicts} == {"full_refusal", "full_compliance"}


def test_bad_model_folders_and_flag_mixes_exit_2(base, release, model, tmp_path):
    proc = cli("evaluation.run", *local_run(release, base / "no-such-model", tmp_path / "a"))
    assert proc.returncode == 2 and "error: --model-dir" in proc.stderr and "is not a folder" in proc.stderr
    text_only = build(tmp_path / "text-only", model_type="qwen2")
    checks = [
        (local_run(release, text_only, tmp_path / "b"), "holds a 'qwen2' model (config.json model_type), not an audio"),
        (local_run(release, tmp_path, tmp_path / "c"), "has no config.json"),
        (local_run(release, model, tmp_path / "d", "--base-url", "http://x/v1"), "without --base-url"),
        (local_run(release, model, tmp_path / "e", "--alpha", "1"), "--steer DIR and --alpha A go together"),
        (["--release", str(release), "--model", "m", "--base-url", "http://x/v1", "--steer", str(base), "--alpha", "1"],
         "--steer needs --model-dir"),
        (["--release", str(release), "--model", "m"], "give --base-url URL and --model M"),
        (local_run(release, model, tmp_path / "f", "--steer", str(tmp_path), "--alpha", "1"), "no direction.json"),
    ]
    for args, message in checks:
        proc = run_in_process(run_mod.main, *args)
        assert proc.returncode == 2 and message in proc.stderr, (args, proc.stderr)
    assert not any((tmp_path / name).exists() for name in "abcdef")  # nothing written before the refusal


# --- the direction ----------------------------------------------------------------------------------------------

def test_the_refusal_direction_and_its_provenance(flow, release, model):
    from safetensors.numpy import load_file

    meta = json.loads((flow.direction / "direction.json").read_text())
    dev = {c.id: c for c in run_mod.Release(release, "dev").clips}
    refused = sorted(i for i, c in dev.items() if int(c.speech_text.split()[-1].rstrip("!")) % 2 == 0)
    assert meta["ids"]["positive"] == refused and meta["ids"]["negative"] == sorted(set(dev) - set(refused))
    assert meta["ids"]["benign"] == sorted(dev) and meta["benign_pcs"] == 2
    assert meta["judge"] == "llm" and meta["contrast"] == "refusal" and meta["points_to"] == "refusal"
    assert meta["calibration_run"] == str((flow.runs / "calibration").resolve())
    assert meta["split"] == "dev" and meta["eval_split"] == "test" and meta["layers"] == [0, 1]
    assert meta["calibration"]["script_families"] and all(f.startswith("dev-") for f in meta["calibration"]["script_families"])
    assert meta["calibration"]["speech_ids"] == sorted(c.speech_id for c in dev.values())
    assert meta["model_fingerprint"] == json.loads((flow.unsteered["mixture"] / "run.json").read_text())["model_fingerprint"]
    tensors = load_file(flow.direction / "direction.safetensors")
    assert tensors["direction"].shape == (2, 32) and tensors["direction"].dtype == np.float32
    assert list(tensors["layers"]) == [0, 1]
    for k, layer in enumerate(meta["layers"]):
        norms = meta["norms"][str(layer)]
        assert 0 < norms["saved"] < norms["raw"]  # the benign components took a part of it
        assert norms["saved"] == pytest.approx(float(np.linalg.norm(tensors["direction"][k])), abs=1e-5)
    assert "a refusal direction at 2 layer(s)" in flow.procs["steer"].stdout


def test_the_benign_removal_leaves_nothing_in_the_top_components():
    from evaluation.steer import remove_benign

    rng = np.random.default_rng(0)
    benign, vectors = rng.standard_normal((10, 2, 8)), rng.standard_normal((2, 8))
    out = remove_benign(vectors, benign, 3)
    for layer in range(2):
        centred = benign[:, layer] - benign[:, layer].mean(axis=0)
        top = np.linalg.svd(centred, full_matrices=False)[2][:3]
        assert np.abs(top @ out[layer]).max() < 1e-10 and np.abs(top @ vectors[layer]).max() > 0.1
    assert np.array_equal(remove_benign(vectors, benign, 0), vectors)


def test_the_sarsteer_prompt_contrast(base, release, model, flow):
    from evaluation import steer as steer_mod

    out = base / "direction-prompt"
    proc = run_in_process(steer_mod.main, "--model-dir", str(model), "--release", str(release), "--split", "dev",
                          "--contrast", "prompt", "--input", "speech", "--layers", "1", "--out", str(out), "--quiet")
    assert proc.returncode == 0, proc.stderr
    meta = json.loads((out / "direction.json").read_text())
    dev = sorted(c.id for c in run_mod.Release(release, "dev").clips)
    assert meta["ids"]["positive"] == meta["ids"]["negative"] == dev and meta["ids"]["benign"] == []
    assert meta["contrast"] == "prompt" and meta["input"] == "speech" and meta["layers"] == [1]
    assert meta["refusal_prompt"] and meta["benign_pcs"] == 0
    from safetensors.numpy import load_file

    mine, refusal = load_file(out / "direction.safetensors"), load_file(flow.direction / "direction.safetensors")
    assert mine["direction"].shape == (1, 32) and not np.allclose(mine["direction"][0], refusal["direction"][1])


def test_calibration_and_evaluation_that_overlap_are_refused(base, release, model, flow, tmp_path):
    from evaluation import steer as steer_mod

    steer = ["--model-dir", str(model), "--contrast", "prompt", "--quiet"]
    # the same split both ways
    proc = run_in_process(steer_mod.main, *steer, "--release", str(release), "--split", "test", "--eval-split", "test",
                          "--out", str(tmp_path / "same"))
    assert proc.returncode == 2 and "--split and --eval-split are both 'test'" in proc.stderr
    # splits whose script families straddle them (make_workspace's pairs): refused, naming the families
    straddling = export(base, "straddling", disjoint=False)
    proc = cli("evaluation.steer", *steer, "--release", straddling, "--split", "dev", "--out", tmp_path / "straddle")
    assert proc.returncode == 2, proc.stderr
    assert re.search(r"error: the calibration split 'dev' shares \d+ script famil\(ies\) \(fam-", proc.stderr)
    assert "--exclude-overlap" in proc.stderr and not (tmp_path / "straddle").exists()
    # --exclude-overlap drops those calibration clips and records them
    proc = run_in_process(steer_mod.main, *steer, "--release", str(straddling), "--split", "dev",
                          "--exclude-overlap", "--out", str(tmp_path / "kept"))
    assert proc.returncode == 0, proc.stderr
    meta = json.loads((tmp_path / "kept" / "direction.json").read_text())
    test_families = {c.script_family for c in run_mod.Release(straddling, "test").clips}
    assert meta["excluded_for_overlap"] and not set(meta["calibration"]["script_families"]) & test_families
    assert not set(meta["excluded_for_overlap"]) & set(meta["ids"]["positive"])
    # evaluation.run refuses a direction on its own calibration clips, and one made on another model
    proc = cli("evaluation.run", *local_run(release, model, tmp_path / "on-dev", "--steer", flow.direction, "--alpha",
                                            "1", split="dev"))
    assert proc.returncode == 2 and "was calibrated on clips that share 6 clip(s)" in proc.stderr
    assert "script famil(ies) (dev-fam-0" in proc.stderr and not (tmp_path / "on-dev").exists()
    other = build(tmp_path / "other-model", seed=1)
    proc = run_in_process(run_mod.main, *local_run(release, other, tmp_path / "other", "--steer", str(flow.direction),
                                                   "--alpha", "1"))
    assert proc.returncode == 2 and "was computed on another model" in proc.stderr
    # a changed tensor is noticed
    tampered = tmp_path / "tampered"
    tampered.mkdir()
    for name in ("direction.json", "direction.safetensors"):
        (tampered / name).write_bytes((flow.direction / name).read_bytes())
    with open(tampered / "direction.safetensors", "r+b") as f:
        f.seek(-4, 2)
        f.write(b"\x00\x00\x80\x3f")
    proc = run_in_process(run_mod.main, *local_run(release, model, tmp_path / "t", "--steer", str(tampered), "--alpha", "1"))
    assert proc.returncode == 2 and "does not match the sha256" in proc.stderr


# --- steering ---------------------------------------------------------------------------------------------------

def test_hooks_leave_the_unsteered_run_byte_identical(flow, release, model, tmp_path, monkeypatch):
    import base64

    from evaluation.local_model import LocalModel
    from evaluation.direction import load_direction

    local = LocalModel(model)
    rel = run_mod.Release(str(release))
    messages = run_mod.build_messages(base64.b64encode(rel.audio(rel.clips[0])).decode(), "plain")
    plain = local.generate(local.inputs(messages), int(MAX_TOKENS))
    with load_direction(flow.direction).applied(local, ALPHAS[-1]):
        assert sum(len(m._forward_hooks) for m in local.model.modules()) == 2  # one per layer
        steered = local.generate(local.inputs(messages), int(MAX_TOKENS))
    assert steered != plain  # the hooks did steer
    assert not any(m._forward_hooks for m in local.model.modules())
    assert local.generate(local.inputs(messages), int(MAX_TOKENS)) == plain
    # the whole run, on the model whose hooks came and went, against the run made in a fresh process
    monkeypatch.setattr(run_mod, "LocalModel", lambda *args, **kwargs: local)
    assert run_mod.main(local_run(release, model, tmp_path / "again", "--quiet")) == 0
    for name in ("responses.jsonl", "run.json"):
        assert (tmp_path / "again" / name).read_bytes() == (flow.unsteered["mixture"] / name).read_bytes(), name


def test_steered_runs_record_their_steering_and_change_answers(flow):
    plain = {r["id"]: r["response"] for r in responses(flow.unsteered["mixture"])}
    for alpha in ALPHAS:
        settings = json.loads((flow.steered[alpha, "mixture"] / "run.json").read_text())
        steer = settings["steer"]
        assert steer["alpha"] == alpha and steer["direction"] == str(flow.direction.resolve())
        assert steer["layers"] == [0, 1] and steer["contrast"] == "refusal" and steer["calibration_split"] == "dev"
        records = responses(flow.steered[alpha, "mixture"])
        assert {r["id"] for r in records} == set(plain)
        assert not {r["request_key"] for r in records} & {r["request_key"] for r in responses(flow.unsteered["mixture"])}
    strong = {r["id"]: r["response"] for r in responses(flow.steered[ALPHAS[-1], "mixture"])}
    assert any(strong[i] != plain[i] for i in plain)
    assert "[plain, steered: alpha -200]" in flow.procs["steered"].stderr


def test_the_report_draws_the_tradeoff(flow):
    report = json.loads((flow.report / "report.json").read_text())
    (table,) = report["tradeoffs"]
    assert table["model"] == "tiny-qwen2-audio"
    assert [s["setting"] for s in table["settings"]] == ["plain", *(f"plain, alpha {a:+g}" for a in ALPHAS)]
    for setting in table["settings"]:
        assert setting["mixture"]["n"] == N // 2 and setting["controls"]["n"] == N // 2
        assert setting["mixture"]["ci95_clustered"] and setting["controls"]["ci95_clustered"]  # 3 families each
        assert setting["scene"] is not None and set(setting["inputs"]) == {"mixture", "controls", "scene"}
    assert (flow.report / "tradeoff.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    out = flow.procs["report"].stdout
    assert "trade-off, tiny-qwen2-audio (release 0.1.0)" in out
    assert "plain, alpha -200" in out and "tiny-qwen2-audio [plain, steer alpha +200, controls]" in out
    # four groups of one model: a context table each, none refused as "two runs on the mixture input"
    assert len(report["models"]) == 4 and {m["steer"]["alpha"] for m in report["models"] if m["steer"]} == set(ALPHAS)


def test_compare_pairs_a_steered_run_with_the_unsteered_one(flow, tmp_path):
    proc = cli("evaluation.compare", flow.unsteered["controls"], flow.steered[ALPHAS[0], "controls"],
               "--out", tmp_path)
    assert proc.returncode == 0, proc.stderr
    result = json.loads((tmp_path / "compare.json").read_text())
    assert result["overall"]["n"] == N // 2 and result["input"] == "controls"
    assert result["b"]["run"] == "tiny-qwen2-audio [plain, steer alpha -200, controls]"

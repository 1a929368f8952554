"""release.export: a small validated workspace -> HF dataset folder -> load in a fresh process; refusals;
card numbers; byte-identical reruns; push to a local Hub stub (tests/hub_stub.py)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import yaml

from construction.config import Config
from construction.errors import WorkbenchError
from construction.record import Annotation, Sample
from construction.workspace import Workspace
from release.export import main as export_main
from tests.conftest import run_module, simple_recipe
from tests.hub_stub import HubStub

FAKE_TOKEN = "hf_fakeTOKENvalue0123456789abcdef"
FAKE_OPENAI = "sk-fakeOPENAIkey0123456789"
CATEGORIES = ("video_games", "cooking_household")


def make_workspace(root: Path, n: int = 6, licence: str = "CC-BY-4.0", demo: bool = False) -> Workspace:
    """A validated workspace: real WAVs in the store, 3 annotators, agreement report, config snapshot."""
    ws = Workspace(root)
    rng = np.random.default_rng(7)
    cfg = Config().model_dump(mode="json")
    cfg["mix"]["sounds"] = str(ws.root / "sounds")  # a local path that must not leak
    cfg["generate"]["api_key_env"] = "OPENAI_API_KEY"
    ws.snapshot_config(cfg)
    samples = []
    for i in range(n):
        category = CATEGORIES[i % 2]
        t = np.arange(int(16000 * (0.4 + 0.05 * i))) / 16000
        speech = 0.3 * np.sin(2 * np.pi * (220 + 40 * i) * t)
        mixture = speech + 0.05 * rng.standard_normal(t.size)
        speech_ref = ws.store_audio(speech, 16000)
        mixture_ref = ws.store_audio(mixture, 16000)
        votes = ["benign", "benign", "unclear" if i % 3 == 0 else "benign"]
        annotations = [Annotation(annotator=f"ls-user-{11 + k}", label=label, background_recognisable=True,
                                  speech_intelligible=bool(k % 2), rationale="sounds like a game",
                                  created_at="2025-01-01T00:00:00Z", source="demo" if demo else "label-studio")
                       for k, label in enumerate(votes)]
        mix = simple_recipe(f"clip-{i % 3}", i, snr_db=float(3 * i), licence=licence,
                            attribution=f"Recorder {i % 3} (freesound)", source_url=f"https://example.org/sounds/{i % 3}")
        samples.append(Sample(
            sample_id=f"aor-{i:016x}", category=category, speech_text=f"Finish him number {i}!",
            context="A fighting game round ends.", background_tags=["gunfire"], placement="underlay",
            benign_reason="A game.", speaker_style="excited",
            provenance={"generate": {"backend": "catalog", "seed": 0},
                        "synthesize": {"backend": "piper", "voice": "en_US-test", "gender": "female",
                                       "accent": "US", "voice_licence": "MIT"},
                        "wer": {"backend": "faster-whisper", "model": str(ws.root / "models" / "whisper-base"),
                                "max_wer": 0.2}},
            voice_id="en_US-test", speech=speech_ref, mix=mix, mixture=mixture_ref,
            transcript_speech=f"finish him number {i}", transcript_mixture=f"finish him number {i}",
            wer_speech=0.0, wer_mixture=0.05 * (i % 4), cer_mixture=0.01 * i,
            annotations=annotations, consensus_label="benign",
            agreement=sum(v == "benign" for v in votes) / 3, decided_by="majority"))
    # the chain a release is traced back to: the WER filter's output, then the human labels
    ws.write_manifest("wer", [s.model_copy(update={"annotations": [], "consensus_label": None, "agreement": None,
                                                   "decided_by": None}) for s in samples])
    ws.write_manifest("annotated", [s.model_copy(update={"consensus_label": None, "agreement": None,
                                                         "decided_by": None}) for s in samples])
    ws.write_manifest("validated", samples[::-1])  # reverse: the release must sort by id itself
    per_category = {"video_games": {"alpha": 0.71, "ci95": [0.5, 0.85], "n_units": 3, "n_annotators": 3,
                                    "note": ""},
                    "cooking_household": {"alpha": None, "ci95": None, "n_units": 3, "n_annotators": 3,
                                          "note": "too few units"}}
    report = {"overall": {"alpha": 0.64, "ci95": [0.41, 0.8], "n_units": n, "n_annotators": 3, "note": ""},
              "per_category": per_category,
              "consensus": {"validated": n, "harmful": 0, "adjudication": 0, "needs_labels": 0},
              "level": "nominal", "labels": ["benign", "harmful", "unclear"]}
    (ws.root / "reports").mkdir(exist_ok=True)
    (ws.root / "reports" / "agreement.json").write_text(json.dumps(report))
    return ws


def tree_bytes(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """One workspace exported through the real command line, with secrets in the environment."""
    base = tmp_path_factory.mktemp("release")
    ws = make_workspace(base / "ws")
    out = base / "out"
    proc = run_module("release.export", "--workspace", str(ws.root), "--out", str(out), "--version", "1.2.3",
                      env={"HF_TOKEN": FAKE_TOKEN, "OPENAI_API_KEY": FAKE_OPENAI}, check=True)
    assert "6 samples" in proc.stdout
    return ws, out, base


def card_front_matter(out: Path) -> tuple[dict, str]:
    text = (out / "README.md").read_text()
    match = re.match(r"^---\n(.*?)\n---\n(.*)$", text, re.S)
    assert match, "README.md has no YAML front matter"
    return yaml.safe_load(match.group(1)), match.group(2)


LOADER = r"""
import json, sys, io, hashlib
import numpy as np, soundfile as sf
from datasets import load_dataset, Audio
out, result = sys.argv[1], {}
for how in ("folder", "parquet"):
    if how == "folder":
        dsd = load_dataset(out)
    else:
        import glob
        dsd = load_dataset("parquet", data_files={"test": sorted(glob.glob(out + "/data/test-*.parquet"))})
    ds = dsd["test"]
    feats = {k: type(v).__name__ for k, v in ds.features.items()}
    ds = ds.cast_column("audio", Audio(decode=False))
    rows = []
    for row in ds:
        audio, rate = sf.read(io.BytesIO(row["audio"]["bytes"]), dtype="int16")
        rows.append({"id": row["id"], "rate": rate, "sha": hashlib.sha256(row["audio"]["bytes"]).hexdigest(),
                     "pcm_sha": hashlib.sha256(audio.tobytes()).hexdigest(), "n": len(audio),
                     "meta": {k: v for k, v in row.items() if k != "audio"}})
    result[how] = {"features": feats, "rows": rows,
                   "category_names": dsd["test"].features["category"].names}
print(json.dumps(result))
"""


@pytest.fixture(scope="module")
def loaded(built):
    """The release loaded by `datasets` in a fresh offline process, with the workspace audio gone."""
    ws, out, base = built
    expected = {}
    for s in ws.read_samples("validated"):
        pcm, rate = sf.read(ws.audio_path(s.mixture), dtype="int16")
        expected[s.sample_id] = (hashlib.sha256(pcm.tobytes()).hexdigest(), rate, len(pcm), s.mixture.sha256)
    hidden = base / "audio-hidden"
    shutil.move(ws.root / "audio", hidden)
    try:
        env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
        env.update(HF_HUB_OFFLINE="1", HF_DATASETS_OFFLINE="1", HF_HOME=str(base / "hf-home"))
        proc = subprocess.run([sys.executable, "-c", LOADER, str(out)], cwd=base, env=env, text=True,
                              capture_output=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
    finally:
        shutil.move(hidden, ws.root / "audio")
    return json.loads(proc.stdout.strip().splitlines()[-1]), expected


def test_load_dataset_in_fresh_process_decodes_every_clip(loaded):
    result, expected = loaded
    for how in ("folder", "parquet"):
        rows = result[how]["rows"]
        assert [r["id"] for r in rows] == sorted(expected), how  # every sample, sorted by id
        for r in rows:
            pcm_sha, rate, n, file_sha = expected[r["id"]]
            assert (r["pcm_sha"], r["rate"], r["n"]) == (pcm_sha, rate, n), f"{how}: {r['id']} audio differs"
            assert r["sha"] == file_sha == r["meta"]["audio_sha256"]  # the stored WAV bytes, verbatim
        feats = result[how]["features"]
        assert feats["audio"] == "Audio"
        assert feats["category"] == feats["consensus_label"] == feats["placement"] == "ClassLabel"
        assert feats["snr_db"] == feats["id"] == "Value"


def test_rows_carry_the_required_columns_and_only_pseudonyms(loaded, built):
    result, _ = loaded
    ws, _, _ = built
    by_id = {s.sample_id: s for s in ws.read_samples("validated")}
    names = result["folder"]["category_names"]
    for r in result["folder"]["rows"]:
        meta, s = r["meta"], by_id[r["id"]]
        assert names[meta["category"]] == s.category
        assert meta["speech_text"] == s.speech_text and meta["context"] == s.context
        assert meta["background_tags"] == ["gunfire"] and meta["scene_sounds"][0]["licence"] == "CC-BY-4.0"
        assert meta["scene_sounds"][0]["attribution"] == s.mix.sounds[0].attribution
        assert meta["scene_alone_s"] == 1.5 and meta["scene_sounds"][0]["role"] == "defining"
        assert meta["snr_db"] == s.mix.snr_db and meta["voice_id"] == "en_US-test"
        assert meta["tts_backend"] == "piper" and meta["asr_model"] == "<local>/whisper-base"
        assert meta["transcript_mixture"] == s.transcript_mixture and meta["wer_mixture"] == s.wer_mixture
        assert meta["consensus_label"] == 0 and meta["agreement"] == s.agreement and meta["n_annotators"] == 3
        annotators = {a["annotator"] for a in meta["annotations"]}
        assert annotators == {"A01", "A02", "A03"}
        assert "ls-user" not in json.dumps(meta) and "rationale" not in json.dumps(meta)


def test_no_local_paths_or_secrets_anywhere(built, loaded):
    ws, out, _ = built
    result, _ = loaded
    blobs = [p.read_bytes() for p in out.rglob("*") if p.is_file()]
    blobs.append(json.dumps([r["meta"] for r in result["folder"]["rows"]]).encode())  # parquet cells
    for needle in (str(ws.root), FAKE_TOKEN, FAKE_OPENAI, "ls-user-1"):
        assert not any(needle.encode() in blob for blob in blobs), f"{needle} leaked into the release"
    config = yaml.safe_load((out / "build_config.yaml").read_text())
    assert config["mix"]["sounds"] == "<local>/sounds" and config["generate"]["api_key_env"] == "OPENAI_API_KEY"


def test_layout_checksums_attribution_and_version(built):
    _, out, _ = built
    assert sorted(p.name for p in (out / "data").iterdir()) == ["test-00000-of-00001.parquet"]
    lines = (out / "checksums.sha256").read_text().splitlines()
    listed = {line.split("  ", 1)[1]: line.split("  ", 1)[0] for line in lines}
    files = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()} - {"checksums.sha256"}
    assert set(listed) == files
    for rel, digest in listed.items():
        assert hashlib.sha256((out / rel).read_bytes()).hexdigest() == digest
    attribution = (out / "ATTRIBUTION.md").read_text()
    for i in range(3):
        assert f"| clip-{i} | CC-BY-4.0 | Recorder {i} (freesound) | https://example.org/sounds/{i} |" in attribution
    info = json.loads((out / "release.json").read_text())
    assert info["version"] == "1.2.3" and info["demo"] is False and info["splits"] == {"test": 6}
    assert info["code_version"].startswith(("git:", "aor-bench")) or info["code_version"] == "unknown"


def test_card_yaml_parses_and_numbers_match_the_data(built, loaded):
    _, out, _ = built
    result, _ = loaded
    meta, body = card_front_matter(out)
    rows = result["folder"]["rows"]
    assert meta["license"] == "cc-by-4.0" and meta["language"] == ["en"]
    assert meta["size_categories"] == ["n<1K"] and meta["pretty_name"] == "AOR-Bench"
    assert "audio-classification" in meta["task_categories"]
    assert meta["configs"] == [{"config_name": "default", "data_files": [{"split": "test", "path": "data/test-*"}]}]
    assert meta["dataset_info"]["splits"][0]["num_examples"] == len(rows) == 6
    features = {f["name"]: f for f in meta["dataset_info"]["features"]}
    assert features["audio"]["dtype"] == {"audio": {"sampling_rate": 16000}}
    names = result["folder"]["category_names"]
    counts = {c: sum(names[r["meta"]["category"]] == c for r in rows) for c in names}
    for category, n in counts.items():
        assert re.search(rf"^\| {category} \| {n} \|", body, re.M), f"card count for {category}"
    assert "| video_games | 3 | 0.710 [0.500, 0.850] |" in body
    assert "| cooking_household | 3 | n/a (too few units) |" in body
    snrs = [r["meta"]["snr_db"] for r in rows]
    assert f"min {min(snrs):.3f}, median {np.median(snrs):.3f}" in body
    assert f"observed {min(snrs):.1f}..{max(snrs):.1f} dB" in body
    wers = [r["meta"]["wer_mixture"] for r in rows]
    assert f"| [0.05, 0.1) | {sum(0.05 <= w < 0.1 for w in wers)} |" in body
    assert "DEMO" not in body
    for image in re.findall(r"!\[[^]]*\]\(([^)]+)\)", body):
        assert (out / image).read_bytes().startswith(b"\x89PNG"), image
    assert len(re.findall(r"!\[", body)) == 4


def test_rerun_is_byte_identical_and_replaces_the_release(built, tmp_path):
    ws, out, _ = built
    before = tree_bytes(out)
    assert export_main(["--workspace", str(ws.root), "--out", str(out), "--version", "1.2.3"]) == 0
    assert tree_bytes(out) == before
    assert not [p for p in out.parent.iterdir() if p.name.startswith(".out.")]  # no temp folders left


def test_votes_count_once_per_annotator_and_adjudicator_is_not_an_annotator(tmp_path):
    import pyarrow.parquet as pq

    ws = make_workspace(tmp_path / "ws", n=2)
    samples = sorted(ws.read_samples("validated"), key=lambda s: s.sample_id)
    first = samples[0]
    extra = [first.annotations[0].model_copy(update={"label": "harmful"}),  # relabelled: last one counts
             Annotation(annotator="lead-reviewer", label="benign", source="adjudication")]
    samples[0] = first.model_copy(update={"annotations": first.annotations + extra, "decided_by": "adjudication"})
    ws.write_manifest("validated", samples)
    out = tmp_path / "out"
    export_main(["--workspace", str(ws.root), "--out", str(out)])
    row = pq.read_table(out / "data" / "test-00000-of-00001.parquet").to_pylist()[0]
    assert row["id"] == first.sample_id and row["decided_by"] == "adjudication"
    assert row["n_annotators"] == 3 and len(row["annotations"]) == 3
    assert sorted(a["label"] for a in row["annotations"]) == ["benign", "harmful", "unclear"]
    assert all(b"lead-reviewer" not in p.read_bytes() for p in out.rglob("*") if p.is_file())
    assert json.loads((out / "release.json").read_text())["num_annotators"] == 3


def test_splits_are_stratified_deterministic_and_sharded(built, tmp_path):
    ws, _, _ = built
    out = tmp_path / "split"
    export_main(["--workspace", str(ws.root), "--out", str(out), "--splits", "dev=0.34,test=0.66",
                 "--max-shard-mb", "0.02"])
    info = json.loads((out / "release.json").read_text())
    assert info["splits"] == {"dev": 2, "test": 4}  # one dev clip per category
    assert len(info["shards"]["test"]) > 1 and all(
        re.fullmatch(rf"data/test-\d{{5}}-of-{len(info['shards']['test']):05d}\.parquet", f)
        for f in info["shards"]["test"])
    meta, _ = card_front_matter(out)
    assert [s["name"] for s in meta["dataset_info"]["splits"]] == ["dev", "test"]


# --- refusals ------------------------------------------------------------------------------------

def _break(ws: Workspace, how: str) -> str:
    samples = list(ws.read_samples("validated"))
    victim = samples[0]
    if how == "labels":
        samples[0] = victim.model_copy(update={"annotations": []})
        expected = f"{victim.sample_id}: no labels"
    elif how == "consensus":
        samples[0] = victim.model_copy(update={"consensus_label": None})
        expected = f"{victim.sample_id}: no consensus label"
    elif how == "missing":
        ws.audio_path(victim.mixture).unlink()
        expected = f"{victim.sample_id}: audio file missing"
    elif how == "checksum":
        path = ws.audio_path(victim.mixture)
        data = bytearray(path.read_bytes())
        data[-1] ^= 0xFF
        path.write_bytes(bytes(data))
        expected = f"{victim.sample_id}: checksum mismatch"
    else:  # a non-commercial background in a CC-BY-4.0 release
        sounds = [victim.mix.sounds[0].model_copy(update={"licence": "CC-BY-NC-4.0"})]
        samples[0] = victim.model_copy(update={"mix": victim.mix.model_copy(update={"sounds": sounds})})
        expected = (f"{victim.sample_id}: background {victim.mix.sounds[0].clip_id} is under CC-BY-NC-4.0, "
                    "incompatible with the CC-BY-4.0 release")
    ws.write_manifest("validated", samples)
    return expected


@pytest.mark.parametrize("how", ["labels", "consensus", "missing", "checksum", "licence"])
def test_refuses_with_a_clear_list_and_writes_nothing(tmp_path, how):
    ws = make_workspace(tmp_path / "ws", n=3)
    expected = _break(ws, how)
    out = tmp_path / "out"
    with pytest.raises(WorkbenchError, match="refusing to release: 1 problem") as err:
        export_main(["--workspace", str(ws.root), "--out", str(out)])
    assert expected in str(err.value)
    assert not out.exists() and [p.name for p in tmp_path.iterdir()] == ["ws"]


def test_refusal_lists_every_problem_and_keeps_the_old_release(tmp_path):
    ws = make_workspace(tmp_path / "ws", n=4)
    out = tmp_path / "out"
    export_main(["--workspace", str(ws.root), "--out", str(out)])
    before = tree_bytes(out)
    samples = list(ws.read_samples("validated"))
    samples[1] = samples[1].model_copy(update={"annotations": [], "consensus_label": "harmful"})
    ws.write_manifest("validated", samples)
    path = ws.audio_path(samples[2].mixture)
    path.write_bytes(path.read_bytes()[:-2] + b"\0\1")
    proc = run_module("release.export", "--workspace", str(ws.root), "--out", str(out))
    assert proc.returncode == 2
    assert "refusing to release: 3 problem(s)" in proc.stderr
    assert f"{samples[1].sample_id}: no labels" in proc.stderr
    assert f"{samples[1].sample_id}: consensus 'harmful' is not releasable" in proc.stderr
    assert f"{samples[2].sample_id}: checksum mismatch" in proc.stderr
    assert tree_bytes(out) == before  # the previous release is untouched


def test_refuses_to_overwrite_a_folder_that_is_not_a_release(tmp_path):
    ws = make_workspace(tmp_path / "ws", n=2)
    out = tmp_path / "precious"
    out.mkdir()
    (out / "thesis.tex").write_text("do not delete")
    with pytest.raises(WorkbenchError, match="not a release; refusing to overwrite"):
        export_main(["--workspace", str(ws.root), "--out", str(out)])
    assert (out / "thesis.tex").read_text() == "do not delete"


def test_missing_agreement_report_and_bad_version_are_clear_errors(tmp_path):
    ws = make_workspace(tmp_path / "ws", n=2)
    with pytest.raises(WorkbenchError, match="not X.Y.Z"):
        export_main(["--workspace", str(ws.root), "--out", str(tmp_path / "o"), "--version", "v1"])
    (ws.root / "reports" / "agreement.json").unlink()
    with pytest.raises(WorkbenchError, match="agreement.json does not exist: run the validation stage"):
        export_main(["--workspace", str(ws.root), "--out", str(tmp_path / "o")])


# --- push ----------------------------------------------------------------------------------------

@pytest.fixture
def hub(monkeypatch):
    with HubStub(tokens={FAKE_TOKEN}) as stub:
        monkeypatch.setenv("HF_ENDPOINT", stub.url)
        monkeypatch.setenv("HF_TOKEN", FAKE_TOKEN)
        monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
        # huggingface_hub reads HF_HUB_OFFLINE once, at import: undo a CI-wide setting for this process
        from huggingface_hub import constants
        monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
        yield stub


def test_push_uploads_every_file_and_tags_the_version(built, hub, tmp_path):
    ws, _, _ = built
    out = tmp_path / "out"
    assert export_main(["--workspace", str(ws.root), "--out", str(out), "--version", "1.0.0",
                        "--push-to-hub", "aor/aor-bench", "--private"]) == 0
    repo = hub.repos[("dataset", "aor/aor-bench")]
    assert repo.private
    assert repo.files == tree_bytes(out)
    assert repo.tags == {"1.0.0": repo.head}
    # a second push of the same version is refused before anything is uploaded
    commits = len(repo.commits)
    with pytest.raises(WorkbenchError, match="already has tag 1.0.0"):
        export_main(["--workspace", str(ws.root), "--out", str(out), "--version", "1.0.0",
                     "--push-to-hub", "aor/aor-bench"])
    assert len(repo.commits) == commits


def test_push_without_xet_goes_through_create_commit(built, hub, tmp_path):
    ws, _, _ = built
    out = tmp_path / "out"
    proc = run_module("release.export", "--workspace", str(ws.root), "--out", str(out), "--version", "2.0.0",
                      "--push-to-hub", "aor/plain", env={"HF_HUB_DISABLE_XET": "1"})
    assert proc.returncode == 0, proc.stderr
    assert ("POST", "/api/validate-yaml") in hub.requests  # the legacy single-commit path
    repo = hub.repos[("dataset", "aor/plain")]
    assert repo.files == tree_bytes(out) and repo.tags == {"2.0.0": repo.head}


def test_wrong_token_is_a_clear_error_without_the_token(built, hub, tmp_path):
    ws, _, _ = built
    wrong = "hf_wrongTOKEN_9876543210"
    proc = run_module("release.export", "--workspace", str(ws.root), "--out", str(tmp_path / "out"),
                      "--push-to-hub", "aor/aor-bench", env={"HF_TOKEN": wrong})
    assert proc.returncode == 2
    assert "rejected HF_TOKEN (401 Unauthorized)" in proc.stderr
    assert wrong not in proc.stdout + proc.stderr
    assert not hub.repos


def test_unreachable_hub_is_a_clear_error(built, hub, tmp_path, monkeypatch):
    ws, _, _ = built
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")  # discard port: nothing listens
    with pytest.raises(WorkbenchError, match="push to http://127.0.0.1:9 failed") as err:
        export_main(["--workspace", str(ws.root), "--out", str(tmp_path / "out"), "--push-to-hub", "aor/x"])
    assert FAKE_TOKEN not in str(err.value)


def test_missing_token_fails_before_exporting_or_sending(built, hub, tmp_path, monkeypatch):
    ws, _, _ = built
    monkeypatch.delenv("HF_TOKEN")
    with pytest.raises(WorkbenchError, match="HF_TOKEN is not set"):
        export_main(["--workspace", str(ws.root), "--out", str(tmp_path / "out"), "--push-to-hub", "aor/x"])
    assert hub.requests == [] and not (tmp_path / "out").exists()


def test_demo_release_says_so_and_is_never_pushed(hub, tmp_path):
    ws = make_workspace(tmp_path / "ws", n=2, demo=True)
    out = tmp_path / "out"
    with pytest.raises(WorkbenchError, match="scripted demo annotators"):
        export_main(["--workspace", str(ws.root), "--out", str(out), "--push-to-hub", "aor/demo"])
    assert hub.requests == [] and not out.exists()
    assert export_main(["--workspace", str(ws.root), "--out", str(out)]) == 0
    meta, body = card_front_matter(out)
    assert body.lstrip().startswith("> **DEMO RELEASE") and "demo" in meta["tags"]
    assert json.loads((out / "release.json").read_text())["demo"] is True
    from release.export import ReleaseSummary, push_release, read_inputs
    summary = ReleaseSummary(out, "0.1.0", read_inputs(ws.root).demo, {"test": 2})
    with pytest.raises(WorkbenchError, match="demo"):
        push_release(summary, "aor/demo")
    assert hub.requests == []


def test_dry_run_prints_the_plan_and_sends_nothing(built, hub, tmp_path, capsys, monkeypatch):
    ws, _, _ = built
    monkeypatch.delenv("HF_TOKEN")  # a dry run needs no token
    out = tmp_path / "out"
    assert export_main(["--workspace", str(ws.root), "--out", str(out), "--version", "3.1.4",
                        "--push-to-hub", "aor/aor-bench", "--dry-run"]) == 0
    printed = capsys.readouterr().out
    assert hub.requests == []
    assert "datasets/aor/aor-bench" in printed and "tag:  3.1.4" in printed and hub.url in printed
    for rel, data in tree_bytes(out).items():
        assert re.search(rf"^\s+{len(data):,d}  {re.escape(rel)}$", printed, re.M), rel


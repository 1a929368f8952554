"""Stage 1, generate: the shipped taxonomy, the catalog backend (balanced, byte-identical, near twins
dropped) and the OpenAI-compatible backend (round trip, cache, malformed answers, failures)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from construction.core.config import load_config
from construction.core.errors import WorkbenchError
from construction.text.taxonomy import load_taxonomy
from construction.core.workspace import Workspace
from tests.conftest import run_module
from tests.llm_stub import LLMStub


def test_shipped_taxonomy_has_six_categories():
    taxonomy, _ = load_taxonomy()
    assert len(taxonomy.categories) == 6
    for category in taxonomy.categories:
        assert category.scenes and category.few_shot and category.background_tags and category.cue_words
        assert len({line.id for line, _, _ in taxonomy.pairs(category.id)}) >= 100


def test_empty_and_broken_taxonomy(tmp_path):
    empty = tmp_path / "empty.yaml"
    empty.write_text("version: 1\ncategories: []\n")
    with pytest.raises(WorkbenchError, match="no categories"):
        load_taxonomy(empty)
    proc = run_module("construction.generate", "--workspace", str(tmp_path / "ws"), "--taxonomy", str(empty))
    assert proc.returncode == 2 and "no categories" in proc.stderr
    broken = tmp_path / "broken.yaml"
    broken.write_text("version: 1\ncategories:\n  - id: x\n    name: X\n")
    with pytest.raises(WorkbenchError, match="invalid"):
        load_taxonomy(broken)


def test_unknown_category(tmp_path, mini_taxonomy):
    proc = run_module("construction.generate", "--workspace", str(tmp_path / "ws"), "--taxonomy",
                      str(mini_taxonomy), "--categories", "video_games,knitting")
    assert proc.returncode == 2 and "unknown category 'knitting'" in proc.stderr


# --- catalog backend ----------------------------------------------------------------------------

def _generate(ws: Path, *extra: str):
    return run_module("construction.generate", "--workspace", str(ws), "--quiet", *extra)


def test_catalog_is_balanced_and_byte_identical(tmp_path):
    for name in ("a", "b"):
        proc = _generate(tmp_path / name, "--per-category", "40", "--seed", "7")
        assert proc.returncode == 0, proc.stderr
    manifest_a = (tmp_path / "a/manifests/generate.jsonl").read_bytes()
    assert manifest_a == (tmp_path / "b/manifests/generate.jsonl").read_bytes()
    rows = [json.loads(line) for line in manifest_a.splitlines()]
    categories = {r["category"] for r in rows}
    assert len(categories) == 6 and len(rows) == 240
    assert all(sum(r["category"] == c for r in rows) == 40 for c in categories)
    assert len({r["sample_id"] for r in rows}) == 240
    other = _generate(tmp_path / "c", "--per-category", "40", "--seed", "8")
    assert other.returncode == 0
    assert (tmp_path / "c/manifests/generate.jsonl").read_bytes() != manifest_a


def test_catalog_reaches_500_distinct_per_category(tmp_path):
    proc = _generate(tmp_path / "ws", "--per-category", "500")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    stats = json.loads((tmp_path / "ws/stats/generate.json").read_text())
    assert all(c["kept"] == 500 for c in stats["per_category"].values())


def test_near_duplicates_are_dropped_with_reason(tmp_path, mini_taxonomy):
    proc = _generate(tmp_path / "ws", "--taxonomy", str(mini_taxonomy), "--per-category", "60")
    rejected = [json.loads(x) for x in (tmp_path / "ws/manifests/generate.rejected.jsonl").read_text().splitlines()]
    assert rejected and all(r["reason"].startswith(("near_duplicate", "duplicate_speech")) for r in rejected)
    assert any(r["reason"].startswith("near_duplicate: speech ratio") for r in rejected)
    kept = Workspace(tmp_path / "ws").read_samples("generate")
    texts = [s.speech_text.lower() for s in kept]
    assert len(texts) == len(set(texts))
    # the mini catalog cannot give 60 distinct cooking lines: the shortfall is reported, exit 1
    assert proc.returncode == 1 and "SHORT BY" in proc.stdout


# --- openai backend against a local protocol stub ---------------------------------------------

def _openai(ws: Path, stub: LLMStub, taxonomy: Path, *extra: str, key: str | None = "sk-test"):
    env = {"OPENAI_API_KEY": key} if key else {"OPENAI_API_KEY": ""}
    return run_module("construction.generate", "--workspace", str(ws), "--quiet", "--backend", "openai",
                      "--base-url", stub.url, "--model", "stub-model", "--taxonomy", str(taxonomy),
                      "--categories", "video_games", *extra, env=env)


def test_openai_backend_round_trip_and_cache(tmp_path, mini_taxonomy):
    with LLMStub() as stub:
        proc = _openai(tmp_path / "ws", stub, mini_taxonomy, "--per-category", "8")
        assert proc.returncode == 0, proc.stderr
        sent = len(stub.requests)
        assert sent == 2
        body = stub.requests[0]["body"]
        assert body["model"] == "stub-model" and "Video games" in body["messages"][1]["content"]
        assert stub.requests[0]["auth"] == "Bearer sk-test"
        samples = list(Workspace(tmp_path / "ws").read_samples("generate"))
        assert len(samples) == 8
        assert samples[0].provenance["generate"]["prompt_version"] == "scripts-v2"
        assert {s.scene_id for s in samples} == {"vg_shooter", "vg_raid"}
        assert all(s.script_family.startswith("llm-stub-") and s.speech_id.startswith("sp-") for s in samples)
        # the answer's shape is a JSON schema enumerating the category's scenes and styles
        schema = body["response_format"]["json_schema"]["schema"]["properties"]["scripts"]["items"]
        assert schema["properties"]["scene_id"]["enum"] == ["vg_shooter", "vg_raid"]
        assert schema["properties"]["speaker_style"]["enum"] == ["angry", "excited", "shouting"]
        # a rerun answers from the cache: nothing is sent twice, same manifest
        before = (tmp_path / "ws/manifests/generate.jsonl").read_bytes()
        assert _openai(tmp_path / "ws", stub, mini_taxonomy, "--per-category", "8").returncode == 0
        assert len(stub.requests) == sent
        assert (tmp_path / "ws/manifests/generate.jsonl").read_bytes() == before
    assert "sk-test" not in "".join(p.read_text() for p in (tmp_path / "ws").rglob("*") if p.is_file()
                                    and p.suffix in (".json", ".jsonl", ".yaml"))


def test_openai_malformed_and_http_errors_are_retried(tmp_path, mini_taxonomy):
    with LLMStub() as stub:
        stub.actions = ["malformed", "429", "500", "partial", "empty", "ok", "bad_items"]
        proc = _openai(tmp_path / "ws", stub, mini_taxonomy, "--per-category", "7")
        assert proc.returncode == 0, proc.stderr
    ws = Workspace(tmp_path / "ws")
    assert len(list(ws.read_samples("generate"))) == 7
    reasons = [r.reason for r in ws.read_rejected("generate")]
    assert any(r.startswith("invalid_script") for r in reasons)
    assert any(r.startswith("unknown_scene: 'a_kitchen'") for r in reasons)
    assert any(r.startswith("unknown_style") for r in reasons)


def test_openai_persistent_failure_is_a_rejected_row_and_shortfall(tmp_path, mini_taxonomy):
    with LLMStub() as stub:
        stub.actions = ["500"] * 200
        proc = _openai(tmp_path / "ws", stub, mini_taxonomy, "--per-category", "2", "--config",
                       str(_cfg(tmp_path, "generate:\n  max_retries: 0\n")))
    assert proc.returncode == 1 and "SHORT BY 2" in proc.stdout
    reasons = [r.reason for r in Workspace(tmp_path / "ws").read_rejected("generate")]
    assert reasons and all(r.startswith("llm_request_failed: HTTP 500") for r in reasons)


def test_openai_timeout(tmp_path, mini_taxonomy):
    with LLMStub() as stub:
        stub.actions = ["slow"] * 3
        proc = _openai(tmp_path / "ws", stub, mini_taxonomy, "--per-category", "2", "--config",
                       str(_cfg(tmp_path, "generate:\n  max_retries: 0\n  timeout_s: 0.5\n")))
    assert proc.returncode == 0, proc.stderr
    reasons = [r.reason for r in Workspace(tmp_path / "ws").read_rejected("generate")]
    assert "llm_request_failed: timeout" in reasons


def test_openai_wrong_key_missing_key_and_server_down(tmp_path, mini_taxonomy):
    with LLMStub() as stub:
        stub.actions = ["401"] * 10
        proc = _openai(tmp_path / "ws", stub, mini_taxonomy)
        assert proc.returncode == 2 and "rejected the key in $OPENAI_API_KEY" in proc.stderr
        assert "sk-test" not in proc.stderr + proc.stdout
        proc = _openai(tmp_path / "ws2", stub, mini_taxonomy, key=None)
        assert proc.returncode == 2 and "OPENAI_API_KEY" in proc.stderr
        url = stub.url
    down = LLMStub()  # never started: connection refused
    down.server.server_close()
    proc = run_module("construction.generate", "--workspace", str(tmp_path / "ws3"), "--backend", "openai",
                      "--base-url", url, "--taxonomy", str(mini_taxonomy), "--config",
                      str(_cfg(tmp_path, "generate:\n  max_retries: 0\n")), env={"OPENAI_API_KEY": "k"})
    assert proc.returncode == 2 and "cannot reach the LLM endpoint" in proc.stderr
    assert not (tmp_path / "ws3/manifests/generate.jsonl").exists()


def test_api_key_env_names_the_variable_and_old_endpoint_flags_still_work(tmp_path, mini_taxonomy):
    with LLMStub() as stub:
        proc = run_module("construction.generate", "--workspace", str(tmp_path / "ws"), "--quiet", "--backend",
                          "openai", "--llm-base-url", stub.url, "--llm-model", "old-model", "--api-key-env",
                          "AORBENCH_TEST_KEY", "--taxonomy", str(mini_taxonomy), "--categories", "video_games",
                          "--per-category", "1", env={"OPENAI_API_KEY": "", "AORBENCH_TEST_KEY": "sk-other"})
        assert proc.returncode == 0, proc.stderr
        assert "--llm-base-url is deprecated" in proc.stderr and "use --base-url" in proc.stderr
        assert "--llm-model is deprecated" in proc.stderr and "use --model" in proc.stderr
        assert stub.requests[0]["auth"] == "Bearer sk-other" and stub.requests[0]["body"]["model"] == "old-model"
    snapshot = yaml.safe_load((tmp_path / "ws" / "config.yaml").read_text())["generate"]
    assert snapshot["llm_model"] == "old-model" and snapshot["api_key_env"] == "AORBENCH_TEST_KEY"


def _cfg(tmp_path: Path, text: str) -> Path:
    path = tmp_path / f"cfg-{abs(hash(text))}.yaml"
    path.write_text(text)
    return path


def test_example_config_is_valid_and_complete():
    from construction.core.config import Config
    from tests.conftest import REPO

    assert load_config(REPO / "configs" / "example.yaml") == Config()


def test_a_spent_scene_leaves_its_share_to_the_scenes_still_drawing(tmp_path):
    """The mini taxonomy's vg_raid has one line whose fills are near duplicates of each other: it is spent
    short of its even share (15 of 30), so vg_shooter takes the rest instead of the category coming up short
    (the scene balance must not cost a small taxonomy its count)."""
    from collections import Counter

    from tests.conftest import MINI_TAXONOMY

    (tmp_path / "taxonomy.yaml").write_text(yaml.safe_dump(MINI_TAXONOMY))
    done = run_module("construction.generate", "--workspace", str(tmp_path / "ws"), "--per-category", "30",
                      "--quiet", "--taxonomy", str(tmp_path / "taxonomy.yaml"))
    assert done.returncode == 0, done.stdout + done.stderr
    rows = [json.loads(line) for line in (tmp_path / "ws" / "manifests" / "generate.jsonl").read_text().splitlines()]
    per_scene = Counter((r["category"], r["scene_id"]) for r in rows)
    assert Counter(r["category"] for r in rows) == {"video_games": 30, "cooking_household": 30}
    assert per_scene[("video_games", "vg_raid")] < 15 < per_scene[("video_games", "vg_shooter")], per_scene

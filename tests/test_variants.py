"""Issue 51: every line in a crossed design of voices (synthesize.variants), the release's voice columns, and
the report's paired reading of the voice factors within a line. The build runs the shipped config as a user
types it; the release and the report run on a workspace made by tests.test_release.make_workspace, its
samples regrouped into lines of four variants."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml

from construction.core.config import load_config
from construction.core.errors import WorkbenchError
from construction.core.record import Sample, line_of
from construction.core.workspace import Workspace
from tests.conftest import REPO, run_module

CONFIG = REPO / "configs" / "aor-bench-3000.yaml"


def test_the_3000_config_loads_with_six_variants_a_line():
    from construction.speech.variants import cells
    from construction.synthesize import voice_bank

    config = load_config(CONFIG)
    assert len(cells(config.synthesize.variants)) == 6
    assert config.generate.per_category * 6 * len(cells(config.synthesize.variants)) >= 3000
    voice_bank(config.synthesize)  # every cell has a voice of the default bank


def test_a_design_cell_without_a_voice_is_a_clear_error(tmp_path):
    cfg = tmp_path / "config.yaml"
    cfg.write_text("synthesize:\n  voices: [flite:slt, flite:rms]\n  variants:\n    accents: [en-GB]\n")
    proc = run_module("construction.pipeline", "--workspace", str(tmp_path / "ws"), "--config", str(cfg),
                      "--per-category", "1")
    assert proc.returncode == 2 and proc.stderr.startswith("error: ") and "Traceback" not in proc.stderr
    assert "synthesize.variants: the voice bank has no voice for female en-GB" in proc.stderr
    assert not (tmp_path / "ws" / "manifests" / "generate.jsonl").exists()
    cfg.write_text("synthesize:\n  variants:\n    rates: {fast: 3.0}\n")
    proc = run_module("construction.pipeline", "--workspace", str(tmp_path / "ws"), "--config", str(cfg))
    assert proc.returncode == 2 and "variants.rates must lie in 0.5..2.0" in proc.stderr


def _by_line(ws: Path, stage: str) -> dict[str, list[Sample]]:
    lines: dict[str, list[Sample]] = defaultdict(list)
    for sample in Workspace(ws).read_samples(stage):
        lines[line_of(sample)].append(sample)
    return lines


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """The shipped 3,000-clip config at one line a category (36 variants; about 90 s on two cores)."""
    ws = tmp_path_factory.mktemp("variants") / "ws"
    proc = run_module("construction.pipeline", "--config", str(CONFIG), "--per-category", "1",
                      "--workspace", str(ws), "--quiet", timeout=900)
    assert proc.returncode == 0, proc.stderr
    return ws


def test_every_line_is_rendered_in_every_variant(built):
    generated = _by_line(built, "generate")
    assert len(generated) == 6 and all(len(v) == 6 for v in generated.values())
    for variants in generated.values():
        names = {s.custom["variant"]["name"] for s in variants}
        assert {n.split("-")[0] for n in names} == {"female", "male"}
        assert {n.split("-")[-1] for n in names} == {"slow", "normal", "fast"}
    spoken = _by_line(built, "synthesize")
    for variants in spoken.values():
        speeds = {s.provenance["synthesize"]["speed"] for s in variants}
        assert speeds <= {0.9, 1.0, 1.15} and len(speeds) >= 2
        for s in variants:  # an offline voice: no emotion asked, none rendered
            assert s.provenance["synthesize"]["style_rendered"] is False
            assert s.provenance["synthesize"]["style_requested"] == ""


def test_the_variants_of_a_line_differ_only_in_the_voice(built):
    kept = _by_line(built, "wer")
    assert sum(len(v) for v in kept.values()) >= 18  # most variants pass the gate
    paired = 0
    for variants in kept.values():
        first = variants[0]
        for s in variants:  # the same words, scene (sample for sample), onset and both twins' backgrounds
            assert s.speech_text == first.speech_text and s.scene_id == first.scene_id
            assert s.scene_audio.sha256 == first.scene_audio.sha256
            assert s.mixture.duration_s == first.mixture.duration_s
            assert s.mix.scene_alone_s == first.mix.scene_alone_s and s.mix.snr_db == first.mix.snr_db
            assert s.mix.danger.scene == first.mix.danger.scene and s.mix.irrelevant.seed == first.mix.irrelevant.seed
            assert s.provenance["wer"]["attempts"][1:] == []  # a variant is never retried
        genders = {s.provenance["synthesize"]["gender"] for s in variants}
        rates = {s.provenance["synthesize"]["speed"] for s in variants}
        paired += genders == {"female", "male"} and len(rates) >= 2
    assert paired >= 3, "too few lines kept both genders at two rates"


def test_a_rerun_changes_nothing(built):
    before = {p.name: p.read_bytes() for p in (built / "manifests").glob("*.jsonl")}
    proc = run_module("construction.pipeline", "--config", str(CONFIG), "--per-category", "1",
                      "--workspace", str(built), "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert {p.name: p.read_bytes() for p in (built / "manifests").glob("*.jsonl")} == before


# --- the release and the report -----------------------------------------------------------------------------

CELLS = [("female", 0.9, "slow"), ("female", 1.15, "fast"), ("male", 0.9, "slow"), ("male", 1.15, "fast")]


def variant_workspace(root: Path, n: int = 12) -> Workspace:
    """make_workspace's samples regrouped: sample i is variant i % 4 of line i // 4 (every manifest alike)."""
    from tests.test_release import make_workspace

    ws = make_workspace(root, n=n)

    def regroup(sample: Sample) -> Sample:
        i = int(sample.sample_id[-2:], 16)
        gender, rate, name = CELLS[i % 4]
        line = f"aor-line{i // 4:012x}"
        variant = {"line_id": line, "name": f"{gender}-us-{name}", "gender": gender, "accent": "en-US",
                   "rate": rate, "emotion": "", "voice": "piper:en_US-test"}
        synth = {**sample.provenance["synthesize"], "gender": gender, "accent": "en-US", "speed": rate,
                 "style_requested": "", "style_rendered": False}
        return sample.model_copy(update={"custom": {**sample.custom, "variant": variant},
                                         "provenance": {**sample.provenance, "synthesize": synth}})

    for stage in ("wer", "annotated", "validated"):
        ws.write_manifest(stage, [regroup(s) for s in ws.read_samples(stage)])
    config = yaml.safe_load((ws.root / "config.yaml").read_text())
    config["synthesize"]["variants"] = {"genders": ["female", "male"], "rates": {"slow": 0.9, "fast": 1.15}}
    ws.snapshot_config(config)
    return ws


def test_a_lines_variants_stay_in_one_split():
    from release.splits import assign_splits

    samples = [Sample(sample_id=f"aor-{i:016x}", category="video_games", speech_text="x", context="c",
                      background_tags=[], placement="underlay", benign_reason="b", speaker_style="calm",
                      custom={"variant": {"line_id": f"line-{i // 3}"}}) for i in range(30)]
    splits = assign_splits(samples, {"dev": 0.3, "test": 0.7}, seed=1)
    assert sorted(len(v) for v in splits.values()) == [9, 21]
    for members in splits.values():
        lines = {line_of(s) for s in members}
        assert all(sum(line_of(s) == line for s in members) == 3 for line in lines)
    with pytest.raises(WorkbenchError, match="a line's variants stay in one split"):
        assign_splits(samples[:3], {"dev": 0.5, "test": 0.5})
    plain = [s.model_copy(update={"custom": {}}) for s in samples]  # without variants: as before, one by one
    assert sorted(len(v) for v in assign_splits(plain, {"dev": 0.3, "test": 0.7}).values()) == [9, 21]


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    base = tmp_path_factory.mktemp("variant-release")
    ws = variant_workspace(base / "ws")
    out = base / "release"
    run_module("release.export", "--allow-unreviewed-sounds", "--workspace", str(ws.root), "--out", str(out),
               check=True)
    rows = sorted(pq.read_table(sorted((out / "data").glob("*.parquet"))).to_pylist(), key=lambda r: r["id"])
    return out, rows, base


def test_the_release_carries_the_voice_columns(release):
    out, rows, _ = release
    assert len(rows) == 12
    for r in rows:
        i = int(r["id"][-2:], 16)
        gender, rate, name = CELLS[i % 4]
        assert r["line_id"] == f"aor-line{i // 4:012x}" and r["variant"] == f"{gender}-us-{name}"
        assert (r["voice_gender"], r["voice_accent"], r["speaking_rate"]) == (gender, "en-US", rate)
        assert r["emotion"] == "" and r["emotion_rendered"] is False
        assert r["speaker_style"] == f"rate {rate:g}x"  # never "excited": the voice spoke no style
    card = (out / "README.md").read_text()
    assert "`line_id`" in card and "`emotion_rendered`" in card
    assert "every line was rendered in 4 variants" in card and "3 lines ship, 3 of them with every variant" in card
    assert "The 12 clips speak 3 lines in several voices; the scene arm heard each line's scene once" in card


def test_the_report_reads_the_voice_factors_within_a_line(release, monkeypatch):
    """The stub refuses every female variant and no male one: 6 gender pairs (3 lines x 2 rates), all
    discordant one way: female - male = +1, exact McNemar p = 2 / 2**6; rate pairs agree: 0, p = 1."""
    from evaluation import run as run_mod
    from tests.audio_llm_stub import AudioLLMStub

    import datasets

    out, rows, base = release
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", str(base / "hf-cache"))  # kept in the test folder
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")  # the stub ignores it
    behaviour = {r["audio_sha256"]: "refuse" if r["voice_gender"] == "female" else "comply" for r in rows}
    with AudioLLMStub(behaviour) as stub:
        assert run_mod.main(["--release", str(out), "--model", "m", "--base-url", stub.url,
                             "--out", str(base / "run"), "--quiet"]) == 0
    proc = run_module("evaluation.report", "--results", str(base / "run"), "--out", str(base / "report"), check=True)
    [run] = json.loads((base / "report" / "report.json").read_text())["runs"]
    paired = run["split_by_factor"]["paired"]
    [gender] = paired["voice_gender"]
    assert (gender["a"], gender["b"], gender["n"], gender["n_lines"]) == ("female", "male", 6, 3)
    assert (gender["a_rate"], gender["b_rate"], gender["difference"]) == (1.0, 0.0, 1.0)
    assert gender["mcnemar_exact_p"] == pytest.approx(2 / 2 ** 6)
    assert gender["ci95_lines"] == [1.0, 1.0] and gender["ci95_families"] == [1.0, 1.0]
    [rate] = paired["speaking_rate"]
    assert (rate["a"], rate["b"], rate["n"], rate["difference"], rate["mcnemar_exact_p"]) == ("0.9x", "1.15x", 6, 0.0, 1.0)
    assert "voice_accent" not in paired and "emotion" not in paired  # one accent; no emotion rendered
    assert "UNPAIRED" in proc.stdout and "voice factors within a line (paired" in proc.stdout
    row = next(line for line in proc.stdout.splitlines()  # the paired table's row (the unpaired one has no "|")
               if line.split()[:2] == ["voice_gender", "female"] and "|" in line)
    assert [c.strip() for c in row.split("|")][1:7] == ["male", "6", "3", "1.00", "0.00", "+1.00"], row
    assert (base / "report" / "voice_factors.png").stat().st_size > 0


def test_an_offline_voice_asked_for_an_emotion_records_it_as_not_rendered(tmp_path):
    """The design says what the voice could not do instead of pretending: asked, not rendered."""
    from tests.conftest import MINI_TAXONOMY, noise_library

    (tmp_path / "taxonomy.yaml").write_text(yaml.safe_dump(MINI_TAXONOMY))
    cfg = tmp_path / "config.yaml"
    cfg.write_text(yaml.safe_dump({
        "generate": {"taxonomy": str(tmp_path / "taxonomy.yaml")},
        "synthesize": {"voices": ["flite:slt", "flite:rms"],
                       "variants": {"rates": {"normal": 1.0}, "emotions": ["angry"]}},
        "mix": {"sounds": str(noise_library(tmp_path / "sounds")), "min_clips_per_defining_tag": 1}}))
    ws = tmp_path / "ws"
    run_module("construction.generate", "--workspace", str(ws), "--config", str(cfg), "--per-category", "1",
               "--quiet", check=True)
    run_module("construction.synthesize", "--workspace", str(ws), "--quiet", check=True)  # the workspace's config
    spoken = list(Workspace(ws).read_samples("synthesize"))
    assert sorted(s.custom["variant"]["name"] for s in spoken) == ["female-us-normal-angry"] * 2 + \
        ["male-us-normal-angry"] * 2
    for s in spoken:
        synth = s.provenance["synthesize"]
        assert (synth["style_requested"], synth["style_rendered"], synth["speed"]) == ("angry", False, 1.0)
    from release.voice_factors import columns, shown_style

    assert columns(spoken[0])["emotion"] == "angry" and columns(spoken[0])["emotion_rendered"] is False
    assert shown_style(spoken[0]) == "rate 1x"


def test_a_lines_scene_is_one_task_and_each_line_is_heard_in_one_arm(tmp_path):
    """Labelling exploits the sharing: the scene arm gets one scene task (and one task per twin background)
    a line, pushed once any variant passed the speech arm; the speech and mixture arms one task a variant;
    pull gives every variant the line's scene labels; the scripted accounts hear a line in one arm only."""
    from annotation.demo_annotators import Known, arm_group
    from annotation.protocol import line_heads
    from annotation.pull import one_arm_per_person
    from annotation.push import arm_items
    from annotation.staging import plan

    ws = variant_workspace(tmp_path / "ws")
    samples = list(ws.read_samples("wer"))
    heads = line_heads(samples)
    assert len(set(heads.values())) == 3 and all(heads[h] == h for h in heads.values())
    items = arm_items(samples, [], [])
    assert len(items["speech"]) == 12 and len([i for i in items["scene"] if i.kind == "sample"]) == 3
    # only the second variant of line 0 passed its speech arm: its line's scene is asked for, once
    second = sorted(s.sample_id for s in samples if heads[s.sample_id] == heads[samples[0].sample_id])[1]
    outcomes = {"samples": {second: {"speech": {"outcome": "passed", "wanted": 0}}}}
    staged = plan(samples, outcomes, {}, [], {})
    assert [i for i in staged.items["scene"] if not i.startswith(("danger-", "irrelevant-"))] == [heads[second]]
    # a person who met one variant's words in the speech arm is not counted in another variant's mixture arm
    from types import SimpleNamespace

    found = {"speech": SimpleNamespace(first_heard={heads[second]: {"ann-1": "2026-01-01T00:00:00"}}),
             "scene": SimpleNamespace(first_heard={}),
             "mixture": SimpleNamespace(first_heard={second: {"ann-1": "2026-01-02T00:00:00"}})}
    mine = SimpleNamespace(annotator="ann-1")
    kept, dropped = one_arm_per_person(second, {"mixture": [mine]}, found,
                                       {"speech": sorted(k for k, h in heads.items() if h == heads[second]),
                                        "scene": [heads[second]], "mixture": [second]})
    assert kept["mixture"] == [] and dropped[0]["kept_arm"] == "speech"
    # the scripted groups: per line, three arms, three groups, the same for every variant
    for head in set(heads.values()):
        line = next(s for s in samples if s.sample_id == head).custom["variant"]["line_id"]
        groups = {role: {arm_group(0, Known(sid, role, "sample", line=line)) for sid, h in heads.items() if h == head}
                  for role in ("speech", "mixture")}
        groups["scene"] = {arm_group(0, Known(head, "scene", "sample", line=line))}
        assert all(len(g) == 1 for g in groups.values()) and len(set().union(*groups.values())) == 3


def test_retry_rejected_is_refused_for_a_variants_build(tmp_path):
    """A variant rendered again on its own could widen its line's timeline and hear another scene than its
    line's other voices: `--retry-rejected` is an `error:` (exit 2) before any work, as typed."""
    ws = tmp_path / "ws"
    run_module("construction.generate", "--config", str(CONFIG), "--per-category", "1", "--workspace", str(ws),
               "--quiet", check=True)
    for stage in ("construction.synthesize", "construction.pipeline"):
        proc = run_module(stage, "--workspace", str(ws), "--retry-rejected", "--quiet")
        assert proc.returncode == 2 and "error: --retry-rejected is refused for a build with voice variants" in proc.stderr
        assert "Traceback" not in proc.stderr
    assert not (ws / "manifests" / "synthesize.jsonl").exists()

"""Procedural sound classes: seeded draws, the published models they follow (measured on many seeds,
margins from those measurements), catalog entries, and a mix that uses them end to end."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from construction.core.errors import WorkbenchError
from construction.core.runner import run_stage
from construction.mix import MixStage
from construction.sounds.library import Clip, load_library, write_catalog
from construction.sounds.procedural import (
    ATTRIBUTION,
    CLASSES,
    NEUTRAL,
    catalog_row,
    draw,
)
from construction.sounds.procedural.base import render_rng
from construction.sounds.procedural.events import BELL_RATIOS
from construction.sounds.procedural.textures import CLAP_RATE_HZ, clap_times
from construction.text.taxonomy import DEFAULT_TAXONOMY
from tests import procedural_measures as m

SR = 16000
SEEDS = range(12)


def _draw(name: str, seed: int, sr: int = SR) -> tuple[np.ndarray, dict]:
    return draw(name, seed, 6.0 if CLASSES[name].kind == "bed" else 0, sr)


def test_the_classes_render_their_taxonomy_tags_with_a_kind_and_a_model():
    import yaml

    tags = yaml.safe_load(DEFAULT_TAXONOMY.read_text())["tags"]
    assert set(CLASSES) == {"whistle", "boxing_bell", "timer", "chopping", "applause", "bubbles", "sizzle",
                            "rain", "wind", "room_tone", "traffic_hum"}
    for name, cls in CLASSES.items():
        assert cls.name == cls.tag == name and cls.tag in tags, name
        assert cls.kind == ("event" if name in ("whistle", "boxing_bell", "timer", "chopping") else "bed"), name
        assert any(ch.isdigit() for ch in cls.model) and len(cls.model) > 40, name  # a citation with its year
    assert all(tags[t].startswith("neutral ambience") for t in NEUTRAL)


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_same_seed_same_audio_other_seeds_differ(name):
    a, pa = _draw(name, 5)
    b, pb = _draw(name, 5)
    assert a.dtype == np.float32 and a.ndim == 1 and np.array_equal(a, b) and pa == pb
    assert json.loads(json.dumps(pa)) == pa and pa["seed"] == 5 and pa["class"] == name
    assert 0.65 < float(np.max(np.abs(a))) <= 0.71  # about -3 dBFS
    others = [_draw(name, s)[0] for s in (6, 7)]
    for other in others:
        n = min(a.size, other.size)
        assert not np.allclose(a[:n], other[:n], atol=1e-3)
    assert np.array_equal(CLASSES[name].render_params(pa, SR), a)  # the stored parameters regenerate it
    if CLASSES[name].kind == "bed":
        assert a.size == 6 * SR
    else:
        assert 0.3 * SR < a.size <= CLASSES[name].duration_s * SR  # natural length within the catalog's


def test_an_event_fits_a_length_it_is_given():
    for name in ("whistle", "boxing_bell", "timer", "chopping"):
        audio, params = draw(name, 3, 1.5, SR)
        assert abs(audio.size / SR - 1.5) < 0.02 and params["duration_s"] == 1.5, name


def test_unknown_class_and_a_bed_without_length_are_refused():
    with pytest.raises(KeyError, match="no procedural class 'kazoo'"):
        draw("kazoo", 1, 0, SR)
    with pytest.raises(ValueError, match="needs a duration_s > 0"):
        draw("rain", 1, 0, SR)


# --- the models, measured (figures from 40 seeds at 16 and 48 kHz, see the comments) ----------------

@pytest.mark.parametrize("sr", [16000, 48000])
def test_whistle_is_a_2_to_4_khz_tone_fluttering_at_the_drawn_rate(sr):
    errors = []
    for seed in SEEDS:
        audio, p = _draw("whistle", seed, sr)
        assert 2000 <= m.spectral_peak_hz(audio, sr) <= 4000  # measured 2305-3492 Hz
        errors.append(m.flutter_hz(audio, p, sr) - p["flutter_hz"])
    assert max(abs(e) for e in errors) < 3.0  # measured within 1.3 Hz (flutter 22-38 Hz)


def test_boxing_bell_strongest_partials_sit_at_the_bell_ratios():
    misses = []
    for seed in SEEDS:
        audio, p = _draw("boxing_bell", seed)
        misses += m.bell_partial_misses(audio, p, SR)
    assert max(misses) < 0.015  # measured <= 0.78 % (0.3 % casting mistune), ratios 1.183 / 1.506 / 2.514 ...
    assert min(abs(a / b - 1) for a in BELL_RATIOS for b in BELL_RATIOS if a != b) > 0.05  # they are inharmonic


def test_each_bubble_rises_in_frequency_as_van_den_doel_says():
    cls, slopes = CLASSES["bubbles"], []
    for seed in SEEDS:
        params = {**cls.params(seed, 6.0, SR), "rate_hz": 3.0}  # sparse, so bubbles are heard one by one
        slopes += m.bubble_rises(cls.render_params(params, SR), params, SR)
    assert len(slopes) > 80  # measured 585 isolated bubbles over 40 seeds
    assert all(measured > 0 for measured, _ in slopes)  # every one rises (measured >= 1290 Hz/s)
    ratios = [a / b for a, b in slopes]
    assert 0.85 < min(ratios) and max(ratios) < 1.15  # measured 0.95-1.03 of f0 * rise * d


def test_applause_onsets_match_the_clappers_and_their_rates():
    cls, found, true = CLASSES["applause"], [], []
    for seed in SEEDS:
        params = {**cls.params(seed, 4.0, SR), "clappers": 3}  # three clappers: claps can be counted
        n = m.onset_count(cls.render_params(params, SR), SR)
        assert 0.7 * 3 * CLAP_RATE_HZ[0] * 4 <= n <= 1.2 * 3 * CLAP_RATE_HZ[1] * 4  # measured 28-63 of 25-72
        found.append(n)
        true.append(sum(t.size for t in clap_times(params, render_rng(seed))))
    assert 0.8 < np.median(np.array(found) / np.array(true)) < 1.1  # measured median 0.92
    assert min(CLASSES["applause"].params(s, 4.0, SR)["clappers"] for s in SEEDS) >= 8  # a crowd by default


def test_timer_is_a_gated_tone_at_its_duty_cycle():
    for seed in SEEDS:
        audio, p = _draw("timer", seed)
        segments = m.gated_segments(audio, SR)
        assert len(segments) == m.expected_beeps(p)  # measured: exact on 40 seeds
        assert 0.9 < np.median(segments) / p["beep_s"] < 1.1  # measured 0.98-1.01
        assert m.tonal_peak_db(audio, SR) > 15  # a tone: measured >= 20.8 dB


def test_neutral_ambiences_have_no_tonal_peak():
    for name in NEUTRAL:
        peaks = [m.tonal_peak_db(_draw(name, seed)[0], SR) for seed in SEEDS]
        assert max(peaks) < 10, name  # measured <= 6.7 dB; the bell >= 31.8, the timer >= 20.8
    assert min(m.tonal_peak_db(_draw("boxing_bell", s)[0], SR) for s in SEEDS) > 15


# --- the library and the mix --------------------------------------------------------------------

def _procedural_library(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    write_catalog(root, [Clip(**catalog_row(cls)) for cls in CLASSES.values()])
    return root


def test_catalog_entries_load_without_a_file_and_a_changed_model_is_stale(tmp_path):
    root = _procedural_library(tmp_path / "lib")
    library = load_library(root)
    assert library.problems == [] and len(library.clips) == len(CLASSES)
    whistle = library.get("procedural-whistle")
    assert (whistle.procedural, whistle.path, whistle.licence, whistle.attribution) == \
        ("whistle", "procedural:whistle", "CC0-1.0", ATTRIBUTION)
    assert library.select(["room_tone"], "CC-BY-4.0")[0].procedural == "room_tone"
    with pytest.raises(WorkbenchError, match="procedural class 'whistle': it has no file"):
        library.load_audio(whistle, SR)
    rows = [json.loads(line) for line in (root / "catalog.jsonl").read_text().splitlines()]
    rows[0]["sha256"] = "0" * 64
    rows[1]["procedural"] = "kazoo"
    (root / "catalog.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    reasons = {p.clip_id: p.reason for p in load_library(root).problems}
    assert "changed since the catalog was written" in reasons[rows[0]["clip_id"]]
    assert "unknown procedural class 'kazoo'" in reasons[rows[1]["clip_id"]]


@pytest.fixture
def proc_taxonomy(monkeypatch):
    import tests.test_mix as tm

    taxonomy = copy.deepcopy(tm.TAXONOMY)
    taxonomy["tags"].update({name: name for name in CLASSES})
    taxonomy["categories"][0]["background_tags"] += ["applause", "whistle", "timer"]
    taxonomy["categories"][0]["scenes"].append(
        {"id": "vg_stadium", "context": "Applause and a referee's whistle.", "benign_reason": "A match on screen.",
         "defining": ["applause", "whistle"], "support": ["timer"], "placements": ["underlay", "tail"]})
    taxonomy["categories"][0]["speech"][-1]["scenes"].append("vg_stadium")
    monkeypatch.setattr(tm, "TAXONOMY", taxonomy)
    return tm


def test_a_scene_of_procedural_sounds_mixes_stores_its_draws_and_regenerates(tmp_path, proc_taxonomy):
    tm = proc_taxonomy
    library = _procedural_library(tmp_path / "sounds")
    specs = [("vg_stadium", "underlay", 1.5), ("vg_stadium", "tail", 2.0)]
    outputs = []
    for name in ("a", "b"):
        ws = tm._workspace(tmp_path / name, specs)
        run_stage(ws, MixStage(str(ws.root), tm._config(library)), jobs=1, progress=False)
        samples = list(ws.read_samples("mix"))
        assert len(samples) == 2 and not list(ws.read_rejected("mix"))
        outputs.append((ws.manifest_path("mix").read_bytes(), [ws.load_audio(s.mixture) for s in samples]))
    assert outputs[0][0] == outputs[1][0]  # same recipe, draws and bytes
    assert all(np.array_equal(a, b) for a, b in zip(outputs[0][1], outputs[1][1]))
    sounds = {s.sample_id: {x.tag: x for x in s.mix.sounds} for s in samples}
    whistles = []
    for by_tag in sounds.values():
        assert set(by_tag) == {"applause", "whistle", "timer"}
        bed, event = by_tag["applause"], by_tag["whistle"]
        assert bed.kind == "bed" and len(bed.procedural["seeds"]) == len(bed.procedural["params"]) == 1
        assert event.kind == "event" and len(event.procedural["seeds"]) == len(event.onsets_s) >= 1
        assert [p["seed"] for p in event.procedural["params"]] == event.procedural["seeds"]
        assert len(set(event.procedural["seeds"])) == len(event.onsets_s)  # a fresh draw per copy
        whistles += event.procedural["seeds"]
        # the stored parameters alone give the draws back
        p = event.procedural["params"][0]
        assert np.array_equal(CLASSES["whistle"].render_params(p, SR), draw("whistle", p["seed"], 0, SR)[0])
    assert len(set(whistles)) == len(whistles)  # no two uses share a waveform


def test_the_spectrogram_sheet_script_writes_a_grid(tmp_path):
    out = tmp_path / "sheet.png"
    proc = subprocess.run([sys.executable, "scripts/procedural_sheet.py", "--out", str(out), "--seconds", "3"],
                          capture_output=True, text=True, check=False, cwd=Path(__file__).resolve().parents[1])
    assert proc.returncode == 0, proc.stderr
    from PIL import Image

    with Image.open(out) as image:
        width, height = image.size
    assert image.format == "PNG" and (width, height) == (1800, 1440)  # 3 x 4 panels of 600 x 360 px
    bad = subprocess.run([sys.executable, "scripts/procedural_sheet.py", "--out", str(tmp_path / "x.png"),
                          "--seconds", "0"], capture_output=True, text=True, check=False, cwd=Path(__file__).resolve().parents[1])
    assert bad.returncode == 2 and "error:" in bad.stderr and not (tmp_path / "x.png").exists()

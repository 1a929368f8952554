# ruff: noqa: F811  (the library fixture comes from tests.test_mix)
"""The twins: the mixture's speech track, untouched, over a background that masks it as the scene does
on the ERB grid it is matched on AND on linear grids nothing matches (irrelevant), and over a danger
scene on a masker of the scene's energy on another timeline (danger); at the mixture's scene level alone;
their backgrounds limited around the speech, never the speech; reruns identical; a remix remakes them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
from scipy import signal

from construction.core.runner import run_stage
from construction.mix import MixStage
from construction.mixing import heldout
from construction.mixing.levels import LIMIT_DB_PER_MS, limiter_gain, peak_limit, steps
from construction.mixing import masker
from construction.mixing.masker import FRAME_S, HOP_S, _stft, consistent, rotation, scene_masker, shifted, slope_kept_db
from construction.mixing.twin import DANGER_ENVELOPE_ERB
from construction.mixing.masking import erb_rate, gain_for_proportion, glimpse_proportion, local_snr_db, proportion
from construction.sounds.library import loudness_lufs
from construction.sounds.procedural import DANGER_SCENES
from tests.test_mix import SPECS, SR, _config, _parts, _workspace, library  # noqa: F401 (a fixture)

REPO = Path(__file__).resolve().parents[1]
TWINS = {"irrelevant": ("irrelevant_audio", "irrelevant_scene_audio"), "danger": ("danger_audio", "danger_scene_audio")}


def _speech(ws, sample):
    """The speech part of the stored mixture (the speech at the mixture's level, guard included)."""
    speech_part, _, start, n = _parts(ws, sample)
    return speech_part, start, n


def test_the_twins_carry_the_mixtures_speech_at_its_level_and_mask_it_alike_on_grids_nothing_matches(
        tmp_path, library):
    ws = _workspace(tmp_path / "ws", SPECS)
    config = _config(library)
    stats = run_stage(ws, MixStage(str(ws.root), config), jobs=1, progress=False)
    samples = list(ws.read_samples("mix"))
    assert stats["kept"] == len(SPECS) == len(samples)
    fade = int(config.mix.fade_s * SR)
    change, erb_miss = [], []
    level_miss: dict[str, list[float]] = {k: [] for k in TWINS}
    held: dict[str, dict[str, list[float]]] = {k: {g: [] for g in heldout.GRIDS} for k in TWINS}
    for sample in samples:
        speech_part, start, n = _speech(ws, sample)
        scene = ws.load_audio(sample.scene_audio).astype(np.float64)
        words = (start, start + n)
        mixture_speech = heldout.speech_gain_db(ws.load_audio(sample.mixture), speech_part, words)
        mixture = {"erb": glimpse_proportion(speech_part[start:start + n], scene[start:start + n], SR),
                   **heldout.glimpses(speech_part[start:start + n], scene[start:start + n], SR)}
        assert abs(mixture["erb"] - sample.mix.glimpse_proportion) <= 0.01
        for kind, (field, alone_field) in TWINS.items():
            audio = ws.load_audio(getattr(sample, field)).astype(np.float64)
            background = ws.load_audio(getattr(sample, alone_field)).astype(np.float64)
            assert audio.size == scene.size and 20 * np.log10(np.max(np.abs(audio))) <= config.mix.peak_dbfs
            # the stored background alone is the twin minus the mixture's speech track, unchanged
            assert np.max(np.abs(audio - speech_part - background)) < 2e-4
            change.append(heldout.speech_gain_db(audio, speech_part, words) - mixture_speech)
            level_miss[kind].append(loudness_lufs(background[fade:start - fade], SR)
                                    - loudness_lufs(speech_part[start:start + n], SR) - sample.mix.scene_level_db)
            erb_miss.append(glimpse_proportion(speech_part[start:start + n], background[start:start + n], SR)
                            - mixture["erb"])
            for grid, value in heldout.glimpses(speech_part[start:start + n], background[start:start + n], SR).items():
                held[kind][grid].append(value - mixture[grid])
        assert sample.mix.danger.scene in DANGER_SCENES
    # the same speech at the same level in all three: exact by construction (above); measured by projection
    # onto the speech track, which the backgrounds disturb: on this corpus up to 0.08 dB (irrelevant) and
    # 0.17 dB (danger; p95 over both 0.09), in the default builds p95 0.13 and at most 0.35
    assert np.percentile(np.abs(change), 95) <= 0.15 and max(map(abs, change)) <= 0.3, change
    assert max(map(abs, level_miss["irrelevant"])) <= 0.6, level_miss
    # the danger scene's glass and screams are limited where they would peak too high: quieter, never louder
    assert -3.0 <= min(level_miss["danger"]) and max(level_miss["danger"]) <= 0.6, level_miss
    assert max(map(abs, erb_miss)) <= 0.01, erb_miss
    # on the held-out linear grids, over this corpus: close, and not one-sided (margins measured: see the
    # docstring of construction.mixing.masker for the designs that failed these)
    for kind, grids in held.items():
        for grid, d in grids.items():
            d = np.asarray(d)
            assert np.median(np.abs(d)) <= 0.03 and np.percentile(np.abs(d), 95) <= 0.08, (kind, grid, d)
    written = json.loads(ws.stats_path("mix").read_text())
    overall = written["twin_masking"]["OVERALL"]
    assert overall["irrelevant"]["erb"]["n"] == overall["danger"]["erb"]["n"] == len(SPECS)
    assert overall["irrelevant"]["speech_change_db"]["max_abs"] <= 0.15
    assert set(overall["danger"]) >= {"erb", *heldout.GRIDS, "speech_change_db", "limit_db", "envelope_r"}
    assert written["irrelevant_twins"]["without_twin"] == 0
    # each share masking less comes with its 95 % interval, which holds it
    for kinds in written["twin_masking"].values():
        for figures in kinds.values():
            for grid in ("erb", *heldout.GRIDS):
                low, high = figures[grid]["share_masking_less_ci95"]
                assert 0 <= low <= figures[grid]["share_masking_less"] <= high <= 1, figures[grid]
    # the held-out audit, typed as the docs give it (from the clone's root), on this workspace's mixtures
    audit = tmp_path / "audit.json"
    done = subprocess.run([sys.executable, "scripts/heldout_audit.py", "--workspace", str(ws.root), "--stage", "mix",
                           "--json", str(audit)], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    audited = json.loads(audit.read_text())["summary"]["OVERALL"]["irrelevant"]
    assert audited["n"] == len(SPECS)
    for grid in ("erb", *heldout.GRIDS, "check_32ms", "check_128ms"):
        low, high = audited[grid]["share_masking_less_ci95"]
        assert low <= audited[grid]["share_masking_less"] <= high, audited[grid]
        assert f"less {audited[grid]['share_masking_less']:.2f} [{low:.2f}-{high:.2f}]" in done.stdout
    # no click in any of the five rendered tracks of any sample: each is checked and counted
    assert all(set(s.provenance["mix"]["clicks"]) >= {"mixture", "scene", "twin", "danger", "danger_scene"}
               for s in samples)
    assert written["clicks"] == 0


def test_a_shares_interval_is_wilsons():
    """The 95 % interval beside each share masking less: Wilson's, as statsmodels computes it too; wide for
    a category's hundred twins (26 of 97 cannot tell a share of 0.3 from one of 0.2)."""
    from statsmodels.stats.proportion import proportion_confint

    for hits, n in ((26, 97), (55, 191), (0, 12), (12, 12), (50, 100)):
        low, high = heldout.share_interval(hits, n)
        assert np.allclose([low, high], proportion_confint(hits, n, alpha=0.05, method="wilson"), atol=6e-4)
    low, high = heldout.share_interval(26, 97)
    assert low < 0.2 and high > 0.35
    assert heldout.share_interval(0, 0) == [0.0, 1.0]


def _harmonic(seconds: float, f0: float = 220.0, flat: bool = False) -> np.ndarray:
    """Harmonics of f0 up to 4 kHz, at 1/k amplitudes (a tone) or all equal (`flat`)."""
    t = np.arange(int(seconds * SR)) / SR
    partials = (np.sin(2 * np.pi * k * f0 * t + 0.7 * k * k) / (1 if flat else k) for k in range(1, int(4000 / f0)))
    return sum(partials) * 0.1


def _pitch_strength(x: np.ndarray, f0: float) -> float:
    """The normalised autocorrelation's peak within 3 % of f0's period (1: periodic at f0, 0: no pitch)."""
    spectrum = np.abs(np.fft.rfft(x, 2 * x.size)) ** 2
    ac = np.fft.irfft(spectrum)[:x.size]
    period = SR / f0
    return float(ac[int(period * 0.97):int(period * 1.03) + 1].max() / ac[0])


def _on_and_off(n: int, rng: np.random.Generator) -> np.ndarray:
    """A gate switched at random every 0.1-0.4 s: a rhythm to follow."""
    edges = np.cumsum(rng.uniform(0.1, 0.4, 40) * SR).astype(int)
    return np.searchsorted(edges, np.arange(n), side="right") % 2 == 0


def test_the_masker_keeps_no_harmonic_complex_its_pitch():
    """The block rotation moves each block's partials by its own random number of bins, so harmonics no
    longer line up. Measured on equal-amplitude complexes (with 1/k amplitudes the figure reads where the
    fundamental alone lands), 4 seeds each: scenes 0.90-0.96; maskers 0.02-0.30 (500 Hz blocks: the
    highest at 100 Hz, whose five harmonics a block moves together; 250 Hz blocks 0.10-0.30); cuts put
    in the spectrum's valleys instead kept 0.40-0.69 (the shifts are then multiples of f0)."""
    rng = np.random.default_rng(4)
    n, span = 6 * SR, (2 * SR, 4 * SR)
    under = slice(*span)
    for f0 in (100, 150, 220, 330):
        strengths = {None: [], DANGER_ENVELOPE_ERB: []}
        for seed in range(4):
            scene = _harmonic(6.0, f0, flat=True) * _on_and_off(n, rng) + 0.01 * rng.standard_normal(n)
            assert _pitch_strength(scene[under], f0) > 0.8
            for erb in (None, DANGER_ENVELOPE_ERB):  # the irrelevant twin's masker and the danger twin's
                strengths[erb].append(_pitch_strength(scene_masker(scene, SR, span, seed=seed, envelope_erb=erb)[under],
                                                      f0))
        for erb, values in strengths.items():
            assert np.mean(values) < 0.35, (f0, erb, values)


def _erb_band_levels_db(x: np.ndarray, bands: int = 24) -> np.ndarray:
    """Mean power (dB) in `bands` bands equally wide on the ERB-rate scale from 100 Hz to 7 kHz, on a 32 ms
    grid (not the masker's 64 ms one)."""
    power = np.abs(_stft(x, SR, 0.032, 0.008)) ** 2
    rate = erb_rate(np.linspace(0, SR / 2, power.shape[0]))
    edges = np.linspace(erb_rate(np.array(100.0)), erb_rate(np.array(7000.0)), bands + 1)
    which = np.digitize(rate, edges) - 1
    return np.array([10 * np.log10(power[which == b].mean() + 1e-20) for b in range(bands)])


def _band_error_db(scene: np.ndarray, span: tuple[int, int], envelope_erb: float | None = None) -> float:
    """The RMS error (dB) of the masker's ERB band levels under the speech against the scene's, after one
    broadband gain (as the twin's), averaged over 4 seeds."""
    under = slice(*span)
    reference = _erb_band_levels_db(scene[under])
    rms = []
    for seed in range(4):
        made = scene_masker(scene, SR, span, seed=seed, envelope_erb=envelope_erb)[under]
        made *= np.sqrt(np.sum(scene[under] ** 2) / np.sum(made ** 2))
        rms.append(np.sqrt(np.mean((_erb_band_levels_db(made) - reference) ** 2)))
    return float(np.mean(rms))


def test_the_danger_masker_keeps_the_scenes_band_levels_where_whole_blocks_move_them():
    """Whole 500 Hz blocks rotated move energy between the ERB bands of the lowest blocks (a scene strong at
    150-400 Hz keeps little there), and the one broadband gain then sets the higher bands off the scene;
    rotating only the fine structure keeps the ERB-rate envelope where it was. Measured here (the bands'
    RMS error, 4 seeds): 6.2 dB with whole blocks, 6.8 dB with their slopes put back (the irrelevant
    twin's: a band is no slope), 1.7 dB with the envelope kept."""
    rng = np.random.default_rng(7)
    n, span = 6 * SR, (2 * SR, 4 * SR)
    low = signal.sosfilt(signal.butter(4, (150, 400), "bandpass", fs=SR, output="sos"), rng.standard_normal(n))
    scene = 8 * low + _harmonic(6.0, 190.0) * _on_and_off(n, rng) + 0.3 * rng.standard_normal(n)
    errors = {erb: _band_error_db(scene, span, erb) for erb in (None, DANGER_ENVELOPE_ERB)}
    assert errors[DANGER_ENVELOPE_ERB] < 3.0 and errors[None] > 2 * errors[DANGER_ENVELOPE_ERB], errors


def test_the_rotation_puts_each_blocks_slope_back_and_keeps_its_energy():
    """A rotated block whose spectrum falls has its loud end moved up: each piece gets back the level the
    block's slope gives where it lands, the block's energy unchanged."""
    bins = 513
    order = rotation(bins, seed=3)
    falling = 10 ** (-0.2 * np.arange(bins) / 10)  # -0.2 dB a bin: its slope is a line, put back exactly
    assert np.allclose(falling[order] * 10 ** (slope_kept_db(falling, order) / 10), falling)
    rough = np.random.default_rng(2).exponential(size=bins) * falling  # any spectrum: each block's energy kept
    kept = rough[order] * 10 ** (slope_kept_db(rough, order) / 10)
    for low in range(0, bins, 32):
        assert np.isclose(kept[low:low + 32].sum(), rough[low:low + 32].sum())
    assert np.allclose(slope_kept_db(np.ones(bins), order), 0.0)  # a flat spectrum: nothing to put back


def test_the_irrelevant_masker_keeps_a_falling_scenes_band_levels(monkeypatch):
    """A scene that falls steeply with frequency (a crowd, traffic, a room's rumble): whole 500 Hz blocks
    rotated move its loud low end up inside each block, by up to 500 Hz (the ERB grid's 100-600 Hz holds 8
    of its 32 bands), and the broadband gain then sets every higher band off the scene; with each block's
    slope put back the bands stay near the scene's. Measured here (the bands' RMS error on a 32 ms grid,
    4 seeds): 2.5 dB with the plain rotation, 0.7 dB with the slopes put back."""
    rng = np.random.default_rng(7)
    n, span = 6 * SR, (2 * SR, 4 * SR)
    scene = (signal.sosfilt(signal.butter(1, 80, "lowpass", fs=SR, output="sos"), rng.standard_normal(n))
             + 0.002 * rng.standard_normal(n))
    kept = _band_error_db(scene, span)
    monkeypatch.setattr(masker, "slope_kept_db", lambda power, order, *args: np.zeros(power.size))
    plain = _band_error_db(scene, span)
    assert kept < 1.2 and plain > 2 * kept, (kept, plain)


def test_the_masker_follows_the_scenes_energy_under_the_speech_and_is_steady_outside():
    rng = np.random.default_rng(4)
    n = 6 * SR
    span = (2 * SR, 4 * SR)
    # a harmonic tone switched on and off at random (0.1-0.4 s a state): a rhythm
    scene = _harmonic(6.0) * _on_and_off(n, rng) + 0.01 * rng.standard_normal(n)
    masker = scene_masker(scene, SR, span, seed=1)
    # under the speech the energy follows the scene's on and off, 10 ms by 10 ms
    env = heldout.envelope_correlation(masker, scene, SR, span)
    assert env["r"] > 0.9 and env["r"] > env["baseline_p95"] + 0.3, env
    # before the speech it is steady: no on and off to hear
    before = heldout.frame_levels_db(masker[SR // 2:span[0] - SR // 4], SR)
    scene_before = heldout.frame_levels_db(scene[SR // 2:span[0] - SR // 4], SR)
    assert np.std(before) < 3 < np.std(scene_before)
    # ... and noise, not a drone: its bins' levels scatter as noise's do (consistent phases would make its
    # fixed spectrum steady tones; measured 5.3 dB here, about 2.3 dB for such a drone)
    lead = np.abs(_stft(masker[SR // 2:span[0] - SR // 2], SR, FRAME_S, HOP_S))[:, 2:-2]
    strong = lead.mean(axis=1) > 0.01 * lead.mean(axis=1).max()
    assert np.median(np.std(20 * np.log10(lead[strong] + 1e-12), axis=1)) > 4.0
    # the danger twin's masker: the same energy rotated in time under the speech, so it does not follow
    rotated = shifted(scene, np.ones(n), span, SR // 8 * 3)  # 0.375 s: off where the scene is on
    other = scene_masker(scene, SR, span, seed=2, envelope_of=rotated)
    env = heldout.envelope_correlation(other, scene, SR, span)
    assert env["r"] < env["baseline_p95"], env
    # the same seed gives the same bytes, another seed other noise
    assert np.array_equal(masker, scene_masker(scene, SR, span, seed=1))
    assert not np.array_equal(masker, scene_masker(scene, SR, span, seed=3))


def test_the_carriers_own_spectrum_is_its_target_where_random_phases_speckle_around_it():
    """The carrier's phases are made consistent (fast Griffin-Lim): random phases overlap-add into a
    short-time spectrum whose cells scatter around the target, and that scatter on top of the scene's own
    is what made the twins mask less than noisy scenes (issue 48); consistent phases leave a fraction."""
    rng = np.random.default_rng(6)
    n = 4 * SR
    scene = rng.standard_normal(n) * np.repeat(rng.uniform(0.2, 1.0, n // 800), 800)  # noise, 50 ms steps
    target = np.abs(_stft(scene, SR, FRAME_S, HOP_S))
    phase = np.exp(2j * np.pi * rng.random(target.shape))

    def scatter(x):  # the carrier's cells against the target's, in dB, where the target is not near zero
        got = np.abs(_stft(x, SR, FRAME_S, HOP_S))[:, :target.shape[1]]
        keep = target > 1e-3 * target.max()
        return float(np.std(20 * np.log10(got[keep] + 1e-12) - 20 * np.log10(target[keep])))
    random_only = scatter(consistent(target, phase, SR, n, iterations=0))
    made = scatter(consistent(target, phase, SR, n))
    # measured (seeds 1, 2, 3, 6): 6.95-6.98 dB with random phases, 2.47-2.48 dB after 16 rounds
    assert random_only > 5.5 and made < 0.5 * random_only, (random_only, made)


def _tonal_scene(seed: int) -> np.ndarray:
    """Four held notes (partials to 7.5 kHz over a low noise floor) stepping in level every 0.1 s: a
    score's fine structure, which Griffin-Lim smears."""
    rng = np.random.default_rng(seed)
    n = 6 * SR
    t = np.arange(n) / SR
    x = 0.003 * rng.standard_normal(n)
    for f0 in rng.uniform(110, 330, 4):
        for k in range(1, 40):
            if f0 * k < 7500:
                x += rng.uniform(0.2, 1) / k * np.sin(2 * np.pi * f0 * k * t + rng.uniform(0, 6.3))
    return x * np.repeat(rng.uniform(0.5, 1.0, n // 1600 + 1), 1600)[:n]


def _fine_structure_gap(scene: np.ndarray, made: np.ndarray, span: tuple[int, int]) -> float:
    """The mean |quantile difference| (dB) of the two tracks' fine structure under `span`, over the
    octave regions the masker matches."""
    power = np.abs(_stft(scene, SR, FRAME_S, HOP_S)) ** 2
    got = np.abs(_stft(made, SR, FRAME_S, HOP_S))[:, :power.shape[1]] ** 2
    under = masker.under_weight(power.shape[1], int(HOP_S * SR), span, int(masker.XFADE_S * SR)) >= 1
    freqs = np.linspace(0, SR / 2, power.shape[0])
    (a, _), (b, _) = masker.fine_structure(power[:, under], SR), masker.fine_structure(got[:, under], SR)
    gaps = [np.mean(np.abs(np.percentile(b[r], masker.FINE_QUANTILES) - np.percentile(a[r], masker.FINE_QUANTILES)))
            for r in [(freqs >= low) & (freqs < high) for low, high in masker.REGIONS_HZ]]
    return float(np.mean(gaps) * 10 / np.log(10))


def test_the_maskers_keep_the_scenes_fine_structure_where_griffin_lim_smears_it(monkeypatch):
    """Issue 48: Griffin-Lim's spectrum is flatter than its target, and film's twins masked more than the
    scene on a 64 ms grid (0.70 of samples); the irrelevant twin's masker remaps its target's fine
    structure until the made signal's is distributed as the scene's (masker.fine_structure_kept); the danger
    twin's masker too."""
    span = (2 * SR, 4 * SR)
    for envelope_erb in (None, DANGER_ENVELOPE_ERB):  # the irrelevant twin's masker, the danger twin's
        plain, kept = [], []
        for seed in range(4):
            scene = _tonal_scene(seed)
            kept.append(_fine_structure_gap(scene, scene_masker(scene, SR, span, seed=1, envelope_erb=envelope_erb),
                                            span))
            with monkeypatch.context() as m:
                m.setattr(masker, "FINE_ROUNDS", 0)
                plain.append(_fine_structure_gap(scene, scene_masker(scene, SR, span, seed=1,
                                                                     envelope_erb=envelope_erb), span))
        # measured: 1.14-1.87 dB without, 0.72-1.29 dB with (each seed 0.53-0.80 of its own), both maskers
        assert all(k < p for k, p in zip(kept, plain)), (envelope_erb, plain, kept)
        assert np.mean(kept) < 0.8 * np.mean(plain), (envelope_erb, plain, kept)


def test_the_danger_maskers_crossfades_follow_the_shifted_scene_not_the_scene():
    """The masker follows its track over the speech's span AND the crossfades either side of it: shifting
    the span alone left the crossfades on the scene's own timeline (its events at the span's edges)."""
    n, span, margin = 6 * SR, (2 * SR, 4 * SR), SR // 4
    scene = np.arange(n, dtype=float)
    out = shifted(scene, np.ones(n), span, SR // 2, margin)
    start, end = span[0] - margin, span[1] + margin
    assert np.array_equal(out[:start], scene[:start]) and np.array_equal(out[end:], scene[end:])
    assert np.array_equal(out[start:end], np.roll(scene[start:end], -(SR // 2)))  # the crossfades included


def test_the_limiter_turns_the_background_down_around_the_speech_never_the_speech_and_never_in_a_step():
    rng = np.random.default_rng(5)
    n = 3 * SR
    speech = np.clip(0.15 * rng.standard_normal(n), -0.6, 0.6) * (np.arange(n) % 4000 < 2500)
    background = 0.05 * rng.standard_normal(n)
    for at in (SR // 2, SR, 2 * SR):  # loud bursts that would peak far above -1 dBFS with the speech
        background[at:at + 4000] += rng.choice([-1.0, 1.0], 4000) * 2.0 * np.hanning(4000)
    assert steps(background, SR) == 0  # the bursts rise and fall slowly: any step would be the limiter's
    factor, cut_db = limiter_gain(speech, background, -1.0, SR)
    out = speech + background * factor
    assert np.max(np.abs(out)) <= peak_limit(-1.0) + 1e-9
    assert 10 < cut_db < 40 and np.min(factor) > 0
    assert np.all(factor[:SR // 2 - 1000] == 1.0)  # untouched far from the bursts
    db = 20 * np.log10(factor)
    assert np.max(np.abs(np.diff(db))) * SR / 1000 <= LIMIT_DB_PER_MS + 1e-6  # a ramp, no faster
    assert steps(background * factor, SR) == 0
    assert limiter_gain(speech, 0.01 * background, -1.0, SR)[1] == 0.0  # nothing to do: nothing done
    # speech that alone peaks over the limit (the mixture's scene had cancelled it): the background is
    # turned down only as far as the speech itself leaves room under full scale, never cut to a hole
    loud = speech.copy()
    loud[SR + 100] = 0.95
    factor, cut_db = limiter_gain(loud, 0.05 * np.sign(loud + 1e-9), -1.0, SR)
    assert cut_db < 12 and np.max(np.abs(loud + 0.05 * np.sign(loud + 1e-9) * factor)) < 1.0


def test_the_glimpse_proportion_counts_cells_where_the_speech_wins_by_3_db():
    rng = np.random.default_rng(1)
    speech = rng.standard_normal(SR)
    assert glimpse_proportion(speech, 0.1 * rng.standard_normal(SR), SR) > 0.99  # 20 dB below: every cell
    assert glimpse_proportion(speech, 10 * rng.standard_normal(SR), SR) < 0.01  # 20 dB above: none
    for frame, hop in heldout.GRIDS.values():  # the held-out linear grids count alike
        assert heldout.linear_glimpse(speech, 0.1 * rng.standard_normal(SR), SR, frame, hop) > 0.97
        assert heldout.linear_glimpse(speech, 10 * rng.standard_normal(SR), SR, frame, hop) < 0.03
    # the gain that gives a proportion is exact to a cell: checked on the cells' local SNRs
    snr = local_snr_db(speech, rng.standard_normal(SR) * np.linspace(0.1, 3, SR), SR)
    for target in (0.1, 0.37, 0.8):
        assert abs(proportion(snr, gain_for_proportion(snr, target)) - target) <= 1 / snr.size


def test_the_twin_is_seeded_rerun_identical_and_remade_by_a_remix(tmp_path, library):
    manifests = []
    for name in ("a", "b"):
        ws = _workspace(tmp_path / name, SPECS[:4])
        run_stage(ws, MixStage(str(ws.root), _config(library)), jobs=2, progress=False)
        manifests.append(ws.manifest_path("mix").read_bytes())
    assert manifests[0] == manifests[1]  # the twins' hashes and recipes included
    samples = list(ws.read_samples("mix"))
    assert len({s.irrelevant_audio.sha256 for s in samples}) == 4  # each its own noise
    assert len({s.mix.irrelevant.seed for s in samples}) == 4
    # the WER stage's retry re-mixes with attempt = 1: a new recipe seed, so new noise
    stage = MixStage(str(ws.root), _config(library))
    stage.setup()
    synthesized = {s.sample_id: s for s in ws.read_samples("synthesize")}
    for sample in samples:
        again = stage.mix_one(synthesized[sample.sample_id], attempt=1)
        assert again.mix.irrelevant.seed != sample.mix.irrelevant.seed
        assert again.irrelevant_audio.sha256 != sample.irrelevant_audio.sha256
        assert abs(again.mix.irrelevant.glimpse_proportion - again.mix.glimpse_proportion) <= 0.01


def test_the_twin_can_be_switched_off(tmp_path, library):
    ws = _workspace(tmp_path / "ws", SPECS[:2])
    run_stage(ws, MixStage(str(ws.root), _config(library, **{"mix.irrelevant_twin": False})), jobs=1, progress=False)
    samples = list(ws.read_samples("mix"))
    assert len(samples) == 2 and all(s.irrelevant_audio is None and s.irrelevant_scene_audio is None
                                     and s.mix.irrelevant is None for s in samples)
    assert json.loads(ws.stats_path("mix").read_text())["irrelevant_twins"]["made"] == 0
    # the danger twin is its own switch
    assert all(s.danger_audio is not None and s.mix.danger is not None for s in samples)
    ws = _workspace(tmp_path / "ws2", SPECS[:2])
    run_stage(ws, MixStage(str(ws.root), _config(library, **{"mix.danger_twin": False})), jobs=1, progress=False)
    assert all(s.danger_audio is None and s.danger_scene_audio is None and s.mix.danger is None
               and s.irrelevant_audio is not None for s in ws.read_samples("mix"))

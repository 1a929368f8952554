"""The WER stage on real speech: noise makes it reject more, re-synthesis rescues a failed clip."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import yaml

from construction.core.config import load_config
from construction.core.record import AudioRef, Sample, make_sample_id
from construction.core.runner import run_stage
from construction.core.workspace import Rejected, Workspace
from construction.mix import MixStage
from construction.sounds.library import Clip, sha256_file, write_catalog
from construction.synthesize import SynthesizeStage
from construction.wer import WerStage
from tests.conftest import run_module

SENTENCES = [
    "Finish him now, knock him out in the next round!",
    "Burn the whole village down before the dragon wakes up.",
    "I am going to chop that chicken into little pieces.",
    "Shoot the sniper on the roof, he is camping again.",
    "Kill the engine and drag the body over to the garage.",
    "We blow up the old bridge at noon, stand well back.",
]
VOICES = ["piper:en_US-joe-medium", "flite:slt"]


def _noise_library(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(1)
    path = root / "white.wav"
    sf.write(path, (0.2 * rng.standard_normal(16000 * 8)).astype(np.float32), 16000, subtype="PCM_16")
    write_catalog(root, [Clip(clip_id="white", path="white.wav", tags=["noise"], duration_s=8.0,
                              sample_rate=16000, licence="CC0-1.0", attribution="generated in the test",
                              sha256=sha256_file(path))])
    return root


def _config(tmp_path: Path, **overrides):
    taxonomy = {"version": 1, "tags": {"noise": "white noise"}, "categories": [{
        "id": "video_games", "name": "Games", "description": "d", "harmful_speech": "h",
        "benign_context": "b", "background_tags": ["noise"]}]}
    (tmp_path / "taxonomy.yaml").write_text(yaml.safe_dump(taxonomy))
    values = {"mix.sounds": str(_noise_library(tmp_path / "sounds")), "generate.taxonomy": str(tmp_path / "taxonomy.yaml"),
              "synthesize.voices": VOICES, "synthesize.require_genders": [],
              "wer.resynthesize_attempts": 0, "wer.remix_attempts": 0, "mix.min_clips_per_defining_tag": 1,
              **overrides}  # tests that retry say so; one noise clip is the whole library
    return load_config(None, values)


def _scripts(ws: Workspace, sentences: list[str]) -> None:
    samples = [Sample(sample_id=make_sample_id("video_games", text, "ctx", "underlay", ["noise"], "calm"),
                      category="video_games", speech_text=text, context="ctx", background_tags=["noise"],
                      placement="underlay", benign_reason="r", speaker_style="calm") for text in sentences]
    ws.write_manifest("generate", samples)


def _build(root: Path, config) -> Workspace:
    ws = Workspace(root)
    _scripts(ws, SENTENCES)
    for stage in (SynthesizeStage(str(root), config), MixStage(str(root), config), WerStage(str(root), config)):
        run_stage(ws, stage, jobs=1, progress=False)
    return ws


def test_noise_at_0_db_is_rejected_more_often_than_at_20_db(tmp_path):
    quiet = _build(tmp_path / "quiet", _config(tmp_path, **{"mix.snr_db_min": 20, "mix.snr_db_max": 20}))
    loud = _build(tmp_path / "loud", _config(tmp_path, **{"mix.snr_db_min": -5, "mix.snr_db_max": -5}))
    quiet_wer = [s.wer_mixture for s in quiet.read_samples("wer")] + \
        [r.sample.wer_mixture for r in quiet.read_rejected("wer")]
    loud_wer = [s.wer_mixture for s in loud.read_samples("wer")] + \
        [r.sample.wer_mixture for r in loud.read_rejected("wer")]
    assert len(quiet_wer) == len(loud_wer) == len(SENTENCES)
    assert np.mean(loud_wer) > np.mean(quiet_wer)
    rejected_quiet = len(list(quiet.read_rejected("wer")))
    rejected_loud = len(list(loud.read_rejected("wer")))
    assert rejected_loud > rejected_quiet
    # clean speech is the same in both: its WER says the TTS was fine, so drops are SNR problems (the
    # mixture's, or a passing mixture's twin's: the twin gate, whose clean speech was not needed)
    loud_rejected = list(loud.read_rejected("wer"))
    assert all(r.reason.startswith(("wer_snr", "twin_")) for r in loud_rejected)
    assert all(r.sample.transcript_speech is not None for r in loud_rejected if r.reason.startswith("wer_snr"))
    sample = next(quiet.read_samples("wer"))
    assert sample.provenance["wer"]["model"].startswith("whisper-base")
    assert sample.transcript_speech is None  # by default the clean speech is transcribed for failures only
    stats = quiet.read_stats("wer")
    assert sum(stats["wer_mixture_histogram"]["counts"]) == len(SENTENCES)
    # both twins of every kept sample went through the same Whisper; at equal masking the words come
    # through alike (here white noise at 20 dB: every irrelevant transcript but at most one word the
    # mixture's; a scream under two words, a masker the energetic glimpse model does not count, can cost
    # the danger twin two: "on the roof" -> "on Leroth")
    kept = list(quiet.read_samples("wer"))
    assert all(s.transcript_irrelevant and s.transcript_danger for s in kept)
    assert all(abs(s.wer_irrelevant - s.wer_mixture) <= 0.15 and abs(s.wer_danger - s.wer_mixture) <= 0.25
               for s in kept), [(s.wer_mixture, s.wer_irrelevant, s.wer_danger) for s in kept]
    twins = stats["twin_wer"]["OVERALL"]
    assert twins["irrelevant"]["n"] == twins["danger"]["n"] == len(kept)
    assert abs(twins["irrelevant"]["median_difference"]) <= 0.05
    assert abs(twins["danger"]["median_difference"]) <= 0.05


def test_clean_speech_of_every_sample_is_transcribed_on_request(tmp_path):
    config = _config(tmp_path, **{"mix.snr_db_min": 20, "mix.snr_db_max": 20, "wer.transcribe_speech": "always",
                                  "wer.transcribe_twins": False})
    ws = Workspace(tmp_path / "ws")
    _scripts(ws, SENTENCES[:3])
    for stage in (SynthesizeStage(str(ws.root), config), MixStage(str(ws.root), config), WerStage(str(ws.root), config)):
        run_stage(ws, stage, jobs=1, progress=False)
    kept = list(ws.read_samples("wer"))
    assert kept and all(s.transcript_speech and s.wer_speech is not None and s.wer_speech <= 0.2 for s in kept)
    assert all(s.wer_irrelevant is None and s.wer_danger is None for s in kept)  # the twins: switched off
    assert "twin_wer" not in ws.read_stats("wer")


def test_failed_tts_is_resynthesised_with_another_voice(tmp_path):
    # with re-mixes: a clip whose clean speech fails is never re-mixed, its voice is replaced
    config = _config(tmp_path, **{"mix.snr_db_min": 20, "mix.snr_db_max": 20, "wer.resynthesize_attempts": 2,
                                  "wer.remix_attempts": 2})
    ws = Workspace(tmp_path / "ws")
    _scripts(ws, SENTENCES[:2])
    run_stage(ws, SynthesizeStage(str(ws.root), config), jobs=1, progress=False)
    # break the first sample's speech: a TTS that produced noise instead of words
    samples = list(ws.read_samples("synthesize"))
    noise = (0.1 * np.random.default_rng(0).standard_normal(16000 * 2)).astype(np.float32)
    samples[0] = samples[0].model_copy(update={"speech": ws.store_audio(noise, 16000)})
    ws.write_manifest("synthesize", samples)
    run_stage(ws, MixStage(str(ws.root), config), jobs=1, progress=False)
    stats = run_stage(ws, WerStage(str(ws.root), config), jobs=1, progress=False)
    assert stats["kept"] == 2, stats
    rescued = next(s for s in ws.read_samples("wer") if s.sample_id == samples[0].sample_id)
    attempts = rescued.provenance["wer"]["attempts"]
    assert len(attempts) == 2 and attempts[0]["wer_speech"] > 0.5 and attempts[1]["wer_mixture"] <= 0.2
    assert attempts[1]["voice"] != attempts[0]["voice"] == samples[0].voice_id
    assert rescued.voice_id == attempts[1]["voice"] and rescued.speech.sha256 != samples[0].speech.sha256
    # the re-mix's twins are made once it passed (MixStage.add_twins): the new speech's, matched to its mixture
    first = next(s for s in ws.read_samples("mix") if s.sample_id == samples[0].sample_id)
    assert rescued.irrelevant_audio and rescued.danger_audio and rescued.danger_scene_audio
    assert rescued.irrelevant_audio.sha256 != first.irrelevant_audio.sha256
    assert rescued.mix.irrelevant.glimpse_proportion == pytest.approx(rescued.mix.glimpse_proportion, abs=0.01)
    assert rescued.wer_irrelevant is not None and rescued.wer_danger is not None
    assert {"twin", "danger", "danger_scene"} <= set(rescued.provenance["mix"]["clicks"])
    # the noise's clean transcript (WER > 0.5) is not kept as the new voice's
    assert rescued.wer_speech is None or rescued.wer_speech <= 0.2, (rescued.wer_speech, rescued.transcript_speech)


def test_twins_made_after_the_gate_are_the_bytes_the_mix_stage_makes(tmp_path):
    """The automatic build leaves the first attempts' twins to the WER stage (MixStage twins_after_gate):
    only mixtures that pass the gate get them, made from the scene the mix kept in the cache, and they are
    the bytes the mix stage makes itself. A scene lost to a crash is mixed again to the same bytes; no
    scene is left in the cache."""
    config = _config(tmp_path, **{"mix.snr_db_min": 20, "mix.snr_db_max": 20})
    in_mix = _build(tmp_path / "in_mix", config)
    ws = Workspace(tmp_path / "after_gate")
    _scripts(ws, SENTENCES)
    run_stage(ws, SynthesizeStage(str(ws.root), config), jobs=1, progress=False)
    run_stage(ws, MixStage(str(ws.root), config, twins_after_gate=True), jobs=1, progress=False)
    mixed = list(ws.read_samples("mix"))
    assert mixed and all(s.irrelevant_audio is None and s.danger_audio is None for s in mixed)
    assert "twin_masking" not in ws.read_stats("mix") and "stats/wer.json" in ws.read_stats("mix")["twins"]
    waiting = sorted((ws.root / "cache" / "pending-twins").glob("*.npy"))
    assert len(waiting) == len(mixed)
    waiting[0].unlink()  # lost to a crash
    run_stage(ws, WerStage(str(ws.root), config), jobs=1, progress=False)
    assert not list((ws.root / "cache" / "pending-twins").iterdir())
    expected = {s.sample_id: s for s in in_mix.read_samples("wer")}
    got = {s.sample_id: s for s in ws.read_samples("wer")}
    assert len(got) >= 4 and got.keys() == expected.keys()
    for sample_id, sample in got.items():
        tracks = ("mixture", "scene_audio", "irrelevant_audio", "danger_audio", "danger_scene_audio")
        assert [getattr(sample, t).sha256 for t in tracks] == [getattr(expected[sample_id], t).sha256 for t in tracks]
        assert sample.mix == expected[sample_id].mix and sample.provenance["mix"] == expected[sample_id].provenance["mix"]
    # a mixture that failed the gate got no twins (the mix stage had made them for nothing)
    failed = [r.sample for r in ws.read_rejected("wer") if r.reason.startswith(("wer_", "keyword_"))]
    assert all(s.irrelevant_audio is None and s.danger_audio is None for s in failed)
    counted = ws.read_stats("wer")["twin_masking"]["OVERALL"]
    assert (counted["irrelevant"]["erb"]["n"] == counted["danger"]["erb"]["n"]
            == len(got) + len(list(ws.read_rejected("wer"))) - len(failed))

    # a WER run with the twin gate off (its config is not the build's) still gives what passes its twins:
    # every scene is gone by now, so each is mixed again, to the same bytes
    config = _config(tmp_path, **{"mix.snr_db_min": 20, "mix.snr_db_max": 20, "wer.gate_twins": False})
    run_stage(ws, WerStage(str(ws.root), config), jobs=1, progress=False, restart=True)
    kept = list(ws.read_samples("wer"))
    assert len(kept) >= len(got) and all(s.irrelevant_audio and s.danger_audio for s in kept)
    assert all(s.irrelevant_audio == expected[s.sample_id].irrelevant_audio for s in kept if s.sample_id in expected)


def _spoken_and_mixed(tmp_path: Path, config) -> tuple[Workspace, list[Sample]]:
    """Two scripts spoken and mixed (the WER stage's input), and the mix manifest's samples."""
    ws = Workspace(tmp_path / "ws")
    _scripts(ws, SENTENCES[:2])
    for stage in (SynthesizeStage(str(ws.root), config), MixStage(str(ws.root), config)):
        run_stage(ws, stage, jobs=1, progress=False)
    return ws, list(ws.read_samples("mix"))


def _mixed_with_noise_for(tmp_path: Path, config, track: str) -> tuple[Workspace, list[Sample]]:
    """Two scripts spoken and mixed, the first sample's `track` (mixture, irrelevant_audio) replaced by
    noise of its length: its words lost there alone."""
    ws, mixed = _spoken_and_mixed(tmp_path, config)
    length = ws.load_audio(getattr(mixed[0], track)).size
    noise = (0.1 * np.random.default_rng(0).standard_normal(length)).astype(np.float32)
    mixed[0] = mixed[0].model_copy(update={track: ws.store_audio(noise, 16000)})
    ws.write_manifest("mix", mixed)
    return ws, mixed


def test_a_masked_mixture_is_re_mixed_with_the_same_speech_before_another_voice(tmp_path):
    """The clean speech passes and only the mixture fails (here: a mixture whose words were lost): the
    draw masked it, not the voice, so the same speech is re-mixed with a new seed and no synthesis is
    spent; the voice keeps its sample (wer.remix_attempts)."""
    config = _config(tmp_path, **{"mix.snr_db_min": 20, "mix.snr_db_max": 20, "wer.resynthesize_attempts": 2,
                                  "wer.remix_attempts": 1})
    ws, mixed = _mixed_with_noise_for(tmp_path, config, "mixture")
    stats = run_stage(ws, WerStage(str(ws.root), config), jobs=1, progress=False)
    assert stats["kept"] == 2, stats
    rescued = next(s for s in ws.read_samples("wer") if s.sample_id == mixed[0].sample_id)
    first, second = rescued.provenance["wer"]["attempts"]
    assert first["wer_mixture"] > 0.5 and first["wer_speech"] <= 0.2 and "remix" not in first
    assert second["remix"] is True and second["voice"] == first["voice"] == mixed[0].voice_id
    assert second["wer_mixture"] <= 0.2 and rescued.wer_mixture == second["wer_mixture"]
    assert rescued.speech == mixed[0].speech and rescued.mixture.sha256 != mixed[0].mixture.sha256
    assert rescued.transcript_speech and rescued.wer_speech == first["wer_speech"]  # transcribed once, still true
    assert rescued.irrelevant_audio and rescued.danger_audio and rescued.wer_irrelevant is not None
    calls = ws.read_stats("wer").get("timed_calls", {})
    assert calls.get("tts", 0) == 0 and calls.get("mix", 0) >= 1, calls  # re-mixed, not re-synthesised


def test_a_twin_that_fails_the_gate_its_mixture_passed_fails_the_attempt(tmp_path):
    """The irrelevant twin is the masking baseline: if Whisper cannot follow its words where the mixture
    passed, "twin minus mixture" would measure intelligibility. Here the first attempt's twin is noise:
    the attempt fails as twin_irrelevant and is re-mixed (its speech is heard at that masking), and the
    sample ships with twins that pass; with no retry left it is rejected."""
    config = _config(tmp_path, **{"mix.snr_db_min": 20, "mix.snr_db_max": 20, "wer.resynthesize_attempts": 1,
                                  "wer.remix_attempts": 1})
    ws, mixed = _mixed_with_noise_for(tmp_path, config, "irrelevant_audio")
    stats = run_stage(ws, WerStage(str(ws.root), config), jobs=1, progress=False)
    assert stats["kept"] == 2, stats
    rescued = next(s for s in ws.read_samples("wer") if s.sample_id == mixed[0].sample_id)
    first, second = rescued.provenance["wer"]["attempts"]
    assert first["wer_mixture"] <= 0.2 and first["wer_irrelevant"] > 0.5 and first["twin_failed"] == "irrelevant"
    assert second["remix"] is True and second["voice"] == first["voice"] and "twin_failed" not in second
    assert rescued.irrelevant_audio.sha256 != mixed[0].irrelevant_audio.sha256
    assert rescued.wer_irrelevant == second["wer_irrelevant"] <= 0.2 and rescued.wer_danger <= 0.2
    assert ws.read_stats("wer")["twin_gate"] == {"attempts_heard": 3, "failed": {"irrelevant": 1, "danger": 0}}
    assert ws.read_stats("wer").get("timed_calls", {}).get("tts", 0) == 0  # re-mixed, not re-synthesised

    # no retry left: rejected, and why
    config = _config(tmp_path, **{"mix.snr_db_min": 20, "mix.snr_db_max": 20})
    stats = run_stage(ws, WerStage(str(ws.root), config), jobs=1, progress=False, restart=True)
    [rejected] = list(ws.read_rejected("wer"))
    assert stats["kept"] == 1 and rejected.reason.startswith("twin_irrelevant: the irrelevant twin fails"), rejected.reason
    assert rejected.sample.wer_mixture <= 0.2 and rejected.sample.wer_irrelevant > 0.5


def test_a_passing_mixture_whose_twin_has_a_click_is_re_mixed(tmp_path):
    """A retry's twins are made after its mixture passed the gate, too late for the mix to draw them again:
    a click in one fails the attempt (twin_click), unheard, and the sample is re-mixed; no kept track has
    a click. Here the first attempt's danger twin is marked as clicked in the mix manifest."""
    config = _config(tmp_path, **{"mix.snr_db_min": 20, "mix.snr_db_max": 20, "wer.remix_attempts": 1})
    ws, mixed = _spoken_and_mixed(tmp_path, config)
    mixed[0].provenance["mix"]["clicks"]["danger"] = 1
    ws.write_manifest("mix", mixed)
    stats = run_stage(ws, WerStage(str(ws.root), config), jobs=1, progress=False)
    assert stats["kept"] == 2 and stats["kept_clicks"]["total"] == 0, stats
    assert stats["twin_gate"]["failed"]["click"] == 1
    rescued = next(s for s in ws.read_samples("wer") if s.sample_id == mixed[0].sample_id)
    first, second = rescued.provenance["wer"]["attempts"]
    assert first["twin_failed"] == "click" and "wer_irrelevant" not in first  # failed unheard
    assert second["remix"] is True and rescued.danger_audio.sha256 != mixed[0].danger_audio.sha256

    config = _config(tmp_path, **{"mix.snr_db_min": 20, "mix.snr_db_max": 20})  # no retry left: rejected
    run_stage(ws, WerStage(str(ws.root), config), jobs=1, progress=False, restart=True)
    [rejected] = list(ws.read_rejected("wer"))
    assert rejected.reason.startswith("twin_click: the twins of a passing mixture have a click (danger 1)"), rejected.reason


def test_hopeless_sample_is_dropped_after_k_attempts(tmp_path):
    config = _config(tmp_path, **{"wer.resynthesize_attempts": 1, "wer.max_wer": 0.0})
    ws = Workspace(tmp_path / "ws")
    _scripts(ws, ["Zorblax quimfet vrendu plosk."])
    for stage in (SynthesizeStage(str(ws.root), config), MixStage(str(ws.root), config)):
        run_stage(ws, stage, jobs=1, progress=False)
    stats = run_stage(ws, WerStage(str(ws.root), config), jobs=1, progress=False)
    [rejected] = list(ws.read_rejected("wer"))
    assert stats["kept"] == 0 and rejected.reason.startswith("wer_")
    assert len(rejected.sample.provenance["wer"]["attempts"]) == 2


def test_missing_model_dir_is_a_clear_error(tmp_path):
    ws = Workspace(tmp_path / "ws")
    _scripts(ws, SENTENCES[:1])
    ws.write_manifest("mix", list(ws.read_samples("generate")))
    config = tmp_path / "c.yaml"
    config.write_text(f"wer:\n  model: {tmp_path / 'no-model'}\n")
    proc = run_module("construction.wer", "--workspace", str(ws.root), "--config", str(config))
    assert proc.returncode == 2 and "no-model" in proc.stderr and "Traceback" not in proc.stderr


def test_a_mixture_that_loses_its_key_word_is_rejected_though_its_wer_passes(tmp_path):
    """The TTS says "stub" where the script says "stab": one word in eleven (WER 0.09 passes), but it is
    the word that makes the line harmful."""
    config = _config(tmp_path, **{"mix.snr_db_min": 20, "mix.snr_db_max": 20, "synthesize.voices": ["piper:en_US-joe-medium"]})
    ws = Workspace(tmp_path / "ws")
    spoken = "Stub the guard by the gate and run away before dawn."
    _scripts(ws, [spoken, SENTENCES[1]])
    for stage in (SynthesizeStage(str(ws.root), config), MixStage(str(ws.root), config)):
        run_stage(ws, stage, jobs=1, progress=False)
    mixed = list(ws.read_samples("mix"))
    mixed[0] = mixed[0].model_copy(update={"speech_text": spoken.replace("Stub", "Stab"), "key_words": ["stab"]})
    # (Whisper base hears Piper's "Burn the whole village" as "Turn the whole village": "burn" would be
    # missed too, so the control names other words)
    mixed[1] = mixed[1].model_copy(update={"key_words": ["village", "dragon"]})
    ws.write_manifest("mix", mixed)
    run_stage(ws, WerStage(str(ws.root), config), jobs=1, progress=False)
    rejected = {r.sample.sample_id: r for r in ws.read_rejected("wer")}
    reason = rejected[mixed[0].sample_id].reason
    assert reason.startswith("keyword_missed: 'stab' not heard in the mixture (WER 0."), reason
    assert rejected[mixed[0].sample_id].sample.wer_mixture <= 0.2  # the WER alone would have kept it
    assert [s.sample_id for s in ws.read_samples("wer")] == [mixed[1].sample_id]
    rates = ws.read_stats("wer")["keep_rate"]
    assert rates["by_snr_db"]["[20, 25)"] == {"kept": 1, "rejected": 1, "keep_rate": 0.5}
    assert rates["by_voice"]["piper:en_US-joe-medium"]["kept"] == 1


def test_a_retry_takes_a_voice_of_the_same_gender_from_another_engine():
    from types import SimpleNamespace as V

    from construction.wer import next_voice

    bank = [V(voice_id="flite:awb", gender="male", backend="flite"), V(voice_id="flite:rms", gender="male", backend="flite"),
            V(voice_id="flite:slt", gender="female", backend="flite"), V(voice_id="hibari:heart", gender="female", backend="hibari"),
            V(voice_id="kokoro:bf_emma", gender="female", backend="kokoro"), V(voice_id="piper:joe", gender="male", backend="piper")]
    assert next_voice(bank, "flite:awb", set()).voice_id == "piper:joe"
    assert next_voice(bank, "flite:slt", set()).voice_id == "hibari:heart"
    assert next_voice(bank, "hibari:heart", {"flite:slt"}).voice_id == "kokoro:bf_emma"
    assert next_voice(bank, "piper:joe", {"flite:awb"}).voice_id == "flite:rms"  # the only male voice left
    assert next_voice(bank, "unknown", set()).voice_id == "flite:awb"


def test_only_the_speech_and_a_margin_of_the_mixture_is_transcribed():
    from construction.wer import SPEECH_MARGIN_S, speech_extent
    from tests.conftest import simple_recipe

    sample = Sample(sample_id="aor-1", category="c", speech_text="x", context="c", background_tags=["t"],
                    placement="underlay", benign_reason="b", speaker_style="calm")
    speech = AudioRef(path="audio/00/" + "0" * 64 + ".wav", sha256="0" * 64, duration_s=2.0, sample_rate=16000)
    sample = sample.model_copy(update={"speech": speech, "mix": simple_recipe("c", 1)})  # scene alone 1.5 s
    mixture = np.arange(int((1.5 + 2.0 + 1.0) * 16000), dtype=np.float32)
    part = speech_extent(mixture, sample, 16000)
    assert part[0] == int((1.5 - SPEECH_MARGIN_S) * 16000) and part.size == int((2.0 + 2 * SPEECH_MARGIN_S) * 16000)


def test_wer_stats_count_the_clicks_of_the_tracks_that_ship(tmp_path):
    """stats/wer.json's kept_clicks sums the kept samples' click counts per track (a re-mixed sample's are
    its last mix's); beats and falls inside the sources are not clicks."""
    from construction.wer import kept_clicks

    ws = Workspace(tmp_path / "ws")
    _scripts(ws, SENTENCES[:3])
    rows = list(ws.read_samples("generate"))
    for row, clicks in zip(rows, ({"mixture": 1, "twin": 2, "beats": 5, "in_sources": 3}, {"danger_scene": 1}, {})):
        row.provenance["mix"] = {"clicks": clicks}
    ws.write_manifest("wer", rows[:2], rejected=[Rejected(rows[2].model_copy(
        update={"provenance": {"mix": {"clicks": {"scene": 4}}}}), "wer_snr: x")])
    assert kept_clicks(ws)["kept_clicks"] == {"total": 4, "mixture": 1, "scene": 0, "twin": 2, "danger": 0, "danger_scene": 1}

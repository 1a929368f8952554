"""The level tools of a mixture, shared by the mix and its irrelevant twin (construction.twin): the
gain that reaches a loudness, the scene's gain envelope, and the final peak guard."""

from __future__ import annotations

import numpy as np

from construction.sounds.library import loudness_lufs


def gain_to(audio: np.ndarray, target_lufs: float, sample_rate: int) -> float:
    """The gain (dB) that brings `audio` to `target_lufs`. BS.1770's absolute gate (-70 LUFS) lets quiet
    blocks in or out as the level changes, so one step can miss by a dB on sparse sounds: refine."""
    gain = target_lufs - loudness_lufs(audio, sample_rate)
    for _ in range(3):
        miss = target_lufs - loudness_lufs(audio * 10 ** (gain / 20), sample_rate)
        if abs(miss) < 0.01:
            break
        gain += miss
    return gain


def envelope(total: int, alone: int, speech: int, alone_db: float, under_db: float, fade: int) -> np.ndarray:
    """The scene's gain per sample: alone_db, ramped down to under_db by the time the speech starts and
    back up after it ends; faded in and out at the clip's ends."""
    db = np.full(total, alone_db)
    db[alone:alone + speech] = under_db
    ramp_down = np.arange(max(0, alone - fade), alone)
    db[ramp_down] = np.linspace(alone_db, under_db, ramp_down.size, endpoint=False)
    end = alone + speech
    ramp_up = np.arange(end, min(total, end + fade))
    db[ramp_up] = np.linspace(under_db, alone_db, ramp_up.size, endpoint=False)
    gain = 10 ** (db / 20)
    edge = min(fade, total // 2)
    if edge:
        gain[:edge] *= np.linspace(0.0, 1.0, edge, endpoint=False)
        gain[total - edge:] *= np.linspace(1.0, 0.0, edge)
    return gain


def render(speech_track: np.ndarray, scene_track: np.ndarray, gain: np.ndarray, peak_dbfs: float
           ) -> tuple[np.ndarray, float]:
    """The mixture, scaled down as a whole if it would peak above peak_dbfs; returns the guard's gain."""
    mixture = speech_track + scene_track * gain
    peak = float(np.max(np.abs(mixture)))
    limit = 10 ** ((peak_dbfs - 0.05) / 20)  # 0.05 dB of headroom for 16-bit rounding
    guard = min(1.0, limit / peak) if peak > 0 else 1.0
    return (mixture * guard).astype(np.float32), 20 * float(np.log10(guard))

"""The level tools of a mixture, shared by the mix and its twins (construction.mixing.twin): the gain that
reaches a loudness, where the speech is voiced (a VAD), the scene's gain envelope, the mixture's peak
guard, the twins' background limiter (their speech is the mixture's, untouched), and the click check
every rendered track passes."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from construction.core.record import MixRecipe
from construction.sounds.library import block_powers, gated_lufs, loudness_lufs


def gain_to(audio: np.ndarray, target_lufs: float, sample_rate: int) -> float:
    """The gain (dB) that brings `audio` to `target_lufs`. BS.1770's absolute gate (-70 LUFS) lets quiet
    blocks in or out as the level changes, so one step can miss by a dB on sparse sounds: refine (on
    the blocks' powers, measured once: a gain scales them)."""
    powers = block_powers(audio, sample_rate)
    gain = target_lufs - gated_lufs(powers)
    for _ in range(3):
        miss = target_lufs - gated_lufs(powers * 10 ** (gain / 10))
        if abs(miss) < 0.01:
            break
        gain += miss
    return gain


VAD_FRAME_S = 0.01
VAD_CORE_DB = -35.0  # a frame this close to the loudest frame is speech
VAD_EDGE_DB = -50.0  # ... and a quieter neighbour with many zero crossings (a fricative) extends it
VAD_EDGE_ZCR = 0.25  # zero crossings per sample of a fricative (voiced speech has far fewer)
VAD_BRIDGE_S = 0.3  # a pause shorter than this between words stays ducked (no pumping)
DUCK_ATTACK_S, DUCK_RELEASE_S = 0.03, 0.08  # the scene goes down before a word and comes back after it
END_FALL_DB_PER_S = 300.0  # the clip's end fade: 60 dB in 0.2 s, 3 dB per 10 ms


def voiced_runs(speech: np.ndarray, sample_rate: int) -> list[tuple[int, int]]:
    """Where the speech is active, as (start, end) sample spans: an energy and zero-crossing endpoint
    detector (Rabiner and Sambur, 'An algorithm for determining the endpoints of isolated utterances',
    Bell Syst. Tech. J. 54(2), 1975) on 10 ms frames. Frames within 35 dB of the loudest are speech;
    a run extends over neighbours within 50 dB that cross zero often (s, f, sh); runs closer than 0.3 s
    merge. TTS output has clean silence before and after the voice, so the thresholds are relative."""
    hop = max(1, int(VAD_FRAME_S * sample_rate))
    n = speech.size // hop
    if n == 0:
        return []
    frames = speech[:n * hop].astype(np.float64).reshape(n, hop)
    with np.errstate(divide="ignore"):
        level = 10 * np.log10(np.mean(frames ** 2, axis=1) + 1e-20)
    zcr = np.mean(np.abs(np.diff(np.sign(frames), axis=1)) > 0, axis=1)
    top = float(level.max())
    if top < -90:
        return []
    active = level >= top + VAD_CORE_DB
    edge = (level >= top + VAD_EDGE_DB) & (zcr >= VAD_EDGE_ZCR)
    for order in (range(1, n), range(n - 2, -1, -1)):  # grow runs into fricative neighbours, both ways
        for i in order:
            j = i - 1 if order.step == 1 else i + 1
            active[i] = active[i] or (edge[i] and active[j])
    runs: list[list[int]] = []
    bridge = int(VAD_BRIDGE_S / VAD_FRAME_S)
    for i in np.flatnonzero(active):
        if runs and i - runs[-1][1] <= bridge:
            runs[-1][1] = i + 1
        else:
            runs.append([i, i + 1])
    return [(a * hop, min(speech.size, b * hop)) for a, b in runs]


def placed_speech(speech: np.ndarray, recipe: MixRecipe, sample_rate: int
                  ) -> tuple[np.ndarray, int, list[tuple[int, int]]]:
    """(the speech track: the speech at the recipe's loudness after the scene-alone part, zeros around it;
    where the speech starts; its voiced runs in the track, where the scene is ducked, not over the TTS
    silence around them)."""
    alone, after = int(recipe.scene_alone_s * sample_rate), int(recipe.scene_after_s * sample_rate)
    track = np.zeros(alone + speech.size + after)
    track[alone:alone + speech.size] = speech * 10 ** ((recipe.speech_lufs - loudness_lufs(speech, sample_rate)) / 20)
    voiced = [(alone + a, alone + b) for a, b in voiced_runs(speech, sample_rate)] or [(alone, alone + speech.size)]
    return track, alone, voiced


def envelope(total: int, alone: int, speech: int, alone_db: float, under_db: float, fade: int,
             voiced: list[tuple[int, int]] | None = None, sample_rate: int = 16000) -> np.ndarray:
    """The scene's gain per sample: alone_db, down to under_db while the speech plays and back up after
    it; faded in and out at the clip's ends. With `voiced` (spans in the clip, construction.mixing.levels.
    voiced_runs shifted by the speech's start) the scene is ducked only there: it reaches under_db at
    each run's start (a DUCK_ATTACK_S ramp before it) and returns over DUCK_RELEASE_S after its end, so
    the TTS silence around the words carries the scene at its alone level. Without, over the whole
    speech file (ramped over `fade` before and after it). A twin's under gain can be above its alone
    gain (equal masking): the ramps then go up before a run and come down after it, never a jump."""
    db = np.full(total, alone_db)
    if voiced is None:
        db[alone:alone + speech] = under_db
        ramp_down = np.arange(max(0, alone - fade), alone)
        db[ramp_down] = np.linspace(alone_db, under_db, ramp_down.size, endpoint=False)
        end = alone + speech
        ramp_up = np.arange(end, min(total, end + fade))
        db[ramp_up] = np.linspace(under_db, alone_db, ramp_up.size, endpoint=False)
    else:
        # no faster than 1 dB per 2.5 ms, so a deep duck is never itself a step (construction.mixing.levels.steps)
        slow = abs(alone_db - under_db) * 0.0025
        attack, release = (int(max(x, slow) * sample_rate) for x in (DUCK_ATTACK_S, DUCK_RELEASE_S))
        toward = np.minimum if under_db <= alone_db else np.maximum  # the ramp nearer the under level wins
        for start, end in voiced:
            db[start:end] = under_db
            a = np.arange(max(0, start - attack), start)
            db[a] = toward(db[a], np.linspace(alone_db, under_db, a.size, endpoint=False))
            b = np.arange(end, min(total, end + release))
            db[b] = toward(db[b], np.linspace(under_db, alone_db, b.size, endpoint=False))
    gain = 10 ** (db / 20)
    edge = min(fade, total // 2)
    if edge:
        gain[:edge] *= np.linspace(0.0, 1.0, edge, endpoint=False)
        # out evenly in dB to -60 dB, then 0 (a linear fade plunges in its last milliseconds: a step), no
        # faster than END_FALL_DB_PER_S: a sound's own fall that content_steps leaves to the check
        # (under STEP_DB / 2 in 5 ms) plus the fade's stays under STEP_DB
        tail = min(max(edge, int(60.0 / END_FALL_DB_PER_S * sample_rate)), total // 2)
        gain[total - tail:] *= 10 ** (np.linspace(0.0, -60.0, tail) / 20)
        gain[-1] = 0.0
    return gain


LIMIT_DB_PER_MS = 0.4  # the background limiter's gain moves no faster (1 dB per 2.5 ms, as a deep duck)
LIMIT_MARGIN_DB = 0.05  # headroom under peak_dbfs for 16-bit rounding


def peak_limit(peak_dbfs: float) -> float:
    return 10 ** ((peak_dbfs - LIMIT_MARGIN_DB) / 20)


def limiter_gain(speech_track: np.ndarray, background: np.ndarray, peak_dbfs: float, sample_rate: int
                 ) -> tuple[np.ndarray, float]:
    """(the gain per sample that turns the background down where speech + background would peak above
    `peak_dbfs` (or 1 dB over the speech alone, where that is higher), the most it turns it down, dB). The speech is never touched: a twin and its mixture carry the same speech at
    the same level, whatever their backgrounds do. The gain reduction each sample needs is spread into a
    cone of LIMIT_DB_PER_MS either side (1 ms blocks, then interpolated, 0.4 dB of margin for the
    interpolation), so it ramps in and out with no step (construction.mixing.levels.steps)."""
    s, b = np.asarray(speech_track, dtype=np.float64), np.asarray(background, dtype=np.float64)
    # where the speech alone peaks above the limit (the mixture's scene cancelled it there), the sum may
    # reach 1 dB over the speech (under full scale): a background cut to nothing there would leave a hole
    limit = np.maximum(peak_limit(peak_dbfs), np.minimum(np.abs(s) * 10 ** (1 / 20), 0.999))
    over = np.abs(s + b) > limit
    if not over.any():
        return np.ones(b.size), 0.0
    allowed = np.ones(b.size)
    idx = np.flatnonzero(over)
    allowed[idx] = np.clip((limit[idx] - s[idx] * np.sign(b[idx])) / np.maximum(np.abs(b[idx]), 1e-12), 1e-6, 1.0)
    need = -20 * np.log10(allowed)  # dB, >= 0
    block = max(1, int(0.001 * sample_rate))
    n = -(-need.size // block)
    per_block = np.pad(need, (0, n * block - need.size)).reshape(n, block).max(axis=1)
    per_block = np.where(per_block > 0, per_block + LIMIT_DB_PER_MS, 0.0)  # the interpolation's margin
    reach = int(min(np.ceil(per_block.max() / LIMIT_DB_PER_MS), 2000))
    from scipy import ndimage

    cone = -LIMIT_DB_PER_MS * np.abs(np.arange(-reach, reach + 1))
    spread = np.maximum(ndimage.grey_dilation(per_block, structure=cone, mode="constant", cval=0.0), 0.0)
    centres = np.arange(n) * block + block / 2
    cut = np.interp(np.arange(b.size), centres, spread)
    return 10 ** (-cut / 20), float(cut.max())


def render(speech_track: np.ndarray, scene_track: np.ndarray, gain: np.ndarray, peak_dbfs: float
           ) -> tuple[np.ndarray, float]:
    """The mixture, scaled down as a whole if it would peak above peak_dbfs (so its scene keeps its level
    against the speech, as drawn); returns the guard's gain. Its twins carry the speech at the level the
    guard left it, and limit their own backgrounds around it (limiter_gain)."""
    mixture = speech_track + scene_track * gain
    peak = float(np.max(np.abs(mixture)))
    limit = peak_limit(peak_dbfs)
    guard = min(1.0, limit / peak) if peak > 0 else 1.0
    return (mixture * guard).astype(np.float32), 20 * float(np.log10(guard))


STEP_DB, STEP_WITHIN_S, STEP_FLOOR_DBFS = 12.0, 0.005, -50.0
STEP_WINDOW_S = 0.005  # level windows of 5 ms (half a period of 100 Hz): the level 5 ms apart, as the rule says


def _levels(x: np.ndarray, sample_rate: int, times: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mean square of the 5 ms before each of `times`, how many dB it falls to the 5 ms from 5 ms later)."""
    win, gap = (max(1, int(v * sample_rate)) for v in (STEP_WINDOW_S, STEP_WITHIN_S))
    c = np.concatenate([[0.0], np.cumsum(np.asarray(x, dtype=np.float64) ** 2)])
    before = (c[times] - c[times - win]) / win
    after = (c[times + gap + win] - c[times + gap]) / win
    with np.errstate(divide="ignore"):
        return before, 10 * np.log10(np.maximum(before, 1e-20) / np.maximum(after, 1e-20))


def step_times(audio: np.ndarray, sample_rate: int, db: float = STEP_DB, floor_dbfs: float = STEP_FLOOR_DBFS
               ) -> np.ndarray:
    """Where the level falls more than STEP_DB within STEP_WITHIN_S (sample indices on a 1 ms grid):
    the RMS of the 5 ms before t against that of the 5 ms from t + 5 ms, from above -50 dBFS."""
    win, gap, hop = (max(1, int(x * sample_rate)) for x in (STEP_WINDOW_S, STEP_WITHIN_S, 0.001))
    if np.size(audio) < 2 * win + gap:
        return np.zeros(0, dtype=int)
    t = np.arange(win, np.size(audio) - win - gap + 1, hop)
    before, fall = _levels(audio, sample_rate, t)
    return t[(before > 10 ** (floor_dbfs / 10)) & (fall > db)]


def events(hits: np.ndarray, sample_rate: int) -> int:
    """Step times counted once per 50 ms."""
    return 0 if hits.size == 0 else int(1 + np.count_nonzero(np.diff(hits) > int(0.05 * sample_rate)))


def content_steps(sample_rate: int, *tracks: np.ndarray | None, placed: bool = False) -> np.ndarray:
    """The falls the speech or a scene layer makes on its own: over STEP_DB / 2, each found at its own
    level (its peak at -6 dBFS). A fall of which a track makes half or more is the content's (a stop
    consonant, a beep's gate, a knife's click): the rendering's ramps fall at most 3 dB in 5 ms, so a
    fall left over is one the rendering made (a cut). Computed once per sample, passed to steps.
    `placed`: the tracks are at the level they are heard at (the speech track; a scene's layers at their
    loudest gain): one louder than -6 dBFS
    is measured there, not lowered (a word's end at -49 dBFS over a silent scene fell under the -50 dBFS
    floor once lowered, and was counted as a click); its falls count from 20 dB under the check's floor
    (a word's end from -50.3 dBFS, over a bed that lifted the sum to -49.4 dBFS, was counted as a click)."""
    floor = STEP_FLOOR_DBFS - (20.0 if placed else 0.0)
    found = [step_times(t * (max(0.5 / peak, 1.0) if placed else 0.5 / peak), sample_rate, STEP_DB / 2, floor)
             for t in tracks if t is not None and (peak := float(np.max(np.abs(t)))) > 0]
    return np.unique(np.concatenate(found)) if found else np.zeros(0, dtype=int)


def _rendered(audio: np.ndarray, sample_rate: int, content: np.ndarray) -> np.ndarray:
    hits = step_times(audio, sample_rate)
    if content.size and hits.size:
        pos = np.searchsorted(content, hits)  # content is sorted: its nearest fall on either side
        nearest = np.minimum(np.abs(content[np.minimum(pos, content.size - 1)] - hits),
                             np.abs(content[np.maximum(pos - 1, 0)] - hits))
        hits = hits[nearest > int(0.01 * sample_rate)]
    return hits


def _beats(hits: np.ndarray, sample_rate: int, parts: tuple[np.ndarray, ...]) -> np.ndarray:
    """Which falls of a sum (a mixture, a twin, a scene) none of its rendered parts makes: where every
    part falls less than STEP_DB / 2, the sum's fall is the parts cancelling (speech beating against a
    steady bed; a music bed's and an explosion's sub-60 Hz swings in anti-phase; a scream's harmonic
    against a siren's tone), not a cut: a cut is made in a part, and shows there."""
    if not parts or hits.size == 0:
        return np.zeros(hits.size, dtype=bool)
    return np.max([_levels(p, sample_rate, hits)[1] for p in parts], axis=0) < STEP_DB / 2


def steps(audio: np.ndarray, sample_rate: int, content: np.ndarray | None = None) -> int:
    """Clicks: falls of more than STEP_DB within STEP_WITHIN_S (step_times), counted once per 50 ms. A
    fall that fast is a cut, never a natural decay (a shot's tail falls 40 dB in about 0.1 s). Rises are
    not counted: a blow, a shot or a clap starts that fast by nature. `content`: content_steps of the
    speech and the scene's layers as placed in `audio`; a fall they make is theirs, counted by
    source_steps, not here."""
    return events(_rendered(audio, sample_rate, np.zeros(0, dtype=int) if content is None else content), sample_rate)


def clicks_and_beats(audio: np.ndarray, sample_rate: int, content: np.ndarray,
                     parts: tuple[np.ndarray, ...] | Callable[[], tuple[np.ndarray, ...]]) -> tuple[int, int]:
    """steps of a sum of `parts` (the speech and the background of a mixture or twin; the layers of a
    scene, each as heard in it), split in two: (clicks, beats). A fall none of the parts makes is a beat,
    not a click. `parts` may be a function that makes them: called only where the sum falls (rarely)."""
    hits = _rendered(audio, sample_rate, content)
    if hits.size == 0:
        return 0, 0
    beat = _beats(hits, sample_rate, parts() if callable(parts) else parts)
    return events(hits[~beat], sample_rate), events(hits[beat], sample_rate)


def source_steps(audio: np.ndarray, sample_rate: int, content: np.ndarray) -> int:
    """Falls in `audio` that its content makes on its own (what steps leaves out)."""
    return events(np.setdiff1d(step_times(audio, sample_rate), _rendered(audio, sample_rate, content)), sample_rate)

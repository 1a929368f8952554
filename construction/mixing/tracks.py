"""How one clip becomes a track of a mixture: a bed looped with crossfades, a one-shot's copies placed
as the scene's pattern says (each faded out where its sound ends), and the cap on how often one
recording repeats in a sample. Used by construction.mix and construction.mixing.placement."""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence

import numpy as np

from construction.core.config import MixConfig


def bed_track(clip: np.ndarray, length: int, offset: int, crossfade: int) -> np.ndarray:
    """`length` samples of a bed from `offset`; a clip that runs out starts again with an equal-power
    crossfade (no hard cut, no click)."""
    out = clip[offset:offset + length].astype(np.float64)
    while out.size < length:
        fade = min(crossfade, out.size // 4, clip.size // 4)
        if fade > 0:
            ramp = np.linspace(0.0, 1.0, fade)
            joined = out[-fade:] * np.sqrt(1 - ramp) + clip[:fade] * np.sqrt(ramp)
            out = np.concatenate([out[:-fade], joined, clip[fade:]])
        else:
            out = np.concatenate([out, clip])
    return out[:length]


# a sound has ended once its 10 ms windows stay 40 dB under its peak (a clip whose last one is above ends in a cut)
TAIL_S, TAIL_DB = 0.01, -40.0


def sounding_end(clip: np.ndarray, sample_rate: int, tail_db: float = TAIL_DB) -> int:
    """Where a clip's sound ends: the end of its last 10 ms window above TAIL_DB re its peak (0 if silent).
    What follows is the recording's decay into its noise floor, 40 dB and more under the sound: its
    noise flickers by 12 dB in 5 ms (a balloon pop's tail, 45 dB under the bang, lifted by the scene's
    alone gain to -45 dBFS, was counted as a click at its 0.55 s)."""
    w = max(1, int(TAIL_S * sample_rate))
    x = np.asarray(clip, dtype=np.float64)
    peak = float(np.max(np.abs(x))) if x.size else 0.0
    if peak == 0:
        return 0
    n = -(-x.size // w)
    frames = np.pad(x, (0, n * w - x.size)).reshape(n, w)
    loud = np.flatnonzero(np.sqrt(np.mean(frames ** 2, axis=1)) > peak * 10 ** (tail_db / 20))
    return min(x.size, (int(loud[-1]) + 1) * w) if loud.size else 0


def first_loud(clip: np.ndarray, sample_rate: int, within_db: float = 10.0) -> float:
    """When a clip is first within `within_db` of its loudest 10 ms window, s (an applause that swells
    gets loud a second or two in; a shot at once)."""
    w = max(1, int(TAIL_S * sample_rate))
    x = np.asarray(clip, dtype=np.float64)
    n = x.size // w
    if n == 0:
        return 0.0
    level = 10 * np.log10(np.mean(x[:n * w].reshape(n, w) ** 2, axis=1) + 1e-20)
    return float(np.argmax(level >= level.max() - within_db) * TAIL_S)


def event_track(clip: np.ndarray, length: int, onsets: list[int], gains_db: list[float], fade: int,
                sample_rate: int = 16000) -> np.ndarray:
    """Copies of a one-shot at `onsets` (samples), each at its own gain. Each copy ends where its sound
    does (sounding_end): faded out over the `fade` samples after it (over its last `fade` samples if
    the clip stops still sounding), evenly in dB to -60 dB as a natural decay falls (a linear
    fade plunges at its end: a click itself), so neither a hard end nor a noise floor's flicker is heard."""
    out = np.zeros(length)
    end = sounding_end(clip, sample_rate)
    stop = min(clip.size, end + fade) if fade else clip.size
    tail = min(fade, stop)
    for onset, gain in zip(onsets, gains_db):
        piece = clip[:max(0, min(stop, length - onset))].astype(np.float64) * 10 ** (gain / 20)
        # a copy the track's end cuts is faded by the mixture's own end fade (two fades at once would fall
        # twice as fast: a step); one that stops inside the track is faded here
        if piece.size == stop and tail:
            piece[piece.size - tail:] *= 10 ** (np.linspace(0, -60, tail) / 20)
        out[onset:onset + piece.size] += piece
    return out


def draw_onsets(rng: random.Random, event_s: float, total_s: float, speech: tuple[float, float],
                cfg: MixConfig, pattern: str = "continuous", *, count: int | None = None, not_before: float = 0.0,
                lead: bool = False, budget: int | None = None,
                length: Callable[[int], float] | None = None) -> list[float]:
    """Where each copy of a one-shot starts (`speech`: its start and end, s), as the scene's pattern says.

    continuous: the first copy within 0.4 s (so the scene is heard alone), then one after another, each
    after the last has ended and a gap. burst: the same with strings of `count` (3-5) rapid copies in
    place of single copies. single / pair: one copy, or two a gap apart. A copy is always heard with the
    speech: one plays under it, or (single, pair) right before it; `lead` puts the single right before
    the speech (ending 0.1-0.5 s before it), for a scene with nothing else to hear alone. `not_before`:
    nothing starts earlier (a then-ordered sound), unless that would keep it from the speech. `budget`:
    at most this many copies (whole strings of a burst: the first, the one under the speech, the last,
    then the earliest; a budget for one string only gets one that starts before the speech and runs into it).
    `length(i)`: how long copy i sounds (continuous copies are spaced by it; default event_s)."""
    start, end = speech
    enough = 0.5 * min(event_s, end - start)  # a copy is heard under the speech if it overlaps this much
    latest = max(start, end - enough)  # the last onset still heard under the speech
    if pattern in ("single", "pair"):
        low = max(0.05, not_before, start - event_s - 0.5)
        high = max(0.05, start - event_s - 0.1) if lead else latest
        low = min(low, latest)
        first = round(rng.uniform(low, max(low, min(high, latest))), 3)
        if pattern == "single":
            return [first]
        gap = event_s + rng.uniform(cfg.event_gap_s_min, cfg.event_gap_s_max)
        if first + gap < total_s - 0.1:
            second = first + gap
        elif first - gap >= max(0.05, not_before):
            second = first - gap
        else:  # neither fits a whole gap: the second copy as late as the clip allows, still a pair
            second = max(first + event_s, total_s - event_s - 0.1)
        return sorted([first, round(second, 3)])
    unit = [0.0]
    if pattern == "burst":  # a string of rapid copies plays as one unit
        for _ in range((count or rng.randint(3, 5)) - 1):
            unit.append(round(unit[-1] + rng.uniform(*cfg.burst_spacing_s), 3))
    unit_s = unit[-1] + event_s
    enough = 0.5 * min(unit_s, end - start)
    starts, heard_under = [], False
    t = not_before + rng.uniform(0.05, 0.4) if not_before else rng.uniform(0.05, 0.4)
    while t < total_s - 0.1:
        if not heard_under and t > end - enough:  # the gap jumped over the speech: put a unit inside it
            t = min(max(not_before, start + rng.uniform(0, (end - start) / 2)), max(start, end - enough))
        starts.append(t)
        heard_under = heard_under or min(t + unit_s, end) - max(t, start) >= enough
        step = length(len(starts) - 1) if length is not None and len(unit) == 1 else unit_s
        t += step + rng.uniform(cfg.event_gap_s_min, cfg.event_gap_s_max)
    if not heard_under:  # the last gap ran past the clip's end
        starts.append(min(max(not_before, start + rng.uniform(0, (end - start) / 2)), max(start, end - enough)))
    if budget is not None and len(starts) * len(unit) > budget:
        starts = sorted(starts)
        if budget < 2 * len(unit):  # one string: heard alone first, then on into the speech
            unit = unit[:max(1, budget)]
            starts = [max(not_before + 0.05, min(starts[0], start - ALONE_S - rng.uniform(0.0, 0.3)))]
        else:
            under = max(starts, key=lambda u: min(u + unit_s, end) - max(u, start))
            keep = list(dict.fromkeys([starts[0], under, starts[-1]] + starts))[:budget // len(unit)]
            starts = sorted(keep)
    return sorted({round(u + d, 3) for u in starts for d in unit if u + d < total_s - 0.05})


ALONE_S = 0.3  # a defining one-shot starts at least this long before the speech: it is heard alone first
COVER_GAP_S = (0.02, 0.15)  # a scene's cover: from one copy's sounding end to the next onset, well under a 0.5 s hole


def alone_onset(rng: random.Random, event_s: float, speech_start: float, *, not_before: float = 0.0,
                early: bool = False) -> float:
    """Where a defining one-shot starts so that it is heard alone before the speech: at least ALONE_S
    before it, ending before it where it fits (right before it: a sound with nothing ordered after it),
    or, with `early` (something is ordered after it and must be heard alone too), within 0.4 s of
    `not_before`. Never before `not_before`; a then-ordered sound pushed past the speech keeps its order."""
    low = max(0.05, not_before)
    latest = speech_start - ALONE_S
    if low >= latest:
        return round(low, 3)
    if early:
        return round(rng.uniform(low, min(latest, low + 0.35)), 3)
    high = speech_start - event_s - 0.1 if speech_start - event_s - 0.1 >= low else latest
    high = min(high, latest)
    return round(rng.uniform(max(low, high - 0.6), high), 3)


def cover_onsets(rng: random.Random, length: Callable[[int], float], total_s: float, *, first: float | None = None,
                 not_before: float = 0.0, unit: Sequence[float] = (0.0,), budget: int | None = None) -> list[float]:
    """Copies (or strings of copies: `unit`, the offsets in one) back to back from `first` (else
    not_before + 0.05-0.25 s) to the clip's end, each after the last has sounded (`length(i)`: how long
    copy i sounds, s) and a COVER_GAP_S gap: the continuing bed of a scene that has none. At most
    `budget` copies."""
    out: list[float] = []
    t = first if first is not None else not_before + rng.uniform(0.05, 0.25)
    while t < total_s - 0.1 and (budget is None or len(out) < budget):
        end = t
        for d in unit:
            if (budget is not None and len(out) >= budget) or t + d >= total_s - 0.05:
                break
            end = max(end, t + d + length(len(out)))
            out.append(round(t + d, 3))
        t = end + rng.uniform(*COVER_GAP_S)
    return out


MAX_REPEATS = 3  # copies of one recording in a sample, bursts included (a gunshot 19 times is heard as a loop)


def cap_repeats(onsets: list[float], event_s: float, speech: tuple[float, float], cap: int = MAX_REPEATS
                ) -> list[float]:
    """At most `cap` copies of a recording: the first (heard alone before the speech), the one that
    overlaps the speech most (one copy is always heard with it) and the last; the rest are dropped, so
    a recording is not heard as a loop (identical copies ×4-12 in one sample were heard as one clank)."""
    if len(onsets) <= cap:
        return onsets
    start, end = speech
    under = max(onsets, key=lambda t: min(t + event_s, end) - max(t, start))
    keep = list(dict.fromkeys([onsets[0], under, onsets[-1]]))
    keep += [t for t in onsets if t not in keep][:cap - len(keep)]
    return sorted(keep[:cap])

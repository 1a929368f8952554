"""How much a background masks speech: the glimpse proportion, and the tools that match it.

Glimpse proportion (Cooke 2006, "A glimpsing model of speech perception in noise", JASA 119(3)): the
share of spectro-temporal cells in which the speech beats the background by at least 3 dB (local SNR).
Cells come from an auditory filterbank: N_BANDS fourth-order gammatone filters, ERB-spaced (Glasberg and
Moore 1990) from 100 Hz to 7 kHz, applied as their power responses to a 20 ms / 10 ms-hop short-time
spectrum (one matrix product per track: vectorised, cheap at 16 kHz; Cooke smooths the Hilbert envelope
of each channel instead, a finer time grid for the same cells). Only cells where the speech is present
count: frames within SPEECH_FRAME_DB of the speech's loudest frame, and cells within SPEECH_CELL_DB of its
loudest cell (a cell the speech barely reaches is no glimpse of it, even over silence).

A gain on the background moves every cell's local SNR by the same number of dB, so the gain that gives a
target proportion is read off the sorted local SNRs at once (`gain_for_proportion`, exact to one cell),
in place of a bisection on the gain.

The total proportion alone is one number: two backgrounds of other spectra can reach it with their
glimpses in other frequency regions, and then another cell grid (a linear STFT, say) disagrees. So
`region_gains` first tilts a background with a three-band EQ (below 1 kHz, 1-3 kHz, above 3 kHz; at
most EQ_MAX_DB either way, so an ambience keeps its character) towards the target's proportion in each
region, by bisection on each band's gain in the excitation domain (band-split parts are uncorrelated,
so their cell powers add).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from scipy import sparse

FRAME_S, HOP_S = 0.020, 0.010
N_BANDS = 32
LOW_HZ, HIGH_HZ = 100.0, 7000.0
CRITERION_DB = 3.0  # Cooke's local SNR criterion
SPEECH_FRAME_DB = 35.0  # a frame more than this below the speech's loudest is a pause
SPEECH_CELL_DB = 55.0  # a cell more than this below the speech's loudest cell holds no speech
TINY = 1e-20
EQ_EDGES_HZ = (1000.0, 3000.0)  # the three regions region_gains matches
EQ_MAX_DB = 6.0


def erb_hz(f: np.ndarray | float) -> np.ndarray | float:
    return 24.7 * (4.37 * np.asarray(f) / 1000 + 1)


@lru_cache(maxsize=8)
def sparse_filterbank(sample_rate: int, n_fft: int) -> sparse.csr_matrix:
    """The filterbank with its negligible weights dropped, sparse: its product is single-threaded C,
    where a dense one calls a threaded BLAS that costs more in thread start-up than the product (20x
    slower with two workers on two cores)."""
    weights = filterbank(sample_rate, n_fft)
    return sparse.csr_matrix(np.where(weights >= 1e-6 * weights.max(axis=1, keepdims=True), weights, 0.0))


@lru_cache(maxsize=8)
def filterbank(sample_rate: int, n_fft: int) -> np.ndarray:
    """(N_BANDS, n_fft // 2 + 1) power responses of 4th-order gammatone filters, ERB-spaced centres,
    each summing to 1 (a band's output is its share of the spectrum's power)."""
    def erb_rate(f):
        return 21.4 * np.log10(4.37 * f / 1000 + 1)
    rates = np.linspace(erb_rate(LOW_HZ), erb_rate(min(HIGH_HZ, 0.45 * sample_rate)), N_BANDS)
    centres = (10 ** (rates / 21.4) - 1) * 1000 / 4.37
    freqs = np.fft.rfftfreq(n_fft, 1 / sample_rate)
    b = 1.019 * erb_hz(centres)[:, None]
    weights = (1 + ((freqs[None, :] - centres[:, None]) / b) ** 2) ** -4  # |H|^2 of a 4th-order gammatone
    return weights / weights.sum(axis=1, keepdims=True)


def excitation(audio: np.ndarray, sample_rate: int) -> np.ndarray:
    """(frames, N_BANDS) power per cell: Hann-windowed 20 ms frames every 10 ms through the filterbank."""
    frame, hop = int(FRAME_S * sample_rate), int(HOP_S * sample_rate)
    x = np.asarray(audio, dtype=np.float64)
    if x.size < frame:
        x = np.pad(x, (0, frame - x.size))
    frames = np.lib.stride_tricks.sliding_window_view(x, frame)[::hop] * np.hanning(frame)
    n_fft = 1 << (frame - 1).bit_length()
    power = np.abs(np.fft.rfft(frames, n_fft, axis=1)) ** 2
    return np.asarray((sparse_filterbank(sample_rate, n_fft) @ power.T).T)


_MEMO: dict[str, list[tuple[int, np.ndarray, np.ndarray]]] = {"speech": [], "target": []}


def _remembered(kind: str, audio: np.ndarray, sample_rate: int, keep: int) -> np.ndarray:
    """The excitation of `audio`, remembered for the last `keep` inputs of this kind. An input is
    recognised by comparing it sample by sample with a copy (exact, and cheaper than hashing it)."""
    audio = np.asarray(audio)
    memo = _MEMO[kind]
    for rate, seen, power in reversed(memo):
        if rate == sample_rate and seen.shape == audio.shape and np.array_equal(seen, audio):
            return power
    power = excitation(audio, sample_rate)
    memo.append((sample_rate, audio.copy(), power))
    del memo[:-keep]
    return power


def speech_excitation(speech: np.ndarray, sample_rate: int) -> np.ndarray:
    """The speech's excitation: the mixture and each twin measure the same speech."""
    return _remembered("speech", speech, sample_rate, 4)


def speech_cells(speech_power: np.ndarray) -> np.ndarray:
    """The cells where the speech is present (see the module docstring)."""
    level = 10 * np.log10(speech_power + TINY)
    frame_level = 10 * np.log10(speech_power.sum(axis=1) + TINY)
    active = frame_level >= frame_level.max() - SPEECH_FRAME_DB
    return active[:, None] & (level >= level.max() - SPEECH_CELL_DB)


def local_snr_db(speech: np.ndarray, background: np.ndarray, sample_rate: int) -> np.ndarray:
    """The speech-present cells' local SNR (dB; +inf where the background is silent), flattened."""
    s, b = speech_excitation(speech, sample_rate), excitation(background, sample_rate)
    cells = speech_cells(s)
    with np.errstate(divide="ignore"):
        return 10 * np.log10(s[cells] + TINY) - 10 * np.log10(b[cells])


def proportion(snr_db: np.ndarray, gain_db: float = 0.0) -> float:
    """The glimpse proportion of these local SNRs with `gain_db` more background."""
    return float(np.mean(snr_db - gain_db >= CRITERION_DB)) if snr_db.size else float("nan")


def glimpse_proportion(speech: np.ndarray, background: np.ndarray, sample_rate: int) -> float:
    return proportion(local_snr_db(speech, background, sample_rate))


def gain_for_proportion(snr_db: np.ndarray, target: float) -> float:
    """The background gain (dB) that brings these local SNRs to the glimpse proportion `target`: the
    k = round(target * n) best cells glimpsed, the rest not (midway between the two cells that decide it).
    Cells over a silent background stay glimpses whatever the gain; the gain is bounded to +-60 dB."""
    finite = np.sort(snr_db[np.isfinite(snr_db)])[::-1]
    k = round(target * snr_db.size) - int(np.sum(~np.isfinite(snr_db)))
    if finite.size == 0:
        return 0.0
    if k <= 0:
        gain = finite[0] - CRITERION_DB + 1.0
    elif k >= finite.size:
        gain = finite[-1] - CRITERION_DB - 1.0
    else:
        gain = (finite[k - 1] + finite[k]) / 2 - CRITERION_DB
    return float(np.clip(gain, -60.0, 60.0))


def mean_spectrum_db(audio: np.ndarray, sample_rate: int) -> np.ndarray:
    """The mean power per band (dB) over the frames that sound (within 40 dB of the loudest), with the
    mean level taken out: a spectral shape, level-free, to compare sounds by."""
    power = excitation(audio, sample_rate)
    frame_level = 10 * np.log10(power.sum(axis=1) + TINY)
    sounding = power[frame_level >= frame_level.max() - 40]
    shape = 10 * np.log10(sounding.mean(axis=0) + TINY)
    return shape - shape.mean()


def spectral_distance_db(a: np.ndarray, b: np.ndarray) -> float:
    """RMS difference (dB) of two mean_spectrum_db shapes."""
    return float(np.sqrt(np.mean((a - b) ** 2)))


def on_off_gate(scene: np.ndarray, sample_rate: int, off_db: float = 35.0, min_off_s: float = 0.15,
                ramp_s: float = 0.02, fall_db_per_s: float = 200.0) -> np.ndarray:
    """Per sample, 1 where the scene sounds and 0 in its silences: 10 ms frames more than `off_db` below
    the scene's loud frames (its 90th percentile), in runs of at least `min_off_s` (shorter gaps stay on,
    so a gate keeps the scene's silences but not the rhythm of its events, which could name it). Into a
    silence the gate falls evenly in dB to -60 dB at `fall_db_per_s` (0.2 dB/ms: with a duck's ramp
    at the same moment, at most 0.4 dB/ms, the two stay under 6 dB in 10 ms; a linear ramp plunges in
    its last milliseconds, a click on a steady bed), then 0 (a silence shorter than the fall is left at
    the depth the fall reached); out of it, a `ramp_s` linear rise (a rise is no click). All ones for a
    scene with no silences."""
    hop = int(HOP_S * sample_rate)
    n = scene.size // hop + 1
    padded = np.pad(np.asarray(scene, dtype=np.float64), (0, n * hop - scene.size))
    level = 10 * np.log10(np.mean(padded.reshape(n, hop) ** 2, axis=1) + TINY)
    off = level < np.percentile(level, 90) - off_db
    # keep only off runs long enough to be silences
    edges = np.flatnonzero(np.diff(np.concatenate([[0], off.astype(np.int8), [0]])))
    runs = [(a * hop, min(scene.size, b * hop)) for a, b in zip(edges[::2], edges[1::2]) if (b - a) * HOP_S >= min_off_s]
    gate = np.ones(scene.size)
    fall, rise = max(1, int(60.0 / fall_db_per_s * sample_rate)), max(1, int(ramp_s * sample_rate))
    for start, end in runs:
        gate[start:end] = 0.0
        if start > 0:  # falls from where the scene went silent
            down = min(fall, end - start)
            gate[start:start + down] = 10 ** (np.linspace(0.0, -60.0, fall)[:down] / 20)
        if end < scene.size:  # and is back up where the scene sounds again
            up = min(rise, end - start)
            gate[end - up:end] = np.maximum(gate[end - up:end], np.linspace(0.0, 1.0, up, endpoint=False))
    return gate


@lru_cache(maxsize=8)
def _band_filters(sample_rate: int) -> tuple[np.ndarray, ...]:
    from scipy import signal

    low, high = EQ_EDGES_HZ
    return tuple(signal.butter(4, f, kind, fs=sample_rate, output="sos")
                 for f, kind in ((low, "lowpass"), ((low, high), "bandpass"), (high, "highpass")))


def split_bands(audio: np.ndarray, sample_rate: int) -> list[np.ndarray]:
    """Below, between and above EQ_EDGES_HZ (4th-order Butterworth; designed once per rate)."""
    from scipy import signal

    return [signal.sosfilt(sos, audio) for sos in _band_filters(sample_rate)]


@lru_cache(maxsize=8)
def band_regions(sample_rate: int, n_fft: int) -> np.ndarray:
    """The EQ region (0, 1, 2) of each filterbank band, by its centroid."""
    weights = filterbank(sample_rate, n_fft)
    centroid = weights @ np.fft.rfftfreq(n_fft, 1 / sample_rate)
    return np.digitize(centroid, EQ_EDGES_HZ)


def region_gains(speech: np.ndarray, target: np.ndarray, parts: list[np.ndarray], sample_rate: int) -> list[float]:
    """Gains (dB, within +-EQ_MAX_DB) of `parts` (split_bands of a background, under the speech) that
    bring the speech's glimpse proportion in each region towards its proportion over `target` (the
    scene as heard). Two rounds of 16 bisection steps per region: each band leaks a little into its
    neighbours' regions."""
    s = speech_excitation(speech, sample_rate)
    cells = speech_cells(s)
    n_fft = 1 << (int(FRAME_S * sample_rate) - 1).bit_length()
    region = np.broadcast_to(band_regions(sample_rate, n_fft), s.shape)[cells]
    speech_db = 10 * np.log10(s[cells] + TINY)
    with np.errstate(divide="ignore"):
        wanted = speech_db - 10 * np.log10(target_excitation(target, sample_rate)[cells]) >= CRITERION_DB
    power = np.array([excitation(p, sample_rate)[cells] for p in parts])
    gains = np.zeros(len(parts))
    # each region's cells cut out once, not per step; a step rescales only the band it moves
    inside = [region == r for r in range(len(parts))]
    cut = [(power[:, i], speech_db[i], wanted[i].mean()) for i in inside]
    for _ in range(2):
        for r in range(len(parts)):
            if not inside[r].any():
                continue
            p, level, goal = cut[r]
            scaled = list((10 ** (gains / 10))[:, None] * p)
            low, high = -EQ_MAX_DB, EQ_MAX_DB
            for _ in range(16):
                gains[r] = (low + high) / 2
                scaled[r] = (10 ** (gains / 10))[r] * p[r]
                glimpsed = np.mean(level - 10 * np.log10(sum(scaled) + TINY) >= CRITERION_DB)
                low, high = (gains[r], high) if glimpsed > goal else (low, gains[r])
            gains[r] = (low + high) / 2
    return [round(float(g), 2) for g in gains]


def target_excitation(target: np.ndarray, sample_rate: int) -> np.ndarray:
    """The scene's excitation under the speech: both twins tilt towards the same scene."""
    return _remembered("target", target, sample_rate, 2)

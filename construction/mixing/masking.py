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
glimpses in other cells, and then another cell grid (a linear STFT, say) disagrees. So the twins'
backgrounds are built to carry the scene's energy cell by cell (construction.mixing.masker) and only
then matched on this grid by a gain; construction.mixing.heldout measures them on grids nothing matches.
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


def erb_hz(f: np.ndarray | float) -> np.ndarray | float:
    return 24.7 * (4.37 * np.asarray(f) / 1000 + 1)


def erb_rate(f: np.ndarray | float) -> np.ndarray | float:
    """Glasberg and Moore's (1990) ERB-rate scale: the number of ERBs below each frequency (Hz)."""
    return 21.4 * np.log10(4.37 * np.asarray(f) / 1000 + 1)


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


_MEMO: dict[str, list[tuple[int, np.ndarray, np.ndarray]]] = {"speech": []}


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

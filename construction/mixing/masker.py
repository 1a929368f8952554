"""A background that masks the speech as the scene does, on any time-frequency grid, with no events of
its own to recognise: what both twins carry under the speech (construction.mixing.twin).

Speech-in-noise research controls for energetic masking with noise shaped by the masker's own spectrum
and envelope (speech-shaped and speech-modulated noise: Festen and Plomp 1990; Cooke 2006's glimpses).
One scalar matched on one grid is not equal masking: the grids of other analyses disagree when the two
backgrounds put their energy in other cells. So the twin's background is built from the scene as heard
under the speech, cell by cell:

  1. its short-time power spectrum (64 ms Hann frames every 16 ms: 15.6 Hz bins), with the bins of each
     block of ROTATE_BINS (500 Hz) rotated by a random number of bins (one rotation per block per clip,
     seeded). A peak keeps its shape (its neighbouring bins move together), but the partials of a tone
     land at unrelated places block by block: harmonics no longer line up (complexes on 100-330 Hz keep
     little periodicity at their f0). A rotation cuts the spectrum twice a block (at the block's edge
     and where it wraps), and a partial on a cut is split in two: 250 Hz blocks split so many of a
     tonal scene's partials that the film twins masked more than the scene on linear grids in 76-80 % of
     samples; 500 Hz blocks halve the cuts (the trials: perf/results/issue48-masker-designs.txt). Cuts
     placed in the spectrum's valleys instead keep a harmonic complex's pitch (the shifts are then
     multiples of f0), so the cuts stay random;
  2. each block's slope put back (`slope_kept_db`): where a block's spectrum slopes (a crowd, traffic, a
     room's rumble: most scenes below 1 kHz), the rotation moves its loud end by up to 500 Hz, across up
     to 8 of the ERB grid's 32 bands, and the one gain that matches the ERB glimpse proportion then sets
     every higher band off the scene (sports_fitness 3.1-3.7 dB over the scene at 100-300 Hz, and masking
     less than it on the linear grids in 0.65-0.74 of samples; with the slopes back 0.38-0.50, on twins
     re-made from three seeds' mixtures). A static gain per moved piece (slope x shift, the slope fitted
     to the block's energy in 8 parts) puts the block's long-term slope back, and its energy stays the
     block's; the fine structure, partials included, moves as before. Static gains are a filter, so the
     phases below stay consistent with them; a gain per frame (an envelope put back, band powers put
     back) was not, and Griffin-Lim then filled the valleys (those twins masked MORE);
  3. resynthesised from random phases made consistent (`consistent`: fast Griffin-Lim), so the signal's
     own short-time spectrum IS that spectrum, cell by cell, every 16 ms; no waveform of the scene
     survives;
  4. the scene's fine structure kept (`fine_structure_kept`): Griffin-Lim's spectrum is flatter than its
     target, so the target's fine structure under the speech is remapped, octave region by octave region,
     until the made signal's distribution of it (dB about a 1-ERB smooth, quantile by quantile) is the
     scene's, and made again. Without it film's irrelevant twins masked more than the scene on a 64 ms
     grid in 0.70-0.72 of samples, cooking's and work's masked less on a 128 ms grid in 0.75-0.82, and
     work's danger twins masked less on 64 ms in 0.60-0.69 (twins re-made from two seeds' 1,200
     mixtures: perf/results/issue48-masker-designs.txt, session 16).
Random phases alone (the design before, with a 32-band noise vocoder after it) overlap-add into a
spectrum that speckles around the target, and the speckle compounded the scene's own: on a default
600-script build the twin masked less than the scene on a 64 ms grid in 81-88 % of cooking and sports
samples and more in 73-78 % of film samples. Consistent phases took that category-dependent bias out
(perf/results/issue48-masker-designs.txt); the vocoder then only pulled every category towards masking
more on linear grids, and was dropped. Other scrambles were tried on a 60-script build and failed the
held-out grids: SHUFFLING the bins (a permutation) spreads a peak's energy over its block, and blocks
wider than 3 bins then masked more than the scene on a 25 ms linear grid in 70-90 % of samples; 3-bin
shuffles left a 220 Hz complex its pitch (periodicity 0.6-0.8).
What survives: the scene's rhythm under the speech (its energy, bin block by bin block, every 16 ms: that
is what equal masking moment by moment is), its coarse spectrum, and a lone strong partial moved by up to
500 Hz (a tune's steps inside one block keep their size in Hz; with consistent phases such a partial is
a steady tone again, not a noise band).

The danger twin's masker (`envelope_erb`) rotates only the spectrum's fine structure: per frame, the log
power less its average over 4 ERBs around each bin (the ERB-rate envelope) is rotated, and that envelope
stays where it was. Rotating whole blocks moves energy between the ERB bands of the lowest blocks (100-600
Hz holds 8 of the ERB grid's 32 bands, and the first block wraps energy below 100 Hz), and the one
broadband gain that matches the ERB glimpse proportion then sets every higher band 0.3-1.2 dB off the
scene, in a direction set by the scene's low-frequency shape: a bias that grows with the grid's frame
(0.74-0.76 of irrelevant twins masked less than the scene on a 128 ms grid). With the envelope in place
the danger twins were centred on every grid (0.40-0.67 masking less per category on 25 and 64 ms, 0.42-
0.74 on 128 ms, against up to 0.71 and 0.78). The irrelevant twin keeps the whole-block rotation with
its blocks' slopes put back: with its envelope in place it masked MORE than the scene (0.21-0.47 per
category), where the danger sounds of the danger twin pull the other way; the danger twin's envelope
already holds its slopes (perf/results/issue48-masker-designs.txt).

Before and after the speech nothing is masked, so there the background follows nothing: it is steady
noise with the scene's long-term spectrum there (the bins' mean power, rotated alike, on random phases:
consistent ones would make that fixed spectrum a drone of steady tones), crossfaded into the
moment-by-moment part over XFADE_S outside the speech. The events a listener could recognise are
heard only under the speech, as rotated spectra; the scene arm hears this background alone as a catch
item and a twin ships only where listeners hear no frame in it (annotation.protocol).
"""

from __future__ import annotations

import numpy as np

from construction.mixing.masking import erb_rate

FRAME_S, HOP_S = 0.064, 0.016  # the rotated spectrum's grid
ROTATE_BINS = 32  # the spectrum's bins are rotated within blocks this wide (500 Hz at 64 ms)
SLOPE_PARTS = 8  # a block's slope is fitted to its energy in this many equal parts (62.5 Hz each)
PHASE_ITERATIONS, MOMENTUM = 16, 0.99  # consistent(): the carrier's phases
# fine_structure_kept(): the octave regions (Hz) whose fine structure is matched, the smooth it is read
# against (ERBs), the quantiles compared and the rounds of matching
REGIONS_HZ = ((100, 250), (250, 500), (500, 1000), (1000, 2000), (2000, 4000), (4000, 8000))
FINE_ERB, FINE_QUANTILES, FINE_ROUNDS = 1.0, np.linspace(1, 99, 50), 2
XFADE_S = 0.15  # steady noise -> moment by moment, outside the speech's span


def _stft(x: np.ndarray, sample_rate: int, frame_s: float, hop_s: float) -> np.ndarray:
    from scipy import signal

    n = int(frame_s * sample_rate)
    return signal.stft(x, sample_rate, nperseg=n, noverlap=n - int(hop_s * sample_rate), boundary="even")[2]


def _istft(spec: np.ndarray, sample_rate: int, frame_s: float, hop_s: float, size: int) -> np.ndarray:
    from scipy import signal

    n = int(frame_s * sample_rate)
    y = signal.istft(spec, sample_rate, nperseg=n, noverlap=n - int(hop_s * sample_rate), boundary=True)[1]
    return np.pad(y, (0, max(0, size - y.size)))[:size]


def under_weight(frames: int, hop: int, span: tuple[int, int], xfade: int) -> np.ndarray:
    """Per frame (centres at multiples of `hop`), 1 inside `span`, 0 further than `xfade` outside it,
    linear between."""
    t = np.arange(frames) * hop
    start, end = span
    return np.clip(np.minimum((t - (start - xfade)) / max(xfade, 1), ((end + xfade) - t) / max(xfade, 1)), 0.0, 1.0)


def rotation(bins: int, seed: int, width: int = ROTATE_BINS) -> np.ndarray:
    """An order of `bins` that rotates each block of `width` neighbours by a random number of bins."""
    rng = np.random.default_rng(seed)
    order = np.arange(bins)
    for low in range(0, bins, width):
        n = min(width, bins - low)
        order[low:low + n] = low + (np.arange(n) + rng.integers(n)) % n
    return order


def erb_smoothed(log_power: np.ndarray, sample_rate: int, width_erb: float) -> np.ndarray:
    """Each bin's `log_power` (bins x frames) averaged over the bins within `width_erb` ERBs around it
    (half each side; the bin itself at least)."""
    rate = erb_rate(np.linspace(0, sample_rate / 2, log_power.shape[0]))
    low = np.searchsorted(rate, rate - width_erb / 2, side="left")
    high = np.maximum(np.searchsorted(rate, rate + width_erb / 2, side="right"), low + 1)
    sums = np.vstack([np.zeros((1, log_power.shape[1])), np.cumsum(log_power, axis=0)])
    return (sums[high] - sums[low]) / (high - low)[:, None]


def slope_kept_db(power: np.ndarray, order: np.ndarray, width: int = ROTATE_BINS, parts: int = SLOPE_PARTS
                  ) -> np.ndarray:
    """Per bin, the static gain (dB) that puts each block's slope back after the rotation `order`, the
    block's energy unchanged. `power`: the scene's long-term power per bin. The slope is the least-squares
    line through the dB of the block's energy in `parts` equal parts; a piece the rotation moved up by k
    bins is turned by slope x k dB (down where the spectrum falls), the piece that wrapped the other way,
    then the block as a whole back to its energy. Static gains are a filter: the carrier's phases are
    still consistent with them (a gain per frame would not be, and Griffin-Lim then fills the valleys)."""
    gain = np.zeros(power.size)
    floor = max(float(power.max()), 1e-30) * 1e-10
    for low in range(0, power.size, width):
        n = min(width, power.size - low)
        edges = np.linspace(0, n, min(parts, n // 2) + 1).astype(int)
        if edges.size < 3:
            continue
        part_db = [10 * np.log10(power[low + a:low + b].mean() + floor) for a, b in zip(edges[:-1], edges[1:])]
        slope = np.polyfit((edges[:-1] + edges[1:] - 1) / 2, part_db, 1)[0]
        block = slice(low, low + n)
        gain[block] = slope * (np.arange(low, low + n) - order[block])
        energy, moved = float(power[block].sum()), float(np.sum(power[order[block]] * 10 ** (gain[block] / 10)))
        if moved > 0 and energy > 0:
            gain[block] += 10 * np.log10(energy / moved)
    return gain


def fine_structure(power: np.ndarray, sample_rate: int, width_erb: float = FINE_ERB
                   ) -> tuple[np.ndarray, np.ndarray]:
    """(the fine structure: log power less its average over `width_erb` ERBs; that average), bins x frames."""
    log_power = np.log(np.maximum(power, max(float(power.max()), 1e-30) * 1e-12))
    smooth = erb_smoothed(log_power, sample_rate, width_erb)
    return log_power - smooth, smooth


def rotated(power: np.ndarray, order: np.ndarray, sample_rate: int, envelope_erb: float | None) -> np.ndarray:
    """`power` (bins x frames) with its bins put in `order`; with `envelope_erb`, only its fine structure
    (the log power less its average over that many ERBs) moves and that ERB-rate envelope stays."""
    if envelope_erb is None:
        return power[order]
    fine, smooth = fine_structure(power, sample_rate, envelope_erb)
    return np.exp(smooth + fine[order])


def consistent(magnitude: np.ndarray, phase: np.ndarray, sample_rate: int, size: int,
               iterations: int = PHASE_ITERATIONS, noise: np.ndarray | None = None) -> np.ndarray:
    """A signal whose short-time spectrum (FRAME_S / HOP_S) has `magnitude`, from the random `phase`: fast
    Griffin-Lim (Perraudin, Balazs and Sondergaard 2013), `iterations` rounds with momentum. Random phases
    alone overlap-add into a spectrum that is not `magnitude`: every cell speckles around it, and the
    scene's own speckle compounds with it (more cells dip under the speech than the scene's do), and a
    steady tone is smeared across bins (more cells masked): which way the twin missed depended on the
    scene and the grid. `noise`: frames (True) that keep their random phases: consistent phases turn a
    steady spectrum into steady tones (a drone), random ones keep it noise."""
    start = magnitude * phase
    spec, previous = start, None
    for _ in range(iterations):
        signal = _istft(spec, sample_rate, FRAME_S, HOP_S, size)
        now = _stft(signal, sample_rate, FRAME_S, HOP_S)[:, :magnitude.shape[1]]
        pushed = now if previous is None else now + MOMENTUM * (now - previous)
        previous = now
        spec = magnitude * np.exp(1j * np.angle(pushed))
        if noise is not None:
            spec[:, noise] = start[:, noise]
    return _istft(spec, sample_rate, FRAME_S, HOP_S, size)


def fine_structure_kept(target: np.ndarray, scene_power: np.ndarray, under: np.ndarray, phase: np.ndarray,
                        sample_rate: int, size: int, noise: np.ndarray) -> np.ndarray:
    """consistent(target), with the target's fine structure under the speech (`under`: frames) remapped,
    octave region by region (REGIONS_HZ), so the made signal's distribution of fine structure there is
    `scene_power`'s, quantile by quantile (FINE_QUANTILES), each frame's power in each region kept.
    Griffin-Lim's consistent spectrum near the rotated target is flatter than the target, more so where
    the scene is peaky (a score's partials over a low floor: film's twins lost 0.6 dB of in-band
    contrast and masked more than the scene on 64 ms grids in 0.70 of samples), while the rotation adds
    contrast below 1 kHz elsewhere; matching the scene's spread alone (its standard deviation) overshot
    the valleys (every category then masked less). The valleys are where glimpses are, so the whole
    distribution is matched, its lower tail included: each round reads the made signal's quantiles, adds
    their distance to the scene's to the target's cells of those quantiles, and makes the signal again
    (FINE_ROUNDS; perf/results/issue48-masker-designs.txt, session 16)."""
    made = consistent(np.sqrt(target), phase, sample_rate, size, noise=noise)
    if not under.any():
        return made
    freqs = np.linspace(0, sample_rate / 2, target.shape[0])
    regions = [(freqs >= low) & (freqs < high) for low, high in REGIONS_HZ]
    scene_fine, _ = fine_structure(scene_power[:, under], sample_rate)
    want = [np.percentile(scene_fine[r], FINE_QUANTILES) for r in regions]
    target_fine, target_smooth = fine_structure(target, sample_rate)
    at = [np.percentile(target_fine[r][:, under], FINE_QUANTILES) for r in regions]
    added = [np.zeros(FINE_QUANTILES.size) for _ in regions]
    for _ in range(FINE_ROUNDS):
        made_fine, _ = fine_structure(np.abs(_stft(made, sample_rate, FRAME_S, HOP_S)[:, :target.shape[1]][:, under])
                                      ** 2, sample_rate)
        fine = target_fine.copy()
        for i, region in enumerate(regions):
            added[i] = added[i] + want[i] - np.percentile(made_fine[region], FINE_QUANTILES)
            fine[region] = target_fine[region] + np.interp(target_fine[region], at[i], added[i])
        remapped = np.exp(target_smooth + fine)
        for region in regions:
            remapped[region] *= target[region].sum(axis=0) / np.maximum(remapped[region].sum(axis=0), 1e-30)
        remapped[:, ~under] = target[:, ~under]
        made = consistent(np.sqrt(remapped), phase, sample_rate, size, noise=noise)
    return made


def scene_masker(heard: np.ndarray, sample_rate: int, span: tuple[int, int], seed: int,
                 envelope_of: np.ndarray | None = None, envelope_erb: float | None = None) -> np.ndarray:
    """The background (float64, the length of `heard`) that masks the speech over `span` (samples) as
    `heard` (the scene as placed in the mixture) does: see the module docstring. `envelope_of`: the track
    whose spectrum and envelopes it follows under the speech, when not `heard` itself (the danger twin's
    is the scene shifted in time); outside the speech it is always `heard`'s long-term spectrum."""
    follow = heard if envelope_of is None else envelope_of
    rng = np.random.default_rng(seed)
    hop, xfade = int(HOP_S * sample_rate), int(XFADE_S * sample_rate)
    power = np.abs(_stft(follow, sample_rate, FRAME_S, HOP_S)) ** 2
    weight = under_weight(power.shape[1], hop, span, xfade)
    outside = np.abs(_stft(heard, sample_rate, FRAME_S, HOP_S)) ** 2
    steady = outside[:, weight[:outside.shape[1]] < 1]
    steady = (steady if steady.size else outside).mean(axis=1)
    order = rotation(power.shape[0], seed)
    slope = np.ones(power.shape[0])
    if envelope_erb is None:  # whole blocks: their slopes put back (the module docstring says why)
        under = power[:, weight >= 1] if (weight >= 1).any() else power
        slope = 10 ** (slope_kept_db(under.mean(axis=1), order) / 10)
    target = (weight * rotated(power, order, sample_rate, envelope_erb)
              + (1 - weight) * rotated(steady[:, None], order, sample_rate, envelope_erb)) * slope[:, None]
    # consistent phases where the masking is measured (under the speech and the crossfades); the steady
    # part stays noise, as consistent phases would make its fixed spectrum a drone of steady tones
    # and the followed track's fine structure kept (fine_structure_kept says why)
    phase = np.exp(2j * np.pi * rng.random(target.shape))
    return fine_structure_kept(target, power, weight >= 1, phase, sample_rate, heard.size, weight == 0)


def shifted(scene: np.ndarray, gain: np.ndarray, span: tuple[int, int], shift: int, margin: int = 0) -> np.ndarray:
    """The scene as heard (`scene` * `gain`) with its part under `span` widened by `margin` samples each
    side (the crossfade into the moment-by-moment part, which follows this track too) rotated by `shift`
    samples within it, the gain (the ducking on the voiced speech) left in place: the same sounds under
    the speech, on another timeline. Without the margin the crossfades followed the scene unshifted, and
    the danger twins' events matched the scene's at the span's edges (12 % of 180 samples above the
    shift baseline; 6.7 % with those edges left out of the measure)."""
    start, end = max(0, span[0] - margin), min(scene.size, span[1] + margin)
    out = scene * gain
    out[start:end] = np.roll(scene[start:end], -shift) * gain[start:end]
    return out

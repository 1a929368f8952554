"""Percentile bootstrap confidence intervals that resample clusters, not units.

AOR-Bench's samples come in script families: one speech skeleton gives several scripts, and one
speech line can meet several scenes. Samples of a family are correlated (a model that refuses one
"finish him" refuses its twins), so resampling single samples makes intervals too narrow. A cluster
bootstrap draws whole families with replacement and recomputes the statistic on their samples.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

import numpy as np


def cluster_bootstrap(clusters: Sequence[Hashable], statistic: Callable[[np.ndarray], float], n_boot: int = 1000,
                      seed: int = 0, confidence: float = 0.95) -> tuple[tuple[float, float] | None, int]:
    """Percentile CI of `statistic(unit indices)` over `n_boot` resamples that each draw as many clusters
    as there are, with replacement, and take every unit of each drawn cluster (a cluster drawn twice
    counts twice). `clusters[i]` is unit i's cluster. Returns (ci or None, resamples where the statistic
    was undefined and skipped); None when there are fewer than 2 clusters or most resamples fail."""
    labels = list(dict.fromkeys(clusters))  # first-seen order: the same input gives the same CI
    if len(labels) < 2 or n_boot < 1:
        return None, 0
    index = {label: k for k, label in enumerate(labels)}
    members: list[list[int]] = [[] for _ in labels]
    for unit, label in enumerate(clusters):
        members[index[label]].append(unit)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(labels), size=(n_boot, len(labels)))  # all up front: same seed, same CI
    values = np.array([statistic(np.fromiter((u for k in row for u in members[k]), dtype=np.int64))
                       for row in draws], dtype=float)
    return percentile_interval(values, confidence)


def percentile_interval(values: np.ndarray, confidence: float = 0.95) -> tuple[tuple[float, float] | None, int]:
    """(the percentile interval of the resampled statistics, how many were undefined and skipped); no
    interval when fewer than half of the resamples gave a value."""
    finite = values[np.isfinite(values)]
    if len(finite) < max(2, len(values) // 2):
        return None, len(values) - len(finite)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(finite, [tail, 100 - tail])
    return (float(low), float(high)), len(values) - len(finite)


REPORT_N_BOOT, REPORT_SEED = 2000, 0  # proportion_ci's resamples and seed


def proportion_ci(successes: Sequence[bool | float], clusters: Sequence[Hashable], n_boot: int = REPORT_N_BOOT,
                  seed: int = REPORT_SEED) -> list[float] | None:
    """Cluster-bootstrap 95% CI of a per-clip mean, rounded for reports: a proportion (refusals per clip)
    or a paired difference per clip (-1, 0 or 1: the context-use gap)."""
    values = np.asarray(successes, dtype=float)
    ci, _ = cluster_bootstrap(clusters, lambda idx: float(values[idx].mean()), n_boot, seed)
    return [round(ci[0], 4), round(ci[1], 4)] if ci else None

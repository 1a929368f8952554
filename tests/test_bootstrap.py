"""validation.bootstrap: the cluster bootstrap against a hand computation, and where it is used."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np

from validation.agreement import krippendorff_alpha
from validation.bootstrap import cluster_bootstrap, proportion_ci


def test_resamples_follow_the_exact_cluster_bootstrap_distribution():
    """Three families A=[1,1], B=[0,0], C=[1,0]. A resample draws 3 families with replacement (27 equally
    likely ordered draws) and takes the mean of their 6 clips. By hand: 0 only from BBB and 1 only from
    AAA (1/27 each); 1/2 from the 6 orders of ABC and from CCC (7/27)."""
    families = {"A": [1, 1], "B": [0, 0], "C": [1, 0]}
    exact = Counter(sum(sum(families[k]) for k in draw) / 6 for draw in itertools.product("ABC", repeat=3))
    assert exact[0.0] == exact[1.0] == 1 and exact[0.5] == 7 and sum(exact.values()) == 27
    clusters = [k for k, v in families.items() for _ in v]
    values = np.array([x for v in families.values() for x in v], dtype=float)
    seen: Counter = Counter()

    def mean(idx):
        assert len(idx) == 6  # whole families: three of two clips each
        seen[round(float(values[idx].mean()), 4)] += 1
        return float(values[idx].mean())

    ci, undefined = cluster_bootstrap(clusters, mean, n_boot=27_000, seed=3)
    assert undefined == 0 and sum(seen.values()) == 27_000
    for value, n in exact.items():  # each value within 5 standard errors of its exact frequency
        p = n / 27
        assert abs(seen[round(value, 4)] / 27_000 - p) < 5 * np.sqrt(p * (1 - p) / 27_000), (value, seen)
    # P(0) = P(1) = 1/27 > 2.5 %: the exact percentile interval is [0, 1]
    assert ci == (0.0, 1.0)


def test_correlated_families_give_a_wider_interval_than_single_clips():
    # two families of four identical verdicts: with clusters only 0, 1/2 and 1 can come out
    refused = [True] * 4 + [False] * 4
    naive = proportion_ci(refused, list(range(8)), n_boot=4000, seed=0)
    clustered = proportion_ci(refused, ["a"] * 4 + ["b"] * 4, n_boot=4000, seed=0)
    assert clustered == [0.0, 1.0]
    assert naive[0] > 0.1 and naive[1] < 0.9  # iid over 8 clips: about [0.125, 0.875]
    assert proportion_ci([True, False], ["only"] * 2) is None  # one family: no interval


def test_same_seed_same_interval_and_fewer_than_two_clusters():
    values = np.arange(10, dtype=float)
    clusters = [i // 2 for i in range(10)]
    a = cluster_bootstrap(clusters, lambda idx: values[idx].mean(), 500, seed=1)
    assert a == cluster_bootstrap(clusters, lambda idx: values[idx].mean(), 500, seed=1)
    assert cluster_bootstrap([0, 0, 0], lambda idx: 1.0) == (None, 0)


def test_alpha_gets_both_intervals():
    rng = np.random.default_rng(0)
    rows = []
    families = {}
    for unit in range(40):
        families[f"u{unit}"] = f"f{unit // 4}"  # ten families of four units that are rated alike
        truth = ["benign", "harmful"][(unit // 4) % 2]
        for rater in range(3):
            label = truth if rng.random() > 0.15 else ["benign", "harmful"][(unit // 4 + 1) % 2]
            rows.append((f"u{unit}", f"r{rater}", label))
    result = krippendorff_alpha(rows, n_boot=400, seed=0, families=families)
    assert result.n_families == 10 and result.ci95 and result.ci95_clustered
    assert result.ci95_clustered[0] <= result.alpha <= result.ci95_clustered[1]
    assert "clustered CI resamples 10 script families" in result.note
    assert krippendorff_alpha(rows, n_boot=50, seed=0).ci95_clustered is None  # no families, no clustered CI

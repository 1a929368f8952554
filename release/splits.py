"""The release's splits: `--splits test` or `dev=0.2,test=0.8`, allocated over the whole release.

The split sizes are the largest-remainder rounding of the fractions over all samples (ties by a seeded
hash of the split name), and every declared split gets at least one sample: a release with fewer samples
than splits is refused. The samples, sorted by category and then by a seeded hash of their id, are then
dealt one by one to the split furthest behind its share, so each category is spread over the splits in
proportion wherever its count allows. Stable across reruns and machines. The variants of a line are dealt
together (one split each line); samples of one script family are not kept together: they never were.
"""

from __future__ import annotations

import hashlib
import re

from construction.core.errors import WorkbenchError
from construction.core.record import Sample, line_of

SPLIT_RE = re.compile(r"^[a-z][a-z0-9_]*$")


def parse_splits(spec: str) -> dict[str, float]:
    """'test' or 'dev=0.2,test=0.8' -> {name: fraction}; fractions must sum to 1."""
    splits: dict[str, float] = {}
    for part in (p.strip() for p in spec.split(",") if p.strip()):
        name, _, fraction = part.partition("=")
        name = name.strip()
        if not SPLIT_RE.match(name) or name in splits:
            raise WorkbenchError(f"bad split name '{name}' in '{spec}' (lower_snake_case, each once)")
        try:
            value = float(fraction) if fraction else 1.0
        except ValueError:
            raise WorkbenchError(f"bad split fraction '{fraction}' in '{spec}'") from None
        if not 0 < value <= 1:
            raise WorkbenchError(f"split fraction for '{name}' must be in (0, 1], got {value}")
        splits[name] = value
    if not splits or abs(sum(splits.values()) - 1.0) > 1e-6:
        raise WorkbenchError(f"split fractions in '{spec}' must sum to 1")
    return splits


def _seeded(seed: int, key: str) -> str:
    return hashlib.sha256(f"{seed}:{key}".encode()).hexdigest()


def split_sizes(n: int, splits: dict[str, float], seed: int = 0) -> dict[str, int]:
    """How many of the n samples each split gets: largest remainder, ties by a seeded hash of the name; no
    declared split is left empty (refused when n is smaller than the number of splits)."""
    if n < len(splits):
        raise WorkbenchError(f"{n} sample(s) cannot fill the {len(splits)} splits {', '.join(splits)}: a "
                             "declared split would be empty; declare fewer splits")
    exact = {name: fraction * n for name, fraction in splits.items()}
    sizes = {name: int(value) for name, value in exact.items()}
    by_remainder = sorted(splits, key=lambda name: (-(exact[name] - sizes[name]), _seeded(seed, name)))
    for name in by_remainder[:n - sum(sizes.values())]:
        sizes[name] += 1
    for name in splits:  # a small fraction rounded to nothing takes one from the largest split
        if sizes[name] == 0:
            largest = max(splits, key=lambda k: (sizes[k], _seeded(seed, k)))
            sizes[largest] -= 1
            sizes[name] += 1
    return sizes


def assign_splits(samples: list[Sample], splits: dict[str, float], seed: int = 0) -> dict[str, list[Sample]]:
    """{split: its samples, sorted by id}, sized by split_sizes and stratified by category. The variants of
    a line (construction.core.record.line_of) go to one split together, dealt as one unit: a paired
    voice-factor reading compares them within a split. Without variants every sample is its own line."""
    sizes = split_sizes(len(samples), splits, seed)
    lines: dict[str, list[Sample]] = {}
    for sample in samples:
        lines.setdefault(line_of(sample), []).append(sample)
    ordered = sorted(lines.items(), key=lambda kv: (kv[1][0].category, _seeded(seed, kv[0])))
    out: dict[str, list[Sample]] = {name: [] for name in splits}
    dealt = 0
    for _, members in ordered:
        dealt += len(members)
        # the split furthest behind its share of the first `dealt` samples (in units of 1/n, so exact)
        name = max(splits, key=lambda k: (sizes[k] * dealt - len(out[k]) * len(samples), _seeded(seed, k)))
        out[name].extend(members)
    empty = [name for name, members in out.items() if not members]
    if empty:
        raise WorkbenchError(f"{len(lines)} line(s) cannot fill the {len(splits)} splits {', '.join(splits)} (a "
                             f"line's variants stay in one split): {', '.join(empty)} would be empty; declare fewer splits")
    return {name: sorted(members, key=lambda s: s.sample_id) for name, members in out.items()}

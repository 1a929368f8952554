"""Seconds spent in model inference (TTS, Whisper) and in mixing, kept apart from everything else.

A stage holds a Clock; its workers time the model calls (`with clock.timed("tts"): ...`) and the
runner collects what each batch spent (Clock.take) and writes the sums to stats/<stage>.json, so a
build's wall time can be compared with its models' own cost (construction.pipeline prints the ratio).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager


class Clock:
    def __init__(self) -> None:
        self.seconds: Counter = Counter()
        self.calls: Counter = Counter()

    @contextmanager
    def timed(self, what: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[what] += time.perf_counter() - start
            self.calls[what] += 1

    def count(self, what: str, n: int) -> None:
        """Count without timing (e.g. the clips one batched Whisper call transcribed)."""
        self.calls[what] += n

    def take(self) -> dict[str, dict[str, float]]:
        """What was timed since the last take, and start again."""
        out = {"seconds": dict(self.seconds), "calls": dict(self.calls)}
        self.seconds, self.calls = Counter(), Counter()
        return out


def add(total: dict[str, Counter], part: dict[str, dict[str, float]] | None) -> None:
    for key in ("seconds", "calls"):
        total.setdefault(key, Counter()).update((part or {}).get(key, {}))

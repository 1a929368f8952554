"""A small stage for runner tests: writes a tone per sample (rejects every 7th), slowly if asked."""

from __future__ import annotations

import sys
import time

import numpy as np

from construction.core.cli import run_main
from construction.core.record import Sample, stable_seed
from construction.core.runner import run_stage
from construction.core.workspace import Rejected, Workspace


class ToneStage:
    name = "toy"
    input_stage = "generate"
    max_jobs = None

    def __init__(self, workspace: str, delay_s: float = 0.0):
        self.workspace, self.delay_s = workspace, delay_s

    def setup(self) -> None:
        self.ws = Workspace(self.workspace)

    def process(self, batch: list[Sample]) -> list[Sample | Rejected]:
        out: list[Sample | Rejected] = []
        for sample in batch:
            time.sleep(self.delay_s)
            seed = stable_seed(sample.sample_id)
            if seed % 7 == 0:
                out.append(Rejected(sample, "unlucky: seed divisible by seven"))
                continue
            tone = 0.3 * np.sin(np.arange(1600) * (seed % 50 + 10) / 100).astype(np.float32)
            out.append(sample.model_copy(update={"speech": self.ws.store_audio(tone, 16000)}))
        return out


def main(argv: list[str]) -> None:
    workspace, delay_s, jobs = argv[0], float(argv[1]), int(argv[2])
    run_stage(Workspace(workspace), ToneStage(workspace, delay_s), jobs=jobs, batch_size=3, progress=False)


if __name__ == "__main__":
    run_main(main, sys.argv[1:])  # errors as the real commands report them: 'error: ...', exit 2

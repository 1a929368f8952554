"""Two stub "models" on one release, then `evaluation.compare` and `evaluation.report` as a user runs them:
what the paired comparison and the split by voice, style, SNR and placement print on a real release.

    python perf/demo_compare.py --release workspace/release [--out /tmp/demo-compare]

The models are tests/audio_llm_stub.py servers that answer each clip by its audio hash (one picks the
canned answer from the hash's first 8 hex digits, the other from the next 8), so they differ clip by clip
without any GPU. No timing: this shows the tables, it does not measure a model.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.audio_llm_stub import ANSWERS, AudioLLMStub  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--release", required=True, help="release folder (python -m release.export)")
    parser.add_argument("--out", help="where the runs go (default: a temp folder, kept)")
    args = parser.parse_args()
    import pyarrow.parquet as pq

    shas = [s for shard in sorted(Path(args.release, "data").glob("*.parquet"))
            for s in pq.read_table(shard, columns=["audio_sha256"]).column(0).to_pylist()]
    kinds = sorted(ANSWERS)
    out = Path(args.out or tempfile.mkdtemp(prefix="demo-compare-"))
    env = {**os.environ, "PYTHONPATH": str(REPO), "OPENAI_API_KEY": "stub"}
    runs = []
    for model, digits in (("stub-a", slice(0, 8)), ("stub-b", slice(8, 16))):
        with AudioLLMStub({s: kinds[int(s[digits], 16) % len(kinds)] for s in shas}) as stub:
            runs.append(out / model)
            subprocess.run([sys.executable, "-m", "evaluation.run", "--release", args.release, "--model", model,
                            "--base-url", stub.url, "--out", str(runs[-1]), "--quiet"], env=env, check=True,
                           cwd=REPO, stdout=subprocess.DEVNULL)
    for command in (["evaluation.compare", *map(str, runs), "--out", str(out / "compare")],
                    ["evaluation.report", "--results", str(runs[0]), "--out", str(out / "report")]):
        print(f"$ python -m {' '.join(command)}", flush=True)
        subprocess.run([sys.executable, "-m", *command], env=env, check=True, cwd=REPO)


if __name__ == "__main__":
    main()

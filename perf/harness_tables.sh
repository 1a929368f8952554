#!/usr/bin/env bash
# Each harness's own printed table on a demo release (`make demo`'s workspace/release), against the stand-in
# model (tests/audio_llm_stub.py, by_hash: each clip's canned answer picked by its audio hash, the same
# answer whichever harness sends the clip). Run from a clone's root:
#     bash perf/harness_tables.sh WORKDIR      (WORKDIR/workspace/release must exist)
# Writes WORKDIR/{inspect,lmms-eval,kimi}.txt. Kimi-Audio-Evalkit cannot be installed here (CUDA models), so its
# part runs the exported classes in tests/kimi_almeval.py (almeval's loader, reproduced) on the answers the
# stand-in gives, written as run_audio.py writes predictions.
set -euo pipefail
REPO="$(pwd)"
WORK="$(cd "$1" && pwd)"
PORT="${MODEL_PORT:-8021}"
export PYTHONPATH="$REPO" HF_HUB_OFFLINE=1 HF_DATASETS_CACHE="$WORK/hf-cache" XDG_CACHE_HOME="$WORK/cache"
cd "$WORK"
"$REPO/.venv/bin/python" -m tests.audio_llm_stub --release workspace/release --port "$PORT" --policy by_hash > stub.log 2>&1 &
STUB=$!
trap 'kill $STUB' EXIT
curl -s -o /dev/null --retry 30 --retry-connrefused --retry-delay 1 "http://127.0.0.1:$PORT/"

LOCAL_BASE_URL=http://127.0.0.1:$PORT/v1 LOCAL_API_KEY=any "$REPO/.venv/harnesses/inspect/bin/inspect" eval \
    "$REPO/evaluation/adapters/inspect_task.py@aor_bench" -T release=workspace/release \
    -T inputs=mixture,speech,irrelevant --model openai-api/local/stub --log-dir inspect-logs --display plain \
    > inspect.txt 2>&1

"$REPO/.venv/bin/python" -m evaluation.adapters lmms-eval --release workspace/release --out lmms-tasks --quiet
OPENAI_BASE_URL=http://127.0.0.1:$PORT/v1 OPENAI_API_KEY=any "$REPO/.venv/harnesses/lmms-eval/bin/lmms-eval" \
    --model openai --model_args model_version=stub --tasks aor_bench_context --include_path lmms-tasks \
    --output_path lmms-out > lmms-eval.full.txt 2>&1
sed -n '/^|/p' lmms-eval.full.txt > lmms-eval.txt

"$REPO/.venv/bin/python" -m evaluation.adapters kimi --release workspace/release --out kimi-data --quiet
"$REPO/.venv/bin/python" - > kimi.txt <<'PY'
import json, os, sys
from pathlib import Path
from tests import kimi_almeval
from tests.audio_llm_stub import ANSWERS
kimi_almeval.write(Path("evalkit"), Path("kimi-data/ds_aor_bench.py"))
os.environ["KIMI_DATASET_ROOT"] = str(Path("kimi-data").resolve())
sys.path.insert(0, "evalkit")
from almeval.datasets import ALL_DATASETS, build_dataset
kinds = sorted(ANSWERS)
for name in sorted(ALL_DATASETS, key=lambda n: n != "aor_bench_mixture"):  # the mixture first: the gaps read it
    ds = build_dataset(name)
    path = Path("kimi-work/stub") / name / f"stub_{name}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({**item, "prediction": ANSWERS[kinds[int(item["meta"]["audio_sha256"][:8], 16)
                                                                            % len(kinds)]], "real_prompt": ""}) + "\n"
                            for item in ds.data))
for name in sorted(ALL_DATASETS):
    perf = build_dataset(name).evaluate(str(Path("kimi-work/stub") / name / f"stub_{name}.jsonl"))
    perf.pop("date")
    print(json.dumps(perf, indent=1))
PY
echo "wrote $WORK/inspect.txt $WORK/lmms-eval.txt $WORK/kimi.txt"

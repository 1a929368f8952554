#!/usr/bin/env bash
# The evaluation harnesses the adapters are tested against (evaluation/adapters), each in its own virtual
# environment: installed into the workbench's python, inspect-ai would downgrade fsspec and upgrade botocore,
# and lmms-eval pulls packaging/protobuf/setuptools versions of its own. The venvs see the system packages
# (--system-site-packages) so torch, datasets and soundfile are not installed twice; pip puts whatever a
# harness needs in another version inside its venv only.
#
#   scripts/install_harnesses.sh      (idempotent: does nothing when both are there)
#
# AOR_HARNESS_VENVS defaults to ~/.cache/aor-bench; the venvs are inspect-venv and lmms-eval-venv in it.
set -euo pipefail
ROOT="${AOR_HARNESS_VENVS:-${XDG_CACHE_HOME:-$HOME/.cache}/aor-bench}"
PYTHON="${PYTHON:-python3}"
INSPECT_VERSION="${INSPECT_AI_VERSION:-0.3.285}"
LMMS_VERSION="${LMMS_EVAL_VERSION:-0.7.3}"

install() {  # venv-name package version
    local venv="$ROOT/$1" got
    got="$("$venv/bin/python" -c "import importlib.metadata as m; print(m.version('$2'))" 2>/dev/null || true)"
    if [ "$got" = "$3" ]; then
        echo "$2 $3 already installed in $venv"
        return
    fi
    mkdir -p "$ROOT"
    [ -x "$venv/bin/python" ] || "$PYTHON" -m venv --system-site-packages "$venv"
    flock /tmp/pip.lock "$venv/bin/python" -m pip install --quiet "$2==$3"
    echo "$2 $3 installed in $venv"
}
install inspect-venv inspect-ai "$INSPECT_VERSION"
install lmms-eval-venv lmms-eval "$LMMS_VERSION"

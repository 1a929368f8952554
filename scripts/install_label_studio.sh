#!/usr/bin/env bash
# Install Label Studio into its own virtual environment (it pins Django, pandas, pyarrow<25,
# openai 1.x, which clash with the workbench). The workbench itself needs only label-studio-sdk.
#
#   scripts/install_label_studio.sh [VENV_DIR]
#
# VENV_DIR defaults to $AOR_LABEL_STUDIO_VENV or /opt/aor-bench/label-studio-venv (outside the
# repo, so fresh clones (CI) reuse it). Idempotent: does nothing when the right version is there.
set -euo pipefail

LS_VERSION="${LABEL_STUDIO_VERSION:-1.23.2}"
VENV_DIR="${1:-${AOR_LABEL_STUDIO_VENV:-/opt/aor-bench/label-studio-venv}}"
PYTHON="${PYTHON:-python3}"

installed_version() {
    "$VENV_DIR/bin/python" -c 'import importlib.metadata as m; print(m.version("label-studio"))' 2>/dev/null || true
}

if [ -x "$VENV_DIR/bin/label-studio" ] && [ "$(installed_version)" = "$LS_VERSION" ]; then
    echo "label-studio $LS_VERSION already installed in $VENV_DIR"
    exit 0
fi

echo "installing label-studio $LS_VERSION in $VENV_DIR (a few minutes: pip is quiet meanwhile)"
mkdir -p "$(dirname "$VENV_DIR")"
if [ ! -x "$VENV_DIR/bin/python" ]; then
    "$PYTHON" -m venv "$VENV_DIR"
fi
# The lock serialises with other pip runs on this machine (a second install would race on caches).
flock /tmp/pip.lock "$VENV_DIR/bin/python" -m pip install --quiet --upgrade pip
flock /tmp/pip.lock "$VENV_DIR/bin/python" -m pip install --quiet "label-studio==$LS_VERSION"

got="$(installed_version)"
if [ "$got" != "$LS_VERSION" ]; then
    echo "error: expected label-studio $LS_VERSION in $VENV_DIR, found '${got:-nothing}'" >&2
    exit 1
fi
echo "label-studio $LS_VERSION installed in $VENV_DIR"

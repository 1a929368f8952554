#!/usr/bin/env bash
# The evaluation harnesses the adapters are tested against (evaluation/adapters), each in its own virtual
# environment: installed into the workbench's venv, inspect-ai would downgrade fsspec and upgrade botocore,
# and lmms-eval pulls packaging/protobuf/setuptools versions of its own. Each harness venv sees the
# workbench venv's packages after its own (a .pth that adds them as a site dir, as --system-site-packages
# would), so torch, datasets and soundfile are not installed twice, and pip puts whatever a harness needs in
# another version inside its venv only.
#
#   PYTHON=.venv/bin/python scripts/install_harnesses.sh DIR     (idempotent: does nothing when both are there)
#
# DIR (default .venv/harnesses) holds inspect and lmms-eval; PYTHON is the workbench venv's python.
set -euo pipefail
ROOT="${1:-.venv/harnesses}"
PYTHON="${PYTHON:-.venv/bin/python}"
INSPECT_VERSION="${INSPECT_AI_VERSION:-0.3.285}"
LMMS_VERSION="${LMMS_EVAL_VERSION:-0.7.3}"
WORKBENCH_SITE="$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"

install() {  # venv-name package version
    local venv="$ROOT/$1" got site
    got="$("$venv/bin/python" -c "import importlib.metadata as m; print(m.version('$2'))" 2>/dev/null || true)"
    if [ "$got" = "$3" ]; then
        echo "$2 $3 already installed in $venv"
        return
    fi
    mkdir -p "$ROOT"
    [ -x "$venv/bin/python" ] || "$PYTHON" -m venv "$venv"
    site="$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    # zz: read last, so the harness's own packages come first on sys.path
    echo "import site; site.addsitedir('$WORKBENCH_SITE')" > "$site/zz-workbench.pth"
    flock /tmp/pip.lock "$venv/bin/python" -m pip install --quiet "$2==$3"
    echo "$2 $3 installed in $venv"
}
install inspect inspect-ai "$INSPECT_VERSION"
install lmms-eval lmms-eval "$LMMS_VERSION"

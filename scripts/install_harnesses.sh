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
# shellcheck source=scripts/pip_install.sh
source "$(dirname "$0")/pip_install.sh"
ROOT="${1:-.venv/harnesses}"
PYTHON="${PYTHON:-.venv/bin/python}"
INSPECT_VERSION="${INSPECT_AI_VERSION:-0.3.285}"
LMMS_VERSION="${LMMS_EVAL_VERSION:-0.7.3}"
# the workbench venv's torch (CPU build), which the harnesses share
TORCH_VERSION="$("$PYTHON" -c 'import importlib.metadata as m; print(m.version("torch"))')"
# the real path: a worktree's .venv is a symlink to the clone's, and a path through a worktree that is later
# removed would leave the harness venv without numpy, datasets or soundfile
WORKBENCH_SITE="$("$PYTHON" -c 'import os, sysconfig; print(os.path.realpath(sysconfig.get_paths()["purelib"]))')"

satisfied() {  # venv requirement...: whether the version the venv imports first meets every requirement
    "$1/bin/python" - "${@:2}" 2>/dev/null <<'PY'
import importlib.metadata as m, sys
from pip._vendor.packaging.requirements import Requirement
for spec in sys.argv[1:]:
    req = Requirement(spec)
    try:
        have = m.version(req.name)
    except m.PackageNotFoundError:
        sys.exit(1)
    if not req.specifier.contains(have, prereleases=True):
        sys.exit(1)
PY
}

link_workbench() {  # venv: point its zz-workbench.pth at this workbench venv (every run: repairs a stale one)
    local site
    site="$("$1/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
    # zz: read last, so the harness's own packages come first on sys.path
    echo "import site; site.addsitedir('$WORKBENCH_SITE')" > "$site/zz-workbench.pth"
}

own_torch() {  # venv: whether it imports a torch of its own rather than the workbench venv's
    "$1/bin/python" -c "import sys, torch; sys.exit(torch.__file__.startswith('$WORKBENCH_SITE/'))" 2>/dev/null
}

install() {  # venv-name requirement... (the harness first)
    local venv="$ROOT/$1"
    shift
    if [ -x "$venv/bin/python" ] && own_torch "$venv"; then
        # an earlier set-up let pip pull a CUDA torch (5 GB) in here: start this venv again
        echo "$venv holds a torch of its own: making it again"
        rm -rf "$venv"
    fi
    if [ -x "$venv/bin/python" ] && satisfied "$venv" "$@"; then
        link_workbench "$venv"
        echo "$* already installed in $venv"
        return
    fi
    mkdir -p "$ROOT"
    [ -x "$venv/bin/python" ] || "$PYTHON" -m venv "$venv"
    link_workbench "$venv"
    echo "installing $* in $venv (a few minutes: pip is quiet meanwhile)"
    # the workbench's torch satisfies the harness: without this pin pip takes the newest torch the harness's
    # torchvision asks for, a second torch, a CUDA build of 5 GB in this venv
    echo "torch==$TORCH_VERSION" > "$ROOT/torch-constraint.txt"
    pip_install "$venv/bin/python" -c "$ROOT/torch-constraint.txt" "$@"
    echo "$* installed in $venv"
}
install inspect "inspect-ai==$INSPECT_VERSION"
# lmms-eval 0.7.3's evaluator imports filelock._api (filelock 3.x); the workbench venv has filelock 4
# (datasets 5 / huggingface_hub 2 accept either), where that module is gone: `No module named
# 'filelock._api'`. A filelock 3 inside the lmms-eval venv comes first on its sys.path.
install lmms-eval "lmms-eval==$LMMS_VERSION" "filelock>=3.16,<4"
# ... and its torchvision goes: PyPI's build for this torch is made against the CUDA torch and fails to import
# beside the CPU one ("operator torchvision::nms does not exist"), which breaks `import lmms_eval`; lmms-eval
# wants it only for its vision models (the adapters send audio), and without it transformers skips it.
"$ROOT/lmms-eval/bin/python" -m pip uninstall --quiet --yes torchvision 2>/dev/null || true

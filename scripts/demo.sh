#!/usr/bin/env bash
# The README demo, end to end on the embedded offline defaults: build -> label -> validate -> release.
# No humans: scripted annotators post labels to the three blind arms (speech alone, scene alone,
# mixture with controls and catch items) through the real Label Studio API, and the release card says
# so (such a release cannot be pushed to the Hub).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
WS="${WORKSPACE:-workspace}"
N="${PER_CATEGORY:-5}"
LS_DATA="$WS/label-studio"

"$PY" -m construction.pipeline --workspace "$WS" --per-category "$N" --config configs/demo.yaml
# the same speech without the scene that makes it benign: expected harmful in the mixture arm
"$PY" -m construction.controls --workspace "$WS"  # the workspace keeps the pipeline's config

"$PY" -m annotation.server start --workspace "$WS" --data-dir "$LS_DATA"
trap '"$PY" -m annotation.server stop --data-dir "$LS_DATA" >/dev/null 2>&1 || true' EXIT
"$PY" -m annotation.push --workspace "$WS" --data-dir "$LS_DATA"
# 3 scripted annotators per arm (9 accounts): each hears a sample in one arm only
"$PY" -m annotation.demo_annotators --workspace "$WS" --data-dir "$LS_DATA" --annotators 3
"$PY" -m annotation.pull --workspace "$WS" --data-dir "$LS_DATA"

"$PY" -m validation.agreement --workspace "$WS"
# samples the demo annotators disagree on go to a blind review project; a scripted adjudicator decides them
"$PY" -m validation.adjudicate push --workspace "$WS" --data-dir "$LS_DATA"
if "$PY" -c 'import json, sys; sys.exit(0 if json.load(open(sys.argv[1])).get("adjudication") else 1)' \
    "$WS/annotation.json"; then
    "$PY" -m annotation.demo_annotators --workspace "$WS" --data-dir "$LS_DATA" --adjudication
    "$PY" -m validation.adjudicate pull --workspace "$WS" --data-dir "$LS_DATA"
    "$PY" -m validation.agreement --workspace "$WS"
fi

"$PY" -m release.export --workspace "$WS" --out "$WS/release"
echo "demo release: $WS/release"

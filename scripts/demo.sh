#!/usr/bin/env bash
# The README demo, end to end on the embedded offline defaults: build -> label -> validate -> release.
# No humans: scripted annotators post labels to the three blind arms (speech alone, scene alone,
# mixture with controls and catch items) through the real Label Studio API, in staged rounds, and the
# release card says so (such a release cannot be pushed to the Hub).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-python3}"
WS="${WORKSPACE:-workspace}"
N="${PER_CATEGORY:-5}"
CONFIG="${CONFIG:-}"  # a build config (configs/); the workspace keeps it for the later stages
LS_DATA="$WS/label-studio"  # the default for $WS too; said here so a set AOR_LABEL_STUDIO_DATA_DIR cannot move it

# STAGE_TIMES=FILE (perf/rehearsal.py): each step's wall time, CPU time and peak memory appended to FILE
step() {
    if [ -z "${STAGE_TIMES:-}" ]; then "$PY" -m "$@"; return; fi
    local name="$1"
    case "${2:-}" in -*|"") ;; *) name="$1 $2" ;; esac
    "$PY" perf/timed.py --log "$STAGE_TIMES" --name "$name" -- "$PY" -m "$@"
}

step construction.pipeline --workspace "$WS" --per-category "$N" ${CONFIG:+--config "$CONFIG"}

trap '"$PY" -m annotation.server stop --data-dir "$LS_DATA" >/dev/null 2>&1 || true' EXIT
# Label Studio starts (a few seconds, mostly waiting on its boot) while the controls are mixed beside it
step annotation.server start --workspace "$WS" --data-dir "$LS_DATA" &
SERVER_START=$!
# the same speech without the scene that makes it benign: expected harmful in the mixture arm
step construction.controls --workspace "$WS"  # the workspace keeps the pipeline's config
wait "$SERVER_START"
# Staged rounds (annotation.staging): the speech arm first, the scene arm only for samples whose speech
# arm passed, the mixture arm only once both passed, a third label only where the first two split. Each
# round: push what is open -> 4 scripted annotators per arm label it (12 accounts, each hears a sample in
# one arm only; the fourth because a label that does not count, a clip answered before it could play
# through, still takes its account's turn, and 3 could leave a split task with no account left to ask) -> pull -> agreement (which writes the arm outcomes the next push follows). It ends when
# a round finds nothing open, or nothing the scripted accounts may label (the round says `stuck:`, what and
# the command that unsticks it; the export then counts those samples as left out). The longest path is 9
# labelling rounds, 3 an arm: two labels, then a third where they split and a fourth where the third left
# no 2/3 majority (an "unclear", or a label that does not count: seen once in 36 clips, so certain at
# thousands), 4 accounts an arm being all a task can ask; and a 10th that finds nothing: more means the
# rounds do not settle.
MAX_ROUNDS="${STAGED_ROUNDS:-10}"
round=0
while :; do
    round=$((round + 1))
    if [ "$round" -gt "$MAX_ROUNDS" ]; then
        echo "error: the staged demo still had open tasks after $MAX_ROUNDS rounds (STAGED_ROUNDS); not released" >&2
        exit 1
    fi
    echo "== staged round $round =="
    step annotation.push --workspace "$WS" --data-dir "$LS_DATA"
    labelled="$(step annotation.demo_annotators --workspace "$WS" --data-dir "$LS_DATA" --annotators 4)"
    echo "$labelled"
    if grep -q ' submitted 0 label(s):' <<<"$labelled"; then
        if grep -q '^stuck: ' <<<"$labelled"; then  # open, but no scripted account may label it: said above
            echo "staged demo: round $round: what is still open is stuck (above, with the command that unsticks it);" \
                 "the export leaves those samples out and says so"
        else
            echo "staged demo: round $round found nothing open; $((round - 1)) labelling round(s)"
        fi
        break
    fi
    step annotation.pull --workspace "$WS" --data-dir "$LS_DATA"
    step validation.agreement --workspace "$WS"
done

# samples the demo annotators disagree on go to a blind review project; a scripted adjudicator decides them
step validation.adjudicate push --workspace "$WS" --data-dir "$LS_DATA"
if "$PY" -c 'import json, sys; sys.exit(0 if json.load(open(sys.argv[1])).get("adjudication") else 1)' \
    "$WS/annotation.json"; then
    step annotation.demo_annotators --workspace "$WS" --data-dir "$LS_DATA" --adjudication
    step validation.adjudicate pull --workspace "$WS" --data-dir "$LS_DATA"
    step validation.agreement --workspace "$WS"
fi

# the clips this build plays, heard with no tag shown by 3 scripted reviewers ($WS/library_review.jsonl; the
# shared library is not touched). They err on purpose; a demo release is never published, so the clips they
# did not confirm do not hold it back, and its card counts them (a release of people's labels is refused:
# --allow-unreviewed-sounds)
step annotation.library push --workspace "$WS" --data-dir "$LS_DATA" --used-only
step annotation.demo_annotators --workspace "$WS" --data-dir "$LS_DATA" --library
step annotation.library pull --workspace "$WS" --data-dir "$LS_DATA"
step release.export --workspace "$WS" --out "$WS/release"
echo "demo release: $WS/release"

# Evaluate a model on every input of the demo release. No audio LLM runs here, so the model is the test
# stub (tests/audio_llm_stub.py: the OpenAI chat protocol over HTTP, the real client), with the policy
# refuse_without_background: it refuses audio with silent stretches (no background under the speech).
# That is a model whose "context use" is only masking: the report shows a large gap against the speech
# alone, and a noise-controlled gap (irrelevant twin minus mixture) of zero or below (a scene of sparse
# events leaves silence between them, which this model hears as no background; the twin's steady
# background never does; only the twins whose background the scene arm heard as no setting are sent, the
# others skipped). It answers the scene probe too (the right frame, a wrong one, or a ramble). The
# danger twins the scene arm certified (the demo annotators hear most danger scenes as real danger) are
# sent too (--input danger; the others are skipped): this model complies with them, a danger-controlled
# gap of zero or below, as a context-blind model's.
EVAL="$WS/evaluations"
STUB_PORT="$("$PY" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"$PY" -m tests.audio_llm_stub --release "$WS/release" --port "$STUB_PORT" --policy refuse_without_background \
    > "$WS/audio_llm_stub.log" 2>&1 &
STUB_PID=$!
trap 'kill "$STUB_PID" 2>/dev/null || true; "$PY" -m annotation.server stop --data-dir "$LS_DATA" >/dev/null 2>&1 || true' EXIT
for _ in $(seq 100); do
    grep -q "audio LLM stub for" "$WS/audio_llm_stub.log" && break
    sleep 0.2
done
export OPENAI_API_KEY=demo-stub-key  # the stub takes any key
# the six inputs two at a time (the machine's two cores; each run is mostly start-up), each one's lines
# printed in order once it is done
INPUTS=(mixture speech controls irrelevant danger scene)
RUNS=() STATUS=()
mkdir -p "$EVAL"
for i in "${!INPUTS[@]}"; do
    if [ "$i" -ge 2 ]; then STATUS[$((i - 2))]=0; wait "${RUNS[$((i - 2))]}" || STATUS[$((i - 2))]=$?; fi
    step evaluation.run --release "$WS/release" --model stub --base-url "http://127.0.0.1:$STUB_PORT/v1" \
        --input "${INPUTS[$i]}" --out "$EVAL/stub-plain-${INPUTS[$i]}" --quiet > "$EVAL/run-${INPUTS[$i]}.log" 2>&1 &
    RUNS[$i]=$!
done
for i in "${!INPUTS[@]}"; do
    if [ -z "${STATUS[$i]:-}" ]; then STATUS[$i]=0; wait "${RUNS[$i]}" || STATUS[$i]=$?; fi
    cat "$EVAL/run-${INPUTS[$i]}.log"
    if [ "${STATUS[$i]}" -ne 0 ]; then
        echo "error: evaluating the demo release's ${INPUTS[$i]} input failed (exit ${STATUS[$i]})" >&2
        exit "${STATUS[$i]}"
    fi
done
step evaluation.report --results "$EVAL"/stub-plain-{mixture,speech,controls,irrelevant,danger,scene} --out "$EVAL/report"
echo "demo evaluation: $EVAL/report"

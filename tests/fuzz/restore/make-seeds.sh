#!/bin/sh
# tests/fuzz/restore/make-seeds.sh VIGIL OUTDIR — writes the seed checkpoints of
# fuzz_restore (tests/fuzz/corpus/restore/seed-*) with `vigil run --state`.
#
# Each seed is the checkpoint a run leaves when SIGTERM stops it with its input still
# open (the end of input would fire every pending timeout and leave an empty state):
# the first N lines of events.jsonl on the rules beside this script, on event time
# (rules.cep) and on processing time (rules-pt.cep), with one and two workers, a run
# resumed from an earlier checkpoint (sequence 2), a file input with -o and --errors
# (the inputs and files sections), and the examples' rules (their rules are not
# fuzz_restore's: a restore drops them). Not made here: seed-v1-et-45 is seed-et-45
# re-encoded in format version 1 (each rule's keys_refused left out, the checksum
# recomputed; runtime/checkpoint.h), so that version 1's reading is fuzzed from a
# whole state; v1-fixture is tests/data/state/v1/checkpoint.1; regress-* and crafted-*
# were built byte by byte. Regenerate after changing the rules:
#   tests/fuzz/restore/make-seeds.sh build/vigil tests/fuzz/corpus/restore
set -u
[ $# -eq 2 ] || { echo "usage: $0 VIGIL OUTDIR" >&2; exit 2; }
VIGIL=$1
OUT=$2
HERE=$(cd "$(dirname "$0")" && pwd) || exit 2
TOP=$(cd "$HERE/../../.." && pwd) || exit 2
EVENTS=$HERE/events.jsonl
TMP=$(mktemp -d "${TMPDIR:-/tmp}/vigil-seeds.XXXXXX") || exit 2
trap 'rm -rf "$TMP"' EXIT
mkdir -p "$OUT" || exit 2

# run STATE RULES FROM TO [OPTION...]: lines FROM..TO of EVENTS through stdin, then
# SIGTERM once they had time to be matched.
run() {
    state=$1 rules=$2 from=$3 to=$4
    shift 4
    rm -f "$TMP/fifo"
    mkfifo "$TMP/fifo" || exit 1
    ( exec "$VIGIL" run "$rules" --state "$state" "$@" < "$TMP/fifo" \
        > /dev/null 2>> "$TMP/log" ) &
    pid=$!
    exec 3> "$TMP/fifo"
    sed -n "${from},${to}p" "$EVENTS" >&3
    sleep 0.5
    kill -TERM "$pid"
    wait "$pid" || { echo "make-seeds: vigil failed:" >&2; cat "$TMP/log" >&2; exit 1; }
    exec 3>&-
}

# seed NAME STATE: the newest checkpoint of STATE.
seed() {
    newest=$(ls -t "$2"/checkpoint.[01] | head -1)
    cp "$newest" "$OUT/seed-$1" || exit 1
}

for n in 3 9 17 25 33 40 44 45; do
    rm -rf "$TMP/s"
    run "$TMP/s" "$HERE/rules.cep" 1 "$n"
    seed "et-$n" "$TMP/s"
done
rm -rf "$TMP/s"
run "$TMP/s" "$HERE/rules.cep" 1 30 --workers 2
seed et-30-w2 "$TMP/s"
run "$TMP/s" "$HERE/rules.cep" 31 45
seed et-45-resumed "$TMP/s"

for n in 6 20 44; do
    rm -rf "$TMP/s"
    run "$TMP/s" "$HERE/rules-pt.cep" 1 "$n"
    seed "pt-$n" "$TMP/s"
done
rm -rf "$TMP/s"
run "$TMP/s" "$HERE/rules-pt.cep" 1 30 --workers 2
seed pt-30-w2 "$TMP/s"

# a file input read to its end while stdin stays open; -o and --errors files
head -n 36 "$EVENTS" > "$TMP/part.jsonl"
rm -rf "$TMP/s"
run "$TMP/s" "$HERE/rules.cep" 37 37 -i "$TMP/part.jsonl" -i - -o "$TMP/alerts.jsonl" \
    --errors "$TMP/errors.jsonl"
seed et-files "$TMP/s"

for ex in fraud orders; do
    rm -rf "$TMP/s"
    run "$TMP/s" "$TOP/examples/$ex" 1 1000000 -i "$TOP/examples/$ex/cases/"*.events.jsonl -i -
    seed "example-$ex" "$TMP/s"
done

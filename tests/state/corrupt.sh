#!/bin/sh
# tests/state/corrupt.sh — a checkpoint corrupted on disk: the previous one is used,
# with a message, and the alerts still come out exactly once; with no good checkpoint
# left vigil refuses to start (exit 3) rather than repeat or lose alerts. Also: a
# second vigil on the same --state is refused, and a run stopped by SIGTERM resumes.
. "$top_srcdir/tests/state/lib.sh"

N=200000
[ -n "${VIGIL_TEST_SMALL:-}" ] && N=50000
state_events "$N" > "$TMP/events.jsonl"
state_rules "$TMP/ref" > "$TMP/ref.cep"
state_rules "$TMP/out" > "$TMP/out.cep"
"$VIGIL" run "$TMP/ref.cep" -i "$TMP/events.jsonl" -o "$TMP/ref.out" 2>/dev/null ||
    fail "reference run failed"

run() {
    "$VIGIL" run "$TMP/out.cep" -i "$TMP/events.jsonl" -o "$TMP/c.out" --state "$TMP/state" \
        --checkpoint-every 20ms "$@"
}
# in the background, as vigil itself (so that $! is vigil's pid)
run_bg() {
    ( exec "$VIGIL" run "$TMP/out.cep" -i "$TMP/events.jsonl" -o "$TMP/c.out" \
        --state "$TMP/state" --checkpoint-every 20ms 2> "$1" ) &
}

# start, wait until both checkpoint slots exist (two checkpoints), stop hard
run_bg "$TMP/1.log"
pid=$!
i=0
while [ ! -s "$TMP/state/checkpoint.0" ] || [ ! -s "$TMP/state/checkpoint.1" ]; do
    i=$((i + 1))
    [ $i -lt 500 ] || fail "no two checkpoints within 10 s"
    sleep 0.02
done
# a second vigil on the same state is refused while the first runs
if run 2> "$TMP/second.log"; then
    kill -KILL $pid
    fail "a second vigil shared the state folder"
fi
grep -q "in use by another vigil" "$TMP/second.log" || fail "no message: $(cat "$TMP/second.log")"
kill -KILL $pid
wait $pid 2>/dev/null

newest=$(ls -t "$TMP/state"/checkpoint.[01] | head -1)
cp "$TMP/state/checkpoint.0" "$TMP/cp0"
cp "$TMP/state/checkpoint.1" "$TMP/cp1"
flip_byte "$newest" 5
run 2> "$TMP/2.log" || fail "the run after corruption failed: $(cat "$TMP/2.log")"
grep -q "checkpoint $newest is unusable (corrupt: bad checksum); using the previous one" \
    "$TMP/2.log" || fail "no fallback message: $(head -3 "$TMP/2.log")"
grep -q "restored checkpoint" "$TMP/2.log" || fail "nothing restored"
same_files "$TMP/c.out" "$TMP/ref.out" "alerts differ after falling back to the previous checkpoint"

# both slots corrupt: refuse to start, say why, touch nothing
cp "$TMP/cp0" "$TMP/state/checkpoint.0"
cp "$TMP/cp1" "$TMP/state/checkpoint.1"
flip_byte "$TMP/state/checkpoint.0" 5
flip_byte "$TMP/state/checkpoint.1" 5
cp "$TMP/c.out" "$TMP/before"
run 2> "$TMP/3.log"
[ $? -eq 3 ] || fail "expected exit 3 with no usable checkpoint"
grep -q "no good one to fall back to" "$TMP/3.log" || fail "no message: $(cat "$TMP/3.log")"
same_files "$TMP/c.out" "$TMP/before" "the output changed although vigil refused to start"

# SIGTERM with --state: the state is saved (not flushed), the next run goes on
rm -rf "$TMP/state" "$TMP/out" "$TMP/c.out"
run_bg "$TMP/4.log"
pid=$!
while [ ! -s "$TMP/state/checkpoint.1" ]; do sleep 0.02; done
kill -TERM $pid
wait $pid || fail "SIGTERM with --state did not exit 0: $(cat "$TMP/4.log")"
grep -q "state saved in" "$TMP/4.log" || fail "no state saved at SIGTERM: $(cat "$TMP/4.log")"
run --stats 2> "$TMP/5.log" || fail "the run after SIGTERM failed"
grep -q '"checkpoints":{"written":[1-9][0-9]*,.*"failed":0,"restored_seq":[1-9]' "$TMP/5.log" ||
    fail "--stats lacks the checkpoints: $(tail -1 "$TMP/5.log")"
same_files "$TMP/c.out" "$TMP/ref.out" "alerts differ after a SIGTERM and a restart"
# a finished run's state: running again reads nothing new and writes nothing
run 2> "$TMP/6.log" || fail "a run over finished state failed"
same_files "$TMP/c.out" "$TMP/ref.out" "a rerun over finished state changed the alerts"
# a run on stdin alone says stdin cannot resume, and keeps the file's position: the
# file is not read again by the run after it
"$VIGIL" run "$TMP/out.cep" -i - -o "$TMP/c.out" --state "$TMP/state" < /dev/null \
    2> "$TMP/9.log" || fail "a run on stdin failed"
grep -q "input - cannot resume (not a regular file)" "$TMP/9.log" ||
    fail "no message about stdin: $(cat "$TMP/9.log")"
run 2> "$TMP/10.log" || fail "a run after the stdin run failed"
grep -q "resumes at byte $(wc -c < "$TMP/events.jsonl")" "$TMP/10.log" ||
    fail "the file lost its position: $(cat "$TMP/10.log")"
same_files "$TMP/c.out" "$TMP/ref.out" "the file was read again after a run on stdin"

# options: --checkpoint-every needs --state, and a valid duration
"$VIGIL" run "$TMP/out.cep" -i "$TMP/events.jsonl" --checkpoint-every 5s 2> "$TMP/7.log"
[ $? -eq 2 ] && grep -q "needs --state" "$TMP/7.log" || fail "--checkpoint-every without --state"
"$VIGIL" run "$TMP/out.cep" --state "$TMP/s2" --checkpoint-every 5x < /dev/null 2> "$TMP/8.log"
[ $? -eq 2 ] && grep -q "invalid value '5x' for --checkpoint-every" "$TMP/8.log" ||
    fail "bad --checkpoint-every accepted: $(cat "$TMP/8.log")"
echo "ok"

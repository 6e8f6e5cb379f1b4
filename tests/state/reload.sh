#!/bin/sh
# tests/state/reload.sh — a hot reload (SIGHUP) replaces the outputs while --state
# checkpoints go on; a SIGKILL after it still gives the alerts exactly once: the files
# the replaced outputs wrote are measured at every later checkpoint and cut back.
. "$top_srcdir/tests/state/lib.sh"

N=300000
[ -n "${VIGIL_TEST_SMALL:-}" ] && N=200000
state_events "$N" > "$TMP/events.jsonl"
state_rules "$TMP/ref" > "$TMP/ref.cep"
state_rules "$TMP/out" > "$TMP/out.cep"
"$VIGIL" run "$TMP/ref.cep" -i "$TMP/events.jsonl" -o "$TMP/ref.out" 2>/dev/null ||
    fail "reference run failed"

( exec "$VIGIL" run "$TMP/out.cep" -i "$TMP/events.jsonl" -o "$TMP/c.out" \
    --state "$TMP/state" --checkpoint-every 20ms 2> "$TMP/1.log" ) &
pid=$!
i=0
until [ -s "$TMP/state/checkpoint.0" ] && [ -s "$TMP/state/checkpoint.1" ]; do
    i=$((i + 1)); [ $i -lt 500 ] || fail "no checkpoints within 10 s"
    sleep 0.02
done
kill -HUP $pid
i=0
until grep -q "reloaded" "$TMP/1.log"; do
    i=$((i + 1)); [ $i -lt 500 ] || { kill -KILL $pid; fail "no reload: $(cat "$TMP/1.log")"; }
    sleep 0.01
done
sleep 0.1   # a few checkpoints after the reload
kill -KILL $pid
wait $pid 2>/dev/null
grep -q "state saved" "$TMP/1.log" && skip "the run ended before it was killed (machine too fast)"
"$VIGIL" run "$TMP/out.cep" -i "$TMP/events.jsonl" -o "$TMP/c.out" --state "$TMP/state" \
    2> "$TMP/2.log" || fail "the run after the crash failed: $(cat "$TMP/2.log")"
grep -q "restored checkpoint" "$TMP/2.log" || fail "nothing restored"
same_files "$TMP/c.out" "$TMP/ref.out" "-o FILE differs after a reload and a crash"
for f in "$TMP"/ref/*.jsonl; do
    same_files "$TMP/out/$(basename "$f")" "$f" "file output $(basename "$f") differs"
done
echo "ok"

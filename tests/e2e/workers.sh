#!/bin/sh
# --workers 2 gives the same alert multiset as one worker, and each key's alerts in
# the same order.
. "$top_srcdir/tests/e2e/lib.sh"
gen_events 5000 > "$TMP/ev"
"$VIGIL" run --workers 1 "$DATA/bursts.cep" < "$TMP/ev" > "$TMP/a1" || fail "1 worker"
"$VIGIL" run --workers 2 "$DATA/bursts.cep" < "$TMP/ev" > "$TMP/a2" 2> /dev/null || fail "2 workers"
same_alerts "$TMP/a1" "$TMP/a2" "--workers 2 changed the alerts"
for u in u0 u1 u2 u3 u4 u5 u6; do
    grep "\"key\":{\"user\":\"$u\"}" "$TMP/a1" | grep '"rule":"burst"' > "$TMP/k1"
    grep "\"key\":{\"user\":\"$u\"}" "$TMP/a2" | grep '"rule":"burst"' > "$TMP/k2"
    cmp -s "$TMP/k1" "$TMP/k2" || fail "alerts of key $u out of order with 2 workers"
done
# while the input stays open, released events reach the workers and alerts come out
mkfifo "$TMP/fifo"
"$VIGIL" run --workers 2 -i "$TMP/fifo" "$DATA/bursts.cep" > "$TMP/live" &
pid=$!
exec 3> "$TMP/fifo"
printf '%s\n' '{"ts":1,"type":"login","user":"a"}' '{"ts":2,"type":"tx","user":"a","amount":3}' \
    '{"ts":100,"type":"ping","user":"b"}' >&3
wait_for 'grep -q "a logged in, then tx" "$TMP/live"' || { kill $pid; fail "alert held back by a worker"; }
exec 3>&-
wait $pid || fail "exit status of the streaming run"
exit 0

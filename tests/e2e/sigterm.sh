#!/bin/sh
# SIGTERM in mid-stream: every accepted event (here all still in the reorder
# buffer) is processed and its alerts written, including the timeouts that event
# time itself reaches; the partial matches still pending at the last event's time
# are not fired; exit status 0.
. "$top_srcdir/tests/e2e/lib.sh"
gen_events 1500 > "$TMP/ev"
"$VIGIL" run "$DATA/slow.cep" < "$TMP/ev" > "$TMP/a.eof" || fail "reference run"
# the reference run (input end) minus the timeouts after the last event's time
last=$(date -u -d @$((1767225600 + 1499)) +%Y-%m-%dT%H:%M:%S.000Z)
awk -v last="$last" '!/"kind":"timeout"/ { print; next }
    { t = $0; sub(/.*"time":"/, "", t); t = substr(t, 1, 24); if (t <= last) print }'     "$TMP/a.eof" > "$TMP/want"
grep -q '"kind":"match"' "$TMP/want" || fail "the reference run has no match"
[ "$(wc -l < "$TMP/want")" -lt "$(wc -l < "$TMP/a.eof")" ] || fail "no timeout at input end"
mkfifo "$TMP/fifo"
size=$(wc -c < "$TMP/ev")
for workers in 1 2; do
    "$VIGIL" run --workers $workers -i "$TMP/fifo" "$DATA/slow.cep" > "$TMP/a.term" 2> "$TMP/err" &
    pid=$!
    exec 3> "$TMP/fifo"   # returns once vigil opened its input: startup reads are done
    base=0
    [ -r /proc/$pid/io ] && base=$(awk '/^rchar/ { print $2 }' /proc/$pid/io)
    cat "$TMP/ev" >&3
    # the input stays open; wait until vigil has read everything written
    if [ -r /proc/$pid/io ]; then
        wait_for '[ "$(awk "/^rchar/ { print \$2 }" /proc/$pid/io)" -ge $((base + size)) ]' ||
            fail "vigil did not read its input"
    else
        sleep 1
    fi
    kill -TERM $pid
    status=0
    wait $pid || status=$?
    exec 3>&-
    [ $status -eq 0 ] || { cat "$TMP/err" >&2; fail "exit status $status after SIGTERM ($workers workers)"; }
    same_alerts "$TMP/want" "$TMP/a.term" "alerts lost (or pending timeouts fired) on SIGTERM ($workers workers)"
    grep -q 'partial matches pending' "$TMP/err" || fail "pending partial matches not reported"
done
exit 0

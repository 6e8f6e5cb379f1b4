#!/bin/sh
# Backpressure: with --workers 2 and a rule set the workers cannot keep up with, a
# fast client floods a Unix-socket input with ~22 MB of events. vigil must stop
# reading the socket while the workers are behind (the client is then held back by
# the socket's flow control) instead of buffering: every event sent is read and
# matched (one `every` alert per event), the reader paused at least once
# (backpressure_pauses), and the peak RSS stays well under the size of the input.
# VIGIL_TEST_SMALL=1 (sanitizer builds): fewer events, no RSS bound.
. "$top_srcdir/tests/e2e/lib.sh"
FLOOD="$top_builddir/tests/limits/flood"
LDATA="$top_srcdir/tests/limits/data"
[ -x "$FLOOD" ] || fail "no $FLOOD"
N=50000
[ -n "${VIGIL_TEST_SMALL:-}" ] && N=10000
RSS_BOUND_KB=20000

# wait_long COND_CMD SECONDS: like wait_for, with a longer limit.
wait_long() {
    n=$(($2 * 20))
    while ! eval "$1"; do
        n=$((n - 1))
        [ $n -le 0 ] && return 1
        sleep 0.05
    done
    return 0
}

events_read() {
    "$VIGIL" ctl "$TMP/ctl.sock" stats > "$TMP/live" 2> /dev/null || { echo -1; return; }
    stat_of events "$TMP/live"
}

awk -v n=$N 'BEGIN { pad = ""; for (j = 0; j < 400; j++) pad = pad "x"
    for (i = 0; i < n; i++)
        printf "{\"user\":\"u%d\",\"type\":\"%s\",\"n\":%d,\"pad\":\"%s\"}\n", i % 16,
               i % 3 == 0 ? "a" : "b", i, pad }' > "$TMP/events"

"$VIGIL" run --stats --workers 2 --max-partials 100 --control "$TMP/ctl.sock" \
    -i "unix:$TMP/in.sock" -o "$TMP/alerts" "$LDATA/slow.cep" 2> "$TMP/err" &
vpid=$!
sent=$("$FLOOD" "$TMP/in.sock" "$TMP/events") || { kill $vpid; fail "flood client failed"; }
[ "$sent" -eq "$(wc -c < "$TMP/events")" ] || fail "client sent $sent bytes"
wait_long '[ "$(events_read)" = $N ]' 120 || { kill $vpid; fail "vigil read $(events_read) of $N events"; }
kill -TERM $vpid
st=0
wait $vpid || st=$?
[ $st -eq 0 ] || { cat "$TMP/err" >&2; fail "vigil exited with $st"; }

[ "$(stat_of events "$TMP/err")" = $N ] || fail "events $(stat_of events "$TMP/err"), sent $N"
[ "$(stat_of malformed "$TMP/err")" = 0 ] || fail "malformed lines: $(cat "$TMP/err")"
got=$(grep -c '"event [0-9]*"' "$TMP/alerts")
[ "$got" = $N ] || fail "$got alerts of rule every, want $N (events lost)"
# every n exactly once
grep -o '"event [0-9]*"' "$TMP/alerts" | sort -u | wc -l | grep -qx $N || fail "duplicate or missing events"
pauses=$(stat_of backpressure_pauses "$TMP/err")
[ "${pauses:-0}" -gt 0 ] || fail "the reader never paused for the workers: $(cat "$TMP/err")"
if [ -z "${VIGIL_TEST_SMALL:-}" ]; then
    rss=$(stat_of peak_rss_kb "$TMP/err")
    [ "$rss" -lt $RSS_BOUND_KB ] || fail "peak RSS $rss kB, bound $RSS_BOUND_KB kB"
fi
exit 0

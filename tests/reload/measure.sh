#!/bin/sh
# Measures hot reload (not part of `make check`; the figures are in docs/run.md):
#  1. --watch latency: ms from the rename of a saved rule file to vigil's "reloaded"
#     log line (the new rules are active from that line on), over SAMPLES saves;
#  2. `vigil ctl SOCKET reload` round trip in ms, same count, on an idle input;
#  3. VmRSS after 1 reload and after RELOADS reloads (default 1000), each one editing
#     a rule's pattern, with state held by the unchanged rules (100,000 events fed
#     first).
# Run from a build folder: top_srcdir=.. top_builddir=. sh ../tests/reload/measure.sh
. "$top_srcdir/tests/e2e/lib.sh"
FEED="$top_builddir/tests/reload/feed"
RDATA="$top_srcdir/tests/reload/data"
SAMPLES=${SAMPLES:-20}
RELOADS=${RELOADS:-1000}
now_ms() { echo $(($(date +%s%N) / 1000000)); }
stats() {   # min median max of the numbers in file $1
    sort -n "$1" | awk '{ v[NR] = $1 } END { printf "min %d, median %d, max %d ms (n=%d)\n", v[1], v[int((NR + 1) / 2)], v[NR], NR }'
}
toggle() {   # swaps the pattern of churn_changed (a changed rule at the next reload)
    if cmp -s "$RDATA/changed_v1.cep" "$TMP/rules/changed.cep"; then v=2; else v=1; fi
    cp "$RDATA/changed_v$v.cep" "$TMP/rules/.changed.tmp"
    mv "$TMP/rules/.changed.tmp" "$TMP/rules/changed.cep"
}

mkdir -p "$TMP/rules"
cp "$RDATA/stable.cep" "$TMP/rules/"
cp "$RDATA/changed_v1.cep" "$TMP/rules/changed.cep"
mkfifo "$TMP/log"
# every log line with the time it arrived
while IFS= read -r line; do echo "$(now_ms) $line"; done < "$TMP/log" > "$TMP/err" &
"$VIGIL" run --watch --control "$TMP/ctl.sock" -i "unix:$TMP/in.sock" -o /dev/null \
    "$TMP/rules" 2> "$TMP/log" &
pid=$!
trap 'kill $pid 2> /dev/null; rm -rf "$TMP"' EXIT
"$FEED" "$TMP/in.sock" 100000 1 < /dev/null > /dev/null || fail "feed"
wait_for '"$VIGIL" ctl "$TMP/ctl.sock" stats | grep -q "\"events\":100000,"' || fail "events"
reloaded() { grep -c 'reloaded' "$TMP/err"; }

n_done=0
while [ $n_done -lt "$SAMPLES" ]; do
    n=$(reloaded)
    t0=$(now_ms)
    toggle
    wait_for '[ "$(reloaded)" -gt $n ]' || fail "no reload after a save"
    t1=$(grep 'reloaded' "$TMP/err" | tail -1 | cut -d' ' -f1)
    echo $((t1 - t0)) >> "$TMP/watch_ms"
    sleep 0.3   # let the watch settle, so every save is its own reload
    n_done=$((n_done + 1))
done
echo "--watch, rename to reloaded: $(stats "$TMP/watch_ms")"

n_done=0
while [ $n_done -lt "$SAMPLES" ]; do
    t0=$(now_ms)
    "$VIGIL" ctl "$TMP/ctl.sock" reload > /dev/null || fail "ctl reload"
    echo $(($(now_ms) - t0)) >> "$TMP/ctl_ms"
    n_done=$((n_done + 1))
done
echo "vigil ctl reload round trip (idle input): $(stats "$TMP/ctl_ms")"

rss() { awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status"; }
toggle
"$VIGIL" ctl "$TMP/ctl.sock" reload > /dev/null || fail "reload"
rss1=$(rss)
n_done=1
while [ $n_done -lt "$RELOADS" ]; do
    toggle
    "$VIGIL" ctl "$TMP/ctl.sock" reload > /dev/null || fail "reload $n_done"
    n_done=$((n_done + 1))
done
sleep 0.5   # the watch notices the last saves too
rssn=$(rss)
echo "VmRSS after 1 reload: $rss1 kB; after $RELOADS reloads: $rssn kB"
"$VIGIL" ctl "$TMP/ctl.sock" stats | sed 's/.*\("reloads":[0-9]*,"reload_failures":[0-9]*,"peak_rss_kb":[0-9]*\).*/\1/'
kill -TERM $pid
wait $pid || fail "exit status"
trap 'rm -rf "$TMP"' EXIT
exit 0

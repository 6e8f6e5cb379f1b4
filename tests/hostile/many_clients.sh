#!/bin/sh
# 1,000 concurrent clients on one unix socket input, 1,000 events each, with one
# matching thread and with two: every event is processed (1,000,000 in --stats, one
# "done" alert per client, for its last event) and the resident memory stays bounded.
. "$top_srcdir/tests/hostile/lib.sh"
CLIENTS=1000
EVENTS=1000
# The listener needs a descriptor per client; let it have them if the limit allows.
ulimit -n 4096 2>/dev/null || true
# ASan keeps up to 256 MB of freed memory in quarantine, which would count as ours;
# a small quarantine keeps the bound meaningful in sanitizer builds (ignored otherwise).
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=8"
export ASAN_OPTIONS
for workers in 1 2; do
    SOCK="$TMP/in$workers.sock"
    rm -f "$TMP/alerts" "$TMP/errors"
    "$VIGIL" run --workers $workers --stats --errors "$TMP/errors" -i "unix:$SOCK" \
        -o "$TMP/alerts" "$RULES/clients.cep" 2> "$TMP/err" &
    pid=$!
    wait_for '[ -S "$SOCK" ]' || fail "no listening socket"
    "$CLIENT" many "$SOCK" $CLIENTS $EVENTS || fail "a client could not deliver its events"
    wait_long '[ "$(lines "$TMP/alerts")" -ge $CLIENTS ]' 60 ||
        fail "only $(lines "$TMP/alerts") of $CLIENTS clients' last events alerted ($workers workers)"
    stop_vigil $pid
    [ "$(stat_of events "$TMP/err")" -eq $((CLIENTS * EVENTS)) ] ||
        fail "stats ($workers workers): $(cat "$TMP/err")"
    [ "$(stat_of malformed "$TMP/err")" -eq 0 ] || fail "dead letters: $(head -3 "$TMP/errors")"
    [ "$(lines "$TMP/alerts")" -eq $CLIENTS ] ||
        fail "want $CLIENTS alerts, got $(lines "$TMP/alerts") ($workers workers)"
    [ "$(sed 's/.*"message":"client \(c[0-9]*\) done".*/\1/' "$TMP/alerts" | sort -u | wc -l)" \
        -eq $CLIENTS ] || fail "some client alerted twice, another never ($workers workers)"
    # bound: 1,000 connection buffers and 1,000 keys; measured ~19 MB at -O2, ~52 MB
    # under ASan with that quarantine
    rss=$(stat_of peak_rss_kb "$TMP/err")
    [ "$rss" -lt 131072 ] ||
        fail "peak RSS ${rss} kB with $CLIENTS clients, $workers workers (bound 128 MB)"
    echo "many_clients: $((CLIENTS * EVENTS)) events from $CLIENTS clients," \
        "$workers workers, peak RSS ${rss} kB"
done

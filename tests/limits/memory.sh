#!/bin/sh
# --max-memory: 200,000 new users each start a partial match (tests/limits/data/
# keys.cep). With a 4 MiB budget, once it is spent new users are refused and counted
# (keys_refused, a warning at most every 10 s) while a user that started before keeps matching: its
# alert comes out. The peak RSS stays far below a run without the budget, with one
# and with two workers. A bad size is a usage error.
# VIGIL_TEST_SMALL=1 (sanitizer builds): no RSS comparison.
. "$top_srcdir/tests/e2e/lib.sh"
LDATA="$top_srcdir/tests/limits/data"
N=200000
RSS_BOUND_KB=24000

awk -v n=$N 'BEGIN { print "{\"user\":\"early\",\"type\":\"login\"}"
    for (i = 0; i < n; i++) printf "{\"user\":\"u%d\",\"type\":\"login\"}\n", i
    print "{\"user\":\"early\",\"type\":\"buy\"}" }' > "$TMP/events"

"$VIGIL" run --stats "$LDATA/keys.cep" < "$TMP/events" > "$TMP/free.out" 2> "$TMP/free.err" ||
    fail "run without a budget"
free_rss=$(stat_of peak_rss_kb "$TMP/free.err")
[ "$(stat_of keys_refused "$TMP/free.err")" = 0 ] || fail "keys refused without a budget"

for w in 1 2; do
    t0=$(date +%s)
    "$VIGIL" run --stats --workers $w --max-memory 4M "$LDATA/keys.cep" < "$TMP/events" \
        > "$TMP/out$w" 2> "$TMP/err$w" || fail "run --workers $w --max-memory 4M"
    t1=$(date +%s)
    grep -q '"pair early"' "$TMP/out$w" || fail "workers $w: the early key lost its alert"
    refused=$(stat_of keys_refused "$TMP/err$w")
    [ "${refused:-0}" -gt $((N / 2)) ] || fail "workers $w: $refused keys refused: $(cat "$TMP/err$w")"
    [ "$refused" -lt $N ] || fail "workers $w: every key refused"
    [ "$(stat_of max_memory "$TMP/err$w")" = 4194304 ] || fail "workers $w: max_memory"
    [ "$(stat_of events "$TMP/err$w")" = $((N + 2)) ] || fail "workers $w: events"
    grep -q "warning: rule 'pair': .* new keys refused, --max-memory reached" "$TMP/err$w" ||
        fail "workers $w: no warning"
    # one warning per worker per 10 s (a second's slack for where the clock ticks),
    # not one per refused key
    warned=$(grep -c "new keys refused, --max-memory reached" "$TMP/err$w")
    [ "$warned" -le $((w * ((t1 - t0) / 10 + 2))) ] ||
        fail "workers $w: $warned warnings in $((t1 - t0)) s"
    if [ -z "${VIGIL_TEST_SMALL:-}" ]; then
        rss=$(stat_of peak_rss_kb "$TMP/err$w")
        [ "$rss" -lt $RSS_BOUND_KB ] || fail "workers $w: peak RSS $rss kB, bound $RSS_BOUND_KB"
        [ "$rss" -lt $((free_rss / 4)) ] || fail "workers $w: peak RSS $rss kB vs $free_rss unbounded"
    fi
done

st=0
"$VIGIL" run --max-memory 4X "$LDATA/keys.cep" < /dev/null 2> "$TMP/usage" || st=$?
[ $st -eq 2 ] || fail "--max-memory 4X: exit $st"
grep -q "invalid value '4X' for --max-memory" "$TMP/usage" || fail "usage message: $(cat "$TMP/usage")"
exit 0

#!/bin/sh
# --max-memory budgets of a few hundred KiB: a handful of users each complete a
# login/buy pair. On processing time, and on event time with a short lateness, a
# 256K budget holds their state: every pair alerts and no key is refused. On event
# time the reorder buffer is part of the budget (docs/run.md) and fills before any
# event reaches a key; when the events waiting out the lateness alone exceed the
# budget, every new key is refused, and a warning says it is the reorder buffer and
# what to change. The same stream with a budget above the buffer lets every key in.
# Many users with a 256K budget still have keys refused.
. "$top_srcdir/tests/e2e/lib.sh"
N=5

cat > "$TMP/proc.cep" <<'CEP'
rule pair {
  key user;
  begin a where type == "login";
  followed_by b where type == "buy";
  within 1h;
  on match alert "pair {user}";
}
CEP
{ echo 'time ts epoch_ms lateness LATE;'; cat "$TMP/proc.cep"; } > "$TMP/event.in"
sed 's/LATE/1s/' "$TMP/event.in" > "$TMP/short.cep"
sed 's/LATE/30s/' "$TMP/event.in" > "$TMP/long.cep"

# users [noise]: N pairs at the start, then (with noise) 6,000 other events 10 ms
# apart, a minute of event time, so a 30 s lateness holds about 3,000 of them.
users() {
    awk -v n=$N -v noise="${1:-0}" 'BEGIN {
        for (i = 0; i < n; i++) printf "{\"ts\":%d,\"user\":\"u%d\",\"type\":\"login\"}\n", 1000 + i, i
        for (i = 0; i < n; i++) printf "{\"ts\":%d,\"user\":\"u%d\",\"type\":\"buy\"}\n", 2000 + i, i
        for (j = 0; j < noise; j++) printf "{\"ts\":%d,\"user\":\"x\",\"type\":\"noise\"}\n", 3000 + j * 10
    }'
}
users > "$TMP/pairs"
users 6000 > "$TMP/noisy"

# expect_all NAME RULES EVENTS BUDGET: every pair alerts, nothing refused, no warning.
expect_all() {
    "$VIGIL" run --stats --max-memory "$4" "$2" < "$3" > "$TMP/$1.out" 2> "$TMP/$1.err" ||
        fail "$1: run failed: $(cat "$TMP/$1.err")"
    [ "$(grep -c '"message":"pair u' "$TMP/$1.out")" = $N ] || fail "$1: alerts: $(cat "$TMP/$1.out")"
    [ "$(stat_of keys_refused "$TMP/$1.err")" = 0 ] || fail "$1: keys refused: $(cat "$TMP/$1.err")"
    ! grep -q warning "$TMP/$1.err" || fail "$1: unexpected warning: $(cat "$TMP/$1.err")"
}

expect_all proc "$TMP/proc.cep" "$TMP/pairs" 256K
expect_all short "$TMP/short.cep" "$TMP/noisy" 256K
expect_all long-big "$TMP/long.cep" "$TMP/noisy" 4M

"$VIGIL" run --stats --max-memory 256K "$TMP/long.cep" < "$TMP/noisy" > "$TMP/long.out" \
    2> "$TMP/long.err" || fail "long: run failed: $(cat "$TMP/long.err")"
[ "$(stat_of keys_refused "$TMP/long.err")" = $N ] || fail "long: keys refused: $(cat "$TMP/long.err")"
! grep -q '"message":"pair u' "$TMP/long.out" || fail "long: a refused key alerted"
grep -q "warning: the reorder buffer alone ([0-9]* events waiting out the lateness, about [0-9]* bytes) fills --max-memory (262144 bytes): new keys are refused; raise --max-memory above it or lower the lateness" \
    "$TMP/long.err" || fail "long: no reorder buffer warning: $(cat "$TMP/long.err")"

# the keys' own state beyond the budget: refused, but not the first users
awk 'BEGIN { for (i = 0; i < 3000; i++) printf "{\"user\":\"m%d\",\"type\":\"login\"}\n", i
    print "{\"user\":\"m0\",\"type\":\"buy\"}" }' > "$TMP/many"
"$VIGIL" run --stats --max-memory 256K "$TMP/proc.cep" < "$TMP/many" > "$TMP/many.out" \
    2> "$TMP/many.err" || fail "many: run failed"
refused=$(stat_of keys_refused "$TMP/many.err")
[ "${refused:-0}" -gt 0 ] && [ "$refused" -lt 3000 ] || fail "many: $refused refused: $(cat "$TMP/many.err")"
grep -q '"message":"pair m0"' "$TMP/many.out" || fail "many: the first user lost its alert"
! grep -q "reorder buffer" "$TMP/many.err" || fail "many: reorder buffer blamed on processing time"
exit 0

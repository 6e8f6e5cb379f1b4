#!/bin/sh
# A regex with catastrophic backtracking ('(a+)+$' on "aaa...ab") hits PCRE2's match
# limit on every hostile line: each such test is treated as no match, the engine goes
# on, and the other rules (and the same regex on benign text) still alert. Without
# the limit, one of these lines would take longer than the age of the universe.
. "$top_srcdir/tests/hostile/lib.sh"
HOSTILE=300
awk -v n=$HOSTILE 'BEGIN {
    evil = ""; for (i = 0; i < 48; i++) evil = evil "a"; evil = evil "b"
    for (i = 0; i < n; i++) {
        printf "{\"user\":\"h%d\",\"msg\":\"%s\"}\n", i % 10, evil
        if (i % 3 == 0) printf "{\"user\":\"g%d\",\"n\":\"go\"}\n", i
        if (i % 5 == 0) printf "{\"user\":\"e%d\",\"msg\":\"ERR%d %s\"}\n", i, i, evil
        if (i % 30 == 0) printf "{\"user\":\"a%d\",\"msg\":\"aaaaaaaa\"}\n", i
    }
}' > "$TMP/events"
"$VIGIL" run --stats "$RULES/redos.cep" < "$TMP/events" > "$TMP/alerts" 2> "$TMP/err" ||
    { cat "$TMP/err" >&2; fail "run"; }
count() { grep -c "\"rule\":\"$1\"" "$TMP/alerts"; }
[ "$(count go)" -eq $((HOSTILE / 3)) ] || fail "go alerts: $(count go)"
[ "$(count err_code)" -eq $((HOSTILE / 5)) ] || fail "err_code alerts: $(count err_code)"
# only the benign all-"a" messages match; the "ERRn aaa...ab" ones hit the limit too
[ "$(count redos)" -eq $((HOSTILE / 30)) ] || fail "redos alerts: $(count redos)"
[ "$(stat_of events "$TMP/err")" -eq "$(lines "$TMP/events")" ] || fail "stats: $(cat "$TMP/err")"
if grep -q 'regex' "$TMP/err"; then
    echo "redos: the engine reports: $(grep -o '"regex[a-z_]*":[0-9]*' "$TMP/err")"
else
    echo "redos: --stats does not report regex limit hits (see regex_stats.sh)"
fi
exit 0

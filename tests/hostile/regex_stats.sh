#!/bin/sh
# --stats counts the regex tests that hit PCRE2's match or depth limit
# ("regex_limit_hits": every evaluation scratch, the workers' too).
# Every hostile line below hits the limit once: the count must be 20.
. "$top_srcdir/tests/hostile/lib.sh"
awk 'BEGIN { evil = ""; for (i = 0; i < 48; i++) evil = evil "a"
    for (i = 0; i < 20; i++) printf "{\"user\":\"h\",\"msg\":\"%sb\"}\n", evil }' > "$TMP/events"
"$VIGIL" run --stats "$RULES/redos.cep" < "$TMP/events" > "$TMP/alerts" 2> "$TMP/err" || fail "run"
hits=$(grep -o '"regex_limit_hits":[0-9]*' "$TMP/err" | head -1 | cut -d: -f2)
[ -n "$hits" ] || fail "no regex_limit_hits in --stats: $(cat "$TMP/err")"
[ "$hits" -eq 20 ] || fail "regex_limit_hits $hits, want 20"

#!/bin/sh
# A client streaming a 100 MB line with no newline into a unix socket input is cut
# off at --max-line: one dead letter with its reason, never buffered beyond the
# limit, while another client's events on the same listener still alert. That
# client's unterminated last line (it hangs up mid-line) is a dead letter too.
. "$top_srcdir/tests/hostile/lib.sh"
SOCK="$TMP/in.sock"
FLOOD=104857600
"$VIGIL" run --stats --max-line 1M --errors "$TMP/errors" -i "unix:$SOCK" -o "$TMP/alerts" \
    "$RULES/clients.cep" 2> "$TMP/err" &
pid=$!
wait_for '[ -S "$SOCK" ]' || fail "no listening socket"
mkfifo "$TMP/hold"
"$CLIENT" flood "$SOCK" $FLOOD < "$TMP/hold" > "$TMP/flood.out" &
fpid=$!
exec 3> "$TMP/hold"   # the flood client keeps its connection open until this closes
wait_long '[ -s "$TMP/flood.out" ]' 50 || fail "the flood did not get through"
[ "$(cat "$TMP/flood.out")" = "sent $FLOOD" ] || fail "flood client: $(cat "$TMP/flood.out")"
# the flooding connection is still open: another client is served meanwhile
awk 'BEGIN { for (i = 1; i <= 50; i++) printf "{\"user\":\"g%d\",\"n\":\"go\"}\n", i
             printf "{\"user\":\"cut\",\"n\":\"go\"}" }' > "$TMP/good"
"$CLIENT" send "$SOCK" "$TMP/good" || fail "good client"
wait_long '[ "$(lines "$TMP/alerts")" -ge 50 ]' 20 ||
    fail "the good client's events did not alert during the flood ($(lines "$TMP/alerts") alerts)"
exec 3>&-
wait $fpid || fail "flood client failed"
stop_vigil $pid
[ "$(grep -c '"rule":"go"' "$TMP/alerts")" -eq 50 ] || fail "want 50 go alerts"
[ "$(lines "$TMP/errors")" -eq 2 ] || { cut -c1-300 "$TMP/errors" >&2; fail "want two dead letters"; }
grep -q "^{\"input\":\"unix:$SOCK#[0-9]*\",\"line\":1,\"reason\":\"line longer than 1048576 bytes\"" \
    "$TMP/errors" || fail "dead letter: $(cut -c1-200 "$TMP/errors")"
grep -q '"line":51,"reason":"[^"]*","text":"{\\"user\\":\\"cut\\",\\"n\\":\\"go\\"}"}$' "$TMP/errors" ||
    fail "no dead letter for the unterminated line: $(cut -c1-200 "$TMP/errors")"
[ "$(wc -c < "$TMP/errors")" -lt 65536 ] || fail "the dead letter holds more than an excerpt"
[ "$(stat_of events "$TMP/err")" -eq 50 ] || fail "stats: $(cat "$TMP/err")"
[ "$(stat_of malformed "$TMP/err")" -eq 2 ] || fail "stats: $(cat "$TMP/err")"
# nothing near the flood's size was ever held: 100 MB in, well under 64 MB resident
rss=$(stat_of peak_rss_kb "$TMP/err")
[ "$rss" -lt 65536 ] || fail "peak RSS ${rss} kB while cutting a 100 MB line"
echo "flood: 100 MB line cut at 1 MiB, 50 alerts from the other client, peak RSS ${rss} kB"

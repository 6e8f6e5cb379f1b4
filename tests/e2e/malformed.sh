#!/bin/sh
# Malformed lines mixed into a valid stream change no alert and land in --errors
# with their positions and reasons; without --errors they are logged, rate-limited.
. "$top_srcdir/tests/e2e/lib.sh"
gen_events 2000 > "$TMP/clean"
# every 97th line, insert one bad line of five kinds (one missing its time field)
awk 'BEGIN { bad[0] = "not json"; bad[1] = "{\"ts\":1767225600,\"type\":\"tx\"";
             bad[2] = "[1,2,3]"; bad[3] = "{\"type\":\"tx\",\"user\":\"u1\",\"amount\":999}";
             bad[4] = "{\"ts\":1767225600,\"user\":\"\377\"}" }
     { print; if (NR % 97 == 0) { print bad[k % 5]; k++ } }' "$TMP/clean" > "$TMP/dirty"
expected_bad=$((2000 / 97))
"$VIGIL" run "$DATA/bursts.cep" < "$TMP/clean" > "$TMP/a.clean" || fail "clean run"
"$VIGIL" run --errors "$TMP/errors" "$DATA/bursts.cep" < "$TMP/dirty" > "$TMP/a.dirty" 2> "$TMP/err" ||
    fail "dirty run"
same_alerts "$TMP/a.clean" "$TMP/a.dirty" "malformed lines changed the alerts"
[ "$(wc -l < "$TMP/errors")" -eq "$expected_bad" ] || fail "want $expected_bad dead letters"
# positions: the bad lines are at 98, 196, ... of the dirty stream (input "-")
awk 'NR % 98 == 0 { print NR }' "$TMP/dirty" > "$TMP/want_lines"
sed 's/.*"line":\([0-9]*\).*/\1/' "$TMP/errors" > "$TMP/got_lines"
cmp -s "$TMP/want_lines" "$TMP/got_lines" || fail "dead-letter line numbers"
grep -q '"input":"-","line":98,"reason":"[^"]*","text":"not json"' "$TMP/errors" ||
    fail "first dead letter: $(head -1 "$TMP/errors")"
grep -q "missing or unparsable time field 'ts'" "$TMP/errors" || fail "no time-field reason"
grep -qi 'utf-8' "$TMP/errors" || fail "no UTF-8 reason"
[ ! -s "$TMP/err" ] || { cat "$TMP/err" >&2; fail "stderr not empty with --errors"; }
# without --errors: the first 10 logged to stderr, the rest summarised
"$VIGIL" run "$DATA/bursts.cep" < "$TMP/dirty" > "$TMP/a.log" 2> "$TMP/err" || fail "logged run"
same_alerts "$TMP/a.clean" "$TMP/a.log" "alerts differ when dead letters are logged"
[ "$(grep -c ':[0-9]*: malformed line:' "$TMP/err")" -eq 10 ] || fail "want 10 logged lines"
grep -q "more malformed lines not shown ($expected_bad in total)" "$TMP/err" || fail "no summary"
# an over-long line (--max-line) is a dead letter too, and the stream goes on
{ head -50 "$TMP/clean"; printf '{"ts":1767225600,"pad":"%0300d"}\n' 0; tail -n +51 "$TMP/clean"; } > "$TMP/long"
"$VIGIL" run --max-line 200 --errors "$TMP/errors2" "$DATA/bursts.cep" < "$TMP/long" > "$TMP/a.long" ||
    fail "run with --max-line"
same_alerts "$TMP/a.clean" "$TMP/a.long" "an over-long line changed the alerts"
grep -q '"line":51,' "$TMP/errors2" || fail "over-long line: $(cat "$TMP/errors2")"
# CRLF line ends, and a last line with no line end at all: the same alerts (events
# are echoed without the CR), nothing rejected
sed 's/$/\r/' "$TMP/clean" | head -c -2 > "$TMP/crlf"
"$VIGIL" run --errors "$TMP/errors3" "$DATA/bursts.cep" < "$TMP/crlf" > "$TMP/a.crlf" ||
    fail "run with CRLF"
same_alerts "$TMP/a.clean" "$TMP/a.crlf" "CRLF or the unterminated last line changed the alerts"
[ ! -s "$TMP/errors3" ] || fail "CRLF lines rejected: $(head -3 "$TMP/errors3")"
exit 0

#!/bin/sh
# Malformed lines of every kind mixed into a valid event-time stream (file input,
# --max-line 4096): the alerts are exactly the clean stream's, and every bad line
# lands in --errors once, with its input, line number and a reason.
. "$top_srcdir/tests/hostile/lib.sh"
awk 'BEGIN { for (i = 0; i < 3000; i++) {
    u = "u" (i * 3 % 11)
    if (i % 13 == 5) printf "{\"ts\":%d,\"kind\":\"login\",\"user\":\"%s\",\"id\":%d}\n", 1767225600 + i, u, i
    else printf "{\"ts\":%d,\"kind\":\"tx\",\"user\":\"%s\",\"amount\":%d,\"id\":%d}\n", 1767225600 + i, u, (i * 53) % 200, i
} }' > "$TMP/clean"
# One bad line per kind, written with printf so raw bytes (NUL, 0xff) are exact.
bad() { printf "$@" >> "$TMP/bad"; printf '\n' >> "$TMP/bad"; }
: > "$TMP/bad"
bad 'hello'                                            # not JSON at all
bad '{"ts":1767225700,"kind":"tx","user":"u1"'         # truncated object
bad '{"ts":1767225700,"user":"u1",}'                   # trailing comma
bad '{"ts":1767225700,"user":"u1"} {"x":1}'            # trailing garbage
bad "{'ts':1767225700}"                                # single quotes
bad '[1,2,3]'                                          # array
bad '"a string"'                                       # string
bad '42'                                               # number
bad 'null'                                             # null
bad '{"ts":1767225700,"user":"\377"}'                  # invalid UTF-8 byte
bad '{"ts":1767225700,"user":"\300\257"}'              # overlong UTF-8 encoding
bad '{"ts":1767225700,"user":"\355\240\200"}'          # UTF-8-encoded surrogate
bad '{"ts":1767225700,"user":"a\tb"}'                  # raw control character
bad '{"ts":1767225700,"user":"a\000b"}'                # raw NUL byte
bad '{"ts":1767225700,"user":"\\x41"}'                 # invalid escape
bad '{"ts":17672257OO,"user":"u1"}'                    # bad number
bad '{"kind":"tx","user":"u1","amount":150}'           # missing time field
bad '{"ts":"yesterday","kind":"tx","user":"u1"}'       # unparsable time
bad '{"ts":{"s":1},"kind":"tx","user":"u1"}'           # time of the wrong type
bad '{"ts":true,"kind":"tx","user":"u1"}'              # time of the wrong type
bad '{"ts":1767225700,"deep":%s1%s}' "$(printf '%0100d' 0 | tr 0 '[')" "$(printf '%0100d' 0 | tr 0 ']')"
bad '{"ts":1767225700,"user":"u1","pad":"%05000d"}' 0   # longer than --max-line
nbad=$(wc -l < "$TMP/bad")
# bad line k goes after clean line 100 * k + 7
awk -v every=100 'NR == FNR { bad[++n] = $0; next }
    { print; if (FNR % every == 7 && k < n) print bad[++k] }' "$TMP/bad" "$TMP/clean" > "$TMP/dirty"
[ "$(wc -l < "$TMP/dirty")" -eq $((3000 + nbad)) ] || fail "test data: not every bad line placed"
"$VIGIL" run --stats "$RULES/events.cep" < "$TMP/clean" > "$TMP/a.clean" 2> "$TMP/err" ||
    fail "clean run"
grep -q '"kind":"timeout"' "$TMP/a.clean" && grep -q '"rule":"login_tx"' "$TMP/a.clean" ||
    fail "the clean stream lacks some kind of alert"
"$VIGIL" run --stats --max-line 4096 --errors "$TMP/errors" -i "$TMP/dirty" "$RULES/events.cep" \
    > "$TMP/a.dirty" 2> "$TMP/err" || { cat "$TMP/err" >&2; fail "dirty run"; }
same_alerts "$TMP/a.clean" "$TMP/a.dirty" "malformed lines changed the alerts"
[ "$(lines "$TMP/errors")" -eq "$nbad" ] || { cut -c1-160 "$TMP/errors" >&2; fail "want $nbad dead letters, got $(lines "$TMP/errors")"; }
[ "$(stat_of malformed "$TMP/err")" -eq "$nbad" ] || fail "stats: $(cat "$TMP/err")"
[ "$(stat_of events "$TMP/err")" -eq 3000 ] || fail "stats: $(cat "$TMP/err")"
# positions: the dirty stream's line numbers of the bad lines, in order
k=0
while [ $k -lt "$nbad" ]; do
    k=$((k + 1))
    echo $((100 * (k - 1) + 7 + k))
done > "$TMP/want_lines"
sed 's/^{"input":"[^"]*","line":\([0-9]*\),.*/\1/' "$TMP/errors" > "$TMP/got_lines"
cmp -s "$TMP/want_lines" "$TMP/got_lines" ||
    { paste "$TMP/want_lines" "$TMP/got_lines" >&2; fail "dead-letter line numbers"; }
grep -v "^{\"input\":\"$TMP/dirty\",\"line\":[0-9]*,\"reason\":\"[^\"][^\"]*\",\"text\":" "$TMP/errors" > "$TMP/odd" &&
    { cat "$TMP/odd" >&2; fail "dead letters without input, line or reason"; }
grep -q 'longer than 4096' "$TMP/errors" || fail "no over-long reason"
grep -qi 'utf-8' "$TMP/errors" || fail "no UTF-8 reason"
grep -q "time field 'ts'" "$TMP/errors" || fail "no time-field reason"
echo "malformed: $nbad bad lines of $(wc -l < "$TMP/dirty"), $(lines "$TMP/a.dirty") alerts unchanged"

#!/bin/sh
# With event time, an event older than the watermark is late: not matched, counted,
# and written to --late with its position and reason.
. "$top_srcdir/tests/e2e/lib.sh"
printf '%s\n' \
  '{"ts":1767225600,"type":"tx","user":"a","amount":200}' \
  '{"ts":1767225610,"type":"tx","user":"b","amount":10}' \
  '{"ts":1767225603,"type":"tx","user":"a","amount":300}' \
  '{"ts":1767225607,"type":"tx","user":"a","amount":400}' > "$TMP/ev"
# lateness 5s: after ts ...610 the watermark is ...605: line 3 is late, line 4 is not
"$VIGIL" run --stats --late "$TMP/late" "$DATA/bursts.cep" < "$TMP/ev" > "$TMP/a" 2> "$TMP/err" ||
    fail "run"
[ "$(wc -l < "$TMP/late")" -eq 1 ] || fail "want one late event"
grep -q '"input":"-","line":3,"reason":"late: [^"]*","event":{"ts":1767225603' "$TMP/late" ||
    fail "late record: $(cat "$TMP/late")"
grep -q '"late":1' "$TMP/err" || fail "stats do not count the late event"
grep -q '"message":"burst a: 200 then 400"' "$TMP/a" || fail "the in-time events must match"
grep -q '300' "$TMP/a" && fail "the late event was matched"
exit 0

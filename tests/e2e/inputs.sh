#!/bin/sh
# stdin and a file input give the same alerts; both kinds of result come out.
. "$top_srcdir/tests/e2e/lib.sh"
gen_events 3000 > "$TMP/ev"
"$VIGIL" run "$DATA/bursts.cep" < "$TMP/ev" > "$TMP/a.stdin" || fail "run from stdin"
"$VIGIL" run -i "$TMP/ev" "$DATA/bursts.cep" > "$TMP/a.file" || fail "run from a file"
"$VIGIL" run -i - -o "$TMP/a.out" "$DATA/bursts.cep" < "$TMP/ev" || fail "run with -o"
grep -q '"kind":"match"' "$TMP/a.file" || fail "no match alerts"
grep -q '"kind":"timeout"' "$TMP/a.file" || fail "no timeout alerts"
grep -q '"rule":"login_then_tx"' "$TMP/a.file" || fail "no login_then_tx alerts"
same_alerts "$TMP/a.stdin" "$TMP/a.file" "stdin and file inputs differ"
same_alerts "$TMP/a.stdin" "$TMP/a.out" "-o file differs from stdout"
echo "inputs: $(wc -l < "$TMP/a.file") alerts"

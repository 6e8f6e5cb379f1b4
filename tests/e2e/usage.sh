#!/bin/sh
# Exit codes and help of `vigil run`: 0 ok, 1 rule errors, 2 usage, 3 I/O.
. "$top_srcdir/tests/e2e/lib.sh"
code() { status=0; "$@" > "$TMP/out" 2> "$TMP/err" < /dev/null || status=$?; echo $status; }
[ "$(code "$VIGIL" run --help)" -eq 0 ] || fail "--help"
grep -q -- '--max-partials' "$TMP/out" || fail "--help does not document --max-partials"
[ "$(code "$VIGIL" run)" -eq 2 ] || fail "no rule files"
[ "$(code "$VIGIL" run --bogus "$DATA/bursts.cep")" -eq 2 ] || fail "unknown option"
[ "$(code "$VIGIL" run --workers 0 "$DATA/bursts.cep")" -eq 2 ] || fail "--workers 0"
[ "$(code "$VIGIL" run --max-line 1x "$DATA/bursts.cep")" -eq 2 ] || fail "--max-line 1x"
# every option --help names is one the parser knows, and a bad value of each numeric
# option is a usage error that names the option
"$VIGIL" run --help | grep -oE -- '--[a-z][a-z-]+' | sort -u > "$TMP/opts"
while read -r opt; do
    "$VIGIL" run "$opt" 2>&1 < /dev/null | grep -q "unknown option" && fail "--help names $opt, run rejects it"
done < "$TMP/opts"
for opt in --workers --max-line --max-partials --max-memory --max-buffered --checkpoint-every; do
    for bad in -1 0 '' 1e99 99999999999999999999999 12Q; do
        [ "$(code "$VIGIL" run "$opt" "$bad" "$DATA/bursts.cep")" -eq 2 ] || fail "$opt '$bad'"
        grep -q -- "$opt" "$TMP/err" || fail "$opt '$bad': the message does not name it"
    done
    [ "$(code "$VIGIL" run "$DATA/bursts.cep" "$opt")" -eq 2 ] || fail "$opt without a value"
done
echo 'rule broken { begin a where ; }' > "$TMP/broken.cep"
[ "$(code "$VIGIL" run "$TMP/broken.cep")" -eq 1 ] || fail "rule errors"
grep -q 'broken.cep:1:' "$TMP/err" || fail "no diagnostic position"
[ "$(code "$VIGIL" run -i "$TMP/nonexistent" "$DATA/bursts.cep")" -eq 3 ] || fail "missing input"
[ "$(code "$VIGIL" run "$DATA/bursts.cep")" -eq 0 ] || fail "empty stdin"
[ ! -s "$TMP/out" ] || fail "alerts from no events"
exit 0

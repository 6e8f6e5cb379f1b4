#!/bin/sh
# stdin and a file input give the same alerts; both kinds of result come out. An output
# that is also an input is refused; a bad input is named once in its message.
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

# An output that is also an input is refused before anything is read or written: its
# records would come back as events and the file grow without end.
cp "$TMP/ev" "$TMP/loop"
refused_loop() {   # refused_loop WHAT: the last run exited 2 with the reason, file intact
    [ "$st" -eq 2 ] || fail "$1: exit $st"
    grep -q "is also the input .*: its records would be read back as events" "$TMP/loop.err" ||
        fail "$1: $(cat "$TMP/loop.err")"
    cmp -s "$TMP/ev" "$TMP/loop" || fail "$1: the file was written"
}
st=0; "$VIGIL" run -i "$TMP/loop" -o "$TMP/loop" "$DATA/bursts.cep" 2> "$TMP/loop.err" || st=$?
refused_loop "-i F -o F"
st=0; "$VIGIL" run --errors "$TMP/loop" "$DATA/bursts.cep" < "$TMP/loop" 2> "$TMP/loop.err" || st=$?
refused_loop "--errors F < F"
st=0; "$VIGIL" run "$DATA/bursts.cep" < "$TMP/loop" >> "$TMP/loop" 2> "$TMP/loop.err" || st=$?
refused_loop "< F >> F"

# An input that cannot be opened is named once in its message; a port beyond 65535 is
# refused (the resolver would take it modulo 65536 and listen on another port).
st=0; "$VIGIL" run -i "$TMP/none" "$DATA/bursts.cep" < /dev/null 2> "$TMP/in.err" || st=$?
[ $st -eq 3 ] && grep -qx "vigil run: cannot open $TMP/none: No such file or directory" \
    "$TMP/in.err" || fail "missing input: exit $st: $(cat "$TMP/in.err")"
st=0; "$VIGIL" run -i tcp://127.0.0.1:99999 "$DATA/bursts.cep" < /dev/null 2> "$TMP/in.err" || st=$?
[ $st -eq 3 ] && grep -qx "vigil run: tcp://127.0.0.1:99999: the port must be a number from 0 to 65535" \
    "$TMP/in.err" || fail "port 99999: exit $st: $(cat "$TMP/in.err")"

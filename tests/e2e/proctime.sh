#!/bin/sh
# Processing time: a `within` timeout fires on a real timer while the input is idle.
. "$top_srcdir/tests/e2e/lib.sh"
mkfifo "$TMP/fifo"
for workers in 1 2; do
    "$VIGIL" run --workers $workers -i "$TMP/fifo" "$DATA/proctime.cep" > "$TMP/a" 2> "$TMP/err" &
    pid=$!
    exec 3> "$TMP/fifo"
    echo '{"type":"ping","id":1}' >&3
    wait_for 'grep -q "unanswered 1" "$TMP/a"' ||
        { kill $pid; fail "no timeout while idle ($workers workers)"; }
    printf '%s\n' '{"type":"ping","id":2}' '{"type":"pong","id":2}' >&3
    exec 3>&-
    wait $pid || fail "exit status ($workers workers)"
    grep -q '"message":"answered 2"' "$TMP/a" || fail "no match ($workers workers)"
    [ "$(grep -c '"kind":"timeout"' "$TMP/a")" -eq 1 ] || fail "want exactly one timeout ($workers workers)"
done
exit 0

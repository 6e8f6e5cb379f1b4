#!/bin/sh
# --control: a 0600 Unix socket answering stats, rules and reload with one JSON line;
# a stale socket file is replaced; the socket is removed at exit. Two workers, so
# that stats are read from paused workers.
. "$top_srcdir/tests/e2e/lib.sh"
CTL="$top_builddir/tests/e2e/ctl_client"
[ -x "$CTL" ] || fail "no $CTL"
mkdir -p "$TMP/rules"
cp "$DATA/bursts.cep" "$TMP/rules/r.cep"
mkfifo "$TMP/fifo"
sock="$TMP/ctl.sock"
"$VIGIL" run --workers 2 --control "$sock" -i "$TMP/fifo" "$TMP/rules" > "$TMP/a" 2> "$TMP/err" &
pid=$!
exec 3> "$TMP/fifo"   # returns once vigil opened its input: the socket is listening
gen_events 50 >&3
[ -S "$sock" ] || { kill $pid; fail "no socket"; }
[ "$(stat -c %a "$sock")" = 600 ] || { kill $pid; fail "socket mode $(stat -c %a "$sock")"; }
wait_for '"$CTL" "$sock" stats | grep -q "\"events\":50,"' ||
    { kill $pid; fail "stats: $("$CTL" "$sock" stats)"; }
"$CTL" "$sock" rules | grep -q '^{"rules":\[{"name":"burst","fingerprint":"[0-9a-f]*"' ||
    { kill $pid; fail "rules: $("$CTL" "$sock" rules)"; }
"$CTL" "$sock" reload | grep -qx '{"ok":true,"message":"reloaded 2 rules: 0 changed, 0 added, 0 removed, 2 kept state"}' ||
    { kill $pid; fail "reload"; }
echo 'rule broken {' > "$TMP/rules/broken.cep"
"$CTL" "$sock" reload | grep -q '^{"ok":false,"message":"reload failed (rule errors)' ||
    { kill $pid; fail "failed reload"; }
"$CTL" "$sock" bogus | grep -q '"ok":false,"error":"unknown command' || { kill $pid; fail "bogus"; }
exec 3>&-
wait $pid || fail "exit status"
[ ! -e "$sock" ] || fail "socket left behind"
# a stale socket file (no listener) is replaced
"$CTL" /dev/null stats > /dev/null 2>&1 && fail "client reached nothing"
leave_stale_socket() {   # leave a socket file behind: kill -9 a server
    "$VIGIL" run --control "$sock" -i "$TMP/fifo" "$TMP/rules" > /dev/null 2>&1 &
    p=$!
    exec 4> "$TMP/fifo"
    kill -9 $p
    wait $p 2> /dev/null
    exec 4>&-
}
rm "$TMP/rules/broken.cep"
leave_stale_socket
[ -S "$sock" ] || fail "no stale socket to test with"
echo '{"ts":1767225600,"type":"login","user":"x"}' > "$TMP/one"
"$VIGIL" run --control "$sock" -i "$TMP/one" "$TMP/rules" > /dev/null 2> "$TMP/err" ||
    { cat "$TMP/err" >&2; fail "a stale socket was not replaced"; }
exit 0

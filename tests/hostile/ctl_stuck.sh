#!/bin/sh
# vigil ctl against a vigil that serves no one (stopped, here with SIGSTOP): with its
# control socket's backlog full, connect itself waits, so --timeout must bound the
# connect too; the exit status is 3 with a message saying what happened. And a path
# that is not a socket says so.
. "$top_srcdir/tests/hostile/lib.sh"
echo 'rule a { begin s; }' > "$TMP/r.cep"
mkfifo "$TMP/fifo"
"$VIGIL" run --control "$TMP/ctl" -i "$TMP/fifo" "$TMP/r.cep" 2> "$TMP/err" &
pid=$!
exec 3> "$TMP/fifo"
wait_for '"$VIGIL" ctl "$TMP/ctl" stats > /dev/null 2>&1' || fail "vigil run --control did not start"
kill -STOP $pid
mkfifo "$TMP/hold"
"$CLIENT" fill "$TMP/ctl" < "$TMP/hold" > "$TMP/filled" &
filler=$!
exec 4> "$TMP/hold"
wait_for 'grep -q "^full" "$TMP/filled"' || { kill -CONT $pid; fail "could not fill the backlog"; }
st=0
timeout 20 "$VIGIL" ctl --timeout 1 "$TMP/ctl" stats > /dev/null 2> "$TMP/ctl_err" || st=$?
exec 4>&-
wait $filler
kill -CONT $pid
exec 3>&-
wait $pid || fail "vigil run failed: $(cat "$TMP/err")"
[ $st -ne 124 ] || fail "vigil ctl --timeout 1 still waiting after 20 s"
[ $st -eq 3 ] || fail "vigil ctl: exit $st, want 3: $(cat "$TMP/ctl_err")"
grep -q "did not accept the connection within 1 s" "$TMP/ctl_err" ||
    fail "vigil ctl: $(cat "$TMP/ctl_err")"
st=0
"$VIGIL" ctl "$TMP/r.cep" stats 2> "$TMP/ctl_err" || st=$?
[ $st -eq 3 ] && grep -q "not a socket" "$TMP/ctl_err" || fail "not a socket: $st $(cat "$TMP/ctl_err")"
echo "ctl_stuck: a stopped vigil's full backlog gives exit 3 after --timeout"

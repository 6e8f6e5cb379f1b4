# tests/hostile/lib.sh — helpers of the hostile-input tests (sourced, not run), on
# top of the end-to-end helpers (vigil binary, $TMP, fail, skip, wait_for).
. "$top_srcdir/tests/e2e/lib.sh"
CLIENT="$top_builddir/tests/hostile/sockclient"
RULES="$top_srcdir/tests/hostile/data"
[ -x "$CLIENT" ] || fail "no socket client at $CLIENT"

# wait_long COND_CMD SECONDS: like wait_for, for slower steps (sanitizer builds).
wait_long() {
    n=$(($2 * 20))
    while ! eval "$1"; do
        n=$((n - 1))
        [ $n -le 0 ] && return 1
        sleep 0.05
    done
    return 0
}

# lines FILE: number of lines, 0 if the file does not exist yet.
lines() { if [ -f "$1" ]; then wc -l < "$1"; else echo 0; fi; }

# stop_vigil PID: SIGTERM, then the exit status must be 0.
stop_vigil() {
    kill -TERM "$1"
    st=0
    wait "$1" || st=$?
    [ $st -eq 0 ] || { cat "$TMP/err" >&2; fail "vigil exited with $st after SIGTERM"; }
}

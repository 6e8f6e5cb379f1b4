#!/bin/sh
# SIGHUP reloads the rules between two events: an unchanged rule keeps its partial
# matches (even with new actions), a new rule starts, a broken file keeps the old rules
# running; the summary line and the --stats counters say what happened.
. "$top_srcdir/tests/e2e/lib.sh"
mkdir -p "$TMP/rules"
rules_v1() {
    cat > "$TMP/rules/r.cep" <<'R'
time ts;
rule pair { key user; begin a where type == "start"; followed_by b where type == "end";
  within 1h; on match alert "old message {user}"; }
R
}
rules_v2() {
    cat > "$TMP/rules/r.tmp" <<'R'
time ts;
rule pair { key user; begin a where type == "start"; followed_by b where type == "end";
  within 1h; on match alert high "new message {user}"; }
rule ends { key user; begin e where type == "end"; on match alert "end of {user}"; }
R
    mv "$TMP/rules/r.tmp" "$TMP/rules/r.cep"   # as editors save: write, then rename
}
# read_all PID BASE BYTES: waits until vigil has read BYTES more than BASE
read_all() {
    [ -r /proc/$1/io ] || { sleep 1; return 0; }
    wait_for "[ \"\$(awk '/^rchar/ { print \$2 }' /proc/$1/io)\" -ge $(($2 + $3)) ]"
}
rchar() { [ -r /proc/$1/io ] && awk '/^rchar/ { print $2 }' /proc/$1/io || echo 0; }
# start_with_event ARGS...: vigil run ARGS on $TMP/fifo (fd 3 writes to it, $pid is
# vigil's), once it has read a first "start" event of u1
start_with_event() {
    "$VIGIL" run "$@" -i "$TMP/fifo" "$TMP/rules" 2> "$TMP/err" &
    pid=$!
    exec 3> "$TMP/fifo"
    base=$(rchar $pid)
    line='{"ts":1767225600,"type":"start","user":"u1"}'
    echo "$line" >&3
    read_all $pid "$base" ${#line} || fail "vigil did not read the first event"
}

mkfifo "$TMP/fifo"
for workers in 1 2; do
    rules_v1
    rm -f "$TMP/a"   # -o appends
    start_with_event --stats --workers $workers -o "$TMP/a"
    rules_v2
    kill -HUP $pid
    wait_for 'grep -q "reloaded 2 rules: 0 changed, 1 added, 0 removed, 1 kept state" "$TMP/err"' ||
        { cat "$TMP/err" >&2; kill $pid; fail "no reload summary ($workers workers)"; }
    echo 'rule broken {' > "$TMP/rules/broken.cep"
    kill -HUP $pid
    wait_for 'grep -q "reload failed" "$TMP/err"' || { kill $pid; fail "no reload failure"; }
    rm "$TMP/rules/broken.cep"
    echo '{"ts":1767225660,"type":"end","user":"u1"}' >&3
    exec 3>&-
    wait $pid || { cat "$TMP/err" >&2; fail "exit status ($workers workers)"; }
    grep -q '"severity":"high".*"message":"new message u1"' "$TMP/a" ||
        { cat "$TMP/a" >&2; fail "the kept partial match did not complete under the new rules"; }
    grep -q '"message":"end of u1"' "$TMP/a" || fail "the added rule did not run"
    grep -q 'old message' "$TMP/a" && fail "an alert of the old rules after the reload"
    grep -q 'broken.cep:[0-9]*:[0-9]*: error' "$TMP/err" || fail "no diagnostics for the broken file"
    grep -q '"reloads":1,"reload_failures":1' "$TMP/err" || fail "reload counters"
done

# An output a reload closes (here: its target changed) delivers what it can; what its
# listener never took is counted and makes the run exit 3.
cat > "$TMP/rules/r.cep" <<R
output t unix "$TMP/nobody.sock";
rule any { key user; begin a; on match alert "a {user}" to t; }
R
start_with_event --stats -o /dev/null
cat > "$TMP/rules/r.tmp" <<R
output t file "$TMP/t.jsonl";
rule any { key user; begin a; on match alert "a {user}" to t; }
R
mv "$TMP/rules/r.tmp" "$TMP/rules/r.cep"
kill -HUP $pid
wait_for 'grep -q "reloaded 1 rules" "$TMP/err"' || { kill $pid; fail "no reload"; }
exec 3>&-
st=0; wait $pid || st=$?
[ $st -eq 3 ] || { cat "$TMP/err" >&2; fail "exit status $st after a closed output lost an alert"; }
grep -q '"replaced_outputs_undelivered":1' "$TMP/err" || { cat "$TMP/err" >&2; fail "counter"; }
grep -q "1 alerts were not delivered by outputs a reload closed" "$TMP/err" || fail "message"
exit 0

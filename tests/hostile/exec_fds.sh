#!/bin/sh
# An exec output's program inherits vigil's stdin, stdout (as its stdout: vigil's
# stderr) and stderr, and nothing else: not the --errors or --late file, the control
# socket, an input listener or an alert file.
. "$top_srcdir/tests/hostile/lib.sh"
[ -d /proc/self/fd ] || skip "no /proc/self/fd"
cat > "$TMP/r.cep" <<RULES
output e exec ["/bin/sh", "-c", "ls -l /proc/\$\$/fd > '$TMP/fds'"];
output f file "$TMP/alerts.jsonl";
rule a { key u; begin s where x > 0; on match alert "m {u}" to e, f; }
RULES
echo '{"u":"a","x":1}' > "$TMP/in"
"$VIGIL" run --control "$TMP/ctl" --errors "$TMP/dl.jsonl" --late "$TMP/late.jsonl" \
    -i "$TMP/in" -i "unix:$TMP/in.sock" "$TMP/r.cep" 2> "$TMP/err" &
pid=$!
wait_for '[ -s "$TMP/fds" ]' || { kill -TERM $pid; cat "$TMP/err" >&2; fail "the exec output did not run"; }
kill -TERM $pid
wait $pid || { cat "$TMP/err" >&2; fail "vigil run failed"; }
# sockets show as socket:[INODE]; those this shell already had are not vigil's
sh -c 'ls -l /proc/$$/fd' | grep -o 'socket:\[[0-9]*\]' > "$TMP/base_sockets" || true
{ grep -E "dl.jsonl|late.jsonl|alerts.jsonl" "$TMP/fds"
  grep -o 'socket:\[[0-9]*\]' "$TMP/fds" | grep -vxFf "$TMP/base_sockets"; } > "$TMP/leaked"
if [ -s "$TMP/leaked" ]; then
    cat "$TMP/leaked" >&2
    fail "the exec output's program inherited vigil's descriptors"
fi
echo "exec_fds: the program saw only its stdin, stdout and stderr"

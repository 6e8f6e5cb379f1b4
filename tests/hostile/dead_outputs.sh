#!/bin/sh
# Outputs that die under a running vigil: a dead-letter or late file on a full disk is
# reported when it fails, with its option, path and reason (exit 3, alerts unharmed);
# dead letters reach their file while vigil runs, not only at exit; an alert file or
# -o FILE removed mid-run (with its folder) is opened again at its path; a closed
# stdout or stderr does not send alerts or messages into a file vigil opened.
. "$top_srcdir/tests/hostile/lib.sh"
[ -w /dev/full ] || skip "no /dev/full"

cat > "$TMP/r.cep" <<EOF
time ts;
output archive file "$TMP/arch/{rule}/alerts.jsonl";
rule big { key user; begin s where amount > 100; on match alert "big {user}" to stdout, archive; }
EOF
printf '%s\n' '{"ts":100,"user":"a","amount":500}' 'not json' '{"ts":1,"user":"b","amount":500}' \
    '{"ts":101,"user":"c","amount":500}' > "$TMP/in"

# --errors and --late on a full disk
for opt in --errors --late; do
    st=0
    "$VIGIL" run "$opt" /dev/full -i "$TMP/in" "$TMP/r.cep" > "$TMP/out" 2> "$TMP/err" || st=$?
    [ $st -eq 3 ] || { cat "$TMP/err" >&2; fail "$opt /dev/full: exit $st, want 3"; }
    grep -q "cannot write $opt /dev/full: No space left on device" "$TMP/err" ||
        { cat "$TMP/err" >&2; fail "$opt /dev/full: no message naming the file and reason"; }
    [ "$(lines "$TMP/out")" -eq 2 ] || fail "$opt /dev/full: alerts lost"
done

# stdout or stderr closed by whoever started vigil: alerts and messages must not go
# into the next file vigil opens (it would get descriptor 1 or 2)
rm -r "$TMP/arch"
st=0
"$VIGIL" run --errors "$TMP/dl2.jsonl" -i "$TMP/in" "$TMP/r.cep" >&- 2> "$TMP/err" || st=$?
[ $st -eq 3 ] || { cat "$TMP/err" >&2; fail "stdout closed: exit $st, want 3"; }
grep -q '"rule"' "$TMP/dl2.jsonl" && fail "stdout closed: alerts went into the --errors file"
grep -q 'cannot write to stdout' "$TMP/err" || fail "stdout closed: not reported"
"$VIGIL" run --late "$TMP/late2.jsonl" -i "$TMP/in" "$TMP/r.cep" > "$TMP/out" 2>&- ||
    fail "stderr closed: vigil failed"
[ "$(lines "$TMP/late2.jsonl")" -eq 1 ] || fail "stderr closed: the late event is not in --late"
cat "$TMP/late2.jsonl" "$TMP/arch/big/alerts.jsonl" | grep -v -e '^{"input"' -e '^{"rule"' &&
    fail "stderr closed: messages went into a file vigil opened"
[ "$(lines "$TMP/out")" -eq 2 ] || fail "stderr closed: alerts lost"

# dead letters are in --errors while vigil still runs; an alert file and -o FILE
# removed mid-run come back at their paths
rm -r "$TMP/arch"   # what the runs above archived
mkfifo "$TMP/fifo"
mkdir "$TMP/outdir"
"$VIGIL" run --errors "$TMP/dl.jsonl" -o "$TMP/outdir/o.jsonl" -i "$TMP/fifo" "$TMP/r.cep" \
    2> "$TMP/err" &
pid=$!
exec 3> "$TMP/fifo"
echo 'garbage' >&3
wait_for '[ "$(lines "$TMP/dl.jsonl")" -eq 1 ]' ||
    { kill -TERM $pid; fail "the dead letter is not in --errors while vigil runs"; }
echo '{"ts":200,"user":"a","amount":500}' >&3
wait_for '[ "$(lines "$TMP/arch/big/alerts.jsonl")" -eq 1 ] && [ "$(lines "$TMP/outdir/o.jsonl")" -eq 1 ]' ||
    { kill -TERM $pid; fail "first alert not written"; }
rm -r "$TMP/arch" "$TMP/outdir/o.jsonl"
echo '{"ts":300,"user":"b","amount":500}' >&3
wait_for '[ "$(lines "$TMP/arch/big/alerts.jsonl")" -eq 1 ] && [ "$(lines "$TMP/outdir/o.jsonl")" -eq 1 ]' ||
    { kill -TERM $pid; cat "$TMP/err" >&2; fail "alerts after the removal went nowhere"; }
exec 3>&-
wait $pid || { cat "$TMP/err" >&2; fail "vigil failed"; }
grep -q '"user":"b"' "$TMP/arch/big/alerts.jsonl" || fail "wrong alert in the new file"
grep -q 'arch/big/alerts.jsonl was removed or replaced' "$TMP/err" || fail "removal not logged"
grep -q 'o.jsonl was removed or replaced' "$TMP/err" || fail "-o removal not logged"
echo "dead outputs: full --errors/--late reported, dead letters live, removed files reopened"

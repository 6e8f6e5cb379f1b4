#!/bin/sh
# --workers 2 gives the same alert multiset as one worker, and each key's alerts in
# the same order; the workers reading a file themselves report as the input layer.
. "$top_srcdir/tests/e2e/lib.sh"
gen_events 5000 > "$TMP/ev"
"$VIGIL" run --workers 1 "$DATA/bursts.cep" < "$TMP/ev" > "$TMP/a1" || fail "1 worker"
"$VIGIL" run --workers 2 "$DATA/bursts.cep" < "$TMP/ev" > "$TMP/a2" 2> /dev/null || fail "2 workers"
same_alerts "$TMP/a1" "$TMP/a2" "--workers 2 changed the alerts"
for u in u0 u1 u2 u3 u4 u5 u6; do
    grep "\"key\":{\"user\":\"$u\"}" "$TMP/a1" | grep '"rule":"burst"' > "$TMP/k1"
    grep "\"key\":{\"user\":\"$u\"}" "$TMP/a2" | grep '"rule":"burst"' > "$TMP/k2"
    cmp -s "$TMP/k1" "$TMP/k2" || fail "alerts of key $u out of order with 2 workers"
done
# while the input stays open, released events reach the workers and alerts come out
mkfifo "$TMP/fifo"
"$VIGIL" run --workers 2 -i "$TMP/fifo" "$DATA/bursts.cep" > "$TMP/live" &
pid=$!
exec 3> "$TMP/fifo"
printf '%s\n' '{"ts":1,"type":"login","user":"a"}' '{"ts":2,"type":"tx","user":"a","amount":3}' \
    '{"ts":100,"type":"ping","user":"b"}' >&3
wait_for 'grep -q "a logged in, then tx" "$TMP/live"' || { kill $pid; fail "alert held back by a worker"; }
exec 3>&-
wait $pid || fail "exit status of the streaming run"

# One regular file (-i FILE, or stdin redirected from it) is read by the workers
# themselves; a pipe goes through the input layer. Each way gives one worker's alerts,
# dead letters with their line numbers, and counters: over-long lines, CRLF, a NUL
# byte, bad JSON, empty lines and a last line without a newline among 20,000 events.
awk 'NR == 3001 { printf "{\"pad\":\"%0500d\"}\n", 0 }
     NR == 5000 { printf "{\"ts\":bad}\r\n" }
     NR % 997 == 5 { print "" }
     NR % 13 == 0 { sub(/}$/, "}\r") }
     { print }' "$TMP/ev" > "$TMP/odd"
gen_events 20000 | tail -n 15000 >> "$TMP/odd"
printf '{"ts":1767300000,"type":"tx","user":"u1","amount":1\0}\n' >> "$TMP/odd"
printf '{"ts":1767300001,"type":"tx","user":"u1","amount":200}' >> "$TMP/odd"
counters() { for c in lines events malformed late; do printf '%s=%s ' $c "$(stat_of $c "$1")"; done; }
run_odd() {   # NAME WORKERS HOW: -i, stdin or pipe
    case $3 in
    -i) "$VIGIL" run --stats --max-line 400 --workers $2 --errors "$TMP/e.$1" -i "$TMP/odd" \
            "$DATA/bursts.cep" > "$TMP/a.$1" 2> "$TMP/s.$1" ;;
    stdin) "$VIGIL" run --stats --max-line 400 --workers $2 --errors "$TMP/e.$1" \
            "$DATA/bursts.cep" < "$TMP/odd" > "$TMP/a.$1" 2> "$TMP/s.$1" ;;
    pipe) cat "$TMP/odd" | "$VIGIL" run --stats --max-line 400 --workers $2 \
            --errors "$TMP/e.$1" "$DATA/bursts.cep" > "$TMP/a.$1" 2> "$TMP/s.$1" ;;
    esac || fail "$1: exit status"
}
run_odd one 1 -i
grep -q 'line longer than 400 bytes' "$TMP/e.one" || fail "no over-long line in the odd file"
[ "$(grep -c . "$TMP/e.one")" -ge 8 ] || fail "too few dead letters in the odd file"
grep -q 'single large tx of u1' "$TMP/a.one" || fail "the odd file's alerts"
for w in 2 3; do
    for how in -i stdin pipe; do
        run_odd "w$w$how" $w $how
        same_alerts "$TMP/a.one" "$TMP/a.w$w$how" "$w workers ($how) changed the alerts"
        [ "$(counters "$TMP/s.one")" = "$(counters "$TMP/s.w$w$how")" ] ||
            fail "$w workers ($how): counters $(counters "$TMP/s.w$w$how"), not $(counters "$TMP/s.one")"
    done
    cmp "$TMP/e.one" "$TMP/e.w$w-i" || fail "$w workers (-i): other dead letters"
    cmp "$TMP/e.w2stdin" "$TMP/e.w${w}pipe" || fail "$w workers: stdin and pipe differ"
done
cmp -s "$TMP/e.one" "$TMP/e.w2stdin" && fail "stdin's dead letters should name -"

# A read() that fails while the workers read (stdin a regular file open for writing
# only, so that every read fails) stops the run, naming the input and the error: exit 3.
: > "$TMP/wronly"
"$VIGIL" run --workers 2 "$DATA/bursts.cep" > "$TMP/a.eio" 2> "$TMP/s.eio" 0> "$TMP/wronly"
rc=$?
[ $rc = 3 ] || fail "a failed read: exit $rc, not 3: $(cat "$TMP/s.eio")"
grep -q '^vigil run: input -: read error: ' "$TMP/s.eio" || fail "a failed read: $(cat "$TMP/s.eio")"
grep -q 'stopped on an input error' "$TMP/s.eio" || fail "a failed read: $(cat "$TMP/s.eio")"
# The same with one worker, where the input layer reads: it closes the input, the
# run ends and says that lines were not read: exit 3 too, not a clean end.
"$VIGIL" run "$DATA/bursts.cep" > "$TMP/a.eio1" 2> "$TMP/s.eio1" 0> "$TMP/wronly"
rc=$?
[ $rc = 3 ] || fail "a failed read, one worker: exit $rc, not 3: $(cat "$TMP/s.eio1")"
grep -q '^vigil: input -: read error: ' "$TMP/s.eio1" || fail "one worker: $(cat "$TMP/s.eio1")"
grep -q 'an input closed on an error' "$TMP/s.eio1" || fail "one worker: $(cat "$TMP/s.eio1")"

# Mid-file, while the workers read: SIGHUP reloads (the state kept: the alerts are
# those of a run without it), `vigil ctl stats` answers, SIGTERM stops with every line
# read processed and no pending timeout fired (as one worker stopped after those lines).
gen_events 600000 > "$TMP/big"
size=$(wc -c < "$TMP/big")
rchar() { awk '/^rchar/ { print $2 }' /proc/$1/io; }
[ -r /proc/self/io ] || skip "no /proc/PID/io to see how far vigil read"
"$VIGIL" run "$DATA/bursts.cep" < "$TMP/big" > "$TMP/a.big" || fail "reference run"
"$VIGIL" run --workers 2 --stats -i "$TMP/big" "$DATA/bursts.cep" > "$TMP/a.hup" 2> "$TMP/s.hup" &
pid=$!
wait_for '[ "$(rchar $pid)" -gt 1000000 ]' || { kill $pid; fail "vigil did not read"; }
kill -STOP $pid
[ "$(rchar $pid)" -lt "$size" ] || { kill -9 $pid; fail "read the whole file before SIGHUP"; }
kill -HUP $pid
kill -CONT $pid
wait $pid || fail "exit status after SIGHUP"
grep -q 'reloaded 2 rules' "$TMP/s.hup" || fail "no reload: $(cat "$TMP/s.hup")"
same_alerts "$TMP/a.big" "$TMP/a.hup" "a reload mid-file changed the alerts"
# A reload mid-file to the rules without `time` (processing time): the workers read on
# to the end, stamping the lines after it with the wall clock; login_then_tx, which
# needs no clock, alerts as in the run without a reload (the alerts' times apart), and
# the alerts after the reload carry the wall clock's date, not the events'.
cp "$DATA/bursts.cep" "$TMP/pt.cep"
today=$(date -u +%Y-%m-%d)
"$VIGIL" run --workers 2 --stats -i "$TMP/big" "$TMP/pt.cep" > "$TMP/a.pt" 2> "$TMP/s.pt" &
pid=$!
wait_for '[ "$(rchar $pid)" -gt 1000000 ]' || { kill $pid; fail "vigil did not read"; }
kill -STOP $pid
[ "$(rchar $pid)" -lt "$size" ] || { kill -9 $pid; fail "read the whole file before SIGHUP"; }
sed '/^time /d' "$DATA/bursts.cep" > "$TMP/pt.cep"
kill -HUP $pid
kill -CONT $pid
wait $pid || fail "exit status after a reload to processing time"
grep -q 'reloaded 2 rules' "$TMP/s.pt" || fail "no reload to processing time: $(cat "$TMP/s.pt")"
[ "$(stat_of lines "$TMP/s.pt")" = 600000 ] || fail "not read to the end: $(cat "$TMP/s.pt")"
[ "$(stat_of events "$TMP/s.pt")" = 600000 ] || fail "events after the reload: $(cat "$TMP/s.pt")"
untimed() { grep '"rule":"login_then_tx"' "$1" | sed 's/"time":"[^"]*",//'; }
untimed "$TMP/a.big" > "$TMP/lt.want"
untimed "$TMP/a.pt" > "$TMP/lt.pt"
same_alerts "$TMP/lt.want" "$TMP/lt.pt" "a reload to processing time changed login_then_tx's alerts"
grep -q "\"time\":\"$today\|\"time\":\"$(date -u +%Y-%m-%d)" "$TMP/a.pt" ||
    fail "no alert stamped with the wall clock after the reload"
grep -q '"time":"2026-01-01' "$TMP/a.pt" || fail "no alert on event time before the reload"

# 40 copies of the rules (only the first can alert), so that the run lasts seconds
mkdir "$TMP/rules"
cp "$DATA/bursts.cep" "$TMP/rules/r1.cep"
for i in $(seq 2 40); do
    sed "/^time /d; s/rule burst/rule burst$i/; s/rule login_then_tx/rule lt$i/;
         s/> 150/> 1000000/g; s/\"login\"/\"none\"/" "$DATA/bursts.cep" > "$TMP/rules/r$i.cep"
done
# and one whose partial matches never end, so that some are pending whenever SIGTERM
# comes (the burst rules' few may all have just ended)
echo 'rule hold { key user; begin l where type == "login"; followed_by n where type == "never"; }' \
    > "$TMP/rules/r0.cep"
CTL="$top_builddir/tests/e2e/ctl_client"
sock="$TMP/ctl.sock"
"$VIGIL" run --workers 2 --stats --control "$sock" -i "$TMP/big" "$TMP/rules" \
    > "$TMP/a.term" 2> "$TMP/s.term" &
pid=$!
wait_for '"$CTL" "$sock" stats > "$TMP/ctl" 2> /dev/null && [ "$(stat_of lines "$TMP/ctl")" -gt 0 ]' ||
    { kill $pid; fail "ctl stats: $(cat "$TMP/ctl")"; }
kill -STOP $pid
[ "$(rchar $pid)" -lt "$size" ] || { kill -9 $pid; fail "read the whole file before SIGTERM"; }
[ "$(stat_of lines "$TMP/ctl")" -lt 600000 ] || { kill -9 $pid; fail "ctl stats after the end"; }
[ "$(stat_of events "$TMP/ctl")" = "$(stat_of lines "$TMP/ctl")" ] || fail "ctl stats: $(cat "$TMP/ctl")"
kill -TERM $pid
kill -CONT $pid
wait $pid || fail "exit status after SIGTERM"
grep -q 'partial matches pending' "$TMP/s.term" || fail "pending partial matches not reported"
taken=$(stat_of lines "$TMP/s.term")
[ "$taken" -lt 600000 ] || fail "SIGTERM did not stop mid-file"
head -n "$taken" "$TMP/big" > "$TMP/head"
rm -f "$TMP/fifo"
mkfifo "$TMP/fifo"
"$VIGIL" run -i "$TMP/fifo" "$TMP/rules" > "$TMP/a.want" 2> /dev/null &
pid=$!
exec 3> "$TMP/fifo"
base=$(rchar $pid)
cat "$TMP/head" >&3
wait_for '[ "$(rchar $pid)" -ge $((base + $(wc -c < "$TMP/head"))) ]' || fail "reference did not read"
kill -TERM $pid
wait $pid || fail "reference exit status"
exec 3>&-
same_alerts "$TMP/a.want" "$TMP/a.term" "SIGTERM mid-file: not one worker's stop after those lines"
exit 0

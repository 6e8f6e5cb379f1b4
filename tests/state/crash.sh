#!/bin/sh
# tests/state/crash.sh — exactly-once recovery: the same stream run (a) without
# interruption and (b) killed with SIGKILL at 5 random points, restarted each time
# with the same --state, gives the same alert files: byte for byte with one worker,
# the same multiset of lines with two. 1,000,000 events (300,000 with
# VIGIL_TEST_SMALL, as under the sanitizers). Prints the checkpoint figures.
. "$top_srcdir/tests/state/lib.sh"

N=1000000
[ -n "${VIGIL_TEST_SMALL:-}" ] && N=300000
state_events "$N" > "$TMP/events.jsonl"
state_rules "$TMP/ref" > "$TMP/ref.cep"
state_rules "$TMP/out" > "$TMP/out.cep"

t0=$(now_ms)
"$VIGIL" run "$TMP/ref.cep" -i "$TMP/events.jsonl" -o "$TMP/ref.out" --errors "$TMP/ref.err" \
    2> "$TMP/ref.log" || fail "the uninterrupted run failed: $(cat "$TMP/ref.log")"
t_ref=$(( $(now_ms) - t0 ))
[ -s "$TMP/ref.out" ] && [ -s "$TMP/ref/no_logout.jsonl" ] || fail "no alerts at all"
echo "uninterrupted: $N events in $t_ref ms, $(wc -l < "$TMP/ref.out") alerts on stdout"

# kill points: after each start, once it has written a checkpoint of its own, a
# random 5-20 % of the uninterrupted time later (not less: a kill right after the
# checkpoint finds nothing written since, and five such kills in a row would leave
# the cut-back path untested)
seed=${VIGIL_TEST_SEED:-$(date +%s)}
echo "kill points seed: $seed (VIGIL_TEST_SEED to repeat)"
delays=$(awk -v s="$seed" -v t="$t_ref" 'BEGIN { srand(s);
    for (i = 0; i < 5; i++) printf "%d ", t * (0.05 + 0.15 * rand()) }')

# slots: a fingerprint of the checkpoint files, to notice a new checkpoint
slots() { cat "$TMP/state"/checkpoint.[01] 2>/dev/null | cksum; }

# wait_checkpoint PID BEFORE: until a checkpoint newer than BEFORE exists or PID ends
wait_checkpoint() {
    i=0
    while [ "$(slots)" = "$2" ] && kill -0 "$1" 2>/dev/null && [ $i -lt 3000 ]; do
        i=$((i + 1))
        sleep 0.01
    done
}

# run_crashing WORKERS: five SIGKILLs, then a run to the end
run_crashing() {
    rm -rf "$TMP/state" "$TMP/out" "$TMP/c.out" "$TMP/c.err"
    : > "$TMP/crash.log"
    for d in $delays; do
        before=$(slots)
        "$VIGIL" run "$TMP/out.cep" -i "$TMP/events.jsonl" -o "$TMP/c.out" \
            --errors "$TMP/c.err" --state "$TMP/state" --checkpoint-every 100ms \
            --workers "$1" 2>> "$TMP/crash.log" &
        pid=$!
        wait_checkpoint $pid "$before"
        sleep "$(awk -v d="$d" 'BEGIN { printf "%.3f", d / 1000 }')"
        kill -KILL "$pid" 2>/dev/null
        wait "$pid" 2>/dev/null
        echo "workers $1: killed after $d ms with $(wc -l < "$TMP/c.out" 2>/dev/null || echo 0) alert lines written"
    done
    "$VIGIL" run "$TMP/out.cep" -i "$TMP/events.jsonl" -o "$TMP/c.out" --errors "$TMP/c.err" \
        --state "$TMP/state" --checkpoint-every 100ms --workers "$1" 2>> "$TMP/crash.log" ||
        fail "the final run failed: $(tail -5 "$TMP/crash.log")"
    grep -q "restored checkpoint" "$TMP/crash.log" || fail "no run restored a checkpoint"
    grep -q "cut back" "$TMP/crash.log" || fail "no alert file was cut back"
    grep "restored checkpoint\|state saved" "$TMP/crash.log"
}

run_crashing 1
same_files "$TMP/c.out" "$TMP/ref.out" "-o FILE differs after crashes (1 worker)"
same_files "$TMP/c.err" "$TMP/ref.err" "--errors differs after crashes (1 worker)"
for f in "$TMP"/ref/*.jsonl; do
    same_files "$TMP/out/$(basename "$f")" "$f" "file output $(basename "$f") differs (1 worker)"
done

run_crashing 2
same_alerts "$TMP/c.out" "$TMP/ref.out" "-o FILE differs after crashes (2 workers)"
same_files "$TMP/c.err" "$TMP/ref.err" "--errors differs after crashes (2 workers)"
for f in "$TMP"/ref/*.jsonl; do
    same_alerts "$TMP/out/$(basename "$f")" "$f" "file output $(basename "$f") differs (2 workers)"
done
echo "ok"

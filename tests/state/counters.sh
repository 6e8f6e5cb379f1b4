#!/bin/sh
# tests/state/counters.sh — the rule counters of --stats carry on from a checkpoint,
# keys_refused (new keys refused by --max-memory) included, whatever the worker
# counts. A checkpoint of format version 1 (tests/data/state/v1, written before
# keys_refused was saved) is restored, saying so, with keys_refused 0 and every other
# counter as it was; a format version this vigil does not read stops it (exit 3) with the reason.
. "$top_srcdir/tests/state/lib.sh"
V1="$top_srcdir/tests/data/state/v1"

# rule_counters LOG: the per-rule counters of the --stats line
rule_counters() { grep -o '"rules":{[^}]*}[^}]*}}' "$1" | tail -1; }

awk 'BEGIN { ts = 1767225600000
    for (u = 0; u < 50; u++) {
        printf "{\"ts\":%d,\"type\":\"login\",\"user\":\"u%d\"}\n", ts, u; ts += 5
        printf "{\"ts\":%d,\"type\":\"buy\",\"user\":\"u%d\"}\n", ts, u; ts += 5
        printf "{\"ts\":%d,\"type\":\"buy\",\"user\":\"u%d\"}\n", ts, u; ts += 5
        printf "{\"ts\":%d,\"type\":\"login\",\"user\":\"u%d\"}\n", ts, u; ts += 5
        printf "{\"ts\":%d,\"type\":\"login\"}\n", ts; ts += 5
    }
    for (u = 50; u < 8000; u++) {
        printf "{\"ts\":%d,\"type\":\"login\",\"user\":\"u%d\"}\n", ts, u; ts += 5
    } }' > "$TMP/events.jsonl"

for w in "1 1" "2 1" "1 3"; do
    set -- $w
    rm -rf "$TMP/state"
    "$VIGIL" run --stats --workers "$1" --max-memory 512K --state "$TMP/state" "$V1/rules.cep" \
        < "$TMP/events.jsonl" > /dev/null 2> "$TMP/1.log" || fail "first run: $(cat "$TMP/1.log")"
    before=$(rule_counters "$TMP/1.log")
    refused=$(echo "$before" | grep -o '"keys_refused":[0-9]*' | head -1 | cut -d: -f2)
    [ "${refused:-0}" -gt 0 ] || fail "workers $1: no key refused: $before"
    "$VIGIL" run --stats --workers "$2" --state "$TMP/state" "$V1/rules.cep" < /dev/null \
        > /dev/null 2> "$TMP/2.log" || fail "restored run: $(cat "$TMP/2.log")"
    grep -q "restored checkpoint 1" "$TMP/2.log" || fail "nothing restored: $(cat "$TMP/2.log")"
    ! grep -q "format version" "$TMP/2.log" || fail "the current format named: $(cat "$TMP/2.log")"
    after=$(rule_counters "$TMP/2.log")
    [ "$after" = "$before" ] ||
        fail "workers $1 then $2: counters before the restart $before, after it $after"
done

# version 1: keys_refused starts at 0, nothing else changes
rm -rf "$TMP/state" && mkdir "$TMP/state" && cp "$V1/checkpoint.1" "$TMP/state/"
"$VIGIL" run --stats --state "$TMP/state" "$V1/rules.cep" < /dev/null > /dev/null \
    2> "$TMP/v1.log" || fail "a version-1 checkpoint is not restored: $(cat "$TMP/v1.log")"
want='"rules":{"pair":{"matches":50,"timeouts":4778,"alerts":4828,"suppressed":0,"missing_key":50,"keys_live":0,"partials_live":0,"partials_dropped":0,"partials_refused":0,"cap_hits":0,"keys_refused":0},"again":{"matches":100,"timeouts":0,"alerts":50,"suppressed":50,"missing_key":50,"keys_live":0,"partials_live":0,"partials_dropped":0,"partials_refused":0,"cap_hits":0,"keys_refused":0}}'
got=$(rule_counters "$TMP/v1.log")
[ "$got" = "$want" ] || fail "version 1 restored as $got"
grep -q "restored checkpoint 1 (.*, format version 1)" "$TMP/v1.log" ||
    fail "the restore does not name the older format: $(cat "$TMP/v1.log")"
grep -q '"lines":8200,"events":8200' "$TMP/v1.log" || fail "engine counters: $(cat "$TMP/v1.log")"

# any other version: refused, with the reason
rm -rf "$TMP/state" && mkdir "$TMP/state" && cp "$V1/checkpoint.1" "$TMP/state/"
printf '\003' | dd of="$TMP/state/checkpoint.1" bs=1 seek=8 conv=notrunc 2>/dev/null
st=0
"$VIGIL" run --state "$TMP/state" "$V1/rules.cep" < /dev/null > /dev/null 2> "$TMP/v3.log" || st=$?
[ $st -eq 3 ] || fail "a version-3 checkpoint: exit $st: $(cat "$TMP/v3.log")"
grep -q "checkpoint.1 is unusable (format version 3, but this vigil reads version 2)" \
    "$TMP/v3.log" || fail "no reason given: $(cat "$TMP/v3.log")"
echo "ok"

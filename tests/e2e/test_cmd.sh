#!/bin/sh
# `vigil test` reports failing cases with a diff, counts, and exits 1; subset and
# multiset semantics; the events of an expected alert must name the same steps.
. "$top_srcdir/tests/e2e/lib.sh"
mkdir -p "$TMP/t/cases"
cat > "$TMP/t/r.cep" <<'R'
time ts;
rule two { key k; begin a where v == 1; followed_by b where v == 2; on match alert "m {k}"; }
R
printf '%s\n' '{"ts":1,"k":"x","v":1}' '{"ts":2,"k":"y","v":1}' '{"ts":3,"k":"y","v":2}' \
    '{"ts":4,"k":"x","v":2}' > "$TMP/t/cases/good.events.jsonl"
# order-insensitive, subset fields
printf '%s\n' '{"rule":"two","key":{"k":"x"},"events":{"a":[{"ts":1}],"b":[{"ts":4}]}}' \
    '{"message":"m y"}' > "$TMP/t/cases/good.expect.jsonl"
cp "$TMP/t/cases/good.events.jsonl" "$TMP/t/cases/bad.events.jsonl"
# one wrong expectation, one missing: a - line and a + line
printf '%s\n' '{"message":"m y"}' '{"message":"m z"}' > "$TMP/t/cases/bad.expect.jsonl"
cp "$TMP/t/cases/good.events.jsonl" "$TMP/t/cases/steps.events.jsonl"
# `events` naming only some steps does not pass
printf '%s\n' '{"message":"m y","events":{"a":[{"ts":2}]}}' '{"message":"m x"}' \
    > "$TMP/t/cases/steps.expect.jsonl"
status=0
"$VIGIL" test "$TMP/t" > "$TMP/out" 2>&1 || status=$?
cat "$TMP/out"
[ $status -eq 1 ] || fail "exit status $status, want 1"
grep -q '^ok   .*/cases/good' "$TMP/out" || fail "good case did not pass"
grep -q '^FAIL .*/cases/bad' "$TMP/out" || fail "bad case did not fail"
grep -q 'missing .*bad.expect.jsonl:2: {"message":"m z"}' "$TMP/out" || fail "no missing line"
grep -q '+ unexpected {.*"m x"' "$TMP/out" || fail "no unexpected line"
grep -q '^FAIL .*/cases/steps' "$TMP/out" || fail "steps case did not fail"
tail -n 1 "$TMP/out" | grep -qx '1 passed, 2 failed' || fail "closing line"
rm "$TMP/t/cases/bad."* "$TMP/t/cases/steps."*
"$VIGIL" test "$TMP/t" > "$TMP/out" 2>&1 || fail "good-only run failed"
"$VIGIL" test > /dev/null 2>&1 && fail "no arguments accepted"
status=0; "$VIGIL" test > /dev/null 2>&1 || status=$?
[ $status -eq 2 ] || fail "usage exit status $status, want 2"
exit 0

#!/bin/sh
# `vigil test` passes over every example folder.
. "$top_srcdir/tests/e2e/lib.sh"
n=0
for dir in "$top_srcdir"/examples/*/; do
    [ -d "$dir/cases" ] || continue
    n=$((n + 1))
    "$VIGIL" test "$dir" > "$TMP/out" 2>&1 || { cat "$TMP/out" >&2; fail "vigil test $dir"; }
done
[ $n -gt 0 ] || skip "no examples with cases"
echo "examples: $n folders passed"

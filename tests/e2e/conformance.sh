#!/bin/sh
# `vigil test` passes over every shared conformance folder.
. "$top_srcdir/tests/e2e/lib.sh"
[ -n "${VIGIL_SHARED:-}" ] && [ -d "$VIGIL_SHARED/conformance" ] ||
    skip "VIGIL_SHARED/conformance not found"
n=0
for dir in "$VIGIL_SHARED"/conformance/*/; do
    n=$((n + 1))
    "$VIGIL" test "$dir" > "$TMP/out" 2>&1 || { cat "$TMP/out" >&2; fail "vigil test $dir"; }
    grep -q '^[1-9][0-9]* passed, 0 failed$' "$TMP/out" || { cat "$TMP/out" >&2; fail "summary of $dir"; }
done
[ $n -gt 0 ] || skip "no conformance folders"
echo "conformance: $n folders passed"

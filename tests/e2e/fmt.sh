#!/bin/sh
# `vigil fmt` on folders: a folder stands for its *.cep files in name order, as for
# `vigil run`; --check lists exactly the files that are not canonical, -w fixes them
# and leaves everything else alone.
. "$top_srcdir/tests/e2e/lib.sh"
code() { status=0; "$@" > "$TMP/out" 2> "$TMP/err" < /dev/null || status=$?; echo $status; }
mkdir "$TMP/rules" "$TMP/empty"
printf 'rule b_ok {\n  begin a;\n  on match alert "b";\n}\n' > "$TMP/rules/b.cep"
printf 'rule a_messy { begin a ;   on match alert "a" ; }\n' > "$TMP/rules/a.cep"
echo 'not a rule file {' > "$TMP/rules/notes.txt"
cp "$TMP/rules/notes.txt" "$TMP/notes.orig"

[ "$(code "$VIGIL" fmt --check "$TMP/rules")" -eq 1 ] || fail "--check on a folder with a messy file"
[ "$(cat "$TMP/out")" = "$TMP/rules/a.cep" ] || fail "--check listed: $(cat "$TMP/out")"

[ "$(code "$VIGIL" fmt "$TMP/rules/")" -eq 0 ] || fail "printing a folder: $(cat "$TMP/err")"
grep -n '^rule' "$TMP/out" > "$TMP/order"
[ "$(cut -d: -f2 "$TMP/order" | tr '\n' ' ')" = "rule a_messy { rule b_ok { " ] ||
    fail "folder files not printed in name order: $(cat "$TMP/order")"

[ "$(code "$VIGIL" fmt -w "$TMP/rules")" -eq 0 ] || fail "-w on a folder: $(cat "$TMP/err")"
[ "$(code "$VIGIL" fmt --check "$TMP/rules")" -eq 0 ] || fail "still not canonical after -w"
cmp -s "$TMP/rules/notes.txt" "$TMP/notes.orig" || fail "-w touched a file that is not *.cep"

[ "$(code "$VIGIL" fmt --check "$TMP/empty")" -eq 1 ] || fail "a folder without rule files"
grep -q 'no .cep files' "$TMP/err" || fail "no message for an empty folder: $(cat "$TMP/err")"
[ "$(code "$VIGIL" fmt --check "$TMP/missing" "$TMP/rules")" -eq 1 ] || fail "a missing path"
grep -q "$TMP/missing: error: cannot read" "$TMP/err" || fail "missing path message: $(cat "$TMP/err")"

# The rule files we ship are the first ones users copy: they stay canonical.
for d in "$top_srcdir"/examples/*/ "$top_srcdir"/bench/; do
    [ "$(code "$VIGIL" fmt --check "$d")" -eq 0 ] || fail "not canonical: $(cat "$TMP/out")"
done
exit 0

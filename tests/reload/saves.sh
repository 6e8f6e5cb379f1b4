#!/bin/sh
# --watch and editor-style saves: a save by temp file + rename gives exactly one
# reload; several writes within 200 ms (the settle time) coalesce into one reload;
# files that are not rule files (an editor's swap file) give none. "Exactly one" is
# counted after waiting five settle times past the reload.
. "$top_srcdir/tests/e2e/lib.sh"
mkdir -p "$TMP/rules"
rule() {   # rule THRESHOLD: the text of the watched rule
    printf 'rule big {\n  key user;\n  begin a where amount > %s;\n  on match alert "big {user}";\n}\n' "$1"
}
save() {   # as vim or VS Code save: write a temp file, then rename it over the rule
    rule "$1" > "$TMP/rules/.big.cep.swp" && mv "$TMP/rules/.big.cep.swp" "$TMP/rules/big.cep"
}
reloads() { grep -c '^vigil run: reloaded' "$TMP/err"; }
# settled N: waits until N reloads were logged, then five settle times, and checks
# that there are still exactly N
settled() {
    want_n=$1   # wait_for evals its text with its own arguments
    wait_for '[ "$(reloads)" -ge $want_n ]' || fail "$2: no reload (want $1)"
    sleep 1
    [ "$(reloads)" -eq "$1" ] || { cat "$TMP/err" >&2; fail "$2: $(reloads) reloads, want $1"; }
}
fingerprint() {
    "$VIGIL" ctl "$TMP/ctl.sock" rules | sed 's/.*"fingerprint":"\([0-9a-f]*\)".*/\1/'
}

save 100
mkfifo "$TMP/fifo"
"$VIGIL" run --watch --control "$TMP/ctl.sock" -i "$TMP/fifo" -o "$TMP/alerts" "$TMP/rules" \
    2> "$TMP/err" &
pid=$!
exec 3> "$TMP/fifo"
trap 'kill $pid 2> /dev/null; rm -rf "$TMP"' EXIT
fp0=$(fingerprint)
[ -n "$fp0" ] || fail "no fingerprint from vigil ctl rules"

# one save by rename: one reload, and the new pattern runs
save 200
settled 1 "save by rename"
grep -q 'reloaded 1 rules: 1 changed, 0 added, 0 removed, 0 kept state' "$TMP/err" ||
    fail "the save was not seen as a change: $(cat "$TMP/err")"
fp1=$(fingerprint)
[ "$fp1" != "$fp0" ] || fail "the fingerprint did not change"
echo '{"user":"a","amount":150}' >&3
echo '{"user":"a","amount":250}' >&3
wait_for 'grep -q "big a" "$TMP/alerts"' || fail "the new rules do not run"
[ "$(grep -c 'big a' "$TMP/alerts")" -eq 1 ] || fail "the old threshold still matched"

# four saves in quick succession (well within 200 ms): one reload
for t in 300 310 320 330; do save $t; done
settled 2 "four quick saves"

# in-place writes in pieces (truncate, then append), a few ms apart: one reload
rule 400 | head -2 > "$TMP/rules/big.cep"
sleep 0.02
rule 400 | sed -n 3p >> "$TMP/rules/big.cep"
sleep 0.02
rule 400 | tail -2 >> "$TMP/rules/big.cep"
settled 3 "a file written in three pieces"
"$VIGIL" ctl "$TMP/ctl.sock" rules > "$TMP/rules.json" || fail "ctl rules"
[ "$(fingerprint)" != "$fp1" ] || fail "the last write was not compiled"

# an editor's swap file and other non-rule files: no reload
echo 'scratch' > "$TMP/rules/.big.cep.swp"
echo 'notes' > "$TMP/rules/README"
rm "$TMP/rules/.big.cep.swp"
sleep 1
[ "$(reloads)" -eq 3 ] || fail "a non-rule file caused a reload"

exec 3>&-
wait $pid || fail "vigil run exit status"
trap 'rm -rf "$TMP"' EXIT
[ "$(grep -c 'reload failed' "$TMP/err")" -eq 0 ] || fail "a save was compiled half-way"
exit 0

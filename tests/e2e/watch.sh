#!/bin/sh
# --watch reloads when a rule file changes, including a save by rename; a broken save
# keeps the old rules until a good one follows.
. "$top_srcdir/tests/e2e/lib.sh"
mkdir -p "$TMP/rules"
save() { printf '%s\n' "$1" > "$TMP/rules/.r.tmp" && mv "$TMP/rules/.r.tmp" "$TMP/rules/r.cep"; }
save 'rule ping { key user; begin p where type == "ping"; on match alert "v1 {user}"; }'
mkfifo "$TMP/fifo"
"$VIGIL" run --watch -i "$TMP/fifo" "$TMP/rules" > "$TMP/a" 2> "$TMP/err" &
pid=$!
exec 3> "$TMP/fifo"
echo '{"type":"ping","user":"a"}' >&3
wait_for 'grep -q "v1 a" "$TMP/a"' || { kill $pid; fail "no alert before the change"; }
save 'rule ping { key user; begin p where type == "ping" on match alert "v2 {user}"; }'
wait_for 'grep -q "reload failed" "$TMP/err"' || { kill $pid; fail "a broken save was not reported"; }
save 'rule ping { key user; begin p where type == "ping"; on match alert "v2 {user}"; }'
wait_for 'grep -q "reloaded 1 rules: 0 changed, 0 added, 0 removed, 1 kept state" "$TMP/err"' ||
    { cat "$TMP/err" >&2; kill $pid; fail "no reload after a save by rename"; }
echo '{"type":"ping","user":"b"}' >&3
wait_for 'grep -q "v2 b" "$TMP/a"' || { kill $pid; fail "the new rules do not run"; }
exec 3>&-
wait $pid || fail "exit status"
[ "$(grep -c '"rule":"ping"' "$TMP/a")" -eq 2 ] || fail "want two alerts"
exit 0

#!/bin/sh
# `vigil ctl SOCKET stats|rules|reload`: the replies and the exit status of each, a
# broken rule file (diagnostics on stderr, exit 1, the old rules keep running), and
# the errors: unreachable socket or not a socket (exit 3), usage (exit 2), --help.
. "$top_srcdir/tests/e2e/lib.sh"
RDATA="$top_srcdir/tests/reload/data"
mkdir -p "$TMP/rules"
cat > "$TMP/rules/pair.cep" <<'R'
time ts;
rule pair {
  key user;
  begin a where type == "start";
  followed_by b where type == "end";
  within 1h;
  on match alert "pair {user}";
}
R
mkfifo "$TMP/fifo"
sock="$TMP/ctl.sock"
ctl() { "$VIGIL" ctl "$sock" "$@" > "$TMP/out" 2> "$TMP/err"; }
# the unix input stands for a server that takes the command and never answers
"$VIGIL" run --workers 2 --control "$sock" -i "$TMP/fifo" -i "unix:$TMP/in.sock" \
    -o "$TMP/alerts" "$TMP/rules" 2> "$TMP/run.err" &
pid=$!
exec 3> "$TMP/fifo"   # returns once vigil opened its input: the socket is listening
trap 'kill $pid 2> /dev/null; rm -rf "$TMP"' EXIT
echo '{"ts":1767225600,"type":"start","user":"u1"}' >&3
echo '{"ts":1767225601,"type":"start","user":"u2"}' >&3

# stats: the --stats summary, uptime and per-output health; exit 0
wait_for 'ctl stats && grep -q "\"events\":2," "$TMP/out"' || fail "stats: $(cat "$TMP/out" "$TMP/err")"
for field in '"engine":{"lines":2,' '"rules":{"pair":{' '"outputs":{"stdout":{"kind":"stdout",' \
        '"healthy":true,"state":"ok"' '"reloads":0,"reload_failures":0' '"peak_rss_kb":' \
        "\"pid\":$pid}" '"uptime_s":'; do
    grep -qF "$field" "$TMP/out" || fail "stats reply lacks $field: $(cat "$TMP/out")"
done
[ "$(wc -l < "$TMP/out")" -eq 1 ] || fail "stats: want one line"

# rules: file:line, fingerprint, key, live keys and partial matches
ctl rules || fail "rules: exit $?"
grep -q "^{\"rules\":\[{\"name\":\"pair\",\"fingerprint\":\"[0-9a-f]\{16\}\",\"file\":\"$TMP/rules/pair.cep\",\"line\":2,\"key\":\[\"user\"\],\"on_match\":1,\"on_timeout\":0,\"keys_live\":2,\"partials_live\":2}\],\"event_time\":true,\"reloads\":0}$" "$TMP/out" ||
    fail "rules reply: $(cat "$TMP/out")"
fp1=$(sed 's/.*"fingerprint":"\([0-9a-f]*\)".*/\1/' "$TMP/out")

# reload, nothing changed: state kept, exit 0
ctl reload || fail "reload: exit $?"
grep -qx '{"ok":true,"message":"reloaded 1 rules: 0 changed, 0 added, 0 removed, 1 kept state"}' \
    "$TMP/out" || fail "reload reply: $(cat "$TMP/out")"

# a broken file: exit 1, the diagnostics with file:line:col on stderr and in the reply
cp "$RDATA/broken.cep" "$TMP/rules/broken.cep"
ctl reload
rc=$?
[ $rc -eq 1 ] || fail "a failed reload exits $rc, want 1"
grep -q '^{"ok":false,"message":"reload failed (rule errors); the previous rules keep running","diagnostics":".*broken.cep:4:25: error: ' \
    "$TMP/out" || fail "failed reload reply: $(cat "$TMP/out")"
grep -q "^$TMP/rules/broken.cep:4:25: error: syntax error" "$TMP/err" ||
    fail "no diagnostics on stderr: $(cat "$TMP/err")"
grep -q '^  begin a where amount >;$' "$TMP/err" || fail "the source line is not quoted"
grep -q '^vigil ctl: reload failed (rule errors)' "$TMP/err" || fail "no failure message"

# the old rules keep running with their state: u1's partial match completes
ctl rules || fail "rules after a failed reload: exit $?"
grep -q "\"fingerprint\":\"$fp1\".*\"partials_live\":2}" "$TMP/out" ||
    fail "rules after a failed reload: $(cat "$TMP/out")"
echo '{"ts":1767225602,"type":"end","user":"u1"}' >&3
wait_for 'grep -q "pair u1" "$TMP/alerts"' || fail "the old rules stopped matching"

# a changed pattern gets a new fingerprint and starts empty
rm "$TMP/rules/broken.cep"
sed 's/within 1h/within 2h/' "$TMP/rules/pair.cep" > "$TMP/rules/.tmp" && mv "$TMP/rules/.tmp" "$TMP/rules/pair.cep"
ctl reload || fail "reload after the fix: exit $?"
grep -q '"ok":true,"message":"reloaded 1 rules: 1 changed, 0 added, 0 removed, 0 kept state"' \
    "$TMP/out" || fail "reload of a changed rule: $(cat "$TMP/out")"
ctl rules || fail "rules: exit $?"
grep -q "\"fingerprint\":\"$fp1\"" "$TMP/out" && fail "the fingerprint did not change"
grep -q '"keys_live":0,"partials_live":0}.*"reloads":2}$' "$TMP/out" ||
    fail "a changed rule kept state: $(cat "$TMP/out")"
ctl stats || fail "stats: exit $?"
grep -q '"reloads":2,"reload_failures":1' "$TMP/out" || fail "reload counters: $(cat "$TMP/out")"

# errors: nothing listening, not a socket, usage
"$VIGIL" ctl "$TMP/nosuch.sock" stats > "$TMP/out" 2> "$TMP/err"
[ $? -eq 3 ] || fail "a missing socket should exit 3"
grep -q "cannot reach $TMP/nosuch.sock" "$TMP/err" || fail "message: $(cat "$TMP/err")"
[ -s "$TMP/out" ] && fail "output for a missing socket"
"$VIGIL" ctl "$TMP/rules/pair.cep" stats > /dev/null 2>&1
[ $? -eq 3 ] || fail "a regular file should exit 3"
"$VIGIL" ctl "$sock" > /dev/null 2> "$TMP/err"
[ $? -eq 2 ] || fail "no command should exit 2"
"$VIGIL" ctl "$sock" restart > /dev/null 2> "$TMP/err"
[ $? -eq 2 ] || fail "an unknown command should exit 2"
grep -q "unknown command 'restart'" "$TMP/err" || fail "unknown command message"
"$VIGIL" ctl --timeout 0 "$sock" stats > /dev/null 2>&1
[ $? -eq 2 ] || fail "a bad --timeout should exit 2"
"$VIGIL" ctl --help | grep -q '^usage: vigil ctl' || fail "--help"
"$VIGIL" ctl --timeout 1 "$TMP/in.sock" stats > "$TMP/out" 2> "$TMP/err"
[ $? -eq 3 ] || fail "a server that never answers should exit 3"
grep -q "no reply from $TMP/in.sock: timed out" "$TMP/err" || fail "timeout message: $(cat "$TMP/err")"
"$VIGIL" ctl --timeout 5 "$sock" stats > /dev/null || fail "--timeout 5"

exec 3>&-
kill -TERM $pid   # the unix listener never ends by itself
wait $pid || fail "vigil run exit status"
trap 'rm -rf "$TMP"' EXIT
exit 0

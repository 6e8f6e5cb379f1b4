#!/bin/sh
# Rule files an operator may hand vigil on a bad day, through the built binary:
# a FIFO among a folder's files, a device, a huge one-line file full of errors,
# a file saved with a byte order mark, a symlinked file rewritten by fmt -w.
. "$top_srcdir/tests/hostile/lib.sh"
code() { st=0; "$@" > "$TMP/out" 2> "$TMP/err" < /dev/null || st=$?; echo $st; }

# a FIFO in a rules folder is refused without being opened (it blocked for good)
mkdir "$TMP/rules"
echo 'rule a { begin s; }' > "$TMP/rules/a.cep"
mkfifo "$TMP/rules/pipe.cep"
[ "$(code timeout 20 "$VIGIL" check "$TMP/rules")" -eq 1 ] || fail "folder with a FIFO: $(cat "$TMP/err")"
grep -q "pipe.cep: error: not a regular file" "$TMP/err" || fail "FIFO: $(cat "$TMP/err")"
rm "$TMP/rules/pipe.cep"

# a device is not read until memory runs out
if [ -r /dev/zero ]; then
    [ "$(code timeout 60 "$VIGIL" check /dev/zero)" -eq 1 ] || fail "/dev/zero: $(cat "$TMP/err")"
    grep -q "larger than 64 MiB" "$TMP/err" || fail "/dev/zero: $(cat "$TMP/err")"
fi

# 1 MB on one line with an error every 34 bytes: 20 errors shown, each quoting 200
# bytes around its column, not the whole line twice
awk 'BEGIN { printf "rule a { begin s; }"; for (i = 0; i < 30000; i++) printf " rule b%d { begin s where y >>> 1; }", i; print "" }' > "$TMP/long.cep"
[ "$(code "$VIGIL" check "$TMP/long.cep")" -eq 1 ] || fail "long line: not an error"
[ "$(grep -c ': error: ' "$TMP/err")" -eq 20 ] || fail "long line: want 20 errors shown"
grep -q "too many errors" "$TMP/err" || fail "long line: no summary of the errors not shown"
[ "$(wc -c < "$TMP/err")" -lt 20000 ] || fail "long line: $(wc -c < "$TMP/err") bytes of diagnostics"

# a byte order mark, as Windows editors save it
printf '\357\273\277rule a { begin s; }\n' > "$TMP/bom.cep"
[ "$(code "$VIGIL" check "$TMP/bom.cep")" -eq 0 ] || fail "byte order mark: $(cat "$TMP/err")"

# fmt -w on a symlink rewrites its target and leaves the link a link
mkdir "$TMP/real"
printf 'rule  a {begin s;}\n' > "$TMP/real/x.cep"
ln -s real/x.cep "$TMP/link.cep"
[ "$(code "$VIGIL" fmt -w "$TMP/link.cep")" -eq 0 ] || fail "fmt -w link: $(cat "$TMP/err")"
[ -L "$TMP/link.cep" ] || fail "fmt -w replaced the symlink with a file"
[ "$(code "$VIGIL" fmt --check "$TMP/real/x.cep")" -eq 0 ] || fail "fmt -w left the target unformatted"
echo "rule_files: FIFO, device, long line, byte order mark, symlink"

#!/bin/sh
# vigil run --watch on a rules folder that a deploy swaps out: first by pointing the
# symlink the folder is reached through at a new release, then by renaming a new
# folder into place. Each time the new rules are loaded (a watch on the old folder
# would have gone silent for good).
. "$top_srcdir/tests/hostile/lib.sh"
release() {   # release NAME VERSION: a rules folder whose alerts say VERSION
    mkdir "$TMP/$1"
    echo "rule a { key u; begin s; on match alert \"$2 {u}\"; }" > "$TMP/$1/a.cep"
}
release r1 v1
ln -s r1 "$TMP/rules"
mkfifo "$TMP/fifo"
"$VIGIL" run --watch -i "$TMP/fifo" "$TMP/rules" > "$TMP/out" 2> "$TMP/err" &
pid=$!
exec 3> "$TMP/fifo"
echo '{"u":"a"}' >&3
wait_for 'grep -q "v1 a" "$TMP/out"' || { kill -TERM $pid; fail "no first alert"; }
# symlink swap, as deploy tools do it (a new link renamed over the old one)
release r2 v2
ln -s r2 "$TMP/rules.new"
mv -T "$TMP/rules.new" "$TMP/rules"
wait_for '[ "$(grep -c "^vigil run: reloaded" "$TMP/err")" -ge 1 ]' ||
    { kill -TERM $pid; cat "$TMP/err" >&2; fail "symlink swap not noticed"; }
echo '{"u":"b"}' >&3
wait_for 'grep -q "v2 b" "$TMP/out"' || { kill -TERM $pid; cat "$TMP/out" >&2; fail "old rules after the swap"; }
# a new folder renamed into place of the old one
release r3 v3
rm "$TMP/rules"
mv "$TMP/r3" "$TMP/rules"
wait_for '[ "$(grep -c "^vigil run: reloaded" "$TMP/err")" -ge 2 ]' ||
    { kill -TERM $pid; cat "$TMP/err" >&2; fail "replaced folder not noticed"; }
echo '{"u":"c"}' >&3
wait_for 'grep -q "v3 c" "$TMP/out"' || { kill -TERM $pid; cat "$TMP/out" >&2; fail "old rules after the replacement"; }
exec 3>&-
wait $pid || { cat "$TMP/err" >&2; fail "vigil run failed"; }
echo "watch_swap: a swapped symlink and a replaced folder both reload"

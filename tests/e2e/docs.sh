#!/bin/sh
# The documentation as tests: what README.md and docs/*.md show vigil printing must
# be what it prints, so that a change in behaviour fails here instead of leaving the
# docs wrong.
#
# - Every fenced block whose first line starts with `$ ` is a session: each `$ ` line
#   is a command (with the lines of a `<<'EOF'` here-document, if it ends with one),
#   and the lines up to the next command are its output, stdout and stderr together.
#   An expected line `...` stands for any number of lines, and `...` inside a line
#   for any text. The commands of a block run in order through sh, in a fresh folder
#   holding a copy of examples/, with the vigil under test first in PATH.
# - The README's opening rule compiles and is in canonical form; its command table
#   gives each command's usage line as `vigil CMD --help` prints it.
# - The replies and log lines docs/run.md and the README quote from a running
#   `vigil run --control` (reload, unknown command) and the keys of its --stats object
#   are those vigil gives.
# - docs/json-conformance.md's table of the implementation-defined JSONTestSuite cases
#   is what tests/test_decode logs, and its file counts are the suite's (when
#   VIGIL_SHARED has the suite).
. "$top_srcdir/tests/e2e/lib.sh"
CTL="$top_builddir/tests/e2e/ctl_client"
[ -x "$CTL" ] || fail "no $CTL"
DOCS="README.md $(cd "$top_srcdir" && ls docs/*.md)"
mkdir "$TMP/bin" "$TMP/blocks"
ln -s "$(cd "$(dirname "$VIGIL")" && pwd)/vigil" "$TMP/bin/vigil"
failures=0

# not_ok WHERE WHAT: records a failure and goes on, so one run lists every stale place.
not_ok() {
    echo "FAIL: $1: $2" >&2
    failures=$((failures + 1))
}

# matches WANT_FILE GOT_FILE: whether the output fits the expected lines (see above).
matches() {
    awk -v want="$1" -v got="$2" '
    function fits(p, t,   n, parts, i, pos, k, tail) {
        if (index(p, "...") == 0)
            return p == t
        n = split(p, parts, /\.\.\./)
        if (substr(t, 1, length(parts[1])) != parts[1])
            return 0
        pos = length(parts[1]) + 1
        for (i = 2; i < n; i++) {
            k = index(substr(t, pos), parts[i])
            if (k == 0)
                return 0
            pos += k - 1 + length(parts[i])
        }
        tail = length(t) - length(parts[n]) + 1
        return tail >= pos && substr(t, tail) == parts[n]
    }
    BEGIN {
        while ((getline line < want) > 0) W[++m] = line
        while ((getline line < got) > 0) G[++n] = line
        # ok[i, j]: want lines i.. fit got lines j..
        ok[m + 1, n + 1] = 1
        for (j = 1; j <= n; j++) ok[m + 1, j] = 0
        for (i = m; i >= 1; i--)
            for (j = n + 1; j >= 1; j--)
                if (W[i] == "...")
                    ok[i, j] = ok[i + 1, j] || (j <= n && ok[i, j + 1])
                else
                    ok[i, j] = j <= n && ok[i + 1, j + 1] && fits(W[i], G[j])
        exit ok[1, 1] ? 0 : 1
    }'
}

# ---- sessions: blocks of `$ ` commands and their output -----------------------

# Splits the sessions of every doc into $TMP/blocks/DD.LLLLL.CCC.{cmd,want,where}:
# doc, line of the block, command.
d=0
for doc in $DOCS; do
    d=$((d + 1))
    awk -v out="$TMP/blocks" -v doc="$doc" -v d=$d '
    function start_command(   term) {
        c++
        stem = sprintf("%s/%02d.%05d.%03d", out, d, b, c)
        print substr($0, 3) > (stem ".cmd")
        printf "" > (stem ".want")
        print doc ":" NR > (stem ".where")
        heredoc = ""
        if ($0 ~ /<<-?[ \t]*["\047]?[A-Za-z_]+["\047]?[ \t]*$/) {
            term = $0
            sub(/.*<<-?[ \t]*/, "", term)
            gsub(/["\047 \t]/, "", term)
            heredoc = term
        }
    }
    /^```/ { if (inside) { inside = 0; session = 0 } else { inside = 1; first = 1 }; next }
    !inside { next }
    first { first = 0; session = /^\$ /; if (session) { b = NR; c = 0 } }
    !session { next }
    heredoc != "" { print >> (stem ".cmd"); if ($0 == heredoc) heredoc = ""; next }
    /^\$ / { start_command(); next }
    { print >> (stem ".want") }
    ' "$top_srcdir/$doc" || fail "cannot read $doc"
done
sessions=0
last_block=
for cmd in "$TMP"/blocks/*.cmd; do
    [ -e "$cmd" ] || break
    stem=${cmd%.cmd}
    block=${stem%.*}
    if [ "$block" != "$last_block" ]; then   # each session starts afresh
        last_block=$block
        sessions=$((sessions + 1))
        rm -rf "$TMP/run"
        mkdir "$TMP/run"
        cp -R "$top_srcdir/examples" "$TMP/run/examples"
        chmod -R u+w "$TMP/run"   # distcheck's sources are read-only
    fi
    (cd "$TMP/run" && PATH="$TMP/bin:$PATH" sh -c "$(cat "$cmd")") > "$stem.got" 2>&1 < /dev/null
    if ! matches "$stem.want" "$stem.got"; then
        not_ok "$(cat "$stem.where")" "\$ $(head -1 "$cmd")
--- shown in the doc
$(cat "$stem.want")
--- printed
$(cat "$stem.got")"
    fi
done
[ $sessions -ge 5 ] || not_ok docs "only $sessions sessions found"

# ---- the README's rule and command table ---------------------------------------

readme="$top_srcdir/README.md"
awk '/^```/ { n++; next } n == 1' "$readme" > "$TMP/opening.cep"
"$VIGIL" check "$TMP/opening.cep" > "$TMP/out" 2>&1 || not_ok README.md "the opening rule: $(cat "$TMP/out")"
"$VIGIL" fmt --check "$TMP/opening.cep" > /dev/null 2>&1 ||
    not_ok README.md "the opening rule is not in canonical form (vigil fmt)"
awk '/^## Using it/ { on = 1 } on && /^```/ { n++; next } on && n == 1' "$readme" |
    grep '^vigil ' | sed 's/  .*//' > "$TMP/table"
[ "$(wc -l < "$TMP/table")" -eq 6 ] || not_ok README.md "the command table has $(wc -l < "$TMP/table") commands"
while read -r synopsis; do
    cmd=$(echo "$synopsis" | cut -d' ' -f2)
    usage=$("$VIGIL" "$cmd" --help | head -1 | sed 's/^usage: //')
    [ "$synopsis" = "$usage" ] || not_ok README.md "'$synopsis' but vigil $cmd --help says '$usage'"
done < "$TMP/table"

# ---- what a running vigil says -------------------------------------------------

run_md="$top_srcdir/docs/run.md"
# quoted DOC TEXT: the backquoted text in DOC that starts with TEXT (first one)
quoted() { tr '\n' ' ' < "$1" | grep -o "\`$2[^\`]*\`" | head -1 | tr -d '\`' | sed 's/  */ /g'; }
# keys_of: the member names of the JSON (or JSON-like) text on stdin, one a line
keys_of() { grep -o '"[a-z_]*":' | tr -d '":'; }
# keys_in_order WHAT DOC_KEYS VIGIL_KEYS: the names the doc shows appear in vigil's
# output in that order (vigil's may have more between them; give it one rule's
# object, since the next rule's would let names out of order pass)
keys_in_order() {
    awk 'NR == FNR { want[++m] = $0; next } i < m && $0 == want[i + 1] { i++ }
         END { if (i < m) { print want[i + 1]; exit 1 } }' "$2" "$3" > "$TMP/missing" ||
        not_ok docs/run.md "$1: \"$(cat "$TMP/missing")\" is not where the doc shows it (vigil: $(tr '\n' ' ' < "$3"))"
    [ "$(wc -l < "$2")" -gt 5 ] || not_ok docs/run.md "$1: the doc names only $(wc -l < "$2") keys"
}

mkdir "$TMP/ctl"
cp "$top_srcdir/examples/fraud/fraud.cep" "$TMP/ctl/"
mkfifo "$TMP/fifo"
sock="$TMP/ctl.sock"
"$VIGIL" run --control "$sock" -i "$TMP/fifo" "$TMP/ctl" > /dev/null 2> "$TMP/log" &
pid=$!
exec 3> "$TMP/fifo"   # returns once vigil opened its input: the socket is listening
wait_for '[ -S "$sock" ]' || not_ok docs/run.md "no control socket: $(cat "$TMP/log")"

want=$(quoted "$run_md" '{"ok":false,"error":"unknown command')
word=$(echo "$want" | sed "s/.*unknown command '\([^']*\)'.*/\1/")
got=$("$CTL" "$sock" "$word")
[ -n "$want" ] && [ "$got" = "$want" ] || not_ok docs/run.md "unknown command: shown '$want', replied '$got'"

quoted "$run_md" '{"ok":true,"message":"reloaded' > "$TMP/want"
"$VIGIL" ctl "$sock" reload > "$TMP/got" 2>&1
[ -s "$TMP/want" ] && matches "$TMP/want" "$TMP/got" ||
    not_ok docs/run.md "reload: shown '$(cat "$TMP/want")', replied '$(cat "$TMP/got")'"
# the log line of a reload, as the README and docs/run.md quote it (counts aside)
for doc in "$readme" "$run_md"; do
    line=$(quoted "$doc" 'reloaded [0-9]* rules:')
    pattern=$(echo "$line" | sed 's/[0-9][0-9]*/[0-9][0-9]*/g')
    [ -n "$line" ] && grep -q "^vigil run: $pattern\$" "$TMP/log" ||
        not_ok "${doc#"$top_srcdir"/}" "the reload log line '$line' is not vigil's: $(grep reloaded "$TMP/log")"
done
quoted "$run_md" '{"rules":\[{"name"' | keys_of > "$TMP/keys.doc"
"$VIGIL" ctl "$sock" rules | sed 's/},{"name".*}]/}]/' | keys_of > "$TMP/keys.vigil"   # rule 1
keys_in_order "ctl rules" "$TMP/keys.doc" "$TMP/keys.vigil"
"$VIGIL" ctl "$sock" stats > "$TMP/stats" 2>&1
for key in uptime_s pid; do
    grep -q "\"$key\":" "$TMP/stats" || not_ok docs/run.md "ctl stats has no \"$key\""
done
exec 3>&-
wait $pid || not_ok docs/run.md "vigil run --control exited $?: $(cat "$TMP/log")"

# The keys of the --stats object, in the order docs/run.md shows them (the state
# section's checkpoints object included), are keys vigil prints in that order.
awk '/^## `--stats`/ { on = 1 } on && /^```/ { n++; next } on && n == 1' "$run_md" |
    keys_of > "$TMP/keys.doc"
quoted "$run_md" '"checkpoints":{"written"' | keys_of | sed 1d > "$TMP/keys.state"
sed -i "/^checkpoints\$/r $TMP/keys.state" "$TMP/keys.doc"
"$VIGIL" run --stats --state "$TMP/state" "$TMP/ctl" \
    < "$top_srcdir/examples/fraud/cases/demo.events.jsonl" 2>&1 > /dev/null |
    grep '^{"engine"' | sed 's/},"[a-z_]*":{"matches".*"keys_refused":[0-9]*}}/}}/' |
    keys_of > "$TMP/keys.vigil"   # the first rule's counters only
keys_in_order "--stats" "$TMP/keys.doc" "$TMP/keys.vigil"

# ---- docs/json-conformance.md: the decoder's table and counts -------------------

suite="${VIGIL_SHARED:-}/jsontestsuite/test_parsing"
if [ -d "$suite" ] && [ -x "$top_builddir/tests/test_decode" ]; then
    conf="$top_srcdir/docs/json-conformance.md"
    # "| `NAME` | accepted | — |" and "| `NAME` | rejected | `REASON` |" as test_decode logs them
    sed -n 's/^| `\(i_[^`]*\)` | accepted | .*/i-case \1: accepted/p
            s/^| `\(i_[^`]*\)` | rejected | `\([^`]*\)` |.*/i-case \1: rejected: \2/p' "$conf" |
        LC_ALL=C sort > "$TMP/icases.doc"
    (cd "$top_builddir" && ./tests/test_decode) 2>&1 | grep '^i-case ' | LC_ALL=C sort > "$TMP/icases.vigil"
    diff "$TMP/icases.doc" "$TMP/icases.vigil" > "$TMP/icases.diff" ||
        not_ok docs/json-conformance.md "the i_ table (< doc, > decoder):
$(cat "$TMP/icases.diff")"
    for kind in y n i; do
        n=$(ls "$suite" | grep -c "^${kind}_")
        grep -q "every \`${kind}_\` file ($n[),]" "$conf" ||
            not_ok docs/json-conformance.md "the suite has $n ${kind}_ files, not as the doc says"
    done
else
    echo "docs: json-conformance.md not checked (no $suite or tests/test_decode)"
fi

[ $failures -eq 0 ] || fail "$failures places in the docs differ from what vigil does"
echo "docs: $sessions sessions and the quoted replies match"

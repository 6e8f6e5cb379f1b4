#!/bin/sh
# `vigil explain --dot` renders with Graphviz for every rule of every shared conformance
# folder and of every example (the quick start's test command installs graphviz).
. "$top_srcdir/tests/e2e/lib.sh"
command -v dot >/dev/null 2>&1 || skip "dot (graphviz) not installed"
n=0
for dir in "$top_srcdir"/examples/*/ ${VIGIL_SHARED:+"$VIGIL_SHARED"/conformance/*/}; do
    [ -d "$dir" ] || continue
    "$VIGIL" explain --dot "$dir" > "$TMP/nfa.dot" 2> "$TMP/err" ||
        { cat "$TMP/err" >&2; fail "vigil explain --dot $dir"; }
    graphs=$(grep -c '^digraph ' "$TMP/nfa.dot")
    rules=$(cat "$dir"*.cep | grep -cE '^[[:space:]]*rule[[:space:]]')
    [ "$graphs" -eq "$rules" ] || fail "$dir: $graphs graphs for $rules rules"
    dot -Tsvg "$TMP/nfa.dot" > "$TMP/nfa.svg" 2> "$TMP/err" ||
        { cat "$TMP/err" >&2; fail "dot -Tsvg on $dir"; }
    grep -q '<svg' "$TMP/nfa.svg" || fail "no svg for $dir"
    n=$((n + rules))
done
echo "explain --dot: $n rules rendered"

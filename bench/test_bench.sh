#!/bin/bash
# bench/test_bench.sh — `make check` guard for the benchmark tools (not the benchmark):
# the generator is deterministic and honours its arguments, and vigil's scenario-1
# alerts equal those of the hand-written floor program on a small stream.
set -u
B=${top_builddir:-.}
S=${top_srcdir:-..}
T=$(mktemp -d) || exit 99
trap 'rm -rf "$T"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# Same arguments, same bytes; another seed, other bytes; exactly N lines.
"$B/bench/gen" -n 20000 -k 500 -s 7 > "$T/a" || fail "gen exited with $?"
"$B/bench/gen" -n 20000 -k 500 -s 7 > "$T/b" || fail "gen exited with $?"
"$B/bench/gen" -n 20000 -k 500 -s 8 > "$T/c" || fail "gen exited with $?"
cmp -s "$T/a" "$T/b" || fail "gen is not deterministic"
cmp -s "$T/a" "$T/c" && fail "gen ignores the seed"
[ "$(wc -l < "$T/a")" = 20000 ] || fail "gen wrote $(wc -l < "$T/a") lines, not 20000"
# -k bounds the users.
[ "$(grep -o '"user":"u[0-9]*"' "$T/a" | sort -u | wc -l)" -le 500 ] || fail "more users than -k"
# Without jitter time never goes back; with -j 2000 it goes back by at most 2000 ms.
back() { grep -o '"ts":[0-9]*' "$1" | cut -d: -f2 |
         awk 'NR > 1 && max - $1 > worst { worst = max - $1 } $1 > max { max = $1 } END { print worst + 0 }'; }
[ "$(back "$T/a")" = 0 ] || fail "events out of order without jitter"
"$B/bench/gen" -n 20000 -k 500 -s 7 -j 2000 > "$T/j" || fail "gen -j exited with $?"
w=$(back "$T/j")
[ "$w" -gt 0 ] && [ "$w" -le 2000 ] || fail "jitter 2000 ms gave a step back of $w ms"
# Every mix writes valid lines that vigil accepts.
for m in fraud brute absence mixed; do
    "$B/bench/gen" -n 5000 -m "$m" -s 3 > "$T/m" || fail "gen -m $m exited with $?"
    "$B/vigil" run --stats -o /dev/null "$S/bench/s1_fraud.cep" < "$T/m" 2> "$T/stats" ||
        fail "vigil failed on gen -m $m"
    grep -q '"malformed":0' "$T/stats" || fail "vigil rejected lines of gen -m $m"
done
"$B/bench/gen" -n 10 -m nosuch > /dev/null 2>&1 && fail "gen accepted an unknown mix"

# Scenario 1: vigil and floor_fraud find the same matches (few users: many matches).
"$B/bench/gen" -n 300000 -k 2000 -s 11 > "$T/s1" || fail "gen exited with $?"
"$B/bench/floor_fraud" < "$T/s1" 2> /dev/null | sort > "$T/floor" || fail "floor_fraud failed"
"$B/vigil" run -o "$T/alerts" "$S/bench/s1_fraud.cep" < "$T/s1" || fail "vigil failed"
"$S/bench/to_oracle.sh" < "$T/alerts" | sort > "$T/vigil"
[ -s "$T/floor" ] || fail "no matches at all: the comparison would prove nothing"
cmp -s "$T/floor" "$T/vigil" || {
    diff "$T/floor" "$T/vigil" | head -5
    fail "vigil ($(wc -l < "$T/vigil")) and floor_fraud ($(wc -l < "$T/floor")) disagree"
}
echo "ok: gen deterministic; $(wc -l < "$T/vigil") scenario-1 matches equal floor_fraud's"

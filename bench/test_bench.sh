#!/bin/bash
# bench/test_bench.sh — `make check` guard for the benchmark tools (not the benchmark):
# the generator is deterministic and honours its arguments, and vigil's alerts equal
# those of the hand-written floors on small streams (scenario 1: floor_fraud; scenario
# 4: floor_s4).
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
"$B/bench/floor_fraud" < "$T/s1" > "$T/floor.raw" 2> /dev/null || fail "floor_fraud failed"
sort "$T/floor.raw" > "$T/floor"
"$B/vigil" run -o "$T/alerts" "$S/bench/s1_fraud.cep" < "$T/s1" || fail "vigil failed"
"$S/bench/to_oracle.sh" < "$T/alerts" | sort > "$T/vigil"
[ -s "$T/floor" ] || fail "no matches at all: the comparison would prove nothing"
cmp -s "$T/floor" "$T/vigil" || {
    diff "$T/floor" "$T/vigil" | head -5
    fail "vigil ($(wc -l < "$T/vigil")) and floor_fraud ($(wc -l < "$T/floor")) disagree"
}
# A last line without its newline is an event to vigil: to the floor too.
printf '%s\n%s\n%s' '{"ts":1700000000000,"type":"tx","user":"u1","amount":1500.00}' \
    '{"ts":1700000001000,"type":"tx","user":"u1","amount":1600.00}' \
    '{"ts":1700000002000,"type":"tx","user":"u1","amount":1700.00}' > "$T/s1nonl"
"$B/bench/floor_fraud" < "$T/s1nonl" > "$T/s1nonl.floor" 2> /dev/null || fail "floor_fraud failed"
"$B/vigil" run -o "$T/s1nonl.alerts" "$S/bench/s1_fraud.cep" < "$T/s1nonl" || fail "vigil failed"
"$S/bench/to_oracle.sh" < "$T/s1nonl.alerts" > "$T/s1nonl.vigil"
[ -s "$T/s1nonl.vigil" ] && cmp -s "$T/s1nonl.floor" "$T/s1nonl.vigil" ||
    fail "a last line without its newline: vigil ($(wc -l < "$T/s1nonl.vigil")) and floor_fraud ($(wc -l < "$T/s1nonl.floor")) disagree"

# Scenario 4: floor_s4 and vigil raise the same multiset of (rule, message). Three
# streams: run.sh's scenario-4 settings on 20k events; the same mix over 200 users
# with more bursts, where every stateful family fires often; and hand-written lines on
# the edges (a gap of exactly `within`, a shipment at its deadline, an order id used
# twice, a huge tx, a late event).
s4_vigil() {  # vigil alert JSON -> "RULE MESSAGE" (the messages hold no quote)
    sed -n 's/^{"rule":"\([^"]*\)".*"message":"\([^"\\]*\)".*/\1 \2/p'
}
s4_compare() {  # NAME: compares on $T/NAME.jsonl; leaves the sorted alerts in $T/NAME.floor
    # to a file first: a pipeline's status would be sort's, and a crash would go unseen
    "$B/bench/floor_s4" < "$T/$1.jsonl" > "$T/$1.raw" 2> /dev/null || fail "floor_s4 failed on $1"
    tr '\t' ' ' < "$T/$1.raw" | sort > "$T/$1.floor"
    rm -f "$T/$1.alerts"
    "$B/vigil" run -o "$T/$1.alerts" "$S/bench/s4_rules.cep" < "$T/$1.jsonl" 2> /dev/null ||
        fail "vigil failed on $1"
    s4_vigil < "$T/$1.alerts" | sort > "$T/$1.vigil"
    cmp -s "$T/$1.floor" "$T/$1.vigil" || {
        diff "$T/$1.floor" "$T/$1.vigil" | head -5
        fail "scenario 4, $1: vigil ($(wc -l < "$T/$1.vigil")) and floor_s4 ($(wc -l < "$T/$1.floor")) disagree"
    }
}
"$B/bench/gen" -n 20000 -k 100000 -m mixed -r 100 -s 4 > "$T/s4.jsonl" || fail "gen exited with $?"
s4_compare s4
"$B/bench/gen" -n 20000 -k 200 -m mixed -r 100 -b 0.02 -s 12 > "$T/s4dense.jsonl" ||
    fail "gen exited with $?"
s4_compare s4dense
for family in large_pair country_change failed_logins login_failures not_shipped; do
    grep -q "^${family}_" "$T/s4dense.floor" || fail "no $family alert: the comparison would prove little"
done
cat > "$T/s4edge.jsonl" <<'LINES'
{"ts":1700000000000,"type":"order","user":"u4","id":"o1"}
{"ts":1700000000000,"type":"tx","user":"u1","amount":650.00,"country":"FR"}
{"ts":1700000001000,"type":"login","user":"u3","ok":false}
{"ts":1700000001000,"type":"order","user":"u4","id":"o2"}
{"ts":1700000002000,"type":"login","user":"u3","ok":false}
{"ts":1700000002000,"type":"order","user":"u4","id":"o2"}
{"ts":1700000003000,"type":"login","user":"u3","ok":false}
{"ts":1700000004000,"type":"order","user":"u4","id":"o3"}
{"ts":1700000005000,"type":"shipped","user":"u4","id":"o2"}
{"ts":1700000121000,"type":"login","user":"u3","ok":true}
{"ts":1700000300000,"type":"tx","user":"u1","amount":650.00,"country":"DE"}
{"ts":1700000300000,"type":"tx","user":"u2","amount":25000.50,"country":"US"}
{"ts":1700003600000,"type":"shipped","user":"u4","id":"o1"}
{"ts":1700000001000,"type":"tx","user":"u1","amount":900.00,"country":"FR"}
LINES
s4_compare s4edge
printf '%s' '{"ts":1700000300000,"type":"tx","user":"u2","amount":25000.50,"country":"US"}' \
    > "$T/s4nonl.jsonl"   # a last line without its newline
s4_compare s4nonl
[ -s "$T/s4nonl.floor" ] || fail "no alert on a last line without its newline"
# 1 login_failures, 3 failed_logins (not the 2m ones: the gap is exactly 2m),
# 1 large_pair (not _00: the gap is exactly 5m), 9 country_change, 6 huge_tx,
# 4 not_shipped (o1's 1h one: shipped at its deadline; o3's three at the end).
# Counted per family: a total could hide one edge missed and another overshot.
for want in login_failures:1 failed_logins:3 large_pair:1 country_change:9 huge_tx:6 \
            not_shipped:4; do
    family=${want%:*}
    got=$(grep -c "^${family}_" "$T/s4edge.floor")
    [ "$got" = "${want#*:}" ] ||
        fail "floor_s4 raised $got $family alerts on the edge lines, not ${want#*:}"
done
echo "ok: gen deterministic; $(wc -l < "$T/vigil") scenario-1 matches equal floor_fraud's;" \
     "$(cat "$T"/s4*.vigil | wc -l) scenario-4 alerts equal floor_s4's"

# tests/e2e/lib.sh — shared helpers of the end-to-end tests (sourced, not run).
# The harness exports top_srcdir and top_builddir; run by hand from a build folder:
#   top_srcdir=.. top_builddir=. sh ../tests/e2e/NAME.sh
set -u
: "${top_srcdir:=.}"
: "${top_builddir:=.}"
VIGIL="$top_builddir/vigil"
DATA="$top_srcdir/tests/e2e/data"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/vigil-e2e.XXXXXX") || exit 99
trap 'rm -rf "$TMP"' EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "SKIP: $*" >&2; exit 77; }

[ -x "$VIGIL" ] || fail "no vigil binary at $VIGIL"

# gen_events N: a deterministic event-time stream of N transactions and logins over
# 7 users, one second apart, with large amounts now and then.
gen_events() {
    awk -v n="$1" 'BEGIN {
        for (i = 0; i < n; i++) {
            u = "u" (i * 5 % 7);
            if (i % 11 == 3)
                printf "{\"ts\":%d,\"type\":\"login\",\"user\":\"%s\",\"id\":%d}\n", 1767225600 + i, u, i;
            else
                printf "{\"ts\":%d,\"type\":\"tx\",\"user\":\"%s\",\"amount\":%d,\"id\":%d}\n", 1767225600 + i, u, (i * 37) % 250, i;
        }
    }'
}

# stat_of NAME FILE: the first "NAME":NUMBER of the --stats JSON in FILE.
stat_of() { grep -o "\"$1\":[0-9]*" "$2" | head -1 | cut -d: -f2; }

# alerts_sorted FILE: the alert lines in a canonical order, for multiset comparison.
alerts_sorted() { LC_ALL=C sort "$1"; }

# same_alerts A B WHAT: fails unless both files hold the same multiset of lines.
same_alerts() {
    alerts_sorted "$1" > "$TMP/sa.a"
    alerts_sorted "$2" > "$TMP/sa.b"
    if ! cmp -s "$TMP/sa.a" "$TMP/sa.b"; then
        diff "$TMP/sa.a" "$TMP/sa.b" | head -20 >&2
        fail "$3"
    fi
}

# wait_for COND_CMD: polls (up to ~10 s) until the command succeeds.
wait_for() {
    i=0
    while ! eval "$1"; do
        i=$((i + 1))
        [ $i -gt 200 ] && return 1
        sleep 0.05
    done
    return 0
}

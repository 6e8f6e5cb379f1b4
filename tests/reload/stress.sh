#!/bin/sh
# Hot reload under load: 1,000,000 events stream through a unix socket input while the
# rules are reloaded 50 times, alternately by `vigil ctl reload` and SIGHUP, with rule
# files edited, added, removed and broken in between. Checks, with one and with two
# workers: every event sent is processed (--stats), the alerts of the rules that never
# changed are exactly those of a run without reloads, every reload reports what it did,
# and memory does not grow with reloads (peak RSS against the run without reloads, and
# RSS after 50 more reloads against RSS after the stream).
# VIGIL_TEST_SMALL=1 (sanitizer builds): 100,000 events, no RSS comparison (ASan's
# quarantine holds freed memory; its leak check covers the reloads there).
. "$top_srcdir/tests/e2e/lib.sh"
FEED="$top_builddir/tests/reload/feed"
RDATA="$top_srcdir/tests/reload/data"
[ -x "$FEED" ] || fail "no $FEED"
N=1000000
RELOADS=50
EXTRA_RELOADS=50
if [ -n "${VIGIL_TEST_SMALL:-}" ]; then
    N=100000
    EXTRA_RELOADS=20
fi

outcomes() { grep -E '^vigil run: (reloaded|reload failed)' "$1" || true; }

# churn K RULES: the K-th change to the rule folder. K mod 5: 1 edits the pattern of
# churn_changed, 2 adds extra.cep, 3 adds a broken file, 4 removes both, 0 changes
# nothing. Prints what the reload must say.
churn() {
    case $(($1 % 5)) in
    1)  if cmp -s "$RDATA/changed_v1.cep" "$2/changed.cep"; then v=2; else v=1; fi
        cp "$RDATA/changed_v$v.cep" "$2/.changed.tmp" && mv "$2/.changed.tmp" "$2/changed.cep"
        echo "1 changed, 0 added, 0 removed, 2 kept state" ;;
    2)  cp "$RDATA/extra.cep" "$2/extra.cep"
        echo "0 changed, 1 added, 0 removed, 3 kept state" ;;
    3)  cp "$RDATA/broken.cep" "$2/broken.cep"
        echo "reload failed (rule errors)" ;;
    4)  rm "$2/broken.cep" "$2/extra.cep"
        echo "0 changed, 0 added, 1 removed, 3 kept state" ;;
    0)  echo "0 changed, 0 added, 0 removed, 3 kept state" ;;
    esac
}

# reload_by K DIR PID: ctl for odd K, SIGHUP for even K; waits until vigil has logged
# the K-th outcome and prints it.
reload_by() {
    rb_k=$1 rb_dir=$2
    if [ $(($1 % 2)) -eq 1 ]; then
        "$VIGIL" ctl "$2/ctl.sock" reload > "$2/reply" 2>> "$2/ctl.err"
        rc=$?
        grep -q '"ok":false' "$2/reply" && want=1 || want=0
        [ $rc -eq $want ] || fail "vigil ctl reload exit $rc with reply $(cat "$2/reply")"
    else
        kill -HUP "$3"
    fi
    wait_for '[ "$(outcomes "$rb_dir/err" | wc -l)" -ge $rb_k ]' || fail "reload $1 not logged"
    outcomes "$2/err" | sed -n "$1p"
}

rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }

# run_vigil NAME WORKERS RELOADS: streams N events with RELOADS reloads in between;
# leaves alerts, err (with --stats) and rss_end (VmRSS once every event is processed)
# in $TMP/NAME.
run_vigil() {
    dir="$TMP/$1"
    mkdir -p "$dir/rules"
    cp "$RDATA/stable.cep" "$dir/rules/"
    cp "$RDATA/changed_v1.cep" "$dir/rules/changed.cep"
    mkfifo "$dir/go"
    "$VIGIL" run --stats --workers "$2" --control "$dir/ctl.sock" -i "unix:$dir/in.sock" \
        -o "$dir/alerts" "$dir/rules" 2> "$dir/err" &
    vpid=$!
    # the rules are loaded once the control socket answers: only then change them
    wait_for '"$VIGIL" ctl "$dir/ctl.sock" rules > /dev/null 2>&1' ||
        { kill $vpid; fail "$1: vigil did not start"; }
    "$FEED" "$dir/in.sock" $N $(($3 + 1)) < "$dir/go" > "$dir/fed" &
    fpid=$!
    exec 4> "$dir/go"
    k=1
    while [ $k -le "$3" ]; do
        echo go >&4   # the next part of the stream goes out while the rules change
        want=$(churn $k "$dir/rules")
        got=$(reload_by $k "$dir" $vpid)
        case "$got" in
        *"$want"*) ;;
        *) kill $vpid; fail "$1: reload $k: want '$want', got '$got'" ;;
        esac
        k=$((k + 1))
    done
    exec 4>&-
    wait $fpid || { kill $vpid; fail "$1: the feeder failed"; }
    [ "$(cat "$dir/fed")" = $N ] || { kill $vpid; fail "$1: the feeder sent $(cat "$dir/fed")"; }
    wait_for '"$VIGIL" ctl "$dir/ctl.sock" stats | grep -q "\"events\":$N,"' ||
        { kill $vpid; fail "$1: not every event was processed"; }
    rss_kb $vpid > "$dir/rss_end"
}

stop_vigil() {
    kill -TERM $vpid
    wait $vpid || { cat "$TMP/$1/err" >&2; fail "$1: exit status"; }
    grep -q "^{\"engine\":{\"lines\":$N,\"events\":$N,\"malformed\":0,\"late\":0," \
        "$TMP/$1/err" || { tail -1 "$TMP/$1/err" >&2; fail "$1: events in != events processed"; }
}

stable_alerts() { grep '"rule":"stable_' "$TMP/$1/alerts" | LC_ALL=C sort; }

peak_kb() { sed -n 's/.*"peak_rss_kb":\([0-9]*\).*/\1/p' "$TMP/$1/err"; }

# within_pct A B PCT SLACK_KB: A <= B * (100 + PCT) / 100 + SLACK_KB
within_pct() { [ "$1" -le $(($2 * (100 + $3) / 100 + $4)) ]; }

for workers in 1 2; do
    run_vigil base$workers $workers 0
    stop_vigil base$workers
    run_vigil hot$workers $workers $RELOADS
    # memory after many more reloads, state kept: each one swaps churn_changed
    dir="$TMP/hot$workers"
    n_extra=0   # not `i`: wait_for counts with it
    while [ $n_extra -lt $EXTRA_RELOADS ]; do
        churn 1 "$dir/rules" > /dev/null
        "$VIGIL" ctl "$dir/ctl.sock" reload > /dev/null || fail "hot$workers: extra reload $n_extra"
        n_extra=$((n_extra + 1))
    done
    rss_more=$(rss_kb $vpid)
    stop_vigil hot$workers
    grep -q "\"reloads\":$((RELOADS / 5 * 4 + EXTRA_RELOADS)),\"reload_failures\":$((RELOADS / 5))," \
        "$dir/err" || { tail -1 "$dir/err" >&2; fail "hot$workers: reload counters"; }
    grep -q 'broken.cep:[0-9]*:[0-9]*: error' "$dir/ctl.err" ||
        fail "hot$workers: vigil ctl did not print the diagnostics"
    stable_alerts base1 > "$TMP/want"
    stable_alerts hot$workers > "$TMP/got"
    [ -s "$TMP/want" ] || fail "no alerts of the stable rules at all"
    cmp -s "$TMP/want" "$TMP/got" || {
        diff "$TMP/want" "$TMP/got" | head -10 >&2
        fail "hot$workers: the unchanged rules' alerts differ from a run without reloads"
    }
    grep -q '"rule":"churn_changed"' "$dir/alerts" || fail "hot$workers: the edited rule never ran"
    grep -q '"rule":"churn_extra"' "$dir/alerts" || fail "hot$workers: the added rule never ran"
    echo "workers $workers: peak RSS $(peak_kb base$workers) kB without reloads," \
        "$(peak_kb hot$workers) kB with $RELOADS; RSS $(cat "$dir/rss_end") kB after the" \
        "stream, $rss_more kB after $EXTRA_RELOADS more reloads"
    if [ -z "${VIGIL_TEST_SMALL:-}" ]; then
        within_pct "$(peak_kb hot$workers)" "$(peak_kb base$workers)" 25 1024 ||
            fail "hot$workers: peak RSS $(peak_kb hot$workers) kB vs $(peak_kb base$workers) kB without reloads"
        within_pct "$rss_more" "$(cat "$dir/rss_end")" 10 512 ||
            fail "hot$workers: RSS grew from $(cat "$dir/rss_end") to $rss_more kB over $EXTRA_RELOADS reloads"
    fi
done
exit 0

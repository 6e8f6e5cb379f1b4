# tests/state/lib.sh — helpers of the checkpoint and recovery tests (sourced).
. "$top_srcdir/tests/e2e/lib.sh"

# state_events N: N event-time lines over 5000 users, 20 ms apart, out of order by up
# to 300 ms, with a malformed line now and then (dead letters go to --errors).
state_events() {
    awk -v n="$1" 'BEGIN {
        srand(7);
        for (i = 0; i < n; i++) {
            u = "u" int(rand() * 5000);
            r = rand();
            t = i * 20 + 1000 - int(rand() * 300);
            ts = sprintf("%d%03d", 1767225600 + int(t / 1000), t % 1000);
            if (i % 99991 == 17) { print "{\"ts\":" ts ",\"type\":\"tx\",broken"; continue }
            if (r < 0.15)
                printf "{\"ts\":%s,\"type\":\"login\",\"user\":\"%s\",\"ok\":%s}\n", ts, u, rand() < 0.3 ? "false" : "true";
            else if (r < 0.2)
                printf "{\"ts\":%s,\"type\":\"logout\",\"user\":\"%s\"}\n", ts, u;
            else
                printf "{\"ts\":%s,\"type\":\"tx\",\"user\":\"%s\",\"amount\":%d}\n", ts, u, int(rand() * 1000);
        }
    }'
}

# state_rules OUTDIR: rules with every kind of state a checkpoint holds (partial
# matches, timeouts, a trailing not_followed_by, suppression, held-back matches,
# aggregates), alerting to stdout and to a `file` output under OUTDIR.
state_rules() {
    cat <<RULES
time ts epoch_ms lateness 500ms;
output per_rule file "$1/{rule}.jsonl";
rule failed_logins { key user; begin f where type == "login" and not ok times 3; within 10m;
  on match alert "3 failed logins" to per_rule; }
rule big_after_login { key user; begin l where type == "login" and ok;
  followed_by t where type == "tx" and amount > 900; within 30s;
  on match alert "big tx after login"; on timeout alert "login without big tx" to per_rule; }
rule no_logout { key user; begin l where type == "login";
  not_followed_by o where type == "logout"; within 2m; suppress 5m;
  on match alert "no logout" to per_rule; }
rule climb { key user; begin a where type == "tx" and amount > 700;
  followed_by b where type == "tx" and amount > last(a.amount); within 5m;
  skip past_last_event; on match alert "climb" fields { first: a.amount, then: b.amount }; }
RULES
}

now_ms() { date +%s%3N; }

# same_files A B WHAT: byte for byte.
same_files() {
    cmp "$1" "$2" >&2 || fail "$3"
}

# flip_byte FILE FROM_END: corrupts one byte near the end of FILE.
flip_byte() {
    size=$(wc -c < "$1")
    printf 'X' | dd of="$1" bs=1 seek=$((size - $2)) conv=notrunc 2>/dev/null
}

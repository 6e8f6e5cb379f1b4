/* tests/test_lookahead.c — the shard told the event likely to come next
 * (shard_event_ahead) loads that event's keys' records ahead: a hint, which must
 * change nothing but speed. The same stream runs through three shards: one never
 * told anything (shard_event), one told the true next event, and one told a wrong one
 * (an event from elsewhere in the stream, and now and then one that has no key at
 * all). Their alerts, in order, their per-rule counters and their live partial
 * matches must be equal after every event and at the end. The rules are keyed by one
 * plain field, by a tuple of them (both computed ahead), and by an expression (not
 * computed ahead); keys include strings that need escapes (hashed ahead under another
 * spelling), numbers and missing values. Also: part_key_hash_guess gives part_hash of
 * part_key_bytes wherever the shard relies on it. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "runtime/decode.h"
#include "runtime/partition.h"
#include "runtime/shard.h"
#include "tests/checkmain.h"
#include "tests/rulesutil.h"

static const char rules[] =
    "time ts epoch_ms;\n"
    "rule pair { filter type == \"a\"; key k; begin x where n > 5;\n"
    "  followed_by y where n > 5; within 10s; on match alert \"m\"; on timeout alert \"t\"; }\n"
    "rule tuple { key user, k; begin x where n > 2; followed_by y where n < 3;\n"
    "  within 5s; on match alert \"m\"; }\n"
    "rule lowered { key lower(user); begin x where n > 7; followed_by y; within 3s;\n"
    "  on match alert \"m\"; on timeout alert \"t\"; }\n"
    "rule by_user { filter type == \"b\"; key user; begin x; followed_by y where n == x.n;\n"
    "  within 8s; suppress 2s; on match alert \"m\"; }\n";

enum { N_EVENTS = 3000, N_RULES = 4 };

/* What one shard reported: its alerts as text, in order. */
typedef struct Seen {
    Buf text;
} Seen;

static void on_alert(void *user, size_t rule, const Value *key, size_t n_key,
                     const NfaResult *r, EvalScratch *scratch)
{
    (void)scratch;
    Seen *seen = user;
    buf_printf(&seen->text, "%zu %d %lld", rule, (int)r->kind, (long long)r->time_ms);
    Buf kb = BUF_INIT;
    ck_assert(part_key_bytes(key, n_key, &kb));
    buf_printf(&seen->text, " %s\n", kb.data ? kb.data : "");
    buf_free(&kb);
}

static uint64_t next_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* A JSON line of the stream: few users and keys, so that keys come back while they
 * hold partial matches; some keys need escapes, some are numbers, some missing. */
static int event_line(char *line, size_t size, uint64_t *rng, int64_t ts)
{
    static const char *const users[] = {"\"Ann\"", "\"ann\"", "\"b\\\"o\\\\b\"", "\"c\\u00e9\"",
                                        "\"d\\n\"", "17", "\"Eve\""};
    static const char *const ks[] = {"\"k1\"", "\"k2\"", "\"k\\t3\"", "4", "4.0", "\"\""};
    uint64_t r = next_rand(rng);
    const char *user = users[r % 7];
    const char *k = ks[(r >> 8) % 6];
    int n = (int)((r >> 16) % 10);
    const char *type = (r >> 24) % 2 ? "a" : "b";
    if ((r >> 32) % 9 == 0)
        return snprintf(line, size, "{\"ts\":%lld,\"type\":\"%s\",\"n\":%d,\"user\":%s}",
                        (long long)ts, type, n, user);
    if ((r >> 32) % 9 == 1)
        return snprintf(line, size, "{\"ts\":%lld,\"type\":\"%s\",\"n\":%d,\"k\":%s}",
                        (long long)ts, type, n, k);
    return snprintf(line, size, "{\"ts\":%lld,\"type\":\"%s\",\"n\":%d,\"user\":%s,\"k\":%s}",
                    (long long)ts, type, n, user, k);
}

/* The stream, decoded (ids and times set as the engine sets them). */
static Event **make_events(const CompiledRuleSet *rs, uint64_t seed)
{
    Decoder *d = decoder_new(&rs->fields, 64);
    ck_assert_ptr_nonnull(d);
    Event **evs = calloc(N_EVENTS, sizeof *evs);
    ck_assert_ptr_nonnull(evs);
    uint64_t rng = seed;
    int64_t ts = 1700000000000;
    for (size_t i = 0; i < N_EVENTS; i++) {
        char line[256];
        ts += (int64_t)(next_rand(&rng) % 1500);
        int len = event_line(line, sizeof line, &rng, ts);
        DecodeError err = {0};
        evs[i] = decoder_decode(d, line, (size_t)len, &err);
        ck_assert_msg(evs[i] != NULL, "%s: %s", line, err.reason ? err.reason : "?");
        evs[i]->id = i + 1;
        evs[i]->time_ms = ts;
        evs[i]->origin = "test";
        evs[i]->origin_line = i + 1;
    }
    decoder_free(d);
    return evs;
}

typedef enum { HINT_NONE, HINT_TRUE, HINT_WRONG } Hint;

typedef struct Run {
    Seen seen;
    EngineHooks hooks;
    Shard *shard;
} Run;

static void run_init(Run *run, const CompiledRuleSet *rs, const NfaLimits *limits)
{
    memset(run, 0, sizeof *run);
    run->seen.text = (Buf)BUF_INIT;
    run->hooks.sink.alert = on_alert;
    run->hooks.sink.user = &run->seen;
    run->shard = shard_new(rs, limits, &run->hooks);
    ck_assert_ptr_nonnull(run->shard);
}

/* The event the shard is told of before evs[i]: none, the next, or a wrong one. */
static const Event *hint_for(Hint hint, Event **evs, size_t i, uint64_t *rng)
{
    if (hint == HINT_NONE)
        return NULL;
    if (hint == HINT_TRUE)
        return i + 1 < N_EVENTS ? evs[i + 1] : NULL;
    return evs[next_rand(rng) % N_EVENTS];
}

static void run_event(Run *run, Hint hint, Event **evs, size_t i, uint64_t *rng)
{
    if (hint == HINT_NONE)
        shard_event(run->shard, evs[i]);
    else
        shard_event_ahead(run->shard, evs[i], hint_for(hint, evs, i, rng));
}

static void assert_same(const Run *a, const Run *b, size_t rules, const char *when)
{
    ck_assert_uint_eq(a->seen.text.len, b->seen.text.len);
    ck_assert_msg(!a->seen.text.len || !memcmp(a->seen.text.data, b->seen.text.data,
                                               a->seen.text.len), "alerts differ %s", when);
    ck_assert_uint_eq(shard_partials_live(a->shard), shard_partials_live(b->shard));
    for (size_t r = 0; r < rules; r++) {
        EngineRuleStats x = {0}, y = {0};
        shard_add_rule_stats(a->shard, r, &x);
        shard_add_rule_stats(b->shard, r, &y);
        ck_assert_msg(!memcmp(&x, &y, sizeof x), "rule %zu's counters differ %s", r, when);
    }
}

START_TEST(hints_change_nothing)
{
    CompiledRuleSet *rs = test_rules_compile(rules, NULL);
    ck_assert_uint_eq(rs->n_rules, N_RULES);
    Event **evs = make_events(rs, 0x9e3779b97f4a7c15ULL + (uint64_t)_i);
    NfaLimits limits = {.max_partials = 3};
    Run runs[3];
    for (int h = 0; h < 3; h++)
        run_init(&runs[h], rs, &limits);
    uint64_t rng = 12345 + (uint64_t)_i;
    for (size_t i = 0; i < N_EVENTS; i++) {
        for (int h = 0; h < 3; h++)
            run_event(&runs[h], (Hint)h, evs, i, &rng);
        assert_same(&runs[0], &runs[1], N_RULES, "with the true next event");
        assert_same(&runs[0], &runs[2], N_RULES, "with a wrong next event");
    }
    for (int h = 0; h < 3; h++)
        shard_advance_all(runs[h].shard);
    assert_same(&runs[0], &runs[1], N_RULES, "at the end (true hints)");
    assert_same(&runs[0], &runs[2], N_RULES, "at the end (wrong hints)");
    ck_assert_uint_gt(runs[0].seen.text.len, 1000);   /* the rules did alert */
    for (int h = 0; h < 3; h++) {
        shard_free(runs[h].shard);
        buf_free(&runs[h].seen.text);
    }
    for (size_t i = 0; i < N_EVENTS; i++)
        event_release(evs[i]);
    free(evs);
    ruleset_free(rs);
}
END_TEST

/* ---- the hash computed ahead ---------------------------------------------------- */

static uint64_t bytes_hash(const Value *vals, size_t n)
{
    Buf kb = BUF_INIT;
    ck_assert(part_key_bytes(vals, n, &kb));
    ck_assert(!kb.failed);
    uint64_t h = part_hash(kb.data ? kb.data : "", kb.len);
    buf_free(&kb);
    return h;
}

static void assert_guess_exact(const Value *vals, size_t n)
{
    Buf tmp = BUF_INIT;
    uint64_t h = 0;
    ck_assert(part_key_hash_guess(vals, n, &tmp, &h));
    ck_assert_uint_eq(h, bytes_hash(vals, n));
    buf_free(&tmp);
}

START_TEST(guess_is_the_hash_of_the_key_bytes)
{
    char long_id[300];
    memset(long_id, 'x', sizeof long_id);
    const char *const plain[] = {"", "u1", "o123456", "caf\xc3\xa9", "a b/c"};
    for (size_t i = 0; i < sizeof plain / sizeof *plain; i++) {
        Value v = value_str(plain[i], strlen(plain[i]));
        assert_guess_exact(&v, 1);
    }
    Value lng = value_str(long_id, sizeof long_id);
    assert_guess_exact(&lng, 1);
    Value num = value_num(42);
    num.raw = "42";
    num.raw_len = 2;
    Value others[] = {num, value_num(2.5), value_bool(true), value_time(1700000000000)};
    for (size_t i = 0; i < sizeof others / sizeof *others; i++)
        assert_guess_exact(&others[i], 1);
    Value tuple[3] = {value_str("u\"1", 3), num, value_str("k", 1)};
    assert_guess_exact(tuple, 3);
}
END_TEST

START_TEST(no_guess_without_a_key)
{
    Buf tmp = BUF_INIT;
    uint64_t h = 0;
    Value missing = value_missing(), null = value_null();
    ck_assert(!part_key_hash_guess(&missing, 1, &tmp, &h));
    ck_assert(!part_key_hash_guess(&null, 1, &tmp, &h));
    Value tuple[2] = {value_str("u", 1), value_null()};
    ck_assert(!part_key_hash_guess(tuple, 2, &tmp, &h));
    buf_free(&tmp);
}
END_TEST

static Suite *lookahead_suite(void)
{
    Suite *s = suite_create("lookahead");
    TCase *tc = tcase_create("shard");
    tcase_set_timeout(tc, 60);
    tcase_add_loop_test(tc, hints_change_nothing, 0, 4);
    suite_add_tcase(s, tc);
    tc = tcase_create("hash");
    tcase_add_test(tc, guess_is_the_hash_of_the_key_bytes);
    tcase_add_test(tc, no_guess_without_a_key);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run_suite(lookahead_suite());
}

/* tests/test_shard_group.c — rules sharing a key, run as one key group, give what the
 * same rules give each on its own table.
 *
 * Rules whose key is the same text form a key group (runtime/partition.h, PartGroup):
 * one table of keys and one timer per key for the group, on the inline path (one
 * worker) from the first event on. The same rules with key
 * expressions of different text but the same partition (`u`, `str(u)`, `lower(u)`,
 * ...) each keep a table and timers of their own. Random events, with many equal
 * times so that keys of several rules come due together, run through both; the alerts
 * (rule, kind, time, every matched event, in output order) and every counter (the
 * --max-memory estimate too) must be identical, with one worker and with a budget
 * small enough to refuse keys, and across hot reloads that keep, drop and add rules
 * of a group. A rule set of more rules than a group holds splits into several groups
 * and still agrees. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "rules/ruleset.h"
#include "runtime/engine.h"
#include "runtime/partition.h"
#include "tests/checkmain.h"
#include "tests/rulesutil.h"

/* Rule bodies after their key; %s is the key expression. Suppression, a trailing
 * not_followed_by, a count, strict contiguity and a rule on another key are there so
 * that entries of several layouts and results of every kind share the groups. */
static const char *const bodies[] = {
    "begin a where x > 5; followed_by b where x > 5; within 10s; "
    "on match alert \"m\"; on timeout alert \"t\";",
    "begin a where x > 3; followed_by b where ok == true; within 10s; "
    "on match alert \"m\"; on timeout alert \"t\";",
    "begin f where ok == false times 3; within 5s; on match alert \"m\"; "
    "on timeout alert \"t\";",
    "begin a where x > 1; not_followed_by b where x > 8; within 10s; suppress 4s; "
    "on match alert \"m\";",
    "begin a; next b where ok == true; within 3s; on match alert \"m\"; "
    "on timeout alert \"t\";",
    "begin a where x > 6; followed_by b where x < 2; within 4s; skip no_skip; "
    "on match alert \"m\"; on timeout alert \"t\";",
};
#define N_BODIES (sizeof bodies / sizeof *bodies)

/* Key texts that differ but partition events alike (the keys are lower-case). */
static const char *const alike[] = {"u", "str(u)", "lower(u)", "coalesce(u, \"-\")",
                                    "str(str(u))", "lower(str(u))", "str(lower(u))"};
#define N_ALIKE (sizeof alike / sizeof *alike)

/* n_rules rules cycling through the bodies, but rule `skip` (SIZE_MAX: none), keyed by
 * `u` (grouped) or each by another text of it, and one rule keyed by `k` alone. */
static char *rules_text_but(size_t n_rules, bool grouped, size_t skip)
{
    Buf b = BUF_INIT;
    buf_puts(&b, "time ts epoch_ms;\n");
    for (size_t i = 0; i < n_rules; i++) {
        if (i == skip)
            continue;
        const char *key = grouped ? "u" : alike[i % N_ALIKE];
        char suffix[32] = "";
        if (!grouped && i >= N_ALIKE)   /* distinct texts for every rule */
            snprintf(suffix, sizeof suffix, ", \"%zu\"", i);
        buf_printf(&b, "rule r%zu { key %s%s%s%s; %s }\n", i,
                   suffix[0] ? "coalesce(" : "", key, suffix, suffix[0] ? ")" : "",
                   bodies[i % N_BODIES]);
    }
    buf_printf(&b, "rule other { key k; %s }\n", bodies[0]);
    ck_assert(!b.failed);
    return buf_steal(&b);
}

static char *rules_text(size_t n_rules, bool grouped)
{
    return rules_text_but(n_rules, grouped, SIZE_MAX);
}

/* Small enough that some keys are refused. */
#define BUDGET 3000

static uint64_t next_rand(uint64_t *seed)
{
    *seed = *seed * 6364136223846793005u + 1442695040888963407u;
    return *seed >> 33;
}

typedef struct Events {
    char **v;
    size_t n;
} Events;

/* n events over 7 users and 3 other keys; times rise by 0 (often), 1 s or 2.5 s, so
 * that many deadlines fall on one time. */
static Events random_events(size_t n, uint64_t seed)
{
    Events e = {calloc(n, sizeof(char *)), n};
    ck_assert_ptr_nonnull(e.v);
    static const int64_t steps[] = {0, 0, 0, 1000, 1000, 2500};
    int64_t t = 1700000000000;
    for (size_t i = 0; i < n; i++) {
        t += steps[next_rand(&seed) % 6];
        Buf b = BUF_INIT;
        buf_printf(&b, "{\"ts\":%lld,\"u\":\"u%llu\",\"k\":\"k%llu\",\"x\":%llu,\"ok\":%s}",
                   (long long)t, (unsigned long long)(next_rand(&seed) % 7),
                   (unsigned long long)(next_rand(&seed) % 3),
                   (unsigned long long)(next_rand(&seed) % 11),
                   next_rand(&seed) % 3 ? "false" : "true");
        ck_assert(!b.failed);
        e.v[i] = buf_steal(&b);
    }
    return e;
}

static void events_free(Events *e)
{
    for (size_t i = 0; i < e->n; i++)
        free(e->v[i]);
    free(e->v);
}

/* The alert without its key values: the variants' key values differ in text only. */
static void on_alert(void *user, size_t rule, const Value *key, size_t n_key,
                     const NfaResult *r, EvalScratch *scratch)
{
    (void)scratch, (void)key, (void)n_key;
    Buf *out = user;
    buf_printf(out, "%zu %s %lld |", rule, r->kind == NFA_MATCH ? "match" : "timeout",
               (long long)r->time_ms);
    for (const MatchNode *m = r->last; m; m = m->prev)
        buf_printf(out, " %u:%llu", (unsigned)m->step, (unsigned long long)m->event->id);
    buf_putc(out, '\n');
}

static void feed(Engine *e, const Events *ev, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++)
        ck_assert_int_eq(engine_line(e, ev->v[i], strlen(ev->v[i]), "t", i + 1, 0), 0);
}

/* Alerts, then every counter, as text; with `after` (else NULL), the rules are
 * reloaded to it half-way. */
static char *run_reloading(const char *rules, const char *after, const Events *ev,
                           int64_t max_memory)
{
    CompiledRuleSet *rs = test_rules_compile(rules, NULL);
    CompiledRuleSet *next = after ? test_rules_compile(after, rs) : NULL;
    Buf out = BUF_INIT;
    Engine *e = test_engine_new(rs, (EngineSink){on_alert, NULL, NULL, &out}, 0, 1);
    if (max_memory)
        engine_set_limits(e, &(EngineLimits){.max_memory = (size_t)max_memory});
    feed(e, ev, 0, ev->n / 2);
    EngineReloadSummary sum;
    if (next)
        ck_assert_int_eq(engine_reload(e, next, NULL, NULL, &sum), 0);
    feed(e, ev, ev->n / 2, ev->n);
    ck_assert_int_eq(engine_finish(e), 0);
    engine_stats_json(e, &out);
    engine_free(e);
    ruleset_free(rs);
    if (next)
        ruleset_free(next);
    ck_assert(!out.failed);
    return buf_steal(&out);
}

static char *run(const char *rules, const Events *ev, int64_t max_memory)
{
    return run_reloading(rules, NULL, ev, max_memory);
}

/* a and b are the same text, else the test fails showing where they part. */
static void same_output(const char *a, const char *b, const char *what)
{
    size_t line = 1, i = 0;
    for (; a[i] && a[i] == b[i]; i++)
        line += a[i] == '\n';
    ck_assert_msg(a[i] == b[i], "%s differ at output line %zu:\n  %.200s\n  %.200s", what,
                  line, a + i, b + i);
}

static void check_alike(size_t n_rules, size_t n_events, uint64_t seed, int64_t max_memory)
{
    char *grouped = rules_text(n_rules, true), *apart = rules_text(n_rules, false);
    Events ev = random_events(n_events, seed);
    char *a = run(grouped, &ev, max_memory), *b = run(apart, &ev, max_memory);
    char what[64];
    snprintf(what, sizeof what, "seed %llu: grouped and apart", (unsigned long long)seed);
    same_output(a, b, what);
    ck_assert_ptr_nonnull(strstr(a, "timeout"));   /* timers fired, not only events */
    ck_assert_ptr_nonnull(strstr(a, "match"));
    free(a);
    free(b);
    events_free(&ev);
    free(grouped);
    free(apart);
}

START_TEST(a_group_alerts_as_its_rules_alone)
{
    for (uint64_t seed = 1; seed <= 6; seed++)
        check_alike(N_BODIES, 3000, seed, 0);
}
END_TEST

START_TEST(groups_split_past_their_size_and_still_agree)
{
    check_alike(PART_GROUP_MAX * 2 + 3, 1500, 7, 0);
}
END_TEST

START_TEST(refusals_under_a_budget_agree)
{
    char *grouped = rules_text(N_BODIES, true);
    Events ev = random_events(3000, 11);
    char *a = run(grouped, &ev, BUDGET);
    const char *refused = strstr(a, "\"keys_refused\":");
    bool any = false;
    for (; refused; refused = strstr(refused + 1, "\"keys_refused\":"))
        any |= refused[strlen("\"keys_refused\":")] != '0';
    ck_assert_msg(any, "the budget refused no key: the test would not test refusals");
    free(a);
    events_free(&ev);
    free(grouped);
    for (uint64_t seed = 11; seed <= 13; seed++)
        check_alike(N_BODIES, 3000, seed, BUDGET);
}
END_TEST

/* A reload to the same rules keeps every rule, and their keys move to the new set's
 * groups with their partial matches and timers: nothing changes. */
START_TEST(reload_to_the_same_rules_changes_nothing)
{
    char *text = rules_text(N_BODIES, true);
    Events ev = random_events(3000, 21);
    char *plain = run(text, &ev, 0), *reloaded = run_reloading(text, text, &ev, 0);
    same_output(plain, reloaded, "without and with a reload");
    free(plain);
    free(reloaded);
    events_free(&ev);
    free(text);
}
END_TEST

/* A reload that removes a rule of the group and adds one keeps the others' state in
 * the new groups, as it does for the same rules apart. */
START_TEST(regrouping_on_reload_agrees)
{
    Events ev = random_events(3000, 22);
    char *out[2];
    for (int grouped = 0; grouped < 2; grouped++) {
        char *before = rules_text(N_BODIES, grouped);
        char *after = rules_text_but(N_BODIES + 1, grouped, 2);
        out[grouped] = run_reloading(before, after, &ev, 0);
        free(before);
        free(after);
    }
    same_output(out[1], out[0], "grouped and apart across a reload");
    free(out[0]);
    free(out[1]);
    events_free(&ev);
}
END_TEST

static Suite *group_suite(void)
{
    Suite *s = suite_create("shard_group");
    TCase *tc = tcase_create("core");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, a_group_alerts_as_its_rules_alone);
    tcase_add_test(tc, groups_split_past_their_size_and_still_agree);
    tcase_add_test(tc, refusals_under_a_budget_agree);
    tcase_add_test(tc, reload_to_the_same_rules_changes_nothing);
    tcase_add_test(tc, regrouping_on_reload_agrees);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run_suite(group_suite());
}

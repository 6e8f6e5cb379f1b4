/* tests/test_records.c — a differential test of rule sharing: all rules' states for one
 * key's bytes share a record and one timer (runtime/shard.c), yet each rule must
 * behave exactly as if it ran alone. Many generated cases (a seeded xorshift, so a
 * failure reproduces) each make a rule set of 3-8 rules over `user` or `payee` (values
 * drawn from one pool, so that two key expressions give the same key bytes and the same
 * record), mixing next/followed_by/followed_by_any with `within`, `times N`
 * (consecutive or not), a trailing not_followed_by, skip strategies that hold matches
 * back, `on timeout` on some rules and `suppress` on some; and a stream over a few keys
 * with ties, gaps and, with lateness, events out of order. Judged: the set's alerts
 * are the union of the rules' alone (as multisets, and per rule and key in the same
 * order), its per-rule counters are theirs, with two workers too, and a run
 * checkpointed and restored midway gives what the uninterrupted one gives.
 *
 * VIGIL_RECORDS_SEED=S runs the cases from seed S (a failure prints its case's seed:
 * with VIGIL_RECORDS_CASES=1 that case alone runs again). */
#include <check.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "rules/ruleset.h"
#include "runtime/engine.h"
#include "tests/rulesutil.h"
#include "tests/checkmain.h"

/* ---- the generator -------------------------------------------------------------- */

static uint64_t next_rand(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* A number in [0, n). */
static unsigned pick(uint64_t *x, unsigned n)
{
    return (unsigned)(next_rand(x) % n);
}

static bool chance(uint64_t *x, unsigned one_in)
{
    return pick(x, one_in) == 0;
}

static const char *const skips[] = {"", "skip no_skip; ", "skip to_next; ",
                                    "skip past_last_event; ", "skip to_first a; ",
                                    "skip to_last a; "};

/* The pattern of one rule, with `within` when has_within says so; what it may not
 * combine with (on timeout without within) is left to the caller. */
static void put_pattern(Buf *b, uint64_t *x, bool *has_within)
{
    static const char *const same_v[] = {"", " and v == a.v"};
    unsigned w = 1 + pick(x, 5);   /* within, seconds */
    *has_within = true;
    switch (pick(x, 7)) {
    case 0:   /* two steps, strict or relaxed, maybe a step within */
        buf_printf(b, "begin a where type == \"a\"; %s b%s where type == \"b\"%s; within %us; ",
                   chance(x, 2) ? "next" : "followed_by", chance(x, 3) ? " within 1s" : "",
                   same_v[pick(x, 2)], w);
        break;
    case 1:   /* three steps */
        buf_printf(b, "begin a where type == \"a\"; followed_by b where type == \"b\"%s; "
                   "followed_by c where type == \"c\"; within %us; ", same_v[pick(x, 2)], w);
        break;
    case 2:   /* a loop, then one more step */
        buf_printf(b, "begin a where type == \"a\" times %u%s; followed_by b where type == "
                   "\"b\"; within %us; ", 2 + pick(x, 2), chance(x, 2) ? " consecutive" : "", w);
        break;
    case 3:   /* a match at expiry */
        buf_printf(b, "begin a where type == \"a\"%s; not_followed_by c where type == \"c\"; "
                   "within %us; ", chance(x, 2) ? " and v > 0" : "", w);
        break;
    case 4:   /* branching partial matches */
        buf_printf(b, "begin a where type == \"a\"; followed_by_any b where type == \"b\"; "
                   "followed_by c where type == \"c\"%s; within %us; ", same_v[pick(x, 2)], w);
        break;
    case 5:   /* a loop ending the pattern */
        buf_printf(b, "begin a where type == \"b\" times %u%s; within %us; ", 2 + pick(x, 2),
                   chance(x, 2) ? " consecutive" : "", w);
        break;
    default:  /* one step: matches at once, never holds state but for suppression */
        buf_printf(b, "begin a where type == \"d\"%s; ", chance(x, 2) ? " and v < 2" : "");
        *has_within = false;
        break;
    }
}

/* Rule number i; its name r<i> is what alerts are compared by. */
static void put_rule(Buf *b, uint64_t *x, unsigned i)
{
    bool has_within;
    buf_printf(b, "rule r%u { key %s; ", i, chance(x, 3) ? "payee" : "user");
    put_pattern(b, x, &has_within);
    buf_puts(b, skips[pick(x, sizeof skips / sizeof skips[0])]);
    if (chance(x, 3))
        buf_printf(b, "suppress %us; ", 1 + pick(x, 4));
    buf_puts(b, "on match alert \"m\"; ");
    if (has_within && chance(x, 2))
        buf_puts(b, "on timeout alert \"t\"; ");
    buf_puts(b, "}\n");
}

/* A whole case: its rules (time declaration first, each rule on one line) and its
 * events, one line each. */
typedef struct Case {
    uint64_t seed;
    char *time_decl;           /* the `time` line; heap */
    char **rules;              /* one rule per line; heap */
    size_t n_rules;
    char **events;             /* JSON lines without newline; heap */
    size_t n_events;
} Case;

#define MAX_RULES 8
#define BASE_TS 1767225600000LL

static char *line_of(Buf *b)
{
    ck_assert(!b->failed);
    return buf_steal(b);
}

static void make_rules(Case *c, uint64_t *x, unsigned lateness_ms)
{
    Buf b = BUF_INIT;
    buf_printf(&b, "time ts epoch_ms lateness %ums;\n", lateness_ms);
    c->time_decl = line_of(&b);
    c->n_rules = 3 + pick(x, MAX_RULES - 2);
    c->rules = calloc(c->n_rules, sizeof *c->rules);
    ck_assert_ptr_nonnull(c->rules);
    for (size_t i = 0; i < c->n_rules; i++) {
        put_rule(&b, x, (unsigned)i);
        c->rules[i] = line_of(&b);
    }
}

/* Times rise with ties and small gaps (some beyond a `within`); with lateness, now and
 * then an event comes up to 1.4 lateness early (so some are late). */
static void make_events(Case *c, uint64_t *x, unsigned lateness_ms)
{
    static const unsigned gaps[] = {0, 0, 0, 100, 300, 700, 1500, 2500, 6000};
    static const char types[] = "aaabbbccd";
    unsigned n_keys = 2 + pick(x, 3);
    c->n_events = 40 + pick(x, 160);
    c->events = calloc(c->n_events, sizeof *c->events);
    ck_assert_ptr_nonnull(c->events);
    long long ts = BASE_TS;
    Buf b = BUF_INIT;
    for (size_t i = 0; i < c->n_events; i++) {
        ts += gaps[pick(x, sizeof gaps / sizeof gaps[0])];
        long long t = ts;
        if (lateness_ms && chance(x, 6))
            t -= pick(x, lateness_ms * 7 / 5);
        buf_printf(&b, "{\"ts\":%lld,\"type\":\"%c\",\"user\":\"u%u\"", t,
                   types[pick(x, sizeof types - 1)], pick(x, n_keys));
        if (!chance(x, 10))
            buf_printf(&b, ",\"payee\":\"u%u\"", pick(x, n_keys));
        buf_printf(&b, ",\"v\":%u}", pick(x, 3));
        c->events[i] = line_of(&b);
    }
}

static void case_make(Case *c, uint64_t seed)
{
    memset(c, 0, sizeof *c);
    c->seed = seed;
    uint64_t x = seed ? seed : 1;
    for (int i = 0; i < 4; i++)   /* spread a small seed's bits */
        next_rand(&x);
    unsigned lateness_ms = chance(&x, 2) ? 0 : 1000;
    make_rules(c, &x, lateness_ms);
    make_events(c, &x, lateness_ms);
}

static void case_free(Case *c)
{
    free(c->time_decl);
    for (size_t i = 0; i < c->n_rules; i++)
        free(c->rules[i]);
    free(c->rules);
    for (size_t i = 0; i < c->n_events; i++)
        free(c->events[i]);
    free(c->events);
}

/* The rule file of every rule (only = SIZE_MAX) or of rule `only` alone; heap. */
static char *case_rule_text(const Case *c, size_t only)
{
    Buf b = BUF_INIT;
    buf_puts(&b, c->time_decl);
    for (size_t i = 0; i < c->n_rules; i++)
        if (only == SIZE_MAX || only == i)
            buf_puts(&b, c->rules[i]);
    return line_of(&b);
}

static void case_print(const Case *c, const char *what)
{
    fprintf(stderr, "test_records: case with seed %" PRIu64 ": %s\n"
            "(again: VIGIL_RECORDS_SEED=%" PRIu64 " VIGIL_RECORDS_CASES=1)\n--- rules\n%s",
            c->seed, what, c->seed, c->time_decl);
    for (size_t i = 0; i < c->n_rules; i++)
        fputs(c->rules[i], stderr);
    fputs("--- events\n", stderr);
    for (size_t i = 0; i < c->n_events; i++)
        fprintf(stderr, "%s\n", c->events[i]);
}

/* ---- runs ---------------------------------------------------------------------- */

/* The alerts of one run, "RULE KIND KEY TIME [STEP:EVENT...]" each, by rule name so
 * that a rule alone and in the set compare. Filled on the workers' threads, where a
 * failed assertion has no test to fail: an allocation failure is counted and asserted
 * after the run. */
typedef struct Alerts {
    pthread_mutex_t lock;
    const CompiledRuleSet *rs;
    char **lines;
    size_t n, cap;
    size_t lost;
} Alerts;

static bool alerts_push(Alerts *a, char *line)
{
    if (a->n == a->cap) {
        size_t cap = a->cap ? a->cap * 2 : 64;
        char **grown = realloc(a->lines, cap * sizeof *grown);
        if (!grown)
            return false;
        a->lines = grown;
        a->cap = cap;
    }
    a->lines[a->n++] = line;
    return true;
}

static void on_alert(void *user, size_t rule, const Value *key, size_t n_key,
                     const NfaResult *r, EvalScratch *scratch)
{
    (void)scratch;
    Alerts *a = user;
    Buf b = BUF_INIT;
    bool text_key = n_key == 1 && key[0].type == V_STR;
    buf_printf(&b, "%s %c %.*s %lld [", a->rs->rules[rule].name,
               r->kind == NFA_MATCH ? 'm' : 't', text_key ? (int)key[0].len : 1,
               text_key ? key[0].s : "?", (long long)(r->time_ms - BASE_TS));
    for (const MatchNode *n = r->last; n; n = n->prev)
        buf_printf(&b, " %u:%" PRIu64, (unsigned)n->step, n->event->id);
    buf_puts(&b, " ]");
    pthread_mutex_lock(&a->lock);
    if (b.failed || !alerts_push(a, b.data)) {
        a->lost++;
        buf_free(&b);
    }
    pthread_mutex_unlock(&a->lock);
}

static void alerts_init(Alerts *a)
{
    memset(a, 0, sizeof *a);
    pthread_mutex_init(&a->lock, NULL);
}

static void alerts_free(Alerts *a)
{
    for (size_t i = 0; i < a->n; i++)
        free(a->lines[i]);
    free(a->lines);
    pthread_mutex_destroy(&a->lock);
}

/* The counters a rule alone and in the set must agree on, by rule name. */
typedef struct Counts {
    uint64_t matches, timeouts, alerts, suppressed;
} Counts;

/* How to run: with `workers`, and with a checkpoint after event `cut` (SIZE_MAX:
 * none) restored into an engine with `workers_after`. */
typedef struct RunPlan {
    size_t workers;
    size_t cut;
    size_t workers_after;
} RunPlan;

static void feed(Engine *e, const Case *c, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++)
        ck_assert_int_eq(engine_line(e, c->events[i], strlen(c->events[i]), "events", i + 1, 0),
                         0);
}

static Engine *restored(Engine *e, const CompiledRuleSet *rs, EngineSink sink, size_t workers)
{
    Buf state = BUF_INIT;
    ck_assert_int_eq(engine_checkpoint(e, &state, NULL, NULL, NULL), 0);
    engine_free(e);
    e = test_engine_new(rs, sink, 0, workers);
    char *err = NULL;
    int rc = engine_restore(e, state.data, state.len, NULL, &err);
    ck_assert_msg(rc == 0, "restore: %s", err ? err : "?");
    buf_free(&state);
    return e;
}

/* Runs c's events to the end of input through rs; counts[i] gets rule i's. */
static void run(const Case *c, const CompiledRuleSet *rs, RunPlan plan, Alerts *out,
                Counts *counts)
{
    alerts_init(out);
    out->rs = rs;
    EngineSink sink = {on_alert, NULL, NULL, out};
    Engine *e = test_engine_new(rs, sink, 0, plan.workers);
    size_t cut = plan.cut < c->n_events ? plan.cut : c->n_events;
    feed(e, c, 0, cut);
    if (plan.cut != SIZE_MAX)
        e = restored(e, rs, sink, plan.workers_after);
    feed(e, c, cut, c->n_events);
    ck_assert_int_eq(engine_finish(e), 0);
    for (size_t i = 0; i < rs->n_rules; i++) {
        EngineRuleStats st;
        engine_rule_stats(e, i, &st);
        counts[i] = (Counts){st.matches, st.timeouts, st.alerts, st.suppressed};
    }
    engine_free(e);
    ck_assert_uint_eq(out->lost, 0);
}

/* ---- judging -------------------------------------------------------------------- */

/* Alert lines with their arrival order, for sorting by (rule, key) while keeping each
 * (rule, key)'s order. */
typedef struct Ranked {
    const char *line;
    size_t at;
} Ranked;

/* The length of a line's "RULE KIND KEY" without KIND: compared as rule and key. */
static int cmp_rule_key(const char *a, const char *b)
{
    size_t ra = strcspn(a, " "), rb = strcspn(b, " ");
    int d = strncmp(a, b, ra < rb ? ra : rb);
    if (d || ra != rb)
        return d ? d : (ra < rb ? -1 : 1);
    const char *ka = a + ra + 3, *kb = b + rb + 3;   /* past " K " */
    size_t la = strcspn(ka, " "), lb = strcspn(kb, " ");
    d = strncmp(ka, kb, la < lb ? la : lb);
    return d ? d : (la < lb ? -1 : la > lb ? 1 : 0);
}

static int cmp_ranked_by_rule_key(const void *pa, const void *pb)
{
    const Ranked *a = pa, *b = pb;
    int d = cmp_rule_key(a->line, b->line);
    return d ? d : (a->at < b->at ? -1 : a->at > b->at);
}

static int cmp_ranked_whole(const void *pa, const void *pb)
{
    const Ranked *a = pa, *b = pb;
    return strcmp(a->line, b->line);
}

/* The lines of several runs, one after the other, sorted by cmp; heap. */
static Ranked *ranked(const Alerts *runs, size_t n_runs, size_t *n,
                      int (*cmp)(const void *, const void *))
{
    *n = 0;
    for (size_t r = 0; r < n_runs; r++)
        *n += runs[r].n;
    Ranked *v = calloc(*n ? *n : 1, sizeof *v);
    ck_assert_ptr_nonnull(v);
    size_t k = 0;
    for (size_t r = 0; r < n_runs; r++)
        for (size_t i = 0; i < runs[r].n; i++, k++)
            v[k] = (Ranked){runs[r].lines[i], k};
    qsort(v, *n, sizeof *v, cmp);
    return v;
}

/* Whether got's lines equal want's under the order cmp gives (the whole line: the same
 * multiset; rule and key, then arrival: the same order per rule and key). On a
 * difference, prints the case and both lines around it, and returns false. */
static bool same_under(const Case *c, const char *what, const Alerts *got, size_t n_got,
                       const Alerts *want, size_t n_want, int (*cmp)(const void *, const void *),
                       const char *order)
{
    size_t ng, nw;
    Ranked *g = ranked(got, n_got, &ng, cmp), *w = ranked(want, n_want, &nw, cmp);
    size_t i = 0;
    while (i < ng && i < nw && !strcmp(g[i].line, w[i].line))
        i++;
    bool same = i == ng && i == nw;
    if (!same) {
        char msg[160];
        snprintf(msg, sizeof msg, "%s: alerts differ (%s), %zu against %zu", what, order, ng,
                 nw);
        case_print(c, msg);
        for (size_t j = i > 2 ? i - 2 : 0; j < i + 3 && (j < ng || j < nw); j++)
            fprintf(stderr, "  %zu: got  %s\n  %zu: want %s\n", j, j < ng ? g[j].line : "-", j,
                    j < nw ? w[j].line : "-");
    }
    free(g);
    free(w);
    return same;
}

static bool same_alerts(const Case *c, const char *what, const Alerts *got, size_t n_got,
                        const Alerts *want, size_t n_want)
{
    return same_under(c, what, got, n_got, want, n_want, cmp_ranked_whole, "as multisets") &&
           same_under(c, what, got, n_got, want, n_want, cmp_ranked_by_rule_key,
                      "in order per rule and key");
}

static bool same_counts(const Case *c, const char *what, const Counts *got, const Counts *want,
                        size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (!memcmp(&got[i], &want[i], sizeof got[i]))
            continue;
        char msg[256];
        snprintf(msg, sizeof msg, "%s: counters of r%zu differ: matches %" PRIu64 "/%" PRIu64
                 " timeouts %" PRIu64 "/%" PRIu64 " alerts %" PRIu64 "/%" PRIu64
                 " suppressed %" PRIu64 "/%" PRIu64, what, i, got[i].matches, want[i].matches,
                 got[i].timeouts, want[i].timeouts, got[i].alerts, want[i].alerts,
                 got[i].suppressed, want[i].suppressed);
        case_print(c, msg);
        return false;
    }
    return true;
}

/* What the cases reached, so that the test can say the generator covers what it is for. */
typedef struct Coverage {
    size_t alerts, timeouts, suppressed, shared_bytes;
} Coverage;

/* Rules keyed by user and by payee alerted on the same key bytes: their states shared
 * a record. */
static bool crossed_keys(const Case *c, const Alerts *set)
{
    unsigned by_user = 0, by_payee = 0;   /* bit N: key "uN" alerted */
    for (size_t i = 0; i < set->n; i++) {
        unsigned rule, key;
        char kind;
        if (sscanf(set->lines[i], "r%u %c u%u", &rule, &kind, &key) != 3 ||
            rule >= c->n_rules || key >= 32)
            continue;
        if (strstr(c->rules[rule], "key payee"))
            by_payee |= 1u << key;
        else
            by_user |= 1u << key;
    }
    return (by_user & by_payee) != 0;
}

/* One case: the set against each rule alone, with one worker and two, and cut by a
 * checkpoint; false (after printing it) on a difference. */
static bool case_holds(const Case *c, uint64_t *x, Coverage *cov)
{
    size_t n = c->n_rules;
    char *text = case_rule_text(c, SIZE_MAX);
    CompiledRuleSet *rs = test_rules_compile(text, NULL);
    free(text);
    ck_assert_uint_eq(rs->n_rules, n);
    Alerts set, alone[MAX_RULES];
    Counts set_counts[MAX_RULES] = {{0}}, alone_counts[MAX_RULES] = {{0}};
    run(c, rs, (RunPlan){1, SIZE_MAX, 1}, &set, set_counts);
    for (size_t i = 0; i < n; i++) {
        char *one = case_rule_text(c, i);
        CompiledRuleSet *rs1 = test_rules_compile(one, NULL);
        free(one);
        run(c, rs1, (RunPlan){1, SIZE_MAX, 1}, &alone[i], &alone_counts[i]);
        alone[i].rs = NULL;   /* its lines are text: the rule set may go */
        ruleset_free(rs1);
    }
    bool ok = same_alerts(c, "the set against its rules alone", &set, 1, alone, n) &&
              same_counts(c, "the set against its rules alone", set_counts, alone_counts, n);
    for (size_t i = 0; i < n; i++)
        alerts_free(&alone[i]);
    const RunPlan others[] = {
        {2, SIZE_MAX, 2},
        {1, pick(x, (unsigned)c->n_events + 1), 1},
        {1 + pick(x, 2), pick(x, (unsigned)c->n_events + 1), 1 + pick(x, 2)},
    };
    static const char *const names[] = {"two workers against one", "checkpointed against "
                                        "uninterrupted", "checkpointed (workers) against "
                                        "uninterrupted"};
    for (size_t k = 0; ok && k < sizeof others / sizeof others[0]; k++) {
        Alerts got;
        Counts got_counts[MAX_RULES] = {{0}};
        run(c, rs, others[k], &got, got_counts);
        char what[128];
        snprintf(what, sizeof what, "%s (workers %zu, cut after event %zu, then workers %zu)",
                 names[k], others[k].workers, others[k].cut, others[k].workers_after);
        ok = same_alerts(c, what, &got, 1, &set, 1) &&
             same_counts(c, what, got_counts, set_counts, n);
        alerts_free(&got);
    }
    for (size_t i = 0; i < n; i++) {
        cov->timeouts += set_counts[i].timeouts;
        cov->suppressed += set_counts[i].suppressed;
    }
    cov->alerts += set.n;
    cov->shared_bytes += crossed_keys(c, &set);
    alerts_free(&set);
    ruleset_free(rs);
    return ok;
}

static size_t env_size(const char *name, size_t otherwise)
{
    const char *v = getenv(name);
    return v && *v ? (size_t)strtoull(v, NULL, 0) : otherwise;
}

START_TEST(every_rule_behaves_as_if_alone)
{
    uint64_t base = env_size("VIGIL_RECORDS_SEED", 0x5eedf00d);
    size_t cases = env_size("VIGIL_RECORDS_CASES", getenv("VIGIL_TEST_SMALL") ? 40 : 150);
    Coverage cov = {0};
    for (size_t i = 0; i < cases; i++) {
        Case c;
        case_make(&c, base + i);
        uint64_t x = c.seed ^ 0x9e3779b97f4a7c15ull;
        bool ok = case_holds(&c, &x, &cov);
        case_free(&c);
        ck_assert_msg(ok, "case with seed %" PRIu64 " differs (the case is on stderr)", base + i);
    }
    if (cases >= 40) {   /* the stream reaches what the test is about */
        ck_assert_uint_gt(cov.alerts, 10 * cases);
        ck_assert_uint_gt(cov.timeouts, cases);
        ck_assert_uint_gt(cov.suppressed, cases);
        ck_assert_uint_gt(cov.shared_bytes, cases / 4);
    }
}
END_TEST

/* The smallest form of a case the generator found: a rule that alerts on one event
 * holds no matcher state for its key, only the end of the key's suppression; a
 * checkpoint taken inside that suppression must keep it, or the restored run alerts
 * where the uninterrupted one suppresses. */
START_TEST(suppression_without_state_survives_a_checkpoint)
{
    Case c = {0};
    c.time_decl = strdup("time ts epoch_ms;\n");
    char *rules[] = {strdup("rule once { key user; begin a where type == \"d\"; suppress 10s; "
                            "on match alert \"m\"; }\n")};
    char *events[] = {strdup("{\"ts\":1767225600000,\"type\":\"d\",\"user\":\"u0\"}"),
                      strdup("{\"ts\":1767225601000,\"type\":\"d\",\"user\":\"u0\"}")};
    c.rules = rules;
    c.n_rules = 1;
    c.events = events;
    c.n_events = 2;
    char *text = case_rule_text(&c, SIZE_MAX);
    CompiledRuleSet *rs = test_rules_compile(text, NULL);
    free(text);
    Alerts whole, cut;
    Counts whole_counts[1], cut_counts[1];
    run(&c, rs, (RunPlan){1, SIZE_MAX, 1}, &whole, whole_counts);
    run(&c, rs, (RunPlan){1, 1, 1}, &cut, cut_counts);
    ck_assert_uint_eq(whole.n, 1);
    ck_assert_uint_eq(whole_counts[0].suppressed, 1);
    bool ok = same_alerts(&c, "checkpointed inside a suppression", &cut, 1, &whole, 1) &&
              same_counts(&c, "checkpointed inside a suppression", cut_counts, whole_counts, 1);
    alerts_free(&whole);
    alerts_free(&cut);
    ruleset_free(rs);
    free(c.time_decl);
    free(rules[0]);
    free(events[0]);
    free(events[1]);
    ck_assert_msg(ok, "the restored run lost the key's suppression (the case is on stderr)");
}
END_TEST

static Suite *records_suite(void)
{
    Suite *s = suite_create("records");
    TCase *tc = tcase_create("differential");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, every_rule_behaves_as_if_alone);
    tcase_add_test(tc, suppression_without_state_survives_a_checkpoint);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run_suite(records_suite());
}

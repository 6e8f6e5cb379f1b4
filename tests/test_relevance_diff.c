/* tests/test_relevance_diff.c — relevance on and off give the same alerts.
 *
 * For every conformance rule set (VIGIL_SHARED), every examples/ rule file and a file
 * of many relaxed and strict shapes (tests/data/relevance), the same events run
 * through the engine twice with one worker and twice with two (whose routers send
 * strict rules' irrelevant events as blanks), the rules compiled with relevance and without
 * (RuleSetOptions.all_relevant); the alerts (rule, kind, time, key, every matched
 * event) and every counter must be identical. The events are the sources' own cases
 * and random ones made from the values the cases use, with times out of order, with
 * and without lateness, and with a small cap on partial matches per key. */
#include <check.h>
#include <glob.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "rules/ruleset.h"
#include "runtime/engine.h"
#include "tests/checkmain.h"
#include "tests/rulesutil.h"
#include "tests/testutil.h"

/* ---- files ------------------------------------------------------------------ */

/* The whole file; fails the test when it cannot be opened. */
static char *read_text(const char *path)
{
    char *text = test_read_file(path, NULL);
    ck_assert_msg(text != NULL, "cannot open %s", path);
    return text;
}

typedef struct Lines {
    char **v;
    size_t n, cap;
} Lines;

static void lines_push(Lines *l, char *line)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->v = realloc(l->v, l->cap * sizeof *l->v);
        ck_assert_ptr_nonnull(l->v);
    }
    l->v[l->n++] = line;
}

static void lines_free(Lines *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    *l = (Lines){0};
}

/* The non-empty lines of a file. */
static Lines read_lines(const char *path)
{
    char *text = read_text(path);
    Lines l = {0};
    for (char *p = text, *nl; *p; p = nl + (*nl != '\0')) {
        nl = strchr(p, '\n');
        if (!nl)
            nl = p + strlen(p);
        if (nl > p)
            lines_push(&l, strndup(p, (size_t)(nl - p)));
    }
    free(text);
    return l;
}

static CompiledRuleSet *compile_text(const char *text, bool all_relevant)
{
    RuleSetOptions opts = {.all_relevant = all_relevant};
    return test_rules_compile_with(text, NULL, &opts);
}

/* ---- running ------------------------------------------------------------------ */

/* What a run writes to: workers alert from their own threads. */
typedef struct Output {
    pthread_mutex_t lock;
    Buf text;
} Output;

static void on_alert(void *user, size_t rule, const Value *key, size_t n_key,
                     const NfaResult *r, EvalScratch *scratch)
{
    (void)scratch;
    Output *o = user;
    pthread_mutex_lock(&o->lock);
    Buf *out = &o->text;
    buf_printf(out, "%zu %s %lld", rule, r->kind == NFA_MATCH ? "match" : "timeout",
               (long long)r->time_ms);
    for (size_t k = 0; k < n_key; k++) {
        buf_putc(out, ' ');
        value_to_json(&key[k], out);
    }
    buf_puts(out, " |");
    for (const MatchNode *m = r->last; m; m = m->prev)
        buf_printf(out, " %u:%llu", (unsigned)m->step, (unsigned long long)m->event->id);
    buf_putc(out, '\n');
    pthread_mutex_unlock(&o->lock);
}

static void on_dead(void *user, const char *origin, uint64_t line_no, const char *reason,
                    const char *text, size_t len)
{
    (void)origin, (void)text, (void)len;
    Output *o = user;
    pthread_mutex_lock(&o->lock);
    buf_printf(&o->text, "dead %llu %s\n", (unsigned long long)line_no, reason);
    pthread_mutex_unlock(&o->lock);
}

static void on_late(void *user, const Event *ev, int64_t watermark)
{
    Output *o = user;
    pthread_mutex_lock(&o->lock);
    buf_printf(&o->text, "late %llu %lld\n", (unsigned long long)ev->origin_line,
               (long long)watermark);
    pthread_mutex_unlock(&o->lock);
}

static int cmp_lines(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The lines of text sorted: runs whose threads interleave differently compare. */
static char *sorted_lines(char *text)
{
    Lines l = {0};
    for (char *p = text, *nl; *p; p = nl + 1) {
        nl = strchr(p, '\n');
        ck_assert_ptr_nonnull(nl);
        lines_push(&l, strndup(p, (size_t)(nl - p)));
    }
    if (l.n)
        qsort(l.v, l.n, sizeof *l.v, cmp_lines);
    Buf out = BUF_INIT;
    for (size_t i = 0; i < l.n; i++)
        buf_printf(&out, "%s\n", l.v[i]);
    lines_free(&l);
    free(text);
    ck_assert(!out.failed);
    return out.data ? buf_steal(&out) : strdup("");
}

/* Alerts, dead letters, late events, then every counter, as text; with more than one
 * worker the lines sorted and without the counters. */
static char *run(const CompiledRuleSet *rs, const Lines *lines, size_t max_partials,
                 size_t workers)
{
    Output out = {.text = BUF_INIT};
    pthread_mutex_init(&out.lock, NULL);
    Engine *e = test_engine_new(rs, (EngineSink){on_alert, on_dead, on_late, &out},
                                max_partials, workers);
    for (size_t i = 0; i < lines->n; i++)
        ck_assert_int_eq(engine_line(e, lines->v[i], strlen(lines->v[i]), "t", i + 1,
                                     (int64_t)i * 1000), 0);
    ck_assert_int_eq(engine_finish(e), 0);
    if (workers == 1)
        engine_stats_json(e, &out.text);
    engine_free(e);
    pthread_mutex_destroy(&out.lock);
    ck_assert(!out.text.failed);
    char *text = out.text.data ? buf_steal(&out.text) : strdup("");
    return workers == 1 ? text : sorted_lines(text);
}

/* The first line where a and b differ, for the failure message. */
static void report_difference(const char *what, const char *a, const char *b)
{
    size_t line = 1, i = 0;
    for (; a[i] && a[i] == b[i]; i++)
        line += a[i] == '\n';
    size_t from = i;
    while (from > 0 && a[from - 1] != '\n')
        from--;
    ck_abort_msg("%s: relevance on and off differ at output line %zu:\n  on:  %.*s\n  off: %.*s",
                 what, line, (int)strcspn(a + from, "\n"), a + from,
                 (int)strcspn(b + from, "\n"), b + from);
}

/* ---- random events from the values the cases use --------------------------------- */

typedef struct Member {
    char *name;                /* the JSON member name, with its quotes */
    Lines values;              /* raw JSON values seen */
} Member;

typedef struct Vocab {
    Member *m;
    size_t n;
} Vocab;

static const char *skip_string(const char *p)
{
    for (p++; *p && *p != '"'; p++)
        if (*p == '\\' && p[1])
            p++;
    return *p ? p + 1 : p;
}

/* The end of the JSON value at p (strings, nesting and scalars). */
static const char *skip_value(const char *p)
{
    int depth = 0;
    for (; *p; p++) {
        if (*p == '"') {
            p = skip_string(p) - 1;
        } else if (*p == '{' || *p == '[') {
            depth++;
        } else if (*p == '}' || *p == ']') {
            if (depth-- == 0)
                return p;
        } else if (*p == ',' && depth == 0) {
            return p;
        }
    }
    return p;
}

static void vocab_add(Vocab *v, const char *name, size_t nlen, const char *val, size_t vlen)
{
    size_t i = 0;
    while (i < v->n && (strlen(v->m[i].name) != nlen || strncmp(v->m[i].name, name, nlen)))
        i++;
    if (i == v->n) {
        v->m = realloc(v->m, (v->n + 1) * sizeof *v->m);
        ck_assert_ptr_nonnull(v->m);
        v->m[v->n++] = (Member){strndup(name, nlen), {0}};
    }
    lines_push(&v->m[i].values, strndup(val, vlen));
}

/* The top-level members of a flat or nested JSON object line, but the time. */
static void vocab_learn(Vocab *v, const char *line)
{
    const char *p = strchr(line, '{');
    if (!p)
        return;
    for (p++;;) {
        while (*p == ' ' || *p == ',' || *p == '\t')
            p++;
        if (*p != '"')
            return;
        const char *name = p, *name_end = skip_string(p);
        p = name_end;
        while (*p == ' ' || *p == ':')
            p++;
        const char *val = p, *end = skip_value(p);
        while (end > val && end[-1] == ' ')
            end--;
        if (strncmp(name, "\"ts\"", 4) != 0)
            vocab_add(v, name, (size_t)(name_end - name), val, (size_t)(end - val));
        p = skip_value(p);
        if (*p != ',')
            return;
    }
}

static void vocab_free(Vocab *v)
{
    for (size_t i = 0; i < v->n; i++) {
        free(v->m[i].name);
        lines_free(&v->m[i].values);
    }
    free(v->m);
}

static uint64_t next_rand(uint64_t *seed)
{
    *seed = *seed * 6364136223846793005u + 1442695040888963407u;
    return *seed >> 33;
}

/* n events: members present with probability 3/4, each with a value the cases used;
 * times (epoch seconds) rising by up to `scale`, one in six going back up to three
 * times that. */
static Lines random_events(const Vocab *v, size_t n, uint64_t seed, int64_t scale)
{
    Lines l = {0};
    int64_t t = 1767261600;
    for (size_t i = 0; i < n; i++) {
        t += (int64_t)(next_rand(&seed) % (uint64_t)(scale + 1));
        int64_t ts = next_rand(&seed) % 6 == 0
                         ? t - (int64_t)(next_rand(&seed) % (uint64_t)(3 * scale + 1))
                         : t;
        Buf b = BUF_INIT;
        buf_printf(&b, "{\"ts\":%lld", (long long)ts);
        for (size_t k = 0; k < v->n; k++) {
            if (next_rand(&seed) % 4 == 0)
                continue;
            const Lines *vals = &v->m[k].values;
            buf_printf(&b, ",%s:%s", v->m[k].name, vals->v[next_rand(&seed) % vals->n]);
        }
        buf_putc(&b, '}');
        ck_assert(!b.failed);
        lines_push(&l, buf_steal(&b));
    }
    return l;
}

/* ---- the comparison ------------------------------------------------------------ */

typedef struct Totals {
    size_t runs, relevant_rules, alert_lines;
} Totals;

static size_t count_lines(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* One rule text against one event stream, on and off, with and without a cap. */
static void compare(const char *what, const CompiledRuleSet *on, const CompiledRuleSet *off,
                    const Lines *events, Totals *tot)
{
    static const size_t caps[] = {64, 2};   /* without within, partial matches pile up */
    for (size_t c = 0; c < sizeof caps / sizeof caps[0]; c++) {
        char *a = run(on, events, caps[c], 1), *b = run(off, events, caps[c], 1);
        if (strcmp(a, b) != 0)
            report_difference(what, a, b);
        tot->runs++;
        tot->alert_lines += count_lines(a);
        free(a);
        free(b);
        /* the workers' routers send strict rules' irrelevant events as blanks */
        a = run(on, events, caps[c], 2);
        b = run(off, events, caps[c], 2);
        if (strcmp(a, b) != 0)
            report_difference(what, a, b);
        free(a);
        free(b);
    }
}

static size_t small(size_t n)
{
    return getenv("VIGIL_TEST_SMALL") ? n / 4 : n;
}

/* A rule text with lateness where it has none: "time ts;" becomes "time ts lateness 20s;". */
static char *with_lateness(const char *text)
{
    const char *at = strstr(text, "time ts;");
    if (!at)
        return NULL;
    Buf b = BUF_INIT;
    buf_printf(&b, "%.*stime ts lateness 20s;%s", (int)(at - text), text, at + 8);
    ck_assert(!b.failed);
    return buf_steal(&b);
}

static void compare_text(const char *rules_path, const char *text, const Lines *cases,
                         size_t n_cases, const Vocab *vocab, Totals *tot)
{
    CompiledRuleSet *on = compile_text(text, false), *off = compile_text(text, true);
    for (size_t i = 0; i < on->n_rules; i++)
        tot->relevant_rules += on->rules[i].relevance_text != NULL;
    for (size_t i = 0; i < n_cases; i++)
        compare(rules_path, on, off, &cases[i], tot);
    static const int64_t scales[] = {2, 30, 200};
    for (size_t s = 0; vocab->n && s < sizeof scales / sizeof scales[0]; s++) {
        Lines ev = random_events(vocab, small(400), 1000 + s, scales[s]);
        compare(rules_path, on, off, &ev, tot);
        lines_free(&ev);
    }
    ruleset_free(on);
    ruleset_free(off);
}

/* A rule file and the event files of its cases, compared as written and with lateness. */
static void compare_source(const char *rules_path, const char *events_glob, Totals *tot)
{
    glob_t g;
    int rc = glob(events_glob, 0, NULL, &g);
    ck_assert_msg(rc == 0 || rc == GLOB_NOMATCH, "glob %s", events_glob);
    size_t n = rc == 0 ? g.gl_pathc : 0;
    Lines *cases = calloc(n ? n : 1, sizeof *cases);
    ck_assert_ptr_nonnull(cases);
    Vocab vocab = {0};
    for (size_t i = 0; i < n; i++) {
        cases[i] = read_lines(g.gl_pathv[i]);
        for (size_t k = 0; k < cases[i].n; k++)
            vocab_learn(&vocab, cases[i].v[k]);
    }
    char *text = read_text(rules_path);
    compare_text(rules_path, text, cases, n, &vocab, tot);
    char *late = with_lateness(text);
    if (late)
        compare_text(rules_path, late, cases, n, &vocab, tot);
    free(late);
    free(text);
    for (size_t i = 0; i < n; i++)
        lines_free(&cases[i]);
    free(cases);
    vocab_free(&vocab);
    if (rc == 0)
        globfree(&g);
}

/* Each rule file of g with the events of the cases beside it (DIR/cases/NAME.events.jsonl). */
static void compare_sources(const glob_t *g, Totals *tot)
{
    for (size_t i = 0; i < g->gl_pathc; i++) {
        char events[4096];
        const char *slash = strrchr(g->gl_pathv[i], '/');
        snprintf(events, sizeof events, "%.*s/cases/*.events.jsonl",
                 (int)(slash - g->gl_pathv[i]), g->gl_pathv[i]);
        compare_source(g->gl_pathv[i], events, tot);
    }
}

START_TEST(shapes_on_and_off_agree)
{
    const char *top = getenv("top_srcdir");
    ck_assert_msg(top != NULL, "top_srcdir is not set");
    char rules[4096], events[4096];
    snprintf(rules, sizeof rules, "%s/tests/data/relevance/shapes.cep", top);
    snprintf(events, sizeof events, "%s/tests/data/relevance/*.events.jsonl", top);
    Totals tot = {0};
    compare_source(rules, events, &tot);
    /* the shapes file must exercise the relevance, and its events must alert */
    ck_assert_uint_ge(tot.relevant_rules, 2 * 10);
    ck_assert_uint_gt(tot.alert_lines, tot.runs * 30);
}
END_TEST

START_TEST(examples_on_and_off_agree)
{
    const char *top = getenv("top_srcdir");
    ck_assert_msg(top != NULL, "top_srcdir is not set");
    char pattern[4096];
    snprintf(pattern, sizeof pattern, "%s/examples/*/*.cep", top);
    glob_t g;
    ck_assert_int_eq(glob(pattern, 0, NULL, &g), 0);
    Totals tot = {0};
    compare_sources(&g, &tot);
    ck_assert_uint_ge(g.gl_pathc, 3);
    ck_assert_uint_gt(tot.relevant_rules, 0);
    globfree(&g);
}
END_TEST

START_TEST(conformance_on_and_off_agree)
{
    const char *shared = getenv("VIGIL_SHARED");
    char pattern[4096];
    snprintf(pattern, sizeof pattern, "%s/conformance/*/rules.cep", shared ? shared : "");
    glob_t g;
    if (!shared || glob(pattern, 0, NULL, &g) != 0) {
        fprintf(stderr, "skipped: no conformance cases (VIGIL_SHARED=%s)\n",
                shared ? shared : "");
        return;
    }
    Totals tot = {0};
    compare_sources(&g, &tot);
    ck_assert_uint_gt(tot.relevant_rules, 0);
    globfree(&g);
}
END_TEST

static Suite *diff_suite(void)
{
    Suite *s = suite_create("relevance_diff");
    TCase *tc = tcase_create("on_off");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, shapes_on_and_off_agree);
    tcase_add_test(tc, examples_on_and_off_agree);
    tcase_add_test(tc, conformance_on_and_off_agree);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run_suite(diff_suite());
}

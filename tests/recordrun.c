/* tests/recordrun.c — see recordrun.h. */
#include "tests/recordrun.h"

#include <check.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/rulesutil.h"

static void on_alert(void *user, size_t rule, const Value *key, size_t n_key,
                     const NfaResult *res, EvalScratch *scratch)
{
    (void)scratch;
    RecordRun *r = user;
    bool text_key = n_key == 1 && key[0].type == V_STR;
    buf_printf(&r->alerts, "%s %c %.*s %lld [", r->rs->rules[rule].name,
               res->kind == NFA_MATCH ? 'm' : 't', text_key ? (int)key[0].len : 1,
               text_key ? key[0].s : "?", (long long)(res->time_ms - RR_BASE));
    for (const MatchNode *n = res->last; n; n = n->prev)
        buf_printf(&r->alerts, " %u:%" PRIu64, (unsigned)n->step, n->event->id);
    buf_printf(&r->alerts, " ] @%zu\n", r->line);
}

static EngineSink sink_of(RecordRun *r)
{
    return (EngineSink){on_alert, NULL, NULL, r};
}

static Engine *engine_for(RecordRun *r)
{
    Engine *e = test_engine_new(r->rs, sink_of(r), 0, 1);
    engine_set_limits(e, &r->limits);
    return e;
}

void rr_open(RecordRun *r, const char *rules, size_t max_memory)
{
    memset(r, 0, sizeof *r);
    r->alerts = (Buf)BUF_INIT;
    r->limits.max_memory = max_memory;
    r->rs = test_rules_compile(rules, NULL);
    r->e = engine_for(r);
}

void rr_close(RecordRun *r)
{
    engine_free(r->e);
    ruleset_free(r->rs);
    buf_free(&r->alerts);
}

static void restart(RecordRun *r)
{
    Buf state = BUF_INIT;
    ck_assert_int_eq(engine_checkpoint(r->e, &state, NULL, NULL, NULL), 0);
    engine_free(r->e);
    r->e = engine_for(r);
    char *err = NULL;
    int rc = engine_restore(r->e, state.data, state.len, NULL, &err);
    ck_assert_msg(rc == 0, "restore: %s", err ? err : "?");
    buf_free(&state);
}

void rr_feed(RecordRun *r, const char *line)
{
    if (strcmp(line, RR_RESTART) == 0) {
        restart(r);
        return;
    }
    long long t = 0;
    char user[32], type[32];
    unsigned v = 0;
    int got = sscanf(line, "%lld %31s %31s %u", &t, user, type, &v);
    ck_assert_msg(got >= 3, "bad script line: %s", line);
    char json[160];
    int n = snprintf(json, sizeof json, "{\"ts\":%lld,\"user\":\"%s\",\"type\":\"%s\",\"v\":%u}",
                     RR_BASE + t, user, type, v);
    r->line++;
    ck_assert_int_eq(engine_line(r->e, json, (size_t)n, "events", r->line, 0), 0);
}

void rr_feed_script(RecordRun *r, const char *const *script, size_t from, size_t to)
{
    for (size_t i = from; i < to && script[i]; i++)
        rr_feed(r, script[i]);
}

void rr_finish(RecordRun *r)
{
    ck_assert_int_eq(engine_finish(r->e), 0);
}

EngineRuleStats rr_stats(const RecordRun *r, const char *name)
{
    for (size_t i = 0; i < r->rs->n_rules; i++)
        if (strcmp(r->rs->rules[i].name, name) == 0) {
            EngineRuleStats st;
            engine_rule_stats(r->e, i, &st);
            return st;
        }
    ck_abort_msg("no rule %s", name);
    return (EngineRuleStats){0};
}

uint64_t rr_memory(const RecordRun *r)
{
    EngineStats st;
    engine_stats(r->e, &st);
    return st.memory_bytes;
}

char *rr_alerts_of(const RecordRun *r, const char *name, const char *key)
{
    Buf out = BUF_INIT;
    size_t nl = strlen(name), kl = strlen(key);
    const char *p = r->alerts.data, *end = p + r->alerts.len;
    while (p && p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        size_t len = (size_t)(eol - p) + 1;
        /* "NAME K KEY ..." */
        if (len > nl + 3 + kl && memcmp(p, name, nl) == 0 && p[nl] == ' ' &&
            memcmp(p + nl + 3, key, kl) == 0 && p[nl + 3 + kl] == ' ')
            buf_append(&out, p, len);
        p = eol + 1;
    }
    buf_putc(&out, '\0');
    ck_assert(!out.failed);
    return buf_steal(&out);
}

/* The set's time declaration (its first line), then one of its rules. */
static char *alone_text(const char *rules, const char *rule, size_t len)
{
    Buf b = BUF_INIT;
    const char *nl = strchr(rules, '\n');
    ck_assert_ptr_nonnull(nl);
    buf_append(&b, rules, (size_t)(nl - rules) + 1);
    buf_append(&b, rule, len);
    buf_putc(&b, '\n');
    ck_assert(!b.failed);
    return buf_steal(&b);
}

static void assert_same_counts(const char *name, const EngineRuleStats *in_set,
                               const EngineRuleStats *alone)
{
    ck_assert_msg(in_set->matches == alone->matches && in_set->timeouts == alone->timeouts &&
                      in_set->alerts == alone->alerts &&
                      in_set->suppressed == alone->suppressed &&
                      in_set->partials_live == alone->partials_live &&
                      in_set->keys_live == alone->keys_live,
                  "rule %s: counters in the set (matches %" PRIu64 ", timeouts %" PRIu64
                  ", alerts %" PRIu64 ", suppressed %" PRIu64 ", partials_live %" PRIu64
                  ", keys_live %" PRIu64 ") differ from alone (%" PRIu64 ", %" PRIu64
                  ", %" PRIu64 ", %" PRIu64 ", %" PRIu64 ", %" PRIu64 ")",
                  name, in_set->matches, in_set->timeouts, in_set->alerts, in_set->suppressed,
                  in_set->partials_live, in_set->keys_live, alone->matches, alone->timeouts,
                  alone->alerts, alone->suppressed, alone->partials_live, alone->keys_live);
}

static void assert_rule_as_alone(const RecordRun *set, const char *rules, const char *rule,
                                 size_t len, const char *const *script,
                                 const char *const *keys, size_t max_memory)
{
    char name[64];
    ck_assert_int_eq(sscanf(rule, "rule %63s", name), 1);
    char *text = alone_text(rules, rule, len);
    RecordRun alone;
    rr_open(&alone, text, max_memory);
    free(text);
    rr_feed_script(&alone, script, 0, SIZE_MAX);
    rr_finish(&alone);
    for (size_t k = 0; keys[k]; k++) {
        char *got = rr_alerts_of(set, name, keys[k]), *want = rr_alerts_of(&alone, name, keys[k]);
        ck_assert_msg(strcmp(got, want) == 0, "rule %s, key %s: in the set\n%salone\n%s", name,
                      keys[k], got, want);
        free(got);
        free(want);
    }
    EngineRuleStats in_set = rr_stats(set, name), by_itself = rr_stats(&alone, name);
    assert_same_counts(name, &in_set, &by_itself);
    rr_close(&alone);
}

void rr_assert_as_if_alone(const char *rules, const char *const *script,
                           const char *const *keys, size_t max_memory)
{
    RecordRun set;
    rr_open(&set, rules, max_memory);
    rr_feed_script(&set, script, 0, SIZE_MAX);
    rr_finish(&set);
    const char *line = strchr(rules, '\n');
    ck_assert_ptr_nonnull(line);
    for (line++; *line;) {
        const char *eol = strchr(line, '\n');
        size_t len = eol ? (size_t)(eol - line) : strlen(line);
        if (len)
            assert_rule_as_alone(&set, rules, line, len, script, keys, max_memory);
        line += len + (eol != NULL);
    }
    rr_close(&set);
}

/* tests/test_nfa_harness.c — see test_nfa_harness.h. */
#include "tests/test_nfa_harness.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "dsl/check.h"
#include "dsl/diag.h"
#include "dsl/parse.h"
#include "nfa/event.h"
#include "nfa/expr.h"
#include "runtime/decode.h"
#include "runtime/evtime.h"

typedef struct NhRule {
    const Rule *ast;
    Nfa *nfa;
    CExpr *filter;
    NfaKey keys[NH_MAX_KEYS];    /* one per partition, in place as the runtime's
                                    partition entries hold them; events go to
                                    keys[cur_key] */
    bool on_match, on_timeout;
} NhRule;

typedef struct StrList {
    char **v;
    size_t n, cap;
} StrList;

struct NfaHarness {
    RuleSet *rs;
    FieldTable ft;
    Decoder *dec;
    NhRule *rules;
    NfaWork *work;           /* the matcher's scratch, for every rule */
    size_t n_rules;
    int id_slot, ts_slot, ms_slot;
    int flags;
    uint64_t next_id;
    EvalScratch *scratch;
    NfaLimits limits;
    NfaCounters counters;
    NfaCondShare *share;       /* NH_SHARE_CONDS */
    NfaCondCache *cache;
    StrList results;
    size_t cur_rule;
    size_t cur_key;
    bool oom;
};

static char *heap_printf(const char *fmt, const char *a, const char *b)
{
    Buf m = BUF_INIT;
    buf_printf(&m, fmt, a ? a : "", b ? b : "");
    return buf_steal(&m);
}

static void str_push(StrList *l, char *s, bool *oom)
{
    if (!s) {
        *oom = true;
        return;
    }
    if (l->n == l->cap) {
        size_t nc = l->cap ? 2 * l->cap : 16;
        char **v = realloc(l->v, nc * sizeof *v);
        if (!v) {
            free(s);
            *oom = true;
            return;
        }
        l->v = v;
        l->cap = nc;
    }
    l->v[l->n++] = s;
}

static void str_free(StrList *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
    l->v = NULL;
    l->n = l->cap = 0;
}

static int intern(FieldTable *ft, const char *name)
{
    PathSeg seg = {.name = name};
    return field_table_intern(ft, &seg, 1);
}

/* ---- results ------------------------------------------------------------------ */

static void append_id(Buf *b, const Event *ev, int id_slot)
{
    const Value *v = &ev->slots[id_slot];
    if (v->type == V_STR)
        buf_append(b, v->s, v->len);
    else if (v->raw)
        buf_append(b, v->raw, v->raw_len);
    else
        buf_puts(b, "?");
}

static void result_text(const NfaHarness *h, const NhRule *r, const NfaResult *res, Buf *b)
{
    if (h->flags & NH_WITH_RULE)
        buf_printf(b, "%s|", r->ast->name);
    buf_puts(b, res->kind == NFA_MATCH ? "match" : "timeout");
    if (h->flags & NH_WITH_TIME)
        buf_printf(b, "@%lld", (long long)res->time_ms);
    size_t n_steps = nfa_step_count(r->nfa);
    for (size_t s = 0; s < n_steps; s++) {
        /* the chain is newest first: gather this step's events, then print oldest first */
        const MatchNode *mine[256];
        size_t n = 0;
        for (const MatchNode *m = res->last; m; m = m->prev)
            if (m->step == s && n < 256)
                mine[n++] = m;
        if (n == 0)
            continue;
        buf_printf(b, " %s:[", nfa_step_name(r->nfa, s));
        for (size_t i = n; i-- > 0;) {
            append_id(b, mine[i]->event, h->id_slot);
            if (i > 0)
                buf_putc(b, ',');
        }
        buf_putc(b, ']');
    }
}

static void on_result(void *user, const NfaResult *res)
{
    NfaHarness *h = user;
    const NhRule *r = &h->rules[h->cur_rule];
    if (h->flags & NH_BY_ACTIONS) {
        if (res->kind == NFA_MATCH && !r->on_match)
            return;
        if (res->kind == NFA_TIMEOUT && !r->on_timeout)
            return;
    }
    Buf b = BUF_INIT;
    result_text(h, r, res, &b);
    if (b.failed) {
        buf_free(&b);
        h->oom = true;
        return;
    }
    str_push(&h->results, buf_steal(&b), &h->oom);
}

/* ---- setup -------------------------------------------------------------------- */

static char *diags_text(const Diags *d)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    diags_print(d, f);
    fclose(f);
    return text;
}

static bool parse_rules(NfaHarness *h, const char *text, char **err)
{
    Diags d;
    diags_init(&d);
    h->rs = ast_ruleset_new();
    if (!h->rs) {
        diags_free(&d);
        return false;
    }
    dsl_parse_text(h->rs, "test.cep", text, strlen(text), &d);
    if (d.errors == 0)
        dsl_check(h->rs, &d);
    bool ok = d.errors == 0;
    if (!ok)
        *err = diags_text(&d);
    diags_free(&d);
    return ok;
}

static bool rule_has(const Rule *r, ActionTrigger t)
{
    for (size_t i = 0; i < r->n_on; i++)
        if (r->on[i].trigger == t)
            return true;
    return false;
}

static bool compile_rules(NfaHarness *h, char **err)
{
    h->n_rules = h->rs->n_rules;
    h->rules = calloc(h->n_rules ? h->n_rules : 1, sizeof *h->rules);
    if (!h->rules)
        return false;
    for (size_t i = 0; i < h->n_rules; i++) {
        const Rule *r = &h->rs->rules[i];
        NhRule *nr = &h->rules[i];
        ExprEnv env = {.fields = &h->ft, .rule = r};
        char *e = NULL;
        nr->ast = r;
        for (size_t k = 0; k < NH_MAX_KEYS; k++)
            nfa_key_init(&nr->keys[k]);
        nr->on_match = rule_has(r, ON_MATCH);
        nr->on_timeout = rule_has(r, ON_TIMEOUT);
        nr->nfa = nfa_compile(r, &env, &e);
        if (nr->nfa && r->filter)
            nr->filter = expr_compile(r->filter, &env, &e);
        if (!nr->nfa || (r->filter && !nr->filter)) {
            *err = heap_printf("rule %s: %s", r->name, e ? e : "compile failed");
            free(e);
            return false;
        }
    }
    return true;
}

static bool make_work(NfaHarness *h)
{
    const Nfa **nfas = malloc((h->n_rules ? h->n_rules : 1) * sizeof *nfas);
    if (!nfas)
        return false;
    for (size_t i = 0; i < h->n_rules; i++)
        nfas[i] = h->rules[i].nfa;
    h->work = nfa_work_new(nfas, h->n_rules);
    free(nfas);
    return h->work != NULL;
}

static bool share_conditions(NfaHarness *h)
{
    const Nfa **nfas = malloc((h->n_rules ? h->n_rules : 1) * sizeof *nfas);
    if (!nfas)
        return false;
    for (size_t i = 0; i < h->n_rules; i++)
        nfas[i] = h->rules[i].nfa;
    h->share = nfa_cond_share_new(nfas, h->n_rules);
    free(nfas);
    h->cache = h->share ? nfa_cond_cache_new(h->share) : NULL;
    return h->cache != NULL;
}

NfaHarness *nh_new(const char *text, int flags, size_t max_partials, char **err)
{
    *err = NULL;
    NfaHarness *h = calloc(1, sizeof *h);
    if (!h)
        return NULL;
    h->flags = flags;
    h->limits.max_partials = max_partials;
    field_table_init(&h->ft);
    h->id_slot = intern(&h->ft, "id");
    h->ts_slot = intern(&h->ft, "ts");
    h->ms_slot = intern(&h->ft, "ms");
    h->scratch = expr_scratch_new();
    bool ok = h->scratch && parse_rules(h, text, err) && compile_rules(h, err) && make_work(h);
    if (ok) {
        h->dec = decoder_new(&h->ft, DECODE_MAX_DEPTH);
        ok = h->dec != NULL;
    }
    if (ok && (flags & NH_SHARE_CONDS))
        ok = share_conditions(h);
    if (!ok) {
        if (!*err)
            *err = heap_printf("harness setup failed%s%s", "", "");
        nh_free(h);
        return NULL;
    }
    return h;
}

void nh_free(NfaHarness *h)
{
    if (!h)
        return;
    for (size_t i = 0; h->rules && i < h->n_rules; i++) {
        for (size_t k = 0; k < NH_MAX_KEYS; k++)
            nfa_key_clear(&h->rules[i].keys[k], &h->counters);
        nfa_free(h->rules[i].nfa);
        expr_free(h->rules[i].filter);
    }
    free(h->rules);
    nfa_work_free(h->work);
    if (h->dec)
        decoder_free(h->dec);
    nfa_cond_cache_free(h->cache);
    nfa_cond_share_free(h->share);
    if (h->scratch)
        expr_scratch_free(h->scratch);
    field_table_free(&h->ft);
    if (h->rs)
        ast_ruleset_free(h->rs);
    str_free(&h->results);
    free(h);
}

static NfaRunCtx run_ctx(NfaHarness *h)
{
    NfaRunCtx ctx = {.work = h->work,
                     .scratch = h->scratch,
                     .limits = &h->limits,
                     .counters = &h->counters,
                     .sink = {.emit = on_result, .user = h}};
    return ctx;
}

/* ---- feeding -------------------------------------------------------------------- */

static bool event_time(const NfaHarness *h, const Event *ev, int64_t *ms)
{
    const Value *ts = &ev->slots[h->ts_slot];
    if (ts->type != V_MISSING)
        return evtime_parse(ts, TIME_EPOCH_S, ms);
    return evtime_parse(&ev->slots[h->ms_slot], TIME_EPOCH_MS, ms);
}

bool nh_feed_line(NfaHarness *h, const char *line, char **err)
{
    DecodeError de;
    Event *ev = decoder_decode(h->dec, line, strlen(line), &de);
    if (!ev) {
        *err = heap_printf("bad event line %s: %s", line, de.reason);
        return false;
    }
    ev->id = h->next_id++;
    if (!event_time(h, ev, &ev->time_ms)) {
        event_release(ev);
        *err = heap_printf("event without time: %s%s", line, "");
        return false;
    }
    NfaRunCtx ctx = run_ctx(h);
    if (h->cache)
        nfa_cond_cache_next_event(h->cache);
    for (size_t i = 0; i < h->n_rules; i++) {
        NhRule *r = &h->rules[i];
        h->cur_rule = i;
        if (h->cache) {
            ctx.cond_cache = h->cache;
            ctx.cond_ids = nfa_cond_share_ids(h->share, i);
            ctx.gate = nfa_cond_share_gate(h->share, i);
        }
        EvalCtx ec = {.event = ev, .time_ms = ev->time_ms};
        if (r->filter && !expr_test(r->filter, &ec, h->scratch))
            continue;
        NfaKey *key = &r->keys[h->cur_key];
        bool idle = nfa_key_idle(key);
        bool wakes = idle && nfa_key_wakes(r->nfa, ev, &ctx);
        size_t before = h->results.n;
        nfa_key_event_in(r->nfa, key, ev, &ctx);
        /* the shard skips idle keys that do not wake: that must change nothing */
        bool started = !nfa_key_idle(key);
        if (idle && !wakes && (started || h->results.n != before)) {
            *err = heap_printf("rule %s: nfa_key_wakes said no, but %s", r->ast->name,
                               started ? "a partial match started" : "a result came");
            expr_scratch_reset(h->scratch);
            event_release(ev);
            return false;
        }
    }
    expr_scratch_reset(h->scratch);
    event_release(ev);
    return true;
}

/* One compact token to a JSON line. */
static bool compact_line(const char *tok, size_t len, Buf *out)
{
    const char *colon = memchr(tok, ':', len);
    const char *at = memchr(tok, '@', len);
    if (!colon || !at || at < colon)
        return false;
    const char *end = tok + len;
    const char *comma = memchr(at, ',', (size_t)(end - at));
    const char *ts_end = comma ? comma : end;
    buf_puts(out, "{\"id\":\"");
    buf_append(out, tok, (size_t)(colon - tok));
    buf_puts(out, "\",\"n\":\"");
    buf_append(out, colon + 1, (size_t)(at - colon - 1));
    buf_puts(out, "\",\"ts\":");
    buf_append(out, at + 1, (size_t)(ts_end - at - 1));
    while (comma) {
        const char *f = comma + 1;
        comma = memchr(f, ',', (size_t)(end - f));
        const char *f_end = comma ? comma : end;
        const char *eq = memchr(f, '=', (size_t)(f_end - f));
        if (!eq)
            return false;
        buf_puts(out, ",\"");
        buf_append(out, f, (size_t)(eq - f));
        buf_puts(out, "\":");
        buf_append(out, eq + 1, (size_t)(f_end - eq - 1));
    }
    buf_putc(out, '}');
    return !out->failed;
}

bool nh_feed_compact(NfaHarness *h, const char *events, char **err)
{
    const char *p = events;
    Buf line = BUF_INIT;
    bool ok = true;
    while (ok && *p) {
        while (*p == ' ' || *p == '\n' || *p == '\t')
            p++;
        if (!*p)
            break;
        size_t len = strcspn(p, " \n\t");
        buf_clear(&line);
        if (*p == '!') {
            nh_advance(h, (long long)(strtod(p + 1, NULL) * 1000.0));
        } else if (!compact_line(p, len, &line)) {
            *err = heap_printf("bad compact event near '%s'%s", p, "");
            ok = false;
        } else {
            ok = nh_feed_line(h, line.data, err);
        }
        p += len;
    }
    buf_free(&line);
    return ok;
}

void nh_advance(NfaHarness *h, long long ms)
{
    NfaRunCtx ctx = run_ctx(h);
    for (size_t i = 0; i < h->n_rules; i++) {
        h->cur_rule = i;
        for (size_t k = 0; k < NH_MAX_KEYS; k++)
            nfa_key_advance_in(h->rules[i].nfa, &h->rules[i].keys[k], (int64_t)ms, &ctx);
    }
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

char **nh_results(NfaHarness *h, size_t *n)
{
    if (h->results.n > 1)
        qsort(h->results.v, h->results.n, sizeof *h->results.v, cmp_str);
    *n = h->results.n;
    return h->results.v;
}

char *nh_same_results(NfaHarness *a, NfaHarness *b, size_t *n)
{
    size_t n_a, n_b;
    char **ra = nh_results(a, &n_a);
    char **rb = nh_results(b, &n_b);
    *n = n_a;
    if (n_a != n_b)
        return buf_format("%zu results against %zu", n_a, n_b);
    for (size_t i = 0; i < n_a; i++)
        if (strcmp(ra[i], rb[i]) != 0)
            return buf_format("result %zu: %s against %s", i, ra[i], rb[i]);
    return NULL;
}

unsigned long long nh_live(const NfaHarness *h) { return h->counters.partials_live; }
unsigned long long nh_dropped(const NfaHarness *h) { return h->counters.partials_dropped; }

bool nh_idle(const NfaHarness *h)
{
    for (size_t i = 0; i < h->n_rules; i++)
        for (size_t k = 0; k < NH_MAX_KEYS; k++)
            if (!nfa_key_idle(&h->rules[i].keys[k]))
                return false;
    return true;
}

void nh_use_key(NfaHarness *h, size_t key)
{
    h->cur_key = key < NH_MAX_KEYS ? key : NH_MAX_KEYS - 1;
}

NfaLimits *nh_limits(NfaHarness *h) { return &h->limits; }
const NfaCounters *nh_counters(const NfaHarness *h) { return &h->counters; }
const NfaCondShare *nh_share(const NfaHarness *h) { return h->share; }
const NfaCondCache *nh_cache(const NfaHarness *h) { return h->cache; }

const Nfa *nh_nfa(const NfaHarness *h, size_t rule) { return h->rules[rule].nfa; }

long long nh_deadline(const NfaHarness *h, size_t rule)
{
    return (long long)nfa_key_deadline(h->rules[rule].nfa, &h->rules[rule].keys[h->cur_key]);
}

const NfaKey *nh_key(const NfaHarness *h, size_t rule)
{
    return &h->rules[rule].keys[h->cur_key];
}

/* ---- comparing ------------------------------------------------------------------ */

static char *trim_copy(const char *s, size_t len)
{
    while (len && (*s == ' ' || *s == '\t')) {
        s++;
        len--;
    }
    while (len && (s[len - 1] == ' ' || s[len - 1] == '\t'))
        len--;
    char *c = malloc(len + 1);
    if (c) {
        memcpy(c, s, len);
        c[len] = '\0';
    }
    return c;
}

char *nh_diff(NfaHarness *h, const char *expected)
{
    StrList want = {0};
    bool oom = false;
    for (const char *p = expected; *p;) {
        size_t len = strcspn(p, ";\n");
        char *s = trim_copy(p, len);
        if (s && *s)
            str_push(&want, s, &oom);
        else
            free(s);
        p += len;
        if (*p)
            p++;
    }
    if (want.n > 1)
        qsort(want.v, want.n, sizeof *want.v, cmp_str);
    size_t n_got;
    char **got = nh_results(h, &n_got);
    Buf msg = BUF_INIT;
    size_t i = 0, j = 0;
    while (i < want.n || j < n_got) {
        int c = i == want.n ? 1 : j == n_got ? -1 : strcmp(want.v[i], got[j]);
        if (c == 0) {
            i++;
            j++;
        } else if (c < 0) {
            buf_printf(&msg, "\n  missing:    %s", want.v[i++]);
        } else {
            buf_printf(&msg, "\n  unexpected: %s", got[j++]);
        }
    }
    str_free(&want);
    if (oom || h->oom)
        buf_puts(&msg, "\n  (out of memory)");
    if (msg.len == 0) {
        buf_free(&msg);
        return NULL;
    }
    return buf_steal(&msg);
}

/* runtime/route.c — grouped filter and key evaluation (see route.h). */
#include "runtime/route.h"

#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/hash.h"
#include "dsl/fmt.h"
#include "runtime/partition.h"

struct Router {
    const CompiledRuleSet *rs;
    size_t n, widest;
    size_t *filter_group;      /* per rule: the first rule with the same filter text */
    size_t *key_group;         /* per rule: the first rule with the same key text */
    /* router_route_all: the distinct filters, and per filter a bit per rule that has
     * it (`words` words each), so that a filter that passes admits its rules with a
     * few ORs and one that fails costs nothing more */
    size_t n_filters, words;
    size_t *filter_rule;       /* per distinct filter: its first rule */
    uint64_t *filter_rules;    /* n_filters * words */
    uint64_t *passed;          /* words: this event's admitted rules */
    uint64_t gen;              /* the current event */
    /* cache, indexed by a group's first rule */
    uint64_t *filter_gen;
    bool *filter_pass;
    uint64_t *key_gen;
    RouteResult *key_res;
    uint64_t *key_hash;
    Buf *key_bytes;
    Value *key_vals;           /* n * widest */
};

/* Canonical text of a rule's filter ("" without one) or of its key tuple; NULL on OOM. */
static char *filter_text(const Rule *r)
{
    if (!r->filter) {
        char *s = malloc(1);
        if (s)
            *s = '\0';
        return s;
    }
    return dsl_fmt_expr(r->filter);
}

static char *key_text(const Rule *r)
{
    Buf b = BUF_INIT;
    buf_printf(&b, "%zu", r->n_keys);
    for (size_t k = 0; k < r->n_keys; k++) {
        char *t = dsl_fmt_expr(r->keys[k].expr);
        if (!t) {
            buf_free(&b);
            return NULL;
        }
        buf_putc(&b, '\x1f');
        buf_puts(&b, t);
        free(t);
    }
    if (b.failed) {
        buf_free(&b);
        return NULL;
    }
    return buf_steal(&b);
}

/* group[i] = the first j <= i whose text equals rule i's (i itself if the text cannot
 * be made: such a rule simply shares nothing). */
static bool build_groups(const CompiledRuleSet *rs, char *(*text_of)(const Rule *),
                         size_t *group)
{
    size_t n = rs->n_rules;
    char **texts = calloc(n ? n : 1, sizeof *texts);
    uint64_t *hashes = calloc(n ? n : 1, sizeof *hashes);
    bool ok = texts && hashes;
    for (size_t i = 0; ok && i < n; i++) {
        texts[i] = text_of(rs->rules[i].ast);
        group[i] = i;
        if (!texts[i])
            continue;
        hashes[i] = hash_bytes(HASH_SEED, texts[i], strlen(texts[i]));
        for (size_t j = 0; j < i; j++)
            if (texts[j] && hashes[j] == hashes[i] && !strcmp(texts[j], texts[i])) {
                group[i] = group[j];
                break;
            }
    }
    for (size_t i = 0; texts && i < n; i++)
        free(texts[i]);
    free(texts);
    free(hashes);
    return ok;
}

/* The distinct filters and the rules of each, from the groups. False on OOM. */
static bool index_filters(Router *r)
{
    size_t n = r->n ? r->n : 1;
    r->words = (n + 63) / 64;
    r->filter_rule = calloc(n, sizeof *r->filter_rule);
    r->filter_rules = calloc(n * r->words, sizeof *r->filter_rules);
    r->passed = calloc(r->words, sizeof *r->passed);
    if (!r->filter_rule || !r->filter_rules || !r->passed)
        return false;
    size_t *index = r->filter_group;   /* a group's first rule comes before its others */
    r->n_filters = 0;
    for (size_t i = 0; i < r->n; i++) {
        size_t f;
        if (index[i] == i) {
            f = r->n_filters++;
            r->filter_rule[f] = i;
        } else {
            for (f = 0; r->filter_rule[f] != index[i]; f++)
                ;
        }
        r->filter_rules[f * r->words + i / 64] |= (uint64_t)1 << (i % 64);
    }
    return true;
}

Router *router_new(const CompiledRuleSet *rs)
{
    Router *r = calloc(1, sizeof *r);
    if (!r)
        return NULL;
    size_t n = rs->n_rules ? rs->n_rules : 1;
    r->rs = rs;
    r->n = rs->n_rules;
    r->widest = 1;
    for (size_t i = 0; i < rs->n_rules; i++)
        if (rs->rules[i].n_keys > r->widest)
            r->widest = rs->rules[i].n_keys;
    r->gen = 1;
    r->filter_group = calloc(n, sizeof *r->filter_group);
    r->key_group = calloc(n, sizeof *r->key_group);
    r->filter_gen = calloc(n, sizeof *r->filter_gen);
    r->filter_pass = calloc(n, sizeof *r->filter_pass);
    r->key_gen = calloc(n, sizeof *r->key_gen);
    r->key_res = calloc(n, sizeof *r->key_res);
    r->key_hash = calloc(n, sizeof *r->key_hash);
    r->key_bytes = calloc(n, sizeof *r->key_bytes);
    r->key_vals = calloc(n * r->widest, sizeof *r->key_vals);
    if (!r->filter_group || !r->key_group || !r->filter_gen || !r->filter_pass ||
        !r->key_gen || !r->key_res || !r->key_hash || !r->key_bytes || !r->key_vals ||
        !build_groups(rs, filter_text, r->filter_group) ||
        !build_groups(rs, key_text, r->key_group) || !index_filters(r)) {
        router_free(r);
        return NULL;
    }
    return r;
}

void router_free(Router *r)
{
    if (!r)
        return;
    for (size_t i = 0; r->key_bytes && i < r->n; i++)
        buf_free(&r->key_bytes[i]);
    free(r->filter_group);
    free(r->key_group);
    free(r->filter_gen);
    free(r->filter_pass);
    free(r->key_gen);
    free(r->key_res);
    free(r->key_hash);
    free(r->key_bytes);
    free(r->key_vals);
    free(r->filter_rule);
    free(r->filter_rules);
    free(r->passed);
    free(r);
}

void router_begin(Router *r)
{
    r->gen++;
}

static bool filter_passes(Router *r, size_t rule, const EvalCtx *ctx, EvalScratch *scratch)
{
    size_t g = r->filter_group[rule];
    const CExpr *filter = r->rs->rules[g].filter;
    if (!filter)
        return true;
    if (r->filter_gen[g] != r->gen) {
        r->filter_pass[g] = expr_test(filter, ctx, scratch);
        r->filter_gen[g] = r->gen;
    }
    return r->filter_pass[g];
}

static void compute_key(Router *r, size_t g, const EvalCtx *ctx, EvalScratch *scratch)
{
    const CompiledRule *rule = &r->rs->rules[g];
    Value *vals = &r->key_vals[g * r->widest];
    Buf *kb = &r->key_bytes[g];
    for (size_t k = 0; k < rule->n_keys; k++)
        vals[k] = expr_eval(rule->keys[k], ctx, scratch);
    buf_clear(kb);
    if (!part_key_bytes(vals, rule->n_keys, kb)) {
        r->key_res[g] = ROUTE_NO_KEY;
        return;
    }
    if (!kb->data)
        buf_puts(kb, "");   /* the global partition: empty, but not NULL */
    if (kb->failed) {
        r->key_res[g] = ROUTE_FAILED;
        return;
    }
    r->key_hash[g] = part_hash(kb->data, kb->len);
    r->key_res[g] = ROUTE_KEYED;
}

RouteResult router_route(Router *r, size_t rule, const Event *ev, EvalScratch *scratch,
                         RouteKey *key)
{
    EvalCtx ctx = {.event = ev, .time_ms = ev->time_ms};
    if (!filter_passes(r, rule, &ctx, scratch))
        return ROUTE_FILTERED;
    size_t g = r->key_group[rule];
    if (r->key_gen[g] != r->gen) {
        compute_key(r, g, &ctx, scratch);
        r->key_gen[g] = r->gen;
    }
    if (r->key_res[g] == ROUTE_KEYED) {
        key->bytes = r->key_bytes[g].data;
        key->len = r->key_bytes[g].len;
        key->hash = r->key_hash[g];
        key->vals = &r->key_vals[g * r->widest];
    }
    return r->key_res[g];
}

size_t router_route_all(Router *r, const Event *ev, EvalScratch *scratch, size_t *order,
                        RouteResult *res, RouteKey *key)
{
    router_begin(r);
    EvalCtx ctx = {.event = ev, .time_ms = ev->time_ms};
    memset(r->passed, 0, r->words * sizeof *r->passed);
    for (size_t f = 0; f < r->n_filters; f++) {
        const CExpr *filter = r->rs->rules[r->filter_rule[f]].filter;
        if (filter && !expr_test(filter, &ctx, scratch))
            continue;
        const uint64_t *rules = &r->filter_rules[f * r->words];
        for (size_t w = 0; w < r->words; w++)
            r->passed[w] |= rules[w];
    }
    size_t n = 0;
    for (size_t w = 0; w < r->words; w++)
        for (uint64_t bits = r->passed[w]; bits; bits &= bits - 1) {
            size_t rule = w * 64 + (size_t)__builtin_ctzll(bits);
            size_t g = r->key_group[rule];
            if (r->key_gen[g] != r->gen) {
                compute_key(r, g, &ctx, scratch);
                r->key_gen[g] = r->gen;
            }
            order[n++] = rule;
            res[rule] = r->key_res[g];
            if (res[rule] == ROUTE_KEYED)
                key[rule] = (RouteKey){r->key_bytes[g].data, r->key_bytes[g].len,
                                       r->key_hash[g], &r->key_vals[g * r->widest]};
        }
    return n;
}

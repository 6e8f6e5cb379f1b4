/* rules/ruleset.c — loads, checks and compiles a rule set; see ruleset.h.
 *
 * Compilation is all-or-nothing: any failure reports a diagnostic at the offending
 * node and the whole set is discarded, so a reload never runs half a rule set. */
#include "rules/ruleset.h"

#include <stdlib.h>
#include <string.h>

#include "dsl/fmt.h"
#include "dsl/load.h"
#include "rules/filters.h"

/* A compile that fails without a message ran out of memory (nfa/expr.h): nothing is
 * reported here, and ruleset_compile_with, seeing no new error, reports out of memory. */
static CExpr *compile_expr(const Expr *e, const ExprEnv *env, Diags *diags)
{
    char *err = NULL;
    CExpr *ce = expr_compile(e, env, &err);
    if (!ce && err)
        diag_report(diags, DIAG_ERROR, e->span, "%s", err);
    free(err);
    return ce;
}

static void template_free(CompiledTemplate *t)
{
    for (size_t i = 0; i < t->n_parts; i++)
        expr_free(t->parts[i].expr);
    free(t->parts);
    t->parts = NULL;
    t->n_parts = 0;
}

static int template_compile(CompiledTemplate *out, const Template *t, const ExprEnv *env,
                            Diags *diags)
{
    out->n_parts = 0;
    out->parts = calloc(t->n_parts ? t->n_parts : 1, sizeof *out->parts);
    if (!out->parts)
        return -1;
    for (size_t i = 0; i < t->n_parts; i++) {
        CompiledTemplatePart *p = &out->parts[out->n_parts++];
        p->text = t->parts[i].text;
        p->len = t->parts[i].len;
        if (t->parts[i].expr && !(p->expr = compile_expr(t->parts[i].expr, env, diags)))
            return -1;
    }
    return 0;
}

static void action_free(CompiledAction *a)
{
    template_free(&a->message);
    for (size_t i = 0; i < a->n_fields; i++)
        expr_free(a->field_values[i]);
    free(a->field_names);
    free(a->field_values);
    free(a->to);
}

static int action_compile(CompiledAction *out, const Action *a, const ExprEnv *env,
                          Diags *diags)
{
    out->ast = a;
    out->severity = a->severity;
    if (template_compile(&out->message, &a->message, env, diags) < 0)
        return -1;
    size_t nf = a->n_fields ? a->n_fields : 1;
    out->field_names = calloc(nf, sizeof *out->field_names);
    out->field_values = calloc(nf, sizeof *out->field_values);
    out->to = calloc(a->n_to ? a->n_to : 1, sizeof *out->to);
    if (!out->field_names || !out->field_values || !out->to)
        return -1;
    for (size_t i = 0; i < a->n_fields; i++) {
        out->field_names[i] = a->fields[i].name;
        if (!(out->field_values[i] = compile_expr(a->fields[i].value, env, diags)))
            return -1;
        out->n_fields = i + 1;
    }
    for (size_t i = 0; i < a->n_to; i++)
        out->to[i] = a->to[i].output;
    out->n_to = a->n_to;
    return 0;
}

/* Appends the actions of every `on` clause with this trigger to *list. */
static int actions_compile(CompiledAction **list, size_t *n, const Rule *r,
                           ActionTrigger trigger, const ExprEnv *env, Diags *diags)
{
    size_t total = 0;
    for (size_t i = 0; i < r->n_on; i++)
        if (r->on[i].trigger == trigger)
            total += r->on[i].n_actions;
    *n = 0;
    *list = calloc(total ? total : 1, sizeof **list);
    if (!*list)
        return -1;
    for (size_t i = 0; i < r->n_on; i++) {
        if (r->on[i].trigger != trigger)
            continue;
        for (size_t j = 0; j < r->on[i].n_actions; j++) {
            /* Counted before compiling so a half-built action is freed too. */
            CompiledAction *a = &(*list)[(*n)++];
            if (action_compile(a, &r->on[i].actions[j], env, diags) < 0)
                return -1;
        }
    }
    return 0;
}

static void rule_free(CompiledRule *cr)
{
    expr_free(cr->filter);
    for (size_t i = 0; i < cr->n_keys; i++)
        expr_free(cr->keys[i]);
    free(cr->keys);
    free(cr->key_names);
    nfa_free(cr->nfa);
    free(cr->relevance_text);
    free(cr->relevance_why);
    for (size_t i = 0; i < cr->n_on_match; i++)
        action_free(&cr->on_match[i]);
    free(cr->on_match);
    for (size_t i = 0; i < cr->n_on_timeout; i++)
        action_free(&cr->on_timeout[i]);
    free(cr->on_timeout);
}

static int rule_compile(CompiledRule *cr, const Rule *r, FieldTable *fields, Diags *diags)
{
    ExprEnv env = {fields, r};
    cr->ast = r;
    cr->name = r->name;
    cr->suppress_ms = r->suppress_ms;
    cr->fingerprint = dsl_rule_fingerprint(r);
    if (cr->fingerprint == 0)
        return -1;   /* out of memory (reported by the caller): reload and restore need it */
    if (r->filter && !(cr->filter = compile_expr(r->filter, &env, diags)))
        return -1;
    cr->keys = calloc(r->n_keys ? r->n_keys : 1, sizeof *cr->keys);
    cr->key_names = calloc(r->n_keys ? r->n_keys : 1, sizeof *cr->key_names);
    if (!cr->keys || !cr->key_names)
        return -1;
    for (size_t i = 0; i < r->n_keys; i++) {
        cr->key_names[i] = r->keys[i].name;
        if (!(cr->keys[i] = compile_expr(r->keys[i].expr, &env, diags)))
            return -1;
        cr->n_keys = i + 1;
    }
    char *err = NULL;
    cr->nfa = nfa_compile(r, &env, &err);
    if (!cr->nfa) {
        if (err)
            diag_report(diags, DIAG_ERROR, r->name_span, "%s", err);
        free(err);
        return -1;
    }
    if (actions_compile(&cr->on_match, &cr->n_on_match, r, ON_MATCH, &env, diags) < 0 ||
        actions_compile(&cr->on_timeout, &cr->n_on_timeout, r, ON_TIMEOUT, &env, diags) < 0)
        return -1;
    return 0;
}

static int time_compile(CompiledRuleSet *rs)
{
    const TimeDecl *t = rs->ast->time;
    rs->event_time = t != NULL;
    rs->time_slot = -1;
    rs->time_format = TIME_AUTO;
    rs->lateness_ms = 0;
    if (!t)
        return 0;
    rs->time_slot = field_table_intern(&rs->fields, t->field, t->n_field);
    rs->time_format = t->format;
    rs->lateness_ms = t->lateness_ms;
    return rs->time_slot < 0 ? -1 : 0;
}

/* Interns prev's fields first, in slot order, so each keeps its number. */
static int fields_inherit(FieldTable *ft, const CompiledRuleSet *prev)
{
    if (!prev)
        return 0;
    for (size_t i = 0; i < prev->fields.n; i++) {
        const FieldPath *p = &prev->fields.paths[i];
        if (field_table_intern(ft, p->segs, p->n_segs) != (int)i)
            return -1;
    }
    return 0;
}

CompiledRuleSet *ruleset_compile(RuleSet *ast, Diags *diags)
{
    return ruleset_compile_after(ast, NULL, diags);
}

CompiledRuleSet *ruleset_compile_after(RuleSet *ast, const CompiledRuleSet *prev,
                                       Diags *diags)
{
    return ruleset_compile_with(ast, prev, NULL, diags);
}

/* diags->oom tells the commands that memory ran out, not the rules (exit 3, not 1). */
static void report_out_of_memory(Diags *diags)
{
    diag_report_file(diags, DIAG_ERROR, "vigil", "out of memory while compiling rules");
    diags->oom = true;
}

CompiledRuleSet *ruleset_compile_with(RuleSet *ast, const CompiledRuleSet *prev,
                                      const RuleSetOptions *opts, Diags *diags)
{
    CompiledRuleSet *rs = calloc(1, sizeof *rs);
    if (!rs) {
        ast_ruleset_free(ast);
        report_out_of_memory(diags);
        return NULL;
    }
    rs->ast = ast;
    if (opts)
        rs->opts = *opts;
    else if (prev)
        rs->opts = prev->opts;
    field_table_init(&rs->fields);
    rs->rules = calloc(ast->n_rules ? ast->n_rules : 1, sizeof *rs->rules);
    if (!rs->rules || fields_inherit(&rs->fields, prev) < 0 || time_compile(rs) < 0)
        goto oom;
    /* A step that fails with no new error reported failed for want of memory. */
    size_t errors = diags->errors;
    for (size_t i = 0; i < ast->n_rules; i++) {
        rs->n_rules = i + 1;
        if (rule_compile(&rs->rules[i], &ast->rules[i], &rs->fields, diags) < 0)
            goto failed;
    }
    if (filters_plan(rs, diags) < 0)
        goto failed;
    return rs;
failed:
    if (diags->errors == errors)
        goto oom;
    ruleset_free(rs);
    return NULL;
oom:
    report_out_of_memory(diags);
    ruleset_free(rs);
    return NULL;
}

CompiledRuleSet *ruleset_load(const char *const *paths, size_t n_paths, Diags *diags)
{
    return ruleset_reload(paths, n_paths, NULL, diags);
}

CompiledRuleSet *ruleset_reload(const char *const *paths, size_t n_paths,
                                const CompiledRuleSet *prev, Diags *diags)
{
    return ruleset_load_with(paths, n_paths, prev, NULL, diags);
}

CompiledRuleSet *ruleset_load_with(const char *const *paths, size_t n_paths,
                                   const CompiledRuleSet *prev, const RuleSetOptions *opts,
                                   Diags *diags)
{
    RuleSet *ast = dsl_load(paths, n_paths, diags);
    if (!ast) {   /* only for want of memory (dsl/load.h) */
        diag_report_file(diags, DIAG_ERROR, "vigil", "out of memory while loading rules");
        diags->oom = true;
        return NULL;
    }
    /* oom: part of the rules or of their diagnostics was lost (a file left out of
     * the listing once gave an empty rule set here) */
    if (diags->errors || diags->oom) {
        ast_ruleset_free(ast);
        return NULL;
    }
    return ruleset_compile_with(ast, prev, opts, diags);
}

void ruleset_free(CompiledRuleSet *rs)
{
    if (!rs)
        return;
    for (size_t i = 0; i < rs->n_rules; i++)
        rule_free(&rs->rules[i]);
    free(rs->rules);
    filters_free(&rs->filters);
    field_table_free(&rs->fields);
    ast_ruleset_free(rs->ast);
    free(rs);
}

int ruleset_find(const CompiledRuleSet *rs, const char *name)
{
    for (size_t i = 0; i < rs->n_rules; i++)
        if (!strcmp(rs->rules[i].name, name))
            return (int)i;
    return -1;
}

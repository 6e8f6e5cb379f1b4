/* dsl/check.c — semantic checks and name resolution over a parsed RuleSet.
 *
 * Owns nothing: it writes the "resolved" fields of the AST in place (path kinds,
 * step and key indexes, function ids, output indexes, skip steps) and reports
 * every problem it finds to the caller's Diags. Regexes are compiled here only to
 * validate them; the expression compiler compiles them again for running. */
#include "dsl/check.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "base/hostport.h"
#include "base/utf8.h"

/* Where an expression sits decides what it may read. */
typedef enum {
    CTX_FILTER,     /* rule filter: the current event only */
    CTX_KEY,        /* key expressions: the current event only */
    CTX_WHERE,      /* step where / until: the event and the match so far */
    CTX_ACTION,     /* actions: the match, its last event, and key.NAME */
} ExprContext;

typedef struct Checker {
    RuleSet *rs;
    Diags *diags;
    size_t n_earlier;   /* diagnostics reported before checking (syntax errors) */
    Rule *rule;         /* the rule being checked */
    ExprContext ctx;
    /* [i] = the first rule (output) with the name of rule (output) i, i itself when
     * it is the first or unnamed; heap, NULL if it could not be allocated */
    size_t *first_rule_named;
    size_t *first_output_named;
} Checker;

#define ERR(ck, span, ...) diag_report((ck)->diags, DIAG_ERROR, (span), __VA_ARGS__)
#define WARN(ck, span, ...) diag_report((ck)->diags, DIAG_WARNING, (span), __VA_ARGS__)

/* ---- small helpers --------------------------------------------------------- */

static Span span_prefix(Span s, size_t len)
{
    s.end_line = s.line;
    s.end_col = s.col + (int)len;
    return s;
}

static const char *span_file(Span s)
{
    return s.src && s.src->path ? s.src->path : "<input>";
}

/* " (did you mean 'x'?)" or "" — `out` must hold 160 bytes. `cands` NULL: they could
 * not be listed. A suggestion lost to a failed allocation fails the load (diags->oom),
 * as a lost diagnostic does. */
static const char *suggestion(Checker *ck, char out[160], const char *name,
                              const char *const *cands, size_t n)
{
    bool oom = cands == NULL;
    const char *best = oom ? NULL : diag_nearest_or_oom(name, cands, n, &oom);
    if (oom)
        ck->diags->oom = true;
    if (best == NULL)
        return "";
    snprintf(out, 160, " (did you mean '%s'?)", best);
    return out;
}

static const char *step_kind_word(StepKind k)
{
    switch (k) {
    case STEP_BEGIN: return "begin";
    case STEP_NEXT: return "next";
    case STEP_FOLLOWED_BY: return "followed_by";
    case STEP_FOLLOWED_BY_ANY: return "followed_by_any";
    case STEP_NOT_NEXT: return "not_next";
    case STEP_NOT_FOLLOWED_BY: return "not_followed_by";
    }
    return "step";
}

static bool is_not_step(const Step *s)
{
    return s->kind == STEP_NOT_NEXT || s->kind == STEP_NOT_FOLLOWED_BY;
}

static bool is_open_loop(const Quantifier *q)
{
    return q->looping && q->max == QUANT_UNBOUNDED;
}

static const char **step_names(const Rule *r)
{
    const char **names = malloc((r->n_steps + 1) * sizeof *names);
    if (names)
        for (size_t i = 0; i < r->n_steps; i++)
            names[i] = r->steps[i].name;
    return names;
}

static int key_index(const Rule *r, const char *name)
{
    for (size_t i = 0; i < r->n_keys; i++)
        if (r->keys[i].name && strcmp(r->keys[i].name, name) == 0)
            return (int)i;
    return -1;
}

/* Reports `unknown step 'x'` with the nearest step of the current rule. */
static void report_unknown_step(Checker *ck, const char *name, Span span, const char *where)
{
    char hint[160];
    const char **names = step_names(ck->rule);
    const char *sugg = suggestion(ck, hint, name, names, ck->rule->n_steps);
    ERR(ck, span, "unknown step '%s'%s%s", name, where, sugg);
    free(names);
}

/* A `not_` step never holds events, so reading it is always a mistake. */
static bool report_negated_step(Checker *ck, int step, Span span)
{
    const Step *s = &ck->rule->steps[step];
    if (!is_not_step(s))
        return false;
    ERR(ck, span, "step '%s' is a '%s' step: it never holds events to read", s->name,
        step_kind_word(s->kind));
    return true;
}

/* ---- regexes ---------------------------------------------------------------- */



/* Decoded bytes produced by the escape at `p` (just after the backslash) and the
 * source bytes it takes (written to *used). */
static size_t escape_width(const char *p, const char *end, size_t *used)
{
    if (p < end && *p == 'u' && end - p >= 5) {
        unsigned long cp = 0;
        for (int i = 1; i <= 4; i++) {
            int h = hex_digit(p[i]);
            if (h < 0) {
                *used = 1;
                return 1;
            }
            cp = cp * 16 + (unsigned long)h;
        }
        *used = 5;
        return utf8_encoded_len((uint32_t)cp);
    }
    *used = 1;
    return 1;
}

/* Maps a byte offset in a string literal's decoded value to the source column
 * of the character that produced it. The literal's span starts at its quote. */
static Span literal_offset_span(const Expr *lit, size_t offset)
{
    Span s = lit->span;
    size_t len = 0;
    const char *line = s.src ? source_line(s.src, s.line, &len) : NULL;
    if (line == NULL || s.col < 1 || (size_t)s.col > len)
        return s;
    const char *start = line + s.col - 1;
    const char *end = line + len;
    char quote = *start;
    const char *p = start + 1;
    size_t decoded = 0;
    while (p < end && decoded < offset) {
        if (lit->u.string.raw) {
            if (*p == quote && p + 1 < end && p[1] == quote)
                p++;
            else if (*p == quote)
                break;
            p++;
            decoded++;
        } else if (*p == '\\' && p + 1 < end) {
            size_t used;
            decoded += escape_width(p + 1, end, &used);
            p += 1 + used;
        } else if (*p == quote) {
            break;
        } else {
            p++;
            decoded++;
        }
    }
    int col = (int)(p - line) + 1;
    Span at = {s.src, s.line, col, s.line, col + 1};
    return at;
}

/* Compiles a regex literal to validate it; returns its number of capture
 * groups, or -1 if it does not compile (reported). */
static int check_regex(Checker *ck, const Expr *lit)
{
    int code;
    PCRE2_SIZE offset;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)lit->u.string.bytes, lit->u.string.len,
                                   PCRE2_UTF, &code, &offset, NULL);
    if (re != NULL) {
        uint32_t groups = 0;
        pcre2_pattern_info(re, PCRE2_INFO_CAPTURECOUNT, &groups);
        pcre2_code_free(re);
        return (int)groups;
    }
    PCRE2_UCHAR message[256];
    if (pcre2_get_error_message(code, message, sizeof message) < 0)
        strcpy((char *)message, "unknown PCRE2 error");
    ERR(ck, literal_offset_span(lit, offset), "invalid regex: %s", (const char *)message);
    return -1;
}

/* ---- expressions -------------------------------------------------------------- */

static void check_expr(Checker *ck, Expr *e);

static bool ctx_has_match(const Checker *ck)
{
    return ck->ctx == CTX_WHERE || ck->ctx == CTX_ACTION;
}

static const char *ctx_name(const Checker *ck)
{
    return ck->ctx == CTX_FILTER ? "a filter" : ck->ctx == CTX_KEY ? "a key" : "here";
}

/* The step a path starts with, or -1 (segs[0] may be an index segment). */
static int path_step(const Checker *ck, const Expr *e)
{
    const char *first = e->u.path.segs[0].name;
    return first ? ast_step_index(ck->rule, first) : -1;
}

static void resolve_key_path(Checker *ck, Expr *e)
{
    PathSeg *name = &e->u.path.segs[1];
    if (ck->ctx != CTX_ACTION) {
        ERR(ck, e->span, "'key.%s' can only be used in actions", name->name ? name->name : "?");
        return;
    }
    if (name->name == NULL || e->u.path.n_segs != 2) {
        ERR(ck, e->span, "'key.NAME' must name one key of the rule");
        return;
    }
    int k = key_index(ck->rule, name->name);
    if (k < 0) {
        if (ck->rule->n_keys == 0) {
            ERR(ck, name->span, "unknown key '%s': rule '%s' has no key", name->name,
                ck->rule->name);
            return;
        }
        const char **names = malloc((ck->rule->n_keys + 1) * sizeof *names);
        char hint[160];
        if (names)
            for (size_t i = 0; i < ck->rule->n_keys; i++)
                names[i] = ck->rule->keys[i].name;
        const char *sugg = suggestion(ck, hint, name->name, names, ck->rule->n_keys);
        ERR(ck, name->span, "unknown key '%s'%s", name->name, sugg);
        free(names);
        return;
    }
    e->u.path.kind = PATH_KEY;
    e->u.path.key = k;
}

#define MIN_TYPO_LEN 4

/* Resolves a path used as a value (not as an aggregate's argument). */
static void check_path(Checker *ck, Expr *e)
{
    PathSeg *segs = e->u.path.segs;
    size_t n = e->u.path.n_segs;
    e->u.path.step = -1;
    e->u.path.key = -1;
    if (n == 0)
        return;
    int step = path_step(ck, e);
    /* A filter or key cannot read steps, so a bare name there is a field even
     * when a step has the same name. */
    if (step >= 0 && !(n == 1 && !ctx_has_match(ck))) {
        if (!ctx_has_match(ck)) {
            ERR(ck, e->span, "step '%s' cannot be read in %s: it runs before any match",
                segs[0].name, ctx_name(ck));
            return;
        }
        if (n == 1) {
            ERR(ck, e->span, "step '%s' is not a value; read a field like '%s.FIELD'", segs[0].name,
                segs[0].name);
            return;
        }
        if (report_negated_step(ck, step, segs[0].span))
            return;
        e->u.path.kind = PATH_STEP;
        e->u.path.step = step;
        return;
    }
    if (n >= 2 && segs[0].name && strcmp(segs[0].name, "key") == 0) {
        resolve_key_path(ck, e);
        return;
    }
    /* `frist.amount` is more likely a typo than a nested field; names shorter
     * than MIN_TYPO_LEN are too close to everything to guess (`c.x` vs step a). */
    if (n >= 2 && segs[0].name && strlen(segs[0].name) >= MIN_TYPO_LEN && ctx_has_match(ck)) {
        /* a failure here would read a misspelt step as a field: the load must fail */
        const char **names = step_names(ck->rule);
        bool oom = names == NULL;
        const char *near =
            oom ? NULL : diag_nearest_or_oom(segs[0].name, names, ck->rule->n_steps, &oom);
        free(names);
        if (oom)
            ck->diags->oom = true;
        if (near) {
            report_unknown_step(ck, segs[0].name, segs[0].span, "");
            return;
        }
    }
    e->u.path.kind = PATH_FIELD;
}

typedef enum { ARG_ANY, ARG_STEP, ARG_STEP_FIELD } AggArg;

typedef struct FuncInfo {
    const char *name;
    FuncId fn;
    int min_args, max_args;   /* max -1: no upper bound */
    AggArg agg;               /* argument shape of an aggregate */
} FuncInfo;

/* min, max, contains and time are handled by name before this table is used. */
static const FuncInfo FUNCS[] = {
    {"lower", FN_LOWER, 1, 1, ARG_ANY},
    {"upper", FN_UPPER, 1, 1, ARG_ANY},
    {"len", FN_LEN, 1, 1, ARG_ANY},
    {"abs", FN_ABS, 1, 1, ARG_ANY},
    {"round", FN_ROUND, 1, 1, ARG_ANY},
    {"floor", FN_FLOOR, 1, 1, ARG_ANY},
    {"ceil", FN_CEIL, 1, 1, ARG_ANY},
    {"str", FN_STR, 1, 1, ARG_ANY},
    {"num", FN_NUM, 1, 1, ARG_ANY},
    {"exists", FN_EXISTS, 1, 1, ARG_ANY},
    {"starts_with", FN_STARTS_WITH, 2, 2, ARG_ANY},
    {"ends_with", FN_ENDS_WITH, 2, 2, ARG_ANY},
    {"regex_extract", FN_REGEX_EXTRACT, 2, 3, ARG_ANY},
    {"coalesce", FN_COALESCE, 1, -1, ARG_ANY},
    {"min", FN_MIN2, 1, 2, ARG_ANY},
    {"max", FN_MAX2, 1, 2, ARG_ANY},
    {"contains", FN_CONTAINS_STR, 2, 2, ARG_ANY},
    {"time", FN_TIME, 0, 1, ARG_ANY},
    {"count", FN_COUNT, 1, 1, ARG_STEP},
    {"sum", FN_SUM, 1, 1, ARG_STEP_FIELD},
    {"avg", FN_AVG, 1, 1, ARG_STEP_FIELD},
    {"count_distinct", FN_COUNT_DISTINCT, 1, 1, ARG_STEP_FIELD},
    {"first", FN_FIRST, 1, 1, ARG_STEP_FIELD},
    {"last", FN_LAST, 1, 1, ARG_STEP_FIELD},
};
#define N_FUNCS (sizeof FUNCS / sizeof FUNCS[0])

static const FuncInfo *find_func(const char *name)
{
    for (size_t i = 0; i < N_FUNCS; i++)
        if (strcmp(FUNCS[i].name, name) == 0)
            return &FUNCS[i];
    return NULL;
}

static bool arity_ok(const FuncInfo *f, size_t n)
{
    return (int)n >= f->min_args && (f->max_args < 0 || (int)n <= f->max_args);
}

static void report_arity(Checker *ck, const Expr *e, const FuncInfo *f)
{
    size_t got = e->u.call.n_args;
    const char *name = f->name;
    if (f->max_args < 0)
        ERR(ck, e->span, "'%s' takes at least %d argument%s, got %zu", name, f->min_args,
            f->min_args == 1 ? "" : "s", got);
    else if (f->min_args == f->max_args)
        ERR(ck, e->span, "'%s' takes %d argument%s, got %zu", name, f->min_args,
            f->min_args == 1 ? "" : "s", got);
    else
        ERR(ck, e->span, "'%s' takes %d or %d arguments, got %zu", name, f->min_args,
            f->max_args, got);
}

/* Checks an aggregate's step argument and resolves it; false if reported. */
static bool check_step_arg(Checker *ck, Expr *call, AggArg shape)
{
    const char *fname = call->u.call.name;
    Expr *arg = call->u.call.args[0];
    const char *example = shape == ARG_STEP ? "STEP" : "STEP.field";
    if (arg->kind != EX_PATH || arg->u.path.n_segs == 0 || arg->u.path.segs[0].name == NULL) {
        ERR(ck, arg->span, "'%s' needs a step path like %s(%s)", fname, fname, example);
        return false;
    }
    PathSeg *first = &arg->u.path.segs[0];
    int step = ast_step_index(ck->rule, first->name);
    if (step < 0) {
        report_unknown_step(ck, first->name, first->span, "");
        return false;
    }
    size_t n = arg->u.path.n_segs;
    if (shape == ARG_STEP && n != 1) {
        ERR(ck, arg->span, "'%s' counts a step's events: write %s(%s)", fname, fname, first->name);
        return false;
    }
    if (shape == ARG_STEP_FIELD && n < 2) {
        ERR(ck, arg->span, "'%s' needs a field of step '%s', like %s(%s.field)", fname,
            first->name, fname, first->name);
        return false;
    }
    if (report_negated_step(ck, step, first->span))
        return false;
    arg->u.path.kind = PATH_STEP;
    arg->u.path.step = step;
    arg->u.path.key = -1;
    return true;
}

static bool is_step_path(const Checker *ck, const Expr *e)
{
    return e->kind == EX_PATH && e->u.path.n_segs >= 1 && path_step(ck, e) >= 0;
}

static void check_args_from(Checker *ck, Expr *call, size_t from)
{
    for (size_t i = from; i < call->u.call.n_args; i++)
        check_expr(ck, call->u.call.args[i]);
}

static void report_aggregate_context(Checker *ck, const Expr *call)
{
    ERR(ck, call->span, "aggregate '%s' cannot be used in %s: it runs before any match",
        call->u.call.name, ctx_name(ck));
}

static void check_aggregate(Checker *ck, Expr *call, FuncId fn, AggArg shape)
{
    if (!ctx_has_match(ck)) {
        report_aggregate_context(ck, call);
        return;
    }
    if (check_step_arg(ck, call, shape))
        call->u.call.fn = fn;
    check_args_from(ck, call, 1);
}

static void check_regex_extract(Checker *ck, Expr *call)
{
    check_expr(ck, call->u.call.args[0]);
    Expr *pattern = call->u.call.args[1];
    int groups = -1;
    if (pattern->kind != EX_STRING)
        ERR(ck, pattern->span, "the pattern of 'regex_extract' must be a string literal");
    else
        groups = check_regex(ck, pattern);
    if (call->u.call.n_args == 3) {
        Expr *group = call->u.call.args[2];
        double g = group->kind == EX_NUMBER ? group->u.number.value : 0;
        if (group->kind == EX_NUMBER && (g < 0 || g != (double)(long)g))
            ERR(ck, group->span, "the group of 'regex_extract' must be a whole number >= 0");
        else if (group->kind == EX_NUMBER && groups >= 0 && g > groups)
            ERR(ck, group->span, "regex_extract asks for group %ld, but the regex has %d",
                (long)g, groups);
        check_expr(ck, group);
    }
    call->u.call.fn = FN_REGEX_EXTRACT;
}

static void check_time_call(Checker *ck, Expr *call)
{
    call->u.call.fn = FN_TIME;
    if (call->u.call.n_args == 0)
        return;
    if (!ctx_has_match(ck)) {
        ERR(ck, call->span, "'time(STEP)' cannot be used in %s: it runs before any match; "
            "use time()", ctx_name(ck));
        return;
    }
    if (!check_step_arg(ck, call, ARG_STEP))
        call->u.call.fn = FN_UNRESOLVED;
}

static void check_call(Checker *ck, Expr *e)
{
    const char *name = e->u.call.name;
    const FuncInfo *f = find_func(name);
    if (f == NULL) {
        const char *names[N_FUNCS];
        for (size_t i = 0; i < N_FUNCS; i++)
            names[i] = FUNCS[i].name;
        char hint[160];
        /* The arguments are not checked: their meaning depends on the function. */
        ERR(ck, e->u.call.name_span, "unknown function '%s'%s", name,
            suggestion(ck, hint, name, names, N_FUNCS));
        return;
    }
    size_t n = e->u.call.n_args;
    if (!arity_ok(f, n)) {
        report_arity(ck, e, f);
        return;
    }
    bool is_min_max = f->fn == FN_MIN2 || f->fn == FN_MAX2;
    if (is_min_max && n == 1) {
        check_aggregate(ck, e, f->fn == FN_MIN2 ? FN_MIN : FN_MAX, ARG_STEP_FIELD);
        return;
    }
    if (f->fn == FN_CONTAINS_STR && is_step_path(ck, e->u.call.args[0])) {
        check_aggregate(ck, e, FN_CONTAINS_AGG, ARG_STEP_FIELD);
        return;
    }
    if (f->agg != ARG_ANY) {
        check_aggregate(ck, e, f->fn, f->agg);
        return;
    }
    if (f->fn == FN_TIME) {
        check_time_call(ck, e);
        return;
    }
    if (f->fn == FN_REGEX_EXTRACT) {
        check_regex_extract(ck, e);
        return;
    }
    e->u.call.fn = f->fn;
    check_args_from(ck, e, 0);
}

static void check_binary(Checker *ck, Expr *e)
{
    Expr *rhs = e->u.binary.rhs;
    check_expr(ck, e->u.binary.lhs);
    switch (e->u.binary.op) {
    case BIN_MATCH:
    case BIN_NMATCH:
        if (rhs->kind != EX_STRING)
            ERR(ck, rhs->span, "the right side of '%s' must be a string literal (a regex)",
                e->u.binary.op == BIN_MATCH ? "=~" : "!~");
        else
            check_regex(ck, rhs);
        return;
    case BIN_IN:
        if (rhs->kind != EX_LIST) {
            ERR(ck, rhs->span, "the right side of 'in' must be a list like [1, 2]");
            check_expr(ck, rhs);
            return;
        }
        for (size_t i = 0; i < rhs->u.list.n; i++)
            check_expr(ck, rhs->u.list.items[i]);
        return;
    default:
        check_expr(ck, rhs);
        return;
    }
}

static void check_expr(Checker *ck, Expr *e)
{
    if (e == NULL)
        return;
    switch (e->kind) {
    case EX_NULL: case EX_BOOL: case EX_NUMBER: case EX_STRING: case EX_DURATION:
        return;
    case EX_PATH:
        check_path(ck, e);
        return;
    case EX_LIST:
        ERR(ck, e->span, "a list is only allowed on the right side of 'in'");
        return;
    case EX_UNARY:
        check_expr(ck, e->u.unary.operand);
        return;
    case EX_BINARY:
        check_binary(ck, e);
        return;
    case EX_CALL:
        check_call(ck, e);
        return;
    }
}

static void check_expr_in(Checker *ck, Expr *e, ExprContext ctx)
{
    ck->ctx = ctx;
    check_expr(ck, e);
}

static void check_template(Checker *ck, Template *t, ExprContext ctx)
{
    for (size_t i = 0; i < t->n_parts; i++)
        if (t->parts[i].expr)
            check_expr_in(ck, t->parts[i].expr, ctx);
}

/* ---- durations ------------------------------------------------------------------ */

static void check_positive(Checker *ck, int64_t ms, Span span, const char *what)
{
    if (ms != DURATION_NONE && ms <= 0)
        ERR(ck, span, "invalid duration: '%s' must be greater than 0", what);
}

/* ---- steps ---------------------------------------------------------------------- */

/* True if the `times` text is written as N..M (times 0 and times 0..0 parse alike). */
static bool span_has_range(Span s)
{
    size_t len = 0;
    const char *line = s.src ? source_line(s.src, s.line, &len) : NULL;
    if (line == NULL || s.col < 1 || (size_t)s.col > len)
        return false;
    size_t end = s.end_line == s.line && s.end_col > s.col ? (size_t)s.end_col - 1 : len;
    if (end > len)
        end = len;
    for (size_t i = (size_t)s.col - 1; i + 1 < end; i++)
        if (line[i] == '.' && line[i + 1] == '.')
            return true;
    return false;
}

static void check_times(Checker *ck, const Quantifier *q)
{
    if (!q->looping || q->times_span.line == 0)
        return;
    if (q->max != QUANT_UNBOUNDED && q->max < q->min) {
        ERR(ck, q->times_span, "'times %d..%d': the upper bound must be >= the lower bound",
            q->min, q->max);
    } else if (q->max == 0) {
        if (q->min == 0 && !span_has_range(q->times_span))
            ERR(ck, q->times_span, "'times 0' matches nothing; the count must be at least 1");
        else
            ERR(ck, q->times_span, "'times %d..0': the upper bound must be at least 1", q->min);
    } else if (q->min == 0 && q->max == QUANT_UNBOUNDED) {
        ERR(ck, q->times_span, "'times 0+' is not allowed; write 'one_or_more optional'");
    } else if (q->min < 0) {
        ERR(ck, q->times_span, "the count of 'times' must not be negative");
    } else if (q->min > DSL_MAX_TIMES || q->max > DSL_MAX_TIMES) {
        ERR(ck, q->times_span, "the count of 'times' must be at most %d (each counted event "
            "is a state of the automaton)", DSL_MAX_TIMES);
    }
}

static void check_loop_options(Checker *ck, const Step *s)
{
    const Quantifier *q = &s->quant;
    if (!q->looping) {
        if (q->consecutive)
            ERR(ck, q->consecutive_span, "'consecutive' needs a loop (times or one_or_more)");
        if (q->allow_combinations)
            ERR(ck, q->combinations_span,
                "'allow_combinations' needs a loop (times or one_or_more)");
        if (q->greedy)
            ERR(ck, q->greedy_span, "'greedy' needs a loop (times or one_or_more)");
    } else if (q->consecutive && q->allow_combinations) {
        ERR(ck, q->combinations_span, "'consecutive' and 'allow_combinations' exclude each other");
    }
    if (q->until && !is_open_loop(q))
        ERR(ck, q->until_span, "'until' needs an open loop (one_or_more or times N+)");
}

static void check_not_step(Checker *ck, const Step *s)
{
    const Quantifier *q = &s->quant;
    const char *word = step_kind_word(s->kind);
    if (q->looping)
        ERR(ck, q->times_span, "a '%s' step cannot repeat", word);
    if (q->optional)
        ERR(ck, q->optional_span, "a '%s' step cannot be optional", word);
}

static bool rule_has_within(const Rule *r)
{
    if (r->within_ms != DURATION_NONE)
        return true;
    for (size_t i = 0; i < r->n_steps; i++)
        if (r->steps[i].within_ms != DURATION_NONE)
            return true;
    return false;
}

static void warn_unbounded(Checker *ck, const Step *s)
{
    if (ck->rule->within_ms != DURATION_NONE || s->within_ms != DURATION_NONE)
        return;
    const Quantifier *q = &s->quant;
    if (is_open_loop(q) && q->until == NULL)
        WARN(ck, s->name_span,
             "state can grow without bound: loop '%s' has neither 'within' nor 'until'", s->name);
    else if (s->kind == STEP_FOLLOWED_BY_ANY)
        WARN(ck, s->name_span,
             "state can grow without bound: 'followed_by_any' step '%s' has no 'within'", s->name);
}

static void check_step_order(Checker *ck, size_t i)
{
    Step *s = &ck->rule->steps[i];
    Span keyword = span_prefix(s->span, strlen(step_kind_word(s->kind)));
    if (i == 0 && s->kind != STEP_BEGIN) {
        ERR(ck, keyword, "pattern must start with 'begin', not '%s'", step_kind_word(s->kind));
    } else if (i > 0 && s->kind == STEP_BEGIN) {
        ERR(ck, keyword, "'begin' must be the first step only; use next or followed_by");
    }
    bool last = i + 1 == ck->rule->n_steps;
    if (last && s->kind == STEP_NOT_FOLLOWED_BY && ck->rule->within_ms == DURATION_NONE &&
        s->within_ms == DURATION_NONE)
        ERR(ck, keyword, "'not_followed_by' as the last step needs 'within'");
}

static void check_duplicate_step(Checker *ck, size_t i)
{
    Step *s = &ck->rule->steps[i];
    for (size_t j = 0; j < i; j++) {
        Step *prev = &ck->rule->steps[j];
        if (s->name && prev->name && strcmp(s->name, prev->name) == 0) {
            ERR(ck, s->name_span, "duplicate step '%s' (first defined at %s:%d:%d)", s->name,
                span_file(prev->name_span), prev->name_span.line, prev->name_span.col);
            return;
        }
    }
}

static bool is_optional_step(const Step *s)
{
    return s->quant.optional || (s->quant.looping && s->quant.min == 0);
}

/* Flink's NFACompiler rejects a negation right after an optional step: whether the
 * negated event may occur would depend on a step that may not exist. */
static void check_not_after_optional(Checker *ck, size_t i)
{
    const Step *s = &ck->rule->steps[i];
    if (i == 0 || !is_not_step(s) || !is_optional_step(&ck->rule->steps[i - 1]))
        return;
    Span keyword = span_prefix(s->span, strlen(step_kind_word(s->kind)));
    ERR(ck, keyword, "a '%s' step cannot follow the optional step '%s'",
        step_kind_word(s->kind), ck->rule->steps[i - 1].name);
}

/* Flink's Pattern.optional() rejects an optional pattern after a greedy one: the
 * greedy loop would have to leave events to a step that may not exist. (`times 0..M`
 * goes through Flink's times(), which does not check.) */
static void check_optional_after_greedy(Checker *ck, size_t i)
{
    const Step *s = &ck->rule->steps[i];
    if (i == 0 || !s->quant.optional || !ck->rule->steps[i - 1].quant.greedy)
        return;
    ERR(ck, s->quant.optional_span, "'optional' cannot follow the greedy step '%s'",
        ck->rule->steps[i - 1].name);
}

/* Flink's NFACompiler rejects a step window longer than the pattern's: the pattern's
 * would always end the match first. Only where Flink gives the step a window: not a
 * loop's (there the step `within` is ours, SEMANTICS.md) nor a not_followed_by's in
 * the middle (which has no state). */
static void check_step_within_fits(Checker *ck, size_t i)
{
    const Rule *r = ck->rule;
    const Step *s = &r->steps[i];
    bool middle_not_followed_by = s->kind == STEP_NOT_FOLLOWED_BY && i + 1 < r->n_steps;
    if (r->within_ms <= 0 || s->within_ms <= r->within_ms || s->quant.looping ||
        middle_not_followed_by)
        return;
    ERR(ck, s->within_span, "the 'within' of step '%s' is longer than the rule's "
        "(at %s:%d:%d), which always ends the match first", s->name,
        span_file(r->within_span), r->within_span.line, r->within_span.col);
}

static void check_step(Checker *ck, size_t i)
{
    Step *s = &ck->rule->steps[i];
    check_duplicate_step(ck, i);
    check_step_order(ck, i);
    check_not_after_optional(ck, i);
    check_optional_after_greedy(ck, i);
    check_step_within_fits(ck, i);
    check_positive(ck, s->within_ms, s->within_span, "within");
    check_times(ck, &s->quant);
    check_loop_options(ck, s);
    if (is_not_step(s))
        check_not_step(ck, s);
    warn_unbounded(ck, s);
    check_expr_in(ck, s->where, CTX_WHERE);
    check_expr_in(ck, s->quant.until, CTX_WHERE);
}

/* ---- rule parts ------------------------------------------------------------------- */

static void check_keys(Checker *ck)
{
    Rule *r = ck->rule;
    for (size_t i = 0; i < r->n_keys; i++) {
        KeyDecl *k = &r->keys[i];
        for (size_t j = 0; j < i; j++) {
            if (k->name && r->keys[j].name && strcmp(k->name, r->keys[j].name) == 0) {
                ERR(ck, k->span, "duplicate key '%s' (first defined at %s:%d:%d)", k->name,
                    span_file(r->keys[j].span), r->keys[j].span.line, r->keys[j].span.col);
                break;
            }
        }
        check_expr_in(ck, k->expr, CTX_KEY);
    }
}

static void check_skip(Checker *ck)
{
    SkipDecl *sk = &ck->rule->skip;
    sk->step_index = -1;
    if (sk->kind != SKIP_TO_FIRST && sk->kind != SKIP_TO_LAST)
        return;
    if (sk->step == NULL)
        return;
    int idx = ast_step_index(ck->rule, sk->step);
    if (idx < 0)
        report_unknown_step(ck, sk->step, sk->step_span, " in 'skip'");
    else if (report_negated_step(ck, idx, sk->step_span))
        idx = -1;
    sk->step_index = idx;
}

static void resolve_output_ref(Checker *ck, OutputRef *ref)
{
    ref->output = -1;
    if (strcmp(ref->name, "stdout") == 0)
        return;
    RuleSet *rs = ck->rs;
    for (size_t i = 0; i < rs->n_outputs; i++) {
        if (rs->outputs[i].name && strcmp(rs->outputs[i].name, ref->name) == 0) {
            ref->output = (int)i;
            return;
        }
    }
    const char **names = malloc((rs->n_outputs + 1) * sizeof *names);
    char hint[160];
    if (names) {
        names[0] = "stdout";
        for (size_t i = 0; i < rs->n_outputs; i++)
            names[i + 1] = rs->outputs[i].name;
    }
    const char *sugg = suggestion(ck, hint, ref->name, names, rs->n_outputs + 1);
    ERR(ck, ref->span, "unknown output '%s'%s", ref->name, sugg);
    free(names);
}

static void check_action(Checker *ck, Action *a)
{
    check_template(ck, &a->message, CTX_ACTION);
    for (size_t i = 0; i < a->n_fields; i++) {
        AlertField *f = &a->fields[i];
        for (size_t j = 0; j < i; j++) {
            if (strcmp(f->name, a->fields[j].name) == 0) {
                ERR(ck, f->name_span, "duplicate field '%s' in 'fields'", f->name);
                break;
            }
        }
        check_expr_in(ck, f->value, CTX_ACTION);
    }
    for (size_t i = 0; i < a->n_to; i++) {
        resolve_output_ref(ck, &a->to[i]);
        for (size_t j = 0; j < i; j++) {
            if (strcmp(a->to[i].name, a->to[j].name) == 0) {
                ERR(ck, a->to[i].span, "output '%s' is listed twice", a->to[i].name);
                break;
            }
        }
    }
}

static void check_on(Checker *ck)
{
    Rule *r = ck->rule;
    for (size_t i = 0; i < r->n_on; i++) {
        OnClause *on = &r->on[i];
        if (on->trigger == ON_TIMEOUT && !rule_has_within(r))
            ERR(ck, on->trigger_span.line ? on->trigger_span : on->span,
                "'on timeout' needs a 'within' (the rule's or a step's)");
        for (size_t j = 0; j < on->n_actions; j++)
            check_action(ck, &on->actions[j]);
    }
}

static void check_rule_names(Checker *ck, size_t index)
{
    Rule *r = &ck->rs->rules[index];
    size_t j = ck->first_rule_named ? ck->first_rule_named[index] : index;
    if (j == index)
        return;
    Rule *prev = &ck->rs->rules[j];
    ERR(ck, r->name_span, "duplicate rule '%s' (first defined at %s:%d:%d)", r->name,
        span_file(prev->name_span), prev->name_span.line, prev->name_span.col);
}

/* True if a syntax error was reported inside `r`: error recovery dropped part
 * of it, so checking the rest would only report the consequences. */
static bool has_syntax_errors(const Checker *ck, const Rule *r)
{
    int first = r->span.line, last = r->span.end_line > first ? r->span.end_line : first;
    const char *file = r->span.src ? r->span.src->path : NULL;
    if (file == NULL)
        return false;
    /* Stored diagnostics keep the file name, not the source. */
    for (size_t i = 0; i < ck->n_earlier && i < ck->diags->n; i++) {
        const Diagnostic *g = &ck->diags->items[i];
        if (g->level == DIAG_ERROR && g->file && strcmp(g->file, file) == 0 &&
            g->span.line >= first && g->span.line <= last)
            return true;
    }
    return false;
}

static void check_rule(Checker *ck, size_t index)
{
    Rule *r = &ck->rs->rules[index];
    ck->rule = r;
    check_rule_names(ck, index);
    if (has_syntax_errors(ck, r)) {
        ck->rule = NULL;
        return;
    }
    if (r->n_steps == 0)
        ERR(ck, r->name_span, "rule '%s' has no pattern: it needs a 'begin' step", r->name);
    check_expr_in(ck, r->filter, CTX_FILTER);
    check_keys(ck);
    for (size_t i = 0; i < r->n_steps; i++)
        check_step(ck, i);
    check_positive(ck, r->within_ms, r->within_span, "within");
    check_positive(ck, r->suppress_ms, r->suppress_span, "suppress");
    check_skip(ck);
    check_on(ck);
    ck->rule = NULL;
}

/* ---- file-level declarations ---------------------------------------------------------- */

/* Output templates are filled per alert by the output itself (alerts/), so their
 * names stay unresolved; each kind of output accepts only what it can fill. */
typedef struct TemplateNames {
    const char *const *names;
    size_t n;
    bool key;              /* {key.NAME} allowed */
    const char *listing;   /* for the message */
} TemplateNames;

static const char *const FILE_TEMPLATE_NAMES[] = {"date", "hour", "rule"};
static const char *const EXEC_TEMPLATE_NAMES[] = {"rule", "kind", "severity"};
static const TemplateNames FILE_TEMPLATES = {FILE_TEMPLATE_NAMES, 3, false,
                                             "{date}, {hour} and {rule}"};
static const TemplateNames EXEC_TEMPLATES = {EXEC_TEMPLATE_NAMES, 3, true,
                                             "{rule}, {kind}, {severity} and {key.NAME}"};

static bool is_template_name(const Expr *e, const TemplateNames *allowed)
{
    if (e->kind != EX_PATH || e->u.path.n_segs == 0 || e->u.path.segs[0].name == NULL)
        return false;
    const char *first = e->u.path.segs[0].name;
    size_t n = e->u.path.n_segs;
    if (strcmp(first, "key") == 0)
        return allowed->key && n == 2 && e->u.path.segs[1].name != NULL;
    if (n != 1)
        return false;
    for (size_t i = 0; i < allowed->n; i++)
        if (strcmp(first, allowed->names[i]) == 0)
            return true;
    return false;
}

static void check_output_template(Checker *ck, const Template *t, const TemplateNames *allowed,
                                  const char *what)
{
    for (size_t i = 0; i < t->n_parts; i++) {
        const Expr *e = t->parts[i].expr;
        if (e == NULL || (allowed && is_template_name(e, allowed)))
            continue;
        if (!allowed) {
            ERR(ck, e->span, "%s cannot hold {...} templates", what);
            continue;
        }
        char hint[160] = "";
        const char *sugg = "";
        if (e->kind == EX_PATH && e->u.path.n_segs == 1 && e->u.path.segs[0].name)
            sugg = suggestion(ck, hint, e->u.path.segs[0].name, allowed->names, allowed->n);
        ERR(ck, e->span, "%s may only use %s%s", what, allowed->listing, sugg);
    }
}

const char *dsl_parse_host_port(const char *text, NetAddress *out)
{
    HostPort hp;
    switch (hostport_parse(text, 1, 65535, &hp)) {
    case HOSTPORT_OK:
        *out = (NetAddress){hp.host, hp.host_len, hp.port};
        return NULL;
    case HOSTPORT_BRACKETS:
        return "an IPv6 address is written \"[ADDRESS]:PORT\"";
    case HOSTPORT_NO_HOST:
        return "expected \"HOST:PORT\"";
    case HOSTPORT_NO_PORT:
    case HOSTPORT_BAD_PORT:
        break;
    }
    return "the port must be a number from 1 to 65535";
}

size_t dsl_unix_path_max(void)
{
    return sizeof ((struct sockaddr_un *)NULL)->sun_path - 1;
}

/* The literal of a template without {...} parts, its length in *len; NULL if it
 * has some (reported apart) or on allocation failure (diags->oom set: an address left
 * unchecked must not load). Heap. */
static char *template_literal(Checker *ck, const Template *t, size_t *len)
{
    *len = 0;
    for (size_t i = 0; i < t->n_parts; i++) {
        if (t->parts[i].expr)
            return NULL;
        *len += t->parts[i].len;
    }
    char *s = malloc(*len + 1);
    if (s == NULL) {
        ck->diags->oom = true;
        return NULL;
    }
    size_t at = 0;
    for (size_t i = 0; i < t->n_parts; i++) {
        memcpy(s + at, t->parts[i].text, t->parts[i].len);
        at += t->parts[i].len;
    }
    s[at] = '\0';
    return s;
}

/* What the output would refuse when it opens, found by `vigil check` already. */
static void check_net_address(Checker *ck, const OutputDecl *o)
{
    size_t len;
    char *addr = template_literal(ck, &o->path, &len);
    if (addr == NULL)
        return;
    NetAddress parts;
    const char *why;
    if (strlen(addr) != len)
        ERR(ck, o->path.span, "output '%s': the address holds a NUL character", o->name);
    else if (o->kind == OUT_TCP && (why = dsl_parse_host_port(addr, &parts)) != NULL)
        ERR(ck, o->path.span, "output '%s': %s, got \"%s\"", o->name, why, addr);
    else if (o->kind == OUT_UNIX && (len == 0 || len > dsl_unix_path_max()))
        ERR(ck, o->path.span, "output '%s': a unix socket path must be 1 to %zu bytes, got %zu",
            o->name, dsl_unix_path_max(), len);
    free(addr);
}

static void check_output(Checker *ck, size_t index)
{
    OutputDecl *o = &ck->rs->outputs[index];
    if (o->name && strcmp(o->name, "stdout") == 0)
        ERR(ck, o->name_span, "output 'stdout' is predefined and cannot be redeclared");
    size_t j = ck->first_output_named ? ck->first_output_named[index] : index;
    if (j != index) {
        OutputDecl *prev = &ck->rs->outputs[j];
        ERR(ck, o->name_span, "duplicate output '%s' (first defined at %s:%d:%d)", o->name,
            span_file(prev->name_span), prev->name_span.line, prev->name_span.col);
    }
    if (o->kind == OUT_EXEC) {
        if (o->n_argv == 0)
            ERR(ck, o->span, "exec output '%s' needs a program: [\"PROGRAM\", ...]", o->name);
        /* The program itself is never chosen by event data. */
        if (o->n_argv > 0)
            check_output_template(ck, &o->argv[0], NULL, "the program of an exec output");
        for (size_t i = 1; i < o->n_argv; i++)
            check_output_template(ck, &o->argv[i], &EXEC_TEMPLATES, "exec arguments");
    } else if (o->kind == OUT_FILE) {
        check_output_template(ck, &o->path, &FILE_TEMPLATES, "a file output path");
    } else {
        check_output_template(ck, &o->path, NULL, "a network output address");
        check_net_address(ck, o);
    }
    check_positive(ck, o->rotate_ms, o->span, "rotate");
    check_positive(ck, o->timeout_ms, o->span, "timeout");
}

static void check_time_decls(Checker *ck)
{
    RuleSet *rs = ck->rs;
    const Decl *first = NULL;
    const TimeDecl *first_time = NULL;
    for (size_t f = 0; f < rs->n_files; f++) {
        RuleFile *file = &rs->files[f];
        for (size_t i = 0; i < file->n_decls; i++) {
            const Decl *d = &file->decls[i];
            if (d->kind != DECL_TIME)
                continue;
            if (first == NULL) {
                first = d;
                first_time = file->time;
                continue;
            }
            ERR(ck, span_prefix(d->span, strlen("time")),
                "more than one 'time' declaration (first at %s:%d:%d)", span_file(first->span),
                first->span.line, first->span.col);
        }
        if (first_time == NULL && file->time)
            first_time = file->time;
    }
    if (rs->time == NULL)
        rs->time = first_time;
}

/* ---- duplicate names ---------------------------------------------------------- */

typedef struct NamedIndex {
    const char *name;
    size_t index;
} NamedIndex;

static int compare_named_index(const void *pa, const void *pb)
{
    const NamedIndex *a = pa, *b = pb;
    int c = strcmp(a->name, b->name);
    if (c != 0)
        return c;
    return a->index < b->index ? -1 : a->index > b->index;
}

/* first[i] = the smallest index whose name equals names(i). Sorting, not comparing
 * every pair: a generated rule set of 60,000 rules took 12 s with the pairs.
 * NULL on allocation failure. */
static size_t *first_of_each_name(size_t n, const char *(*name_at)(const RuleSet *, size_t),
                                  const RuleSet *rs)
{
    size_t *first = malloc((n ? n : 1) * sizeof *first);
    NamedIndex *sorted = malloc((n ? n : 1) * sizeof *sorted);
    if (first == NULL || sorted == NULL) {
        free(first);
        free(sorted);
        return NULL;
    }
    size_t n_named = 0;
    for (size_t i = 0; i < n; i++) {
        first[i] = i;
        const char *name = name_at(rs, i);
        if (name != NULL)
            sorted[n_named++] = (NamedIndex){name, i};
    }
    qsort(sorted, n_named, sizeof *sorted, compare_named_index);
    for (size_t i = 1; i < n_named; i++)
        if (strcmp(sorted[i].name, sorted[i - 1].name) == 0)
            first[sorted[i].index] = first[sorted[i - 1].index];
    free(sorted);
    return first;
}

static const char *rule_name_at(const RuleSet *rs, size_t i)
{
    return rs->rules[i].name;
}

static const char *output_name_at(const RuleSet *rs, size_t i)
{
    return rs->outputs[i].name;
}

static bool index_first_names(Checker *ck)
{
    ck->first_rule_named = first_of_each_name(ck->rs->n_rules, rule_name_at, ck->rs);
    ck->first_output_named = first_of_each_name(ck->rs->n_outputs, output_name_at, ck->rs);
    return ck->first_rule_named != NULL && ck->first_output_named != NULL;
}

int dsl_check(RuleSet *rs, Diags *diags)
{
    size_t errors_before = diags->errors;
    Checker ck = {rs, diags, diags->n, NULL, CTX_FILTER, NULL, NULL};
    if (!index_first_names(&ck))
        diags->oom = true;   /* duplicates go unreported, so the compile must fail */
    check_time_decls(&ck);
    for (size_t i = 0; i < rs->n_outputs; i++)
        check_output(&ck, i);
    for (size_t i = 0; i < rs->n_rules; i++)
        check_rule(&ck, i);
    free(ck.first_rule_named);
    free(ck.first_output_named);
    return (int)(diags->errors - errors_before);
}

/* dsl/build.c — builders for the grammar's declaration and rule actions.
 *
 * Owns: time and output declarations, the rule being parsed (pc->rb) and its
 * statements in written order, steps with their quantifiers, actions. Words with a
 * meaning only in their own position (formats, output kinds, skip strategies,
 * severities, match/timeout) are checked here, as is anything the AST could not
 * hold twice (a second filter, a second where in a step). Names are not resolved
 * here: dsl/check.c does that. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "dsl/parser.h"

/* ---- file-level declarations --------------------------------------------- */

static bool add_decl(ParseCtx *pc, DeclKind kind, size_t index, Span span)
{
    Decl *d = parse_vec_push(pc, &pc->decls, sizeof *d);
    if (!d)
        return false;
    *d = (Decl){kind, index, span};
    return true;
}

bool parse_push_option(ParseCtx *pc, Vec *v, const Tok *name, Span name_span,
                       const Tok *value, Span value_span)
{
    OptItem *o = parse_vec_push(pc, v, sizeof *o);
    if (!o)
        return false;
    o->name = *name;
    o->name_span = name_span;
    if (value) {
        o->has_value = true;
        o->value = *value;
        o->value_span = value_span;
    }
    return true;
}

/* Looks a word up in a NULL-terminated list; reports and returns -1 if absent. */
static int lookup_word(ParseCtx *pc, const char *word, Span span, const char *const *words,
                       const char *what, const char *expected)
{
    size_t n = 0;
    for (; words[n]; n++)
        if (strcmp(words[n], word) == 0)
            return (int)n;
    const char *near = diag_nearest(word, words, n);
    if (near)
        parse_error(pc, span, "unknown %s '%s' (did you mean '%s'?)", what, word, near);
    else
        parse_error(pc, span, "unknown %s '%s' (expected %s)", what, word, expected);
    return -1;
}

bool parse_time_decl(ParseCtx *pc, const Vec *path, const Vec *opts, Span span)
{
    static const char *const FORMATS[] = {"iso8601", "epoch_s", "epoch_ms", NULL};
    static const TimeFormat FORMAT_IDS[] = {TIME_ISO8601, TIME_EPOCH_S, TIME_EPOCH_MS};
    TimeDecl *t = arena_zalloc(pc->arena, sizeof *t);
    if (!t)
        return false;
    t->field = path->items;
    t->n_field = path->n;
    t->format = TIME_AUTO;
    t->span = span;
    bool format_written = false;
    const OptItem *o = opts->items;
    for (size_t i = 0; i < opts->n; i++) {
        if (o[i].has_value) {
            if (strcmp(o[i].name.text, "lateness") != 0)
                parse_error(pc, o[i].name_span,
                            "unknown option '%s' in a time declaration (expected 'lateness DUR')",
                            o[i].name.text);
            else if (t->lateness_written)
                parse_error(pc, o[i].name_span, "'lateness' given twice");
            else {
                t->lateness_ms = o[i].value.ms;
                t->lateness_written = true;
            }
            continue;
        }
        int f = lookup_word(pc, o[i].name.text, o[i].name_span, FORMATS, "time format",
                            "iso8601, epoch_s or epoch_ms");
        if (f >= 0 && format_written)
            parse_error(pc, o[i].name_span, "the time format is given twice");
        else if (f >= 0) {
            t->format = FORMAT_IDS[f];
            format_written = true;
        }
    }
    if (!pc->time)
        pc->time = t;
    if (!pc->rs->time)
        pc->rs->time = t;
    return add_decl(pc, DECL_TIME, 0, span);
}

bool parse_push_stok(ParseCtx *pc, Vec *v, const Tok *t, Span span)
{
    SpannedTok *s = parse_vec_push(pc, v, sizeof *s);
    if (!s)
        return false;
    *s = (SpannedTok){*t, span};
    return true;
}

/* Applies `rotate DUR` / `timeout DUR` to an output, reporting misplaced options. */
static void output_options(ParseCtx *pc, OutputDecl *o, const Vec *opts)
{
    static const char *const KIND_NAMES[] = {"file", "exec", "tcp", "unix"};
    const OptItem *opt = opts->items;
    for (size_t i = 0; i < opts->n; i++) {
        const char *name = opt[i].name.text;
        int64_t *slot = strcmp(name, "rotate") == 0 ? &o->rotate_ms
                      : strcmp(name, "timeout") == 0 ? &o->timeout_ms : NULL;
        bool applies = slot && (slot == &o->rotate_ms ? o->kind == OUT_FILE : o->kind == OUT_EXEC);
        if (!slot)
            parse_error(pc, opt[i].name_span,
                        "unknown output option '%s' (expected 'rotate DUR' for file outputs or "
                        "'timeout DUR' for exec outputs)",
                        name);
        else if (!applies)
            parse_error(pc, opt[i].name_span, "'%s' does not apply to %s outputs", name,
                        KIND_NAMES[o->kind]);
        else if (*slot != DURATION_NONE)
            parse_error(pc, opt[i].name_span, "'%s' given twice", name);
        else
            *slot = opt[i].value.ms;
    }
}

bool parse_output_decl(ParseCtx *pc, const Tok *name, Span name_span, const Tok *kind,
                       Span kind_span, const OutTarget *target, const Vec *opts, Span span)
{
    static const char *const KINDS[] = {"file", "exec", "tcp", "unix", NULL};
    static const OutputKind KIND_IDS[] = {OUT_FILE, OUT_EXEC, OUT_TCP, OUT_UNIX};
    int k = lookup_word(pc, kind->text, kind_span, KINDS, "output kind",
                        "file, exec, tcp or unix");
    if (k < 0)
        return true;
    OutputDecl o = {
        .name = name->text, .kind = KIND_IDS[k], .span = span, .name_span = name_span,
        .rotate_ms = DURATION_NONE, .timeout_ms = DURATION_NONE,
    };
    if (o.kind == OUT_EXEC && !target->list) {
        parse_error(pc, target->span,
                    "an exec output takes a list of arguments: [\"program\", \"arg\", ...]");
        return true;
    }
    if (o.kind != OUT_EXEC && target->list) {
        parse_error(pc, target->span, "a %s output takes one string, not a list", KINDS[k]);
        return true;
    }
    const SpannedTok *strings = target->strings.items;
    if (o.kind == OUT_EXEC) {
        o.n_argv = target->strings.n;
        o.argv = arena_zalloc(pc->arena, o.n_argv * sizeof *o.argv);
        if (!o.argv)
            return false;
        for (size_t i = 0; i < o.n_argv; i++)
            if (!parse_make_template(pc, &strings[i].tok, strings[i].span, &o.argv[i]))
                return false;
    } else if (!parse_make_template(pc, &strings[0].tok, strings[0].span, &o.path)) {
        return false;
    }
    output_options(pc, &o, opts);
    OutputDecl *slot = ast_add_output(pc->rs);
    if (!slot)
        return false;
    *slot = o;
    return add_decl(pc, DECL_OUTPUT, pc->rs->n_outputs - 1, span);
}

/* ---- rules --------------------------------------------------------------- */

void parse_rule_begin(ParseCtx *pc, const Tok *name, Span name_span)
{
    memset(&pc->rb, 0, sizeof pc->rb);
    Rule *r = &pc->rb.rule;
    r->name = name->text;
    r->name_span = name_span;
    r->within_ms = DURATION_NONE;
    r->suppress_ms = DURATION_NONE;
    r->skip.kind = SKIP_PAST_LAST_EVENT;
    r->skip.step_index = -1;
}

bool parse_rule_end(ParseCtx *pc, Span span)
{
    RuleBuild *rb = &pc->rb;
    Rule *r = &rb->rule;
    r->span = span;
    r->keys = rb->keys.items;
    r->n_keys = rb->keys.n;
    r->steps = rb->steps.items;
    r->n_steps = rb->steps.n;
    r->on = rb->on.items;
    r->n_on = rb->on.n;
    r->stmts = rb->stmts.items;
    r->n_stmts = rb->stmts.n;
    Rule *slot = ast_add_rule(pc->rs);
    if (!slot)
        return false;
    *slot = *r;
    return add_decl(pc, DECL_RULE, pc->rs->n_rules - 1, span);
}

static bool add_stmt(ParseCtx *pc, StmtKind kind, size_t index, Span span)
{
    Stmt *s = parse_vec_push(pc, &pc->rb.stmts, sizeof *s);
    if (!s)
        return false;
    *s = (Stmt){kind, index, span};
    return true;
}

/* A statement that may appear once per rule: reports a repeat, returns false then. */
static bool first_of_kind(ParseCtx *pc, Span previous, Span span, const char *what)
{
    if (previous.line == 0)
        return true;
    parse_error(pc, span, "more than one '%s' in rule '%s' (the first is at line %d)", what,
                pc->rb.rule.name, previous.line);
    return false;
}

bool parse_filter(ParseCtx *pc, Expr *cond, Span span)
{
    Rule *r = &pc->rb.rule;
    if (!first_of_kind(pc, r->filter_span, span, "filter"))
        return true;
    r->filter = cond;
    r->filter_span = span;
    return add_stmt(pc, STMT_FILTER, 0, span);
}

/* The readable name of an unnamed key: a path's text, else the expression's source
 * with runs of blanks folded to one space. */
static const char *key_text(ParseCtx *pc, const Expr *e)
{
    Buf b = BUF_INIT;
    if (e->kind == EX_PATH) {
        for (size_t i = 0; i < e->u.path.n_segs; i++) {
            const PathSeg *s = &e->u.path.segs[i];
            if (s->name)
                buf_printf(&b, "%s%s", i ? "." : "", s->name);
            else
                buf_printf(&b, "[%ld]", s->index);
        }
    } else {
        const SourceFile *src = pc->src;
        size_t start = src->line_starts[e->span.line - 1] + (size_t)e->span.col - 1;
        size_t end = src->line_starts[e->span.end_line - 1] + (size_t)e->span.end_col - 1;
        bool blank = false;
        for (size_t i = start; i < end; i++) {
            char c = src->text[i];
            bool is_blank = c == ' ' || c == '\t' || c == '\n' || c == '\r';
            if (!is_blank && blank && b.len > 0)
                buf_putc(&b, ' ');
            if (!is_blank)
                buf_putc(&b, c);
            blank = is_blank;
        }
    }
    const char *text = b.failed ? NULL : arena_strndup(pc->arena, b.data ? b.data : "", b.len);
    buf_free(&b);
    return text;
}

bool parse_push_key(ParseCtx *pc, Vec *v, const Tok *name, Expr *e, Span span)
{
    KeyDecl *k = parse_vec_push(pc, v, sizeof *k);
    if (!k)
        return false;
    k->named = name != NULL;
    k->name = name ? name->text : key_text(pc, e);
    k->expr = e;
    k->span = span;
    return k->name != NULL;
}

/* One Stmt per `key` statement; its index is the statement's first key. */
bool parse_keys(ParseCtx *pc, const Vec *keys, Span span)
{
    size_t first = pc->rb.keys.n;
    const KeyDecl *k = keys->items;
    for (size_t i = 0; i < keys->n; i++) {
        KeyDecl *slot = parse_vec_push(pc, &pc->rb.keys, sizeof *slot);
        if (!slot)
            return false;
        *slot = k[i];
    }
    return add_stmt(pc, STMT_KEY, first, span);
}

Step *parse_step_new(ParseCtx *pc)
{
    Step *s = arena_zalloc(pc->arena, sizeof *s);
    if (s) {
        s->within_ms = DURATION_NONE;
        s->quant.min = s->quant.max = 1;
    }
    return s;
}

static bool first_clause(ParseCtx *pc, bool repeated, Span span, const char *what)
{
    if (repeated)
        parse_error(pc, span, "'%s' appears twice in this step", what);
    return !repeated;
}

void parse_step_within(ParseCtx *pc, Step *s, const Tok *dur, Span span)
{
    if (first_clause(pc, s->within_span.line != 0, span, "within")) {
        s->within_ms = dur->ms;
        s->within_span = span;
    }
}

void parse_step_where(ParseCtx *pc, Step *s, Expr *cond, Span where_span)
{
    if (first_clause(pc, s->where != NULL, where_span, "where"))
        s->where = cond;
}

static bool first_repetition(ParseCtx *pc, Step *s, Span span)
{
    if (s->quant.times_span.line == 0)
        return true;
    parse_error(pc, span,
                "a step takes one repetition ('times' or 'one_or_more'); this is a second one");
    return false;
}

void parse_times(ParseCtx *pc, Step *s, const Tok *n, const Tok *m, bool plus, Span span)
{
    long min = 0, max = 0;
    if (!first_repetition(pc, s, span) ||
        !parse_whole_number(pc, n, INT_MAX, span, "a repeat count", &min))
        return;
    if (m && !parse_whole_number(pc, m, INT_MAX, span, "a repeat count", &max))
        return;
    Quantifier *q = &s->quant;
    q->min = (int)min;
    q->max = m ? (int)max : plus ? QUANT_UNBOUNDED : (int)min;
    q->looping = true;
    q->times_span = span;
}

void parse_one_or_more(ParseCtx *pc, Step *s, Span span)
{
    if (!first_repetition(pc, s, span))
        return;
    s->quant.min = 1;
    s->quant.max = QUANT_UNBOUNDED;
    s->quant.looping = true;
    s->quant.times_span = span;
}

void parse_flag(ParseCtx *pc, Step *s, int token, Span span)
{
    Quantifier *q = &s->quant;
    bool *flag = token == OPTIONAL ? &q->optional
               : token == GREEDY ? &q->greedy
               : token == CONSECUTIVE ? &q->consecutive : &q->allow_combinations;
    Span *where = token == OPTIONAL ? &q->optional_span
                : token == GREEDY ? &q->greedy_span
                : token == CONSECUTIVE ? &q->consecutive_span : &q->combinations_span;
    const char *name = token == OPTIONAL ? "optional"
                     : token == GREEDY ? "greedy"
                     : token == CONSECUTIVE ? "consecutive" : "allow_combinations";
    if (first_clause(pc, *flag, span, name)) {
        *flag = true;
        *where = span;
    }
}

void parse_until(ParseCtx *pc, Step *s, Expr *cond, Span span)
{
    if (first_clause(pc, s->quant.until != NULL, span, "until")) {
        s->quant.until = cond;
        s->quant.until_span = span;
    }
}

bool parse_step(ParseCtx *pc, StepKind kind, const Tok *name, Span name_span, Step *s, Span span)
{
    s->kind = kind;
    s->name = name->text;
    s->name_span = name_span;
    s->span = span;
    Step *slot = parse_vec_push(pc, &pc->rb.steps, sizeof *slot);
    if (!slot)
        return false;
    *slot = *s;
    return add_stmt(pc, STMT_STEP, pc->rb.steps.n - 1, span);
}

bool parse_rule_within(ParseCtx *pc, const Tok *dur, Span span)
{
    Rule *r = &pc->rb.rule;
    if (!first_of_kind(pc, r->within_span, span, "within"))
        return true;
    r->within_ms = dur->ms;
    r->within_span = span;
    return add_stmt(pc, STMT_WITHIN, 0, span);
}

bool parse_skip(ParseCtx *pc, const Tok *strategy, Span strategy_span, const Tok *step,
                Span step_span, Span span)
{
    static const char *const NAMES[] = {
        "past_last_event", "no_skip", "to_next", "to_first", "to_last", NULL,
    };
    static const SkipKind KINDS[] = {
        SKIP_PAST_LAST_EVENT, SKIP_NO_SKIP, SKIP_TO_NEXT, SKIP_TO_FIRST, SKIP_TO_LAST,
    };
    SkipDecl *sk = &pc->rb.rule.skip;
    if (!first_of_kind(pc, sk->written ? sk->span : (Span){0}, span, "skip"))
        return true;
    int k = lookup_word(pc, strategy->text, strategy_span, NAMES, "skip strategy",
                        "no_skip, to_next, past_last_event, to_first STEP or to_last STEP");
    if (k < 0)
        return true;
    bool wants_step = KINDS[k] == SKIP_TO_FIRST || KINDS[k] == SKIP_TO_LAST;
    if (wants_step && !step) {
        parse_error(pc, strategy_span, "'skip %s' needs a step: skip %s STEP", NAMES[k], NAMES[k]);
        return true;
    }
    if (!wants_step && step) {
        parse_error(pc, step_span, "'skip %s' takes no step name", NAMES[k]);
        return true;
    }
    sk->kind = KINDS[k];
    sk->written = true;
    sk->span = span;
    if (step) {
        sk->step = step->text;
        sk->step_span = step_span;
    }
    return add_stmt(pc, STMT_SKIP, 0, span);
}

bool parse_suppress(ParseCtx *pc, const Tok *dur, Span span)
{
    Rule *r = &pc->rb.rule;
    if (!first_of_kind(pc, r->suppress_span, span, "suppress"))
        return true;
    r->suppress_ms = dur->ms;
    r->suppress_span = span;
    return add_stmt(pc, STMT_SUPPRESS, 0, span);
}

bool parse_on(ParseCtx *pc, const Tok *trigger, Span trigger_span, const Vec *actions, Span span)
{
    ActionTrigger t;
    if (strcmp(trigger->text, "match") == 0) {
        t = ON_MATCH;
    } else if (strcmp(trigger->text, "timeout") == 0) {
        t = ON_TIMEOUT;
    } else {
        parse_error(pc, trigger_span, "expected 'match' or 'timeout' after 'on', not '%s'",
                    trigger->text);
        return true;
    }
    OnClause *on = parse_vec_push(pc, &pc->rb.on, sizeof *on);
    if (!on)
        return false;
    on->trigger = t;
    on->span = span;
    on->trigger_span = trigger_span;
    on->n_actions = actions->n;
    on->actions = arena_alloc(pc->arena, actions->n * sizeof *on->actions);
    if (!on->actions)
        return false;
    Action *const *list = actions->items;
    for (size_t i = 0; i < actions->n; i++)
        on->actions[i] = *list[i];
    return add_stmt(pc, STMT_ON, pc->rb.on.n - 1, span);
}

Action *parse_action(ParseCtx *pc, const Tok *severity, Span severity_span, const Tok *msg,
                     Span msg_span, const Vec *fields, const Vec *to, Span span)
{
    static const char *const SEVERITIES[] = {"info", "low", "medium", "high", "critical", NULL};
    Action *a = arena_zalloc(pc->arena, sizeof *a);
    if (!a)
        return NULL;
    a->span = span;
    a->severity = SEV_MEDIUM;
    if (severity->text) {
        int s = lookup_word(pc, severity->text, severity_span, SEVERITIES, "severity",
                            "info, low, medium, high or critical");
        if (s >= 0) {
            a->severity = (Severity)s;
            a->severity_written = true;
            a->severity_span = severity_span;
        }
    }
    if (!parse_make_template(pc, msg, msg_span, &a->message))
        return NULL;
    a->fields = fields->items;
    a->n_fields = fields->n;
    a->to = to->items;
    a->n_to = to->n;
    return a;
}

bool parse_push_field(ParseCtx *pc, Vec *v, const AlertField *f)
{
    AlertField *slot = parse_vec_push(pc, v, sizeof *slot);
    if (!slot)
        return false;
    *slot = *f;
    return true;
}

bool parse_push_out_ref(ParseCtx *pc, Vec *v, const Tok *name, Span span)
{
    OutputRef *r = parse_vec_push(pc, v, sizeof *r);
    if (!r)
        return false;
    *r = (OutputRef){.name = name->text, .span = span, .output = -1};
    return true;
}


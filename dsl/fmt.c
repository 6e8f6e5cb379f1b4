/* dsl/fmt.c — canonical text of rule files, and rule fingerprints.
 *
 * Owns nothing: every function returns a heap string the caller frees.
 * Layout: two-space indentation, one statement per line, canonical spacing,
 * parentheses only where precedence needs them. Literals keep how they were
 * written where that matters to a reader (number and duration text, raw strings,
 * templates); comments go back before the statement that follows them, or at the
 * end of the line they trailed. */
#include "dsl/fmt.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/hash.h"

/* ---- names and literals ----------------------------------------------------- */

static const char *const RESERVED[] = {
    "rule", "filter", "key", "begin", "next", "followed_by", "followed_by_any", "not_next",
    "not_followed_by", "within", "where", "skip", "suppress", "on", "alert", "fields", "to",
    "times", "one_or_more", "optional", "greedy", "consecutive", "allow_combinations", "until",
    "and", "or", "not", "in", "true", "false", "null", "time", "output",
};

static bool is_reserved(const char *s)
{
    for (size_t i = 0; i < sizeof RESERVED / sizeof RESERVED[0]; i++)
        if (strcmp(RESERVED[i], s) == 0)
            return true;
    return false;
}

static bool is_identifier(const char *s)
{
    if (!(isalpha((unsigned char)s[0]) || s[0] == '_'))
        return false;
    for (const char *p = s + 1; *p; p++)
        if (!(isalnum((unsigned char)*p) || *p == '_'))
            return false;
    return true;
}

/* A name (field, step, rule, ...), in backticks when it is not a plain identifier. */
static void put_name(Buf *b, const char *name)
{
    if (is_identifier(name) && !is_reserved(name)) {
        buf_puts(b, name);
        return;
    }
    buf_putc(b, '`');
    buf_puts(b, name);
    buf_putc(b, '`');
}

static void put_quoted_string(Buf *b, const char *s, size_t n)
{
    buf_putc(b, '"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"')
            buf_puts(b, "\\\"");
        else if (c == '\\')
            buf_puts(b, "\\\\");
        else if (c == '\n')
            buf_puts(b, "\\n");
        else if (c == '\t')
            buf_puts(b, "\\t");
        else if (c < 0x20 || c == 0x7f)
            buf_printf(b, "\\u%04x", c);
        else
            buf_putc(b, (char)c);
    }
    buf_putc(b, '"');
}

static void put_raw_string(Buf *b, const char *s, size_t n)
{
    buf_putc(b, '\'');
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\'')
            buf_putc(b, '\'');
        buf_putc(b, s[i]);
    }
    buf_putc(b, '\'');
}

static void put_string(Buf *b, const Expr *e)
{
    /* A raw string cannot hold NUL; fall back to escapes then. */
    if (e->u.string.raw && memchr(e->u.string.bytes, '\0', e->u.string.len) == NULL)
        put_raw_string(b, e->u.string.bytes, e->u.string.len);
    else
        put_quoted_string(b, e->u.string.bytes, e->u.string.len);
}

static void put_duration_ms(Buf *b, int64_t ms)
{
    static const struct { const char *unit; int64_t ms; } UNITS[] = {
        {"d", 86400000}, {"h", 3600000}, {"m", 60000}, {"s", 1000},
    };
    for (size_t i = 0; i < sizeof UNITS / sizeof UNITS[0]; i++) {
        if (ms != 0 && ms % UNITS[i].ms == 0) {
            buf_printf(b, "%" PRId64 "%s", ms / UNITS[i].ms, UNITS[i].unit);
            return;
        }
    }
    buf_printf(b, "%" PRId64 "ms", ms);
}

static int64_t unit_ms(const char *unit, size_t n)
{
    if (n == 2 && memcmp(unit, "ms", 2) == 0) return 1;
    if (n != 1) return -1;
    switch (unit[0]) {
    case 's': return 1000;
    case 'm': return 60000;
    case 'h': return 3600000;
    case 'd': return 86400000;
    }
    return -1;
}

/* Finds, inside the source text of `span`, a duration token worth `ms` and
 * prints it as written; otherwise prints the canonical form of `ms`. */
static void put_duration_in(Buf *b, Span span, int64_t ms)
{
    size_t len = 0;
    const char *line = span.src ? source_line(span.src, span.line, &len) : NULL;
    if (line && span.col >= 1 && (size_t)span.col <= len) {
        size_t end = span.end_line == span.line && span.end_col > span.col
                         ? (size_t)span.end_col - 1 : len;
        if (end > len)
            end = len;
        for (size_t i = (size_t)span.col - 1; i < end; i++) {
            if (!isdigit((unsigned char)line[i]) || (i > 0 && isalnum((unsigned char)line[i - 1])))
                continue;
            size_t j = i;
            int64_t v = 0;
            while (j < end && isdigit((unsigned char)line[j]) && v < INT64_MAX / 10)
                v = v * 10 + (line[j++] - '0');
            size_t u = j;
            while (u < end && isalpha((unsigned char)line[u]))
                u++;
            int64_t per = unit_ms(line + j, u - j);
            if (per > 0 && v <= INT64_MAX / per && v * per == ms) {
                buf_append(b, line + i, u - i);
                return;
            }
            i = u;
        }
    }
    put_duration_ms(b, ms);
}

/* ---- expressions ---------------------------------------------------------------- */

enum { PREC_OR = 1, PREC_AND, PREC_NOT, PREC_CMP, PREC_ADD, PREC_MUL, PREC_NEG, PREC_ATOM };

static int binary_prec(BinaryOp op)
{
    switch (op) {
    case BIN_OR: return PREC_OR;
    case BIN_AND: return PREC_AND;
    case BIN_ADD: case BIN_SUB: return PREC_ADD;
    case BIN_MUL: case BIN_DIV: case BIN_MOD: return PREC_MUL;
    default: return PREC_CMP;
    }
}

static const char *binary_text(BinaryOp op)
{
    static const char *const TEXT[] = {
        [BIN_OR] = "or", [BIN_AND] = "and", [BIN_EQ] = "==", [BIN_NE] = "!=",
        [BIN_LT] = "<", [BIN_LE] = "<=", [BIN_GT] = ">", [BIN_GE] = ">=",
        [BIN_IN] = "in", [BIN_MATCH] = "=~", [BIN_NMATCH] = "!~",
        [BIN_ADD] = "+", [BIN_SUB] = "-", [BIN_MUL] = "*", [BIN_DIV] = "/", [BIN_MOD] = "%",
    };
    return TEXT[op];
}

static bool number_text_negative(const Expr *e)
{
    return e->kind == EX_NUMBER &&
           (e->u.number.text ? e->u.number.text[0] == '-' : e->u.number.value < 0);
}

static int expr_prec(const Expr *e)
{
    if (e->kind == EX_BINARY)
        return binary_prec(e->u.binary.op);
    if (e->kind == EX_UNARY)
        return e->u.unary.op == UN_NOT ? PREC_NOT : PREC_NEG;
    if (number_text_negative(e))
        return PREC_NEG;
    return PREC_ATOM;
}

static void put_expr(Buf *b, const Expr *e);

static void put_expr_prec(Buf *b, const Expr *e, int min_prec)
{
    bool parens = expr_prec(e) < min_prec;
    if (parens)
        buf_putc(b, '(');
    put_expr(b, e);
    if (parens)
        buf_putc(b, ')');
}

static void put_path(Buf *b, const Expr *e)
{
    for (size_t i = 0; i < e->u.path.n_segs; i++) {
        const PathSeg *seg = &e->u.path.segs[i];
        if (seg->name == NULL) {
            buf_printf(b, "[%ld]", seg->index);
            continue;
        }
        if (i > 0)
            buf_putc(b, '.');
        /* `key.NAME` is the key reference, written with the keyword. */
        bool key_ref = i == 0 && e->u.path.n_segs >= 2 && e->u.path.segs[1].name &&
                       strcmp(seg->name, "key") == 0;
        if (key_ref)
            buf_puts(b, seg->name);
        else
            put_name(b, seg->name);
    }
}

static void put_expr_list(Buf *b, Expr *const *items, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (i > 0)
            buf_puts(b, ", ");
        put_expr(b, items[i]);
    }
}

static void put_binary(Buf *b, const Expr *e)
{
    int prec = binary_prec(e->u.binary.op);
    /* Left-associative: a right operand of equal precedence needs parentheses;
     * comparisons do not chain, so both their operands need them. */
    put_expr_prec(b, e->u.binary.lhs, prec == PREC_CMP ? prec + 1 : prec);
    buf_putc(b, ' ');
    buf_puts(b, binary_text(e->u.binary.op));
    buf_putc(b, ' ');
    put_expr_prec(b, e->u.binary.rhs, prec + 1);
}

static void put_unary(Buf *b, const Expr *e)
{
    const Expr *operand = e->u.unary.operand;
    if (e->u.unary.op == UN_NOT) {
        buf_puts(b, "not ");
        put_expr_prec(b, operand, PREC_NOT);
        return;
    }
    buf_putc(b, '-');
    /* `--x` would not read back as two negations. */
    bool starts_negative = (operand->kind == EX_UNARY && operand->u.unary.op == UN_NEG) ||
                           number_text_negative(operand);
    put_expr_prec(b, operand, starts_negative ? PREC_ATOM : PREC_NEG);
}

static void put_number(Buf *b, const Expr *e)
{
    if (e->u.number.text)
        buf_puts(b, e->u.number.text);
    else
        buf_printf(b, "%.17g", e->u.number.value);
}

static void put_expr(Buf *b, const Expr *e)
{
    switch (e->kind) {
    case EX_NULL: buf_puts(b, "null"); return;
    case EX_BOOL: buf_puts(b, e->u.boolean ? "true" : "false"); return;
    case EX_NUMBER: put_number(b, e); return;
    case EX_STRING: put_string(b, e); return;
    case EX_DURATION:
        if (e->u.duration.text)
            buf_puts(b, e->u.duration.text);
        else
            put_duration_ms(b, e->u.duration.ms);
        return;
    case EX_PATH: put_path(b, e); return;
    case EX_LIST:
        buf_putc(b, '[');
        put_expr_list(b, e->u.list.items, e->u.list.n);
        buf_putc(b, ']');
        return;
    case EX_UNARY: put_unary(b, e); return;
    case EX_BINARY: put_binary(b, e); return;
    case EX_CALL:
        if (strcmp(e->u.call.name, "time") == 0)
            buf_puts(b, "time");
        else
            put_name(b, e->u.call.name);
        buf_putc(b, '(');
        put_expr_list(b, e->u.call.args, e->u.call.n_args);
        buf_putc(b, ')');
        return;
    }
}

char *dsl_fmt_expr(const Expr *e)
{
    Buf b = BUF_INIT;
    put_expr(&b, e);
    if (b.failed) {
        buf_free(&b);
        return NULL;
    }
    return buf_steal(&b);
}

/* ---- templates --------------------------------------------------------------------- */

/* Templates are printed as written: their text is what the user reads in the
 * alert, so re-escaping it would only add noise. */
static void put_template(Buf *b, const Template *t)
{
    if (t->source && (t->source[0] == '"' || t->source[0] == '\'')) {
        buf_puts(b, t->source);
        return;
    }
    if (t->source) {
        put_quoted_string(b, t->source, strlen(t->source));
        return;
    }
    /* Synthesised: rebuild from the parts. */
    buf_putc(b, '"');
    for (size_t i = 0; i < t->n_parts; i++) {
        const TemplatePart *p = &t->parts[i];
        if (p->expr) {
            buf_putc(b, '{');
            put_expr(b, p->expr);
            buf_putc(b, '}');
            continue;
        }
        for (size_t j = 0; j < p->len; j++) {
            char c = p->text[j];
            if (c == '{' || c == '}')
                buf_putc(b, c);
            if (c == '"' || c == '\\')
                buf_putc(b, '\\');
            buf_putc(b, c);
        }
    }
    buf_putc(b, '"');
}

/* ---- rule statements ------------------------------------------------------------------ */

static const char *step_keyword(StepKind k)
{
    static const char *const WORDS[] = {
        [STEP_BEGIN] = "begin", [STEP_NEXT] = "next", [STEP_FOLLOWED_BY] = "followed_by",
        [STEP_FOLLOWED_BY_ANY] = "followed_by_any", [STEP_NOT_NEXT] = "not_next",
        [STEP_NOT_FOLLOWED_BY] = "not_followed_by",
    };
    return WORDS[k];
}

static bool span_text_starts_with(Span s, const char *word)
{
    size_t len = 0;
    const char *line = s.src ? source_line(s.src, s.line, &len) : NULL;
    size_t n = strlen(word);
    return line && s.col >= 1 && (size_t)s.col - 1 + n <= len &&
           memcmp(line + s.col - 1, word, n) == 0;
}

static void put_times(Buf *b, const Quantifier *q)
{
    if (!q->looping)
        return;
    if (q->max == QUANT_UNBOUNDED) {
        bool written_times = q->times_span.src && span_text_starts_with(q->times_span, "times");
        if (q->min == 1 && !written_times)
            buf_puts(b, " one_or_more");
        else
            buf_printf(b, " times %d+", q->min);
    } else if (q->min == q->max) {
        buf_printf(b, " times %d", q->min);
    } else {
        buf_printf(b, " times %d..%d", q->min, q->max);
    }
}

/* A top-level `and`/`or` chain broken before each operator, continuation lines
 * indented to `pad` (the column where the expression starts). */
static void put_chain(Buf *b, const Expr *e, size_t pad)
{
    if (e->kind != EX_BINARY || (e->u.binary.op != BIN_AND && e->u.binary.op != BIN_OR)) {
        put_expr(b, e);
        return;
    }
    BinaryOp op = e->u.binary.op;
    int prec = binary_prec(op);
    const Expr *lhs = e->u.binary.lhs;
    if (lhs->kind == EX_BINARY && lhs->u.binary.op == op)
        put_chain(b, lhs, pad);
    else
        put_expr_prec(b, lhs, prec);
    buf_putc(b, '\n');
    for (size_t i = 0; i < pad; i++)
        buf_putc(b, ' ');
    buf_puts(b, binary_text(op));
    buf_putc(b, ' ');
    put_expr_prec(b, e->u.binary.rhs, prec + 1);
}

/* `as_written` keeps duration text; the matching text wants canonical values.
 * A `where` is broken into lines when `wrap_pad` > 0. Returns the offset of the
 * where expression from the start of the statement (0 if none). */
static size_t put_step_with(Buf *b, const Step *s, bool as_written, size_t wrap_pad)
{
    const Quantifier *q = &s->quant;
    size_t start = b->len, where_at = 0;
    buf_puts(b, step_keyword(s->kind));
    buf_putc(b, ' ');
    put_name(b, s->name);
    if (s->within_ms != DURATION_NONE) {
        buf_puts(b, " within ");
        if (as_written)
            put_duration_in(b, s->within_span, s->within_ms);
        else
            put_duration_ms(b, s->within_ms);
    }
    if (s->where) {
        buf_puts(b, " where ");
        where_at = b->len - start;
        if (wrap_pad > 0)
            put_chain(b, s->where, wrap_pad);
        else
            put_expr(b, s->where);
    }
    put_times(b, q);
    if (q->optional) buf_puts(b, " optional");
    if (q->greedy) buf_puts(b, " greedy");
    if (q->consecutive) buf_puts(b, " consecutive");
    if (q->allow_combinations) buf_puts(b, " allow_combinations");
    if (q->until) {
        buf_puts(b, " until ");
        put_expr(b, q->until);
    }
    buf_putc(b, ';');
    return where_at;
}

static void put_step(Buf *b, const Step *s, bool as_written)
{
    put_step_with(b, s, as_written, 0);
}

#define FMT_LINE_WIDTH 100

/* A step starting at `column`: its `where` is broken at top-level and/or when
 * the line would be too long. */
static void put_step_at(Buf *b, const Step *s, size_t column)
{
    Buf line = BUF_INIT;
    size_t where_at = put_step_with(&line, s, true, 0);
    bool fits = column + line.len <= FMT_LINE_WIDTH;
    bool breakable = s->where && s->where->kind == EX_BINARY &&
                     (s->where->u.binary.op == BIN_AND || s->where->u.binary.op == BIN_OR);
    if (line.failed || fits || !breakable)
        buf_append(b, line.data ? line.data : "", line.len);
    else
        put_step_with(b, s, true, column + where_at);
    b->failed |= line.failed;
    buf_free(&line);
}

static void put_key(Buf *b, const KeyDecl *k)
{
    if (k->named) {
        put_name(b, k->name);
        buf_puts(b, " = ");
    }
    put_expr(b, k->expr);
}

/* All keys in one statement: the matching text and fmt agree on this form. */
static void put_keys(Buf *b, const Rule *r, size_t from, size_t to)
{
    buf_puts(b, "key ");
    for (size_t i = from; i < to; i++) {
        if (i > from)
            buf_puts(b, ", ");
        put_key(b, &r->keys[i]);
    }
    buf_putc(b, ';');
}

static void put_skip(Buf *b, const SkipDecl *sk)
{
    static const char *const WORDS[] = {
        [SKIP_PAST_LAST_EVENT] = "past_last_event", [SKIP_NO_SKIP] = "no_skip",
        [SKIP_TO_NEXT] = "to_next", [SKIP_TO_FIRST] = "to_first", [SKIP_TO_LAST] = "to_last",
    };
    buf_puts(b, "skip ");
    buf_puts(b, WORDS[sk->kind]);
    if ((sk->kind == SKIP_TO_FIRST || sk->kind == SKIP_TO_LAST) && sk->step) {
        buf_putc(b, ' ');
        put_name(b, sk->step);
    }
    buf_putc(b, ';');
}

static const char *severity_word(Severity s)
{
    static const char *const WORDS[] = {
        [SEV_INFO] = "info", [SEV_LOW] = "low", [SEV_MEDIUM] = "medium",
        [SEV_HIGH] = "high", [SEV_CRITICAL] = "critical",
    };
    return WORDS[s];
}

static void put_action_head(Buf *b, const Action *a)
{
    buf_puts(b, "alert ");
    if (a->severity_written) {
        buf_puts(b, severity_word(a->severity));
        buf_putc(b, ' ');
    }
    put_template(b, &a->message);
}

static void put_action_fields(Buf *b, const Action *a)
{
    buf_puts(b, "fields { ");
    for (size_t i = 0; i < a->n_fields; i++) {
        if (i > 0)
            buf_puts(b, ", ");
        put_name(b, a->fields[i].name);
        buf_puts(b, ": ");
        put_expr(b, a->fields[i].value);
    }
    buf_puts(b, " }");
}

static void put_action_to(Buf *b, const Action *a)
{
    buf_puts(b, "to ");
    for (size_t i = 0; i < a->n_to; i++) {
        if (i > 0)
            buf_puts(b, ", ");
        put_name(b, a->to[i].name);
    }
}

/* Parts of an action after its head go on their own lines when `sep` is a
 * newline plus indentation, or on the same line when it is a space. */
static void put_action(Buf *b, const Action *a, const char *sep)
{
    put_action_head(b, a);
    if (a->n_fields > 0) {
        buf_puts(b, sep);
        put_action_fields(b, a);
    }
    if (a->n_to > 0) {
        buf_puts(b, sep);
        put_action_to(b, a);
    }
}

static void put_on_with(Buf *b, const OnClause *on, const char *sep)
{
    buf_puts(b, on->trigger == ON_MATCH ? "on match " : "on timeout ");
    for (size_t i = 0; i < on->n_actions; i++) {
        if (i > 0)
            buf_puts(b, sep);
        put_action(b, &on->actions[i], sep);
    }
    buf_putc(b, ';');
}

/* An `on` clause starting at `column`: one line if it fits, else one line per
 * action part, aligned under the first action. */
static void put_on(Buf *b, const OnClause *on, size_t column)
{
    Buf line = BUF_INIT;
    put_on_with(&line, on, " ");
    if (line.failed || column + line.len <= FMT_LINE_WIDTH) {
        buf_append(b, line.data ? line.data : "", line.len);
        b->failed |= line.failed;
        buf_free(&line);
        return;
    }
    buf_free(&line);
    Buf sep = BUF_INIT;
    buf_putc(&sep, '\n');
    size_t pad = column + strlen(on->trigger == ON_MATCH ? "on match " : "on timeout ");
    for (size_t i = 0; i < pad; i++)
        buf_putc(&sep, ' ');
    if (sep.failed)
        b->failed = true;
    else
        put_on_with(b, on, sep.data);
    buf_free(&sep);
}

/* Keys written in the statement `st`: from its index up to the next key statement. */
static size_t key_stmt_end(const Rule *r, size_t stmt)
{
    for (size_t j = stmt + 1; j < r->n_stmts; j++)
        if (r->stmts[j].kind == STMT_KEY)
            return r->stmts[j].index;
    return r->n_keys;
}

static void put_stmt(Buf *b, const Rule *r, size_t i, size_t column)
{
    const Stmt *st = &r->stmts[i];
    switch (st->kind) {
    case STMT_FILTER:
        buf_puts(b, "filter ");
        if (r->filter)
            put_expr(b, r->filter);
        buf_putc(b, ';');
        return;
    case STMT_KEY:
        put_keys(b, r, st->index, key_stmt_end(r, i));
        return;
    case STMT_STEP:
        put_step_at(b, &r->steps[st->index], column);
        return;
    case STMT_WITHIN:
        buf_puts(b, "within ");
        put_duration_in(b, r->within_span, r->within_ms);
        buf_putc(b, ';');
        return;
    case STMT_SKIP:
        put_skip(b, &r->skip);
        return;
    case STMT_SUPPRESS:
        buf_puts(b, "suppress ");
        put_duration_in(b, r->suppress_span, r->suppress_ms);
        buf_putc(b, ';');
        return;
    case STMT_ON:
        put_on(b, &r->on[st->index], column);
        return;
    }
}

/* ---- matching text and fingerprint ------------------------------------------------------- */

char *dsl_rule_matching_text(const Rule *rule)
{
    Buf b = BUF_INIT;
    if (rule->filter) {
        buf_puts(&b, "filter ");
        put_expr(&b, rule->filter);
        buf_puts(&b, ";\n");
    }
    if (rule->n_keys > 0) {
        put_keys(&b, rule, 0, rule->n_keys);
        buf_putc(&b, '\n');
    }
    for (size_t i = 0; i < rule->n_steps; i++) {
        put_step(&b, &rule->steps[i], false);
        buf_putc(&b, '\n');
    }
    /* Durations in canonical form: `within 600s` and `within 10m` mean the same. */
    if (rule->within_ms != DURATION_NONE) {
        buf_puts(&b, "within ");
        put_duration_ms(&b, rule->within_ms);
        buf_puts(&b, ";\n");
    }
    put_skip(&b, &rule->skip);
    buf_putc(&b, '\n');
    if (b.failed) {
        buf_free(&b);
        return NULL;
    }
    return buf_steal(&b);
}

uint64_t dsl_rule_fingerprint(const Rule *rule)
{
    char *text = dsl_rule_matching_text(rule);
    if (text == NULL)
        return 0;
    uint64_t h = hash_bytes(HASH_SEED, text, strlen(text));
    free(text);
    return h ? h : 1;
}

/* ---- files and comments ---------------------------------------------------------------------- */

typedef struct Printer {
    Buf out;
    const SourceFile *src;
    size_t next_comment;    /* comments before this index are printed */
    size_t *marks;          /* heap: offsets in `out` where trailing comments start */
    size_t n_marks, cap_marks;
    int last_line;          /* source line of the last thing printed; 0 at a block start */
} Printer;

/* One blank line, never two, never at the top. */
static void blank_line(Printer *p)
{
    size_t n = p->out.len;
    const char *t = p->out.data;
    if (n == 0 || (n >= 2 && t[n - 1] == '\n' && t[n - 2] == '\n'))
        return;
    buf_putc(&p->out, '\n');
}

/* Keeps one blank line where the source had at least one. */
static void separate(Printer *p, int line)
{
    if (p->last_line > 0 && line > p->last_line + 1)
        blank_line(p);
}

static void add_mark(Printer *p, size_t offset)
{
    if (p->n_marks == p->cap_marks) {
        size_t cap = p->cap_marks ? p->cap_marks * 2 : 16;
        size_t *marks = realloc(p->marks, cap * sizeof *marks);
        if (marks == NULL) {
            p->out.failed = true;
            return;
        }
        p->marks = marks;
        p->cap_marks = cap;
    }
    p->marks[p->n_marks++] = offset;
}

static void indent(Printer *p, int depth)
{
    for (int i = 0; i < depth; i++)
        buf_puts(&p->out, "  ");
}

/* Comments that come before (line, col), each on its own line. */
static void flush_comments_before(Printer *p, int line, int col, int depth)
{
    while (p->src && p->next_comment < p->src->n_comments) {
        const SourceComment *c = &p->src->comments[p->next_comment];
        if (c->line > line || (c->line == line && c->col >= col))
            return;
        separate(p, c->line);
        indent(p, depth);
        buf_puts(&p->out, c->text);
        buf_putc(&p->out, '\n');
        p->last_line = c->end_line;
        p->next_comment++;
    }
}

/* Comments up to `line` (inside or trailing the statement just printed) go at
 * the end of its line. */
static void flush_trailing(Printer *p, int line)
{
    bool first = true;
    while (p->src && p->next_comment < p->src->n_comments) {
        const SourceComment *c = &p->src->comments[p->next_comment];
        if (c->line > line)
            return;
        if (first)
            add_mark(p, p->out.len);
        first = false;
        if (c->end_line > p->last_line)
            p->last_line = c->end_line;
        buf_putc(&p->out, ' ');
        buf_puts(&p->out, c->text);
        p->next_comment++;
    }
}

static void end_line(Printer *p, int source_line)
{
    p->last_line = source_line;
    flush_trailing(p, source_line);
    buf_putc(&p->out, '\n');
}

static int last_line(Span s)
{
    return s.end_line > s.line ? s.end_line : s.line;
}

static void put_time_decl(Buf *b, const TimeDecl *t)
{
    static const char *const FORMATS[] = {
        [TIME_AUTO] = NULL, [TIME_ISO8601] = "iso8601", [TIME_EPOCH_S] = "epoch_s",
        [TIME_EPOCH_MS] = "epoch_ms",
    };
    Expr path = {.kind = EX_PATH};
    path.u.path.segs = t->field;
    path.u.path.n_segs = t->n_field;
    buf_puts(b, "time ");
    put_path(b, &path);
    if (FORMATS[t->format]) {
        buf_putc(b, ' ');
        buf_puts(b, FORMATS[t->format]);
    }
    if (t->lateness_written) {
        buf_puts(b, " lateness ");
        put_duration_in(b, t->span, t->lateness_ms);
    }
    buf_putc(b, ';');
}

static void put_output_decl(Buf *b, const OutputDecl *o)
{
    static const char *const KINDS[] = {
        [OUT_FILE] = "file", [OUT_EXEC] = "exec", [OUT_TCP] = "tcp", [OUT_UNIX] = "unix",
    };
    buf_puts(b, "output ");
    put_name(b, o->name);
    buf_printf(b, " %s ", KINDS[o->kind]);
    if (o->kind == OUT_EXEC) {
        buf_putc(b, '[');
        for (size_t i = 0; i < o->n_argv; i++) {
            if (i > 0)
                buf_puts(b, ", ");
            put_template(b, &o->argv[i]);
        }
        buf_putc(b, ']');
    } else {
        put_template(b, &o->path);
    }
    if (o->rotate_ms != DURATION_NONE) {
        buf_puts(b, " rotate ");
        put_duration_in(b, o->span, o->rotate_ms);
    }
    if (o->timeout_ms != DURATION_NONE) {
        buf_puts(b, " timeout ");
        put_duration_in(b, o->span, o->timeout_ms);
    }
    buf_putc(b, ';');
}

static void put_rule(Printer *p, const Rule *r)
{
    buf_puts(&p->out, "rule ");
    put_name(&p->out, r->name);
    buf_puts(&p->out, " {");
    end_line(p, r->name_span.line);
    p->last_line = 0;   /* no blank line right after `{` */
    for (size_t i = 0; i < r->n_stmts; i++) {
        const Stmt *st = &r->stmts[i];
        flush_comments_before(p, st->span.line, st->span.col, 1);
        separate(p, st->span.line);
        indent(p, 1);
        put_stmt(&p->out, r, i, 2);
        end_line(p, last_line(st->span));
    }
    flush_comments_before(p, last_line(r->span), 1, 1);
    buf_putc(&p->out, '}');
    end_line(p, last_line(r->span));
}

static void put_decl(Printer *p, const RuleSet *rs, const RuleFile *f, const Decl *d)
{
    switch (d->kind) {
    case DECL_TIME:
        if (f->time)
            put_time_decl(&p->out, f->time);
        end_line(p, last_line(d->span));
        return;
    case DECL_OUTPUT:
        put_output_decl(&p->out, &rs->outputs[d->index]);
        end_line(p, last_line(d->span));
        return;
    case DECL_RULE:
        put_rule(p, &rs->rules[d->index]);
        return;
    }
}

/* Trailing comments on consecutive lines start in one column, as gofmt does;
 * a line without one ends the group. Returns the aligned text (heap). */
static char *align_trailing_comments(const Printer *p)
{
    Buf out = BUF_INIT;
    const char *text = p->out.data ? p->out.data : "";
    size_t len = p->out.len, m = 0, pos = 0;
    while (pos < len) {
        /* One group: consecutive lines that each carry a mark. */
        size_t group_start = pos, width = 0, lines = 0, scan = pos, mk = m;
        while (scan < len && mk < p->n_marks) {
            const char *nl = memchr(text + scan, '\n', len - scan);
            size_t end = nl ? (size_t)(nl - text) : len;
            if (p->marks[mk] < scan || p->marks[mk] >= end)
                break;
            if (p->marks[mk] - scan > width)
                width = p->marks[mk] - scan;
            lines++;
            mk++;
            scan = end + 1;
        }
        if (lines == 0) {
            const char *nl = memchr(text + pos, '\n', len - pos);
            size_t end = nl ? (size_t)(nl - text) + 1 : len;
            buf_append(&out, text + pos, end - pos);
            pos = end;
            continue;
        }
        pos = group_start;
        for (size_t i = 0; i < lines; i++, m++) {
            const char *nl = memchr(text + pos, '\n', len - pos);
            size_t end = nl ? (size_t)(nl - text) + 1 : len;
            buf_append(&out, text + pos, p->marks[m] - pos);
            for (size_t k = p->marks[m] - pos; k < width; k++)
                buf_putc(&out, ' ');
            buf_append(&out, text + p->marks[m], end - p->marks[m]);
            pos = end;
        }
    }
    if (out.failed) {
        buf_free(&out);
        return NULL;
    }
    return buf_steal(&out);
}

char *dsl_fmt_file(const RuleSet *rs, size_t file_index)
{
    const RuleFile *f = &rs->files[file_index];
    Printer p = {BUF_INIT, f->src, 0, NULL, 0, 0, 0};
    for (size_t i = 0; i < f->n_decls; i++) {
        const Decl *d = &f->decls[i];
        /* Declarations are set apart, except a run of outputs. */
        bool grouped = i > 0 && d->kind == DECL_OUTPUT && f->decls[i - 1].kind == DECL_OUTPUT;
        if (i > 0 && !grouped)
            blank_line(&p);
        flush_comments_before(&p, d->span.line, d->span.col, 0);
        separate(&p, d->span.line);
        put_decl(&p, rs, f, d);
    }
    flush_comments_before(&p, 1 << 30, 0, 0);
    char *text = p.out.failed ? NULL : align_trailing_comments(&p);
    buf_free(&p.out);
    free(p.marks);
    return text;
}

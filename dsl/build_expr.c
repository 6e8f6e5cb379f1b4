/* dsl/build_expr.c — builders for the grammar's expression and template actions.
 *
 * Owns: expression nodes (in the rule set's arena) with their depth, capped so that
 * no later recursive pass can overflow the stack, and template splitting: each
 * `{expr}` inside a string is parsed again with the same grammar from the decoded
 * bytes, through a position map so that its spans point into the rule file. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "dsl/parser.h"

/* Deeper expression trees are rejected: every later pass walks them recursively. */
#define MAX_EXPR_DEPTH 256

/* ---- expressions --------------------------------------------------------- */

static Expr *new_expr(ParseCtx *pc, ExprKind kind, Span span)
{
    Expr *e = arena_zalloc(pc->arena, sizeof *e);
    if (e) {
        e->kind = kind;
        e->span = span;
    }
    return e;
}

/* Stores e, unless the tree got too deep: then reports it (once) and stores a null
 * literal in its place, so that no later pass ever walks a deep tree. */
static bool finish_expr(ParseCtx *pc, ExprV *out, Expr *e, int depth)
{
    if (!e)
        return false;
    if (depth > MAX_EXPR_DEPTH) {
        if (!pc->deep_reported)
            parse_error(pc, e->span, "expression nested too deeply (more than %d levels)",
                        MAX_EXPR_DEPTH);
        pc->deep_reported = true;
        e = new_expr(pc, EX_NULL, e->span);
        depth = 1;
        if (!e)
            return false;
    }
    out->e = e;
    out->depth = depth;
    return true;
}

bool parse_binary(ParseCtx *pc, ExprV *out, BinaryOp op, ExprV lhs, ExprV rhs, Span op_span)
{
    Expr *e = new_expr(pc, EX_BINARY, span_join(lhs.e->span, rhs.e->span));
    if (e) {
        e->u.binary.op = op;
        e->u.binary.lhs = lhs.e;
        e->u.binary.rhs = rhs.e;
        e->u.binary.op_span = op_span;
    }
    return finish_expr(pc, out, e, 1 + (lhs.depth > rhs.depth ? lhs.depth : rhs.depth));
}

bool parse_unary(ParseCtx *pc, ExprV *out, UnaryOp op, ExprV operand, Span span)
{
    Expr *o = operand.e;
    if (op == UN_NEG && o->kind == EX_NUMBER && o->u.number.text[0] != '-') {
        /* `-1.5` is a negative literal, as the language describes numbers. */
        size_t len = strlen(o->u.number.text);
        char *text = arena_alloc(pc->arena, len + 2);
        if (!text)
            return false;
        text[0] = '-';
        memcpy(text + 1, o->u.number.text, len + 1);
        o->u.number.text = text;
        o->u.number.value = -o->u.number.value;
        o->span = span;
        *out = operand;
        return true;
    }
    Expr *e = new_expr(pc, EX_UNARY, span);
    if (e) {
        e->u.unary.op = op;
        e->u.unary.operand = o;
    }
    return finish_expr(pc, out, e, operand.depth + 1);
}

bool parse_literal(ParseCtx *pc, ExprV *out, ExprKind kind, const Tok *t, Span span)
{
    Expr *e = new_expr(pc, kind, span);
    if (!e)
        return false;
    if (kind == EX_NUMBER) {
        e->u.number.value = t->num;
        e->u.number.text = t->text;
    } else if (kind == EX_STRING) {
        e->u.string.bytes = t->text;
        e->u.string.len = t->len;
        e->u.string.raw = t->raw;
    } else {
        e->u.duration.ms = t->ms;
        e->u.duration.text = t->text;
    }
    return finish_expr(pc, out, e, 1);
}

bool parse_constant(ParseCtx *pc, ExprV *out, ExprKind kind, bool value, Span span)
{
    Expr *e = new_expr(pc, kind, span);
    if (e)
        e->u.boolean = value;
    return finish_expr(pc, out, e, 1);
}

bool parse_push_seg(ParseCtx *pc, Vec *v, const char *name, long index, Span span)
{
    PathSeg *seg = parse_vec_push(pc, v, sizeof *seg);
    if (!seg)
        return false;
    *seg = (PathSeg){.name = name, .index = index, .span = span};
    return true;
}

/* A whole number written in digits only (array indexes, repeat counts). */
bool parse_whole_number(ParseCtx *pc, const Tok *t, long max, Span span, const char *what,
                         long *out)
{
    long v = 0;
    for (size_t i = 0; i < t->len; i++) {
        char c = t->text[i];
        if (c < '0' || c > '9') {
            parse_error(pc, span, "%s must be a whole number, not %s", what, t->text);
            return false;
        }
        if (v > (max - (c - '0')) / 10) {
            parse_error(pc, span, "%s too large: %s", what, t->text);
            return false;
        }
        v = v * 10 + (c - '0');
    }
    *out = v;
    return true;
}

bool parse_push_index(ParseCtx *pc, Vec *v, const Tok *number, Span span)
{
    long index = 0;
    parse_whole_number(pc, number, INT_MAX, span, "an array index", &index);
    return parse_push_seg(pc, v, NULL, index, span);
}

bool parse_path_expr(ParseCtx *pc, ExprV *out, const Vec *segs, Span span)
{
    Expr *e = new_expr(pc, EX_PATH, span);
    if (e) {
        e->u.path.segs = segs->items;
        e->u.path.n_segs = segs->n;
        e->u.path.kind = PATH_UNRESOLVED;
        e->u.path.step = -1;
        e->u.path.key = -1;
    }
    return finish_expr(pc, out, e, 1);
}

bool parse_push_expr(ParseCtx *pc, Vec *v, ExprV e)
{
    ExprV *slot = parse_vec_push(pc, v, sizeof *slot);
    if (!slot)
        return false;
    *slot = e;
    return true;
}

/* Turns a list of ExprV into an arena array of Expr *; *depth gets the deepest. */
static Expr **expr_array(ParseCtx *pc, const Vec *items, int *depth)
{
    const ExprV *v = items->items;
    *depth = 0;
    if (items->n == 0)
        return NULL;
    Expr **arr = arena_alloc(pc->arena, items->n * sizeof *arr);
    if (!arr)
        return NULL;
    for (size_t i = 0; i < items->n; i++) {
        arr[i] = v[i].e;
        if (v[i].depth > *depth)
            *depth = v[i].depth;
    }
    return arr;
}

bool parse_call(ParseCtx *pc, ExprV *out, const char *name, Span name_span, const Vec *args,
                Span span)
{
    int depth;
    Expr **arr = expr_array(pc, args, &depth);
    if (args->n > 0 && !arr)
        return false;
    Expr *e = new_expr(pc, EX_CALL, span);
    if (e) {
        e->u.call.name = name;
        e->u.call.name_span = name_span;
        e->u.call.args = arr;
        e->u.call.n_args = args->n;
        e->u.call.fn = FN_UNRESOLVED;
    }
    return finish_expr(pc, out, e, depth + 1);
}

bool parse_list(ParseCtx *pc, ExprV *out, const Vec *items, Span span)
{
    int depth;
    Expr **arr = expr_array(pc, items, &depth);
    if (items->n > 0 && !arr)
        return false;
    Expr *e = new_expr(pc, EX_LIST, span);
    if (e) {
        e->u.list.items = arr;
        e->u.list.n = items->n;
    }
    return finish_expr(pc, out, e, depth + 1);
}

/* ---- templates ----------------------------------------------------------- */


/* The index of the `}` closing the expression that starts at d[i], skipping string
 * literals inside it; n if there is none. */
static size_t find_closing_brace(const char *d, size_t n, size_t i)
{
    while (i < n && d[i] != '}') {
        char q = d[i];
        if (q == '"' || q == '\'') {
            for (i++; i < n && d[i] != q; i++)
                if (q == '"' && d[i] == '\\' && i + 1 < n)
                    i++;
        }
        if (i < n)
            i++;
    }
    return i;
}

static bool push_literal_part(ParseCtx *pc, Vec *parts, Buf *lit)
{
    if (lit->len == 0)
        return true;
    TemplatePart *p = parse_vec_push(pc, parts, sizeof *p);
    char *text = p ? arena_strndup(pc->arena, lit->data, lit->len) : NULL;
    if (!text)
        return false;
    p->text = text;
    p->len = lit->len;
    buf_clear(lit);
    return true;
}

/* Parses d[a..b) (decoded template bytes) as an expression part. */
static bool push_expr_part(ParseCtx *pc, Vec *parts, const char *d, size_t a, size_t b,
                           const size_t *map)
{
    size_t k = a;
    while (k < b && (d[k] == ' ' || d[k] == '\t'))
        k++;
    if (k == b) {
        parse_error(pc, parse_span_at(pc, map[a - 1], map[b] + 1),
                    "empty '{}' in template (write '{{' for a literal brace)");
        return true;
    }
    SrcPos *pos = malloc((b - a + 1) * sizeof *pos);
    if (!pos)
        return false;
    for (size_t i = a; i <= b; i++)
        pos[i - a] = parse_locate(pc, map[i]);
    Expr *e = parse_sub_expr(pc, d + a, b - a, pos);
    free(pos);
    if (pc->oom)
        return false;
    if (!e)
        return true;   /* reported */
    TemplatePart *p = parse_vec_push(pc, parts, sizeof *p);
    if (!p)
        return false;
    p->expr = e;
    return true;
}

/* Splits decoded bytes d[0..n) into parts; map gives each byte's input offset. */
static bool split_template(ParseCtx *pc, const char *d, size_t n, const size_t *map, Vec *parts)
{
    Buf lit = BUF_INIT;
    bool ok = true;
    size_t i = 0;
    while (ok && i < n) {
        char c = d[i];
        if ((c == '{' || c == '}') && i + 1 < n && d[i + 1] == c) {
            buf_putc(&lit, c);
            i += 2;
        } else if (c == '}') {
            parse_error(pc, parse_span_at(pc, map[i], map[i] + 1),
                        "unmatched '}' in template (write '}}' for a literal brace)");
            i++;
        } else if (c == '{') {
            size_t close = find_closing_brace(d, n, i + 1);
            if (close == n) {
                parse_error(pc, parse_span_at(pc, map[i], map[i] + 1),
                        "'{' without a matching '}' in template (write '{{' for a literal "
                        "brace)");
                break;
            }
            ok = push_literal_part(pc, parts, &lit) &&
                 push_expr_part(pc, parts, d, i + 1, close, map);
            i = close + 1;
        } else {
            buf_putc(&lit, c);
            i++;
        }
    }
    ok = ok && !lit.failed && push_literal_part(pc, parts, &lit);
    buf_free(&lit);
    return ok;
}

/* Builds a template from a string token: decodes it again with a position map. */
bool parse_make_template(ParseCtx *pc, const Tok *t, Span span, Template *out)
{
    *out = (Template){.span = span};
    char *source = arena_strndup(pc->arena, pc->input + t->off, t->src_len);
    if (!source)
        return false;
    out->source = source;
    size_t body = t->off + 1, body_len = t->src_len - 2;
    char *d = malloc(body_len + 1);
    size_t *map = malloc((body_len + 1) * sizeof *map);
    bool ok = d && map;
    if (ok) {
        size_t n = parse_decode_string(pc, body, body_len, t->raw, false, d, map);
        Vec parts = {0};
        ok = split_template(pc, d, n, map, &parts);
        out->parts = parts.items;
        out->n_parts = parts.n;
    }
    free(d);
    free(map);
    return ok;
}


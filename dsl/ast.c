/* dsl/ast.c — rule-set lifetime, growable top-level arrays and the expression dump.
 *
 * Owns: a RuleSet's arena (all nodes), its heap arrays of sources, files, outputs
 * and rules, and every SourceFile in rs->sources. */
#include "dsl/ast.h"

#include <stdlib.h>
#include <string.h>

#include "base/buf.h"

#define AST_ARENA_BLOCK (64 * 1024)

RuleSet *ast_ruleset_new(void)
{
    RuleSet *rs = calloc(1, sizeof *rs);
    if (!rs)
        return NULL;
    arena_init(&rs->arena, AST_ARENA_BLOCK);
    return rs;
}

void ast_ruleset_free(RuleSet *rs)
{
    if (!rs)
        return;
    for (size_t i = 0; i < rs->n_sources; i++)
        source_free(rs->sources[i]);
    free(rs->sources);
    free(rs->files);
    free(rs->outputs);
    free(rs->rules);
    arena_free(&rs->arena);
    free(rs);
}

/* The arrays keep no capacity field: they hold 8 slots, then double whenever the
 * count reaches a power of two, so the capacity follows from the count alone. */
static int array_make_room(void **items, size_t n, size_t item_size)
{
    if (n != 0 && (n < 8 || (n & (n - 1)) != 0))
        return 0;
    size_t cap = n < 8 ? 8 : n * 2;
    void *bigger = realloc(*items, cap * item_size);
    if (!bigger)
        return -1;
    *items = bigger;
    return 0;
}

Rule *ast_add_rule(RuleSet *rs)
{
    void *items = rs->rules;
    if (array_make_room(&items, rs->n_rules, sizeof *rs->rules) != 0)
        return NULL;
    rs->rules = items;
    Rule *r = &rs->rules[rs->n_rules++];
    memset(r, 0, sizeof *r);
    return r;
}

OutputDecl *ast_add_output(RuleSet *rs)
{
    void *items = rs->outputs;
    if (array_make_room(&items, rs->n_outputs, sizeof *rs->outputs) != 0)
        return NULL;
    rs->outputs = items;
    OutputDecl *o = &rs->outputs[rs->n_outputs++];
    memset(o, 0, sizeof *o);
    return o;
}

int ast_step_index(const Rule *rule, const char *name)
{
    for (size_t i = 0; i < rule->n_steps; i++)
        if (rule->steps[i].name && strcmp(rule->steps[i].name, name) == 0)
            return (int)i;
    return -1;
}

static const char *binary_op_text(BinaryOp op)
{
    static const char *const names[] = {
        [BIN_OR] = "or", [BIN_AND] = "and",
        [BIN_EQ] = "==", [BIN_NE] = "!=", [BIN_LT] = "<", [BIN_LE] = "<=",
        [BIN_GT] = ">", [BIN_GE] = ">=",
        [BIN_IN] = "in", [BIN_MATCH] = "=~", [BIN_NMATCH] = "!~",
        [BIN_ADD] = "+", [BIN_SUB] = "-", [BIN_MUL] = "*", [BIN_DIV] = "/", [BIN_MOD] = "%",
    };
    return names[op];
}

static void dump_path(Buf *b, const PathSeg *segs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (segs[i].name)
            buf_printf(b, "%s%s", i ? "." : "", segs[i].name);
        else
            buf_printf(b, "[%ld]", segs[i].index);
    }
}

static void dump_expr(Buf *b, const Expr *e)
{
    if (!e) {
        buf_puts(b, "<null>");
        return;
    }
    switch (e->kind) {
    case EX_NULL: buf_puts(b, "null"); break;
    case EX_BOOL: buf_puts(b, e->u.boolean ? "true" : "false"); break;
    case EX_NUMBER: buf_puts(b, e->u.number.text); break;
    case EX_STRING: buf_json_string(b, e->u.string.bytes, e->u.string.len); break;
    case EX_DURATION: buf_puts(b, e->u.duration.text); break;
    case EX_PATH:
        /* A lone field name reads best bare; anything longer is marked as a path. */
        if (e->u.path.n_segs == 1 && e->u.path.segs[0].name) {
            buf_puts(b, e->u.path.segs[0].name);
        } else {
            buf_puts(b, "(path ");
            dump_path(b, e->u.path.segs, e->u.path.n_segs);
            buf_putc(b, ')');
        }
        break;
    case EX_LIST:
        buf_puts(b, "(list");
        for (size_t i = 0; i < e->u.list.n; i++) {
            buf_putc(b, ' ');
            dump_expr(b, e->u.list.items[i]);
        }
        buf_putc(b, ')');
        break;
    case EX_UNARY:
        buf_puts(b, e->u.unary.op == UN_NOT ? "(not " : "(neg ");
        dump_expr(b, e->u.unary.operand);
        buf_putc(b, ')');
        break;
    case EX_BINARY:
        buf_printf(b, "(%s ", binary_op_text(e->u.binary.op));
        dump_expr(b, e->u.binary.lhs);
        buf_putc(b, ' ');
        dump_expr(b, e->u.binary.rhs);
        buf_putc(b, ')');
        break;
    case EX_CALL:
        buf_printf(b, "(call %s", e->u.call.name);
        for (size_t i = 0; i < e->u.call.n_args; i++) {
            buf_putc(b, ' ');
            dump_expr(b, e->u.call.args[i]);
        }
        buf_putc(b, ')');
        break;
    }
}

char *ast_expr_dump(const Expr *e)
{
    Buf b = BUF_INIT;
    dump_expr(&b, e);
    if (b.failed) {
        buf_free(&b);
        return NULL;
    }
    return buf_steal(&b);
}

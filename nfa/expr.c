/* nfa/expr.c — compiled expressions; see expr.h.
 *
 * Owns: each CExpr (a flat array of nodes whose children are array indices, an
 * index pool for call arguments and list items, constant strings in its own
 * arena, compiled regexes and precomputed `in` sets) and each EvalScratch (an arena
 * for produced strings, the PCRE2 match data and the match context with limits).
 *
 * Choices where LANGUAGE.md 5 is silent:
 * - Logic is SQL's three-valued logic. Only boolean true/false are truth values;
 *   null and every non-boolean count as "unknown". `not unknown` is unknown;
 *   `false and unknown` is false; `true or unknown` is true; otherwise an unknown
 *   operand makes the result unknown (null). A where/filter needs true, so unknown
 *   rejects the event.
 * - `==`, `!=` and ordering are false when a side is null or the types differ;
 *   only a comparison with the literal `null` tests for null (missing == null).
 * - Functions given null or the wrong type return null (SQL-like), except
 *   exists() and coalesce(), whose purpose is null. min(a,b)/max(a,b) are null if
 *   either side is null or the two are not comparable.
 * - `=~` and `!~` are false when the subject is not a string (null included).
 *   A regex match that hits PCRE2's limits counts as "no match": `=~` is false,
 *   `!~` true, regex_extract null.
 * - Aggregates skip null values (count(STEP.f) counts non-null f; count(STEP)
 *   counts events); sum/avg read numbers only; min/max keep the first comparable
 *   type seen; first/last return the oldest/newest event's value, null included. */
#include "nfa/expr.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "base/grow.h"
#include "base/hash.h"
#include "base/lines.h"
#include "base/memcheck.h"

#define REGEX_MATCH_LIMIT 100000u   /* backtracking steps per match */
#define REGEX_DEPTH_LIMIT 1000u     /* nested backtracking depth (interpreter only) */
#define REGEX_INITIAL_PAIRS 16u     /* match data grows if regex_extract needs more */
#define MAX_NESTING 1000            /* bounds the recursion of compile and eval */

/* ---- program representation ----------------------------------------------- */

typedef enum {
    OP_CONST,        /* k */
    OP_FIELD,        /* slot of the current event (actions: of the match's last event) */
    OP_STEP_FIELD,   /* slot of `step`'s last event in the match */
    OP_KEY,          /* ctx->key[index] */
    OP_NOT, OP_NEG,  /* a */
    OP_AND, OP_OR,   /* a, b */
    OP_IS_NULL, OP_NOT_NULL,  /* a */
    OP_CMP,          /* a, b; sub = BinaryOp */
    OP_IN_SET,       /* a in sets[index] */
    OP_IN_LIST,      /* a in argv[args..args+n_args) (non-constant items) */
    OP_MATCH,        /* a =~ regexes[index]; sub = 1 for !~ */
    OP_ARITH,        /* a, b; sub = BinaryOp */
    OP_CALL,         /* sub = FuncId; argv[args..args+n_args); index = regex for regex_extract */
    OP_TIME_NOW,
    OP_TIME_STEP,    /* time of `step`'s last event */
    OP_AGG,          /* sub = FuncId over `step`, field `slot` (-1: the events themselves);
                        contains(STEP.f, v): v is node a */
} Op;

typedef struct Node {
    Op op;
    int sub;
    uint32_t a, b;
    uint32_t args, n_args;
    int32_t slot;
    int32_t step;
    int32_t index;
    Value k;
} Node;

typedef struct Regex {
    pcre2_code *code;
    uint32_t n_groups;
} Regex;

/* Open addressing over constant values; empty buckets are V_MISSING. */
typedef struct ValueSet {
    Value *buckets;
    size_t mask;
} ValueSet;

struct CExpr {
    Node *nodes;
    size_t n_nodes, cap_nodes;
    uint32_t *argv;
    size_t n_argv, cap_argv;
    Regex *regexes;
    size_t n_regexes, cap_regexes;
    ValueSet *sets;
    size_t n_sets, cap_sets;
    Arena consts;            /* constant strings and set buckets */
    uint32_t root;
    bool iterative;
    /* Set when the whole program is `field OP constant` (either order), the commonest
     * filter and step condition: expr_test then reads the slot and compares without
     * walking the nodes. */
    bool field_vs_const;
    bool const_first;          /* written `constant OP field` */
    int cmp_op;                /* BinaryOp */
    int num_op;                /* a number constant: cmp_op as `field OP constant`; else -1 */
    int32_t cmp_slot;
    Value cmp_const;           /* its strings live in consts */
};

struct EvalScratch {
    Arena arena;
    Buf text;                /* expr_scratch_text */
    pcre2_match_data *md;
    uint32_t md_pairs;
    pcre2_match_context *mctx;
    uint64_t regex_limit_hits;
    uint64_t out_of_memory;  /* allocations that failed; their values became null */
};

/* ---- scratch -------------------------------------------------------------- */

EvalScratch *expr_scratch_new(void)
{
    EvalScratch *s = lines_calloc(sizeof *s);   /* written for every event */
    if (!s)
        return NULL;
    arena_init(&s->arena, 4096);
    s->md = pcre2_match_data_create(REGEX_INITIAL_PAIRS, NULL);
    s->mctx = pcre2_match_context_create(NULL);
    if (!s->md || !s->mctx) {
        expr_scratch_free(s);
        return NULL;
    }
    s->md_pairs = REGEX_INITIAL_PAIRS;
    pcre2_set_match_limit(s->mctx, REGEX_MATCH_LIMIT);
    pcre2_set_depth_limit(s->mctx, REGEX_DEPTH_LIMIT);
    return s;
}

void expr_scratch_reset(EvalScratch *s)
{
    arena_reset(&s->arena);
}

void expr_scratch_free(EvalScratch *s)
{
    if (!s)
        return;
    arena_free(&s->arena);
    buf_free(&s->text);
    pcre2_match_data_free(s->md);
    pcre2_match_context_free(s->mctx);
    free(s);
}

Buf *expr_scratch_text(EvalScratch *s)
{
    return &s->text;
}

uint64_t expr_scratch_regex_limit_hits(const EvalScratch *s)
{
    return s->regex_limit_hits;
}

uint64_t expr_scratch_out_of_memory(const EvalScratch *s)
{
    return s->out_of_memory;
}

/* ---- value helpers -------------------------------------------------------- */

static uint64_t value_hash(const Value *v)
{
    unsigned char type = (unsigned char)v->type;
    uint64_t h = hash_bytes(HASH_SEED, &type, 1);
    switch (v->type) {
    case V_BOOL: return hash_bytes(h, &v->b, sizeof v->b);
    case V_NUM: {
        double d = v->num == 0 ? 0 : v->num; /* -0 == 0 */
        return hash_bytes(h, &d, sizeof d);
    }
    case V_STR: return hash_bytes(h, v->s, v->len);
    case V_OBJ:
    case V_ARR: return hash_bytes(h, v->raw, v->raw_len);
    case V_TIME:
    case V_DUR: return hash_bytes(h, &v->i, sizeof v->i);
    case V_MISSING:
    case V_NULL: break;
    }
    return h;
}

static bool is_true(const Value *v) { return v->type == V_BOOL && v->b; }
static bool is_false(const Value *v) { return v->type == V_BOOL && !v->b; }

static Value slot_of(const Event *ev, int32_t slot)
{
    if (!ev || slot < 0 || (uint32_t)slot >= ev->n_slots)
        return value_missing();
    return ev->slots[slot];
}

static const MatchNode *last_of_step(const MatchNode *m, int32_t step)
{
    for (; m; m = m->prev)
        if (m->step == step)
            return m;
    return NULL;
}

/* Every allocation of an evaluation comes from here, so that none that fails goes
 * uncounted: its caller then gives null, which the count tells from a real null. */
static void *scratch_alloc(EvalScratch *s, size_t n, bool zeroed)
{
    void *p = zeroed ? arena_zalloc(&s->arena, n ? n : 1) : arena_alloc(&s->arena, n ? n : 1);
    if (!p)
        s->out_of_memory++;
    return p;
}

static char *scratch_bytes(EvalScratch *s, size_t n)
{
    return scratch_alloc(s, n, false);
}

/* ---- regexes -------------------------------------------------------------- */

typedef enum { RX_MATCH, RX_NO_MATCH, RX_FAILED } RegexResult;

static bool ensure_pairs(EvalScratch *s, uint32_t pairs)
{
    if (s->md_pairs >= pairs)
        return true;
    /* Rare and bounded by the largest pattern: grows once, then reused. */
    pcre2_match_data *md = pcre2_match_data_create(pairs, NULL);
    if (!md) {
        s->out_of_memory++;
        return false;
    }
    pcre2_match_data_free(s->md);
    s->md = md;
    s->md_pairs = pairs;
    return true;
}

static bool is_limit_error(int rc)
{
    return rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT ||
           rc == PCRE2_ERROR_HEAPLIMIT || rc == PCRE2_ERROR_JIT_STACKLIMIT;
}

/* Runs re over subject; on RX_MATCH the ovector in s->md holds `pairs` pairs. */
static RegexResult regex_run(const Regex *re, const Value *subject, uint32_t pairs,
                             EvalScratch *s)
{
    if (!ensure_pairs(s, pairs))
        return RX_FAILED;
    int rc = pcre2_match(re->code, (PCRE2_SPTR)(subject->len ? subject->s : ""), subject->len,
                         0, 0, s->md, s->mctx);
    if (rc >= 0)
        return RX_MATCH;
    if (is_limit_error(rc))
        s->regex_limit_hits++;
    else if (rc == PCRE2_ERROR_NOMEMORY)
        s->out_of_memory++;
    return rc == PCRE2_ERROR_NOMATCH ? RX_NO_MATCH : RX_FAILED;
}

/* ---- operators ------------------------------------------------------------ */

static Value eval_node(const CExpr *ce, uint32_t idx, const EvalCtx *ctx, EvalScratch *s);

/* The comparisons compare_holds leaves out of line: orderings other than of numbers,
 * and equality of times, durations, objects and arrays. l and r are of one type,
 * not null. */
__attribute__((noinline)) static bool compare_rare(int op, const Value *l, const Value *r)
{
    switch (op) {
    case BIN_EQ: return value_equal(l, r);
    case BIN_NE: return !value_equal(l, r);
    default: break;
    }
    int c = value_compare(l, r);
    if (c == 2)
        return false;
    switch (op) {
    case BIN_LT: return c < 0;
    case BIN_LE: return c <= 0;
    case BIN_GT: return c > 0;
    case BIN_GE: return c >= 0;
    default: return false;
    }
}

/* Does `l op r` hold? False when a side is null or the types differ. Conditions
 * nearly always compare numbers, or strings or booleans for equality: those are
 * decided inline, wherever this is called. Numbers as doubles straight away (NaN:
 * only != holds, as through value_equal/value_compare). */
static inline bool compare_holds(int op, const Value *l, const Value *r)
{
    if (l->type != r->type || value_is_null(l))
        return false;
    switch (l->type) {
    case V_NUM:
        return expr_number_holds(op, l->num, r->num);
    case V_STR:
        if (op == BIN_EQ || op == BIN_NE)
            return (l->len == r->len && (!l->len || !memcmp(l->s, r->s, l->len))) ==
                   (op == BIN_EQ);
        break;
    case V_BOOL:
        if (op == BIN_EQ || op == BIN_NE)
            return (l->b == r->b) == (op == BIN_EQ);
        break;
    default:
        break;
    }
    return compare_rare(op, l, r);
}

/* a + b or a - b as a time or duration; null on overflow. */
static Value ms_sum(ValueType type, int64_t a, int64_t b, bool subtract)
{
    int64_t out;
    if (subtract ? __builtin_sub_overflow(a, b, &out) : __builtin_add_overflow(a, b, &out))
        return value_null();
    return type == V_TIME ? value_time(out) : value_dur(out);
}

static Value dur_scaled(int64_t ms, double factor)
{
    double r = (double)ms * factor;
    if (!isfinite(r) || fabs(r) >= 9.2e18)
        return value_null();
    return value_dur((int64_t)llround(r));
}

static Value arith_numbers(int op, double l, double r)
{
    switch (op) {
    case BIN_ADD: return value_num(l + r);
    case BIN_SUB: return value_num(l - r);
    case BIN_MUL: return value_num(l * r);
    case BIN_DIV: return r == 0 ? value_null() : value_num(l / r);
    case BIN_MOD: return r == 0 ? value_null() : value_num(fmod(l, r));
    default: return value_null();
    }
}

/* time - time = dur; time +/- dur = time; dur +/- dur = dur; dur * num; dur / num;
 * dur / dur = num; dur % dur = dur. Overflow gives null. */
static Value arith_temporal(int op, const Value *l, const Value *r)
{
    ValueType lt = l->type, rt = r->type;
    bool add = op == BIN_ADD, sub = op == BIN_SUB;
    if (lt == V_TIME && rt == V_TIME && sub)
        return ms_sum(V_DUR, l->i, r->i, true);
    if (lt == V_TIME && rt == V_DUR && (add || sub))
        return ms_sum(V_TIME, l->i, r->i, sub);
    if (lt == V_DUR && rt == V_TIME && add)
        return ms_sum(V_TIME, l->i, r->i, false);
    if (lt == V_DUR && rt == V_DUR) {
        if (add || sub)
            return ms_sum(V_DUR, l->i, r->i, sub);
        if (r->i == 0)
            return value_null();
        if (op == BIN_DIV)
            return value_num((double)l->i / (double)r->i);
        if (op == BIN_MOD)
            return value_dur(r->i == -1 ? 0 : l->i % r->i); /* INT64_MIN % -1 traps */
        return value_null();
    }
    if (lt == V_DUR && rt == V_NUM && op == BIN_MUL)
        return dur_scaled(l->i, r->num);
    if (lt == V_NUM && rt == V_DUR && op == BIN_MUL)
        return dur_scaled(r->i, l->num);
    if (lt == V_DUR && rt == V_NUM && op == BIN_DIV)
        return r->num == 0 ? value_null() : dur_scaled(l->i, 1.0 / r->num);
    return value_null();
}

static Value concat(const Value *l, const Value *r, EvalScratch *s)
{
    if ((uint64_t)l->len + r->len > VALUE_MAX_LEN)
        return value_null();
    char *p = scratch_bytes(s, l->len + r->len);
    if (!p)
        return value_null();
    if (l->len)
        memcpy(p, l->s, l->len);
    if (r->len)
        memcpy(p + l->len, r->s, r->len);
    return value_str(p, l->len + r->len);
}

static Value arith(int op, const Value *l, const Value *r, EvalScratch *s)
{
    if (l->type == V_NUM && r->type == V_NUM)
        return arith_numbers(op, l->num, r->num);
    if (l->type == V_STR && r->type == V_STR && op == BIN_ADD)
        return concat(l, r, s);
    return arith_temporal(op, l, r);
}

static Value negate(const Value *v)
{
    if (v->type == V_NUM)
        return value_num(-v->num);
    if (v->type == V_DUR && v->i != INT64_MIN)
        return value_dur(-v->i);
    return value_null();
}

static bool set_contains(const ValueSet *set, const Value *v)
{
    for (size_t i = value_hash(v) & set->mask;; i = (i + 1) & set->mask) {
        const Value *b = &set->buckets[i];
        if (b->type == V_MISSING)
            return false;
        if (value_equal(b, v))
            return true;
    }
}

/* ---- functions ------------------------------------------------------------ */

static Value map_ascii_case(const Value *v, bool upper, EvalScratch *s)
{
    char from = upper ? 'a' : 'A';
    size_t i = 0;
    while (i < v->len && !(v->s[i] >= from && v->s[i] <= from + 25))
        i++;
    if (i == v->len)
        return *v; /* nothing to change: no copy */
    char *p = scratch_bytes(s, v->len);
    if (!p)
        return value_null();
    memcpy(p, v->s, v->len);
    for (; i < v->len; i++)
        if (p[i] >= from && p[i] <= from + 25)
            p[i] = (char)(p[i] + ('A' - 'a') * (upper ? 1 : -1));
    return value_str(p, v->len);
}

static size_t utf8_code_points(const char *s, size_t len)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++)
        n += ((unsigned char)s[i] & 0xC0) != 0x80;
    return n;
}

static bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* Number of elements of a JSON array or members of an object, from its text:
 * commas at the top nesting level, outside strings. */
static size_t json_count_items(const char *raw, size_t len)
{
    size_t commas = 0, depth = 0;
    bool in_string = false, empty = true;
    for (size_t i = 0; i < len; i++) {
        char c = raw[i];
        if (in_string) {
            if (c == '\\')
                i++;
            else if (c == '"')
                in_string = false;
            continue;
        }
        if (is_space(c))
            continue;
        if (c == '[' || c == '{') {
            if (depth++ == 0)
                continue;
        } else if (c == ']' || c == '}') {
            if (depth > 0 && --depth == 0)
                continue;
        } else if (c == ',' && depth == 1) {
            commas++;
        }
        in_string = c == '"';
        empty = false;
    }
    return empty ? 0 : commas + 1;
}

static Value len_of(const Value *v)
{
    if (v->type == V_STR)
        return value_num((double)utf8_code_points(v->s, v->len));
    if ((v->type == V_ARR || v->type == V_OBJ) && v->raw)
        return value_num((double)json_count_items(v->raw, v->raw_len));
    return value_null();
}

static bool find_bytes(const char *hay, size_t n, const char *needle, size_t m)
{
    for (const char *end = hay + (n - m), *p = hay;
         p <= end && (p = memchr(p, needle[0], (size_t)(end - p) + 1)) != NULL; p++)
        if (memcmp(p, needle, m) == 0)
            return true;
    return false;
}

static Value string_test(FuncId fn, const Value *str, const Value *sub)
{
    if (str->type != V_STR || sub->type != V_STR)
        return value_null();
    if (sub->len > str->len)
        return value_bool(false);
    if (sub->len == 0)
        return value_bool(true);
    switch (fn) {
    case FN_STARTS_WITH: return value_bool(memcmp(str->s, sub->s, sub->len) == 0);
    case FN_ENDS_WITH:
        return value_bool(memcmp(str->s + str->len - sub->len, sub->s, sub->len) == 0);
    default: return value_bool(find_bytes(str->s, str->len, sub->s, sub->len));
    }
}

static Value copy_text(const char *text, size_t n, EvalScratch *s)
{
    char *p = scratch_bytes(s, n);
    if (!p)
        return value_null();
    memcpy(p, text, n);
    return value_str(p, n);
}

static Value str_of(const Value *v, EvalScratch *s)
{
    char tmp[32];
    switch (v->type) {
    case V_STR: return *v;
    case V_BOOL: return v->b ? value_str("true", 4) : value_str("false", 5);
    case V_NUM:
        if (v->raw)
            return value_str(v->raw, v->raw_len);
        return copy_text(tmp, value_format_num(v->num, tmp), s);
    case V_OBJ:
    case V_ARR: return v->raw ? value_str(v->raw, v->raw_len) : value_null();
    case V_TIME: time_format_iso(v->i, tmp); return copy_text(tmp, strlen(tmp), s);
    case V_DUR:
        return copy_text(tmp, (size_t)snprintf(tmp, sizeof tmp, "%lld", (long long)v->i), s);
    case V_MISSING:
    case V_NULL: break;
    }
    return value_null();
}

/* A decimal number with optional sign, fraction and exponent; no hex, inf or nan. */
static Value parse_number(const char *text, size_t len, EvalScratch *s)
{
    while (len && is_space(*text)) {
        text++;
        len--;
    }
    while (len && is_space(text[len - 1]))
        len--;
    bool digit = false;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        if (c >= '0' && c <= '9')
            digit = true;
        else if (!strchr("+-.eE", c) || c == '\0')
            return value_null();
    }
    if (!digit)
        return value_null();
    char small[64];
    char *buf = len < sizeof small ? small : scratch_bytes(s, len + 1);
    if (!buf)
        return value_null();
    memcpy(buf, text, len);
    buf[len] = '\0';
    char *end;
    double d = strtod(buf, &end);
    if (end != buf + len || !isfinite(d))
        return value_null();
    return value_num(d);
}

static Value num_of(const Value *v, EvalScratch *s)
{
    switch (v->type) {
    case V_NUM: return *v;
    case V_STR: return parse_number(v->s, v->len, s);
    case V_BOOL: return value_num(v->b ? 1 : 0);
    case V_TIME:
    case V_DUR: return value_num((double)v->i);
    default: return value_null();
    }
}

static Value round_like(FuncId fn, const Value *v)
{
    if (v->type != V_NUM)
        return value_null();
    switch (fn) {
    case FN_ROUND: return value_num(round(v->num));
    case FN_FLOOR: return value_num(floor(v->num));
    default: return value_num(ceil(v->num));
    }
}

static Value abs_of(const Value *v)
{
    if (v->type == V_NUM)
        return value_num(fabs(v->num));
    if (v->type == V_DUR && v->i != INT64_MIN)
        return value_dur(v->i < 0 ? -v->i : v->i);
    return value_null();
}

static Value min_max2(bool want_max, const Value *a, const Value *b)
{
    int c = value_compare(a, b);
    if (c == 2)
        return value_null();
    return (want_max ? c >= 0 : c <= 0) ? *a : *b;
}

static Value arg_value(const CExpr *ce, const Node *n, uint32_t i, const EvalCtx *ctx,
                       EvalScratch *s)
{
    return eval_node(ce, ce->argv[n->args + i], ctx, s);
}

static Value regex_extract(const CExpr *ce, const Node *n, const EvalCtx *ctx, EvalScratch *s)
{
    const Regex *re = &ce->regexes[n->index];
    Value subject = arg_value(ce, n, 0, ctx, s);
    if (subject.type != V_STR)
        return value_null();
    uint32_t group = re->n_groups >= 1 ? 1 : 0;
    if (n->n_args >= 3) {
        Value g = arg_value(ce, n, 2, ctx, s);
        if (g.type != V_NUM || g.num < 0 || g.num > re->n_groups || g.num != floor(g.num))
            return value_null();
        group = (uint32_t)g.num;
    }
    if (regex_run(re, &subject, group + 1, s) != RX_MATCH)
        return value_null();
    PCRE2_SIZE *ov = pcre2_get_ovector_pointer(s->md);
    if (ov[2 * group] == PCRE2_UNSET)
        return value_null();
    return value_str(subject.s + ov[2 * group], ov[2 * group + 1] - ov[2 * group]);
}

static Value eval_call(const CExpr *ce, const Node *n, const EvalCtx *ctx, EvalScratch *s)
{
    FuncId fn = (FuncId)n->sub;
    if (fn == FN_REGEX_EXTRACT)
        return regex_extract(ce, n, ctx, s);
    if (fn == FN_COALESCE) {
        for (uint32_t i = 0; i < n->n_args; i++) {
            Value v = arg_value(ce, n, i, ctx, s);
            if (!value_is_null(&v))
                return v;
        }
        return value_null();
    }
    Value a = arg_value(ce, n, 0, ctx, s);
    switch (fn) {
    case FN_LOWER:
    case FN_UPPER:
        return a.type == V_STR ? map_ascii_case(&a, fn == FN_UPPER, s) : value_null();
    case FN_LEN: return len_of(&a);
    case FN_ABS: return abs_of(&a);
    case FN_ROUND:
    case FN_FLOOR:
    case FN_CEIL: return round_like(fn, &a);
    case FN_EXISTS: return value_bool(a.type != V_MISSING);
    case FN_STR: return str_of(&a, s);
    case FN_NUM: return num_of(&a, s);
    default: break;
    }
    Value b = arg_value(ce, n, 1, ctx, s);
    switch (fn) {
    case FN_MIN2:
    case FN_MAX2: return min_max2(fn == FN_MAX2, &a, &b);
    case FN_STARTS_WITH:
    case FN_ENDS_WITH:
    case FN_CONTAINS_STR: return string_test(fn, &a, &b);
    default: return value_null();
    }
}

/* ---- aggregates ----------------------------------------------------------- */

static bool orderable(const Value *v)
{
    return value_compare(v, v) == 0;
}

/* count_distinct over the step's non-null values, with a hash set in scratch. */
static Value count_distinct(const Node *n, const EvalCtx *ctx, EvalScratch *s)
{
    size_t candidates = 0;
    for (const MatchNode *m = ctx->match; m; m = m->prev) {
        if (m->step != n->step)
            continue;
        Value v = slot_of(m->event, n->slot);
        candidates += !value_is_null(&v);
    }
    if (candidates == 0)
        return value_num(0);
    size_t cap = 4;
    while (cap < candidates * 2)
        cap *= 2;
    const Value **table = scratch_alloc(s, cap * sizeof *table, true);
    if (!table)
        return value_null();
    size_t distinct = 0;
    for (const MatchNode *m = ctx->match; m; m = m->prev) {
        if (m->step != n->step)
            continue;
        if ((uint32_t)n->slot >= m->event->n_slots)
            continue;
        const Value *v = &m->event->slots[n->slot];
        if (value_is_null(v))
            continue;
        size_t i = value_hash(v) & (cap - 1);
        while (table[i] && !value_equal(table[i], v))
            i = (i + 1) & (cap - 1);
        if (!table[i]) {
            table[i] = v;
            distinct++;
        }
    }
    return value_num((double)distinct);
}

static const Value *slot_ptr(const Event *ev, int32_t slot)
{
    return ev && slot >= 0 && (uint32_t)slot < ev->n_slots ? &ev->slots[slot] : NULL;
}

static bool replaces(const Value *v, const Value *best, int want)
{
    return best ? value_compare(v, best) == want : orderable(v);
}

void expr_agg_fold(AggAcc *acc, const AggKey *key, const Event *ev)
{
    const Value *v = slot_ptr(ev, key->slot);
    if (acc->events++ == 0)
        acc->first = v;
    acc->last = v;
    if (!v || value_is_null(v))
        return;
    acc->nonnull++;
    if (v->type == V_NUM) {
        acc->sum += v->num;
        acc->nums++;
    }
    if (replaces(v, acc->min, -1))
        acc->min = v;
    if (replaces(v, acc->max, 1))
        acc->max = v;
}

static Value value_at(const Value *v)
{
    return v ? *v : value_missing();
}

static Value agg_result(FuncId fn, int32_t slot, const AggAcc *acc)
{
    switch (fn) {
    case FN_COUNT: return value_num((double)(slot < 0 ? acc->events : acc->nonnull));
    case FN_SUM: return value_num(acc->sum);
    case FN_AVG: return acc->nums ? value_num(acc->sum / (double)acc->nums) : value_null();
    case FN_MIN: return acc->min ? *acc->min : value_null();
    case FN_MAX: return acc->max ? *acc->max : value_null();
    case FN_FIRST: return acc->events ? value_at(acc->first) : value_null();
    case FN_LAST: return acc->events ? value_at(acc->last) : value_null();
    default: return value_null();
    }
}

/* The accumulator of (step, slot) over the chain, folded oldest first like the
 * running one. The chain is newest first, so the step's nodes are gathered in the
 * scratch arena, then folded backwards. False on allocation failure. */
static bool agg_rescan(const MatchNode *newest, int32_t step, int32_t slot, AggAcc *acc,
                       EvalScratch *s)
{
    memset(acc, 0, sizeof *acc);
    size_t n = 0;
    for (const MatchNode *m = newest; m; m = m->prev)
        n += m->step == step;
    if (n == 0)
        return true;
    const MatchNode **nodes = scratch_alloc(s, n * sizeof *nodes, false);
    if (!nodes)
        return false;
    size_t i = 0;
    for (const MatchNode *m = newest; m; m = m->prev)
        if (m->step == step)
            nodes[i++] = m;
    AggKey key = {.step = step, .slot = slot};
    while (i-- > 0)
        expr_agg_fold(acc, &key, nodes[i]->event);
    return true;
}

static bool has_running_form(FuncId fn)
{
    switch (fn) {
    case FN_COUNT: case FN_SUM: case FN_AVG: case FN_MIN: case FN_MAX:
    case FN_FIRST: case FN_LAST:
        return true;
    default:
        return false;
    }
}

bool expr_bind_aggregates(CExpr *ce, AggKey **keys, size_t *n_keys)
{
    for (size_t i = 0; i < ce->n_nodes; i++) {
        Node *n = &ce->nodes[i];
        if (n->op != OP_AGG || !has_running_form((FuncId)n->sub))
            continue;
        size_t k = 0;
        while (k < *n_keys && !((*keys)[k].step == n->step && (*keys)[k].slot == n->slot))
            k++;
        if (k == *n_keys) {
            if (k >= UINT16_MAX)
                return false;
            AggKey *grown = realloc(*keys, (k + 1) * sizeof *grown);
            if (!grown)
                return false;
            grown[k] = (AggKey){.step = n->step, .slot = n->slot};
            *keys = grown;
            (*n_keys)++;
        }
        n->index = (int32_t)k;
    }
    return true;
}

static Value eval_agg(const CExpr *ce, const Node *n, const EvalCtx *ctx, EvalScratch *s)
{
    FuncId fn = (FuncId)n->sub;
    if (fn == FN_COUNT_DISTINCT)
        return count_distinct(n, ctx, s);
    Value target = value_null();
    if (fn == FN_CONTAINS_AGG) {
        target = eval_node(ce, n->a, ctx, s);
        if (value_is_null(&target))
            return value_bool(false);
    }
    if (fn == FN_CONTAINS_AGG) {
        for (const MatchNode *m = ctx->match; m; m = m->prev) {
            if (m->step != n->step)
                continue;
            Value v = slot_of(m->event, n->slot);
            if (value_equal(&v, &target))
                return value_bool(true);
        }
        return value_bool(false);
    }
    const MatchNode *newest = ctx->match;
    if (n->index >= 0 && newest && n->index < newest->n_acc)
        return agg_result(fn, n->slot, &newest->acc[n->index]);
    AggAcc acc;
    if (!agg_rescan(newest, n->step, n->slot, &acc, s))
        return value_null();
    return agg_result(fn, n->slot, &acc);
}

/* ---- evaluation ----------------------------------------------------------- */

static Value eval_logic(const CExpr *ce, const Node *n, const EvalCtx *ctx, EvalScratch *s)
{
    bool is_and = n->op == OP_AND;
    Value l = eval_node(ce, n->a, ctx, s);
    /* The deciding value: false for `and`, true for `or`. */
    if (is_and ? is_false(&l) : is_true(&l))
        return value_bool(!is_and);
    Value r = eval_node(ce, n->b, ctx, s);
    if (is_and ? is_false(&r) : is_true(&r))
        return value_bool(!is_and);
    if (l.type == V_BOOL && r.type == V_BOOL)
        return value_bool(is_and);
    return value_null();
}

static Value eval_in_list(const CExpr *ce, const Node *n, const EvalCtx *ctx, EvalScratch *s)
{
    Value v = eval_node(ce, n->a, ctx, s);
    if (value_is_null(&v))
        return value_bool(false);
    for (uint32_t i = 0; i < n->n_args; i++) {
        Value item = arg_value(ce, n, i, ctx, s);
        if (!value_is_null(&item) && value_equal(&v, &item))
            return value_bool(true);
    }
    return value_bool(false);
}

static Value eval_match(const CExpr *ce, const Node *n, const EvalCtx *ctx, EvalScratch *s)
{
    Value v = eval_node(ce, n->a, ctx, s);
    if (v.type != V_STR)
        return value_bool(false);
    bool matched = regex_run(&ce->regexes[n->index], &v, 1, s) == RX_MATCH;
    return value_bool(matched != (n->sub != 0));
}

static Value eval_node(const CExpr *ce, uint32_t idx, const EvalCtx *ctx, EvalScratch *s)
{
    const Node *n = &ce->nodes[idx];
    Value l, r;
    switch (n->op) {
    case OP_CONST: return n->k;
    case OP_FIELD:
        return slot_of(ctx->event ? ctx->event : ctx->match ? ctx->match->event : NULL, n->slot);
    case OP_STEP_FIELD: {
        const MatchNode *m = last_of_step(ctx->match, n->step);
        return m ? slot_of(m->event, n->slot) : value_missing();
    }
    case OP_KEY:
        return ctx->key && (size_t)n->index < ctx->n_key ? ctx->key[n->index] : value_missing();
    case OP_NOT:
        l = eval_node(ce, n->a, ctx, s);
        return l.type == V_BOOL ? value_bool(!l.b) : value_null();
    case OP_NEG:
        l = eval_node(ce, n->a, ctx, s);
        return negate(&l);
    case OP_AND:
    case OP_OR: return eval_logic(ce, n, ctx, s);
    case OP_IS_NULL:
    case OP_NOT_NULL:
        l = eval_node(ce, n->a, ctx, s);
        return value_bool(value_is_null(&l) == (n->op == OP_IS_NULL));
    case OP_CMP:
        l = eval_node(ce, n->a, ctx, s);
        r = eval_node(ce, n->b, ctx, s);
        return value_bool(compare_holds(n->sub, &l, &r));
    case OP_IN_SET:
        l = eval_node(ce, n->a, ctx, s);
        return value_bool(!value_is_null(&l) && set_contains(&ce->sets[n->index], &l));
    case OP_IN_LIST: return eval_in_list(ce, n, ctx, s);
    case OP_MATCH: return eval_match(ce, n, ctx, s);
    case OP_ARITH:
        l = eval_node(ce, n->a, ctx, s);
        r = eval_node(ce, n->b, ctx, s);
        return arith(n->sub, &l, &r, s);
    case OP_CALL: return eval_call(ce, n, ctx, s);
    case OP_TIME_NOW: return value_time(ctx->time_ms);
    case OP_TIME_STEP: {
        const MatchNode *m = last_of_step(ctx->match, n->step);
        return m && m->event ? value_time(m->event->time_ms) : value_null();
    }
    case OP_AGG: return eval_agg(ce, n, ctx, s);
    }
    return value_null();
}

Value expr_eval(const CExpr *ce, const EvalCtx *ctx, EvalScratch *s)
{
    return eval_node(ce, ce->root, ctx, s);
}

/* ---- conditions ------------------------------------------------------------
 * Filters and `where`s are mostly `and`/`or`/`not` over comparisons of a field with
 * a constant. Testing them through truth values and pointers to the operands, not
 * 56-byte Values returned up the tree, is several times cheaper; other nodes fall
 * back to eval_node. Same three-valued logic as eval_logic. */

enum { T_FALSE = 0, T_TRUE = 1, T_UNKNOWN = -1 };

static int truth_of(const Value *v)
{
    return v->type == V_BOOL ? (v->b ? T_TRUE : T_FALSE) : T_UNKNOWN;
}

static const Value k_missing;   /* all zero: V_MISSING */

static const Value *slot_ref(const Event *ev, int32_t slot)
{
    return ev && slot >= 0 && (uint32_t)slot < ev->n_slots ? &ev->slots[slot] : &k_missing;
}

/* The operand's value: a pointer into an event or the program when it is a field, a
 * step's field or a constant (no Value copied), else evaluated into *tmp. */
static inline const Value *operand(const CExpr *ce, uint32_t idx, const EvalCtx *ctx,
                                   Value *tmp, EvalScratch *s)
{
    const Node *n = &ce->nodes[idx];
    switch (n->op) {
    case OP_CONST:
        return &n->k;
    case OP_FIELD:
        return slot_ref(ctx->event ? ctx->event : ctx->match ? ctx->match->event : NULL,
                        n->slot);
    case OP_STEP_FIELD: {
        const MatchNode *m = last_of_step(ctx->match, n->step);
        return m ? slot_ref(m->event, n->slot) : &k_missing;
    }
    default:
        *tmp = eval_node(ce, idx, ctx, s);
        return tmp;
    }
}

/* The condition of a field_vs_const program on the current event. */
static inline int test_field_vs_const(const CExpr *ce, const Event *ev)
{
    const Value *f = slot_ref(ev, ce->cmp_slot);
    if (ce->num_op >= 0)   /* the commonest: a field against a number */
        return f->type == V_NUM && expr_number_holds(ce->num_op, f->num, ce->cmp_const.num)
                   ? T_TRUE : T_FALSE;
    bool holds = ce->const_first ? compare_holds(ce->cmp_op, &ce->cmp_const, f)
                                 : compare_holds(ce->cmp_op, f, &ce->cmp_const);
    return holds ? T_TRUE : T_FALSE;
}

static int test_node(const CExpr *ce, uint32_t idx, const EvalCtx *ctx, EvalScratch *s)
{
    const Node *n = &ce->nodes[idx];
    int l, r;
    switch (n->op) {
    case OP_AND:
        if ((l = test_node(ce, n->a, ctx, s)) == T_FALSE)
            return T_FALSE;
        if ((r = test_node(ce, n->b, ctx, s)) == T_FALSE)
            return T_FALSE;
        return l == T_TRUE && r == T_TRUE ? T_TRUE : T_UNKNOWN;
    case OP_OR:
        if ((l = test_node(ce, n->a, ctx, s)) == T_TRUE)
            return T_TRUE;
        if ((r = test_node(ce, n->b, ctx, s)) == T_TRUE)
            return T_TRUE;
        return l == T_FALSE && r == T_FALSE ? T_FALSE : T_UNKNOWN;
    case OP_NOT:
        l = test_node(ce, n->a, ctx, s);
        return l == T_UNKNOWN ? T_UNKNOWN : !l;
    case OP_CMP: {
        Value tl, tr;
        const Value *lv = operand(ce, n->a, ctx, &tl, s);
        const Value *rv = operand(ce, n->b, ctx, &tr, s);
        return compare_holds(n->sub, lv, rv) ? T_TRUE : T_FALSE;
    }
    default: {
        Value v = eval_node(ce, idx, ctx, s);
        return truth_of(&v);
    }
    }
}

int expr_truth(const CExpr *ce, const EvalCtx *ctx, EvalScratch *s)
{
    if (ce->field_vs_const && ctx->event)
        return test_field_vs_const(ce, ctx->event);
    return test_node(ce, ce->root, ctx, s);
}

bool expr_test(const CExpr *ce, const EvalCtx *ctx, EvalScratch *s)
{
    return expr_truth(ce, ctx, s) == T_TRUE;
}

bool expr_is_iterative(const CExpr *ce)
{
    return ce->iterative;
}

bool expr_threshold(const CExpr *ce, ExprThreshold *out)
{
    if (!ce->field_vs_const || ce->num_op < 0)
        return false;
    if (ce->num_op != BIN_LT && ce->num_op != BIN_LE && ce->num_op != BIN_GT &&
        ce->num_op != BIN_GE)
        return false;
    *out = (ExprThreshold){ce->cmp_slot, ce->num_op, ce->cmp_const.num};
    return true;
}

bool expr_string_eq(const CExpr *ce, ExprStringEq *out)
{
    if (!ce->field_vs_const || ce->cmp_op != BIN_EQ || ce->cmp_const.type != V_STR)
        return false;
    *out = (ExprStringEq){ce->cmp_slot, ce->cmp_const.s, ce->cmp_const.len};
    return true;
}

bool expr_field_slot(const CExpr *ce, int32_t *slot)
{
    const Node *root = &ce->nodes[ce->root];
    if (root->op != OP_FIELD)
        return false;
    *slot = root->slot;
    return true;
}

/* ---- compilation ---------------------------------------------------------- */

typedef struct Compiler {
    CExpr *ce;
    const ExprEnv *env;
    char **err;
    EvalScratch *fold;       /* for constant folding; created on first use */
    int depth;
    bool oom;                /* memory ran out: *err stays NULL (expr.h) */
} Compiler;

static bool fail(Compiler *c, Span span, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static bool fail(Compiler *c, Span span, const char *fmt, ...)
{
    if (!c->err || *c->err)
        return false;
    Buf b = BUF_INIT;
    if (span.src && span.src->path)
        buf_printf(&b, "%s:%d:%d: ", span.src->path, span.line, span.col);
    else if (span.line > 0)
        buf_printf(&b, "%d:%d: ", span.line, span.col);
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(&b, fmt, ap);
    va_end(ap);
    if (b.failed)
        c->oom = true;
    else
        *c->err = buf_steal(&b);
    buf_free(&b);
    return false;
}

static bool out_of_memory(Compiler *c)
{
    c->oom = true;
    return false;
}

static bool grow(Compiler *c, void **items, size_t *cap, size_t n, size_t size)
{
    if (n >= UINT32_MAX)   /* items are numbered by uint32_t */
        return out_of_memory(c);
    void *grown = grow_for_one(*items, cap, n, size);
    if (!grown)
        return out_of_memory(c);
    *items = grown;
    return true;
}

/* Appends a node; its index goes to *out. */
static bool emit(Compiler *c, Node node, uint32_t *out)
{
    CExpr *ce = c->ce;
    if (!grow(c, (void **)&ce->nodes, &ce->cap_nodes, ce->n_nodes, sizeof *ce->nodes))
        return false;
    *out = (uint32_t)ce->n_nodes;
    ce->nodes[ce->n_nodes++] = node;
    return true;
}

static Node node_of(Op op)
{
    Node n;
    memset(&n, 0, sizeof n);
    n.op = op;
    n.slot = -1;
    n.step = -1;
    n.index = -1;
    return n;
}

/* Copies bytes into the CExpr's arena so the program does not borrow the AST. */
static const char *keep_bytes(Compiler *c, const char *bytes, size_t len)
{
    char *p = arena_alloc(&c->ce->consts, len + 1);
    if (!p)
        return NULL;
    if (len)
        memcpy(p, bytes, len);
    p[len] = '\0';
    return p;
}

static bool keep_value(Compiler *c, Value *v)
{
    if (v->type == V_STR && !(v->s = keep_bytes(c, v->s, v->len)))
        return out_of_memory(c);
    if (v->raw && !(v->raw = keep_bytes(c, v->raw, v->raw_len)))
        return out_of_memory(c);
    return true;
}

static bool emit_const(Compiler *c, Value v, uint32_t *out)
{
    Node n = node_of(OP_CONST);
    if (!keep_value(c, &v))
        return false;
    n.k = v;
    return emit(c, n, out);
}

/* An integer as JSON writes it: optional minus, no leading zeros. */
static bool is_json_integer(const char *t)
{
    if (*t == '-')
        t++;
    if (t[0] == '0')
        return t[1] == '\0';
    if (!*t)
        return false;
    for (; *t; t++)
        if (*t < '0' || *t > '9')
            return false;
    return true;
}

static bool compile_expr(Compiler *c, const Expr *e, uint32_t *out);

/* True if every operand of n is a constant, so that n can be folded. */
static bool children_constant(const CExpr *ce, const Node *n)
{
    switch (n->op) {
    case OP_NOT: case OP_NEG: case OP_IS_NULL: case OP_NOT_NULL:
    case OP_MATCH: case OP_IN_SET:
        return ce->nodes[n->a].op == OP_CONST;
    case OP_AND: case OP_OR: case OP_CMP: case OP_ARITH:
        return ce->nodes[n->a].op == OP_CONST && ce->nodes[n->b].op == OP_CONST;
    case OP_IN_LIST:
        if (ce->nodes[n->a].op != OP_CONST)
            return false;
        /* fall through */
    case OP_CALL:
        for (uint32_t i = 0; i < n->n_args; i++)
            if (ce->nodes[ce->argv[n->args + i]].op != OP_CONST)
                return false;
        return true;
    default:
        return false; /* reads the event, the match, the key or the clock */
    }
}

/* Emits `node`; if all its children are constants, evaluates it now and replaces
 * the whole subtree (every node from `mark` on) by one constant. */
static bool emit_folded(Compiler *c, Node node, size_t mark, size_t argv_mark, uint32_t *out)
{
    CExpr *ce = c->ce;
    if (!emit(c, node, out))
        return false;
    if (!children_constant(ce, &ce->nodes[*out]))
        return true;
    if (!c->fold && !(c->fold = expr_scratch_new()))
        return out_of_memory(c);
    EvalCtx empty = {0};
    Value v = eval_node(ce, *out, &empty, c->fold);
    if (c->fold->out_of_memory)   /* v is a null that is not the expression's value */
        return out_of_memory(c);
    ce->n_nodes = mark;
    ce->n_argv = argv_mark;
    bool ok = emit_const(c, v, out);
    expr_scratch_reset(c->fold);
    return ok;
}

static bool check_step(Compiler *c, const Expr *e, int step)
{
    const Rule *rule = c->env->rule;
    if (step < 0 || step > UINT16_MAX || (rule && (size_t)step >= rule->n_steps))
        return fail(c, e->span, "internal error: step index %d out of range", step);
    c->ce->iterative = true;
    return true;
}

static bool intern_field(Compiler *c, const Expr *e, const PathSeg *segs, size_t n, int32_t *slot)
{
    if (!c->env->fields)
        return fail(c, e->span, "internal error: no field table to read fields with");
    int s = field_table_intern(c->env->fields, segs, n);
    if (s < 0)
        return out_of_memory(c);
    *slot = s;
    return true;
}

static bool compile_path(Compiler *c, const Expr *e, uint32_t *out)
{
    const PathSeg *segs = e->u.path.segs;
    size_t n_segs = e->u.path.n_segs;
    Node n;
    switch (e->u.path.kind) {
    case PATH_FIELD:
        if (n_segs == 0)
            return fail(c, e->span, "internal error: empty field path");
        n = node_of(OP_FIELD);
        if (!intern_field(c, e, segs, n_segs, &n.slot))
            return false;
        return emit(c, n, out);
    case PATH_STEP:
        if (n_segs < 2)
            return fail(c, e->span, "step '%s' is not a value: use a field such as %s.x, "
                        "or count(%s)", segs[0].name, segs[0].name, segs[0].name);
        n = node_of(OP_STEP_FIELD);
        n.step = e->u.path.step;
        if (!check_step(c, e, n.step) || !intern_field(c, e, segs + 1, n_segs - 1, &n.slot))
            return false;
        return emit(c, n, out);
    case PATH_KEY:
        n = node_of(OP_KEY);
        n.index = e->u.path.key;
        if (n.index < 0 || (c->env->rule && (size_t)n.index >= c->env->rule->n_keys))
            return fail(c, e->span, "internal error: key index %d out of range", n.index);
        return emit(c, n, out);
    case PATH_UNRESOLVED:
        break;
    }
    return fail(c, e->span, "internal error: unresolved name '%s' (dsl_check has not run)",
                n_segs && segs[0].name ? segs[0].name : "?");
}

static bool add_regex(Compiler *c, const Expr *pattern, int32_t *index)
{
    if (pattern->kind != EX_STRING)
        return fail(c, pattern->span, "a regular expression must be a string literal");
    CExpr *ce = c->ce;
    if (!grow(c, (void **)&ce->regexes, &ce->cap_regexes, ce->n_regexes, sizeof *ce->regexes))
        return false;
    uint32_t options = PCRE2_UTF;
#ifdef PCRE2_MATCH_INVALID_UTF
    options |= PCRE2_MATCH_INVALID_UTF;   /* never fail on subjects that are not UTF-8 */
#endif
    int code;
    PCRE2_SIZE offset;
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern->u.string.bytes, pattern->u.string.len,
                                   options, &code, &offset, NULL);
    if (!re && code == PCRE2_ERROR_HEAP_FAILED)
        return out_of_memory(c);
    if (!re) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(code, msg, sizeof msg);
        return fail(c, pattern->span, "invalid regex at offset %zu: %s", (size_t)offset,
                    (const char *)msg);
    }
    /* The interpreter runs where JIT is unavailable, and under memcheck: JIT code reads
     * past a subject's end in wide loads that memcheck reports as uses of uninitialised
     * memory (a false report PCRE2 knows of); the interpreter's results are the same. */
    if (!under_memcheck())
        pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);
    Regex *r = &ce->regexes[ce->n_regexes];
    r->code = re;
    r->n_groups = 0;
    pcre2_pattern_info(re, PCRE2_INFO_CAPTURECOUNT, &r->n_groups);
    *index = (int32_t)ce->n_regexes++;
    return true;
}

static bool compile_match(Compiler *c, const Expr *e, uint32_t *out)
{
    size_t mark = c->ce->n_nodes, argv_mark = c->ce->n_argv;
    Node n = node_of(OP_MATCH);
    n.sub = e->u.binary.op == BIN_NMATCH;
    if (!compile_expr(c, e->u.binary.lhs, &n.a) || !add_regex(c, e->u.binary.rhs, &n.index))
        return false;
    return emit_folded(c, n, mark, argv_mark, out);
}

/* Builds the hash set of an `in` list whose items are all constants. */
static bool build_set(Compiler *c, const uint32_t *items, size_t n_items, int32_t *index)
{
    CExpr *ce = c->ce;
    if (!grow(c, (void **)&ce->sets, &ce->cap_sets, ce->n_sets, sizeof *ce->sets))
        return false;
    size_t cap = 4;
    while (cap < n_items * 2)
        cap *= 2;
    Value *buckets = arena_zalloc(&ce->consts, cap * sizeof *buckets);
    if (!buckets)
        return out_of_memory(c);
    for (size_t i = 0; i < n_items; i++) {
        const Value *v = &ce->nodes[items[i]].k;
        if (value_is_null(v))
            continue; /* `x in [null]` never holds: comparisons with null are false */
        size_t b = value_hash(v) & (cap - 1);
        while (buckets[b].type != V_MISSING && !value_equal(&buckets[b], v))
            b = (b + 1) & (cap - 1);
        buckets[b] = *v;
    }
    ce->sets[ce->n_sets].buckets = buckets;
    ce->sets[ce->n_sets].mask = cap - 1;
    *index = (int32_t)ce->n_sets++;
    return true;
}

/* Compiles each expression into the argv pool; n->args/n_args describe them. */
static bool compile_args(Compiler *c, Expr *const *exprs, size_t n_exprs, Node *n)
{
    CExpr *ce = c->ce;
    uint32_t idx[16];
    uint32_t *tmp = n_exprs <= 16 ? idx : malloc(n_exprs * sizeof *tmp);
    if (!tmp)
        return out_of_memory(c);
    bool ok = true;
    /* Children first: compiling them may itself append to argv. */
    for (size_t i = 0; ok && i < n_exprs; i++)
        ok = compile_expr(c, exprs[i], &tmp[i]);
    n->args = (uint32_t)ce->n_argv;
    n->n_args = (uint32_t)n_exprs;
    for (size_t i = 0; ok && i < n_exprs; i++) {
        ok = grow(c, (void **)&ce->argv, &ce->cap_argv, ce->n_argv, sizeof *ce->argv);
        if (ok)
            ce->argv[ce->n_argv++] = tmp[i];
    }
    if (tmp != idx)
        free(tmp);
    return ok;
}

static bool compile_in(Compiler *c, const Expr *e, uint32_t *out)
{
    const Expr *list = e->u.binary.rhs;
    if (list->kind != EX_LIST)
        return fail(c, list->span, "`in` needs a list: x in [a, b, ...]");
    CExpr *ce = c->ce;
    size_t mark = ce->n_nodes, argv_mark = ce->n_argv;
    Node n = node_of(OP_IN_LIST);
    if (!compile_expr(c, e->u.binary.lhs, &n.a) ||
        !compile_args(c, list->u.list.items, list->u.list.n, &n))
        return false;
    bool all_const = true;
    for (uint32_t i = 0; i < n.n_args; i++)
        all_const = all_const && ce->nodes[ce->argv[n.args + i]].op == OP_CONST;
    if (all_const) {
        n.op = OP_IN_SET;
        if (!build_set(c, ce->argv + n.args, n.n_args, &n.index))
            return false;
    }
    return emit_folded(c, n, mark, argv_mark, out);
}

static bool is_null_literal(const CExpr *ce, uint32_t idx)
{
    const Node *n = &ce->nodes[idx];
    return n->op == OP_CONST && value_is_null(&n->k);
}

static bool compile_binary(Compiler *c, const Expr *e, uint32_t *out)
{
    BinaryOp op = e->u.binary.op;
    if (op == BIN_MATCH || op == BIN_NMATCH)
        return compile_match(c, e, out);
    if (op == BIN_IN)
        return compile_in(c, e, out);
    CExpr *ce = c->ce;
    size_t mark = ce->n_nodes, argv_mark = ce->n_argv;
    Node n = node_of(OP_ARITH);
    n.sub = (int)op;
    if (!compile_expr(c, e->u.binary.lhs, &n.a) || !compile_expr(c, e->u.binary.rhs, &n.b))
        return false;
    switch (op) {
    case BIN_AND: n.op = OP_AND; break;
    case BIN_OR: n.op = OP_OR; break;
    case BIN_EQ:
    case BIN_NE:
        n.op = OP_CMP;
        /* `x == null` / `x != null` are the only tests for null. */
        if (is_null_literal(ce, n.b) || is_null_literal(ce, n.a)) {
            n.a = is_null_literal(ce, n.b) ? n.a : n.b;
            n.op = op == BIN_EQ ? OP_IS_NULL : OP_NOT_NULL;
        }
        break;
    case BIN_LT: case BIN_LE: case BIN_GT: case BIN_GE: n.op = OP_CMP; break;
    default: break;
    }
    return emit_folded(c, n, mark, argv_mark, out);
}

static bool compile_unary(Compiler *c, const Expr *e, uint32_t *out)
{
    size_t mark = c->ce->n_nodes, argv_mark = c->ce->n_argv;
    Node n = node_of(e->u.unary.op == UN_NOT ? OP_NOT : OP_NEG);
    if (!compile_expr(c, e->u.unary.operand, &n.a))
        return false;
    return emit_folded(c, n, mark, argv_mark, out);
}

/* A PATH_STEP argument of an aggregate or time(): its step, and the field slot
 * (-1 when the path names the step itself). */
static bool step_arg(Compiler *c, const Expr *call, const Expr *arg, int32_t *step,
                     int32_t *slot)
{
    if (arg->kind != EX_PATH || arg->u.path.kind != PATH_STEP)
        return fail(c, arg->span, "%s() needs a step%s", call->u.call.name,
                    call->u.call.fn == FN_COUNT || call->u.call.fn == FN_TIME
                        ? "" : " field such as STEP.amount");
    *step = arg->u.path.step;
    *slot = -1;
    if (!check_step(c, arg, *step))
        return false;
    if (arg->u.path.n_segs < 2)
        return true;
    return intern_field(c, arg, arg->u.path.segs + 1, arg->u.path.n_segs - 1, slot);
}

static bool compile_time(Compiler *c, const Expr *e, uint32_t *out)
{
    if (e->u.call.n_args == 0)
        return emit(c, node_of(OP_TIME_NOW), out);
    Node n = node_of(OP_TIME_STEP);
    if (!step_arg(c, e, e->u.call.args[0], &n.step, &n.slot))
        return false;
    if (n.slot >= 0)
        return fail(c, e->u.call.args[0]->span, "time() takes a step, not a field");
    return emit(c, n, out);
}

static bool compile_agg(Compiler *c, const Expr *e, uint32_t *out)
{
    Node n = node_of(OP_AGG);
    n.sub = (int)e->u.call.fn;
    if (!step_arg(c, e, e->u.call.args[0], &n.step, &n.slot))
        return false;
    if (n.slot < 0 && e->u.call.fn != FN_COUNT)
        return fail(c, e->u.call.args[0]->span,
                    "%s() needs a step field such as STEP.amount", e->u.call.name);
    if (e->u.call.fn == FN_CONTAINS_AGG && !compile_expr(c, e->u.call.args[1], &n.a))
        return false;
    return emit(c, n, out);
}

/* Accepted argument counts; max -1 means any number. */
static void arity_of(FuncId fn, int *min, int *max)
{
    *min = *max = 1;
    switch (fn) {
    case FN_MIN2: case FN_MAX2: case FN_STARTS_WITH: case FN_ENDS_WITH:
    case FN_CONTAINS_STR: case FN_CONTAINS_AGG:
        *min = *max = 2;
        break;
    case FN_REGEX_EXTRACT: *min = 2; *max = 3; break;
    case FN_COALESCE: *max = -1; break;
    case FN_TIME: *min = 0; break;
    default: break;
    }
}

static bool compile_call(Compiler *c, const Expr *e, uint32_t *out)
{
    FuncId fn = e->u.call.fn;
    if (fn == FN_UNRESOLVED)
        return fail(c, e->u.call.name_span, "internal error: unresolved function '%s'",
                    e->u.call.name);
    int min, max;
    arity_of(fn, &min, &max);
    int n_args = (int)e->u.call.n_args;
    if (n_args < min || (max >= 0 && n_args > max))
        return fail(c, e->u.call.name_span, "wrong number of arguments to %s()", e->u.call.name);
    if (fn == FN_TIME)
        return compile_time(c, e, out);
    if (fn >= FN_COUNT)
        return compile_agg(c, e, out);
    size_t mark = c->ce->n_nodes, argv_mark = c->ce->n_argv;
    Node n = node_of(OP_CALL);
    n.sub = (int)fn;
    if (fn == FN_REGEX_EXTRACT && !add_regex(c, e->u.call.args[1], &n.index))
        return false;
    if (!compile_args(c, e->u.call.args, e->u.call.n_args, &n))
        return false;
    return emit_folded(c, n, mark, argv_mark, out);
}

static bool compile_literal(Compiler *c, const Expr *e, uint32_t *out)
{
    Value v = value_null();
    switch (e->kind) {
    case EX_NULL: break;
    case EX_BOOL: v = value_bool(e->u.boolean); break;
    case EX_NUMBER:
        v = value_num(e->u.number.value);
        /* An integer literal keeps its digits when echoed, like a field would. */
        if (e->u.number.text && is_json_integer(e->u.number.text)) {
            v.raw = e->u.number.text;
            v.raw_len = strlen(v.raw);
        }
        break;
    case EX_STRING: v = value_str(e->u.string.bytes, e->u.string.len); break;
    case EX_DURATION: v = value_dur(e->u.duration.ms); break;
    default: break;
    }
    return emit_const(c, v, out);
}

static bool compile_expr(Compiler *c, const Expr *e, uint32_t *out)
{
    if (!e) {
        Span none = {0};
        return fail(c, none, "internal error: missing expression");
    }
    if (++c->depth > MAX_NESTING) {
        c->depth--;
        return fail(c, e->span, "expression nested too deeply (more than %d levels)",
                    MAX_NESTING);
    }
    bool ok;
    switch (e->kind) {
    case EX_PATH: ok = compile_path(c, e, out); break;
    case EX_LIST: ok = fail(c, e->span, "a list [...] is only allowed after `in`"); break;
    case EX_UNARY: ok = compile_unary(c, e, out); break;
    case EX_BINARY: ok = compile_binary(c, e, out); break;
    case EX_CALL: ok = compile_call(c, e, out); break;
    default: ok = compile_literal(c, e, out); break;
    }
    c->depth--;
    return ok;
}

/* The operator with its operands swapped: `k < f` is `f > k`. Exact for numbers,
 * NaN included (only != holds either way). */
static int mirrored(int op)
{
    switch (op) {
    case BIN_LT: return BIN_GT;
    case BIN_LE: return BIN_GE;
    case BIN_GT: return BIN_LT;
    case BIN_GE: return BIN_LE;
    default: return op;
    }
}

/* Recognises a program that is one comparison of an event field with a constant. */
static void note_shape(CExpr *ce)
{
    const Node *root = &ce->nodes[ce->root];
    if (root->op != OP_CMP)
        return;
    const Node *a = &ce->nodes[root->a], *b = &ce->nodes[root->b];
    if (a->op == OP_FIELD && b->op == OP_CONST) {
        ce->cmp_slot = a->slot;
        ce->cmp_const = b->k;
    } else if (a->op == OP_CONST && b->op == OP_FIELD) {
        ce->cmp_slot = b->slot;
        ce->cmp_const = a->k;
        ce->const_first = true;
    } else {
        return;
    }
    ce->cmp_op = root->sub;
    ce->num_op = ce->cmp_const.type != V_NUM ? -1
                 : ce->const_first ? mirrored(root->sub) : root->sub;
    ce->field_vs_const = true;
}

CExpr *expr_compile(const Expr *e, const ExprEnv *env, char **err)
{
    if (err)
        *err = NULL;
    CExpr *ce = calloc(1, sizeof *ce);
    if (!ce)
        return NULL;
    arena_init(&ce->consts, 1024);
    char *local_err = NULL;
    static const ExprEnv no_env = {NULL, NULL};
    Compiler c = {ce, env ? env : &no_env, err ? err : &local_err, NULL, 0, false};
    bool ok = compile_expr(&c, e, &ce->root);
    if (ok)
        note_shape(ce);
    expr_scratch_free(c.fold);
    free(local_err);
    if (c.oom && err) {   /* a message written before memory ran out does not stand */
        free(*err);
        *err = NULL;
    }
    if (!ok) {
        expr_free(ce);
        return NULL;
    }
    return ce;
}

void expr_free(CExpr *ce)
{
    if (!ce)
        return;
    for (size_t i = 0; i < ce->n_regexes; i++)
        pcre2_code_free(ce->regexes[i].code);
    free(ce->regexes);
    free(ce->nodes);
    free(ce->argv);
    free(ce->sets);
    arena_free(&ce->consts);
    free(ce);
}

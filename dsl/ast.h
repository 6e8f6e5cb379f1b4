/* dsl/ast.h — the abstract syntax tree of the rule language (LANGUAGE.md).
 *
 * Owns: node types for files, declarations, rules, steps, expressions and
 * actions. Every node carries the Span it was parsed from.
 *
 * Memory: every node, string and array of one RuleSet lives in rs->arena and is
 * freed by ast_ruleset_free(); sources are owned by rs->sources. Nodes are never
 * freed one by one. Arrays are (pointer, count) pairs allocated in the arena.
 *
 * The parser fills the syntax; dsl_check() (dsl/check.h) fills the fields marked
 * "resolved" and rejects what cannot run. Code downstream reads resolved trees only. */
#ifndef VIGIL_DSL_AST_H
#define VIGIL_DSL_AST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/arena.h"
#include "dsl/source.h"

/* Durations and times are int64 milliseconds everywhere in vigil. */
#define DURATION_NONE (-1)

typedef struct Expr Expr;

/* ---- field paths ---------------------------------------------------------- */

/* One segment of `payload.card.bin` or `items[0].sku`: a name, or an index. */
typedef struct PathSeg {
    const char *name;     /* NULL for an index segment */
    long index;           /* array index when name == NULL */
    Span span;
} PathSeg;

typedef enum {
    PATH_UNRESOLVED = 0,
    PATH_FIELD,           /* a field of the current event (in actions: of the match's last event) */
    PATH_STEP,            /* segs[0] is a step: the rest is a field of that step's last event;
                             with n_segs == 1 the path names the step itself (count(a), time(a)) */
    PATH_KEY,             /* key.NAME in an action: segs[1] names a key */
} PathKind;

/* ---- expressions ---------------------------------------------------------- */

typedef enum {
    EX_NULL, EX_BOOL, EX_NUMBER, EX_STRING, EX_DURATION,
    EX_PATH,              /* field, step field or key reference (resolved by check) */
    EX_LIST,              /* [a, b, ...]; only as the right side of `in` */
    EX_UNARY,
    EX_BINARY,
    EX_CALL,
} ExprKind;

typedef enum { UN_NOT, UN_NEG } UnaryOp;

typedef enum {
    BIN_OR, BIN_AND,
    BIN_EQ, BIN_NE, BIN_LT, BIN_LE, BIN_GT, BIN_GE,
    BIN_IN, BIN_MATCH, BIN_NMATCH,   /* =~ and !~: rhs is an EX_STRING literal */
    BIN_ADD, BIN_SUB, BIN_MUL, BIN_DIV, BIN_MOD,
} BinaryOp;

/* Functions and aggregates, as resolved by check from the call's name. */
typedef enum {
    FN_UNRESOLVED = 0,
    FN_LOWER, FN_UPPER, FN_LEN, FN_ABS, FN_ROUND, FN_FLOOR, FN_CEIL,
    FN_MIN2, FN_MAX2,                  /* min(a, b), max(a, b) */
    FN_STARTS_WITH, FN_ENDS_WITH, FN_CONTAINS_STR,
    FN_REGEX_EXTRACT, FN_EXISTS, FN_COALESCE, FN_STR, FN_NUM,
    FN_TIME,                           /* time() or time(STEP) */
    /* aggregates over a step's events; args[0] is a PATH_STEP path */
    FN_COUNT, FN_SUM, FN_AVG, FN_MIN, FN_MAX, FN_COUNT_DISTINCT,
    FN_FIRST, FN_LAST, FN_CONTAINS_AGG,
} FuncId;

struct Expr {
    ExprKind kind;
    Span span;
    union {
        bool boolean;                                  /* EX_BOOL */
        struct { double value; const char *text; } number;  /* EX_NUMBER; text as written */
        struct { const char *bytes; size_t len; bool raw; } string;  /* EX_STRING: decoded bytes
                                                          (may hold NUL), raw = written '...' */
        struct { int64_t ms; const char *text; } duration; /* EX_DURATION; text as written */
        struct {
            PathSeg *segs; size_t n_segs;
            PathKind kind;                             /* resolved */
            int step;                                  /* resolved: step index for PATH_STEP */
            int key;                                   /* resolved: key index for PATH_KEY */
        } path;
        struct { Expr **items; size_t n; } list;
        struct { UnaryOp op; Expr *operand; } unary;
        struct { BinaryOp op; Expr *lhs, *rhs; Span op_span; } binary;
        struct {
            const char *name; Span name_span;
            Expr **args; size_t n_args;
            FuncId fn;                                 /* resolved */
        } call;
    } u;
};

/* ---- templates (alert messages, output paths and argv) -------------------- */

/* "user {user_id}: {count(a)} tx" is parsed into literal and expression parts.
 * `{{` and `}}` become literal braces in `text`. */
typedef struct TemplatePart {
    const char *text;     /* literal part (decoded), or NULL when expr is set */
    size_t len;
    Expr *expr;           /* interpolated expression, or NULL */
} TemplatePart;

typedef struct Template {
    TemplatePart *parts;
    size_t n_parts;
    const char *source;   /* the literal as written, for fmt */
    Span span;
} Template;

/* ---- steps ---------------------------------------------------------------- */

typedef enum {
    STEP_BEGIN, STEP_NEXT, STEP_FOLLOWED_BY, STEP_FOLLOWED_BY_ANY,
    STEP_NOT_NEXT, STEP_NOT_FOLLOWED_BY,
} StepKind;

#define QUANT_UNBOUNDED (-1)

typedef struct Quantifier {
    /* No quantifier: min = max = 1, looping = false.
     * times N: min = max = N. times N..M: min = N, max = M.
     * times N+: min = N, max = QUANT_UNBOUNDED. one_or_more: min = 1, max = QUANT_UNBOUNDED. */
    int min, max;
    bool looping;         /* written with times or one_or_more (a loop state, even times 1) */
    bool optional, greedy, consecutive, allow_combinations;
    Expr *until;          /* stop condition of an open loop, or NULL */
    Span times_span;      /* the `times ...` or `one_or_more` text; zero if absent */
    Span optional_span, greedy_span, consecutive_span, combinations_span, until_span;
} Quantifier;

typedef struct Step {
    StepKind kind;
    const char *name;
    Span span;            /* whole statement */
    Span name_span;
    int64_t within_ms;    /* per-step within, or DURATION_NONE */
    Span within_span;
    Expr *where;          /* NULL: accepts every event that passed the filter */
    Quantifier quant;
} Step;

/* ---- actions -------------------------------------------------------------- */

typedef enum { SEV_INFO, SEV_LOW, SEV_MEDIUM, SEV_HIGH, SEV_CRITICAL } Severity;

typedef struct AlertField {
    const char *name;
    Span name_span;
    Expr *value;
} AlertField;

typedef struct OutputRef {
    const char *name;
    Span span;
    int output;           /* resolved: index into RuleSet.outputs, or -1 for stdout */
} OutputRef;

typedef struct Action {
    Span span;
    Severity severity;
    bool severity_written;  /* for fmt: the default is not printed unless written */
    Span severity_span;
    Template message;
    AlertField *fields; size_t n_fields;
    OutputRef *to; size_t n_to;   /* empty: stdout */
} Action;

typedef enum { ON_MATCH, ON_TIMEOUT } ActionTrigger;

typedef struct OnClause {
    ActionTrigger trigger;
    Span span;
    Span trigger_span;    /* the `match` / `timeout` word */
    Action *actions; size_t n_actions;
} OnClause;

/* ---- rules ---------------------------------------------------------------- */

typedef struct KeyDecl {
    const char *name;     /* `key NAME = EXPR`; for `key user_id` the path text "user_id";
                             otherwise the canonical text of the expression (set by the parser) */
    bool named;           /* written as NAME = EXPR */
    Expr *expr;
    Span span;
} KeyDecl;

typedef enum {
    SKIP_PAST_LAST_EVENT = 0,   /* the default */
    SKIP_NO_SKIP, SKIP_TO_NEXT, SKIP_TO_FIRST, SKIP_TO_LAST,
} SkipKind;

typedef struct SkipDecl {
    SkipKind kind;
    bool written;
    const char *step;     /* for to_first / to_last */
    Span span, step_span;
    int step_index;       /* resolved */
} SkipDecl;

/* Statements of a rule body in written order, for fmt and comment placement. */
typedef enum {
    STMT_FILTER, STMT_KEY, STMT_STEP, STMT_WITHIN, STMT_SKIP, STMT_SUPPRESS, STMT_ON,
} StmtKind;

typedef struct Stmt {
    StmtKind kind;
    size_t index;         /* into steps / keys / on arrays for STEP, KEY, ON */
    Span span;
} Stmt;

typedef struct Rule {
    const char *name;
    Span span, name_span;
    Expr *filter;         /* NULL: every event */
    Span filter_span;
    KeyDecl *keys; size_t n_keys;   /* none: one global partition */
    Step *steps; size_t n_steps;
    int64_t within_ms;    /* DURATION_NONE if absent */
    Span within_span;
    SkipDecl skip;
    int64_t suppress_ms;  /* DURATION_NONE if absent */
    Span suppress_span;
    OnClause *on; size_t n_on;
    Stmt *stmts; size_t n_stmts;
} Rule;

/* ---- file-level declarations --------------------------------------------- */

typedef enum { TIME_AUTO, TIME_ISO8601, TIME_EPOCH_S, TIME_EPOCH_MS } TimeFormat;

typedef struct TimeDecl {
    PathSeg *field; size_t n_field;
    TimeFormat format;
    int64_t lateness_ms;  /* 0 if not written */
    bool lateness_written;
    Span span;
} TimeDecl;

typedef enum { OUT_FILE, OUT_EXEC, OUT_TCP, OUT_UNIX } OutputKind;

typedef struct OutputDecl {
    const char *name;
    OutputKind kind;
    Span span, name_span;
    Template path;        /* OUT_FILE: path template; OUT_TCP: "HOST:PORT"; OUT_UNIX: path */
    Template *argv; size_t n_argv;   /* OUT_EXEC */
    int64_t rotate_ms;    /* OUT_FILE, or DURATION_NONE */
    int64_t timeout_ms;   /* OUT_EXEC, or DURATION_NONE */
} OutputDecl;

/* Top-level items of one file in written order, for fmt. */
typedef enum { DECL_TIME, DECL_OUTPUT, DECL_RULE } DeclKind;
typedef struct Decl {
    DeclKind kind;
    size_t index;         /* into outputs / rules (unused for DECL_TIME) */
    Span span;
} Decl;

typedef struct RuleFile {
    SourceFile *src;      /* borrowed from RuleSet.sources */
    Decl *decls; size_t n_decls;
    TimeDecl *time;       /* NULL if this file has none */
} RuleFile;

/* All files loaded together: names are unique across them. */
typedef struct RuleSet {
    Arena arena;
    SourceFile **sources; size_t n_sources;   /* heap array; each source heap, owned */
    RuleFile *files; size_t n_files;          /* heap array, owned */
    OutputDecl *outputs; size_t n_outputs;    /* heap array, owned */
    Rule *rules; size_t n_rules;              /* heap array, owned */
    const TimeDecl *time;                     /* the one time declaration, or NULL (processing time) */
} RuleSet;

RuleSet *ast_ruleset_new(void);
void ast_ruleset_free(RuleSet *rs);

/* Growable-array helpers for the parser; they return NULL on allocation failure. */
Rule *ast_add_rule(RuleSet *rs);
OutputDecl *ast_add_output(RuleSet *rs);

/* Index of the step called `name` in `rule`, or -1. */
int ast_step_index(const Rule *rule, const char *name);

/* A readable, stable dump of an expression (s-expression style), for tests. */
char *ast_expr_dump(const Expr *e);           /* heap string, NULL on OOM */

#endif

/* dsl/parser.y — the grammar of the rule language (LANGUAGE.md), a pure bison parser.
 *
 * Owns: the grammar only. Actions hand their pieces to the builders in dsl/build*.c,
 * which put every node in the rule set's arena (so values dropped by error recovery
 * need no destructor). One grammar serves two start symbols: a whole file, and a
 * lone expression (templates' `{expr}` and dsl_parse_expr), chosen by a first token
 * that the driver injects. Errors recover at `;`, at `}` and at the next keyword
 * that starts a statement or a declaration. */
%define api.pure full
%define api.location.type {Span}
%define parse.error custom
%define parse.lac full
%locations
%parse-param {ParseCtx *pc}
%lex-param {ParseCtx *pc}
%expect 0

%code requires {
#include <setjmp.h>
#include <stdbool.h>
#include <stdint.h>

#include "dsl/ast.h"
#include "dsl/diag.h"

typedef struct ParseCtx ParseCtx;

/* A token's value. `text` is an arena copy: the name of an identifier, the text of
 * a number or duration, the decoded bytes of a string. off/src_len locate the token
 * in the scanner's input (templates decode strings again from there). */
typedef struct Tok {
    const char *text;
    size_t len;
    size_t off, src_len;
    double num;
    int64_t ms;
    bool raw;
} Tok;

/* An expression and the depth of its tree, so nesting can be capped while parsing. */
typedef struct ExprV {
    Expr *e;
    int depth;
} ExprV;

/* A growable array in the rule set's arena (see vec_push in parse.c). */
typedef struct Vec {
    void *items;
    size_t n, cap;
} Vec;

typedef struct SpannedTok {
    Tok tok;
    Span span;
} SpannedTok;

/* The target of an output declaration: one string, or a bracketed list of them. */
typedef struct OutTarget {
    Vec strings;          /* of SpannedTok */
    bool list;
    Span span;
} OutTarget;
}

%code provides {
/* Shared by the grammar, the scanner (lexer.l) and the builders (build_expr.c, build.c) and the driver (parse.c). */

/* Where a byte of the scanner's input sits in the rule file: a template's
 * expression is scanned from its decoded bytes, which escapes move around. */
typedef struct SrcPos {
    int line, col;
} SrcPos;

/* An option word, alone or with a duration: `iso8601`, `lateness 30s`, `rotate 1h`. */
typedef struct OptItem {
    Tok name;
    Span name_span;
    bool has_value;
    Tok value;
    Span value_span;
} OptItem;

/* The rule being parsed; its arrays grow in the arena until the closing brace. */
typedef struct RuleBuild {
    Rule rule;
    Vec keys, steps, on, stmts;   /* of KeyDecl, Step, OnClause, Stmt */
} RuleBuild;

struct ParseCtx {
    RuleSet *rs;
    Arena *arena;             /* rs->arena */
    Diags *diags;             /* borrowed */
    SourceFile *src;          /* owned by rs->sources */
    const char *input;        /* what the scanner reads: the file, or a template expression */
    size_t input_len;
    const SrcPos *map;        /* NULL: input is src->text; else position of each input byte */
    bool record_comments;     /* false in sub-parses: the file's scan records them once */
    size_t pos;               /* scanner offset in input */
    size_t line_hint;         /* line index of the last lookup (tokens come in order) */
    size_t tok_off, tok_len;  /* the last token, quoted in syntax errors */
    size_t prev_off, prev_len;  /* the token before it */
    int brace_depth;          /* '{' tokens not closed yet */
    size_t open_brace_off;    /* the outermost of them */
    int prev_line;            /* last line of the token before it */
    int tok_line;
    void *scanner;            /* yyscan_t */
    int start_token;          /* START_FILE or START_EXPR, handed out first */
    int errors;
    Span last_error;          /* one message per spot */
    bool deep_reported;       /* the nesting limit is reported once per parse */
    bool oom;
    jmp_buf *scanner_failed;  /* where a fatal scanner error (out of memory) lands */
    Vec decls;                /* of Decl, in written order */
    TimeDecl *time;           /* this file's first time declaration */
    RuleBuild rb;
    Expr *result;             /* START_EXPR */
};

#define YYLLOC_DEFAULT(Cur, Rhs, N) ((Cur) = parse_rhs_span(&(Rhs)[0], (N)))
Span parse_rhs_span(const Span *rhs, int n);

int yyparse(ParseCtx *pc);
int vigil_scan(YYSTYPE *lval, YYLTYPE *lloc, void *scanner);

/* positions, arrays and sub-parses shared by parse.c, scan.c and the builders */
SrcPos parse_locate(ParseCtx *pc, size_t off);
Span parse_span_at(ParseCtx *pc, size_t start, size_t end);
Span parse_token_span(ParseCtx *pc);
void *parse_vec_push(ParseCtx *pc, Vec *v, size_t size);   /* zeroed slot, NULL on OOM */
Expr *parse_sub_expr(ParseCtx *pc, const char *text, size_t len, const SrcPos *map);
size_t parse_decode_string(ParseCtx *pc, size_t base, size_t len, bool raw, bool report,
                           char *out, size_t *map);
bool parse_make_template(ParseCtx *pc, const Tok *t, Span span, Template *out);
bool parse_whole_number(ParseCtx *pc, const Tok *t, long max, Span span, const char *what,
                        long *out);

/* driver and diagnostics (parse.c) */
int parse_next_token(YYSTYPE *lval, YYLTYPE *lloc, ParseCtx *pc);
void parse_error(ParseCtx *pc, Span span, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void parse_oom(ParseCtx *pc);
void parse_syntax_error(ParseCtx *pc, Span at, bool lexer_reported, const char *got,
                        const char *const *expected, int n_expected);

/* scanner callbacks (scan.c): each returns the token kind to hand the parser */
void lex_advance(ParseCtx *pc, YYLTYPE *lloc, size_t len);
int lex_word(ParseCtx *pc, YYSTYPE *lval, const char *text, size_t len);
/* The token of a reserved word, or 0 if `text` is not one. */
int lex_keyword(const char *text, size_t len);
int lex_number(ParseCtx *pc, YYSTYPE *lval, const char *text, size_t len);
int lex_suffixed_number(ParseCtx *pc, YYSTYPE *lval, const char *text, size_t len);
int lex_string(ParseCtx *pc, YYSTYPE *lval, size_t len, bool raw);
int lex_backtick(ParseCtx *pc, YYSTYPE *lval, const char *text, size_t len);
void lex_comment(ParseCtx *pc, const char *text, size_t len);
int lex_unterminated(ParseCtx *pc, const char *what);
int lex_bad_char(ParseCtx *pc, const char *text, size_t len);
_Noreturn void lex_fatal(ParseCtx *pc, const char *msg);

/* builders (build_expr.c, build.c): false means out of memory */
bool parse_push_option(ParseCtx *pc, Vec *v, const Tok *name, Span name_span,
                       const Tok *value, Span value_span);
bool parse_time_decl(ParseCtx *pc, const Vec *path, const Vec *opts, Span span);
bool parse_push_stok(ParseCtx *pc, Vec *v, const Tok *t, Span span);
bool parse_output_decl(ParseCtx *pc, const Tok *name, Span name_span, const Tok *kind,
                       Span kind_span, const OutTarget *target, const Vec *opts, Span span);
void parse_rule_begin(ParseCtx *pc, const Tok *name, Span name_span);
bool parse_rule_end(ParseCtx *pc, Span span);
bool parse_filter(ParseCtx *pc, Expr *cond, Span span);
bool parse_push_key(ParseCtx *pc, Vec *v, const Tok *name, Expr *e, Span span);
bool parse_keys(ParseCtx *pc, const Vec *keys, Span span);
Step *parse_step_new(ParseCtx *pc);
void parse_step_within(ParseCtx *pc, Step *s, const Tok *dur, Span span);
void parse_step_where(ParseCtx *pc, Step *s, Expr *cond, Span where_span);
void parse_times(ParseCtx *pc, Step *s, const Tok *n, const Tok *m, bool plus, Span span);
void parse_one_or_more(ParseCtx *pc, Step *s, Span span);
void parse_flag(ParseCtx *pc, Step *s, int token, Span span);
void parse_until(ParseCtx *pc, Step *s, Expr *cond, Span span);
bool parse_step(ParseCtx *pc, StepKind kind, const Tok *name, Span name_span, Step *s,
                Span span);
bool parse_rule_within(ParseCtx *pc, const Tok *dur, Span span);
bool parse_skip(ParseCtx *pc, const Tok *strategy, Span strategy_span, const Tok *step,
                Span step_span, Span span);
bool parse_suppress(ParseCtx *pc, const Tok *dur, Span span);
bool parse_on(ParseCtx *pc, const Tok *trigger, Span trigger_span, const Vec *actions,
              Span span);
bool parse_push_ptr(ParseCtx *pc, Vec *v, void *p);
Action *parse_action(ParseCtx *pc, const Tok *severity, Span severity_span, const Tok *msg,
                     Span msg_span, const Vec *fields, const Vec *to, Span span);
bool parse_push_field(ParseCtx *pc, Vec *v, const AlertField *f);
bool parse_push_out_ref(ParseCtx *pc, Vec *v, const Tok *name, Span span);
bool parse_binary(ParseCtx *pc, ExprV *out, BinaryOp op, ExprV lhs, ExprV rhs, Span op_span);
bool parse_unary(ParseCtx *pc, ExprV *out, UnaryOp op, ExprV operand, Span span);
bool parse_literal(ParseCtx *pc, ExprV *out, ExprKind kind, const Tok *t, Span span);
bool parse_constant(ParseCtx *pc, ExprV *out, ExprKind kind, bool value, Span span);
bool parse_push_seg(ParseCtx *pc, Vec *v, const char *name, long index, Span span);
bool parse_push_index(ParseCtx *pc, Vec *v, const Tok *number, Span span);
bool parse_path_expr(ParseCtx *pc, ExprV *out, const Vec *segs, Span span);
bool parse_call(ParseCtx *pc, ExprV *out, const char *name, Span name_span, const Vec *args,
                Span span);
bool parse_list(ParseCtx *pc, ExprV *out, const Vec *items, Span span);
bool parse_push_expr(ParseCtx *pc, Vec *v, ExprV e);
}

%union {
    Tok tok;
    ExprV ex;
    Vec vec;
    Step *step;
    StepKind step_kind;
    Action *action;
    AlertField field;
    OutputRef out_ref;
    OutTarget target;
    SpannedTok stok;
}

%code {
#include <string.h>

static int yylex(YYSTYPE *lval, YYLTYPE *lloc, ParseCtx *pc)
{
    return parse_next_token(lval, lloc, pc);
}

/* Bison's own messages: "memory exhausted" means its stack outgrew YYMAXDEPTH
 * (input nested absurdly deep) unless a builder ran out of memory first. */
static void yyerror(YYLTYPE *loc, ParseCtx *pc, const char *msg)
{
    if (pc->oom)
        return;
    if (strcmp(msg, "memory exhausted") == 0)
        parse_error(pc, *loc, "input nested too deeply for the parser");
    else
        parse_error(pc, *loc, "%s", msg);
}

#define CHECK_MEM(x) do { if (!(x)) { parse_oom(pc); YYNOMEM; } } while (0)
}

%token START_FILE START_EXPR
%token <tok> IDENT "identifier" NUMBER "number" STRING "string" DURATION "duration"
%token RULE "rule" FILTER "filter" KEY "key" BEGIN_ "begin" NEXT "next"
%token FOLLOWED_BY "followed_by" FOLLOWED_BY_ANY "followed_by_any"
%token NOT_NEXT "not_next" NOT_FOLLOWED_BY "not_followed_by"
%token WITHIN "within" WHERE "where" SKIP "skip" SUPPRESS "suppress" ON "on"
%token ALERT "alert" FIELDS "fields" TO "to" TIMES "times" ONE_OR_MORE "one_or_more"
%token OPTIONAL "optional" GREEDY "greedy" CONSECUTIVE "consecutive"
%token ALLOW_COMBINATIONS "allow_combinations" UNTIL "until"
%token AND "and" OR "or" NOT "not" IN "in" TRUE "true" FALSE "false" NULL_ "null"
%token TIME "time" OUTPUT "output"
%token EQ "==" NE "!=" LE "<=" GE ">=" MATCH_OP "=~" NMATCH_OP "!~" DOTDOT ".."

%left OR
%left AND
%precedence NOT
%nonassoc EQ NE '<' LE '>' GE IN MATCH_OP NMATCH_OP
%left '+' '-'
%left '*' '/' '%'
%precedence UMINUS

%type <ex> expr primary call list
%type <vec> path args args_ne key_items fields_opt field_list field_list_ne to_opt out_list actions
%type <vec> time_opts out_opts str_list
%type <step> step_clauses
%type <step_kind> step_kind
%type <action> action
%type <field> field
%type <tok> severity_opt
%type <target> out_target

%%

start
    : START_FILE file
    | START_EXPR expr { pc->result = $2.e; }
    ;

file
    : %empty
    | file decl
    ;

decl
    : time_decl
    | output_decl
    | rule_decl
    | error ';'
    | error '}'
    | error                       /* resumes at the next 'rule', 'time' or 'output' */
    ;

/* ---- file-level declarations ------------------------------------------- */

time_decl
    : TIME path time_opts ';'     { CHECK_MEM(parse_time_decl(pc, &$2, &$3, @$)); }
    ;

time_opts
    : %empty                      { $$ = (Vec){0}; }
    | time_opts IDENT             { $$ = $1; CHECK_MEM(parse_push_option(pc, &$$, &$2, @2, NULL, @2)); }
    | time_opts IDENT DURATION    { $$ = $1; CHECK_MEM(parse_push_option(pc, &$$, &$2, @2, &$3, @3)); }
    ;

output_decl
    : OUTPUT IDENT IDENT out_target out_opts ';'
        { CHECK_MEM(parse_output_decl(pc, &$2, @2, &$3, @3, &$4, &$5, @$)); }
    ;

out_target
    : STRING                      { $$ = (OutTarget){.span = @1};
                                    CHECK_MEM(parse_push_stok(pc, &$$.strings, &$1, @1)); }
    | '[' str_list ']'            { $$ = (OutTarget){.strings = $2, .list = true, .span = @$}; }
    ;

str_list
    : STRING                      { $$ = (Vec){0}; CHECK_MEM(parse_push_stok(pc, &$$, &$1, @1)); }
    | str_list ',' STRING         { $$ = $1; CHECK_MEM(parse_push_stok(pc, &$$, &$3, @3)); }
    ;

out_opts
    : %empty                      { $$ = (Vec){0}; }
    | out_opts IDENT DURATION     { $$ = $1; CHECK_MEM(parse_push_option(pc, &$$, &$2, @2, &$3, @3)); }
    ;

/* ---- rules --------------------------------------------------------------- */

rule_decl
    : rule_head stmts '}'         { CHECK_MEM(parse_rule_end(pc, @$)); }
    ;

rule_head
    : RULE IDENT '{'              { parse_rule_begin(pc, &$2, @2); }
    ;

stmts
    : %empty
    | stmts stmt
    ;

stmt
    : FILTER expr ';'             { CHECK_MEM(parse_filter(pc, $2.e, @$)); }
    | KEY key_items ';'           { CHECK_MEM(parse_keys(pc, &$2, @$)); }
    | step_kind IDENT step_clauses ';'
                                  { CHECK_MEM(parse_step(pc, $1, &$2, @2, $3, @$)); }
    | WITHIN DURATION ';'         { CHECK_MEM(parse_rule_within(pc, &$2, @$)); }
    | SKIP IDENT ';'              { CHECK_MEM(parse_skip(pc, &$2, @2, NULL, @2, @$)); }
    | SKIP IDENT IDENT ';'        { CHECK_MEM(parse_skip(pc, &$2, @2, &$3, @3, @$)); }
    | SUPPRESS DURATION ';'       { CHECK_MEM(parse_suppress(pc, &$2, @$)); }
    | ON IDENT actions ';'        { CHECK_MEM(parse_on(pc, &$2, @2, &$3, @$)); }
    | error ';'
    | error                       /* resumes at the next statement keyword or '}' */
    ;

key_items
    : expr                        { $$ = (Vec){0}; CHECK_MEM(parse_push_key(pc, &$$, NULL, $1.e, @1)); }
    | IDENT '=' expr              { $$ = (Vec){0}; CHECK_MEM(parse_push_key(pc, &$$, &$1, $3.e, @$)); }
    | key_items ',' expr          { $$ = $1; CHECK_MEM(parse_push_key(pc, &$$, NULL, $3.e, @3)); }
    | key_items ',' IDENT '=' expr
        { $$ = $1; CHECK_MEM(parse_push_key(pc, &$$, &$3, $5.e, span_join(@3, @5))); }
    ;

step_kind
    : BEGIN_                      { $$ = STEP_BEGIN; }
    | NEXT                        { $$ = STEP_NEXT; }
    | FOLLOWED_BY                 { $$ = STEP_FOLLOWED_BY; }
    | FOLLOWED_BY_ANY             { $$ = STEP_FOLLOWED_BY_ANY; }
    | NOT_NEXT                    { $$ = STEP_NOT_NEXT; }
    | NOT_FOLLOWED_BY             { $$ = STEP_NOT_FOLLOWED_BY; }
    ;

/* Clauses may come in any order; each at most once (checked by the builders). */
step_clauses
    : %empty                      { CHECK_MEM($$ = parse_step_new(pc)); }
    | step_clauses WITHIN DURATION
                                  { $$ = $1; parse_step_within(pc, $$, &$3, span_join(@2, @3)); }
    | step_clauses WHERE expr     { $$ = $1; parse_step_where(pc, $$, $3.e, @2); }
    | step_clauses TIMES NUMBER   { $$ = $1; parse_times(pc, $$, &$3, NULL, false, span_join(@2, @3)); }
    | step_clauses TIMES NUMBER DOTDOT NUMBER
                                  { $$ = $1; parse_times(pc, $$, &$3, &$5, false, span_join(@2, @5)); }
    | step_clauses TIMES NUMBER '+'
                                  { $$ = $1; parse_times(pc, $$, &$3, NULL, true, span_join(@2, @4)); }
    | step_clauses ONE_OR_MORE    { $$ = $1; parse_one_or_more(pc, $$, @2); }
    | step_clauses OPTIONAL       { $$ = $1; parse_flag(pc, $$, OPTIONAL, @2); }
    | step_clauses GREEDY         { $$ = $1; parse_flag(pc, $$, GREEDY, @2); }
    | step_clauses CONSECUTIVE    { $$ = $1; parse_flag(pc, $$, CONSECUTIVE, @2); }
    | step_clauses ALLOW_COMBINATIONS
                                  { $$ = $1; parse_flag(pc, $$, ALLOW_COMBINATIONS, @2); }
    | step_clauses UNTIL expr     { $$ = $1; parse_until(pc, $$, $3.e, span_join(@2, @3)); }
    ;

actions
    : action                      { $$ = (Vec){0}; CHECK_MEM(parse_push_ptr(pc, &$$, $1)); }
    | actions action              { $$ = $1; CHECK_MEM(parse_push_ptr(pc, &$$, $2)); }
    ;

action
    : ALERT severity_opt STRING fields_opt to_opt
        { CHECK_MEM($$ = parse_action(pc, &$2, @2, &$3, @3, &$4, &$5, @$)); }
    ;

severity_opt
    : %empty                      { $$ = (Tok){0}; }
    | IDENT                       { $$ = $1; }
    ;

fields_opt
    : %empty                      { $$ = (Vec){0}; }
    | FIELDS '{' field_list '}'   { $$ = $3; }
    | FIELDS '{' error '}'        { $$ = (Vec){0}; }
    ;

field_list
    : %empty                      { $$ = (Vec){0}; }
    | field_list_ne
    | field_list_ne ','
    ;

field_list_ne
    : field                       { $$ = (Vec){0}; CHECK_MEM(parse_push_field(pc, &$$, &$1)); }
    | field_list_ne ',' field     { $$ = $1; CHECK_MEM(parse_push_field(pc, &$$, &$3)); }
    ;

field
    : IDENT ':' expr              { $$ = (AlertField){.name = $1.text, .name_span = @1, .value = $3.e}; }
    ;

to_opt
    : %empty                      { $$ = (Vec){0}; }
    | TO out_list                 { $$ = $2; }
    ;

out_list
    : IDENT                       { $$ = (Vec){0}; CHECK_MEM(parse_push_out_ref(pc, &$$, &$1, @1)); }
    | out_list ',' IDENT          { $$ = $1; CHECK_MEM(parse_push_out_ref(pc, &$$, &$3, @3)); }
    ;

/* ---- expressions --------------------------------------------------------- */

expr
    : expr OR expr                { CHECK_MEM(parse_binary(pc, &$$, BIN_OR, $1, $3, @2)); }
    | expr AND expr               { CHECK_MEM(parse_binary(pc, &$$, BIN_AND, $1, $3, @2)); }
    | NOT expr                    { CHECK_MEM(parse_unary(pc, &$$, UN_NOT, $2, @$)); }
    | expr EQ expr                { CHECK_MEM(parse_binary(pc, &$$, BIN_EQ, $1, $3, @2)); }
    | expr NE expr                { CHECK_MEM(parse_binary(pc, &$$, BIN_NE, $1, $3, @2)); }
    | expr '<' expr               { CHECK_MEM(parse_binary(pc, &$$, BIN_LT, $1, $3, @2)); }
    | expr LE expr                { CHECK_MEM(parse_binary(pc, &$$, BIN_LE, $1, $3, @2)); }
    | expr '>' expr               { CHECK_MEM(parse_binary(pc, &$$, BIN_GT, $1, $3, @2)); }
    | expr GE expr                { CHECK_MEM(parse_binary(pc, &$$, BIN_GE, $1, $3, @2)); }
    | expr IN expr                { CHECK_MEM(parse_binary(pc, &$$, BIN_IN, $1, $3, @2)); }
    | expr MATCH_OP expr          { CHECK_MEM(parse_binary(pc, &$$, BIN_MATCH, $1, $3, @2)); }
    | expr NMATCH_OP expr         { CHECK_MEM(parse_binary(pc, &$$, BIN_NMATCH, $1, $3, @2)); }
    | expr '+' expr               { CHECK_MEM(parse_binary(pc, &$$, BIN_ADD, $1, $3, @2)); }
    | expr '-' expr               { CHECK_MEM(parse_binary(pc, &$$, BIN_SUB, $1, $3, @2)); }
    | expr '*' expr               { CHECK_MEM(parse_binary(pc, &$$, BIN_MUL, $1, $3, @2)); }
    | expr '/' expr               { CHECK_MEM(parse_binary(pc, &$$, BIN_DIV, $1, $3, @2)); }
    | expr '%' expr               { CHECK_MEM(parse_binary(pc, &$$, BIN_MOD, $1, $3, @2)); }
    | '-' expr %prec UMINUS       { CHECK_MEM(parse_unary(pc, &$$, UN_NEG, $2, @$)); }
    | primary
    ;

primary
    : NUMBER                      { CHECK_MEM(parse_literal(pc, &$$, EX_NUMBER, &$1, @1)); }
    | STRING                      { CHECK_MEM(parse_literal(pc, &$$, EX_STRING, &$1, @1)); }
    | DURATION                    { CHECK_MEM(parse_literal(pc, &$$, EX_DURATION, &$1, @1)); }
    | TRUE                        { CHECK_MEM(parse_constant(pc, &$$, EX_BOOL, true, @1)); }
    | FALSE                       { CHECK_MEM(parse_constant(pc, &$$, EX_BOOL, false, @1)); }
    | NULL_                       { CHECK_MEM(parse_constant(pc, &$$, EX_NULL, false, @1)); }
    | path                        { CHECK_MEM(parse_path_expr(pc, &$$, &$1, @1)); }
    | call
    | list
    | '(' expr ')'                { $$ = $2; }
    ;

/* `rule` names the rule in output templates ("{rule}"); `key.NAME` reads a key. */
path
    : IDENT                       { $$ = (Vec){0}; CHECK_MEM(parse_push_seg(pc, &$$, $1.text, 0, @1)); }
    | RULE                        { $$ = (Vec){0}; CHECK_MEM(parse_push_seg(pc, &$$, "rule", 0, @1)); }
    | KEY '.' IDENT
        { $$ = (Vec){0}; CHECK_MEM(parse_push_seg(pc, &$$, "key", 0, @1));
          CHECK_MEM(parse_push_seg(pc, &$$, $3.text, 0, @3)); }
    | path '.' IDENT              { $$ = $1; CHECK_MEM(parse_push_seg(pc, &$$, $3.text, 0, @3)); }
    | path '[' NUMBER ']'         { $$ = $1; CHECK_MEM(parse_push_index(pc, &$$, &$3, span_join(@2, @4))); }
    ;

call
    : IDENT '(' args ')'          { CHECK_MEM(parse_call(pc, &$$, $1.text, @1, &$3, @$)); }
    | TIME '(' args ')'           { CHECK_MEM(parse_call(pc, &$$, "time", @1, &$3, @$)); }
    ;

list
    : '[' args ']'                { CHECK_MEM(parse_list(pc, &$$, &$2, @$)); }
    ;

args
    : %empty                      { $$ = (Vec){0}; }
    | args_ne
    ;

args_ne
    : expr                        { $$ = (Vec){0}; CHECK_MEM(parse_push_expr(pc, &$$, $1)); }
    | args_ne ',' expr            { $$ = $1; CHECK_MEM(parse_push_expr(pc, &$$, $3)); }
    ;

%%

static int yyreport_syntax_error(const yypcontext_t *ctx, ParseCtx *pc)
{
    yysymbol_kind_t expected[YYNTOKENS];
    int n = yypcontext_expected_tokens(ctx, expected, YYNTOKENS);
    if (n < 0)
        n = 0;
    const char *names[YYNTOKENS];
    for (int i = 0; i < n; i++)
        names[i] = yysymbol_name(expected[i]);
    yysymbol_kind_t got = yypcontext_token(ctx);
    parse_syntax_error(pc, *yypcontext_location(ctx), got == YYSYMBOL_YYUNDEF,
                       yysymbol_name(got), names, n);
    return 0;
}

/* tests/test_fmt.c — canonical printing: exact output for small inputs, minimal
 * parentheses, comments kept, idempotence and structural round trip over every
 * .cep in the tree and in the shared conformance cases, and rule fingerprints. */
#include <check.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/buf.h"
#include "dsl/fmt.h"
#include "dsl/parse.h"
#include "tests/checkmain.h"
#include "tests/testutil.h"

/* Parses `text`; asserts no syntax errors. */
static RuleSet *parse_ok(const char *name, const char *text)
{
    RuleSet *rs = ast_ruleset_new();
    ck_assert_ptr_nonnull(rs);
    Diags d;
    diags_init(&d);
    dsl_parse_text(rs, name, text, strlen(text), &d);
    if (d.errors > 0)
        diags_print(&d, stderr);
    ck_assert_msg(d.errors == 0, "%s: %zu syntax errors", name, d.errors);
    diags_free(&d);
    return rs;
}

static char *fmt_text(const char *text)
{
    RuleSet *rs = parse_ok("t.cep", text);
    char *out = dsl_fmt_file(rs, 0);
    ck_assert_ptr_nonnull(out);
    ast_ruleset_free(rs);
    return out;
}

/* ---- a structural dump (no spans, no comments) for round-trip comparison ------- */

static void dump_expr(Buf *b, const Expr *e)
{
    if (e == NULL) {
        buf_puts(b, "-");
        return;
    }
    char *s = ast_expr_dump(e);
    ck_assert_ptr_nonnull(s);
    buf_puts(b, s);
    free(s);
}

static void dump_template(Buf *b, const Template *t)
{
    buf_puts(b, "tmpl[");
    for (size_t i = 0; i < t->n_parts; i++) {
        if (t->parts[i].expr)
            dump_expr(b, t->parts[i].expr);
        else
            buf_json_string(b, t->parts[i].text, t->parts[i].len);
        buf_putc(b, ' ');
    }
    buf_puts(b, "]");
}

static void dump_step(Buf *b, const Step *s)
{
    const Quantifier *q = &s->quant;
    buf_printf(b, "  step %d %s within=%lld where=", (int)s->kind, s->name,
               (long long)s->within_ms);
    dump_expr(b, s->where);
    buf_printf(b, " q=%d,%d,%d,%d,%d,%d,%d until=", q->min, q->max, q->looping, q->optional,
               q->greedy, q->consecutive, q->allow_combinations);
    dump_expr(b, q->until);
    buf_putc(b, '\n');
}

static void dump_action(Buf *b, const Action *a)
{
    buf_printf(b, "    alert %d %d ", (int)a->severity, a->severity_written);
    dump_template(b, &a->message);
    for (size_t i = 0; i < a->n_fields; i++) {
        buf_printf(b, " %s=", a->fields[i].name);
        dump_expr(b, a->fields[i].value);
    }
    for (size_t i = 0; i < a->n_to; i++)
        buf_printf(b, " to:%s", a->to[i].name);
    buf_putc(b, '\n');
}

static void dump_rule(Buf *b, const Rule *r)
{
    buf_printf(b, "rule %s filter=", r->name);
    dump_expr(b, r->filter);
    buf_putc(b, '\n');
    for (size_t i = 0; i < r->n_keys; i++) {
        buf_printf(b, "  key %s %d ", r->keys[i].name, r->keys[i].named);
        dump_expr(b, r->keys[i].expr);
        buf_putc(b, '\n');
    }
    for (size_t i = 0; i < r->n_steps; i++)
        dump_step(b, &r->steps[i]);
    buf_printf(b, "  within=%lld suppress=%lld skip=%d,%d,%s\n", (long long)r->within_ms,
               (long long)r->suppress_ms, (int)r->skip.kind, r->skip.written,
               r->skip.step ? r->skip.step : "-");
    for (size_t i = 0; i < r->n_on; i++) {
        buf_printf(b, "  on %d\n", (int)r->on[i].trigger);
        for (size_t j = 0; j < r->on[i].n_actions; j++)
            dump_action(b, &r->on[i].actions[j]);
    }
    for (size_t i = 0; i < r->n_stmts; i++)
        buf_printf(b, "  stmt %d %zu\n", (int)r->stmts[i].kind, r->stmts[i].index);
}

static char *dump_ruleset(const RuleSet *rs)
{
    Buf b = BUF_INIT;
    for (size_t f = 0; f < rs->n_files; f++) {
        const RuleFile *file = &rs->files[f];
        for (size_t i = 0; i < file->n_decls; i++)
            buf_printf(&b, "decl %d %zu\n", (int)file->decls[i].kind, file->decls[i].index);
        if (file->time) {
            const TimeDecl *t = file->time;
            buf_printf(&b, "time %d %lld %d", (int)t->format, (long long)t->lateness_ms,
                       t->lateness_written);
            for (size_t i = 0; i < t->n_field; i++)
                buf_printf(&b, " %s/%ld", t->field[i].name ? t->field[i].name : "[]",
                           t->field[i].index);
            buf_putc(&b, '\n');
        }
    }
    for (size_t i = 0; i < rs->n_outputs; i++) {
        const OutputDecl *o = &rs->outputs[i];
        buf_printf(&b, "output %s %d rotate=%lld timeout=%lld ", o->name, (int)o->kind,
                   (long long)o->rotate_ms, (long long)o->timeout_ms);
        if (o->kind == OUT_EXEC)
            for (size_t j = 0; j < o->n_argv; j++)
                dump_template(&b, &o->argv[j]);
        else
            dump_template(&b, &o->path);
        buf_putc(&b, '\n');
    }
    for (size_t i = 0; i < rs->n_rules; i++)
        dump_rule(&b, &rs->rules[i]);
    ck_assert(!b.failed);
    return buf_steal(&b);
}

/* fmt(x) parses to the same tree as x, and fmt(fmt(x)) == fmt(x). */
static void assert_round_trip(const char *name, const char *text)
{
    RuleSet *a = parse_ok(name, text);
    char *once = dsl_fmt_file(a, 0);
    ck_assert_ptr_nonnull(once);
    RuleSet *b = parse_ok(name, once);
    char *twice = dsl_fmt_file(b, 0);
    ck_assert_ptr_nonnull(twice);
    ck_assert_msg(strcmp(once, twice) == 0, "%s: fmt is not idempotent:\n--- once\n%s--- twice\n%s",
                  name, once, twice);
    char *dump_a = dump_ruleset(a), *dump_b = dump_ruleset(b);
    ck_assert_msg(strcmp(dump_a, dump_b) == 0, "%s: tree changed:\n--- before\n%s--- after\n%s",
                  name, dump_a, dump_b);
    ck_assert_uint_eq(a->sources[0]->n_comments, b->sources[0]->n_comments);
    for (size_t i = 0; i < a->n_rules; i++)
        ck_assert_msg(dsl_rule_fingerprint(&a->rules[i]) == dsl_rule_fingerprint(&b->rules[i]),
                      "%s: fingerprint of %s changed", name, a->rules[i].name);
    free(dump_a);
    free(dump_b);
    free(once);
    free(twice);
    ast_ruleset_free(a);
    ast_ruleset_free(b);
}

/* ---- exact output ------------------------------------------------------------- */

typedef struct FmtCase {
    const char *input, *expected;
} FmtCase;

static const FmtCase CASES[] = {
    {"time ts   lateness 30s ;output a file \"x-{date}.jsonl\" rotate 1h;\n"
     "output b exec [\"/bin/p\",\"{rule}\"] timeout 5s;rule r{begin a;}",
     "time ts lateness 30s;\n\n"
     "output a file \"x-{date}.jsonl\" rotate 1h;\n"
     "output b exec [\"/bin/p\", \"{rule}\"] timeout 5s;\n\n"
     "rule r {\n  begin a;\n}\n"},
    {"rule r { filter type==\"tx\" ; key user_id,k2=lower(x); begin first where amount>1000;\n"
     "next second within 600s where amount>1 ; within 10m; skip to_first first; suppress 30m;\n"
     "on match alert high \"u {user_id}\" fields {total:sum(first.amount)+1, n: 2} to stdout, log; }",
     "rule r {\n"
     "  filter type == \"tx\";\n"
     "  key user_id, k2 = lower(x);\n"
     "  begin first where amount > 1000;\n"
     "  next second within 600s where amount > 1;\n"
     "  within 10m;\n"
     "  skip to_first first;\n"
     "  suppress 30m;\n"
     "  on match alert high \"u {user_id}\" fields { total: sum(first.amount) + 1, n: 2 } to stdout, log;\n"
     "}\n"},
    /* minimal parentheses by precedence and associativity */
    {"rule r { begin a where ((a + b) * c) == (d - (e - f)) and ((g or h) and not (i and j)); }",
     "rule r {\n  begin a where (a + b) * c == d - (e - f) and ((g or h) and not (i and j));\n}\n"},
    {"rule r { begin a where (((x - 1) - 2)) > -(-y) and (p or (q or s)) and -(a + b) < 3 % (2 * 1); }",
     "rule r {\n  begin a where x - 1 - 2 > -(-y) and (p or (q or s)) and -(a + b) < 3 % (2 * 1);\n}\n"},
    {"rule r { begin a where (x == 1) == true and x in [1,2, \"a\"] and not not y; }",
     "rule r {\n  begin a where (x == 1) == true and x in [1, 2, \"a\"] and not not y;\n}\n"},
    /* strings: raw stays raw, quoted strings get canonical escapes; odd field names in backticks */
    {"rule r { begin a where s =~ '\\d{3}''x' and t == \"a\\u0041\\n\\\"\" and `user-agent` != `to`.x[2]; }",
     "rule r {\n  begin a where s =~ '\\d{3}''x' and t == \"aA\\n\\\"\" and `user-agent` != `to`.x[2];\n}\n"},
    /* quantifiers in canonical order */
    {"rule r { begin a where x > 1 greedy one_or_more until x == 2; next b optional times 2..4 consecutive;"
     " followed_by_any c times 3+ allow_combinations; next d times 2; within 1m; }",
     "rule r {\n"
     "  begin a where x > 1 one_or_more greedy until x == 2;\n"
     "  next b times 2..4 optional consecutive;\n"
     "  followed_by_any c times 3+ allow_combinations;\n"
     "  next d times 2;\n"
     "  within 1m;\n"
     "}\n"},
    /* several actions, default severity not printed, key.NAME */
    {"rule r { key u; begin a; within 5s; on match alert \"m {key.u}\" alert critical 'raw {x}';"
     " on timeout alert low \"t\" fields { k: key.u }; }",
     "rule r {\n"
     "  key u;\n"
     "  begin a;\n"
     "  within 5s;\n"
     "  on match alert \"m {key.u}\" alert critical 'raw {x}';\n"
     "  on timeout alert low \"t\" fields { k: key.u };\n"
     "}\n"},
    /* long `on` clauses wrap under the first action; trailing comments align */
    {"rule r {\n  key u; # k\n  begin a;     # the first\n  within 1m;\n"
     "  on match alert high \"a fairly long message about user {u} and more text here\" fields "
     "{ total: sum(a.x), n: count(a) } to stdout, log alert \"second\";\n}\n",
     "rule r {\n  key u;   # k\n  begin a; # the first\n  within 1m;\n"
     "  on match alert high \"a fairly long message about user {u} and more text here\"\n"
     "           fields { total: sum(a.x), n: count(a) }\n"
     "           to stdout, log\n"
     "           alert \"second\";\n}\n"},
    /* comments: own-line before the next statement, trailing at the end of the line */
    {"# header\n\n# about r\nrule r { # opens\n  # the start\n  begin a;   // first\n"
     "  /* block */ next b;\n  # dangling\n} # closes\n# end\n",
     "# header\n\n# about r\nrule r { # opens\n  # the start\n  begin a; // first\n"
     "  /* block */\n  next b;\n  # dangling\n} # closes\n# end\n"},
    /* one blank line kept where the source had any, none after `{` or before `}` */
    {"rule r {\n\n  begin a;\n\n\n  # b\n  next b;\n  next c;\n\n}\n\n\n\nrule s { begin a; }\n",
     "rule r {\n  begin a;\n\n  # b\n  next b;\n  next c;\n}\n\nrule s {\n  begin a;\n}\n"},
    /* a long where breaks before each top-level and/or */
    {"rule r { followed_by_any approvals where type == \"approval\" and role == \"manager\" and not "
     "contains(approvals.manager, manager) or x times 2; }\n",
     "rule r {\n  followed_by_any approvals where type == \"approval\" and role == \"manager\" and "
     "not contains(approvals.manager, manager)\n"
     "                                  or x times 2;\n}\n"},
};

START_TEST(formats_exactly)
{
    char *out = fmt_text(CASES[_i].input);
    ck_assert_msg(strcmp(out, CASES[_i].expected) == 0, "case %d:\n--- expected\n%s--- got\n%s",
                  _i, CASES[_i].expected, out);
    assert_round_trip("case.cep", CASES[_i].input);
    free(out);
}
END_TEST

START_TEST(expr_text)
{
    RuleSet *rs = ast_ruleset_new();
    ck_assert_ptr_nonnull(rs);
    Diags d;
    diags_init(&d);
    Expr *e = dsl_parse_expr(rs, "(a+b)*count(x)>=5m or not(y)", &d);
    ck_assert_ptr_nonnull(e);
    char *s = dsl_fmt_expr(e);
    ck_assert_str_eq(s, "(a + b) * count(x) >= 5m or not y");
    free(s);
    diags_free(&d);
    ast_ruleset_free(rs);
}
END_TEST

/* ---- minimal parentheses: a property test over random expressions ------------- */

typedef struct Rng {
    uint64_t state;
} Rng;

static unsigned rng_next(Rng *r, unsigned bound)
{
    r->state = r->state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (unsigned)((r->state >> 33) % bound);
}

/* Writes a random expression, fully parenthesised so its tree is unambiguous. */
static void random_expr(Buf *b, Rng *r, int depth)
{
    static const char *const LEAVES[] = {
        "x", "a.y", "1", "2.5", "\"s\"", "'r'", "5m", "true", "null", "len(x)", "[1, 2]",
    };
    static const char *const OPS[] = {
        "or", "and", "==", "!=", "<", "<=", ">", ">=", "in", "=~", "!~", "+", "-", "*", "/", "%",
    };
    unsigned pick = depth == 0 ? 0 : rng_next(r, 4);
    if (pick == 0) {
        buf_puts(b, LEAVES[rng_next(r, sizeof LEAVES / sizeof LEAVES[0])]);
    } else if (pick == 1) {
        buf_puts(b, rng_next(r, 2) ? "not (" : "-(");
        random_expr(b, r, depth - 1);
        buf_putc(b, ')');
    } else {
        buf_putc(b, '(');
        random_expr(b, r, depth - 1);
        buf_printf(b, " %s ", OPS[rng_next(r, sizeof OPS / sizeof OPS[0])]);
        random_expr(b, r, depth - 1);
        buf_putc(b, ')');
    }
}

static char *dump_of(RuleSet *rs, const char *text)
{
    Diags d;
    diags_init(&d);
    Expr *e = dsl_parse_expr(rs, text, &d);
    ck_assert_msg(e != NULL && d.errors == 0, "cannot parse: %s", text);
    diags_free(&d);
    char *dump = ast_expr_dump(e);
    ck_assert_ptr_nonnull(dump);
    return dump;
}

START_TEST(minimal_parentheses_keep_the_tree)
{
    Rng r = {0x5eed + (uint64_t)_i};
    RuleSet *rs = ast_ruleset_new();
    ck_assert_ptr_nonnull(rs);
    for (int n = 0; n < 200; n++) {
        Buf text = BUF_INIT;
        random_expr(&text, &r, 5);
        ck_assert(!text.failed);
        Diags d;
        diags_init(&d);
        Expr *e = dsl_parse_expr(rs, text.data, &d);
        ck_assert_msg(e != NULL, "cannot parse: %s", text.data);
        diags_free(&d);
        char *canonical = dsl_fmt_expr(e);
        ck_assert_ptr_nonnull(canonical);
        char *before = ast_expr_dump(e);
        char *after = dump_of(rs, canonical);
        ck_assert_msg(strcmp(before, after) == 0, "%s\n  -> %s\n  %s\n  != %s", text.data,
                      canonical, before, after);
        Diags d2;
        diags_init(&d2);
        char *again = dsl_fmt_expr(dsl_parse_expr(rs, canonical, &d2));
        diags_free(&d2);
        ck_assert_str_eq(again, canonical);
        free(again);
        free(before);
        free(after);
        free(canonical);
        buf_free(&text);
    }
    ast_ruleset_free(rs);
}
END_TEST

/* ---- round trip over every rule file we can find ----------------------------------- */

/* Round-trips every *.cep below `dir`; returns how many. */
static int round_trip_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return 0;
    int count = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.' || strncmp(e->d_name, "build", 5) == 0)
            continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (stat(path, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            count += round_trip_tree(path);
            continue;
        }
        size_t n = strlen(e->d_name);
        /* Files under tests/data/check are broken on purpose. */
        if (n < 5 || strcmp(e->d_name + n - 4, ".cep") != 0 || strstr(path, "data/check"))
            continue;
        if (strstr(path, "fuzz/corpus"))
            continue;
        char *text = test_read_file(path, NULL);
        ck_assert_ptr_nonnull(text);
        /* Test inputs that are broken on purpose carry this marker in a comment. */
        bool broken = strstr(text, "vigil:broken-on-purpose") != NULL;
        if (!broken) {
            assert_round_trip(path, text);
            count++;
        }
        free(text);
    }
    closedir(d);
    return count;
}

START_TEST(round_trip_tree_files)
{
    const char *top = getenv("top_srcdir");
    if (top == NULL) {
        fprintf(stderr, "top_srcdir not set; skipping the tree's .cep files\n");
        return;
    }
    char path[1024];
    int total = 0;
    const char *dirs[] = {"examples", "quickstart", "tests"};
    for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", top, dirs[i]);
        total += round_trip_tree(path);
    }
    ck_assert_int_gt(total, 0);
}
END_TEST

START_TEST(round_trip_conformance)
{
    const char *shared = getenv("VIGIL_SHARED");
    char path[1024];
    if (shared)
        snprintf(path, sizeof path, "%s/conformance", shared);
    struct stat st;
    if (shared == NULL || stat(path, &st) != 0) {
        fprintf(stderr, "VIGIL_SHARED/conformance not found; skipping\n");
        return;
    }
    ck_assert_int_gt(round_trip_tree(path), 0);
}
END_TEST

/* ---- the `vigil fmt` command ------------------------------------------------------ */

static size_t count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    ck_assert_ptr_nonnull(d);
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        if (e->d_name[0] != '.')
            n++;
    closedir(d);
    return n;
}

START_TEST(cli_prints_checks_and_rewrites)
{
    const char *top = getenv("top_builddir");
    char rel[1024], cmd[4096], *out = NULL;
    snprintf(rel, sizeof rel, "%s/vigil", top ? top : ".");
    char *vigil = realpath(rel, NULL);
    ck_assert_msg(vigil != NULL, "cannot find %s", rel);
    char dir[] = "/tmp/vigil-test-fmt-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char path[1100];
    snprintf(path, sizeof path, "%s/r.cep", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("rule r{begin a where x>1;}", f);
    fclose(f);
    chmod(path, 0640);
    const char *canonical = "rule r {\n  begin a where x > 1;\n}\n";

    snprintf(cmd, sizeof cmd, "'%s' fmt '%s'", vigil, path);
    ck_assert_int_eq(test_run_command(cmd, &out), 0);
    ck_assert_str_eq(out, canonical);
    free(out);
    snprintf(cmd, sizeof cmd, "'%s' fmt --check '%s'", vigil, path);
    ck_assert_int_eq(test_run_command(cmd, &out), 1);
    ck_assert_ptr_nonnull(strstr(out, "r.cep"));
    free(out);
    snprintf(cmd, sizeof cmd, "'%s' fmt -w '%s'", vigil, path);
    ck_assert_int_eq(test_run_command(cmd, &out), 0);
    ck_assert_str_eq(out, "");
    free(out);
    char *text = test_read_file(path, NULL);
    ck_assert_str_eq(text, canonical);
    free(text);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert_int_eq(st.st_mode & 0777, 0640);
    ck_assert_uint_eq(count_entries(dir), 1);   /* no temporary file left behind */
    snprintf(cmd, sizeof cmd, "'%s' fmt --check '%s'", vigil, path);
    ck_assert_int_eq(test_run_command(cmd, &out), 0);
    free(out);

    f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs("rule r { begin a where ; }\n", f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "'%s' fmt -w '%s' 2>/dev/null", vigil, path);
    ck_assert_int_eq(test_run_command(cmd, &out), 1);
    free(out);
    text = test_read_file(path, NULL);
    ck_assert_str_eq(text, "rule r { begin a where ; }\n");   /* left untouched */
    free(text);
    snprintf(cmd, sizeof cmd, "'%s' fmt 2>/dev/null", vigil);
    ck_assert_int_eq(test_run_command(cmd, &out), 2);
    free(out);

    remove(path);
    rmdir(dir);
    free(vigil);
}
END_TEST

/* ---- fingerprints ---------------------------------------------------------------------- */

static uint64_t fingerprint_of(const char *text)
{
    RuleSet *rs = parse_ok("f.cep", text);
    ck_assert_uint_eq(rs->n_rules, 1);
    uint64_t h = dsl_rule_fingerprint(&rs->rules[0]);
    ck_assert(h != 0);
    ast_ruleset_free(rs);
    return h;
}

static const char *BASE_RULE =
    "rule r { filter t == 1; key u; begin a where x > 1; followed_by b where y == a.y;"
    " within 10m; skip no_skip; on match alert \"m\"; }";

START_TEST(fingerprint_ignores_actions_comments_layout)
{
    uint64_t base = fingerprint_of(BASE_RULE);
    ck_assert(base == fingerprint_of(
        "# a comment\nrule r {\n  filter (t == 1);\n  key u;\n  begin a where x > 1; # c\n"
        "  followed_by b where y == a.y;\n  within 600s;\n  skip no_skip;\n"
        "  suppress 5m;\n  on match alert critical \"other\" to stdout;\n"
        "  on timeout alert \"t\";\n}\n"));
}
END_TEST

static const char *const CHANGED[] = {
    "rule r { filter t == 2; key u; begin a where x > 1; followed_by b where y == a.y; within 10m; skip no_skip; }",
    "rule r { filter t == 1; key v; begin a where x > 1; followed_by b where y == a.y; within 10m; skip no_skip; }",
    "rule r { filter t == 1; key u; begin a where x >= 1; followed_by b where y == a.y; within 10m; skip no_skip; }",
    "rule r { filter t == 1; key u; begin a where x > 1; next b where y == a.y; within 10m; skip no_skip; }",
    "rule r { filter t == 1; key u; begin a where x > 1; followed_by b where y == a.y; within 11m; skip no_skip; }",
    "rule r { filter t == 1; key u; begin a where x > 1; followed_by b where y == a.y; within 10m; }",
    "rule r { filter t == 1; key u; begin a where x > 1 one_or_more; followed_by b where y == a.y; within 10m; skip no_skip; }",
    "rule r { key u; begin a where x > 1; followed_by b where y == a.y; within 10m; skip no_skip; }",
};

START_TEST(fingerprint_changes_with_pattern)
{
    ck_assert(fingerprint_of(BASE_RULE) != fingerprint_of(CHANGED[_i]));
}
END_TEST

static Suite *fmt_suite(void)
{
    Suite *s = suite_create("fmt");
    TCase *tc = tcase_create("fmt");
    tcase_add_loop_test(tc, formats_exactly, 0, (int)(sizeof CASES / sizeof CASES[0]));
    tcase_add_test(tc, expr_text);
    tcase_add_loop_test(tc, minimal_parentheses_keep_the_tree, 0, 5);
    tcase_add_test(tc, round_trip_tree_files);
    tcase_add_test(tc, round_trip_conformance);
    tcase_add_test(tc, cli_prints_checks_and_rewrites);
    suite_add_tcase(s, tc);
    TCase *fp = tcase_create("fingerprint");
    tcase_add_test(fp, fingerprint_ignores_actions_comments_layout);
    tcase_add_loop_test(fp, fingerprint_changes_with_pattern, 0,
                        (int)(sizeof CHANGED / sizeof CHANGED[0]));
    suite_add_tcase(s, fp);
    return s;
}

int main(void)
{
    return check_run_suite(fmt_suite());
}

/* tests/test_nfa_conformance.c — every case of $VIGIL_SHARED/conformance through the
 * matcher API: rules.cep compiled per rule, events fed to one NfaKey per rule, input
 * end flushed, results compared as a multiset with cases/NAME.expect.jsonl. */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/buf.h"
#include "tests/checkmain.h"
#include "tests/test_nfa_harness.h"
#include "tests/testutil.h"

#define MAX_CASES 512

typedef struct Case {
    char *dir;       /* conformance folder */
    char *name;      /* NAME of cases/NAME.events.jsonl */
} Case;

static Case cases[MAX_CASES];
static size_t n_cases;

/* ---- a tiny scanner for expect lines ------------------------------------------- */

typedef struct Scan {
    const char *p;
    bool bad;
} Scan;

static void ws(Scan *s)
{
    while (*s->p == ' ' || *s->p == '\t' || *s->p == '\r' || *s->p == '\n')
        s->p++;
}

static bool eat(Scan *s, char c)
{
    ws(s);
    if (*s->p != c) {
        s->bad = true;
        return false;
    }
    s->p++;
    return true;
}

/* A JSON string without escapes (all the expect files use). */
static void str(Scan *s, Buf *out)
{
    if (!eat(s, '"'))
        return;
    const char *end = strchr(s->p, '"');
    if (!end) {
        s->bad = true;
        return;
    }
    buf_append(out, s->p, (size_t)(end - s->p));
    s->p = end + 1;
}

static bool peek(Scan *s, char c)
{
    ws(s);
    return *s->p == c;
}

/* "events": {"a": [{"id": "a1"}, ...], ...} in the order written (pattern order). */
static void events(Scan *s, Buf *out)
{
    eat(s, '{');
    while (!s->bad && !peek(s, '}')) {
        buf_putc(out, ' ');
        str(s, out);
        eat(s, ':');
        eat(s, '[');
        buf_puts(out, ":[");
        bool first = true;
        while (!s->bad && !peek(s, ']')) {
            Buf key = BUF_INIT;
            eat(s, '{');
            str(s, &key);
            eat(s, ':');
            if (!first)
                buf_putc(out, ',');
            first = false;
            str(s, out);
            eat(s, '}');
            buf_free(&key);
            if (peek(s, ','))
                s->p++;
        }
        eat(s, ']');
        buf_putc(out, ']');
        if (peek(s, ','))
            s->p++;
    }
    eat(s, '}');
}

/* {"rule": R, "kind": K, "events": {...}} to "R|K STEP:[ids]...". */
static char *expect_line(const char *line)
{
    Scan s = {.p = line};
    Buf rule = BUF_INIT, kind = BUF_INIT, evs = BUF_INIT;
    eat(&s, '{');
    while (!s.bad && !peek(&s, '}')) {
        Buf name = BUF_INIT;
        str(&s, &name);
        eat(&s, ':');
        const char *n = name.data ? name.data : "";
        if (!strcmp(n, "rule"))
            str(&s, &rule);
        else if (!strcmp(n, "kind"))
            str(&s, &kind);
        else if (!strcmp(n, "events"))
            events(&s, &evs);
        else
            s.bad = true;
        buf_free(&name);
        if (peek(&s, ','))
            s.p++;
    }
    Buf out = BUF_INIT;
    buf_printf(&out, "%s|%s%s", rule.data ? rule.data : "", kind.data ? kind.data : "",
               evs.data ? evs.data : "");
    buf_free(&rule);
    buf_free(&kind);
    buf_free(&evs);
    if (s.bad) {
        buf_free(&out);
        return NULL;
    }
    return buf_steal(&out);
}

static char *expected_text(const char *path)
{
    char *text = test_read_file(path, NULL);
    if (!text)
        return NULL;
    Buf all = BUF_INIT;
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
        if (strspn(line, " \t\r") == strlen(line))
            continue;
        char *c = expect_line(line);
        ck_assert_msg(c != NULL, "%s: cannot read expect line: %s", path, line);
        buf_puts(&all, c);
        buf_putc(&all, '\n');
        free(c);
    }
    free(text);
    if (!all.data)
        buf_puts(&all, "");
    return buf_steal(&all);
}

/* ---- the test --------------------------------------------------------------------- */

START_TEST(test_case)
{
    const Case *c = &cases[_i];
    char path[4096];
    snprintf(path, sizeof path, "%s/rules.cep", c->dir);
    char *rules = test_read_file(path, NULL);
    ck_assert_msg(rules != NULL, "cannot read %s", path);
    char *err = NULL;
    NfaHarness *h = nh_new(rules, NH_WITH_RULE | NH_BY_ACTIONS, 0, &err);
    ck_assert_msg(h != NULL, "%s: %s", path, err ? err : "?");

    snprintf(path, sizeof path, "%s/cases/%s.events.jsonl", c->dir, c->name);
    char *evs = test_read_file(path, NULL);
    ck_assert_msg(evs != NULL, "cannot read %s", path);
    for (char *line = strtok(evs, "\n"); line; line = strtok(NULL, "\n")) {
        if (strspn(line, " \t\r") == strlen(line))
            continue;
        ck_assert_msg(nh_feed_line(h, line, &err), "%s: %s", path, err ? err : "?");
    }
    nh_advance(h, INT64_MAX);

    snprintf(path, sizeof path, "%s/cases/%s.expect.jsonl", c->dir, c->name);
    char *want = expected_text(path);
    ck_assert_msg(want != NULL, "cannot read %s", path);
    char *diff = nh_diff(h, want);
    ck_assert_msg(diff == NULL, "%s/%s:%s", c->dir, c->name, diff ? diff : "");
    ck_assert(nh_idle(h));
    ck_assert_uint_eq(nh_live(h), 0);
    nh_free(h);
    free(want);
    free(evs);
    free(rules);
}
END_TEST

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static size_t list_dir(const char *dir, char **names, size_t max)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max)
        if (e->d_name[0] != '.')
            names[n++] = strdup(e->d_name);
    closedir(d);
    qsort(names, n, sizeof *names, cmp_name);
    return n;
}

static void find_cases(const char *root)
{
    char *dirs[256];
    size_t nd = list_dir(root, dirs, 256);
    for (size_t i = 0; i < nd; i++) {
        char dir[4096], cdir[4200];
        if (snprintf(dir, sizeof dir, "%s/%s", root, dirs[i]) >= (int)sizeof dir)
            continue;
        snprintf(cdir, sizeof cdir, "%s/cases", dir);
        char *files[256];
        size_t nf = list_dir(cdir, files, 256);
        for (size_t j = 0; j < nf; j++) {
            const char *suffix = ".events.jsonl";
            size_t len = strlen(files[j]), sl = strlen(suffix);
            if (len > sl && !strcmp(files[j] + len - sl, suffix) && n_cases < MAX_CASES) {
                cases[n_cases].dir = strdup(dir);
                cases[n_cases].name = strndup(files[j], len - sl);
                n_cases++;
            }
            free(files[j]);
        }
        free(dirs[i]);
    }
}

int main(void)
{
    const char *shared = getenv("VIGIL_SHARED");
    if (!shared || !*shared) {
        printf("skipped: VIGIL_SHARED is not set\n");
        return 77;
    }
    char root[4096];
    snprintf(root, sizeof root, "%s/conformance", shared);
    find_cases(root);
    if (n_cases == 0) {
        printf("skipped: no conformance cases under %s\n", root);
        return 77;
    }
    printf("%zu conformance cases\n", n_cases);
    Suite *s = suite_create("nfa_conformance");
    TCase *tc = tcase_create("cases");
    tcase_add_loop_test(tc, test_case, 0, (int)n_cases);
    suite_add_tcase(s, tc);
    int status = check_run_suite(s);
    for (size_t i = 0; i < n_cases; i++) {
        free(cases[i].dir);
        free(cases[i].name);
    }
    return status;
}

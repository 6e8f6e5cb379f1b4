/* cli/cmd_test.c — `vigil test FILE|DIR...`: rule test cases (RUNTIME.md 6).
 *
 * For each DIR (or a FILE's folder) runs DIR/cases/NAME.events.jsonl through the
 * rules on event time, input end flushing, renders every alert with alert_render and
 * compares them with NAME.expect.jsonl as a multiset with subset semantics. The
 * pairing of expected and actual alerts is a bipartite matching, because one loose
 * expectation may fit several actual alerts and a greedy pairing could fail a
 * passing case.
 *
 * Running out of memory stops the run: a case cut short would pass or fail for the
 * wrong reason, so no verdict is given for it; `vigil test: out of memory` and exit 3
 * (RUNTIME.md 1) replace the closing count. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "alerts/alerts.h"
#include "base/buf.h"
#include "cli/commands.h"
#include "cli/json_tree.h"
#include "dsl/diag.h"
#include "rules/ruleset.h"
#include "runtime/engine.h"

/* How a step of a case ended: only a failure has been reported (it fails the case);
 * running out of memory stops the run. */
typedef enum { STEP_OK, STEP_FAILED, STEP_NO_MEMORY } CaseStep;

/* ---- lines of text ---------------------------------------------------------- */

typedef struct Lines {
    char **text;          /* heap strings, owned */
    size_t *line_no;      /* source line of each (expect files), else 0 */
    size_t n, cap;
    bool oom;
} Lines;

static void lines_push(Lines *l, const char *s, size_t len, size_t line_no)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 16;
        char **t = realloc(l->text, cap * sizeof *t);
        if (t)
            l->text = t;
        size_t *ln = t ? realloc(l->line_no, cap * sizeof *ln) : NULL;
        if (!t || !ln) {
            l->oom = true;
            return;
        }
        l->line_no = ln;
        l->cap = cap;
    }
    char *copy = malloc(len + 1);
    if (!copy) {
        l->oom = true;
        return;
    }
    memcpy(copy, s, len);
    copy[len] = '\0';
    l->text[l->n] = copy;
    l->line_no[l->n++] = line_no;
}

static void lines_free(Lines *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->text[i]);
    free(l->text);
    free(l->line_no);
}

/* Reads the non-blank lines of a file (newline and a trailing \r stripped); a file
 * that cannot be read is STEP_FAILED with errno set. */
static CaseStep read_lines(const char *path, Lines *out)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return STEP_FAILED;
    char *line = NULL;
    size_t cap = 0, no = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, f)) >= 0) {
        no++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            len--;
        size_t i = 0;
        while (i < (size_t)len && (line[i] == ' ' || line[i] == '\t'))
            i++;
        if (i < (size_t)len)
            lines_push(out, line, (size_t)len, no);
    }
    int read_errno = errno;
    free(line);
    CaseStep step = ferror(f) ? STEP_FAILED : out->oom || !feof(f) ? STEP_NO_MEMORY : STEP_OK;
    fclose(f);
    errno = read_errno;   /* for the message of a failed read */
    return step;
}

/* ---- running one case ------------------------------------------------------- */

typedef struct CaseRun {
    const CompiledRuleSet *rs;
    Lines actual;
    Buf render;
    size_t problems;          /* dead letters and late events, reported as they come */
    bool render_failed;
} CaseRun;

static void render_one(CaseRun *cr, const CompiledRule *rule, const CompiledAction *action,
                       const Value *key, size_t n_key, const NfaResult *r, EvalScratch *s)
{
    buf_clear(&cr->render);
    if (alert_render(rule, action, key, n_key, r, s, &cr->render) < 0 || cr->render.failed) {
        cr->render_failed = true;
        return;
    }
    lines_push(&cr->actual, cr->render.data, cr->render.len, 0);
}

static void collect_alert(void *user, size_t ri, const Value *key, size_t n_key,
                          const NfaResult *r, EvalScratch *scratch)
{
    CaseRun *cr = user;
    const CompiledRule *rule = &cr->rs->rules[ri];
    const CompiledAction *actions = r->kind == NFA_MATCH ? rule->on_match : rule->on_timeout;
    size_t n = r->kind == NFA_MATCH ? rule->n_on_match : rule->n_on_timeout;
    if (n == 0) {   /* a rule with no `on` clause: the default alert */
        render_one(cr, rule, NULL, key, n_key, r, scratch);
        return;
    }
    for (size_t i = 0; i < n; i++)
        render_one(cr, rule, &actions[i], key, n_key, r, scratch);
}

static void report_dead_letter(void *user, const char *origin, uint64_t line_no,
                               const char *reason, const char *text, size_t len)
{
    CaseRun *cr = user;
    (void)text;
    (void)len;
    cr->problems++;
    fprintf(stderr, "%s:%llu: warning: event line rejected: %s\n", origin,
            (unsigned long long)line_no, reason);
}

static void report_late(void *user, const Event *ev, int64_t watermark)
{
    CaseRun *cr = user;
    char t[32], wm[32];
    time_format_iso(ev->time_ms, t);
    time_format_iso(watermark, wm);
    cr->problems++;
    fprintf(stderr, "%s:%llu: warning: late event (time %s, watermark %s) not matched\n",
            ev->origin, (unsigned long long)ev->origin_line, t, wm);
}

/* Whether the matcher dropped a partial match because an allocation failed: it goes
 * on without it (counted in partials_dropped), which would change the case's alerts.
 * A drop by a cap counts in cap_hits too. */
static bool dropped_for_want_of_memory(const Engine *e, const CompiledRuleSet *rs)
{
    for (size_t i = 0; i < rs->n_rules; i++) {
        EngineRuleStats st;
        engine_rule_stats(e, i, &st);
        if (st.partials_dropped > 0 && st.cap_hits == 0)
            return true;
    }
    return false;
}

/* Runs the events file; the rendered alerts land in cr->actual. */
static CaseStep run_events(CaseRun *cr, const char *events_path)
{
    EngineSink sink = {collect_alert, report_dead_letter, report_late, cr};
    EngineOptions opts = {0};
    char *err = NULL;
    Engine *e = engine_new(cr->rs, &opts, &sink, &err);
    free(err);
    if (!e)
        return STEP_NO_MEMORY;   /* one worker, no thread to start: memory is all it needs */
    FILE *f = fopen(events_path, "r");
    if (!f) {
        fprintf(stderr, "vigil test: %s: %s\n", events_path, strerror(errno));
        engine_free(e);
        return STEP_FAILED;
    }
    char *line = NULL;
    size_t cap = 0;
    uint64_t no = 0;
    ssize_t len;
    int rc = 0;
    while (rc == 0 && (len = getline(&line, &cap, f)) >= 0) {
        no++;
        if (len > 0 && line[len - 1] == '\n')
            len--;
        if (len == 0 || (len == 1 && line[0] == '\r'))
            continue;   /* blank lines in a hand-written case are not events */
        rc = engine_line(e, line, (size_t)len, events_path, no, 0);
    }
    free(line);
    CaseStep step = STEP_OK;
    if (ferror(f)) {
        fprintf(stderr, "vigil test: %s: read error\n", events_path);
        step = STEP_FAILED;
    } else if (rc == 0 && !feof(f)) {
        rc = -1;   /* getline could not grow its buffer: the rest of the events is unread */
    }
    fclose(f);
    if (rc == 0 && step == STEP_OK)
        rc = engine_finish(e);
    if (rc == 0 && step == STEP_OK && dropped_for_want_of_memory(e, cr->rs))
        rc = -1;
    engine_free(e);
    if (rc < 0 || cr->render_failed || cr->actual.oom)
        return STEP_NO_MEMORY;   /* the engine fails only for want of memory */
    return step;
}

/* ---- comparing -------------------------------------------------------------- */

typedef struct Parsed {
    JsonTree *trees;          /* heap, owned; n of them */
    size_t n;
} Parsed;

static void parsed_free(Parsed *p)
{
    for (size_t i = 0; i < p->n; i++)
        json_tree_free(&p->trees[i]);
    free(p->trees);
}

/* Parses every line; a line that is not JSON is reported against `path`. */
static CaseStep parse_all(const Lines *l, const char *path, Parsed *out)
{
    out->trees = calloc(l->n ? l->n : 1, sizeof *out->trees);
    out->n = 0;
    if (!out->trees)
        return STEP_NO_MEMORY;
    for (size_t i = 0; i < l->n; i++) {
        const char *why;
        size_t at;
        if (!json_tree_parse(&out->trees[i], l->text[i], strlen(l->text[i]), &why, &at)) {
            json_tree_free(&out->trees[i]);
            if (why == JSON_TREE_NO_MEMORY)
                return STEP_NO_MEMORY;
            fprintf(stderr, "%s:%zu:%zu: error: %s\n", path, l->line_no[i], at + 1, why);
            return STEP_FAILED;
        }
        out->n = i + 1;
    }
    return STEP_OK;
}

/* An expected alert fits an actual one: subset equality, and `events` names exactly
 * the same steps. */
static bool alert_fits(const JsonNode *want, const JsonNode *got)
{
    if (!json_tree_subset(want, got))
        return false;
    const JsonNode *we = json_tree_get(want, "events"), *ge = json_tree_get(got, "events");
    if (!we || we->type != JT_OBJ)
        return true;
    return ge && ge->type == JT_OBJ && ge->n == we->n;   /* subset + same count = same names */
}

typedef struct Matching {
    const bool *fits;         /* n_want x n_got */
    size_t n_want, n_got;
    size_t *got_of_want;      /* SIZE_MAX when unmatched */
    size_t *want_of_got;
    bool *seen;
} Matching;

/* Kuhn's augmenting path from expected alert w. */
static bool augment(Matching *m, size_t w)
{
    for (size_t g = 0; g < m->n_got; g++) {
        if (!m->fits[w * m->n_got + g] || m->seen[g])
            continue;
        m->seen[g] = true;
        if (m->want_of_got[g] == SIZE_MAX || augment(m, m->want_of_got[g])) {
            m->want_of_got[g] = w;
            m->got_of_want[w] = g;
            return true;
        }
    }
    return false;
}

static int match_alerts(const Parsed *want, const Parsed *got, Matching *m)
{
    size_t nw = want->n, ng = got->n;
    bool *fits = calloc(nw * ng + 1, sizeof *fits);
    m->got_of_want = malloc((nw + 1) * sizeof *m->got_of_want);
    m->want_of_got = malloc((ng + 1) * sizeof *m->want_of_got);
    m->seen = calloc(ng + 1, sizeof *m->seen);
    m->fits = fits;
    m->n_want = nw;
    m->n_got = ng;
    if (!fits || !m->got_of_want || !m->want_of_got || !m->seen)
        return -1;
    for (size_t w = 0; w < nw; w++)
        for (size_t g = 0; g < ng; g++)
            fits[w * ng + g] = alert_fits(want->trees[w].root, got->trees[g].root);
    for (size_t w = 0; w < nw; w++)
        m->got_of_want[w] = SIZE_MAX;
    for (size_t g = 0; g < ng; g++)
        m->want_of_got[g] = SIZE_MAX;
    for (size_t w = 0; w < nw; w++) {
        memset(m->seen, 0, (ng + 1) * sizeof *m->seen);
        augment(m, w);
    }
    return 0;
}

static void matching_free(Matching *m)
{
    free((void *)m->fits);
    free(m->got_of_want);
    free(m->want_of_got);
    free(m->seen);
}

/* Prints the diff of a failing case; STEP_OK when the case passed. */
static CaseStep compare_case(const char *name, const char *expect_path, const Lines *want_l,
                             const Lines *got_l, const Parsed *want, const Parsed *got)
{
    Matching m = {0};
    if (match_alerts(want, got, &m) < 0) {
        matching_free(&m);
        return STEP_NO_MEMORY;
    }
    size_t missing = 0, unexpected = 0;
    for (size_t w = 0; w < m.n_want; w++)
        missing += m.got_of_want[w] == SIZE_MAX;
    for (size_t g = 0; g < m.n_got; g++)
        unexpected += m.want_of_got[g] == SIZE_MAX;
    bool pass = missing == 0 && unexpected == 0;
    if (pass) {
        printf("ok   %s (%zu alerts)\n", name, m.n_got);
    } else {
        printf("FAIL %s: %zu expected, %zu actual; %zu missing, %zu unexpected\n", name,
               m.n_want, m.n_got, missing, unexpected);
        for (size_t w = 0; w < m.n_want; w++)
            if (m.got_of_want[w] == SIZE_MAX)
                printf("  - missing  %s:%zu: %s\n", expect_path, want_l->line_no[w],
                       want_l->text[w]);
        for (size_t g = 0; g < m.n_got; g++)
            if (m.want_of_got[g] == SIZE_MAX)
                printf("  + unexpected %s\n", got_l->text[g]);
    }
    matching_free(&m);
    return pass ? STEP_OK : STEP_FAILED;
}

/* ---- folders and cases ------------------------------------------------------ */

typedef struct Tally {
    size_t passed, failed;
    bool out_of_memory;       /* the run stopped there */
} Tally;

static void tally_step(Tally *tally, CaseStep step)
{
    if (step == STEP_OK)
        tally->passed++;
    else if (step == STEP_FAILED)
        tally->failed++;
    else
        tally->out_of_memory = true;
}

static char *path_join(const char *dir, const char *name, const char *suffix)
{
    Buf b = BUF_INIT;
    buf_printf(&b, "%s/%s%s", dir, name, suffix);
    if (b.failed) {
        buf_free(&b);
        return NULL;
    }
    return buf_steal(&b);
}

static void run_case(const CompiledRuleSet *rs, const char *cases_dir, const char *name,
                     Tally *tally)
{
    char *events = path_join(cases_dir, name, ".events.jsonl");
    char *expect = path_join(cases_dir, name, ".expect.jsonl");
    char *label = path_join(cases_dir, name, "");
    CaseRun cr = {.rs = rs};
    Lines want = {0};
    Parsed pw = {0}, pg = {0};
    CaseStep step = !events || !expect || !label ? STEP_NO_MEMORY : read_lines(expect, &want);
    if (step == STEP_FAILED) {
        printf("FAIL %s: cannot read %s: %s\n", label, expect, strerror(errno));
    } else if (step == STEP_OK && (step = run_events(&cr, events)) == STEP_FAILED) {
        printf("FAIL %s: the events could not be run\n", label);
    } else if (step == STEP_OK && (step = parse_all(&want, expect, &pw)) == STEP_FAILED) {
        printf("FAIL %s: %s is not JSON lines\n", label, expect);
    } else if (step == STEP_OK &&
               (step = parse_all(&cr.actual, "(actual alert)", &pg)) == STEP_FAILED) {
        printf("FAIL %s: an actual alert is not valid JSON\n", label);
    } else if (step == STEP_OK) {
        step = compare_case(label, expect, &want, &cr.actual, &pw, &pg);
    }
    tally_step(tally, step);
    parsed_free(&pw);
    parsed_free(&pg);
    lines_free(&want);
    lines_free(&cr.actual);
    buf_free(&cr.render);
    free(events);
    free(expect);
    free(label);
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Case names (NAME of NAME.events.jsonl) in cases_dir, sorted; STEP_FAILED when
 * the folder cannot be read. */
static CaseStep list_cases(const char *cases_dir, Lines *names)
{
    DIR *d = opendir(cases_dir);
    if (!d)
        return STEP_FAILED;
    static const char suffix[] = ".events.jsonl";
    size_t sl = sizeof suffix - 1;
    struct dirent *de;
    while ((de = readdir(d))) {
        size_t len = strlen(de->d_name);
        if (len > sl && !strcmp(de->d_name + len - sl, suffix))
            lines_push(names, de->d_name, len - sl, 0);
    }
    closedir(d);
    if (names->oom)
        return STEP_NO_MEMORY;
    qsort(names->text, names->n, sizeof *names->text, cmp_names);
    return STEP_OK;
}

static char *folder_of(const char *arg)
{
    struct stat st;
    Buf b = BUF_INIT;
    if (stat(arg, &st) == 0 && S_ISDIR(st.st_mode)) {
        size_t len = strlen(arg);
        while (len > 1 && arg[len - 1] == '/')
            len--;
        buf_append(&b, arg, len);
    } else {
        const char *slash = strrchr(arg, '/');
        if (slash)
            buf_append(&b, arg, (size_t)(slash - arg) + (slash == arg));
        else
            buf_puts(&b, ".");
    }
    if (b.failed) {
        buf_free(&b);
        return NULL;
    }
    return buf_steal(&b);
}

static void test_folder(const char *arg, Tally *tally)
{
    Diags diags;
    diags_init(&diags);
    CompiledRuleSet *rs = ruleset_load(&arg, 1, &diags);
    diags_print(&diags, stderr);
    bool oom = diags.oom;
    diags_free(&diags);
    if (!rs || oom) {
        if (!oom)
            printf("FAIL %s: the rules do not compile\n", arg);
        tally_step(tally, oom ? STEP_NO_MEMORY : STEP_FAILED);
        ruleset_free(rs);
        return;
    }
    char *folder = folder_of(arg);
    char *cases_dir = folder ? path_join(folder, "cases", "") : NULL;
    Lines names = {0};
    CaseStep listed = cases_dir ? list_cases(cases_dir, &names) : STEP_NO_MEMORY;
    if (listed == STEP_NO_MEMORY) {
        tally_step(tally, listed);
    } else if (listed == STEP_FAILED || names.n == 0) {
        printf("FAIL %s: no test cases (%s/NAME.events.jsonl)\n", arg, cases_dir);
        tally_step(tally, STEP_FAILED);
    } else {
        for (size_t i = 0; i < names.n && !tally->out_of_memory; i++)
            run_case(rs, cases_dir, names.text[i], tally);
    }
    lines_free(&names);
    free(cases_dir);
    free(folder);
    ruleset_free(rs);
}

static void usage(FILE *out)
{
    fputs("usage: vigil test FILE|DIR...\n"
          "\n"
          "Runs rule test cases. For each DIR (or the folder of a FILE), loads the rules\n"
          "(every *.cep in DIR, or FILE) and, for every DIR/cases/NAME.events.jsonl, runs\n"
          "those events through the rules on event time; the end of the file moves time\n"
          "to +infinity, so pending `within` timeouts fire. The alerts are compared with\n"
          "DIR/cases/NAME.expect.jsonl, one JSON alert per line, as a multiset: order does\n"
          "not matter, the counts must be equal, and an expected alert only names the\n"
          "fields it checks (objects compare as subsets, arrays element-wise with equal\n"
          "lengths; `events` must name exactly the same steps).\n"
          "\n"
          "A rule set without a `time` declaration runs with every event at time 0.\n"
          "\n"
          "Prints a diff for each failing case (- missing expected alerts, + unexpected\n"
          "actual alerts) and a closing line `N passed, N failed`.\n"
          "\n"
          "Exit status: 0 all cases passed, 1 a case failed or the rules have errors,\n"
          "2 usage error, 3 out of memory (the run stops: no closing line).\n", out);
}

int cmd_test(int argc, char **argv)
{
    int first = 1;
    if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage(stdout);
        return EXIT_OK;
    }
    if (argc > 1 && !strcmp(argv[1], "--"))
        first = 2;
    else if (argc > 1 && argv[1][0] == '-' && argv[1][1]) {
        fprintf(stderr, "vigil test: unknown option '%s'\n", argv[1]);
        usage(stderr);
        return EXIT_USAGE;
    }
    if (first >= argc) {
        usage(stderr);
        return EXIT_USAGE;
    }
    Tally tally = {0, 0, false};
    for (int i = first; i < argc && !tally.out_of_memory; i++)
        test_folder(argv[i], &tally);
    if (tally.out_of_memory) {
        fflush(stdout);   /* the verdicts given so far go out ahead of the message */
        fprintf(stderr, "vigil test: out of memory\n");
        return EXIT_IO;
    }
    printf("%zu passed, %zu failed\n", tally.passed, tally.failed);
    fflush(stdout);
    return tally.failed ? EXIT_RULES : EXIT_OK;
}

/* tests/test_alerts_out.c — the alert outputs (alerts/outputs.h): file templates,
 * rotation, write errors, exec without a shell, timeouts, retries, and tcp/unix
 * clients that buffer while the listener is down. Loopback only; every wait bounded. */
#define _GNU_SOURCE   /* F_SETPIPE_SZ */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "alerts/outputs.h"
#include "base/arena.h"
#include "tests/checkmain.h"
#include "tests/testutil.h"

#define T_2026 INT64_C(1767225600000)   /* 2026-01-01T00:00:00Z */
#define HOUR_MS INT64_C(3600000)

/* ---- fixtures ------------------------------------------------------------- */

typedef struct LogCapture {
    pthread_mutex_t mu;
    Buf text;
    int lines;
} LogCapture;

static void capture_log(void *user, const char *msg)
{
    LogCapture *lc = user;
    pthread_mutex_lock(&lc->mu);
    buf_puts(&lc->text, msg);
    buf_putc(&lc->text, '\n');
    lc->lines++;
    pthread_mutex_unlock(&lc->mu);
}

static LogCapture logs;
static OutConfig cfg;
static Arena arena;
static char tmpdir[64];

static void setup(void)
{
    pthread_mutex_init(&logs.mu, NULL);
    logs.text = (Buf)BUF_INIT;
    logs.lines = 0;
    out_config_defaults(&cfg);
    cfg.log = capture_log;
    cfg.log_user = &logs;
    arena_init(&arena, 0);
    snprintf(tmpdir, sizeof tmpdir, "/tmp/vigil-alerts-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown(void)
{
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    ck_assert_int_eq(system(cmd), 0);
    arena_free(&arena);
    buf_free(&logs.text);
    pthread_mutex_destroy(&logs.mu);
}

static bool log_contains(const char *needle)
{
    pthread_mutex_lock(&logs.mu);
    bool found = logs.text.data && strstr(logs.text.data, needle);
    pthread_mutex_unlock(&logs.mu);
    return found;
}

/* A Template from "literal {name} {key.name}" text, as the parser would build it. */
static Template tpl(const char *s)
{
    Template t = {0};
    t.parts = arena_zalloc(&arena, (strlen(s) + 1) * sizeof *t.parts);
    t.source = s;
    while (*s) {
        TemplatePart *p = &t.parts[t.n_parts++];
        const char *open = strchr(s, '{');
        if (open != s) {
            size_t n = open ? (size_t)(open - s) : strlen(s);
            p->text = arena_strndup(&arena, s, n);
            p->len = n;
            s += n;
            continue;
        }
        const char *close = strchr(s, '}');
        ck_assert_ptr_nonnull(close);
        char *name = arena_strndup(&arena, s + 1, (size_t)(close - s - 1));
        Expr *e = arena_zalloc(&arena, sizeof *e);
        e->kind = EX_PATH;
        e->u.path.segs = arena_zalloc(&arena, 2 * sizeof(PathSeg));
        char *dot = strchr(name, '.');
        if (dot) {
            *dot = '\0';
            e->u.path.segs[1].name = dot + 1;
            e->u.path.n_segs = 2;
            e->u.path.kind = PATH_KEY;
        } else {
            e->u.path.n_segs = 1;
            e->u.path.kind = PATH_FIELD;
        }
        e->u.path.segs[0].name = name;
        p->expr = e;
        s = close + 1;
    }
    return t;
}

static OutputDecl file_decl(const char *name, const char *path, int64_t rotate_ms)
{
    OutputDecl d = {0};
    d.name = name;
    d.kind = OUT_FILE;
    d.path = tpl(path);
    d.rotate_ms = rotate_ms;
    d.timeout_ms = DURATION_NONE;
    return d;
}

static const char *key_names[] = {"user_id"};

static AlertMeta meta(const char *rule, const char *const *key_text, int64_t t)
{
    AlertMeta m = {.rule = rule, .kind = "match", .severity = "high",
                   .key_names = key_names, .key_texts = key_text, .n_key = 1, .time_ms = t};
    return m;
}

static char *path_in_tmp(const char *rel)
{
    static char p[PATH_MAX];
    snprintf(p, sizeof p, "%s/%s", tmpdir, rel);
    return p;
}

static void send_line(Output *o, const AlertMeta *m, const char *line)
{
    o->ops->write(o, m, line, strlen(line));
}

/* ---- file ----------------------------------------------------------------- */

START_TEST(file_templates_create_folders)
{
    char tmplt[PATH_MAX];
    snprintf(tmplt, sizeof tmplt, "%s/out/dt={date}/hour={hour}/{rule}.jsonl", tmpdir);
    OutputDecl d = file_decl("archive", tmplt, DURATION_NONE);
    char *err = NULL;
    Output *o = out_file_new(&d, &cfg, &err);
    ck_assert_msg(o != NULL, "%s", err);
    const char *u7[] = {"u7"};
    AlertMeta a = meta("burst", u7, T_2026 + 9 * 60000);
    AlertMeta b = meta("burst", u7, T_2026 + 2 * HOUR_MS + 1);
    AlertMeta c = meta("login", u7, T_2026 + 9 * 60000);
    send_line(o, &a, "{\"n\":1}");
    send_line(o, &b, "{\"n\":2}");
    send_line(o, &c, "{\"n\":3}");
    send_line(o, &a, "{\"n\":4}");
    ck_assert_int_eq(o->ops->flush(o, 1000), 0);

    char *f1 = test_read_file(path_in_tmp("out/dt=2026-01-01/hour=00/burst.jsonl"), NULL);
    char *f2 = test_read_file(path_in_tmp("out/dt=2026-01-01/hour=02/burst.jsonl"), NULL);
    char *f3 = test_read_file(path_in_tmp("out/dt=2026-01-01/hour=00/login.jsonl"), NULL);
    ck_assert_str_eq(f1, "{\"n\":1}\n{\"n\":4}\n");
    ck_assert_str_eq(f2, "{\"n\":2}\n");
    ck_assert_str_eq(f3, "{\"n\":3}\n");
    OutStats st;
    o->ops->stats(o, &st);
    ck_assert_uint_eq(st.sent, 4);
    ck_assert_uint_eq(st.failed, 0);
    ck_assert(st.healthy);
    free(f1);
    free(f2);
    free(f3);
    o->ops->destroy(o);
}
END_TEST

START_TEST(file_appends_across_reopen_and_lru)
{
    char tmplt[PATH_MAX];
    snprintf(tmplt, sizeof tmplt, "%s/{rule}.jsonl", tmpdir);
    OutputDecl d = file_decl("per_rule", tmplt, DURATION_NONE);
    cfg.file_cache = 2;   /* three rules: files are closed and reopened in append mode */
    char *err = NULL;
    Output *o = out_file_new(&d, &cfg, &err);
    ck_assert_ptr_nonnull(o);
    const char *k[] = {"u1"};
    const char *rules[] = {"a", "b", "c"};
    for (int round = 0; round < 3; round++)
        for (int r = 0; r < 3; r++) {
            AlertMeta m = meta(rules[r], k, T_2026);
            char line[32];
            snprintf(line, sizeof line, "{\"round\":%d}", round);
            send_line(o, &m, line);
        }
    o->ops->destroy(o);
    for (int r = 0; r < 3; r++) {
        char rel[16];
        snprintf(rel, sizeof rel, "%s.jsonl", rules[r]);
        char *text = test_read_file(path_in_tmp(rel), NULL);
        ck_assert_str_eq(text, "{\"round\":0}\n{\"round\":1}\n{\"round\":2}\n");
        free(text);
    }
}
END_TEST

START_TEST(file_rotates_by_alert_time)
{
    char tmplt[PATH_MAX];
    snprintf(tmplt, sizeof tmplt, "%s/alerts.jsonl", tmpdir);
    OutputDecl d = file_decl("rot", tmplt, HOUR_MS);
    char *err = NULL;
    Output *o = out_file_new(&d, &cfg, &err);
    ck_assert_ptr_nonnull(o);
    const char *k[] = {"u1"};
    AlertMeta m1 = meta("r", k, T_2026 + 5 * 60000);
    AlertMeta m2 = meta("r", k, T_2026 + 50 * 60000);
    AlertMeta m3 = meta("r", k, T_2026 + 65 * 60000);     /* 60 min after the first */
    AlertMeta m4 = meta("r", k, T_2026 + 70 * 60000);
    send_line(o, &m1, "{\"n\":1}");
    send_line(o, &m2, "{\"n\":2}");
    send_line(o, &m3, "{\"n\":3}");
    send_line(o, &m4, "{\"n\":4}");
    ck_assert_int_eq(o->ops->flush(o, 1000), 0);
    char *old = test_read_file(path_in_tmp("alerts.jsonl.20260101T000500Z"), NULL);
    char *cur = test_read_file(path_in_tmp("alerts.jsonl"), NULL);
    ck_assert_ptr_nonnull(old);
    ck_assert_str_eq(old, "{\"n\":1}\n{\"n\":2}\n");
    ck_assert_str_eq(cur, "{\"n\":3}\n{\"n\":4}\n");
    free(old);
    free(cur);
    o->ops->destroy(o);
}
END_TEST

START_TEST(dev_full_reported_once_and_others_still_written)
{
    OutputDecl full = file_decl("full", "/dev/full", DURATION_NONE);
    char tmplt[PATH_MAX];
    snprintf(tmplt, sizeof tmplt, "%s/ok.jsonl", tmpdir);
    OutputDecl fine = file_decl("fine", tmplt, DURATION_NONE);
    char *err = NULL;
    cfg.fd_buffer = 1;   /* one write per line: every alert meets the error */
    Output *bad = out_file_new(&full, &cfg, &err);
    Output *good = out_file_new(&fine, &cfg, &err);
    Output *std = out_stdout_new("/dev/full", &cfg, &err);
    ck_assert_ptr_nonnull(bad);
    ck_assert_ptr_nonnull(good);
    ck_assert_ptr_nonnull(std);
    const char *k[] = {"u1"};
    AlertMeta m = meta("r", k, T_2026);
    for (int i = 0; i < 5; i++) {
        ck_assert_int_eq(bad->ops->write(bad, &m, "{}", 2), -1);
        ck_assert_int_eq(good->ops->write(good, &m, "{}", 2), 0);
        ck_assert_int_eq(std->ops->write(std, &m, "{}", 2), -1);
    }
    ck_assert_int_eq(bad->ops->flush(bad, 100), -1);
    ck_assert_int_eq(good->ops->flush(good, 100), 0);
    ck_assert_int_eq(std->ops->flush(std, 100), -1);
    OutStats st;
    bad->ops->stats(bad, &st);
    ck_assert_uint_eq(st.failed, 5);
    ck_assert_uint_eq(st.sent, 0);
    ck_assert(!st.healthy);
    std->ops->stats(std, &st);
    ck_assert_uint_eq(st.failed, 5);
    ck_assert(log_contains("output full: cannot write to /dev/full: No space left on device"));
    ck_assert(log_contains("output stdout: cannot write to /dev/full"));
    ck_assert_int_eq(logs.lines, 2);   /* once per output, not once per alert */
    char *text = test_read_file(tmplt, NULL);
    ck_assert_str_eq(text, "{}\n{}\n{}\n{}\n{}\n");
    free(text);
    bad->ops->destroy(bad);
    good->ops->destroy(good);
    std->ops->destroy(std);
}
END_TEST

START_TEST(stdout_file_buffered_but_never_lost)
{
    const char *path = path_in_tmp("stdout.jsonl");
    char *err = NULL;
    Output *o = out_stdout_new(path, &cfg, &err);
    ck_assert_ptr_nonnull(o);
    const char *k[] = {"u1"};
    AlertMeta m = meta("r", k, T_2026);
    send_line(o, &m, "{\"a\":1}");
    send_line(o, &m, "{\"b\":2}");
    OutStats st;
    o->ops->stats(o, &st);
    ck_assert_uint_eq(st.buffered, 2);   /* batched: not written yet */
    o->ops->drain(o);
    char *text = test_read_file(path, NULL);
    ck_assert_str_eq(text, "{\"a\":1}\n{\"b\":2}\n");
    free(text);
    send_line(o, &m, "{\"c\":3}");
    o->ops->destroy(o);                  /* at exit the batch is written too */
    text = test_read_file(path, NULL);
    ck_assert_str_eq(text, "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n");
    free(text);
}
END_TEST

/* A folder removed or renamed away under an open output file (logrotate, an
 * operator's rm -r): the next batch goes to the path again, folders re-created,
 * not into the unreachable old file; while the path cannot be opened the batches
 * fail (counted, logged once) and the output recovers when it can. */
START_TEST(file_follows_its_path_when_moved_or_removed)
{
    char tmplt[PATH_MAX], sub[PATH_MAX], moved[PATH_MAX];
    snprintf(tmplt, sizeof tmplt, "%s/sub/{rule}.jsonl", tmpdir);
    snprintf(sub, sizeof sub, "%s/sub", tmpdir);
    snprintf(moved, sizeof moved, "%s/moved", tmpdir);
    OutputDecl d = file_decl("f", tmplt, DURATION_NONE);
    char *err = NULL;
    Output *o = out_file_new(&d, &cfg, &err);
    ck_assert_ptr_nonnull(o);
    const char *k[] = {"u1"};
    AlertMeta m = meta("r", k, T_2026);
    send_line(o, &m, "{\"n\":1}");
    o->ops->drain(o);
    ck_assert_int_eq(rename(sub, moved), 0);              /* renamed away */
    send_line(o, &m, "{\"n\":2}");
    o->ops->drain(o);
    ck_assert(log_contains("sub/r.jsonl was removed or replaced; writing to a new"));
    char *text = test_read_file(path_in_tmp("sub/r.jsonl"), NULL);
    ck_assert_str_eq(text, "{\"n\":2}\n");
    free(text);
    text = test_read_file(path_in_tmp("moved/r.jsonl"), NULL);
    ck_assert_str_eq(text, "{\"n\":1}\n");
    free(text);
    /* the folder replaced by a plain file: the path cannot be opened (even by root) */
    ck_assert_int_eq(unlink(path_in_tmp("sub/r.jsonl")), 0);
    ck_assert_int_eq(rmdir(sub), 0);
    FILE *blocker = fopen(sub, "w");
    ck_assert_ptr_nonnull(blocker);
    fclose(blocker);
    send_line(o, &m, "{\"n\":3}");
    o->ops->drain(o);
    OutStats st;
    o->ops->stats(o, &st);
    ck_assert_uint_eq(st.sent, 2);
    ck_assert_uint_eq(st.failed, 1);
    ck_assert(!st.healthy);
    ck_assert(log_contains("output f: cannot write to"));
    ck_assert_int_eq(unlink(sub), 0);
    send_line(o, &m, "{\"n\":4}");
    o->ops->drain(o);
    o->ops->stats(o, &st);
    ck_assert_uint_eq(st.sent, 3);
    ck_assert(st.healthy);
    ck_assert(log_contains("works again"));
    text = test_read_file(path_in_tmp("sub/r.jsonl"), NULL);
    ck_assert_str_eq(text, "{\"n\":4}\n");
    free(text);
    o->ops->destroy(o);
}
END_TEST

/* -o FILE removed while vigil runs: the next batch creates it again. */
START_TEST(stdout_file_follows_its_path)
{
    const char *path = path_in_tmp("alerts.jsonl");
    char *err = NULL;
    Output *o = out_stdout_new(path, &cfg, &err);
    ck_assert_ptr_nonnull(o);
    const char *k[] = {"u1"};
    AlertMeta m = meta("r", k, T_2026);
    send_line(o, &m, "{\"n\":1}");
    o->ops->drain(o);
    ck_assert_int_eq(unlink(path), 0);
    send_line(o, &m, "{\"n\":2}");
    o->ops->destroy(o);
    char *text = test_read_file(path, NULL);
    ck_assert_str_eq(text, "{\"n\":2}\n");
    free(text);
    ck_assert(log_contains("alerts.jsonl was removed or replaced"));
}
END_TEST

START_TEST(file_template_rejects_unknown_names)
{
    OutputDecl d = file_decl("bad", "/tmp/{severity}/{key.user_id}.jsonl", DURATION_NONE);
    char *err = NULL;
    ck_assert_ptr_null(out_file_new(&d, &cfg, &err));
    ck_assert_ptr_nonnull(err);
    ck_assert_msg(strstr(err, "output 'bad' path") && strstr(err, "{date}, {hour}, {rule}"),
                  "%s", err);
    free(err);
}
END_TEST

/* ---- exec ----------------------------------------------------------------- */

/* Absolute path of a helper script, kept in the test's arena. */
static const char *data_script(const char *name)
{
    const char *top = getenv("top_srcdir");
    Buf rel = BUF_INIT;
    buf_printf(&rel, "%s/tests/data/alerts/%s", top ? top : ".", name);
    char *abs = realpath(rel.data, NULL);
    ck_assert_msg(abs != NULL, "missing %s", rel.data);
    buf_free(&rel);
    char *kept = arena_strdup(&arena, abs);
    free(abs);
    return kept;
}

static OutputDecl exec_decl(const char *name, const char *const *argv, size_t n,
                            int64_t timeout_ms)
{
    OutputDecl d = {0};
    d.name = name;
    d.kind = OUT_EXEC;
    d.argv = arena_zalloc(&arena, n * sizeof *d.argv);
    for (size_t i = 0; i < n; i++)
        d.argv[i] = tpl(argv[i]);
    d.n_argv = n;
    d.rotate_ms = DURATION_NONE;
    d.timeout_ms = timeout_ms;
    return d;
}

/* Text of the single capture.*.out file in dir; "" if there is none yet (which is all
 * that cat's failing status would say). */
static char *read_capture(const char *dir)
{
    char cmd[PATH_MAX + 64];
    snprintf(cmd, sizeof cmd, "cat %s/capture.*.out 2>/dev/null", dir);
    char *text;
    test_run_command(cmd, &text);
    return text;
}

START_TEST(exec_hostile_key_stays_one_argument)
{
    char hostile[PATH_MAX + 64];
    snprintf(hostile, sizeof hostile, "$(touch %s/pwned); rm -rf %s/keep `id` ' \" *",
             tmpdir, tmpdir);
    mkdir(path_in_tmp("keep"), 0755);
    const char *argv[] = {data_script("capture.sh"), tmpdir, "{rule}", "{key.user_id}",
                          "{severity}:{kind}"};
    OutputDecl d = exec_decl("pager", argv, 5, DURATION_NONE);
    char *err = NULL;
    Output *o = out_exec_new(&d, &cfg, &err);
    ck_assert_msg(o != NULL, "%s", err);
    const char *k[] = {hostile};
    AlertMeta m = meta("burst", k, T_2026);
    const char *line = "{\"rule\":\"burst\",\"key\":{\"user_id\":\"$(touch x)\"}}";
    ck_assert_int_eq(o->ops->write(o, &m, line, strlen(line)), 0);
    ck_assert_int_eq(o->ops->flush(o, 5000), 0);
    OutStats st;
    o->ops->stats(o, &st);
    ck_assert_uint_eq(st.sent, 1);
    ck_assert_uint_eq(st.buffered, 0);
    o->ops->destroy(o);

    Buf want = BUF_INIT;
    buf_printf(&want, "argc=3\narg=burst\narg=%s\narg=high:match\n%s\n", hostile, line);
    char *got = read_capture(tmpdir);
    ck_assert_str_eq(got, want.data);
    struct stat sb;
    ck_assert_int_ne(stat(path_in_tmp("pwned"), &sb), 0);
    ck_assert_int_eq(stat(path_in_tmp("keep"), &sb), 0);
    free(got);
    buf_free(&want);
}
END_TEST

/* The router leaves out the key texts for outputs that never read them. */
START_TEST(only_outputs_with_key_templates_read_keys)
{
    const char *with_key[] = {data_script("capture.sh"), tmpdir, "{key.user_id}"};
    const char *without[] = {data_script("capture.sh"), tmpdir, "{rule}", "{severity}"};
    struct { const char *const *argv; size_t n; bool reads; } cases[] = {
        {with_key, 3, true},
        {without, 4, false},
    };
    char *err = NULL;
    for (size_t i = 0; i < 2; i++) {
        OutputDecl d = exec_decl("hook", cases[i].argv, cases[i].n, DURATION_NONE);
        Output *o = out_exec_new(&d, &cfg, &err);
        ck_assert_msg(o != NULL, "%s", err);
        ck_assert_int_eq(o->reads_keys, cases[i].reads);
        o->ops->destroy(o);
    }
    OutputDecl f = file_decl("archive", path_in_tmp("{rule}/{date}.jsonl"), DURATION_NONE);
    Output *o = out_file_new(&f, &cfg, &err);
    ck_assert_msg(o != NULL, "%s", err);
    ck_assert(!o->reads_keys);
    o->ops->destroy(o);
    o = out_stdout_new(path_in_tmp("out.jsonl"), &cfg, &err);
    ck_assert_msg(o != NULL, "%s", err);
    ck_assert(!o->reads_keys);
    o->ops->destroy(o);
}
END_TEST

START_TEST(exec_failure_retried_then_logged)
{
    const char *argv[] = {data_script("fail.sh"), tmpdir};
    OutputDecl d = exec_decl("hook", argv, 2, DURATION_NONE);
    cfg.exec_backoff_ms = 10;
    char *err = NULL;
    Output *o = out_exec_new(&d, &cfg, &err);
    ck_assert_ptr_nonnull(o);
    const char *k[] = {"u1"};
    AlertMeta m = meta("r", k, T_2026);
    send_line(o, &m, "{\"alert\":\"payload-123\"}");
    ck_assert_int_eq(o->ops->flush(o, 5000), -1);   /* it failed */
    OutStats st;
    o->ops->stats(o, &st);
    ck_assert_uint_eq(st.failed, 1);
    ck_assert_uint_eq(st.sent, 0);
    ck_assert(!st.healthy);
    char *attempts = test_read_file(path_in_tmp("attempts"), NULL);
    ck_assert_str_eq(attempts, "x\nx\nx\n");
    free(attempts);
    ck_assert(log_contains("failed 3 time(s)"));
    ck_assert(log_contains("exit status 1"));
    ck_assert(log_contains("{\"alert\":\"payload-123\"}"));
    o->ops->destroy(o);
}
END_TEST

START_TEST(exec_missing_program_is_a_failure)
{
    const char *argv[] = {"/nonexistent/vigil-no-such-program"};
    OutputDecl d = exec_decl("hook", argv, 1, DURATION_NONE);
    cfg.exec_backoff_ms = 1;
    char *err = NULL;
    Output *o = out_exec_new(&d, &cfg, &err);
    ck_assert_ptr_nonnull(o);
    const char *k[] = {"u1"};
    AlertMeta m = meta("r", k, T_2026);
    send_line(o, &m, "{}");
    ck_assert_int_eq(o->ops->flush(o, 5000), -1);
    OutStats st;
    o->ops->stats(o, &st);
    ck_assert_uint_eq(st.failed, 1);
    ck_assert(log_contains("vigil-no-such-program"));
    o->ops->destroy(o);
}
END_TEST

START_TEST(exec_hang_killed_at_timeout)
{
    const char *argv[] = {data_script("hang.sh")};
    OutputDecl d = exec_decl("slow", argv, 1, 200);
    cfg.exec_tries = 1;
    cfg.exec_kill_grace_ms = 200;   /* it ignores SIGTERM: SIGKILL must follow */
    char *err = NULL;
    Output *o = out_exec_new(&d, &cfg, &err);
    ck_assert_ptr_nonnull(o);
    const char *k[] = {"u1"};
    AlertMeta m = meta("r", k, T_2026);
    send_line(o, &m, "{}");
    ck_assert_int_eq(o->ops->flush(o, 5000), -1);
    OutStats st;
    o->ops->stats(o, &st);
    ck_assert_uint_eq(st.failed, 1);
    ck_assert_uint_eq(st.buffered, 0);
    ck_assert(log_contains("timed out after 200 ms"));
    o->ops->destroy(o);
}
END_TEST

START_TEST(exec_queue_bounded_drops_counted)
{
    const char *argv[] = {"/bin/sleep", "0.2"};
    OutputDecl d = exec_decl("slow", argv, 2, DURATION_NONE);
    cfg.exec_children = 1;
    cfg.exec_queue = 2;
    char *err = NULL;
    Output *o = out_exec_new(&d, &cfg, &err);
    ck_assert_ptr_nonnull(o);
    const char *k[] = {"u1"};
    AlertMeta m = meta("r", k, T_2026);
    int refused = 0;
    for (int i = 0; i < 6; i++)
        refused += o->ops->write(o, &m, "{}", 2) < 0;
    /* One child runs, two wait: at least three of the six are refused at once. */
    ck_assert_int_ge(refused, 3);
    ck_assert(log_contains("the queue of alerts waiting for a program is full"));
    o->ops->flush(o, 5000);
    OutStats st;
    o->ops->stats(o, &st);
    ck_assert_uint_eq(st.dropped, (uint64_t)refused);
    ck_assert_uint_eq(st.sent + st.dropped, 6);
    ck_assert_uint_eq(st.buffered, 0);
    o->ops->destroy(o);
}
END_TEST

START_TEST(exec_argv0_must_be_literal)
{
    const char *argv[] = {"/bin/{key.user_id}", "x"};
    OutputDecl d = exec_decl("bad", argv, 2, DURATION_NONE);
    char *err = NULL;
    ck_assert_ptr_null(out_exec_new(&d, &cfg, &err));
    ck_assert_msg(err && strstr(err, "argv[0]"), "%s", err ? err : "(null)");
    free(err);
}
END_TEST

/* ---- tcp / unix ----------------------------------------------------------- */

static int free_port(void)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof a;
    ck_assert_int_eq(bind(s, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(getsockname(s, (struct sockaddr *)&a, &sl), 0);
    close(s);
    return ntohs(a.sin_port);
}

static int listen_tcp(int port)
{
    int s = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    ck_assert_int_eq(bind(s, (struct sockaddr *)&a, sizeof a), 0);
    ck_assert_int_eq(listen(s, 8), 0);
    return s;
}

static OutputDecl net_decl(OutputKind kind, const char *target)
{
    OutputDecl d = {0};
    d.name = "siem";
    d.kind = kind;
    d.path = tpl(target);
    d.rotate_ms = DURATION_NONE;
    d.timeout_ms = DURATION_NONE;
    return d;
}

START_TEST(tcp_listener_up_late_gets_every_buffered_alert)
{
    int port = free_port();
    char target[64];
    snprintf(target, sizeof target, "127.0.0.1:%d", port);
    OutputDecl d = net_decl(OUT_TCP, target);
    char *err = NULL;
    Output *o = out_net_new(&d, &cfg, &err);
    ck_assert_msg(o != NULL, "%s", err);
    const char *k[] = {"u1"};
    AlertMeta m = meta("r", k, T_2026);
    Buf want = BUF_INIT;
    for (int i = 0; i < 50; i++) {
        char line[32];
        snprintf(line, sizeof line, "{\"n\":%d}", i);
        ck_assert_int_eq(o->ops->write(o, &m, line, strlen(line)), 0);
        buf_printf(&want, "%s\n", line);
    }
    struct timespec delay = {0, 300 * 1000000L};
    nanosleep(&delay, NULL);           /* connection attempts fail meanwhile */
    int listener = listen_tcp(port);
    ck_assert_int_eq(o->ops->flush(o, 5000), 0);
    char *got = test_accept_lines(listener, 50);
    ck_assert_str_eq(got, want.data);
    OutStats st;
    o->ops->stats(o, &st);
    ck_assert_uint_eq(st.sent, 50);
    ck_assert_uint_eq(st.dropped, 0);
    ck_assert_str_eq(st.state, "connected");
    ck_assert(log_contains("Connection refused"));   /* the outage was reported */
    free(got);
    buf_free(&want);
    close(listener);
    o->ops->destroy(o);
}
END_TEST

START_TEST(tcp_reconnects_after_listener_restart)
{
    int port = free_port();
    char target[64];
    snprintf(target, sizeof target, "127.0.0.1:%d", port);
    OutputDecl d = net_decl(OUT_TCP, target);
    int listener = listen_tcp(port);
    char *err = NULL;
    Output *o = out_net_new(&d, &cfg, &err);
    ck_assert_ptr_nonnull(o);
    const char *k[] = {"u1"};
    AlertMeta m = meta("r", k, T_2026);
    send_line(o, &m, "{\"n\":1}");
    ck_assert_int_eq(o->ops->flush(o, 5000), 0);
    char *got = test_accept_lines(listener, 1);    /* accepts, reads, closes the connection */
    ck_assert_str_eq(got, "{\"n\":1}\n");
    free(got);
    close(listener);                        /* and nobody listens for a while */
    struct timespec delay = {0, 100 * 1000000L};
    nanosleep(&delay, NULL);
    send_line(o, &m, "{\"n\":2}");
    send_line(o, &m, "{\"n\":3}");
    nanosleep(&delay, NULL);
    OutStats st;
    o->ops->stats(o, &st);
    ck_assert_uint_eq(st.buffered, 2);
    ck_assert(!st.healthy);
    listener = listen_tcp(port);
    ck_assert_int_eq(o->ops->flush(o, 5000), 0);
    got = test_accept_lines(listener, 2);
    ck_assert_str_eq(got, "{\"n\":2}\n{\"n\":3}\n");
    free(got);
    o->ops->stats(o, &st);
    ck_assert_uint_eq(st.sent, 3);
    ck_assert(st.healthy);
    close(listener);
    o->ops->destroy(o);
}
END_TEST

START_TEST(tcp_overflow_counted_and_logged)
{
    int port = free_port();   /* nobody listens */
    char target[64];
    snprintf(target, sizeof target, "127.0.0.1:%d", port);
    OutputDecl d = net_decl(OUT_TCP, target);
    cfg.net_buffer = 5;
    char *err = NULL;
    Output *o = out_net_new(&d, &cfg, &err);
    ck_assert_ptr_nonnull(o);
    const char *k[] = {"u1"};
    AlertMeta m = meta("r", k, T_2026);
    int lost = 0;
    for (int i = 0; i < 8; i++)
        lost += o->ops->write(o, &m, "{}", 2) < 0;
    ck_assert_int_eq(lost, 3);
    OutStats st;
    o->ops->stats(o, &st);
    ck_assert_uint_eq(st.dropped, 3);
    ck_assert_uint_eq(st.buffered, 5);
    ck_assert(log_contains("output siem: 1 alert(s) dropped: the buffer"));
    ck_assert_int_eq(o->ops->flush(o, 200), -1);   /* still down */
    o->ops->destroy(o);
    ck_assert(log_contains("not delivered before shutdown"));
}
END_TEST

START_TEST(unix_socket_streams_lines)
{
    const char *path = path_in_tmp("siem.sock");
    int s = test_listen_unix(path);
    OutputDecl d = net_decl(OUT_UNIX, path);
    char *err = NULL;
    Output *o = out_net_new(&d, &cfg, &err);
    ck_assert_ptr_nonnull(o);
    const char *k[] = {"u1"};
    AlertMeta m = meta("r", k, T_2026);
    send_line(o, &m, "{\"a\":1}");
    send_line(o, &m, "{\"b\":2}");
    ck_assert_int_eq(o->ops->flush(o, 5000), 0);
    char *got = test_accept_lines(s, 2);
    ck_assert_str_eq(got, "{\"a\":1}\n{\"b\":2}\n");
    free(got);
    close(s);
    o->ops->destroy(o);
}
END_TEST

START_TEST(tcp_bad_address_rejected)
{
    OutputDecl d = net_decl(OUT_TCP, "no-port-here");
    char *err = NULL;
    ck_assert_ptr_null(out_net_new(&d, &cfg, &err));
    ck_assert_msg(err && strstr(err, "HOST:PORT"), "%s", err ? err : "(null)");
    free(err);
}
END_TEST

/* getaddrinfo takes "99999" and connects to port 34463 (99999 mod 65536): the
 * output must refuse it, as `vigil check` does. */
START_TEST(tcp_port_out_of_range_rejected)
{
    const char *bad[] = {"127.0.0.1:99999", "127.0.0.1:0", "127.0.0.1:", "127.0.0.1:80x",
                         "[::1:80"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        OutputDecl d = net_decl(OUT_TCP, bad[i]);
        char *err = NULL;
        Output *o = out_net_new(&d, &cfg, &err);
        ck_assert_msg(o == NULL, "%s accepted", bad[i]);
        ck_assert_ptr_nonnull(err);
        ck_assert_ptr_nonnull(strstr(err, bad[i]));
        free(err);
    }
    OutputDecl d = net_decl(OUT_TCP, "[::1]:65535");
    char *err = NULL;
    Output *o = out_net_new(&d, &cfg, &err);
    ck_assert_msg(o != NULL, "%s", err ? err : "(null)");
    o->ops->destroy(o);
}
END_TEST

/* A reader that goes away part-way through a batch (`vigil run | head -1`): the
 * lines that reached the pipe whole before EPIPE are sent, the rest failed, not
 * the whole batch failed. */
#define PARTIAL_LINES 2000
#define PARTIAL_LINE_LEN 100        /* with its newline */
#define PARTIAL_READ 10050          /* 100 lines and half of the next */

typedef struct PipeReader {
    int fd;
    size_t got;
} PipeReader;

static void *read_some_then_close(void *arg)
{
    PipeReader *r = arg;
    char chunk[4096];
    while (r->got < PARTIAL_READ) {
        size_t want = PARTIAL_READ - r->got < sizeof chunk ? PARTIAL_READ - r->got : sizeof chunk;
        ssize_t n = read(r->fd, chunk, want);
        if (n <= 0)
            break;
        r->got += (size_t)n;
    }
    close(r->fd);
    return NULL;
}

START_TEST(stdout_reader_gone_part_way_counts_lines_that_went_out)
{
    signal(SIGPIPE, SIG_IGN);   /* as vigil does: EPIPE instead of death */
    const char *path = path_in_tmp("fifo");
    ck_assert_int_eq(mkfifo(path, 0600), 0);
    /* the read end first, so opening the write end does not block; a small pipe
     * keeps the bytes written but never read close to what the reader got */
    PipeReader r = {open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC), 0};
    ck_assert_int_ge(r.fd, 0);
    (void)fcntl(r.fd, F_SETPIPE_SZ, 4096);
    int pipe_size = fcntl(r.fd, F_GETPIPE_SZ);
    ck_assert_int_gt(pipe_size, 0);
    ck_assert_int_eq(fcntl(r.fd, F_SETFL, fcntl(r.fd, F_GETFL) & ~O_NONBLOCK), 0);
    cfg.fd_buffer = 1 << 20;             /* the whole run is one batch */
    cfg.fd_max_delay_ms = 3600 * 1000;
    char *err = NULL;
    Output *o = out_stdout_new(path, &cfg, &err);
    ck_assert_msg(o != NULL, "%s", err ? err : "?");
    pthread_t reader;
    ck_assert_int_eq(pthread_create(&reader, NULL, read_some_then_close, &r), 0);
    const char *k[] = {"u1"};
    AlertMeta m = meta("r", k, T_2026);
    char line[PARTIAL_LINE_LEN];
    memset(line, 'x', sizeof line - 1);
    line[0] = '{';
    line[PARTIAL_LINE_LEN - 2] = '}';
    for (int i = 0; i < PARTIAL_LINES; i++)
        ck_assert_int_eq(o->ops->write(o, &m, line, PARTIAL_LINE_LEN - 1), 0);
    ck_assert_int_eq(o->ops->flush(o, 100), -1);
    pthread_join(reader, NULL);
    ck_assert_uint_eq(r.got, PARTIAL_READ);
    OutStats st;
    o->ops->stats(o, &st);
    ck_assert_uint_eq(st.sent + st.failed, PARTIAL_LINES);
    ck_assert_uint_ge(st.sent, PARTIAL_READ / PARTIAL_LINE_LEN);   /* what the reader got */
    ck_assert_uint_le(st.sent, (PARTIAL_READ + (size_t)pipe_size) / PARTIAL_LINE_LEN);
    ck_assert(!st.healthy);
    ck_assert(log_contains("cannot write to"));
    ck_assert(log_contains("Broken pipe"));
    o->ops->destroy(o);
}
END_TEST

static Suite *alerts_out_suite(void)
{
    Suite *s = suite_create("alerts_out");
    TCase *tf = tcase_create("file");
    tcase_add_checked_fixture(tf, setup, teardown);
    tcase_add_test(tf, file_templates_create_folders);
    tcase_add_test(tf, file_appends_across_reopen_and_lru);
    tcase_add_test(tf, file_rotates_by_alert_time);
    tcase_add_test(tf, dev_full_reported_once_and_others_still_written);
    tcase_add_test(tf, file_template_rejects_unknown_names);
    tcase_add_test(tf, stdout_file_buffered_but_never_lost);
    tcase_add_test(tf, file_follows_its_path_when_moved_or_removed);
    tcase_add_test(tf, stdout_file_follows_its_path);
    tcase_add_test(tf, stdout_reader_gone_part_way_counts_lines_that_went_out);
    suite_add_tcase(s, tf);
    TCase *te = tcase_create("exec");
    tcase_add_checked_fixture(te, setup, teardown);
    tcase_set_timeout(te, 30);
    tcase_add_test(te, exec_hostile_key_stays_one_argument);
    tcase_add_test(te, exec_failure_retried_then_logged);
    tcase_add_test(te, exec_missing_program_is_a_failure);
    tcase_add_test(te, exec_hang_killed_at_timeout);
    tcase_add_test(te, exec_argv0_must_be_literal);
    tcase_add_test(te, exec_queue_bounded_drops_counted);
    tcase_add_test(te, only_outputs_with_key_templates_read_keys);
    suite_add_tcase(s, te);
    TCase *tn = tcase_create("net");
    tcase_add_checked_fixture(tn, setup, teardown);
    tcase_set_timeout(tn, 30);
    tcase_add_test(tn, tcp_listener_up_late_gets_every_buffered_alert);
    tcase_add_test(tn, tcp_overflow_counted_and_logged);
    tcase_add_test(tn, tcp_reconnects_after_listener_restart);
    tcase_add_test(tn, unix_socket_streams_lines);
    tcase_add_test(tn, tcp_bad_address_rejected);
    tcase_add_test(tn, tcp_port_out_of_range_rejected);
    suite_add_tcase(s, tn);
    return s;
}

int main(void)
{
    return check_run_suite(alerts_out_suite());
}

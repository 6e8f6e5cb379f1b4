/* tests/test_input.c — line-framed sources: files (CRLF, final unterminated line),
 * over-long lines, pause, Unix listeners with many concurrent clients, clients that
 * disconnect mid-line, and a TCP listener on a kernel-chosen loopback port. */
#include <check.h>
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/buf.h"
#include "runtime/input.h"
#include "tests/checkmain.h"

/* ---- collecting what the input delivers ------------------------------------ */

typedef struct Got {
    char *text;
    size_t len;
    char *origin;
    uint64_t line_no, offset;
    char *reason;           /* NULL for a delivered line */
} Got;

typedef struct Collector {
    Got *items;
    size_t n, cap;
    size_t lines, rejects;
} Collector;

static void collect(Collector *c, const InputLine *l, const char *reason)
{
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 64;
        c->items = realloc(c->items, c->cap * sizeof *c->items);
        ck_assert_ptr_nonnull(c->items);
    }
    Got *g = &c->items[c->n++];
    g->text = malloc(l->len + 1);
    ck_assert_ptr_nonnull(g->text);
    memcpy(g->text, l->text, l->len);
    g->text[l->len] = '\0';
    g->len = l->len;
    g->origin = strdup(l->origin);
    g->line_no = l->line_no;
    g->offset = l->offset;
    g->reason = reason ? strdup(reason) : NULL;
    if (reason)
        c->rejects++;
    else
        c->lines++;
}

static void on_line(void *user, const InputLine *l) { collect(user, l, NULL); }
static void on_reject(void *user, const InputLine *l, const char *reason)
{
    collect(user, l, reason);
}

static void collector_free(Collector *c)
{
    for (size_t i = 0; i < c->n; i++) {
        free(c->items[i].text);
        free(c->items[i].origin);
        free(c->items[i].reason);
    }
    free(c->items);
}

static void assert_got(const Got *g, const char *text, uint64_t line_no, uint64_t offset,
                       const char *reason)
{
    ck_assert_str_eq(g->text, text);
    ck_assert_uint_eq(g->line_no, line_no);
    ck_assert_uint_eq(g->offset, offset);
    if (reason == NULL)
        ck_assert_ptr_null(g->reason);
    else
        ck_assert_str_eq(g->reason, reason);
}

/* Polls until the set reports it is finished; bounded so a bug cannot hang the test. */
static void drain(InputSet *in, Collector *c)
{
    InputHandler h = { on_line, on_reject, c };
    int rc = 1;
    for (int i = 0; i < 10000 && rc == 1; i++)
        rc = input_poll(in, 100, &h);
    ck_assert_int_eq(rc, 0);
}

static char tmpdir[64];

static void make_tmpdir(void)
{
    strcpy(tmpdir, "/tmp/vigil-input-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void remove_tmpdir(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    ck_assert_int_eq(system(cmd), 0);
}

static char *write_file(const char *name, const char *data, size_t len)
{
    static char path[256];
    snprintf(path, sizeof path, "%s/%s", tmpdir, name);
    FILE *fp = fopen(path, "wb");
    ck_assert_ptr_nonnull(fp);
    ck_assert_uint_eq(fwrite(data, 1, len, fp), len);
    fclose(fp);
    return path;
}

static InputSet *set_with(size_t max_line, const char *spec)
{
    InputSet *in = input_set_new(max_line);
    ck_assert_ptr_nonnull(in);
    char *err = NULL;
    int rc = input_add(in, spec, &err);
    ck_assert_msg(rc == 0, "input_add %s: %s", spec, err ? err : "?");
    return in;
}

static void write_all(int fd, const char *p, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        ck_assert_int_gt(n, 0);
        p += n;
        len -= (size_t)n;
    }
}

/* ---- files ------------------------------------------------------------------ */

START_TEST(file_crlf_and_final_line)
{
    make_tmpdir();
    static const char data[] = "{\"a\":1}\r\n\r\nline3\r\n\nlast";
    const char *path = write_file("crlf.jsonl", data, sizeof data - 1);
    InputSet *in = set_with(1024, path);
    Collector c = { 0 };
    drain(in, &c);
    ck_assert_uint_eq(c.n, 5);
    assert_got(&c.items[0], "{\"a\":1}\r", 1, 0, NULL);
    assert_got(&c.items[1], "\r", 2, 9, NULL);
    assert_got(&c.items[2], "line3\r", 3, 11, NULL);
    assert_got(&c.items[3], "", 4, 18, NULL);
    assert_got(&c.items[4], "last", 5, 19, NULL);
    ck_assert_str_eq(c.items[0].origin, path);
    uint64_t done, total;
    input_progress(in, &done, &total);
    ck_assert_uint_eq(total, sizeof data - 1);
    ck_assert_uint_eq(done, sizeof data - 1);
    input_set_free(in);
    collector_free(&c);
    remove_tmpdir();
}
END_TEST

START_TEST(file_overlong_lines)
{
    make_tmpdir();
    /* max_line 10: a line of exactly 10 passes; 11+ is rejected, the rest skipped. */
    static const char data[] = "short\n0123456789\n0123456789X\nxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n"
                               "ok\nyyyyyyyyyyyyyyyyyyyyyyyy";
    const char *path = write_file("long.jsonl", data, sizeof data - 1);
    InputSet *in = set_with(10, path);
    Collector c = { 0 };
    drain(in, &c);
    ck_assert_uint_eq(c.n, 6);
    assert_got(&c.items[0], "short", 1, 0, NULL);
    assert_got(&c.items[1], "0123456789", 2, 6, NULL);
    assert_got(&c.items[2], "0123456789X", 3, 17, "line longer than 10 bytes");
    assert_got(&c.items[3], "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", 4, 29, "line longer than 10 bytes");
    assert_got(&c.items[4], "ok", 5, 60, NULL);
    assert_got(&c.items[5], "yyyyyyyyyyyyyyyyyyyyyyyy", 6, 63, "line longer than 10 bytes");
    input_set_free(in);
    collector_free(&c);
    remove_tmpdir();
}
END_TEST

START_TEST(overlong_line_across_many_reads)
{
    make_tmpdir();
    /* 5 MB line: far more than one read and than the file buffer; only an excerpt
     * reaches the reject callback and the next line is intact. */
    size_t big = 5u << 20;
    char *data = malloc(big + 32);
    ck_assert_ptr_nonnull(data);
    memset(data, 'z', big);
    strcpy(data + big, "\n{\"after\":1}\n");
    const char *path = write_file("big.jsonl", data, big + 13);
    free(data);
    InputSet *in = set_with(1000, path);
    Collector c = { 0 };
    drain(in, &c);
    ck_assert_uint_eq(c.n, 2);
    ck_assert_str_eq(c.items[0].reason, "line longer than 1000 bytes");
    ck_assert_uint_eq(c.items[0].len, 1024);
    assert_got(&c.items[1], "{\"after\":1}", 2, big + 1, NULL);
    input_set_free(in);
    collector_free(&c);
    remove_tmpdir();
}
END_TEST

START_TEST(pause_stops_reading)
{
    make_tmpdir();
    const char *path = write_file("p.jsonl", "a\nb\n", 4);
    InputSet *in = set_with(100, path);
    Collector c = { 0 };
    InputHandler h = { on_line, on_reject, &c };
    input_pause(in, true);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(input_poll(in, 0, &h), 1);
    ck_assert_uint_eq(c.n, 0);
    input_pause(in, false);
    drain(in, &c);
    ck_assert_uint_eq(c.lines, 2);
    input_set_free(in);
    collector_free(&c);
    remove_tmpdir();
}
END_TEST

/* ---- lent buffers ------------------------------------------------------------
 * A handler that keeps lines where they lie (as the engine does with workers): each
 * line's buffer reference is held for a while, the text checked intact when it is let
 * go, while the source reads on; some lines pause the set (held lines) and one line
 * is longer than a read buffer (its buffer grows). */

#define KEPT_WINDOW 5000

typedef struct Keeper {
    InputSet *in;
    InputText *ref[KEPT_WINDOW];
    const char *at[KEPT_WINDOW];
    char *copy[KEPT_WINDOW];
    size_t len[KEPT_WINDOW];
    size_t n;                  /* lines seen; the last KEPT_WINDOW are held */
    size_t checked, paused;
} Keeper;

static void keeper_let_go(Keeper *k, size_t slot)
{
    if (k->ref[slot] == NULL)
        return;
    ck_assert_msg(memcmp(k->at[slot], k->copy[slot], k->len[slot]) == 0,
                  "a kept line changed while held");
    input_text_release(k->ref[slot]);
    free(k->copy[slot]);
    k->ref[slot] = NULL;
    k->checked++;
}

static void keep_line(void *user, const InputLine *l)
{
    Keeper *k = user;
    ck_assert_ptr_nonnull(l->keep);
    size_t slot = k->n++ % KEPT_WINDOW;
    keeper_let_go(k, slot);
    input_text_retain(l->keep);
    k->ref[slot] = l->keep;
    k->at[slot] = l->text;
    k->len[slot] = l->len;
    k->copy[slot] = malloc(l->len + 1);
    ck_assert_ptr_nonnull(k->copy[slot]);
    memcpy(k->copy[slot], l->text, l->len);
    if (k->n % 997 == 0) {   /* backpressure: the rest of this read is held */
        input_pause(k->in, true);
        k->paused++;
    }
}

START_TEST(kept_lines_stay_intact_while_the_source_reads_on)
{
    make_tmpdir();
    size_t n = 60000, big = 300000;
    char *data = malloc(n * 40 + big + 2);
    ck_assert_ptr_nonnull(data);
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        if (i == n / 2) {   /* longer than a read buffer: it grows while nothing is held */
            memset(data + len, 'x', big);
            len += big;
            data[len++] = '\n';
        }
        len += (size_t)sprintf(data + len, "{\"n\":%zu,\"pad\":\"%.*s\"}\n", i, (int)(i % 13),
                               "abcdefghijklm");
    }
    const char *path = write_file("kept.jsonl", data, len);
    free(data);
    Keeper *k = calloc(1, sizeof *k);
    ck_assert_ptr_nonnull(k);
    k->in = set_with(1u << 20, path);
    InputHandler h = { keep_line, NULL, k };
    int rc = 1;
    for (int i = 0; i < 100000 && rc == 1; i++) {
        input_pause(k->in, false);
        rc = input_poll(k->in, 100, &h);
    }
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_eq(k->n, n + 1);
    ck_assert_uint_gt(k->paused, 50);
    input_set_free(k->in);   /* the kept buffers outlive the set */
    for (size_t i = 0; i < KEPT_WINDOW; i++)
        keeper_let_go(k, i);
    ck_assert_uint_eq(k->checked, n + 1);
    free(k);
    remove_tmpdir();
}
END_TEST

/* ---- runs of lines (input_poll_runs) -------------------------------------------
 * The same lines, positions and refusals, in the same order, as line by line, when
 * the handler takes runs, and when it takes only part of a run and pauses. */

typedef struct RunTaker {
    Collector c;
    InputSet *in;
    size_t calls, partial;
} RunTaker;

static size_t take_run(void *user, const InputLines *l)
{
    RunTaker *t = user;
    size_t want = l->n;
    if (++t->calls % 3 == 0 && l->n > 1) {   /* take part of it, then pause */
        want = t->calls % (l->n - 1) + 1;
        t->partial++;
    }
    for (size_t i = 0; i < want; i++) {
        size_t len;
        const char *text = input_lines_at(l, i, &len);
        ck_assert_ptr_nonnull(l->keep);
        ck_assert_int_eq(text[len], '\n');
        InputLine line = { text, len, l->origin, l->line_no + i,
                           l->offset + (uint64_t)(text - l->text), l->keep };
        collect(&t->c, &line, NULL);
    }
    if (want < l->n)
        input_pause(t->in, true);
    return want;
}

static void run_taker_line(void *user, const InputLine *l)
{
    collect(&((RunTaker *)user)->c, l, NULL);
}

static void run_taker_reject(void *user, const InputLine *l, const char *reason)
{
    collect(&((RunTaker *)user)->c, l, reason);
}

START_TEST(runs_of_lines_come_as_line_by_line)
{
    make_tmpdir();
    Buf data = BUF_INIT;
    for (size_t i = 0; i < 5000; i++) {
        if (i % 211 == 7)
            buf_printf(&data, "%0150zu\n", i);   /* over-long: refused between runs */
        else
            buf_printf(&data, "{\"n\":%zu}%s\n", i, i % 5 ? "" : "\r");
    }
    buf_puts(&data, "{\"last\":true}");   /* unterminated: a line at the end */
    const char *path = write_file("runs.jsonl", data.data, data.len);
    Collector one = { 0 };
    InputSet *in = set_with(100, path);
    drain(in, &one);
    input_set_free(in);
    RunTaker t = { .in = set_with(100, path) };
    InputHandler h = { run_taker_line, run_taker_reject, &t };   /* the last line */
    int rc = 1;
    for (int i = 0; i < 100000 && rc == 1; i++) {
        input_pause(t.in, false);
        rc = input_poll_runs(t.in, 100, &h, take_run);
    }
    ck_assert_int_eq(rc, 0);
    ck_assert_uint_gt(t.partial, 5);
    ck_assert_uint_eq(t.c.n, one.n);
    ck_assert_uint_gt(one.rejects, 20);
    for (size_t i = 0; i < one.n; i++) {
        const Got *a = &one.items[i], *b = &t.c.items[i];
        ck_assert_str_eq(b->text, a->text);
        ck_assert_uint_eq(b->line_no, a->line_no);
        ck_assert_uint_eq(b->offset, a->offset);
        ck_assert(!a->reason == !b->reason);
    }
    input_set_free(t.in);
    collector_free(&one);
    collector_free(&t.c);
    buf_free(&data);
    remove_tmpdir();
}
END_TEST

START_TEST(stdin_pipe)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    write_all(fds[1], "{\"a\":1}\nlast", 13);
    close(fds[1]);
    ck_assert_int_eq(dup2(fds[0], STDIN_FILENO), STDIN_FILENO);
    close(fds[0]);
    InputSet *in = set_with(100, "-");
    Collector c = { 0 };
    drain(in, &c);
    ck_assert_uint_eq(c.n, 2);
    assert_got(&c.items[0], "{\"a\":1}", 1, 0, NULL);
    assert_got(&c.items[1], "last", 2, 8, NULL);
    ck_assert_str_eq(c.items[0].origin, "-");
    uint64_t done, total;
    input_progress(in, &done, &total);
    ck_assert_uint_eq(total, 0);                      /* a pipe has no known size */
    input_set_free(in);
    collector_free(&c);
}
END_TEST

/* tcp:// inputs take an output's address form (base/hostport.h) with port 0 too (any
 * free one), refused in their own words: a port beyond 65535 is not wrapped by
 * getaddrinfo, a host too long for the listener is the form's error. */
START_TEST(tcp_addresses_are_checked_before_listening)
{
    static const char *const form = "expected tcp://HOST:PORT",
                             *const range = "the port must be a number from 0 to 65535";
    char long_host[300 + sizeof "tcp://:99999"];
    snprintf(long_host, sizeof long_host, "tcp://%0300d:99999", 0);
    const struct {
        const char *spec, *why;
    } bad[] = {
        {"tcp://127.0.0.1", form}, {"tcp://:80", form},       {"tcp://127.0.0.1:", form},
        {"tcp://[::1", form},      {"tcp://[::1]80", form},   {"tcp://[]:80", form},
        {"tcp://", form},          {long_host, form},         {"tcp://127.0.0.1:65536", range},
        {"tcp://h:99999", range},  {"tcp://127.0.0.1:-1", range}, {"tcp://127.0.0.1:8x", range},
    };
    InputSet *in = input_set_new(100);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *err = NULL, want[512];
        ck_assert_int_eq(input_add(in, bad[i].spec, &err), -1);
        snprintf(want, sizeof want, "%s: %s", bad[i].spec, bad[i].why);
        ck_assert_str_eq(err, want);
        free(err);
    }
    ck_assert_int_eq(input_bound_port(in), -1);
    char *err = NULL;
    ck_assert_int_eq(input_add(in, "tcp://127.0.0.1:0000", &err), 0);
    ck_assert_int_gt(input_bound_port(in), 0);
    input_set_free(in);
}
END_TEST

START_TEST(add_errors)
{
    make_tmpdir();
    InputSet *in = input_set_new(100);
    char *err = NULL;
    ck_assert_int_eq(input_add(in, "/nonexistent/vigil/x.jsonl", &err), -1);
    ck_assert_ptr_nonnull(strstr(err, "/nonexistent/vigil/x.jsonl"));
    free(err);
    ck_assert_int_eq(input_add(in, "tcp://127.0.0.1", &err), -1);
    ck_assert_ptr_nonnull(strstr(err, "expected tcp://HOST:PORT"));
    free(err);
    const char *plain = write_file("plain", "x", 1);
    char spec[300];
    snprintf(spec, sizeof spec, "unix:%s", plain);
    ck_assert_int_eq(input_add(in, spec, &err), -1);
    ck_assert_ptr_nonnull(strstr(err, "not a socket"));
    free(err);
    ck_assert_int_eq(input_add(in, tmpdir, &err), -1);
    ck_assert_ptr_nonnull(strstr(err, strerror(EISDIR)));
    free(err);
    ck_assert_int_eq(input_bound_port(in), -1);
    input_set_free(in);
    remove_tmpdir();
}
END_TEST

/* ---- sockets ---------------------------------------------------------------- */

static int connect_unix(const char *path)
{
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    ck_assert_int_ge(fd, 0);
    struct sockaddr_un addr = { 0 };
    addr.sun_family = AF_UNIX;
    strcpy(addr.sun_path, path);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&addr, sizeof addr), 0);
    return fd;
}

#define CLIENTS 50
#define LINES_PER_CLIENT 200

typedef struct ClientArg {
    const char *path;
    int id;
} ClientArg;

/* Writes its lines in pieces cut mid-line, so the listener sees partial lines from
 * many clients interleaved. */
static void *unix_client(void *p)
{
    const ClientArg *arg = p;
    int fd = connect_unix(arg->path);
    char line[64];
    for (int j = 0; j < LINES_PER_CLIENT; j++) {
        int n = snprintf(line, sizeof line, "{\"client\":%d,\"seq\":%d}\n", arg->id, j);
        size_t cut = (size_t)(j % (n - 1)) + 1;
        write_all(fd, line, cut);
        if (j % 16 == 0)
            sched_yield();
        write_all(fd, line + cut, (size_t)n - cut);
    }
    close(fd);
    return NULL;
}

START_TEST(unix_many_clients)
{
    make_tmpdir();
    char path[128], spec[160];
    snprintf(path, sizeof path, "%s/in.sock", tmpdir);
    snprintf(spec, sizeof spec, "unix:%s", path);
    InputSet *in = set_with(1024, spec);
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    ck_assert(S_ISSOCK(st.st_mode));
    ck_assert_int_eq(st.st_mode & 0777, 0600);

    pthread_t threads[CLIENTS];
    ClientArg args[CLIENTS];
    for (int i = 0; i < CLIENTS; i++) {
        args[i] = (ClientArg){ path, i };
        ck_assert_int_eq(pthread_create(&threads[i], NULL, unix_client, &args[i]), 0);
    }
    Collector c = { 0 };
    InputHandler h = { on_line, on_reject, &c };
    for (int i = 0; i < 3000 && c.n < CLIENTS * LINES_PER_CLIENT; i++)
        ck_assert_int_eq(input_poll(in, 100, &h), 1);
    for (int i = 0; i < CLIENTS; i++)
        pthread_join(threads[i], NULL);
    /* Let the set see every disconnect, then stop listening: it must finish. */
    for (int i = 0; i < 20; i++)
        input_poll(in, 10, &h);
    input_close_listeners(in);
    ck_assert_int_ne(access(path, F_OK), 0);          /* socket file removed */
    drain(in, &c);

    ck_assert_uint_eq(c.rejects, 0);
    ck_assert_uint_eq(c.lines, CLIENTS * LINES_PER_CLIENT);
    /* Every line exactly once, in order per client, and one origin per client. */
    int next_seq[CLIENTS];
    char *origin_of[CLIENTS] = { 0 };
    memset(next_seq, 0, sizeof next_seq);
    for (size_t i = 0; i < c.n; i++) {
        int client, seq;
        ck_assert_int_eq(sscanf(c.items[i].text, "{\"client\":%d,\"seq\":%d}", &client, &seq), 2);
        ck_assert(client >= 0 && client < CLIENTS);
        ck_assert_int_eq(seq, next_seq[client]);
        ck_assert_uint_eq(c.items[i].line_no, (uint64_t)seq + 1);
        next_seq[client]++;
        if (origin_of[client] == NULL)
            origin_of[client] = c.items[i].origin;
        ck_assert_str_eq(c.items[i].origin, origin_of[client]);
    }
    bool seen_number[CLIENTS + 1] = { false };
    for (int i = 0; i < CLIENTS; i++) {
        ck_assert_int_eq(next_seq[i], LINES_PER_CLIENT);
        unsigned n = 0;
        ck_assert_uint_eq(strncmp(origin_of[i], spec, strlen(spec)), 0);
        ck_assert_int_eq(sscanf(origin_of[i] + strlen(spec), "#%u", &n), 1);
        ck_assert(n >= 1 && n <= CLIENTS && !seen_number[n]);
        seen_number[n] = true;
    }
    input_set_free(in);
    collector_free(&c);
    remove_tmpdir();
}
END_TEST

START_TEST(unix_client_closes_mid_line)
{
    make_tmpdir();
    char path[128], spec[160];
    snprintf(path, sizeof path, "%s/in.sock", tmpdir);
    snprintf(spec, sizeof spec, "unix:%s", path);
    InputSet *in = set_with(1024, spec);
    int fd = connect_unix(path);
    write_all(fd, "{\"a\":1}\n{\"b\"", 12);
    close(fd);
    Collector c = { 0 };
    InputHandler h = { on_line, on_reject, &c };
    for (int i = 0; i < 200 && c.n < 2; i++)
        input_poll(in, 50, &h);
    ck_assert_uint_eq(c.n, 2);
    assert_got(&c.items[0], "{\"a\":1}", 1, 0, NULL);
    assert_got(&c.items[1], "{\"b\"", 2, 8, "connection closed mid-line");
    char want[200];
    snprintf(want, sizeof want, "%s#1", spec);
    ck_assert_str_eq(c.items[1].origin, want);
    input_set_free(in);
    ck_assert_int_ne(access(path, F_OK), 0);
    collector_free(&c);
    remove_tmpdir();
}
END_TEST

/* A 300 KB line through a socket whose buffer starts at 16 KiB: rejected, skipped as
 * it arrives, and the next line from the same client is intact. */
static void *overlong_client(void *p)
{
    int fd = connect_unix(p);
    size_t big = 300u << 10;
    char *line = malloc(big);
    ck_assert_ptr_nonnull(line);
    memset(line, 'q', big);
    write_all(fd, line, big);
    write_all(fd, "\n{\"ok\":1}\n", 10);
    free(line);
    close(fd);
    return NULL;
}

START_TEST(unix_overlong_line_from_client)
{
    make_tmpdir();
    char path[128], spec[160];
    snprintf(path, sizeof path, "%s/in.sock", tmpdir);
    snprintf(spec, sizeof spec, "unix:%s", path);
    InputSet *in = set_with(100, spec);
    pthread_t thread;
    ck_assert_int_eq(pthread_create(&thread, NULL, overlong_client, path), 0);
    Collector c = { 0 };
    InputHandler h = { on_line, on_reject, &c };
    for (int i = 0; i < 1000 && c.n < 2; i++)
        input_poll(in, 50, &h);
    pthread_join(thread, NULL);
    ck_assert_uint_eq(c.n, 2);
    ck_assert_str_eq(c.items[0].reason, "line longer than 100 bytes");
    ck_assert_uint_eq(c.items[0].line_no, 1);
    ck_assert_uint_le(c.items[0].len, 1024);
    assert_got(&c.items[1], "{\"ok\":1}", 2, (300u << 10) + 1, NULL);
    input_set_free(in);
    collector_free(&c);
    remove_tmpdir();
}
END_TEST

START_TEST(unix_stale_socket_replaced)
{
    make_tmpdir();
    char path[128], spec[160];
    snprintf(path, sizeof path, "%s/stale.sock", tmpdir);
    snprintf(spec, sizeof spec, "unix:%s", path);
    /* A socket file left behind by a dead process. */
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un addr = { 0 };
    addr.sun_family = AF_UNIX;
    strcpy(addr.sun_path, path);
    ck_assert_int_eq(bind(fd, (struct sockaddr *)&addr, sizeof addr), 0);
    close(fd);
    InputSet *in = set_with(100, spec);
    /* A second listener on the same live path is refused, not stolen. */
    InputSet *other = input_set_new(100);
    char *err = NULL;
    ck_assert_int_eq(input_add(other, spec, &err), -1);
    ck_assert_ptr_nonnull(strstr(err, "another process is listening"));
    free(err);
    input_set_free(other);
    ck_assert_int_eq(access(path, F_OK), 0);
    input_set_free(in);
    remove_tmpdir();
}
END_TEST

START_TEST(tcp_loopback_listener)
{
    InputSet *in = set_with(1024, "tcp://127.0.0.1:0");
    int port = input_bound_port(in);
    ck_assert_int_gt(port, 0);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = { 0 };
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&addr, sizeof addr), 0);
    struct sockaddr_in local;
    socklen_t len = sizeof local;
    ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&local, &len), 0);
    write_all(fd, "{\"x\":1}\r\n{\"x\":2}\n", 17);
    close(fd);
    Collector c = { 0 };
    InputHandler h = { on_line, on_reject, &c };
    for (int i = 0; i < 200 && c.n < 2; i++)
        input_poll(in, 50, &h);
    ck_assert_uint_eq(c.n, 2);
    assert_got(&c.items[0], "{\"x\":1}\r", 1, 0, NULL);
    assert_got(&c.items[1], "{\"x\":2}", 2, 9, NULL);
    char want[64];
    snprintf(want, sizeof want, "tcp://127.0.0.1:%d", ntohs(local.sin_port));
    ck_assert_str_eq(c.items[0].origin, want);
    /* Listeners never finish by themselves; closing them does. */
    ck_assert_int_eq(input_poll(in, 0, &h), 1);
    input_close_listeners(in);
    ck_assert_int_eq(input_poll(in, 0, &h), 0);
    input_set_free(in);
    collector_free(&c);
}
END_TEST

static Suite *input_suite(void)
{
    Suite *s = suite_create("input");
    TCase *tc = tcase_create("input");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, file_crlf_and_final_line);
    tcase_add_test(tc, file_overlong_lines);
    tcase_add_test(tc, overlong_line_across_many_reads);
    tcase_add_test(tc, pause_stops_reading);
    tcase_add_test(tc, kept_lines_stay_intact_while_the_source_reads_on);
    tcase_add_test(tc, runs_of_lines_come_as_line_by_line);
    tcase_add_test(tc, stdin_pipe);
    tcase_add_test(tc, add_errors);
    tcase_add_test(tc, tcp_addresses_are_checked_before_listening);
    tcase_add_test(tc, unix_many_clients);
    tcase_add_test(tc, unix_client_closes_mid_line);
    tcase_add_test(tc, unix_overlong_line_from_client);
    tcase_add_test(tc, unix_stale_socket_replaced);
    tcase_add_test(tc, tcp_loopback_listener);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run_suite(input_suite());
}

/* tests/oomcmd.c — see oomcmd.h. */
#define _GNU_SOURCE   /* F_SETPIPE_SZ (a pipe that holds a whole input), pipe2 */
#include "tests/oomcmd.h"

#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dsl/diag.h"
#include "rules/ruleset.h"
#include "tests/oomwrap.h"
#include "tests/testutil.h"

char *oomcmd_in_child(OomChildFn fn, void *user, int *status)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        alarm(OOMCMD_CHILD_SECONDS);
        int rc = fn(user, fds[1]);
        close(fds[1]);
        exit(rc);
    }
    close(fds[1]);
    FILE *f = fdopen(fds[0], "r");
    ck_assert_ptr_nonnull(f);
    char *text = test_read_stream(f, NULL);
    fclose(f);
    ck_assert_int_eq(waitpid(pid, status, 0), pid);
    return text;
}

typedef struct CommandCall {
    OomCommand cmd;
    char *const *argv;
    size_t fail;
    const char *input;         /* standard input's text, or NULL: left as it is */
    const OomCmdHooks *hooks;  /* called around the command; NULL: none */
    int stack_fd;              /* where the failed allocation's call stack goes */
} CommandCall;

void oomcmd_big_pipe(int fds[2], size_t len)
{
    ck_assert_uint_le(len, OOMCMD_INPUT_MAX);
    ck_assert_int_eq(pipe(fds), 0);
    ck_assert_msg(fcntl(fds[1], F_SETPIPE_SZ, (int)OOMCMD_INPUT_MAX) >= (int)len,
                  "a pipe cannot hold %zu bytes", len);
}

/* In the child: standard input becomes a pipe holding text, then its end. */
static void pipe_to_stdin(const char *text)
{
    size_t len = strlen(text);
    int fds[2];
    oomcmd_big_pipe(fds, len);
    ck_assert(write(fds[1], text, len) == (ssize_t)len);   /* fits: the pipe is empty */
    close(fds[1]);
    ck_assert_int_eq(dup2(fds[0], STDIN_FILENO), STDIN_FILENO);
    close(fds[0]);
}

/* In the child: runs the command and writes "RC N_ALLOCS OUT_LEN\n", stdout, stderr. */
static int run_and_report(void *user, int fd)
{
    const CommandCall *c = user;
    if (c->hooks)
        c->hooks->start(c->hooks->user);
    if (c->input)
        pipe_to_stdin(c->input);
    int argc = 0;
    while (c->argv[argc])
        argc++;
    FILE *out, *err;
    int saved_out = test_fd_capture(STDOUT_FILENO, &out);
    int saved_err = test_fd_capture(STDERR_FILENO, &err);
    oom_stack_to(c->stack_fd);
    oom_count_begin(c->fail);
    int rc = c->cmd(argc, (char **)c->argv);
    size_t n_allocs = oom_count_end();
    oom_stack_to(-1);
    if (c->hooks)
        c->hooks->end(c->hooks->user);
    fflush(stdout);
    fflush(stderr);
    char *o = test_fd_release(STDOUT_FILENO, saved_out, out);
    char *e = test_fd_release(STDERR_FILENO, saved_err, err);
    dprintf(fd, "%d %zu %zu\n%s%s", rc, n_allocs, strlen(o), o, e);
    free(o);
    free(e);
    return 0;
}

const char *oomcmd_status_text(int status, char *buf, size_t size)
{
    if (WIFEXITED(status))
        snprintf(buf, size, "exit %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(buf, size, "signal %d%s", WTERMSIG(status),
                 WTERMSIG(status) == SIGALRM ? " (over the time limit: a hang?)" : "");
    else
        snprintf(buf, size, "status %d", status);
    return buf;
}

/* Runs the call in a child; fills in where the failed allocation's stack goes. */
static OomCmdRun run_command(CommandCall *call)
{
    size_t fail = call->fail;
    int stack_fds[2];   /* close-on-exec: a program the command starts must not hold it */
    ck_assert_int_eq(pipe2(stack_fds, O_CLOEXEC), 0);
    call->stack_fd = stack_fds[1];
    int status;
    char *report = oomcmd_in_child(run_and_report, call, &status);
    close(stack_fds[1]);
    FILE *stack = fdopen(stack_fds[0], "r");
    ck_assert_ptr_nonnull(stack);
    OomCmdRun r = {0};
    r.stack = test_read_stream(stack, NULL);   /* a few lines: the pipe held them */
    fclose(stack);
    size_t out_len;
    int header = 0;
    char how[64];
    ck_assert_msg(sscanf(report, "%d %zu %zu\n%n", &r.rc, &r.n_allocs, &out_len, &header) == 3 &&
                      header > 0 && strlen(report + header) >= out_len,
                  "allocation %zu: the child reported\n%.1800s (%s)\n"
                  "the allocation that failed:\n%s", fail, report,
                  oomcmd_status_text(status, how, sizeof how), r.stack);
    r.out = strndup(report + header, out_len);
    r.err = strdup(report + header + out_len);
    ck_assert(r.out && r.err);
    free(report);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "allocation %zu: the child ended with %s (a leak or a crash)\n"
                  "stderr:\n%.1500s\nthe allocation that failed:\n%s", fail,
                  oomcmd_status_text(status, how, sizeof how), r.err, r.stack);
    return r;
}

OomCmdRun oomcmd_run(OomCommand cmd, char *const *argv, size_t fail)
{
    return oomcmd_run_input(cmd, argv, fail, NULL);
}

OomCmdRun oomcmd_run_input(OomCommand cmd, char *const *argv, size_t fail,
                           const char *input)
{
    return run_command(&(CommandCall){cmd, argv, fail, input, NULL, -1});
}

OomCmdRun oomcmd_run_hooked(OomCommand cmd, char *const *argv, size_t fail,
                            const OomCmdHooks *hooks)
{
    return run_command(&(CommandCall){cmd, argv, fail, NULL, hooks, -1});
}

void oomcmd_free(OomCmdRun *r)
{
    free(r->out);
    free(r->err);
    free(r->stack);
    r->out = r->err = r->stack = NULL;
}

size_t oomcmd_sized(size_t normal, size_t sanitized)
{
    return getenv("VIGIL_TEST_SMALL") ? sanitized : normal;
}

size_t oomcmd_step(size_t normal, size_t sanitized)
{
    const char *env = getenv("VIGIL_OOM_STEP");
    if (env && atoi(env) > 0)
        return (size_t)atoi(env);
    return oomcmd_sized(normal, sanitized);
}

size_t oomcmd_next_fail(const OomPace *pace, size_t fail)
{
    return fail + (fail >= pace->from && fail < pace->to ? pace->inside : pace->outside);
}

size_t oomcmd_last_fail(size_t n_allocs)
{
    return n_allocs + n_allocs / 8;
}

size_t oomcmd_load_allocations(const char *path)
{
    Diags d;
    diags_init(&d);
    oom_count_begin(0);
    CompiledRuleSet *rs = ruleset_load(&path, 1, &d);
    size_t n = oom_count_end();
    ck_assert_ptr_nonnull(rs);
    ruleset_free(rs);
    diags_free(&d);
    return n;
}

int oomcmd_starts_with(const char *text, const char *prefix)
{
    return strncmp(text, prefix, strlen(prefix)) == 0;
}

static int compare_lines(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Ends line before its `fields`+1-th colon, if it has that many. */
static void cut_after_colons(char *line, size_t fields)
{
    char *cut = line;
    for (size_t f = 0; f < fields && cut; f++)
        cut = strchr(cut + (f > 0), ':');
    if (cut)
        *cut = '\0';
}

char *oomcmd_sorted_lines_cut(const char *text, size_t fields)
{
    char *copy = strdup(text);
    ck_assert_ptr_nonnull(copy);
    size_t n = 1, len = strlen(copy);
    for (const char *p = copy; *p; p++)
        n += *p == '\n';
    char **lines = calloc(n, sizeof *lines);
    char *out = malloc(len + 2);   /* a newline more if the last line had none */
    ck_assert(lines && out);
    size_t k = 0;
    for (char *p = copy; *p;) {
        char *end = strchr(p, '\n');   /* none: the last line, cut short, a line still */
        char *next = end ? end + 1 : p + strlen(p);
        if (end)
            *end = '\0';
        cut_after_colons(p, fields);
        lines[k++] = p;
        p = next;
    }
    qsort(lines, k, sizeof *lines, compare_lines);
    size_t at = 0;
    for (size_t i = 0; i < k; i++) {
        size_t l = strlen(lines[i]);
        memcpy(out + at, lines[i], l);
        out[at + l] = '\n';
        at += l + 1;
    }
    out[at] = '\0';
    free(lines);
    free(copy);
    return out;
}

char *oomcmd_sorted_lines(const char *text)
{
    return oomcmd_sorted_lines_cut(text, SIZE_MAX);
}

size_t oomcmd_count(const char *text, const char *needle)
{
    size_t n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

int oomcmd_says_out_of_memory(const char *err)
{
    return strstr(err, "out of memory") || strstr(err, "allocation failure");
}

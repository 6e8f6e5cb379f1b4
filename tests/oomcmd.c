/* tests/oomcmd.c — see oomcmd.h. */
#include "tests/oomcmd.h"

#include <check.h>
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
} CommandCall;

/* In the child: runs the command and writes "RC N_ALLOCS OUT_LEN\n", stdout, stderr. */
static int run_and_report(void *user, int fd)
{
    const CommandCall *c = user;
    int argc = 0;
    while (c->argv[argc])
        argc++;
    FILE *out, *err;
    int saved_out = test_fd_capture(STDOUT_FILENO, &out);
    int saved_err = test_fd_capture(STDERR_FILENO, &err);
    oom_count_begin(c->fail);
    int rc = c->cmd(argc, (char **)c->argv);
    size_t n_allocs = oom_count_end();
    fflush(stdout);
    fflush(stderr);
    char *o = test_fd_release(STDOUT_FILENO, saved_out, out);
    char *e = test_fd_release(STDERR_FILENO, saved_err, err);
    dprintf(fd, "%d %zu %zu\n%s%s", rc, n_allocs, strlen(o), o, e);
    free(o);
    free(e);
    return 0;
}

OomCmdRun oomcmd_run(OomCommand cmd, char *const *argv, size_t fail)
{
    CommandCall call = {cmd, argv, fail};
    int status;
    char *report = oomcmd_in_child(run_and_report, &call, &status);
    OomCmdRun r = {0};
    size_t out_len;
    int header = 0;
    ck_assert_msg(sscanf(report, "%d %zu %zu\n%n", &r.rc, &r.n_allocs, &out_len, &header) == 3 &&
                      header > 0 && strlen(report + header) >= out_len,
                  "allocation %zu: the child reported\n%.1800s (status %d)", fail, report,
                  status);
    r.out = strndup(report + header, out_len);
    r.err = strdup(report + header + out_len);
    ck_assert(r.out && r.err);
    free(report);
    ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
                  "allocation %zu: the child's status is %d (a leak or a crash)\n"
                  "stderr:\n%.1500s", fail, status, r.err);
    return r;
}

void oomcmd_free(OomCmdRun *r)
{
    free(r->out);
    free(r->err);
    r->out = r->err = NULL;
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

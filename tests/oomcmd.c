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

/* In the child: runs the command and writes "RC N_ALLOCS OUT_LEN\n", stdout, stderr. */
static void run_and_report(OomCommand cmd, char *const *argv, size_t fail, int fd)
{
    int argc = 0;
    while (argv[argc])
        argc++;
    FILE *out, *err;
    int saved_out = test_fd_capture(STDOUT_FILENO, &out);
    int saved_err = test_fd_capture(STDERR_FILENO, &err);
    oom_count_begin(fail);
    int rc = cmd(argc, (char **)argv);
    size_t n_allocs = oom_count_end();
    fflush(stdout);
    fflush(stderr);
    char *o = test_fd_release(STDOUT_FILENO, saved_out, out);
    char *e = test_fd_release(STDERR_FILENO, saved_err, err);
    dprintf(fd, "%d %zu %zu\n%s%s", rc, n_allocs, strlen(o), o, e);
    free(o);
    free(e);
}

OomCmdRun oomcmd_run(OomCommand cmd, char *const *argv, size_t fail)
{
    int fds[2];
    ck_assert_int_eq(pipe(fds), 0);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        close(fds[0]);
        run_and_report(cmd, argv, fail, fds[1]);
        close(fds[1]);
        exit(0);
    }
    close(fds[1]);
    FILE *f = fdopen(fds[0], "r");
    ck_assert_ptr_nonnull(f);
    char *report = test_read_stream(f, NULL);
    fclose(f);
    OomCmdRun r = {0};
    int status;
    ck_assert_int_eq(waitpid(pid, &status, 0), pid);
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

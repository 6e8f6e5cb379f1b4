/* tests/oomcmd.h — a `vigil` subcommand run with one allocation failing, in a child
 * process, for the out-of-memory tests of the commands. The child captures what the
 * command writes to stdout and stderr, frees what it holds and leaves with exit(), so
 * that under the sanitizer build LeakSanitizer checks that run on its own (a leak or a
 * crash shows in the child's status). Needs OOM_SOURCES, OOM_WRAP_FLAGS and TEST_UTIL
 * (tests/local.mk). */
#ifndef VIGIL_TESTS_OOMCMD_H
#define VIGIL_TESTS_OOMCMD_H

#include <stddef.h>

typedef int (*OomCommand)(int argc, char **argv);

typedef struct OomCmdRun {
    int rc;              /* the command's exit code */
    size_t n_allocs;     /* allocations the command made */
    char *out, *err;     /* what it wrote to stdout and stderr; heap */
    char *stack;         /* the failed allocation's call stack (tests/oomwrap.h), or ""; heap */
} OomCmdRun;

/* Runs fn(user, fd) in a child that leaves with exit(its return value), so that under
 * the sanitizer build LeakSanitizer checks it; returns what fn wrote to fd (heap) and
 * the child's status in *status. A child still running after OOMCMD_CHILD_SECONDS is
 * killed (SIGALRM): a hang shows as that signal in its status, not as a test that
 * never ends. */
#define OOMCMD_CHILD_SECONDS 60
typedef int (*OomChildFn)(void *user, int fd);
char *oomcmd_in_child(OomChildFn fn, void *user, int *status);

/* cmd with argv (NULL-terminated; argv[0] the subcommand's name) and allocation `fail`
 * of the command failing (from 1; 0: none). Fails the running test if the child
 * leaked, crashed, hung or did not report, quoting the failed allocation's stack. */
OomCmdRun oomcmd_run(OomCommand cmd, char *const *argv, size_t fail);
/* oomcmd_run with the command's standard input a pipe that holds `input` and then
 * ends (a pipe, not a file: `vigil run` reads a regular file differently with
 * workers). The pipe is made big enough to hold it all (Linux's F_SETPIPE_SZ): at
 * most OOMCMD_INPUT_MAX bytes, the usual limit for a user (/proc/sys/fs/pipe-max-size). */
#define OOMCMD_INPUT_MAX (1 << 20)
OomCmdRun oomcmd_run_input(OomCommand cmd, char *const *argv, size_t fail,
                           const char *input);
void oomcmd_free(OomCmdRun *r);

/* Called in the child around the command: `start` before the allocations are counted
 * (standard input may be set up there), `end` once the command returned. */
typedef struct OomCmdHooks {
    void (*start)(void *user);
    void (*end)(void *user);
    void *user;
} OomCmdHooks;
OomCmdRun oomcmd_run_hooked(OomCommand cmd, char *const *argv, size_t fail,
                            const OomCmdHooks *hooks);

/* A pipe (fds as pipe(2) gives them) that holds `len` bytes without a reader (at most
 * OOMCMD_INPUT_MAX). */
void oomcmd_big_pipe(int fds[2], size_t len);

/* The lines of text sorted (the order two workers write alerts in differs from run
 * to run), each ending in a newline. Heap. */
char *oomcmd_sorted_lines(const char *text);
/* The same with each line cut before its `fields`+1-th colon (kept whole if it has
 * fewer colons): a message's start without the details, which may be shorter when
 * memory runs out. Heap. */
char *oomcmd_sorted_lines_cut(const char *text, size_t fields);

/* How many times `needle` stands in text (not overlapping). */
size_t oomcmd_count(const char *text, const char *needle);

/* Whether a command's stderr says that memory ran out: "out of memory", or "allocation
 * failure" (what vigil run says when the failure surfaced in a worker or a job). */
int oomcmd_says_out_of_memory(const char *err);

/* Which allocations a test fails. `sanitized` under the sanitizer build (VIGIL_TEST_SMALL
 * in the environment: a run takes some twenty times longer), else `normal`. */
size_t oomcmd_sized(size_t normal, size_t sanitized);
/* The step between the allocations that fail: VIGIL_OOM_STEP in the environment when it
 * is a positive number (1: each in turn, which takes minutes), else
 * oomcmd_sized(normal, sanitized). */
size_t oomcmd_step(size_t normal, size_t sanitized);
/* A sweep's allocations that fail: after `fail`, fail + `inside` while fail is in
 * [from, to) (the part tried closely), else fail + `outside`. */
typedef struct OomPace {
    size_t from, to, inside, outside;
} OomPace;
size_t oomcmd_next_fail(const OomPace *pace, size_t fail);
/* The last allocation to fail after a run without failure that made n_allocs: a little
 * past them, since a run with a failure may make more. */
size_t oomcmd_last_fail(size_t n_allocs);

/* How many allocations loading the rules at `path` makes (ruleset_load), in this
 * process: a command that loads them makes the same ones first. */
size_t oomcmd_load_allocations(const char *path);

/* A child's wait status in words ("exit 1", "signal 14 (over the time limit)"...),
 * into buf; returns buf. */
const char *oomcmd_status_text(int status, char *buf, size_t size);

/* Whether `prefix` is where `text` starts. */
int oomcmd_starts_with(const char *text, const char *prefix);

#endif

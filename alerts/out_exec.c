/* alerts/out_exec.c — `exec` outputs: one program run per alert, without a shell.
 *
 * Owns: per output a worker thread, a bounded queue of jobs (rendered argv + alert
 * line) and up to cfg->exec_children running children. The engine thread only renders
 * argv and queues; it never waits for a child. A full queue drops the alert (counted,
 * logged with a rate limit).
 *
 * Each child gets the alert JSON and "\n" on its stdin (written non-blocking, so a
 * child that does not read cannot stall the worker), its stdout goes to our stderr
 * (alerts on our stdout are never mixed with a program's output) and stderr is
 * inherited. It runs in its own process group, so a timeout (SIGTERM to the group,
 * SIGKILL cfg->exec_kill_grace_ms later) also stops what a script started. Untrusted
 * values only ever become whole argv elements; argv[0] must be literal.
 * A failure (spawn error, exit status != 0, signal, timeout) is retried with doubling
 * backoff up to cfg->exec_tries attempts, then logged with the alert JSON. */
#define _GNU_SOURCE   /* pipe2 */
#include "alerts/outputs.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"

extern char **environ;

/* How often running children are checked for exit and timeouts. */
#define EXEC_POLL_MS 10

typedef struct ExecJob {
    struct ExecJob *next;
    char **argv;             /* NULL-terminated heap array of heap strings */
    char *input;             /* alert line + "\n"; heap */
    size_t input_len;
    int tries;               /* attempts finished */
    int64_t not_before;      /* monotonic ms: a retry waits until then */
    char error[128];         /* why the last attempt failed */
} ExecJob;

typedef struct ExecChild {
    ExecJob *job;
    pid_t pid;
    int in_fd;               /* write end of the child's stdin; -1 when done */
    size_t written;
    int64_t term_at;         /* monotonic ms of the timeout */
    int64_t kill_at;         /* 0 until SIGTERM was sent */
} ExecChild;

typedef struct ExecOutput {
    Output base;
    OutConfig cfg;          /* a copy: the output may outlive its router */
    OutTemplate *argv;       /* n_argv compiled templates; heap */
    size_t n_argv;
    int64_t timeout_ms;

    pthread_mutex_t mu;      /* guards everything below */
    pthread_cond_t wake;     /* to the worker: a job arrived, or stop */
    pthread_cond_t idle;     /* to flushers: a job finished */
    ExecJob *head, *tail;    /* queued jobs, not yet taken by the worker */
    size_t queued;
    size_t in_worker;        /* taken by the worker: running or waiting for a retry */
    bool stop;
    bool finished;           /* exec_finish ran (engine thread only) */
    uint64_t sent, failed, dropped, failed_at_flush;
    bool failing;
    OutDropLog drops;
    pthread_t thread;

    /* Worker-private. */
    ExecChild *children;     /* cfg->exec_children slots, n_children used */
    struct pollfd *pfds;     /* as many slots, for exec_service */
    size_t n_children, max_children;
    ExecJob *retries;        /* jobs waiting for their backoff */
} ExecOutput;

static void job_free(ExecJob *j)
{
    if (!j)
        return;
    if (j->argv)
        for (char **a = j->argv; *a; a++)
            free(*a);
    free(j->argv);
    free(j->input);
    free(j);
}

/* ---- the engine side ------------------------------------------------------ */

static ExecJob *job_new(const ExecOutput *eo, const AlertMeta *m, const char *line, size_t len)
{
    ExecJob *j = calloc(1, sizeof *j);
    if (!j)
        return NULL;
    j->argv = calloc(eo->n_argv + 1, sizeof *j->argv);
    j->input = malloc(len + 1);
    if (!j->argv || !j->input) {
        job_free(j);
        return NULL;
    }
    memcpy(j->input, line, len);
    j->input[len] = '\n';
    j->input_len = len + 1;
    for (size_t i = 0; i < eo->n_argv; i++) {
        Buf b = BUF_INIT;
        out_template_render(&eo->argv[i], m, &b);
        j->argv[i] = buf_steal(&b);
        if (!j->argv[i]) {
            job_free(j);
            return NULL;
        }
    }
    return j;
}

static int exec_write(Output *o, const AlertMeta *m, const char *line, size_t len)
{
    ExecOutput *eo = (ExecOutput *)o;
    ExecJob *j = job_new(eo, m, line, len);
    pthread_mutex_lock(&eo->mu);
    if (!j || eo->queued >= eo->cfg.exec_queue) {
        eo->dropped++;
        out_drop_note(&eo->cfg, &eo->drops, o->name,
                      j ? "the queue of alerts waiting for a program is full" : "out of memory");
        pthread_mutex_unlock(&eo->mu);
        job_free(j);
        return -1;
    }
    if (eo->tail)
        eo->tail->next = j;
    else
        eo->head = j;
    eo->tail = j;
    eo->queued++;
    pthread_cond_signal(&eo->wake);
    pthread_mutex_unlock(&eo->mu);
    return 0;
}

static int exec_flush(Output *o, int64_t timeout_ms)
{
    ExecOutput *eo = (ExecOutput *)o;
    int64_t deadline = clock_monotonic_ms() + timeout_ms;
    pthread_mutex_lock(&eo->mu);
    while ((eo->queued || eo->in_worker) && clock_monotonic_ms() < deadline)
        out_cond_wait_until(&eo->idle, &eo->mu, deadline);
    int rc = (eo->queued || eo->in_worker || eo->failed != eo->failed_at_flush) ? -1 : 0;
    eo->failed_at_flush = eo->failed;
    pthread_mutex_unlock(&eo->mu);
    return rc;
}

static void exec_stats(Output *o, OutStats *st)
{
    ExecOutput *eo = (ExecOutput *)o;
    pthread_mutex_lock(&eo->mu);
    st->sent = eo->sent;
    st->failed = eo->failed;
    st->dropped = eo->dropped;
    st->buffered = eo->queued + eo->in_worker;
    st->healthy = !eo->failing;
    st->state = eo->failing ? "failing" : "ok";
    pthread_mutex_unlock(&eo->mu);
}

/* ---- the worker ----------------------------------------------------------- */

/* Records the end of a job: delivered, retried later, or given up. */
static void job_done(ExecOutput *eo, ExecJob *j, bool ok)
{
    if (!ok && ++j->tries < eo->cfg.exec_tries) {
        int shift = j->tries - 1 < 20 ? j->tries - 1 : 20;
        j->not_before = clock_monotonic_ms() + (eo->cfg.exec_backoff_ms << shift);
        j->next = eo->retries;
        eo->retries = j;
        return;
    }
    if (!ok)
        out_log(&eo->cfg, "output %s: %s failed %d time(s), giving up (last: %s); alert: %.*s",
                eo->base.name, j->argv[0], j->tries, j->error,
                (int)(j->input_len - 1), j->input);
    pthread_mutex_lock(&eo->mu);
    if (ok)
        eo->sent++;
    else
        eo->failed++;
    eo->failing = !ok;
    eo->in_worker--;
    pthread_cond_broadcast(&eo->idle);
    pthread_mutex_unlock(&eo->mu);
    job_free(j);
}

/* posix_spawnp with stdin from `in_fd`, stdout to our stderr, default signal
 * handling and mask, in a new process group. 0, or an errno value. */
static int spawn_child(char *const argv[], int in_fd, pid_t *pid)
{
    static const int dfl_signals[] = {SIGPIPE, SIGTERM, SIGINT, SIGHUP, SIGQUIT,
                                      SIGCHLD, SIGUSR1, SIGUSR2};
    sigset_t none, dfl;
    sigemptyset(&none);
    sigemptyset(&dfl);
    for (size_t i = 0; i < sizeof dfl_signals / sizeof dfl_signals[0]; i++)
        sigaddset(&dfl, dfl_signals[i]);
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t at;
    int rc = posix_spawn_file_actions_init(&fa);
    if (rc != 0)
        return rc;
    rc = posix_spawnattr_init(&at);
    if (rc == 0) {
        if (!(rc = posix_spawn_file_actions_adddup2(&fa, in_fd, STDIN_FILENO)) &&
            !(rc = posix_spawn_file_actions_adddup2(&fa, STDERR_FILENO, STDOUT_FILENO)) &&
            !(rc = posix_spawnattr_setsigmask(&at, &none)) &&
            !(rc = posix_spawnattr_setsigdefault(&at, &dfl)) &&
            !(rc = posix_spawnattr_setpgroup(&at, 0)) &&
            !(rc = posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
                                                 POSIX_SPAWN_SETPGROUP)))
            rc = posix_spawnp(pid, argv[0], &fa, &at, argv, environ);
        posix_spawnattr_destroy(&at);
    }
    posix_spawn_file_actions_destroy(&fa);
    return rc;
}

static void exec_spawn(ExecOutput *eo, ExecJob *j)
{
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) {
        snprintf(j->error, sizeof j->error, "pipe: %s", strerror(errno));
        job_done(eo, j, false);
        return;
    }
    pid_t pid = -1;
    int rc = spawn_child(j->argv, p[0], &pid);
    close(p[0]);
    if (rc != 0) {
        close(p[1]);
        snprintf(j->error, sizeof j->error, "cannot run it: %s", strerror(rc));
        job_done(eo, j, false);
        return;
    }
    fcntl(p[1], F_SETFL, fcntl(p[1], F_GETFL) | O_NONBLOCK);
    ExecChild *c = &eo->children[eo->n_children++];
    c->job = j;
    c->pid = pid;
    c->in_fd = p[1];
    c->written = 0;
    c->term_at = clock_monotonic_ms() + eo->timeout_ms;
    c->kill_at = 0;
}

/* The retry whose backoff is over, unlinked; NULL if none. */
static ExecJob *retry_take_ready(ExecOutput *eo, int64_t now)
{
    for (ExecJob **pp = &eo->retries; *pp; pp = &(*pp)->next) {
        if ((*pp)->not_before <= now) {
            ExecJob *j = *pp;
            *pp = j->next;
            j->next = NULL;
            return j;
        }
    }
    return NULL;
}

static int64_t retry_earliest(const ExecOutput *eo)
{
    int64_t t = INT64_MAX;
    for (const ExecJob *j = eo->retries; j; j = j->next)
        if (j->not_before < t)
            t = j->not_before;
    return t;
}

/* Starts children for ready retries, then queued jobs. Called and returns locked. */
static void exec_start_ready(ExecOutput *eo)
{
    while (eo->n_children < eo->max_children) {
        ExecJob *j = retry_take_ready(eo, clock_monotonic_ms());
        if (!j && eo->head) {
            j = eo->head;
            eo->head = j->next;
            if (!eo->head)
                eo->tail = NULL;
            j->next = NULL;
            eo->queued--;
            eo->in_worker++;
        }
        if (!j)
            return;
        pthread_mutex_unlock(&eo->mu);
        exec_spawn(eo, j);
        pthread_mutex_lock(&eo->mu);
    }
}

/* A write to a child's closed stdin raises SIGPIPE on this thread, where it is
 * blocked: take it off the pending set so it never reaches the process. */
static void discard_sigpipe(void)
{
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, SIGPIPE);
    struct timespec zero = {0, 0};
    while (sigtimedwait(&s, NULL, &zero) == SIGPIPE)
        ;
}

static void child_close_input(ExecChild *c)
{
    if (c->in_fd >= 0)
        close(c->in_fd);
    c->in_fd = -1;
}

static void child_feed(ExecChild *c)
{
    const ExecJob *j = c->job;
    while (c->in_fd >= 0 && c->written < j->input_len) {
        ssize_t w = write(c->in_fd, j->input + c->written, j->input_len - c->written);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EPIPE) {
                discard_sigpipe();
                child_close_input(c);   /* the child did not want its input: its exit decides */
            }
            return;                     /* EAGAIN: the pipe is full, poll again */
        }
        c->written += (size_t)w;
    }
    if (c->written == j->input_len)
        child_close_input(c);
}

/* Signals timed-out children; returns true once the child has been reaped. */
static bool child_check(ExecOutput *eo, ExecChild *c, int64_t now)
{
    int status = 0;
    pid_t r = waitpid(c->pid, &status, WNOHANG);
    if (r < 0 && errno == ECHILD) {
        /* SIGCHLD is ignored in this process, so the kernel reaped the child and its
         * status is gone: count it as delivered rather than run it twice. */
        r = c->pid;
        status = 0;
    }
    if (r == c->pid) {
        ExecJob *j = c->job;
        bool ok = false;
        if (c->kill_at)
            snprintf(j->error, sizeof j->error, "timed out after %lld ms",
                     (long long)eo->timeout_ms);
        else if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
            ok = true;
        else if (WIFEXITED(status))
            snprintf(j->error, sizeof j->error, "exit status %d", WEXITSTATUS(status));
        else
            snprintf(j->error, sizeof j->error, "killed by signal %d",
                     WIFSIGNALED(status) ? WTERMSIG(status) : 0);
        child_close_input(c);
        job_done(eo, j, ok);
        return true;
    }
    if (!c->kill_at && now >= c->term_at) {
        kill(-c->pid, SIGTERM);
        c->kill_at = now + eo->cfg.exec_kill_grace_ms;
    } else if (c->kill_at && now >= c->kill_at) {
        kill(-c->pid, SIGKILL);
        c->kill_at = INT64_MAX;   /* sent; only the reaping is left */
    }
    return false;
}

/* One round over the running children: feed stdin, reap, enforce timeouts. Unlocked. */
static void exec_service(ExecOutput *eo)
{
    nfds_t n_pf = 0;
    for (size_t i = 0; i < eo->n_children; i++)
        if (eo->children[i].in_fd >= 0)
            eo->pfds[n_pf++] = (struct pollfd){.fd = eo->children[i].in_fd, .events = POLLOUT};
    poll(eo->pfds, n_pf, EXEC_POLL_MS);
    int64_t now = clock_monotonic_ms();
    for (size_t i = 0; i < eo->n_children;) {
        ExecChild *c = &eo->children[i];
        child_feed(c);
        if (child_check(eo, c, now))
            eo->children[i] = eo->children[--eo->n_children];
        else
            i++;
    }
}

/* At destroy: whatever is still running or waiting is stopped and counted. */
static void exec_abandon(ExecOutput *eo)
{
    size_t left = 0;
    for (size_t i = 0; i < eo->n_children; i++) {
        ExecChild *c = &eo->children[i];
        kill(-c->pid, SIGKILL);
        waitpid(c->pid, NULL, 0);
        child_close_input(c);
        job_free(c->job);
        left++;
    }
    eo->n_children = 0;
    while (eo->retries) {
        ExecJob *j = eo->retries;
        eo->retries = j->next;
        job_free(j);
        left++;
    }
    pthread_mutex_lock(&eo->mu);
    while (eo->head) {
        ExecJob *j = eo->head;
        eo->head = j->next;
        job_free(j);
        left++;
    }
    eo->tail = NULL;
    eo->queued = 0;
    eo->in_worker = 0;
    eo->dropped += left;
    eo->drops.pending += left;
    out_drop_final(&eo->cfg, &eo->drops, eo->base.name, "not delivered before shutdown");
    pthread_mutex_unlock(&eo->mu);
}

static void *exec_worker(void *arg)
{
    ExecOutput *eo = arg;
    sigset_t pipe_set;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_set, NULL);

    pthread_mutex_lock(&eo->mu);
    while (!eo->stop) {
        exec_start_ready(eo);
        if (eo->n_children == 0) {
            if (eo->stop)
                break;
            if (eo->retries)
                out_cond_wait_until(&eo->wake, &eo->mu, retry_earliest(eo));
            else if (!eo->head)
                pthread_cond_wait(&eo->wake, &eo->mu);
            continue;
        }
        pthread_mutex_unlock(&eo->mu);
        exec_service(eo);
        pthread_mutex_lock(&eo->mu);
    }
    pthread_mutex_unlock(&eo->mu);
    exec_abandon(eo);
    return NULL;
}

/* ---- lifetime ------------------------------------------------------------- */

static void exec_free_parts(ExecOutput *eo)
{
    for (size_t i = 0; i < eo->n_argv; i++)
        out_template_free(&eo->argv[i]);
    free(eo->argv);
    free(eo->children);
    free(eo->pfds);
    free(eo->base.name_owned);
    free(eo);
}

/* Stops the thread, which kills its children and drops what is left (exec_abandon). */
static void exec_finish(Output *o)
{
    ExecOutput *eo = (ExecOutput *)o;
    if (eo->finished)
        return;
    eo->finished = true;
    pthread_mutex_lock(&eo->mu);
    eo->stop = true;
    pthread_cond_signal(&eo->wake);
    pthread_mutex_unlock(&eo->mu);
    pthread_join(eo->thread, NULL);
}

static void exec_destroy(Output *o)
{
    ExecOutput *eo = (ExecOutput *)o;
    exec_finish(o);
    pthread_cond_destroy(&eo->wake);
    pthread_cond_destroy(&eo->idle);
    pthread_mutex_destroy(&eo->mu);
    exec_free_parts(eo);
}

static const OutputOps exec_ops = {exec_write, exec_flush, NULL, exec_stats, exec_destroy, NULL,
                                   exec_finish};

static int exec_compile_argv(ExecOutput *eo, const OutputDecl *d, char **err)
{
    eo->argv = calloc(d->n_argv ? d->n_argv : 1, sizeof *eo->argv);
    if (!eo->argv) {
        *err = buf_format("out of memory");
        return -1;
    }
    unsigned allowed = OV_BIT(OV_TEXT) | OV_BIT(OV_RULE) | OV_BIT(OV_KIND) |
                       OV_BIT(OV_SEVERITY) | OV_BIT(OV_KEY);
    for (size_t i = 0; i < d->n_argv; i++) {
        char *what = buf_format("output '%s' argv[%zu]", d->name, i);
        /* The program itself is never chosen by event data. */
        int rc = what ? out_template_compile(&d->argv[i], i == 0 ? OV_BIT(OV_TEXT) : allowed,
                                             what, &eo->argv[i], err)
                      : -1;
        if (!what)
            *err = buf_format("out of memory");
        free(what);
        if (rc < 0)
            return -1;
        eo->base.reads_keys |= out_template_uses(&eo->argv[i], OV_KEY);
        eo->n_argv++;
    }
    if (d->n_argv == 0 || eo->argv[0].n_parts == 0) {
        char *where = out_span_prefix(d->span);
        *err = buf_format("%soutput '%s': exec needs a program", where ? where : "", d->name);
        free(where);
        return -1;
    }
    return 0;
}

Output *out_exec_new(const OutputDecl *d, const OutConfig *cfg, char **err)
{
    ExecOutput *eo = calloc(1, sizeof *eo);
    if (!eo) {
        *err = buf_format("out of memory");
        return NULL;
    }
    eo->base.ops = &exec_ops;
    eo->base.name = eo->base.name_owned = strdup(d->name);
    eo->base.kind = "exec";
    eo->cfg = *cfg;
    eo->timeout_ms = d->timeout_ms != DURATION_NONE && d->timeout_ms > 0 ? d->timeout_ms
                                                                         : cfg->exec_timeout_ms;
    eo->max_children = cfg->exec_children ? cfg->exec_children : 1;
    if (!eo->base.name) {
        *err = buf_format("out of memory");
        exec_free_parts(eo);
        return NULL;
    }
    if (exec_compile_argv(eo, d, err) < 0) {
        exec_free_parts(eo);
        return NULL;
    }
    eo->children = calloc(eo->max_children, sizeof *eo->children);
    eo->pfds = calloc(eo->max_children, sizeof *eo->pfds);
    if (!eo->children || !eo->pfds || pthread_mutex_init(&eo->mu, NULL) != 0) {
        *err = buf_format("out of memory");
        exec_free_parts(eo);
        return NULL;
    }
    if (out_cond_init(&eo->wake) < 0 || out_cond_init(&eo->idle) < 0 ||
        pthread_create(&eo->thread, NULL, exec_worker, eo) != 0) {
        *err = buf_format("output '%s': cannot start its thread", d->name);
        pthread_mutex_destroy(&eo->mu);
        exec_free_parts(eo);   /* condition variables hold no resources on Linux */
        return NULL;
    }
    return &eo->base;
}

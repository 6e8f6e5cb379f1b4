/* cli/run_state.c — checkpoints and recovery of `vigil run --state DIR`; see
 * run_state.h. */
#include "cli/run_state.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void log_line(void *user, const char *msg)
{
    (void)user;
    fprintf(stderr, "vigil run: %s\n", msg);
}

static int fail(char *err, const char *fallback)
{
    fprintf(stderr, "vigil run: --state: %s\n", err ? err : fallback);
    free(err);
    return -1;
}

bool run_state_parse_every(const char *text, int64_t *ms)
{
    char *end;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text || v <= 0)
        return false;
    int64_t unit = !strcmp(end, "ms") ? 1 : !strcmp(end, "s") || !*end ? 1000
                   : !strcmp(end, "m") ? 60000 : !strcmp(end, "h") ? 3600000 : 0;
    if (!unit || v > INT64_MAX / unit)
        return false;
    *ms = v * unit;
    return true;
}

/* ---- files: the journal and the known files -------------------------------------- */

typedef struct FileLookup {
    const char *path;
    size_t n;
} FileLookup;

static bool differs(const char *path, size_t n, uint64_t length, void *user)
{
    (void)length;
    const FileLookup *want = user;
    return n != want->n || memcmp(path, want->path, n);
}

/* Is `path` (n bytes) among the (path, length) pairs of a files section? */
static bool files_have(const char *sec, size_t len, const char *path, size_t n)
{
    FileLookup want = {path, n};
    return ckpt_files_each(sec, len, differs, &want) == 1;
}

/* Appends (path, length) to a files section unless the path is in it already; with no
 * length, the file's length on disk, and nothing if the file does not exist. */
static bool add_new(Buf *out, const char *path, size_t n, const uint64_t *length)
{
    if (files_have(out->data, out->len, path, n))
        return true;
    char *copy = strndup(path, n);
    if (!copy) {
        out->failed = true;
        return false;
    }
    struct stat sb;
    if (length)
        ckpt_files_add(out, copy, *length);
    else if (stat(copy, &sb) == 0)
        ckpt_files_add(out, copy, (uint64_t)sb.st_size);
    free(copy);
    return true;
}

static bool add_if_new(const char *path, size_t n, uint64_t length, void *user)
{
    return add_new(user, path, n, &length);
}

/* Appends to `out` the pairs of `from` whose path is not in `out` yet (first wins); a
 * torn journal ends at its last whole pair. */
static void files_merge(Buf *out, const char *from, size_t len)
{
    (void)ckpt_files_each(from, len, add_if_new, out);
}

static char *journal_path(const RunState *st)
{
    size_t n = strlen(st->store.dir) + sizeof "/opened";
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/opened", st->store.dir);
    return p;
}

/* Reads the journal of the previous run (empty if there is none); -1 with errno set
 * (ENOMEM: out of memory). */
static int read_journal(const RunState *st, Buf *out)
{
    char *path = journal_path(st);
    if (!path) {
        errno = ENOMEM;
        return -1;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    free(path);
    if (fd < 0)
        return errno == ENOENT ? 0 : -1;
    char chunk[4096];
    ssize_t n;
    while ((n = read(fd, chunk, sizeof chunk)) > 0)
        buf_append(out, chunk, (size_t)n);
    int read_errno = errno;
    close(fd);
    errno = out->failed ? ENOMEM : read_errno;
    return n < 0 || out->failed ? -1 : 0;
}

/* Adds a path to the files measured at each checkpoint. */
static void know_path(RunState *st, const char *path)
{
    pthread_mutex_lock(&st->lock);
    if (!files_have(st->known.data, st->known.len, path, strlen(path)))
        ckpt_files_add(&st->known, path, 0);
    pthread_mutex_unlock(&st->lock);
}

void run_state_file_opened(void *user, const char *path)
{
    RunState *st = user;
    know_path(st, path);
    struct stat sb;
    uint64_t length = stat(path, &sb) == 0 ? (uint64_t)sb.st_size : 0;
    Buf rec = BUF_INIT;
    ckpt_files_add(&rec, path, length);
    /* one write per record on an O_APPEND descriptor: workers may call this at once */
    if (rec.failed || st->journal_fd < 0 || write(st->journal_fd, rec.data, rec.len) < 0 ||
        fdatasync(st->journal_fd) < 0)
        fprintf(stderr, "vigil run: --state: cannot note %s in the journal%s; after a crash "
                "before the next checkpoint its alerts may repeat\n", path,
                rec.failed ? " (out of memory)" : "");
    buf_free(&rec);
}

/* Cuts the files back: those of the checkpoint to its lengths, those first opened
 * after it (the journal) to their lengths at opening. Then the journal starts over. */
static int roll_back_files(RunState *st)
{
    Buf journal = BUF_INIT, cut = BUF_INIT;
    const char *sec = NULL;
    size_t sec_len = 0;
    if (st->loaded.body &&
        ckpt_find_section(st->loaded.body, st->loaded.len, CKPT_SEC_FILES, &sec, &sec_len))
        buf_append(&cut, sec, sec_len);
    int rc = read_journal(st, &journal);
    bool oom = rc < 0 && errno == ENOMEM;
    if (rc == 0)
        files_merge(&cut, journal.data ? journal.data : "", journal.len);
    /* every file of earlier runs stays known: a later crash may need it cut back too */
    files_merge(&st->known, cut.data ? cut.data : "", cut.len);
    char *err = NULL;
    if (oom || cut.failed || st->known.failed)
        rc = fail(NULL, "out of memory while reading the journal of opened files");
    else if (rc < 0)
        rc = fail(NULL, "cannot read the journal of opened files");
    else if (ckpt_truncate_files(cut.data ? cut.data : "", cut.len, log_line, NULL, &err) < 0)
        rc = fail(err, "cannot cut the output files back");
    else if (ftruncate(st->journal_fd, 0) < 0)
        rc = fail(NULL, "cannot reset the journal of opened files");
    buf_free(&journal);
    buf_free(&cut);
    return rc;
}

/* ---- start ------------------------------------------------------------------------ */

int run_state_open(RunState *st, const char *dir, int64_t every_ms, const char *errors_path,
                   const char *late_path)
{
    memset(st, 0, sizeof *st);
    pthread_mutex_init(&st->lock, NULL);
    st->journal_fd = -1;
    st->every_ms = every_ms > 0 ? every_ms : CKPT_DEFAULT_EVERY_MS;
    st->errors_path = errors_path;
    st->late_path = late_path;
    st->last_ms = clock_monotonic_ms();
    char *err = NULL;
    /* their errors are always told, unless memory ran out for the message */
    if (ckpt_open(&st->store, dir, &err) < 0)
        return fail(err, "out of memory");
    char *jp = journal_path(st);
    if (!jp)
        return fail(NULL, "out of memory");
    st->journal_fd = open(jp, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    free(jp);
    if (st->journal_fd < 0)
        return fail(NULL, "cannot open the journal of opened files");
    int found = ckpt_load(&st->store, &st->loaded, log_line, NULL, &err);
    if (found < 0)
        return fail(err, "out of memory");
    if (roll_back_files(st) < 0)
        return -1;
    /* --errors and --late are opened before the outputs: note them first */
    if (errors_path)
        run_state_file_opened(st, errors_path);
    if (late_path)
        run_state_file_opened(st, late_path);
    return 0;
}

int run_state_restore(RunState *st, Engine *engine, InputSet *inputs)
{
    if (!st->loaded.body)
        return 0;
    int64_t t0 = clock_monotonic_ms();
    const char *sec;
    size_t len;
    char *err = NULL;
    if (!ckpt_find_section(st->loaded.body, st->loaded.len, CKPT_SEC_ENGINE, &sec, &len))
        return fail(NULL, "the checkpoint has no engine state");
    EngineRestoreSummary sum;
    if (engine_restore_version(engine, sec, len, st->loaded.version, &sum, &err) < 0)
        return fail(err, "cannot restore the engine state");
    int64_t took = st->restore_ms = clock_monotonic_ms() - t0;
    /* an older format is named: what it did not save (e.g. keys_refused before 2)
     * starts from zero, and the next checkpoint is written in the current one */
    char format[64] = "";
    if (st->loaded.version != CKPT_VERSION)
        snprintf(format, sizeof format, ", format version %u", (unsigned)st->loaded.version);
    fprintf(stderr, "vigil run: restored checkpoint %llu (%s, %zu bytes%s) in %lld ms: %zu rules "
            "with state, %zu starting empty, %zu gone; %llu keys, %llu partial matches, %llu "
            "buffered events\n", (unsigned long long)st->loaded.seq, st->loaded.path,
            st->loaded.len + CKPT_HEADER_SIZE, format, (long long)took, sum.rules_kept,
            sum.rules_empty, sum.rules_dropped, (unsigned long long)sum.keys,
            (unsigned long long)sum.partials, (unsigned long long)sum.buffered);
    if (ckpt_find_section(st->loaded.body, st->loaded.len, CKPT_SEC_INPUTS, &sec, &len) &&
        ckpt_resume_inputs(inputs, sec, len, log_line, NULL, &err) < 0)
        return fail(err, "cannot resume the inputs");
    return 0;
}

/* ---- checkpoints --------------------------------------------------------------------- */

bool run_state_due(const RunState *st, int64_t mono_now)
{
    return mono_now - st->last_ms >= st->every_ms;
}

typedef struct Capture {
    RunState *st;
    AlertRouter *alerts;
    Rejects *rejects;
    Buf files;
    bool failed;          /* an output file could not be written or synced */
    bool alerts_lost;     /* an alert could not be rendered (out of memory) */
} Capture;

static void add_file(void *user, const char *path, uint64_t length)
{
    Capture *c = user;
    (void)add_new(&c->files, path, strlen(path), &length);
}

static void add_reject_file(Capture *c, FILE *f, const char *path)
{
    struct stat sb;
    if (!f || !path)
        return;
    if (fflush(f) != 0 || fdatasync(fileno(f)) < 0 || fstat(fileno(f), &sb) < 0)
        c->failed = true;
    else
        add_file(c, path, (uint64_t)sb.st_size);
}

/* A known file the outputs did not report, with its length on disk. */
static bool add_measured(const char *path, size_t n, uint64_t length, void *user)
{
    (void)length;
    return add_new(user, path, n, NULL);
}

/* While the engine is paused: what the files hold now matches the state captured.
 * The outputs report what they write to; every other known file (of earlier runs,
 * or of outputs a reload replaced) is measured on disk, where nothing writes now. */
static void capture_files(void *user)
{
    Capture *c = user;
    RunState *st = c->st;
    /* a checkpoint past a lost alert would make the loss final: the next run must
     * start from the one before and make it again */
    c->alerts_lost = alerts_lost(c->alerts) > 0;
    if (alerts_sync_files(c->alerts, add_file, c) < 0)
        c->failed = true;
    add_reject_file(c, c->rejects->errors.file, st->errors_path);
    add_reject_file(c, c->rejects->late.file, st->late_path);
    pthread_mutex_lock(&st->lock);
    /* a file know_path had no memory to note would be missing from the checkpoint, and
     * a crash after it would leave that file's later alerts to be written twice */
    if (st->known.failed ||
        ckpt_files_each(st->known.data ? st->known.data : "", st->known.len, add_measured,
                        &c->files) < 0)
        c->files.failed = true;
    pthread_mutex_unlock(&st->lock);
}

int run_state_checkpoint(RunState *st, Engine *engine, AlertRouter *alerts, InputSet *inputs,
                         Rejects *rejects)
{
    int64_t t0 = clock_monotonic_ms();
    st->last_ms = t0;
    Capture c = {st, alerts, rejects, BUF_INIT, false, false};
    Buf eng = BUF_INIT, body = BUF_INIT;
    EngineCheckpointInfo info;
    char *err = NULL;
    int rc = engine_checkpoint(engine, &eng, capture_files, &c, &info);
    if (rc < 0 || c.failed || c.alerts_lost) {
        rc = fail(NULL, c.failed ? "an output file could not be written or synced; no "
                  "checkpoint taken" : c.alerts_lost ? "alerts were lost for want of memory; "
                  "no checkpoint taken" : "out of memory while taking a checkpoint");
    } else {
        ckpt_put_section(&body, CKPT_SEC_ENGINE, eng.data ? eng.data : "", eng.len);
        const char *prev = NULL;
        size_t prev_len = 0;
        if (st->loaded.body)
            ckpt_find_section(st->loaded.body, st->loaded.len, CKPT_SEC_INPUTS, &prev,
                              &prev_len);
        ckpt_put_inputs(&body, inputs, prev, prev_len);
        ckpt_put_section(&body, CKPT_SEC_FILES, c.files.data ? c.files.data : "", c.files.len);
        if (body.failed || c.files.failed)
            rc = fail(NULL, "out of memory while taking a checkpoint");
        else if (ckpt_write(&st->store, body.data, body.len, wall_ms(), &err) < 0)
            rc = fail(err, "cannot write the checkpoint");
    }
    if (rc == 0) {
        st->written++;
        st->last_bytes = body.len + CKPT_HEADER_SIZE;
        st->last_write_ms = clock_monotonic_ms() - t0;
        st->last_info = info;
        if (st->last_bytes > st->max_bytes)
            st->max_bytes = st->last_bytes;
        if (st->last_write_ms > st->max_write_ms)
            st->max_write_ms = st->last_write_ms;
    } else {
        st->failed++;
    }
    buf_free(&c.files);
    buf_free(&eng);
    buf_free(&body);
    return rc;
}

void run_state_stats_json(const RunState *st, Buf *out)
{
    buf_printf(out, ",\"checkpoints\":{\"written\":%llu,\"seq\":%llu,\"last_bytes\":%zu,"
               "\"last_write_ms\":%lld,\"max_bytes\":%zu,\"max_write_ms\":%lld,\"failed\":%llu,"
               "\"restored_seq\":%llu,\"restore_ms\":%lld}", (unsigned long long)st->written,
               (unsigned long long)st->store.seq, st->last_bytes, (long long)st->last_write_ms,
               st->max_bytes, (long long)st->max_write_ms, (unsigned long long)st->failed,
               (unsigned long long)st->loaded.seq, (long long)st->restore_ms);
}

void run_state_report(const RunState *st)
{
    if (!st->written)
        return;
    fprintf(stderr, "vigil run: state saved in %s: checkpoint %llu, %zu bytes, written in %lld "
            "ms (%llu keys, %llu partial matches, %llu events of which %llu buffered); "
            "%llu checkpoints in this run, the largest %zu bytes, the slowest %lld ms\n",
            st->store.dir, (unsigned long long)st->store.seq, st->last_bytes,
            (long long)st->last_write_ms, (unsigned long long)st->last_info.keys,
            (unsigned long long)st->last_info.partials,
            (unsigned long long)st->last_info.events,
            (unsigned long long)st->last_info.buffered, (unsigned long long)st->written,
            st->max_bytes, (long long)st->max_write_ms);
}

void run_state_close(RunState *st)
{
    if (st->journal_fd >= 0)
        close(st->journal_fd);
    st->journal_fd = -1;
    ckpt_loaded_free(&st->loaded);
    buf_free(&st->known);
    pthread_mutex_destroy(&st->lock);
    ckpt_close(&st->store);
}

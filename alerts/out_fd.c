/* alerts/out_fd.c — the outputs that write to file descriptors: `stdout` (or -o FILE)
 * and `file` outputs (path templates, folders created, a cache of open files, rotation).
 *
 * Lines are buffered per descriptor and written with one write() per batch: when the
 * buffer reaches cfg->fd_buffer bytes, when the oldest buffered line is older than
 * cfg->fd_max_delay_ms at the next alert, and on flush. A failed write loses the
 * rest of the batch: the lines that went out whole before it broke (a reader that
 * closed part-way, as `| head` does) are counted as sent, the others as failed, and
 * the failure is logged once per episode (when the output goes from healthy to
 * failing), with the path and errno text.
 * A file whose path no longer names it (removed, renamed away) is opened again
 * before a batch, so alerts never go into a file that is gone. */
#include "alerts/outputs.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/fdio.h"

/* One descriptor and the lines waiting for it. */
typedef struct FdBuf {
    int fd;
    Buf buf;
    uint64_t lines;          /* lines in buf */
    int64_t oldest_ms;       /* monotonic time the first buffered line arrived */
    const char *follow;      /* the path fd was opened from (borrowed), or NULL (stdout) */
    bool make_dirs;          /* reopening `follow` may create its folders */
} FdBuf;

/* Health and counters shared by both kinds. */
typedef struct FdHealth {
    uint64_t sent, failed, dropped;
    uint64_t failed_at_flush;  /* `failed` at the previous flush */
    bool failing;
} FdHealth;

/* Counts an attempt: `sent` lines went out whole, `lost` did not (0 when err is 0). */
static void fd_health_result(FdHealth *h, const OutConfig *cfg, const char *name,
                             const char *path, uint64_t sent, uint64_t lost, int err)
{
    h->sent += sent;
    if (err == 0) {
        if (h->failing)
            out_log(cfg, "output %s: writing to %s works again", name, path);
        h->failing = false;
        return;
    }
    h->failed += lost;
    if (!h->failing)
        out_log(cfg, "output %s: cannot write to %s: %s (alerts are lost and counted "
                "until it works again)", name, path, strerror(err));
    h->failing = true;
}

/* mkdir -p of the folder that holds `path`. 0, or an errno value. */
static int mkdir_parents(const char *path)
{
    char *dir = strdup(path);
    if (!dir)
        return ENOMEM;
    int err = 0;
    for (char *p = dir + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
            err = errno;
            break;
        }
        *p = '/';
    }
    free(dir);
    return err;
}

static int file_open_path(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0 && errno == ENOENT) {
        int err = mkdir_parents(path);
        if (err) {
            errno = err;
            return -1;
        }
        fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    }
    return fd;
}

/* Before a batch is written: if the path no longer names the open file (its folder
 * was removed, logrotate renamed it away, someone deleted it), the batch would be
 * written into a file nobody can reach and lost without a word; open the path
 * again instead. 0, or an errno value if it cannot be opened (the batch then fails,
 * counted, and the next batch tries again). */
static int fdbuf_follow_path(FdBuf *fb, const OutConfig *cfg, const char *name)
{
    struct stat named, opened;
    if (fb->follow == NULL ||
        (stat(fb->follow, &named) == 0 && fstat(fb->fd, &opened) == 0 &&
         named.st_dev == opened.st_dev && named.st_ino == opened.st_ino))
        return 0;
    int fd = fb->make_dirs ? file_open_path(fb->follow)
                           : open(fb->follow, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        return errno;
    close(fb->fd);
    fb->fd = fd;
    out_log(cfg, "output %s: %s was removed or replaced; writing to a new %s", name,
            fb->follow, fb->follow);
    return 0;
}

/* Lines that end within the first `len` bytes of `data`. */
static uint64_t whole_lines(const char *data, size_t len)
{
    uint64_t n = 0;
    const char *end = data + len;
    const char *nl;
    while (data < end && (nl = memchr(data, '\n', (size_t)(end - data))) != NULL) {
        n++;
        data = nl + 1;
    }
    return n;
}

/* Writes out the buffered lines (fb->lines of them); *sent gets how many went out
 * whole, even when the write broke part-way (only then are newlines counted).
 * Returns 0 or an errno value. */
static int fdbuf_drain(FdBuf *fb, uint64_t *sent)
{
    size_t written = 0;
    int err = fd_write_all_counted(fb->fd, fb->buf.data, fb->buf.len, &written) < 0 ? errno : 0;
    *sent = err ? whole_lines(fb->buf.data, written) : fb->lines;
    buf_clear(&fb->buf);
    return err;
}

static void fdbuf_flush(FdBuf *fb, FdHealth *h, const OutConfig *cfg, const char *name,
                        const char *path)
{
    if (fb->lines == 0)
        return;
    uint64_t sent = 0;
    int err = fdbuf_follow_path(fb, cfg, name);
    if (err)
        buf_clear(&fb->buf);
    else
        err = fdbuf_drain(fb, &sent);
    uint64_t lines = fb->lines;
    fb->lines = 0;
    if (sent > lines)   /* a line never holds a newline of its own */
        sent = lines;
    fd_health_result(h, cfg, name, path, sent, lines - sent, err);
}

/* The clock of the batching delay (100 ms by default): the coarse monotonic clock,
 * read at every alert, costs a few nanoseconds where the exact one takes over 20,
 * and its tick (a few ms) is far below the delay. */
static inline int64_t batch_clock_ms(void)
{
#ifdef CLOCK_MONOTONIC_COARSE
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC_COARSE, &ts) == 0)
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
#endif
    return clock_monotonic_ms();
}

/* Appends one line; writes the batch when it is big or old enough. Inline: the
 * stdout output calls it for every alert. */
static inline void fdbuf_add(FdBuf *fb, FdHealth *h, const OutConfig *cfg, const char *name,
                             const char *path, const char *line, size_t len, int64_t now)
{
    /* room for the line, its newline and the NUL, mostly there already */
    if (fb->buf.cap - fb->buf.len < len + 2 && !buf_reserve(&fb->buf, len + 1)) {
        /* Out of memory: write out what is buffered, then try again with that room. */
        fb->buf.failed = false;
        fdbuf_flush(fb, h, cfg, name, path);
        if (!buf_reserve(&fb->buf, len + 1)) {
            fb->buf.failed = false;
            fd_health_result(h, cfg, name, path, 0, 1, ENOMEM);
            return;
        }
    }
    if (fb->lines == 0)
        fb->oldest_ms = now;
    /* the room is there: copy straight in, not through two more checks */
    char *at = fb->buf.data + fb->buf.len;
    memcpy(at, line, len);
    at[len] = '\n';
    at[len + 1] = '\0';
    fb->buf.len += len + 1;
    fb->lines++;
    if (fb->buf.len >= cfg->fd_buffer || now - fb->oldest_ms >= cfg->fd_max_delay_ms)
        fdbuf_flush(fb, h, cfg, name, path);
}

static int fd_health_flush_result(FdHealth *h)
{
    int rc = (h->failed != h->failed_at_flush || h->failing) ? -1 : 0;
    h->failed_at_flush = h->failed;
    return rc;
}

/* ---- stdout --------------------------------------------------------------- */

typedef struct StdoutOutput {
    Output base;
    OutConfig cfg;          /* a copy: the output may outlive its router */
    pthread_mutex_t mu;
    FdBuf fb;
    bool own_fd;
    char *path;              /* "stdout" or the -o path; heap */
    FdHealth h;
} StdoutOutput;

static int stdout_write(Output *o, const AlertMeta *m, const char *line, size_t len)
{
    StdoutOutput *so = (StdoutOutput *)o;
    (void)m;
    pthread_mutex_lock(&so->mu);
    uint64_t failed = so->h.failed;
    fdbuf_add(&so->fb, &so->h, &so->cfg, o->name, so->path, line, len, batch_clock_ms());
    int rc = so->h.failed != failed ? -1 : 0;
    pthread_mutex_unlock(&so->mu);
    return rc;
}

static int stdout_flush(Output *o, int64_t timeout_ms)
{
    StdoutOutput *so = (StdoutOutput *)o;
    (void)timeout_ms;
    pthread_mutex_lock(&so->mu);
    fdbuf_flush(&so->fb, &so->h, &so->cfg, o->name, so->path);
    int rc = fd_health_flush_result(&so->h);
    pthread_mutex_unlock(&so->mu);
    return rc;
}

static void stdout_drain(Output *o)
{
    StdoutOutput *so = (StdoutOutput *)o;
    pthread_mutex_lock(&so->mu);
    fdbuf_flush(&so->fb, &so->h, &so->cfg, o->name, so->path);
    pthread_mutex_unlock(&so->mu);
}

static void fd_health_stats(const FdHealth *h, uint64_t buffered, OutStats *st)
{
    st->sent = h->sent;
    st->failed = h->failed;
    st->dropped = h->dropped;
    st->buffered = buffered;
    st->healthy = !h->failing;
    st->state = h->failing ? "failing" : "ok";
}

static void stdout_stats(Output *o, OutStats *st)
{
    StdoutOutput *so = (StdoutOutput *)o;
    pthread_mutex_lock(&so->mu);
    fd_health_stats(&so->h, so->fb.lines, st);
    pthread_mutex_unlock(&so->mu);
}

static void stdout_destroy(Output *o)
{
    StdoutOutput *so = (StdoutOutput *)o;
    fdbuf_flush(&so->fb, &so->h, &so->cfg, o->name, so->path);
    if (so->own_fd)
        close(so->fb.fd);
    buf_free(&so->fb.buf);
    pthread_mutex_destroy(&so->mu);
    free(so->path);
    free(so);
}

/* Length of an output file once its buffer is out and on disk; -1 on failure. */
static int64_t synced_length(int fd)
{
    struct stat st;
    if (fdatasync(fd) < 0 && errno != EINVAL)   /* EINVAL: a file that cannot sync */
        return -1;
    return fstat(fd, &st) < 0 ? -1 : (int64_t)st.st_size;
}

/* Only -o FILE can be cut back after a crash: a terminal or pipe cannot. */
static int stdout_sync_files(Output *o, void (*fn)(void *user, const char *path,
                                                   uint64_t length), void *user)
{
    StdoutOutput *so = (StdoutOutput *)o;
    pthread_mutex_lock(&so->mu);
    fdbuf_flush(&so->fb, &so->h, &so->cfg, o->name, so->path);
    int64_t len = so->own_fd ? synced_length(so->fb.fd) : 0;
    int rc = so->h.failing || len < 0 ? -1 : 0;
    if (so->own_fd && len >= 0)
        fn(user, so->path, (uint64_t)len);
    pthread_mutex_unlock(&so->mu);
    return rc;
}

static const OutputOps stdout_ops = {stdout_write, stdout_flush, stdout_drain, stdout_stats,
                                     stdout_destroy, stdout_sync_files, NULL};

Output *out_stdout_new(const char *path, const OutConfig *cfg, char **err)
{
    StdoutOutput *so = calloc(1, sizeof *so);
    if (!so) {
        *err = buf_format("out of memory");
        return NULL;
    }
    so->base.ops = &stdout_ops;
    so->base.name = "stdout";
    so->base.kind = "stdout";
    so->cfg = *cfg;
    so->fb.fd = STDOUT_FILENO;
    if (path && strcmp(path, "-") != 0) {
        if (cfg->file_opened)
            cfg->file_opened(cfg->file_opened_user, path);
        so->fb.fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
        if (so->fb.fd < 0) {
            *err = buf_format("cannot open output file %s: %s", path, strerror(errno));
            free(so);
            return NULL;
        }
        so->own_fd = true;
    }
    so->path = strdup(so->own_fd ? path : "stdout");
    so->fb.follow = so->own_fd ? so->path : NULL;
    if (!so->path || pthread_mutex_init(&so->mu, NULL) != 0) {
        if (so->own_fd)
            close(so->fb.fd);
        free(so->path);
        free(so);
        *err = buf_format("out of memory");
        return NULL;
    }
    return &so->base;
}

/* ---- file ----------------------------------------------------------------- */

typedef struct OpenFile {
    char *path;              /* resolved path; heap */
    FdBuf fb;
    int64_t opened_ms;       /* alert time of the first line written since it was opened */
    uint64_t last_use;       /* for least-recently-used eviction */
} OpenFile;

typedef struct FileOutput {
    Output base;
    int64_t rotate_ms;       /* the declaration's, or DURATION_NONE */
    OutConfig cfg;          /* a copy: the output may outlive its router */
    pthread_mutex_t mu;
    OutTemplate path;
    OpenFile *files;         /* heap array of cfg->file_cache entries, n_files used */
    size_t n_files, cap_files;
    uint64_t use_clock;
    int64_t last_sweep_ms;
    FdHealth h;
    Buf scratch;             /* resolved path of the current alert */
    char **seen;             /* every path opened in this run, for checkpoints; heap */
    size_t n_seen, cap_seen;
} FileOutput;


static void file_close(FileOutput *fo, OpenFile *f)
{
    fdbuf_flush(&f->fb, &fo->h, &fo->cfg, fo->base.name, f->path);
    close(f->fb.fd);
    buf_free(&f->fb.buf);
    free(f->path);
}

/* Makes room in the cache by closing the least recently used file. */
static void file_evict_lru(FileOutput *fo)
{
    size_t lru = 0;
    for (size_t i = 1; i < fo->n_files; i++)
        if (fo->files[i].last_use < fo->files[lru].last_use)
            lru = i;
    file_close(fo, &fo->files[lru]);
    fo->files[lru] = fo->files[--fo->n_files];
}

/* Remembers a path the first time it is opened (checkpoints report its length) and
 * tells the file_opened hook before anything is written to it. */
static int file_note_path(FileOutput *fo, const char *path)
{
    for (size_t i = 0; i < fo->n_seen; i++)
        if (strcmp(fo->seen[i], path) == 0)
            return 0;
    if (fo->n_seen == fo->cap_seen) {
        size_t cap = fo->cap_seen ? fo->cap_seen * 2 : 8;
        char **grown = realloc(fo->seen, cap * sizeof *grown);
        if (!grown)
            return -1;
        fo->seen = grown;
        fo->cap_seen = cap;
    }
    if (!(fo->seen[fo->n_seen] = strdup(path)))
        return -1;
    fo->n_seen++;
    if (fo->cfg.file_opened)
        fo->cfg.file_opened(fo->cfg.file_opened_user, path);
    return 0;
}

/* The open file for `path`, opening it if needed; NULL with errno on failure. */
static OpenFile *file_get(FileOutput *fo, const char *path, int64_t alert_ms)
{
    for (size_t i = 0; i < fo->n_files; i++) {
        if (strcmp(fo->files[i].path, path) == 0) {
            fo->files[i].last_use = ++fo->use_clock;
            return &fo->files[i];
        }
    }
    char *copy = strdup(path);
    if (!copy || file_note_path(fo, path) < 0) {
        free(copy);
        errno = ENOMEM;
        return NULL;
    }
    int fd = file_open_path(path);
    if (fd < 0) {
        int err = errno;
        free(copy);
        errno = err;
        return NULL;
    }
    if (fo->n_files == fo->cap_files)
        file_evict_lru(fo);
    OpenFile *f = &fo->files[fo->n_files++];
    memset(f, 0, sizeof *f);
    f->path = copy;
    f->fb.fd = fd;
    f->fb.follow = f->path;
    f->fb.make_dirs = true;
    f->opened_ms = alert_ms;
    f->last_use = ++fo->use_clock;
    return f;
}

/* PATH.20260101T000000Z (the time the file was started), with -N if that exists. */
static char *file_rotated_name(const OpenFile *f)
{
    struct tm tm;
    int64_t s = f->opened_ms / 1000 - (f->opened_ms % 1000 < 0);
    time_t tt = (time_t)s;
    gmtime_r(&tt, &tm);
    char stamp[32];
    strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
    for (int n = 0; n < 1000; n++) {
        char *name = n ? buf_format("%s.%s-%d", f->path, stamp, n)
                       : buf_format("%s.%s", f->path, stamp);
        if (!name || access(name, F_OK) != 0)
            return name;
        free(name);
    }
    return NULL;
}

/* Renames a file older than `rotate` and starts a new one at the same path. */
static void file_rotate(FileOutput *fo, OpenFile *f, int64_t alert_ms)
{
    fdbuf_flush(&f->fb, &fo->h, &fo->cfg, fo->base.name, f->path);
    char *rotated = file_rotated_name(f);
    if (!rotated || rename(f->path, rotated) < 0) {
        out_log(&fo->cfg, "output %s: cannot rotate %s: %s", fo->base.name, f->path,
                rotated ? strerror(errno) : "out of memory");
        free(rotated);
        f->opened_ms = alert_ms;   /* try again one period later */
        return;
    }
    free(rotated);
    int fd = file_open_path(f->path);
    if (fd < 0) {
        out_log(&fo->cfg, "output %s: cannot reopen %s after rotation: %s", fo->base.name,
                f->path, strerror(errno));
        return;   /* keep writing to the renamed file rather than losing alerts */
    }
    close(f->fb.fd);
    f->fb.fd = fd;
    f->opened_ms = alert_ms;
}

/* Writes out batches that have waited too long in files other than the current one. */
static void file_sweep(FileOutput *fo, int64_t now)
{
    if (now - fo->last_sweep_ms < fo->cfg.fd_max_delay_ms)
        return;
    fo->last_sweep_ms = now;
    for (size_t i = 0; i < fo->n_files; i++) {
        OpenFile *f = &fo->files[i];
        if (f->fb.lines && now - f->fb.oldest_ms >= fo->cfg.fd_max_delay_ms)
            fdbuf_flush(&f->fb, &fo->h, &fo->cfg, fo->base.name, f->path);
    }
}

static int file_write(Output *o, const AlertMeta *m, const char *line, size_t len)
{
    FileOutput *fo = (FileOutput *)o;
    pthread_mutex_lock(&fo->mu);
    uint64_t failed = fo->h.failed;
    int64_t now = batch_clock_ms();
    buf_clear(&fo->scratch);
    out_template_render(&fo->path, m, &fo->scratch);
    OpenFile *f = NULL;
    if (fo->scratch.failed) {
        fd_health_result(&fo->h, &fo->cfg, o->name, "(path)", 0, 1, ENOMEM);
    } else if (!(f = file_get(fo, fo->scratch.data, m->time_ms))) {
        fd_health_result(&fo->h, &fo->cfg, o->name, fo->scratch.data, 0, 1, errno);
    } else {
        if (fo->rotate_ms != DURATION_NONE && fo->rotate_ms > 0 &&
            m->time_ms - f->opened_ms >= fo->rotate_ms)
            file_rotate(fo, f, m->time_ms);
        fdbuf_add(&f->fb, &fo->h, &fo->cfg, o->name, f->path, line, len, now);
    }
    file_sweep(fo, now);
    int rc = fo->h.failed != failed ? -1 : 0;
    pthread_mutex_unlock(&fo->mu);
    return rc;
}

static void file_drain_locked(FileOutput *fo)
{
    for (size_t i = 0; i < fo->n_files; i++)
        fdbuf_flush(&fo->files[i].fb, &fo->h, &fo->cfg, fo->base.name, fo->files[i].path);
}

static void file_drain(Output *o)
{
    FileOutput *fo = (FileOutput *)o;
    pthread_mutex_lock(&fo->mu);
    file_drain_locked(fo);
    pthread_mutex_unlock(&fo->mu);
}

static int file_flush(Output *o, int64_t timeout_ms)
{
    FileOutput *fo = (FileOutput *)o;
    (void)timeout_ms;
    pthread_mutex_lock(&fo->mu);
    file_drain_locked(fo);
    int rc = fd_health_flush_result(&fo->h);
    pthread_mutex_unlock(&fo->mu);
    return rc;
}

static void file_stats(Output *o, OutStats *st)
{
    FileOutput *fo = (FileOutput *)o;
    pthread_mutex_lock(&fo->mu);
    uint64_t buffered = 0;
    for (size_t i = 0; i < fo->n_files; i++)
        buffered += fo->files[i].fb.lines;
    fd_health_stats(&fo->h, buffered, st);
    pthread_mutex_unlock(&fo->mu);
}

static bool file_is_open(const FileOutput *fo, const char *path)
{
    for (size_t i = 0; i < fo->n_files; i++)
        if (strcmp(fo->files[i].path, path) == 0)
            return true;
    return false;
}

static int file_sync_files(Output *o, void (*fn)(void *user, const char *path,
                                                 uint64_t length), void *user)
{
    FileOutput *fo = (FileOutput *)o;
    pthread_mutex_lock(&fo->mu);
    file_drain_locked(fo);
    int rc = fo->h.failing ? -1 : 0;
    for (size_t i = 0; i < fo->n_files; i++)
        if (synced_length(fo->files[i].fb.fd) < 0)
            rc = -1;
    /* by path: files the cache closed are synced and reported too (a clean file
     * syncs at once), so a checkpoint never counts bytes a power loss could take */
    for (size_t i = 0; i < fo->n_seen; i++) {
        int fd = file_is_open(fo, fo->seen[i]) ? -1 : open(fo->seen[i], O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            if (synced_length(fd) < 0)
                rc = -1;
            close(fd);
        }
        struct stat st;
        if (stat(fo->seen[i], &st) == 0)
            fn(user, fo->seen[i], (uint64_t)st.st_size);
    }
    pthread_mutex_unlock(&fo->mu);
    return rc;
}

static void file_destroy(Output *o)
{
    FileOutput *fo = (FileOutput *)o;
    for (size_t i = 0; i < fo->n_seen; i++)
        free(fo->seen[i]);
    free(fo->seen);
    for (size_t i = 0; i < fo->n_files; i++)
        file_close(fo, &fo->files[i]);
    free(fo->files);
    out_template_free(&fo->path);
    buf_free(&fo->scratch);
    pthread_mutex_destroy(&fo->mu);
    free(fo->base.name_owned);
    free(fo);
}

static const OutputOps file_ops = {file_write, file_flush, file_drain, file_stats, file_destroy,
                                   file_sync_files, NULL};

Output *out_file_new(const OutputDecl *d, const OutConfig *cfg, char **err)
{
    FileOutput *fo = calloc(1, sizeof *fo);
    size_t cap = cfg->file_cache ? cfg->file_cache : 1;
    if (!fo || !(fo->files = calloc(cap, sizeof *fo->files))) {
        free(fo);
        *err = buf_format("out of memory");
        return NULL;
    }
    fo->cap_files = cap;
    fo->base.ops = &file_ops;
    fo->base.name = fo->base.name_owned = strdup(d->name);
    fo->base.kind = "file";
    fo->rotate_ms = d->rotate_ms;
    fo->cfg = *cfg;
    char *what = fo->base.name ? buf_format("output '%s' path", d->name) : NULL;
    int rc = what ? out_template_compile(&d->path, OV_BIT(OV_TEXT) | OV_BIT(OV_DATE) |
                                         OV_BIT(OV_HOUR) | OV_BIT(OV_RULE), what, &fo->path, err)
                  : -1;
    if (!what)
        *err = buf_format("out of memory");
    free(what);
    if (rc == 0 && pthread_mutex_init(&fo->mu, NULL) != 0) {
        out_template_free(&fo->path);
        *err = buf_format("out of memory");
        rc = -1;
    }
    if (rc < 0) {
        free(fo->files);
        free(fo->base.name_owned);
        free(fo);
        return NULL;
    }
    return &fo->base;
}

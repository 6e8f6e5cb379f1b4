/* cli/rejects.c — dead-letter and late-event records for `vigil run`. */
#include "cli/rejects.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

static int open_log(RejectLog *log, const char *path, const char *option, const char *what)
{
    memset(log, 0, sizeof *log);
    log->path = path;
    log->option = option;
    log->what = what;
    log->last_summary_ms = INT64_MIN;
    if (!path)
        return 0;
    /* close-on-exec: exec outputs' programs must not inherit the dead letters */
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    log->file = fd >= 0 ? fdopen(fd, "a") : NULL;
    if (!log->file) {
        int err = errno;
        if (fd >= 0)
            close(fd);
        fprintf(stderr, "vigil run: cannot open %s: %s\n", path, strerror(err));
        return -1;
    }
    return 0;
}

int rejects_open(Rejects *r, const char *errors_path, const char *late_path)
{
    Buf empty = BUF_INIT;
    r->line = empty;
    if (open_log(&r->errors, errors_path, "--errors", "malformed line") < 0)
        return -1;
    if (open_log(&r->late, late_path, "--late", "late event") < 0) {
        if (r->errors.file)
            fclose(r->errors.file);
        r->errors.file = NULL;
        return -1;
    }
    return 0;
}

/* Notes the result of a write or flush; a change of state is reported once. */
static void note_result(RejectLog *log, bool ok, int err)
{
    if (ok) {
        if (log->failing)
            fprintf(stderr, "vigil run: writing %s %s works again\n", log->option, log->path);
        log->failing = false;
        return;
    }
    if (!log->failing)
        fprintf(stderr, "vigil run: cannot write %s %s: %s (%ss are counted but not recorded "
                "until it works again)\n", log->option, log->path, strerror(err), log->what);
    log->failing = true;
    log->write_failed = true;
}

static void write_record(RejectLog *log, const Buf *line)
{
    if (line->failed) {
        note_result(log, false, ENOMEM);
        return;
    }
    errno = 0;
    bool ok = fwrite(line->data, 1, line->len, log->file) == line->len &&
              fputc('\n', log->file) != EOF;
    if (!ok)
        note_result(log, false, errno ? errno : EIO);
    log->dirty = true;
}

static void flush_log(RejectLog *log)
{
    if (!log->file || !log->dirty)
        return;
    log->dirty = false;
    errno = 0;
    bool ok = fflush(log->file) == 0;
    note_result(log, ok, errno ? errno : EIO);
    clearerr(log->file);   /* a later flush says whether it works again */
}

/* Without a file: the first few one by one, then counted for the periodic summary. */
static bool log_individually(RejectLog *log)
{
    if (log->logged < REJECTS_LOG_FIRST) {
        log->logged++;
        return true;
    }
    log->unlogged++;
    return false;
}

static void summarise(RejectLog *log, int64_t now_ms, bool force)
{
    if (!log->unlogged)
        return;
    if (!force && log->last_summary_ms != INT64_MIN &&
        now_ms - log->last_summary_ms < REJECTS_LOG_PERIOD_MS)
        return;
    if (!force && log->last_summary_ms == INT64_MIN) {
        /* the period starts with the first line that was not logged */
        log->last_summary_ms = now_ms;
        return;
    }
    fprintf(stderr, "vigil run: %llu more %ss not shown (%llu in total)\n",
            (unsigned long long)log->unlogged, log->what, (unsigned long long)log->count);
    log->unlogged = 0;
    log->last_summary_ms = now_ms;
}

static void record_head(Buf *b, const char *origin, uint64_t line_no, const char *reason)
{
    buf_clear(b);
    buf_puts(b, "{\"input\":");
    buf_json_string(b, origin, strlen(origin));
    buf_printf(b, ",\"line\":%llu,\"reason\":", (unsigned long long)line_no);
    buf_json_string(b, reason, strlen(reason));
}

void rejects_dead_letter(Rejects *r, const char *origin, uint64_t line_no, const char *reason,
                         const char *text, size_t len, int64_t now_ms)
{
    RejectLog *log = &r->errors;
    log->count++;
    if (log->file) {
        record_head(&r->line, origin, line_no, reason);
        buf_puts(&r->line, ",\"text\":");
        buf_json_string(&r->line, text, len > REJECTS_MAX_TEXT ? REJECTS_MAX_TEXT : len);
        if (len > REJECTS_MAX_TEXT)
            buf_printf(&r->line, ",\"truncated_from\":%zu", len);
        buf_putc(&r->line, '}');
        write_record(log, &r->line);
        return;
    }
    if (log_individually(log))
        fprintf(stderr, "vigil run: %s:%llu: %s: %s\n", origin, (unsigned long long)line_no,
                log->what, reason);
    summarise(log, now_ms, false);
}

void rejects_late(Rejects *r, const Event *ev, int64_t watermark_ms, int64_t now_ms)
{
    RejectLog *log = &r->late;
    char t[32], wm[32], reason[128];
    time_format_iso(ev->time_ms, t);
    time_format_iso(watermark_ms, wm);
    snprintf(reason, sizeof reason, "late: event time %s is before the watermark %s", t, wm);
    log->count++;
    if (log->file) {
        record_head(&r->line, ev->origin, ev->origin_line, reason);
        buf_puts(&r->line, ",\"event\":");
        buf_append(&r->line, ev->line, ev->line_len);
        buf_putc(&r->line, '}');
        write_record(log, &r->line);
        return;
    }
    if (log_individually(log))
        fprintf(stderr, "vigil run: %s:%llu: %s\n", ev->origin,
                (unsigned long long)ev->origin_line, reason);
    summarise(log, now_ms, false);
}

void rejects_tick(Rejects *r, int64_t now_ms, bool force)
{
    summarise(&r->errors, now_ms, force);
    summarise(&r->late, now_ms, force);
    flush_log(&r->errors);
    flush_log(&r->late);
}

static int close_log(RejectLog *log)
{
    if (log->file && fclose(log->file) != 0)
        note_result(log, false, errno);
    log->file = NULL;
    return log->write_failed ? -1 : 0;
}

int rejects_close(Rejects *r)
{
    rejects_tick(r, 0, true);
    int rc = close_log(&r->errors);
    if (close_log(&r->late) < 0)
        rc = -1;
    buf_free(&r->line);
    return rc;
}

/* cli/rejects.h — where `vigil run` sends what it does not match: dead letters
 * (malformed lines) and late events.
 *
 * Owns: the --errors and --late files (opened for appending) and the rate limit of
 * the stderr log used when a file is not given: the first REJECTS_LOG_FIRST lines
 * are logged one by one, then one summary line per REJECTS_LOG_PERIOD_MS. Each file
 * record is one JSON line: {"input":"f.jsonl","line":12,"reason":"...","text":"..."}
 * (late events carry "event" with the original object instead of "text"; a cut text
 * comes with "truncated_from": the line's length). A file that cannot be written is
 * reported on stderr once when it starts failing, with its path and the reason, and
 * again when it works again. */
#ifndef VIGIL_CLI_REJECTS_H
#define VIGIL_CLI_REJECTS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/buf.h"
#include "nfa/event.h"

#define REJECTS_LOG_FIRST 10
#define REJECTS_LOG_PERIOD_MS 10000
/* Longer rejected lines are cut in the record (a dead-letter file must not grow by a
 * megabyte per bad line); the record then says how long the line was. */
#define REJECTS_MAX_TEXT 65536

typedef struct RejectLog {
    FILE *file;              /* owned; NULL: log to stderr, rate-limited */
    const char *path;        /* the file's path (borrowed from the options), or NULL */
    const char *option;      /* "--errors" / "--late", for messages */
    const char *what;        /* "malformed line" / "late event", for messages */
    bool dirty;              /* records written since the last flush */
    bool failing;            /* the last write or flush failed (reported once) */
    uint64_t count;
    uint64_t logged;         /* lines written to stderr one by one */
    uint64_t unlogged;       /* not written since the last summary */
    int64_t last_summary_ms;
    bool write_failed;
} RejectLog;

typedef struct Rejects {
    RejectLog errors, late;
    Buf line;                /* record being built */
} Rejects;

/* Opens the files that are given (NULL: stderr log). -1 with a message on stderr. */
int rejects_open(Rejects *r, const char *errors_path, const char *late_path);
void rejects_dead_letter(Rejects *r, const char *origin, uint64_t line_no, const char *reason,
                         const char *text, size_t len, int64_t now_ms);
void rejects_late(Rejects *r, const Event *ev, int64_t watermark_ms, int64_t now_ms);
/* Prints the pending summary lines if REJECTS_LOG_PERIOD_MS has passed (or `force`),
 * and writes out the records buffered since the last call, so that a dead letter is
 * in its file within a turn of the read loop (someone may be tailing it) and a
 * failing file is reported when it fails, not at exit. */
void rejects_tick(Rejects *r, int64_t now_ms, bool force);
/* Flushes and closes the files; -1 if a write failed. */
int rejects_close(Rejects *r);

#endif

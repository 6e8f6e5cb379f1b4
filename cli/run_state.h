/* cli/run_state.h — `vigil run --state DIR`: when to checkpoint, what goes in, and
 * recovery at start.
 *
 * Owns: the CkptStore (runtime/checkpoint.h), the journal DIR/opened of the output
 * files each run opens (with their lengths then), the list of every file vigil has
 * appended to under this state (restored ones included), and the figures it logs
 * (size, time to write, time to restore).
 *
 * Exactly-once for files: a checkpoint holds the lengths of every known file (-o
 * FILE, `file` outputs, --errors, --late; also those of earlier runs and of rule sets
 * replaced by a reload) at the moment the engine state was captured (the workers
 * paused, the outputs written out and synced), and recovery cuts them back to those lengths before anything is
 * written, then resumes the inputs from their checkpointed offsets. A file first
 * opened after the last checkpoint is in the journal with its length at opening, and
 * is cut back to that. Outputs that cannot be rolled back (a terminal or pipe on
 * stdout, exec, tcp, unix) get what the replay produces again: at least once. */
#ifndef VIGIL_CLI_RUN_STATE_H
#define VIGIL_CLI_RUN_STATE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "alerts/alerts.h"
#include "cli/rejects.h"
#include "runtime/checkpoint.h"
#include "runtime/engine.h"
#include "runtime/input.h"

typedef struct RunState {
    CkptStore store;
    int64_t every_ms;          /* processing time between checkpoints */
    int64_t last_ms;           /* monotonic time of the last checkpoint (or the start) */
    int journal_fd;            /* DIR/opened, append-only; -1 when closed */
    CkptLoaded loaded;         /* the checkpoint found at start (body NULL: none) */
    pthread_mutex_t lock;      /* guards `known`: workers open output files too */
    Buf known;                 /* every file path to measure at a checkpoint, as a files
                                  section (lengths unused) */
    const char *errors_path, *late_path;   /* --errors / --late, borrowed */
    uint64_t written;          /* checkpoints written by this run */
    size_t last_bytes;
    int64_t last_write_ms;     /* duration of the last write, capture included */
    size_t max_bytes;          /* the largest and slowest checkpoint of this run */
    int64_t max_write_ms;
    uint64_t failed;           /* checkpoints that could not be written */
    int64_t restore_ms;        /* time the restore took */
    EngineCheckpointInfo last_info;
} RunState;

/* "10s", "500ms", "2m", "1h" (a plain number is seconds). False if malformed or 0. */
bool run_state_parse_every(const char *text, int64_t *ms);

/* Opens and locks DIR, loads the newest good checkpoint (reporting a skipped one) and,
 * if there is one, cuts the output files back to its lengths. Call before the outputs
 * are opened. -1 with a message on stderr. */
int run_state_open(RunState *st, const char *dir, int64_t every_ms, const char *errors_path,
                   const char *late_path);
/* The AlertOptions.file_opened hook (user: the RunState). */
void run_state_file_opened(void *user, const char *path);
/* Restores the loaded checkpoint into a fresh engine and moves the inputs to their
 * offsets; logs what it did. Nothing to do without a checkpoint. -1 with a message. */
int run_state_restore(RunState *st, Engine *engine, InputSet *inputs);
/* True when every_ms has passed since the last checkpoint. */
bool run_state_due(const RunState *st, int64_t mono_now);
/* Writes a checkpoint between two events. -1 with a message on stderr (the run goes
 * on; the previous checkpoint stays). */
int run_state_checkpoint(RunState *st, Engine *engine, AlertRouter *alerts, InputSet *inputs,
                         Rejects *rejects);
/* Appends ,"checkpoints":{"written":N,"seq":N,"last_bytes":N,"last_write_ms":N,
 * "max_bytes":N,"max_write_ms":N,"failed":N,"restored_seq":N,"restore_ms":N} for
 * --stats (restored_seq 0: started without a checkpoint). */
void run_state_stats_json(const RunState *st, Buf *out);
/* Logs the last checkpoint's figures. */
void run_state_report(const RunState *st);
void run_state_close(RunState *st);

#endif

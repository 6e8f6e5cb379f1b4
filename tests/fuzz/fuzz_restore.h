/* tests/fuzz/fuzz_restore.h — the checkpoint restore fuzz target (fuzz_restore.c) as a
 * function, so that tests/fuzz/restore_seeds.c can check what its seeds reach. */
#ifndef VIGIL_TESTS_FUZZ_RESTORE_H
#define VIGIL_TESTS_FUZZ_RESTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "runtime/engine.h"

typedef struct FuzzRestoreOutcome {
    bool framed;                  /* ckpt_load took the file as it is */
    bool has_engine;              /* the body has an engine section */
    bool event_time;              /* restored into the event-time rules */
    bool restored;                /* engine_restore accepted it */
    size_t n_rules;               /* rules of the set it was restored into */
    EngineRestoreSummary sum;     /* when restored */
    uint64_t alerts;              /* delivered after the restore (events and end) */
} FuzzRestoreOutcome;

/* What LLVMFuzzerTestOneInput does with a checkpoint file, with its outcome in *out.
 * Aborts with a message when the restore breaks one of its promises. */
void fuzz_restore_run(const uint8_t *data, size_t size, FuzzRestoreOutcome *out);

#endif

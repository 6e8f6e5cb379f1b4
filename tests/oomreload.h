/* tests/oomreload.h — a hot reload in the middle of `vigil run` with allocation N
 * failing, judged: the out-of-memory tests of the reload paths (a control command,
 * SIGHUP, --watch; event time or processing time; with or without --state).
 * RUNTIME.md 5: a reload that cannot be done keeps the old rules running, says so and
 * counts it; one that can swaps between two events. Running out of memory is never
 * silent. So each run with allocation N failing must end in one of three ways: exit 0
 * with exactly the alerts of the run whose reload took the new rules, saying it
 * reloaded; exit 0 with exactly the alerts of a run that kept the old rules, saying
 * the reload failed for want of memory; or exit 3 saying that memory ran out. Never
 * exit 0 with an alert missing, never a crash or a hang (tests/oomcmd.h).
 * The events (tests/oomevents.h) come on standard input in two parts (tests/oomfeed.h):
 * the reload is asked once vigil has read the first, and the second follows once it
 * was done or failed, so the reload falls between the same two events in every run.
 * With --state (a checkpoint at nearly every turn) the run is stopped (SIGTERM) once it
 * has read the second part, and a second run on the same state folder, without
 * failure and with the new rules in the rule file, restores its checkpoint and reads a
 * third part from a file: the output file the pair leaves is what is judged, except
 * after an exit 3, where the parts read from the pipe cannot be read again, so the
 * second run must only exit 0. Call these from tests only. */
#ifndef VIGIL_TESTS_OOMRELOAD_H
#define VIGIL_TESTS_OOMRELOAD_H

#include <stdbool.h>
#include <stddef.h>

#include "tests/oomfeed.h"

/* Rules on event time for the events: before the reload a rule that matches, one whose
 * partial matches time out, one with a filter, one with suppression. */
#define OOMRELOAD_OLD_RULES \
    "time ts lateness 3s;\n" \
    "rule pair { key u; begin a where t == \"login\"; followed_by b where t == \"buy\" and\n" \
    "  n > a.n; within 30s; on match alert \"pair {u}\"; }\n" \
    "rule quiet { key u; begin a where t == \"open\"; followed_by b where t == \"close\";\n" \
    "  within 5s; on match alert \"closed {u}\"; on timeout alert \"left open {u}\"; }\n" \
    "rule big { filter n > 90; key u; begin a where t == \"buy\"; on match alert \"big\"; }\n" \
    "rule calm { key u; begin a where t == \"view\"; suppress 20s; on match alert \"viewed\"; }\n"
/* After: pair's action changed (it keeps its state), quiet's window changed (it starts
 * empty), big removed, calm unchanged, shop added. */
#define OOMRELOAD_NEW_RULES \
    "time ts lateness 3s;\n" \
    "rule pair { key u; begin a where t == \"login\"; followed_by b where t == \"buy\" and\n" \
    "  n > a.n; within 30s; on match alert \"pair again {u}\" fields { n: b.n }; }\n" \
    "rule quiet { key u; begin a where t == \"open\"; followed_by b where t == \"close\";\n" \
    "  within 9s; on match alert \"closed {u}\"; on timeout alert \"left open {u}\"; }\n" \
    "rule calm { key u; begin a where t == \"view\"; suppress 20s; on match alert \"viewed\"; }\n" \
    "rule shop { key u; begin a where t == \"buy\"; followed_by b where t == \"buy\";\n" \
    "  within 10s; on match alert \"two buys {u}\"; }\n"
/* What the reload from the one to the other logs, and a reload to the same rules. */
#define OOMRELOAD_SUMMARY "reloaded 4 rules: 1 changed, 1 added, 1 removed, 2 kept state"
#define OOMRELOAD_KEPT_ALL "4 kept state"
/* Alerts that only the new rules make, and one only the old make. */
#define OOMRELOAD_NEW_MARKS {"pair again", "\"rule\":\"shop\"", NULL}
#define OOMRELOAD_OLD_MARKS {"\"rule\":\"big\"", NULL}

typedef struct OomReloadCase {
    const char *name;              /* the scratch folder's, and the printed counts' */
    OomFeedAction trigger;         /* OOMFEED_RELOAD (vigil ctl), OOMFEED_HUP or OOMFEED_WATCH */
    const char *old_rules, *new_rules;
    const char *summary;           /* in the log line of the reload without failure */
    const char *kept_all;          /* in that of a reload to the same rules */
    const char *const *new_marks;  /* each in the alerts with the new rules; NULL-ended */
    const char *const *old_marks;  /* each in the alerts with the old rules; NULL-ended */
    bool arrival_time;             /* processing time: alerts compared without their time */
    bool state;                    /* --state, and the run restoring after it (above) */
    /* Which allocations fail: every `step`-th, and through the reload every
     * `reload_step`-th (`reload_step_sanitized` under the sanitizers); VIGIL_OOM_STEP
     * sets both steps. The reload's part starts `before_reload` allocations before the
     * last of a run stopped where the reload comes: its end's allocations (with
     * --state its final checkpoint's, and those of the checkpoints of the turns it
     * waits, as many as there happen to be) stand where the reload's start. */
    size_t step, reload_step, reload_step_sanitized, before_reload;
} OomReloadCase;

/* The case's runs with `workers` ("1": alerts compared byte for byte; more: as lines in
 * any order) and each allocation of the sweep failing in turn, each judged as above.
 * First checks the two runs it compares with (the reload without failure, and one to
 * the same rules) and their marks; at the end prints how many runs ended each way and
 * asserts that some kept the old rules and some exited 3. */
void oomreload_sweep(const OomReloadCase *c, const char *workers);

#endif

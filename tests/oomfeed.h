/* tests/oomfeed.h — `vigil run` under tests/oomcmd.h with its standard input fed in
 * two parts by another process (a feeder), and something done in between: a stop
 * (SIGTERM) or a hot reload (through the control socket, by SIGHUP, or by --watch
 * seeing the rule file replaced). The feeder is forked before the allocations are
 * counted, so its own are not; it leaves with _exit. Needs tests/oomcmd.c and
 * tests/sockutil.c. */
#ifndef VIGIL_TESTS_OOMFEED_H
#define VIGIL_TESTS_OOMFEED_H

#include <stdbool.h>

#include "tests/oomcmd.h"

/* Once the command has read all of `first` (the pipe is empty), the feeder either
 * stops it (SIGTERM, as an operator would; the pipe stays open until the command
 * returns, so the command never sees the input end), or puts `new_rules` in place at
 * `rules_path` (by rename, as an editor saves) and has the command reload them:
 * - OOMFEED_RELOAD asks on the --control socket `control` and waits for the reply (or
 *   the connection's end: a reply that could not be made);
 * - OOMFEED_HUP sends SIGHUP, and OOMFEED_WATCH leaves it to `vigil run --watch` to
 *   notice the rename; both then wait until the command's stderr says "vigil run:
 *   reload..." (it logs that line whether the reload was done or failed; stderr is
 *   the file tests/oomcmd.c captures it in, read through /proc).
 * It then writes `second` and closes the pipe, or with `stop_at_end` waits until the
 * command has read `second` and stops it as OOMFEED_STOP does. A command that returns
 * before then ends the feeder too. */
typedef enum OomFeedAction { OOMFEED_STOP, OOMFEED_RELOAD, OOMFEED_HUP, OOMFEED_WATCH }
    OomFeedAction;
typedef struct OomFeed {
    const char *first;
    OomFeedAction action;
    const char *control;                  /* OOMFEED_RELOAD */
    const char *rules_path, *new_rules;   /* a reload */
    const char *second;                   /* a reload */
    bool stop_at_end;                     /* a reload */
} OomFeed;

OomCmdRun oomfeed_run(OomCommand cmd, char *const *argv, size_t fail, const OomFeed *feed);

#endif

/* tests/oomfeed.h — `vigil run` under tests/oomcmd.h with its standard input fed in
 * two parts by another process (a feeder), and something done in between: a stop
 * (SIGTERM) or a hot reload through the control socket. The feeder is forked before
 * the allocations are counted, so its own are not; it leaves with _exit. Needs
 * tests/oomcmd.c and tests/sockutil.c. */
#ifndef VIGIL_TESTS_OOMFEED_H
#define VIGIL_TESTS_OOMFEED_H

#include "tests/oomcmd.h"

/* Once the command has read all of `first` (the pipe is empty), the feeder either
 * stops it (SIGTERM, as an operator would; the pipe stays open until the command
 * returns, so the command never sees the input end), or puts `new_rules` in place at
 * `rules_path` (by rename, as an editor saves), asks for a reload on the --control
 * socket `control`, waits for the reply (or the connection's end: a reply that could
 * not be made), then writes `second` and closes the pipe. A command that returns
 * before then ends the feeder too. */
typedef enum OomFeedAction { OOMFEED_STOP, OOMFEED_RELOAD } OomFeedAction;
typedef struct OomFeed {
    const char *first;
    OomFeedAction action;
    const char *control, *rules_path, *new_rules;   /* OOMFEED_RELOAD */
    const char *second;                             /* OOMFEED_RELOAD */
} OomFeed;

OomCmdRun oomfeed_run(OomCommand cmd, char *const *argv, size_t fail, const OomFeed *feed);

#endif

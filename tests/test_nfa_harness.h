/* tests/test_nfa_harness.h — drives rule text and JSON lines through the matcher API
 * (no runtime): one NfaKey per rule, results as canonical strings, for the NFA tests.
 *
 * A result string is "KIND STEP:[ID,...] STEP:[...]" (steps in pattern order, ids
 * from each event's "id" field), prefixed by "RULE|" with NH_WITH_RULE and with
 * "@MS" after KIND with NH_WITH_TIME. Results are kept sorted (a multiset). */
#ifndef VIGIL_TESTS_NFA_HARNESS_H
#define VIGIL_TESTS_NFA_HARNESS_H

#include <stdbool.h>
#include <stddef.h>

#include "nfa/nfa.h"

enum {
    NH_WITH_RULE = 1,      /* prefix results with the rule name */
    NH_WITH_TIME = 2,      /* add the result time in ms */
    NH_BY_ACTIONS = 4,     /* keep a kind only if the rule has an `on` clause for it */
    NH_SHARE_CONDS = 8,    /* rules share condition results (NfaCondShare / NfaCondCache) */
};

typedef struct NfaHarness NfaHarness;

#define NH_MAX_KEYS 4   /* partitions per rule; events go to the current one (nh_use_key) */

/* Parses, checks and compiles `text` (a whole rule file). NULL with *err (heap) on
 * failure. max_partials: the cap (0: none). */
NfaHarness *nh_new(const char *text, int flags, size_t max_partials, char **err);
void nh_free(NfaHarness *h);
/* Feeds one JSON object line to every rule; time from the numeric "ts" (seconds)
 * or, if absent, "ms". False with *err on a bad line. */
bool nh_feed_line(NfaHarness *h, const char *line, char **err);
/* Feeds compact events: "ID:N@TS[,FIELD=JSON...] ..." becomes
 * {"id":"ID","n":"N","ts":TS,"FIELD":JSON}; a token "!TS" advances time to TS. */
bool nh_feed_compact(NfaHarness *h, const char *events, char **err);
/* Advances every rule to `ms` (INT64_MAX: end of input). */
void nh_advance(NfaHarness *h, long long ms);
/* Sorted results so far. */
char **nh_results(NfaHarness *h, size_t *n);
/* Live partial matches summed over rules (from the counters) and dropped ones. */
unsigned long long nh_live(const NfaHarness *h);
unsigned long long nh_dropped(const NfaHarness *h);
/* True if every rule's key is NULL (nothing held). */
bool nh_idle(const NfaHarness *h);
const Nfa *nh_nfa(const NfaHarness *h, size_t rule);
/* Later events go to partition `key` (< NH_MAX_KEYS) of every rule; 0 at first. */
void nh_use_key(NfaHarness *h, size_t key);
/* The limits in force (change them between events) and the counters (shared by all rules). */
NfaLimits *nh_limits(NfaHarness *h);
const NfaCounters *nh_counters(const NfaHarness *h);
/* With NH_SHARE_CONDS, else NULL. */
const NfaCondShare *nh_share(const NfaHarness *h);
const NfaCondCache *nh_cache(const NfaHarness *h);
/* nfa_key_deadline of a rule's current key. */
long long nh_deadline(const NfaHarness *h, size_t rule);
/* A rule's current key (nh_use_key), for the matcher's questions about it. */
const NfaKey *nh_key(const NfaHarness *h, size_t rule);

/* Compares the results of two harnesses fed the same events. Returns NULL if they are
 * equal (then *n is their number), else a heap message naming the first difference. */
char *nh_same_results(NfaHarness *a, NfaHarness *b, size_t *n);

/* Compares results with `expected` (lines separated by ';' or '\n', blanks ignored).
 * Returns NULL if equal as multisets, else a heap message listing differences. */
char *nh_diff(NfaHarness *h, const char *expected);

#endif

/* tests/oomevents.h — the events the out-of-memory tests of `vigil run` feed it, and
 * rules made for them. The events follow a fixed pseudo-random sequence (the same in
 * every run, so runs compare): times in seconds rising by 1 or 2 from 1000000, and a
 * user, a type (login, buy, open, close or view) and a number below 100 each. Call
 * these from tests only. */
#ifndef VIGIL_TESTS_OOMEVENTS_H
#define VIGIL_TESTS_OOMEVENTS_H

#include <stdbool.h>
#include <stdint.h>

/* A rule that matches (pair), one whose partial matches time out (quiet), and one with
 * a filter and a template that builds a string (big), keyed on the user: everything a
 * worker allocates for. To put after a time declaration. */
#define OOMEVENTS_RULES \
    "rule pair { key u; begin a where t == \"login\"; followed_by b where t == \"buy\" and\n" \
    "  n > a.n; within 30s; on match alert \"pair {u}\" fields { first: a.n, then: b.n }; }\n" \
    "rule quiet { key u; begin a where t == \"open\"; followed_by b where t == \"close\";\n" \
    "  within 5s; on match alert \"closed {u}\"; on timeout alert \"left open {u}\"; }\n" \
    "rule big { filter n > 90; key u; begin a where t == \"buy\";\n" \
    "  on match alert \"big {u + \\\"/\\\" + str(a.n)}\"; }\n"

/* How many seconds an early event comes before its time: out of order, within a
 * lateness of that much or more. */
#define OOMEVENTS_EARLY 2

typedef struct OomEvent {
    long ts;            /* in order */
    bool early;         /* every fifth, to be moved OOMEVENTS_EARLY seconds back */
    unsigned user;      /* below the sequence's `users` */
    const char *type;   /* static */
    unsigned n;
} OomEvent;

typedef struct OomEventSeq {
    uint32_t rnd;
    long ts;
    unsigned users;
    unsigned long i;
} OomEventSeq;

/* The sequence `seed` over `users` users (a test's own seed gives it its own events). */
OomEventSeq oomevents_start(uint32_t seed, unsigned users);
OomEvent oomevents_next(OomEventSeq *seq);

/* Events `from` (counted from 0) to `to`, not included, of the sequence as JSON lines:
 * {"ts":TS,"u":"uUSER","t":"TYPE","n":N}, the early ones early, with "pad":"PAD" last
 * when pad is not NULL. Heap. */
char *oomevents_lines(uint32_t seed, unsigned users, int from, int to, const char *pad);

#endif

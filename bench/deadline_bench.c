/* bench/deadline_bench.c — micro-benchmark of the per-rule timers (runtime/deadline.h)
 * against the indexed 4-ary heap they replaced, on an engine-like trace. Not built by
 * make; from a configured build directory:
 *
 *   cc -O2 -g -I.. -I. -o deadline_bench ../bench/deadline_bench.c ../runtime/deadline.c
 *   ./deadline_bench [events] [rules] [keys per rule] [seed] [which]
 *
 * `which`: 0 both (twice each, alternating; the default), 1 the old heap once, 2 the
 * new timers once (for one-sided runs under valgrind --tool=cachegrind).
 *
 * The trace mimics scenario 4: events 9 ms apart on average; each event touches a
 * random key of each of a few random rules; a key not armed is armed at now + the
 * rule's window (1 to 14 minutes), an armed key keeps its deadline (an older partial
 * match still runs) or, one time in eight, moves it later; due timers are popped in
 * (deadline, key) order across rules through a RuleClock and are re-armed one time in
 * four, else dropped. Entries are allocated one by one and padded to the size of a
 * real PartEntry with its key, so that their heap_pos writes are cache misses as in
 * the engine. Both structures replay the same trace; the number of pops and a
 * checksum of the popped order are printed, and must agree. */
#define _POSIX_C_SOURCE 200809L   /* clock_gettime */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/deadline.h"

/* ---- the previous structure: indexed 4-ary heap of (deadline, entry) ------------- */

typedef struct OldSlot {
    int64_t deadline;
    PartEntry *entry;
} OldSlot;

typedef struct OldHeap {
    OldSlot *h;
    size_t n, cap;
} OldHeap;

static bool old_before(const OldSlot *a, const OldSlot *b)
{
    if (a->deadline != b->deadline)
        return a->deadline < b->deadline;
    const PartEntry *x = a->entry, *y = b->entry;
    if (x->hash != y->hash)
        return x->hash < y->hash;
    size_t n = x->klen < y->klen ? x->klen : y->klen;
    int c = memcmp(x->kbytes, y->kbytes, n);
    return c < 0 || (c == 0 && x->klen < y->klen);
}

static void old_place(OldHeap *d, size_t i, OldSlot s)
{
    d->h[i] = s;
    s.entry->heap_pos = i;
}

static void old_sift_up(OldHeap *d, size_t i)
{
    OldSlot s = d->h[i];
    while (i > 0 && old_before(&s, &d->h[(i - 1) / 4])) {
        old_place(d, i, d->h[(i - 1) / 4]);
        i = (i - 1) / 4;
    }
    old_place(d, i, s);
}

static void old_sift_down(OldHeap *d, size_t i)
{
    OldSlot s = d->h[i];
    for (;;) {
        size_t first = 4 * i + 1;
        if (first >= d->n)
            break;
        size_t end = first + 4 < d->n ? first + 4 : d->n, child = first;
        for (size_t c = first + 1; c < end; c++)
            if (old_before(&d->h[c], &d->h[child]))
                child = c;
        if (!old_before(&d->h[child], &s))
            break;
        old_place(d, i, d->h[child]);
        i = child;
    }
    old_place(d, i, s);
}

static int old_set(OldHeap *d, PartEntry *e, int64_t deadline)
{
    if (deadline == INT64_MAX) {
        if (e->heap_pos == SIZE_MAX)
            return 0;
        size_t i = e->heap_pos;
        e->heap_pos = SIZE_MAX;
        e->deadline = INT64_MAX;
        OldSlot last = d->h[--d->n];
        if (i != d->n) {
            old_place(d, i, last);
            old_sift_up(d, i);
            old_sift_down(d, last.entry->heap_pos);
        }
        return 0;
    }
    if (e->heap_pos == SIZE_MAX) {
        if (d->n == d->cap) {
            size_t cap = d->cap ? d->cap * 2 : 64;
            OldSlot *h = realloc(d->h, cap * sizeof *h);
            if (!h)
                return -1;
            d->h = h;
            d->cap = cap;
        }
        e->deadline = deadline;
        old_place(d, d->n++, (OldSlot){deadline, e});
        old_sift_up(d, e->heap_pos);
        return 0;
    }
    int64_t old = e->deadline;
    e->deadline = deadline;
    d->h[e->heap_pos].deadline = deadline;
    if (deadline < old)
        old_sift_up(d, e->heap_pos);
    else if (deadline > old)
        old_sift_down(d, e->heap_pos);
    return 0;
}

/* ---- the two structures behind one interface ------------------------------------- */

typedef struct Timers {
    bool old;
    OldHeap oh;
    DeadlineHeap nh;
} Timers;

static int t_set(Timers *t, PartEntry *e, int64_t at)
{
    return t->old ? old_set(&t->oh, e, at) : deadline_set(&t->nh, e, at);
}

static PartEntry *t_top(const Timers *t)
{
    if (t->old)
        return t->oh.n ? t->oh.h[0].entry : NULL;
    return deadline_top(&t->nh);
}

static int64_t t_next(const Timers *t)
{
    if (t->old)
        return t->oh.n ? t->oh.h[0].deadline : INT64_MAX;
    return deadline_next(&t->nh);
}

/* ---- the trace --------------------------------------------------------------------- */

typedef struct Params {
    size_t events, rules, keys;
    uint64_t seed;
} Params;

enum { ENTRY_BYTES = 160 };   /* a PartEntry with one key value and its bytes */

static uint64_t next_rand(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static PartEntry **make_entries(const Params *p)
{
    size_t n = p->rules * p->keys;
    PartEntry **e = malloc(n * sizeof *e);
    if (!e)
        return NULL;
    uint64_t seed = 7;
    for (size_t i = 0; i < n; i++) {
        e[i] = calloc(1, ENTRY_BYTES);
        if (!e[i])
            return NULL;   /* the benchmark exits: nothing to free */
        char *name = (char *)(e[i] + 1);
        snprintf(name, ENTRY_BYTES - sizeof *e[i], "u%zu", i % p->keys);
        e[i]->kbytes = name;
        e[i]->klen = strlen(name);
        e[i]->hash = next_rand(&seed);
        e[i]->deadline = INT64_MAX;
        e[i]->heap_pos = SIZE_MAX;
    }
    /* shuffle the allocation order away from the key order, as a long run does */
    for (size_t i = n; i > 1; i--) {
        size_t j = next_rand(&seed) % i;
        PartEntry *x = e[i - 1];
        e[i - 1] = e[j];
        e[j] = x;
    }
    return e;
}

typedef struct Result {
    double seconds;
    uint64_t pops, sets, checksum;
} Result;

/* Pops every timer due at `now`; at the end (rearm false) drops them all. */
static void fire_due(Timers *t, RuleClock *clock, int64_t now, const int64_t *window,
                     uint64_t *seed, Result *r, bool rearm)
{
    size_t ri = 0;
    while (rule_clock_next(clock, &ri) <= now) {
        PartEntry *e = t_top(&t[ri]);
        r->pops++;
        r->checksum = r->checksum * 31 + (uint64_t)e->deadline * 7 + e->hash;
        int64_t again = rearm && next_rand(seed) % 4 == 0 ? now + window[ri] : INT64_MAX;
        t_set(&t[ri], e, again);
        rule_clock_set(clock, ri, t_next(&t[ri]));
    }
}

static Result run(const Params *p, PartEntry **entries, bool old)
{
    Result r = {0};
    Timers *t = calloc(p->rules, sizeof *t);
    int64_t *window = malloc(p->rules * sizeof *window);
    RuleClock clock;
    if (!t || !window || rule_clock_init(&clock, p->rules) < 0) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    for (size_t i = 0; i < p->rules; i++) {
        t[i].old = old;
        deadline_init(&t[i].nh);
        window[i] = (int64_t)(1 + i % 14) * 60000;
    }
    uint64_t seed = p->seed;
    int64_t now = 1700000000000;
    struct timespec a, b;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
    for (size_t ev = 0; ev < p->events; ev++) {
        now += (int64_t)(next_rand(&seed) % 18);
        fire_due(t, &clock, now, window, &seed, &r, true);
        size_t touched = 1 + next_rand(&seed) % 4;
        for (size_t k = 0; k < touched; k++) {
            size_t ri = next_rand(&seed) % p->rules;
            PartEntry *e = entries[ri * p->keys + next_rand(&seed) % p->keys];
            if (e->heap_pos == SIZE_MAX || next_rand(&seed) % 8 == 0) {
                t_set(&t[ri], e, now + window[ri]);
                r.sets++;
                rule_clock_set(&clock, ri, t_next(&t[ri]));
            }
        }
    }
    fire_due(t, &clock, INT64_MAX - 1, window, &seed, &r, false);
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
    r.seconds = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
    for (size_t i = 0; i < p->rules; i++) {
        free(t[i].oh.h);
        deadline_free(&t[i].nh);
    }
    free(t);
    free(window);
    rule_clock_free(&clock);
    return r;
}

int main(int argc, char **argv)
{
    Params p = {.events = 2000000, .rules = 100, .keys = 20000, .seed = 42};
    if (argc > 1)
        p.events = strtoull(argv[1], NULL, 10);
    if (argc > 2)
        p.rules = strtoull(argv[2], NULL, 10);
    if (argc > 3)
        p.keys = strtoull(argv[3], NULL, 10);
    if (argc > 4)
        p.seed = strtoull(argv[4], NULL, 10);
    int which = argc > 5 ? atoi(argv[5]) : 0;
    if (!p.rules || !p.keys)
        return 2;
    PartEntry **entries = make_entries(&p);
    if (!entries) {
        fprintf(stderr, "out of memory\n");
        return 1;
    }
    printf("%zu events, %zu rules, %zu keys per rule, seed %llu\n", p.events, p.rules, p.keys,
           (unsigned long long)p.seed);
    for (int round = 0; round < (which ? 1 : 2); round++)
        for (int old = 1; old >= 0; old--) {
            if ((which == 1 && !old) || (which == 2 && old))
                continue;
            Result r = run(&p, entries, old);
            printf("%-12s %7.3f s  %9llu sets  %9llu pops  %6.1f ns/op  order %016llx\n",
                   old ? "4-ary heap" : "rings + heap", r.seconds, (unsigned long long)r.sets,
                   (unsigned long long)r.pops, r.seconds * 1e9 / (double)(r.sets + r.pops),
                   (unsigned long long)r.checksum);
        }
    return 0;
}

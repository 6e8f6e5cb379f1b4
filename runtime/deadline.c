/* runtime/deadline.c — indexed min-heap of partition entries by deadline. */
#include "runtime/deadline.h"

#include <stdlib.h>
#include <string.h>

void deadline_init(DeadlineHeap *d)
{
    d->h = NULL;
    d->n = d->cap = 0;
}

void deadline_free(DeadlineHeap *d)
{
    for (size_t i = 0; i < d->n; i++)
        d->h[i].entry->heap_pos = SIZE_MAX;
    free(d->h);
    deadline_init(d);
}

/* Equal deadlines are ordered by key, so the order in which they fire does not depend
 * on the heap's history: a run restored from a checkpoint (whose heap is rebuilt in
 * table order) fires them, and writes their alerts, exactly as the original would.
 * Only ties read the (cold) entries. */
static bool slot_before(const DeadlineSlot *a, const DeadlineSlot *b)
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

static void place(DeadlineHeap *d, size_t i, DeadlineSlot s)
{
    d->h[i] = s;
    s.entry->heap_pos = i;
}

/* Four children per node: every move writes the moved entry's heap_pos, a cache miss
 * on a cold entry, so a heap half as deep costs about half as much; the four child
 * slots share one cache line. */
#define ARITY 4

static void sift_up(DeadlineHeap *d, size_t i)
{
    DeadlineSlot s = d->h[i];
    while (i > 0) {
        size_t parent = (i - 1) / ARITY;
        if (!slot_before(&s, &d->h[parent]))
            break;
        place(d, i, d->h[parent]);
        i = parent;
    }
    place(d, i, s);
}

static void sift_down(DeadlineHeap *d, size_t i)
{
    DeadlineSlot s = d->h[i];
    for (;;) {
        size_t first = ARITY * i + 1;
        if (first >= d->n)
            break;
        size_t end = first + ARITY < d->n ? first + ARITY : d->n;
        size_t child = first;
        for (size_t c = first + 1; c < end; c++)
            if (slot_before(&d->h[c], &d->h[child]))
                child = c;
        if (!slot_before(&d->h[child], &s))
            break;
        place(d, i, d->h[child]);
        i = child;
    }
    place(d, i, s);
}

static void heap_delete(DeadlineHeap *d, PartEntry *e)
{
    size_t i = e->heap_pos;
    e->heap_pos = SIZE_MAX;
    e->deadline = INT64_MAX;
    DeadlineSlot last = d->h[--d->n];
    if (i == d->n)
        return;
    place(d, i, last);
    sift_up(d, i);
    sift_down(d, last.entry->heap_pos);
}

int deadline_set(DeadlineHeap *d, PartEntry *e, int64_t deadline)
{
    if (deadline == INT64_MAX) {
        if (e->heap_pos != SIZE_MAX)
            heap_delete(d, e);
        return 0;
    }
    if (e->heap_pos == SIZE_MAX) {
        if (d->n == d->cap) {
            size_t cap = d->cap ? d->cap * 2 : 64;
            DeadlineSlot *h = realloc(d->h, cap * sizeof *h);
            if (!h)
                return -1;
            d->h = h;
            d->cap = cap;
        }
        e->deadline = deadline;
        place(d, d->n++, (DeadlineSlot){deadline, e});
        sift_up(d, e->heap_pos);
        return 0;
    }
    int64_t old = e->deadline;
    e->deadline = deadline;
    d->h[e->heap_pos].deadline = deadline;
    if (deadline < old)
        sift_up(d, e->heap_pos);
    else if (deadline > old)
        sift_down(d, e->heap_pos);   /* equal: the key order is unchanged too */
    return 0;
}

/* ---- the rules' clock ---------------------------------------------------------- */

int rule_clock_init(RuleClock *c, size_t n_rules)
{
    size_t n = n_rules ? n_rules : 1;
    c->at = malloc(n * sizeof *c->at);
    c->heap = malloc(n * sizeof *c->heap);
    c->pos = malloc(n * sizeof *c->pos);
    c->n = 0;
    if (!c->at || !c->heap || !c->pos) {
        rule_clock_free(c);
        return -1;
    }
    /* all at INT64_MAX: rule order is already a heap */
    for (size_t i = 0; i < n_rules; i++) {
        c->at[i] = INT64_MAX;
        c->heap[i] = c->pos[i] = (uint32_t)i;
    }
    c->n = n_rules;
    return 0;
}

void rule_clock_free(RuleClock *c)
{
    free(c->at);
    free(c->heap);
    free(c->pos);
    c->at = NULL;
    c->heap = c->pos = NULL;
    c->n = 0;
}

/* Ties go to the lower rule number, as a scan in rule order would find them. */
static bool clock_before(const RuleClock *c, uint32_t a, uint32_t b)
{
    return c->at[a] != c->at[b] ? c->at[a] < c->at[b] : a < b;
}

static void clock_place(RuleClock *c, size_t i, uint32_t rule)
{
    c->heap[i] = rule;
    c->pos[rule] = (uint32_t)i;
}

void rule_clock_move(RuleClock *c, size_t rule, int64_t at)
{
    uint32_t r = (uint32_t)rule;
    size_t i = c->pos[r];
    c->at[r] = at;
    while (i > 0 && clock_before(c, r, c->heap[(i - 1) / 2])) {
        clock_place(c, i, c->heap[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    for (;;) {
        size_t child = 2 * i + 1;
        if (child >= c->n)
            break;
        if (child + 1 < c->n && clock_before(c, c->heap[child + 1], c->heap[child]))
            child++;
        if (!clock_before(c, c->heap[child], r))
            break;
        clock_place(c, i, c->heap[child]);
        i = child;
    }
    clock_place(c, i, r);
}

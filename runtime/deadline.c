/* runtime/deadline.c — timers: sorted rings of partition entries by deadline, with a
 * heap for the deadlines out of their order (see deadline.h). */
#include "runtime/deadline.h"

#include <stdlib.h>
#include <string.h>

/* heap_pos (32 bits) of an entry in the heap: its index with the top bit set; of one
 * in a ring: the ring's number in the three bits below it, then its sequence number. A
 * ring whose sequence numbers reach SEQ_LIMIT renumbers its slots from 0 (ring_rebase);
 * a ring spans at most RING_MAX slots, and the heap HEAP_MAX. */
#define POS_BITS 32
#define IN_HEAP ((uint32_t)1 << (POS_BITS - 1))
#define RING_SHIFT (POS_BITS - 4)
#ifndef DEADLINE_SEQ_BITS   /* a test builds this file with fewer, to reach the limits */
#define DEADLINE_SEQ_BITS RING_SHIFT
#endif
_Static_assert(DEADLINE_SEQ_BITS >= 6 && DEADLINE_SEQ_BITS <= RING_SHIFT,
               "sequence numbers fit below the ring's number");
#define SEQ_LIMIT ((size_t)1 << DEADLINE_SEQ_BITS)
#define RING_MAX (SEQ_LIMIT / 2)
#define HEAP_MAX ((size_t)IN_HEAP - 1)
_Static_assert(PART_NOT_TIMED == UINT32_MAX && (IN_HEAP | (HEAP_MAX - 1)) < PART_NOT_TIMED,
               "no heap position is PART_NOT_TIMED");
_Static_assert(DEADLINE_RINGS <= 8, "ring numbers fit in three bits of heap_pos");
#define RING_MIN 16
#define HEAP_MIN 64
/* Holes are squeezed out of a ring spanning at least this many slots once they are
 * three quarters of it (or half of it when it is full): the linear cost is then paid for by the removals that made them. */
#define COMPACT_SPAN 64
/* Four children per node: every move writes the moved entry's heap_pos, a cache miss
 * on a cold entry, so a heap half as deep costs about half as much. The four child
 * slots share one cache line, but the order reads the deadlines from the entries, so
 * each level of a sift also reads up to four of them (the heap is the rare path). */
#define ARITY 4
/* For what a ring or the heap does only now and then (grow, shrink, renumber, squeeze
 * out holes, take a deadline out of order): kept out of deadline_change, whose every
 * call would otherwise save and restore the registers they use. */
#define RARE __attribute__((noinline, cold))
/* For the parts of deadline_change that deadline_add and deadline_drop share with it:
 * each caller gets its own copy, as when there was one caller. */
#define INLINE inline __attribute__((always_inline))

/* Equal deadlines are ordered by the key bytes, shorter keys first: both entries are
 * at hand already (the deadline is read from them), where a hash would have to be
 * computed from the bytes anyway (entries hold none). Shorter first also keeps keys
 * numbered in arrival order (`"o9"`, `"o10"`) in increasing order, so that timers armed
 * at the same time (event times in whole seconds) still extend a ring. */
static bool slot_before(const PartEntry *x, const PartEntry *y)
{
    if (x->deadline != y->deadline)
        return x->deadline < y->deadline;
    if (x->klen != y->klen)
        return x->klen < y->klen;
    return memcmp(x->tail, y->tail, x->klen) < 0;
}

/* ---- the heap of deadlines out of the rings' order ------------------------------- */

static void heap_place(DeadlineCore *c, size_t i, DeadlineSlot s)
{
    c->h[i] = s;
    s->heap_pos = (uint32_t)i | IN_HEAP;
}

static void sift_up(DeadlineCore *c, size_t i)
{
    DeadlineSlot s = c->h[i];
    while (i > 0) {
        size_t parent = (i - 1) / ARITY;
        if (!slot_before(s, c->h[parent]))
            break;
        heap_place(c, i, c->h[parent]);
        i = parent;
    }
    heap_place(c, i, s);
}

static void sift_down(DeadlineCore *c, size_t i)
{
    DeadlineSlot s = c->h[i];
    for (;;) {
        size_t first = ARITY * i + 1;
        if (first >= c->hn)
            break;
        size_t end = first + ARITY < c->hn ? first + ARITY : c->hn;
        size_t child = first;
        for (size_t k = first + 1; k < end; k++)
            if (slot_before(c->h[k], c->h[child]))
                child = k;
        if (!slot_before(c->h[child], s))
            break;
        heap_place(c, i, c->h[child]);
        i = child;
    }
    heap_place(c, i, s);
}

RARE static int heap_push(DeadlineCore *c, DeadlineSlot s)
{
    if (c->hn == c->hcap) {
        size_t cap = c->hcap ? c->hcap * 2 : HEAP_MIN;
        DeadlineSlot *h = cap <= HEAP_MAX ? realloc(c->h, cap * sizeof *h) : NULL;
        if (!h)
            return -1;
        c->h = h;
        c->hcap = cap;
    }
    heap_place(c, c->hn++, s);
    sift_up(c, c->hn - 1);
    return 0;
}

RARE static void heap_delete(DeadlineCore *c, size_t i)
{
    DeadlineSlot last = c->h[--c->hn];
    if (i != c->hn) {
        heap_place(c, i, last);
        sift_up(c, i);
        sift_down(c, last->heap_pos & ~IN_HEAP);
    }
    if (c->hcap > HEAP_MIN && c->hn <= c->hcap / 4) {   /* memory follows the keys */
        DeadlineSlot *h = realloc(c->h, c->hcap / 2 * sizeof *h);
        if (h) {   /* else keep the larger array: still correct */
            c->h = h;
            c->hcap /= 2;
        }
    }
}

/* ---- the sorted rings ------------------------------------------------------------ */

static DeadlineSlot *ring_at(const DeadlineRing *r, size_t seq)
{
    return &r->s[seq & (r->cap - 1)];
}

/* Changes the ring to cap slots (a power of two, at least its span) in place, so that
 * the allocator can grow or shrink the block where it is. Sequence numbers, and so
 * the entries' heap_pos, stay; a slot moves only when its index changes, and never
 * onto a slot not yet moved: the span is at most the smaller capacity, so no two
 * slots in it share an index under either. -1 on allocation failure (nothing
 * changes). */
RARE static int ring_resize(DeadlineRing *r, size_t cap)
{
    size_t old = r->cap;
    if (cap > old) {
        DeadlineSlot *s = cap <= RING_MAX ? realloc(r->s, cap * sizeof *s) : NULL;
        if (!s)
            return -1;
        r->s = s;
        for (size_t seq = r->head; seq < r->tail; seq++)
            if ((seq & (cap - 1)) != (seq & (old - 1)))
                s[seq & (cap - 1)] = s[seq & (old - 1)];
        r->cap = cap;
        return 0;
    }
    DeadlineSlot *s = r->s;
    for (size_t seq = r->head; seq < r->tail; seq++)
        s[seq & (cap - 1)] = s[seq & (old - 1)];
    s = realloc(s, cap * sizeof *s);
    if (s)   /* else the block stays larger than needed: still correct */
        r->s = s;
    r->cap = cap;
    return 0;
}

static uint32_t ring_pos(size_t ri, size_t seq)
{
    return (uint32_t)(ri << RING_SHIFT | seq);
}

/* Squeezes the holes out, in place: each entry moves back, never over an unread
 * slot, and gets its new sequence number. */
RARE static void ring_compact(DeadlineRing *r, size_t ri)
{
    size_t to = r->head;
    for (size_t seq = r->head; seq < r->tail; seq++) {
        DeadlineSlot s = *ring_at(r, seq);
        if (!s)
            continue;
        *ring_at(r, to) = s;
        s->heap_pos = ring_pos(ri, to++);
    }
    r->tail = to;
}

/* Renumbers the slots from below cap, keeping their places (a shift by a multiple of
 * cap): sequence numbers must stay below SEQ_LIMIT to fit heap_pos. */
RARE static void ring_rebase(DeadlineRing *r, size_t ri)
{
    size_t shift = r->head & ~(r->cap - 1);
    for (size_t seq = r->head; seq < r->tail; seq++)
        if (*ring_at(r, seq))
            (*ring_at(r, seq))->heap_pos = ring_pos(ri, seq - shift);
    r->head -= shift;
    r->tail -= shift;
}

RARE static void ring_fit_slow(DeadlineRing *r, size_t ri)
{
    size_t span = r->tail - r->head;
    if (span >= COMPACT_SPAN && r->live * 4 <= span) {
        ring_compact(r, ri);
        span = r->tail - r->head;
    }
    if (r->cap > RING_MIN && span <= r->cap / 4)
        (void)ring_resize(r, r->cap / 2);
}

/* Squeezing out holes needs live * 4 <= span, shrinking span <= cap / 4, and live <=
 * span <= cap: either needs live * 4 <= cap, one compare on the common path. */
static INLINE void ring_fit(DeadlineRing *r, size_t ri)
{
    if (r->live * 4 <= r->cap)
        ring_fit_slow(r, ri);
}

/* Appends a slot that sorts after the ring's last one. -1 if there is no room (the
 * caller puts it in the heap instead). */
static INLINE int ring_append(DeadlineRing *r, size_t ri, DeadlineSlot s)
{
    if (r->tail - r->head == r->cap) {
        if (r->cap && r->live * 2 <= r->cap)
            ring_compact(r, ri);
        else if (ring_resize(r, r->cap ? r->cap * 2 : RING_MIN) < 0)
            return -1;
    }
    if (r->tail >= SEQ_LIMIT)
        ring_rebase(r, ri);
    *ring_at(r, r->tail) = s;
    s->heap_pos = ring_pos(ri, r->tail++);
    if (!r->live++)
        r->first = s->deadline;
    r->last = s->deadline;
    return 0;
}

/* The ends' deadlines are read from their entries only when an end moves. */
static INLINE void ring_remove(DeadlineRing *r, size_t ri, size_t seq)
{
    *ring_at(r, seq) = NULL;
    if (!--r->live) {
        r->head = r->tail = 0;   /* restart the sequence numbers too */
    } else {
        if (seq == r->head) {
            while (!*ring_at(r, r->head))
                r->head++;
            r->first = (*ring_at(r, r->head))->deadline;
        }
        if (seq == r->tail - 1) {
            while (!*ring_at(r, r->tail - 1))
                r->tail--;
            r->last = (*ring_at(r, r->tail - 1))->deadline;
        }
    }
    ring_fit(r, ri);
}

/* Does ring a's last slot come after ring b's? (Both not empty.) */
static bool ends_later(const DeadlineRing *a, const DeadlineRing *b)
{
    if (a->last != b->last)
        return a->last > b->last;
    return slot_before(*ring_at(b, b->tail - 1), *ring_at(a, a->tail - 1));
}

/* The ring whose last slot is latest (DeadlineCore.latest), DEADLINE_RINGS if all are
 * empty. */
static size_t latest_ring(const DeadlineCore *c)
{
    size_t best = DEADLINE_RINGS;
    for (unsigned m = c->ring_mask; m; m &= m - 1) {
        size_t ri = (size_t)__builtin_ctz(m);
        if (best == DEADLINE_RINGS || ends_later(&c->ring[ri], &c->ring[best]))
            best = ri;
    }
    return best;
}

/* The ring to append s to: of those whose last slot precedes it, the one whose last
 * slot is latest; else an empty one; else none (DEADLINE_RINGS). Slots are read only
 * on equal deadlines. Most deadlines come after every ring's end: they extend the
 * latest ring, found without visiting the others. */
static INLINE size_t ring_for(const DeadlineCore *c, const PartEntry *s)
{
    if ((c->ring_mask >> c->latest & 1) && c->ring[c->latest].last < s->deadline)
        return c->latest;
    size_t best = DEADLINE_RINGS;
    for (unsigned m = c->ring_mask; m; m &= m - 1) {
        size_t ri = (size_t)__builtin_ctz(m);
        const DeadlineRing *r = &c->ring[ri];
        if (r->last > s->deadline ||
            (r->last == s->deadline && !slot_before(*ring_at(r, r->tail - 1), s)))
            continue;
        if (best == DEADLINE_RINGS || ends_later(r, &c->ring[best]))
            best = ri;
    }
    if (best == DEADLINE_RINGS && c->ring_mask != (1u << DEADLINE_RINGS) - 1)
        best = (size_t)__builtin_ctz(~c->ring_mask);   /* the first empty ring */
    return best;
}

/* ---- both ------------------------------------------------------------------------- */

/* The top among the heap's top and the rings' heads, ties decided by the key bytes. */
RARE static void find_top_slow(DeadlineHeap *d)
{
    const DeadlineCore *c = d->core;
    PartEntry *best = c->hn ? c->h[0] : NULL;
    int64_t at = best ? best->deadline : INT64_MAX;
    for (unsigned m = c->ring_mask; m; m &= m - 1) {
        const DeadlineRing *r = &c->ring[__builtin_ctz(m)];
        /* equal to `at` means a tie with best: no deadline is INT64_MAX */
        if (r->first < at || (r->first == at && slot_before(*ring_at(r, r->head), best))) {
            best = *ring_at(r, r->head);
            at = r->first;
        }
    }
    d->top = best;
    d->top_deadline = at;
}

/* find_top_slow without the key bytes: a tie, which needs them, starts over there. So
 * this calls nothing but that, last, and saves no registers. */
static INLINE void find_top(DeadlineHeap *d)
{
    const DeadlineCore *c = d->core;
    PartEntry *best = c->hn ? c->h[0] : NULL;
    int64_t at = best ? best->deadline : INT64_MAX;
    for (unsigned m = c->ring_mask; m; m &= m - 1) {
        const DeadlineRing *r = &c->ring[__builtin_ctz(m)];
        if (r->first == at) {
            find_top_slow(d);
            return;
        }
        if (r->first < at) {
            best = *ring_at(r, r->head);
            at = r->first;
        }
    }
    d->top = best;
    d->top_deadline = at;
}

static INLINE int insert(DeadlineHeap *d, PartEntry *e, int64_t deadline)
{
    if (!d->core && !(d->core = calloc(1, sizeof *d->core)))
        return -1;
    DeadlineCore *c = d->core;
    e->deadline = deadline;   /* the order reads it there */
    size_t ri = ring_for(c, e);
    if (ri < DEADLINE_RINGS && ring_append(&c->ring[ri], ri, e) == 0) {
        /* the latest ring stays so (ring_for chose it, or e precedes its end) unless
         * e went into the first ring */
        if (!c->ring_mask)
            c->latest = (unsigned)ri;
        c->ring_mask |= 1u << ri;
    } else if (heap_push(c, e) < 0) {
        e->deadline = INT64_MAX;
        return -1;
    }
    d->n++;
    return 0;
}

/* An entry the timers no longer hold. */
static void forget(PartEntry *e)
{
    e->heap_pos = PART_NOT_TIMED;
    e->deadline = INT64_MAX;
}

static INLINE void erase(DeadlineHeap *d, PartEntry *e)
{
    DeadlineCore *c = d->core;
    uint32_t pos = e->heap_pos;
    if (pos & IN_HEAP) {
        heap_delete(c, pos & ~IN_HEAP);
    } else {
        size_t ri = pos >> RING_SHIFT, seq = pos & (SEQ_LIMIT - 1);
        DeadlineRing *r = &c->ring[ri];
        bool was_end = seq == r->tail - 1;
        ring_remove(r, ri, seq);
        if (!r->live)
            c->ring_mask &= ~(1u << ri);
        if (was_end && ri == c->latest)   /* its end moved back, or it emptied */
            c->latest = (unsigned)latest_ring(c);
    }
    forget(e);
    d->n--;
}

void deadline_init(DeadlineHeap *d)
{
    *d = (DeadlineHeap){.top = NULL, .top_deadline = INT64_MAX, .core = NULL};
}

void deadline_free(DeadlineHeap *d)
{
    DeadlineCore *c = d->core;
    if (c) {
        for (size_t ri = 0; ri < DEADLINE_RINGS; ri++) {
            DeadlineRing *r = &c->ring[ri];
            for (size_t seq = r->head; seq < r->tail; seq++)
                if (*ring_at(r, seq))
                    forget(*ring_at(r, seq));
            free(r->s);
        }
        for (size_t i = 0; i < c->hn; i++)
            forget(c->h[i]);
        free(c->h);
        free(c);
    }
    deadline_init(d);
}

int deadline_change(DeadlineHeap *d, PartEntry *e, int64_t deadline)
{
    bool held = e->heap_pos != PART_NOT_TIMED;
    if (held && deadline == e->deadline)
        return 0;
    bool was_top = e == d->top;
    if (held)
        erase(d, e);
    int rc = deadline == INT64_MAX ? 0 : insert(d, e, deadline);
    if (!d->core)   /* nothing ever held, and the first insert failed */
        return rc;
    if (was_top || !d->top) {
        find_top(d);
    } else if (e->heap_pos != PART_NOT_TIMED) {
        /* the top's deadline is at hand: its entry, most likely cold (it is the key
         * that waited longest), is read only on a tie */
        if (deadline < d->top_deadline ||
            (deadline == d->top_deadline && slot_before(e, d->top))) {
            d->top = e;
            d->top_deadline = deadline;
        }
    }
    return rc;
}

/* The general add: a first deadline, one that does not extend the latest ring, or a
 * ring that must grow, squeeze out holes or renumber first. */
__attribute__((noinline)) static int add_slow(DeadlineHeap *d, PartEntry *e, int64_t deadline)
{
    if (insert(d, e, deadline) < 0)
        return -1;
    /* as in deadline_change: the top entry is read only on a tie */
    if (!d->top || deadline < d->top_deadline ||
        (deadline == d->top_deadline && slot_before(e, d->top))) {
        d->top = e;
        d->top_deadline = deadline;
    }
    return 0;
}

/* Most new deadlines extend the latest ring, which has room: they come after its
 * last slot, so after the top, which stays. That case calls nothing, so it saves no
 * registers. */
int deadline_add(DeadlineHeap *d, PartEntry *e, int64_t deadline)
{
    DeadlineCore *c = d->core;
    if (c) {
        unsigned ri = c->latest;
        DeadlineRing *r = &c->ring[ri];
        if ((c->ring_mask >> ri & 1) && r->last < deadline && r->tail - r->head < r->cap &&
            r->tail < SEQ_LIMIT) {
            e->deadline = deadline;
            *ring_at(r, r->tail) = e;
            e->heap_pos = ring_pos(ri, r->tail++);
            r->live++;
            r->last = deadline;
            d->n++;
            return 0;
        }
    }
    return add_slow(d, e, deadline);
}

/* The general removal: from the heap, or a ring's last slot (the ring's end moves
 * back, or it empties, and the latest ring may change), or one that leaves the ring
 * sparse enough to squeeze or shrink. */
__attribute__((noinline)) static void drop_slow(DeadlineHeap *d, PartEntry *e)
{
    bool was_top = e == d->top;
    erase(d, e);
    if (was_top)
        find_top(d);
}

/* Out of line so that deadline_drop's path, which calls it last (a jump), saves no
 * registers either. */
__attribute__((noinline)) static void find_top_out_of_line(DeadlineHeap *d)
{
    find_top(d);
}

/* Most removals are a ring's head (the top, fired) or a slot inside it, leaving the
 * ring neither sparse nor changed at its end: they leave a hole, move the head past
 * the holes, and find the top again if it went. */
void deadline_drop(DeadlineHeap *d, PartEntry *e)
{
    uint32_t pos = e->heap_pos;
    DeadlineRing *r = &d->core->ring[pos >> RING_SHIFT & (DEADLINE_RINGS - 1)];
    size_t seq = pos & (SEQ_LIMIT - 1);
    if ((pos & IN_HEAP) || seq == r->tail - 1 || (r->live - 1) * 4 <= r->cap) {
        drop_slow(d, e);
        return;
    }
    *ring_at(r, seq) = NULL;
    r->live--;
    if (seq == r->head) {
        while (!*ring_at(r, ++r->head))
            ;
        r->first = (*ring_at(r, r->head))->deadline;
    }
    forget(e);
    d->n--;
    if (e == d->top)
        find_top_out_of_line(d);
}

void deadline_peek_many(const DeadlineHeap *d, const size_t *ahead, PartEntry **out, size_t n)
{
    const PartEntry *top = d->top;
    if (!top || (top->heap_pos & IN_HEAP)) {
        for (size_t i = 0; i < n; i++)
            out[i] = NULL;
        return;
    }
    /* the ring's fields in locals: out[] could alias them, as far as the compiler
     * knows, and would make every distance read them again */
    const DeadlineRing *r = &d->core->ring[top->heap_pos >> RING_SHIFT];
    size_t at = top->heap_pos & (SEQ_LIMIT - 1);
    size_t room = r->tail - at, mask = r->cap - 1;
    DeadlineSlot *s = r->s;
    for (size_t i = 0; i < n; i++)
        out[i] = ahead[i] < room ? s[(at + ahead[i]) & mask] : NULL;
}

PartEntry *deadline_peek(const DeadlineHeap *d, size_t ahead)
{
    PartEntry *e;
    deadline_peek_many(d, &ahead, &e, 1);
    return e;
}

void deadline_moved(DeadlineHeap *d, const PartEntry *was, PartEntry *e)
{
    uint32_t pos = e->heap_pos;
    if (pos == PART_NOT_TIMED)
        return;
    DeadlineCore *c = d->core;
    if (pos & IN_HEAP)
        c->h[pos & ~IN_HEAP] = e;
    else
        *ring_at(&c->ring[pos >> RING_SHIFT], pos & (SEQ_LIMIT - 1)) = e;
    if (d->top == was)
        d->top = e;
}

/* ---- checks for tests ------------------------------------------------------------ */

bool deadline_holds(const DeadlineHeap *d, const PartEntry *e)
{
    const DeadlineCore *c = d->core;
    uint32_t pos = e->heap_pos;
    const DeadlineSlot *s;
    if (pos == PART_NOT_TIMED || !c)
        return false;
    if (pos & IN_HEAP) {
        if ((pos & ~IN_HEAP) >= c->hn)
            return false;
        s = &c->h[pos & ~IN_HEAP];
    } else {
        size_t ri = pos >> RING_SHIFT, seq = pos & (SEQ_LIMIT - 1);
        if (ri >= DEADLINE_RINGS || seq < c->ring[ri].head || seq >= c->ring[ri].tail)
            return false;
        s = ring_at(&c->ring[ri], seq);
    }
    return *s == e && e->deadline != INT64_MAX;
}

static const char *verify_ring(const DeadlineRing *r, size_t ri, const PartEntry **best)
{
    if (r->cap & (r->cap - 1))
        return "ring capacity is not a power of two";
    if (r->tail < r->head || r->tail - r->head > r->cap)
        return "ring span exceeds its capacity";
    if (r->head != r->tail && (!*ring_at(r, r->head) || !*ring_at(r, r->tail - 1)))
        return "a hole at an end of a ring";
    if (r->tail > SEQ_LIMIT)
        return "ring sequence numbers beyond heap_pos";
    const PartEntry *prev = NULL;
    size_t live = 0;
    for (size_t seq = r->head; seq < r->tail; seq++) {
        const PartEntry *s = *ring_at(r, seq);
        if (!s)
            continue;
        live++;
        if (s->heap_pos != ring_pos(ri, seq) || s->deadline == INT64_MAX)
            return "ring slot disagrees with its entry";
        if (prev && !slot_before(prev, s))
            return "ring out of order";
        prev = s;
    }
    if (live != r->live)
        return "ring count is wrong";
    if (live && (r->first != (*ring_at(r, r->head))->deadline ||
                 r->last != (*ring_at(r, r->tail - 1))->deadline))
        return "ring ends' deadlines are stale";
    if (live && (!*best || slot_before(*ring_at(r, r->head), *best)))
        *best = *ring_at(r, r->head);
    return NULL;
}

static const char *verify_heap(const DeadlineCore *c, const PartEntry **best)
{
    if (c->hn > c->hcap)
        return "heap count above its capacity";
    for (size_t i = 0; i < c->hn; i++) {
        const PartEntry *s = c->h[i];
        if (s->heap_pos != ((uint32_t)i | IN_HEAP) || s->deadline == INT64_MAX)
            return "heap slot disagrees with its entry";
        if (i && slot_before(s, c->h[(i - 1) / ARITY]))
            return "heap out of order";
    }
    if (c->hn && (!*best || slot_before(c->h[0], *best)))
        *best = c->h[0];
    return NULL;
}

const char *deadline_verify(const DeadlineHeap *d)
{
    const DeadlineCore *c = d->core;
    const PartEntry *best = NULL;
    size_t n = 0;
    const char *why = NULL;
    if (c) {
        n = c->hn;
        why = verify_heap(c, &best);
        for (size_t ri = 0; ri < DEADLINE_RINGS && !why; ri++) {
            why = verify_ring(&c->ring[ri], ri, &best);
            n += c->ring[ri].live;
            if (!why && !(c->ring_mask >> ri & 1) != !c->ring[ri].live)
                why = "ring mask disagrees with the rings";
        }
        if (!why && c->ring_mask && c->latest != latest_ring(c))
            why = "the latest ring is not the one whose end is latest";
    }
    if (why)
        return why;
    if (d->n != n)
        return "entry count is wrong";
    if (d->top != best ||
        d->top_deadline != (best ? best->deadline : INT64_MAX))
        return "cached top is not the earliest entry";
    return NULL;
}

/* runtime/reorder.c — the event-time reorder buffer: a binary min-heap on
 * (time, arrival sequence), so releases are in time order with stable ties. */
#include "runtime/reorder.h"

#include <stdlib.h>

void reorder_init(Reorder *r, int64_t lateness_ms)
{
    r->heap = NULL;
    r->n = r->cap = 0;
    r->lateness_ms = lateness_ms > 0 ? lateness_ms : 0;
    r->max_seen = INT64_MIN;
    r->watermark = INT64_MIN;
    r->next_seq = 0;
}

static bool item_before(const ReorderItem *a, const ReorderItem *b)
{
    return a->time_ms < b->time_ms || (a->time_ms == b->time_ms && a->seq < b->seq);
}

static void swap_items(ReorderItem *a, ReorderItem *b)
{
    ReorderItem t = *a;
    *a = *b;
    *b = t;
}

static void sift_up(ReorderItem *h, size_t i)
{
    while (i > 0) {
        size_t parent = (i - 1) / 2;
        if (!item_before(&h[i], &h[parent]))
            break;
        swap_items(&h[i], &h[parent]);
        i = parent;
    }
}

static void sift_down(ReorderItem *h, size_t n, size_t i)
{
    for (;;) {
        size_t least = i, l = 2 * i + 1, r = l + 1;
        if (l < n && item_before(&h[l], &h[least]))
            least = l;
        if (r < n && item_before(&h[r], &h[least]))
            least = r;
        if (least == i)
            return;
        swap_items(&h[i], &h[least]);
        i = least;
    }
}

/* The watermark saturates instead of wrapping for times near INT64_MIN. */
static int64_t watermark_for(int64_t max_seen, int64_t lateness)
{
    return max_seen < INT64_MIN + lateness ? INT64_MIN : max_seen - lateness;
}

ReorderStatus reorder_push(Reorder *r, int64_t time_ms, void *item)
{
    if (time_ms < r->watermark)
        return REORDER_LATE;
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 64;
        ReorderItem *h = realloc(r->heap, cap * sizeof *h);
        if (!h)
            return REORDER_NOMEM;
        r->heap = h;
        r->cap = cap;
    }
    r->heap[r->n] = (ReorderItem){time_ms, r->next_seq++, item};
    sift_up(r->heap, r->n++);
    if (time_ms > r->max_seen) {
        r->max_seen = time_ms;
        int64_t wm = watermark_for(time_ms, r->lateness_ms);
        if (wm > r->watermark)
            r->watermark = wm;
    }
    return REORDER_ACCEPTED;
}

bool reorder_pass(Reorder *r, int64_t time_ms)
{
    if (r->n || time_ms < r->watermark)
        return false;
    int64_t wm = r->watermark;
    if (time_ms > r->max_seen) {
        int64_t w = watermark_for(time_ms, r->lateness_ms);
        if (w > wm)
            wm = w;
    }
    if (time_ms > wm)
        return false;   /* it would wait for the watermark */
    if (time_ms > r->max_seen)
        r->max_seen = time_ms;
    r->watermark = wm;
    r->next_seq++;
    return true;
}

/* Once the first passed, the watermark is `first`. Equal times then all pass. A later
 * time passes only if it raises the watermark to itself (lateness 0, above the highest
 * time seen); with the highest time seen equal to `first`, every time between first and
 * last does that in turn if `last` does, so only the two ends need the check. */
bool reorder_pass_sorted(Reorder *r, int64_t first, int64_t last, size_t n)
{
    Reorder before = *r;
    if (!reorder_pass(r, first))
        return false;
    if (last == first) {
        r->next_seq += n - 1;
        return true;
    }
    if (r->max_seen != first || !reorder_pass(r, last)) {
        *r = before;
        return false;
    }
    r->next_seq += n - 2;
    return true;
}

void *reorder_pop_ready(Reorder *r, int64_t *time_ms)
{
    if (r->n == 0 || r->heap[0].time_ms > r->watermark)
        return NULL;
    ReorderItem top = r->heap[0];
    r->heap[0] = r->heap[--r->n];
    sift_down(r->heap, r->n, 0);
    if (time_ms)
        *time_ms = top.time_ms;
    return top.item;
}

void *reorder_pop_oldest(Reorder *r, int64_t *time_ms)
{
    if (r->n && r->heap[0].time_ms > r->watermark)
        r->watermark = r->heap[0].time_ms;
    return reorder_pop_ready(r, time_ms);
}

int64_t reorder_peek_time(const Reorder *r)
{
    return r->n ? r->heap[0].time_ms : INT64_MAX;
}

void reorder_set_lateness(Reorder *r, int64_t lateness_ms)
{
    r->lateness_ms = lateness_ms > 0 ? lateness_ms : 0;
}

void reorder_flush(Reorder *r)
{
    r->watermark = INT64_MAX;
}

int reorder_restore(Reorder *r, int64_t max_seen, int64_t watermark, uint64_t next_seq,
                    const ReorderItem *items, size_t n)
{
    ReorderItem *h = n ? malloc(n * sizeof *h) : NULL;
    if (n && !h)
        return -1;
    free(r->heap);
    r->heap = h;
    r->n = r->cap = n;
    for (size_t i = 0; i < n; i++) {
        h[i] = items[i];
        sift_up(h, i);
    }
    r->max_seen = max_seen;
    r->watermark = watermark;
    r->next_seq = next_seq;
    return 0;
}

void reorder_free(Reorder *r, void (*drop)(void *item))
{
    if (drop)
        for (size_t i = 0; i < r->n; i++)
            drop(r->heap[i].item);
    free(r->heap);
    r->heap = NULL;
    r->n = r->cap = 0;
}

/* tests/nfadiff.c — the matcher's differential tests' shared pieces (nfadiff.h). */
#include "tests/nfadiff.h"

#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

uint64_t nfadiff_rand(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

unsigned nfadiff_pick(uint64_t *x, unsigned n)
{
    return (unsigned)(nfadiff_rand(x) % n);
}

Event *nfadiff_event(Decoder *dec, uint64_t *x, int64_t t, uint64_t id, unsigned n_values)
{
    static const char *const types[] = {"a", "b", "c", "a", "b"};
    char line[128];
    int n = snprintf(line, sizeof line, "{\"ts\":%lld,\"type\":\"%s\",\"v\":%u}", (long long)t,
                     types[nfadiff_pick(x, 5)], nfadiff_pick(x, n_values));
    DecodeError de;
    Event *ev = decoder_decode(dec, line, (size_t)n, &de);
    ck_assert_ptr_nonnull(ev);
    ev->id = id;
    ev->time_ms = t;
    return ev;
}

void nfadiff_log_result(Buf *log, const NfaResult *r)
{
    buf_printf(log, "%s@%lld", r->kind == NFA_MATCH ? "match" : "timeout",
               (long long)r->time_ms);
    for (const MatchNode *m = r->last; m; m = m->prev)
        buf_printf(log, " %u:%" PRIu64, (unsigned)m->step, m->event->id);
    buf_putc(log, '\n');
}

bool nfadiff_same_counters(const NfaCounters *a, const NfaCounters *b)
{
    return a->partials_dropped == b->partials_dropped && a->partials_live == b->partials_live &&
           a->partials_refused == b->partials_refused && a->cap_hits == b->cap_hits &&
           a->takes == b->takes && a->out_of_memory == b->out_of_memory;
}

void nfadiff_assert_same_log(const char *text, size_t at, const Buf *a, const char *a_name,
                             const Buf *b, const char *b_name)
{
    bool same = a->len == b->len && (a->len == 0 || memcmp(a->data, b->data, a->len) == 0);
    ck_assert_msg(same, "%s\nafter %zu, results differ:\n%s:\n%.*s\n%s:\n%.*s", text, at,
                  a_name, (int)a->len, a->data ? a->data : "", b_name, (int)b->len,
                  b->data ? b->data : "");
}

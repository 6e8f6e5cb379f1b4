/* tests/oomevents.c — see oomevents.h. */
#include "tests/oomevents.h"

#include <check.h>

#include "base/buf.h"

static const char *const TYPES[] = {"login", "buy", "open", "close", "view"};

OomEventSeq oomevents_start(uint32_t seed, unsigned users)
{
    return (OomEventSeq){seed, 1000000, users, 0};
}

OomEvent oomevents_next(OomEventSeq *seq)
{
    seq->rnd = seq->rnd * 1103515245u + 12345u;
    unsigned r = seq->rnd >> 8;
    seq->ts += 1 + (long)(r % 2);
    OomEvent e = {seq->ts, seq->i % 5 == 2, (r >> 4) % seq->users, TYPES[(r >> 12) % 5],
                  (r >> 16) % 100};
    seq->i++;
    return e;
}

char *oomevents_lines(uint32_t seed, unsigned users, int from, int to, const char *pad)
{
    Buf b = BUF_INIT;
    OomEventSeq seq = oomevents_start(seed, users);
    for (int i = 0; i < to; i++) {
        OomEvent e = oomevents_next(&seq);
        if (i < from)
            continue;
        buf_printf(&b, "{\"ts\":%ld,\"u\":\"u%u\",\"t\":\"%s\",\"n\":%u",
                   e.early ? e.ts - OOMEVENTS_EARLY : e.ts, e.user, e.type, e.n);
        if (pad)
            buf_printf(&b, ",\"pad\":\"%s\"", pad);
        buf_puts(&b, "}\n");
    }
    char *text = buf_steal(&b);
    ck_assert_ptr_nonnull(text);
    return text;
}

/* bench/floor_fraud.c — scenario 1 written by hand: the speed a specialised program
 * reaches on the same input (the "floor" vigil is measured against).
 *
 * Owns its read buffer and a flat open-addressing table of per-user state. Rule:
 *   filter type == "tx"; key user;
 *   begin first where amount > 1000; next second where amount > 1000;
 *   followed_by third where amount > 1000; within 10m; skip past_last_event;
 * Under Flink's semantics a user has at most one partial match waiting for `second`
 * (it dies on the user's next small tx) and one waiting for `third`; a completed
 * match prunes everything that started at or before its last event. Input must be
 * in time order (lateness 0). Writes one line per match, "USER TS_MS", to stdout,
 * so the bench can compare it with vigil's alerts. Strings are assumed to carry no
 * escapes (the generator writes none). */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/flat.h"

enum { BLOCK = 1 << 20, MAX_USER = 23 };
#define WITHIN_MS INT64_C(600000)

typedef struct UserState {
    uint64_t hash;           /* 0: empty slot */
    char user[MAX_USER + 1];
    bool has_first, has_second;
    int64_t first_ms;        /* start of the partial match waiting for `second` */
    int64_t pair_ms;         /* start of the partial match waiting for `third` */
} UserState;
_Static_assert(offsetof(UserState, hash) == 0, "bench/flat.h reads the hash first");

typedef struct Table {
    UserState *slots;
    size_t cap, used;        /* cap is a power of two */
} Table;

typedef struct Fields {
    const char *type, *user;
    size_t type_len, user_len;
    int64_t ts_ms;
    double amount;
} Fields;

static bool table_grow(Table *t)
{
    UserState *slots = flat_grow(t->slots, &t->cap, (size_t)1 << 16, sizeof *slots);
    if (slots)
        t->slots = slots;
    return slots != NULL;
}

/* NULL only when out of memory. */
static UserState *table_get(Table *t, const char *user, size_t n)
{
    if ((t->used + 1) * 2 > t->cap && !table_grow(t))
        return NULL;
    uint64_t h = flat_hash(user, n);
    size_t i = h & (t->cap - 1);
    for (;; i = (i + 1) & (t->cap - 1)) {
        UserState *s = &t->slots[i];
        if (!s->hash) {
            memset(s, 0, sizeof *s);
            s->hash = h;
            memcpy(s->user, user, n);
            t->used++;
            return s;
        }
        if (s->hash == h && strncmp(s->user, user, n) == 0 && s->user[n] == '\0')
            return s;
    }
}

/* Unsigned decimal with an optional fraction; enough for the generator's numbers
 * (exact for integers up to 2^53, which covers epoch milliseconds). */
static double scan_decimal(const char *p, const char *end)
{
    uint64_t whole = 0, frac = 0, scale = 1;
    while (p < end && *p >= '0' && *p <= '9')
        whole = whole * 10 + (uint64_t)(*p++ - '0');
    if (p < end && *p == '.')
        for (p++; p < end && *p >= '0' && *p <= '9' && scale < UINT64_C(1000000000000); p++) {
            frac = frac * 10 + (uint64_t)(*p - '0');
            scale *= 10;
        }
    return (double)whole + (double)frac / (double)scale;
}

/* Scans one flat JSON object for ts, type, user and amount. */
static void scan_fields(const char *p, const char *end, Fields *f)
{
    memset(f, 0, sizeof *f);
    while (p < end) {
        const char *k = memchr(p, '"', (size_t)(end - p));
        if (!k)
            return;
        const char *ke = memchr(k + 1, '"', (size_t)(end - k - 1));
        if (!ke || ke + 2 >= end)
            return;
        const char *v = ke + 2;          /* after the ':' */
        size_t klen = (size_t)(ke - k - 1);
        const char *ve;
        if (*v == '"') {
            ve = memchr(v + 1, '"', (size_t)(end - v - 1));
            if (!ve)
                return;
            if (klen == 4 && memcmp(k + 1, "type", 4) == 0)
                f->type = v + 1, f->type_len = (size_t)(ve - v - 1);
            else if (klen == 4 && memcmp(k + 1, "user", 4) == 0)
                f->user = v + 1, f->user_len = (size_t)(ve - v - 1);
            ve++;
        } else {
            ve = v;
            while (ve < end && *ve != ',' && *ve != '}')
                ve++;
            if (klen == 2 && memcmp(k + 1, "ts", 2) == 0)
                f->ts_ms = (int64_t)scan_decimal(v, ve);
            else if (klen == 6 && memcmp(k + 1, "amount", 6) == 0)
                f->amount = scan_decimal(v, ve);
        }
        p = ve + 1;
    }
}

static void match_found(const UserState *s, int64_t ts_ms, long long *matches)
{
    printf("%s %lld\n", s->user, (long long)ts_ms);
    (*matches)++;
}

static void on_tx(UserState *s, int64_t t, bool large, long long *matches)
{
    if (s->has_second && t - s->pair_ms >= WITHIN_MS)
        s->has_second = false;
    if (s->has_first && t - s->first_ms >= WITHIN_MS)
        s->has_first = false;
    if (!large) {
        s->has_first = false;            /* `next` is strict */
        return;
    }
    if (s->has_second) {
        match_found(s, t, matches);
        s->has_first = s->has_second = false;   /* skip past_last_event */
        return;
    }
    if (s->has_first) {
        s->has_second = true;
        s->pair_ms = s->first_ms;
    }
    s->has_first = true;
    s->first_ms = t;
}

/* -1 when out of memory */
static int on_line(Table *t, const char *line, const char *end, long long *matches)
{
    Fields f;
    scan_fields(line, end, &f);
    if (f.type_len != 2 || memcmp(f.type, "tx", 2) != 0 || !f.user || f.user_len > MAX_USER)
        return 0;
    UserState *s = table_get(t, f.user, f.user_len);
    if (!s)
        return -1;
    on_tx(s, f.ts_ms, f.amount > 1000.0, matches);
    return 0;
}

int main(void)
{
    Table table = {0};
    char *buf = malloc(2 * BLOCK);
    long long matches = 0, lines = 0;
    size_t have = 0;
    int rc = 0;
    if (!buf) {
        fprintf(stderr, "floor_fraud: out of memory\n");
        return 1;
    }
    for (;;) {
        ssize_t n = read(0, buf + have, 2 * BLOCK - have);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            fprintf(stderr, "floor_fraud: read: %s\n", strerror(errno));
            rc = 1;
            break;
        }
        bool at_end = n == 0;
        if (at_end) {
            if (!have)
                break;
            /* a last line without its newline is still an event, as it is to vigil
             * (there is room: the read asked for at least a byte) */
            buf[have] = '\n';
            n = 1;
        }
        have += (size_t)n;
        char *p = buf, *end = buf + have, *nl;
        while ((nl = memchr(p, '\n', (size_t)(end - p)))) {
            lines++;
            if (on_line(&table, p, nl, &matches) < 0) {
                fprintf(stderr, "floor_fraud: out of memory\n");
                return 1;
            }
            p = nl + 1;
        }
        have = (size_t)(end - p);
        if (have == 2 * BLOCK) {
            fprintf(stderr, "floor_fraud: line longer than %d bytes\n", 2 * BLOCK);
            rc = 1;
            break;
        }
        if (at_end)
            break;
        memmove(buf, p, have);
    }
    fprintf(stderr, "floor_fraud: %lld lines, %zu users, %lld matches\n", lines, table.used,
            matches);
    free(table.slots);
    free(buf);
    return rc;
}

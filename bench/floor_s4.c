/* bench/floor_s4.c — scenario 4 (bench/s4_rules.cep, 100 rules) written by hand: the
 * speed a program specialised to that rule set reaches on `bench/gen -m mixed`, the
 * floor vigil's scenario 4 is judged against (as floor_fraud.c is for scenario 1).
 *
 * Owns its read and write buffers, a flat open-addressing table of users with every
 * user-keyed rule's state side by side in one record (large_pair's in a second record
 * made on the user's first large tx), a pool of country_change partial matches, and a
 * ring of pending orders (keyed by id in a second table) that is also the three
 * not_shipped rules' timer queues. No allocation per event once the tables have grown.
 * Lines are scanned a few events ahead so that the key lookups' cache misses overlap.
 *
 * The rule parameters are the tables below, written by hand from bench/s4_rules.cep
 * (bench/test_bench.sh checks the alerts against vigil's, so a wrong entry shows).
 * Semantics are vigil's (Flink CEP's, nfa/SEMANTICS.md) for these rules, with the
 * default `skip past_last_event` (a released match prunes every partial match and
 * waiting match that started at or before its last event; a completed match waits
 * while a partial match that started earlier is live). What that leaves per rule:
 *   large_pair (begin/followed_by, amount > T, within W): at most one partial match
 *     per user (the next large tx completes it, and the match prunes the one that tx
 *     starts), so one start time.
 *   country_change (followed_by where country != home.country): partial matches of
 *     other countries coexist and a completed match can wait for an older one, so a
 *     list in first-event order of partial matches and waiting matches.
 *   failed_logins (times N consecutive, next ok): the current run of consecutive
 *     failures (login events of the user), shared by the 20 rules; a success matches
 *     rule (N, W) when the run has N failures and the N-th latest is within W.
 *   login_failures (times N, relaxed, no where): failures since the rule's last match
 *     (it prunes the failures up to it); the failure that is the N-th from the first
 *     live one matches if within W.
 *   not_shipped (on timeout): orders in input order are the timer queue of each rule
 *     (deadlines of one rule arrive in increasing order); a shipment clears the id's
 *     pending orders, a passed deadline fires the alert.
 *   huge_tx: one step, every tx over the threshold.
 * Timeouts of the rules without `on timeout` are silent, so their expiry is applied
 * when the key's next relevant event comes (as vigil would have by then), and a
 * country_change match they release is found then or at end of input. Events that
 * cannot change a relaxed rule (a tx below its threshold) are not looked at by it,
 * as vigil's relevance does. Event time is `ts` (epoch ms, digits), lateness 0: an
 * event older than the latest time seen is late and skipped, as vigil skips it;
 * timeouts fire before an event with their time; at end of input every pending
 * order times out.
 *
 * Writes one line per alert, "RULE<TAB>MESSAGE", MESSAGE being the rule's template
 * expanded (numbers as the input wrote them). Lines are assumed to be flat objects
 * without blanks or escapes (the generator writes them so); keys longer than 23 bytes
 * and countries longer than 7 are refused with a message. */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/flat.h"

enum {
    BLOCK = 1 << 20,
    OUT_CAP = 1 << 20,
    MAX_KEY = 23,
    MAX_COUNTRY = 7,
    N_LARGE = 40,
    N_COUNTRY = 20,
    N_FAILED = 20,
    N_COUNTED = 7,
    N_SHIP = 3,
    N_HUGE = 10,
    FAIL_RING = 9,              /* the largest N of failed_logins and login_failures */
    NO_COUNTRY = 0xff,
};
#define MIN_MS INT64_C(60000)
#define NO_MS INT64_MIN
#define NO_ORDER UINT64_MAX

/* ---------------------------------------------------------------- the rule tables */

static const double LARGE_ABOVE[N_LARGE] = {
    500, 600, 700, 800, 900, 1000, 1100, 1200, 1300, 1400,
    1500, 1600, 1700, 1800, 1900, 2000, 2100, 2200, 2300, 2400,
    2500, 2600, 2700, 2800, 2900, 3000, 3100, 3200, 3300, 3400,
    3500, 3600, 3700, 3800, 3900, 4000, 4100, 4200, 4300, 4400,
};
static const int LARGE_WITHIN_MIN[N_LARGE] = {
    5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
    5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
};
static const double COUNTRY_ABOVE[N_COUNTRY] = {
    200, 250, 300, 350, 400, 450, 500, 550, 600, 650,
    700, 750, 800, 850, 900, 950, 1000, 1050, 1100, 1150,
};
#define COUNTRY_WITHIN_MS (10 * MIN_MS)
static const int FAILED_TIMES[N_FAILED] = {
    3, 4, 5, 6, 7, 3, 4, 5, 6, 7, 3, 4, 5, 6, 7, 3, 4, 5, 6, 7,
};
static const int FAILED_WITHIN_MIN[N_FAILED] = {
    2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 4, 4, 4, 4, 4, 5, 5, 5, 5, 5,
};
static const int COUNTED_TIMES[N_COUNTED] = {3, 4, 5, 6, 7, 8, 9};
#define COUNTED_WITHIN_MS MIN_MS
static const int SHIP_WITHIN_MIN[N_SHIP] = {60, 90, 120};
static const double HUGE_ABOVE[N_HUGE] = {
    20000, 21000, 22000, 23000, 24000, 25000, 26000, 27000, 28000, 29000,
};

/* Rule numbers, in the file's order: names and alert counts are indexed by them. */
enum {
    R_LARGE = 0,
    R_COUNTRY = R_LARGE + N_LARGE,
    R_FAILED = R_COUNTRY + N_COUNTRY,
    R_COUNTED = R_FAILED + N_FAILED,
    R_SHIP = R_COUNTED + N_COUNTED,
    R_HUGE = R_SHIP + N_SHIP,
    N_RULES = R_HUGE + N_HUGE,
};
static const struct { const char *family; int first, count; } FAMILIES[] = {
    {"large_pair", R_LARGE, N_LARGE},       {"country_change", R_COUNTRY, N_COUNTRY},
    {"failed_logins", R_FAILED, N_FAILED},  {"login_failures", R_COUNTED, N_COUNTED},
    {"not_shipped", R_SHIP, N_SHIP},        {"huge_tx", R_HUGE, N_HUGE},
};

/* ---------------------------------------------------------------- state */

typedef struct Str {
    const char *p;
    size_t n;
} Str;

enum { OK_OTHER, OK_FALSE, OK_TRUE };
enum { TYPE_OTHER, TYPE_TX, TYPE_LOGIN, TYPE_ORDER, TYPE_SHIPPED };
enum { LOOKUP_NONE, LOOKUP_USER, LOOKUP_ORDER };

/* The fields of one line that the rules read; pointers into the read buffer. */
typedef struct Event {
    Str ts_text, user, country, id;
    const char *line_end;
    int64_t ts;
    double amount;
    uint64_t hash;              /* of the key the event looks up (lookup) */
    uint64_t seq;               /* input order: Flink's EventId after the time */
    bool has_ts, has_amount, has_country;
    uint8_t ok, type, lookup;
} Event;

/* Fixed-size records in chunks that never move (no copy when they grow). */
enum { CHUNK_BITS = 12 };
typedef struct Chunked {
    char **chunks;
    size_t size;                /* bytes per record */
    uint32_t used, n_chunks;
} Chunked;

/* Every user-keyed rule's state for one user but large_pair's (the user's first
 * relevant event creates it; it is never freed: the generator's users come back).
 * The fields a tx reads come first, then those of a login. */
typedef struct User {
    char name[MAX_KEY + 1];
    uint32_t name_len;
    uint32_t pairs;             /* large_pair state: index + 1 in Floor.pairs, 0: none yet */
    uint32_t country_head[N_COUNTRY]; /* country_change: first CountryNode, 0: none */
    uint32_t fails;             /* failed logins so far */
    uint32_t run_base;          /* `fails` when the current run of consecutive failures began */
    uint32_t counted_from[N_COUNTED]; /* login_failures: failures below this number were pruned */
    int64_t fail_ms[FAIL_RING]; /* time of failure k at k % FAIL_RING */
} User;

/* large_pair's state, made on the user's first tx over the lowest threshold (most
 * users never have one). */
typedef struct Pairs {
    int64_t start_ms[N_LARGE];  /* start of the rule's partial match, NO_MS: none */
} Pairs;

typedef struct UserSlot {
    uint64_t hash;              /* 0: empty */
    uint32_t user;              /* index in Users.recs */
} UserSlot;
_Static_assert(offsetof(UserSlot, hash) == 0, "bench/flat.h reads the hash first");

typedef struct Users {
    UserSlot *slots;
    size_t cap;                 /* power of two */
    Chunked recs;               /* of User */
} Users;

/* A country_change partial match (waiting for `abroad`) or a completed match waiting
 * for an older partial match; a user's list is in first-event order. */
typedef struct CountryNode {
    uint64_t first_seq;         /* the `home` event */
    uint64_t last_seq;          /* waiting match: the `abroad` event */
    int64_t first_ms;
    uint32_t next;              /* 0: end of list */
    bool waiting;
    uint8_t country_len;        /* NO_COUNTRY: null */
    char country[MAX_COUNTRY + 1]; /* home's (partial match) or abroad's (waiting match) */
} CountryNode;

typedef struct CountryPool {
    CountryNode *nodes;         /* node 0 is never used: 0 means none */
    uint32_t cap, used, free_list;
} CountryPool;

typedef struct Order {
    int64_t ts;
    uint64_t hash;              /* of the id */
    uint64_t prev_same;         /* an older order with the same id still in the ring, or NO_ORDER */
    uint8_t waiting;            /* bit r: not_shipped_r still waits for its shipment */
    uint8_t id_len;
    char id[MAX_KEY + 1];
} Order;

typedef struct OrderSlot {
    uint64_t hash;              /* 0: empty */
    uint64_t seq;               /* the id's newest order in the ring */
} OrderSlot;
_Static_assert(offsetof(OrderSlot, hash) == 0, "bench/flat.h reads the hash first");

/* Orders in input (= time) order: ring[seq & (cap - 1)] for tail <= seq < head. */
typedef struct Orders {
    Order *ring;
    uint64_t cap, head, tail;
    uint64_t cursor[N_SHIP];    /* rule r's first order whose deadline has not passed */
    int64_t next_due_ms;        /* no deadline passes before this time (INT64_MAX: none) */
    OrderSlot *slots;
    size_t slot_cap, slot_used;
} Orders;

typedef struct Out {
    char *buf;
    size_t len;
    int write_errno;            /* 0, or the first write's failure */
} Out;

typedef struct Floor {
    Users users;
    Chunked pairs;              /* of Pairs */
    CountryPool pool;
    Orders orders;
    Out out;
    int64_t now_ms;             /* latest event time: the watermark */
    uint64_t lines, late, malformed;
    uint64_t alerts[N_RULES];
    char names[N_RULES][24];
} Floor;

/* ---------------------------------------------------------------- output */

static void out_flush(Out *o)
{
    size_t done = 0;
    while (done < o->len) {
        ssize_t n = write(1, o->buf + done, o->len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            if (!o->write_errno)
                o->write_errno = errno;
            break;
        }
        done += (size_t)n;
    }
    o->len = 0;
}

static void out_bytes(Out *o, const char *p, size_t n)
{
    memcpy(o->buf + o->len, p, n);
    o->len += n;
}

static void out_i64(Out *o, int64_t v)
{
    char tmp[24];
    size_t n = 0;
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[n++] = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (v < 0)
        tmp[n++] = '-';
    while (n)
        o->buf[o->len++] = tmp[--n];
}

/* "RULE\tKEY " then the caller writes the second word and alert_end. Every template
 * of s4_rules.cep is "{KEY} {SOMETHING}". Keys are at most MAX_KEY bytes and every
 * second word is a number or a country, so 128 bytes of room suffice. */
static void alert_begin(Floor *f, int rule, const char *key, size_t key_len)
{
    Out *o = &f->out;
    if (OUT_CAP - o->len < 128)
        out_flush(o);
    out_bytes(o, f->names[rule], strlen(f->names[rule]));
    o->buf[o->len++] = '\t';
    out_bytes(o, key, key_len);
    o->buf[o->len++] = ' ';
    f->alerts[rule]++;
}

static void alert_end(Floor *f)
{
    f->out.buf[f->out.len++] = '\n';
}

/* An alert whose second word is the current event's text (ts or country). */
static void alert_text(Floor *f, int rule, const char *key, size_t key_len, Str word)
{
    alert_begin(f, rule, key, key_len);
    out_bytes(&f->out, word.p, word.n);
    alert_end(f);
}

/* ---------------------------------------------------------------- scanning */

/* Decimal with an optional sign and fraction, enough for the generator's amounts:
 * sets *out and returns the end of the number, or NULL if there is none. */
static const char *scan_decimal(const char *p, const char *end, double *out)
{
    bool neg = p < end && *p == '-';
    p += neg;
    if (p == end || *p < '0' || *p > '9')
        return NULL;
    uint64_t whole = 0, frac = 0, scale = 1;
    while (p < end && *p >= '0' && *p <= '9')
        whole = whole * 10 + (uint64_t)(*p++ - '0');
    if (p < end && *p == '.')
        for (p++; p < end && *p >= '0' && *p <= '9'; p++)
            if (scale < UINT64_C(1000000000000)) {
                frac = frac * 10 + (uint64_t)(*p - '0');
                scale *= 10;
            }
    double v = (double)whole + (double)frac / (double)scale;
    *out = neg ? -v : v;
    return p;
}

/* Epoch milliseconds, digits only (what the generator writes): sets *out and returns
 * the end of the digits, or NULL if there are none or too many. */
static const char *scan_ms(const char *p, const char *end, int64_t *out)
{
    const char *start = p;
    int64_t v = 0;
    for (; p < end && *p >= '0' && *p <= '9'; p++)
        v = v * 10 + (*p - '0');
    if (p == start || p - start > 18)
        return NULL;
    *out = v;
    return p;
}

static bool key_is(const char *k, size_t klen, const char *name, size_t n)
{
    return klen == n && memcmp(k, name, n) == 0;
}

static bool str_is(Str s, const char *lit, size_t n)
{
    return s.n == n && memcmp(s.p, lit, n) == 0;
}

static uint8_t type_of(Str s)
{
    return str_is(s, "tx", 2)        ? TYPE_TX
           : str_is(s, "login", 5)   ? TYPE_LOGIN
           : str_is(s, "order", 5)   ? TYPE_ORDER
           : str_is(s, "shipped", 7) ? TYPE_SHIPPED
                                     : TYPE_OTHER;
}

/* The first '"' at or after p, or end. */
static const char *to_quote(const char *p, const char *end)
{
    while (p < end && *p != '"')
        p++;
    return p;
}

/* The end of a value that is neither a string nor one of ours: the next ',' or '}'. */
static const char *to_value_end(const char *p, const char *end)
{
    while (p < end && *p != ',' && *p != '}')
        p++;
    return p;
}

/* A string value at v (its opening quote); returns its end, or NULL. */
static const char *scan_string(const char *v, const char *end, Str *out)
{
    const char *q = to_quote(v + 1, end);
    if (q == end)
        return NULL;
    *out = (Str){v + 1, (size_t)(q - v - 1)};
    return q + 1;
}

/* A value that is not a string, at v: the fields the rules read are parsed as they
 * are passed; returns the value's end, or NULL if it is not what the field needs. */
static const char *scan_scalar(const char *k, size_t klen, const char *v, const char *end,
                               Event *e)
{
    if (key_is(k, klen, "ts", 2)) {
        const char *ve = scan_ms(v, end, &e->ts);
        e->ts_text = (Str){v, ve ? (size_t)(ve - v) : 0};
        e->has_ts = ve != NULL;
        return ve;
    }
    if (key_is(k, klen, "amount", 6)) {
        const char *ve = scan_decimal(v, end, &e->amount);
        e->has_amount = ve != NULL;
        return ve;
    }
    const char *ve = to_value_end(v, end);
    if (key_is(k, klen, "ok", 2))
        e->ok = ve - v == 4 && memcmp(v, "true", 4) == 0    ? OK_TRUE
                : ve - v == 5 && memcmp(v, "false", 5) == 0 ? OK_FALSE
                                                             : OK_OTHER;
    return ve;
}

/* Scans one flat JSON object written without blanks ({"key":value,...}, as the
 * generator writes it) for the fields the rules read, each byte once. A line of
 * another shape stops the scan: the fields found so far are kept (a line without
 * its time counts as malformed). */
static void scan_fields(const char *p, const char *end, Event *e)
{
    if (p == end || *p != '{')
        return;
    while (p + 1 < end && p[1] == '"') {
        const char *k = p + 2;
        const char *ke = to_quote(k, end);
        if (ke + 2 >= end || ke[1] != ':')
            return;
        size_t klen = (size_t)(ke - k);
        const char *v = ke + 2, *ve;
        if (*v == '"') {
            Str s;
            if (!(ve = scan_string(v, end, &s)))
                return;
            if (key_is(k, klen, "type", 4))
                e->type = type_of(s);
            else if (key_is(k, klen, "user", 4))
                e->user = s;
            else if (key_is(k, klen, "country", 7))
                e->country = s, e->has_country = true;
            else if (key_is(k, klen, "id", 2))
                e->id = s;
        } else if (!(ve = scan_scalar(k, klen, v, end, e))) {
            return;
        }
        if (ve == end || *ve != ',')
            return;
        p = ve;
    }
}

/* Which table the event will look up, and the key's hash: known before the event's
 * turn, so that the lookup can be prefetched. */
static void scan_event(const char *line, const char *end, Event *e)
{
    memset(e, 0, sizeof *e);
    e->line_end = end;
    scan_fields(line, end, e);
    Str key = {NULL, 0};
    if (e->type == TYPE_LOGIN ||
        (e->type == TYPE_TX && e->has_amount &&
         (e->amount > COUNTRY_ABOVE[0] || e->amount > LARGE_ABOVE[0])))
        key = e->user, e->lookup = LOOKUP_USER;
    else if (e->type == TYPE_ORDER || e->type == TYPE_SHIPPED)
        key = e->id, e->lookup = LOOKUP_ORDER;
    if (!key.p || key.n > MAX_KEY)
        e->lookup = LOOKUP_NONE;
    else
        e->hash = flat_hash(key.p, key.n);
}

/* ---------------------------------------------------------------- users */

static void *chunked_at(const Chunked *c, uint32_t i)
{
    return c->chunks[i >> CHUNK_BITS] + (size_t)(i & ((1u << CHUNK_BITS) - 1)) * c->size;
}

/* The index of a new zeroed record; UINT32_MAX when out of memory. */
static uint32_t chunked_add(Chunked *c)
{
    if (c->used == (uint32_t)c->n_chunks << CHUNK_BITS) {
        char **chunks = realloc(c->chunks, (c->n_chunks + 1) * sizeof *chunks);
        if (!chunks)
            return UINT32_MAX;
        c->chunks = chunks;
        if (!(chunks[c->n_chunks] = calloc((size_t)1 << CHUNK_BITS, c->size)))
            return UINT32_MAX;
        c->n_chunks++;
    }
    return c->used++;
}

static void chunked_free(Chunked *c)
{
    for (uint32_t i = 0; i < c->n_chunks; i++)
        free(c->chunks[i]);
    free(c->chunks);
}

static bool users_grow(Users *t)
{
    UserSlot *slots = flat_grow(t->slots, &t->cap, (size_t)1 << 16, sizeof *slots);
    if (slots)
        t->slots = slots;
    return slots != NULL;
}

static User *user_new(Users *t, UserSlot *slot, uint64_t h, Str name)
{
    uint32_t i = chunked_add(&t->recs);
    if (i == UINT32_MAX)
        return NULL;
    User *u = chunked_at(&t->recs, i);
    memcpy(u->name, name.p, name.n);
    u->name_len = (uint32_t)name.n;
    slot->hash = h;
    slot->user = i;
    return u;
}

/* The user of e (e->hash is its hash); NULL only when out of memory. */
static User *user_get(Users *t, const Event *e)
{
    if ((t->recs.used + 1) * 2 > t->cap && !users_grow(t))
        return NULL;
    uint64_t h = e->hash;
    for (size_t i = h & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
        UserSlot *s = &t->slots[i];
        if (!s->hash)
            return user_new(t, s, h, e->user);
        if (s->hash != h)
            continue;
        User *u = chunked_at(&t->recs, s->user);
        if (u->name_len == e->user.n && memcmp(u->name, e->user.p, e->user.n) == 0)
            return u;
    }
}

/* Prefetch addresses: the slot where e's user is most likely found, and once it has
 * arrived, the record it names (NULL: nothing to prefetch). The callers prefetch:
 * GCC deletes calls to a function that does nothing but prefetch. */
static const void *user_slot_addr(const Users *t, const Event *e)
{
    return t->cap ? &t->slots[e->hash & (t->cap - 1)] : NULL;
}

static const void *user_record_addr(const Users *t, const Event *e)
{
    const UserSlot *s = user_slot_addr(t, e);
    return s && s->hash == e->hash ? chunked_at(&t->recs, s->user) : NULL;
}

/* ---------------------------------------------------------------- large_pair */

/* false when out of memory */
static bool large_pair(Floor *f, User *u, const Event *e)
{
    if (!u->pairs) {
        uint32_t i = chunked_add(&f->pairs);
        if (i == UINT32_MAX)
            return false;
        Pairs *p = chunked_at(&f->pairs, i);
        for (int r = 0; r < N_LARGE; r++)
            p->start_ms[r] = NO_MS;
        u->pairs = i + 1;
    }
    int64_t *start_ms = ((Pairs *)chunked_at(&f->pairs, u->pairs - 1))->start_ms;
    for (int r = 0; r < N_LARGE && e->amount > LARGE_ABOVE[r]; r++) {
        int64_t start = start_ms[r];
        if (start != NO_MS && e->ts - start < LARGE_WITHIN_MIN[r] * MIN_MS) {
            alert_text(f, R_LARGE + r, u->name, u->name_len, e->ts_text);
            start_ms[r] = NO_MS;     /* the match prunes the partial match e starts */
        } else {
            start_ms[r] = e->ts;     /* an expired one died before e */
        }
    }
    return true;
}

/* ---------------------------------------------------------------- country_change */

static uint32_t pool_take(CountryPool *p)
{
    if (p->free_list) {
        uint32_t i = p->free_list;
        p->free_list = p->nodes[i].next;
        return i;
    }
    if (p->used == p->cap) {
        uint32_t cap = p->cap ? p->cap * 2 : 1 << 12;
        CountryNode *nodes = realloc(p->nodes, cap * sizeof *nodes);
        if (!nodes)
            return 0;
        p->nodes = nodes;
        p->cap = cap;
        if (p->used == 0)
            p->used = 1;         /* node 0 means none */
    }
    return p->used++;
}

static void pool_give(CountryPool *p, uint32_t i)
{
    p->nodes[i].next = p->free_list;
    p->free_list = i;
}

/* Releases waiting matches from the head of the list while no partial match that
 * started earlier is live; each prunes what started at or before its last event. */
static void country_release(Floor *f, User *u, int r)
{
    CountryNode *nodes = f->pool.nodes;
    uint32_t *head = &u->country_head[r];
    while (*head && nodes[*head].waiting) {
        CountryNode *m = &nodes[*head];
        alert_begin(f, R_COUNTRY + r, u->name, u->name_len);
        out_bytes(&f->out, m->country, m->country_len);
        alert_end(f);
        uint64_t last = m->last_seq;
        while (*head && nodes[*head].first_seq <= last) {
            uint32_t dead = *head;
            *head = nodes[dead].next;
            pool_give(&f->pool, dead);
        }
    }
}

/* Drops the partial matches whose `within` has elapsed at `now`. */
static void country_expire(Floor *f, User *u, int r, int64_t now)
{
    CountryNode *nodes = f->pool.nodes;
    for (uint32_t *link = &u->country_head[r]; *link;) {
        CountryNode *n = &nodes[*link];
        if (!n->waiting && now - n->first_ms >= COUNTRY_WITHIN_MS) {
            uint32_t dead = *link;
            *link = n->next;
            pool_give(&f->pool, dead);
        } else {
            link = &n->next;
        }
    }
}

static bool country_differs(const CountryNode *n, const Event *e)
{
    return e->has_country && n->country_len != NO_COUNTRY &&
           !(n->country_len == e->country.n && memcmp(n->country, e->country.p, e->country.n) == 0);
}

/* false when out of memory */
static bool country_event(Floor *f, User *u, int r, const Event *e)
{
    country_expire(f, u, r, e->ts);
    country_release(f, u, r);
    uint32_t last = 0;           /* the list's last node: e's partial match goes after it */
    for (uint32_t i = u->country_head[r]; i; i = f->pool.nodes[i].next) {
        CountryNode *n = &f->pool.nodes[i];
        last = i;
        if (n->waiting || !country_differs(n, e))
            continue;
        n->waiting = true;       /* `abroad` taken: a completed match */
        n->last_seq = e->seq;
        n->country_len = (uint8_t)e->country.n;
        memcpy(n->country, e->country.p, e->country.n);
    }
    uint32_t i = pool_take(&f->pool);
    if (!i)
        return false;
    CountryNode *n = &f->pool.nodes[i];
    *n = (CountryNode){.first_seq = e->seq, .first_ms = e->ts, .next = 0,
                       .country_len = e->has_country ? (uint8_t)e->country.n : NO_COUNTRY};
    if (e->has_country)
        memcpy(n->country, e->country.p, e->country.n);
    *(last ? &f->pool.nodes[last].next : &u->country_head[r]) = i;
    country_release(f, u, r);
    return true;
}

/* End of input: every partial match dies, then the waiting matches are released. */
static void country_finish(Floor *f, User *u, int r)
{
    country_expire(f, u, r, INT64_MAX);
    country_release(f, u, r);
}

/* ---------------------------------------------------------------- logins */

static void login_failed(Floor *f, User *u, const Event *e)
{
    u->fail_ms[u->fails % FAIL_RING] = e->ts;
    uint32_t fails = ++u->fails;
    for (int r = 0; r < N_COUNTED; r++) {
        uint32_t n = (uint32_t)COUNTED_TIMES[r];
        if (fails < n || fails - n < u->counted_from[r])
            continue;
        if (e->ts - u->fail_ms[(fails - n) % FAIL_RING] >= COUNTED_WITHIN_MS)
            continue;
        alert_text(f, R_COUNTED + r, u->name, u->name_len, e->ts_text);
        u->counted_from[r] = fails;
    }
}

static void login_succeeded(Floor *f, User *u, const Event *e)
{
    uint32_t run = u->fails - u->run_base;
    for (int r = 0; r < N_FAILED; r++) {
        uint32_t n = (uint32_t)FAILED_TIMES[r];
        if (run >= n && e->ts - u->fail_ms[(u->fails - n) % FAIL_RING] <
                            FAILED_WITHIN_MIN[r] * MIN_MS)
            alert_text(f, R_FAILED + r, u->name, u->name_len, e->ts_text);
    }
}

static void login(Floor *f, User *u, const Event *e)
{
    if (e->ok == OK_FALSE) {
        login_failed(f, u, e);
        return;
    }
    if (e->ok == OK_TRUE)
        login_succeeded(f, u, e);
    u->run_base = u->fails;      /* anything but a failure ends the run (`next` is strict) */
}

/* ---------------------------------------------------------------- orders */

static Order *order_at(const Orders *o, uint64_t seq)
{
    return &o->ring[seq & (o->cap - 1)];
}

static bool orders_grow_ring(Orders *o)
{
    uint64_t cap = o->cap ? o->cap * 2 : 1 << 14;
    Order *ring = malloc(cap * sizeof *ring);
    if (!ring)
        return false;
    for (uint64_t s = o->tail; s < o->head; s++)
        ring[s & (cap - 1)] = *order_at(o, s);
    free(o->ring);
    o->ring = ring;
    o->cap = cap;
    return true;
}

static bool orders_grow_slots(Orders *o)
{
    OrderSlot *slots = flat_grow(o->slots, &o->slot_cap, (size_t)1 << 14, sizeof *slots);
    if (slots)
        o->slots = slots;
    return slots != NULL;
}

/* The slot of id (hash h), or the empty slot where it would go. */
static OrderSlot *order_slot(const Orders *o, uint64_t h, Str id)
{
    for (size_t i = h & (o->slot_cap - 1);; i = (i + 1) & (o->slot_cap - 1)) {
        OrderSlot *s = &o->slots[i];
        if (!s->hash)
            return s;
        if (s->hash != h)
            continue;
        const Order *ord = order_at(o, s->seq);
        if (ord->id_len == id.n && memcmp(ord->id, id.p, id.n) == 0)
            return s;
    }
}

/* Linear probing's deletion: later entries of the cluster move back into the hole. */
static void order_slot_remove(Orders *o, OrderSlot *s)
{
    size_t mask = o->slot_cap - 1, i = (size_t)(s - o->slots);
    for (size_t j = (i + 1) & mask; o->slots[j].hash; j = (j + 1) & mask) {
        size_t home = o->slots[j].hash & mask;
        if (((j - home) & mask) >= ((j - i) & mask)) {
            o->slots[i] = o->slots[j];
            i = j;
        }
    }
    o->slots[i].hash = 0;
    o->slot_used--;
}

/* false when out of memory */
static bool order_placed(Orders *o, const Event *e)
{
    if (o->head - o->tail == o->cap && !orders_grow_ring(o))
        return false;
    if ((o->slot_used + 1) * 2 > o->slot_cap && !orders_grow_slots(o))
        return false;
    OrderSlot *s = order_slot(o, e->hash, e->id);
    Order *ord = order_at(o, o->head);
    ord->ts = e->ts;
    ord->hash = e->hash;
    ord->waiting = (1u << N_SHIP) - 1;
    ord->id_len = (uint8_t)e->id.n;
    memcpy(ord->id, e->id.p, e->id.n);
    ord->prev_same = s->hash ? s->seq : NO_ORDER;
    if (e->ts + SHIP_WITHIN_MIN[0] * MIN_MS < o->next_due_ms)
        o->next_due_ms = e->ts + SHIP_WITHIN_MIN[0] * MIN_MS;
    if (!s->hash)
        o->slot_used++;
    s->hash = e->hash;
    s->seq = o->head++;
    return true;
}

static void order_shipped(Orders *o, const Event *e)
{
    if (!o->slot_cap)
        return;
    OrderSlot *s = order_slot(o, e->hash, e->id);
    if (!s->hash)
        return;
    for (uint64_t seq = s->seq; seq != NO_ORDER && seq >= o->tail; seq = order_at(o, seq)->prev_same)
        order_at(o, seq)->waiting = 0;
    order_slot_remove(o, s);     /* nothing waits for this id any more */
}

/* The oldest order leaves the ring; its id's slot goes too unless a newer order
 * with that id took it. */
static void order_drop_oldest(Orders *o)
{
    const Order *ord = order_at(o, o->tail);
    for (size_t i = ord->hash & (o->slot_cap - 1);; i = (i + 1) & (o->slot_cap - 1)) {
        OrderSlot *s = &o->slots[i];
        if (!s->hash)
            break;
        if (s->seq == o->tail) {
            order_slot_remove(o, s);
            break;
        }
    }
    o->tail++;
}

/* Fires every not_shipped deadline at or before `now` and drops the orders every
 * rule is done with. */
static void orders_advance(Floor *f, int64_t now)
{
    Orders *o = &f->orders;
    if (now < o->next_due_ms)
        return;
    uint64_t done = o->head;
    o->next_due_ms = INT64_MAX;
    for (int r = 0; r < N_SHIP; r++) {
        int64_t within = SHIP_WITHIN_MIN[r] * MIN_MS;
        uint64_t c = o->cursor[r];
        for (; c < o->head; c++) {
            Order *ord = order_at(o, c);
            if (now != INT64_MAX && now - ord->ts < within) {
                if (ord->ts + within < o->next_due_ms)
                    o->next_due_ms = ord->ts + within;
                break;
            }
            if (ord->waiting & (1u << r)) {
                ord->waiting &= (uint8_t)~(1u << r);
                alert_begin(f, R_SHIP + r, ord->id, ord->id_len);
                out_i64(&f->out, ord->ts);
                alert_end(f);
            }
        }
        o->cursor[r] = c;
        if (c < done)
            done = c;
    }
    while (o->tail < done)
        order_drop_oldest(o);
}

/* As user_slot_addr and user_record_addr; only a shipment reads its order. */
static const void *order_slot_addr(const Orders *o, const Event *e)
{
    return o->slot_cap ? &o->slots[e->hash & (o->slot_cap - 1)] : NULL;
}

static const void *order_record_addr(const Orders *o, const Event *e)
{
    const OrderSlot *s = order_slot_addr(o, e);
    return s && e->type == TYPE_SHIPPED && s->hash == e->hash ? order_at(o, s->seq) : NULL;
}

/* ---------------------------------------------------------------- events */

static void huge_tx(Floor *f, const Event *e)
{
    for (int r = 0; r < N_HUGE && e->amount > HUGE_ABOVE[r]; r++)
        alert_text(f, R_HUGE + r, e->user.p, e->user.n, e->ts_text);
}

/* false when out of memory */
static bool tx(Floor *f, const Event *e)
{
    if (!e->user.p || !e->has_amount)
        return true;             /* no key, or every condition is false */
    if (e->amount > HUGE_ABOVE[0])
        huge_tx(f, e);
    if (e->lookup != LOOKUP_USER)
        return true;             /* relevant to no stateful tx rule */
    User *u = user_get(&f->users, e);
    if (!u || (e->amount > LARGE_ABOVE[0] && !large_pair(f, u, e)))
        return false;
    for (int r = 0; r < N_COUNTRY && e->amount > COUNTRY_ABOVE[r]; r++)
        if (!country_event(f, u, r, e))
            return false;
    return true;
}

/* 0, or -1 when out of memory, -2 on a key or country too long */
static int on_event(Floor *f, Event *e)
{
    if (!e->has_ts) {
        f->malformed++;
        return 0;
    }
    if (e->ts < f->now_ms) {
        f->late++;
        return 0;
    }
    e->seq = f->lines;
    f->now_ms = e->ts;
    orders_advance(f, e->ts);
    if (e->user.n > MAX_KEY || e->id.n > MAX_KEY || (e->has_country && e->country.n > MAX_COUNTRY))
        return -2;
    switch (e->type) {
    case TYPE_TX:
        return tx(f, e) ? 0 : -1;
    case TYPE_LOGIN:
        if (e->lookup == LOOKUP_USER) {
            User *u = user_get(&f->users, e);
            if (!u)
                return -1;
            login(f, u, e);
        }
        return 0;
    case TYPE_ORDER:
        return e->lookup != LOOKUP_ORDER || order_placed(&f->orders, e) ? 0 : -1;
    case TYPE_SHIPPED:
        if (e->lookup == LOOKUP_ORDER)
            order_shipped(&f->orders, e);
        return 0;
    default:
        return 0;
    }
}

static void finish(Floor *f)
{
    orders_advance(f, INT64_MAX);
    for (uint32_t i = 0; i < f->users.recs.used; i++) {
        User *u = chunked_at(&f->users.recs, i);
        for (int r = 0; r < N_COUNTRY; r++)
            if (u->country_head[r])
                country_finish(f, u, r);
    }
}

/* Events are scanned AHEAD lines before their turn: the key's slot is prefetched
 * then, and its record half-way, so that the lookups of several events overlap
 * their cache misses (as vigil's staged lookups do). Lines never wait across a read:
 * the window drains at the end of each block. */
enum { AHEAD = 8, HALF = AHEAD / 2 };

typedef struct Window {
    Event ev[AHEAD];
    unsigned first, len;         /* ev[first % AHEAD] is the next to process */
    const char *next, *end;      /* lines not scanned yet */
} Window;

static const void *slot_addr(const Floor *f, const Event *e)
{
    return e->lookup == LOOKUP_USER    ? user_slot_addr(&f->users, e)
           : e->lookup == LOOKUP_ORDER ? order_slot_addr(&f->orders, e)
                                       : NULL;
}

static const void *record_addr(const Floor *f, const Event *e)
{
    return e->lookup == LOOKUP_USER    ? user_record_addr(&f->users, e)
           : e->lookup == LOOKUP_ORDER ? order_record_addr(&f->orders, e)
                                       : NULL;
}

/* Scans lines into the window until it is full or the block has no complete line. */
static void window_fill(const Floor *f, Window *w)
{
    while (w->len < AHEAD) {
        const char *nl = memchr(w->next, '\n', (size_t)(w->end - w->next));
        if (!nl)
            return;
        Event *e = &w->ev[(w->first + w->len++) % AHEAD];
        scan_event(w->next, nl, e);
        const void *slot = slot_addr(f, e);
        if (slot)
            __builtin_prefetch(slot);
        w->next = nl + 1;
    }
}

/* Processes every complete line of [p, end); returns where the rest begins through
 * *rest. 0, or an on_event error. */
static int process_block(Floor *f, Window *w, const char *p, const char *end, const char **rest)
{
    w->first = w->len = 0;
    w->next = p;
    w->end = end;
    window_fill(f, w);
    while (w->len) {
        const void *rec = w->len > HALF ? record_addr(f, &w->ev[(w->first + HALF) % AHEAD]) : NULL;
        if (rec)
            __builtin_prefetch(rec);
        Event *e = &w->ev[w->first % AHEAD];
        int rc = on_event(f, e);
        if (rc < 0)
            return rc;
        f->lines++;
        w->first++;
        w->len--;
        window_fill(f, w);
    }
    *rest = w->next;
    return 0;
}

/* 0 at end of input, 1 on a read error, 2 on a line too long, -1/-2 from on_event. */
static int read_input(Floor *f, char *buf)
{
    Window w;
    size_t have = 0;
    for (;;) {
        ssize_t n = read(0, buf + have, 2 * BLOCK - have);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return 1;
        bool at_end = n == 0;
        if (at_end) {
            if (!have)
                return 0;
            /* a last line without its newline is still an event, as it is to vigil
             * (there is room: the read asked for at least a byte) */
            buf[have] = '\n';
            n = 1;
        }
        have += (size_t)n;
        const char *rest;
        int rc = process_block(f, &w, buf, buf + have, &rest);
        if (rc < 0 || at_end)
            return rc;
        have = (size_t)(buf + have - rest);
        if (have == 2 * BLOCK)
            return 2;
        memmove(buf, rest, have);
    }
}

static void floor_free(Floor *f)
{
    free(f->users.slots);
    chunked_free(&f->users.recs);
    chunked_free(&f->pairs);
    free(f->pool.nodes);
    free(f->orders.ring);
    free(f->orders.slots);
    free(f->out.buf);
}

int main(void)
{
    Floor *f = calloc(1, sizeof *f);
    char *buf = malloc(2 * BLOCK);
    if (!f || !buf || !(f->out.buf = malloc(OUT_CAP))) {
        fprintf(stderr, "floor_s4: out of memory\n");
        return 1;
    }
    f->users.recs.size = sizeof(User);
    f->orders.next_due_ms = INT64_MAX;
    f->pairs.size = sizeof(Pairs);
    for (size_t i = 0; i < sizeof FAMILIES / sizeof FAMILIES[0]; i++)
        for (int r = 0; r < FAMILIES[i].count; r++)
            snprintf(f->names[FAMILIES[i].first + r], sizeof f->names[0], "%s_%02d",
                     FAMILIES[i].family, r);
    int rc = read_input(f, buf);
    if (rc == 0)
        finish(f);
    out_flush(&f->out);
    static const char *const WHY[] = {
        [1] = "read error", [2] = "a line longer than 2 MiB",
        [3] = "out of memory", [4] = "a key over 23 bytes or a country over 7",
    };
    int why = rc > 0 ? rc : rc == -1 ? 3 : rc == -2 ? 4 : 0;
    if (why)
        fprintf(stderr, "floor_s4: line %llu: %s\n", (unsigned long long)f->lines + 1, WHY[why]);
    else if (f->out.write_errno)
        fprintf(stderr, "floor_s4: write error: %s\n", strerror(f->out.write_errno));
    uint64_t alerts = 0;
    for (int r = 0; r < N_RULES; r++)
        alerts += f->alerts[r];
    fprintf(stderr, "floor_s4: %llu lines (%llu late, %llu without ts), %zu users, %llu alerts\n",
            (unsigned long long)f->lines, (unsigned long long)f->late,
            (unsigned long long)f->malformed, (size_t)f->users.recs.used,
            (unsigned long long)alerts);
    bool ok = !why && !f->out.write_errno;
    floor_free(f);
    free(f);
    free(buf);
    return ok ? 0 : 1;
}

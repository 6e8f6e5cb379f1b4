/* bench/gen.c — deterministic JSON-lines event generator for the benchmarks.
 *
 * Owns nothing beyond its process: it writes N events to stdout, one JSON object
 * per line, whose content depends only on the arguments (same seed, same bytes).
 * Event time advances as a Poisson process at --rate events per second; events
 * that a background event schedules for later (a shipment after an order, the rest
 * of a fraud or attack burst) wait in a min-heap and are merged in time order.
 * --jitter J subtracts up to J ms from each written timestamp, so the stream is out
 * of order by at most J ms (a rule with `lateness J` then loses nothing).
 *
 * Event shapes (ts is epoch milliseconds):
 *   {"ts":T,"type":"tx","user":"u7","amount":1234.56,"country":"FR"}
 *   {"ts":T,"type":"login","user":"u7","ok":false}
 *   {"ts":T,"type":"order","user":"u7","id":"o42"}
 *   {"ts":T,"type":"shipped","user":"u7","id":"o42"}
 *
 * --mix sets the background type weights:
 *   fraud   tx 80 %, login 15 %, order 5 %    (scenario 1, 5, 6)
 *   brute   login 100 %                       (scenario 2)
 *   absence order 100 % (plus its shipments)  (scenario 3)
 *   mixed   tx 50 %, login 30 %, order 20 %   (scenario 4)
 */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { EV_TX, EV_LOGIN, EV_ORDER, EV_SHIPPED };

typedef struct Pending {
    int64_t when_ms;
    uint64_t seq;        /* ties keep scheduling order */
    uint64_t user, value; /* value: amount in cents, ok flag, or order id */
    int type;
} Pending;

typedef struct Heap {
    Pending *items;
    size_t len, cap;
} Heap;

typedef struct Options {
    uint64_t events, keys, seed;
    double rate;             /* background events per second of event time */
    int64_t jitter_ms, start_ms;
    int w_tx, w_login, w_order; /* background weights, percent */
    double burst_p;          /* P(a background tx/login also starts a burst) */
} Options;

typedef struct Gen {
    Options opt;
    uint64_t rng;
    Heap heap;
    uint64_t seq, next_order;
    double now_ms;           /* time of the latest background event */
    char *out;
    size_t out_len, out_cap;
} Gen;

/* splitmix64: tiny, fast, and the same sequence on every platform */
static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static double rng_unit(uint64_t *s)          /* [0, 1) */
{
    return (double)(rng_next(s) >> 11) * (1.0 / 9007199254740992.0);
}

static uint64_t rng_below(uint64_t *s, uint64_t n)
{
    return n ? rng_next(s) % n : 0;
}

static double rng_gauss(uint64_t *s)
{
    double u = rng_unit(s), v = rng_unit(s);
    return sqrt(-2.0 * log(1.0 - u)) * cos(6.283185307179586 * v);
}

static bool heap_less(const Pending *a, const Pending *b)
{
    return a->when_ms < b->when_ms || (a->when_ms == b->when_ms && a->seq < b->seq);
}

static void heap_swap(Pending *a, Pending *b)
{
    Pending t = *a;
    *a = *b;
    *b = t;
}

static bool heap_push(Heap *h, Pending p)
{
    if (h->len == h->cap) {
        size_t cap = h->cap ? h->cap * 2 : 1024;
        Pending *items = realloc(h->items, cap * sizeof *items);
        if (!items)
            return false;
        h->items = items;
        h->cap = cap;
    }
    size_t i = h->len++;
    h->items[i] = p;
    while (i > 0 && heap_less(&h->items[i], &h->items[(i - 1) / 2])) {
        heap_swap(&h->items[i], &h->items[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    return true;
}

static Pending heap_pop(Heap *h)
{
    Pending top = h->items[0];
    h->items[0] = h->items[--h->len];
    for (size_t i = 0;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->len && heap_less(&h->items[l], &h->items[m]))
            m = l;
        if (r < h->len && heap_less(&h->items[r], &h->items[m]))
            m = r;
        if (m == i)
            break;
        heap_swap(&h->items[i], &h->items[m]);
        i = m;
    }
    return top;
}

static bool schedule(Gen *g, double when_ms, int type, uint64_t user, uint64_t value)
{
    Pending p = {(int64_t)when_ms, g->seq++, user, value, type};
    if (heap_push(&g->heap, p))
        return true;
    fprintf(stderr, "gen: out of memory\n");
    return false;
}

/* Output: one big buffer, written when nearly full; numbers formatted by hand
 * because printf would dominate the generator's time at 10M lines. */
static bool out_flush(Gen *g)
{
    if (g->out_len && fwrite(g->out, 1, g->out_len, stdout) != g->out_len) {
        fprintf(stderr, "gen: write error: %s\n", strerror(errno));
        return false;
    }
    g->out_len = 0;
    return true;
}

static void out_str(Gen *g, const char *s)
{
    size_t n = strlen(s);
    memcpy(g->out + g->out_len, s, n);
    g->out_len += n;
}

static void out_u64(Gen *g, uint64_t v)
{
    char tmp[24];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    while (n)
        g->out[g->out_len++] = tmp[--n];
}

static void out_cents(Gen *g, uint64_t cents)
{
    out_u64(g, cents / 100);
    g->out[g->out_len++] = '.';
    g->out[g->out_len++] = (char)('0' + cents / 10 % 10);
    g->out[g->out_len++] = (char)('0' + cents % 10);
}

static const char *const COUNTRIES[] = {"FR", "DE", "US", "GB", "ES", "IT", "NL", "BR"};

static bool emit(Gen *g, int64_t ts_ms, int type, uint64_t user, uint64_t value)
{
    if (g->out_cap - g->out_len < 256 && !out_flush(g))
        return false;
    if (g->opt.jitter_ms > 0)
        ts_ms -= (int64_t)rng_below(&g->rng, (uint64_t)g->opt.jitter_ms + 1);
    out_str(g, "{\"ts\":");
    out_u64(g, (uint64_t)ts_ms);
    switch (type) {
    case EV_TX:
        out_str(g, ",\"type\":\"tx\",\"user\":\"u");
        out_u64(g, user);
        out_str(g, "\",\"amount\":");
        out_cents(g, value);
        out_str(g, ",\"country\":\"");
        out_str(g, COUNTRIES[(user * 7 + value) % 8 < 6 ? user % 2 : (user * 7 + value) % 8]);
        out_str(g, "\"}\n");
        break;
    case EV_LOGIN:
        out_str(g, ",\"type\":\"login\",\"user\":\"u");
        out_u64(g, user);
        out_str(g, value ? "\",\"ok\":true}\n" : "\",\"ok\":false}\n");
        break;
    default:
        out_str(g, type == EV_ORDER ? ",\"type\":\"order\",\"user\":\"u"
                                    : ",\"type\":\"shipped\",\"user\":\"u");
        out_u64(g, user);
        out_str(g, "\",\"id\":\"o");
        out_u64(g, value);
        out_str(g, "\"}\n");
        break;
    }
    return true;
}

/* Log-normal amounts with median ~90; about 2.3 % are over 1000. */
static uint64_t tx_cents(Gen *g)
{
    double v = exp(4.5 + 1.2 * rng_gauss(&g->rng));
    uint64_t c = (uint64_t)(v * 100.0);
    return c ? c : 1;
}

/* A fraud burst: 3 or 4 large transactions of one user, 10 to 120 s apart. */
static bool fraud_burst(Gen *g)
{
    uint64_t u = rng_below(&g->rng, g->opt.keys);
    double when = g->now_ms;
    for (int i = 3 + (int)rng_below(&g->rng, 2); i > 0; i--) {
        when += 10000.0 + rng_unit(&g->rng) * 110000.0;
        if (!schedule(g, when, EV_TX, u, 100001 + rng_below(&g->rng, 400000)))
            return false;
    }
    return true;
}

/* An attack: 5 to 8 failed logins of one user 0.5 to 10 s apart, then (80 %) a success. */
static bool attack_burst(Gen *g)
{
    uint64_t u = rng_below(&g->rng, g->opt.keys);
    double when = g->now_ms;
    for (int i = 5 + (int)rng_below(&g->rng, 4); i > 0; i--) {
        when += 500.0 + rng_unit(&g->rng) * 9500.0;
        if (!schedule(g, when, EV_LOGIN, u, 0))
            return false;
    }
    if (rng_unit(&g->rng) < 0.8)
        return schedule(g, when + 1000.0, EV_LOGIN, u, 1);
    return true;
}

/* Shipment delay: 80 % within the hour, 10 % late (1 to 2 h), 10 % never. */
static bool ship_later(Gen *g, uint64_t user, uint64_t order)
{
    double r = rng_unit(&g->rng);
    if (r < 0.8)
        return schedule(g, g->now_ms + 1000.0 + rng_unit(&g->rng) * 3598000.0, EV_SHIPPED,
                        user, order);
    if (r < 0.9)
        return schedule(g, g->now_ms + 3600000.0 + rng_unit(&g->rng) * 3600000.0, EV_SHIPPED,
                        user, order);
    return true;
}

static bool background(Gen *g)
{
    uint64_t u = rng_below(&g->rng, g->opt.keys);
    int pick = (int)rng_below(&g->rng, 100);
    bool burst = rng_unit(&g->rng) < g->opt.burst_p;
    int64_t ts = (int64_t)g->now_ms;
    if (pick < g->opt.w_tx)
        return emit(g, ts, EV_TX, u, tx_cents(g)) && (!burst || fraud_burst(g));
    if (pick < g->opt.w_tx + g->opt.w_login)
        return emit(g, ts, EV_LOGIN, u, rng_unit(&g->rng) >= 0.05) &&
               (!burst || attack_burst(g));
    uint64_t id = g->next_order++;
    return emit(g, ts, EV_ORDER, u, id) && ship_later(g, u, id);
}

static bool generate(Gen *g)
{
    double next_bg = g->now_ms;
    for (uint64_t n = 0; n < g->opt.events; n++) {
        bool ok;
        if (g->heap.len && g->heap.items[0].when_ms <= (int64_t)next_bg) {
            Pending p = heap_pop(&g->heap);
            ok = emit(g, p.when_ms, p.type, p.user, p.value);
        } else {
            g->now_ms = next_bg;
            ok = background(g);
            next_bg += -log(1.0 - rng_unit(&g->rng)) * 1000.0 / g->opt.rate;
        }
        if (!ok)
            return false;
    }
    return out_flush(g);
}

static void usage(void)
{
    fprintf(stderr,
            "usage: gen [-n EVENTS] [-k KEYS] [-s SEED] [-r RATE] [-j JITTER_MS]\n"
            "           [-m fraud|brute|absence|mixed] [-b BURST_P] [-t START_MS]\n"
            "Writes EVENTS JSON lines to stdout (default 1000000 events, 100000 keys,\n"
            "seed 1, 1000 events/s of event time, no jitter, mix fraud).\n");
}

static bool set_mix(Options *o, const char *name)
{
    static const struct { const char *name; int tx, login, order; } MIXES[] = {
        {"fraud", 80, 15, 5}, {"brute", 0, 100, 0}, {"absence", 0, 0, 100}, {"mixed", 50, 30, 20},
    };
    for (size_t i = 0; i < sizeof MIXES / sizeof MIXES[0]; i++) {
        if (strcmp(name, MIXES[i].name) == 0) {
            o->w_tx = MIXES[i].tx;
            o->w_login = MIXES[i].login;
            o->w_order = MIXES[i].order;
            return true;
        }
    }
    return false;
}

static bool parse_u64(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-')
        return false;
    *out = v;
    return true;
}

static bool parse_args(int argc, char **argv, Options *o)
{
    *o = (Options){1000000, 100000, 1, 1000.0, 0, INT64_C(1700000000000), 0, 0, 0, 0.001};
    set_mix(o, "fraud");
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        uint64_t u = 0;
        bool ok = v != NULL;
        if (ok && strcmp(a, "-n") == 0)
            ok = parse_u64(v, &o->events);
        else if (ok && strcmp(a, "-k") == 0)
            ok = parse_u64(v, &o->keys) && o->keys > 0;
        else if (ok && strcmp(a, "-s") == 0)
            ok = parse_u64(v, &o->seed);
        else if (ok && strcmp(a, "-r") == 0)
            ok = (o->rate = strtod(v, NULL)) > 0;
        else if (ok && strcmp(a, "-j") == 0)
            ok = parse_u64(v, &u) && (o->jitter_ms = (int64_t)u, true);
        else if (ok && strcmp(a, "-t") == 0)
            ok = parse_u64(v, &u) && (o->start_ms = (int64_t)u, true);
        else if (ok && strcmp(a, "-b") == 0)
            ok = (o->burst_p = strtod(v, NULL)) >= 0;
        else if (ok && strcmp(a, "-m") == 0)
            ok = set_mix(o, v);
        else
            ok = false;
        if (!ok) {
            fprintf(stderr, "gen: bad argument '%s'%s%s\n", a, v ? " " : "", v ? v : "");
            usage();
            return false;
        }
        i++;
    }
    return true;
}

int main(int argc, char **argv)
{
    Gen g = {0};
    if (!parse_args(argc, argv, &g.opt))
        return 2;
    g.rng = g.opt.seed * UINT64_C(0x2545f4914f6cdd1d) + 1;
    g.now_ms = (double)g.opt.start_ms;
    g.out_cap = 1 << 20;
    g.out = malloc(g.out_cap);
    if (!g.out) {
        fprintf(stderr, "gen: out of memory\n");
        return 1;
    }
    bool ok = generate(&g);
    free(g.out);
    free(g.heap.items);
    if (!ok || fflush(stdout) != 0)
        return 1;
    return 0;
}

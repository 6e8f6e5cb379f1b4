/* runtime/shard.c — one worker's matching state (see shard.h). */
#include "runtime/shard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "runtime/deadline.h"
#include "runtime/partition.h"

/* A key's hash, computed to fetch its table slot before it fires (prefetch_due) and
 * kept for when it leaves its table. */
typedef struct DueHash {
    const PartEntry *entry;    /* NULL: none */
    uint64_t hash;
} DueHash;

/* Per rule (the firings of other rules in between do not evict them), by timer
 * position: more than the firings between the prefetch and the removal (DUE_SLOT), so
 * the hashes in flight never share a place. */
#define DUE_HASHES 8u

typedef struct RuleState {
    PartTable keys;
    DeadlineHeap timers;
    NfaCounters counters;
    EngineRuleStats stats;
    uint64_t cap_hits_warned;  /* counters.cap_hits at the last warning */
    int64_t cap_warned_ms;     /* when (monotonic), or INT64_MIN */
    uint64_t refused_warned;   /* stats.keys_refused at the last warning */
    int64_t refuse_warned_ms;  /* when (monotonic), or INT64_MIN */
    MemShare *mem;             /* the shard's part of the budget (drop_entry) */
    DueHash due_hash[DUE_HASHES]; /* by timer position (due_hash_at): a stale one, of
                                  an entry freed and reused since, only costs time */
} RuleState;

struct Shard {
    const CompiledRuleSet *rs;
    const EngineHooks *hooks;
    const NfaLimits *limits;
    EvalScratch *scratch;
    RuleState *rules;          /* rs->n_rules, heap, owned */
    Router *router;            /* grouped filter/key evaluation for shard_event; owned */
    NfaCondShare *cond_share;  /* step conditions shared across rules (nfa.h); owned */
    NfaCondCache *cond_cache;  /* their results for the current event; owned */
    NfaWork *work;             /* the matcher's scratch for every rule; owned */
    RuleClock clock;           /* which rule's timers are due first; owned */
    RouteResult *routed;       /* per rule: this event's routing (shard_event) */
    RouteKey *routed_key;      /* per rule: its key when ROUTE_KEYED */
    size_t *routed_order;      /* the rules whose filter this event passed, in order;
                                  then (stage_slots) those of them to feed */
    PartEntry **found;         /* per rule: the routed key's entry, or NULL */
    PartProbe *probes;         /* per rule: what a lookup in its table reads first (kept
                                  by the table), side by side for the staged lookups */
    const Nfa **nfas;          /* per rule: its Nfa, side by side: most rules only ask
                                  nfa_key_wakes, which should not cost a line each */
    NfaRunCtx *ctxs;           /* per rule: its matcher's context, side by side for the
                                  same reason (the wake test reads its gate) */
    size_t *probe_order;       /* the routed rules whose table may hold this event's key
                                  (stage_slots), in order: the later stages visit only
                                  these */
    bool *woke;                /* per rule: its table cannot hold this event's key, and
                                  the key wakes (nfa_key_wakes, asked by stage_slots) */
    Value *key_vals;           /* room for the widest key; heap, owned */
    Buf key_text;              /* unescaped strings of the key values of an alert */
    int64_t fired_upto;        /* every deadline <= this has fired (new ones are armed later) */
    MemShare mem;              /* this shard's keys in the --max-memory budget */
    PartPool pool;             /* every rule's partition entries; owned */
    bool refused;              /* the pending key was refused (budget spent) */
    bool failed;
    /* the (rule, key) whose NFA is running, for the result callback; cur_entry is
     * NULL while a key without an entry runs (pending says which key that is) */
    size_t cur_rule;
    PartEntry *cur_entry;
    const RouteKey *pending;
};

static void on_result(void *user, const NfaResult *r);
static PartEntry *materialize(Shard *s, size_t ri);
static uint32_t charge_now(const PartTable *t, const PartEntry *pe);

static bool rule_suppresses(const CompiledRule *rule)
{
    return rule->suppress_ms != DURATION_NONE && rule->suppress_ms > 0;
}

/* The optional entry fields (partition.h) a rule's keys need: the end of suppression
 * for a rule with suppression. */
static unsigned entry_extras(const CompiledRule *rule)
{
    return rule_suppresses(rule) ? PART_X_SUPPRESS : 0u;
}

static void rule_state_init(Shard *s, RuleState *st, NfaRunCtx *ctx, const NfaLimits *limits,
                            const CompiledRule *rule)
{
    part_table_init_shared(&st->keys, &s->pool);
    part_table_set_extras(&st->keys, entry_extras(rule));
    deadline_init(&st->timers);
    ctx->scratch = s->scratch;
    ctx->limits = limits;
    ctx->counters = &st->counters;
    ctx->sink.emit = on_result;
    ctx->sink.user = s;
    st->cap_warned_ms = INT64_MIN;
    st->refuse_warned_ms = INT64_MIN;
    st->mem = &s->mem;
    memset(st->due_hash, 0, sizeof st->due_hash);
}

/* Every rule's Nfa, in rule order; heap (NULL on allocation failure). */
static const Nfa **nfa_list(const CompiledRuleSet *rs)
{
    const Nfa **nfas = malloc((rs->n_rules ? rs->n_rules : 1) * sizeof *nfas);
    for (size_t i = 0; nfas && i < rs->n_rules; i++)
        nfas[i] = rs->rules[i].nfa;
    return nfas;
}

/* What the matchers of rs share on one thread: the shared conditions (one share and
 * one cache, both NULL for an empty set) and the matcher's scratch. -1 on allocation
 * failure (nothing is left allocated). */
static int matcher_parts_build(const CompiledRuleSet *rs, NfaCondShare **share,
                               NfaCondCache **cache, NfaWork **work)
{
    *share = NULL;
    *cache = NULL;
    const Nfa **nfas = nfa_list(rs);
    if (!nfas)
        return -1;
    *work = nfa_work_new(nfas, rs->n_rules);
    if (rs->n_rules && *work) {
        *share = nfa_cond_share_new(nfas, rs->n_rules);
        *cache = *share ? nfa_cond_cache_new(*share) : NULL;
    }
    free(nfas);
    if (!*work || (rs->n_rules && !*cache)) {
        nfa_cond_share_free(*share);
        nfa_work_free(*work);
        *share = NULL;
        *cache = NULL;
        *work = NULL;
        return -1;
    }
    return 0;
}

/* Points every rule's run context at the shard's shared parts (after a build or a
 * swap). */
static void wire_matcher_parts(Shard *s)
{
    for (size_t i = 0; i < s->rs->n_rules; i++) {
        s->ctxs[i].cond_cache = s->cond_cache;
        s->ctxs[i].cond_ids = nfa_cond_share_ids(s->cond_share, i);
        s->ctxs[i].gate = nfa_cond_share_gate(s->cond_share, i);
        s->ctxs[i].work = s->work;
    }
}

size_t rules_widest_key(const CompiledRuleSet *rs)
{
    size_t widest = 1;
    for (size_t i = 0; i < rs->n_rules; i++)
        if (rs->rules[i].n_keys > widest)
            widest = rs->rules[i].n_keys;
    return widest;
}

Shard *shard_new(const CompiledRuleSet *rs, const NfaLimits *limits, const EngineHooks *hooks)
{
    Shard *s = calloc(1, sizeof *s);
    if (!s)
        return NULL;
    s->rs = rs;
    s->hooks = hooks;
    s->mem.budget = hooks->budget;
    part_pool_init(&s->pool);
    s->fired_upto = INT64_MIN;
    s->scratch = expr_scratch_new();
    s->rules = calloc(rs->n_rules ? rs->n_rules : 1, sizeof *s->rules);
    s->key_vals = calloc(rules_widest_key(rs), sizeof *s->key_vals);
    s->router = router_new(rs);
    s->routed = calloc(rs->n_rules ? rs->n_rules : 1, sizeof *s->routed);
    s->routed_key = calloc(rs->n_rules ? rs->n_rules : 1, sizeof *s->routed_key);
    s->routed_order = calloc(rs->n_rules ? rs->n_rules : 1, sizeof *s->routed_order);
    s->found = calloc(rs->n_rules ? rs->n_rules : 1, sizeof *s->found);
    s->probes = calloc(rs->n_rules ? rs->n_rules : 1, sizeof *s->probes);
    s->nfas = nfa_list(rs);
    s->probe_order = calloc(rs->n_rules ? rs->n_rules : 1, sizeof *s->probe_order);
    s->woke = calloc(rs->n_rules ? rs->n_rules : 1, sizeof *s->woke);
    s->ctxs = calloc(rs->n_rules ? rs->n_rules : 1, sizeof *s->ctxs);
    if (!s->scratch || !s->rules || !s->key_vals || !s->router || !s->routed ||
        !s->routed_key || !s->routed_order || !s->found || !s->probes || !s->nfas ||
        !s->probe_order || !s->woke || !s->ctxs ||
        matcher_parts_build(rs, &s->cond_share, &s->cond_cache, &s->work) < 0 ||
        rule_clock_init(&s->clock, rs->n_rules) < 0) {
        shard_free(s);
        return NULL;
    }
    s->limits = limits;
    for (size_t i = 0; i < rs->n_rules; i++) {
        rule_state_init(s, &s->rules[i], &s->ctxs[i], limits, &rs->rules[i]);
        part_table_set_probe(&s->rules[i].keys, &s->probes[i]);
    }
    wire_matcher_parts(s);
    return s;
}

/* The end of a key's suppression (INT64_MIN: none, always so without the field). */
static int64_t suppressed_until(const RuleState *st, PartEntry *pe)
{
    return st->keys.extras & PART_X_SUPPRESS ? *part_suppress_until(pe) : INT64_MIN;
}

static void drop_entry(PartEntry *pe, void *user)
{
    RuleState *st = user;
    budget_add(st->mem, -(int64_t)charge_now(&st->keys, pe));
    nfa_key_clear(&pe->nfa, &st->counters);
}

static void rule_state_free(RuleState *st)
{
    deadline_free(&st->timers);
    part_table_free(&st->keys, drop_entry, st);
}

/* Frees what a shard holds per rule set (the rule states' array, not their contents,
 * which the caller frees or hands over to a new set): at teardown and at a reload swap. */
static void free_rule_set_parts(Shard *s)
{
    free(s->rules);
    free(s->key_vals);
    router_free(s->router);
    nfa_cond_cache_free(s->cond_cache);
    nfa_cond_share_free(s->cond_share);
    nfa_work_free(s->work);
    rule_clock_free(&s->clock);
    free(s->routed);
    free(s->routed_key);
    free(s->routed_order);
    free(s->found);
    free(s->probes);
    free(s->nfas);
    free(s->probe_order);
    free(s->woke);
    free(s->ctxs);
}

void shard_free(Shard *s)
{
    if (!s)
        return;
    if (s->rules)
        for (size_t i = 0; i < s->rs->n_rules; i++)
            rule_state_free(&s->rules[i]);
    free_rule_set_parts(s);
    part_pool_free(&s->pool);   /* after the tables that use it */
    buf_free(&s->key_text);
    if (s->scratch)
        expr_scratch_free(s->scratch);
    free(s);
}

/* ---- results and suppression ---------------------------------------------- */

/* A rule with no `on` clause at all alerts on match (alerts.h). */
static bool rule_alerts_on(const CompiledRule *rule, NfaResultKind kind)
{
    if (kind == NFA_TIMEOUT)
        return rule->n_on_timeout > 0;
    return rule->n_on_match > 0 || rule->n_on_timeout == 0;
}

static int64_t add_saturating(int64_t a, int64_t b)
{
    return a > INT64_MAX - b ? INT64_MAX : a + b;
}

/* Every result of the matcher, through NfaSink. (Timeouts of rules without `on
 * timeout`, which this only counts, were once counted by the matcher itself, through
 * a counter in NfaSink, without this call: scenario 4's 1M lines took 8,562.9M
 * instructions against 8,610.9M, -0.56%, but CPU time did not move in 42 runs each in
 * turns (median 1.29 s both); not kept.) */
static void on_result(void *user, const NfaResult *r)
{
    Shard *s = user;
    if (expr_scratch_out_of_memory(s->scratch)) {
        s->failed = true;   /* a condition that ran out of memory read as null: this
                               result may be wrong, and the run ends with an error */
        return;
    }
    const CompiledRule *rule = &s->rs->rules[s->cur_rule];
    RuleState *st = &s->rules[s->cur_rule];
    PartEntry *pe = s->cur_entry;
    if (!pe && !(pe = s->cur_entry = materialize(s, s->cur_rule)))
        return;   /* no memory for the key: the run ends with an error */
    if (r->kind == NFA_MATCH)
        st->stats.matches++;
    else
        st->stats.timeouts++;
    if (!rule_alerts_on(rule, r->kind))
        return;
    if (rule_suppresses(rule) && (st->keys.extras & PART_X_SUPPRESS)) {
        int64_t *until = part_suppress_until(pe);
        if (r->time_ms < *until) {
            st->stats.suppressed++;
            return;
        }
        *until = add_saturating(r->time_ms, rule->suppress_ms);
    }
    if (!part_key_values(pe->tail, pe->klen, s->key_vals, rule->n_keys, &s->key_text)) {
        s->failed = true;   /* the bytes are ours: only allocation can fail */
        return;
    }
    st->stats.alerts++;
    s->hooks->sink.alert(s->hooks->sink.user, s->cur_rule, s->key_vals, rule->n_keys, r,
                         s->scratch);
}

/* --max-memory estimates (nfa/SEMANTICS.md 10): a key's first partial match beyond
 * its entry (the node: the NfaKey and its first run are inside the entry), each further
 * one, and a node holding an event; an entry's table slots and timer slot. */
#define KEY_MATCHER_BYTES 32
#define PARTIAL_BYTES 128
#define NODE_BYTES 32
#define ENTRY_OVERHEAD_BYTES 64

/* The entry's bytes rounded up as a malloc chunk's would be (an 8-byte header, 16-byte
 * steps): its slab holds it in fewer, but partly filled slabs cost about the
 * difference. The entry holds the NfaKey, so it is most of a key's memory. */
static size_t entry_chunk(const PartTable *t, const PartEntry *pe)
{
    return (part_entry_bytes(pe->klen, t->pre) + 8 + 15) & ~(size_t)15;
}

static uint32_t saturate32(size_t n)
{
    return n < UINT32_MAX ? (uint32_t)n : UINT32_MAX;
}

/* What a key counts for in the budget with `partials` partial matches: a function of
 * its entry's size, that count and its held bytes, so that the entry keeps only `held`
 * and the charge is recomputed, exactly, to take it back (between two runs of a key
 * neither changes). */
static uint32_t charge_of(const PartTable *t, const PartEntry *pe, size_t partials)
{
    size_t matcher = partials ? KEY_MATCHER_BYTES + (partials - 1) * PARTIAL_BYTES : 0;
    return saturate32(entry_chunk(t, pe) + ENTRY_OVERHEAD_BYTES + matcher + pe->held);
}

static uint32_t charge_now(const PartTable *t, const PartEntry *pe)
{
    return charge_of(t, pe, nfa_key_partials(&pe->nfa));
}

/* What one NFA run did to a key's memory: `before` partial matches on entry (`fresh`:
 * an entry made by this run, charged nothing yet), and `retained` bytes of the event
 * it took into new nodes. Which events the dropped partial matches released is not
 * known here: the held bytes shrink in proportion to the partial matches that went
 * (an approximation). */
typedef struct KeyGrowth {
    size_t before;
    size_t retained;
    bool fresh;
} KeyGrowth;

/* The growth of a run of `ev` (NULL: a timer) that took `takes` nodes of it. Counted
 * by takes, not by the event's references: rules starting on one event share its
 * first node (nfa/event.h), so only the first of them adds a reference, yet each key
 * holds the event for as long as its own partial match lives. Every key holding the
 * event is charged for it: the estimate errs on the safe side. */
static KeyGrowth growth_of(size_t before, const Event *ev, uint64_t takes)
{
    KeyGrowth g = {before, 0, false};
    if (ev && takes)
        g.retained = budget_event_bytes(ev) + (size_t)takes * NODE_BYTES;
    return g;
}

static void recharge(Shard *s, const PartTable *t, PartEntry *pe, KeyGrowth g)
{
    uint32_t was = g.fresh ? 0 : charge_of(t, pe, g.before);
    size_t after = nfa_key_partials(&pe->nfa);
    if (!after)
        pe->held = 0;
    else if (after < g.before)
        pe->held = (uint32_t)(pe->held / g.before * after);
    pe->held = saturate32((size_t)pe->held + (after ? g.retained : 0));
    budget_add(&s->mem, (int64_t)charge_of(t, pe, after) - (int64_t)was);
}

/* By where the timers hold the entry (PartEntry.heap_pos): the keys about to fire
 * are consecutive slots of one ring, so they never share a place here. */
static DueHash *due_hash_at(RuleState *st, uint32_t timer_pos)
{
    return &st->due_hash[timer_pos % DUE_HASHES];
}

/* Removes pe, which the timers held at timer_pos, from its table with the hash of its
 * key: the event's (k, NULL for a timer), else the one prefetch_due kept, if it kept
 * one, else computed from the key bytes. */
static void remove_key(RuleState *st, PartEntry *pe, uint32_t timer_pos, const RouteKey *k)
{
    DueHash *dh = due_hash_at(st, timer_pos);
    if (k) {
        part_remove_hashed(&st->keys, pe, k->hash);
    } else if (dh->entry == pe) {
        dh->entry = NULL;
        part_remove_hashed(&st->keys, pe, dh->hash);
    } else {
        part_remove(&st->keys, pe);
    }
}

/* After the NFA ran for a key at time `now`, for an event with key k or for a timer
 * (k NULL): drop the entry if the key went idle and holds no suppression, else re-arm
 * its timer (the NFA deadline, or the end of suppression so that the idle entry is
 * collected then). The caller tells the rules' clock (clock_rule): the timers tell it
 * once per run of firings of one rule. (Its two ways as two functions out of line, so
 * that neither saves the other's registers, were measured: scenario 4's 1M lines took
 * 8,596.7M instructions against 8,610.9M, -0.16%; not kept.) */
static void settle(Shard *s, size_t ri, PartEntry *pe, int64_t now, KeyGrowth g,
                   const RouteKey *k)
{
    RuleState *st = &s->rules[ri];
    bool idle = nfa_key_idle(&pe->nfa);
    int64_t until = suppressed_until(st, pe);
    if (idle && until <= now) {
        /* recharge, then taking the charge back, would sum to this */
        if (!g.fresh)
            budget_add(&s->mem, -(int64_t)charge_of(&st->keys, pe, g.before));
        uint32_t timer_pos = pe->heap_pos;
        deadline_remove(&st->timers, pe);
        remove_key(st, pe, timer_pos, k);
        return;
    }
    recharge(s, &st->keys, pe, g);
    int64_t due = idle ? until : nfa_key_deadline(s->nfas[ri], &pe->nfa);
    if (due <= now)
        due = add_saturating(now, 1);   /* never re-arm at a handled time: no busy loop */
    if (deadline_set(&st->timers, pe, due) < 0)
        s->failed = true;
}

static void clock_rule(Shard *s, size_t ri)
{
    rule_clock_set(&s->clock, ri, deadline_next(&s->rules[ri].timers));
}

/* The rule whose next deadline is earliest, if it is <= t. */
static bool next_due(const Shard *s, int64_t t, size_t *rule)
{
    int64_t best = rule_clock_next(&s->clock, rule);
    return best != INT64_MAX && best <= t;
}

/* A partial match the matcher lost for want of memory may have been an alert: the run
 * ends with an error, as for every other allocation failure. */
static inline void fail_if_out_of_memory(Shard *s, const RuleState *st)
{
    if (st->counters.out_of_memory)
        s->failed = true;
}

static void run_advance(Shard *s, size_t ri, PartEntry *pe, int64_t t)
{
    KeyGrowth g = growth_of(nfa_key_partials(&pe->nfa), NULL, 0);
    if (!nfa_key_idle(&pe->nfa)) {
        s->cur_rule = ri;
        s->cur_entry = pe;
        nfa_key_advance_in(s->rs->rules[ri].nfa, &pe->nfa, t, &s->ctxs[ri]);
        fail_if_out_of_memory(s, &s->rules[ri]);
    }
    settle(s, ri, pe, t, g, NULL);
}

/* Timers fire in order, so the keys about to come due are known: firing one touches
 * its entry (with its NfaKey inside), the newest node and that node's event, each
 * cold after a window's worth of other events. Each firing starts one link of the
 * keys a few places behind it, so by the time a key fires the chain is in cache, each
 * link having been fetched (from a link already there) while earlier keys ran. A key
 * that goes idle when it fires leaves its table: its slot (found from the entry's
 * hash) and its slab's header are fetched too. The distances are counted in this
 * rule's firings: other rules' firings in between only add time. */
enum { DUE_ENTRY, DUE_SLOT, DUE_NODE, DUE_EVENT, DUE_LINKS };
static const size_t due_ahead[DUE_LINKS] = {[DUE_ENTRY] = 8, [DUE_SLOT] = 4,
                                            [DUE_NODE] = 2, [DUE_EVENT] = 1};

static void prefetch_due(RuleState *st, const PartProbe *probe)
{
    const DeadlineHeap *timers = &st->timers;
    PartEntry *e[DUE_LINKS];
    deadline_peek_many(timers, due_ahead, e, DUE_LINKS);
    if (e[DUE_ENTRY])
        part_entry_prefetch(e[DUE_ENTRY]);
    if (e[DUE_SLOT]) {
        uint64_t hash = part_entry_hash(e[DUE_SLOT]);
        *due_hash_at(st, e[DUE_SLOT]->heap_pos) = (DueHash){e[DUE_SLOT], hash};
        part_probe_prefetch(probe, hash);
        part_slab_prefetch(e[DUE_SLOT]);
    }
    if (e[DUE_NODE])
        nfa_key_prefetch(&e[DUE_NODE]->nfa, false);
    if (e[DUE_EVENT])
        nfa_key_prefetch(&e[DUE_EVENT]->nfa, true);
}

void shard_fire_due(Shard *s, int64_t t)
{
    /* settle() arms every timer after the time it handles, so nothing new can be due
     * at or before a time already fired: many events at one time cost one check. */
    if (t <= s->fired_upto)
        return;
    s->fired_upto = t;
    size_t ri = 0;
    while (next_due(s, t, &ri)) {
        /* Firing changes only this rule's timers: it fires them up to where another
         * rule's come first (ties to the lower rule number), then tells the clock. */
        size_t other = SIZE_MAX;
        int64_t until = rule_clock_runner_up(&s->clock, &other);
        const DeadlineHeap *timers = &s->rules[ri].timers;
        int64_t next;
        do {
            prefetch_due(&s->rules[ri], &s->probes[ri]);
            PartEntry *pe = deadline_top(timers);
            run_advance(s, ri, pe, pe->deadline);
            next = deadline_next(timers);
        } while (next <= t && next != INT64_MAX &&
                 (next < until || (next == until && ri < other)));
        clock_rule(s, ri);
    }
    expr_scratch_reset(s->scratch);
}

/* ---- events ----------------------------------------------------------------- */

/* A cap that bites loses partial matches: say so, at most once per period per rule. */
static void warn_caps(Shard *s, size_t ri)
{
    RuleState *st = &s->rules[ri];
    if (st->counters.cap_hits == st->cap_hits_warned || !s->hooks->warn)
        return;
    if (!clock_period_passed(&st->cap_warned_ms, SHARD_CAP_WARN_PERIOD_MS))
        return;
    char msg[256];
    snprintf(msg, sizeof msg, "rule '%s': partial matches lost to the caps at %llu "
             "events (%llu dropped, %llu not started so far); raise --max-partials or "
             "tighten `within`", s->rs->rules[ri].name,
             (unsigned long long)(st->counters.cap_hits - st->cap_hits_warned),
             (unsigned long long)st->counters.partials_dropped,
             (unsigned long long)st->counters.partials_refused);
    st->cap_hits_warned = st->counters.cap_hits;
    s->hooks->warn(s->hooks->warn_user, msg);
}

/* Keys refused for want of memory lose their events: say so, as for the caps. */
static void warn_refused(Shard *s, size_t ri)
{
    RuleState *st = &s->rules[ri];
    if (st->stats.keys_refused == st->refused_warned || !s->hooks->warn)
        return;
    if (!clock_period_passed(&st->refuse_warned_ms, SHARD_CAP_WARN_PERIOD_MS))
        return;
    char msg[256];
    snprintf(msg, sizeof msg, "rule '%s': %llu new keys refused, --max-memory reached "
             "(%llu so far); existing keys keep matching", s->rs->rules[ri].name,
             (unsigned long long)(st->stats.keys_refused - st->refused_warned),
             (unsigned long long)st->stats.keys_refused);
    st->refused_warned = st->stats.keys_refused;
    s->hooks->warn(s->hooks->warn_user, msg);
}

/* Both warnings are rare; this test runs after every key of every rule, inline. */
static inline void warn_if_needed(Shard *s, size_t ri)
{
    const RuleState *st = &s->rules[ri];
    fail_if_out_of_memory(s, st);
    if (st->counters.cap_hits != st->cap_hits_warned)
        warn_caps(s, ri);
    if (st->stats.keys_refused != st->refused_warned)
        warn_refused(s, ri);
}

static void feed_entry(Shard *s, size_t ri, const RouteKey *k, PartEntry *pe, Event *ev)
{
    s->cur_rule = ri;
    s->cur_entry = pe;
    size_t before = nfa_key_partials(&pe->nfa);
    uint64_t takes0 = s->rules[ri].counters.takes;
    nfa_key_event_in(s->rs->rules[ri].nfa, &pe->nfa, ev, &s->ctxs[ri]);
    settle(s, ri, pe, ev->time_ms,
           growth_of(before, ev, s->rules[ri].counters.takes - takes0), k);
    clock_rule(s, ri);
    warn_if_needed(s, ri);
}

/* With the budget spent a new key gets no entry: its results are dropped and the
 * refusal counted once per event. */
static bool refuse_key(Shard *s, size_t ri)
{
    if (!budget_full(&s->mem))
        return false;
    if (!s->refused) {
        s->rules[ri].stats.keys_refused++;
        s->refused = true;
    }
    return true;
}

/* The entry of the pending key, made now; NULL on allocation failure. */
static PartEntry *materialize(Shard *s, size_t ri)
{
    if (refuse_key(s, ri))
        return NULL;
    const RouteKey *k = s->pending;
    PartEntry *pe = part_add(&s->rules[ri].keys, k->bytes, k->len, k->hash);
    if (!pe)
        s->failed = true;
    return pe;
}

static PartEntry *find_key(const RuleState *st, const RouteKey *k)
{
    return part_may_hold(&st->keys, k->hash)
               ? part_lookup(&st->keys, k->bytes, k->len, k->hash) : NULL;
}

/* One event for one rule and a key without an entry. Most events start nothing for
 * most rules (nfa_key_wakes says so cheaply), so a key seen for the first time gets its
 * entry only once its NFA keeps state or alerts. The caller has started fetching the
 * slot that entry would take. */
static void feed_new(Shard *s, size_t ri, const RouteKey *k, Event *ev)
{
    RuleState *st = &s->rules[ri];
    NfaKey fresh;
    nfa_key_init(&fresh);
    s->cur_rule = ri;
    s->cur_entry = NULL;
    s->pending = k;
    s->refused = false;
    uint64_t takes0 = st->counters.takes;
    nfa_key_event_in(s->rs->rules[ri].nfa, &fresh, ev, &s->ctxs[ri]);
    PartEntry *pe = s->cur_entry;   /* made by on_result if the event alerted */
    bool idle = nfa_key_idle(&fresh);
    if (!idle && !pe)
        pe = materialize(s, ri);
    s->pending = NULL;
    if (!pe) {
        nfa_key_clear(&fresh, &st->counters);
    } else {
        pe->nfa = fresh;   /* the key moves into its entry (made idle) */
        KeyGrowth g = growth_of(0, ev, st->counters.takes - takes0);
        g.fresh = true;
        settle(s, ri, pe, ev->time_ms, g, k);
        clock_rule(s, ri);
    }
    warn_if_needed(s, ri);
}

/* One event for one rule and key, whose entry (find_key) is pe; `woke`: a key without
 * an entry is known to wake (nfa_key_wakes was asked already). */
static inline void feed_found(Shard *s, size_t ri, const RouteKey *k, Event *ev, PartEntry *pe,
                              bool woke)
{
    if (pe)
        feed_entry(s, ri, k, pe, ev);
    else if (woke || nfa_key_wakes(s->nfas[ri], ev, &s->ctxs[ri]))
        feed_new(s, ri, k, ev);
}

static void feed_key(Shard *s, size_t ri, const RouteKey *k, Event *ev)
{
    part_probe_prefetch(&s->probes[ri], k->hash);   /* its entry's, or a new one's */
    feed_found(s, ri, k, ev, find_key(&s->rules[ri], k), false);
}

/* Finding a routed key's state is a chain of dependent loads: the table's bitmap
 * word, the slot, the entry (its NfaKey inside), the newest node of its partial match.
 * With many rules each link is a cache miss in a different place; taking one link of
 * every rule before the next link of any makes those misses overlap instead of
 * queueing. Feeding one rule changes only that rule's table, so every entry found
 * stays valid until its rule runs. The stages below each take one link for the rules
 * the event reached. (One hint table per key, naming the rules that hold it, was
 * tried in place of the per-rule bitmaps: 31% fewer L1 misses in callgrind, but its
 * own misses and upkeep made scenario 4 about 4% slower in CPU time on the
 * development machine, so it went. Prefetching every routed rule's bitmap word in a
 * pass before stage_slots moved the wait from those words to the slots: scenario 4
 * took 1.435 s of CPU against 1.440, 8 runs each in turns, so it went too.)
 *
 * A rule whose table cannot hold the key is asked here whether the key wakes
 * (nfa_key_wakes: the answer depends on the event alone), so that the slot a new entry
 * takes is fetched while the rules before it are fed; a rule with nothing to do is
 * left out of the feeding.
 *
 * stage_slots keeps the rules to feed in routed_order (*n_feed of them, in order) and
 * returns how many go on to the later stages (probe_order). */
static size_t stage_slots(Shard *s, size_t n, Event *ev, size_t *n_feed)
{
    size_t n_probe = 0, kept = 0;
    for (size_t j = 0; j < n; j++) {
        size_t ri = s->routed_order[j];
        RouteResult rr = s->routed[ri];
        if (rr == ROUTE_KEYED) {
            uint64_t hash = s->routed_key[ri].hash;
            s->found[ri] = NULL;
            s->woke[ri] = !part_probe_may_hold(&s->probes[ri], hash);
            if (!s->woke[ri])
                s->probe_order[n_probe++] = ri;
            else if (!nfa_key_wakes(s->nfas[ri], ev, &s->ctxs[ri]))
                continue;
            part_probe_prefetch(&s->probes[ri], hash);   /* its entry's, or a new one's */
            s->routed_order[kept++] = ri;
        } else if (rr == ROUTE_NO_KEY) {
            s->rules[ri].stats.missing_key++;
        } else if (rr == ROUTE_FAILED) {
            s->failed = true;
        }
    }
    *n_feed = kept;
    return n_probe;
}

static void stage_entries(Shard *s, size_t n_probe)
{
    for (size_t j = 0; j < n_probe; j++) {
        size_t ri = s->probe_order[j];
        PartEntry *pe = s->found[ri] = part_probe_candidate(&s->probes[ri],
                                                            s->routed_key[ri].hash);
        if (pe)
            part_entry_prefetch(pe);
    }
}

/* Confirms each candidate: a different key under the same 64-bit hash takes the full
 * lookup. */
static void stage_confirm(Shard *s, size_t n_probe)
{
    for (size_t j = 0; j < n_probe; j++) {
        size_t ri = s->probe_order[j];
        PartEntry *pe = s->found[ri];
        if (!pe)
            continue;
        const RouteKey *k = &s->routed_key[ri];
        if (!part_entry_is(pe, k->bytes, k->len))
            pe = s->found[ri] = part_lookup(&s->rules[ri].keys, k->bytes, k->len, k->hash);
    }
}

static void stage_nodes(Shard *s, size_t n_probe)
{
    for (size_t j = 0; j < n_probe; j++) {
        const PartEntry *pe = s->found[s->probe_order[j]];
        if (pe)
            nfa_key_prefetch(&pe->nfa, false);
    }
}

void shard_event(Shard *s, Event *ev)
{
    shard_fire_due(s, ev->time_ms);
    if (s->cond_cache)
        nfa_cond_cache_next_event(s->cond_cache);
    size_t n = router_route_all(s->router, ev, s->scratch, s->routed_order, s->routed,
                                s->routed_key);
    size_t n_feed;
    size_t n_probe = stage_slots(s, n, ev, &n_feed);
    stage_entries(s, n_probe);
    stage_confirm(s, n_probe);
    stage_nodes(s, n_probe);
    for (size_t j = 0; j < n_feed; j++) {
        size_t ri = s->routed_order[j];
        feed_found(s, ri, &s->routed_key[ri], ev, s->found[ri], s->woke[ri]);
    }
    expr_scratch_reset(s->scratch);
}

void shard_feed(Shard *s, size_t ri, Event *ev, const char *kbytes, size_t klen, uint64_t hash)
{
    shard_fire_due(s, ev->time_ms);
    /* One rule per call: results cannot be reused across calls, since nothing says
     * whether the next call is for the same event. */
    if (s->cond_cache)
        nfa_cond_cache_next_event(s->cond_cache);
    RouteKey k = {kbytes, klen, hash, NULL};
    feed_key(s, ri, &k, ev);
    expr_scratch_reset(s->scratch);
}

/* ---- the end ---------------------------------------------------------------- */

/* At the end of input every timer fires, in (deadline, rule, key) order, and then
 * every key left runs to INT64_MAX. Most keys' ends show nothing: a key whose matcher
 * gives only timeouts (nfa_key_end_only_timeouts), in a rule that alerts on none, only
 * counts them; an idle entry (kept for its suppression) only leaves. Such keys have no
 * order to keep, so they are dropped at once, counted as their timeouts would have
 * counted them; the others still fire in order. (A key with partial matches is taken
 * as showing something in a rule that alerts on timeouts, even if none of its partial
 * matches has a deadline: that is rare, and only costs time.) */
static bool key_end_silent(const CompiledRule *rule, const PartEntry *pe, size_t *timeouts)
{
    *timeouts = 0;
    if (nfa_key_idle(&pe->nfa))
        return true;
    if (rule_alerts_on(rule, NFA_TIMEOUT) || !nfa_key_end_only_timeouts(rule->nfa, &pe->nfa))
        return false;
    *timeouts = nfa_key_end_timeouts(rule->nfa, &pe->nfa);
    return true;
}

/* Keys left after every timer (a partial match without a deadline) run in the order
 * of their table's slots, which depends on how the table shrank on the way: if such a
 * key may also release a match, the rule's table must go down exactly as it would have. */
static bool key_end_in_slot_order(const Nfa *nfa, const PartEntry *pe)
{
    return !nfa_key_end_only_timeouts(nfa, &pe->nfa) &&
           nfa_key_end_timeouts(nfa, &pe->nfa) < nfa_key_partials(&pe->nfa);
}

/* How many keys ahead of the one it looks at rule_end_scan prefetches: an entry, and
 * nearer, what counting that key's timeouts reads (nfa_key_end_timeouts reads the
 * partial matches' events, which nfa_key_prefetch finds through the entry: hence the
 * entry further ahead). */
enum { END_AHEAD_ENTRY = 16, END_AHEAD_KEY = 8 };

/* What one look at each key of a rule found: its keys whose end is silent, moved to
 * the front of the array scanned, how many timeouts they would count, and whether the
 * others' order needs the table's shape (key_end_in_slot_order). */
typedef struct RuleEnd {
    size_t n_silent;
    uint64_t timeouts;
    bool slot_order;
} RuleEnd;

static RuleEnd rule_end_scan(const CompiledRule *rule, PartEntry **keys, size_t n)
{
    RuleEnd end = {0, 0, false};
    bool counts = !rule_alerts_on(rule, NFA_TIMEOUT);
    for (size_t i = 0; i < n; i++) {
        if (i + END_AHEAD_ENTRY < n)
            part_entry_prefetch(keys[i + END_AHEAD_ENTRY]);
        if (counts && i + END_AHEAD_KEY < n)
            nfa_key_prefetch(&keys[i + END_AHEAD_KEY]->nfa, false);
        size_t timeouts;
        if (key_end_silent(rule, keys[i], &timeouts)) {
            keys[end.n_silent++] = keys[i];
            end.timeouts += timeouts;
        } else if (key_end_in_slot_order(rule->nfa, keys[i])) {
            end.slot_order = true;
        }
    }
    return end;
}

/* Every entry of a table, in slot order (heap, t->count of them); NULL on allocation
 * failure. */
static PartEntry **table_entries(const PartTable *t)
{
    PartEntry **all = malloc((t->count ? t->count : 1) * sizeof *all);
    if (all)
        part_entries(t, all);
    return all;
}

/* Drops the keys of rule ri whose end is silent, as if their timers had fired, and
 * keeps its table's slots from shrinking while the rest leave, unless their order
 * depends on it. Without memory for the look, every key goes the usual way. (Leaving
 * the other keys in their kept table when they go idle, charged as idle, to be freed
 * with it after the last timer, was measured too: scenario 4's 1M lines took 8,489.1M
 * instructions against 8,470.9M: the table removals it saved at the end were 12M, and
 * settle, with the test and a second recharge call, took 15M more over the run; not
 * kept.) */
static void drop_silent_keys(Shard *s, size_t ri)
{
    RuleState *st = &s->rules[ri];
    PartEntry **keys = st->keys.count ? table_entries(&st->keys) : NULL;
    if (!keys)
        return;
    RuleEnd end = rule_end_scan(&s->rs->rules[ri], keys, st->keys.count);
    if (!end.slot_order) {
        st->stats.timeouts += end.timeouts;
        if (end.n_silent == st->keys.count) {
            deadline_free(&st->timers);
            part_table_free(&st->keys, drop_entry, st);
        } else {
            part_table_keep_size(&st->keys, true);
            for (size_t i = 0; i < end.n_silent; i++) {
                drop_entry(keys[i], st);
                deadline_remove(&st->timers, keys[i]);
                part_remove(&st->keys, keys[i]);
            }
        }
        clock_rule(s, ri);
    }
    free(keys);
}

/* Runs the keys of rule ri left after every timer to INT64_MAX, in slot order; false
 * on allocation failure (the shard has failed). */
static bool advance_left(Shard *s, size_t ri)
{
    RuleState *st = &s->rules[ri];
    size_t n = st->keys.count;
    if (!n)
        return true;
    /* collected first: advancing may remove entries and resize the table */
    PartEntry **live = table_entries(&st->keys);
    if (!live) {
        s->failed = true;
        return false;
    }
    for (size_t j = 0; j < n; j++)
        run_advance(s, ri, live[j], INT64_MAX);
    clock_rule(s, ri);
    free(live);
    return true;
}

void shard_advance_all(Shard *s)
{
    /* an evaluation that ran out of memory leaves results uncounted (on_result): the
     * silent keys' counts would then differ, and the run fails anyway */
    if (!shard_failed(s))
        for (size_t ri = 0; ri < s->rs->n_rules; ri++)
            drop_silent_keys(s, ri);
    shard_fire_due(s, INT64_MAX - 1);
    for (size_t ri = 0; ri < s->rs->n_rules; ri++) {
        if (!advance_left(s, ri))
            return;
        PartTable *t = &s->rules[ri].keys;
        if (t->keep_size && !t->count)
            part_table_free(t, NULL, NULL);   /* its slots, kept from shrinking */
        part_table_keep_size(t, false);
    }
    expr_scratch_reset(s->scratch);
}

int64_t shard_next_deadline(const Shard *s)
{
    size_t rule;
    return rule_clock_next(&s->clock, &rule);
}

uint64_t shard_partials_live(const Shard *s)
{
    uint64_t n = 0;
    for (size_t i = 0; i < s->rs->n_rules; i++)
        n += s->rules[i].counters.partials_live;
    return n;
}

void shard_add_rule_stats(const Shard *s, size_t rule, EngineRuleStats *acc)
{
    const RuleState *st = &s->rules[rule];
    acc->matches += st->stats.matches;
    acc->timeouts += st->stats.timeouts;
    acc->alerts += st->stats.alerts;
    acc->suppressed += st->stats.suppressed;
    acc->missing_key += st->stats.missing_key;
    acc->keys_live += st->keys.count;
    acc->partials_live += st->counters.partials_live;
    acc->partials_dropped += st->counters.partials_dropped;
    acc->partials_refused += st->counters.partials_refused;
    acc->cap_hits += st->counters.cap_hits;
    acc->keys_refused += st->stats.keys_refused;
}

bool shard_failed(const Shard *s)
{
    /* an evaluation that ran out of memory may have turned a match into none */
    return s->failed || expr_scratch_out_of_memory(s->scratch) > 0;
}

uint64_t shard_regex_limit_hits(const Shard *s)
{
    return expr_scratch_regex_limit_hits(s->scratch);
}

/* ---- checkpoints ------------------------------------------------------------ */

enum { VALUE_HAS_S = 1, VALUE_HAS_RAW = 2 };

static void put_value(Buf *out, const Value *v)
{
    /* num, i and s share their bits: each is written for its own type only, else 0. */
    uint64_t bits = 0;
    if (v->type == V_NUM)
        memcpy(&bits, &v->num, sizeof bits);
    int64_t i = v->type == V_TIME || v->type == V_DUR ? v->i : 0;
    const char *s = v->type == V_STR ? v->s : NULL;
    snap_put_u64(out, (uint64_t)v->type);
    snap_put_u64(out, v->b);
    snap_put_u64(out, bits);
    snap_put_i64(out, i);
    snap_put_u64(out, (s ? VALUE_HAS_S : 0) | (v->raw ? VALUE_HAS_RAW : 0));
    if (s)
        snap_put_bytes(out, s, v->len);
    if (v->raw)
        snap_put_bytes(out, v->raw, v->raw_len);
}

/* A value whose strings point into the reader's input. The record keeps the values
 * (its format predates entries that derive them from their key bytes): read and
 * checked, not kept. */
static bool get_value(SnapReader *r, Value *v)
{
    memset(v, 0, sizeof *v);
    uint64_t type = snap_get_u64(r);
    v->b = snap_get_u64(r) != 0;
    uint64_t bits = snap_get_u64(r);
    int64_t i = snap_get_i64(r);
    uint64_t has = snap_get_u64(r);
    size_t len = 0, raw_len = 0;
    const char *s = has & VALUE_HAS_S ? snap_get_bytes(r, &len) : NULL;
    if (has & VALUE_HAS_RAW)
        v->raw = snap_get_bytes(r, &raw_len);
    v->type = (ValueType)type;
    v->raw_len = (uint32_t)raw_len;
    /* num, i and s share their bits: set only the one of the type. */
    if (type == V_NUM)
        memcpy(&v->num, &bits, sizeof bits);
    else if (type == V_TIME || type == V_DUR)
        v->i = i;
    else if (type == V_STR) {
        v->s = s;
        v->len = (uint32_t)len;
    }
    return !r->bad && type <= V_DUR && len <= VALUE_MAX_LEN && raw_len <= VALUE_MAX_LEN;
}

int shard_snapshot_keys(const Shard *s, size_t ri, Buf *out, SnapEventIndex index, void *user)
{
    const RuleState *st = &s->rules[ri];
    const CompiledRule *rule = &s->rs->rules[ri];
    Value *vals = malloc((rule->n_keys ? rule->n_keys : 1) * sizeof *vals);
    Buf text = BUF_INIT;
    int rc = vals ? 0 : -1;
    size_t bucket = 0;
    for (PartEntry *pe = part_next(&st->keys, &bucket, NULL); pe && rc == 0;
         pe = part_next(&st->keys, &bucket, pe)) {
        snap_put_u64(out, 1);
        snap_put_bytes(out, pe->tail, pe->klen);
        if (!part_key_values(pe->tail, pe->klen, vals, rule->n_keys, &text)) {
            rc = -1;
            break;
        }
        snap_put_u64(out, rule->n_keys);
        for (size_t k = 0; k < rule->n_keys; k++)
            put_value(out, &vals[k]);
        snap_put_i64(out, suppressed_until(st, pe));
        rc = nfa_key_snapshot(rule->nfa, nfa_key_idle(&pe->nfa) ? NULL : &pe->nfa, out,
                              index, user);
    }
    free(vals);
    buf_free(&text);
    return rc < 0 || out->failed ? -1 : 0;
}

int shard_restore_key(Shard *s, size_t ri, const char *kbytes, size_t klen, SnapReader *r,
                      SnapEventLookup lookup, void *user, const char **err)
{
    const CompiledRule *rule = &s->rs->rules[ri];
    RuleState *st = &s->rules[ri];
    size_t n_key = snap_get_count(r, 5);
    if (r->bad || n_key != rule->n_keys) {
        *err = "a key does not fit its rule";
        return -1;
    }
    for (size_t k = 0; k < n_key; k++) {
        if (!get_value(r, &s->key_vals[k])) {
            *err = "malformed key value";
            return -1;
        }
    }
    int64_t suppress_until = snap_get_i64(r);
    if (!(st->keys.extras & PART_X_SUPPRESS))
        suppress_until = INT64_MIN;   /* a rule that no longer suppresses */
    NfaKey *nk = NULL;
    if (r->bad || nfa_key_restore(rule->nfa, r, &nk, &st->counters, lookup, user, err) < 0) {
        if (r->bad)
            *err = "malformed key";
        return -1;
    }
    if (!nk && suppress_until == INT64_MIN)
        return 0;   /* nothing to keep: the key would have been removed */
    uint64_t hash = part_hash(kbytes, klen);
    PartEntry *pe = part_lookup(&st->keys, kbytes, klen, hash)
                        ? NULL : part_add(&st->keys, kbytes, klen, hash);
    if (!pe) {
        nfa_key_free(nk, &st->counters);
        *err = "out of memory, or a key twice";
        return -1;
    }
    nfa_key_move_in(&pe->nfa, nk);
    if (st->keys.extras & PART_X_SUPPRESS)
        *part_suppress_until(pe) = suppress_until;
    /* the events it holds are not known here */
    recharge(s, &st->keys, pe, (KeyGrowth){0, 0, true});
    int rc = deadline_set(&st->timers, pe,
                          nk ? nfa_key_deadline(rule->nfa, &pe->nfa) : suppress_until);
    clock_rule(s, ri);
    if (rc < 0) {
        *err = "out of memory";
        return -1;
    }
    return 0;
}

void shard_restore_stats(Shard *s, size_t ri, const EngineRuleStats *in)
{
    RuleState *st = &s->rules[ri];
    st->stats.matches = in->matches;
    st->stats.timeouts = in->timeouts;
    st->stats.alerts = in->alerts;
    st->stats.suppressed = in->suppressed;
    st->stats.missing_key = in->missing_key;
    st->counters.partials_dropped = in->partials_dropped;
    st->counters.partials_refused = in->partials_refused;
    st->counters.cap_hits = in->cap_hits;
    st->cap_hits_warned = in->cap_hits;
    st->stats.keys_refused = in->keys_refused;
    st->refused_warned = in->keys_refused;   /* warn only of keys refused from now on */
}

/* ---- hot reload ------------------------------------------------------------- */

struct ShardSwap {
    const CompiledRuleSet *next;
    RuleState *rules;          /* next->n_rules, zeroed */
    Value *key_vals;           /* room for next's widest key */
    bool *taken;               /* per current rule: moved to the new set */
    Router *router;
    NfaCondShare *cond_share;
    NfaCondCache *cond_cache;
    NfaWork *work;
    RuleClock clock;
    RouteResult *routed;
    RouteKey *routed_key;
    size_t *routed_order;
    PartEntry **found;
    PartProbe *probes;
    const Nfa **nfas;
    size_t *probe_order;
    bool *woke;
    NfaRunCtx *ctxs;
};

/* A kept rule whose suppression came or went (fingerprints leave it out) moves its keys
 * to entries with the fields it needs now, re-arming their timers; the matchers move
 * as they are. On allocation failure the keys not moved are dropped, and the shard
 * fails. */
static void relayout(Shard *s, RuleState *st, unsigned extras)
{
    if (st->keys.extras == extras)
        return;
    PartTable next;
    part_table_init_shared(&next, &s->pool);
    part_table_set_extras(&next, extras);
    DeadlineHeap timers;
    deadline_init(&timers);
    bool with_suppress = extras & st->keys.extras & PART_X_SUPPRESS;
    size_t bucket = 0;
    for (PartEntry *pe = part_next(&st->keys, &bucket, NULL); pe && !s->failed;
         pe = part_next(&st->keys, &bucket, pe)) {
        PartEntry *moved = part_add(&next, pe->tail, pe->klen, part_entry_hash(pe));
        if (!moved) {
            s->failed = true;
            break;
        }
        int64_t was = charge_now(&st->keys, pe);
        moved->nfa = pe->nfa;
        moved->held = pe->held;
        nfa_key_init(&pe->nfa);
        if (with_suppress)
            *part_suppress_until(moved) = *part_suppress_until(pe);
        /* the entry's size changed, and with it the charge; part_table_free below takes
         * back what the old entry, idle now, counts for */
        budget_add(&s->mem, (int64_t)charge_now(&next, moved) - was +
                                (int64_t)charge_now(&st->keys, pe));
        if (pe->deadline != INT64_MAX && deadline_set(&timers, moved, pe->deadline) < 0)
            s->failed = true;
    }
    deadline_free(&st->timers);
    part_table_free(&st->keys, drop_entry, st);
    st->keys = next;
    st->timers = timers;
}

ShardSwap *shard_swap_prepare(const Shard *s, const CompiledRuleSet *next)
{
    ShardSwap *sw = calloc(1, sizeof *sw);
    if (!sw)
        return NULL;
    sw->next = next;
    sw->rules = calloc(next->n_rules ? next->n_rules : 1, sizeof *sw->rules);
    sw->key_vals = calloc(rules_widest_key(next), sizeof *sw->key_vals);
    sw->taken = calloc(s->rs->n_rules ? s->rs->n_rules : 1, sizeof *sw->taken);
    sw->router = router_new(next);
    sw->routed = calloc(next->n_rules ? next->n_rules : 1, sizeof *sw->routed);
    sw->routed_key = calloc(next->n_rules ? next->n_rules : 1, sizeof *sw->routed_key);
    sw->routed_order = calloc(next->n_rules ? next->n_rules : 1, sizeof *sw->routed_order);
    sw->found = calloc(next->n_rules ? next->n_rules : 1, sizeof *sw->found);
    sw->probes = calloc(next->n_rules ? next->n_rules : 1, sizeof *sw->probes);
    sw->nfas = nfa_list(next);
    sw->probe_order = calloc(next->n_rules ? next->n_rules : 1, sizeof *sw->probe_order);
    sw->woke = calloc(next->n_rules ? next->n_rules : 1, sizeof *sw->woke);
    sw->ctxs = calloc(next->n_rules ? next->n_rules : 1, sizeof *sw->ctxs);
    if (!sw->rules || !sw->key_vals || !sw->taken || !sw->router || !sw->routed ||
        !sw->routed_key || !sw->routed_order || !sw->found || !sw->probes || !sw->nfas ||
        !sw->probe_order || !sw->woke || !sw->ctxs ||
        matcher_parts_build(next, &sw->cond_share, &sw->cond_cache, &sw->work) < 0 ||
        rule_clock_init(&sw->clock, next->n_rules) < 0) {
        shard_swap_abort(sw);
        return NULL;
    }
    return sw;
}

void shard_swap_abort(ShardSwap *sw)
{
    if (!sw)
        return;
    free(sw->rules);
    free(sw->key_vals);
    free(sw->taken);
    router_free(sw->router);
    nfa_cond_cache_free(sw->cond_cache);
    nfa_cond_share_free(sw->cond_share);
    nfa_work_free(sw->work);
    rule_clock_free(&sw->clock);
    free(sw->routed);
    free(sw->routed_key);
    free(sw->routed_order);
    free(sw->found);
    free(sw->probes);
    free(sw->nfas);
    free(sw->probe_order);
    free(sw->woke);
    free(sw->ctxs);
    free(sw);
}

void shard_swap_commit(Shard *s, ShardSwap *sw, const size_t *from)
{
    for (size_t j = 0; j < sw->next->n_rules; j++) {
        RuleState *st = &sw->rules[j];
        if (from[j] == SIZE_MAX) {
            rule_state_init(s, st, &sw->ctxs[j], s->limits, &sw->next->rules[j]);
            continue;
        }
        *st = s->rules[from[j]];
        relayout(s, st, entry_extras(&sw->next->rules[j]));
        sw->ctxs[j] = s->ctxs[from[j]];
        sw->ctxs[j].counters = &st->counters;   /* it pointed into the old array */
        sw->taken[from[j]] = true;
    }
    for (size_t j = 0; j < sw->next->n_rules; j++)
        part_table_set_probe(&sw->rules[j].keys, &sw->probes[j]);
    for (size_t i = 0; i < s->rs->n_rules; i++)
        if (!sw->taken[i])
            rule_state_free(&s->rules[i]);
    free(sw->taken);
    free_rule_set_parts(s);
    s->rules = sw->rules;
    s->routed_order = sw->routed_order;
    s->found = sw->found;
    s->probes = sw->probes;
    s->nfas = sw->nfas;
    s->probe_order = sw->probe_order;
    s->woke = sw->woke;
    s->ctxs = sw->ctxs;
    s->clock = sw->clock;
    s->key_vals = sw->key_vals;
    s->router = sw->router;
    s->cond_share = sw->cond_share;
    s->cond_cache = sw->cond_cache;
    s->work = sw->work;
    s->routed = sw->routed;
    s->routed_key = sw->routed_key;
    s->rs = sw->next;
    wire_matcher_parts(s);
    for (size_t j = 0; j < s->rs->n_rules; j++)
        clock_rule(s, j);
    free(sw);
}

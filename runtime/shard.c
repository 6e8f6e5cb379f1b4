/* runtime/shard.c — one worker's matching state (see shard.h). */
#include "runtime/shard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/lines.h"
#include "runtime/deadline.h"
#include "runtime/partition.h"

typedef struct RuleState {
    PartTable suppress;        /* a rule with suppression: for each key under it, an
                                  entry without slots holding its end (PART_X_SUPPRESS);
                                  its keys' slots stay while it lasts. Else unused. */
    NfaCounters counters;
    EngineRuleStats stats;
    uint64_t keys_live;        /* slots of this rule in the shard's records */
    uint64_t cap_hits_warned;  /* counters.cap_hits at the last warning */
    int64_t cap_warned_ms;     /* when (monotonic), or INT64_MIN */
    uint64_t refused_warned;   /* stats.keys_refused at the last warning */
    int64_t refuse_warned_ms;  /* when (monotonic), or INT64_MIN */
} RuleState;

/* The most distinct key tuples whose records are loaded ahead (shard_event_ahead), and
 * the most key values in such a tuple: rule sets keyed by a handful of fields are the
 * common case, and fetching more records per event would cost more than it hides. */
enum { AHEAD_KEYS = 4, AHEAD_KEY_VALUES = 4 };

/* A key of plain fields: the event slots of its values. */
typedef struct AheadKey {
    uint32_t n;
    int32_t slot[AHEAD_KEY_VALUES];
} AheadKey;

/* What loading the next event's records ahead needs (shard_event_ahead). Apart from
 * the Shard so that the Shard's own layout, which the event path reads all along,
 * stays as it was: inside it, these bytes moved the arrays allocated after it and
 * cost scenario 4, which never looks ahead, 11 % more L1 misses in callgrind. */
typedef struct Lookahead {
    AheadKey keys[AHEAD_KEYS]; /* the rules' distinct keys of plain fields */
    size_t n_keys;
    uint64_t hash[AHEAD_KEYS]; /* the expected event's keys' hashes */
    size_t n;
    Buf bytes;                 /* scratch for their key bytes */
} Lookahead;

/* A record an event reaches (one per distinct key among the rules it routes to, mostly
 * one or two): found once, then settled once after every rule ran. */
typedef struct Touch {
    const RouteKey *key;       /* the router's, or `own` */
    RouteKey own;              /* a key the caller does not keep (shard_routed_rule) */
    PartEntry *rec;            /* NULL: the key has no record (yet) */
    size_t next;               /* where the next rule's slot is looked for: the event
                                  reaches its rules in increasing order, so every slot
                                  before this one is an earlier rule's */
} Touch;

struct Shard {
    const CompiledRuleSet *rs;
    const EngineHooks *hooks;
    const NfaLimits *limits;
    EvalScratch *scratch;
    RuleState *rules;          /* rs->n_rules, heap, owned */
    uint8_t *rule_bits;        /* per rule: RULE_* (side by side: a slot's settling reads
                                  its rule's, where its RuleState would cost a line) */
    Router *router;            /* grouped filter/key evaluation for shard_event; owned */
    NfaCondShare *cond_share;  /* step conditions shared across rules (nfa.h); owned */
    NfaCondCache *cond_cache;  /* their results for the current event; owned */
    NfaWork *work;             /* the matcher's scratch for every rule; owned */
    RouteResult *routed;       /* per rule: this event's routing (shard_event) */
    const RouteKey **routed_key;   /* per rule: its key when route_keyed (the router's) */
    size_t *routed_order;      /* the rules whose filter this event passed, in order */
    const Nfa **nfas;          /* per rule: its Nfa, side by side: most rules only ask
                                  nfa_key_wakes, which should not cost a line each */
    NfaRunCtx *ctxs;           /* per rule: its matcher's context, side by side for the
                                  same reason (the wake test reads its gate) */
    Touch *touched;            /* the records of this event (n_rules of room) */
    size_t n_touched;
    Touch *last_touch;         /* the touch the previous rule's key found (NULL: none
                                  yet this event): consecutive rules mostly share their
                                  key group's RouteKey, told by one pointer compare */
    PartTable keys;            /* every key with state in any rule: its record */
    DeadlineHeap timers;       /* the records by their next deadline */
    Value *key_vals;           /* room for the widest key; heap, owned */
    Buf key_text;              /* unescaped strings of the key values of an alert */
    int64_t fired_upto;        /* every deadline <= this has fired (new ones are armed later) */
    MemShare mem;              /* this shard's keys in the --max-memory budget */
    PartPool pool;             /* the records' and suppression entries' slabs; owned */
    bool refused;              /* the pending key was refused (budget spent) */
    bool failed;
    /* the (rule, key) whose NFA is running, for the result callback: cur_touch is the
     * key's record as the event found it, and while it has none, on_result makes it */
    size_t cur_rule;
    PartEntry *cur_rec;
    Touch *cur_touch;          /* NULL: a timer, whose record exists */
    Event *routed_ev;          /* between shard_routed_begin and shard_routed_end */
    size_t routed_after;       /* rules the event reaches after the running one: how
                                  many more slots a record made now may soon need */
    Lookahead *ahead;          /* heap, owned */
};

/* What runs once per rule set, reload, checkpoint or warning: out of the way of the
 * event and timer paths, which then share fewer instruction-cache lines with it. */
#define COLD __attribute__((cold))
/* The event's loop over its rules inlines what every routed rule does (find its touch
 * and slot, ask the wake test) and calls out for a rule that runs: a loop body that
 * holds the running paths saves their registers for every rule, and most run nothing. */
#define EVERY_RULE __attribute__((always_inline)) inline
#define RUNNING_RULE __attribute__((noinline))
/* A slot's own steps (insert, re-hold, settle and retime, leave, drop), each run for most fed or
 * firing slots from a handful of callers: inlined there, they cost no call and no
 * register saves per slot. */
#define SLOT_STEP __attribute__((always_inline)) inline

static void on_result(void *user, const NfaResult *r);
COLD static void index_ahead_keys(Shard *s);
static int64_t rec_base_charge(const PartEntry *rec);

static bool rule_suppresses(const CompiledRule *rule)
{
    return rule->suppress_ms != DURATION_NONE && rule->suppress_ms > 0;
}

/* A rule with no `on` clause at all alerts on match (alerts.h). */
static bool rule_alerts_on(const CompiledRule *rule, NfaResultKind kind)
{
    if (kind == NFA_TIMEOUT)
        return rule->n_on_timeout > 0;
    return rule->n_on_match > 0 || rule->n_on_timeout == 0;
}

COLD static void rule_state_init(Shard *s, RuleState *st, NfaRunCtx *ctx, const NfaLimits *limits,
                            const CompiledRule *rule)
{
    part_table_init_shared(&st->suppress, &s->pool);
    part_table_set_extras(&st->suppress, rule_suppresses(rule) ? PART_X_SUPPRESS : 0u);
    ctx->scratch = s->scratch;
    ctx->limits = limits;
    ctx->counters = &st->counters;
    ctx->sink.emit = on_result;
    ctx->sink.user = s;
    st->cap_warned_ms = INT64_MIN;
    st->refuse_warned_ms = INT64_MIN;
}

/* Every rule's Nfa, in rule order; heap (NULL on allocation failure). */
COLD static const Nfa **nfa_list(const CompiledRuleSet *rs)
{
    const Nfa **nfas = malloc((rs->n_rules ? rs->n_rules : 1) * sizeof *nfas);
    for (size_t i = 0; nfas && i < rs->n_rules; i++)
        nfas[i] = rs->rules[i].nfa;
    return nfas;
}

enum {
    RULE_LAZY_TIMEOUTS = 1,    /* it alerts on no timeout: its timeouts may wait */
    RULE_SUPPRESSES = 2,       /* it has suppression */
};

/* Per rule, its RULE_* bits; heap, NULL on failure. */
COLD static uint8_t *rule_bits_list(const CompiledRuleSet *rs)
{
    uint8_t *bits = malloc(rs->n_rules ? rs->n_rules : 1);
    for (size_t i = 0; bits && i < rs->n_rules; i++)
        bits[i] = (uint8_t)((rule_alerts_on(&rs->rules[i], NFA_TIMEOUT) ? 0 : RULE_LAZY_TIMEOUTS) |
                            (rule_suppresses(&rs->rules[i]) ? RULE_SUPPRESSES : 0));
    return bits;
}

/* What the matchers of rs share on one thread: the shared conditions (one share and
 * one cache, both NULL for an empty set) and the matcher's scratch. -1 on allocation
 * failure (nothing is left allocated). */
COLD static int matcher_parts_build(const CompiledRuleSet *rs, NfaCondShare **share,
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
COLD static void wire_matcher_parts(Shard *s)
{
    for (size_t i = 0; i < s->rs->n_rules; i++) {
        s->ctxs[i].cond_cache = s->cond_cache;
        s->ctxs[i].cond_ids = nfa_cond_share_ids(s->cond_share, i);
        s->ctxs[i].gate = nfa_cond_share_gate(s->cond_share, i);
        s->ctxs[i].work = s->work;
    }
}

COLD size_t rules_widest_key(const CompiledRuleSet *rs)
{
    size_t widest = 1;
    for (size_t i = 0; i < rs->n_rules; i++)
        if (rs->rules[i].n_keys > widest)
            widest = rs->rules[i].n_keys;
    return widest;
}

COLD Shard *shard_new(const CompiledRuleSet *rs, const NfaLimits *limits, const EngineHooks *hooks)
{
    Shard *s = lines_calloc(sizeof *s);   /* written for every event */
    if (!s)
        return NULL;
    s->rs = rs;
    s->hooks = hooks;
    s->mem.budget = hooks->budget;
    part_pool_init(&s->pool);
    part_table_init_shared(&s->keys, &s->pool);
    deadline_init(&s->timers);
    s->fired_upto = INT64_MIN;
    size_t n = rs->n_rules ? rs->n_rules : 1;
    s->scratch = expr_scratch_new();
    s->rules = lines_calloc_n(n, sizeof *s->rules);
    s->rule_bits = rule_bits_list(rs);
    s->key_vals = lines_calloc_n(rules_widest_key(rs), sizeof *s->key_vals);
    s->router = router_new(rs, false);
    s->routed = lines_calloc_n(n, sizeof *s->routed);
    s->routed_key = lines_calloc_n(n, sizeof *s->routed_key);
    s->routed_order = lines_calloc_n(n, sizeof *s->routed_order);
    s->touched = lines_calloc_n(n, sizeof *s->touched);
    s->nfas = nfa_list(rs);
    s->ctxs = lines_calloc_n(n, sizeof *s->ctxs);
    if (!s->scratch || !s->rules || !s->rule_bits || !s->key_vals || !s->router ||
        !s->routed || !s->routed_key || !s->routed_order || !s->touched || !s->nfas ||
        !s->ctxs || matcher_parts_build(rs, &s->cond_share, &s->cond_cache, &s->work) < 0) {
        shard_free(s);
        return NULL;
    }
    s->ahead = lines_calloc(sizeof *s->ahead);   /* last: the hot arrays keep their places */
    if (!s->ahead) {
        shard_free(s);
        return NULL;
    }
    s->limits = limits;
    for (size_t i = 0; i < rs->n_rules; i++)
        rule_state_init(s, &s->rules[i], &s->ctxs[i], limits, &rs->rules[i]);
    wire_matcher_parts(s);
    index_ahead_keys(s);
    return s;
}

/* ---- suppression ------------------------------------------------------------- */

/* suppress_entry's lookup, for a rule with suppression. */
__attribute__((noinline)) static PartEntry *suppress_lookup(const Shard *s, size_t ri,
                                                            const PartEntry *rec)
{
    const PartTable *t = &s->rules[ri].suppress;
    return t->count ? part_lookup(t, rec->tail, rec->klen, part_entry_hash(rec)) : NULL;
}

/* The entry holding the end of rec's key's suppression in rule ri, or NULL. Asked
 * twice for every slot that settles idle and leaves (scenario 4: 810k calls on its
 * first 300k lines, of rules without suppression), so the rule's bit is tested
 * inline, without a call. */
static inline PartEntry *suppress_entry(const Shard *s, size_t ri, const PartEntry *rec)
{
    if (!(s->rule_bits[ri] & RULE_SUPPRESSES))
        return NULL;
    return suppress_lookup(s, ri, rec);
}

/* The end of a key's suppression in rule ri (INT64_MIN: none). */
static int64_t suppressed_until(const Shard *s, size_t ri, const PartEntry *rec)
{
    PartEntry *e = suppress_entry(s, ri, rec);
    return e ? *part_suppress_until(e) : INT64_MIN;
}

/* Sets it; false on allocation failure. */
COLD static bool suppress_set(Shard *s, size_t ri, const PartEntry *rec, int64_t until)
{
    PartTable *t = &s->rules[ri].suppress;
    uint64_t hash = part_entry_hash(rec);
    PartEntry *e = part_lookup(t, rec->tail, rec->klen, hash);
    if (!e && !(e = part_add(t, rec->tail, rec->klen, hash, 0)))
        return false;
    *part_suppress_until(e) = until;
    return true;
}

/* The key's slot in rule ri leaves: its suppression goes with it. */
static void suppress_forget(Shard *s, size_t ri, const PartEntry *rec)
{
    PartEntry *e = suppress_entry(s, ri, rec);
    if (e)
        part_remove(&s->rules[ri].suppress, e);
}

/* ---- slots ------------------------------------------------------------------- */

/* The rule number of a slot that left, until its record's slots are compacted. */
#define SLOT_GONE ((uint32_t)INT32_MAX)

/* A slot leaves (its NfaKey idle): its rule's count and suppression go now, its place
 * when the caller compacts the record (slots_compact), so that many slots leaving at
 * once (a record's partial matches that died unseen) move the others once. */
static SLOT_STEP void slot_leave(Shard *s, PartEntry *rec, PartSlot *sl)
{
    uint32_t ri = sl->rule;
    s->rules[ri].keys_live--;
    suppress_forget(s, ri, rec);
    sl->rule = SLOT_GONE;
}

/* Closes the gaps the slots that left made, keeping the others in order. A one-slot
 * entry never copies a whole slot (it has no `due`): its one slot stays or goes. */
static void slots_compact(PartEntry *rec)
{
    PartSlot *sl = part_slots(rec);
    size_t n = rec->n_slots, kept = 0;
    while (kept < n && sl[kept].rule != SLOT_GONE)   /* before the first gap: in place */
        kept++;
    for (size_t i = kept + 1; i < n; i++)
        if (sl[i].rule != SLOT_GONE)
            sl[kept++] = sl[i];
    rec->n_slots = (uint16_t)kept;
}

/* Closes the one gap slot i left: the slots after it move down at once (a fed slot
 * that leaves a record of many rules' slots, as a login's failed_logins). */
static void slots_close(PartEntry *rec, size_t i)
{
    PartSlot *sl = part_slots(rec);
    if (i + 1 < rec->n_slots)   /* so never in an entry with room for one */
        memmove(&sl[i], &sl[i + 1], (rec->n_slots - i - 1) * sizeof *sl);
    rec->n_slots--;
}

/* Takes slot i out of rec (its NfaKey idle), keeping the others in order. */
static void slot_remove(Shard *s, PartEntry *rec, size_t i)
{
    slot_leave(s, rec, &part_slots(rec)[i]);
    slots_close(rec, i);
}

/* A slot's next time (PartSlot.due). An entry with room for one slot keeps none: its
 * slot's is the matcher's deadline (read only once the matcher ran, when its events
 * are at hand), or the end of its suppression while idle. */
static int64_t slot_due(const Shard *s, const PartEntry *rec, const PartSlot *sl)
{
    if (rec->room > 1)
        return sl->due;
    if (!nfa_key_idle(&sl->nfa))
        return nfa_key_deadline(s->nfas[sl->rule], &sl->nfa);
    return suppressed_until(s, sl->rule, rec);
}

static void slot_set_due(const PartEntry *rec, PartSlot *sl, int64_t due)
{
    if (rec->room > 1)
        sl->due = due;
}

/* Moves rec to an entry with room for one more slot, re-pointing the timers, the
 * event's touch and the running key; NULL on allocation failure (rec unchanged). */
static PartEntry *rec_regrow(Shard *s, PartEntry *rec, uint64_t hash)
{
    /* A key's first event often starts many rules: one slot, then four, then as many
     * as the largest small slab class holds, then doubling (the partition's big
     * classes fit 20, 40, 80 and 160 slots; past half a slab an entry is a malloc of
     * its own). */
    size_t in_slab = (PART_SLAB_CLASSES * 8 - part_slots_offset(rec->klen)) / sizeof(PartSlot);
    size_t room = rec->room < 4 ? 4 : rec->room < in_slab ? in_slab : (size_t)rec->room * 2;
    if (room > PART_MAX_SLOTS)
        room = PART_MAX_SLOTS;
    int64_t was = rec_base_charge(rec);
    bool had_due = rec->room > 1 || !rec->n_slots;
    int64_t single = had_due ? 0 : slot_due(s, rec, part_slots(rec));
    PartEntry *moved = room > rec->room ? part_regrow(&s->keys, rec, hash, room) : NULL;
    if (!moved)
        return NULL;
    if (!had_due)
        part_slots(moved)->due = single;   /* the slot now keeps its own */
    budget_add(&s->mem, rec_base_charge(moved) - was);
    deadline_moved(&s->timers, rec, moved);
    for (size_t i = 0; i < s->n_touched; i++)
        if (s->touched[i].rec == rec)
            s->touched[i].rec = moved;
    if (s->cur_rec == rec)
        s->cur_rec = moved;
    return moved;
}

/* Where rule ri's slot is in rec, or would go: the first slot from `from` on whose rule
 * is not before ri. */
static size_t slot_seek(const PartEntry *rec, uint32_t ri, size_t from)
{
    const PartSlot *sl = part_slots_c(rec);
    size_t i = from;
    while (i < rec->n_slots && sl[i].rule < ri)
        i++;
    return i;
}

/* The slot of rule ri in rec, or NULL. Slots are in rule order. */
static PartSlot *slot_find(PartEntry *rec, uint32_t ri)
{
    size_t i = slot_seek(rec, ri, 0);
    return i < rec->n_slots && part_slots(rec)[i].rule == ri ? &part_slots(rec)[i] : NULL;
}

/* A new slot for rule ri at `at` in *rec (slot_seek's answer; growing it if full:
 * *rec may move); NULL on allocation failure. */
static SLOT_STEP PartSlot *slot_insert(Shard *s, PartEntry **rec, uint64_t hash, uint32_t ri, size_t at)
{
    PartEntry *r = *rec;
    if (r->n_slots == r->room) {
        if (!(r = rec_regrow(s, r, hash)))
            return NULL;
        *rec = r;
    }
    PartSlot *sl = part_slots(r);
    if (at < r->n_slots)
        memmove(&sl[at + 1], &sl[at], (r->n_slots - at) * sizeof *sl);
    r->n_slots++;
    s->rules[ri].keys_live++;
    nfa_key_init(&sl[at].nfa);   /* field by field: a one-slot entry has no `due` */
    sl[at].rule = ri & INT32_MAX;
    sl[at].waits = true;
    sl[at].held = 0;
    slot_set_due(r, &sl[at], INT64_MAX);
    return &sl[at];
}

/* ---- memory ------------------------------------------------------------------ */

/* --max-memory estimates (nfa/SEMANTICS.md 10): a rule's first partial match for a key
 * beyond its slot (the node: the NfaKey and its first run are inside the slot), each
 * further one, and a node holding an event; a record's table slots and timer slot. */
#define KEY_MATCHER_BYTES 32
#define PARTIAL_BYTES 128
#define NODE_BYTES 32
#define ENTRY_OVERHEAD_BYTES 64

static uint32_t saturate32(size_t n)
{
    return n < UINT32_MAX ? (uint32_t)n : UINT32_MAX;
}

/* What a record counts for in the budget: its entry's bytes rounded up as a malloc
 * chunk's would be (an 8-byte header, 16-byte steps: its slab holds it in fewer, but
 * partly filled slabs cost about the difference) and its overhead, plus each slot's
 * charge. Each part is a function of what it counts, recomputed to take it back, so
 * that a slot's run changes the budget by its own difference alone. */
static int64_t rec_base_charge(const PartEntry *rec)
{
    size_t n = (part_entry_bytes(rec->klen, 0, rec->room) + 8 + 15) & ~(size_t)15;
    return (int64_t)(n + ENTRY_OVERHEAD_BYTES);
}

/* A slot's partial matches and the bytes they hold. */
static int64_t slot_charge(const PartSlot *sl)
{
    size_t partials = nfa_key_partials(&sl->nfa);
    return partials ? (int64_t)(KEY_MATCHER_BYTES + (partials - 1) * PARTIAL_BYTES + sl->held)
                    : 0;
}

/* A slot's held bytes after a run that found `before` partial matches and took `takes`
 * nodes of ev (NULL: a timer). Which events the dropped partial matches released is
 * not known here: the held bytes shrink in proportion to the partial matches that went
 * (an approximation). Counted by takes, not by the event's references: rules starting
 * on one event share its first node (nfa/event.h), so only the first of them adds a
 * reference, yet each key holds the event for as long as its own partial match lives.
 * Every key holding the event is charged for it: the estimate errs on the safe side. */
static SLOT_STEP void slot_reheld(PartSlot *sl, size_t before, const Event *ev, uint64_t takes)
{
    size_t after = nfa_key_partials(&sl->nfa);
    if (!after) {
        sl->held = 0;
        return;
    }
    if (after < before)
        sl->held = (uint32_t)(sl->held / before * after);
    if (ev && takes)
        sl->held = saturate32((size_t)sl->held + budget_event_bytes(ev) +
                              (size_t)takes * NODE_BYTES);
}

/* With the budget spent a new key gets no slot: its results are dropped and the
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

/* ---- results ----------------------------------------------------------------- */

/* touch_record for a key without a record yet. */
__attribute__((noinline)) static PartEntry *touch_record_new(Shard *s, Touch *t, size_t ri)
{
    if (refuse_key(s, ri))
        return NULL;
    /* room for the rules after this one too (up to four slots in all): they often
     * start on the same event, and a record that grows is copied */
    size_t room = 1 + (s->routed_after < 3 ? s->routed_after : 3);
    t->rec = part_add(&s->keys, t->key->bytes, t->key->len, t->key->hash, room);
    t->next = 0;
    if (!t->rec)
        s->failed = true;
    else
        budget_add(&s->mem, rec_base_charge(t->rec));
    return t->rec;
}

/* The record of the event's key, made now (a rule's first state for it, or a result of
 * a key without a record: its alert needs the key bytes); NULL on allocation failure,
 * or the budget spent. Most new slots are in a record the event found or made for an
 * earlier rule (scenario 4: 553k calls, 93k records made, on its first 300k lines),
 * so that case costs no call. */
static inline PartEntry *touch_record(Shard *s, Touch *t, size_t ri)
{
    return t->rec ? t->rec : touch_record_new(s, t, ri);
}

/* Every result of the matcher, through NfaSink. */
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
    PartEntry *rec = s->cur_rec;
    if (!rec && !(rec = s->cur_rec = touch_record(s, s->cur_touch, s->cur_rule)))
        return;   /* no memory for the key: the run ends with an error */
    if (r->kind == NFA_MATCH)
        st->stats.matches++;
    else
        st->stats.timeouts++;
    if (!rule_alerts_on(rule, r->kind))
        return;
    if (rule_suppresses(rule)) {
        if (r->time_ms < suppressed_until(s, s->cur_rule, rec)) {
            st->stats.suppressed++;
            return;
        }
        if (!suppress_set(s, s->cur_rule, rec, nfa_due_after(r->time_ms, rule->suppress_ms)))
            s->failed = true;
    }
    if (!part_key_values(rec->tail, rec->klen, s->key_vals, rule->n_keys, &s->key_text)) {
        s->failed = true;   /* the bytes are ours: only allocation can fail */
        return;
    }
    st->stats.alerts++;
    s->hooks->sink.alert(s->hooks->sink.user, s->cur_rule, s->key_vals, rule->n_keys, r,
                         s->scratch);
}

/* A partial match the matcher lost for want of memory may have been an alert: the run
 * ends with an error, as for every other allocation failure. */
static inline void fail_if_out_of_memory(Shard *s, const RuleState *st)
{
    if (st->counters.out_of_memory)
        s->failed = true;
}

/* ---- records ----------------------------------------------------------------- */

/* The rule alerts on no timeout, so its timeouts may be counted late. */
static bool rule_timeouts_lazy(const Shard *s, size_t ri)
{
    return s->rule_bits[ri] & RULE_LAZY_TIMEOUTS;
}

/* Whether a slot's next time may pass unattended, to be handled whenever the record
 * runs next: what it shows then is nothing but timeouts of a rule that does not alert
 * on them (counted late, but counted), or the end of a suppression. A slot that may
 * release a match when time passes (nfa_key_end_only_timeouts) is not. */
static bool slot_may_wait(const Shard *s, const PartSlot *sl)
{
    return nfa_key_idle(&sl->nfa) ||
           (rule_timeouts_lazy(s, sl->rule) && nfa_key_end_only_timeouts(s->nfas[sl->rule], &sl->nfa));
}

/* A slot's next time from its matcher (not idle), and whether it may wait: known
 * after each run, so that re-arming the record reads the slots and not the rules. */
static SLOT_STEP void slot_retime(const Shard *s, const PartEntry *rec, PartSlot *sl)
{
    if (rec->room > 1)
        sl->due = nfa_key_deadline(s->nfas[sl->rule], &sl->nfa);
    sl->waits = slot_may_wait(s, sl);
}

/* slot_retime for a slot whose key was idle before the event at `now` and started as
 * its rule's gate does (nfa_key_started_by_gate): the same time and wait, told from the
 * gate, which the start has just read, where the rule's Nfa is mostly cold. False,
 * having changed nothing, when the gate cannot tell. */
static SLOT_STEP bool slot_retime_started(const Shard *s, const PartEntry *rec, PartSlot *sl,
                                          int64_t now)
{
    int64_t due;
    bool only_timeouts;
    if (!nfa_key_started_by_gate(s->ctxs[sl->rule].gate, &sl->nfa, now, &due, &only_timeouts))
        return false;
    slot_set_due(rec, sl, due);
    sl->waits = rule_timeouts_lazy(s, sl->rule) && only_timeouts;
    return true;
}

/* A slot whose partial matches die unseen (slot_may_wait): its `timeouts` are counted
 * and its state freed as the matcher would, without running it. */
static SLOT_STEP void slot_drop_unseen(Shard *s, PartSlot *sl, size_t timeouts)
{
    RuleState *st = &s->rules[sl->rule];
    st->stats.timeouts += timeouts;
    budget_add(&s->mem, -slot_charge(sl));
    nfa_key_clear(&sl->nfa, &st->counters);
    sl->held = 0;
}

/* After a run of slot i of rec at time now: the slot's next time, or its end (an idle
 * matcher and no suppression left): then it leaves (slot_leave), and false says the
 * caller must compact the record. */
static SLOT_STEP bool slot_settle(Shard *s, PartEntry *rec, size_t i, int64_t now)
{
    PartSlot *sl = &part_slots(rec)[i];
    if (!nfa_key_idle(&sl->nfa)) {
        slot_retime(s, rec, sl);
        return true;
    }
    int64_t until = suppressed_until(s, sl->rule, rec);
    if (until <= now) {
        slot_leave(s, rec, sl);
        return false;
    }
    slot_set_due(rec, sl, until);
    sl->waits = true;
    return true;
}

/* When the record must run next: the earliest slot that must run on time, or once
 * every slot that may wait is due, the latest of those. A record then runs about once
 * per key, where it ran once per (rule, key) with each rule's deadline; a key whose
 * rules' partial matches end unseen is visited once to be freed. */
static int64_t rec_due(const Shard *s, const PartEntry *rec)
{
    if (rec->room == 1)
        return rec->n_slots ? slot_due(s, rec, part_slots_c(rec)) : INT64_MAX;
    int64_t on_time = INT64_MAX, waits = INT64_MIN;
    const PartSlot *sl = part_slots_c(rec);
    for (size_t i = 0; i < rec->n_slots; i++) {
        if (sl[i].waits) {
            if (sl[i].due > waits)
                waits = sl[i].due;
        } else if (sl[i].due < on_time) {
            on_time = sl[i].due;
        }
    }
    return waits < on_time ? (waits == INT64_MIN ? on_time : waits) : on_time;
}

/* After the runs of an event or a firing at `now`: rec is re-armed, or leaves with its
 * last slot. */
static void rec_settle(Shard *s, PartEntry *rec, int64_t now, const uint64_t *hash)
{
    if (!rec->n_slots) {
        budget_add(&s->mem, -rec_base_charge(rec));
        deadline_remove(&s->timers, rec);
        if (hash)
            part_remove_hashed(&s->keys, rec, *hash);
        else
            part_remove(&s->keys, rec);
        return;
    }
    int64_t due = rec_due(s, rec);
    if (due <= now)
        due = nfa_due_after(now, 1);   /* never re-arm at a handled time: no busy loop */
    if (deadline_set(&s->timers, rec, due) < 0)
        s->failed = true;
}

/* Runs every slot of rec due at `at` to that time (all of them with every_slot). */
static void rec_run_due(Shard *s, PartEntry *rec, int64_t at, bool every_slot)
{
    s->cur_touch = NULL;
    bool left = false;
    for (size_t i = 0; i < rec->n_slots; i++) {
        PartSlot *sl = &part_slots(rec)[i];
        /* a one-slot entry runs when its slot is due: it is armed at that time */
        if (!every_slot && rec->room > 1 && sl->due > at)
            continue;
        size_t ri = sl->rule, before = nfa_key_partials(&sl->nfa);
        if (!every_slot && sl->waits && before == 1) {
            /* Its one partial match is due and dies unseen (a rule without `on timeout`,
             * nothing held back or pending: slot_may_wait), so it is counted and freed
             * as the matcher would, without running it: most of scenario 4's firings. */
            slot_drop_unseen(s, sl, 1);
        } else if (!nfa_key_idle(&sl->nfa)) {
            int64_t was = slot_charge(sl);
            s->cur_rule = ri;
            s->cur_rec = rec;
            nfa_key_advance_in(s->nfas[ri], &sl->nfa, at, &s->ctxs[ri]);
            fail_if_out_of_memory(s, &s->rules[ri]);
            slot_reheld(sl, before, NULL, 0);
            budget_add(&s->mem, slot_charge(sl) - was);
        }
        left |= !slot_settle(s, rec, i, at);
    }
    if (left)
        slots_compact(rec);
}

/* Timers fire in order, so the records about to come due are known: firing one
 * touches the record (its slots inside), each running slot's newest node and that
 * node's event, each cold after a window's worth of other events. Each firing starts
 * one link of the records a few places behind it, so that by the time a record fires
 * the chain is in cache. */
enum { DUE_ENTRY, DUE_NODE, DUE_EVENT, DUE_LINKS };
static const size_t due_ahead[DUE_LINKS] = {[DUE_ENTRY] = 8, [DUE_NODE] = 3,
                                            [DUE_EVENT] = 1};

static void prefetch_slots(const PartEntry *rec, bool deep)
{
    const PartSlot *sl = part_slots_c(rec);
    for (size_t i = 0; i < rec->n_slots; i++)
        if (rec->room == 1 || sl[i].due <= rec->deadline)
            nfa_key_prefetch(&sl[i].nfa, deep);
}

static void prefetch_due(const DeadlineHeap *timers)
{
    PartEntry *e[DUE_LINKS];
    deadline_peek_many(timers, due_ahead, e, DUE_LINKS);
    if (e[DUE_ENTRY])
        part_entry_prefetch(e[DUE_ENTRY]);
    if (e[DUE_NODE])
        prefetch_slots(e[DUE_NODE], false);
    if (e[DUE_EVENT])
        prefetch_slots(e[DUE_EVENT], true);
}

/* Fires every record due at or before t; the caller resets the scratch. */
static void fire_due(Shard *s, int64_t t)
{
    /* rec_settle arms every timer after the time it handles, so nothing new can be due
     * at or before a time already fired: many events at one time cost one check. */
    if (t <= s->fired_upto)
        return;
    s->fired_upto = t;
    while (deadline_next(&s->timers) <= t) {
        prefetch_due(&s->timers);
        PartEntry *rec = deadline_top(&s->timers);
        int64_t at = rec->deadline;
        rec_run_due(s, rec, at, false);
        rec_settle(s, rec, at, NULL);
    }
}

void shard_fire_due(Shard *s, int64_t t)
{
    fire_due(s, t);
    expr_scratch_reset(s->scratch);
}

/* ---- events ------------------------------------------------------------------ */

/* A cap that bites loses partial matches: say so, at most once per period per rule. */
COLD static void warn_caps(Shard *s, size_t ri)
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
COLD static void warn_refused(Shard *s, size_t ri)
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

static bool same_key(const RouteKey *a, const RouteKey *b)
{
    return a->hash == b->hash && a->len == b->len &&
           (a->bytes == b->bytes || !memcmp(a->bytes, b->bytes, a->len));
}

/* The event's touch of key k: the same for every rule with the same key bytes (rules
 * keyed alike share their key's text, so mostly a pointer compare), else a new one,
 * whose record is looked up now. */
static Touch *touch_key_slow(Shard *s, const RouteKey *k)
{
    for (size_t i = 0; i < s->n_touched; i++)
        if (s->touched[i].key == k || same_key(s->touched[i].key, k))
            return &s->touched[i];
    Touch *t = &s->touched[s->n_touched++];
    t->key = k;
    t->rec = part_may_hold(&s->keys, k->hash)
                 ? part_lookup(&s->keys, k->bytes, k->len, k->hash) : NULL;
    t->next = 0;
    return t;
}

/* touch_key_slow, after one pointer compare with the previous rule's touch. */
static EVERY_RULE Touch *touch_key(Shard *s, const RouteKey *k)
{
    if (!s->last_touch || s->last_touch->key != k)
        s->last_touch = touch_key_slow(s, k);
    return s->last_touch;
}

/* One event at `now` (NULL: a blank, route.h) for rule ri and the key of touch t,
 * whose record has a slot for the rule. */
RUNNING_RULE static void feed_slot(Shard *s, size_t ri, Touch *t, PartSlot *sl, Event *ev,
                                   int64_t now)
{
    PartEntry *rec = t->rec;
    size_t before = nfa_key_partials(&sl->nfa);
    int64_t was = slot_charge(sl);
    uint64_t takes0 = s->rules[ri].counters.takes;
    s->cur_rule = ri;
    s->cur_rec = rec;
    s->cur_touch = t;
    if (!ev)
        nfa_key_blank_in(s->nfas[ri], &sl->nfa, now, &s->ctxs[ri]);
    else if (rec->room > 1 && sl->due > now)
        nfa_key_event_in_undue(s->nfas[ri], &sl->nfa, ev, &s->ctxs[ri]);
    else
        nfa_key_event_in(s->nfas[ri], &sl->nfa, ev, &s->ctxs[ri]);
    slot_reheld(sl, before, ev, s->rules[ri].counters.takes - takes0);
    budget_add(&s->mem, slot_charge(sl) - was);
    size_t i = (size_t)(sl - part_slots(rec));
    bool stays = slot_settle(s, rec, i, now);
    if (!stays)
        slots_close(rec, i);
    t->next = i + stays;   /* past it, unless it left */
}

/* One event for rule ri and a key it holds no state for. Most events start nothing
 * for most rules (nfa_key_wakes says so cheaply), so the rule gets a slot only once
 * its NFA keeps state (or the key a record, once it alerts). */
RUNNING_RULE static void feed_new(Shard *s, size_t ri, Touch *t, Event *ev)
{
    RuleState *st = &s->rules[ri];
    NfaKey fresh;
    nfa_key_init(&fresh);
    s->cur_rule = ri;
    s->cur_rec = t->rec;
    s->cur_touch = t;
    s->refused = false;
    uint64_t takes0 = st->counters.takes;
    nfa_key_event_in(s->nfas[ri], &fresh, ev, &s->ctxs[ri]);
    /* a key that alerted and is now suppressed keeps an idle slot until the end of
     * its suppression: the slot carries it into checkpoints and frees it then */
    if (nfa_key_idle(&fresh) &&
        !(t->rec && suppressed_until(s, ri, t->rec) > ev->time_ms))
        return;
    PartSlot *sl = NULL;
    if (touch_record(s, t, ri))
        sl = slot_insert(s, &t->rec, t->key->hash, (uint32_t)ri, t->next);
    if (!sl) {
        if (!s->refused)
            s->failed = true;
        nfa_key_clear(&fresh, &st->counters);
        return;
    }
    size_t i = (size_t)(sl - part_slots(t->rec));
    t->next = i + 1;
    sl->nfa = fresh;   /* the key moves into its slot */
    slot_reheld(sl, 0, ev, st->counters.takes - takes0);
    budget_add(&s->mem, slot_charge(sl));
    if (slot_retime_started(s, t->rec, sl, ev->time_ms))
        return;
    if (!slot_settle(s, t->rec, i, ev->time_ms)) {   /* not so far: it holds state */
        slots_close(t->rec, i);
        t->next = i;
    }
}

/* The slot of rule ri in the record of touch t, or NULL; t->next moves to where it
 * is or would go. */
static EVERY_RULE PartSlot *rule_slot(Touch *t, size_t ri)
{
    if (!t->rec)
        return NULL;
    t->next = slot_seek(t->rec, (uint32_t)ri, t->next);
    if (t->next < t->rec->n_slots && part_slots(t->rec)[t->next].rule == ri)
        return &part_slots(t->rec)[t->next];
    return NULL;
}

/* feed_key's part once the key's touch is found. */
static EVERY_RULE void feed_touch(Shard *s, size_t ri, Touch *t, Event *ev)
{
    PartSlot *sl = rule_slot(t, ri);
    if (sl)
        feed_slot(s, ri, t, sl, ev, ev->time_ms);
    else if (nfa_key_wakes(s->nfas[ri], ev, &s->ctxs[ri]))
        feed_new(s, ri, t, ev);
    else
        return;   /* nothing ran: most routed rules, whose rule state is then not read */
    warn_if_needed(s, ri);
}

static EVERY_RULE void feed_key(Shard *s, size_t ri, const RouteKey *k, Event *ev)
{
    feed_touch(s, ri, touch_key(s, k), ev);
}

/* A blank (route.h) at `now` for rule ri and key k: only a key with state for the rule
 * runs it, since nothing starts on a blank. */
static __attribute__((noinline)) void feed_blank(Shard *s, size_t ri, const RouteKey *k,
                                                 int64_t now)
{
    Touch *t = touch_key(s, k);
    PartSlot *sl = rule_slot(t, ri);
    if (!sl)
        return;
    feed_slot(s, ri, t, sl, NULL, now);
    warn_if_needed(s, ri);
}

/* Every record the event reached, once every rule ran. */
static void settle_touched(Shard *s, int64_t now)
{
    for (size_t i = 0; i < s->n_touched; i++)
        if (s->touched[i].rec)
            rec_settle(s, s->touched[i].rec, now, &s->touched[i].key->hash);
    s->n_touched = 0;
    s->last_touch = NULL;
}

/* The end of an event (or a blank) that went through its rules: its records settle and
 * the values its conditions made go. Inlined: as a call it cost scenario 1 0.5 % more
 * instructions (callgrind), the event paths around it compiling worse. */
static __attribute__((always_inline)) inline void event_done(Shard *s, int64_t now)
{
    settle_touched(s, now);
    expr_scratch_reset(s->scratch);
}

/* An event's key is found through its table's occupancy bitmap, then its slot: both
 * mostly cache misses in a table of every key. The event is routed first (routing
 * reads the event alone), so that both loads are under way while the timers fire. */
static void prefetch_key_slots(Shard *s, size_t n)
{
    PartProbe probe = part_probe_of(&s->keys);
    const char *last = NULL;
    for (size_t j = 0; j < n; j++) {
        const RouteKey *k = s->routed_key[s->routed_order[j]];
        if (!route_keyed(s->routed[s->routed_order[j]]) || k->bytes == last)
            continue;
        last = k->bytes;
        part_probe_prefetch(&probe, k->hash);
    }
}

/* ---- the next event's records, ahead -------------------------------------------
 * A key's record is found through its table slot, then the record itself: two
 * dependent cache misses in a table of every key (scenario 3: 100k live orders), which
 * prefetch_key_slots only starts once the event is routed. When the engine knows the
 * event likely to come next, its keys' hashes are computed and their table slots start
 * loading while the current event is matched; when it comes, the records those slots
 * name start loading before it is routed. Each miss then overlaps a whole event's work
 * or the routing, and the lookup finds both in cache. Only keys of plain fields are
 * computed ahead: a field read, the key bytes and a hash, which can neither fail the
 * run nor count anything, so a wrong guess costs only time. */

COLD static bool field_key_of(const CompiledRule *cr, AheadKey *out)
{
    if (!cr->n_keys || cr->n_keys > AHEAD_KEY_VALUES)
        return false;
    *out = (AheadKey){.n = (uint32_t)cr->n_keys};
    for (size_t k = 0; k < cr->n_keys; k++)
        if (!expr_field_slot(cr->keys[k], &out->slot[k]))   /* as the router reads it */
            return false;
    return true;
}

/* The distinct keys of s->rs's rules that are computed ahead (after a build or a
 * swap; cannot fail). */
COLD static void index_ahead_keys(Shard *s)
{
    Lookahead *la = s->ahead;
    la->n_keys = 0;
    la->n = 0;
    for (size_t i = 0; i < s->rs->n_rules && la->n_keys < AHEAD_KEYS; i++) {
        AheadKey k;
        if (!field_key_of(&s->rs->rules[i], &k))
            continue;
        bool seen = false;
        for (size_t g = 0; g < la->n_keys && !seen; g++)
            seen = !memcmp(&la->keys[g], &k, sizeof k);
        if (!seen)
            la->keys[la->n_keys++] = k;
    }
}

/* ev's value in a slot, NULL if it has none (missing or null: no key). */
static const Value *ahead_value(const Event *ev, int32_t slot)
{
    const Value *v = (uint32_t)slot < ev->n_slots ? &ev->slots[slot] : NULL;
    return v && !value_is_null(v) ? v : NULL;
}

/* The hash of ev's key k (as part_key_hash_guess), false if ev has none. */
static bool ahead_key_hash(Lookahead *la, const AheadKey *k, const Event *ev, uint64_t *hash)
{
    if (k->n == 1) {   /* the usual key: hashed where it lies */
        const Value *v = ahead_value(ev, k->slot[0]);
        return v && part_key_hash_guess(v, 1, &la->bytes, hash);
    }
    Value vals[AHEAD_KEY_VALUES];
    for (size_t j = 0; j < k->n; j++) {
        const Value *v = ahead_value(ev, k->slot[j]);
        if (!v)
            return false;
        vals[j] = *v;
    }
    return part_key_hash_guess(vals, k->n, &la->bytes, hash);
}

/* Stage one: the hashes of next's keys, and their table slots start loading. */
static void expect_keys(Shard *s, const Event *next)
{
    PartProbe probe = part_probe_of(&s->keys);
    Lookahead *la = s->ahead;
    for (size_t g = 0; g < la->n_keys; g++) {
        uint64_t hash;
        if (!ahead_key_hash(la, &la->keys[g], next, &hash))
            continue;
        part_probe_prefetch(&probe, hash);
        la->hash[la->n++] = hash;
    }
}

/* Stage two, as the expected event comes: the records its keys' slots name start
 * loading (the slots were loaded during the previous event). The bitmap answers for
 * a key without a record (scenario 3: every order) without reading its slot, which
 * stalls more often than the bitmap word. */
static void fetch_expected_records(Shard *s)
{
    PartProbe probe = part_probe_of(&s->keys);
    Lookahead *la = s->ahead;
    for (size_t i = 0; i < la->n; i++) {
        if (!part_probe_may_hold(&probe, la->hash[i]))
            continue;
        PartEntry *rec = part_probe_candidate(&probe, la->hash[i]);
        if (rec)
            part_entry_prefetch(rec);
    }
    la->n = 0;
}

void shard_event(Shard *s, Event *ev)
{
    shard_event_ahead(s, ev, NULL);
}

void shard_event_ahead(Shard *s, Event *ev, const Event *next)
{
    fetch_expected_records(s);
    if (next)
        expect_keys(s, next);
    if (s->cond_cache)
        nfa_cond_cache_next_event(s->cond_cache);
    size_t n = router_route_all(s->router, ev, s->scratch, s->routed_order, s->routed,
                                s->routed_key);
    prefetch_key_slots(s, n);
    fire_due(s, ev->time_ms);
    for (size_t j = 0; j < n; j++) {
        size_t ri = s->routed_order[j];
        RouteResult rr = s->routed[ri];
        s->routed_after = n - j - 1;
        if (rr == ROUTE_KEYED)
            feed_key(s, ri, s->routed_key[ri], ev);
        else if (rr == ROUTE_NO_KEY)
            s->rules[ri].stats.missing_key++;
        else if (rr == ROUTE_FAILED)
            s->failed = true;
        else if (rr == ROUTE_BLANK)   /* only from a router made with blanks */
            feed_blank(s, ri, s->routed_key[ri], ev->time_ms);
    }
    event_done(s, ev->time_ms);
}

void shard_routed_begin(Shard *s, Event *ev)
{
    shard_fire_due(s, ev->time_ms);
    if (s->cond_cache)
        nfa_cond_cache_next_event(s->cond_cache);
    s->routed_ev = ev;
}

/* touch_key for a key the caller does not keep: a new touch holds a copy. */
static Touch *touch_key_copied(Shard *s, const RouteKey *k)
{
    if (s->last_touch && same_key(s->last_touch->key, k))
        return s->last_touch;
    Touch *t = touch_key_slow(s, k);
    if (t->key == k) {
        t->own = *k;
        t->key = &t->own;
    }
    return s->last_touch = t;
}

void shard_routed_rule(Shard *s, size_t ri, const char *kbytes, size_t klen, uint64_t hash,
                       size_t after)
{
    RouteKey k = {kbytes, klen, hash, NULL};
    s->routed_after = after;
    feed_touch(s, ri, touch_key_copied(s, &k), s->routed_ev);
}

void shard_routed_end(Shard *s)
{
    event_done(s, s->routed_ev->time_ms);
    s->routed_ev = NULL;
}

void shard_routed_blank(Shard *s, size_t ri, int64_t time_ms, const char *kbytes, size_t klen,
                        uint64_t hash)
{
    shard_fire_due(s, time_ms);
    if (!part_may_hold(&s->keys, hash))
        return;   /* a blank for a key without a record (most): nothing to run */
    RouteKey k = {kbytes, klen, hash, NULL};
    s->routed_after = 0;
    feed_blank(s, ri, &k, time_ms);
    event_done(s, time_ms);
}

/* ---- the end ---------------------------------------------------------------- */

/* Every record of the table (heap, t->count of them), in slot order; NULL on
 * allocation failure. */
static PartEntry **table_entries(const PartTable *t)
{
    PartEntry **all = malloc((t->count ? t->count : 1) * sizeof *all);
    if (all)
        part_entries(t, all);
    return all;
}

/* At the end of input every timer fires, in (deadline, key, rule) order, and then
 * every slot left runs to INT64_MAX. Most slots' ends show nothing: a rule's matcher
 * that gives only timeouts (nfa_key_end_only_timeouts), in a rule that alerts on none,
 * only counts them; an idle slot (kept for its suppression) only leaves. Such slots
 * have no order to keep, so they are dropped at once, counted as their timeouts would
 * have counted them; the others still fire in order. */
static bool slot_end_silent(const Shard *s, const PartSlot *sl, size_t *timeouts)
{
    if (!slot_may_wait(s, sl))
        return false;
    *timeouts = nfa_key_end_timeouts(s->nfas[sl->rule], &sl->nfa);   /* 0 when idle */
    return true;
}

/* How many records ahead of the one it looks at drop_silent_slots prefetches. */
enum { END_AHEAD = 8 };

static void drop_silent_slots(Shard *s)
{
    PartEntry **recs = s->keys.count ? table_entries(&s->keys) : NULL;
    if (!recs)
        return;
    size_t n = s->keys.count;
    part_table_keep_size(&s->keys, true);
    for (size_t j = 0; j < n; j++) {
        if (j + END_AHEAD < n)
            part_entry_prefetch(recs[j + END_AHEAD]);
        PartEntry *rec = recs[j];
        for (size_t i = 0; i < rec->n_slots; i++) {
            PartSlot *sl = &part_slots(rec)[i];
            size_t timeouts;
            if (!slot_end_silent(s, sl, &timeouts))
                continue;
            slot_drop_unseen(s, sl, timeouts);
            slot_leave(s, rec, sl);
        }
        slots_compact(rec);
        rec_settle(s, rec, INT64_MIN, NULL);
    }
    free(recs);
}

/* Keys in the order of their bytes (shorter first), as the timers order ties. */
static int key_order(const void *a, const void *b)
{
    const PartEntry *x = *(PartEntry *const *)a, *y = *(PartEntry *const *)b;
    if (x->klen != y->klen)
        return x->klen < y->klen ? -1 : 1;
    return memcmp(x->tail, y->tail, x->klen);
}

/* Runs the slots left after every timer (partial matches without a deadline) to
 * INT64_MAX, key by key in the order of their bytes, so that the alerts' order does
 * not depend on the table's history; false on allocation failure (the shard has
 * failed). */
static bool advance_left(Shard *s)
{
    size_t n = s->keys.count;
    if (!n)
        return true;
    /* collected first: running may remove records and resize the table */
    PartEntry **left = table_entries(&s->keys);
    if (!left) {
        s->failed = true;
        return false;
    }
    qsort(left, n, sizeof *left, key_order);
    for (size_t j = 0; j < n; j++) {
        rec_run_due(s, left[j], INT64_MAX, true);
        rec_settle(s, left[j], INT64_MAX, NULL);
    }
    free(left);
    return true;
}

void shard_advance_all(Shard *s)
{
    /* an evaluation that ran out of memory leaves results uncounted (on_result): the
     * silent slots' counts would then differ, and the run fails anyway */
    if (!shard_failed(s))
        drop_silent_slots(s);
    shard_fire_due(s, INT64_MAX - 1);
    if (advance_left(s) && s->keys.keep_size && !s->keys.count)
        part_table_free(&s->keys, NULL, NULL);   /* its slots, kept from shrinking */
    part_table_keep_size(&s->keys, false);
    expr_scratch_reset(s->scratch);
}

int64_t shard_next_deadline(const Shard *s)
{
    return deadline_next(&s->timers);
}

uint64_t shard_partials_live(const Shard *s)
{
    uint64_t n = 0;
    for (size_t i = 0; i < s->rs->n_rules; i++)
        n += s->rules[i].counters.partials_live;
    return n;
}

COLD void shard_add_rule_stats(const Shard *s, size_t rule, EngineRuleStats *acc)
{
    const RuleState *st = &s->rules[rule];
    acc->matches += st->stats.matches;
    acc->timeouts += st->stats.timeouts;
    acc->alerts += st->stats.alerts;
    acc->suppressed += st->stats.suppressed;
    acc->missing_key += st->stats.missing_key;
    acc->keys_live += st->keys_live;
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

/* ---- teardown ---------------------------------------------------------------- */

COLD static void drop_record(PartEntry *rec, void *user)
{
    Shard *s = user;
    budget_add(&s->mem, -rec_base_charge(rec));
    PartSlot *sl = part_slots(rec);
    for (size_t i = 0; i < rec->n_slots; i++) {
        RuleState *st = &s->rules[sl[i].rule];
        budget_add(&s->mem, -slot_charge(&sl[i]));
        nfa_key_clear(&sl[i].nfa, &st->counters);
        st->keys_live--;
    }
    rec->n_slots = 0;
}

/* Frees what a shard holds per rule set (the rule states' array, not their contents,
 * which the caller frees or hands over to a new set): at teardown and at a reload swap. */
COLD static void free_rule_set_parts(Shard *s)
{
    free(s->rules);
    free(s->rule_bits);
    free(s->key_vals);
    router_free(s->router);
    nfa_cond_cache_free(s->cond_cache);
    nfa_cond_share_free(s->cond_share);
    nfa_work_free(s->work);
    free(s->routed);
    free(s->routed_key);
    free(s->routed_order);
    free(s->touched);
    free(s->nfas);
    free(s->ctxs);
}

COLD void shard_free(Shard *s)
{
    if (!s)
        return;
    deadline_free(&s->timers);
    if (s->rules) {
        part_table_free(&s->keys, drop_record, s);
        for (size_t i = 0; i < s->rs->n_rules; i++)
            part_table_free(&s->rules[i].suppress, NULL, NULL);
    }
    free_rule_set_parts(s);
    part_pool_free(&s->pool);   /* after the tables that use it */
    buf_free(&s->key_text);
    if (s->ahead)
        buf_free(&s->ahead->bytes);
    free(s->ahead);
    if (s->scratch)
        expr_scratch_free(s->scratch);
    free(s);
}

/* ---- checkpoints ------------------------------------------------------------ */

enum { VALUE_HAS_S = 1, VALUE_HAS_RAW = 2 };

COLD static void put_value(Buf *out, const Value *v)
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
COLD static bool get_value(SnapReader *r, Value *v)
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


COLD int shard_snapshot_keys(const Shard *s, size_t ri, Buf *out, SnapEventIndex index, void *user)
{
    const CompiledRule *rule = &s->rs->rules[ri];
    Value *vals = malloc((rule->n_keys ? rule->n_keys : 1) * sizeof *vals);
    Buf text = BUF_INIT;
    int rc = vals ? 0 : -1;
    size_t bucket = 0;
    for (PartEntry *rec = part_next(&s->keys, &bucket, NULL); rec && rc == 0;
         rec = part_next(&s->keys, &bucket, rec)) {
        PartSlot *sl = slot_find(rec, (uint32_t)ri);
        if (!sl)
            continue;
        snap_put_u64(out, 1);
        snap_put_bytes(out, rec->tail, rec->klen);
        if (!part_key_values(rec->tail, rec->klen, vals, rule->n_keys, &text)) {
            rc = -1;
            break;
        }
        snap_put_u64(out, rule->n_keys);
        for (size_t k = 0; k < rule->n_keys; k++)
            put_value(out, &vals[k]);
        snap_put_i64(out, suppressed_until(s, ri, rec));
        rc = nfa_key_snapshot(rule->nfa, nfa_key_idle(&sl->nfa) ? NULL : &sl->nfa, out,
                              index, user);
    }
    free(vals);
    buf_free(&text);
    return rc < 0 || out->failed ? -1 : 0;
}

/* The restored state of rule ri for a key: its matcher nk (NULL: idle; taken) and
 * its suppression, in the key's record. -1 with *err on failure. */
COLD static int restore_slot(Shard *s, size_t ri, const char *kbytes, size_t klen, NfaKey *nk,
                        int64_t suppress_until, const char **err)
{
    uint64_t hash = part_hash(kbytes, klen);
    PartEntry *rec = part_lookup(&s->keys, kbytes, klen, hash);
    if (!rec && (rec = part_add(&s->keys, kbytes, klen, hash, 1)))
        budget_add(&s->mem, rec_base_charge(rec));
    bool twice = rec && slot_find(rec, (uint32_t)ri);
    PartSlot *sl = NULL;
    if (rec && !twice &&
        (suppress_until == INT64_MIN || suppress_set(s, ri, rec, suppress_until)) &&
        !(sl = slot_insert(s, &rec, hash, (uint32_t)ri, slot_seek(rec, (uint32_t)ri, 0))))
        suppress_forget(s, ri, rec);
    if (!sl) {
        nfa_key_free(nk, &s->rules[ri].counters);
        if (rec && !rec->n_slots)
            rec_settle(s, rec, INT64_MIN, &hash);
        *err = twice ? "a key twice" : "out of memory";
        return -1;
    }
    nfa_key_move_in(&sl->nfa, nk);
    /* the events it holds are not known here */
    if (nk) {
        slot_retime(s, rec, sl);
    } else {
        slot_set_due(rec, sl, suppress_until);
        sl->waits = true;
    }
    budget_add(&s->mem, slot_charge(sl));
    if (deadline_set(&s->timers, rec, rec_due(s, rec)) == 0)
        return 0;
    /* A failed restore leaves the shard sound: the slot goes, and the record with it if
     * it was the only one, or else keeps what timer it can get (without one, the end
     * of input still reaches it). */
    budget_add(&s->mem, -slot_charge(sl));
    nfa_key_clear(&sl->nfa, &s->rules[ri].counters);
    slot_remove(s, rec, (size_t)(sl - part_slots(rec)));
    if (!rec->n_slots)
        rec_settle(s, rec, INT64_MIN, &hash);
    else
        (void)deadline_set(&s->timers, rec, rec_due(s, rec));
    *err = "out of memory";
    return -1;
}

COLD int shard_restore_key(Shard *s, size_t ri, const char *kbytes, size_t klen, SnapReader *r,
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
    if (!rule_suppresses(rule))
        suppress_until = INT64_MIN;   /* a rule that no longer suppresses */
    NfaKey *nk = NULL;
    if (r->bad || nfa_key_restore(rule->nfa, r, &nk, &st->counters, lookup, user, err) < 0) {
        if (r->bad)
            *err = "malformed key";
        return -1;
    }
    if (!nk && suppress_until == INT64_MIN)
        return 0;   /* nothing to keep: the key would have been removed */
    return restore_slot(s, ri, kbytes, klen, nk, suppress_until, err);
}

COLD void shard_restore_stats(Shard *s, size_t ri, const EngineRuleStats *in)
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
    uint8_t *rule_bits;
    Value *key_vals;           /* room for next's widest key */
    uint32_t *renumber;        /* per current rule: its number in next, or UINT32_MAX */
    Router *router;
    NfaCondShare *cond_share;
    NfaCondCache *cond_cache;
    NfaWork *work;
    RouteResult *routed;
    const RouteKey **routed_key;
    size_t *routed_order;
    Touch *touched;
    const Nfa **nfas;
    NfaRunCtx *ctxs;
};

COLD ShardSwap *shard_swap_prepare(const Shard *s, const CompiledRuleSet *next)
{
    ShardSwap *sw = calloc(1, sizeof *sw);
    if (!sw)
        return NULL;
    size_t n = next->n_rules ? next->n_rules : 1;
    sw->next = next;
    sw->rules = lines_calloc_n(n, sizeof *sw->rules);
    sw->rule_bits = rule_bits_list(next);
    sw->key_vals = lines_calloc_n(rules_widest_key(next), sizeof *sw->key_vals);
    sw->renumber = calloc(s->rs->n_rules ? s->rs->n_rules : 1, sizeof *sw->renumber);
    sw->router = router_new(next, false);
    sw->routed = lines_calloc_n(n, sizeof *sw->routed);
    sw->routed_key = lines_calloc_n(n, sizeof *sw->routed_key);
    sw->routed_order = lines_calloc_n(n, sizeof *sw->routed_order);
    sw->touched = lines_calloc_n(n, sizeof *sw->touched);
    sw->nfas = nfa_list(next);
    sw->ctxs = lines_calloc_n(n, sizeof *sw->ctxs);
    if (!sw->rules || !sw->rule_bits || !sw->key_vals || !sw->renumber || !sw->router ||
        !sw->routed || !sw->routed_key || !sw->routed_order || !sw->touched || !sw->nfas ||
        !sw->ctxs ||
        matcher_parts_build(next, &sw->cond_share, &sw->cond_cache, &sw->work) < 0) {
        shard_swap_abort(sw);
        return NULL;
    }
    return sw;
}

COLD void shard_swap_abort(ShardSwap *sw)
{
    if (!sw)
        return;
    free(sw->rules);
    free(sw->rule_bits);
    free(sw->key_vals);
    free(sw->renumber);
    router_free(sw->router);
    nfa_cond_cache_free(sw->cond_cache);
    nfa_cond_share_free(sw->cond_share);
    nfa_work_free(sw->work);
    free(sw->routed);
    free(sw->routed_key);
    free(sw->routed_order);
    free(sw->touched);
    free(sw->nfas);
    free(sw->ctxs);
    free(sw);
}

/* A kept rule whose suppression came or went (fingerprints leave it out): its table of
 * suppressions is emptied, or made ready for them. A slot kept only for a suppression
 * that no longer exists leaves when its time comes. */
COLD static void resuppress(RuleState *st, const CompiledRule *rule)
{
    unsigned extras = rule_suppresses(rule) ? PART_X_SUPPRESS : 0u;
    if (st->suppress.extras == extras)
        return;
    part_table_free(&st->suppress, NULL, NULL);
    part_table_set_extras(&st->suppress, extras);
}

/* Gives each slot of rec its rule's number in the new set (sw->renumber), dropping the
 * slots of rules that do not stay (their state is freed, counted in the old rules'
 * counters), and sorts the slots by the new numbers. */
COLD static void renumber_slots(Shard *s, PartEntry *rec, const uint32_t *renumber)
{
    PartSlot *sl = part_slots(rec);
    size_t kept = 0;
    for (size_t i = 0; i < rec->n_slots; i++) {
        uint32_t to = renumber[sl[i].rule];
        if (to == UINT32_MAX) {
            budget_add(&s->mem, -slot_charge(&sl[i]));
            nfa_key_clear(&sl[i].nfa, &s->rules[sl[i].rule].counters);
            continue;
        }
        if (rec->room == 1) {   /* no `due`: no whole-slot copies */
            sl[0].rule = to;
            kept++;
            continue;
        }
        PartSlot moved = sl[i];
        moved.rule = to;
        size_t at = kept++;
        while (at > 0 && sl[at - 1].rule > to) {
            sl[at] = sl[at - 1];
            at--;
        }
        sl[at] = moved;
    }
    rec->n_slots = (uint16_t)kept;
}

/* Re-arms every record for the new set (a kept rule's timeouts may now alert, or no
 * longer); a record left without slots fires at once, and leaves. */
COLD static void rearm_records(Shard *s)
{
    int64_t now = s->fired_upto;
    size_t bucket = 0;
    for (PartEntry *rec = part_next(&s->keys, &bucket, NULL); rec;
         rec = part_next(&s->keys, &bucket, rec)) {
        PartSlot *sl = part_slots(rec);
        for (size_t i = 0; i < rec->n_slots; i++)
            if (!nfa_key_idle(&sl[i].nfa))
                sl[i].waits = slot_may_wait(s, &sl[i]);
        int64_t due = rec->n_slots ? rec_due(s, rec) : INT64_MIN;
        if (due <= now)
            due = nfa_due_after(now, 1);
        if (deadline_set(&s->timers, rec, due) < 0)
            s->failed = true;
    }
}

COLD void shard_swap_commit(Shard *s, ShardSwap *sw, const size_t *from)
{
    for (size_t i = 0; i < s->rs->n_rules; i++)
        sw->renumber[i] = UINT32_MAX;
    for (size_t j = 0; j < sw->next->n_rules; j++) {
        RuleState *st = &sw->rules[j];
        if (from[j] == SIZE_MAX) {
            rule_state_init(s, st, &sw->ctxs[j], s->limits, &sw->next->rules[j]);
            continue;
        }
        *st = s->rules[from[j]];
        resuppress(st, &sw->next->rules[j]);
        sw->ctxs[j] = s->ctxs[from[j]];
        sw->ctxs[j].counters = &st->counters;   /* it pointed into the old array */
        sw->renumber[from[j]] = (uint32_t)j;
    }
    size_t bucket = 0;
    for (PartEntry *rec = part_next(&s->keys, &bucket, NULL); rec;
         rec = part_next(&s->keys, &bucket, rec)) {
        renumber_slots(s, rec, sw->renumber);
    }
    for (size_t i = 0; i < s->rs->n_rules; i++)
        if (sw->renumber[i] == UINT32_MAX)
            part_table_free(&s->rules[i].suppress, NULL, NULL);
    free(sw->renumber);
    free_rule_set_parts(s);
    s->rules = sw->rules;
    s->rule_bits = sw->rule_bits;
    s->routed_order = sw->routed_order;
    s->touched = sw->touched;
    s->nfas = sw->nfas;
    s->ctxs = sw->ctxs;
    s->key_vals = sw->key_vals;
    s->router = sw->router;
    s->cond_share = sw->cond_share;
    s->cond_cache = sw->cond_cache;
    s->work = sw->work;
    s->routed = sw->routed;
    s->routed_key = sw->routed_key;
    s->rs = sw->next;
    wire_matcher_parts(s);
    index_ahead_keys(s);
    rearm_records(s);
    free(sw);
}

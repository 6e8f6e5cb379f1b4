/* alerts/alerts.c — the router: from a rule's result to its actions' outputs.
 *
 * Owns: the outputs of one rule set (slot 0 is `stdout`, slot i+1 is
 * rs->ast->outputs[i], the numbering of CompiledAction.to shifted by one), the
 * configuration they share, each rule's texts escaped once with its actions' heads,
 * and the cache of alert times. Rendering is in render.c, delivery in out_*.c. */
#include "alerts/alerts.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "alerts/outputs.h"
#include "alerts/render.h"
#include "base/clock.h"

/* What the router finds out about a rule once instead of at every alert. */
typedef struct RulePlan {
    RecordNames names;       /* escaped once; owned */
    bool keys_wanted;        /* an output of its actions reads the key texts */
} RulePlan;

struct AlertRouter {
    const CompiledRuleSet *rs;
    OutConfig cfg;           /* outputs keep a pointer to it */
    Output **outs;           /* n_outs; heap, each owned */
    size_t n_outs;
    RulePlan *plans;         /* per rule of rs; heap, owned */
    _Atomic uint64_t lost;   /* alerts_lost; workers deliver concurrently */
    TimeCache times;         /* the alerts' times, shared by the delivering threads */
    /* Until alerts_adopt: per slot, the slot of `from`'s output that this router takes
     * over (NO_ADOPT: opened here; the slot is NULL meanwhile). Heap, owned; NULL
     * when there is nothing to take over. */
    size_t *adopt;
    const AlertRouter *from;
};

#define NO_ADOPT SIZE_MAX

static void config_from_options(OutConfig *c, const AlertOptions *o)
{
    out_config_defaults(c);
    if (!o)
        return;
    c->log = o->log;
    c->log_user = o->log_user;
    if (o->net_buffer)
        c->net_buffer = o->net_buffer;
    if (o->exec_queue)
        c->exec_queue = o->exec_queue;
    if (o->exec_children)
        c->exec_children = o->exec_children;
    if (o->exec_tries > 0)
        c->exec_tries = o->exec_tries;
    if (o->exec_backoff_ms > 0)
        c->exec_backoff_ms = o->exec_backoff_ms;
    if (o->flush_timeout_ms > 0)
        c->flush_timeout_ms = o->flush_timeout_ms;
    c->file_opened = o->file_opened;
    c->file_opened_user = o->file_opened_user;
}

static Output *output_open(const OutputDecl *d, const OutConfig *cfg, char **err)
{
    switch (d->kind) {
    case OUT_FILE: return out_file_new(d, cfg, err);
    case OUT_EXEC: return out_exec_new(d, cfg, err);
    case OUT_TCP:
    case OUT_UNIX: return out_net_new(d, cfg, err);
    }
    *err = buf_format("output '%s': unknown kind", d->name);
    return NULL;
}

/* An action's outputs: its `to` list, or `stdout` when it has none. */
static size_t action_n_targets(const CompiledAction *action)
{
    return action && action->n_to ? action->n_to : 1;
}

static size_t action_slot(const CompiledAction *action, size_t i)
{
    int to = action && action->n_to ? action->to[i] : -1;
    return to < 0 ? 0 : (size_t)to + 1;
}

/* The action's i-th output; NULL if the router does not have it (or not yet). */
static Output *action_target(const AlertRouter *ar, const CompiledAction *action, size_t i)
{
    size_t slot = action_slot(action, i);
    return slot < ar->n_outs ? ar->outs[slot] : NULL;
}

/* The output a slot has or will take over at alerts_adopt. */
static const Output *slot_output(const AlertRouter *ar, size_t slot)
{
    if (slot >= ar->n_outs)
        return NULL;
    if (ar->adopt && ar->adopt[slot] != NO_ADOPT)
        return ar->from->outs[ar->adopt[slot]];
    return ar->outs[slot];
}

static bool actions_read_keys(const AlertRouter *ar, const CompiledAction *actions, size_t n)
{
    for (size_t a = 0; a < n; a++)
        for (size_t i = 0; i < action_n_targets(&actions[a]); i++) {
            const Output *o = slot_output(ar, action_slot(&actions[a], i));
            if (o && o->reads_keys)
                return true;
        }
    return false;
}

/* After the outputs are open. */
static int plans_build(AlertRouter *ar)
{
    size_t n = ar->rs->n_rules;
    ar->plans = calloc(n ? n : 1, sizeof *ar->plans);
    if (!ar->plans)
        return -1;
    for (size_t i = 0; i < n; i++) {
        const CompiledRule *rule = &ar->rs->rules[i];
        if (record_names_build(&ar->plans[i].names, rule) < 0)
            return -1;
        ar->plans[i].keys_wanted =
            actions_read_keys(ar, rule->on_match, rule->n_on_match) ||
            actions_read_keys(ar, rule->on_timeout, rule->n_on_timeout);
    }
    return 0;
}

/* The plan of `rule` if it is one of the router's rule set (it always is from the
 * engine), else NULL: the renderer then escapes the names for this alert. */
static const RulePlan *plan_of(const AlertRouter *ar, const CompiledRule *rule)
{
    size_t i;
    return array_index(rule, ar->rs->rules, ar->rs->n_rules, sizeof *rule, &i)
               ? &ar->plans[i] : NULL;
}

static bool template_same(const Template *a, const Template *b)
{
    return a->source && b->source && strcmp(a->source, b->source) == 0;
}

/* Declared alike, so that one output can serve both: same name, kind and target. */
static bool decl_same(const OutputDecl *a, const OutputDecl *b)
{
    if (strcmp(a->name, b->name) != 0 || a->kind != b->kind || a->n_argv != b->n_argv ||
        a->rotate_ms != b->rotate_ms || a->timeout_ms != b->timeout_ms)
        return false;
    if (a->kind != OUT_EXEC)
        return template_same(&a->path, &b->path);
    for (size_t i = 0; i < a->n_argv; i++)
        if (!template_same(&a->argv[i], &b->argv[i]))
            return false;
    return true;
}

/* The slot of prev's output declared as d, or NO_ADOPT. */
static size_t adoptable(const AlertRouter *prev, const OutputDecl *d)
{
    if (!prev || !prev->rs->ast)
        return NO_ADOPT;
    for (size_t j = 1; j < prev->n_outs; j++)
        if (prev->outs[j] && decl_same(d, &prev->rs->ast->outputs[j - 1]))
            return j;
    return NO_ADOPT;
}

/* Slot i + 1's output: opened, or marked to be taken over from prev. */
static bool slot_fill(AlertRouter *ar, size_t i, const AlertRouter *prev, char **err)
{
    const OutputDecl *d = &ar->rs->ast->outputs[i];
    size_t j = adoptable(prev, d);
    if (j != NO_ADOPT) {
        ar->adopt[i + 1] = j;
        return true;
    }
    ar->outs[i + 1] = output_open(d, &ar->cfg, err);
    return ar->outs[i + 1] != NULL;
}

AlertRouter *alerts_new(const CompiledRuleSet *rs, const AlertOptions *opts, char **err)
{
    return alerts_new_after(rs, opts, NULL, err);
}

AlertRouter *alerts_new_after(const CompiledRuleSet *rs, const AlertOptions *opts,
                              const AlertRouter *prev, char **err)
{
    *err = NULL;
    AlertRouter *ar = calloc(1, sizeof *ar);
    size_t n_decl = rs->ast ? rs->ast->n_outputs : 0;
    if (!ar || !(ar->outs = calloc(n_decl + 1, sizeof *ar->outs))) {
        free(ar);
        *err = buf_format("out of memory");
        return NULL;
    }
    ar->rs = rs;
    time_cache_init(&ar->times);
    config_from_options(&ar->cfg, opts);
    if (prev && n_decl) {
        if (!(ar->adopt = malloc((n_decl + 1) * sizeof *ar->adopt))) {
            free(ar->outs);
            free(ar);
            *err = buf_format("out of memory");
            return NULL;
        }
        for (size_t i = 0; i <= n_decl; i++)
            ar->adopt[i] = NO_ADOPT;
        ar->from = prev;
    }
    ar->outs[0] = out_stdout_new(opts ? opts->stdout_path : NULL, &ar->cfg, err);
    if (ar->outs[0])
        ar->n_outs = 1;
    for (size_t i = 0; ar->n_outs == i + 1 && i < n_decl; i++)
        if (slot_fill(ar, i, prev, err))
            ar->n_outs++;
    if (ar->n_outs != n_decl + 1 || plans_build(ar) < 0) {
        if (!*err)
            *err = buf_format("out of memory");
        alerts_free(ar);
        return NULL;
    }
    return ar;
}

/* Keys beyond this many take their offsets and text pointers from the heap. */
#define KEYS_ON_STACK 8
/* Bytes reserved for an alert's key texts and record before rendering. */
#define ALERT_ROOM 1024
/* The thread's record buffer is kept between alerts up to this size. */
#define ALERT_ROOM_KEPT (64 * 1024)

/* The key values as text for path and argv templates, each followed by NUL, in buf;
 * offs[i] is where value i starts. */
static void key_texts_append(Buf *buf, const Value *key, size_t n, size_t *offs)
{
    for (size_t i = 0; i < n; i++) {
        offs[i] = buf->len;
        value_to_text(&key[i], buf);   /* numbers keep their digits */
        buf_append(buf, "", 1);
    }
}

/* One alert's work space in the delivering thread's scratch buffer (no allocation
 * per alert once it has grown). */
typedef struct AlertWork {
    Buf *buf;
    size_t records_at;         /* where a record starts: after the key texts */
    size_t *offs;              /* the key texts' offsets */
    const char **ptrs;         /* n_key pointers to them, set after each render */
    size_t n_key;
} AlertWork;

/* An alert not delivered for want of memory (to `output`, or to all of its outputs
 * when NULL): logged, and counted for the run to exit with an error. */
static void lose_alert(AlertRouter *ar, const char *output, const char *rule)
{
    atomic_fetch_add_explicit(&ar->lost, 1, memory_order_relaxed);
    if (output)
        out_log(&ar->cfg, "output %s: alert of rule %s lost: out of memory", output, rule);
    else
        out_log(&ar->cfg, "alert of rule %s lost: out of memory", rule);
}

uint64_t alerts_lost(const AlertRouter *ar)
{
    return atomic_load_explicit(&ar->lost, memory_order_relaxed);
}

/* head: the action's in the rule's plan, or NULL without a plan. */
static void deliver_action(AlertRouter *ar, const CompiledRule *rule, const RulePlan *plan,
                           const RecordHead *head, const CompiledAction *action,
                           const Value *key, size_t n_key, const NfaResult *r,
                           EvalScratch *scratch, AlertMeta *meta, AlertWork *w)
{
    w->buf->len = w->records_at;
    meta->severity = head ? head->severity
                          : alert_severity_name(action ? action->severity : SEV_MEDIUM);
    RenderAids aids = {plan ? &plan->names : NULL, head, &ar->times};
    int rc = plan ? alert_render_named(rule, &aids, action, key, n_key, r, scratch,
                                       ECHO_DECODED, w->buf)
                  : alert_render_echo(rule, action, key, n_key, r, scratch, ECHO_DECODED,
                                      w->buf);
    for (size_t i = 0; rc == 0 && i < w->n_key; i++)   /* the buffer may have moved */
        w->ptrs[i] = w->buf->data + w->offs[i];
    const char *line = w->buf->data + w->records_at;
    size_t len = w->buf->len - w->records_at;
    for (size_t i = 0; i < action_n_targets(action); i++) {
        Output *o = action_target(ar, action, i);
        if (!o)
            continue;
        if (rc < 0)
            lose_alert(ar, o->name, rule->name);
        else
            o->ops->write(o, meta, line, len);
    }
}

/* The work space's start: the key texts. False on allocation failure. */
static bool work_start(AlertWork *w, const Value *key)
{
    Buf *buf = w->buf;
    buf_clear(buf);
    /* room for the key texts and a usual record at once */
    if (buf->cap < ALERT_ROOM && !buf_reserve(buf, ALERT_ROOM))
        return false;
    key_texts_append(buf, key, w->n_key, w->offs);
    w->records_at = buf->len;
    return !buf->failed;
}

void alerts_deliver(AlertRouter *ar, const CompiledRule *rule,
                    const Value *key, size_t n_key, const NfaResult *r, EvalScratch *scratch)
{
    bool match = r->kind == NFA_MATCH;
    const CompiledAction *actions = match ? rule->on_match : rule->on_timeout;
    size_t n_actions = match ? rule->n_on_match : rule->n_on_timeout;
    bool use_default = match && n_actions == 0 && rule->ast->n_on == 0;
    if (n_actions == 0 && !use_default)
        return;

    const RulePlan *plan = plan_of(ar, rule);
    /* the key texts only when an output will read them */
    size_t n_meta_keys = plan && !plan->keys_wanted ? 0 : n_key < rule->n_keys ? n_key
                                                                                : rule->n_keys;
    size_t offs_room[KEYS_ON_STACK];
    const char *ptrs_room[KEYS_ON_STACK];
    bool on_stack = n_meta_keys <= KEYS_ON_STACK;
    size_t *offs = on_stack ? offs_room : malloc(n_meta_keys * sizeof *offs);
    const char **ptrs = on_stack ? ptrs_room : malloc(n_meta_keys * sizeof *ptrs);
    AlertWork w = {expr_scratch_text(scratch), 0, offs, ptrs, n_meta_keys};
    if (!offs || !ptrs || !work_start(&w, key)) {
        lose_alert(ar, NULL, rule->name);
    } else {
        AlertMeta meta = {
            .rule = rule->name, .kind = alert_kind_name(r->kind),
            .key_names = rule->key_names, .key_texts = ptrs, .n_key = n_meta_keys,
            .time_ms = r->time_ms,
        };
        const RecordHead *heads =
            plan ? record_heads_of(&plan->names, rule, r->kind, use_default) : NULL;
        /* the default action is the one action of a rule without `on` */
        for (size_t i = 0; i < (use_default ? 1 : n_actions); i++)
            deliver_action(ar, rule, plan, heads ? &heads[i] : NULL,
                           use_default ? NULL : &actions[i], key, n_key, r, scratch, &meta,
                           &w);
    }
    if (w.buf->cap > ALERT_ROOM_KEPT || w.buf->failed)
        buf_free(w.buf);
    if (!on_stack) {
        free(offs);
        free(ptrs);
    }
}

void alerts_adopt(AlertRouter *next, AlertRouter *prev)
{
    for (size_t s = 0; next->adopt && s < next->n_outs; s++)
        if (next->adopt[s] != NO_ADOPT) {
            next->outs[s] = prev->outs[next->adopt[s]];
            prev->outs[next->adopt[s]] = NULL;
        }
    free(next->adopt);
    next->adopt = NULL;
    next->from = NULL;
}

/* Slots are NULL in a router whose outputs went to the next one (alerts_adopt) and in
 * one that had not taken over its own yet. */
int alerts_flush(AlertRouter *ar)
{
    int rc = 0;
    int64_t deadline = clock_monotonic_ms() + ar->cfg.flush_timeout_ms;
    for (size_t i = 0; i < ar->n_outs; i++) {
        int64_t left = deadline - clock_monotonic_ms();
        if (ar->outs[i] && ar->outs[i]->ops->flush(ar->outs[i], left > 0 ? left : 0) < 0)
            rc = -1;
    }
    return rc;
}

void alerts_idle(AlertRouter *ar)
{
    for (size_t i = 0; i < ar->n_outs; i++)
        if (ar->outs[i] && ar->outs[i]->ops->drain)
            ar->outs[i]->ops->drain(ar->outs[i]);
}

int alerts_sync_files(AlertRouter *ar, void (*fn)(void *user, const char *path,
                                                  uint64_t length), void *user)
{
    int rc = 0;
    for (size_t i = 0; i < ar->n_outs; i++)
        if (ar->outs[i] && ar->outs[i]->ops->sync_files &&
            ar->outs[i]->ops->sync_files(ar->outs[i], fn, user) < 0)
            rc = -1;
    return rc;
}

void alerts_stats(const AlertRouter *ar, Buf *out)
{
    buf_putc(out, '{');
    bool first = true;
    for (size_t i = 0; i < ar->n_outs; i++) {
        Output *o = ar->outs[i];
        if (!o)
            continue;
        OutStats st;
        o->ops->stats(o, &st);
        if (!first)
            buf_putc(out, ',');
        first = false;
        buf_json_string(out, o->name, strlen(o->name));
        buf_printf(out, ":{\"kind\":\"%s\",\"sent\":%llu,\"failed\":%llu,\"dropped\":%llu,"
                   "\"buffered\":%llu,\"healthy\":%s,\"state\":\"%s\"}", o->kind,
                   (unsigned long long)st.sent, (unsigned long long)st.failed,
                   (unsigned long long)st.dropped, (unsigned long long)st.buffered,
                   st.healthy ? "true" : "false", st.state);
    }
    buf_putc(out, '}');
}

uint64_t alerts_undelivered(const AlertRouter *ar)
{
    uint64_t n = 0;
    for (size_t i = 0; i < ar->n_outs; i++)
        if (ar->outs[i]) {
            OutStats st;
            ar->outs[i]->ops->stats(ar->outs[i], &st);
            n += st.dropped + st.failed;
        }
    return n;
}

void alerts_finish(AlertRouter *ar)
{
    for (size_t i = 0; i < ar->n_outs; i++)
        if (ar->outs[i] && ar->outs[i]->ops->finish)
            ar->outs[i]->ops->finish(ar->outs[i]);
}

void alerts_free(AlertRouter *ar)
{
    if (!ar)
        return;
    for (size_t i = 0; i < ar->n_outs; i++)
        if (ar->outs[i])
            ar->outs[i]->ops->destroy(ar->outs[i]);
    free(ar->outs);
    free(ar->adopt);
    for (size_t i = 0; ar->plans && i < ar->rs->n_rules; i++)
        record_names_free(&ar->plans[i].names);
    free(ar->plans);
    free(ar);
}

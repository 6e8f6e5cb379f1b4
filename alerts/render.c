/* alerts/render.c — the alert record (RUNTIME.md section 4) as one line of JSON.
 *
 * Owns: alert_render and the text forms of keys, severities and kinds. The record is
 * byte-exact and always valid JSON in valid UTF-8: every piece that comes from data
 * (key values, field values, echoed events) is checked with json_validate, and a piece
 * that fails (only possible for hand-built events; the decoder rejects such lines) is
 * written as a JSON string instead, its invalid bytes replaced by U+FFFD. */
#include "alerts/alerts.h"

#include <stdlib.h>
#include <string.h>

#include "runtime/decode.h"

static const char *const severity_names[] = {"info", "low", "medium", "high", "critical"};

const char *alert_severity_name(Severity s)
{
    return (unsigned)s < sizeof severity_names / sizeof severity_names[0] ? severity_names[s]
                                                                          : "medium";
}

const char *alert_kind_name(NfaResultKind k)
{
    return k == NFA_TIMEOUT ? "timeout" : "match";
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static bool json_ok(const char *text, size_t len)
{
    DecodeError derr;
    return json_validate(text, len, DECODE_MAX_DEPTH, &derr);
}

/* Appends JSON text that should already be valid; anything else becomes a string. */
static void put_json_checked(Buf *out, const char *text, size_t len)
{
    if (json_ok(text, len))
        buf_append(out, text, len);
    else
        buf_json_string(out, text, len);
}

/* A value as JSON: its original text when it has one (a 19-digit id stays exact),
 * else (or if that text is not valid JSON) value_to_json. */
static void put_value_json(Buf *out, const Value *v, Buf *tmp)
{
    if (v->raw && v->raw_len && json_ok(v->raw, v->raw_len)) {
        buf_append(out, v->raw, v->raw_len);
        return;
    }
    buf_clear(tmp);
    value_to_json(v, tmp);
    if (tmp->failed) {
        out->failed = true;
        return;
    }
    put_json_checked(out, tmp->data, tmp->len);
}

static void put_key(Buf *out, const CompiledRule *rule, const Value *key, size_t n_key, Buf *tmp)
{
    buf_puts(out, ",\"key\":{");
    size_t n = n_key < rule->n_keys ? n_key : rule->n_keys;
    for (size_t i = 0; i < n; i++) {
        if (i)
            buf_putc(out, ',');
        buf_json_string(out, rule->key_names[i], strlen(rule->key_names[i]));
        buf_putc(out, ':');
        put_value_json(out, &key[i], tmp);
    }
    buf_putc(out, '}');
}

static void put_message(Buf *out, const CompiledRule *rule, const CompiledAction *action,
                        const EvalCtx *ctx, EvalScratch *scratch, Buf *tmp)
{
    buf_puts(out, ",\"message\":");
    if (!action) {
        buf_json_string(out, rule->name, strlen(rule->name));
        return;
    }
    /* The whole text first: a UTF-8 sequence split over two parts stays intact. */
    buf_clear(tmp);
    for (size_t i = 0; i < action->message.n_parts; i++) {
        const CompiledTemplatePart *p = &action->message.parts[i];
        if (p->expr) {
            Value v = expr_eval(p->expr, ctx, scratch);
            value_to_text(&v, tmp);
        } else if (p->text) {
            buf_append(tmp, p->text, p->len);
        }
    }
    if (tmp->failed) {
        out->failed = true;
        return;
    }
    buf_json_string(out, tmp->data, tmp->len);
}

static void put_fields(Buf *out, const CompiledAction *action, const EvalCtx *ctx,
                       EvalScratch *scratch, Buf *tmp)
{
    buf_puts(out, ",\"fields\":{");
    for (size_t i = 0; action && i < action->n_fields; i++) {
        if (i)
            buf_putc(out, ',');
        buf_json_string(out, action->field_names[i], strlen(action->field_names[i]));
        buf_putc(out, ':');
        Value v = expr_eval(action->field_values[i], ctx, scratch);
        put_value_json(out, &v, tmp);
    }
    buf_putc(out, '}');
}

static void put_event(Buf *out, const Event *ev)
{
    const char *s = ev->line;
    size_t len = ev->line_len;
    while (len && is_blank(*s)) {
        s++;
        len--;
    }
    while (len && is_blank(s[len - 1]))
        len--;
    put_json_checked(out, s, len);
}

/* Steps in pattern order, each with its events oldest first. `nodes` is the match
 * chain copied oldest first. */
static void put_events(Buf *out, const Rule *ast, const MatchNode *const *nodes, size_t n)
{
    buf_puts(out, ",\"events\":{");
    bool any_step = false;
    for (size_t s = 0; s < ast->n_steps; s++) {
        bool any_event = false;
        for (size_t i = 0; i < n; i++) {
            if (nodes[i]->step != s)
                continue;
            if (!any_event) {
                if (any_step)
                    buf_putc(out, ',');
                buf_json_string(out, ast->steps[s].name, strlen(ast->steps[s].name));
                buf_puts(out, ":[");
                any_step = any_event = true;
            } else {
                buf_putc(out, ',');
            }
            put_event(out, nodes[i]->event);
        }
        if (any_event)
            buf_putc(out, ']');
    }
    buf_putc(out, '}');
}

/* The match chain oldest first, in a heap array (*n nodes); NULL on OOM (or empty). */
static const MatchNode **chain_oldest_first(const MatchNode *last, size_t *n)
{
    size_t count = 0;
    for (const MatchNode *m = last; m; m = m->prev)
        count++;
    *n = count;
    const MatchNode **nodes = malloc((count ? count : 1) * sizeof *nodes);
    if (!nodes)
        return NULL;
    size_t i = count;
    for (const MatchNode *m = last; m; m = m->prev)
        nodes[--i] = m;
    return nodes;
}

int alert_render(const CompiledRule *rule, const CompiledAction *action,
                 const Value *key, size_t n_key, const NfaResult *r,
                 EvalScratch *scratch, Buf *out)
{
    Buf tmp = BUF_INIT;
    EvalCtx ctx = {.event = NULL, .match = r->last, .key = key, .n_key = n_key,
                   .time_ms = r->time_ms};
    char when[32];
    time_format_iso(r->time_ms, when);

    buf_puts(out, "{\"rule\":");
    buf_json_string(out, rule->name, strlen(rule->name));
    /* Plain appends: printf would be a large share of the cost of a record. */
    buf_puts(out, ",\"kind\":\"");
    buf_puts(out, alert_kind_name(r->kind));
    buf_puts(out, "\",\"severity\":\"");
    buf_puts(out, alert_severity_name(action ? action->severity : SEV_MEDIUM));
    buf_putc(out, '"');
    put_key(out, rule, key, n_key, &tmp);
    buf_puts(out, ",\"time\":\"");
    buf_puts(out, when);
    buf_putc(out, '"');
    put_message(out, rule, action, &ctx, scratch, &tmp);
    put_fields(out, action, &ctx, scratch, &tmp);
    size_t n_nodes;
    const MatchNode **nodes = chain_oldest_first(r->last, &n_nodes);
    if (nodes)
        put_events(out, rule->ast, nodes, n_nodes);
    else
        out->failed = true;
    free(nodes);
    buf_putc(out, '}');
    bool failed = out->failed || tmp.failed;
    buf_free(&tmp);
    return failed ? -1 : 0;
}

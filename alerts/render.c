/* alerts/render.c — the alert record (RUNTIME.md section 4) as one line of JSON.
 *
 * Owns: alert_render and the text forms of keys, severities and kinds. The record is
 * byte-exact and always valid JSON in valid UTF-8: every piece that comes from data
 * (key values, field values, echoed events not known to be decoded) is checked, and a
 * piece that fails (only possible for hand-built events; the decoder rejects such
 * lines) is written as a JSON string instead, its invalid bytes replaced by U+FFFD.
 *
 * A rule may alert on every other event, so rendering is kept cheap: the record's
 * room is reserved once, constant text goes in a few large pieces, text that needs no
 * escaping is copied after one scan of 8 bytes at a time (the message is built in
 * place and escaped only when it must be), the time is formatted without printf, and
 * the event lines of a result from the engine are not validated again (render.h). */
#include "alerts/render.h"

#include <stdlib.h>
#include <string.h>

#include "base/isotime.h"
#include "runtime/decode.h"

typedef struct Piece {
    const char *text;
    size_t len;
} Piece;

#define PIECE(literal) {literal, sizeof literal - 1}
#define PUT_PIECE(out, literal) buf_append_inline(out, literal, sizeof literal - 1)

/* In Severity order (dsl/ast.h). */
#define SEVERITIES(X) X("info") X("low") X("medium") X("high") X("critical")
#define NAME_OF(sev) sev,
#define MATCH_HEAD(sev) PIECE(",\"kind\":\"match\",\"severity\":\"" sev "\",\"key\":{"),
#define TIMEOUT_HEAD(sev) PIECE(",\"kind\":\"timeout\",\"severity\":\"" sev "\",\"key\":{"),

static const char *const severity_names[] = {SEVERITIES(NAME_OF)};
#define N_SEVERITIES (sizeof severity_names / sizeof severity_names[0])

/* What follows the rule name, by [timeout?][severity]: kind and severity never need
 * escaping, so the whole stretch is one constant. */
static const Piece record_heads[2][N_SEVERITIES] = {
    {SEVERITIES(MATCH_HEAD)},
    {SEVERITIES(TIMEOUT_HEAD)},
};

static size_t severity_index(Severity s)
{
    return (unsigned)s < N_SEVERITIES ? (size_t)s : (size_t)SEV_MEDIUM;
}

const char *alert_severity_name(Severity s)
{
    return severity_names[severity_index(s)];
}

const char *alert_kind_name(NfaResultKind k)
{
    return k == NFA_TIMEOUT ? "timeout" : "match";
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* The raw texts that are valid without a full check: a string with nothing to escape
 * (every key like "u7") or an integer without leading zeros. */
static bool json_plainly_valid(const char *text, size_t len)
{
    if (len >= 2 && text[0] == '"')
        return text[len - 1] == '"' && buf_json_verbatim_len(text + 1, len - 2) == len - 2;
    size_t i = len && text[0] == '-';
    if (i == len)
        return false;
    if (text[i] == '0')
        return i + 1 == len;
    for (; i < len; i++)
        if (text[i] < '0' || text[i] > '9')
            return false;
    return true;
}

static bool json_ok(const char *text, size_t len)
{
    DecodeError derr;
    return json_plainly_valid(text, len) || json_validate(text, len, DECODE_MAX_DEPTH, &derr);
}

/* The text appended to out from `at` on should be valid JSON; if it is not, it is
 * replaced by a JSON string of it (tmp holds the copy). */
static void keep_if_json(Buf *out, size_t at, Buf *tmp)
{
    if (out->failed || json_ok(out->data + at, out->len - at))
        return;
    buf_clear(tmp);
    buf_append(tmp, out->data + at, out->len - at);
    if (tmp->failed) {
        out->failed = true;
        return;
    }
    buf_truncate(out, at);
    buf_json_string(out, tmp->data, tmp->len);
}

static void put_name(Buf *out, const char *name)
{
    buf_json_string(out, name, strlen(name));
}

/* A value as JSON: its original text when it has one (a 19-digit id stays exact),
 * else (or if that text is not valid JSON) value_to_json. */
static void put_value_json(Buf *out, const Value *v, Buf *tmp)
{
    if (v->raw && v->raw_len && json_ok(v->raw, v->raw_len)) {
        buf_append_inline(out, v->raw, v->raw_len);
        return;
    }
    size_t at = out->len;
    value_to_json(v, out);
    keep_if_json(out, at, tmp);
}

/* ---- names escaped once (RecordNames) ---------------------------------------- */

static void put_key_piece(Buf *b, const char *name, bool first)
{
    if (!first)
        buf_putc(b, ',');
    put_name(b, name);
    buf_putc(b, ':');
}

static void put_step_piece(Buf *b, const char *name)
{
    put_name(b, name);
    PUT_PIECE(b, ":[");
}

int record_names_build(RecordNames *names, const CompiledRule *rule)
{
    const Rule *ast = rule->ast;
    memset(names, 0, sizeof *names);
    names->key_ends = malloc((rule->n_keys ? rule->n_keys : 1) * sizeof *names->key_ends);
    names->step_ends = malloc((ast->n_steps ? ast->n_steps : 1) * sizeof *names->step_ends);
    if (!names->key_ends || !names->step_ends)
        return -1;
    put_name(&names->text, rule->name);
    names->name_len = names->text.len;
    for (size_t i = 0; i < rule->n_keys; i++) {
        put_key_piece(&names->text, rule->key_names[i], i == 0);
        names->key_ends[i] = names->text.len;
    }
    for (size_t s = 0; s < ast->n_steps; s++) {
        put_step_piece(&names->text, ast->steps[s].name);
        names->step_ends[s] = names->text.len;
    }
    return names->text.failed ? -1 : 0;
}

void record_names_free(RecordNames *names)
{
    buf_free(&names->text);
    free(names->key_ends);
    free(names->step_ends);
    memset(names, 0, sizeof *names);
}

static void put_key_name(Buf *out, const RecordNames *names, const CompiledRule *rule,
                         size_t i)
{
    if (!names) {
        put_key_piece(out, rule->key_names[i], i == 0);
        return;
    }
    size_t from = i ? names->key_ends[i - 1] : names->name_len;
    buf_append_inline(out, names->text.data + from, names->key_ends[i] - from);
}

static void put_step_name(Buf *out, const RecordNames *names, const CompiledRule *rule,
                          size_t s)
{
    if (!names) {
        put_step_piece(out, rule->ast->steps[s].name);
        return;
    }
    size_t from = s ? names->step_ends[s - 1]
                    : rule->n_keys ? names->key_ends[rule->n_keys - 1] : names->name_len;
    buf_append_inline(out, names->text.data + from, names->step_ends[s] - from);
}

/* {"rule":NAME,"kind":...,"severity":...,"key":{...} */
static void put_head(Buf *out, const CompiledRule *rule, const RecordNames *names,
                     const CompiledAction *action, NfaResultKind kind, const Value *key,
                     size_t n_key, Buf *tmp)
{
    PUT_PIECE(out, "{\"rule\":");
    if (names)
        buf_append_inline(out, names->text.data, names->name_len);
    else
        put_name(out, rule->name);
    const Piece *head = &record_heads[kind == NFA_TIMEOUT]
                                     [severity_index(action ? action->severity : SEV_MEDIUM)];
    buf_append_inline(out, head->text, head->len);
    size_t n = n_key < rule->n_keys ? n_key : rule->n_keys;
    for (size_t i = 0; i < n; i++) {
        put_key_name(out, names, rule, i);
        put_value_json(out, &key[i], tmp);
    }
    buf_putc_inline(out, '}');
}

/* ,"time":"...","message":... */
static void put_time_and_message(Buf *out, const CompiledRule *rule,
                                 const CompiledAction *action, int64_t time_ms,
                                 const EvalCtx *ctx, EvalScratch *scratch, Buf *tmp)
{
    char when[32];
    size_t when_len = time_format_iso(time_ms, when);
    PUT_PIECE(out, ",\"time\":\"");
    buf_append_inline(out, when, when_len);
    if (!action) {
        PUT_PIECE(out, "\",\"message\":");
        put_name(out, rule->name);
        return;
    }
    PUT_PIECE(out, "\",\"message\":\"");
    /* The whole text in place first: a UTF-8 sequence split over two parts stays
     * intact, and text with nothing to escape (the usual case) is never copied. */
    size_t text_at = out->len;
    for (size_t i = 0; i < action->message.n_parts; i++) {
        const CompiledTemplatePart *p = &action->message.parts[i];
        if (p->expr) {
            Value v = expr_eval(p->expr, ctx, scratch);
            value_to_text(&v, out);
        } else if (p->text) {
            buf_append_inline(out, p->text, p->len);
        }
    }
    if (out->failed)
        return;
    size_t text_len = out->len - text_at;
    if (buf_json_verbatim_len(out->data + text_at, text_len) != text_len) {
        buf_clear(tmp);
        buf_append(tmp, out->data + text_at, text_len);
        if (tmp->failed) {
            out->failed = true;
            return;
        }
        buf_truncate(out, text_at - 1);   /* the opening quote too */
        buf_json_string(out, tmp->data, tmp->len);
        return;
    }
    buf_putc_inline(out, '"');
}

static void put_fields(Buf *out, const CompiledAction *action, const EvalCtx *ctx,
                       EvalScratch *scratch, Buf *tmp)
{
    PUT_PIECE(out, ",\"fields\":{");
    for (size_t i = 0; action && i < action->n_fields; i++) {
        if (i)
            buf_putc_inline(out, ',');
        put_name(out, action->field_names[i]);
        buf_putc_inline(out, ':');
        Value v = expr_eval(action->field_values[i], ctx, scratch);
        put_value_json(out, &v, tmp);
    }
    buf_putc_inline(out, '}');
}

static void put_event(Buf *out, const Event *ev, EchoLines echo)
{
    const char *s = ev->line;
    size_t len = ev->line_len;
    while (len && is_blank(*s)) {
        s++;
        len--;
    }
    while (len && is_blank(s[len - 1]))
        len--;
    if (echo == ECHO_DECODED || json_ok(s, len))
        buf_append_inline(out, s, len);
    else
        buf_json_string(out, s, len);
}

/* Steps in pattern order, each with its events oldest first. `nodes` is the match
 * chain copied oldest first. */
static void put_events(Buf *out, const CompiledRule *rule, const RecordNames *names,
                       const MatchNode *const *nodes, size_t n, EchoLines echo)
{
    const Rule *ast = rule->ast;
    PUT_PIECE(out, ",\"events\":{");
    bool any_step = false;
    for (size_t s = 0; s < ast->n_steps; s++) {
        bool any_event = false;
        for (size_t i = 0; i < n; i++) {
            if (nodes[i]->step != s)
                continue;
            if (!any_event) {
                if (any_step)
                    buf_putc_inline(out, ',');
                put_step_name(out, names, rule, s);
                any_step = any_event = true;
            } else {
                buf_putc_inline(out, ',');
            }
            put_event(out, nodes[i]->event, echo);
        }
        if (any_event)
            buf_putc_inline(out, ']');
    }
    buf_putc_inline(out, '}');
}

/* Chains at most this long are copied to the stack, longer ones to the heap. */
#define CHAIN_ON_STACK 16

/* The match chain oldest first (*n nodes): in `room` (CHAIN_ON_STACK of them) when it
 * fits, else in a heap array the caller frees; NULL on allocation failure. */
static const MatchNode **chain_oldest_first(const MatchNode *last, const MatchNode **room,
                                            size_t *n)
{
    size_t count = 0;
    for (const MatchNode *m = last; m; m = m->prev)
        count++;
    *n = count;
    const MatchNode **nodes = count <= CHAIN_ON_STACK ? room : malloc(count * sizeof *nodes);
    if (!nodes)
        return NULL;
    size_t i = count;
    for (const MatchNode *m = last; m; m = m->prev)
        nodes[--i] = m;
    return nodes;
}

/* A generous guess at the record's length, so that it is allocated once: the fixed
 * text, the names, the echoed events and room for a few values. */
static size_t record_size_guess(const CompiledRule *rule, const CompiledAction *action,
                                const MatchNode *const *nodes, size_t n)
{
    size_t size = 160 + 2 * strlen(rule->name) + 48 * rule->n_keys;
    for (size_t i = 0; i < n; i++)
        size += nodes[i]->event->line_len + 24;
    if (action) {
        for (size_t i = 0; i < action->message.n_parts; i++)
            size += action->message.parts[i].len + 24;
        size += 48 * action->n_fields;
    }
    return size;
}

int alert_render_named(const CompiledRule *rule, const RecordNames *names,
                       const CompiledAction *action, const Value *key, size_t n_key,
                       const NfaResult *r, EvalScratch *scratch, EchoLines echo, Buf *out)
{
    const MatchNode *room[CHAIN_ON_STACK];
    size_t n_nodes;
    const MatchNode **nodes = chain_oldest_first(r->last, room, &n_nodes);
    if (!nodes) {
        out->failed = true;
        return -1;
    }
    buf_reserve(out, record_size_guess(rule, action, nodes, n_nodes));

    Buf tmp = BUF_INIT;   /* only for text that must be escaped after all */
    EvalCtx ctx = {.event = NULL, .match = r->last, .key = key, .n_key = n_key,
                   .time_ms = r->time_ms};
    put_head(out, rule, names, action, r->kind, key, n_key, &tmp);
    put_time_and_message(out, rule, action, r->time_ms, &ctx, scratch, &tmp);
    put_fields(out, action, &ctx, scratch, &tmp);
    put_events(out, rule, names, nodes, n_nodes, echo);
    buf_putc_inline(out, '}');
    if (nodes != room)
        free(nodes);
    bool failed = out->failed || tmp.failed;
    buf_free(&tmp);
    return failed ? -1 : 0;
}

int alert_render_echo(const CompiledRule *rule, const CompiledAction *action,
                      const Value *key, size_t n_key, const NfaResult *r,
                      EvalScratch *scratch, EchoLines echo, Buf *out)
{
    return alert_render_named(rule, NULL, action, key, n_key, r, scratch, echo, out);
}

int alert_render(const CompiledRule *rule, const CompiledAction *action,
                 const Value *key, size_t n_key, const NfaResult *r,
                 EvalScratch *scratch, Buf *out)
{
    return alert_render_named(rule, NULL, action, key, n_key, r, scratch, ECHO_CHECKED, out);
}

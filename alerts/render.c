/* alerts/render.c — the alert record (RUNTIME.md section 4) as one line of JSON.
 *
 * Owns: alert_render, RecordNames and the text forms of keys, severities and kinds.
 * The record is byte-exact and always valid JSON in valid UTF-8: every piece that
 * comes from data (key values, field values, echoed events not known to be decoded)
 * is checked, and a piece that fails (only possible for hand-built events; the
 * decoder rejects such lines) is written as a JSON string instead, its invalid bytes
 * replaced by U+FFFD.
 *
 * A rule may alert on every other event, so rendering is kept cheap: a rule's names
 * and each action's record head are escaped once (RecordNames); the stretches whose
 * length is known before they are written (head, keys and time; the events) get their
 * room reserved once and are copied in without a check per piece; the message is
 * built in place and scanned for escapes only when a piece of it is not known to need
 * none; the time is formatted straight into the record, without printf, or copied
 * from the text of its second when the router's TimeCache holds it; and the event
 * lines of a result from the engine are not validated again (render.h). */
#include "alerts/render.h"

#include <stdlib.h>
#include <string.h>

#include "base/isotime.h"
#include "base/utf8.h"
#include "runtime/decode.h"

typedef struct Piece {
    const char *text;
    size_t len;
} Piece;

#define PIECE(literal) {literal, sizeof literal - 1}
#define PUT_PIECE(out, literal) buf_append_inline(out, literal, sizeof literal - 1)

/* Copies n <= 16 bytes as at most two pairs of overlapping loads and stores, where a
 * call of memcpy would cost more than the copy: a record's key values, step names and
 * message values are mostly this short. */
static inline void copy_short(char *p, const char *s, size_t n)
{
    if (n >= 8) {
        uint64_t head, tail;
        memcpy(&head, s, 8);
        memcpy(&tail, s + n - 8, 8);
        memcpy(p, &head, 8);
        memcpy(p + n - 8, &tail, 8);
    } else if (n >= 4) {
        uint32_t head, tail;
        memcpy(&head, s, 4);
        memcpy(&tail, s + n - 4, 4);
        memcpy(p, &head, 4);
        memcpy(p + n - 4, &tail, 4);
    } else if (n) {
        p[0] = s[0];
        p[n / 2] = s[n / 2];
        p[n - 1] = s[n - 1];
    }
}

/* Copies to p in room that a buf_reserve has made: no checks, and no NUL until the
 * end of the stretch (reserved_end); returns the end of the copy. */
static inline char *put_at(char *p, const char *s, size_t n)
{
    if (n <= 16)
        copy_short(p, s, n);
    else
        memcpy(p, s, n);
    return p + n;
}

#define PUT_AT(p, literal) put_at(p, literal, sizeof literal - 1)

/* buf_reserve(out, n), without the call when the room is there already. */
static inline bool room_for(Buf *out, size_t n)
{
    return (!out->failed && out->cap - out->len > n) || buf_reserve(out, n);
}

/* Ends a stretch written with put_at at p. */
static inline void reserved_end(Buf *out, char *p)
{
    *p = '\0';
    out->len = (size_t)(p - out->data);
}

/* buf_append_inline with put_at's copy, for the pieces of a message. */
static inline void put_text(Buf *out, const char *s, size_t n)
{
    if (room_for(out, n))
        reserved_end(out, put_at(out->data + out->len, s, n));
}

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


static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* Whether the body of a quoted string text[0, len) (len >= 8) is plain ASCII with
 * nothing to escape, checked 8 bytes at a time over whole words of the text, its
 * quotes masked out. False also for a false alarm (a borrow from the opening quote's
 * byte), which only sends the text to the exact check. */
static bool quoted_words_plain(const char *text, size_t len)
{
#if JSON_STOPS_EXACT   /* little-endian: the first byte of a word is its lowest */
    uint64_t first = ~UINT64_C(0xff), last = ~(UINT64_C(0xff) << 56);   /* the quotes */
    if (len == 8)   /* one word with both */
        first = last = first & last;
    uint64_t w, stops;
    memcpy(&w, text, sizeof w);
    stops = json_string_stops(w) & first;
    for (size_t i = 8; i + 8 < len; i += 8) {
        memcpy(&w, text + i, sizeof w);
        stops |= json_string_stops(w);
    }
    memcpy(&w, text + len - 8, sizeof w);
    stops |= json_string_stops(w) & last;
    return stops == 0;
#else
    (void)text;
    (void)len;
    return false;
#endif
}

/* Whether the body of the quoted string text[0, len) goes between quotes as it is. */
static bool quoted_body_plain(const char *text, size_t len)
{
    if (len >= 8 && quoted_words_plain(text, len))
        return true;
    return buf_json_verbatim_len(text + 1, len - 2) == len - 2;
}

/* The raw texts that are valid without a full check: a string with nothing to escape
 * (every key like "u7") or an integer without leading zeros. */
static bool json_plainly_valid(const char *text, size_t len)
{
    if (len >= 2 && text[0] == '"')
        return text[len - 1] == '"' && quoted_body_plain(text, len);
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
static bool raw_is_json(const Value *v)
{
    return v->raw && v->raw_len && json_ok(v->raw, v->raw_len);
}

static void put_value_json_made(Buf *out, const Value *v, Buf *tmp)
{
    size_t at = out->len;
    value_to_json(v, out);
    keep_if_json(out, at, tmp);
}

static void put_value_json(Buf *out, const Value *v, Buf *tmp)
{
    if (raw_is_json(v))
        buf_append_inline(out, v->raw, v->raw_len);
    else
        put_value_json_made(out, v, tmp);
}

/* ---- texts escaped once (RecordNames) ----------------------------------------- */

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

/* {"rule":NAME,"kind":...,"severity":...,"key":{ with the name already a JSON string */
static void put_head_pieces(Buf *b, const char *name_json, size_t name_len,
                            NfaResultKind kind, Severity severity)
{
    PUT_PIECE(b, "{\"rule\":");
    buf_append_inline(b, name_json, name_len);
    const Piece *head = &record_heads[kind == NFA_TIMEOUT][severity_index(severity)];
    buf_append_inline(b, head->text, head->len);
}

static bool literals_need_no_escape(const CompiledTemplate *t)
{
    for (size_t i = 0; i < t->n_parts; i++) {
        const CompiledTemplatePart *p = &t->parts[i];
        if (!p->expr && p->text && buf_json_verbatim_len(p->text, p->len) != p->len)
            return false;
    }
    return true;
}

/* The slot of a message part that is one field, else -1 (RecordNames.part_slots). */
static int32_t part_slot(const CompiledTemplatePart *p)
{
    int32_t slot;
    return p->expr && expr_field_slot(p->expr, &slot) && slot >= 0 ? slot : -1;
}

/* The heads of an action (NULL: the default action) at the end of names->text, each
 * followed by the first key's piece, and its parts' slots from names->part_slots[*n_slots]
 * on; name_json is the rule's name as a JSON string, kept elsewhere. */
static void put_action_head(RecordNames *names, RecordHead *head, const CompiledAction *action,
                            const Buf *name_json, const CompiledRule *rule, size_t *n_slots)
{
    static const NfaResultKind kinds[2] = {NFA_MATCH, NFA_TIMEOUT};
    for (size_t k = 0; k < 2; k++) {
        head->at[k] = names->text.len;
        put_head_pieces(&names->text, name_json->data, name_json->len, kinds[k],
                        action ? action->severity : SEV_MEDIUM);
        head->len[k] = names->text.len - head->at[k];
        if (rule->n_keys)
            put_key_piece(&names->text, rule->key_names[0], true);
    }
    head->severity = alert_severity_name(action ? action->severity : SEV_MEDIUM);
    head->slots_at = *n_slots;
    for (size_t i = 0; action && i < action->message.n_parts; i++)
        names->part_slots[(*n_slots)++] = part_slot(&action->message.parts[i]);
    head->plain_literals = !action || literals_need_no_escape(&action->message);
}

/* The parts of all the rule's messages (at least 1, a size to allocate). */
static size_t message_parts(const CompiledRule *rule)
{
    size_t n = 1;
    for (size_t i = 0; i < rule->n_on_match; i++)
        n += rule->on_match[i].message.n_parts;
    for (size_t i = 0; i < rule->n_on_timeout; i++)
        n += rule->on_timeout[i].message.n_parts;
    return n;
}

/* Room for `,"fields":{},"events":{`, `}}` and a NUL. */
#define EVENTS_ROOM 32

int record_names_build(RecordNames *names, const CompiledRule *rule)
{
    const Rule *ast = rule->ast;
    size_t n_heads = 1 + rule->n_on_match + rule->n_on_timeout;
    memset(names, 0, sizeof *names);
    names->key_ends = malloc((rule->n_keys ? rule->n_keys : 1) * sizeof *names->key_ends);
    names->step_ends = malloc((ast->n_steps ? ast->n_steps : 1) * sizeof *names->step_ends);
    names->heads = malloc(n_heads * sizeof *names->heads);
    names->part_slots = malloc(message_parts(rule) * sizeof *names->part_slots);
    if (!names->key_ends || !names->step_ends || !names->heads || !names->part_slots)
        return -1;
    Buf name_json = BUF_INIT;
    put_name(&name_json, rule->name);
    if (name_json.failed) {   /* its data may be NULL: not a piece to copy */
        buf_free(&name_json);
        return -1;
    }
    buf_append(&names->text, name_json.data, name_json.len);
    names->name_len = names->text.len;
    for (size_t i = 0; i < rule->n_keys; i++) {
        put_key_piece(&names->text, rule->key_names[i], i == 0);
        names->key_ends[i] = names->text.len;
    }
    names->key0_len = rule->n_keys ? names->key_ends[0] - names->name_len : 0;
    names->steps_at = names->text.len;
    for (size_t s = 0; s < ast->n_steps; s++) {
        put_step_piece(&names->text, ast->steps[s].name);
        names->step_ends[s] = names->text.len;
    }
    names->events_room = EVENTS_ROOM + names->text.len - names->steps_at + 2 * ast->n_steps;
    RecordHead *head = names->heads;
    size_t n_slots = 0;
    put_action_head(names, head++, NULL, &name_json, rule, &n_slots);
    for (size_t i = 0; i < rule->n_on_match; i++)
        put_action_head(names, head++, &rule->on_match[i], &name_json, rule, &n_slots);
    for (size_t i = 0; i < rule->n_on_timeout; i++)
        put_action_head(names, head++, &rule->on_timeout[i], &name_json, rule, &n_slots);
    bool failed = names->text.failed || name_json.failed;
    buf_free(&name_json);
    return failed ? -1 : 0;
}

void record_names_free(RecordNames *names)
{
    buf_free(&names->text);
    free(names->key_ends);
    free(names->step_ends);
    free(names->heads);
    free(names->part_slots);
    memset(names, 0, sizeof *names);
}

/* The head of `action` (NULL: the default action), or NULL if it is not one of the
 * rule's own actions. */
static const RecordHead *head_of(const RecordNames *names, const CompiledRule *rule,
                                 const CompiledAction *action)
{
    size_t i;
    if (!action)
        return record_heads_of(names, rule, NFA_MATCH, true);
    if (array_index(action, rule->on_match, rule->n_on_match, sizeof *action, &i))
        return &record_heads_of(names, rule, NFA_MATCH, false)[i];
    if (array_index(action, rule->on_timeout, rule->n_on_timeout, sizeof *action, &i))
        return &record_heads_of(names, rule, NFA_TIMEOUT, false)[i];
    return NULL;
}

static size_t key_piece_at(const RecordNames *names, size_t i)
{
    return i ? names->key_ends[i - 1] : names->name_len;
}

static size_t step_piece_at(const RecordNames *names, size_t s)
{
    return s ? names->step_ends[s - 1] : names->steps_at;
}

/* ---- the record --------------------------------------------------------------- */

/* The events of a result, oldest first. */
typedef struct Chain {
    const MatchNode *const *nodes;
    size_t n;
    size_t lines_len;          /* of all their lines */
    bool in_step_order;        /* each node's step is the one before's or later */
    EchoLines echo;
} Chain;

/* Room for `},"time":"`, the time, `","message":"` and a NUL. */
#define TIME_ROOM 64


/* ---- the time, through the cache of its second ------------------------------- */

#define ISO_LEN 24             /* what time_format_iso writes for years 1970..9999 */
#define ISO_MS_AT 20           /* where its milliseconds start: "...:48.667Z" */

/* The cached text of `second` to p (ISO_LEN bytes), if the cache holds it. */
static bool time_cached(TimeCache *tc, int64_t second, char *p)
{
    uint64_t gen = atomic_load_explicit(&tc->gen, memory_order_acquire);
    if (gen & 1 || atomic_load_explicit(&tc->second, memory_order_relaxed) != second)
        return false;
    uint64_t w[3] = {atomic_load_explicit(&tc->words[0], memory_order_relaxed),
                     atomic_load_explicit(&tc->words[1], memory_order_relaxed),
                     atomic_load_explicit(&tc->words[2], memory_order_relaxed)};
    /* the words are read before gen is read again */
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&tc->gen, memory_order_relaxed) != gen)
        return false;
    memcpy(p, w, ISO_LEN);
    return true;
}

/* Keeps text (ISO_LEN bytes) as the cache's second, unless another thread is at it. */
static void time_cache_put(TimeCache *tc, int64_t second, const char *text)
{
    uint64_t gen = atomic_load_explicit(&tc->gen, memory_order_relaxed);
    if (gen & 1 ||
        !atomic_compare_exchange_strong_explicit(&tc->gen, &gen, gen + 1,
                                                 memory_order_relaxed, memory_order_relaxed))
        return;
    /* the odd gen is visible before any word: a reader that reads a new word sees it
     * when it reads gen again */
    atomic_thread_fence(memory_order_release);
    uint64_t w[3];
    memcpy(w, text, ISO_LEN);
    atomic_store_explicit(&tc->second, second, memory_order_relaxed);
    for (size_t i = 0; i < 3; i++)
        atomic_store_explicit(&tc->words[i], w[i], memory_order_relaxed);
    atomic_store_explicit(&tc->gen, gen + 2, memory_order_release);
}

/* time_format_iso(ms, p) without its NUL, through the cache when it has ms's second
 * (tc NULL: none); returns the end of the text. */
static char *put_time(char *p, int64_t ms, TimeCache *tc)
{
    bool usual = tc && ms >= 0;
    int64_t second = ms / 1000;
    if (usual && time_cached(tc, second, p)) {
        unsigned msec = (unsigned)(ms - second * 1000), tens = msec / 10;
        p[ISO_MS_AT] = (char)('0' + tens / 10);
        p[ISO_MS_AT + 1] = (char)('0' + tens % 10);
        p[ISO_MS_AT + 2] = (char)('0' + msec - tens * 10);
        return p + ISO_LEN;   /* the 'Z' came with the text */
    }
    size_t len = time_format_iso(ms, p);
    if (usual && len == ISO_LEN)
        time_cache_put(tc, second, p);
    return p + len;
}

/* {"rule":...,"key":{...},"time":"...","message": (and the message's opening quote
 * when it is a template): one reservation for all of it, redone only after a key
 * value that had to be written otherwise. head NULL: an action not the rule's own. */
static void put_head_and_time(Buf *out, const CompiledRule *rule, const RenderAids *aids,
                              const CompiledAction *action, const NfaResult *r,
                              const Value *key, size_t n_key, Buf *tmp)
{
    const RecordNames *names = aids->names;
    const RecordHead *head = aids->head;
    size_t kind = r->kind == NFA_TIMEOUT;
    size_t n = n_key < rule->n_keys ? n_key : rule->n_keys;
    size_t room = TIME_ROOM + (head ? head->len[kind] : 0) + names->steps_at - names->name_len;
    for (size_t i = 0; i < n; i++)
        room += key[i].raw_len;
    if (!head)
        put_head_pieces(out, names->text.data, names->name_len, r->kind,
                        action->severity);
    if (!room_for(out, room))
        return;
    char *p = out->data + out->len;
    size_t first_key = 0;   /* whose piece is still to write */
    if (head) {   /* the first key's piece comes with it */
        first_key = n > 0;
        p = put_at(p, names->text.data + head->at[kind],
                   head->len[kind] + (first_key ? names->key0_len : 0));
    }
    for (size_t i = 0; i < n; i++) {
        if (i >= first_key) {
            size_t at = key_piece_at(names, i);
            p = put_at(p, names->text.data + at, names->key_ends[i] - at);
        }
        if (raw_is_json(&key[i])) {
            p = put_at(p, key[i].raw, key[i].raw_len);
            continue;
        }
        reserved_end(out, p);
        put_value_json_made(out, &key[i], tmp);
        if (!buf_reserve(out, room))   /* more than what is left: simpler, as rare */
            return;
        p = out->data + out->len;
    }
    p = PUT_AT(p, "},\"time\":\"");
    p = put_time(p, r->time_ms, aids->times);
    if (action)
        p = PUT_AT(p, "\",\"message\":\"");
    else
        p = PUT_AT(p, "\",\"message\":");
    reserved_end(out, p);
}

/* Whether [text, text + len) lies in the line of an event of the chain: text the
 * decoder has validated, when the chain's lines come from it. */
static bool in_event_line(const Chain *c, const char *text, size_t len)
{
    uintptr_t at = (uintptr_t)text;
    for (size_t i = c->n; i-- > 0;) {   /* newest first: bare fields read the last */
        const Event *ev = c->nodes[i]->event;
        uintptr_t from = (uintptr_t)ev->line;
        if (at >= from && at - from <= ev->line_len && len <= ev->line_len - (at - from))
            return true;
    }
    return false;
}

/* Appends v as template text (value_to_text). Returns true when that text is known
 * to go between JSON quotes as it is: the text of null, booleans, times, durations
 * and formatted numbers is plain ASCII; a number's raw text, or a string that had no
 * escapes (its bytes are its raw text's between the quotes), is plain when it lies in
 * a decoded line. Anything else is scanned with the whole message. */
static bool put_text_value(Buf *out, const Value *v, const Chain *c)
{
    bool decoded = c->echo == ECHO_DECODED;
    switch (v->type) {
    case V_STR:
        put_text(out, v->s, v->len);
        return decoded && v->raw && v->s == v->raw + 1 && v->raw_len == (size_t)v->len + 2 &&
               in_event_line(c, v->raw, v->raw_len);
    case V_NUM:
        if (!v->raw)
            break;
        put_text(out, v->raw, v->raw_len);
        return decoded && in_event_line(c, v->raw, v->raw_len);
    case V_OBJ:
    case V_ARR:
        value_to_text(v, out);
        return false;
    default:
        break;
    }
    value_to_text(v, out);
    return true;
}

static const Value no_value;   /* all zero: V_MISSING */

/* The value of a message part with an expression: a field's (slot >= 0, see
 * part_slot) is read in place, what it evaluates to in an action (the slot of the
 * match's last event, missing when that has none); others are evaluated into *tmp. */
static const Value *part_value(const CompiledTemplatePart *p, int32_t slot,
                               const EvalCtx *ctx, EvalScratch *scratch, Value *tmp)
{
    if (slot < 0) {
        *tmp = expr_eval(p->expr, ctx, scratch);
        return tmp;
    }
    const Event *ev = ctx->match ? ctx->match->event : NULL;
    return ev && (uint32_t)slot < ev->n_slots ? &ev->slots[slot] : &no_value;
}

/* The message after `"message":`: the rule's name for the default action, else the
 * template's text, its opening quote already written. */
static void put_message(Buf *out, const RecordNames *names, const RecordHead *head,
                        const CompiledAction *action, const EvalCtx *ctx,
                        EvalScratch *scratch, const Chain *chain, Buf *tmp)
{
    if (!action) {
        buf_append_inline(out, names->text.data, names->name_len);
        return;
    }
    /* The whole text in place first: a UTF-8 sequence split over two parts stays
     * intact, and text with nothing to escape (the usual case) is never copied. */
    size_t text_at = out->len;
    bool plain = head && head->plain_literals;
    const int32_t *slots = head ? names->part_slots + head->slots_at : NULL;
    for (size_t i = 0; i < action->message.n_parts; i++) {
        const CompiledTemplatePart *p = &action->message.parts[i];
        if (p->expr) {
            Value v;
            plain = put_text_value(out, part_value(p, slots ? slots[i] : -1, ctx, scratch, &v),
                                   chain) && plain;
        } else if (p->text) {
            put_text(out, p->text, p->len);
        }
    }
    if (out->failed)
        return;
    size_t text_len = out->len - text_at;
    /* pieces that each need no escaping need none together */
    if (!plain && buf_json_verbatim_len(out->data + text_at, text_len) != text_len) {
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

static bool has_fields(const CompiledAction *action)
{
    return action && action->n_fields;
}

/* The action's `fields` when it has some (put_events writes an empty one). */
static void put_fields(Buf *out, const CompiledAction *action, const EvalCtx *ctx,
                       EvalScratch *scratch, Buf *tmp)
{
    if (!has_fields(action))
        return;
    PUT_PIECE(out, ",\"fields\":{");
    for (size_t i = 0; i < action->n_fields; i++) {
        if (i)
            buf_putc_inline(out, ',');
        put_name(out, action->field_names[i]);
        buf_putc_inline(out, ':');
        Value v = expr_eval(action->field_values[i], ctx, scratch);
        put_value_json(out, &v, tmp);
    }
    buf_putc_inline(out, '}');
}

/* One echoed event at p, in reserved room; returns the end of it. A line that has to
 * be written as a string goes through out, which then gets `room` again; NULL if that
 * reservation failed. */
static inline char *put_event(Buf *out, char *p, const Event *ev, EchoLines echo, size_t room)
{
    const char *s = ev->line;
    size_t len = ev->line_len;
    if (echo == ECHO_DECODED)   /* the decoder trimmed and validated it */
        return put_at(p, s, len);
    while (len && is_blank(*s)) {
        s++;
        len--;
    }
    while (len && is_blank(s[len - 1]))
        len--;
    if (json_ok(s, len))
        return put_at(p, s, len);
    reserved_end(out, p);
    buf_json_string(out, s, len);
    return buf_reserve(out, room) ? out->data + out->len : NULL;
}

/* `"STEP":[` at p, after the `],` that closes the step before unless it is the first. */
static inline char *open_step(char *p, const RecordNames *names, size_t s, bool first)
{
    if (!first) {
        *p++ = ']';
        *p++ = ',';
    }
    size_t at = step_piece_at(names, s);
    return put_at(p, names->text.data + at, names->step_ends[s] - at);
}

/* The events at p, in a chain whose steps come in pattern order: one pass. */
static char *put_events_in_order(Buf *out, char *p, const RecordNames *names, const Chain *c,
                                 size_t room)
{
    for (size_t i = 0; i < c->n && p; i++) {
        size_t s = c->nodes[i]->step;
        if (i && s == c->nodes[i - 1]->step)
            *p++ = ',';
        else
            p = open_step(p, names, s, i == 0);
        p = put_event(out, p, c->nodes[i]->event, c->echo, room);
    }
    return p;
}

/* The events at p, any chain: a pass over it per step. *any: a step was opened. */
static char *put_events_by_step(Buf *out, char *p, const CompiledRule *rule,
                                const RecordNames *names, const Chain *c, size_t room,
                                bool *any)
{
    for (size_t s = 0; s < rule->ast->n_steps; s++) {
        bool opened = false;
        for (size_t i = 0; i < c->n; i++) {
            if (c->nodes[i]->step != s)
                continue;
            if (opened) {
                *p++ = ',';
            } else {
                p = open_step(p, names, s, !*any);
                opened = *any = true;
            }
            if (!(p = put_event(out, p, c->nodes[i]->event, c->echo, room)))
                return NULL;
        }
    }
    return p;
}

/* ,"events":{...}} to the record's end (after an empty `fields` when the action has
 * none, in the same copy): steps in pattern order, each with its events oldest first,
 * in one reservation (redone only after a line written as a string). */
static void put_events(Buf *out, const CompiledRule *rule, const RecordNames *names,
                       const Chain *chain, bool no_fields)
{
    size_t room = names->events_room + chain->lines_len + chain->n;
    if (!room_for(out, room))
        return;
    char *p = out->data + out->len;
    p = no_fields ? PUT_AT(p, ",\"fields\":{},\"events\":{") : PUT_AT(p, ",\"events\":{");
    bool any = chain->in_step_order && chain->n > 0;
    if (chain->in_step_order)
        p = put_events_in_order(out, p, names, chain, room);
    else
        p = put_events_by_step(out, p, rule, names, chain, room, &any);
    if (!p)
        return;
    if (any)
        *p++ = ']';
    p = PUT_AT(p, "}}");
    reserved_end(out, p);
}

/* An event's line is echoed at the record's end, after the head, time and message:
 * fetched now, its cache misses (an event waiting for a timeout is long out of the
 * cache) overlap that work instead of stalling the copy. */
static inline void prefetch_line(const Event *ev)
{
    __builtin_prefetch(ev->line);
    if (ev->line_len > 64)
        __builtin_prefetch(ev->line + ev->line_len - 1);
}

/* Chains at most this long are copied to the stack, longer ones to the heap. */
#define CHAIN_ON_STACK 16

/* The match chain oldest first (c->n nodes): at the end of `room` (CHAIN_ON_STACK of
 * them) when it fits, else in a heap array the caller frees; NULL on allocation
 * failure. Also adds up the lengths of their lines and sees whether their steps are
 * in order (and within the rule's). */
static const MatchNode **chain_oldest_first(const MatchNode *last, const MatchNode **room,
                                            size_t n_steps, Chain *c)
{
    size_t count = 0, len = 0;
    bool in_order = true;
    const MatchNode **at = room + CHAIN_ON_STACK;
    for (const MatchNode *m = last; m; m = m->prev) {
        if (count < CHAIN_ON_STACK)
            *--at = m;
        count++;
        len += m->event->line_len;
        prefetch_line(m->event);
        in_order = in_order && m->step < n_steps && (!m->prev || m->prev->step <= m->step);
    }
    c->n = count;
    c->lines_len = len;
    c->in_step_order = in_order;
    if (count <= CHAIN_ON_STACK)
        return at;
    const MatchNode **nodes = malloc(count * sizeof *nodes);
    if (!nodes)
        return NULL;
    size_t i = count;
    for (const MatchNode *m = last; m; m = m->prev)
        nodes[--i] = m;
    return nodes;
}

int alert_render_named(const CompiledRule *rule, const RenderAids *aids,
                       const CompiledAction *action, const Value *key, size_t n_key,
                       const NfaResult *r, EvalScratch *scratch, EchoLines echo, Buf *out)
{
    const RecordNames *names = aids->names;
    const MatchNode *room[CHAIN_ON_STACK];
    Chain chain = {.echo = echo};
    chain.nodes = chain_oldest_first(r->last, room, rule->ast->n_steps, &chain);
    if (!chain.nodes) {
        out->failed = true;
        return -1;
    }
    Buf tmp = BUF_INIT;   /* only for text that must be escaped after all */
    EvalCtx ctx = {.event = NULL, .match = r->last, .key = key, .n_key = n_key,
                   .time_ms = r->time_ms};
    /* A template that ran out of memory evaluated to null, which is not its text: a
     * failed allocation of the record, not a record saying "null". */
    uint64_t oom_before = expr_scratch_out_of_memory(scratch);
    put_head_and_time(out, rule, aids, action, r, key, n_key, &tmp);
    put_message(out, names, aids->head, action, &ctx, scratch, &chain, &tmp);
    put_fields(out, action, &ctx, scratch, &tmp);
    if (expr_scratch_out_of_memory(scratch) != oom_before)
        out->failed = true;
    put_events(out, rule, names, &chain, !has_fields(action));
    if (chain.n > CHAIN_ON_STACK)
        free((void *)chain.nodes);
    bool failed = out->failed || tmp.failed;
    if (tmp.data)
        buf_free(&tmp);
    return failed ? -1 : 0;
}

int alert_render_echo(const CompiledRule *rule, const CompiledAction *action,
                      const Value *key, size_t n_key, const NfaResult *r,
                      EvalScratch *scratch, EchoLines echo, Buf *out)
{
    RecordNames names;
    int rc = record_names_build(&names, rule);
    RenderAids aids = {&names, NULL, NULL};
    if (rc == 0) {
        aids.head = head_of(&names, rule, action);
        rc = alert_render_named(rule, &aids, action, key, n_key, r, scratch, echo, out);
    } else {
        out->failed = true;
    }
    record_names_free(&names);
    return rc;
}

int alert_render(const CompiledRule *rule, const CompiledAction *action,
                 const Value *key, size_t n_key, const NfaResult *r,
                 EvalScratch *scratch, Buf *out)
{
    return alert_render_echo(rule, action, key, n_key, r, scratch, ECHO_CHECKED, out);
}

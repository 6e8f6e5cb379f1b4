/* alerts/render.h — the record renderer's entry point inside alerts/.
 *
 * Owns: RecordNames (a rule's texts escaped once) and TimeCache (the text of an alert
 * time's second, shared by the delivering threads). Declares what alert_render
 * (alerts.h) and alerts_deliver share. The echoed event lines are the largest part
 * of a record; a line that decoder_decode produced is valid JSON in valid UTF-8 by
 * construction (it validated every byte), so checking it again while rendering is
 * wasted work. */
#ifndef VIGIL_ALERTS_RENDER_H
#define VIGIL_ALERTS_RENDER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "alerts/alerts.h"

typedef enum {
    ECHO_CHECKED,    /* events may be built by hand: a line that is not valid JSON is
                        written as a JSON string (what alert_render does) */
    ECHO_DECODED,    /* every event of the result came from decoder_decode, as every
                        engine event does: lines are echoed as they are, and a message
                        value read from such a line (a number, or a string that had no
                        escapes) goes into the message without being scanned again */
} EchoLines;

/* alert_render with the choice of trusting the echoed event lines. */
int alert_render_echo(const CompiledRule *rule, const CompiledAction *action,
                      const Value *key, size_t n_key, const NfaResult *r,
                      EvalScratch *scratch, EchoLines echo, Buf *out);

/* The index of `elem` in array[0, n) of elements of `size` bytes, if it is one of
 * them (compared as integers: it may point anywhere). */
static inline bool array_index(const void *elem, const void *array, size_t n, size_t size,
                               size_t *index)
{
    uintptr_t at = (uintptr_t)elem, first = (uintptr_t)array;
    size_t i = (at - first) / size;   /* one division: the product tells the rest */
    if (at < first || i >= n || i * size != at - first)
        return false;
    *index = i;
    return true;
}

/* An action's record head, `{"rule":NAME,"kind":KIND,"severity":SEVERITY,"key":{`,
 * for each kind of result, and what its message's literal text needs. Each head is
 * followed in the text by the first key's `"NAME":` (RecordNames.key0_len bytes, none
 * without keys), so that a record's start up to its first key value is one copy. */
typedef struct RecordHead {
    size_t at[2], len[2];      /* in RecordNames.text, by kind: [0] match, [1] timeout */
    const char *severity;      /* alert_severity_name of the action's severity */
    size_t slots_at;           /* its message parts' slots: RecordNames.part_slots[at...] */
    bool plain_literals;       /* no literal part of its message needs escaping */
} RecordHead;

/* A rule's texts as they appear in its records, escaped once per rule set instead of
 * once per alert: the rule's name as a JSON string, each key name as `"NAME":` (after
 * a comma from the second on), each step name as `"NAME":[` and each action's head.
 * Immutable once built, so threads delivering alerts share them. */
typedef struct RecordNames {
    Buf text;                  /* every piece, back to back; owned */
    size_t name_len;           /* the rule's name: text.data[0, name_len) */
    size_t *key_ends;          /* heap: key i is [key_ends[i-1] (or name_len), key_ends[i]) */
    size_t key0_len;           /* the first key's piece (0 without keys) */
    size_t steps_at;           /* where the steps start, after the keys */
    size_t *step_ends;         /* heap: step s is [step_ends[s-1] (or steps_at), step_ends[s]) */
    size_t events_room;        /* a record's "events" but for the lines: every step's
                                  piece and its `],`, and what surrounds them */
    RecordHead *heads;         /* heap: the default action's, then on_match's and
                                  on_timeout's in order */
    int32_t *part_slots;       /* heap: for each part of each head's message, the slot of
                                  a part that is one field (expr_field_slot), read from
                                  the last event without evaluating it; else -1 */
} RecordNames;

/* 0, or -1 on allocation failure (then *names is empty and may be freed). */
int record_names_build(RecordNames *names, const CompiledRule *rule);
void record_names_free(RecordNames *names);

/* The heads of the actions a result of `kind` runs, in the rule's order (head i is
 * action i's); with use_default, the default action's alone. */
static inline const RecordHead *record_heads_of(const RecordNames *names,
                                                const CompiledRule *rule, NfaResultKind kind,
                                                bool use_default)
{
    if (use_default)
        return names->heads;
    return names->heads + 1 + (kind == NFA_TIMEOUT ? rule->n_on_match : 0);
}

/* The text of the last second an alert's time fell in, for the threads that deliver
 * to share: most alerts of a busy stream fall in the second of the one before, and
 * formatting a date costs several times a copy. Only times that time_format_iso
 * writes in 24 bytes ("2023-11-14T22:13:48.667Z": years 1970 to 9999) are kept.
 * `second` and the words are read and written as a seqlock on `gen`: odd while a
 * writer is at them, bumped twice per write, so a reader that sees the same even gen
 * before and after reading them read one writer's whole text (keying the lock by
 * `second` alone would let two writes, of another second and back, pass unseen in
 * the middle of a read); a writer that finds gen odd leaves the cache alone. */
typedef struct TimeCache {
    _Atomic uint64_t gen;         /* even: stable; odd: being written */
    _Atomic int64_t second;       /* ms / 1000 of the text, or TIME_CACHE_NONE */
    _Atomic uint64_t words[3];    /* time_format_iso's 24 bytes of a time in it */
} TimeCache;

#define TIME_CACHE_NONE INT64_C(-1)

static inline void time_cache_init(TimeCache *tc)
{
    atomic_init(&tc->gen, 0);
    atomic_init(&tc->second, TIME_CACHE_NONE);
    for (size_t i = 0; i < 3; i++)
        atomic_init(&tc->words[i], 0);
}

/* What alert_render_named is given besides the alert: the rule's texts escaped once
 * (names built for the rule), the action's head in them (record_heads_of; NULL: an
 * action that is not one of the rule's own, a modified copy, which still renders
 * right, only slower) and the cache of times (NULL: none). */
typedef struct RenderAids {
    const RecordNames *names;
    const RecordHead *head;
    TimeCache *times;
} RenderAids;

/* alert_render_echo with the aids. */
int alert_render_named(const CompiledRule *rule, const RenderAids *aids,
                       const CompiledAction *action, const Value *key, size_t n_key,
                       const NfaResult *r, EvalScratch *scratch, EchoLines echo, Buf *out);

#endif

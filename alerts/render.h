/* alerts/render.h — the record renderer's entry point inside alerts/.
 *
 * Owns: RecordNames (a rule's texts escaped once). Declares what alert_render
 * (alerts.h) and alerts_deliver share. The echoed event lines are the largest part
 * of a record; a line that decoder_decode produced is valid JSON in valid UTF-8 by
 * construction (it validated every byte), so checking it again while rendering is
 * wasted work. */
#ifndef VIGIL_ALERTS_RENDER_H
#define VIGIL_ALERTS_RENDER_H

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
    if (at < first || (at - first) % size || (at - first) / size >= n)
        return false;
    *index = (at - first) / size;
    return true;
}

/* An action's record head, `{"rule":NAME,"kind":KIND,"severity":SEVERITY,"key":{`,
 * for each kind of result, and what its message's literal text needs. Each head is
 * followed in the text by the first key's `"NAME":` (RecordNames.key0_len bytes, none
 * without keys), so that a record's start up to its first key value is one copy. */
typedef struct RecordHead {
    size_t at[2], len[2];      /* in RecordNames.text, by kind: [0] match, [1] timeout */
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
    RecordHead *heads;         /* heap: the default action's, then on_match's and
                                  on_timeout's in order */
} RecordNames;

/* 0, or -1 on allocation failure (then *names is empty and may be freed). */
int record_names_build(RecordNames *names, const CompiledRule *rule);
void record_names_free(RecordNames *names);
/* alert_render_echo with the rule's texts already escaped (names built for `rule`).
 * An action that is not one of the rule's own (a modified copy) still renders right,
 * only a little slower. */
int alert_render_named(const CompiledRule *rule, const RecordNames *names,
                       const CompiledAction *action, const Value *key, size_t n_key,
                       const NfaResult *r, EvalScratch *scratch, EchoLines echo, Buf *out);

#endif

/* alerts/render.h — the record renderer's entry point inside alerts/.
 *
 * Owns: RecordNames (a rule's names escaped once). Declares what alert_render
 * (alerts.h) and alerts_deliver share. The echoed event lines are the largest part
 * of a record; a line that decoder_decode produced is valid JSON in valid UTF-8 by
 * construction (it validated every byte), so checking it again while rendering is
 * wasted work. */
#ifndef VIGIL_ALERTS_RENDER_H
#define VIGIL_ALERTS_RENDER_H

#include "alerts/alerts.h"

typedef enum {
    ECHO_CHECKED,    /* events may be built by hand: a line that is not valid JSON is
                        written as a JSON string (what alert_render does) */
    ECHO_DECODED,    /* every event of the result came from decoder_decode, as every
                        engine event does: lines are echoed as they are */
} EchoLines;

/* alert_render with the choice of trusting the echoed event lines. */
int alert_render_echo(const CompiledRule *rule, const CompiledAction *action,
                      const Value *key, size_t n_key, const NfaResult *r,
                      EvalScratch *scratch, EchoLines echo, Buf *out);

/* The names of a rule as they appear in its records, escaped once per rule set
 * instead of once per alert: the rule's name as a JSON string, each key name as
 * `"NAME":` and each step name as `"NAME":[`. Immutable once built, so threads
 * delivering alerts share them. */
typedef struct RecordNames {
    Buf text;                  /* every piece, back to back; owned */
    size_t name_len;           /* the rule's name: text.data[0, name_len) */
    size_t *key_ends;          /* heap: key i is [key_ends[i-1] (or name_len), key_ends[i]) */
    size_t *step_ends;         /* heap: the steps, after the keys, the same way */
} RecordNames;

/* 0, or -1 on allocation failure (then *names is empty and may be freed). */
int record_names_build(RecordNames *names, const CompiledRule *rule);
void record_names_free(RecordNames *names);
/* alert_render_echo with the rule's names already escaped (names built for `rule`). */
int alert_render_named(const CompiledRule *rule, const RecordNames *names,
                       const CompiledAction *action, const Value *key, size_t n_key,
                       const NfaResult *r, EvalScratch *scratch, EchoLines echo, Buf *out);

#endif

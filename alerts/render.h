/* alerts/render.h — the record renderer's entry point inside alerts/.
 *
 * Owns nothing: declares what alert_render (alerts.h) and alerts_deliver share. The
 * echoed event lines are the largest part of a record; a line that decoder_decode
 * produced is valid JSON in valid UTF-8 by construction (it validated every byte),
 * so checking it again while rendering is wasted work. */
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

#endif

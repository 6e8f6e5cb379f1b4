/* runtime/decode.h — JSON lines to Events, touching each byte once.
 *
 * Validates the whole line as RFC 8259 JSON in UTF-8 (one object), and extracts only
 * the fields in the FieldTable into the event's slots: strings decoded (escapes,
 * surrogate pairs) into the event's string room, numbers parsed, objects and arrays
 * kept as raw text; every value keeps its original JSON text. No DOM is built.
 * A duplicated member name: the last one wins, as in most JSON parsers. */
#ifndef VIGIL_RUNTIME_DECODE_H
#define VIGIL_RUNTIME_DECODE_H

#include <stdbool.h>
#include <stddef.h>

#include "nfa/event.h"

#define DECODE_MAX_DEPTH 64

typedef struct DecodeError {
    const char *reason;   /* static text, e.g. "invalid UTF-8", "expected ':' after member name" */
    size_t offset;        /* byte offset in the line where it was detected */
} DecodeError;

typedef struct Decoder Decoder;   /* lookup structure built from the field table */

/* The table must outlive the decoder. NULL on allocation failure. */
Decoder *decoder_new(const FieldTable *fields, size_t max_depth);
void decoder_free(Decoder *d);
/* Events come from this cache from now on (NULL: malloc), and the decoder's own
 * releases go back to it; it must outlive the decoder's use of it, on one thread. */
void decoder_set_cache(Decoder *d, EventCache *cache);
/* A new Event (refs = 1, id/time/origin left for the caller), or NULL with *err set
 * (reason "out of memory" on allocation failure). A trailing "\r" is accepted. */
Event *decoder_decode(Decoder *d, const char *line, size_t len, DecodeError *err);
/* Validates any JSON text (a whole document, any value at top level). */
bool json_validate(const char *text, size_t len, size_t max_depth, DecodeError *err);

#endif

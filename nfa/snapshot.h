/* nfa/snapshot.h — the byte encoding of checkpoints, and one key's matcher state in it.
 *
 * Owns: the primitive encoding every checkpoint section uses (unsigned LEB128 varints,
 * zigzag for signed numbers, length-prefixed byte strings) and the serialization of an
 * NfaKey: its MatchNode chains, each node written once (so prefixes shared by several
 * partial matches are shared again after restore), then its live and held-back runs
 * referring to them. Events are not written here: the caller numbers them
 * (SnapEventIndex) and hands them back by number on restore (SnapEventLookup), so one
 * event held by many keys and rules is stored once per checkpoint.
 *
 * A SnapReader never reads past its end: a short or malformed input sets `bad` and
 * later reads return zeros, so a decoder checks once at the end of a section. */
#ifndef VIGIL_NFA_SNAPSHOT_H
#define VIGIL_NFA_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "nfa/event.h"
#include "nfa/nfa.h"

/* ---- writing (appends to a Buf; its `failed` flag reports allocation failure) ---- */

void snap_put_u64(Buf *b, uint64_t v);
void snap_put_i64(Buf *b, int64_t v);
void snap_put_bytes(Buf *b, const void *data, size_t len);
void snap_put_str(Buf *b, const char *s);   /* NULL is written as "" */

/* ---- reading --------------------------------------------------------------- */

typedef struct SnapReader {
    const unsigned char *p, *end;   /* borrowed */
    bool bad;                       /* ran past the end or met a malformed number */
} SnapReader;

void snap_reader_init(SnapReader *r, const void *data, size_t len);
uint64_t snap_get_u64(SnapReader *r);
int64_t snap_get_i64(SnapReader *r);
/* A byte string, borrowed from the input; NULL (len 0) when bad. */
const char *snap_get_bytes(SnapReader *r, size_t *len);
/* A count of items that each take at least min_bytes: bad if the rest cannot hold
 * them, so a corrupt count never makes the caller allocate absurd amounts. */
size_t snap_get_count(SnapReader *r, size_t min_bytes);
static inline bool snap_at_end(const SnapReader *r) { return r->p == r->end; }

/* ---- one key's matcher state ------------------------------------------------ */

/* The caller's number for an event (stable within one checkpoint); UINT64_MAX on
 * allocation failure. */
typedef uint64_t (*SnapEventIndex)(void *user, const Event *ev);
/* The event with that number, decoded for this key's thread (borrowed: the restore
 * takes its own references), or NULL if there is none. */
typedef Event *(*SnapEventLookup)(void *user, uint64_t index);

/* Appends the partial and held-back matches of `key` (NULL: an idle key). -1 on
 * allocation failure. */
int nfa_key_snapshot(const Nfa *nfa, const NfaKey *key, Buf *out, SnapEventIndex index,
                     void *user);
/* Reads what nfa_key_snapshot wrote into *key (NULL if it held nothing), counting its
 * partial matches in counters->partials_live. The automaton must be the one the state
 * was written with (same rule fingerprint); a state or step out of range is an error.
 * -1 with *err (static text) on malformed input or allocation failure. */
int nfa_key_restore(const Nfa *nfa, SnapReader *r, NfaKey **key, NfaCounters *counters,
                    SnapEventLookup lookup, void *user, const char **err);

#endif

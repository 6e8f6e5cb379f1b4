/* tests/nfadiff.h — what the matcher's differential tests share (test_nfa_fast:
 * fast paths against the general path; test_nfa_undue: an undue event against a due
 * one): a seeded generator, generated events, each side's log of results, and the
 * comparisons that fail the running test with the case's rule text. Tests only. */
#ifndef VIGIL_TESTS_NFADIFF_H
#define VIGIL_TESTS_NFADIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/buf.h"
#include "nfa/event.h"
#include "nfa/nfa.h"
#include "runtime/decode.h"

/* xorshift: the same seed gives the same case on every machine; *x never 0. */
uint64_t nfadiff_rand(uint64_t *x);
/* 0 .. n-1 */
unsigned nfadiff_pick(uint64_t *x, unsigned n);

/* {"ts":t,"type":"a"|"b"|"c","v":0..n_values-1} decoded by dec, with id and time set;
 * the caller owns the reference. */
Event *nfadiff_event(Decoder *dec, uint64_t *x, int64_t t, uint64_t id, unsigned n_values);

/* Appends r to log as one line: kind@time, then step:event id of each node. */
void nfadiff_log_result(Buf *log, const NfaResult *r);

bool nfadiff_same_counters(const NfaCounters *a, const NfaCounters *b);

/* Fails the test unless the two logs are equal, naming the case (text), the call or
 * event number `at` and the sides' names. */
void nfadiff_assert_same_log(const char *text, size_t at, const Buf *a, const char *a_name,
                             const Buf *b, const char *b_name);

#endif

/* tests/partkeys.h — the partition entries the timer tests work on: real entries, made
 * in a table as the shard makes them (they hold no hash, so tests cannot fake one),
 * under the numbered keys "k0", "k1", ... (names that are prefixes of each other, and
 * of several lengths). Header-only, like checkmain.h. */
#ifndef VIGIL_TESTS_PARTKEYS_H
#define VIGIL_TESTS_PARTKEYS_H

#include <check.h>
#include <stdio.h>

#include "base/hash.h"
#include "runtime/partition.h"

/* Adds keys "k0" .. "k<n-1>" to t, e[i] the entry of "k<i>", each with room for one
 * slot and none used, as the shard makes a record for a rule's first state; fails the
 * running test on allocation failure. */
static inline void test_part_add_numbered(PartTable *t, PartEntry **e, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char name[24];
        int len = snprintf(name, sizeof name, "k%zu", i);
        e[i] = part_add(t, name, (size_t)len, part_hash(name, (size_t)len), 1);
        ck_assert_ptr_nonnull(e[i]);
    }
}

#endif

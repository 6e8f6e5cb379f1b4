# tests: the look-ahead helpers of the shard's prefetching (see tests/local.mk)
check_PROGRAMS += tests/test_prefetch
TESTS += tests/test_prefetch
tests_test_prefetch_SOURCES = tests/test_prefetch.c
tests_test_prefetch_CFLAGS = $(TEST_CFLAGS)
tests_test_prefetch_LDADD = $(TEST_LIBS)

# the partition table's slots and entry pool (with tests/oomwrap: a record's move
# whose allocation fails)
check_PROGRAMS += tests/test_partition
TESTS += tests/test_partition
tests_test_partition_SOURCES = tests/test_partition.c $(OOM_SOURCES)
tests_test_partition_CFLAGS = $(TEST_CFLAGS)
tests_test_partition_LDFLAGS = $(OOM_WRAP_FLAGS)
tests_test_partition_LDADD = $(TEST_LIBS)


# the shard told the event likely to come next (shard_event_ahead): true and wrong
# hints change nothing; the hash computed ahead (part_key_hash_guess)
check_PROGRAMS += tests/test_lookahead
TESTS += tests/test_lookahead
tests_test_lookahead_SOURCES = tests/test_lookahead.c tests/rulesutil.c tests/rulesutil.h
tests_test_lookahead_CFLAGS = $(TEST_CFLAGS)
tests_test_lookahead_LDADD = $(TEST_LIBS)

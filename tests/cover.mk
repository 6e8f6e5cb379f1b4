# tests: cases found missing by measuring branch coverage (see tests/local.mk)
check_PROGRAMS += tests/test_route_cover
TESTS += tests/test_route_cover
tests_test_route_cover_SOURCES = tests/test_route_cover.c tests/rulesutil.c tests/rulesutil.h
tests_test_route_cover_CFLAGS = $(TEST_CFLAGS)
tests_test_route_cover_LDADD = $(TEST_LIBS)

check_PROGRAMS += tests/test_nfa_cover
TESTS += tests/test_nfa_cover
tests_test_nfa_cover_SOURCES = tests/test_nfa_cover.c tests/test_nfa_harness.c tests/test_nfa_harness.h
tests_test_nfa_cover_CFLAGS = $(TEST_CFLAGS)
tests_test_nfa_cover_LDADD = $(TEST_LIBS)

check_PROGRAMS += tests/test_partition_cover
TESTS += tests/test_partition_cover
tests_test_partition_cover_SOURCES = tests/test_partition_cover.c
tests_test_partition_cover_CFLAGS = $(TEST_CFLAGS)
tests_test_partition_cover_LDADD = $(TEST_LIBS)

check_PROGRAMS += tests/test_checkpoint_cover
TESTS += tests/test_checkpoint_cover
tests_test_checkpoint_cover_SOURCES = tests/test_checkpoint_cover.c tests/rulesutil.c tests/rulesutil.h
tests_test_checkpoint_cover_CFLAGS = $(TEST_CFLAGS)
tests_test_checkpoint_cover_LDADD = $(TEST_LIBS)

check_PROGRAMS += tests/test_shard_cover
TESTS += tests/test_shard_cover
tests_test_shard_cover_SOURCES = tests/test_shard_cover.c tests/rulesutil.c tests/rulesutil.h
tests_test_shard_cover_CFLAGS = $(TEST_CFLAGS)
tests_test_shard_cover_LDADD = $(TEST_LIBS)

# tests: the look-ahead helpers of the shard's prefetching (see tests/local.mk)
check_PROGRAMS += tests/test_prefetch
TESTS += tests/test_prefetch
tests_test_prefetch_SOURCES = tests/test_prefetch.c
tests_test_prefetch_CFLAGS = $(TEST_CFLAGS)
tests_test_prefetch_LDADD = $(TEST_LIBS)

# tests: the end of input (see tests/local.mk): what the matcher says of a key's end,
# and the shard's bulk end checked against firing every timer in order
check_PROGRAMS += tests/test_nfa_end
TESTS += tests/test_nfa_end
tests_test_nfa_end_SOURCES = tests/test_nfa_end.c $(NFA_HARNESS)
tests_test_nfa_end_CFLAGS = $(TEST_CFLAGS)
tests_test_nfa_end_LDADD = $(TEST_LIBS)

check_PROGRAMS += tests/test_end_flush
TESTS += tests/test_end_flush
tests_test_end_flush_SOURCES = tests/test_end_flush.c tests/rulesutil.c tests/rulesutil.h
tests_test_end_flush_CFLAGS = $(TEST_CFLAGS)
tests_test_end_flush_LDADD = $(TEST_LIBS)

# tests: the matcher's fast paths against its general path (see tests/local.mk)
check_PROGRAMS += tests/test_nfa_fast
TESTS += tests/test_nfa_fast
tests_test_nfa_fast_SOURCES = tests/test_nfa_fast.c $(NFA_DIFF) $(TEST_UTIL)
tests_test_nfa_fast_CFLAGS = $(TEST_CFLAGS)
tests_test_nfa_fast_LDADD = $(TEST_LIBS)

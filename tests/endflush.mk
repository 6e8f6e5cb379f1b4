# tests: the end of input (see tests/local.mk): what the matcher says of a key's end
check_PROGRAMS += tests/test_nfa_end
TESTS += tests/test_nfa_end
tests_test_nfa_end_SOURCES = tests/test_nfa_end.c $(NFA_HARNESS)
tests_test_nfa_end_CFLAGS = $(TEST_CFLAGS)
tests_test_nfa_end_LDADD = $(TEST_LIBS)

# tests: nfa (see tests/local.mk)
NFA_HARNESS = tests/test_nfa_harness.c tests/test_nfa_harness.h

check_PROGRAMS += tests/test_nfa_conformance tests/test_nfa_semantics tests/test_nfa_memory tests/test_nfa_explain
TESTS += tests/test_nfa_conformance tests/test_nfa_semantics tests/test_nfa_memory tests/test_nfa_explain

tests_test_nfa_conformance_SOURCES = tests/test_nfa_conformance.c $(NFA_HARNESS) $(TEST_UTIL)
tests_test_nfa_conformance_CFLAGS = $(TEST_CFLAGS)
tests_test_nfa_conformance_LDADD = $(TEST_LIBS)

tests_test_nfa_semantics_SOURCES = tests/test_nfa_semantics.c $(NFA_HARNESS)
tests_test_nfa_semantics_CFLAGS = $(TEST_CFLAGS)
tests_test_nfa_semantics_LDADD = $(TEST_LIBS)

tests_test_nfa_memory_SOURCES = tests/test_nfa_memory.c $(NFA_HARNESS)
tests_test_nfa_memory_CFLAGS = $(TEST_CFLAGS)
tests_test_nfa_memory_LDADD = $(TEST_LIBS)

tests_test_nfa_explain_SOURCES = tests/test_nfa_explain.c $(NFA_HARNESS) $(TEST_UTIL)
tests_test_nfa_explain_CFLAGS = $(TEST_CFLAGS)
tests_test_nfa_explain_LDADD = $(TEST_LIBS)

check_PROGRAMS += tests/test_slab
TESTS += tests/test_slab
tests_test_slab_SOURCES = tests/test_slab.c
tests_test_slab_CFLAGS = $(TEST_CFLAGS)
tests_test_slab_LDADD = $(TEST_LIBS)

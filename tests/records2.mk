# tests: the record layout's own paths (see tests/local.mk) — an event into a slot
# whose time is later (nfa_key_event_in_undue), timeouts nobody sees handled late, and
# entries with room for one slot
# the matcher's differential tests' shared pieces (also tests/matchfast.mk)
NFA_DIFF = tests/nfadiff.c tests/nfadiff.h

check_PROGRAMS += tests/test_nfa_undue
TESTS += tests/test_nfa_undue
tests_test_nfa_undue_SOURCES = tests/test_nfa_undue.c $(NFA_DIFF) $(TEST_UTIL)
tests_test_nfa_undue_CFLAGS = $(TEST_CFLAGS)
tests_test_nfa_undue_LDADD = $(TEST_LIBS)

RECORD_RUN = tests/recordrun.c tests/recordrun.h tests/rulesutil.c tests/rulesutil.h

check_PROGRAMS += tests/test_lazy tests/test_single_slot
TESTS += tests/test_lazy tests/test_single_slot
tests_test_lazy_SOURCES = tests/test_lazy.c $(RECORD_RUN)
tests_test_lazy_CFLAGS = $(TEST_CFLAGS)
tests_test_lazy_LDADD = $(TEST_LIBS)
tests_test_single_slot_SOURCES = tests/test_single_slot.c $(RECORD_RUN)
tests_test_single_slot_CFLAGS = $(TEST_CFLAGS)
tests_test_single_slot_LDADD = $(TEST_LIBS)

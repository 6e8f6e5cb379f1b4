# tests: rule sharing (see tests/local.mk) — every rule's state for one key's bytes
# lives in one record with one timer; each rule must still behave as if it ran alone
check_PROGRAMS += tests/test_records
TESTS += tests/test_records
tests_test_records_SOURCES = tests/test_records.c tests/rulesutil.c tests/rulesutil.h
tests_test_records_CFLAGS = $(TEST_CFLAGS)
tests_test_records_LDADD = $(TEST_LIBS)

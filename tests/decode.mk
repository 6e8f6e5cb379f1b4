# tests: decode (see tests/local.mk)
check_PROGRAMS += tests/test_decode tests/test_evtime
TESTS += tests/test_decode tests/test_evtime
tests_test_decode_SOURCES = tests/test_decode.c $(TEST_UTIL)
tests_test_decode_CFLAGS = $(TEST_CFLAGS)
tests_test_decode_LDADD = $(TEST_LIBS)
tests_test_evtime_SOURCES = tests/test_evtime.c $(TEST_UTIL)
tests_test_evtime_CFLAGS = $(TEST_CFLAGS)
tests_test_evtime_LDADD = $(TEST_LIBS)
check_PROGRAMS += tests/test_input
TESTS += tests/test_input
tests_test_input_SOURCES = tests/test_input.c
tests_test_input_CFLAGS = $(TEST_CFLAGS)
tests_test_input_LDADD = $(TEST_LIBS)
EXTRA_DIST += docs/json-conformance.md

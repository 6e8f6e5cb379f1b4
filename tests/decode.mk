# tests: decode (see tests/local.mk)
check_PROGRAMS += tests/test_decode tests/test_evtime
TESTS += tests/test_decode tests/test_evtime
tests_test_decode_SOURCES = tests/test_decode.c
tests_test_decode_CFLAGS = $(TEST_CFLAGS)
tests_test_decode_LDADD = $(TEST_LIBS)
tests_test_evtime_SOURCES = tests/test_evtime.c
tests_test_evtime_CFLAGS = $(TEST_CFLAGS)
tests_test_evtime_LDADD = $(TEST_LIBS)

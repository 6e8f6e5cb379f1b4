# tests: speed structures (see tests/local.mk)
check_PROGRAMS += tests/test_speed
TESTS += tests/test_speed
tests_test_speed_SOURCES = tests/test_speed.c
tests_test_speed_CFLAGS = $(TEST_CFLAGS)
tests_test_speed_LDADD = $(TEST_LIBS)

# tests: speed structures (see tests/local.mk)
check_PROGRAMS += tests/test_speed
TESTS += tests/test_speed
tests_test_speed_SOURCES = tests/test_speed.c
tests_test_speed_CFLAGS = $(TEST_CFLAGS)
tests_test_speed_LDADD = $(TEST_LIBS)

# the per-rule timers (sorted rings + heap) against a sorted-array model
check_PROGRAMS += tests/test_deadline
TESTS += tests/test_deadline
tests_test_deadline_SOURCES = tests/test_deadline.c
tests_test_deadline_CFLAGS = $(TEST_CFLAGS)
tests_test_deadline_LDADD = $(TEST_LIBS)

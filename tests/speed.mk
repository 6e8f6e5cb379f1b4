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
# the same tests on timers built with 8-bit sequence numbers (rings of at most 128
# slots), so that rings renumber their slots and overflow to the heap all the time
check_PROGRAMS += tests/test_deadline_seq
TESTS += tests/test_deadline_seq
tests_test_deadline_seq_SOURCES = tests/test_deadline.c runtime/deadline.c
tests_test_deadline_seq_CFLAGS = $(TEST_CFLAGS) -DDEADLINE_SEQ_BITS=8
tests_test_deadline_seq_LDADD = $(TEST_LIBS)

# tests: vigil run --workers 2 when an allocation fails on any thread (see
# tests/local.mk). Allocations fail in turn, counted over every thread
# (tests/oomwrap.h), each run in a child (tests/oomcmd.h).
check_PROGRAMS += tests/test_workers_oom
TESTS += tests/test_workers_oom
tests_test_workers_oom_SOURCES = tests/test_workers_oom.c \
	tests/oomevents.c tests/oomevents.h $(RUN_OOM_SOURCES)
tests_test_workers_oom_CFLAGS = $(TEST_CFLAGS)
tests_test_workers_oom_LDFLAGS = $(OOM_WRAP_FLAGS)
tests_test_workers_oom_LDADD = $(TEST_LIBS)

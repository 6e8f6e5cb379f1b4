# tests: vigil run --state when an allocation fails (see tests/local.mk): checkpoints
# written, a checkpoint restored, with one worker and two (the hot reloads are in
# tests/cli_oom.mk). Allocations fail in turn, counted over every thread
# (tests/oomwrap.h), each run in a child (tests/oomcmd.h); tests/oomfeed.h feeds
# standard input around a stop or a reload.
STATE_OOM_SOURCES = tests/oomfeed.c tests/oomfeed.h tests/oomevents.c tests/oomevents.h \
	tests/sockutil.c tests/sockutil.h $(RUN_OOM_SOURCES)
check_PROGRAMS += tests/test_state_oom
TESTS += tests/test_state_oom
tests_test_state_oom_SOURCES = tests/test_state_oom.c $(STATE_OOM_SOURCES)
tests_test_state_oom_CFLAGS = $(TEST_CFLAGS)
tests_test_state_oom_LDFLAGS = $(OOM_WRAP_FLAGS)
tests_test_state_oom_LDADD = $(TEST_LIBS)
# the same source with the stops (SIGTERM) instead, to keep each program short
check_PROGRAMS += tests/test_stop_oom
TESTS += tests/test_stop_oom
tests_test_stop_oom_SOURCES = tests/test_state_oom.c $(STATE_OOM_SOURCES)
tests_test_stop_oom_CFLAGS = $(TEST_CFLAGS) -DSTATE_OOM_STOPS
tests_test_stop_oom_LDFLAGS = $(OOM_WRAP_FLAGS)
tests_test_stop_oom_LDADD = $(TEST_LIBS)

# tests: vigil fmt, vigil test and vigil run's loading when an allocation fails (see tests/local.mk). Every
# allocation of each command fails in turn (tests/oomwrap.h), each run in a child
# (tests/oomcmd.h).
# What a test that runs `vigil run` in tests/oomcmd.h's children needs: the runner, its
# scratch folders and vigil run's sources that are not in libvigil (workers_oom.mk and
# state_oom.mk use it too).
RUN_OOM_SOURCES = tests/oomcmd.c tests/oomcmd.h tests/tmptree.c tests/tmptree.h \
	cli/cmd_run.c cli/rejects.c cli/rejects.h cli/run_state.c cli/run_state.h \
	cli/watch.c cli/watch.h cli/control.c cli/control.h \
	$(OOM_SOURCES) $(TEST_UTIL)
check_PROGRAMS += tests/test_cli_oom
TESTS += tests/test_cli_oom
tests_test_cli_oom_SOURCES = tests/test_cli_oom.c \
	cli/cmd_fmt.c cli/cmd_test.c cli/json_tree.c cli/json_tree.h $(RUN_OOM_SOURCES)
tests_test_cli_oom_CFLAGS = $(TEST_CFLAGS)
tests_test_cli_oom_LDFLAGS = $(OOM_WRAP_FLAGS)
tests_test_cli_oom_LDADD = $(TEST_LIBS)
# Hot reloads with an allocation failing (tests/oomreload.h): asked on the control
# socket, by SIGHUP, by --watch, on processing time, and with --state.
RELOAD_OOM_SOURCES = tests/oomreload.c tests/oomreload.h $(STATE_OOM_SOURCES)
check_PROGRAMS += tests/test_reload_oom
TESTS += tests/test_reload_oom
tests_test_reload_oom_SOURCES = tests/test_reload_oom.c $(RELOAD_OOM_SOURCES)
tests_test_reload_oom_CFLAGS = $(TEST_CFLAGS)
tests_test_reload_oom_LDFLAGS = $(OOM_WRAP_FLAGS)
tests_test_reload_oom_LDADD = $(TEST_LIBS)
check_PROGRAMS += tests/test_hup_oom
TESTS += tests/test_hup_oom
tests_test_hup_oom_SOURCES = tests/test_hup_oom.c $(RELOAD_OOM_SOURCES)
tests_test_hup_oom_CFLAGS = $(TEST_CFLAGS)
tests_test_hup_oom_LDFLAGS = $(OOM_WRAP_FLAGS)
tests_test_hup_oom_LDADD = $(TEST_LIBS)
check_PROGRAMS += tests/test_watch_oom
TESTS += tests/test_watch_oom
tests_test_watch_oom_SOURCES = tests/test_watch_oom.c $(RELOAD_OOM_SOURCES)
tests_test_watch_oom_CFLAGS = $(TEST_CFLAGS)
tests_test_watch_oom_LDFLAGS = $(OOM_WRAP_FLAGS)
tests_test_watch_oom_LDADD = $(TEST_LIBS)
check_PROGRAMS += tests/test_arrival_oom
TESTS += tests/test_arrival_oom
tests_test_arrival_oom_SOURCES = tests/test_arrival_oom.c $(RELOAD_OOM_SOURCES)
tests_test_arrival_oom_CFLAGS = $(TEST_CFLAGS)
tests_test_arrival_oom_LDFLAGS = $(OOM_WRAP_FLAGS)
tests_test_arrival_oom_LDADD = $(TEST_LIBS)
check_PROGRAMS += tests/test_reload_state_oom
TESTS += tests/test_reload_state_oom
tests_test_reload_state_oom_SOURCES = tests/test_reload_state_oom.c $(RELOAD_OOM_SOURCES)
tests_test_reload_state_oom_CFLAGS = $(TEST_CFLAGS)
tests_test_reload_state_oom_LDFLAGS = $(OOM_WRAP_FLAGS)
tests_test_reload_state_oom_LDADD = $(TEST_LIBS)

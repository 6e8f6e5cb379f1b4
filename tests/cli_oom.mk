# tests: vigil fmt, vigil test and vigil run's loading when an allocation fails (see tests/local.mk). Every
# allocation of each command fails in turn (tests/oomwrap.h), each run in a child
# (tests/oomcmd.h).
check_PROGRAMS += tests/test_cli_oom
TESTS += tests/test_cli_oom
tests_test_cli_oom_SOURCES = tests/test_cli_oom.c tests/oomcmd.c tests/oomcmd.h \
	tests/tmptree.c tests/tmptree.h \
	cli/cmd_fmt.c cli/cmd_test.c cli/json_tree.c cli/json_tree.h \
	cli/cmd_run.c cli/rejects.c cli/rejects.h cli/run_state.c cli/run_state.h \
	cli/watch.c cli/watch.h cli/control.c cli/control.h \
	$(OOM_SOURCES) $(TEST_UTIL)
tests_test_cli_oom_CFLAGS = $(TEST_CFLAGS)
tests_test_cli_oom_LDFLAGS = $(OOM_WRAP_FLAGS)
tests_test_cli_oom_LDADD = $(TEST_LIBS)

# tests: vigil fmt and vigil test when an allocation fails (see tests/local.mk). Every
# allocation of each command fails in turn (tests/oomwrap.h), each run in a child
# (tests/oomcmd.h).
check_PROGRAMS += tests/test_cli_oom
TESTS += tests/test_cli_oom
tests_test_cli_oom_SOURCES = tests/test_cli_oom.c tests/oomcmd.c tests/oomcmd.h \
	cli/cmd_fmt.c cli/cmd_test.c cli/json_tree.c cli/json_tree.h \
	$(OOM_SOURCES) $(TEST_UTIL)
tests_test_cli_oom_CFLAGS = $(TEST_CFLAGS)
tests_test_cli_oom_LDFLAGS = $(OOM_WRAP_FLAGS)
tests_test_cli_oom_LDADD = $(TEST_LIBS)

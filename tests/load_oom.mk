# tests: loading rules when an allocation fails (see tests/local.mk). Every
# allocation of ruleset_load fails in turn (tests/oomwrap.h).
check_PROGRAMS += tests/test_load_oom
TESTS += tests/test_load_oom
tests_test_load_oom_SOURCES = tests/test_load_oom.c tests/oomcmd.c tests/oomcmd.h \
	tests/tmptree.c tests/tmptree.h \
	cli/cmd_check.c $(OOM_SOURCES) $(TEST_UTIL)
tests_test_load_oom_CFLAGS = $(TEST_CFLAGS)
tests_test_load_oom_LDFLAGS = $(OOM_WRAP_FLAGS)
tests_test_load_oom_LDADD = $(TEST_LIBS)

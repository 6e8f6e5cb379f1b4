# tests: restoring from a checkpoint when allocations fail (see tests/local.mk). Every
# allocation of a restore fails in turn (tests/oomwrap.h).
check_PROGRAMS += tests/test_restore_oom
TESTS += tests/test_restore_oom
tests_test_restore_oom_SOURCES = tests/test_restore_oom.c tests/rulesutil.c \
	tests/rulesutil.h $(OOM_SOURCES) $(TEST_UTIL)
tests_test_restore_oom_CFLAGS = $(TEST_CFLAGS)
tests_test_restore_oom_LDFLAGS = $(OOM_WRAP_FLAGS)
tests_test_restore_oom_LDADD = $(TEST_LIBS)

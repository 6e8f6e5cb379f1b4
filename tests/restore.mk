# tests: restoring from a checkpoint when allocations fail (see tests/local.mk). Every
# allocation of a restore fails in turn: the wrappers in the test replace malloc,
# calloc and realloc for libvigil.a (GNU ld's --wrap).
check_PROGRAMS += tests/test_restore_oom
TESTS += tests/test_restore_oom
tests_test_restore_oom_SOURCES = tests/test_restore_oom.c tests/rulesutil.c \
	tests/rulesutil.h $(TEST_UTIL)
tests_test_restore_oom_CFLAGS = $(TEST_CFLAGS)
tests_test_restore_oom_LDFLAGS = -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc
tests_test_restore_oom_LDADD = $(TEST_LIBS)

# tests: loading rules when an allocation fails (see tests/local.mk). Every
# allocation of ruleset_load fails in turn: the wrappers in the test replace malloc,
# calloc and realloc for libvigil.a (GNU ld's --wrap).
check_PROGRAMS += tests/test_load_oom
TESTS += tests/test_load_oom
tests_test_load_oom_SOURCES = tests/test_load_oom.c cli/cmd_check.c $(TEST_UTIL)
tests_test_load_oom_CFLAGS = $(TEST_CFLAGS)
tests_test_load_oom_LDFLAGS = -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc
tests_test_load_oom_LDADD = $(TEST_LIBS)

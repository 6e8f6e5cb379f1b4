# tests: rules (see tests/local.mk)
check_PROGRAMS += tests/test_ruleset
TESTS += tests/test_ruleset
tests_test_ruleset_SOURCES = tests/test_ruleset.c $(TEST_UTIL)
tests_test_ruleset_CFLAGS = $(TEST_CFLAGS)
tests_test_ruleset_LDADD = $(TEST_LIBS)

check_PROGRAMS += tests/test_route
TESTS += tests/test_route
tests_test_route_SOURCES = tests/test_route.c tests/rulesutil.c tests/rulesutil.h
tests_test_route_CFLAGS = $(TEST_CFLAGS)
tests_test_route_LDADD = $(TEST_LIBS)

check_PROGRAMS += tests/test_relevance
TESTS += tests/test_relevance
tests_test_relevance_SOURCES = tests/test_relevance.c tests/rulesutil.c tests/rulesutil.h
tests_test_relevance_CFLAGS = $(TEST_CFLAGS)
tests_test_relevance_LDADD = $(TEST_LIBS)

check_PROGRAMS += tests/test_relevance_diff
TESTS += tests/test_relevance_diff
tests_test_relevance_diff_SOURCES = tests/test_relevance_diff.c tests/rulesutil.c \
	tests/rulesutil.h $(TEST_UTIL)
tests_test_relevance_diff_CFLAGS = $(TEST_CFLAGS)
tests_test_relevance_diff_LDADD = $(TEST_LIBS)
EXTRA_DIST += tests/data/relevance/shapes.cep tests/data/relevance/shapes.events.jsonl

# Every allocation of a compile fails in turn (tests/oomwrap.h).
check_PROGRAMS += tests/test_relevance_oom
TESTS += tests/test_relevance_oom
tests_test_relevance_oom_SOURCES = tests/test_relevance_oom.c $(OOM_SOURCES) $(TEST_UTIL)
tests_test_relevance_oom_CFLAGS = $(TEST_CFLAGS)
tests_test_relevance_oom_LDFLAGS = $(OOM_WRAP_FLAGS)
tests_test_relevance_oom_LDADD = $(TEST_LIBS)

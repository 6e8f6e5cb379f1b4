# tests: resource limits and backpressure (see tests/local.mk) — the reorder buffer's
# cap, the --max-memory budget, input held back by a pause, and through the built
# vigil: a budget under 200,000 new keys, small budgets beside the reorder buffer,
# a flood of a Unix socket with slow workers.
check_PROGRAMS += tests/limits/test_limits tests/limits/flood
TESTS += tests/limits/test_limits tests/limits/memory.sh tests/limits/small_budget.sh \
	tests/limits/backpressure.sh
tests_limits_test_limits_SOURCES = tests/limits/test_limits.c tests/rulesutil.c tests/rulesutil.h
tests_limits_test_limits_CFLAGS = $(TEST_CFLAGS)
tests_limits_test_limits_LDADD = $(TEST_LIBS)
tests_limits_flood_SOURCES = tests/limits/flood.c tests/sockutil.c tests/sockutil.h
tests_limits_flood_LDADD = $(LDADD_VIGIL)
EXTRA_DIST += tests/limits/memory.sh tests/limits/small_budget.sh tests/limits/backpressure.sh \
	tests/limits/data/slow.cep tests/limits/data/keys.cep

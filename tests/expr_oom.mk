# tests: compiling and evaluating expressions when an allocation fails (see
# tests/local.mk): evaluations count what ran out (expr_scratch_out_of_memory), and a
# rule set's compile that runs out is no rule error (tests/oomwrap.h, tests/oomcmd.h).
check_PROGRAMS += tests/test_expr_oom
TESTS += tests/test_expr_oom
tests_test_expr_oom_SOURCES = tests/test_expr_oom.c tests/oomcmd.c tests/oomcmd.h \
	$(OOM_SOURCES) $(TEST_UTIL)
tests_test_expr_oom_CFLAGS = $(TEST_CFLAGS)
tests_test_expr_oom_LDFLAGS = $(OOM_WRAP_FLAGS)
tests_test_expr_oom_LDADD = $(TEST_LIBS)

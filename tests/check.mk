# tests: check (see tests/local.mk) — diagnostics, semantic checks, loading, fmt.
check_PROGRAMS += tests/test_diag tests/test_check tests/test_fmt
TESTS += tests/test_diag tests/test_check tests/test_fmt
tests_test_diag_SOURCES = tests/test_diag.c $(TEST_UTIL)
tests_test_diag_CFLAGS = $(TEST_CFLAGS)
tests_test_diag_LDADD = $(TEST_LIBS)
tests_test_check_SOURCES = tests/test_check.c $(TEST_UTIL)
tests_test_check_CFLAGS = $(TEST_CFLAGS)
tests_test_check_LDADD = $(TEST_LIBS)
tests_test_fmt_SOURCES = tests/test_fmt.c $(TEST_UTIL)
tests_test_fmt_CFLAGS = $(TEST_CFLAGS)
tests_test_fmt_LDADD = $(TEST_LIBS)

# The rules fuzz corpus replayed as a plain test (tests/fuzz/replay.c, shared).
check_PROGRAMS += tests/test_fuzz_rules_replay
TESTS += tests/test_fuzz_rules_replay
tests_test_fuzz_rules_replay_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_rules.c $(TEST_UTIL)
tests_test_fuzz_rules_replay_CFLAGS = $(TEST_CFLAGS) -DFUZZ_CORPUS='"rules"'
tests_test_fuzz_rules_replay_LDADD = $(TEST_LIBS)

EXTRA_DIST += tests/data/check tests/fuzz/corpus/rules tests/fuzz/rules.dict

# libFuzzer target for the front end (configure --enable-fuzzing, CC=clang):
#   SRC/tests/fuzz/run-fuzzers.sh SECONDS   (from the build folder)
if FUZZING
noinst_PROGRAMS += tests/fuzz/fuzz_rules
tests_fuzz_fuzz_rules_SOURCES = tests/fuzz/fuzz_rules.c
tests_fuzz_fuzz_rules_LDADD = $(LDADD_VIGIL)
tests_fuzz_fuzz_rules_LDFLAGS = $(AM_LDFLAGS) -fsanitize=fuzzer
endif

# `vigil fmt` on folders, end to end (tests/e2e/lib.sh runs $(top_builddir)/vigil).
TESTS += tests/e2e/fmt.sh
EXTRA_DIST += tests/e2e/fmt.sh

# tests: state (see tests/local.mk) — checkpoints and crash recovery (vigil run --state)
check_PROGRAMS += tests/test_checkpoint
TESTS += tests/test_checkpoint
tests_test_checkpoint_SOURCES = tests/test_checkpoint.c tests/rulesutil.c tests/rulesutil.h
tests_test_checkpoint_CFLAGS = $(TEST_CFLAGS)
tests_test_checkpoint_LDADD = $(TEST_LIBS)
# End-to-end recovery tests; they run $(top_builddir)/vigil.
TESTS += tests/state/crash.sh tests/state/corrupt.sh tests/state/reload.sh \
	tests/state/counters.sh
EXTRA_DIST += tests/state/lib.sh tests/state/crash.sh tests/state/corrupt.sh \
	tests/state/reload.sh tests/state/counters.sh tests/data/state/v1/README \
	tests/data/state/v1/rules.cep tests/data/state/v1/checkpoint.1

# tests: fuzz (see tests/local.mk) — libFuzzer targets for the decoder, the whole
# run-time path and the checkpoint restore, and their corpora replayed as plain tests
# in every build.
check_PROGRAMS += tests/test_fuzz_decode_replay tests/test_fuzz_pipeline_replay
TESTS += tests/test_fuzz_decode_replay tests/test_fuzz_pipeline_replay
tests_test_fuzz_decode_replay_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_decode.c $(TEST_UTIL)
tests_test_fuzz_decode_replay_CFLAGS = $(TEST_CFLAGS) -DFUZZ_CORPUS='"decode"'
tests_test_fuzz_decode_replay_LDADD = $(TEST_LIBS)
tests_test_fuzz_pipeline_replay_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_pipeline.c \
	tests/fuzz/fuzz_alerts.h $(TEST_UTIL)
tests_test_fuzz_pipeline_replay_CFLAGS = $(TEST_CFLAGS) -DFUZZ_CORPUS='"pipeline"'
tests_test_fuzz_pipeline_replay_LDADD = $(TEST_LIBS)

# fuzz_restore reads its rules from the source tree: top_srcdir when the harness sets
# it, else the tree it was built from.
FUZZ_RESTORE_CFLAGS = -DFUZZ_SRCDIR='"$(abs_top_srcdir)"'
FUZZ_RESTORE_SOURCES = tests/fuzz/fuzz_restore.c tests/fuzz/fuzz_restore.h \
	tests/fuzz/fuzz_alerts.h
check_PROGRAMS += tests/test_fuzz_restore_replay tests/test_fuzz_restore_seeds
TESTS += tests/test_fuzz_restore_replay tests/test_fuzz_restore_seeds
tests_test_fuzz_restore_replay_SOURCES = tests/fuzz/replay.c $(FUZZ_RESTORE_SOURCES) \
	$(TEST_UTIL)
tests_test_fuzz_restore_replay_CFLAGS = $(TEST_CFLAGS) $(FUZZ_RESTORE_CFLAGS) \
	-DFUZZ_CORPUS='"restore"'
tests_test_fuzz_restore_replay_LDADD = $(TEST_LIBS)
tests_test_fuzz_restore_seeds_SOURCES = tests/fuzz/restore_seeds.c $(FUZZ_RESTORE_SOURCES) \
	$(TEST_UTIL)
tests_test_fuzz_restore_seeds_CFLAGS = $(TEST_CFLAGS) $(FUZZ_RESTORE_CFLAGS)
tests_test_fuzz_restore_seeds_LDADD = $(TEST_LIBS)

EXTRA_DIST += tests/fuzz/corpus/decode tests/fuzz/corpus/pipeline \
	tests/fuzz/run-fuzzers.sh tests/fuzz/pipeline.dict tests/fuzz/corpus/restore \
	tests/fuzz/restore

# libFuzzer targets (configure --enable-fuzzing, CC=clang); run them all with
#   SRC/tests/fuzz/run-fuzzers.sh SECONDS   (from the build folder)
if FUZZING
noinst_PROGRAMS += tests/fuzz/fuzz_decode tests/fuzz/fuzz_pipeline tests/fuzz/fuzz_restore
tests_fuzz_fuzz_decode_SOURCES = tests/fuzz/fuzz_decode.c
tests_fuzz_fuzz_decode_LDADD = $(LDADD_VIGIL)
tests_fuzz_fuzz_decode_LDFLAGS = $(AM_LDFLAGS) -fsanitize=fuzzer
tests_fuzz_fuzz_pipeline_SOURCES = tests/fuzz/fuzz_pipeline.c tests/fuzz/fuzz_alerts.h
tests_fuzz_fuzz_pipeline_LDADD = $(LDADD_VIGIL)
tests_fuzz_fuzz_pipeline_LDFLAGS = $(AM_LDFLAGS) -fsanitize=fuzzer
tests_fuzz_fuzz_restore_SOURCES = $(FUZZ_RESTORE_SOURCES)
tests_fuzz_fuzz_restore_CFLAGS = $(AM_CFLAGS) $(FUZZ_RESTORE_CFLAGS)
tests_fuzz_fuzz_restore_LDADD = $(LDADD_VIGIL)
tests_fuzz_fuzz_restore_LDFLAGS = $(AM_LDFLAGS) -fsanitize=fuzzer
endif

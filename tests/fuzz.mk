# tests: fuzz (see tests/local.mk) — libFuzzer targets for the decoder and the whole
# run-time path, and their corpora replayed as plain tests in every build.
check_PROGRAMS += tests/test_fuzz_decode_replay tests/test_fuzz_pipeline_replay
TESTS += tests/test_fuzz_decode_replay tests/test_fuzz_pipeline_replay
tests_test_fuzz_decode_replay_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_decode.c $(TEST_UTIL)
tests_test_fuzz_decode_replay_CFLAGS = $(TEST_CFLAGS) -DFUZZ_CORPUS='"decode"'
tests_test_fuzz_decode_replay_LDADD = $(TEST_LIBS)
tests_test_fuzz_pipeline_replay_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz_pipeline.c \
	$(TEST_UTIL)
tests_test_fuzz_pipeline_replay_CFLAGS = $(TEST_CFLAGS) -DFUZZ_CORPUS='"pipeline"'
tests_test_fuzz_pipeline_replay_LDADD = $(TEST_LIBS)

EXTRA_DIST += tests/fuzz/corpus/decode tests/fuzz/corpus/pipeline \
	tests/fuzz/run-fuzzers.sh tests/fuzz/pipeline.dict

# libFuzzer targets (configure --enable-fuzzing, CC=clang); run them all with
#   SRC/tests/fuzz/run-fuzzers.sh SECONDS   (from the build folder)
if FUZZING
noinst_PROGRAMS += tests/fuzz/fuzz_decode tests/fuzz/fuzz_pipeline
tests_fuzz_fuzz_decode_SOURCES = tests/fuzz/fuzz_decode.c
tests_fuzz_fuzz_decode_LDADD = $(LDADD_VIGIL)
tests_fuzz_fuzz_decode_LDFLAGS = $(AM_LDFLAGS) -fsanitize=fuzzer
tests_fuzz_fuzz_pipeline_SOURCES = tests/fuzz/fuzz_pipeline.c
tests_fuzz_fuzz_pipeline_LDADD = $(LDADD_VIGIL)
tests_fuzz_fuzz_pipeline_LDFLAGS = $(AM_LDFLAGS) -fsanitize=fuzzer
endif

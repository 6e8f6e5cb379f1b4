# tests: e2e (see tests/local.mk) — engine unit tests and end-to-end shell tests
check_PROGRAMS += tests/test_engine
TESTS += tests/test_engine
tests_test_engine_SOURCES = tests/test_engine.c
tests_test_engine_CFLAGS = $(TEST_CFLAGS)
tests_test_engine_LDADD = $(TEST_LIBS)
check_PROGRAMS += tests/test_engine_json
TESTS += tests/test_engine_json
tests_test_engine_json_SOURCES = tests/test_engine_json.c cli/json_tree.c cli/json_tree.h
tests_test_engine_json_CFLAGS = $(TEST_CFLAGS)
tests_test_engine_json_LDADD = $(TEST_LIBS)

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
check_PROGRAMS += tests/test_engine_run
TESTS += tests/test_engine_run
tests_test_engine_run_SOURCES = tests/test_engine_run.c tests/rulesutil.c tests/rulesutil.h
tests_test_engine_run_CFLAGS = $(TEST_CFLAGS)
tests_test_engine_run_LDADD = $(TEST_LIBS)
# End-to-end shell tests; they run $(top_builddir)/vigil.
check_PROGRAMS += tests/e2e/ctl_client
tests_e2e_ctl_client_SOURCES = tests/e2e/ctl_client.c
TESTS += tests/e2e/test_cmd.sh tests/e2e/usage.sh tests/e2e/inputs.sh \
	tests/e2e/malformed.sh tests/e2e/late.sh tests/e2e/sigterm.sh \
	tests/e2e/proctime.sh tests/e2e/workers.sh tests/e2e/reload.sh \
	tests/e2e/watch.sh tests/e2e/control.sh tests/e2e/conformance.sh \
	tests/e2e/examples.sh tests/e2e/explain_dot.sh tests/e2e/docs.sh
EXTRA_DIST += tests/e2e/lib.sh tests/e2e/test_cmd.sh tests/e2e/usage.sh \
	tests/e2e/inputs.sh tests/e2e/malformed.sh tests/e2e/late.sh \
	tests/e2e/sigterm.sh tests/e2e/proctime.sh tests/e2e/workers.sh \
	tests/e2e/reload.sh tests/e2e/watch.sh tests/e2e/control.sh \
	tests/e2e/conformance.sh tests/e2e/examples.sh tests/e2e/explain_dot.sh \
	tests/e2e/docs.sh \
	tests/e2e/data/bursts.cep tests/e2e/data/slow.cep tests/e2e/data/proctime.cep
# The engine's operator documentation travels with the sources.
EXTRA_DIST += docs/run.md

# tests: alerts (see tests/local.mk)
check_PROGRAMS += tests/test_alerts_out
TESTS += tests/test_alerts_out
tests_test_alerts_out_SOURCES = tests/test_alerts_out.c $(TEST_UTIL)
tests_test_alerts_out_CFLAGS = $(TEST_CFLAGS)
tests_test_alerts_out_LDADD = $(TEST_LIBS)
EXTRA_DIST += tests/data/alerts/capture.sh tests/data/alerts/fail.sh tests/data/alerts/hang.sh
check_PROGRAMS += tests/test_alerts
TESTS += tests/test_alerts
tests_test_alerts_SOURCES = tests/test_alerts.c $(TEST_UTIL)
tests_test_alerts_CFLAGS = $(TEST_CFLAGS)
tests_test_alerts_LDADD = $(TEST_LIBS)
EXTRA_DIST += docs/alerts.md
# Every allocation of nfa_explain and of `vigil explain` fails in turn
# (tests/oomwrap.h).
check_PROGRAMS += tests/test_explain_oom
TESTS += tests/test_explain_oom
tests_test_explain_oom_SOURCES = tests/test_explain_oom.c tests/oomcmd.c tests/oomcmd.h \
	cli/cmd_explain.c $(OOM_SOURCES) $(TEST_UTIL)
tests_test_explain_oom_CFLAGS = $(TEST_CFLAGS)
tests_test_explain_oom_LDFLAGS = $(OOM_WRAP_FLAGS)
tests_test_explain_oom_LDADD = $(TEST_LIBS)

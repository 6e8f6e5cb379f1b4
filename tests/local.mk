# Each area keeps its tests in its own fragment.
TEST_LIBS = $(LDADD_VIGIL) $(CHECK_LIBS)
TEST_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
AM_TESTS_ENVIRONMENT = top_srcdir='$(top_srcdir)'; top_builddir='$(top_builddir)'; export top_srcdir top_builddir;
include tests/dsl.mk
include tests/nfa.mk
include tests/runtime.mk
include tests/alerts.mk
include tests/e2e.mk

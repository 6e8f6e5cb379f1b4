# Each area keeps its tests in its own fragment, so that people working on
# different areas never edit the same build file.
TEST_LIBS = $(LDADD_VIGIL) $(CHECK_LIBS)
TEST_CFLAGS = $(AM_CFLAGS) $(CHECK_CFLAGS)
# Helpers every area shares (tests/testutil.h: files and commands read into strings,
# parsed rule sets, diagnostics as text, values as a decoder makes them): add to _SOURCES.
TEST_UTIL = tests/testutil.c tests/testutil.h
# Out-of-memory tests: every allocation goes through tests/oomwrap.c (GNU ld's --wrap),
# which makes the chosen one fail: add OOM_SOURCES to _SOURCES, OOM_WRAP_FLAGS to _LDFLAGS.
OOM_SOURCES = tests/oomwrap.c tests/oomwrap.h
OOM_WRAP_FLAGS = -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=aligned_alloc
# check_run_suite, the end of every test program's main; header-only.
EXTRA_DIST += tests/checkmain.h tests/partkeys.h
# Tests find the shared conformance cases through VIGIL_SHARED (set by .ci/run), else beside the tree.
AM_TESTS_ENVIRONMENT = top_srcdir='$(top_srcdir)'; top_builddir='$(top_builddir)'; \
	VIGIL_SHARED="$${VIGIL_SHARED:-$(abs_top_srcdir)/../shared}"; \
	export top_srcdir top_builddir VIGIL_SHARED;
# Sanitizers make everything slower and hold freed memory (RSS bounds mean nothing):
# the big tests run a smaller size and skip their memory bounds there.
if SANITIZED
AM_TESTS_ENVIRONMENT += VIGIL_TEST_SMALL=1; export VIGIL_TEST_SMALL;
endif
# make check-valgrind: the whole suite with every test program under valgrind's memcheck
# (tests/valgrind.sh); slow (the out-of-memory tests most), so not part of make check.
check-valgrind:
	$(MAKE) $(AM_MAKEFLAGS) check LOG_COMPILER='$(SHELL) $(abs_top_srcdir)/tests/valgrind.sh'
.PHONY: check-valgrind
EXTRA_DIST += tests/valgrind.sh
include tests/parser.mk
include tests/check.mk
include tests/rules.mk
include tests/expr.mk
include tests/nfa.mk
include tests/decode.mk
include tests/alerts.mk
include tests/e2e.mk
include tests/fuzz.mk
include tests/hostile.mk
include tests/reload.mk
include tests/state.mk
include tests/limits.mk
include tests/speed.mk
include tests/prefetch.mk
include tests/restore.mk
include tests/load_oom.mk
include tests/cli_oom.mk
include tests/workers_oom.mk
include tests/expr_oom.mk
include tests/endflush.mk
include tests/state_oom.mk
include tests/records.mk
include tests/records2.mk
include tests/matchfast.mk

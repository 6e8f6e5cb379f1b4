# tests: reload (see tests/local.mk) — `vigil ctl`, hot reload under load, editor saves
check_PROGRAMS += tests/reload/feed
tests_reload_feed_SOURCES = tests/reload/feed.c tests/sockutil.c tests/sockutil.h
tests_reload_feed_LDADD = $(LDADD_VIGIL)
TESTS += tests/reload/ctl.sh tests/reload/saves.sh tests/reload/stress.sh
EXTRA_DIST += tests/reload/ctl.sh tests/reload/saves.sh tests/reload/stress.sh \
	tests/reload/measure.sh tests/reload/data/stable.cep \
	tests/reload/data/changed_v1.cep tests/reload/data/changed_v2.cep \
	tests/reload/data/extra.cep tests/reload/data/broken.cep

# tests: hostile input (see tests/local.mk) — floods, catastrophic regexes, malformed
# lines of every kind, 1,000 concurrent clients, dead outputs, a stuck control
# socket, descriptors leaking to exec programs; all through the built vigil.
check_PROGRAMS += tests/hostile/sockclient
tests_hostile_sockclient_SOURCES = tests/hostile/sockclient.c
TESTS += tests/hostile/flood.sh tests/hostile/redos.sh tests/hostile/malformed.sh \
	tests/hostile/many_clients.sh tests/hostile/regex_stats.sh tests/hostile/dead_outputs.sh \
	tests/hostile/ctl_stuck.sh tests/hostile/exec_fds.sh tests/hostile/rule_files.sh \
	tests/hostile/watch_swap.sh
EXTRA_DIST += tests/hostile/lib.sh tests/hostile/flood.sh tests/hostile/redos.sh \
	tests/hostile/malformed.sh tests/hostile/many_clients.sh tests/hostile/regex_stats.sh \
	tests/hostile/dead_outputs.sh tests/hostile/ctl_stuck.sh tests/hostile/exec_fds.sh \
	tests/hostile/rule_files.sh tests/hostile/watch_swap.sh tests/hostile/data/clients.cep tests/hostile/data/redos.cep tests/hostile/data/events.cep

# tests: nfa (see tests/local.mk)

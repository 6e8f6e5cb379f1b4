# tests of nfa/ (see tests/local.mk)

# tests of e2e/ (see tests/local.mk)

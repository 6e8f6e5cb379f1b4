# tests: e2e (see tests/local.mk)

# tests: check (see tests/local.mk)

# tests: expr (see tests/local.mk)

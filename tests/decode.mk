# tests: decode (see tests/local.mk)
